"""Solving a planning window's relaxation: the backends, and the polish that makes their answers one.

`vfm.planner.plan` solves the expected-NSWOT program (`vfm.planner.PlanningProgram`) with one of
the planning backends, registered in `vfm.solvers.registry` when this package loads
(`vfm.planner.solve.backends`): ``saa-ipm``, vfm's interior point (`vfm.planner.solve.ipm`,
`solve_saa_ipm`), and ``cvxpy``, the program as one CVXPY model solved by Clarabel, the independent
reference (`vfm.planner.solve.cvxpy_model`, `solve_saa_cvxpy`). On one scenario it then polishes
the backend's schedule to the program's exact optimum (`vfm.planner.solve.polish`, with its Newton
matrix in `vfm.planner.solve.polish_system`), so that every backend and every tolerance hands the
rounding the same schedule. The interior point and the polish both read the program in the
solvers' terms, `ScaledProgram` (`vfm.planner.solve.scaled_program`), which also certifies a
schedule's gap.
"""

from vfm.planner.solve.backends import SaaCvxpyBackend, SaaIpmBackend
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm import certified_gap, check_tolerance, solve_saa_ipm
from vfm.planner.solve.scaled_program import ScaledProgram, scale_program

__all__ = ["SaaCvxpyBackend", "SaaIpmBackend", "ScaledProgram", "certified_gap", "check_tolerance", "scale_program",
           "solve_saa_cvxpy", "solve_saa_ipm"]
