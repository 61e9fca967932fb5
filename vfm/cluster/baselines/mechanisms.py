"""How a round-based baseline decides a round: the round mechanisms, and the allocations Gavel's rounds serve.

A baseline of `vfm.cluster.baselines` is `vfm.cluster.baselines.rounds.RoundPolicy` (the jobs'
book) composed with a *round mechanism* (`RoundMechanism`): a frozen object whose `step` decides
a round as a pure function of the book's frozen `RoundState`, as `vfm.planner.Policy` decides a
round from its frozen state. The mechanisms:

- `GavelRounds`: Gavel's rounds over a per-round fractional *allocation* (`allocate`), itself a
  pure function of the state returning `Allocated`: over the cluster's one type (an allocation of
  shape (n,)) or over its types (shape (n, K), `over_types`). The round is
  `vfm.cluster.baselines.gavel_rounds.gavel_round_step`, the same for one type and several;
- `StrideRounds`: stride scheduling over whole gangs (Gandiva-Fair), on one GPU type;
- `MatchingRounds`: AlloX's non-preemptive matching of waiting jobs to GPU time slots, on one type.

A new baseline under Gavel's rounds is one allocation function; a new way of deciding rounds is
one mechanism. First-fit (`vfm.gang_packing.first_fit`) walks *all* present jobs, which makes
every mechanism work-conserving: after the jobs the policy prefers, idle GPUs go to any waiting
job whose gang still fits.

Throughput estimate. A policy never sees a job's future batch sizes. Its estimate of a job's
current speed on a type is the profiled epoch time there of the batch size of the job's last
observed epoch; before any epoch is observed, the mean over the job's regimes (column ``epoch_s``,
shape (n, K)).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from vfm.cluster.baselines.gavel_rounds import gavel_round_step
from vfm.cluster.baselines.round_book import RoundState, RowTable
from vfm.gang_packing import first_fit
from vfm.jobs import equal_share as equal_share_of

__all__ = [
    "Allocated",
    "Allocation",
    "FloatArray",
    "GavelRounds",
    "IntArray",
    "MatchingRounds",
    "RoundMechanism",
    "RoundStep",
    "StrideRounds",
    "equal_share",
    "remaining_s",
    "throughputs",
]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def _empty() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True)
class Allocated:
    """An allocation: the fraction of time each present job should run this round, ``x``, shape (n,)
    over the cluster's one type or (n, K) over each of its types; the solves it took (``lps``:
    linear programs, ``solves``: conic or market solves, ``iterations``: interior-point
    iterations); what else it computed (``details``: the optimal ratio, total or horizon, the
    market's equilibrium); and how long it holds.

    ``stale_after_report``: None, the allocation serves the round it was computed for and the next
    round computes its own (it moves with the clock, or a new one costs nothing); else it serves
    later rounds while the job set and the jobs' estimates hold, and this function of a reporting
    job's row (column name -> its entry, after the report) and the round length says whether a
    report makes it stale sooner.
    """

    x: FloatArray
    lps: int = 0
    solves: int = 0
    iterations: int = 0
    details: Mapping[str, Any] = field(default_factory=_empty)
    stale_after_report: Callable[[Mapping[str, Any], float], bool] | None = None


#: An allocation under Gavel's rounds: a pure function of the round's frozen state.
Allocation = Callable[[RoundState], Allocated]


@dataclass(frozen=True)
class RoundStep:
    """What a round mechanism decided: the rows to run (whole gangs within each type's count), the
    type index of each (None: the cluster's one type), the counters' new values by column, and,
    for an allocation-based mechanism, the allocation it served (clipped to [0, 1]) and its details."""

    chosen: IntArray
    types: IntArray | None = None
    columns: Mapping[str, np.ndarray] = field(default_factory=_empty)
    allocation: FloatArray | None = None
    details: Mapping[str, Any] = field(default_factory=_empty)


class RoundMechanism(Protocol):
    """How rounds are decided: on which clusters, a new row's counters, the allocation rounds are
    decided on (if any), and a round from the frozen state."""

    @property
    def over_types(self) -> bool:
        """Whether it decides on a cluster of several GPU types (else on one type only)."""

    @property
    def allocate(self) -> Allocation | None:
        """The allocation rounds are decided on (`RoundPolicy` computes it, and keeps it while it
        holds: `Allocated.stale_after_report`), or None for a mechanism that decides without one."""

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        """The counters of a job about to be admitted, given the present rows (before it)."""

    def step(self, state: RoundState, allocated: Allocated | None) -> RoundStep:
        """The round decided from `state` on `allocated` (`allocate`'s, None without one); never
        empty: `RoundPolicy` steps only with jobs."""


def throughputs(state: RoundState) -> FloatArray:
    """Each job's estimated epochs per second on each type, shape (n, K): 1 / ``epoch_s``, 0 where
    the type cannot host it (no regimes there, or a gang wider than its count)."""
    epoch_s = state.col("epoch_s")
    thr: FloatArray = np.where(np.isfinite(epoch_s), 1.0 / epoch_s, 0.0)
    thr[state.col("gpus")[:, None] > state.counts[None, :]] = 0.0
    return thr


def remaining_s(state: RoundState) -> FloatArray:
    """Estimated seconds each job still needs on its whole gang on the cluster's (first) type:
    epochs left x ``epoch_s`` there; what the allocations over one type read."""
    out: FloatArray = (state.col("epochs") - state.col("done")) * state.col("epoch_s")[:, 0]
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

    `allocate` returns ``x``, the fraction of time each job should run (on each type, with
    `over_types`: ``sum_k x_ik <= 1``, ``sum_i w_i x_ik <= G_k``; clipped to [0, 1]). Following
    Gavel's scheduler (``scheduler.py``: ``_update_priorities``, ``_reset_time_run_so_far``,
    ``_schedule_jobs_on_workers_helper``; `vfm.cluster.baselines.gavel_rounds.gavel_round_step`):

    - each job counts the seconds it ran on each type since the last reset, starting at
      ``round_s / 2``; its received fraction is its count over the sum of all counts there;
    - priority ``= x_ik / fraction_ik``: jobs furthest below their allocation go first;
    - type by type (the cluster's order, fastest first), jobs are ranked by (priority, deficit,
      allocation) descending, then arrival order, and first-fit takes whole gangs, each job on
      at most one type; then every job still waiting goes, in the same spirit, to the fastest
      type for it with room (idle GPUs are filled by waiting jobs, including those with x = 0);
    - when the job set changes (arrival, completion, cancellation) the counters are reset and
      each job's deficit grows by the time it should have received since the last reset
      (``sum x round_s``) minus the time it did receive.
    """

    allocate: Allocation
    #: Whether `allocate` allocates over the cluster's types (x of shape (n, K)); else over its
    #: one type (shape (n,)), and the mechanism decides on clusters of one type only.
    over_types: bool = False

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        return {"job_time": round_s / 2.0}

    def step(self, state: RoundState, allocated: Allocated | None) -> RoundStep:
        assert allocated is not None  # `RoundPolicy` hands it `allocate`'s
        x = np.clip(allocated.x, 0.0, 1.0)
        rows, on, counters = gavel_round_step(state, x.reshape(state.n, len(state.cluster)))
        return RoundStep(rows, on, counters, x, allocated.details)


@dataclass(frozen=True)
class StrideRounds:
    """Stride scheduling over whole gangs, `tickets` per job (Gandiva-Fair's), on one GPU type.

    Each job has a pass value. Every round, jobs are taken in increasing pass order and first-fit
    onto whole gangs; each job that runs advances its pass by its stride times its gang,
    ``w_i / tickets``, so jobs receive equal GPU-time. A job that arrives starts at the smallest
    pass among the present jobs (stride scheduling's global pass), so it neither waits for nor
    overtakes the backlog.
    """

    tickets: float = 1.0
    over_types = False
    allocate = None  # it decides without an allocation

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        passes = table.col("pass_")
        return {"pass_": float(passes.min()) if passes.size else 0.0}

    def step(self, state: RoundState, allocated: Allocated | None) -> RoundStep:
        order = np.lexsort((state.col("seq"), state.col("pass_"))).astype(np.int64)
        gpus = state.col("gpus")
        chosen = first_fit(order, gpus, state.capacity)
        passes = state.col("pass_").copy()
        passes[chosen] += gpus[chosen] / self.tickets
        return RoundStep(chosen, columns={"pass_": passes})


@dataclass(frozen=True)
class MatchingRounds:
    """AlloX's rounds, on one GPU type: jobs that ran in the previous round keep their GPUs until
    they finish; the free GPUs are matched to the waiting jobs by `position` (how many jobs run
    before each on its GPU, from their estimated remaining times), and jobs start in that order
    (fewest ahead first, then shortest), first-fit on whole gangs, which walks every waiting job
    (work conservation)."""

    position: Callable[[FloatArray, int], IntArray]
    over_types = False
    allocate = None  # it decides without an allocation

    def admitted(self, table: RowTable, round_s: float) -> dict[str, float]:
        return {}

    def step(self, state: RoundState, allocated: Allocated | None) -> RoundStep:
        gpus, ran = state.col("gpus"), state.col("ran")
        running = np.flatnonzero(ran)
        free = state.capacity - int(gpus[running].sum())
        waiting = np.flatnonzero(~ran)
        if free <= 0 or waiting.size == 0:
            return RoundStep(running)
        remaining = remaining_s(state)[waiting]
        order = waiting[np.lexsort((state.col("seq")[waiting], remaining, self.position(remaining, free)))]
        return RoundStep(np.concatenate((running, first_fit(order, gpus, free))))
