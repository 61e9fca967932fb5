"""The receding-horizon planner, and the policy a cluster scheduler drives.

`plan` re-plans a window once: forecast, solve the expected-NSWOT relaxation exactly, round to
whole gangs. `PlanningProgram` is the program, `round_schedule` the rounding. `Policy` is the
object a scheduler drives round by round: it re-plans on arrivals, completions and every K rounds,
on one GPU type or several (goods (type, round), `vfm.planner.typed`). `compile_kernels` compiles
the planner's kernels ahead (``python -m vfm.planner.compile``); without it, a policy loads them in
the background while its first plans run them interpreted (`vfm.planner.kernel_loading`).

From the bottom up: `vfm.planner._kernels`, the compiled loops; the window's pieces (`options`,
`program`, `typed`, `inputs`, `pace`, `rounding`, `shockwave`); `vfm.planner.solve`, the
backends that solve the relaxation and the polish; `plan`; and `vfm.planner.policy`, the policy
with its records and its checkpoint format.
"""

from vfm.planner import solve as solve  # its planning backends register as it loads
from vfm.planner.inputs import JobTerms
from vfm.planner.kernel_loading import compile_kernels
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan, plan
from vfm.planner.policy import Decision, Policy, RoundOptions
from vfm.planner.program import PlanningProgram
from vfm.planner.rounding import RoundingContext, round_schedule

__all__ = ["Decision", "JobTerms", "Plan", "PlanOptions", "PlanningProgram", "Policy", "RoundOptions",
           "RoundingContext", "compile_kernels", "plan", "round_schedule"]
