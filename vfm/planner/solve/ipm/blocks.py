r"""The Newton system's per-job blocks, factored for every job at once (`vfm.planner.solve.ipm.method`'s module
docstring, Linear algebra and GPU types).

`BlockFactor` holds a factor :math:`F_i` with :math:`F_i^\top F_i = (I + V_i V_i^\top)^{-1}`, in
low-rank form for few columns per job (or long windows) and as dense Cholesky factors above, and
forms the capacity system's Gram matrix from it; `TypeFold` folds the one-type-per-round rows'
curvature into the blocks' scaling over GPU types. `Workspace` holds the arrays both write, allocated
once per solve.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vfm._validation import FloatArray
from vfm.planner._kernels import dense, low_rank, one_type_rows, system
from vfm.planner.solve.ipm.point import Point
from vfm.planner.solve.scaled_program import ScaledProgram

#: Up to this many columns per job (scenarios plus the FTF/efficiency column) the blocks are
#: factored in low-rank form (`_low_rank`), above it as dense (T, T) Cholesky factors.
#: The low-rank form's (S', S') eigendecompositions are cheap at few columns but, with many, cost
#: more than the dense form's factors.
_LOW_RANK_COLUMNS = 4
#: The largest sigma^2 of a job's low-rank block whose capacity Gram term is formed as the difference
#: I - P diag(1 / (1 + sigma^2)) P^T (`BlockFactor.gram`): relative error at most
#: 2 eps T (1 + sigma^2), 9e-11 at T = 20 rounds (eps 2.2e-16), below the conjugate gradients'
#: `CG_TOLERANCE`.
GRAM_CURVATURE = 1e4
#: ... and whatever the columns, when the window has more than this many rounds per column: the
#: dense form's O(T^3) per job then dominates, and a long window solves several times faster in
#: low-rank form.
_LOW_RANK_ROUNDS_PER_COLUMN = 8


def _low_rank(columns: int, rounds: int) -> bool:
    """Whether blocks of `columns` low-rank columns over `rounds` rounds are factored in low-rank form."""
    return columns <= _LOW_RANK_COLUMNS or rounds > _LOW_RANK_ROUNDS_PER_COLUMN * columns


class Workspace:
    """The (n, S', T) and (n, T, T) arrays of the Newton system, allocated once per solve (the
    dense block factor's, of shape `dense.lower_inverse_shape`, only when `BlockFactor` uses that form).

    Fresh arrays of a few MB each iteration cost more than the arithmetic on them: the allocator
    returns them to the system and page-faults them back in (an iteration at 900 jobs takes markedly
    longer with fresh arrays than with these buffers reused).
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
            self.lower_inverse = np.empty(dense.lower_inverse_shape(n, rounds))


@dataclass(frozen=True)
class BlockFactor:
    r"""A factor :math:`F_i` with :math:`F_i^\top F_i = (I + V_i V_i^\top)^{-1}` for every job at once.

    Dense: :math:`F_i = L_i^{-1}`, :math:`L_i` the Cholesky factor of the (T, T) block,
    :math:`O(n T^3)`, stored chunk by chunk with the job innermost (`vfm.planner._kernels.dense`).
    Low-rank: the symmetric square root
    :math:`F_i = I - P_i \operatorname{diag}(h_i) P_i^\top` with :math:`V_i^\top V_i = U \Sigma^2 U^\top`,
    :math:`P_i = V_i U`, :math:`h = 1 / (\sqrt{1 + \sigma^2} (1 + \sqrt{1 + \sigma^2}))`:
    :math:`O(n T S'^2)` plus (S', S') eigendecompositions. Either is accurate to rounding in the
    directions where :math:`(I + V V^\top)^{-1}` is small: a difference such as
    :math:`I - V (I + V^\top V)^{-1} V^\top` is not (it loses :math:`\sigma^2 \epsilon`, and
    with it the capacity system once the prices' curvature :math:`\lambda / s_c` reaches 1e12).
    """

    lower_inverse: FloatArray | None  # (chunks, T (T + 1) / 2, CHUNK) L_i^-1 packed (`dense`; dense form)
    columns: FloatArray | None  # (n, S', T) P_i^T (low-rank form)
    shrink: FloatArray | None  # (n, S') h_i (low-rank form)
    row_free: FloatArray | None  # (n,) a_i of the efficiency border's corner (`newton`; dense form)

    @classmethod
    def of(cls, scaled: FloatArray, work: Workspace, scenarios: int, root: FloatArray,
           rows: FloatArray | None) -> BlockFactor:
        r"""The factor of the blocks :math:`I + V_i V_i^\top`, `scaled` holding :math:`V_i^\top`, shape
        (n, S', T), its first `scenarios` columns the scenarios' (given the rows' coefficients `rows`
        (n, T), the dense form computes `row_free` on the way, from `root` :math:`D^{-1/2}`).

        Raises `numpy.linalg.LinAlgError` when a block is not numerically positive definite."""
        if _low_rank(scaled.shape[1], scaled.shape[2]):
            low_rank.low_rank_factor(scaled, work.columns, work.shrink)
            return cls(None, work.columns, work.shrink, None)
        row_free = np.empty(0 if rows is None else scaled.shape[0])
        if not dense.dense_factor(scaled, scenarios, root, root if rows is None else rows, work.lower_inverse,
                                  row_free):
            raise np.linalg.LinAlgError("a job's Newton block is not numerically positive definite")
        return cls(work.lower_inverse, None, None, None if rows is None else row_free)

    def inverse(self, root: FloatArray, vector: FloatArray, g: FloatArray) -> tuple[FloatArray, FloatArray]:
        r""":math:`K_i^{-1} v_i = D_i^{-1/2} F_i^\top F_i D_i^{-1/2} v_i` for every job, shape (n, T), and
        its capacity load :math:`\sum_i g_i \circ K_i^{-1} v_i`, shape (T,); `root` is :math:`D^{-1/2}`."""
        out, loads = np.empty_like(vector), np.empty(vector.shape[1])
        if self.lower_inverse is not None:
            dense.dense_inverse_blocks(root, self.lower_inverse, vector, g, out, loads)
        else:
            assert self.columns is not None and self.shrink is not None
            low_rank.inverse_blocks(root, self.columns, self.shrink, vector, g, out, loads)
        return out, loads

    def subtract_inverse(self, root: FloatArray, g: FloatArray, correction: FloatArray, out: FloatArray) -> None:
        r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job (`correction` :math:`c`, shape (T,))."""
        if self.lower_inverse is not None:
            dense.dense_subtract_inverse_blocks(root, self.lower_inverse, g, correction, out)
        else:
            assert self.columns is not None and self.shrink is not None
            low_rank.subtract_inverse_blocks(root, self.columns, self.shrink, g, correction, out)

    def times(self, matrices: FloatArray) -> FloatArray:
        r""":math:`F_i M_i` for every job, `matrices` :math:`M` of shape (n, T, m)."""
        if self.lower_inverse is not None:
            # np.matmul (BLAS's sums) of the (n, T, T) factors F_i diag(1), zeros above the diagonals:
            # a copy per call, on the path of several GPU types only.
            n, rounds = matrices.shape[:2]
            factors = self.times_diagonal(np.ones((n, rounds)), out=np.empty((n, rounds, rounds)))
            return np.matmul(factors, matrices)
        assert self.columns is not None and self.shrink is not None
        along = self.shrink[:, :, None] * np.matmul(self.columns, matrices)
        return matrices - np.matmul(self.columns.transpose(0, 2, 1), along)

    def gram(self, x: FloatArray, work: Workspace, stacked: bool) -> FloatArray:
        r""":math:`\sum_i (F_i X_i)^\top (F_i X_i)`, :math:`X_i = \operatorname{diag}(x_i)`, shape (T, T):
        the capacity system's matrix without the prices' term, `x` of shape (n, T).

        If `stacked`, with the dense form, and for the low-rank form's curved jobs
        (`GRAM_CURVATURE`): the Gram matrix of the stacked products :math:`F_i X_i`,
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
        solves, like `TypeFold.gram`'s pieces: when the solves miss their tolerance, the iteration
        factors again `stacked` (0.7 to 2.6 stacked factorizations per 100 in pieces on the four
        reproductions' windows).
        """
        if stacked or self.lower_inverse is not None:
            weighted = self.times_diagonal(x, out=work.weighted).reshape(-1, x.shape[1])
            return weighted.T @ weighted
        assert self.columns is not None and self.shrink is not None
        rounds = x.shape[1]
        diagonal = np.empty(rounds)
        flags = np.empty(x.shape[0], dtype=np.bool_)
        curved = low_rank.curved_jobs(self.columns, GRAM_CURVATURE, flags)
        low_rank.gram_pieces(self.columns, self.shrink, x, flags, work.rows, work.weighted, diagonal)
        return _pieces_gram(work, curved, diagonal)

    def times_diagonal(self, x: FloatArray, out: FloatArray) -> FloatArray:
        r""":math:`F_i \operatorname{diag}(x_i)` for every job, shape (n, T, T), written to `out`."""
        if self.lower_inverse is None:
            assert self.columns is not None and self.shrink is not None
            low_rank.times_diagonal(self.columns, self.shrink, x, out)
            return out
        dense.dense_times_diagonal(x, self.lower_inverse, out)
        return out


@dataclass(frozen=True)
class TypeFold:
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
    curvature columns), factored as on one GPU type (`BlockFactor`), and
    :math:`K^{-1} = N^\top D^{-1/2} F^\top F D^{-1/2} N`: `forward` applies :math:`N`, `backward`
    :math:`N^\top`. :math:`\alpha_r \in (-1/\sigma_r, 0]` is computed as `expm1` of a `log1p`, so that
    it keeps its digits when :math:`c_r \sigma_r` is small. Like the symmetric root of
    `BlockFactor`, :math:`Q^{-1}` keeps its digits where it is small: on a round of three goods
    with :math:`d \sim 10^{-8}` (interior entries) and :math:`c = 10^8` (a binding row),
    :math:`K^{-1}` is exact to 1e-15 entrywise (against exact rational arithmetic; a basis in which
    the round's smallest curvature is the rank-one term was no more accurate, and twice as slow).
    """

    alpha: FloatArray  # (n, R) alpha_r (0 where the job has no one-type row)
    inverse_diagonal: FloatArray  # (n, T) 1 / d_t on the active entries, 0 elsewhere
    active: FloatArray  # (n, T) 1 on the active entries, 0 elsewhere
    good_round: np.ndarray  # (T,)
    members: np.ndarray  # (R, K) `ScaledProgram.members`
    tiled: bool  # `ScaledProgram.tiled`

    @classmethod
    def of(cls, data: ScaledProgram, point: Point, root: FloatArray) -> TypeFold:
        """The fold at `point`, `root` the bounds' (regularized) diagonal to the power -1/2."""
        inverse_diagonal = np.where(data.active, root * root, 0.0)
        alpha = _fold_alpha(data, point, inverse_diagonal @ data.rounds_of_goods)
        return cls(alpha, inverse_diagonal, data.active_weights, data.good_round, data.members, data.tiled)

    def forward(self, vector: FloatArray) -> FloatArray:
        """:math:`N v` for every job, `vector` of shape (n, T) or (n, k, T) (`k` vectors per job)."""
        return add_round_sums(vector, self.inverse_diagonal, self.alpha, self.active, self.members, self.tiled)

    def inverse(self, blocks: BlockFactor, root: FloatArray, vector: FloatArray,
                g: FloatArray) -> tuple[FloatArray, FloatArray]:
        r""":math:`K_i^{-1} v_i = N_i^\top D_i^{-1/2} F_i^\top F_i D_i^{-1/2} N_i v_i` for every job, shape (n, T),
        and its capacity load :math:`\sum_i g_i \circ K_i^{-1} v_i`, shape (T,), for the low-rank `blocks`
        (`one_type_rows.typed_inverse_blocks`); `root` is :math:`D^{-1/2}`."""
        assert blocks.columns is not None and blocks.shrink is not None
        out, loads = np.empty_like(vector), np.empty(vector.shape[1])
        one_type_rows.typed_inverse_blocks(root, blocks.columns, blocks.shrink, self.alpha, self.inverse_diagonal,
                                           self.active, self.members, self.tiled, vector, g, out,
                                           loads)
        return out, loads

    def subtract_inverse(self, blocks: BlockFactor, root: FloatArray, g: FloatArray, correction: FloatArray,
                         out: FloatArray) -> None:
        r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job (`inverse`'s blocks; `correction` :math:`c`,
        shape (T,))."""
        assert blocks.columns is not None and blocks.shrink is not None
        one_type_rows.typed_subtract_inverse_blocks(root, blocks.columns, blocks.shrink, self.alpha,
                                                    self.inverse_diagonal, self.active, self.members, self.tiled, g,
                                                    correction, out)

    def backward(self, vector: FloatArray) -> FloatArray:
        """:math:`N^\top v` for every job, `vector` of shape (n, T)."""
        return add_round_sums(vector, self.active, self.alpha, self.inverse_diagonal, self.members, self.tiled)

    def gram(self, blocks: BlockFactor, root: FloatArray, g: FloatArray, work: Workspace,
             stacked: bool) -> FloatArray:
        r""":math:`\sum_i X_i^\top F_i^\top F_i X_i`, :math:`X_i = D_i^{-1/2} N_i \operatorname{diag}(g_i)`,
        shape (T, T): the capacity system's matrix without the prices' term.

        `stacked` (and always with the dense factor): the Gram matrix of the stacked products
        :math:`F_i X_i` (`BlockFactor.times_diagonal` plus `add_rank_one_terms`), :math:`O(n T^3)`,
        positive semidefinite to rounding. Else, with the low-rank factor, in pieces
        (`one_type_rows.typed_gram`): the blocks between rounds are low-rank, :math:`O(n S' T^2)` as one
        product, and each round's own (K, K) block a sum of squares: at 874 jobs on three types
        (T = 60) several times faster than the stacked product. The pieces are
        each accurate to rounding but not consistent to rounding: at the end of some solves, where the
        system's smallest eigenvalue is 1e-16 of its largest, the blocks between rounds (exact formulas, not
        Gram products of the computed factors) leave the preconditioner wrong and the conjugate gradients
        stall (a 6-job window stopped at 5.3e-9 instead of 1e-9); the iteration then factors the system again
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
        one_type_rows.typed_gram(blocks.columns, blocks.shrink, g * root, root * self._forward_weights,
                                 self.inverse_diagonal * g, self.good_round, members, scaled_q, diagonal_blocks)
        return typed_gram(scaled_q, diagonal_blocks, _round_blocks(members))

    def add_rank_one_terms(self, blocks: BlockFactor, root: FloatArray, g: FloatArray, out: FloatArray) -> None:
        r"""`out[i]` += the rank-one part of :math:`F_i X_i`, :math:`X_i = D_i^{-1/2} N_i \operatorname{diag}(g_i)
        = \operatorname{diag}(g_i D_i^{-1/2}) + \sum_r a_r b_r^\top`, :math:`a_r = \alpha_r D^{-1/2} e_r`,
        :math:`b_r = D^{-1} e_r \circ g_i` (`out` holds :math:`F_i` times the diagonal part)."""
        columns = (root * self._forward_weights)[:, :, None] \
            * (self.good_round[:, None] == np.arange(self.alpha.shape[1])[None, :])[None, :, :]
        one_type_rows.add_group_outer(blocks.times(columns), self.good_round, self.inverse_diagonal * g, out)

    @property
    def _forward_weights(self) -> FloatArray:
        """alpha_{r(t)} on the active entries, 0 elsewhere, shape (n, T)."""
        return self.alpha[:, self.good_round] * self.active


def add_round_sums(vector: FloatArray, sum_weights: FloatArray, round_weights: FloatArray, add_weights: FloatArray,
                   members: np.ndarray, tiled: bool, out: FloatArray | None = None) -> FloatArray:
    """`one_type_rows.add_round_sums` for `vector` of shape (n, T) or (n, k, T), onto a copy of `vector`
    unless `out` (the same shape) is given."""
    if out is None:
        out = vector.copy()
    goods = vector.shape[-1]
    one_type_rows.add_round_sums(sum_weights, round_weights, add_weights, members, tiled,
                                 np.ascontiguousarray(vector).reshape(-1, goods), out.reshape(-1, goods))
    return out


def _pieces_gram(work: Workspace, curved: int, diagonal: FloatArray) -> FloatArray:
    """`BlockFactor.gram` in pieces from the terms `low_rank.gram_pieces` wrote to `work`: the first
    `curved` blocks of `work.weighted`, the rows `work.rows` and the `diagonal`."""
    rounds = diagonal.shape[0]
    weighted = work.weighted[:curved].reshape(-1, rounds)
    rows = work.rows.reshape(-1, rounds)
    gram = weighted.T @ weighted - rows.T @ rows
    gram.flat[::rounds + 1] += diagonal
    return gram


def low_rank_system(data: ScaledProgram, point: Point, row: FloatArray, regularization: float,
                    work: Workspace) -> tuple[FloatArray, FloatArray, BlockFactor, FloatArray]:
    r"""On one GPU type with low-rank blocks, what `NewtonSystem.factor` forms before the prices' term, in
    one pass over the jobs (`vfm.planner._kernels.system.low_rank_system`, the same floats as step by step):
    the bounds' curvature (n, T), the scaling :math:`D^{-1/2}` (n, T), the blocks' factor (with the
    efficiency border's loads `BlockFactor.row_free` when the program has the efficiency term; the rows'
    column `row` (n,) times the pace) and the capacity Gram matrix in pieces (`BlockFactor.gram`)."""
    n, rounds = point.y.shape
    diagonal, root = np.empty((n, rounds)), np.empty((n, rounds))
    flags, gram_diagonal = np.empty(n, dtype=np.bool_), np.empty(rounds)
    row_free = np.empty(n if data.kappa else 0)
    system.low_rank_system(data.active, point.y, point.s_hi, point.z_lo, point.z_hi, data.spread, data.progress,
                           point.w, point.u, row, data.pace, regularization, data.g, GRAM_CURVATURE, diagonal,
                           work.curvature, root, work.scaled, work.columns, work.shrink, flags, work.rows,
                           gram_diagonal, row_free)
    curved = system.curved_blocks(work.columns, work.shrink, data.g, root, flags, work.weighted)
    blocks = BlockFactor(None, work.columns, work.shrink, row_free if data.kappa else None)
    return diagonal, root, blocks, _pieces_gram(work, curved, gram_diagonal)


def _round_blocks(members: np.ndarray) -> tuple[np.ndarray, ...]:
    """`ScaledProgram.round_blocks` of `members`."""
    r, row, column = np.nonzero((members >= 0)[:, :, None] & (members >= 0)[:, None, :])
    return r, row, column, members[r, row], members[r, column]


def typed_gram(scaled_q: FloatArray, diagonal_blocks: FloatArray, round_blocks: tuple[np.ndarray, ...]) -> FloatArray:
    """`TypeFold.gram` in pieces from the terms of `one_type_rows.typed_gram`: minus the Gram matrix of the
    stacked rows `scaled_q` (n, S', T), its rounds' own blocks replaced by `diagonal_blocks` (R, K, K)
    (placed by `round_blocks`, `ScaledProgram.round_blocks`)."""
    rows = scaled_q.reshape(-1, scaled_q.shape[-1])
    gram = -(rows.T @ rows)
    r, row, column, first, second = round_blocks
    gram[first, second] = diagonal_blocks[r, row, column]
    return gram


def typed_low_rank_system(data: ScaledProgram, point: Point, row: FloatArray, regularization: float,
                          work: Workspace) -> tuple[FloatArray, FloatArray, BlockFactor, FloatArray, TypeFold]:
    r"""Over GPU types with low-rank blocks, what `NewtonSystem.factor` forms before the prices' term, in two
    passes over the jobs (`vfm.planner._kernels.one_type_rows.typed_curvature` and `typed_factor`, instead of
    one kernel or NumPy expression per step, each over the whole arrays): the bounds' curvature
    (n, T), the scaling :math:`D^{-1/2}` (n, T), the blocks' factor (the rows' column `row` (n,) times the
    pace), the capacity Gram matrix in pieces (`TypeFold.gram`) and the one-type rows' fold."""
    n, goods = point.y.shape
    rounds, width = data.members.shape
    diagonal, root, inverse_diagonal = np.empty((n, goods)), np.empty((n, goods)), np.empty((n, goods))
    sigma = np.empty((n, rounds))
    diagonal_blocks = np.empty((rounds, width, width))
    one_type_rows.typed_curvature(data.active, point.y, point.s_hi, point.z_lo, point.z_hi, data.spread,
                                  data.progress, point.w, point.u, row, data.pace, regularization, data.good_round,
                                  diagonal, work.curvature, root, inverse_diagonal, sigma)
    # NumPy's expm1 and log1p between the two passes, as `TypeFold.of`: compiled code would call the C
    # library's, whose last bits may differ from NumPy's (and the interpreted kernels' would be NumPy's).
    alpha = _fold_alpha(data, point, sigma)
    one_type_rows.typed_factor(work.curvature, root, inverse_diagonal, alpha, data.active_weights, data.g,
                               data.good_round, data.members, data.tiled, work.scaled, work.columns, work.shrink,
                               work.rows, diagonal_blocks)
    fold = TypeFold(alpha, inverse_diagonal, data.active_weights, data.good_round, data.members, data.tiled)
    blocks = BlockFactor(None, work.columns, work.shrink, None)
    return diagonal, root, blocks, typed_gram(work.rows, diagonal_blocks, data.round_blocks), fold


def _fold_alpha(data: ScaledProgram, point: Point, sigma: FloatArray) -> FloatArray:
    r"""`TypeFold`'s :math:`\alpha_r` (n, R) from :math:`\sigma_r = e_r^\top D^{-1} e_r` (n, R): 0 where the job has
    no one-type row."""
    type_rows = point.type_rows
    curvature = type_rows.z / type_rows.s * sigma
    return np.where(data.shared, np.expm1(-0.5 * np.log1p(curvature)) / np.where(data.shared, sigma, 1.0), 0.0)
