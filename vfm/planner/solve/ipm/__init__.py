"""The planner's interior point (backend ``saa-ipm``): vfm's primal-dual method for the window's
expected-NSWOT program, reduced to the round block.

`solve_saa_ipm` solves a `vfm.planner.PlanningProgram` to a certified relative gap. The method is
described in full in `vfm.planner.solve.ipm.method`, which holds the entry point and the
iterations (each one a direction and a line search); its parts: `point` (the iterate and its
evaluation), `start` (the start), `stopping` (the stopping test and its repricing), `newton` (the
Newton system and its solves) and `blocks` (the per-job blocks' factorizations). All of them read
the program in the solvers' terms (`vfm.planner.solve.scaled_program`), and their loops over the
jobs are the compiled kernels of `vfm.planner._kernels`.
"""

from vfm.planner.solve.ipm.method import certified_gap, check_tolerance, solve_saa_ipm

__all__ = ["certified_gap", "check_tolerance", "solve_saa_ipm"]
