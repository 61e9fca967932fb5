r"""The Newton blocks' dense factor, compiled: :math:`L_i^{-1}` of the (T, T) Cholesky factor of
:math:`I + V_i V_i^\top` for every job, and the block solves with it.

The form `vfm.planner.solve.ipm.blocks.BlockFactor` takes when a job's block has more columns than
the low-rank form handles cheaply (`vfm.planner._kernels.low_rank`): :math:`O(T^3)` per job.

The factors are stored chunk by chunk (`jit.CHUNK` jobs) with the job innermost, lower triangles
packed by rows: entry (a, b), b <= a, of job i's :math:`L_i^{-1}` is
`lower_inverse[i // CHUNK, a (a + 1) / 2 + b, i % CHUNK]` (`packed`), of shape `lower_inverse_shape`
(the last chunk's padding is neither written nor read). Half the memory of whole (T, T) factors,
which each block solve reads from the last-level cache (faster than whole factors that fall out
of the core's own caches).
The factorization and the block solves work on a chunk's jobs side by side, their innermost loops
over the jobs vectorizing, while each job gets the same sequence of floating-point operations as
alone: one job at a time, the solves' short sums are chains of dependent additions, which wait
on each other.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


def lower_inverse_shape(n: int, rounds: int) -> tuple[int, int, int]:
    """The shape (chunks, T (T + 1) / 2, CHUNK) of the factors of `n` jobs' blocks over `rounds` rounds (T)."""
    return (n + jit.CHUNK - 1) // jit.CHUNK, rounds * (rounds + 1) // 2, jit.CHUNK


@jit.inlined
def packed(a: int) -> int:
    """The index of entry (a, 0) of a packed lower triangle (entry (a, b) is at `packed(a)` + b)."""
    return a * (a + 1) // 2


@jit.over_jobs
def dense_factor(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray,
                 lower_inverse: np.ndarray, loads: np.ndarray) -> bool:
    r"""`lower_inverse` := :math:`L_i^{-1}` of every job (the module's layout),
    :math:`L_i L_i^\top = I + V_i V_i^\top` (Cholesky), `scaled` holding :math:`V_i^\top`, shape
    (n, S', T). False when a block is not numerically positive definite (a pivot not positive or not
    finite); every job is factored either way.

    The block without the rows' column (the first `scenarios` columns, when S' has one more) is
    factored first and the column added by a rank-one update of the factor, :math:`O(T^2)`; on
    the way, `loads[i]` := `low_rank.row_free_loads`'s :math:`a_i = \lVert L_{0,i}^{-1} x \rVert^2`,
    :math:`x = D^{-1/2} v` (`root` :math:`D^{-1/2}`, `vector` :math:`v`): the
    efficiency border's Schur complement needs it, and a second Cholesky per job for it cost
    ~18 % of an iteration at S = 16. Without the efficiency term `loads` is empty and skipped.

    A chunk's jobs are factored side by side in scratch arrays whose last axis is the job. A job whose
    block is not positive definite is carried along: its :math:`L^{-1}` is then meaningless, and its
    load is left unwritten when the failing pivot is the first factor's."""
    n = scaled.shape[0]
    factored = np.empty(n, dtype=np.bool_)
    for chunk in prange(jit.chunks(n)):
        jobs = slice(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK))
        _factor_chunk(scaled[jobs], scenarios, root[jobs], vector[jobs], lower_inverse[chunk], loads[jobs],
                      factored[jobs])
    return bool(factored.all())


@jit.inlined
def _factor_chunk(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray,
                  inverse: np.ndarray, loads: np.ndarray, factored: np.ndarray) -> None:
    """`dense_factor` for one chunk of jobs, `inverse` its (T (T + 1) / 2, CHUNK) chunk of `lower_inverse`
    (`loads` empty without the efficiency term)."""
    count, k, rounds = scaled.shape
    v = np.empty((rounds, k, jit.CHUNK))
    _transpose(scaled, count, v)
    # L in scratch, inverted into `inverse`: factored in place there, the chunk ran ~10 % slower.
    lower = np.empty((rounds, rounds, jit.CHUNK))
    pivots = np.empty(jit.CHUNK, dtype=np.bool_)
    _cholesky(v, scenarios, count, lower, pivots)
    if loads.shape[0]:
        _loads(lower, root, vector, pivots, loads)
    for job in range(count):
        factored[job] = pivots[job]
    if k > scenarios:
        column = np.empty((rounds, jit.CHUNK))
        for t in range(rounds):
            for job in range(count):
                column[t, job] = v[t, scenarios, job]
        _cholesky_update(lower, column, count, factored)
    _invert(lower, count, inverse)


@jit.inlined
def _transpose(scaled: np.ndarray, count: int, v: np.ndarray) -> None:
    """`v[t, p, job]` := `scaled[job, p, t]` for the first `count` jobs, eight at a time: each job's reads
    stay sequential and the writes fill whole cache lines. The eight as a constant, which LLVM turns
    into vector stores (a loop to the chunk's `count` instead took a sizeable share of the
    factorization)."""
    _, k, rounds = scaled.shape
    whole = count - count % 8
    for first in range(0, whole, 8):
        for p in range(k):
            for t in range(rounds):
                for job in range(8):
                    v[t, p, first + job] = scaled[first + job, p, t]
    for job in range(whole, count):
        for p in range(k):
            for t in range(rounds):
                v[t, p, job] = scaled[job, p, t]


@jit.inlined
def _add_products(total: np.ndarray, left: np.ndarray, right: np.ndarray, stop: int, count: int) -> None:
    """`total[job]` += `left[m, job] * right[m, job]`, m from 0 to `stop` - 1 in order, for the first
    `count` jobs (`total` of length CHUNK, `left` and `right` of shape (at least `stop`, CHUNK)). Four
    products per pass over the jobs: each running sum is loaded and stored once per four products
    (the Cholesky factor ~10 % faster than with one)."""
    m = 0
    while m + 4 <= stop:
        for job in range(count):
            total[job] = (total[job] + left[m, job] * right[m, job] + left[m + 1, job] * right[m + 1, job]
                          + left[m + 2, job] * right[m + 2, job] + left[m + 3, job] * right[m + 3, job])
        m += 4
    for last in range(m, stop):
        for job in range(count):
            total[job] += left[last, job] * right[last, job]


@jit.inlined
def _subtract_products(total: np.ndarray, left: np.ndarray, right: np.ndarray, stop: int, count: int) -> None:
    """`_add_products`, subtracting the products."""
    m = 0
    while m + 4 <= stop:
        for job in range(count):
            total[job] = (total[job] - left[m, job] * right[m, job] - left[m + 1, job] * right[m + 1, job]
                          - left[m + 2, job] * right[m + 2, job] - left[m + 3, job] * right[m + 3, job])
        m += 4
    for last in range(m, stop):
        for job in range(count):
            total[job] -= left[last, job] * right[last, job]


@jit.inlined
def _cholesky(v: np.ndarray, scenarios: int, count: int, lower: np.ndarray, pivots: np.ndarray) -> None:
    r"""`lower[:, :, job]` := :math:`L` with :math:`L L^\top = I + V V^\top` (lower triangle), `v[:, :,
    job]` holding :math:`V` (its first `scenarios` columns), for the first `count` jobs; `pivots[job]`
    := whether every pivot was positive and finite. Row by row, each entry a dot product in order."""
    rounds = lower.shape[0]
    for a in range(rounds):
        for b in range(a + 1):
            total = lower[a, b]
            for job in range(count):
                total[job] = 0.0
            _add_products(total, v[a], v[b], scenarios, count)
    for job in range(count):
        pivots[job] = True
    for j in range(rounds):
        row = lower[j]
        for a in range(j):
            _subtract_products(row[a], row, lower[a], a, count)
            for job in range(count):
                row[a, job] /= lower[a, a, job]
        for job in range(count):
            row[j, job] = 1.0 + row[j, job]
        _subtract_products(row[j], row, row, j, count)
        for job in range(count):
            pivot = row[j, job]
            pivots[job] &= (pivot > 0.0) & (pivot < np.inf)
            row[j, job] = np.sqrt(pivot)


@jit.inlined
def _loads(lower: np.ndarray, root: np.ndarray, vector: np.ndarray, pivots: np.ndarray,
           loads: np.ndarray) -> None:
    r"""`loads[job]` := :math:`\lVert L^{-1} x \rVert^2`, :math:`x = D^{-1/2} v`, for the chunk's jobs
    whose `pivots` were positive and finite."""
    count, rounds = root.shape
    x = np.empty((rounds, jit.CHUNK))
    for a in range(rounds):  # x := L^-1 x
        for job in range(count):
            x[a, job] = root[job, a] * vector[job, a]
        for b in range(a):
            for job in range(count):
                x[a, job] -= lower[a, b, job] * x[b, job]
        for job in range(count):
            x[a, job] /= lower[a, a, job]
    for job in range(count):
        if pivots[job]:
            total = 0.0
            for a in range(rounds):
                total += x[a, job] * x[a, job]
            loads[job] = total


@jit.inlined
def _cholesky_update(lower: np.ndarray, v: np.ndarray, count: int, factored: np.ndarray) -> None:
    r"""`lower[:, :, job]` := the Cholesky factor of :math:`L L^\top + v v^\top`, in place (lower
    triangle; `v[:, job]`, length T, is overwritten), for the first `count` jobs. Rotations, as in a
    QR update: stable for any size of `v` (an update, not a downdate). `factored[job]` := False where
    a pivot is not positive or not finite."""
    rounds = v.shape[0]
    cosine = np.empty(jit.CHUNK)
    sine = np.empty(jit.CHUNK)
    for j in range(rounds):
        for job in range(count):
            pivot = lower[j, j, job]
            radius = np.sqrt(pivot * pivot + v[j, job] * v[j, job])
            factored[job] &= (radius > 0.0) & (radius < np.inf)
            cosine[job] = radius / pivot
            sine[job] = v[j, job] / pivot
            lower[j, j, job] = radius
        for a in range(j + 1, rounds):
            for job in range(count):
                updated = (lower[a, j, job] + sine[job] * v[a, job]) / cosine[job]
                v[a, job] = cosine[job] * v[a, job] - sine[job] * updated
                lower[a, j, job] = updated


@jit.inlined
def _invert(lower: np.ndarray, count: int, inverse: np.ndarray) -> None:
    r"""`inverse[:, job]` := :math:`L^{-1}` (packed lower triangle), `lower[:, :, job]` holding :math:`L`,
    for the first `count` jobs."""
    rounds = lower.shape[0]
    row = np.empty((rounds, jit.CHUNK))
    scale = np.empty(jit.CHUNK)
    for a in range(rounds):  # row a of L^-1: (e_a - sum_m<a L[a, m] row m) / L[a, a]
        for b in range(a + 1):
            for job in range(count):
                row[b, job] = 0.0
        for m in range(a):
            for b in range(m + 1):
                for job in range(count):
                    row[b, job] -= lower[a, m, job] * inverse[packed(m) + b, job]
        for job in range(count):
            row[a, job] = 1.0
            scale[job] = 1.0 / lower[a, a, job]
        for b in range(a + 1):
            for job in range(count):
                inverse[packed(a) + b, job] = row[b, job] * scale[job]


@jit.inlined
def _solve_chunk(inverse: np.ndarray, count: int, x: np.ndarray) -> np.ndarray:
    r""":math:`L^{-\top} L^{-1}` `x[:, job]` for the first `count` jobs of a chunk, shape (T, CHUNK),
    `inverse` its (T (T + 1) / 2, CHUNK) packed :math:`L^{-1}`, `x` of shape (T, CHUNK).

    Each job's sums are those of the solve by rows, in its order: :math:`y_a = \sum_{b \le a}
    L^{-1}_{ab} x_b` over b, then :math:`\text{out}_b = \sum_{a \ge b} L^{-1}_{ab} y_a` over a, both
    from 0, with each row of :math:`L^{-1}` used for both while in cache."""
    rounds = x.shape[0]
    out = np.empty((rounds, jit.CHUNK))
    inner = np.empty(jit.CHUNK)
    for b in range(rounds):
        for job in range(count):
            out[b, job] = 0.0
    for a in range(rounds):
        for job in range(count):
            inner[job] = 0.0
        for b in range(a + 1):
            for job in range(count):
                inner[job] += inverse[packed(a) + b, job] * x[b, job]
        for b in range(a + 1):
            for job in range(count):
                out[b, job] += inverse[packed(a) + b, job] * inner[job]
    return out


@jit.over_jobs
def dense_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, vector: np.ndarray, g: np.ndarray,
                         out: np.ndarray, loads: np.ndarray) -> None:
    """`low_rank.inverse_blocks` for the dense factor :math:`F_i = L_i^{-1}`."""
    n, rounds = vector.shape
    partial = np.zeros((jit.chunks(n), rounds))
    for chunk in prange(jit.chunks(n)):
        first = chunk * jit.CHUNK
        count = min(n, first + jit.CHUNK) - first
        x = np.empty((rounds, jit.CHUNK))
        for job in range(count):
            for t in range(rounds):
                x[t, job] = root[first + job, t] * vector[first + job, t]
        solved = _solve_chunk(lower_inverse[chunk], count, x)
        sums = partial[chunk]
        for job in range(count):
            i = first + job
            for t in range(rounds):
                value = solved[t, job] * root[i, t]
                out[i, t] = value
                sums[t] += g[i, t] * value
    jit.add_chunks(partial, loads)


@jit.over_jobs
def dense_subtract_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, g: np.ndarray,
                                  correction: np.ndarray, out: np.ndarray) -> None:
    """`low_rank.subtract_inverse_blocks` for the dense factor :math:`F_i = L_i^{-1}`."""
    n, rounds = out.shape
    for chunk in prange(jit.chunks(n)):
        first = chunk * jit.CHUNK
        count = min(n, first + jit.CHUNK) - first
        x = np.empty((rounds, jit.CHUNK))
        for job in range(count):
            for t in range(rounds):
                x[t, job] = root[first + job, t] * g[first + job, t] * correction[t]
        solved = _solve_chunk(lower_inverse[chunk], count, x)
        for job in range(count):
            i = first + job
            for t in range(rounds):
                out[i, t] -= root[i, t] * solved[t, job]


@jit.over_jobs
def dense_times_diagonal(x: np.ndarray, lower_inverse: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i]` := :math:`L_i^{-1} \operatorname{diag}(x_i)` for every job, shape (n, T, T), `x` of
    shape (n, T); the upper triangles' entries are :math:`0 \cdot x_{ib}`, as in the product of the
    whole (T, T) factor."""
    n, rounds = x.shape
    for chunk in prange(jit.chunks(n)):
        first = chunk * jit.CHUNK
        inverse = lower_inverse[chunk]
        for i in range(first, min(n, first + jit.CHUNK)):
            job = i - first
            for a in range(rounds):
                for b in range(rounds):
                    out[i, a, b] = (inverse[packed(a) + b, job] if b <= a else 0.0) * x[i, b]
