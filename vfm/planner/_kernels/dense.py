r"""The Newton blocks' dense factor, compiled: :math:`L_i^{-1}` of the (T, T) Cholesky factor of
:math:`I + V_i V_i^\top` for every job, and the block solves with it.

The form `vfm.planner.saa_ipm_blocks.BlockFactor` takes when a job's block has more columns than
the low-rank form handles cheaply (`vfm.planner._kernels.low_rank`): :math:`O(T^3)` per job.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


@jit.over_jobs
def dense_factor(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray,
                 lower_inverse: np.ndarray, loads: np.ndarray) -> bool:
    r"""`lower_inverse[i]` := :math:`L_i^{-1}`, :math:`L_i L_i^\top = I + V_i V_i^\top` (Cholesky),
    `scaled` holding :math:`V_i^\top`, shape (n, S', T); the upper triangles are set to 0.
    False when a block is not numerically positive definite (a pivot not positive or not finite); every
    job is factored either way.

    The block without the rows' column (the first `scenarios` columns, when S' has one more) is
    factored first and the column added by a rank-one update of the factor, :math:`O(T^2)`; on
    the way, `loads[i]` := `low_rank.row_free_loads`'s :math:`a_i = \lVert L_{0,i}^{-1} x \rVert^2`,
    :math:`x = D^{-1/2} v` (`root` :math:`D^{-1/2}`, `vector` :math:`v`): the
    efficiency border's Schur complement needs it, and a second Cholesky per job for it cost
    ~18 % of an iteration at S = 16. Without the efficiency term `loads` is empty and skipped.

    A chunk's jobs are factored side by side: the scratch arrays' last axis is the job, so that the
    innermost loops, over the jobs, vectorize, while each job gets the same sequence of operations as
    alone. A job whose block is not positive definite is carried along, its outputs unwritten from the
    failing pivot on (its :math:`L^{-1}`; its load too when the pivot is the first factor's)."""
    n = scaled.shape[0]
    factored = np.empty(n, dtype=np.bool_)
    for chunk in prange(jit.chunks(n)):
        jobs = slice(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK))
        _factor_chunk(scaled[jobs], scenarios, root[jobs], vector[jobs], lower_inverse[jobs], loads[jobs],
                      factored[jobs])
    return bool(factored.all())


@jit.inlined
def _factor_chunk(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray,
                  lower_inverse: np.ndarray, loads: np.ndarray, factored: np.ndarray) -> None:
    """`dense_factor` for one chunk of jobs (`loads` empty without the efficiency term)."""
    count, k, rounds = scaled.shape
    v = np.empty((rounds, k, jit.CHUNK))
    for t in range(rounds):
        for p in range(k):
            for job in range(count):
                v[t, p, job] = scaled[job, p, t]
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
    _invert(lower, count)
    for job in range(count):
        if factored[job]:
            for a in range(rounds):
                for b in range(rounds):
                    lower_inverse[job, a, b] = lower[a, b, job] if b <= a else 0.0


@jit.inlined
def _cholesky(v: np.ndarray, scenarios: int, count: int, lower: np.ndarray, pivots: np.ndarray) -> None:
    r"""`lower[:, :, job]` := :math:`L` with :math:`L L^\top = I + V V^\top` (lower triangle), `v[:, :,
    job]` holding :math:`V` (its first `scenarios` columns), for the first `count` jobs; `pivots[job]`
    := whether every pivot was positive and finite."""
    rounds = lower.shape[0]
    for a in range(rounds):
        for b in range(a + 1):
            for job in range(count):
                lower[a, b, job] = 0.0
    for p in range(scenarios):
        for a in range(rounds):
            for b in range(a + 1):
                for job in range(count):
                    lower[a, b, job] += v[a, p, job] * v[b, p, job]
    for job in range(count):
        pivots[job] = True
    for a in range(rounds):
        for job in range(count):
            lower[a, a, job] = 1.0 + lower[a, a, job]
    # Right-looking, a column at a time: each entry gets the same subtractions, in the same order, as
    # in the dot products of the row-by-row form, without a chain of dependent operations per row.
    for m in range(rounds):
        for job in range(count):
            pivot = lower[m, m, job]
            pivots[job] &= (pivot > 0.0) & (pivot < np.inf)
            lower[m, m, job] = np.sqrt(pivot)
        for a in range(m + 1, rounds):
            for job in range(count):
                lower[a, m, job] /= lower[m, m, job]
        for a in range(m + 1, rounds):
            for b in range(m + 1, a + 1):
                for job in range(count):
                    lower[a, b, job] -= lower[a, m, job] * lower[b, m, job]


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
def _invert(lower: np.ndarray, count: int) -> None:
    r"""`lower[:, :, job]` := :math:`L^{-1}`, in place (lower triangle), for the first `count` jobs."""
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
                    row[b, job] -= lower[a, m, job] * lower[m, b, job]
        for job in range(count):
            row[a, job] = 1.0
            scale[job] = 1.0 / lower[a, a, job]
        for b in range(a + 1):
            for job in range(count):
                lower[a, b, job] = row[b, job] * scale[job]


@jit.inlined
def _dense_inverse(lower_inverse: np.ndarray, i: int, x: np.ndarray, inner: np.ndarray) -> None:
    r"""`x` := :math:`L_i^{-\top} L_i^{-1}` `x`, in place (length T); `inner` is scratch of length T."""
    rounds = x.shape[0]
    inverse = lower_inverse[i]
    for a in range(rounds):
        total = 0.0
        for b in range(a + 1):
            total += inverse[a, b] * x[b]
        inner[a] = total
    for b in range(rounds):
        x[b] = 0.0
    for a in range(rounds):
        for b in range(a + 1):
            x[b] += inverse[a, b] * inner[a]


@jit.over_jobs
def dense_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, vector: np.ndarray, g: np.ndarray,
                         out: np.ndarray, loads: np.ndarray) -> None:
    """`low_rank.inverse_blocks` for the dense factor :math:`F_i = L_i^{-1}`."""
    n, rounds = vector.shape
    partial = np.zeros((jit.chunks(n), rounds))
    for chunk in prange(jit.chunks(n)):
        inner = np.empty(rounds)
        sums = partial[chunk]
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            x = out[i]
            for t in range(rounds):
                x[t] = root[i, t] * vector[i, t]
            _dense_inverse(lower_inverse, i, x, inner)
            for t in range(rounds):
                x[t] *= root[i, t]
                sums[t] += g[i, t] * x[t]
    jit.add_chunks(partial, loads)


@jit.over_jobs
def dense_subtract_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, g: np.ndarray,
                                  correction: np.ndarray, out: np.ndarray) -> None:
    """`low_rank.subtract_inverse_blocks` for the dense factor :math:`F_i = L_i^{-1}`."""
    n, rounds = out.shape
    for chunk in prange(jit.chunks(n)):
        inner = np.empty(rounds)
        x = np.empty(rounds)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                x[t] = root[i, t] * g[i, t] * correction[t]
            _dense_inverse(lower_inverse, i, x, inner)
            for t in range(rounds):
                out[i, t] -= root[i, t] * x[t]
