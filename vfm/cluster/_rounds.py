"""What every round-based baseline shares: job bookkeeping, the clock, first-fit, Gavel's rounds.

The baselines of `vfm.cluster.baselines` differ only in how they rank the present jobs
for the next round. Everything else lives here, once:

- `PresentJobs`: one row per present job in numpy arrays (gang, epochs, progress, throughput
  estimate, arrival, per-policy counters), so that a round is computed over arrays, not by a
  Python loop over jobs. Rows are removed by moving the last row into the hole.
- `vfm.planner.rounding.first_fit`: walk the jobs in priority order and take each whole gang that
  still fits. Walking *all* present jobs makes every policy work-conserving: after the jobs the policy prefers, idle
  GPUs go to any waiting job whose gang still fits.
- `RoundPolicy`: the `SchedulingPolicy` interface on top of a `PresentJobs`, with the policy clock
  (rounds x `round_s`, since `next_round` is called exactly once per round).
- `GavelRoundPolicy`: Gavel's round-based mechanism turning a fractional allocation into whole
  rounds (priority = allocation / share of time received, deficits as tie-breakers).

Throughput estimate. A policy never sees a job's future batch sizes. Its estimate of a job's
current speed is the profiled epoch time of the batch size of the job's last observed epoch;
before any epoch is observed, the mean epoch time over the job's regimes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import is_whole
from vfm.errors import ValidationError
from vfm.jobs import equal_share
from vfm.planner.rounding import first_fit

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]


class RowTable:
    """Present jobs as rows of numpy columns, each of shape ``(n, *shape)``, plus one object per row
    (``regimes``); a row is removed by moving the last row into its place. The one home of the
    baselines' job tables (`PresentJobs`; `vfm.cluster.typed_baselines`'s per-type table).

    Parameters
    ----------
    columns : mapping of str to (dtype, shape)
        Each column's dtype and the shape of one row's entry (``()`` for a scalar per job).
    """

    def __init__(self, columns: Mapping[str, tuple[Any, tuple[int, ...]]]) -> None:
        self.n = 0
        self._cap = 16
        self.ids: list[Hashable] = []
        self.row: dict[Hashable, int] = {}
        self.regimes: list[Any] = []
        self._cols: dict[str, np.ndarray] = {name: np.zeros((self._cap, *shape), dtype=dtype)
                                             for name, (dtype, shape) in columns.items()}

    def col(self, name: str) -> np.ndarray:
        """A writable view of column `name` over the present rows."""
        return self._cols[name][: self.n]

    def append(self, job_id: Hashable, regimes: Any, values: Mapping[str, Any]) -> int:
        """Append a row (columns not in `values` are 0); return its index."""
        if self.n == self._cap:
            self._cap *= 2
            for name, arr in self._cols.items():
                grown = np.zeros((self._cap, *arr.shape[1:]), dtype=arr.dtype)
                grown[: self.n] = arr[: self.n]
                self._cols[name] = grown
        i = self.n
        self.n += 1
        for name, arr in self._cols.items():
            arr[i] = values.get(name, 0)
        self.ids.append(job_id)
        self.regimes.append(regimes)
        self.row[job_id] = i
        return i

    def remove(self, job_id: Hashable) -> None:
        """Delete a row by moving the last row into its place."""
        i = self.row.pop(job_id)
        last = self.n - 1
        if i != last:
            for arr in self._cols.values():
                arr[i] = arr[last]
            moved = self.ids[last]
            self.ids[i] = moved
            self.regimes[i] = self.regimes[last]
            self.row[moved] = i
        self.ids.pop()
        self.regimes.pop()
        self.n = last


class PresentJobs(RowTable):
    """Present jobs as rows of numpy arrays (see the module docstring).

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

    def add(self, job_id: Hashable, gpus: int, regimes: dict[float, float], epochs: int, arrival_s: float,
            seq: int) -> int:
        """Append a row; return its index."""
        return self.append(job_id, regimes, {"gpus": gpus, "seq": seq, "epochs": epochs, "arrival_s": arrival_s,
                                             "epoch_s": float(np.mean(list(regimes.values())))})


class RoundPolicy(ABC):
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
        self.capacity = int(capacity)
        self.round_s = float(round_s)
        self.seed = seed
        self.table = PresentJobs()
        self.round_index = 0
        self._seq = 0
        self._changed = True  # the job set changed since the last round
        self._completed: list[Hashable] = []

    @property
    def clock_s(self) -> float:
        """Start time of the next round: rounds decided so far x `round_s`."""
        return self.round_index * self.round_s

    @property
    def jobs(self) -> list[Hashable]:
        """The present jobs (row order, not arrival order)."""
        return list(self.table.ids)

    @property
    def completed(self) -> list[Hashable]:
        """Jobs that finished all their epochs, in completion order."""
        return list(self._completed)

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
        if job_id in self.table.row:
            raise ValidationError(f"job {job_id!r} is already in the policy; remove it first")
        if not is_whole(gpus) or not 1 <= gpus <= self.capacity:
            raise ValidationError(f"gpus of job {job_id!r} must be a whole number in 1..{self.capacity}, got {gpus!r}")
        reg = {float(b): float(d) for b, d in dict(regimes).items()}
        if not reg or not all(np.isfinite(d) and d > 0 for d in reg.values()):
            raise ValidationError(
                f"regimes of job {job_id!r} must map batch sizes to epoch seconds > 0, got {regimes!r}")
        if not is_whole(epochs) or epochs < 1:
            raise ValidationError(f"epochs of job {job_id!r} must be a positive whole number, got {epochs!r}")
        row = self.table.add(job_id, int(gpus), reg, int(epochs), self.clock_s, self._seq)
        self._seq += 1
        self._changed = True
        self._on_add(row)

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves without finishing (cancelled)."""
        if job_id not in self.table.row:
            raise ValidationError(f"job {job_id!r} is not in the policy")
        self.table.remove(job_id)
        self._changed = True

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished last round, one batch size per epoch.

        The last batch size becomes the job's throughput estimate; a job with all epochs done
        completes and leaves.

        Raises
        ------
        vfm.errors.ValidationError
            An unknown job, a batch size not in its regimes, more epochs than it has left.
        """
        if job_id not in self.table.row:
            raise ValidationError(f"job {job_id!r} is not in the policy")
        if not batch_sizes:
            return
        t = self.table
        i = t.row[job_id]
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
            t.remove(job_id)
            self._completed.append(job_id)
            self._changed = True

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
        self._changed = False
        self.round_index += 1
        return [t.ids[i] for i in chosen]

    # --- hooks ---------------------------------------------------------------------------------

    def _on_add(self, row: int) -> None:  # noqa: B027 - an optional hook
        """Initialise per-policy counters of a new row (default: nothing)."""

    @abstractmethod
    def _select(self) -> IntArray:
        """Rows to run this round: whole gangs within capacity."""

    def _after_round(self, chosen: IntArray) -> None:  # noqa: B027 - an optional hook
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

    def _reset(self) -> None:
        t = self.table
        job_time = t.col("job_time")
        received = job_time - self.round_s / 2.0
        t.col("deficit")[:] += t.col("should") - received
        t.col("should")[:] = 0.0
        job_time[:] = self.round_s / 2.0

    def _order(self) -> IntArray:
        t = self.table
        if self._changed:
            self._reset()
        x = np.clip(self._allocation(), 0.0, 1.0)
        self._x = x
        job_time = t.col("job_time")
        fraction = job_time / job_time.sum()
        priority = x / fraction
        # lexsort: the last key is the primary one.
        return np.lexsort((t.col("seq"), -x, -t.col("deficit"), -priority)).astype(np.int64)

    def _after_round(self, chosen: IntArray) -> None:
        t = self.table
        t.col("job_time")[chosen] += self.round_s
        if t.n:
            t.col("should")[:] += self._x * self.round_s
