r"""A primal-dual interior-point method for the expected-NSWOT program, reduced to the round block.

Minimizes :math:`F(y) = -\sum_i \beta_i \sum_s \log U_{si}(y)` (:math:`\beta_i = B_i / S`,
scaled to sum to 1) over the box :math:`0 \le y_{it} \le u_t` (:math:`u_t = 1` unless
`PlanningProgram.upper` says otherwise; read :math:`u - y` for :math:`1 - y` below) on the
entries where a job fits and makes forecast progress, the capacity rows
:math:`\sum_i g_{it} y_{it} \le 1` (:math:`g_{it} = w_i / G_t`) and, with finish-time-fairness
targets, one row per job :math:`\sum_t y_{it} \ge m_i`
(:math:`m_i = (\hat T_i - b_i) / W`, kept where :math:`m_i > 0`); with the efficiency term, plus
:math:`\kappa \zeta` over one more variable :math:`\zeta \ge 0` and one row per job with time left,
:math:`\sum_t y_{it} + \zeta \ge \hat T_i / W` (`_NewtonSystem` for its border). Its Newton system is

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
    :math:`F_i^\top F_i = (I + V_i V_i^\top)^{-1}` (`_BlockFactor`): for S' up to
    `_LOW_RANK_COLUMNS` (or much longer windows, `_low_rank`), the symmetric square root
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
    `_BlockFactor.gram`, with the stacked product as fallback). The dense factor adds the rows'
    column by a rank-one update of the scenarios' factor, which also gives
    `_corner_without_capacity` its loads without a second factorization; the (n, S', T) and
    (n, T, T) arrays are allocated once per solve. With the efficiency term the preconditioner
    eliminates :math:`\Delta\zeta` through the scalar :math:`d - c^\top P_y^{-1} c`; at the end of
    a solve the rows' curvatures reach 1e7 while that difference is 1e-3, so it is computed as two
    sums of positive terms, job by job without the capacity rows (`_corner_without_capacity`) plus
    the capacity rows' Woodbury term.

GPU types
    Over goods (type, round) (`PlanningProgram.good_round`, ``speed``) the entries are
    goods, the FTF and efficiency rows weigh them by the job's pace :math:`p_{it}` (their rank-one
    column is :math:`p_i`, not :math:`\mathbf 1`), and every job with two or more active goods in a
    round has the one-type row :math:`\sum_{t \in r} y_{it} + s^o_{ir} = u_r`, with slack and
    multiplier like the bounds' (always primal feasible: the start gives a job's goods in a round
    half its share between them). Its curvature :math:`(z^o / s^o)\, e_r e_r^\top` joins the job's
    block: diagonal plus one rank-one term per round on disjoint goods, factored in closed form and
    folded into the scaling (`_TypeFold`: :math:`K_i^{-1} = N_i^\top D_i^{-1/2} F_i^\top F_i
    D_i^{-1/2} N_i`), so that the blocks and the capacity system keep the one-type structure over
    the K R goods. The capacity system's Gram matrix is formed in pieces (`_TypeFold.gram`, much
    cheaper than the stacked product) and, when its solves miss their tolerance, as one product.
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
    (`_Repricing.measure`) is no stall; once every row is met within `_LOG_SETTLED` the multipliers
    restart from :math:`\beta / U` (`_primal`), the primal Newton step, as fast there. The start
    is strictly feasible in the primal and dual feasible: prices that minimize the start's
    certified gap (a weighted quantile per round, one sort), bound multipliers that balance the
    gradient, plus a centring shift. With the efficiency term, :math:`\zeta` starts on the central
    path of its rows (`_central_zeta`), so that their multipliers already carry :math:`\kappa`.

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
    iterations are judged on that gap where the iterate's own jumps (`_Repricing`); such a point's
    step is also centred enough to reach its full length, which removes the residual
    (`_RESIDUAL_SIGMA`).
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass, replace

import numpy as np
import scipy.linalg
import scipy.optimize
import scipy.sparse

from vfm._interior_point import (
    CG_STEPS,
    CG_TOLERANCE,
    STEP_TO_BOUNDARY,
    Method,
    Outcome,
    centring,
    cg_tolerance,
    iterate,
    largest_step,
)
from vfm._linalg import preconditioned_cg
from vfm._validation import FloatArray, is_whole
from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.planner import _kernels
from vfm.planner.polish import polish
from vfm.planner.program import PlanningProgram
from vfm.planner.scaled_program import (
    ScaledProgram,
    gap_from_terms,
    gap_minimizing_prices,
    objective,
    row_terms,
    scale_program,
    scaled_certified_gap,
)
from vfm.solvers.base import Solution

#: The FTF rows count as having no interior when no schedule meets them all with this margin (rounds).
_NO_INTERIOR_MARGIN = 1e-6
_START_SHARE = 0.5
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
#: `CG_TOLERANCE`: the busiest 874-job window, S = 16, 244 to 226 ms per solve). 1e-10 between
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
#: The conjugate gradients stop when the residual has not halved for this many steps
#: (`vfm._linalg.preconditioned_cg`): those solves end at the same residual after 25 steps.
_PATIENCE = 4
#: Line search: halve the step until the merit decreases by this fraction of the step, at most
#: `_BACKTRACKS` times.
_SUFFICIENT_DECREASE = 1e-4
_BACKTRACKS = 30
#: Halvings of the step along a direction whose solves missed their tolerance (2^-10 ~ 1e-3).
_INACCURATE_BACKTRACKS = 10
#: A step along a direction whose solves missed their tolerance that does not shrink the certified
#: gap below this fraction of the one before ends the iterations (`_exhausted`).
_PROGRESS = 0.5
#: The logarithms' multipliers are replaced by their values beta / U once every row w U = beta is met
#: within this fraction (`_settled`): from there the primal Newton step converges as fast, and the
#: certified gap, which takes the true gradient, no longer lags the iterate.
_LOG_SETTLED = 1e-2


class _Workspace:
    """The (n, S', T) and (n, T, T) arrays of the Newton system, allocated once per solve (the
    dense block factor's only when `_BlockFactor` uses that form).

    Fresh arrays of a few MB each iteration cost more than the arithmetic on them: the allocator
    returns them to the system and page-faults them back in (measured: 22 ms per iteration at
    900 jobs with fresh arrays, 13 ms with these buffers reused).
    """

    def __init__(self, n: int, columns: int, rounds: int) -> None:
        self.curvature = np.empty((n, columns, rounds))
        self.scaled = np.empty((n, columns, rounds))
        self.weighted = np.empty((n, rounds, rounds))
        self.low_rank = _low_rank(columns, rounds)
        if self.low_rank:
            self.columns = np.empty((n, columns, rounds))
            self.shrink = np.empty((n, columns))
            self.rows = np.empty((n, columns, rounds))
        else:
            self.lower_inverse = np.empty((n, rounds, rounds))


@dataclass(frozen=True)
class _Longest:
    """The efficiency term's variable and rows at one point (or a step of them)."""

    zeta: float  # the longest leftover, rounds
    s_e: FloatArray  # (n,) slacks of the efficiency rows
    z_e: FloatArray  # (n,) their multipliers
    z_zeta: float  # multiplier of zeta >= 0

    def moved(self, step: _Longest, alpha: float) -> _Longest:
        """This point moved by `alpha` times `step`."""
        return _Longest(self.zeta + alpha * step.zeta, self.s_e + alpha * step.s_e, self.z_e + alpha * step.z_e,
                        self.z_zeta + alpha * step.z_zeta)

    def complementarity(self) -> float:
        return float(self.s_e @ self.z_e) + self.zeta * self.z_zeta


@dataclass(frozen=True)
class _TypeRows:
    r"""The one-type-per-round rows at one point (or a step of them): per job and round with several
    active goods, :math:`\sum_{t \in r} y_{it} + s_{ir} = u_r`, :math:`s, z \ge 0`."""

    s: FloatArray  # (n, R) slacks; 1 off `ScaledProgram.shared`
    z: FloatArray  # (n, R) multipliers; 0 off `ScaledProgram.shared`

    def moved(self, step: _TypeRows, alpha: float) -> _TypeRows:
        """This point moved by `alpha` times `step`."""
        return _TypeRows(self.s + alpha * step.s, self.z + alpha * step.z)

    def complementarity(self) -> float:
        return float(np.vdot(self.s, self.z))


@dataclass(frozen=True)
class _Point:
    """An iterate and what the stopping test, the line search and the Newton system need of it."""

    y: FloatArray  # (n, T); 0 off `active`
    s_hi: FloatArray  # (n, T) u - y; 1 off `active`
    s_cap: FloatArray  # (T,) 1 - sum_i g y
    z_lo: FloatArray  # (n, T); 0 off `active`
    z_hi: FloatArray  # (n, T); 0 off `active`
    prices: FloatArray  # (T,)
    s_f: FloatArray  # (n,) slacks of the FTF rows on constrained jobs; 1 elsewhere
    ftf_residual: FloatArray  # (n,) sum_t y_it - m_i - s_f (the rows may start violated); 0 elsewhere
    z_f: FloatArray  # (n,) multipliers of the FTF constraints; 0 elsewhere
    longest: _Longest  # zeta, the efficiency rows' slacks and multipliers (zeta 1, slacks 1, multipliers 0 without)
    type_rows: _TypeRows  # the one-type-per-round rows' slacks and multipliers
    u: FloatArray  # (n, S) utilities
    value: float  # F(y) + kappa zeta
    dual_residual: FloatArray  # (n, T) with the logarithms' multipliers w; 0 off `active`
    zeta_residual: float  # kappa - sum z_e - z_zeta; 0 without the efficiency term
    complementarity: float
    merit: float  # complementarity + |dual residual| . max(y, 1 - y) + the log residual
    gap: float  # the certified gap (module docstring)
    w: FloatArray  # (n, S) the logarithms' multipliers (`_evaluate`)
    primal_residual: FloatArray  # (n, T) the dual residual at w = beta / U (the true gradient of F); 0 off `active`
    log_residual: float  # sum |w U - beta|
    inexact: float = 0.0  # relative residual of the missed solves of the direction that reached it; 0 if none


def solve_saa_ipm(program: PlanningProgram, tol: float = 1e-8, max_iter: int = 80,
                  warm_start: FloatArray | None = None, verbose: bool = False,
                  deadline: float | None = None) -> Solution:
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
    if not is_whole(max_iter) or max_iter < 1:
        raise ValidationError(f"max_iter must be a positive whole number of iterations, got {max_iter!r}")
    started = time.perf_counter()
    n_scenarios, n, rounds = program.shape
    data, scale = scale_program(program)
    active, constrained, efficient = data.active, data.constrained, data.efficient
    n_constraints = 2 * int(active.sum()) + rounds + int(constrained.sum()) + int(efficient.sum()) \
        + int(efficient.any()) + int(data.shared.sum())
    work = _Workspace(n, n_scenarios + int(constrained.any() or efficient.any()), rounds)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if not program.fairness_room(_NO_INTERIOR_MARGIN):
            return Solution(
                x=None, prices=None, status=Status.INFEASIBLE,
                message=f"saa-ipm: no schedule meets the finish-time-fairness constraints with a margin of "
                        f"{_NO_INTERIOR_MARGIN:g} rounds, which the interior point needs",
                iterations=0, solve_time=time.perf_counter() - started, accuracy=tol)
        point = _start(data, warm_start, n_constraints)

        def trace(point: _Point, iteration: int) -> None:
            print(f"saa-ipm {iteration:3d} F={point.value:.12g} complementarity={point.complementarity:.3e} "
                  f"residual={float(np.abs(point.dual_residual).max()):.3e} merit={point.merit:.3e} "
                  f"gap={point.gap:.3e}")

        repricing = _Repricing(data, tol, deadline)
        outcome = iterate(point, Method(
            name="saa-ipm",
            step=lambda point: _step(data, point, n_constraints, work),
            measure=repricing.measure,
            converged=lambda point, _: repricing.converged(point),
            describe=lambda point: f"certified relative gap {_relative(point):.1e}",
            asked=f"{tol:.0e}",
            trace=trace if verbose else None,
            exhausted=_exhausted,
        ), max_iter, deadline)
        best, status, message = repricing.outcome(outcome)
        # The certificate is for the program's own objective (without the tie-breaking term): the
        # same multipliers, the gradient without the term (valid for any multipliers, by convexity).
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
        relative_gap=_relative(best),
        ftf_multipliers=best.z_f,
        efficiency_multipliers=best.longest.z_e,
    )


#: A point whose merit (complementarity plus the dual residual times the box) is more than this many
#: times its complementarity is dominated by its dual residual (`_residual_dominated`). The dual
#: residual counts once per entry: on a window of many jobs sharing every round (the optimum interior
#: in every entry) the start's is proportional to the jobs per GPU, and steps of 0.99 keep the ratio,
#: 5,500 at 10,000 jobs on 256 GPUs where the Newton system has no digits left. Of the reproductions'
#: windows (120 to 900 jobs, 10,000 tiled on 2,560 GPUs) only the Shockwave configuration's first
#: iterates exceed 100 (the efficiency rows' residual), in as many iterations as without the rule.
_RESIDUAL_RATIO = 100.0
#: Mehrotra's centring is at least this much at a residual-dominated point (`_mehrotra`): the step
#: then reaches its full length. 0.3 and 0.5 both converged every policy window of 10,000 to 100,000
#: jobs in 7 iterations; 0.3 reduces the complementarity more per step.
_RESIDUAL_SIGMA = 0.3
#: A residual-dominated point is also certified at the gap-minimizing prices (`_Repricing`) once its
#: own certified relative gap is within this factor of the tolerance ...
_REPRICE_WITHIN = 1e3
#: ... or when its own gap is more than this many times the least measured so far.
_REPRICE_JUMP = 2.0


def _relative(point: _Point) -> float:
    """The certified gap of `point` relative to 1 + |objective| (the stopping test's measure)."""
    return point.gap / (1.0 + abs(point.value))


def _residual_dominated(point: _Point) -> bool:
    """Whether the dual residual dominates the merit of `point` (`_RESIDUAL_RATIO`)."""
    return point.merit > _RESIDUAL_RATIO * point.complementarity


class _Repricing:
    r"""The stopping test and the iterations' measure, with a second certificate for residual-dominated
    points: the same point at the capacity prices that minimize its certified gap (`gap_minimizing_prices`).

    Any prices :math:`\lambda \ge 0` certify a gap (module docstring, Stopping); the iterate's own
    lag the optimal ones by the dual residual, which counts once per entry. At 10,000 jobs on 256
    GPUs the iterate's prices certify 1.1e-6 at the point where the Newton system has no digits
    left, the gap-minimizing ones 3.4e-8 at the same point; at 30,000 jobs and more the first step's
    own gap is 18 to 60 times the start's (whose prices are the gap-minimizing ones), which
    `vfm._interior_point.iterate` would take for a stall. The prices cost one sort of the (n, T)
    entries (20 ms at 10,000 jobs, 0.3 s at 100,000), so they are computed only for points that are
    residual-dominated or were reached by a direction whose solves missed their tolerance (the
    Newton system running out of digits), within `_REPRICE_WITHIN` of the tolerance or
    `_REPRICE_JUMP` above the least gap; and once for the point reported when the iterations end
    short of the tolerance before the deadline.
    """

    def __init__(self, data: ScaledProgram, tol: float, deadline: float | None) -> None:
        self.data, self.tol, self.deadline = data, tol, deadline
        self.last: tuple[_Point, _Point] | None = None  # a point and its repricing
        self.measured: list[tuple[_Point, float]] = []  # `iterate` measures the new point and the best one
        self.least = np.inf

    def measure(self, point: _Point) -> float:
        """The certified gap of `point`, or, when that is more than `_REPRICE_JUMP` times the least
        measured so far, the smaller of it and the gap at the gap-minimizing prices; the least so far
        instead of a larger value while its logarithms' rows are far from met."""
        for seen, value in self.measured:
            if seen is point:
                return value
        value = point.gap
        if not value <= _REPRICE_JUMP * self.least:
            value = min(value, self.better(point, jump=True).gap)
        if not value <= self.least and (point.log_residual > point.complementarity or not _settled(self.data, point)):
            # Its logarithms' rows are far from met (module docstring, Iterations): the certificate,
            # at the true gradient, lags the iterate, which counts as neither better than the best
            # nor a stall.
            value = self.least
        self.least = min(self.least, value)
        self.measured = [*self.measured[-1:], (point, value)]
        return value

    def converged(self, point: _Point) -> str | None:
        """What certifies `point` (the message's words), or None while it is not within the tolerance."""
        if _relative(point) <= self.tol:
            return f"certified relative gap {_relative(point):.1e}"
        better = self.better(point)
        if better is not point and _relative(better) <= self.tol:
            return f"certified relative gap {_relative(better):.1e} at the gap-minimizing prices"
        return None

    def better(self, point: _Point, jump: bool = False, final: bool = False) -> _Point:
        """`point` at the gap-minimizing prices where those certify a smaller gap, its own is finite and
        within `_REPRICE_WITHIN` of the tolerance (with `jump`: whatever it is), and it is
        residual-dominated or inexact (with `final`: whatever it is); else `point`."""
        near = jump or _relative(point) <= _REPRICE_WITHIN * self.tol
        if not (near and np.isfinite(point.gap) and (_residual_dominated(point) or point.inexact > 0 or final)):
            return point
        if self.last is None or self.last[0] is not point:
            self.last = point, _repriced(self.data, point)
        repriced = self.last[1]
        return repriced if repriced.gap < point.gap else point

    def outcome(self, outcome: Outcome[_Point]) -> tuple[_Point, Status, str]:
        """The point to report, its status and message: the outcome's point at the gap-minimizing
        prices when those certify it better (`better`), `Status.OPTIMAL` when they certify the tolerance."""
        in_time = self.deadline is None or time.perf_counter() < self.deadline
        best = self.better(outcome.point, final=outcome.status != Status.OPTIMAL and in_time)
        if best is outcome.point or outcome.status == Status.OPTIMAL or _relative(best) > self.tol:
            return best, outcome.status, outcome.message
        return best, Status.OPTIMAL, (f"{outcome.message}; its best iterate is certified at relative gap "
                                      f"{_relative(best):.1e} at the gap-minimizing prices")


def _repriced(data: ScaledProgram, point: _Point) -> _Point:
    """`point` with the capacity prices that minimize its certified gap (its other multipliers kept)."""
    _, gradient, _ = objective(data, point.y)
    rows = row_terms(data, point.z_f + point.longest.z_e, point.type_rows.z)
    prices = gap_minimizing_prices(gradient - rows, data.g, point.y, point.s_hi, point.s_cap)
    return _evaluate(data, point.y, point.s_hi, point.s_cap, point.z_lo, point.z_hi, prices, point.s_f, point.z_f,
                     point.longest, point.type_rows, point.w)


def check_tolerance(tol: object) -> None:
    """Raise `ValidationError` unless `tol` is a relative gap in (0, 1): what every planning
    backend takes (NaN or a negative tolerance would never be met, and one of 1 or more is no bound)."""
    real = not isinstance(tol, bool) and isinstance(tol, int | float | np.integer | np.floating)
    if not (real and 0 < tol < 1):  # type: ignore[operator]
        raise ValidationError(f"tol must be a relative gap in (0, 1), got {tol!r}")



@functools.cache
def load_kernels() -> None:
    """Load the compiled kernels (`vfm.planner._kernels`) into this process, by solving two small
    programs (one scenario, and five: both block factors) with FTF rows and the efficiency term,
    and polishing the first (`vfm.planner.polish`).

    The first call on a machine compiles them (about 5 s) and caches the machine code; later
    processes load it (about 0.3 s). `vfm.planner.Policy` calls this when it is built, so that no
    re-plan pays for it; once per process.
    """
    for scenarios in (1, 5):
        rounds = 4
        program = PlanningProgram(
            progress=np.linspace(0.05, 0.3, scenarios * 2 * rounds).reshape(scenarios, 2, rounds),
            base=np.array([0.1, 0.2]), weights=np.ones(2), gpus=np.array([1.0, 2.0]), capacity=np.full(rounds, 2.0),
            round_s=60.0, remaining_s=np.array([300.0, 200.0]), efficiency=0.01,
            leftover_limit_s=np.array([1e4, 1e4]), spread=0.01)
        solution = solve_saa_ipm(program, tol=1e-6)
        if scenarios == 1:  # its Lagrangian minimizer's kernel, and the start's match (a schedule the
            # multipliers do not give)
            assert solution.x is not None
            polish(program, replace(solution, x=0.9 * np.asarray(solution.x)))
        # Two GPU types: the one-type rows' kernel.
        typed = replace(program, progress=np.tile(program.progress, 2), capacity=np.tile(program.capacity, 2),
                        good_round=np.tile(np.arange(rounds), 2),
                        speed=np.repeat(np.array([[1.0, 0.5], [1.0, 0.8]]), rounds, axis=1))
        solve_saa_ipm(typed, tol=1e-6)


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


def _start(data: ScaledProgram, warm_start: FloatArray | None, n_constraints: int) -> _Point:
    """A primal start strictly inside the box, the capacity and the efficiency rows (the FTF rows may
    start violated) and a dual-feasible start with every product near 1 / n_constraints."""
    active, g = data.active, data.g
    # The same share of every round for every job that fits (half its bound), half the capacity at most.
    load = g.sum(axis=0)
    y = np.where(active, np.minimum(_START_SHARE * data.upper, _START_SHARE / np.maximum(load, 1e-300))[None, :], 0.0)
    if data.typed:
        # The job's goods in a round share its half: the one-type rows start half slack.
        y /= np.maximum(active.astype(np.float64) @ data.rounds_of_goods, 1.0)[:, data.good_round]
    if warm_start is not None:
        # Scale the old schedule into 90 % of each round's capacity (and of each one-type row),
        # then mix it half and half with the cold start: every entry stays in (0, 0.75 u] and
        # every round under 70 % full.
        previous = np.where(active, np.clip(warm_start, 0.0, data.upper[None, :]), 0.0)
        previous = previous * np.minimum(1.0, 0.9 / np.maximum((g * previous).sum(axis=0), 1e-300))[None, :]
        if data.typed:
            room = np.minimum(1.0, 0.9 * data.round_upper / np.maximum(previous @ data.rounds_of_goods, 1e-300))
            previous = previous * room[:, data.good_round]
        y = 0.5 * y + 0.5 * previous
    s_hi = np.where(active, data.upper[None, :] - y, 1.0)
    s_cap = 1.0 - (g * y).sum(axis=0)
    # The FTF rows may start infeasible: their slacks start at least 1 and the Newton steps close
    # the residual sum_t y - m - s_f (a full step closes it).
    running = (y * data.pace).sum(axis=1)
    s_f = np.where(data.constrained, np.maximum(running - data.floor, 1.0), 1.0)
    _, gradient, _ = objective(data, y)
    # Multipliers that make the start dual feasible (the Newton steps then only have to centre
    # and reduce mu, not also repair stationarity, which took a third of the iterations), shifted by
    # mu0 / slack so that every product is at least mu0 = 1 / n_constraints.
    mu0 = 1.0 / n_constraints
    z_f = np.where(data.constrained, mu0 / s_f, 0.0)
    zeta, s_e, z_e, z_zeta = 1.0, np.ones_like(s_f), np.zeros_like(s_f), 0.0
    if data.kappa:
        zeta = _central_zeta(data, running, mu0)
        s_e = np.where(data.efficient, running + zeta - data.leftover, 1.0)
        z_e = np.where(data.efficient, mu0 / s_e, 0.0)
        z_zeta = max(data.kappa - float(z_e.sum()), 0.0) + mu0 / zeta
    s_o = np.where(data.shared, data.round_upper[None, :] - y @ data.rounds_of_goods, 1.0)
    type_rows = _TypeRows(s_o, np.where(data.shared, mu0 / s_o, 0.0))
    # The prices that minimize the start's gap given the rows' multipliers (with the efficiency
    # term, z_e carries kappa: the reduced gradient below includes it).
    rows = row_terms(data, z_f + z_e, type_rows.z)
    prices = gap_minimizing_prices(gradient - rows, g, y, s_hi, s_cap)
    reduced = np.where(active, gradient + g * prices[None, :] - rows, 0.0)
    z_lo = np.where(active, np.maximum(reduced, 0.0) + mu0 / np.where(active, y, 1.0), 0.0)
    z_hi = np.where(active, np.maximum(-reduced, 0.0) + mu0 / s_hi, 0.0)
    return _evaluate(data, y, s_hi, s_cap, z_lo, z_hi, prices + mu0 / s_cap, s_f, z_f,
                     _Longest(zeta, s_e, z_e, z_zeta), type_rows, None)


def _central_zeta(data: ScaledProgram, running: FloatArray, mu0: float) -> float:
    r"""The start's :math:`\zeta`: on the central path at `mu0` for the efficiency rows, if that is
    within a round of the longest leftover.

    Every efficiency row strictly satisfied needs :math:`\zeta > \ell = \max_i (r_i - \sum_t y_{it})^+`.
    With :math:`z^e_i = \mu_0 / s^e_i` and :math:`z_\zeta = \mu_0 / \zeta`, the stationarity in
    :math:`\zeta`, :math:`\kappa = \sum_i z^e_i + z_\zeta`, reads
    :math:`\mu_0 (\sum_i 1 / s^e_i(\zeta) + 1 / \zeta) = \kappa`, whose left side falls from
    :math:`+\infty` at :math:`\ell` to 0: one root. A start at :math:`\ell + 1` instead (a round of
    margin) leaves the rows' multipliers at :math:`\mu_0 / s^e \ll \kappa` and :math:`z_\zeta` at
    :math:`\kappa`, so :math:`\zeta z_\zeta` (~7 at the busiest 874-job window, where :math:`\zeta`
    starts at 142 rounds) was most of the start's complementarity, and the first Newton steps moved
    :math:`\zeta` by hundreds of rounds and were cut to ~1e-3 by the box: 31 iterations there, 23
    from this start. The root is used when it is below :math:`\ell + 1` (with a small :math:`\kappa`
    it is far above, and :math:`\ell + 1` is kept)."""
    excess = np.where(data.efficient, running - data.leftover, np.inf)
    lowest = max(0.0, -float(excess.min(initial=np.inf)))
    margin = lowest + 1.0

    def surplus(zeta: float) -> float:
        return mu0 * (float((1.0 / (excess + zeta)).sum()) + 1.0 / zeta) - data.kappa

    if surplus(margin) >= 0:
        return margin
    # Above the root: the term of the job at `lowest` (or 1 / zeta when lowest = 0) alone is
    # 2 kappa at lowest + mu0 / (2 kappa), which is then below `margin` (surplus(margin) < 0 needs
    # mu0 < kappa).
    return float(scipy.optimize.brentq(surplus, lowest + mu0 / (2.0 * data.kappa), margin, rtol=1e-12))


def _evaluate(data: ScaledProgram, y: FloatArray, s_hi: FloatArray, s_cap: FloatArray, z_lo: FloatArray,
              z_hi: FloatArray, prices: FloatArray, s_f: FloatArray, z_f: FloatArray, longest: _Longest,
              type_rows: _TypeRows, w: FloatArray | None) -> _Point:
    """Everything the iteration needs at one point; O(n S T), one pass over the entries.

    `w` (n, S) are the logarithms' multipliers (module docstring, Iterations; None: their values
    beta / U, the primal point alone)."""
    n, scenarios, rounds = data.progress.shape
    zeta, z_e = longest.zeta, longest.z_e
    u, dual_residual, running = np.empty((n, scenarios)), np.empty((n, rounds)), np.empty(n)
    primal_residual = np.empty((n, rounds))
    value, bounds_complementarity, bounds_residual, bounds_gap, log_residual = _kernels.evaluate_entries(
        data.progress, data.base, data.beta, data.spread, data.active, data.g, y, s_hi, z_lo, z_hi, prices,
        row_terms(data, z_f + z_e, type_rows.z), data.pace, u if w is None else w, w is not None, u, dual_residual,
        primal_residual, running)
    if w is None:
        w = data.beta[:, None] / u
    reduced_zeta = data.kappa - float(z_e.sum())  # the gradient of the Lagrangian in zeta, before z_zeta
    zeta_residual = reduced_zeta - longest.z_zeta if data.kappa else 0.0
    type_complementarity = type_rows.complementarity() if data.typed else 0.0
    complementarity = bounds_complementarity + float(s_cap @ prices + s_f @ z_f) + longest.complementarity() \
        + type_complementarity
    ftf_residual = np.where(data.constrained, running - data.floor - s_f, 0.0)
    merit = complementarity + bounds_residual + abs(zeta_residual) * max(zeta, data.zeta_max) \
        + float(np.abs(ftf_residual).sum()) + log_residual
    gap = gap_from_terms(data, bounds_gap, type_complementarity, (s_cap, prices), (s_f, ftf_residual, z_f),
                         (zeta, longest.s_e, z_e))
    return _Point(y, s_hi, s_cap, z_lo, z_hi, prices, s_f, ftf_residual, z_f, longest, type_rows, u,
                  value + data.kappa * zeta, dual_residual, zeta_residual, complementarity, merit, gap, w,
                  primal_residual, log_residual)


@dataclass(frozen=True)
class _Direction:
    dy: FloatArray
    dz_lo: FloatArray
    dz_hi: FloatArray
    ds_cap: FloatArray
    d_prices: FloatArray
    ds_f: FloatArray  # (n,) 0 off the constrained jobs
    dz_f: FloatArray
    longest: _Longest  # the step of zeta, s_e, z_e, z_zeta (0 without the efficiency term)
    type_rows: _TypeRows  # the step of the one-type rows' slacks and multipliers (0 without them)
    du: FloatArray  # (n, S) change of the utilities
    dw: FloatArray  # (n, S) step of the logarithms' multipliers
    largest: float  # largest step keeping every slack, multiplier and utility nonnegative
    sigma: float
    error: float = 0.0  # the largest relative residual of its solves that missed their tolerance (0: none did)


def _step(data: ScaledProgram, point: _Point, n_constraints: int, work: _Workspace) -> _Point | None:
    """The next iterate: a line search along Mehrotra's direction, else along the first-order one
    (None when neither decreases the merit).

    The second-order terms can point uphill far from the central path (a large affine step, e.g.
    from violated FTF rows); the first-order corrector descends for a small enough step. A
    direction whose solves missed their tolerance failed for lack of digits in the Newton system
    instead (the end of some degenerate solves), which the first-order one shares: no retry, unless
    no iterate is certified yet (the FTF rows still violated, where stopping leaves no schedule).
    Once the logarithms' rows are met within `_LOG_SETTLED`, the step starts from their values
    (`_primal`).
    """
    if point.log_residual > 0 and _settled(data, point):
        point = _primal(data, point)
    for second_order in (True, False):
        direction = _direction(data, point, n_constraints, work, second_order)
        trial = _line_search(data, point, direction) if direction is not None else None
        if trial is not None or (direction is not None and direction.error and np.isfinite(point.gap)):
            return trial
    return None


def _settled(data: ScaledProgram, point: _Point) -> bool:
    r"""Whether every logarithm's row of `point` is met within `_LOG_SETTLED`: :math:`|w U - \beta| \le
    \epsilon \beta` (then its multipliers may be replaced by their values :math:`\beta / U`, `_primal`)."""
    return bool((np.abs(point.w * point.u - data.beta[:, None]) <= _LOG_SETTLED * data.beta[:, None]).all())


def _primal(data: ScaledProgram, point: _Point) -> _Point:
    r"""`point` with the logarithms' multipliers at their values :math:`\beta / U` (the primal Newton step's).

    What `_evaluate` with ``w=None`` returns, bit for bit, without its pass over the entries: the
    value, the utilities, the complementarity and the gap do not depend on :math:`w`, the dual
    residual becomes `point`'s primal one, and only the merit's residual term is summed again
    (`vfm.planner._kernels.box_residual`, in `_kernels.evaluate_entries`' order)."""
    bounds_residual = _kernels.box_residual(data.active, point.primal_residual, point.y, point.s_hi)
    zeta_term = abs(point.zeta_residual) * max(point.longest.zeta, data.zeta_max)
    merit = point.complementarity + bounds_residual + zeta_term + float(np.abs(point.ftf_residual).sum()) + 0.0
    return replace(point, dual_residual=point.primal_residual, merit=merit, w=data.beta[:, None] / point.u,
                   log_residual=0.0, inexact=0.0)


def _exhausted(previous: _Point, point: _Point) -> bool:
    """Whether the step from `previous` to `point` shows the Newton systems out of digits: the
    direction it took missed its solves' tolerance (`_Direction.error`) and it shrank the
    certified gap to more than `_PROGRESS` of what it was.

    At the end of some degenerate solves (the gap within a few times the tolerance) such a step is
    followed by more that cost two to three times an ordinary one (every regularization, 20 to 27
    conjugate-gradient steps per solve) and shrink the gap no further: the slowest window of the
    900-job reproduction (562 jobs) spent 68 of its 140 ms on two. Where such a step still makes
    progress it shrinks the gap several times over, even at gaps of 1e-9 to 1e-7 (to 0.05 to 0.44
    of it in that reproduction's 201 windows), so the rule does not stop a solve that was progressing.
    """
    return point.inexact > 0 and not point.gap <= _PROGRESS * previous.gap


def _direction(data: ScaledProgram, point: _Point, n_constraints: int, work: _Workspace,
               second_order: bool = True) -> _Direction | None:
    """Mehrotra's predictor-corrector direction at `point` (None when it is not finite); without
    `second_order`, the corrector aims at sigma mu alone."""
    best = None
    # With one-type rows or low-rank blocks, first the capacity system's Gram matrix in pieces, then,
    # if its solves miss the tolerance, as one product (`_TypeFold.gram`, `_BlockFactor.gram`).
    attempts = [(_REGULARIZATIONS[0], False)] if data.typed or work.low_rank else []
    attempts += [(regularization, True) for regularization in _REGULARIZATIONS]
    for regularization, stacked in attempts:
        try:
            newton = _NewtonSystem.factor(data, point, point.complementarity / n_constraints, work, regularization,
                                          stacked)
        except np.linalg.LinAlgError:
            # The capacity system lost positive definiteness to rounding: regularize more.
            if regularization == _REGULARIZATIONS[-1] and best is None:
                raise
            continue
        direction = _mehrotra(data, point, newton, 1.0 if second_order else 0.0)
        if direction is not None and (best is None or direction.error < best.error):
            best = direction
        # The pieces' misses are theirs (`_TypeFold.gram`, `_BlockFactor.gram`): the stacked product
        # is tried after any.
        if best is not None and best.error <= (_USABLE_ERROR if stacked else 0.0):
            break
    # No regularization came within `_USABLE_ERROR` (the end of some degenerate solves, where the
    # Newton system has no digits left): the most accurate direction, not the last.
    return best


def _mehrotra(data: ScaledProgram, point: _Point, newton: _NewtonSystem,
              second_order: float) -> _Direction | None:
    """Predictor and corrector with one factorization; `second_order` (1 or 0) weighs the
    corrector's second-order terms."""
    y, s_hi, s_cap = point.y, point.s_hi, point.s_cap
    z_lo, z_hi, prices = point.z_lo, point.z_hi, point.prices
    mu = newton.mu
    predictor = newton.direction(0.0, 0.0, None, np.zeros_like(s_cap), np.zeros_like(point.s_f),
                                 np.zeros_like(point.s_f), 0.0, np.zeros_like(point.type_rows.s))
    alpha = min(predictor.largest, 1.0)
    step, type_step = predictor.longest, predictor.type_rows
    moved = float(((y + alpha * predictor.dy) * (z_lo + alpha * predictor.dz_lo)).sum()
                  + ((s_hi - alpha * predictor.dy) * (z_hi + alpha * predictor.dz_hi)).sum()
                  + (s_cap + alpha * predictor.ds_cap) @ (prices + alpha * predictor.d_prices)
                  + (point.s_f + alpha * predictor.ds_f) @ (point.z_f + alpha * predictor.dz_f)) \
        + point.longest.moved(step, alpha).complementarity() \
        + (point.type_rows.moved(type_step, alpha).complementarity() if data.typed else 0.0)
    sigma = centring(moved, point.complementarity)
    if _residual_dominated(point):
        # The step is cut short of 1 by the boundary (sigma ~ 0 sends complementarity to 0 at the full
        # step) and keeps (1 - alpha) of the dual residual: centring lets it reach the full step,
        # which removes the residual but for its nonlinear remainder.
        sigma = max(sigma, _RESIDUAL_SIGMA)
    w = second_order
    corrector = newton.direction(
        sigma * mu, w, predictor,
        sigma * mu - w * predictor.ds_cap * predictor.d_prices,
        np.where(data.constrained, sigma * mu - w * predictor.ds_f * predictor.dz_f, 0.0),
        np.where(data.efficient, sigma * mu - w * step.s_e * step.z_e, 0.0),
        sigma * mu - w * step.zeta * step.z_zeta if data.kappa else 0.0,
        np.where(data.shared, sigma * mu - w * type_step.s * type_step.z, 0.0) if data.typed else data.zeros,
        sigma,
    )
    if not (np.isfinite(corrector.largest) and np.isfinite(corrector.dy).all()):
        return None
    return replace(corrector, error=max(newton.stalled, default=0.0))


def _line_search(data: ScaledProgram, point: _Point, direction: _Direction) -> _Point | None:
    """The first of the steps 0.99 * largest, halved, ... whose merit decreases enough (None: none),
    carrying the direction's missed-solve residual (`_Point.inexact`, for `_exhausted`)."""
    alpha = min(1.0, STEP_TO_BOUNDARY * direction.largest)
    active = data.active
    # An inaccurate direction that descends only for a step a thousand times shorter than the
    # boundary allows is rounding, not progress (the end of some degenerate solves).
    for _ in range(_BACKTRACKS if not direction.error else _INACCURATE_BACKTRACKS):
        if alpha <= 0:
            break
        y = point.y + alpha * direction.dy
        trial = _evaluate(
            data, y, np.where(active, point.s_hi - alpha * direction.dy, 1.0), point.s_cap + alpha * direction.ds_cap,
            point.z_lo + alpha * direction.dz_lo, point.z_hi + alpha * direction.dz_hi,
            point.prices + alpha * direction.d_prices,
            point.s_f + alpha * direction.ds_f, point.z_f + alpha * direction.dz_f,
            point.longest.moved(direction.longest, alpha),
            point.type_rows.moved(direction.type_rows, alpha) if data.typed else point.type_rows,
            point.w + alpha * direction.dw,
        )
        if trial.merit <= (1.0 - _SUFFICIENT_DECREASE * alpha) * point.merit:
            return replace(trial, inexact=direction.error) if direction.error else trial
        alpha *= 0.5
    return None


@dataclass(frozen=True)
class _NewtonSystem:
    r"""One iteration's factored Newton system (module docstring, Linear algebra).

    With the efficiency term the unknowns are :math:`(\Delta y, \Delta\zeta)` and the system has an
    arrow shape: :math:`H_y` (the system without :math:`\zeta`, whose per-job rank-one terms include
    :math:`\rho^e_i = z^e_i / s^e_i`), a column :math:`c_{it} = \rho^e_i` on the active entries and
    the corner :math:`d = \sum_i \rho^e_i + z_\zeta / \zeta`. The preconditioner eliminates
    :math:`\Delta\zeta` through the scalar :math:`d - c^\top P_y^{-1} c`; the conjugate gradients
    run on the whole system applied exactly.
    """

    data: ScaledProgram
    point: _Point
    curvature: FloatArray  # (n, S, T): the Hessian of F is sum_s c_s c_s^T per job
    diagonal: FloatArray  # (n, T) z_lo / y + z_hi / (1 - y) + the tie-breaking term's curvature; 1 off `active`
    ratio: FloatArray  # (T,) lambda / s_cap
    root: FloatArray  # (n, T) (diagonal + regularization)^-1/2
    blocks: _BlockFactor  # K_i^-1 ~= D^-1/2 F_i^T F_i D^-1/2 (regularized)
    schur: tuple[FloatArray, bool]  # Cholesky factor of the (T, T) capacity system
    stalled: list[float]  # relative residuals of the solves that missed their tolerance (`solve`)
    coupling: FloatArray  # (n, T) the column c (0 without the efficiency term)
    corner: float  # d
    coupling_solved: FloatArray  # (n, T) P_y^-1 c
    corner_schur: float  # d - c^T P_y^-1 c, floored at z_zeta / zeta (the exact value is above it)
    fold: _TypeFold | None  # the one-type rows' curvature in the blocks' scaling (None without them)
    mu: float  # the mean complementarity at `point`: the centring target and the solves' tolerance (`cg_tolerance`)

    @classmethod
    def factor(cls, data: ScaledProgram, point: _Point, mu: float, work: _Workspace, regularization: float,
               stacked: bool = True) -> _NewtonSystem:
        """The system at `point` (mean complementarity `mu`), with `regularization` in the preconditioner;
        with one-type rows, its capacity Gram matrix as one product if `stacked`, else in pieces
        (`_TypeFold.gram`)."""
        active, g = data.active, data.g
        safe_y = np.where(active, point.y, 1.0)
        diagonal = np.where(active, point.z_lo / safe_y + point.z_hi / point.s_hi + data.spread[:, None], 1.0)
        longest = point.longest
        row_curvature = longest.z_e / longest.s_e
        # The FTF and efficiency rows of job i add (z_f / s_f + z_e / s_e) 1 1^T on its entries:
        # one more rank-one column (when the workspace has one).
        row = np.sqrt(point.z_f / point.s_f + row_curvature)
        curvature, root, scaled = work.curvature, np.empty_like(diagonal), work.scaled
        _kernels.scaled_columns(data.progress, point.w, point.u, row[:, None] * data.pace, diagonal, regularization,
                               curvature, root, scaled)
        fold = _TypeFold.of(data, point, root) if data.typed else None
        if fold is not None:
            np.multiply(root[:, None, :], fold.forward(curvature), out=scaled)  # V_i = L_i^-1 C_i
        # The rows' coefficients in the scaled blocks' terms (N_i p_i with one-type rows): only the
        # efficiency border's corner needs them.
        rows = None if not data.kappa else data.pace if fold is None else fold.forward(data.pace)
        blocks = _BlockFactor.of(scaled, work, data.progress.shape[1], root, rows)
        # sum_i G_i K_i^-1 G_i^T = sum_i (F_i X_i)^T (F_i X_i), X_i = diag(g_i D_i^-1/2) (with the
        # one-type rows D_i^-1/2 N_i diag(g_i)): the Gram matrix of the stacked (n T, T) products if
        # `stacked`, else in pieces (`_BlockFactor.gram`, `_TypeFold.gram`).
        if fold is None:
            schur = blocks.gram(g * root, work, stacked)
        else:
            schur = fold.gram(blocks, root, g, work, stacked)
        rounds = schur.shape[0]
        ratio = point.prices / point.s_cap
        schur[np.arange(rounds), np.arange(rounds)] += 1.0 / ratio
        system = cls(data, point, curvature, diagonal, ratio, root, blocks,
                     scipy.linalg.cho_factor(schur, lower=True, check_finite=True), [],
                     np.zeros_like(point.y), 0.0, np.zeros_like(point.y), 0.0, fold, mu)
        if not data.kappa:
            return system
        coupling = row_curvature[:, None] * data.pace
        corner = float(row_curvature.sum()) + longest.z_zeta / longest.zeta
        # d - c^T P^-1 c = (d - c^T K^-1 c) + w^T M^-1 w (Woodbury over the capacity rows, w the loads
        # of K^-1 c, M the capacity system): two sums of positive terms. The difference as written
        # cancels at the end of a solve (d reaches 1e7 where the value is 1e-3), and a preconditioner
        # with a wrong corner costs the conjugate gradients tens of steps.
        solved, loads, correction = system._woodbury(coupling)
        assert rows is not None  # set whenever kappa is
        corner_schur = _corner_without_capacity(data, point, work, root, blocks, rows) + float(loads @ correction)
        return replace(system, coupling=coupling, corner=corner, coupling_solved=solved,
                       corner_schur=max(corner_schur, longest.z_zeta / longest.zeta))

    def _precondition_y(self, rhs: FloatArray) -> FloatArray:
        """The regularized Woodbury inverse of H_y applied to `rhs`, shape (n, T)."""
        return self._woodbury(rhs)[0]

    def _woodbury(self, rhs: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        r"""`_precondition_y` of `rhs` with its intermediate terms: :math:`P_y^{-1} v`, the loads
        :math:`w = \sum_i g_i \circ K_i^{-1} v_i` and the capacity correction :math:`M^{-1} w`."""
        g, fold = self.data.g, self.fold
        if fold is None:
            solution, loads = self.blocks.inverse(self.root, rhs, g)
            correction = scipy.linalg.cho_solve(self.schur, loads, check_finite=False)
            self.blocks.subtract_inverse(self.root, g, correction, solution)
            return solution, loads, correction
        # K_i^-1 = N_i^T D_i^-1/2 F_i^T F_i D_i^-1/2 N_i (`_TypeFold`).
        solution = fold.backward(self.blocks.inverse(self.root, fold.forward(rhs), g)[0])
        loads = np.einsum("nt,nt->t", g, solution)
        correction = scipy.linalg.cho_solve(self.schur, loads, check_finite=False)
        solution -= fold.backward(self.blocks.inverse(self.root, fold.forward(g * correction[None, :]), g)[0])
        return solution, loads, correction

    def _apply_y(self, vector: FloatArray, out: FloatArray) -> FloatArray:
        """H_y vector from its definition, shape (n, T), written to `out`."""
        g = self.data.g
        prices_term = self.ratio * np.einsum("nt,nt->t", g, vector)
        _kernels.hessian_times(self.curvature, self.diagonal, g, prices_term, vector, out)
        if self.fold is not None:  # the one-type rows' c_ir e_r e_r^T
            type_rows, active = self.point.type_rows, self.fold.active
            _add_round_sums(vector, active, type_rows.z / type_rows.s, active, self.data.good_round, out)
        return out

    def precondition(self, rhs: FloatArray) -> FloatArray:
        """The preconditioner applied to `rhs`: shape (n, T), or (n T + 1,) with the efficiency term."""
        if not self.data.kappa:
            return self._precondition_y(rhs)
        rhs_y, rhs_zeta = self._split(rhs)
        first = self._precondition_y(rhs_y)
        d_zeta = (rhs_zeta - float(np.vdot(self.coupling, first))) / self.corner_schur
        out = np.empty_like(rhs)
        np.subtract(first, d_zeta * self.coupling_solved, out=self._split(out)[0])
        out[-1] = d_zeta
        return out

    def apply(self, vector: FloatArray) -> FloatArray:
        """The Newton matrix times `vector` from its definition (shapes as in `precondition`)."""
        if not self.data.kappa:
            return self._apply_y(vector, np.empty_like(vector))
        dy, d_zeta = self._split(vector)
        out = np.empty_like(vector)
        out_y = self._apply_y(dy, self._split(out)[0])
        out_y += d_zeta * self.coupling
        out[-1] = float(np.vdot(self.coupling, dy)) + self.corner * d_zeta
        return out

    def _split(self, vector: FloatArray) -> tuple[FloatArray, float]:
        return vector[:-1].reshape(self.point.y.shape), float(vector[-1])

    def solve(self, rhs: FloatArray) -> FloatArray:
        """The Newton system's solution by conjugate gradients preconditioned with the regularized
        Woodbury inverse."""
        scale = float(np.abs(rhs).max())
        tolerance = cg_tolerance(self.mu, scale)
        solution, error = preconditioned_cg(self.apply, self.precondition, rhs, tolerance, CG_STEPS, _PATIENCE)
        # Some slack over CG's own (recursive) test. Missing a tolerance tighter than `CG_TOLERANCE`
        # (near the optimum) is no stall: the direction is as accurate as a fixed CG_TOLERANCE makes it.
        if not error <= 10 * max(tolerance, CG_TOLERANCE) * scale:
            self.stalled.append(error / scale)
        return solution

    def direction(self, sigma_mu: float, second_order: float, predictor: _Direction | None, target_cap: FloatArray,
                  target_f: FloatArray, target_e: FloatArray, target_zeta: float, target_type: FloatArray,
                  sigma: float = 0.0) -> _Direction:
        r"""The Newton step towards complementarity products `target_*` (the same residuals otherwise).

        The bounds' targets are :math:`\sigma\mu - w\,\Delta y \Delta z^{lo}` and
        :math:`\sigma\mu + w\,\Delta y \Delta z^{hi}` with `second_order` :math:`w` and the
        `predictor`'s steps (none: the affine step, `sigma_mu` and `second_order` 0)."""
        data, point = self.data, self.point
        active, g = data.active, data.g
        y, s_hi, s_cap = point.y, point.s_hi, point.s_cap
        z_lo, z_hi, prices = point.z_lo, point.z_hi, point.prices
        constrained, s_f, z_f = data.constrained, point.s_f, point.z_f
        longest = point.longest
        efficient, s_e, z_e = data.efficient, longest.s_e, longest.z_e
        efficiency_rows = np.where(efficient, target_e / s_e - z_e, 0.0)
        # The FTF rows' slack step closes their residual r: ds_f = sum_t dy + r.
        residual = point.ftf_residual
        rows = np.where(constrained, (target_f - z_f * residual) / s_f - z_f, 0.0) + efficiency_rows
        # A one-type row's multiplier step is (t - z ds) / s - z with ds = -sum_{t in r} dy.
        type_rows = point.type_rows
        rows = row_terms(data, rows,
                          np.where(data.shared, target_type / type_rows.s - type_rows.z, 0.0) if data.typed else None)
        aff = (predictor.dy, predictor.dz_lo, predictor.dz_hi) if predictor is not None else (data.zeros,) * 3
        rhs = np.empty_like(y)
        _kernels.newton_rhs(active, point.primal_residual, y, s_hi, z_lo, z_hi, g, target_cap / s_cap - prices, rows,
                           sigma_mu, second_order, *aff, rhs)
        d_zeta = 0.0
        if data.kappa:
            rhs_zeta = -point.zeta_residual + float(efficiency_rows.sum()) + target_zeta / longest.zeta - longest.z_zeta
            dy, d_zeta = self._split(self.solve(np.append(rhs, rhs_zeta)))
            dy = dy.copy()  # a view of the solution with d_zeta: the kernel below writes it
        else:
            dy = self.solve(rhs)
        dz_lo, dz_hi, loads, running = np.empty_like(y), np.empty_like(y), np.empty_like(s_cap), np.empty_like(s_f)
        rate = _kernels.newton_back(active, y, s_hi, z_lo, z_hi, g, sigma_mu, second_order, *aff, data.pace, dy,
                                   dz_lo, dz_hi, loads, running)
        ds_cap = -loads
        d_prices = (target_cap - prices * ds_cap) / s_cap - prices
        ds_f = np.where(constrained, running + residual, 0.0)
        dz_f = np.where(constrained, (target_f - z_f * ds_f) / s_f - z_f, 0.0)
        ds_e = np.where(efficient, running + d_zeta, 0.0)
        dz_e = np.where(efficient, (target_e - z_e * ds_e) / s_e - z_e, 0.0)
        dz_zeta = (target_zeta - longest.z_zeta * d_zeta) / longest.zeta - longest.z_zeta if data.kappa else 0.0
        if data.typed:
            ds_o = np.where(data.shared, -(dy @ data.rounds_of_goods), 0.0)
            dz_o = np.where(data.shared, (target_type - type_rows.z * ds_o) / type_rows.s - type_rows.z, 0.0)
            bounded: tuple[FloatArray, ...] = (type_rows.s, type_rows.z)
            steps: tuple[FloatArray, ...] = (ds_o, dz_o)
        else:  # no one-type rows: their (n, R = T) step is 0 and never limits the step length
            ds_o = dz_o = data.zeros
            bounded = steps = ()
        du = np.einsum("nst,nt->ns", data.progress, dy)
        # The logarithms' rows w U = beta, linearized: their multipliers' step.
        w, u = point.w, point.u
        dw = (data.beta[:, None] - w * (u + du)) / u
        # The entries' rate from the kernel, the rest (O(n + T), and the one-type rows) here.
        largest = min(1.0 / rate if rate > 0 else np.inf, largest_step(
            (s_cap, prices, u, w, s_f, z_f, s_e, z_e, np.array([longest.zeta, longest.z_zeta]), *bounded),
            (ds_cap, d_prices, du, dw, ds_f, dz_f, ds_e, dz_e, np.array([d_zeta, dz_zeta]), *steps)))
        return _Direction(dy, dz_lo, dz_hi, ds_cap, d_prices, ds_f, dz_f, _Longest(d_zeta, ds_e, dz_e, dz_zeta),
                          _TypeRows(ds_o, dz_o), du, dw, largest, sigma)


def _corner_without_capacity(data: ScaledProgram, point: _Point, work: _Workspace, root: FloatArray,
                             blocks: _BlockFactor, rows: FloatArray) -> float:
    r"""The efficiency border's Schur complement without the capacity coupling, term by term.

    Job i's block is :math:`K_{0,i} + \rho_i \mathbf 1 \mathbf 1^\top` (:math:`\rho = \rho^f + \rho^e`,
    the FTF and efficiency rows' curvatures) and its border column :math:`\rho^e_i \mathbf 1`, so its
    part of :math:`d - c^\top K^{-1} c` is
    :math:`\rho^e_i - (\rho^e_i)^2 a_i / (1 + \rho_i a_i) = \rho^e_i (1 + \rho^f_i a_i) / (1 + \rho_i a_i)`,
    :math:`a_i = \mathbf 1^\top K_{0,i}^{-1} \mathbf 1` (:math:`p_i^\top K_{0,i}^{-1} p_i` over GPU types, the
    column :math:`\rho p_i`; from the dense factorization, `_BlockFactor.row_free`, else
    `_kernels.row_free_loads`): positive, with no difference of large numbers."""
    longest = point.longest
    rho_f = np.where(data.constrained, point.z_f / point.s_f, 0.0)
    rho_e = np.where(data.efficient, longest.z_e / longest.s_e, 0.0)
    # a_i = |F_i D_i^-1/2 v_i|^2 with `rows` v (p_i = 1 on the active entries on one GPU type; N_i p_i with
    # the one-type rows, `_TypeFold`).
    loads = blocks.row_free
    if loads is None:
        loads = np.empty(rho_f.shape)
        _kernels.row_free_loads(work.scaled, data.progress.shape[1], root, rows, loads)
    if not np.isfinite(loads).all():
        raise np.linalg.LinAlgError("a job's Newton block is not numerically positive definite")
    return float((rho_e * (1.0 + rho_f * loads) / (1.0 + (rho_f + rho_e) * loads)).sum()) \
        + longest.z_zeta / longest.zeta


@dataclass(frozen=True)
class _TypeFold:
    r"""The one-type rows' curvature folded into the scaling of the Newton blocks.

    Without the scenarios' and the FTF/efficiency rows' columns, job i's block is
    :math:`A = D + \sum_r c_r e_r e_r^\top` (:math:`c_r = z^o_r / s^o_r`, :math:`e_r` the indicator of
    its active goods in round r): diagonal plus one rank-one term per round, on disjoint goods. Its
    factor is closed-form: :math:`D^{-1/2} A D^{-1/2} = I + \sum_r c_r u_r u_r^\top`,
    :math:`u_r = D^{-1/2} e_r`, has the symmetric root :math:`Q = I + \sum_r \gamma_r u_r u_r^\top`, and
    :math:`A = L L^\top` with

    .. math:: L^{-1} = Q^{-1} D^{-1/2} = D^{-1/2} N, \qquad
              N = I + \sum_r \alpha_r e_r (D^{-1} e_r)^\top, \qquad
              \alpha_r = \frac{(1 + c_r \sigma_r)^{-1/2} - 1}{\sigma_r}, \quad \sigma_r = e_r^\top D^{-1} e_r.

    The block is then :math:`K = L (I + V V^\top) L^\top` with :math:`V = L^{-1} C` (`C` the
    curvature columns), factored as on one GPU type (`_BlockFactor`), and
    :math:`K^{-1} = N^\top D^{-1/2} F^\top F D^{-1/2} N`: `forward` applies :math:`N`, `backward`
    :math:`N^\top`. :math:`\alpha_r \in (-1/\sigma_r, 0]` is computed as `expm1` of a `log1p`, so that
    it keeps its digits when :math:`c_r \sigma_r` is small. Like the symmetric root of
    `_BlockFactor`, :math:`Q^{-1}` keeps its digits where it is small: on a round of three goods
    with :math:`d \sim 10^{-8}` (interior entries) and :math:`c = 10^8` (a binding row),
    :math:`K^{-1}` is exact to 1e-15 entrywise (against exact rational arithmetic; a basis in which
    the round's smallest curvature is the rank-one term was no more accurate, and twice as slow).
    """

    alpha: FloatArray  # (n, R) alpha_r (0 where the job has no one-type row)
    inverse_diagonal: FloatArray  # (n, T) 1 / d_t on the active entries, 0 elsewhere
    active: FloatArray  # (n, T) 1 on the active entries, 0 elsewhere
    good_round: np.ndarray  # (T,)
    members: np.ndarray  # (R, K) `ScaledProgram.members`

    @classmethod
    def of(cls, data: ScaledProgram, point: _Point, root: FloatArray) -> _TypeFold:
        """The fold at `point`, `root` the bounds' (regularized) diagonal to the power -1/2."""
        inverse_diagonal = np.where(data.active, root * root, 0.0)
        sigma = inverse_diagonal @ data.rounds_of_goods
        type_rows = point.type_rows
        curvature = type_rows.z / type_rows.s * sigma
        alpha = np.where(data.shared, np.expm1(-0.5 * np.log1p(curvature)) / np.where(data.shared, sigma, 1.0), 0.0)
        return cls(alpha, inverse_diagonal, data.active.astype(np.float64), data.good_round, data.members)

    def forward(self, vector: FloatArray) -> FloatArray:
        """:math:`N v` for every job, `vector` of shape (n, T) or (n, k, T) (`k` vectors per job)."""
        return _add_round_sums(vector, self.inverse_diagonal, self.alpha, self.active, self.good_round)

    def backward(self, vector: FloatArray) -> FloatArray:
        """:math:`N^\top v` for every job, `vector` of shape (n, T)."""
        return _add_round_sums(vector, self.active, self.alpha, self.inverse_diagonal, self.good_round)

    def gram(self, blocks: _BlockFactor, root: FloatArray, g: FloatArray, work: _Workspace,
             stacked: bool) -> FloatArray:
        r""":math:`\sum_i X_i^\top F_i^\top F_i X_i`, :math:`X_i = D_i^{-1/2} N_i \operatorname{diag}(g_i)`,
        shape (T, T): the capacity system's matrix without the prices' term.

        `stacked` (and always with the dense factor): the Gram matrix of the stacked products
        :math:`F_i X_i` (`_BlockFactor.times_diagonal` plus `add_rank_one_terms`), :math:`O(n T^3)`,
        positive semidefinite to rounding. Else, with the low-rank factor, in pieces
        (`_kernels.typed_gram`): the blocks between rounds are low-rank, :math:`O(n S' T^2)` as one
        product, and each round's own (K, K) block a sum of squares: at 874 jobs on three types
        (T = 60) 2.1 ms instead of 16.1 ms (medians over one solve's 17 iterations). The pieces are
        each accurate to rounding but not consistent to rounding: at the end of some solves, where the
        system's smallest eigenvalue is 1e-16 of its largest, the blocks between rounds (exact formulas, not
        Gram products of the computed factors) leave the preconditioner wrong and the conjugate gradients
        stall (a 6-job window stopped at 5.3e-9 instead of 1e-9); `_direction` then factors the system again
        stacked."""
        if stacked or blocks.lower_inverse is not None:
            weighted = blocks.times_diagonal(g * root, out=work.weighted)
            self.add_rank_one_terms(blocks, root, g, weighted)
            weighted = weighted.reshape(-1, root.shape[1])
            return weighted.T @ weighted
        assert blocks.columns is not None and blocks.shrink is not None
        members = self.members
        scaled_q = np.empty_like(blocks.columns)
        diagonal_blocks = np.zeros((members.shape[0], members.shape[1], members.shape[1]))
        _kernels.typed_gram(blocks.columns, blocks.shrink, g * root, root * self._forward_weights,
                            self.inverse_diagonal * g, self.good_round, members, scaled_q, diagonal_blocks)
        rows = scaled_q.reshape(-1, root.shape[1])
        gram = -(rows.T @ rows)
        r, row, column = np.nonzero((members >= 0)[:, :, None] & (members >= 0)[:, None, :])
        gram[members[r, row], members[r, column]] = diagonal_blocks[r, row, column]
        return gram

    def add_rank_one_terms(self, blocks: _BlockFactor, root: FloatArray, g: FloatArray, out: FloatArray) -> None:
        r"""`out[i]` += the rank-one part of :math:`F_i X_i`, :math:`X_i = D_i^{-1/2} N_i \operatorname{diag}(g_i)
        = \operatorname{diag}(g_i D_i^{-1/2}) + \sum_r a_r b_r^\top`, :math:`a_r = \alpha_r D^{-1/2} e_r`,
        :math:`b_r = D^{-1} e_r \circ g_i` (`out` holds :math:`F_i` times the diagonal part)."""
        columns = (root * self._forward_weights)[:, :, None] \
            * (self.good_round[:, None] == np.arange(self.alpha.shape[1])[None, :])[None, :, :]
        _kernels.add_group_outer(blocks.times(columns), self.good_round, self.inverse_diagonal * g, out)

    @property
    def _forward_weights(self) -> FloatArray:
        """alpha_{r(t)} on the active entries, 0 elsewhere, shape (n, T)."""
        return self.alpha[:, self.good_round] * self.active


def _add_round_sums(vector: FloatArray, sum_weights: FloatArray, round_weights: FloatArray, add_weights: FloatArray,
                    good_round: np.ndarray, out: FloatArray | None = None) -> FloatArray:
    """`_kernels.add_round_sums` for `vector` of shape (n, T) or (n, k, T), onto a copy of `vector`
    unless `out` (the same shape) is given."""
    if out is None:
        out = vector.copy()
    n, goods = vector.shape[0], vector.shape[-1]
    _kernels.add_round_sums(np.ascontiguousarray(vector).reshape(n, -1, goods), sum_weights, round_weights,
                            add_weights, good_round, out.reshape(n, -1, goods))
    return out


#: Up to this many columns per job (scenarios plus the FTF/efficiency column) the blocks are
#: factored in low-rank form (`_BlockFactor.low_rank`), above it as dense (T, T) Cholesky factors.
#: The low-rank form's (S', S') eigendecompositions cost ~0.5 ms at 900 jobs and S' = 2, but 26 ms
#: at S' = 17, where the dense form costs 7 ms.
_LOW_RANK_COLUMNS = 4
#: The largest sigma^2 of a job's low-rank block whose capacity Gram term is formed as the difference
#: I - P diag(1 / (1 + sigma^2)) P^T (`_BlockFactor.gram`): relative error at most
#: 2 eps T (1 + sigma^2), 9e-11 at T = 20 rounds (eps 2.2e-16), below the conjugate gradients'
#: `CG_TOLERANCE`.
_GRAM_CURVATURE = 1e4
#: ... and whatever the columns, when the window has more than this many rounds per column: the
#: dense form's O(T^3) per job then dominates: on a program of 118 jobs, S = 8, T = 153, a solve
#: takes 0.7 s in low-rank form and 4.0 s in dense form.
_LOW_RANK_ROUNDS_PER_COLUMN = 8


def _low_rank(columns: int, rounds: int) -> bool:
    """Whether blocks of `columns` low-rank columns over `rounds` rounds are factored in low-rank form."""
    return columns <= _LOW_RANK_COLUMNS or rounds > _LOW_RANK_ROUNDS_PER_COLUMN * columns


@dataclass(frozen=True)
class _BlockFactor:
    r"""A factor :math:`F_i` with :math:`F_i^\top F_i = (I + V_i V_i^\top)^{-1}` for every job at once.

    Dense: :math:`F_i = L_i^{-1}`, :math:`L_i` the Cholesky factor of the (T, T) block,
    :math:`O(n T^3)`. Low-rank: the symmetric square root
    :math:`F_i = I - P_i \operatorname{diag}(h_i) P_i^\top` with :math:`V_i^\top V_i = U \Sigma^2 U^\top`,
    :math:`P_i = V_i U`, :math:`h = 1 / (\sqrt{1 + \sigma^2} (1 + \sqrt{1 + \sigma^2}))`:
    :math:`O(n T S'^2)` plus (S', S') eigendecompositions. Either is accurate to rounding in the
    directions where :math:`(I + V V^\top)^{-1}` is small: a difference such as
    :math:`I - V (I + V^\top V)^{-1} V^\top` is not (it loses :math:`\sigma^2 \epsilon`, and
    with it the capacity system once the prices' curvature :math:`\lambda / s_c` reaches 1e12).
    """

    lower_inverse: FloatArray | None  # (n, T, T) L_i^-1 (dense form)
    columns: FloatArray | None  # (n, S', T) P_i^T (low-rank form)
    shrink: FloatArray | None  # (n, S') h_i (low-rank form)
    row_free: FloatArray | None  # (n,) a_i of `_corner_without_capacity` (dense form)

    @classmethod
    def of(cls, scaled: FloatArray, work: _Workspace, scenarios: int, root: FloatArray,
           rows: FloatArray | None) -> _BlockFactor:
        r"""The factor of the blocks :math:`I + V_i V_i^\top`, `scaled` holding :math:`V_i^\top`, shape
        (n, S', T), its first `scenarios` columns the scenarios' (given the rows' coefficients `rows`
        (n, T), the dense form computes `row_free` on the way, from `root` :math:`D^{-1/2}`).

        Raises `numpy.linalg.LinAlgError` when a block is not numerically positive definite."""
        if _low_rank(scaled.shape[1], scaled.shape[2]):
            _kernels.low_rank_factor(scaled, work.columns, work.shrink)
            return cls(None, work.columns, work.shrink, None)
        row_free = np.empty(0 if rows is None else scaled.shape[0])
        if not _kernels.dense_factor(scaled, scenarios, root, root if rows is None else rows, work.lower_inverse,
                                     row_free):
            raise np.linalg.LinAlgError("a job's Newton block is not numerically positive definite")
        return cls(work.lower_inverse, None, None, None if rows is None else row_free)

    def inverse(self, root: FloatArray, vector: FloatArray, g: FloatArray) -> tuple[FloatArray, FloatArray]:
        r""":math:`K_i^{-1} v_i = D_i^{-1/2} F_i^\top F_i D_i^{-1/2} v_i` for every job, shape (n, T), and
        its capacity load :math:`\sum_i g_i \circ K_i^{-1} v_i`, shape (T,); `root` is :math:`D^{-1/2}`."""
        out, loads = np.empty_like(vector), np.empty(vector.shape[1])
        if self.lower_inverse is not None:
            _kernels.dense_inverse_blocks(root, self.lower_inverse, vector, g, out, loads)
        else:
            assert self.columns is not None and self.shrink is not None
            _kernels.inverse_blocks(root, self.columns, self.shrink, vector, g, out, loads)
        return out, loads

    def subtract_inverse(self, root: FloatArray, g: FloatArray, correction: FloatArray, out: FloatArray) -> None:
        r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job (`correction` :math:`c`, shape (T,))."""
        if self.lower_inverse is not None:
            _kernels.dense_subtract_inverse_blocks(root, self.lower_inverse, g, correction, out)
        else:
            assert self.columns is not None and self.shrink is not None
            _kernels.subtract_inverse_blocks(root, self.columns, self.shrink, g, correction, out)

    def times(self, matrices: FloatArray) -> FloatArray:
        r""":math:`F_i M_i` for every job, `matrices` :math:`M` of shape (n, T, m)."""
        if self.lower_inverse is not None:
            return np.matmul(self.lower_inverse, matrices)
        assert self.columns is not None and self.shrink is not None
        along = self.shrink[:, :, None] * np.matmul(self.columns, matrices)
        return matrices - np.matmul(self.columns.transpose(0, 2, 1), along)

    def gram(self, x: FloatArray, work: _Workspace, stacked: bool) -> FloatArray:
        r""":math:`\sum_i (F_i X_i)^\top (F_i X_i)`, :math:`X_i = \operatorname{diag}(x_i)`, shape (T, T):
        the capacity system's matrix without the prices' term, `x` of shape (n, T).

        If `stacked`, with the dense form, and for the low-rank form's curved jobs
        (`_GRAM_CURVATURE`): the Gram matrix of the stacked products :math:`F_i X_i`,
        :math:`O(n T^3)`, positive semidefinite to rounding. The low-rank form's other jobs:
        :math:`F_i^2 = I - P_i \operatorname{diag}(1 / (1 + \sigma^2)) P_i^\top`, so their terms are
        :math:`\operatorname{diag}(\sum_i x_i^2)` minus one Gram matrix of the stacked (S', T) rows
        :math:`(1 + \sigma^2)^{-1/2} P_i^\top X_i`, :math:`O(n S' T^2)`.
        That difference errs by at most :math:`2 \epsilon |x_a x_b|` in entry (a, b), so by at most
        :math:`2 \epsilon T \|X v\|^2` in any direction :math:`v`, where the term is at least
        :math:`\|X v\|^2 / (1 + \sigma^2_{max})`: a relative error of at most
        :math:`2 \epsilon T (1 + \sigma^2_{max})`. Most jobs are that flat until the last iterations
        (at the 10,000-job window of `benchmarks.plan`, all but at most 12 in the first 13 of its
        25 iterations, half of them in the last), where the stacked product and the blocks it
        multiplies took a quarter of an iteration. Not consistent to rounding with the block
        solves, like `_TypeFold.gram`'s pieces: when the solves miss their tolerance, `_direction`
        factors again `stacked` (0.7 to 2.6 stacked factorizations per 100 in pieces on the four
        reproductions' windows).
        """
        if stacked or self.lower_inverse is not None:
            weighted = self.times_diagonal(x, out=work.weighted).reshape(-1, x.shape[1])
            return weighted.T @ weighted
        assert self.columns is not None and self.shrink is not None
        rounds = x.shape[1]
        diagonal = np.empty(rounds)
        curved = _kernels.gram_pieces(self.columns, self.shrink, x, _GRAM_CURVATURE, work.rows, work.weighted, diagonal)
        weighted = work.weighted[:curved].reshape(-1, rounds)
        rows = work.rows.reshape(-1, rounds)
        gram = weighted.T @ weighted - rows.T @ rows
        gram[np.diag_indices_from(gram)] += diagonal
        return gram

    def times_diagonal(self, x: FloatArray, out: FloatArray) -> FloatArray:
        r""":math:`F_i \operatorname{diag}(x_i)` for every job, shape (n, T, T), written to `out`."""
        if self.lower_inverse is None:
            assert self.columns is not None and self.shrink is not None
            _kernels.times_diagonal(self.columns, self.shrink, x, out)
            return out
        return np.multiply(self.lower_inverse, x[:, None, :], out=out)
