r"""The polish's Newton matrix (`vfm.planner.solve.polish`): the derivative of the rows' slacks in their
multipliers at a Lagrangian minimizer (`Slopes`), and its solves (`NewtonMatrix`).

Write every row as :math:`h^\top y \le b` with its multiplier adding :math:`h` to the entries'
costs: capacity :math:`g_t e_t`, a job's FTF and efficiency rows :math:`-p_i`, a one-type row (over
GPU types) the indicator :math:`e_r` of round r's goods. On the entries strictly inside the box
:math:`\partial y_i / \partial c_i = -M_i`, so a slack's derivative in a multiplier is
:math:`h_j^\top M_i h_k`: the matrix is symmetric and an arrow, a job's rows meeting only the
prices, each other and zeta.

The rows' vectors are in one order (`in_order`): the capacity rows, the FTF rows, the efficiency
rows, the one-type rows (job by job) and zeta; `by_job` and `by_round` read a job's part back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from vfm._numerics.linalg import lu, lu_solve
from vfm._validation import FloatArray
from vfm.planner._kernels import polish_types
from vfm.planner.solve.scaled_program import ScaledProgram


def by_job(data: ScaledProgram, vector: FloatArray, absent: float) -> FloatArray:
    """The job rows' entries of `vector` (in the order of `in_order`) as (n, 2): FTF, efficiency;
    `absent` where a job has no such row."""
    rounds, constrained = data.g.shape[1], int(data.constrained.sum())
    out = np.full((data.g.shape[0], 2), absent)
    out[data.constrained, 0] = vector[rounds:rounds + constrained]
    out[data.efficient, 1] = vector[rounds + constrained:rounds + constrained + int(data.efficient.sum())]
    return out


def by_round(data: ScaledProgram, vector: FloatArray, absent: float) -> FloatArray:
    """The one-type rows' entries of `vector` (in the order of `in_order`) as (n, R); `absent` where
    a job has no row in a round."""
    first = data.g.shape[1] + int(data.constrained.sum()) + int(data.efficient.sum())
    out = np.full(data.shared.shape, absent)
    out[data.shared] = vector[first:first + int(data.shared.sum())]
    return out


def in_order(data: ScaledProgram, prices: FloatArray, jobs: FloatArray, zeta: float,
             types: FloatArray | None = None) -> FloatArray:
    """`by_job`'s and `by_round`'s inverse: prices (T,), the job rows' (n, 2), zeta and the one-type
    rows' (n, R; read over GPU types only) in one vector."""
    parts = [prices, jobs[data.constrained, 0], jobs[data.efficient, 1]]
    if data.typed:
        assert types is not None
        parts.append(types[data.shared])
    return np.concatenate([*parts, [zeta] if data.kappa else []])


def level_rows(data: ScaledProgram, slack: FloatArray, curvature: FloatArray, tolerance: float) -> np.ndarray:
    """The rows that are flat (curvature 0) with a slack within `tolerance` of 0, efficiency rows and
    zeta's excepted: the polish's Newton steps make them identity rows, a step of their slack.

    Such a row's slack moves with no multiplier (every entry it holds sits at a bound), so its
    Newton row and column are empty and only the ridge, 1e-12 of the largest curvature, sets its
    step: a slack of -1.8e-15 (a job at exactly its floor in whole rounds, with the time cost
    term ordering its rounds) asked for a step of 1.8e-3 in its multiplier, and the line search
    halved every step that carried it to near nothing (windows of 5 to 10 jobs stopped at the
    step limit). Its complementarity is met; the identity row leaves its multiplier where it is.
    An efficiency row's slack moves with zeta, so its Newton row is not empty."""
    rounds, constrained = data.g.shape[1], int(data.constrained.sum())
    level = (curvature == 0) & (np.abs(slack) <= tolerance)
    level[rounds + constrained:rounds + constrained + int(data.efficient.sum())] = False
    if data.kappa:
        level[-1] = False
    return level


@dataclass(frozen=True)
class TypeSlopes:
    r"""The one-type rows' part of the slopes, kept in factors: with
    :math:`M = (\operatorname{diag}(f) - \gamma (a \circ f)(a \circ f)^\top) / \sigma` (`f` the free
    entries), every product is O(n T); the dense (T, 2 + R) blocks are formed only for the jobs
    with a binding row (`NewtonMatrix`)."""

    data: ScaledProgram
    free: FloatArray  # (n, T) 1 on the free entries
    weighted: FloatArray  # (n, T) a on the free entries
    in_round: FloatArray  # (n, R) the free entries of each round
    a_round: FloatArray  # (n, R) A_r = e_r^T (a o free)
    gamma: FloatArray  # (n,)
    scale: FloatArray  # (n,) 1 / sigma
    rows: FloatArray  # (n, R) -p^T M e_r: the job rows in the one-type multipliers, and back

    def own_diagonal(self) -> FloatArray:
        """:math:`e_r^\top M e_r`, shape (n, R)."""
        return self.scale[:, None] * (self.in_round - self.gamma[:, None] * self.a_round ** 2)

    def own_times(self, mu: FloatArray) -> FloatArray:
        r""":math:`\sum_{r'} e_r^\top M e_{r'} \mu_{r'}`, shape (n, R), for `mu` (n, R)."""
        along = (self.a_round * mu).sum(axis=1)
        return self.scale[:, None] * (self.in_round * mu - (self.gamma * along)[:, None] * self.a_round)

    def cross_times(self, mu: FloatArray) -> FloatArray:
        r""":math:`\sum_{i, r} g_t e_t^\top M_i e_r \mu_{ir}`: the capacity rows in the one-type
        multipliers times `mu` (n, R), shape (T,)."""
        data = self.data
        out = np.empty(data.g.shape[1])
        polish_types.polish_cross_times(self.free, self.weighted, self.a_round, self.gamma, self.scale, data.g,
                                         data.good_round, np.ascontiguousarray(mu), out)
        return out

    def cross_transposed_times(self, prices: FloatArray) -> FloatArray:
        r""":math:`\sum_t e_r^\top M_i g_t e_t x_t`: the one-type rows in the prices times `prices` (T,),
        shape (n, R)."""
        data = self.data
        out = np.empty(self.a_round.shape)
        polish_types.polish_cross_transposed_times(self.free, self.weighted, self.a_round, self.gamma, self.scale,
                                                    data.g, data.good_round, np.ascontiguousarray(prices), out)
        return out


@dataclass(frozen=True)
class Slopes:
    r"""The rows' slacks' derivatives in the multipliers, by block (module docstring). Both job
    rows enter through :math:`w_i = \nu_i + \eta_i`; an efficiency row's slack has :math:`+\zeta`,
    and :math:`\kappa - \sum_i \eta_i` is zeta's row."""

    prices: FloatArray  # (T, T): the capacity rows in the prices
    cross: FloatArray  # (T, n): capacity row t in job i's multipliers, and job i's rows in price t
    own: FloatArray  # (n,): job i's rows in its own multipliers
    types: TypeSlopes | None  # the one-type rows' (None on one GPU type)

    def diagonal(self, data: ScaledProgram) -> FloatArray:
        """Each row's derivative in its own multiplier, in the order of `in_order`."""
        types = None if self.types is None else self.types.own_diagonal()
        return in_order(data, np.diag(self.prices), np.stack([self.own, self.own], axis=1), 0.0, types)


def slopes(data: ScaledProgram, utility: FloatArray, free: np.ndarray) -> Slopes:
    """The rows' slacks' derivative in (prices, FTF multipliers, efficiency multipliers, one-type
    multipliers, zeta) at a Lagrangian minimizer with utilities `utility` and free entries `free`."""
    a, inside = data.progress[:, 0, :], free.astype(np.float64)
    sigma = np.where(data.spread > 0, data.spread, 1.0)  # 0 only for a job with no active entry
    # gamma = curvature / (sigma + curvature |a_free|^2), curvature = budgets / U^2; 0 for a job with
    # no free entry (its U may be 0).
    denominator = sigma * utility ** 2 + data.budgets * ((a * inside) ** 2).sum(axis=1)
    gamma = np.divide(data.budgets, denominator, out=np.zeros_like(denominator), where=denominator > 0)
    v = data.g * a * inside
    prices = np.diag(((data.g ** 2 * inside) / sigma[:, None]).sum(axis=0)) - (v.T * (gamma / sigma)) @ v
    a_p = (a * inside * data.pace).sum(axis=1)
    # d(capacity slack)/d w_i = -(G_i M_i p_i), and d(r_i)/d lambda its transpose
    cross = -(((data.g * data.pace * inside) - (gamma * a_p)[:, None] * v) / sigma[:, None]).T
    own = ((data.pace ** 2 * inside).sum(axis=1) - gamma * a_p ** 2) / sigma
    if not data.typed:
        return Slopes(prices, cross, own, None)
    rounds, weighted, scale = data.rounds_of_goods, a * inside, 1.0 / sigma
    a_round = weighted @ rounds
    rows = -((data.pace * inside) @ rounds - (gamma * a_p)[:, None] * a_round) * scale[:, None]
    return Slopes(prices, cross, own, TypeSlopes(data, inside, weighted, inside @ rounds, a_round, gamma, scale, rows))


@dataclass(frozen=True)
class NewtonMatrix:
    r"""The Newton matrix :math:`\operatorname{diag}(f) J + \operatorname{diag}(d)` of the
    slopes :math:`J`: each row scaled by `factor` (0 for a row that does not bind), plus
    `extra` on the diagonal (the identity of the rows that do not bind, the ridge)."""

    data: ScaledProgram
    slopes: Slopes
    factor: FloatArray
    extra: FloatArray

    def diagonal(self) -> FloatArray:
        """The matrix's diagonal, in the order of `in_order`."""
        return self.factor * self.slopes.diagonal(self.data) + self.extra

    def times(self, x: FloatArray) -> FloatArray:
        """The matrix times `x`, both in the order of `in_order`."""
        data, slopes = self.data, self.slopes
        jobs = by_job(data, x, 0.0)
        zeta = x[-1] if data.kappa else 0.0
        along = jobs.sum(axis=1)
        prices = x[:slopes.prices.shape[0]]
        capacity = slopes.prices @ prices + slopes.cross @ along
        rows = (slopes.cross.T @ prices + slopes.own * along)[:, None] + np.array([0.0, zeta])
        type_rows = None
        if slopes.types is not None:
            types, mu = slopes.types, by_round(data, x, 0.0)
            capacity += types.cross_times(mu)
            rows += (types.rows * mu).sum(axis=1)[:, None]
            type_rows = types.cross_transposed_times(prices) + types.rows * along[:, None] + types.own_times(mu)
        image = in_order(data, capacity, rows, -float(jobs[:, 1].sum()), type_rows)
        return self.factor * image + self.extra * x

    def factored(self) -> Callable[[FloatArray], FloatArray] | None:
        """A solve with the matrix (`rhs` to `x`, in the order of `in_order`): each job's block (at
        most 2 by 2; over GPU types, `_typed_factored`) eliminated onto the T + 1 prices and zeta,
        whose dense system is factored once. None if singular."""
        if self.slopes.types is not None:
            return self._typed_factored(self.slopes.types)
        data, slopes = self.data, self.slopes
        rounds = slopes.prices.shape[0]
        present = np.stack([data.constrained, data.efficient], axis=1)
        f, d = by_job(data, self.factor, 0.0), by_job(data, self.extra, 1.0)
        block = f[:, :, None] * slopes.own[:, None, None] * present[:, None, :]  # (n, 2, 2)
        block[:, [0, 1], [0, 1]] += d
        det = block[:, 0, 0] * block[:, 1, 1] - block[:, 0, 1] * block[:, 1, 0]
        if not np.all(np.isfinite(det) & (det != 0)):
            return None
        inverse = np.stack([np.stack([block[:, 1, 1], -block[:, 0, 1]], axis=1),
                            np.stack([-block[:, 1, 0], block[:, 0, 0]], axis=1)], axis=1) / det[:, None, None]
        # A job's block inverse times its rows' coefficients: along its cross column (h) and zeta (hz).
        h = np.einsum("iab,ib->ia", inverse, f)
        hz = inverse[:, :, 1] * f[:, 1:2]
        f_prices, f_zeta, d_zeta = self.factor[:rounds], (self.factor[-1] if data.kappa else 0.0), \
            (self.extra[-1] if data.kappa else 1.0)
        schur = np.empty((rounds + 1, rounds + 1))
        schur[:rounds, :rounds] = f_prices[:, None] * (slopes.prices - (slopes.cross * (present * h).sum(axis=1))
                                                       @ slopes.cross.T)
        schur[np.arange(rounds), np.arange(rounds)] += self.extra[:rounds]
        schur[:rounds, rounds] = -f_prices * (slopes.cross @ (present * hz).sum(axis=1))
        schur[rounds, :rounds] = f_zeta * (slopes.cross @ (present[:, 1] * h[:, 1]))
        schur[rounds, rounds] = d_zeta + f_zeta * float((present[:, 1] * hz[:, 1]).sum())
        factors = lu(schur)
        if factors is None:
            return None

        def solve(rhs: FloatArray) -> FloatArray:
            local = np.einsum("iab,ib->ia", inverse, by_job(data, rhs, 0.0))
            reduced = np.append(rhs[:rounds] - f_prices * (slopes.cross @ (present * local).sum(axis=1)),
                                (rhs[-1] if data.kappa else 0.0) + f_zeta * float((present[:, 1] * local[:, 1]).sum()))
            shared = lu_solve(factors, reduced)
            jobs = local - h * (slopes.cross.T @ shared[:rounds])[:, None] - hz * shared[rounds]
            return in_order(data, shared[:rounds], jobs, float(shared[rounds]))

        return solve

    def _typed_factored(self, types: TypeSlopes) -> Callable[[FloatArray], FloatArray] | None:
        """`factored` over GPU types: a job's block holds its FTF, efficiency and one-type rows
        (2 + R by 2 + R). A job none of whose rows binds has the diagonal block `extra` and no
        coupling (its rows' factors are 0); the others' blocks are inverted densely, and their
        (T, 2 + R) couplings to the prices formed, for them alone."""
        data, slopes = self.data, self.slopes
        rounds = slopes.prices.shape[0]
        present = np.concatenate([data.constrained[:, None], data.efficient[:, None], data.shared], axis=1)
        f = np.concatenate([by_job(data, self.factor, 0.0), by_round(data, self.factor, 0.0)], axis=1)
        d = np.concatenate([by_job(data, self.extra, 1.0), by_round(data, self.extra, 1.0)], axis=1)
        loose = ~(f != 0).any(axis=1)
        bound = np.flatnonzero(~loose)
        inverse = _block_inverse(slopes, types, bound, f[bound], d[bound], present[bound])
        if inverse is None:
            return None
        # The capacity rows in the bound jobs' multipliers (k, T, 2 + R), masked to the rows each has.
        cross = np.empty((bound.size, rounds, present.shape[1]))
        cross_present = np.empty_like(cross)
        polish_types.polish_cross_blocks(bound, np.ascontiguousarray(slopes.cross), types.free, types.weighted,
                                          types.a_round, types.gamma, types.scale, data.g, data.good_round,
                                          np.ascontiguousarray(present), cross, cross_present)
        # A job's block inverse times its rows' coefficients: along the prices (k, 2 + R, T) and zeta.
        h = np.matmul(inverse * f[bound, None, :], cross.transpose(0, 2, 1))
        hz = inverse[:, :, 1] * f[bound, 1:2]
        f_prices, f_zeta, d_zeta = self.factor[:rounds], (self.factor[-1] if data.kappa else 0.0), \
            (self.extra[-1] if data.kappa else 1.0)
        efficient = present[bound, 1]
        schur = np.empty((rounds + 1, rounds + 1))
        coupled = cross_present.transpose(1, 0, 2).reshape(rounds, -1) @ h.reshape(-1, rounds)
        schur[:rounds, :rounds] = f_prices[:, None] * (slopes.prices - coupled)
        schur[np.arange(rounds), np.arange(rounds)] += self.extra[:rounds]
        schur[:rounds, rounds] = -f_prices * np.einsum("itb,ib->t", cross_present, hz)
        schur[rounds, :rounds] = f_zeta * (efficient[:, None] * h[:, 1, :]).sum(axis=0)
        schur[rounds, rounds] = d_zeta + f_zeta * float((efficient * hz[:, 1]).sum())
        factors = lu(schur)
        if factors is None:
            return None

        def solve(rhs: FloatArray) -> FloatArray:
            local = np.concatenate([by_job(data, rhs, 0.0), by_round(data, rhs, 0.0)], axis=1)
            local[loose] /= d[loose]
            local[bound] = np.einsum("iab,ib->ia", inverse, local[bound])
            along = (present[:, :2] * local[:, :2]).sum(axis=1)
            loads = slopes.cross @ along + types.cross_times(present[:, 2:] * local[:, 2:])
            reduced = np.append(rhs[:rounds] - f_prices * loads,
                                (rhs[-1] if data.kappa else 0.0) + f_zeta * float((present[:, 1] * local[:, 1]).sum()))
            shared = lu_solve(factors, reduced)
            local[bound] -= np.einsum("ibt,t->ib", h, shared[:rounds]) + hz * shared[rounds]
            return in_order(data, shared[:rounds], local[:, :2], float(shared[rounds]), local[:, 2:])

        return solve


def _block_inverse(slopes: Slopes, types: TypeSlopes, jobs: np.ndarray, f: FloatArray, d: FloatArray,
                   present: np.ndarray) -> FloatArray | None:
    """The inverses of the jobs `jobs`' blocks :math:`\\operatorname{diag}(f) J_i + \\operatorname{diag}(d)`
    (their rows' factors `f`, diagonals `d` and rows `present`, each (k, 2 + R)), shape (k, 2 + R, 2 + R);
    None if one is singular."""
    size = present.shape[1]
    block = np.empty((jobs.size, size, size))
    polish_types.polish_blocks(jobs, slopes.own, types.rows, types.a_round, types.gamma, types.scale, types.in_round,
                                np.ascontiguousarray(f), np.ascontiguousarray(d), np.ascontiguousarray(present), block)
    inverse = np.empty_like(block)
    if not polish_types.inverse_blocks_dense(block, inverse):
        return None
    return inverse if np.isfinite(inverse).all() else None
