"""The baseline schedulers that the vfm policy is measured against, each a
`vfm.cluster.protocol.SchedulingPolicy` that decides round by round.

On one GPU type, the Shockwave paper's baselines (`BASELINES`, ``docs/baselines.md``), each a
round policy over the jobs' book composed with a round mechanism:

- `vfm.cluster.baselines.policies`: the allocations (pure functions) and the policies, and the
  registry `BASELINES`;
- `vfm.cluster.baselines.rounds`: `RoundPolicy` and the round mechanisms (Gavel's rounds over an
  allocation, stride scheduling, AlloX's matching);
- `vfm.cluster.baselines.round_book`: the book every round-based baseline keeps of its jobs;
- `vfm.cluster.baselines.gavel_rounds`: Gavel's round, one implementation for one GPU type and
  several, over its counters, `vfm.cluster.baselines.gavel_counters`.

On several GPU types, Gavel's heterogeneity-aware baselines and the per-type static market:
`vfm.cluster.baselines.typed` (`TYPED_BASELINES`, ``docs/baselines_typed.md``), on the same book
and Gavel's same round.
"""

from vfm.cluster.baselines.policies import (
    BASELINES,
    AlloX,
    FinishTimeFairness,
    GandivaFair,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
    PolicyFactory,
    StaticMarket,
    allocate_finish_time_fairness,
    allocate_max_min,
    allocate_max_sum_throughput,
    allocate_min_total_duration,
    allocate_static_market,
    allox_positions,
    allox_positions_lsa,
    ftf_allocation,
    water_filling,
)

__all__ = [
    "BASELINES",
    "AlloX",
    "FinishTimeFairness",
    "GandivaFair",
    "MaxMinFairness",
    "MaxSumThroughput",
    "MinTotalDuration",
    "PolicyFactory",
    "StaticMarket",
    "allocate_finish_time_fairness",
    "allocate_max_min",
    "allocate_max_sum_throughput",
    "allocate_min_total_duration",
    "allocate_static_market",
    "allox_positions",
    "allox_positions_lsa",
    "ftf_allocation",
    "water_filling",
]
