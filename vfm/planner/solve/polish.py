r"""Polish a backend's schedule to the regularized window program's exact optimum (S = 1).

With the tie-breaking term (`PlanningProgram.spread` > 0) the window program has one optimal
schedule, but a backend returns it only to its tolerance: the schedules of ``saa-ipm`` and
``cvxpy`` differ by up to 1e-3 on busy windows, and a rounding that crosses a threshold there
serves other jobs from that round on. The polish solves the optimality conditions themselves, by
Newton's method on the dual, to a residual of `RESIDUAL` (1e-11), so that every backend and every
tolerance hands the rounding the same schedule.

The dual
    With capacity prices :math:`\lambda_t`, FTF and efficiency multipliers :math:`\nu_i,
    \eta_i` (:math:`w_i = \nu_i + \eta_i`), each job's part of the Lagrangian is minimized in
    closed form: :math:`y_{it} = \operatorname{clip}((\beta_i a_{it} / U_i - c_{it}) /
    \sigma_i, 0, u_t)` with :math:`c_{it} = g_{it} \lambda_t - w_i p_{it}` and
    :math:`U_i = b_i + a_i^\top y_i`. :math:`U_i` is the root of a strictly decreasing function
    whose pieces (between the 2T breakpoints where an entry reaches a bound) read
    :math:`K_0 + K_1 / U - U`: a bisection over the sorted breakpoints finds the piece and the
    quadratic's root gives :math:`U_i` to rounding (`lagrangian_minimizer`).
    The conditions left are the rows' complementarity, written with the min-function:
    :math:`\min(\lambda_t, s_t) = 0` (capacity slack :math:`s_t = 1 - \sum_i g_{it} y_{it}`),
    :math:`\min(\nu_i, r_i - m_i) = 0`, :math:`\min(\eta_i, r_i + \zeta - \ell_i) = 0`,
    :math:`\min(\zeta, \kappa - \sum_i \eta_i) = 0` (:math:`r_i = p_i^\top y_i`). Over GPU
    types each one-type row :math:`\sum_{t \in r} y_{it} \le u_r` is dualized too: its
    multiplier :math:`\mu_{ir}` adds to :math:`c_{it}` on the goods of round r (the minimizer
    keeps its closed form) and its condition is :math:`\min(\mu_{ir}, u_r - \sum_{t \in r}
    y_{it}) = 0`. On the entries strictly inside the box,
    :math:`\partial y_i / \partial c_i = -M_i`,
    :math:`M_i = \sigma_i^{-1}(I - \gamma_i a_i a_i^\top)` (Sherman-Morrison), so the
    derivative of the slacks in the multipliers is :math:`J M J^\top` over the rows that bind
    and the identity over the others.

Iterations
    Semismooth Newton steps. Each row's slack is divided by its own curvature (its derivative in
    its own multiplier) so that both sides of the min-function are in the multiplier's units;
    once that residual is below `RESIDUAL`, what is left is in the slacks' units, and the plain
    residual is tried first. The derivative is an arrow: a job's rows and multipliers meet
    only the prices, each other and zeta. So each step eliminates every job's block (at most 2 by
    2; over GPU types 2 + R by 2 + R, and dense only for the jobs with a binding row) onto the
    T + 1 prices and zeta and factors that dense system once (`vfm.planner.solve.polish_system`):
    O(n T^2) per step, far less than a sparse LU of the whole system. The matrix has a
    Levenberg-Marquardt ridge :math:`0.1 \|F\|_\infty |J_{rr}|` plus
    :math:`10^{-12} \max_r |J_{rr}|`, which keeps dependent binding rows solvable (one per
    connected block of the transportation structure),
    and the step two steps of iterative refinement against the matrix without it (the
    elimination alone is accurate to about 1e-9 relative where the block's pivots cancel).
    The step is halved until :math:`\|F\|^2` decreases by :math:`10^{-4}` of the step. If no
    halving does, the step is retried with every row's
    ridge at least the rows' mean curvature: a row whose entries all sit at a bound has
    derivative 0 until one leaves it, and the plain ridge leaves the step along that row
    undamped. If that fails too, the step is retried with the other residual.
    An FTF row's slack depends on its own job's entries alone, so such a row needs no ridge:
    before each step, a binding FTF row with curvature 0 has its multiplier set,
    the others held, where its job's progress meets its floor (0 if none does), a root of one
    monotone function of one variable (`_settled`). Its job's entries then leave their bounds and
    the Newton matrix has the row's curvature.
    The start is the backend's own multipliers (`Solution`'s ``prices`` and row multipliers,
    over GPU types its one-type rows' too, 0 where it returns none):
    multipliers estimated from the schedule alone are too far off for Newton's method to converge
    reliably. A job whose progress in the Lagrangian minimizer at those multipliers misses its
    progress in the backend's schedule by more than `_MATCH` has its row multiplier moved, within
    10 % of itself, to where the two agree (`_matched`): a job with a small spread answers its
    multiplier so steeply that the backend's tolerance can put it at a bound where the backend ran
    it fractionally.

Accuracy
    Converged means :math:`\|F\|_\infty \le` `RESIDUAL`: the schedule is then the exact
    minimizer of the Lagrangian at multipliers that are feasible and complementary to 1e-11, so
    its distance to the optimum is of order 1e-11 divided by the smallest :math:`\sigma_i`.
    That can be large, so one more full step follows, kept if it decreases the residual: the
    convergence being quadratic, it takes the schedule the rest of the way to rounding, far below
    the rounding's resolution of 1e-2. Every test is NaN-safe (``not residual <= RESIDUAL``): a
    NaN residual never counts as converged.

    Some windows cannot reach `RESIDUAL` in floating point: a job with a small spread and a small
    utility (a fresh job planned a sliver of each round) answers the multipliers so steeply that
    moving them by one unit in their last place moves the residual by more (`rounding_floor`).
    A residual within that floor counts as converged too ("at its rounding floor"; measured below
    `FLOOR_LIMIT`): no representable multipliers do better.

Bounds
    The polish is bounded in steps: at most `MAX_STEPS` Newton steps (from the backends' default
    starts it converges in a few on the reproductions' windows; a window it does not converge on
    keeps stepping at a residual that no longer falls), so what it does depends on the program
    alone, not on the machine's load. With a ``deadline`` (the caller's own time limit, passed on
    by `vfm.planner.plan`) no step starts after it. When it does not converge (no step decreases
    the residual, the step limit or the deadline), the backend's schedule is kept with its status,
    and the message says that the polish stopped and why.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, replace

import numpy as np

from vfm._validation import FloatArray
from vfm.planner import _kernels
from vfm.planner.program import PlanningProgram
from vfm.planner.solve.polish_system import NewtonMatrix, by_job, by_round, in_order, level_rows, slopes
from vfm.planner.solve.scaled_program import ScaledProgram, scale_program, scaled_certified_gap
from vfm.solvers.base import Solution

#: Converged when every complementarity residual is at most this (capacity fractions, rounds and
#: multipliers in the objective scaled to budgets summing to 1). At 900 jobs rounding leaves 1e-12
#: to 2e-12 (sums of hundreds of terms): a test at 1e-12 failed four windows of the 900-job trace
#: at 1.1e-12 to 1.7e-12.
RESIDUAL = 1e-11
#: The most Newton steps of one polish: above the measured need (at most 5 from the default starts
#: on the reproductions' windows, 17 from Clarabel's 1e-7 answers), and a bound on the time a
#: window the polish does not converge on costs (twice as many steps cost a small window many
#: times its solve).
MAX_STEPS = 20
#: The largest residual `rounding_floor` is measured at: above the floors seen (3e-11 to 6e-8 on
#: windows of 5 to 10 jobs whose fresh jobs are planned slivers of rounds), so that a window far
#: from its optimum pays nothing for the measure.
FLOOR_LIMIT = 1e-6
#: Levenberg-Marquardt ridge per unit of residual, relative to each row's own curvature.
_RIDGE = 0.1
_SUFFICIENT_DECREASE = 1e-4
_BACKTRACKS = 30
#: `_matched`: a job's progress (rounds) in the minimizer at the backend's multipliers may differ
#: from the backend's by this much before its multipliers are matched; the relative trust region
#: of the match and the most steps of its root finder (`vfm.planner._kernels.matched_rows`).
_MATCH = 1e-4
_MATCH_TRUST = 0.1
_MATCH_STEPS = 60
#: The most steps of `_settled`'s root finder. Its bracket reaches from the row's multiplier at 0
#: to one at which every entry of the job sits at its bound, the progress is flat over most of it,
#: and a job with a small spread crosses its floor within a narrow band of multipliers: the
#: regula falsi's steps stay at the bracket's flat end until its Illinois halvings have levelled
#: the two ends' values. A job of spread 2e-4 with a bracket 10 wide and a slack of 1e-5
#: (`tests/planner/test_polish.py`) took between 120 and 150 steps; each is one job's minimizer.
_SETTLE_STEPS = 200


@dataclass(frozen=True)
class _Duals:
    prices: FloatArray  # (T,) lambda
    ftf: FloatArray  # (n,) nu; 0 off `constrained`
    efficiency: FloatArray  # (n,) eta; 0 off `efficient`
    zeta: float  # the longest leftover, rounds
    types: FloatArray  # (n, R) mu, the one-type rows'; 0 off `ScaledProgram.shared`

    def moved(self, step: FloatArray, alpha: float, data: ScaledProgram) -> _Duals:
        """These multipliers plus `alpha` times `step` (in the order of `_rows`)."""
        jobs = by_job(data, step, 0.0)
        zeta = self.zeta + alpha * step[-1] if data.kappa else 0.0
        types = self.types + alpha * by_round(data, step, 0.0) if data.typed else self.types
        return _Duals(self.prices + alpha * step[:self.prices.size], self.ftf + alpha * jobs[:, 0],
                      self.efficiency + alpha * jobs[:, 1], zeta, types)

    def minimizer(self, data: ScaledProgram) -> tuple[FloatArray, FloatArray, np.ndarray]:
        """The `lagrangian_minimizer` at these multipliers."""
        return lagrangian_minimizer(data, self.prices, self.ftf + self.efficiency, self.types)


def supports(program: PlanningProgram) -> str | None:
    """None if `polish` applies to `program`, else why not."""
    if program.shape[0] != 1:
        return "it has several scenarios"
    if not program.spread:
        return "it has no tie-breaking term (spread 0), so its optimum need not be unique"
    return None


def polish(program: PlanningProgram, solution: Solution, *, max_steps: int | None = None,
           deadline: float | None = None) -> Solution:
    """`solution` with its schedule replaced by the exact optimum of `program` (module docstring).

    Parameters
    ----------
    program : PlanningProgram
        One scenario, spread > 0 (`supports`).
    solution : vfm.solvers.Solution
        A backend's answer with its point, prices and row multipliers.
    max_steps : int, optional
        The most Newton steps (default `MAX_STEPS`).
    deadline : float, optional
        A `time.perf_counter` instant after which no step starts (default: none).

    Returns
    -------
    vfm.solvers.Solution
        Polished: `x`, `prices` and the row multipliers from the polish, `gap` certified for the new
        `x` by them, `relative_gap` NaN (the backend's measure was of its own point), the status
        kept and the message extended. Not polished (`supports` says no, the solution has no
        point or multipliers, or the iterations did not converge within `max_steps` or by
        `deadline`): `solution`, its message saying why ("the polish stopped ...").

    Examples
    --------
    Two jobs sharing one GPU for three rounds; the interior point and the CVXPY reference agree to
    their tolerances, the polished schedules to rounding:

    >>> import numpy as np
    >>> from vfm.planner import PlanningProgram
    >>> from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
    >>> from vfm.planner.solve.ipm.method import solve_saa_ipm
    >>> program = PlanningProgram(
    ...     progress=np.array([[[0.2, 0.2, 0.1], [0.1, 0.3, 0.3]]]), base=np.array([0.1, 0.0]),
    ...     budgets=np.ones(2), gpus=np.ones(2), capacity=np.ones(3), round_s=60.0,
    ...     remaining_s=np.array([300.0, 200.0]), spread=0.1)
    >>> a, b = solve_saa_ipm(program, tol=1e-7), solve_saa_cvxpy(program)
    >>> bool(np.abs(a.x - b.x).max() > 1e-9)
    True
    >>> a, b = polish(program, a), polish(program, b)
    >>> bool(np.abs(a.x - b.x).max() <= 1e-12), "polished to residual" in a.message
    (True, True)
    """
    reason = supports(program)
    if reason is None and (solution.x is None or solution.prices is None or solution.ftf_multipliers is None
                           or solution.efficiency_multipliers is None):
        reason = "the backend returned no point or no multipliers"
    if reason is not None:
        return replace(solution, message=f"{solution.message}; not polished: {reason}")
    data, scale = scale_program(program)
    capacity = np.where(program.capacity > 0, program.capacity, 1.0)
    types = np.zeros(data.shared.shape) if solution.type_multipliers is None else solution.type_multipliers
    duals, found = _start(data, np.asarray(solution.prices) * capacity / scale,
                          np.asarray(solution.ftf_multipliers), np.asarray(solution.efficiency_multipliers),
                          np.asarray(types), np.asarray(solution.x))
    y, duals, steps, residual, why = _newton(data, duals, found, MAX_STEPS if max_steps is None else max_steps,
                                             deadline)
    if not (residual <= RESIDUAL or why == _AT_FLOOR):  # NaN-safe: a NaN residual is no convergence
        return replace(solution, message=f"{solution.message}; not polished: the polish stopped at residual "
                                         f"{residual:.1e} after {steps} Newton steps ({why})")
    # Over GPU types a round's entries have no bound of their own in the minimizer
    # (`ScaledProgram.minimizer_upper`): its row holds them to within the residual.
    y = np.minimum(y, data.upper[None, :])
    return replace(
        solution, x=y, prices=np.where(program.capacity > 0, scale * duals.prices / capacity, 0.0),
        ftf_multipliers=duals.ftf,
        efficiency_multipliers=duals.efficiency,
        type_multipliers=duals.types if data.typed else solution.type_multipliers,
        gap=scale * scaled_certified_gap(data, y, duals.ftf, duals.efficiency, duals.types if data.typed else None),
        relative_gap=float("nan"),
        message=f"{solution.message}; polished to residual {residual:.0e} in {steps} Newton steps"
                + (f" ({why})" if why == _AT_FLOOR else ""))


def lagrangian_minimizer(data: ScaledProgram, prices: FloatArray, rows: FloatArray, types: FloatArray | None = None,
                         jobs: np.ndarray | None = None) -> tuple[FloatArray, FloatArray, np.ndarray]:
    r"""Each job's minimizer of the Lagrangian at capacity prices (T,), row multipliers
    :math:`w = \nu + \eta` (n,) and, over GPU types, the one-type rows' multipliers `types`
    :math:`\mu` (n, R; None: 0): the schedule (n, T), the utilities U (n,) and the entries strictly
    inside the box (n, T) (module docstring; compiled in `vfm.planner._kernels`). With `jobs`
    (indices), those jobs' only: `rows`, `types` and the results have ``len(jobs)`` rows."""
    picked = slice(None) if jobs is None else jobs
    y, utility, free = _minimized(data, _costs(data, prices, types, picked) - rows[:, None] * data.pace[picked],
                                  picked)
    return y, utility, free


def _costs(data: ScaledProgram, prices: FloatArray, types: FloatArray | None,
           picked: slice | np.ndarray) -> FloatArray:
    r"""The entries' costs before the job rows' term, :math:`g_{it} \lambda_t + \mu_{i, r(t)} + c_{it}`, of the
    jobs `picked` (`types` (n, R) already of those jobs; not read on one GPU type)."""
    costs = data.g[picked] * prices[None, :]
    if data.typed and types is not None:
        costs += types[:, data.good_round]
    if data.cost is not None:  # the objective's time cost: a price of its own on every entry
        costs += data.cost[picked]
    return costs


def _minimized(data: ScaledProgram, costs: FloatArray,
               picked: slice | np.ndarray) -> tuple[FloatArray, FloatArray, np.ndarray]:
    """The `lagrangian_minimizer` of the jobs `picked` at the entries' costs `costs` (their rows)."""
    n, rounds = costs.shape
    y, utility, free = np.empty((n, rounds)), np.empty(n), np.empty((n, rounds), dtype=np.bool_)
    upper = np.require(data.minimizer_upper[picked], requirements=["C", "W"])  # a slice is read-only: one form
    _kernels.lagrangian_minimizer(np.ascontiguousarray(data.progress[picked, 0, :]), costs, data.spread[picked],
                                  data.budgets[picked], np.ascontiguousarray(data.base[picked, 0]), upper,
                                  np.ascontiguousarray(data.active[picked]), y, utility, free)
    return y, utility, free


def _minimized_again(data: ScaledProgram, prices: FloatArray, rows: FloatArray, types: FloatArray,
                     found: tuple[FloatArray, FloatArray, np.ndarray],
                     jobs: np.ndarray) -> tuple[FloatArray, FloatArray, np.ndarray]:
    """`found`, the `lagrangian_minimizer` at other row multipliers, with the jobs `jobs` (indices)
    minimized again at `rows` (n,): the jobs' parts are independent."""
    if not jobs.size:
        return found
    y, utility, free = (part.copy() for part in found)
    y[jobs], utility[jobs], free[jobs] = lagrangian_minimizer(data, prices, rows[jobs], types[jobs], jobs)
    return y, utility, free


def _start(data: ScaledProgram, prices: FloatArray, ftf: FloatArray, efficiency: FloatArray, types: FloatArray,
           x: FloatArray) -> tuple[_Duals, tuple[FloatArray, FloatArray, np.ndarray]]:
    """The backend's multipliers (negative ones read as 0), over GPU types with the one-type rows'
    matched to the backend's schedule `x` (`_matched_rounds`); zeta the longest leftover of the
    schedule they give (0 where the backend's own zeta is at most kappa's room, kappa less the
    efficiency multipliers: zeta's row then holds zeta at 0) and the efficiency multipliers made to
    sum to at most kappa (exactly kappa, the rest on the longest job, when zeta > 0); then each
    job's row multipliers matched to `x` (`_matched`). With their `lagrangian_minimizer`.

    Without the rule for zeta, the minimizer's schedule at multipliers from a backend's 1e-7 answer
    left a leftover of 7e-5 rounds where the backend's was 1e-10, and the rest of kappa, 6 times
    the backend's efficiency multipliers, went to one job: on 3 of 121 windows of a 120-job run over
    GPU types the polish then stopped at its step limit."""
    nu = np.where(data.constrained, np.maximum(ftf, 0.0), 0.0)
    eta = np.where(data.efficient, np.maximum(efficiency, 0.0), 0.0)
    prices = np.maximum(prices, 0.0)
    types = np.where(data.shared, np.maximum(types, 0.0), 0.0)
    if data.typed:
        types = _matched_rounds(data, prices, nu + eta, types, x)
    found = lagrangian_minimizer(data, prices, nu + eta, types)
    zeta = 0.0
    if data.kappa:
        leftover = _leftovers(data, found[0])
        zeta = max(0.0, float(leftover.max(initial=0.0)))
        if max(0.0, float(_leftovers(data, x).max(initial=0.0))) <= data.kappa - eta.sum():
            zeta = 0.0  # the backend's zeta's min-function is at 0 on zeta's side: its own zeta is 0
        before = eta.copy()
        if eta.sum() > data.kappa:
            eta *= data.kappa / eta.sum()
        if zeta > 0 and eta.sum() < data.kappa:
            eta[int(np.argmax(leftover))] += data.kappa - eta.sum()
        found = _minimized_again(data, prices, nu + eta, types, found, np.flatnonzero(eta != before))
    moved = _matched(data, prices, nu + eta, types, found[0], x) - (nu + eta)  # exactly 0 where not matched
    nu = np.where(data.constrained, np.maximum(nu + moved, 0.0), 0.0)
    eta = np.where(data.efficient & ~data.constrained, np.maximum(eta + moved, 0.0), eta)
    found = _minimized_again(data, prices, nu + eta, types, found, np.flatnonzero(moved))
    return _Duals(prices, nu, eta if data.kappa else np.zeros_like(eta), zeta, types), found


def _leftovers(data: ScaledProgram, y: FloatArray) -> FloatArray:
    """Each efficient job's leftover (rounds) under the schedule `y`, shape (n,); -inf for the others."""
    return np.where(data.efficient, data.leftover - (data.pace * y).sum(axis=1), -np.inf)


def _matched_rounds(data: ScaledProgram, prices: FloatArray, rows: FloatArray, types: FloatArray,
                    x: FloatArray) -> FloatArray:
    r"""`types` (mu, (n, R)) with each one-type row's multiplier set to where the job's time in the
    round in the Lagrangian minimizer, its utility held at the backend's, equals its time there in
    the backend's schedule `x`, for the rows where the two differ by more than `_MATCH`.

    With its utility U held, a job's entries in a round are :math:`\max(v_t - \mu, 0) / \sigma`,
    :math:`v_t = \beta a_t / U - c_t` (no upper bound there, `ScaledProgram.minimizer_upper`): the
    time is piecewise linear and decreasing in mu, and the mu that gives a time X is found by
    water-filling over the round's goods (0 if the time at mu = 0 is at most X). The backend's
    multipliers leave the job's time in a round unmatched where its box bound, which the minimizer
    does not have there, held the job at a good's bound."""
    a = data.progress[:, 0, :]
    utility = data.base[:, 0] + (a * x).sum(axis=1)
    costs = _costs(data, prices, None, slice(None)) - rows[:, None] * data.pace
    with np.errstate(divide="ignore", invalid="ignore"):
        value = np.where(data.active, data.budgets[:, None] * a / utility[:, None] - costs, -np.inf)
    members = data.members  # (R, K), -1 padded
    values = np.where(members[None] >= 0, value[:, np.maximum(members, 0)], -np.inf)  # (n, R, K)
    target = np.where(data.active, x, 0.0) @ data.rounds_of_goods * data.spread[:, None]  # sigma X
    ordered = -np.sort(-values, axis=2)
    count = np.arange(1, ordered.shape[2] + 1)
    with np.errstate(invalid="ignore"):
        level = (np.cumsum(np.where(np.isfinite(ordered), ordered, 0.0), axis=2) - target[:, :, None]) / count
    below = np.concatenate([ordered[:, :, 1:], np.full((*ordered.shape[:2], 1), -np.inf)], axis=2)
    # The first k whose level is at least the next value: the k largest entries are positive.
    first = np.argmax((level >= below) & np.isfinite(ordered), axis=2)
    mu = np.maximum(np.take_along_axis(level, first[:, :, None], axis=2)[:, :, 0], 0.0)
    current = np.maximum(values - types[:, :, None], 0.0).sum(axis=2)
    off = data.shared & (np.abs(current - target) > _MATCH * data.spread[:, None]) & np.isfinite(mu)
    return np.where(off, mu, types)


def _matched(data: ScaledProgram, prices: FloatArray, rows: FloatArray, types: FloatArray, y: FloatArray,
             x: FloatArray) -> FloatArray:
    """`rows` (w, (n,)) with each job's w moved, within a factor 1 +- `_MATCH_TRUST` of itself, to where
    its Lagrangian minimizer's progress equals its progress in the backend's schedule `x`
    (`vfm.planner._kernels.matched_rows`), for the jobs with a row whose progress in the minimizer
    `y` misses that by more than `_MATCH` and for which such a w exists.

    A job whose spread is small answers its multiplier steeply: from multipliers accurate to a
    relative gap of 1e-7, the Lagrangian minimizer put a job of a 900-job window at its upper bound
    where the backend ran it fractionally, and the Newton steps crept towards the narrow band of
    multipliers where it runs fractionally, one halved step at a time (20 steps). The trust region
    leaves a job whose progress the backend's prices, not its multiplier, put elsewhere to Newton's
    method: matched without it, a job with no multiplier was given one and the polish of the
    201 windows took up to 31 steps (docs/planning.md, "The polish's start")."""
    progress, target = (data.pace * y).sum(axis=1), (data.pace * x).sum(axis=1)
    jobs = np.flatnonzero((data.constrained | data.efficient) & (np.abs(progress - target) > _MATCH) & (rows > 0))
    if not jobs.size:
        return rows
    matched = _progress_roots(data, prices, types[jobs], jobs, ((1.0 - _MATCH_TRUST) * rows[jobs],
                                                                (1.0 + _MATCH_TRUST) * rows[jobs]), target[jobs])
    out = rows.copy()
    out[jobs] = np.where(np.isnan(matched), rows[jobs], matched)
    return out


def _progress_roots(data: ScaledProgram, prices: FloatArray, types: FloatArray, jobs: np.ndarray,
                    bracket: tuple[FloatArray, FloatArray], target: FloatArray,
                    steps: int = _MATCH_STEPS) -> FloatArray:
    """For the jobs `jobs` (indices; `types` their one-type multipliers), the row multiplier w within
    `bracket` (low, high) at which the progress of their Lagrangian minimizer is `target`, NaN where
    the target is outside the progress at the bracket's ends (`vfm.planner._kernels.matched_rows`,
    at most `steps` evaluations)."""
    roots = np.empty(jobs.size)
    _kernels.matched_rows(np.ascontiguousarray(data.progress[jobs, 0, :]), _costs(data, prices, types, jobs),
                          data.pace[jobs], data.spread[jobs], data.budgets[jobs],
                          np.ascontiguousarray(data.base[jobs, 0]), data.minimizer_upper[jobs],
                          np.ascontiguousarray(data.active[jobs]), *bracket, target, steps, roots)
    return roots


def _settled(data: ScaledProgram, duals: _Duals, found: tuple[FloatArray, FloatArray, np.ndarray],
             multipliers: FloatArray, slack: FloatArray,
             curvature: FloatArray) -> tuple[_Duals, tuple[FloatArray, FloatArray, np.ndarray]] | None:
    r"""`duals` and their `lagrangian_minimizer` `found` with each flat FTF row settled, or None if
    none is: a row that binds (its slack at most its multiplier, off 0) at curvature 0.

    Curvature 0 means that every entry of the row's job sits at a bound: its slack does not move
    with any multiplier until an entry leaves its bound, so the Newton matrix's row and column
    of it are empty and only the ridge sets its step, far past the breakpoint where the job's
    entries start to move; the line search then halves the whole step until it is too small to
    help the other rows (a 231-job window of the 900-job trace took 16 steps of 20 to 30 halvings
    each). The row's slack, :math:`p_i^	op y_i - m_i`, depends on the job's own minimizer alone, and
    that is piecewise smooth and nondecreasing in its multiplier: with the other multipliers held,
    the multiplier that makes it 0 is found by a root finder on the job's progress (as `_matched`),
    between the job's other row's multiplier alone and the current one; where even that leaves
    the slack positive, the row's multiplier is 0 (its complementarity met by the multiplier's
    side). Its entries are then inside the box, and the next Newton step sees the row's
    curvature. An efficiency row is not settled: its slack also moves with zeta, so its Newton row
    is not empty."""
    rounds, constrained = data.g.shape[1], int(data.constrained.sum())
    flat = np.zeros(multipliers.size, dtype=np.bool_)
    flat[rounds:rounds + constrained] = True
    flat &= (curvature == 0) & (np.abs(slack) > RESIDUAL) & (slack <= multipliers)
    if not flat.any():
        return None
    jobs = np.flatnonzero(by_job(data, flat.astype(np.float64), 0.0)[:, 0] > 0)
    rows, eta = duals.ftf[jobs] + duals.efficiency[jobs], duals.efficiency[jobs]
    # Below its floor the job's multiplier must rise: up to where every entry it can progress on
    # sits at its upper bound (`_full_progress`); above, fall, at most to its other row's.
    rising = by_job(data, slack, 0.0)[jobs, 0] < 0
    top = np.maximum(_full_progress(data, duals, jobs), rows)
    roots = _progress_roots(data, duals.prices, duals.types[jobs], jobs,
                            (np.where(rising, rows, eta), np.where(rising, top, rows)), data.floor[jobs],
                            _SETTLE_STEPS)
    ftf = duals.ftf.copy()
    # No root: above the floor even at the other row's multiplier alone, 0; below it even with
    # every entry at its bound (no multiplier helps), unchanged.
    ftf[jobs] = np.where(np.isnan(roots), np.where(rising, duals.ftf[jobs], 0.0), np.maximum(roots - eta, 0.0))
    settled = replace(duals, ftf=ftf)
    return settled, _minimized_again(data, settled.prices, ftf + settled.efficiency, settled.types, found, jobs)


def _full_progress(data: ScaledProgram, duals: _Duals, jobs: np.ndarray) -> FloatArray:
    r"""For the jobs `jobs` (indices), a row multiplier w at which every active entry with progress
    sits at its upper bound u in the Lagrangian minimizer: there :math:`(\beta a / U - c + w p) /
    \sigma \ge u` as :math:`\beta a / U \ge 0`, so :math:`w = \max_t (\sigma u_t + c_t) / p_t` over
    those entries (0 where there are none)."""
    pace, costs = data.pace[jobs], _costs(data, duals.prices, duals.types[jobs], jobs)
    moving = data.active[jobs] & (pace > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        needed = (data.spread[jobs, None] * data.upper[None, :] + costs) / pace
    return np.where(moving, needed, 0.0).max(axis=1, initial=0.0)


def _rows(data: ScaledProgram, duals: _Duals, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The rows' multipliers and slacks (capacity, FTF, efficiency, one-type, zeta), in that order."""
    running = (data.pace * y).sum(axis=1)
    type_slack = data.round_upper[None, :] - y @ data.rounds_of_goods if data.typed else None
    slack = in_order(data, 1.0 - (data.g * y).sum(axis=0),
                     np.stack([running - data.floor, running + duals.zeta - data.leftover], axis=1),
                     data.kappa - float(duals.efficiency.sum()), type_slack)
    multipliers = in_order(data, duals.prices, np.stack([duals.ftf, duals.efficiency], axis=1), duals.zeta,
                           duals.types)
    return multipliers, slack



#: `_newton`'s reasons for stopping at an optimum: the residual within `RESIDUAL`, or within its
#: rounding floor (`rounding_floor`).
_CONVERGED = "converged"
_AT_FLOOR = "at its rounding floor"


def rounding_floor(data: ScaledProgram, duals: _Duals, rows: tuple[FloatArray, FloatArray] | None = None) -> float:
    r"""How much the residual (unscaled, the max-norm of `_rows`' min-function) moves when every
    multiplier moves by one unit in its last place: the residual that no multipliers representable
    in floating point can improve on around `duals`.

    Two moves, every multiplier up and the multipliers alternately up and down (the residual's rows
    sum the entries' errors, so one pattern alone can cancel); the larger change counts. A job
    with a small spread and a small utility answers its multiplier and the prices steeply (its
    entries are :math:`(\beta a / U - c) / \sigma`, two terms of order :math:`\beta a / U` whose
    difference is :math:`\sigma y`): on a 5-job window with utilities of 1e-5 and spreads of 6e-7
    the floor was 3e-11, and Newton's method stalled at 1.5e-11, above `RESIDUAL`.

    `rows`: `_rows` at `duals` and their `lagrangian_minimizer`, where the caller has them (`_newton`)."""
    if rows is None:
        y, _, _ = duals.minimizer(data)
        rows = _rows(data, duals, y)
    multipliers, slack = rows
    residual = np.minimum(multipliers, slack)
    alternate = np.where(np.arange(multipliers.size) % 2 == 0, np.inf, -np.inf)
    floor = 0.0
    for direction in (np.full(multipliers.size, np.inf), alternate):
        moved = duals.moved(np.nextafter(multipliers, direction) - multipliers, 1.0, data)
        y_moved, _, _ = moved.minimizer(data)
        multipliers_moved, slack_moved = _rows(data, moved, y_moved)
        floor = max(floor, float(np.abs(np.minimum(multipliers_moved, slack_moved) - residual).max(initial=0.0)))
    return floor


def _newton(data: ScaledProgram, duals: _Duals, start: tuple[FloatArray, FloatArray, np.ndarray], max_steps: int,
            deadline: float | None = None) -> tuple[FloatArray, _Duals, int, float, str]:
    """Semismooth Newton from `duals`, whose `lagrangian_minimizer` is `start`: the schedule, the
    multipliers, the steps, the residual (unscaled, what `RESIDUAL` bounds) and why it stopped,
    after at most `max_steps` steps and none started after `deadline` (`time.perf_counter`).

    Each step first with every row's slack divided by its own curvature (its derivative in its
    own multiplier), which puts the min-function's two sides in the same units (with the plain
    residual a capacity row of large curvature and a small price decided its branch against an FTF
    row's slack in rounds, and one row joined the binding set per step). Once the
    scaled residual is below `RESIDUAL`, the plain one first; when no halving of a step decreases
    its residual (near the rounding floor), the other one. Before each step, a binding FTF row whose
    job sits at its bounds has its multiplier set where its slack is 0 (`_settled`).
    """
    y, utility, free = start
    steps, finished, kept = 0, False, (start[0], duals, 0, 0.0, _CONVERGED)
    while True:
        multipliers, slack = _rows(data, duals, y)
        size = float(np.abs(np.minimum(multipliers, slack)).max(initial=0.0))
        if not np.isfinite(size):
            return y, duals, steps, size, "the residual is not finite"
        if finished:
            # The last step decreased the residual in its units (maybe scaled): kept where the plain one stays in.
            return (y, duals, steps, size, _CONVERGED) if size <= RESIDUAL else kept
        if steps >= max_steps:
            return y, duals, steps, size, f"its limit of {max_steps} steps"
        if deadline is not None and time.perf_counter() > deadline:
            return y, duals, steps, size, "its time budget"
        # What is left may be rounding: no step can go below it (measured only where it may be).
        if RESIDUAL < size <= FLOOR_LIMIT and size <= rounding_floor(data, duals, (multipliers, slack)):
            return y, duals, steps, size, _AT_FLOOR
        derivative = slopes(data, utility, free)
        curvature = np.abs(derivative.diagonal(data))
        settled = _settled(data, duals, (y, utility, free), multipliers, slack, curvature)
        if settled is not None:
            duals, (y, utility, free) = settled
            multipliers, slack = _rows(data, duals, y)
            derivative = slopes(data, utility, free)
            curvature = np.abs(derivative.diagonal(data))
        scales = (np.where(curvature > 0, curvature, 1.0), np.ones_like(curvature))
        if float(np.abs(np.minimum(multipliers, slack / scales[0])).max(initial=0.0)) <= RESIDUAL:
            scales = scales[::-1]  # the scaled residual has converged: what is left is in the slacks' units
        # Converged: one more full step takes the schedule from within RESIDUAL / sigma of the
        # optimum to rounding (the convergence is quadratic), if it decreases the residual.
        finished, kept = size <= RESIDUAL, (y, duals, steps, size, _CONVERGED)
        attempts = list(itertools.product(scales, (False, True)))[:1 if finished else None]
        found = None
        level = level_rows(data, slack, curvature, RESIDUAL)
        for scale, floored in attempts:
            binding = (slack / scale <= multipliers) & ~level
            # Rows that do not bind ask their multiplier to vanish: an identity row.
            jacobian = NewtonMatrix(data, derivative, binding / scale, (~binding).astype(np.float64))
            found = _line_search(data, duals, np.minimum(multipliers, slack / scale), jacobian, scale, floored,
                                 1 if finished else _BACKTRACKS)
            if found is not None:
                break
        if found is None:  # no decrease along any step: stop where we are
            return y, duals, steps, size, _CONVERGED if finished else "no step decreased the residual"
        duals, y, utility, free = found
        steps += 1


def _line_search(data: ScaledProgram, duals: _Duals, residual: FloatArray, jacobian: NewtonMatrix,
                 scale: FloatArray, floored: bool,
                 trials: int) -> tuple[_Duals, FloatArray, FloatArray, np.ndarray] | None:
    """The damped Newton step halved until the residual's square decreases: the trial point and
    what `_newton` keeps of it, or None after `trials` tries. `floored`: the ridge of every row
    at least the rows' mean curvature, for a row whose entries all sit at a bound (its
    derivative is 0 until one leaves it, and the plain ridge leaves the step along it
    undamped)."""
    size = float(np.abs(residual).max(initial=0.0))
    diagonal = np.abs(jacobian.diagonal())
    curvature = np.maximum(diagonal, diagonal.mean()) if floored else diagonal
    ridge = _RIDGE * size * curvature + 1e-12 * max(float(diagonal.max()), 1.0)
    solve = replace(jacobian, extra=jacobian.extra + ridge).factored()
    if solve is None:  # singular despite the ridge: no step
        return None
    step = solve(-residual)
    for _ in range(0 if floored else 2):  # refinement against the derivative itself
        step += solve(-residual - jacobian.times(step))
    merit, alpha = float(residual @ residual), 1.0
    for _ in range(trials):
        trial = duals.moved(step, alpha, data)
        y, utility, free = trial.minimizer(data)
        multipliers, slack = _rows(data, trial, y)
        trial_residual = np.minimum(multipliers, slack / scale)
        if float(trial_residual @ trial_residual) <= (1.0 - _SUFFICIENT_DECREASE * alpha) * merit:
            return trial, y, utility, free
        alpha /= 2.0
    return None

