"""The allocations over GPU types that Gavel's rounds serve: each program of this package as a pure
function of the round's frozen state (`vfm.cluster.baselines.mechanisms.Allocation`).

Each reads the present jobs' throughput estimates (`vfm.cluster.baselines.mechanisms.throughputs`:
1 / current epoch seconds, 0 where a type cannot host the job) and returns an `Allocated` of shape
(n, K) that says how long it holds: the max-min and max-sum programs depend only on the job set
and the estimates (reused while they hold), the market also on the epochs left where a round
would finish a job, the min-total-duration horizon on every report, and the finish-time ratios on
the clock (computed again every round). They are the allocations of the heterogeneity-aware
baselines of `vfm.cluster.baselines.policies` (``docs/baselines_typed.md``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from vfm.cluster.baselines.mechanisms import Allocated, FloatArray, throughputs
from vfm.cluster.baselines.round_book import RoundState
from vfm.cluster.baselines.typed.gavel_programs import solve_finish_time, solve_max_sum, solve_min_duration
from vfm.cluster.baselines.typed.market import solve_market
from vfm.cluster.baselines.typed.max_min import solve_lex_max_min

__all__ = [
    "allocate_finish_time_fairness_over_types",
    "allocate_max_min_over_types",
    "allocate_max_sum_throughput_over_types",
    "allocate_min_total_duration_over_types",
    "allocate_static_market_over_types",
    "epochs_left",
]


def epochs_left(state: RoundState) -> FloatArray:
    """Each present job's epochs left, as floats."""
    left: FloatArray = (state.col("epochs") - state.col("done")).astype(np.float64)
    return left


def _never(job: Mapping[str, Any], round_s: float) -> bool:
    return False  # stale only when the job set or an estimate changes


def _always(job: Mapping[str, Any], round_s: float) -> bool:
    return True


def _round_finishes_it(job: Mapping[str, Any], round_s: float) -> bool:
    """Whether the job's epochs left fall below what a round on one of its types gives (the cap
    of the market's rate: the market sees epochs done only through it)."""
    left = job["epochs"] - job["done"]
    return bool((left < round_s / job["epoch_s"]).any())


def allocate_max_min_over_types(state: RoundState) -> Allocated:
    """Gavel's heterogeneity-aware max-min fairness (`vfm.cluster.baselines.typed.max_min_allocation`):
    its LPs are a deterministic function of the job set and the estimates, so it holds while they do."""
    x, _, lps = solve_lex_max_min(throughputs(state), state.col("gpus"), state.counts)
    return Allocated(x, lps=lps, stale_after_report=_never)


def allocate_static_market_over_types(state: RoundState) -> Allocated:
    """The one-round Fisher market over the types (`vfm.cluster.baselines.typed.static_market_allocation`);
    ``details["market"]`` is the solve (`MarketAllocation`). It holds until the job set or an
    estimate changes, or a job's epochs left fall below what a round gives it."""
    result = solve_market(throughputs(state), state.col("gpus"), state.counts, state.col("epochs").astype(np.float64),
                          state.col("done").astype(np.float64), state.round_s)
    return Allocated(np.array(result.x), solves=1, iterations=result.iterations, details={"market": result},
                     stale_after_report=_round_finishes_it)


def allocate_finish_time_fairness_over_types(state: RoundState) -> Allocated:
    """Gavel's heterogeneity-aware finish-time fairness (`vfm.cluster.baselines.typed.finish_time_fairness_allocation`);
    ``details["rho"]`` is the optimal largest ratio. The ratios move with the clock: computed every round."""
    x, rho, _ = solve_finish_time(throughputs(state), state.col("gpus"), state.counts, epochs_left(state),
                                  state.clock_s - state.col("arrival_s"), state.col("done_s"))
    return Allocated(x, solves=1, details={"rho": rho})


def allocate_max_sum_throughput_over_types(state: RoundState) -> Allocated:
    """Gavel's heterogeneity-aware max-sum-throughput (`vfm.cluster.baselines.typed.max_sum_throughput_allocation`)
    in fractions of each job per second; ``details["total"]`` is its optimal objective. Its LP
    depends only on the estimates and the job set."""
    x, total = solve_max_sum(throughputs(state) / state.col("epochs")[:, None], state.col("gpus"), state.counts)
    return Allocated(x, lps=1 if state.n else 0, details={"total": total}, stale_after_report=_never)


def allocate_min_total_duration_over_types(state: RoundState) -> Allocated:
    """Gavel's heterogeneity-aware min-total-duration (`vfm.cluster.baselines.typed.min_total_duration_allocation`);
    ``details["makespan_s"]`` is the horizon, seconds from the round it was computed for. Fewer
    epochs left is another horizon: every report makes it stale."""
    x, makespan_s = solve_min_duration(throughputs(state), state.col("gpus"), state.counts, epochs_left(state))
    return Allocated(x, lps=1 if state.n else 0, details={"makespan_s": makespan_s}, stale_after_report=_always)
