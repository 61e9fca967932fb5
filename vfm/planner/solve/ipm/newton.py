r"""One iteration's Newton system of the interior point (`vfm.planner.solve.ipm.method`'s module docstring,
Linear algebra): its factored preconditioner, its product from the definition, its solves by
preconditioned conjugate gradients, and the step (`Direction`) towards given complementarity
products (`Targets`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from vfm._numerics.interior_point import CG_STEPS, CG_TOLERANCE, cg_tolerance
from vfm._numerics.linalg import cholesky, cholesky_solve, preconditioned_cg
from vfm._validation import FloatArray
from vfm.planner._kernels import entries, low_rank, one_type_rows
from vfm.planner.solve.ipm.blocks import (
    BlockFactor,
    TypeFold,
    Workspace,
    add_round_sums,
    low_rank_system,
    typed_low_rank_system,
)
from vfm.planner.solve.ipm.point import Longest, Point, TypeRows
from vfm.planner.solve.scaled_program import ScaledProgram

#: The conjugate gradients stop when the residual has not halved for this many steps
#: (`vfm._numerics.linalg.preconditioned_cg`): those solves end at the same residual after 25 steps.
_PATIENCE = 4


@dataclass(frozen=True)
class Direction:
    """A Newton step: the change of every variable, the largest step length that keeps them feasible,
    and the centring it aimed at."""

    dy: FloatArray
    dz_lo: FloatArray
    dz_hi: FloatArray
    ds_cap: FloatArray
    d_prices: FloatArray
    ds_f: FloatArray  # (n,) 0 off the constrained jobs
    dz_f: FloatArray
    longest: Longest  # the step of zeta, s_e, z_e, z_zeta (0 without the efficiency term)
    type_rows: TypeRows  # the step of the one-type rows' slacks and multipliers (0 without them)
    du: FloatArray  # (n, S) change of the utilities
    dw: FloatArray  # (n, S) step of the logarithms' multipliers
    largest: float  # largest step keeping every slack, multiplier and utility nonnegative
    sigma: float
    # The largest relative residual of the solves with its factorization that missed their tolerance
    # (a corrector's include its predictor's; 0: none did).
    error: float = 0.0


class Targets(NamedTuple):
    """The complementarity products a Newton step aims at, row family by row family
    (`NewtonSystem.direction`)."""

    capacity: FloatArray  # (T,) the capacity rows'
    ftf: FloatArray  # (n,) the FTF rows'; 0 off the constrained jobs
    efficiency: FloatArray  # (n,) the efficiency rows'; 0 off the efficient jobs
    zeta: float  # zeta >= 0's; 0 without the efficiency term
    type_rows: FloatArray  # (n, R) the one-type rows'; 0 off `ScaledProgram.shared`


@dataclass(frozen=True)
class NewtonSystem:
    r"""One iteration's factored Newton system (`vfm.planner.solve.ipm.method`'s module docstring, Linear algebra).

    With the efficiency term the unknowns are :math:`(\Delta y, \Delta\zeta)` and the system has an
    arrow shape: :math:`H_y` (the system without :math:`\zeta`, whose per-job rank-one terms include
    :math:`\rho^e_i = z^e_i / s^e_i`), a column :math:`c_{it} = \rho^e_i` on the active entries and
    the corner :math:`d = \sum_i \rho^e_i + z_\zeta / \zeta`. The preconditioner eliminates
    :math:`\Delta\zeta` through the scalar :math:`d - c^\top P_y^{-1} c`; the conjugate gradients
    run on the whole system applied exactly.
    """

    data: ScaledProgram
    point: Point
    curvature: FloatArray  # (n, S, T): the Hessian of F is sum_s c_s c_s^T per job
    diagonal: FloatArray  # (n, T) z_lo / y + z_hi / (1 - y) + the tie-breaking term's curvature; 1 off `active`
    ratio: FloatArray  # (T,) lambda / s_cap
    root: FloatArray  # (n, T) (diagonal + regularization)^-1/2
    blocks: BlockFactor  # K_i^-1 ~= D^-1/2 F_i^T F_i D^-1/2 (regularized)
    schur: FloatArray  # Cholesky factor of the (T, T) capacity system (`vfm._numerics.linalg.cholesky`)
    stalled: list[float]  # relative residuals of the solves that missed their tolerance (`solve`)
    coupling: FloatArray  # (n, T) the column c (0 without the efficiency term)
    corner: float  # d
    coupling_solved: FloatArray  # (n, T) P_y^-1 c
    corner_schur: float  # d - c^T P_y^-1 c, floored at z_zeta / zeta (the exact value is above it)
    fold: TypeFold | None  # the one-type rows' curvature in the blocks' scaling (None without them)
    mu: float  # the mean complementarity at `point`: the centring target and the solves' tolerance (`cg_tolerance`)

    @classmethod
    def factor(cls, data: ScaledProgram, point: Point, mu: float, work: Workspace, regularization: float,
               stacked: bool = True) -> NewtonSystem:
        """The system at `point` (mean complementarity `mu`), with `regularization` in the preconditioner;
        with one-type rows, its capacity Gram matrix as one product if `stacked`, else in pieces
        (`TypeFold.gram`)."""
        longest = point.longest
        row_curvature = longest.z_e / longest.s_e
        # The FTF and efficiency rows of job i add (z_f / s_f + z_e / s_e) 1 1^T on its entries:
        # one more rank-one column (when the workspace has one).
        row = np.sqrt(point.z_f / point.s_f + row_curvature)
        # On one GPU type, low-rank blocks and the Gram matrix in pieces: every per-job step in one pass.
        if work.low_rank and not data.typed and not stacked:
            diagonal, root, blocks, schur = low_rank_system(data, point, row, regularization, work)
            fold, rows = None, data.pace if data.kappa else None
        elif work.low_rank and not stacked:  # over GPU types, likewise (the Gram matrix in pieces)
            diagonal, root, blocks, schur, typed_fold = typed_low_rank_system(data, point, row, regularization, work)
            fold, rows = typed_fold, typed_fold.forward(data.pace) if data.kappa else None
        else:
            diagonal, root, blocks, schur, fold, rows = _blocks(data, point, row, regularization, work, stacked)
        curvature = work.curvature
        rounds = schur.shape[0]
        ratio = point.prices / point.s_cap
        schur.flat[::rounds + 1] += 1.0 / ratio
        system = cls(data, point, curvature, diagonal, ratio, root, blocks,
                     cholesky(schur), [],
                     data.zeros, 0.0, data.zeros, 0.0, fold, mu)  # the border's terms: read only with kappa
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
        return cls(data, point, curvature, diagonal, ratio, root, blocks, system.schur, system.stalled, coupling,
                   corner, solved, max(corner_schur, longest.z_zeta / longest.zeta), fold, mu)

    def _precondition_y(self, rhs: FloatArray) -> FloatArray:
        """The regularized Woodbury inverse of H_y applied to `rhs`, shape (n, T)."""
        return self._woodbury(rhs)[0]

    def _woodbury(self, rhs: FloatArray) -> tuple[FloatArray, FloatArray, FloatArray]:
        r"""`_precondition_y` of `rhs` with its intermediate terms: :math:`P_y^{-1} v`, the loads
        :math:`w = \sum_i g_i \circ K_i^{-1} v_i` and the capacity correction :math:`M^{-1} w`."""
        g, fold = self.data.g, self.fold
        if fold is None:
            solution, loads = self.blocks.inverse(self.root, rhs, g)
            correction = cholesky_solve(self.schur, loads)
            self.blocks.subtract_inverse(self.root, g, correction, solution)
            return solution, loads, correction
        # K_i^-1 = N_i^T D_i^-1/2 F_i^T F_i D_i^-1/2 N_i (`TypeFold`): with the low-rank factor, the fold, the
        # block solve and the unfold in one pass per term.
        if self.blocks.columns is not None:
            solution, loads = fold.inverse(self.blocks, self.root, rhs, g)
            correction = cholesky_solve(self.schur, loads)
            fold.subtract_inverse(self.blocks, self.root, g, correction, solution)
            return solution, loads, correction
        solution = fold.backward(self.blocks.inverse(self.root, fold.forward(rhs), g)[0])
        loads = np.einsum("nt,nt->t", g, solution)
        correction = cholesky_solve(self.schur, loads)
        solution -= fold.backward(self.blocks.inverse(self.root, fold.forward(g * correction[None, :]), g)[0])
        return solution, loads, correction

    def _apply_y(self, vector: FloatArray, out: FloatArray) -> FloatArray:
        """H_y vector from its definition, shape (n, T), written to `out`."""
        g = self.data.g
        prices_term = self.ratio * np.einsum("nt,nt->t", g, vector)
        entries.hessian_times(self.curvature, self.diagonal, g, prices_term, vector, out)
        if self.fold is not None:  # the one-type rows' c_ir e_r e_r^T
            type_rows, active = self.point.type_rows, self.fold.active
            add_round_sums(vector, active, type_rows.z / type_rows.s, active, self.data.members, self.data.tiled,
                           out)
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

    def direction(self, sigma_mu: float, second_order: float, predictor: Direction | None, targets: Targets,
                  sigma: float = 0.0) -> Direction:
        r"""The Newton step towards the complementarity products `targets` (the same residuals otherwise).

        The bounds' targets are :math:`\sigma\mu - w\,\Delta y \Delta z^{lo}` and
        :math:`\sigma\mu + w\,\Delta y \Delta z^{hi}` with `second_order` :math:`w` and the
        `predictor`'s steps (none: the affine step, `sigma_mu` and `second_order` 0)."""
        data, point = self.data, self.point
        target_cap, target_f, target_e, target_zeta, target_type = targets
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
        # A one-type row's multiplier step is (t - z ds) / s - z with ds = -sum_{t in r} dy. The kernel forms
        # the rows' terms (`row_terms`) entry by entry from the per-job ones and those of each entry's round.
        type_rows = point.type_rows
        per_round = data.zeros
        if data.typed:
            per_round = np.empty_like(y)
            one_type_rows.type_row_terms(data.shared, target_type, type_rows.s, type_rows.z, data.good_round,
                                         per_round)
        aff = (predictor.dy, predictor.dz_lo, predictor.dz_hi) if predictor is not None else (data.zeros,) * 3
        rhs = np.empty_like(y)
        entries.newton_rhs(active, point.primal_residual, y, s_hi, z_lo, z_hi, g, target_cap / s_cap - prices, rows,
                           data.pace, per_round, sigma_mu, second_order, *aff, rhs)
        d_zeta = 0.0
        if data.kappa:
            rhs_zeta = -point.zeta_residual + float(efficiency_rows.sum()) + target_zeta / longest.zeta - longest.z_zeta
            dy, d_zeta = self._split(self.solve(np.append(rhs, rhs_zeta)))
            dy = dy.copy()  # a view of the solution with d_zeta: the kernel below writes it
        else:
            dy = self.solve(rhs)
        dz_lo, dz_hi, loads, running = np.empty_like(y), np.empty_like(y), np.empty_like(s_cap), np.empty_like(s_f)
        rate = entries.newton_back(active, y, s_hi, z_lo, z_hi, g, sigma_mu, second_order, *aff, data.pace, dy,
                                   dz_lo, dz_hi, loads, running)
        ds_cap = -loads
        d_prices = (target_cap - prices * ds_cap) / s_cap - prices
        ds_f, dz_f, ds_e, dz_e = (np.empty_like(s_f) for _ in range(4))
        row_rate = entries.row_steps(constrained, efficient, running, residual, d_zeta, target_f, target_e, s_f, z_f,
                                     s_e, z_e, ds_f, dz_f, ds_e, dz_e)
        dz_zeta = (target_zeta - longest.z_zeta * d_zeta) / longest.zeta - longest.z_zeta if data.kappa else 0.0
        type_rate = 0.0
        if data.typed:
            ds_o, dz_o = np.empty_like(type_rows.s), np.empty_like(type_rows.z)
            type_rate = one_type_rows.type_row_steps(data.shared, dy, target_type, type_rows.s, type_rows.z,
                                                     data.good_round, ds_o, dz_o)
        else:  # no one-type rows: their (n, R = T) step is 0 and never limits the step length
            ds_o = dz_o = data.zeros
        du = np.einsum("nst,nt->ns", data.progress, dy)
        # The logarithms' rows w U = budgets, linearized: their multipliers' step, and the rates of the
        # variables O(n S + T) in one call; the entries' and the rows' rates are the kernels' above.
        dw = np.empty_like(point.w)
        # The one-type rows' rate joins the others' (the same step as the smaller of the two: 1 / x
        # rounds monotonically); 0 without them.
        rate = max(rate, row_rate, entries.log_steps(
            data.budgets, point.w, point.u, du, s_cap, ds_cap, prices, d_prices,
            np.array([longest.zeta, longest.z_zeta]), np.array([d_zeta, dz_zeta]), dw), type_rate)
        largest = 1.0 / rate if rate > 0 else np.inf
        return Direction(dy, dz_lo, dz_hi, ds_cap, d_prices, ds_f, dz_f, Longest(d_zeta, ds_e, dz_e, dz_zeta),
                         TypeRows(ds_o, dz_o), du, dw, largest, sigma, max(self.stalled, default=0.0))


def _blocks(data: ScaledProgram, point: Point, row: FloatArray, regularization: float, work: Workspace,
            stacked: bool) -> tuple[FloatArray, FloatArray, BlockFactor, FloatArray, TypeFold | None,
                                    FloatArray | None]:
    """`NewtonSystem.factor`'s blocks step by step: the bounds' curvature, the scaling :math:`D^{-1/2}`, the
    blocks' factor, the capacity Gram matrix (without the prices' term), the one-type rows' fold (None
    without them) and the rows' coefficients in the scaled blocks' terms (None without the efficiency term)."""
    g = data.g
    diagonal = np.empty_like(point.y)
    entries.bounds_curvature(data.active, point.y, point.s_hi, point.z_lo, point.z_hi, data.spread, diagonal)
    curvature, root, scaled = work.curvature, np.empty_like(diagonal), work.scaled
    entries.scaled_columns(data.progress, point.w, point.u, row[:, None] * data.pace, diagonal, regularization,
                           curvature, root, scaled)
    fold = TypeFold.of(data, point, root) if data.typed else None
    if fold is not None:
        np.multiply(root[:, None, :], fold.forward(curvature), out=scaled)  # V_i = L_i^-1 C_i
    # The rows' coefficients in the scaled blocks' terms (N_i p_i with one-type rows): only the
    # efficiency border's corner needs them.
    rows = None if not data.kappa else data.pace if fold is None else fold.forward(data.pace)
    blocks = BlockFactor.of(scaled, work, data.progress.shape[1], root, rows)
    # sum_i G_i K_i^-1 G_i^T = sum_i (F_i X_i)^T (F_i X_i), X_i = diag(g_i D_i^-1/2) (with the
    # one-type rows D_i^-1/2 N_i diag(g_i)): the Gram matrix of the stacked (n T, T) products if
    # `stacked`, else in pieces (`BlockFactor.gram`, `TypeFold.gram`).
    if fold is None:
        schur = blocks.gram(g * root, work, stacked)
    else:
        schur = fold.gram(blocks, root, g, work, stacked)
    return diagonal, root, blocks, schur, fold, rows


def _corner_without_capacity(data: ScaledProgram, point: Point, work: Workspace, root: FloatArray,
                             blocks: BlockFactor, rows: FloatArray) -> float:
    r"""The efficiency border's Schur complement without the capacity coupling, term by term.

    Job i's block is :math:`K_{0,i} + \rho_i \mathbf 1 \mathbf 1^\top` (:math:`\rho = \rho^f + \rho^e`,
    the FTF and efficiency rows' curvatures) and its border column :math:`\rho^e_i \mathbf 1`, so its
    part of :math:`d - c^\top K^{-1} c` is
    :math:`\rho^e_i - (\rho^e_i)^2 a_i / (1 + \rho_i a_i) = \rho^e_i (1 + \rho^f_i a_i) / (1 + \rho_i a_i)`,
    :math:`a_i = \mathbf 1^\top K_{0,i}^{-1} \mathbf 1` (:math:`p_i^\top K_{0,i}^{-1} p_i` over GPU types, the
    column :math:`\rho p_i`; from the dense factorization, `BlockFactor.row_free`, else
    `low_rank.row_free_loads`): positive, with no difference of large numbers."""
    longest = point.longest
    rho_f = np.where(data.constrained, point.z_f / point.s_f, 0.0)
    rho_e = np.where(data.efficient, longest.z_e / longest.s_e, 0.0)
    # a_i = |F_i D_i^-1/2 v_i|^2 with `rows` v (p_i = 1 on the active entries on one GPU type; N_i p_i with
    # the one-type rows, `TypeFold`).
    loads = blocks.row_free
    if loads is None:
        loads = np.empty(rho_f.shape)
        low_rank.row_free_loads(work.scaled, data.progress.shape[1], root, rows, loads)
    if not np.isfinite(loads).all():
        raise np.linalg.LinAlgError("a job's Newton block is not numerically positive definite")
    return float((rho_e * (1.0 + rho_f * loads) / (1.0 + (rho_f + rho_e) * loads)).sum()) \
        + longest.z_zeta / longest.zeta
