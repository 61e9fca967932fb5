"""The expected-NSWOT program as one CVXPY exponential-cone model (every option).

The independent reference for `saa-ipm`, which solves the same program (scenarios, the
efficiency term, the finish-time-fairness constraints). Built from one matrix variable `y` of shape (n, T)
and one sparse (S n, n T) matrix that maps it to every scenario's utilities, so building the
model costs the same whatever S is; solved by Clarabel unless another CVXPY solver is named.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfm.equilibrium import Status
from vfm.planner.program import PlanningProgram
from vfm.planner.solve.ipm.method import certified_gap
from vfm.solvers.base import Solution
from vfm.solvers.cvxpy_conic import cvxpy_status


def solve_saa_cvxpy(program: PlanningProgram, solver: str = "CLARABEL", **options: Any) -> Solution:
    """Solve any `PlanningProgram` with CVXPY; the gap is certified from the solver's multipliers
    (`vfm.planner.solve.ipm.method.certified_gap`; over GPU types, `_typed_gap`), for the objective without
    the tie-breaking term."""
    import cvxpy as cp  # here: CVXPY loads when the reference is first used, not with the planner

    started = time.perf_counter()
    n_scenarios, n, rounds = program.shape
    y = cp.Variable((n, rounds), nonneg=True)
    # Row s * n + i, column i + t * n (cp.vec is column-major): a_sit.
    scenario, job, period = np.nonzero(program.progress * program.runnable[None])
    mapping = sp.csr_array(
        (program.progress[scenario, job, period], (scenario * n + job, job + period * n)),
        shape=(n_scenarios * n, n * rounds),
    )
    utilities = program.scenario_base.reshape(-1) + mapping @ cp.vec(y, order="F")  # row s * n + i: c_si
    # The model is the program's objective divided by the weight total, with running time in
    # rounds: its terms are then O(1) whatever the budgets, priority weights (up to ~1e10 in the
    # FTF relaxation) or round length, which Clarabel's absolute tolerances need.
    scale = float(program.budgets.sum())
    objective = cp.sum(cp.multiply(np.tile(program.budgets / scale, n_scenarios) / n_scenarios, cp.log(utilities)))
    if program.spread:
        coefficient = 0.5 * program.spread * program.spread_weights / scale
        objective = objective - cp.sum(cp.multiply(coefficient[:, None] * program.runnable, cp.square(y)))
    if program.time_cost is not None:
        objective = objective - cp.sum(cp.multiply(np.where(program.runnable, program.time_cost, 0.0) / scale, y))
    capacity = program.gpus @ y <= program.capacity
    constraints = [capacity, y <= program.runnable * program.bounds[None, :]]
    one_type = None
    if program.several_per_round:
        # One type per job and round: the goods of a round share the job's time in it.
        one_type = y @ program.rounds_of_goods <= program.round_bounds[None, :]
        constraints.append(one_type)
    leftover_rounds = program.remaining_s / program.round_s - cp.sum(cp.multiply(program.pace, y), axis=1)
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
    except (cp.SolverError, ValueError) as error:  # ValueError: data CVXPY refuses (NaN, inf)
        return _failed(Status.ERROR, f"cvxpy/{solver} failed: {error}", started, options)
    status, meaning = cvxpy_status(problem.status)
    if problem.status == "infeasible_inaccurate":
        # Clarabel's "almost infeasible" on a program `plan` hands over only when it is feasible
        # (FTF rows only with room found by a maximum flow): numerical trouble, not a certificate.
        status = Status.ERROR
    if y.value is None or status not in (Status.OPTIMAL, Status.INACCURATE):
        return _failed(status, f"cvxpy/{solver} {meaning} (CVXPY status {problem.status!r})", started, options)
    stats = problem.solver_stats
    # Interior-point output sits up to the solver's tolerance outside the box: clip that noise.
    x = np.clip(y.value, 0.0, program.bounds[None, :]) * program.runnable
    ftf, longest_rows = _multipliers(fairness, n), _multipliers(efficiency, n)
    if not program.over_types:
        gap = certified_gap(program, x, ftf, longest_rows)
    else:
        prices = scale * np.maximum(np.asarray(capacity.dual_value, dtype=np.float64), 0.0)
        gap = _typed_gap(program, x, ftf, longest_rows, prices)
    return Solution(
        x=x,
        prices=scale * np.asarray(capacity.dual_value, dtype=np.float64),
        status=status,
        message=f"cvxpy/{solver}: {problem.status}",
        iterations=int(stats.num_iters) if stats.num_iters is not None else -1,
        solve_time=time.perf_counter() - started,
        accuracy=_accuracy(options),
        gap=gap,
        ftf_multipliers=ftf,
        efficiency_multipliers=longest_rows,
        type_multipliers=None if one_type is None or one_type.dual_value is None
        else np.asarray(one_type.dual_value, dtype=np.float64),
    )


def _typed_gap(program: PlanningProgram, x: np.ndarray, ftf: np.ndarray, efficiency: np.ndarray,
               prices: np.ndarray) -> float:
    r"""A certified gap of `x` for a program over GPU types, from the solver's multipliers.

    Weak duality with the capacity, FTF and efficiency rows dualized (`prices` per GPU, `ftf` and
    `efficiency` in the objective divided by the budgets' sum, negative ones read as 0) and the box
    and one-type-per-round rows kept: with :math:`c = \nabla F(x) - w \lambda^\top + (z^f +
    z^e) p`, every feasible :math:`y^*` has

    .. math:: \Phi(y^*) \le F(x) - \nabla F(x)^\top x + \lambda^\top G - {z^f}^\top m - {z^e}^\top r
              + \sum_{i,t} u_t \max(0, \max_{g \in t} c_{ig}) + \zeta_{\max} \max(0, \textstyle\sum z^e - \kappa)

    (the inner maximum over a job's goods in a round is over a simplex), so that minus
    :math:`\Phi(x)` is the gap, for the objective without the tie-breaking term, whether or not
    `x` meets the rows.
    """
    scale = float(program.budgets.sum())
    n_scenarios, n, _ = program.shape
    runnable = program.runnable
    y = np.where(runnable, np.clip(x, 0.0, program.bounds[None, :]), 0.0)
    progress = np.where(runnable[None], program.progress, 0.0)
    utilities = program.scenario_base + np.einsum("sng,ng->sn", progress, y)
    gradient = np.einsum("sng,sn->ng", progress, program.budgets[None, :] / (n_scenarios * utilities))
    cost = np.zeros_like(y) if program.time_cost is None else np.where(runnable, program.time_cost, 0.0)
    gradient = gradient - cost  # the objective's time cost
    floor = program.fairness_floor
    leftover = np.where(program.open_jobs, program.remaining_s / program.round_s, 0.0)
    z_f = scale * np.where(floor > 0, np.maximum(ftf, 0.0), 0.0)
    kappa = program.efficiency * program.round_s
    z_e = scale * np.where((leftover > 0) & (kappa > 0), np.maximum(efficiency, 0.0), 0.0)
    c = np.where(runnable, gradient - program.gpus[:, None] * prices[None, :] + (z_f + z_e)[:, None] * program.pace,
                 0.0)
    best = np.zeros((program.window_rounds, n))
    np.maximum.at(best, program.round_index, c.T)  # max(0, max over a round's goods), per round and job
    best = best.T
    value = float(program.budgets @ np.log(utilities).mean(axis=0)) - float(np.vdot(cost, y))
    bound = (value - float((gradient * y).sum()) + float(prices @ program.capacity) - float(z_f @ floor)
             - float(z_e @ leftover) + float((best * program.round_bounds[None, :]).sum())
             + float(leftover.max(initial=0.0)) * max(0.0, float(z_e.sum()) - kappa))
    return bound - program.objective(x)


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
