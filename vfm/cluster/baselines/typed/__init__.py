"""Baselines for clusters of several GPU types: Gavel's heterogeneity-aware max-min fairness, the
per-type static market and Gavel's other heterogeneity-aware policies.

This package gathers them; each concept lives in its own module:

- `vfm.cluster.baselines.typed.instance`: the instance every allocation program takes (`checked_instance`)
  and the throughputs it is measured by (`proportional_throughputs`, `normalized_throughputs`);
- `vfm.cluster.baselines.typed.max_min`: Gavel's lexicographic max-min fair allocation
  (`max_min_allocation`: one or a few `scipy.optimize.linprog` solves with HiGHS);
- `vfm.cluster.baselines.typed.market`: the one-round Fisher market over the types
  (`static_market_allocation`: one `vfm.planner.solve.ipm.solve_saa_ipm` solve);
- `vfm.cluster.baselines.typed.gavel_programs`: Gavel's other heterogeneity-aware ("_perf") programs,
  `finish_time_fairness_allocation` (a cone program, CVXPY and Clarabel),
  `max_sum_throughput_allocation` and `min_total_duration_allocation` (one HiGHS LP each);
- `vfm.cluster.baselines.typed.rounds`: Gavel's round mechanism, `TypedRoundPolicy` (a
  `vfm.cluster.ClusterAware` policy) composed with a `TypedAllocator`: every round the allocation
  `X` (jobs x types), then per-(job, type) priorities ``X_ik / (share of type k's time job i
  received)``, deficits as tie-breakers, type by type (fastest first), whole gangs first-fit, each
  job on at most one type; then work conservation (`gavel_round_step`, a pure function of the
  round's frozen state). `HeterogeneousMaxMinFairness` composes it with `MaxMinAllocator`;
- `vfm.cluster.baselines.typed.policies`: the same rounds composed with the other allocators,
  `HeterogeneousStaticMarket`, `HeterogeneousFinishTimeFairness`, `HeterogeneousMaxSumThroughput`
  and `HeterogeneousMinTotalDuration`, and the registry `TYPED_BASELINES`.

``docs/baselines_typed.md`` states the formulation and every decision, and where each part
follows Gavel's code (``scheduler/policies/max_min_fairness.py``, ``proportional.py``,
``max_min_fairness_water_filling.py``; ``scheduler/scheduler.py``: ``_update_priorities``,
``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``).

Examples
--------
One V100 and three K80s; job ``a`` is 4x faster on the V100 than on a K80, job ``b`` 1.2x. The
max-min allocation equalizes the normalized throughputs: ``b`` gains little on the V100 but its
proportional reference is low, so it keeps most of the V100 and ``a`` runs mostly on a K80
(``docs/baselines_typed.md`` derives it by hand: ``a`` gets 3/10 of the V100):

>>> from vfm.cluster.gpu_types import ClusterTypes
>>> policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 1, "k80": 3}))
>>> policy.add_job("a", 1, {"v100": {32.0: 25.0}, "k80": {32.0: 100.0}}, 10)
>>> policy.add_job("b", 1, {"v100": {32.0: 100.0}, "k80": {32.0: 120.0}}, 10)
>>> current = policy.allocation()
>>> current.jobs, current.types
(('a', 'b'), ('v100', 'k80'))
>>> (current.x.round(6) + 0.0).tolist()  # + 0.0: a -0.0 prints as 0.0
[[0.3, 0.7], [0.7, 0.3]]
>>> current.normalized.round(6).tolist()  # both at the same level
[1.085714, 1.085714]
>>> policy.next_round()
{'b': 'v100', 'a': 'k80'}
"""

from vfm.cluster.baselines.round_book import RoundState
from vfm.cluster.baselines.typed.gavel_programs import (
    DurationAllocation,
    FinishTimeAllocation,
    ThroughputAllocation,
    finish_time_fairness_allocation,
    max_sum_throughput_allocation,
    min_total_duration_allocation,
)
from vfm.cluster.baselines.typed.instance import normalized_throughputs, proportional_throughputs
from vfm.cluster.baselines.typed.market import MarketAllocation, static_market_allocation
from vfm.cluster.baselines.typed.max_min import MaxMinAllocation, max_min_allocation
from vfm.cluster.baselines.typed.policies import (
    TYPED_BASELINES,
    FinishTimeFairnessAllocator,
    HeterogeneousFinishTimeFairness,
    HeterogeneousMaxSumThroughput,
    HeterogeneousMinTotalDuration,
    HeterogeneousStaticMarket,
    MarketAllocator,
    MaxSumThroughputAllocator,
    MinTotalDurationAllocator,
    TypedPolicyFactory,
)
from vfm.cluster.baselines.typed.rounds import (
    HeterogeneousMaxMinFairness,
    MaxMinAllocator,
    PolicyAllocation,
    TypedAllocated,
    TypedAllocator,
    TypedRoundPolicy,
)

__all__ = [
    "TYPED_BASELINES",
    "DurationAllocation",
    "FinishTimeAllocation",
    "FinishTimeFairnessAllocator",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxMinFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "MarketAllocation",
    "MarketAllocator",
    "MaxMinAllocation",
    "MaxMinAllocator",
    "MaxSumThroughputAllocator",
    "MinTotalDurationAllocator",
    "PolicyAllocation",
    "RoundState",
    "ThroughputAllocation",
    "TypedAllocated",
    "TypedAllocator",
    "TypedPolicyFactory",
    "TypedRoundPolicy",
    "finish_time_fairness_allocation",
    "max_min_allocation",
    "max_sum_throughput_allocation",
    "min_total_duration_allocation",
    "normalized_throughputs",
    "proportional_throughputs",
    "static_market_allocation",
]
