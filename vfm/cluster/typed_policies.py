"""The typed baselines that run Gavel's round mechanism on another allocation, and their registry.

Each is Gavel's round mechanism over the types, `vfm.cluster.typed_rounds.TypedRoundPolicy`, on
its own allocation (``_solve``): `HeterogeneousStaticMarket` the one-round Fisher market over the types
(`vfm.cluster.typed_market.static_market_allocation`), `HeterogeneousFinishTimeFairness`,
`HeterogeneousMaxSumThroughput` and `HeterogeneousMinTotalDuration` Gavel's other
heterogeneity-aware programs (`vfm.cluster.typed_gavel_programs`). `TYPED_BASELINES` names all
five typed baselines.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np

from vfm.cluster.gpu_types import ClusterTypes
from vfm.cluster.typed_gavel_programs import solve_finish_time, solve_max_sum, solve_min_duration
from vfm.cluster.typed_instance import FloatArray
from vfm.cluster.typed_market import MarketAllocation, solve_market
from vfm.cluster.typed_rounds import HeterogeneousMaxMinFairness, TypedRoundPolicy

__all__ = [
    "TYPED_BASELINES",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "TypedPolicyFactory",
]


class HeterogeneousStaticMarket(TypedRoundPolicy):
    """The static Fisher market over GPU types, round by round: `static_market_allocation` + Gavel's
    typed rounds.

    A `vfm.cluster.ClusterAware` policy: `TypedRoundPolicy`'s rounds (and constructor,
    ``cluster, round_s, seed``) on another allocation. Each round ``X`` is the equilibrium of the
    one-round market over the cluster's types (every present job a buyer with budget 1, utility the
    fraction of its epochs a round gives it, ``sum_k r_ik y_ik / E_i`` at its current epoch-time
    estimates), and Gavel's priorities, deficits, type-by-type placement and work conservation
    (`TypedRoundPolicy`) turn it into whole gangs. It is the VFM without forecasts or a window: one
    round, what a round on each type gives each job now. On one type its allocation is
    `vfm.cluster.baselines.StaticMarket`'s (``docs/baselines_typed.md``).

    The allocation is recomputed when the job set or an estimate changes, and when a job's epochs
    left fall below what a round on one of its types gives (the cap of :math:`r_{ik}`); else reused.

    Attributes
    ----------
    market : MarketAllocation or None
        The last solve (fractions, utilities, prices per type, status); None before the first.
    solves : int
        Market solves so far.
    iterations : int
        Interior-point iterations so far.

    Raises
    ------
    vfm.errors.SolverError
        From `next_round` or `allocation`, when the interior point ends without a usable point
        (`static_market_allocation`): the policy never runs a round on a NaN allocation.
    """

    name = "heterogeneous_static_market"
    market: MarketAllocation | None = None
    solves = 0
    iterations = 0

    def _progressed(self, row: int, batch_sizes: Sequence[float]) -> None:
        # The market sees epochs done only through the cap r_ik <= epochs left.
        t = self._table
        left = t.col("epochs")[row] - t.col("done")[row]
        if (left < self.round_s / t.col("epoch_s")[row]).any():
            self._stale = True

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        result = solve_market(thr, t.col("gpus"), self._counts, t.col("epochs").astype(np.float64),
                              t.col("done").astype(np.float64), self.round_s)
        self.market = result
        self.solves += 1
        self.iterations += result.iterations
        return np.array(result.x), self._normalized_under(result.x, thr)


class HeterogeneousFinishTimeFairness(TypedRoundPolicy):
    """Gavel's heterogeneity-aware finish-time fairness: `finish_time_fairness_allocation` + Gavel's
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
    rho = float("nan")
    solves = 0

    def _progressed(self, row: int, batch_sizes: Sequence[float]) -> None:
        # (A job that finished has left: nothing to keep.)
        t = self._table
        mix = self._counts / float(self._counts.sum())  # the proportional row count_k / C
        seconds = np.stack([t.regimes[row][float(b)] for b in batch_sizes])  # (epochs, K), inf: cannot host
        t.col("done_mix_s")[row] += float((1.0 / (mix / seconds).sum(axis=1)).sum())

    def next_round(self) -> dict[Hashable, str]:
        self._stale = True  # the ratios move with the clock
        return super().next_round()

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        x, self.rho, _ = solve_finish_time(thr, t.col("gpus"), self._counts, self._epochs_left(),
                                           self.clock_s - t.col("arrival_s"), t.col("done_mix_s"))
        self.solves += 1
        return x, self._normalized_under(x, thr)


class HeterogeneousMaxSumThroughput(TypedRoundPolicy):
    """Gavel's heterogeneity-aware max-sum-throughput: `max_sum_throughput_allocation` + Gavel's
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
    total = float("nan")

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        x, self.total = solve_max_sum(thr / t.col("epochs")[:, None], t.col("gpus"), self._counts)
        self.lps += 1 if t.n else 0
        return x, self._normalized_under(x, thr)


class HeterogeneousMinTotalDuration(TypedRoundPolicy):
    """Gavel's heterogeneity-aware min-total-duration: `min_total_duration_allocation` + Gavel's
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
    makespan_s = float("nan")

    def _progressed(self, row: int, batch_sizes: Sequence[float]) -> None:
        self._stale = True  # fewer epochs left: another horizon (a finished job changed the job set)

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        x, self.makespan_s = solve_min_duration(thr, self._table.col("gpus"), self._counts, self._epochs_left())
        self.lps += 1 if self._table.n else 0
        return x, self._normalized_under(x, thr)


TypedPolicyFactory = Callable[[ClusterTypes, float, int], TypedRoundPolicy]

#: name -> ``factory(cluster, round_s, seed)`` of each typed baseline, under the policy's `name`.
TYPED_BASELINES: dict[str, TypedPolicyFactory] = {policy.name: policy for policy in (
    HeterogeneousMaxMinFairness, HeterogeneousStaticMarket, HeterogeneousFinishTimeFairness,
    HeterogeneousMaxSumThroughput, HeterogeneousMinTotalDuration)}
