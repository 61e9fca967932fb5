r"""The Newton blocks' dense factor, compiled: :math:`L_i^{-1}` of the (T, T) Cholesky factor of
:math:`I + V_i V_i^\top` for every job, and the block solves with it.

The form `vfm.planner.saa_ipm_blocks.BlockFactor` takes when a job's block has more columns than
the low-rank form handles cheaply (`vfm.planner._kernels.low_rank`): :math:`O(T^3)` per job.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


@jit.inlined
def _cholesky(v: np.ndarray, lower: np.ndarray) -> bool:
    r"""`lower` := :math:`L` with :math:`L L^\top = I + V V^\top` (lower triangle; the upper holds
    :math:`V V^\top`'s), `v` holding :math:`V^\top` (k, T). False when a pivot is not positive or
    not finite."""
    k, rounds = v.shape
    lower[:] = 0.0
    for p in range(k):  # the lower triangle of V V^T, rows contiguous
        for a in range(rounds):
            weight = v[p, a]
            for b in range(a + 1):
                lower[a, b] += weight * v[p, b]
    for j in range(rounds):  # Cholesky, row by row
        for a in range(j):
            total = lower[j, a]
            for m in range(a):
                total -= lower[j, m] * lower[a, m]
            lower[j, a] = total / lower[a, a]
        pivot = 1.0 + lower[j, j]
        for m in range(j):
            pivot -= lower[j, m] * lower[j, m]
        if not (pivot > 0.0 and pivot < np.inf):
            return False
        lower[j, j] = np.sqrt(pivot)
    return True


@jit.inlined
def _cholesky_update(lower: np.ndarray, v: np.ndarray) -> bool:
    r"""`lower` := the Cholesky factor of :math:`L L^\top + v v^\top`, in place (lower triangle;
    `v`, length T, is overwritten). Rotations, as in a QR update: stable for any size of `v`
    (an update, not a downdate). False when a pivot is not positive or not finite."""
    rounds = v.shape[0]
    for j in range(rounds):
        pivot = lower[j, j]
        radius = np.sqrt(pivot * pivot + v[j] * v[j])
        if not (radius > 0.0 and radius < np.inf):
            return False
        c = radius / pivot
        s = v[j] / pivot
        lower[j, j] = radius
        for a in range(j + 1, rounds):
            updated = (lower[a, j] + s * v[a]) / c
            v[a] = c * v[a] - s * updated
            lower[a, j] = updated
    return True


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
    ~18 % of an iteration at S = 16. Without the efficiency term `loads` is empty and skipped."""
    n, _, rounds = scaled.shape
    factored = np.empty(n, dtype=np.bool_)
    for chunk in prange(jit.chunks(n)):
        lower = np.empty((rounds, rounds))
        x = np.empty(rounds)
        column = np.empty(rounds)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            factored[i] = _factor_job(scaled[i], scenarios, root[i], vector[i], lower_inverse[i], loads, i, lower,
                                      x, column)
    return bool(factored.all())


@jit.inlined
def _factor_job(v: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray, inverse: np.ndarray,
                loads: np.ndarray, i: int, lower: np.ndarray, x: np.ndarray, column: np.ndarray) -> bool:
    """`dense_factor` for one job (`v` its (S', T) columns, `inverse` its :math:`L^{-1}`, `loads[i]` its
    load); `lower`, `x` and `column` are scratch. False when its block is not positive definite."""
    k, rounds = v.shape
    if not _cholesky(v[:scenarios], lower):
        return False
    if loads.shape[0]:
        for t in range(rounds):
            x[t] = root[t] * vector[t]
        total = 0.0
        for a in range(rounds):  # x := L0^-1 x
            value = x[a]
            for b in range(a):
                value -= lower[a, b] * x[b]
            value /= lower[a, a]
            x[a] = value
            total += value * value
        loads[i] = total
    if k > scenarios:
        for t in range(rounds):
            column[t] = v[scenarios, t]
        if not _cholesky_update(lower, column):
            return False
    inverse[:] = 0.0
    for a in range(rounds):  # row a of L^-1: (e_a - sum_m<a L[a, m] row m) / L[a, a]
        row = inverse[a]
        for m in range(a):
            weight = lower[a, m]
            previous = inverse[m]
            for b in range(m + 1):
                row[b] -= weight * previous[b]
        row[a] = 1.0
        scale = 1.0 / lower[a, a]
        for b in range(a + 1):
            row[b] *= scale
    return True


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
