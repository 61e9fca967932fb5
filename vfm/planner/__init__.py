"""The receding-horizon planner, and the policy a cluster scheduler drives.

`plan` re-plans a window once: forecast, solve the expected-NSWOT relaxation exactly, round to
whole gangs. `PlanningProgram` is the program, `round_schedule` the rounding. `Policy` is the
object a scheduler drives round by round: it re-plans on arrivals, completions and every K rounds,
on one GPU type or several (goods (type, round), `vfm.planner.typed`). `compile_kernels` compiles
the planner's kernels ahead (``python -m vfm.planner.compile``); without it, a policy loads them in
the background while its first plans run them interpreted (`vfm.planner.kernel_loading`).
"""

from vfm.planner import backends as backends  # registers the planning backends
from vfm.planner.decision import Decision
from vfm.planner.inputs import JobTerms
from vfm.planner.kernel_loading import compile_kernels
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan, plan
from vfm.planner.policy import Policy
from vfm.planner.program import PlanningProgram
from vfm.planner.rounding import RoundingContext, round_schedule
from vfm.planner.state import RoundOptions

__all__ = ["Decision", "JobTerms", "Plan", "PlanOptions", "PlanningProgram", "Policy", "RoundOptions",
           "RoundingContext", "compile_kernels", "plan", "round_schedule"]
