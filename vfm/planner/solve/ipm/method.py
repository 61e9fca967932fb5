r"""A primal-dual interior-point method for the expected-NSWOT program, reduced to the round block.

Minimizes :math:`F(y) = -\sum_i \beta_i \sum_s \log U_{si}(y)` (:math:`\beta_i = B_i / S`,
scaled to sum to 1) over the box :math:`0 \le y_{it} \le u_t` (:math:`u_t = 1` unless
`PlanningProgram.upper` says otherwise; read :math:`u - y` for :math:`1 - y` below) on the
entries where a job fits and makes forecast progress, the capacity rows
:math:`\sum_i g_{it} y_{it} \le 1` (:math:`g_{it} = w_i / G_t`) and, with finish-time-fairness
targets, one row per job :math:`\sum_t y_{it} \ge m_i`
(:math:`m_i = (\hat T_i - b_i) / W`, kept where :math:`m_i > 0`); with the efficiency term, plus
:math:`\kappa \zeta` over one more variable :math:`\zeta \ge 0` and one row per job with time left,
:math:`\sum_t y_{it} + \zeta \ge \hat T_i / W` (`newton.NewtonSystem` for its border). Its Newton system is

.. math:: H\,\Delta y = \big(K + \hat G^\top \operatorname{diag}(\lambda / s_c)\, \hat G\big)\,\Delta y = r,
          \qquad K = \nabla^2 F + \operatorname{diag}\!\Big(\frac{z^{lo}}{y} + \frac{z^{hi}}{1 - y}\Big),

and :math:`\nabla^2 F = \sum_s \frac{\beta_i}{U_{si}^2} a_{si} a_{si}^\top` (in the iterations
:math:`\sum_s \frac{w_{si}}{U_{si}} a_{si} a_{si}^\top`, Iterations) is block diagonal,
one (T, T) block per job of rank at most `S`; a job's FTF row adds
:math:`\frac{z^f_i}{s^f_i} \mathbf 1 \mathbf 1^\top` to its block, one more rank-one term (an
extra column of the factor below). The FTF rows may start violated: their slacks are variables
of their own and each Newton step closes the rows' residual by the step length. The rows must
have an interior, though: when no schedule meets them with a margin of `_NO_INTERIOR_MARGIN`
rounds (`PlanningProgram.fairness_room`, one maximum flow), the solve reports `Status.INFEASIBLE`.

Linear algebra
    Every job's block is factored at once: with :math:`D` the bound curvatures plus a tiny
    regularization (`_REGULARIZATIONS`), :math:`D^{-1/2} K_i D^{-1/2} = I + V_i V_i^\top` (eigenvalues
    at least 1, :math:`V_i` of shape (T, S') with S' the scenarios plus one column for the FTF
    and efficiency rows) gets a factor :math:`F_i` with
    :math:`F_i^\top F_i = (I + V_i V_i^\top)^{-1}` (`blocks.BlockFactor`): for S' up to
    a few columns (or much longer windows), the symmetric square root
    :math:`I - P_i \operatorname{diag}(h_i) P_i^\top` from an (S', S') eigendecomposition of
    :math:`V_i^\top V_i`, :math:`O(n T S'^2)`; above it, the
    inverse of the (T, T) Cholesky factor, :math:`O(n T^3)`. Then
    :math:`K_i^{-1} = D^{-1/2} F_i^\top F_i D^{-1/2}`, and the Woodbury identity leaves one (T, T)
    system in the capacity prices, whose matrix
    :math:`\operatorname{diag}(s_c/\lambda) + \sum_i (F_i X_i)^\top (F_i X_i)`,
    :math:`X_i = \operatorname{diag}(g_i D_i^{-1/2})`, is one Gram matrix. A factor, not the
    difference :math:`I - V (I + V^\top V)^{-1} V^\top`: that loses :math:`\sigma^2 \epsilon` in the
    directions where the inverse is small, and the capacity system, whose prices' curvature
    :math:`\lambda / s_c` reaches 1e12, needs those digits. That regularized inverse only
    preconditions conjugate gradients on :math:`H` applied exactly from its definition: on
    degenerate windows (jobs indifferent between rounds) the bound curvatures of interior
    entries fall towards 0, the exact :math:`K_i^{-1}` gets entries of order :math:`1/\mu` and
    its Woodbury inverse loses every digit (or positive definiteness); the regularized one stays
    a good preconditioner and CG removes its bias (when it cannot by far, `_USABLE_ERROR`, or the
    capacity system is not numerically positive definite, the system is factored again with a
    larger regularization).
    The per-job steps (factors, block solves, Hessian products, a point's evaluation, the
    right-hand side and the back-substitution) are compiled loops over the jobs
    (`vfm.planner._kernels`); the capacity system's Gram matrix is one BLAS product (with low-rank
    blocks, two: the curved jobs' stacked factors and the other jobs' low-rank terms,
    `BlockFactor.gram`, with the stacked product as fallback). The dense factor adds the rows'
    column by a rank-one update of the scenarios' factor, which also gives
    the efficiency border (`NewtonSystem.factor`) its loads without a second factorization; the (n, S', T) and
    (n, T, T) arrays are allocated once per solve. With the efficiency term the preconditioner
    eliminates :math:`\Delta\zeta` through the scalar :math:`d - c^\top P_y^{-1} c`; at the end of
    a solve the rows' curvatures reach 1e7 while that difference is 1e-3, so it is computed as two
    sums of positive terms, job by job without the capacity rows (`NewtonSystem.factor`) plus
    the capacity rows' Woodbury term.

GPU types
    Over goods (type, round) (`PlanningProgram.good_round`, ``speed``) the entries are
    goods, the FTF and efficiency rows weigh them by the job's pace :math:`p_{it}` (their rank-one
    column is :math:`p_i`, not :math:`\mathbf 1`), and every job with two or more active goods in a
    round has the one-type row :math:`\sum_{t \in r} y_{it} + s^o_{ir} = u_r`, with slack and
    multiplier like the bounds' (always primal feasible: the start gives a job's goods in a round
    half its share between them). Its curvature :math:`(z^o / s^o)\, e_r e_r^\top` joins the job's
    block: diagonal plus one rank-one term per round on disjoint goods, factored in closed form and
    folded into the scaling (`blocks.TypeFold`: :math:`K_i^{-1} = N_i^\top D_i^{-1/2} F_i^\top F_i
    D_i^{-1/2} N_i`), so that the blocks and the capacity system keep the one-type structure over
    the K R goods. The capacity system's Gram matrix is formed in pieces (`TypeFold.gram`, much
    cheaper than the stacked product) and, when its solves miss their tolerance, as one product.
    With the low-rank factor the fold, the factorization and the pieces are two passes over the
    jobs (`blocks.typed_low_rank_system`), and each Woodbury term's fold, block solve and unfold one
    (`TypeFold.inverse`): chains of whole-array steps cost several times the arithmetic over the
    goods of three types.
    The certified gap adds :math:`{z^o}^\top s^o` and the rows' multipliers in :math:`q` (the
    one-type rows dualized, the box kept). On one GPU type (one good per round, pace 1) every step
    is the one-type step, bit for bit.

Iterations
    Mehrotra predictor-corrector steps with one step length for the primal and the dual (the
    gradient depends on `y`, so unequal steps would leave the stationarity residual behind):
    the full step when it keeps everything 1 % off its boundary, else 0.99 of the largest step
    keeping the box, the capacity, the multipliers (the logarithms' included) and the utilities :math:`U` nonnegative
    (:math:`U + \alpha\,\Delta U \ge 0.01\, U`: the logarithm needs them positive, and a step
    that cuts a utility a hundredfold leaves the Newton model of the logarithm far behind). The
    line search then halves the step until the merit (complementarity plus the dual residual times
    the box) decreases by at least :math:`10^{-4} \alpha` relative; each trial is one
    :math:`O(n S T)` evaluation, and the trial accepted is the next iterate. Without it a full step
    can make the dual residual jump and the iterations stall far from the optimum (``STALLING``
    in the tests). No step decreasing the merit ends the solve as `Status.INACCURATE`.

    The logarithms have multipliers of their own: :math:`-\beta_i \log U_{si}` is read as the
    term :math:`-w_{si} a_{si}` in the gradient with the row :math:`w_{si} U_{si} = \beta_i`, which
    the Newton step linearizes like a complementarity (the Hessian's blocks take
    :math:`w_{si} / U_{si}` for :math:`\beta_i / U_{si}^2`; the right-hand side is the same). A job
    with a tiny budget and no progress yet has an optimal utility orders of magnitude below the
    start's; Newton's step on the logarithm overshoots such a fall, the dual residual at the true
    gradient jumps, and the line search cuts every step short. With the multipliers the residual
    is linear in the step and the rows' residual :math:`\sum |w U - \beta|` joins the merit. The
    certified gap still takes the true gradient, so an iterate whose rows are far from met
    (`stopping.Repricing.measure`) is no stall; once every row is met (`point.settled`) the multipliers
    restart from :math:`\beta / U` (`point.primal`), the primal Newton step, as fast there. The start
    is strictly feasible in the primal and dual feasible: prices that minimize the start's
    certified gap (a weighted quantile per round, one sort), bound multipliers that balance the
    gradient, plus a centring shift. With the efficiency term, :math:`\zeta` starts on the central
    path of its rows (`start`), so that their multipliers already carry :math:`\kappa`.

Stopping
    On the certified gap :math:`\lambda^\top s_c + {z^f}^\top s^f + \sum q^+ y + q^- (1 - y)`,
    :math:`q = \nabla F + \hat G^\top \lambda - z^f \mathbf 1^\top` (the FTF terms vanish without
    FTF rows) below ``tol`` relative to :math:`1 + |F|`: by
    convexity :math:`F(y^*) \ge F(y) + \nabla F(y)^\top (y^* - y)`, and the right-hand side is at
    least :math:`F(y)` minus that gap for every feasible :math:`y^*` (add
    :math:`\lambda^\top (\hat G y^* - 1) \le 0` and :math:`{z^f}^\top (m - \mathbf 1^\top y^*) \le 0`,
    then minimize over the box). It is the best certificate the multipliers give (the bound
    multipliers chosen optimally) and never above the complementarity plus the dual residual
    times the box. Any prices certify a gap: where the dual residual dominates the merit (a window
    of many jobs per GPU, every entry interior at the optimum, the residual counted once per
    entry), the test also certifies the point at the prices that minimize its gap, and the
    iterations are judged on that gap where the iterate's own jumps (`Repricing`); such a point's
    step is also centred enough to reach its full length, which removes the residual
    (`_RESIDUAL_SIGMA`).

Modules
    This module holds the entry point and the iterations (each one a direction and a line
    search); `vfm.planner.solve.ipm.point` the iterate and its evaluation, `vfm.planner.solve.ipm.start`
    the start, `vfm.planner.solve.ipm.stopping` the stopping test with its repricing,
    `vfm.planner.solve.ipm.newton` the Newton system and its solves, `vfm.planner.solve.ipm.blocks` the
    per-job blocks' factorizations, and `vfm.planner._kernels` the compiled loops over the jobs.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from vfm._numerics.interior_point import STEP_TO_BOUNDARY, Method, centring, iterate
from vfm._validation import FloatArray
from vfm.equilibrium import Status
from vfm.parameters import Interval, Real, Whole, check, check_parameters
from vfm.planner._kernels import kernel_threads, moved_entries
from vfm.planner._kernels.threads import THREADS
from vfm.planner.program import PlanningProgram
from vfm.planner.solve.ipm.blocks import Workspace
from vfm.planner.solve.ipm.newton import Direction, NewtonSystem, Targets
from vfm.planner.solve.ipm.point import (
    Multipliers,
    Point,
    Slacks,
    evaluate,
    primal,
    relative_gap,
    residual_dominated,
    settled,
)
from vfm.planner.solve.ipm.start import start
from vfm.planner.solve.ipm.stopping import Repricing
from vfm.planner.solve.scaled_program import ScaledProgram, scale_program, scaled_certified_gap
from vfm.solvers.base import Solution

#: The FTF rows count as having no interior when no schedule meets them all with this margin (rounds).
_NO_INTERIOR_MARGIN = 1e-6
#: Added to the bound curvatures in the preconditioner only (H is applied exactly), smallest first.
#: The objective is scaled to budgets summing to 1, so the curvatures are O(1) at the start and
#: those of entries at a bound grow like 1/mu. 1e-12 is below every curvature that matters for the
#: step, so the conjugate gradients converge in 0-2 steps; but on windows whose optimum is not unique
#: the curvatures of interior entries fall to ~mu, the Woodbury inverse loses its digits and the
#: conjugate gradients stall. Then the system is factored again with the next, larger value (1e-8:
#: what the sibling solver `vfm.solvers.schur_ipm` uses; 1e-6 as a last resort:
#: `test_identical_jobs_reach_the_default_tolerance` needs it, its solves break down below).
#: Chosen by experiment: 1e-8 throughout costs 30 % more per iteration at 900 jobs (more CG
#: steps); 1e-12 first instead of 1e-10 spares most solves of the full Shockwave configuration
#: their one CG step (1e-10's bias left a relative residual of 1e-9 to 7e-9, just above
#: `CG_TOLERANCE`, which cost the busiest 874-job window, S = 16, time per solve). 1e-10 between
#: 1e-12 and 1e-8 was dropped: in the slowest re-plans of the 900-job reproduction it never gave a
#: more accurate direction than 1e-12, and each try cost a factorization and up to 2 x 27 Hessian
#: products.
_REGULARIZATIONS = (1e-12, 1e-8, 1e-6)
#: A direction whose solves missed their tolerance but whose relative residual is at most this is
#: used without trying a larger regularization. At the end of some solves (a certified gap within
#: a few times the tolerance) the Newton system has no digits left at any regularization: every
#: rung of the ladder missed by 1e-9 to 1e-5 and none was more accurate than the first by more
#: than a few per cent (the slowest re-plans of the 900-job reproduction), while the line search
#: still judges such a direction by the merit. A breakdown, where a larger regularization is what
#: helps, leaves residuals of 0.4 to 0.8 (identical jobs, above: 1e-4 at 1e-8, 1e-11 at 1e-6).
_USABLE_ERROR = 1e-6
#: Line search: halve the step until the merit decreases by this fraction of the step, at most
#: `_BACKTRACKS` times.
_SUFFICIENT_DECREASE = 1e-4
_BACKTRACKS = 30
#: Halvings of the step along a direction whose solves missed their tolerance (2^-10 ~ 1e-3).
_INACCURATE_BACKTRACKS = 10
#: A step along a direction whose solves missed their tolerance that does not shrink the certified
#: gap below this fraction of the one before ends the iterations (`_exhausted`).
_PROGRESS = 0.5


def solve_saa_ipm(program: PlanningProgram, tol: float = 1e-8, max_iter: int = 80,
                  warm_start: FloatArray | None = None, verbose: bool = False,
                  deadline: float | None = None, threads: int | None = None) -> Solution:
    """Solve a `PlanningProgram` (scenarios, FTF constraints, efficiency term) to a certified gap.

    Parameters
    ----------
    program : PlanningProgram
    tol : float
        Stop when the certified gap is below ``tol * (1 + |objective|)``, objective scaled to
        budgets summing to 1.
    max_iter : int
    warm_start : ndarray, shape (n, T), optional
        A previous schedule (e.g. the last plan shifted by a round); mixed half and half with the
        cold start, which keeps it strictly inside the box and the capacity.
    verbose : bool
        Print one line per iteration.
    deadline : float, optional
        A `time.perf_counter` instant, checked before each iteration: past it the solve ends
        with the best iterate and `Status.ITERATION_LIMIT`, its message saying "time limit".
    threads : int, optional
        Threads of the per-job kernels (`vfm.planner._kernels.kernel_threads`): the same solution
        bit for bit on any number. Default: the enclosing `kernel_threads` scope's, else
        `vfm.planner._kernels.threads.DEFAULT_THREADS` (one).

    Returns
    -------
    vfm.solvers.Solution
        `x` is the iterate with the smallest certified gap, shape (n, T), and `gap` its certified
        absolute gap (module docstring); `prices` the price of a GPU in each round, in objective
        units per GPU (a job pays :math:`w_i p_t` for a whole round); `x` and `prices` are None
        when the FTF rows have no interior. `Status.OPTIMAL` when that gap is within
        ``tol``; `Status.INACCURATE` when the iterations stalled or the Newton system could not be
        solved first (the gap still bounds the optimum), `Status.ERROR` if then no iterate had met
        the FTF rows; `Status.ITERATION_LIMIT` after `max_iter` (gap inf if no iterate met them).
    """
    check_tolerance(tol)
    check_parameters({"max_iter": max_iter, "threads": threads},
                     {"max_iter": Interval(Whole, 1, unit="iterations"), "threads": THREADS})
    with kernel_threads(threads):
        return _solve(program, tol, max_iter, warm_start, verbose, deadline)


def _solve(program: PlanningProgram, tol: float, max_iter: int, warm_start: FloatArray | None, verbose: bool,
           deadline: float | None) -> Solution:
    """`solve_saa_ipm` on the kernel threads in effect."""
    started = time.perf_counter()
    n_scenarios, n, rounds = program.shape
    data, scale = scale_program(program)
    active, constrained, efficient = data.active, data.constrained, data.efficient
    n_constraints = 2 * int(active.sum()) + rounds + int(constrained.sum()) + int(efficient.sum()) \
        + int(efficient.any()) + int(data.shared.sum())
    work = Workspace(n, n_scenarios + int(constrained.any() or efficient.any()), rounds)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if not program.fairness_room(_NO_INTERIOR_MARGIN):
            return Solution(
                x=None, prices=None, status=Status.INFEASIBLE,
                message=f"saa-ipm: no schedule meets the finish-time-fairness constraints with a margin of "
                        f"{_NO_INTERIOR_MARGIN:g} rounds, which the interior point needs",
                iterations=0, solve_time=time.perf_counter() - started, accuracy=tol)
        point = start(data, warm_start, n_constraints)

        def trace(point: Point, iteration: int) -> None:
            print(f"saa-ipm {iteration:3d} F={point.value:.12g} complementarity={point.complementarity:.3e} "
                  f"residual={float(np.abs(point.dual_residual).max()):.3e} merit={point.merit:.3e} "
                  f"gap={point.gap:.3e}")

        repricing = Repricing(data, tol, deadline)
        outcome = iterate(point, Method(
            name="saa-ipm",
            step=lambda point: _step(data, point, n_constraints, work),
            measure=repricing.measure,
            converged=lambda point, _: repricing.converged(point),
            describe=lambda point: f"certified relative gap {relative_gap(point):.1e}",
            asked=f"{tol:.0e}",
            trace=trace if verbose else None,
            exhausted=_exhausted,
        ), max_iter, deadline)
        best, status, message = repricing.outcome(outcome)
        # The certificate is for the program's own objective (without the tie-breaking term): the
        # same multipliers, the gradient without the term (valid for any multipliers, by convexity).
        # Stopped by the time limit, the caller has no time left for it (about a step's work).
        timed_out = deadline is not None and status == Status.ITERATION_LIMIT and outcome.iteration < max_iter
        if timed_out and program.spread and np.isfinite(best.gap):
            gap, message = float("nan"), f"{message}; no certificate of the program's own objective: no time left"
        else:
            gap = scale * best.gap if not program.spread or not np.isfinite(best.gap) else \
                scale * scaled_certified_gap(data, best.y, best.z_f, best.longest.z_e, best.type_rows.z)
        if status == Status.INACCURATE and not np.isfinite(best.gap):
            # No iterate met the FTF rows: nothing certifies the schedule, which is no optimum.
            status, message = Status.ERROR, f"{message}; the FTF rows were still violated"

    return Solution(
        x=np.where(active, best.y, 0.0),
        # Back to the unscaled objective and to GPUs: p_t = scale * lambda_t / G_t.
        prices=np.where(program.capacity > 0,
                        scale * best.prices / np.where(program.capacity > 0, program.capacity, 1.0), 0.0),
        status=status,
        message=message,
        iterations=outcome.iteration,
        solve_time=time.perf_counter() - started,
        accuracy=tol,
        gap=gap,
        relative_gap=relative_gap(best),
        ftf_multipliers=best.z_f,
        efficiency_multipliers=best.longest.z_e,
        type_multipliers=np.where(data.shared, best.type_rows.z, 0.0) if data.typed else None,
    )


def check_tolerance(tol: object) -> None:
    """Raise `ValidationError` unless `tol` is a relative gap in (0, 1): what every planning
    backend takes (NaN or a negative tolerance would never be met, and one of 1 or more is no bound)."""
    check("tol", tol, Interval(Real, 0, 1, closed="neither", noun="a relative gap"))


def certified_gap(program: PlanningProgram, x: FloatArray, ftf_multipliers: FloatArray,
                  efficiency_multipliers: FloatArray) -> float:
    r"""A certified gap of any schedule `x` of `program` from multipliers another solver found.

    The bound of the module docstring ("Stopping") at :math:`y = x` (clipped to the box), for the
    objective without the tie-breaking term: the FTF and efficiency rows' multipliers given
    (negative ones read as 0; any nonnegative ones give a valid bound, the solver's optimal ones
    a tight one), the prices and the bounds' multipliers chosen to minimize it. By concavity
    ``program.objective(x) + certified_gap(...)`` is at least the optimum whether or not `x`
    meets the constraints; it bounds the loss of `x` itself only where `x` does.

    Parameters
    ----------
    program : PlanningProgram
    x : ndarray, shape (n, T)
        The schedule, in rounds.
    ftf_multipliers, efficiency_multipliers : ndarray, shape (n,)
        Multipliers of the rows :math:`\sum_t y_{it} \ge m_i` and
        :math:`\zeta \ge r_i - \sum_t y_{it}` in the objective divided by the budgets' sum.

    Returns
    -------
    float
        The gap in the program's objective units.
    """
    data, scale = scale_program(program)
    return scale * scaled_certified_gap(data, x, ftf_multipliers, efficiency_multipliers)


def _step(data: ScaledProgram, point: Point, n_constraints: int, work: Workspace) -> Point | None:
    """The next iterate: a line search along Mehrotra's direction, else along the first-order one
    (None when neither decreases the merit).

    The second-order terms can point uphill far from the central path (a large affine step, e.g.
    from violated FTF rows); the first-order corrector descends for a small enough step. A
    direction whose solves missed their tolerance failed for lack of digits in the Newton system
    instead (the end of some degenerate solves), which the first-order one shares: no retry, unless
    no iterate is certified yet (the FTF rows still violated, where stopping leaves no schedule).
    Once the logarithms' rows are met (`settled`), the step starts from their values
    (`primal`).
    """
    if point.log_residual > 0 and settled(data, point):
        point = primal(data, point)
    for second_order in (True, False):
        direction = _direction(data, point, n_constraints, work, second_order)
        trial = _line_search(data, point, direction) if direction is not None else None
        if trial is not None or (direction is not None and direction.error and np.isfinite(point.gap)):
            return trial
    return None


def _exhausted(previous: Point, point: Point) -> bool:
    """Whether the step from `previous` to `point` shows the Newton systems out of digits: the
    direction it took missed its solves' tolerance (`Direction.error`) and it shrank the
    certified gap to more than `_PROGRESS` of what it was.

    At the end of some degenerate solves (the gap within a few times the tolerance) such a step is
    followed by more that cost two to three times an ordinary one (every regularization, 20 to 27
    conjugate-gradient steps per solve) and shrink the gap no further: the slowest window of the
    900-job reproduction (562 jobs) spent about half its solve on two. Where such a step still makes
    progress it shrinks the gap several times over, even at gaps of 1e-9 to 1e-7 (to 0.05 to 0.44
    of it in that reproduction's 201 windows), so the rule does not stop a solve that was progressing.
    """
    return point.inexact > 0 and not point.gap <= _PROGRESS * previous.gap


#: Mehrotra's centring is at least this much at a residual-dominated point (`_mehrotra`): the step
#: then reaches its full length. 0.3 and 0.5 both converged every policy window of 10,000 to 100,000
#: jobs in 7 iterations; 0.3 reduces the complementarity more per step.
_RESIDUAL_SIGMA = 0.3


def _direction(data: ScaledProgram, point: Point, n_constraints: int, work: Workspace,
               second_order: bool = True) -> Direction | None:
    """Mehrotra's predictor-corrector direction at `point` (None when it is not finite); without
    `second_order`, the corrector aims at sigma mu alone."""
    best = None
    # With one-type rows or low-rank blocks, first the capacity system's Gram matrix in pieces, then,
    # if its solves miss the tolerance, as one product (`TypeFold.gram`, `BlockFactor.gram`).
    attempts = [(_REGULARIZATIONS[0], False)] if data.typed or work.low_rank else []
    attempts += [(regularization, True) for regularization in _REGULARIZATIONS]
    for regularization, stacked in attempts:
        try:
            newton = NewtonSystem.factor(data, point, point.complementarity / n_constraints, work, regularization,
                                         stacked)
        except np.linalg.LinAlgError:
            # The capacity system lost positive definiteness to rounding: regularize more.
            if regularization == _REGULARIZATIONS[-1] and best is None:
                raise
            continue
        direction = _mehrotra(data, point, newton, 1.0 if second_order else 0.0)
        if direction is not None and (best is None or direction.error < best.error):
            best = direction
        # The pieces' misses are theirs (`TypeFold.gram`, `BlockFactor.gram`): the stacked product
        # is tried after any.
        if best is not None and best.error <= (_USABLE_ERROR if stacked else 0.0):
            break
    # No regularization came within `_USABLE_ERROR` (the end of some degenerate solves, where the
    # Newton system has no digits left): the most accurate direction, not the last.
    return best


def _mehrotra(data: ScaledProgram, point: Point, newton: NewtonSystem,
              second_order: float) -> Direction | None:
    """Predictor and corrector with one factorization; `second_order` (1 or 0) weighs the
    corrector's second-order terms."""
    y, s_hi, s_cap = point.y, point.s_hi, point.s_cap
    z_lo, z_hi, prices = point.z_lo, point.z_hi, point.prices
    mu = newton.mu
    predictor = newton.direction(0.0, 0.0, None, Targets(np.zeros_like(s_cap), np.zeros_like(point.s_f),
                                                         np.zeros_like(point.s_f), 0.0,
                                                         np.zeros_like(point.type_rows.s)))
    alpha = min(predictor.largest, 1.0)
    step, type_step = predictor.longest, predictor.type_rows
    moved = float(((y + alpha * predictor.dy) * (z_lo + alpha * predictor.dz_lo)).sum()
                  + ((s_hi - alpha * predictor.dy) * (z_hi + alpha * predictor.dz_hi)).sum()
                  + (s_cap + alpha * predictor.ds_cap) @ (prices + alpha * predictor.d_prices)
                  + (point.s_f + alpha * predictor.ds_f) @ (point.z_f + alpha * predictor.dz_f)) \
        + point.longest.moved(step, alpha).complementarity() \
        + (point.type_rows.moved(type_step, alpha).complementarity() if data.typed else 0.0)
    sigma = centring(moved, point.complementarity)
    if residual_dominated(point):
        # The step is cut short of 1 by the boundary (sigma ~ 0 sends complementarity to 0 at the full
        # step) and keeps (1 - alpha) of the dual residual: centring lets it reach the full step,
        # which removes the residual but for its nonlinear remainder.
        sigma = max(sigma, _RESIDUAL_SIGMA)
    w = second_order
    corrector = newton.direction(sigma * mu, w, predictor, Targets(
        sigma * mu - w * predictor.ds_cap * predictor.d_prices,
        np.where(data.constrained, sigma * mu - w * predictor.ds_f * predictor.dz_f, 0.0),
        np.where(data.efficient, sigma * mu - w * step.s_e * step.z_e, 0.0),
        sigma * mu - w * step.zeta * step.z_zeta if data.kappa else 0.0,
        np.where(data.shared, sigma * mu - w * type_step.s * type_step.z, 0.0) if data.typed else data.zeros,
    ), sigma)
    if not (np.isfinite(corrector.largest) and np.isfinite(corrector.dy).all()):
        return None
    return corrector


def _line_search(data: ScaledProgram, point: Point, direction: Direction) -> Point | None:
    """The first of the steps 0.99 * largest, halved, ... whose merit decreases enough (None: none),
    carrying the direction's missed-solve residual (`Point.inexact`, for `_exhausted`)."""
    alpha = min(1.0, STEP_TO_BOUNDARY * direction.largest)
    active = data.active
    # An inaccurate direction that descends only for a step a thousand times shorter than the
    # boundary allows is rounding, not progress (the end of some degenerate solves).
    for _ in range(_BACKTRACKS if not direction.error else _INACCURATE_BACKTRACKS):
        if alpha <= 0:
            break
        y, s_hi, z_lo, z_hi = (np.empty_like(point.y) for _ in range(4))
        moved_entries(active, alpha, point.y, direction.dy, point.s_hi, point.z_lo, direction.dz_lo, point.z_hi,
                      direction.dz_hi, y, s_hi, z_lo, z_hi)
        trial = evaluate(
            data, y,
            Slacks(s_hi, point.s_cap + alpha * direction.ds_cap, point.s_f + alpha * direction.ds_f),
            Multipliers(z_lo, z_hi, point.prices + alpha * direction.d_prices, point.z_f + alpha * direction.dz_f),
            point.longest.moved(direction.longest, alpha),
            point.type_rows.moved(direction.type_rows, alpha) if data.typed else point.type_rows,
            point.w + alpha * direction.dw,
        )
        if trial.merit <= (1.0 - _SUFFICIENT_DECREASE * alpha) * point.merit:
            return replace(trial, inexact=direction.error) if direction.error else trial
        alpha *= 0.5
    return None
