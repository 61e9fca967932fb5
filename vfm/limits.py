"""What vfm accepts: the bounds every boundary checks, in one place.

Each bound is far above any real cluster or job and low enough that every quantity derived from
an accepted input (sums over a million jobs, times over a window, per-epoch arrays) stays finite
and exact in float64 and fits in memory. An input past a bound is refused with a
`vfm.errors.ValidationError` naming it, where it comes in (`vfm.planner.Policy.add_job`,
`vfm.planner.PlanOptions`, `vfm.planner.plan`, the workload loader and generator of
`vfm.cluster`, a checkpoint), so that what is accepted at one boundary is accepted at the next:
a workload file that loads runs, a job the policy takes can be planned. docs/guarantees.md,
"Limits", gives the reasons and the memory per job.
"""

from __future__ import annotations

MAX_JOB_SECONDS = 1e12
"""The longest a job may run alone, in seconds (1e12 s, about 31,700 years): its epochs times
its slowest seconds per epoch, and every other span of time a workload states (a round, a
generated run time, a mean gap between arrivals). Sums of such times over millions of jobs
and rounds stay finite and exact to well under a second in float64."""

MAX_JOB_EPOCHS = 10**9
"""The most epochs one job may have (1e9): its counts stay exact in float64 (to 2**53) with room
to sum a million jobs' counts, and a report lists one batch size per epoch."""

MAX_BUDGET = 1e6
"""The largest budget (weight) of one job: budgets over a million jobs sum to at most 1e12, so
the market's totals and prices stay finite with room to spare."""

MAX_BUDGET_SUM = 1e300
"""The largest sum of budgets `vfm.planner.plan` accepts. The objective and its bound are sums of
budgets (times the FTF relaxation's priority weights, up to 1e4) times log utilities (up to
about 745 in size for a utility of 1e-323): budgets summing to more could overflow them. Only
the budgets' ratios matter, so any budgets can be scaled below it."""

MAX_GPUS = 10**6
"""The most GPUs a cluster (and so a gang) may have (1e6, several times the largest clusters
built): baselines keep per-GPU arrays, and gang sizes times epochs stay far inside int64."""

MAX_COUNT = 2**53
"""Counts that must stay exact in float64 (training steps and samples per epoch; rounds, re-plans
and waits in a checkpoint) stay below 2^53."""

MAX_WINDOW_ROUNDS = 2_000
"""The longest planning window `vfm.planner.PlanOptions.rounds` accepts. The planner holds dense
arrays per (scenario, job, round) and factors dense round-by-round systems (T by T, O(T^3) per
factorization): at 2,000 rounds one such matrix is 32 MB and a re-plan of a few jobs takes
about a second; 5,000 rounds take tens of seconds per re-plan and 100,000 rounds would need 74.5 GiB. A
longer horizon is better planned as a shorter window re-planned as it recedes."""

MAX_WORKLOAD_EPOCHS = 10_000_000
"""The most epochs a workload may have in all (1e7, some 9 times the largest shipped trace): the
loader expands every job's phases to per-epoch arrays, and the simulator keeps them on one time
line, about 100 bytes per epoch at the peak of a run (1 GB at this limit)."""

MAX_ARRIVAL_ROUNDS = float(2**53)
"""Arrivals of a workload lie within this many rounds of time 0 (2^53: round starts stay exact)."""

__all__ = ["MAX_ARRIVAL_ROUNDS", "MAX_BUDGET", "MAX_BUDGET_SUM", "MAX_COUNT", "MAX_GPUS", "MAX_JOB_EPOCHS",
           "MAX_JOB_SECONDS", "MAX_WINDOW_ROUNDS", "MAX_WORKLOAD_EPOCHS"]
