"""Scheduling policies of the reproduction, behind `base.SchedulingPolicy`.

`BASELINES` maps each baseline's name to its factory ``factory(capacity, round_s, seed)``:

>>> policy = BASELINES["max_min_fairness"](32, 120.0, 0)
>>> policy.add_job("a", 2, {32.0: 60.0}, 10)
>>> policy.next_round()
['a']
"""

from __future__ import annotations

from collections.abc import Callable

from benchmarks.policies.baselines import (
    AlloX,
    FinishTimeFairness,
    GandivaFair,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
)
from benchmarks.policies.common import RoundPolicy

__all__ = ["BASELINES", "PolicyFactory"]

PolicyFactory = Callable[[int, float, int], RoundPolicy]

BASELINES: dict[str, PolicyFactory] = {
    "max_min_fairness": MaxMinFairness,
    "finish_time_fairness": FinishTimeFairness,
    "gandiva_fair": GandivaFair,
    "allox": AlloX,
    "max_sum_throughput": MaxSumThroughput,
    "min_total_duration": MinTotalDuration,
}
