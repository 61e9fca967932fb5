"""The round-based baselines on one GPU type: the policy interface over their book, first-fit, Gavel's rounds.

The baselines of `vfm.cluster.baselines` differ only in how they rank the present jobs
for the next round. Everything else lives here, once:

- `PresentJobs`: the columns of the present jobs' table (`vfm.cluster.round_book.RowTable`:
  gang, epochs, progress, throughput estimate, arrival, per-policy counters).
- `vfm.planner.rounding.first_fit`: walk the jobs in priority order and take each whole gang that
  still fits. Walking *all* present jobs makes every policy work-conserving: after the jobs the policy prefers, idle
  GPUs go to any waiting job whose gang still fits.
- `RoundPolicy`: the `SchedulingPolicy` interface on top of the book of `vfm.cluster.round_book.RoundBook`
  (arrivals, completions, the policy clock).
- `GavelRoundPolicy`: Gavel's round-based mechanism turning a fractional allocation into whole
  rounds (`vfm.cluster.gavel_counters`: priority = allocation / share of time received, deficits
  as tie-breakers).

Throughput estimate. A policy never sees a job's future batch sizes. Its estimate of a job's
current speed is the profiled epoch time of the batch size of the job's last observed epoch;
before any epoch is observed, the mean epoch time over the job's regimes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from vfm._validation import is_whole
from vfm.cluster.gavel_counters import credit, priorities, ranking, reset_counts
from vfm.cluster.round_book import RoundBook, RowTable
from vfm.errors import ValidationError
from vfm.jobs import equal_share
from vfm.planner.rounding import first_fit

__all__ = [
    "FloatArray",
    "GavelRoundPolicy",
    "IntArray",
    "PresentJobs",
    "PriorityRoundPolicy",
    "RoundPolicy",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class PresentJobs(RowTable):
    """The one-type baselines' table of present jobs (see the module docstring).

    Columns (all of length `n`, the number of present jobs): ``gpus``, ``epochs`` (total),
    ``done`` (epochs finished), ``epoch_s`` (current estimate: profiled epoch time of the last
    observed batch size, or the regimes' mean before any observation), ``done_iso_s`` (isolated
    seconds of the finished epochs, from the regimes), ``arrival_s`` (policy clock when added),
    ``seq`` (arrival order, the final tie-breaker), ``ran`` (selected in the previous round), and
    the per-policy counters ``job_time``, ``should``, ``deficit``, ``pass_``.
    """

    _FLOAT = ("epochs", "done", "epoch_s", "done_iso_s", "arrival_s", "job_time", "should", "deficit", "pass_")
    _INT = ("gpus", "seq")

    def __init__(self) -> None:
        super().__init__({**{name: (np.float64, ()) for name in self._FLOAT},
                          **{name: (np.int64, ()) for name in self._INT}, "ran": (np.bool_, ())})


class RoundPolicy(RoundBook, ABC):
    """The `SchedulingPolicy` interface over a `PresentJobs`; subclasses implement `_select`.

    Parameters
    ----------
    capacity : int
        GPUs in the (homogeneous) cluster.
    round_s : float
        Seconds per round (default 120).
    seed : int
        Accepted so that every policy is built the same way; the baselines are deterministic
        and break ties by arrival order, so none of them draws random numbers.
    """

    name = "round"

    def __init__(self, capacity: int, round_s: float = 120.0, seed: int = 0) -> None:
        if not is_whole(capacity) or capacity < 1:
            raise ValidationError(f"capacity must be a positive whole number of GPUs, got {capacity!r}")
        if not (np.isfinite(round_s) and round_s > 0):
            raise ValidationError(f"round_s must be > 0, got {round_s!r}")
        super().__init__(PresentJobs(), round_s, seed)
        self.capacity = int(capacity)

    # --- what the scheduler tells the policy ---------------------------------------------------

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int, *,
                kind: Hashable = None) -> None:
        """A job arrives (at the start of the round in which the scheduler first sees it); its
        `kind` is not used.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job: an id already present, a gang that is not a whole number in
            ``1..capacity``, no regimes or a non-positive epoch time, a non-positive epoch count.
        """
        self.refuse_present(job_id)
        if not is_whole(gpus) or not 1 <= gpus <= self.capacity:
            raise ValidationError(f"gpus of job {job_id!r} must be a whole number in 1..{self.capacity}, got {gpus!r}")
        reg = {float(b): float(d) for b, d in dict(regimes).items()}
        if not reg or not all(np.isfinite(d) and d > 0 for d in reg.values()):
            raise ValidationError(
                f"regimes of job {job_id!r} must map batch sizes to epoch seconds > 0, got {regimes!r}")
        if not is_whole(epochs) or epochs < 1:
            raise ValidationError(f"epochs of job {job_id!r} must be a positive whole number, got {epochs!r}")
        row = self.admit(job_id, reg, {"gpus": int(gpus), "epochs": int(epochs), "arrival_s": self.clock_s,
                                       "epoch_s": float(np.mean(list(reg.values())))})
        self._on_add(row)

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished last round, one batch size per epoch.

        The last batch size becomes the job's throughput estimate; a job with all epochs done
        completes and leaves.

        Raises
        ------
        vfm.errors.ValidationError
            An unknown job, a batch size not in its regimes, more epochs than it has left.
        """
        i = self.row_of(job_id)
        if not batch_sizes:
            return
        t = self.table
        reg = t.regimes[i]
        try:
            secs = [reg[float(b)] for b in batch_sizes]
        except KeyError as err:
            raise ValidationError(f"job {job_id!r} reported batch size {err.args[0]!r}, not in its regimes") from None
        done = t.col("done")
        if done[i] + len(secs) > t.col("epochs")[i]:
            raise ValidationError(f"job {job_id!r} reported more epochs than it has left")
        done[i] += len(secs)
        t.col("done_iso_s")[i] += sum(secs)
        t.col("epoch_s")[i] = secs[-1]
        if done[i] >= t.col("epochs")[i]:
            self.complete(job_id)

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> list[Hashable]:
        """The jobs to run in the next round: whole gangs, within capacity, present jobs only."""
        t = self.table
        if t.n == 0:
            chosen = np.zeros(0, dtype=np.int64)
        else:
            chosen = self._select()
        ran = t.col("ran")
        ran[:] = False
        ran[chosen] = True
        self._after_round(chosen)
        self.close_round()
        return [t.ids[i] for i in chosen]

    # --- hooks ---------------------------------------------------------------------------------

    def _on_add(self, row: int) -> None:
        """Initialise per-policy counters of a new row (default: nothing)."""

    @abstractmethod
    def _select(self) -> IntArray:
        """Rows to run this round: whole gangs within capacity."""

    def _after_round(self, chosen: IntArray) -> None:
        """Update per-policy counters once the round is decided (default: nothing)."""

    # --- shared estimates ----------------------------------------------------------------------

    def remaining_s(self) -> FloatArray:
        """Estimated seconds each job still needs on its whole gang: remaining epochs x epoch_s."""
        t = self.table
        return (t.col("epochs") - t.col("done")) * t.col("epoch_s")

    def equal_share(self) -> FloatArray:
        """Fraction of time each job gets under an equal split of the GPUs, ``min(1, G / (N w_i))``.

        Gavel's isolated policy: each of the N jobs gets G/N GPUs' worth of time, so a gang of
        `w_i` runs a fraction ``G / (N w_i)`` of the time, at most all of it.
        """
        gpus = self.table.col("gpus")
        return np.asarray(equal_share(gpus.size, self.capacity, gpus)) if gpus.size else np.ones(0)


class PriorityRoundPolicy(RoundPolicy):
    """A `RoundPolicy` that ranks every present job and takes whole gangs first-fit in that order
    (which walks every row, so idle GPUs go to waiting jobs that fit); subclasses implement `_order`."""

    def _select(self) -> IntArray:
        return first_fit(self._order(), self.table.col("gpus"), self.capacity)

    @abstractmethod
    def _order(self) -> IntArray:
        """Every present row, highest priority first."""


class GavelRoundPolicy(PriorityRoundPolicy):
    """Gavel's round-based mechanism over a per-round fractional allocation (`_allocation`).

    `_allocation` returns ``x[i]``, the fraction of time job i should run (``sum_i w_i x_i <= G``,
    ``0 <= x <= 1``). Following Gavel's scheduler (``scheduler.py``: ``_update_priorities``,
    ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``):

    - each job counts the seconds it ran since the last reset, starting at ``round_s / 2``;
      its received fraction is its count over the sum of all counts;
    - priority ``= x_i / fraction_i``: jobs furthest below their allocation go first;
    - jobs are ranked by (priority, deficit, allocation) descending, then arrival order, and
      first-fit takes whole gangs (every present job is walked, so idle GPUs are filled by
      waiting jobs, including those with ``x_i = 0``);
    - when the job set changes (arrival, completion, cancellation) the counters are reset and
      each job's deficit grows by the time it should have received since the last reset
      (``sum x_i round_s``) minus the time it did receive.

    The allocation itself is recomputed every round, because the throughput estimates change
    whenever a job's batch size changes.
    """

    name = "gavel"

    def _on_add(self, row: int) -> None:
        self.table.col("job_time")[row] = self.round_s / 2.0

    @abstractmethod
    def _allocation(self) -> FloatArray:
        """The fraction of time each present job should run this round, shape (n,)."""

    def _order(self) -> IntArray:
        t = self.table
        if self._changed:
            reset_counts(t, self.round_s)
        x = np.clip(self._allocation(), 0.0, 1.0)
        self._x = x
        priority = priorities(t.col("job_time"), x)
        return ranking(t.col("seq"), x, t.col("deficit"), priority).astype(np.int64)

    def _after_round(self, chosen: IntArray) -> None:
        if self.table.n:
            credit(self.table, chosen, self._x, self.round_s)
