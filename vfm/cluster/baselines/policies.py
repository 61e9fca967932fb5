"""The baseline schedulers, each `vfm.cluster.baselines.rounds.RoundPolicy` composed with a round
mechanism, and their registry.

On one GPU type, the Shockwave paper's baselines (uw-mad-dash/shockwave, ``scheduler/policies/*.py``
and ``scheduler/scheduler.py``, itself built on Gavel, stanford-futuredata/gavel;
``docs/baselines.md``), each an allocation of `vfm.cluster.baselines.allocations` under Gavel's
rounds, stride scheduling or AlloX's matching (`vfm.cluster.baselines.mechanisms`):

==============================  ==================================================================
Policy                          ranking each round
==============================  ==================================================================
`MaxMinFairness`                Gavel max-min fairness (water-filling of GPU shares) + Gavel rounds
`FinishTimeFairness`            Themis as in Gavel/Shockwave: min-max finish-time fairness + Gavel rounds
`GandivaFair`                   Gandiva-Fair's gang-aware stride scheduling, equal tickets per job
`AlloX`                         AlloX's min-cost matching to GPU time slots (non-preemptive)
`MaxSumThroughput`              Gavel max-sum-throughput (fractional knapsack) + Gavel rounds
`MinTotalDuration`              Gavel min-total-duration / OSSP (x proportional to remaining time)
`StaticMarket`                  the per-round (static) Fisher market + Gavel rounds
==============================  ==================================================================

On one GPU type or several, Gavel's heterogeneity-aware policies and the per-type static market
(``docs/baselines_typed.md``), each an allocation over the types of
`vfm.cluster.baselines.typed.allocations` under the same Gavel rounds:
`HeterogeneousMaxMinFairness`, `HeterogeneousStaticMarket`, `HeterogeneousFinishTimeFairness`,
`HeterogeneousMaxSumThroughput` and `HeterogeneousMinTotalDuration`.

`BASELINES` maps each name to its factory ``factory(capacity, round_s, seed)`` (``capacity`` a GPU
count or a `vfm.cluster.ClusterTypes`); a policy whose mechanism decides on one type only
(``mechanism.over_types`` False) takes a cluster of one type:

>>> factory = BASELINES["max_min_fairness"]
>>> policy = factory(32, 120.0, 0)
>>> policy.add_job("a", 2, {32.0: 60.0}, 10)
>>> policy.next_round()
['a']
"""

from __future__ import annotations

from collections.abc import Callable

from vfm.cluster.baselines.allocations import (
    allocate_finish_time_fairness,
    allocate_max_min,
    allocate_max_sum_throughput,
    allocate_min_total_duration,
    allocate_static_market,
    allox_positions,
)
from vfm.cluster.baselines.mechanisms import GavelRounds, MatchingRounds, StrideRounds
from vfm.cluster.baselines.rounds import RoundPolicy
from vfm.cluster.baselines.typed.allocations import (
    allocate_finish_time_fairness_over_types,
    allocate_max_min_over_types,
    allocate_max_sum_throughput_over_types,
    allocate_min_total_duration_over_types,
    allocate_static_market_over_types,
)
from vfm.cluster.baselines.typed.market import MarketAllocation
from vfm.gpu_cluster import ClusterTypes

__all__ = [
    "BASELINES",
    "AlloX",
    "FinishTimeFairness",
    "GandivaFair",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxMinFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "MaxMinFairness",
    "MaxSumThroughput",
    "MinTotalDuration",
    "PolicyFactory",
    "StaticMarket",
]

# --- on one GPU type: the Shockwave paper's baselines ---------------------------------------------


class MaxMinFairness(RoundPolicy):
    """Gavel's max-min fairness ("Gavel" in the Shockwave paper): `water_filling` under Gavel's rounds.

    Source: ``scheduler/policies/max_min_fairness.py`` (``MaxMinFairnessPolicyWithPerf``) of
    uw-mad-dash/shockwave and stanford-futuredata/gavel.
    """

    name = "max_min_fairness"
    mechanism = GavelRounds(allocate_max_min)


class FinishTimeFairness(RoundPolicy):
    """Themis' finish-time fairness as the Shockwave artifact runs it: `ftf_allocation` under Gavel's rounds.

    ``rho_i = (t_i + R_i / x_i) / (T_i / s_i)`` with `t_i` the time since arrival, `R_i` the
    estimated remaining time on the whole gang, `T_i` the isolated time (finished epochs at their
    profiled times plus `R_i`) and ``s_i = min(1, G / (N w_i))`` the equal share, i.e. the
    denominator is ``T_i * max(1, N w_i / G)`` (``max(1, N/G)`` for one-GPU jobs). The allocation
    minimizes the largest `rho_i` (``last_step.details["rho"]``); Gavel's priorities then favour
    the jobs whose ratio needs the largest share. Source: ``scheduler/policies/finish_time_fairness.py``
    (``FinishTimeFairnessPolicyWithPerf``) of uw-mad-dash/shockwave.
    """

    name = "finish_time_fairness"
    mechanism = GavelRounds(allocate_finish_time_fairness)


class MaxSumThroughput(RoundPolicy):
    """Gavel's max-sum-throughput: maximize ``sum_i c_i x_i`` under Gavel's rounds.

    ``c_i = 1 / (epoch_s_i E_i)`` is job i's normalized throughput, the fraction of the job
    finished per second on its gang (the unit of the VFM utilities, so that all jobs are
    comparable). With ``sum_i w_i x_i <= G``, ``0 <= x <= 1`` the LP is a fractional knapsack:
    whole jobs in decreasing ``c_i / w_i`` until the GPUs run out, one job fractional.
    Source: ``scheduler/policies/max_sum_throughput.py`` (``ThroughputSumWithPerf``).
    """

    name = "max_sum_throughput"
    mechanism = GavelRounds(allocate_max_sum_throughput)


class MinTotalDuration(RoundPolicy):
    """Gavel's min-total-duration (OSSP in the Shockwave paper) under Gavel's rounds.

    Minimize `T` such that every present job can finish within `T`: ``x_i >= R_i / T`` with
    ``x_i <= 1`` and ``sum_i w_i x_i <= G``. Closed form: ``T* = max(max_i R_i, sum_i w_i R_i / G)``
    and ``x_i = R_i / T*`` (the artifact's bisection over `T` with an arbitrary feasible point
    returns some allocation of this LP; this is the one proportional to remaining work).
    Source: ``scheduler/policies/min_total_duration.py`` (``MinTotalDurationPolicyWithPerf``).
    """

    name = "min_total_duration"
    mechanism = GavelRounds(allocate_min_total_duration)


class GandivaFair(RoundPolicy):
    """Gandiva-Fair's gang-aware stride scheduling with one ticket per job (`StrideRounds`):
    jobs receive equal GPU-time."""

    name = "gandiva_fair"
    mechanism = StrideRounds(tickets=1.0)


class AlloX(RoundPolicy):
    """AlloX: minimum average JCT by matching jobs to GPU time slots, non-preemptive
    (`MatchingRounds` with `allox_positions`).

    Source: ``scheduler/policies/allox.py`` (``AlloXPolicy``) of uw-mad-dash/shockwave, with alpha = 1
    (the artifact builds it with alpha = 0.2: docs/baselines.md).
    """

    name = "allox"
    mechanism = MatchingRounds(allox_positions)


class StaticMarket(RoundPolicy):
    """The static Fisher market, round by round: `vfm.solve_per_period` on this round alone.

    Each round is a one-period market (the window market with one round): the round's GPUs are the
    good, every present job a buyer with an equal budget, utility its normalized progress
    :math:`c_i + r_i y_i / E_i` (epochs done so far, and the epochs a whole round gives at its
    current epoch-time estimate). Its equilibrium fractions are the allocation of Gavel's round
    mechanism (`GavelRounds`), which turns them into whole gangs. With one homogeneous good the
    market splits GPUs by budget and progress, not by throughput over time: it is what a VFM
    without forecasts over a window does.
    """

    name = "static_market"
    mechanism = GavelRounds(allocate_static_market)


# --- on one GPU type or several: Gavel's heterogeneity-aware policies ------------------------------


class HeterogeneousMaxMinFairness(RoundPolicy):
    """Gavel's heterogeneity-aware max-min fairness: `vfm.cluster.baselines.typed.max_min_allocation`
    under Gavel's rounds over the types (`allocate_max_min_over_types`).

    The LPs are a deterministic function of the job set and the throughput estimates, so reusing
    the allocation while they hold gives the very allocation a new solve would; `lps` counts the
    solves.
    """

    name = "heterogeneous_max_min_fairness"
    mechanism = GavelRounds(allocate_max_min_over_types, over_types=True)


class HeterogeneousStaticMarket(RoundPolicy):
    """The static Fisher market over GPU types, round by round: `allocate_static_market_over_types`
    under Gavel's rounds over the types.

    Each round ``X`` is the equilibrium of the
    one-round market over the cluster's types (every present job a buyer with budget 1, utility the
    fraction of its epochs a round gives it, ``sum_k r_ik y_ik / E_i`` at its current epoch-time
    estimates), and Gavel's priorities, deficits, type-by-type placement and work conservation
    (`GavelRounds`) turn it into whole gangs. It is the VFM without forecasts or a window: one
    round, what a round on each type gives each job now. On one type its allocation is
    `StaticMarket`'s (``docs/baselines_typed.md``).

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
    mechanism = GavelRounds(allocate_static_market_over_types, over_types=True)

    @property
    def market(self) -> MarketAllocation | None:
        market: MarketAllocation | None = self.details.get("market")
        return market


class HeterogeneousFinishTimeFairness(RoundPolicy):
    """Gavel's heterogeneity-aware finish-time fairness: `allocate_finish_time_fairness_over_types`
    under Gavel's rounds over the types.

    Each round ``X`` minimizes the largest ratio
    ``rho_i = (t_i + L_i / sum_k T_ik X_ik) / F_i`` (time since arrival plus epochs left at the
    effective throughput, over the job's finish time alone on its 1/n share of the cluster), the
    inputs computed as `FinishTimeFairness` computes them on one type: `t_i`
    from the policy clock and the job's arrival (table column ``arrival_s``), `T_ik` the current
    estimates, and the finished epochs priced at their profiled seconds on the proportional mix of
    types (column ``done_s``) at today's equal share. The ratios depend on the clock, so the
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
    mechanism = GavelRounds(allocate_finish_time_fairness_over_types, over_types=True)

    @property
    def rho(self) -> float:
        return float(self.details.get("rho", float("nan")))


class HeterogeneousMaxSumThroughput(RoundPolicy):
    """Gavel's heterogeneity-aware max-sum-throughput: `allocate_max_sum_throughput_over_types`
    under Gavel's rounds over the types.

    ``X`` maximizes ``sum_ik T_ik X_ik / E_i``,
    each job's throughput in fractions of the job per second (epochs per second over its total
    epochs `E_i`), as `MaxSumThroughput` on one type: Gavel sums raw steps per
    second, which are not comparable across jobs here (an epoch of one job is not an epoch of
    another). The LP depends only on the estimates and the job set, so the allocation is reused
    while they hold.

    Attributes
    ----------
    total : float
        The last solve's optimal objective (fractions of jobs per second; NaN before the first).
    """

    name = "heterogeneous_max_sum_throughput"
    mechanism = GavelRounds(allocate_max_sum_throughput_over_types, over_types=True)

    @property
    def total(self) -> float:
        return float(self.details.get("total", float("nan")))


class HeterogeneousMinTotalDuration(RoundPolicy):
    """Gavel's heterogeneity-aware min-total-duration: `allocate_min_total_duration_over_types`
    under Gavel's rounds over the types.

    ``X`` gives every present job exactly the
    effective throughput that finishes its epochs left by the smallest common horizon
    (`makespan_s`); the horizon moves as epochs are done, so the allocation is recomputed whenever a
    job reports progress.

    Attributes
    ----------
    makespan_s : float
        The last solve's horizon, seconds from the round it was computed for (NaN before the first).
    """

    name = "heterogeneous_min_total_duration"
    mechanism = GavelRounds(allocate_min_total_duration_over_types, over_types=True)

    @property
    def makespan_s(self) -> float:
        return float(self.details.get("makespan_s", float("nan")))


PolicyFactory = Callable[[int | ClusterTypes, float, int], RoundPolicy]

#: name -> ``factory(capacity, round_s, seed)`` of each baseline, under the policy's `name`: the
#: Shockwave paper's, then the heterogeneity-aware ones.
BASELINES: dict[str, PolicyFactory] = {policy.name: policy for policy in (
    StaticMarket, MaxMinFairness, FinishTimeFairness, GandivaFair, AlloX, MaxSumThroughput, MinTotalDuration,
    HeterogeneousMaxMinFairness, HeterogeneousStaticMarket, HeterogeneousFinishTimeFairness,
    HeterogeneousMaxSumThroughput, HeterogeneousMinTotalDuration)}
