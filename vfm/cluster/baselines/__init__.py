"""The baseline schedulers that the vfm policy is measured against, each a
`vfm.cluster.protocol.SchedulingPolicy` that decides round by round, on one GPU type or several.

Every baseline is one policy, `RoundPolicy` (the jobs' book and the conversation with the
scheduler), composed with a round mechanism (`RoundMechanism`: Gavel's rounds over an allocation,
stride scheduling, AlloX's matching); `BASELINES` names them all (``docs/baselines.md``,
``docs/baselines_typed.md``):

- `vfm.cluster.baselines.rounds`: `RoundPolicy`, over its book (`vfm.cluster.baselines.round_book`);
- `vfm.cluster.baselines.mechanisms`: the round mechanisms and the allocations Gavel's rounds
  serve; Gavel's round itself, one implementation for one GPU type and several, is
  `vfm.cluster.baselines.gavel_rounds` over its counters, `vfm.cluster.baselines.gavel_counters`;
- `vfm.cluster.baselines.allocations`: the Shockwave paper's allocations on one GPU type;
- `vfm.cluster.baselines.typed`: Gavel's heterogeneity-aware programs and the per-type market;
- `vfm.cluster.baselines.policies`: the baselines and their registry, `BASELINES`.
"""

from vfm.cluster.baselines.allocations import (
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
from vfm.cluster.baselines.mechanisms import (
    Allocated,
    Allocation,
    GavelRounds,
    MatchingRounds,
    RoundMechanism,
    RoundStep,
    StrideRounds,
)
from vfm.cluster.baselines.policies import (
    BASELINES,
    AlloX,
    FinishTimeFairness,
    GandivaFair,
    HeterogeneousFinishTimeFairness,
    HeterogeneousMaxMinFairness,
    HeterogeneousMaxSumThroughput,
    HeterogeneousMinTotalDuration,
    HeterogeneousStaticMarket,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
    PolicyFactory,
    StaticMarket,
)
from vfm.cluster.baselines.round_book import RoundState
from vfm.cluster.baselines.rounds import PolicyAllocation, RoundPolicy

__all__ = [
    "BASELINES",
    "AlloX",
    "Allocated",
    "Allocation",
    "FinishTimeFairness",
    "GandivaFair",
    "GavelRounds",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxMinFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "MatchingRounds",
    "MaxMinFairness",
    "MaxSumThroughput",
    "MinTotalDuration",
    "PolicyAllocation",
    "PolicyFactory",
    "RoundMechanism",
    "RoundPolicy",
    "RoundState",
    "RoundStep",
    "StaticMarket",
    "StrideRounds",
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
