"""Allocations over GPU types: Gavel's heterogeneity-aware programs and the per-type static market.

Each program takes an instance ``(throughputs (n, K), gangs (n,), GPU counts (K,))`` and returns
each job's fraction of time on each type; `vfm.cluster.baselines.typed.allocations` serves them to
Gavel's rounds as pure functions of the round's frozen state, the allocations of the
heterogeneity-aware baselines of `vfm.cluster.baselines.policies`. Each concept in its module:

- `vfm.cluster.baselines.typed.instance`: the instance every program takes (`checked_instance`)
  and the throughputs it is measured by (`proportional_throughputs`, `normalized_throughputs`);
- `vfm.cluster.baselines.typed.max_min`: Gavel's lexicographic max-min fair allocation
  (`max_min_allocation`: one or a few `scipy.optimize.linprog` solves with HiGHS);
- `vfm.cluster.baselines.typed.market`: the one-round Fisher market over the types
  (`static_market_allocation`: one solve of the planner's interior point, through the solver
  registry);
- `vfm.cluster.baselines.typed.gavel_programs`: Gavel's other heterogeneity-aware ("_perf") programs,
  `finish_time_fairness_allocation` (a cone program, CVXPY and Clarabel),
  `max_sum_throughput_allocation` and `min_total_duration_allocation` (one HiGHS LP each);
- `vfm.cluster.baselines.typed.allocations`: each of them as an allocation of the round's state,
  with how long it holds.

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

>>> result = max_min_allocation([[4.0, 1.0], [1.2, 1.0]], [1, 1], [1, 3])
>>> (result.x.round(6) + 0.0).tolist()  # + 0.0: a -0.0 prints as 0.0
[[0.3, 0.7], [0.7, 0.3]]
>>> result.normalized.round(6).tolist()  # both at the same level
[1.085714, 1.085714]
"""

from vfm.cluster.baselines.typed.allocations import (
    allocate_finish_time_fairness_over_types,
    allocate_max_min_over_types,
    allocate_max_sum_throughput_over_types,
    allocate_min_total_duration_over_types,
    allocate_static_market_over_types,
)
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

__all__ = [
    "DurationAllocation",
    "FinishTimeAllocation",
    "MarketAllocation",
    "MaxMinAllocation",
    "ThroughputAllocation",
    "allocate_finish_time_fairness_over_types",
    "allocate_max_min_over_types",
    "allocate_max_sum_throughput_over_types",
    "allocate_min_total_duration_over_types",
    "allocate_static_market_over_types",
    "finish_time_fairness_allocation",
    "max_min_allocation",
    "max_sum_throughput_allocation",
    "min_total_duration_allocation",
    "normalized_throughputs",
    "proportional_throughputs",
    "static_market_allocation",
]
