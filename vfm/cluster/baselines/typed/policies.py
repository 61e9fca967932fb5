"""The typed baselines that compose Gavel's round mechanism with another allocation, and their registry.

Each is `vfm.cluster.baselines.typed.rounds.TypedRoundPolicy` (Gavel's round mechanism over the types)
composed with its own allocator, a frozen object whose `allocate` is a pure function of the
round's frozen state: `HeterogeneousStaticMarket` the one-round Fisher market over the types
(`MarketAllocator`, `vfm.cluster.baselines.typed.market.static_market_allocation`),
`HeterogeneousFinishTimeFairness`, `HeterogeneousMaxSumThroughput` and
`HeterogeneousMinTotalDuration` Gavel's other heterogeneity-aware programs
(`vfm.cluster.baselines.typed.gavel_programs`). `TYPED_BASELINES` names all five typed baselines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vfm.cluster.baselines.round_book import RoundState
from vfm.cluster.baselines.typed.gavel_programs import solve_finish_time, solve_max_sum, solve_min_duration
from vfm.cluster.baselines.typed.instance import FloatArray
from vfm.cluster.baselines.typed.market import MarketAllocation, solve_market
from vfm.cluster.baselines.typed.rounds import (
    HeterogeneousMaxMinFairness,
    TypedAllocated,
    TypedRoundPolicy,
    epochs_left,
    normalized_under,
)
from vfm.cluster.gpu_types import ClusterTypes

__all__ = [
    "TYPED_BASELINES",
    "FinishTimeFairnessAllocator",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "MarketAllocator",
    "MaxSumThroughputAllocator",
    "MinTotalDurationAllocator",
    "TypedPolicyFactory",
]


# --- allocators (frozen; `allocate` a pure function of the round's frozen state) ------------------


@dataclass(frozen=True)
class MarketAllocator:
    """The one-round Fisher market over the cluster's types (`HeterogeneousStaticMarket`).

    Recomputed when the job set or an estimate changes, and when a job's epochs left fall below
    what a round on one of its types gives (the cap of :math:`r_{ik}`: the market sees epochs done
    only through it); else reused. ``details["market"]`` is the solve (`MarketAllocation`).
    """

    every_round: bool = False

    def allocate(self, state: RoundState, thr: FloatArray) -> TypedAllocated:
        result = solve_market(thr, state.col("gpus"), state.counts, state.col("epochs").astype(np.float64),
                              state.col("done").astype(np.float64), state.round_s)
        return TypedAllocated(np.array(result.x), normalized_under(state, result.x, thr), solves=1,
                              iterations=result.iterations, details={"market": result})

    def stale_after_report(self, job: Mapping[str, Any], round_s: float) -> bool:
        left = job["epochs"] - job["done"]
        return bool((left < round_s / job["epoch_s"]).any())


@dataclass(frozen=True)
class FinishTimeFairnessAllocator:
    """Gavel's heterogeneity-aware finish-time fairness (`HeterogeneousFinishTimeFairness`); the
    ratios move with the clock, so it is recomputed every round. ``details["rho"]`` is the optimal
    largest ratio."""

    every_round: bool = True

    def allocate(self, state: RoundState, thr: FloatArray) -> TypedAllocated:
        x, rho, _ = solve_finish_time(thr, state.col("gpus"), state.counts, epochs_left(state),
                                      state.clock_s - state.col("arrival_s"), state.col("done_mix_s"))
        return TypedAllocated(x, normalized_under(state, x, thr), solves=1, details={"rho": rho})

    def stale_after_report(self, job: Mapping[str, Any], round_s: float) -> bool:
        return False  # recomputed every round anyway


@dataclass(frozen=True)
class MaxSumThroughputAllocator:
    """Gavel's heterogeneity-aware max-sum-throughput (`HeterogeneousMaxSumThroughput`); the LP
    depends only on the estimates and the job set. ``details["total"]`` is its optimal objective."""

    every_round: bool = False

    def allocate(self, state: RoundState, thr: FloatArray) -> TypedAllocated:
        x, total = solve_max_sum(thr / state.col("epochs")[:, None], state.col("gpus"), state.counts)
        return TypedAllocated(x, normalized_under(state, x, thr), lps=1 if state.n else 0, details={"total": total})

    def stale_after_report(self, job: Mapping[str, Any], round_s: float) -> bool:
        return False


@dataclass(frozen=True)
class MinTotalDurationAllocator:
    """Gavel's heterogeneity-aware min-total-duration (`HeterogeneousMinTotalDuration`); the
    horizon moves as epochs are done, so every report makes it stale. ``details["makespan_s"]`` is
    the horizon, seconds from the round it was computed for."""

    every_round: bool = False

    def allocate(self, state: RoundState, thr: FloatArray) -> TypedAllocated:
        x, makespan_s = solve_min_duration(thr, state.col("gpus"), state.counts, epochs_left(state))
        return TypedAllocated(x, normalized_under(state, x, thr), lps=1 if state.n else 0,
                              details={"makespan_s": makespan_s})

    def stale_after_report(self, job: Mapping[str, Any], round_s: float) -> bool:
        return True  # fewer epochs left: another horizon (a finished job changed the job set)


# --- the policies: Gavel's typed rounds composed with each allocator ------------------------------


class HeterogeneousStaticMarket(TypedRoundPolicy):
    """The static Fisher market over GPU types, round by round: `MarketAllocator` under Gavel's
    typed rounds.

    A `vfm.cluster.ClusterAware` policy: `TypedRoundPolicy`'s rounds (and constructor,
    ``cluster, round_s, seed``) on another allocation. Each round ``X`` is the equilibrium of the
    one-round market over the cluster's types (every present job a buyer with budget 1, utility the
    fraction of its epochs a round gives it, ``sum_k r_ik y_ik / E_i`` at its current epoch-time
    estimates), and Gavel's priorities, deficits, type-by-type placement and work conservation
    (`TypedRoundPolicy`) turn it into whole gangs. It is the VFM without forecasts or a window: one
    round, what a round on each type gives each job now. On one type its allocation is
    `vfm.cluster.baselines.StaticMarket`'s (``docs/baselines_typed.md``).

    Attributes
    ----------
    market : MarketAllocation or None
        The last solve (fractions, utilities, prices per type, status); None before the first.
    solves, iterations : int
        Market solves and interior-point iterations so far.

    Raises
    ------
    vfm.errors.SolverError
        From `next_round` or `allocation`, when the interior point ends without a usable point
        (`static_market_allocation`): the policy never runs a round on a NaN allocation.
    """

    name = "heterogeneous_static_market"
    allocator = MarketAllocator()

    @property
    def market(self) -> MarketAllocation | None:
        market: MarketAllocation | None = self.details.get("market")
        return market


class HeterogeneousFinishTimeFairness(TypedRoundPolicy):
    """Gavel's heterogeneity-aware finish-time fairness: `FinishTimeFairnessAllocator` under Gavel's
    typed rounds.

    A `vfm.cluster.ClusterAware` policy: `TypedRoundPolicy`'s rounds (and constructor,
    ``cluster, round_s, seed``) on another allocation. Each round ``X`` minimizes the largest ratio
    ``rho_i = (t_i + L_i / sum_k T_ik X_ik) / F_i`` (time since arrival plus epochs left at the
    effective throughput, over the job's finish time alone on its 1/n share of the cluster), the
    inputs computed as `vfm.cluster.baselines.FinishTimeFairness` computes them on one type: `t_i`
    from the policy clock and the job's arrival (table column ``arrival_s``), `T_ik` the current
    estimates, and the finished epochs priced at their profiled seconds on the proportional mix of
    types (column ``done_mix_s``) at today's equal share. The ratios depend on the clock, so the
    allocation is recomputed every round.

    Attributes
    ----------
    rho : float
        The optimal largest ratio of the last solve (NaN before the first).
    solves : int
        Conic solves so far.

    Raises
    ------
    vfm.errors.SolverError
        From `next_round` or `allocation`, when Clarabel ends without an optimal point.
    """

    name = "heterogeneous_finish_time_fairness"
    allocator = FinishTimeFairnessAllocator()

    @property
    def rho(self) -> float:
        return float(self.details.get("rho", float("nan")))


class HeterogeneousMaxSumThroughput(TypedRoundPolicy):
    """Gavel's heterogeneity-aware max-sum-throughput: `MaxSumThroughputAllocator` under Gavel's
    typed rounds.

    A `vfm.cluster.ClusterAware` policy: `TypedRoundPolicy`'s rounds (and constructor,
    ``cluster, round_s, seed``) on another allocation. ``X`` maximizes ``sum_ik T_ik X_ik / E_i``,
    each job's throughput in fractions of the job per second (epochs per second over its total
    epochs `E_i`), as `vfm.cluster.baselines.MaxSumThroughput` on one type: Gavel sums raw steps per
    second, which are not comparable across jobs here (an epoch of one job is not an epoch of
    another). The LP depends only on the estimates and the job set, so the allocation is reused
    while they hold.

    Attributes
    ----------
    total : float
        The last solve's optimal objective (fractions of jobs per second; NaN before the first).
    """

    name = "heterogeneous_max_sum_throughput"
    allocator = MaxSumThroughputAllocator()

    @property
    def total(self) -> float:
        return float(self.details.get("total", float("nan")))


class HeterogeneousMinTotalDuration(TypedRoundPolicy):
    """Gavel's heterogeneity-aware min-total-duration: `MinTotalDurationAllocator` under Gavel's
    typed rounds.

    A `vfm.cluster.ClusterAware` policy: `TypedRoundPolicy`'s rounds (and constructor,
    ``cluster, round_s, seed``) on another allocation. ``X`` gives every present job exactly the
    effective throughput that finishes its epochs left by the smallest common horizon
    (`makespan_s`); the horizon moves as epochs are done, so the allocation is recomputed whenever a
    job reports progress.

    Attributes
    ----------
    makespan_s : float
        The last solve's horizon, seconds from the round it was computed for (NaN before the first).
    """

    name = "heterogeneous_min_total_duration"
    allocator = MinTotalDurationAllocator()

    @property
    def makespan_s(self) -> float:
        return float(self.details.get("makespan_s", float("nan")))


TypedPolicyFactory = Callable[[ClusterTypes, float, int], TypedRoundPolicy]

#: name -> ``factory(cluster, round_s, seed)`` of each typed baseline, under the policy's `name`.
TYPED_BASELINES: dict[str, TypedPolicyFactory] = {policy.name: policy for policy in (
    HeterogeneousMaxMinFairness, HeterogeneousStaticMarket, HeterogeneousFinishTimeFairness,
    HeterogeneousMaxSumThroughput, HeterogeneousMinTotalDuration)}
