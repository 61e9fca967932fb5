"""The expected-NSWOT program as one CVXPY exponential-cone model (every option).

The independent reference for `saa-ipm`, which solves the same program (scenarios, the
efficiency term, the finish-time-fairness constraints). Built from one matrix variable `y` of shape (n, T)
and one sparse (S n, n T) matrix that maps it to every scenario's utilities, so building the
model costs the same whatever S is; solved by Clarabel unless another CVXPY solver is named.
"""

from __future__ import annotations

import time
from typing import Any

import cvxpy as cp
import numpy as np
import scipy.sparse as sp

from vfm.equilibrium import Status
from vfm.planner.program import PlanningProgram
from vfm.planner.saa_ipm import certified_gap
from vfm.solvers.base import Solution
from vfm.solvers.cvxpy_conic import cvxpy_status


def solve_saa_cvxpy(program: PlanningProgram, solver: str = "CLARABEL", **options: Any) -> Solution:
    """Solve any `PlanningProgram` with CVXPY; the gap is certified from the solver's multipliers
    (`vfm.planner.saa_ipm.certified_gap`), for the objective without the tie-breaking term."""
    started = time.perf_counter()
    n_scenarios, n, rounds = program.shape
    y = cp.Variable((n, rounds), nonneg=True)
    # Row s * n + i, column i + t * n (cp.vec is column-major): a_sit.
    scenario, job, period = np.nonzero(program.progress * program.runnable[None])
    mapping = sp.csr_array(
        (program.progress[scenario, job, period], (scenario * n + job, job + period * n)),
        shape=(n_scenarios * n, n * rounds),
    )
    utilities = np.tile(program.base, n_scenarios) + mapping @ cp.vec(y, order="F")
    # The model is the program's objective divided by the weight total, with running time in
    # rounds: its terms are then O(1) whatever the budgets, priority weights (up to ~1e10 in the
    # FTF relaxation) or round length, which Clarabel's absolute tolerances need.
    scale = float(program.weights.sum())
    objective = cp.sum(cp.multiply(np.tile(program.weights / scale, n_scenarios) / n_scenarios, cp.log(utilities)))
    if program.spread:
        coefficient = 0.5 * program.spread * program.spread_weights / scale
        objective = objective - cp.sum(cp.multiply(coefficient[:, None] * program.runnable, cp.square(y)))
    capacity = program.gpus @ y <= program.capacity
    constraints = [capacity, y <= program.runnable * program.bounds[None, :]]
    leftover_rounds = program.remaining_s / program.round_s - cp.sum(y, axis=1)
    efficiency = fairness = None
    if program.efficiency:
        longest = cp.Variable(nonneg=True)
        efficiency = longest >= leftover_rounds
        constraints.append(efficiency)
        objective = objective - (program.efficiency * program.round_s / scale) * longest
    if program.leftover_limit_s is not None:
        fairness = leftover_rounds <= program.leftover_limit_s / program.round_s
        constraints.append(fairness)
    problem = cp.Problem(cp.Maximize(objective), constraints)
    try:
        problem.solve(solver=solver, **options)
    except cp.SolverError as error:
        return _failed(Status.ERROR, f"cvxpy/{solver} failed: {error}", started, options)
    status, meaning = cvxpy_status(problem.status)
    if y.value is None or status not in (Status.OPTIMAL, Status.INACCURATE):
        return _failed(status, f"cvxpy/{solver} {meaning} (CVXPY status {problem.status!r})", started, options)
    stats = problem.solver_stats
    # Interior-point output sits up to the solver's tolerance outside the box: clip that noise.
    x = np.clip(y.value, 0.0, program.bounds[None, :]) * program.runnable
    return Solution(
        x=x,
        prices=scale * np.asarray(capacity.dual_value, dtype=np.float64),
        status=status,
        message=f"cvxpy/{solver}: {problem.status}",
        iterations=int(stats.num_iters) if stats.num_iters is not None else -1,
        solve_time=time.perf_counter() - started,
        accuracy=_accuracy(options),
        gap=certified_gap(program, x, _multipliers(fairness, n), _multipliers(efficiency, n)),
    )


def _multipliers(constraint: Any, n: int) -> np.ndarray:
    """A constraint's multipliers, shape (n,); 0 without the constraint or a dual value."""
    value = None if constraint is None else constraint.dual_value
    return np.zeros(n) if value is None else np.broadcast_to(np.asarray(value, dtype=np.float64), (n,))


def _failed(status: Status, message: str, started: float, options: dict[str, Any]) -> Solution:
    return Solution(x=None, prices=None, status=status, message=message, iterations=-1,
                    solve_time=time.perf_counter() - started, accuracy=_accuracy(options))


def _accuracy(options: dict[str, Any]) -> float:
    """The relative gap tolerance in force (Clarabel's default 1e-8 unless set)."""
    return float(options.get("tol_gap_rel", 1e-8))
