"""The round-based baselines on one GPU type: a book of jobs, a round mechanism, and their composition.

A baseline of `vfm.cluster.baselines` is `RoundPolicy` (the `SchedulingPolicy` conversation over
the jobs' book) composed with a *round mechanism*: a frozen object whose `step` decides a round
as a pure function of the book's frozen `RoundState`, as `vfm.planner.Policy` decides a round
from its frozen `vfm.planner.policy.state.PolicyState`. Events (an arrival, a report, a cancellation) are
O(1) changes to the book; each round snapshots it, steps, and writes back the counters the step
returns (`RoundStep`). The mechanisms here:

- `GavelRounds`: Gavel's round-based mechanism over a per-round fractional *allocation*, itself a
  pure function of the state (`Allocator`), so a new allocation under Gavel's rounds is one
  function: priority = allocation / share of time received, deficits as tie-breakers
  (`vfm.cluster.baselines.gavel_counters`), whole gangs first-fit in that order. The round is
  `vfm.cluster.baselines.gavel_rounds.gavel_round_step` with one type, the implementation the baselines on
  several types run;
- `StrideRounds`: stride scheduling over whole gangs (Gandiva-Fair);
- `MatchingRounds`: AlloX's non-preemptive matching of waiting jobs to GPU time slots.

First-fit (`vfm.planner.rounding.first_fit`) walks *all* present jobs, which makes every
mechanism work-conserving: after the jobs the policy prefers, idle GPUs go to any waiting job
whose gang still fits.

Throughput estimate. A policy never sees a job's future batch sizes. Its estimate of a job's
current speed is the profiled epoch time of the batch size of the job's last observed epoch;
before any epoch is observed, the mean epoch time over the job's regimes (column ``epoch_s``).

Examples
--------
A baseline of your own: an allocation composed with Gavel's rounds, no subclass.

>>> def shortest_first(state: RoundState) -> Allocated:
...     return Allocated((remaining_s(state) <= remaining_s(state).min()).astype(float))
>>> policy = RoundPolicy(2, mechanism=GavelRounds(shortest_first))
>>> policy.add_job("long", 2, {32: 60.0}, 10)
>>> policy.add_job("short", 2, {32: 60.0}, 2)
>>> policy.next_round()
['short']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from vfm.cluster.baselines.gavel_rounds import gavel_round_step
from vfm.cluster.baselines.round_book import RoundBook, RoundState, RowTable
from vfm.errors import ValidationError
from vfm.gpu_cluster import ClusterTypes
from vfm.jobs import equal_share as equal_share_of
from vfm.parameters import Interval, Real, Whole, check, check_nonempty, check_parameters
from vfm.planner.rounding import first_fit

__all__ = [
    "Allocated",
    "Allocator",
    "FloatArray",
    "GavelRounds",
    "IntArray",
    "MatchingRounds",
    "PresentJobs",
    "RoundMechanism",
    "RoundPolicy",
    "RoundState",
    "RoundStep",
    "StrideRounds",
    "equal_share",
    "remaining_s",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
#: A regime's seconds per epoch (`RoundPolicy.add_job`).
_EPOCH_S = Interval(Real, 0, closed="neither", unit="seconds per epoch")

#: The columns `vfm.cluster.baselines.gavel_rounds.gavel_round_step` reads per type: Gavel's counters, the estimates.
_PER_TYPE = ("job_time", "should", "deficit", "epoch_s")


class PresentJobs(RowTable):
    """The one-type baselines' table of present jobs (see the module docstring).

    Columns (all of length `n`, the number of present jobs): ``gpus``, ``epochs`` (total),
    ``done`` (epochs finished), ``epoch_s`` (current estimate: profiled epoch time of the last
    observed batch size, or the regimes' mean before any observation), ``done_iso_s`` (isolated
    seconds of the finished epochs, from the regimes), ``arrival_s`` (policy clock when added),
    ``seq`` (arrival order, the final tie-breaker), ``ran`` (selected in the previous round), and
    the mechanisms' counters ``job_time``, ``should``, ``deficit``, ``pass_``.
    """

    _FLOAT = ("epochs", "done", "epoch_s", "done_iso_s", "arrival_s", "job_time", "should", "deficit", "pass_")
    _INT = ("gpus", "seq")

    def __init__(self) -> None:
        super().__init__({**{name: (np.float64, ()) for name in self._FLOAT},
                          **{name: (np.int64, ()) for name in self._INT}, "ran": (np.bool_, ())})


@dataclass(frozen=True)
class Allocated:
    """An allocation: the fraction of time each present job should run this round, shape (n,),
    and what else the allocation computed that a caller may read (`RoundStep.details`)."""

    x: FloatArray
    details: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


#: A per-round allocation: a pure function of the frozen state.
Allocator = Callable[[RoundState], Allocated]


@dataclass(frozen=True)
class RoundStep:
    """What a round mechanism decided: the rows to run (whole gangs within the capacity), the
    counters' new values by column, and, for an allocation-based mechanism, the allocation (clipped
    to [0, 1]) and its details."""

    chosen: IntArray
    columns: Mapping[str, np.ndarray] = field(default_factory=lambda: MappingProxyType({}))
    allocation: FloatArray | None = None
    details: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))


class RoundMechanism(Protocol):
    """How rounds are decided: a new row's counters, and a round from the frozen state."""

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        """The counters of a job about to be admitted, given the present rows (before it)."""

    def step(self, state: RoundState) -> RoundStep:
        """The round decided from `state` (never empty: `RoundPolicy` steps only with jobs)."""


def remaining_s(state: RoundState) -> FloatArray:
    """Estimated seconds each job still needs on its whole gang: remaining epochs x epoch_s."""
    out: FloatArray = (state.col("epochs") - state.col("done")) * state.col("epoch_s")
    return out


def equal_share(state: RoundState) -> FloatArray:
    """Fraction of time each job gets under an equal split of the GPUs, ``min(1, G / (N w_i))``.

    Gavel's isolated policy: each of the N jobs gets G/N GPUs' worth of time, so a gang of
    `w_i` runs a fraction ``G / (N w_i)`` of the time, at most all of it.
    """
    gpus = state.col("gpus")
    return np.asarray(equal_share_of(gpus.size, state.capacity, gpus)) if gpus.size else np.ones(0)


@dataclass(frozen=True)
class GavelRounds:
    """Gavel's round-based mechanism over a per-round fractional allocation (`allocate`).

    `allocate` returns ``x[i]``, the fraction of time job i should run (``sum_i w_i x_i <= G``,
    ``0 <= x <= 1``; clipped to [0, 1]). Following Gavel's scheduler (``scheduler.py``:
    ``_update_priorities``, ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``):

    - each job counts the seconds it ran since the last reset, starting at ``round_s / 2``;
      its received fraction is its count over the sum of all counts;
    - priority ``= x_i / fraction_i``: jobs furthest below their allocation go first;
    - jobs are ranked by (priority, deficit, allocation) descending, then arrival order, and
      first-fit takes whole gangs (every present job is walked, so idle GPUs are filled by
      waiting jobs, including those with ``x_i = 0``);
    - when the job set changes (arrival, completion, cancellation) the counters are reset and
      each job's deficit grows by the time it should have received since the last reset
      (``sum x_i round_s``) minus the time it did receive.

    The allocation is recomputed every round, because the throughput estimates change whenever a
    job's batch size changes.
    """

    allocate: Allocator

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        return {"job_time": round_s / 2.0}

    def step(self, state: RoundState) -> RoundStep:
        allocated = self.allocate(state)
        x = np.clip(allocated.x, 0.0, 1.0)
        # Gavel's rounds on one type: K = 1 of `gavel_round_step`, the columns as (n, 1).
        columns = {**state.columns, **{name: state.col(name)[:, None] for name in _PER_TYPE}}
        rows, _, counters = gavel_round_step(replace(state, columns=columns), x[:, None])
        return RoundStep(rows, {name: values[:, 0] for name, values in counters.items()}, x, allocated.details)


@dataclass(frozen=True)
class StrideRounds:
    """Stride scheduling over whole gangs, `tickets` per job (Gandiva-Fair's).

    Each job has a pass value. Every round, jobs are taken in increasing pass order and first-fit
    onto whole gangs; each job that runs advances its pass by its stride times its gang,
    ``w_i / tickets``, so jobs receive equal GPU-time. A job that arrives starts at the smallest
    pass among the present jobs (stride scheduling's global pass), so it neither waits for nor
    overtakes the backlog.
    """

    tickets: float = 1.0

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        passes = table.col("pass_")
        return {"pass_": float(passes.min()) if passes.size else 0.0}

    def step(self, state: RoundState) -> RoundStep:
        order = np.lexsort((state.col("seq"), state.col("pass_"))).astype(np.int64)
        gpus = state.col("gpus")
        chosen = first_fit(order, gpus, state.capacity)
        passes = state.col("pass_").copy()
        passes[chosen] += gpus[chosen] / self.tickets
        return RoundStep(chosen, {"pass_": passes})


@dataclass(frozen=True)
class MatchingRounds:
    """AlloX's rounds: jobs that ran in the previous round keep their GPUs until they finish; the
    free GPUs are matched to the waiting jobs by `position` (how many jobs run before each on its
    GPU, from their estimated remaining times), and jobs start in that order (fewest ahead first,
    then shortest), first-fit on whole gangs, which walks every waiting job (work conservation)."""

    position: Callable[[FloatArray, int], IntArray]

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        return {}

    def step(self, state: RoundState) -> RoundStep:
        gpus, ran = state.col("gpus"), state.col("ran")
        running = np.flatnonzero(ran)
        free = state.capacity - int(gpus[running].sum())
        waiting = np.flatnonzero(~ran)
        if free <= 0 or waiting.size == 0:
            return RoundStep(running)
        remaining = remaining_s(state)[waiting]
        order = waiting[np.lexsort((state.col("seq")[waiting], remaining, self.position(remaining, free)))]
        return RoundStep(np.concatenate((running, first_fit(order, gpus, free))))


class RoundPolicy(RoundBook):
    """The `SchedulingPolicy` conversation over a `PresentJobs` book, rounds decided by `mechanism`.

    Parameters
    ----------
    capacity : int
        GPUs in the (homogeneous) cluster.
    round_s : float
        Seconds per round (default 120).
    seed : int
        Accepted so that every policy is built the same way; the baselines are deterministic
        and break ties by arrival order, so none of them draws random numbers.
    mechanism : RoundMechanism, optional
        How rounds are decided; default the class's `mechanism` (each baseline of
        `vfm.cluster.baselines` names one).

    Attributes
    ----------
    last_step : RoundStep or None
        What the last round's mechanism decided (None before the first round with jobs).
    """

    name = "round"
    mechanism: RoundMechanism  # each baseline's class names one; an instance may have its own

    def __init__(self, capacity: int, round_s: float = 120.0, seed: int = 0, *,
                 mechanism: RoundMechanism | None = None) -> None:
        check_parameters({"capacity": capacity, "round_s": round_s},
                         {"capacity": Interval(Whole, 1, unit="GPUs"), "round_s": Interval(Real, 0, closed="neither")})
        super().__init__(PresentJobs(), round_s, seed)
        self.capacity = int(capacity)
        self._cluster = ClusterTypes.single(self.capacity)
        if mechanism is not None:
            self.mechanism = mechanism
        elif not hasattr(self, "mechanism"):
            raise ValidationError(f"{type(self).__name__} needs a mechanism (GavelRounds, StrideRounds, "
                                  f"MatchingRounds or your own RoundMechanism)")
        self.last_step: RoundStep | None = None

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
        check(f"gpus of job {job_id!r}", gpus, Interval(Whole, 1, self.capacity, unit="GPUs"))
        reg = {float(b): float(d) for b, d in dict(regimes).items()}
        check_nonempty(f"regimes of job {job_id!r}", len(reg), "batch size")
        for size, seconds in reg.items():
            check(f"regimes[{size:g}] of job {job_id!r}", seconds, _EPOCH_S)
        check(f"epochs of job {job_id!r}", epochs, Interval(Whole, 1))
        self.admit(job_id, reg, {"gpus": int(gpus), "epochs": int(epochs), "arrival_s": self.clock_s,
                                 "epoch_s": float(np.mean(list(reg.values()))),
                                 **self.mechanism.admitted(self.table, self.round_s)})

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
        check(f"the epochs job {job_id!r} reported", len(secs),
              Interval(Whole, high=t.col("epochs")[i] - done[i], unit="epochs", note="the epochs it has left"))
        done[i] += len(secs)
        t.col("done_iso_s")[i] += sum(secs)
        t.col("epoch_s")[i] = secs[-1]
        if done[i] >= t.col("epochs")[i]:
            self.complete(job_id)

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> list[Hashable]:
        """The jobs to run in the next round: whole gangs, within capacity, present jobs only,
        decided by the mechanism from the book's frozen state (`state`)."""
        t = self.table
        if t.n:
            self.last_step = self.mechanism.step(self.state())
            chosen = self.last_step.chosen
            for name, values in self.last_step.columns.items():
                t.col(name)[:] = values
        else:
            chosen = np.zeros(0, dtype=np.int64)
        ran = t.col("ran")
        ran[:] = False
        ran[chosen] = True
        self.close_round()
        return [t.ids[i] for i in chosen]

    def state(self) -> RoundState:
        """The book as the next round sees it, frozen (`RoundBook.snapshot`)."""
        return self.snapshot(self._cluster)
