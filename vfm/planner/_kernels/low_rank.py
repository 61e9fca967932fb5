r"""The Newton blocks' low-rank factor, compiled: its symmetric root and the block solves with it.

Each job's Newton block is :math:`D^{1/2} (I + V V^\top) D^{1/2}` with :math:`V` of shape
(T, S'), S' small (the scenarios plus one column for the FTF and efficiency rows). Its factor
:math:`F = I - P \operatorname{diag}(h) P^\top`, :math:`F^2 = (I + V V^\top)^{-1}`, comes from an
(S', S') eigendecomposition (cyclic Jacobi, a block's few numbers in registers); the kernels here
form it for every job and apply it: the block inverses and their capacity loads, the Woodbury
identity's second term, :math:`F \operatorname{diag}(x)` and the capacity Gram matrix's terms
(`vfm.planner.solve.ipm.blocks.BlockFactor`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit

#: The Jacobi rotations of `_eigen` stop when every off-diagonal entry is below this, relative to
#: the diagonal's largest: the eigenvalues are then exact to rounding.
_JACOBI_TOLERANCE = 1e-15
_JACOBI_SWEEPS = 30


@jit.inlined
def _eigen(a: np.ndarray, vectors: np.ndarray) -> None:
    """Cyclic Jacobi on a small symmetric `a`, in place: its diagonal becomes the eigenvalues and
    `vectors` (set to the identity by the caller) their eigenvectors, as columns."""
    k = a.shape[0]
    for _ in range(_JACOBI_SWEEPS):
        off = 0.0
        scale = 0.0
        for p in range(k):
            scale = max(scale, abs(a[p, p]))
            for q in range(p + 1, k):
                off = max(off, abs(a[p, q]))
        if off <= _JACOBI_TOLERANCE * scale:
            return
        for p in range(k - 1):
            for q in range(p + 1, k):
                if a[p, q] == 0.0:
                    continue
                theta = (a[q, q] - a[p, p]) / (2.0 * a[p, q])
                t = (1.0 if theta >= 0 else -1.0) / (abs(theta) + np.sqrt(theta * theta + 1.0))
                c = 1.0 / np.sqrt(t * t + 1.0)
                s = t * c
                for r in range(k):
                    arp, arq = a[r, p], a[r, q]
                    a[r, p] = c * arp - s * arq
                    a[r, q] = s * arp + c * arq
                for r in range(k):
                    apr, aqr = a[p, r], a[q, r]
                    a[p, r] = c * apr - s * aqr
                    a[q, r] = s * apr + c * aqr
                for r in range(k):
                    vrp, vrq = vectors[r, p], vectors[r, q]
                    vectors[r, p] = c * vrp - s * vrq
                    vectors[r, q] = s * vrp + c * vrq


@jit.inlined
def _job_root(v: np.ndarray, gram: np.ndarray, rotation: np.ndarray, column: np.ndarray,
              shrink: np.ndarray) -> None:
    r"""One job's symmetric root :math:`F = I - P \operatorname{diag}(h) P^\top` of
    :math:`(I + V V^\top)^{-1}`, `v` holding :math:`V^\top` (k, T): writes :math:`P^\top` to
    `column` (k, T) and `h` to `shrink` (k,); `gram` and `rotation` are (k, k) scratch."""
    k, rounds = v.shape
    for p in range(k):
        for q in range(p, k):
            total = 0.0
            for t in range(rounds):
                total += v[p, t] * v[q, t]
            gram[p, q] = total
            gram[q, p] = total
    rotation[:] = 0.0
    for p in range(k):
        rotation[p, p] = 1.0
    _eigen(gram, rotation)
    for p in range(k):
        root = np.sqrt(1.0 + max(gram[p, p], 0.0))
        shrink[p] = 1.0 / (root * (1.0 + root))
        for t in range(rounds):
            total = 0.0
            for q in range(k):
                total += rotation[q, p] * v[q, t]
            column[p, t] = total


@jit.over_jobs
def low_rank_factor(scaled: np.ndarray, columns: np.ndarray, shrink: np.ndarray) -> None:
    r"""For every job, :math:`F = I - P \operatorname{diag}(h) P^\top` with
    :math:`F^2 = (I + V V^\top)^{-1}`: :math:`V^\top V = U \Sigma^2 U^\top`, :math:`P = V U`,
    :math:`h = 1 / (\sqrt{1 + \sigma^2} (1 + \sqrt{1 + \sigma^2}))`.

    `scaled` holds :math:`V^\top`, shape (n, S', T); writes :math:`P^\top` to `columns`
    (n, S', T) and `h` to `shrink` (n, S').
    """
    n, k, _ = scaled.shape
    for chunk in prange(jit.chunks(n)):
        gram = np.empty((k, k))
        rotation = np.empty((k, k))
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            _job_root(scaled[i], gram, rotation, columns[i], shrink[i])


@jit.inlined
def _root_times(column: np.ndarray, shrink: np.ndarray, vector: np.ndarray, along: np.ndarray, times: int) -> None:
    """`vector` := F^times `vector`, in place, for one job: `column` its P^T (S', T), `shrink` its h (S',);
    `along` is scratch of length S'. (F twice for the inverse, not I - P diag(2h - h^2 s^2) P^T: the
    same in exact arithmetic, but the difference loses digits where the inverse is small.)"""
    k, rounds = column.shape
    for _ in range(times):
        # The columns' dot products two at a time, each in the order of the rounds: two chains of
        # additions that overlap instead of waiting on each other (the same floats as one by one).
        p = 0
        while p + 2 <= k:
            first = second = 0.0
            for t in range(rounds):
                first += column[p, t] * vector[t]
                second += column[p + 1, t] * vector[t]
            along[p], along[p + 1] = shrink[p] * first, shrink[p + 1] * second
            p += 2
        if p < k:
            total = 0.0
            for t in range(rounds):
                total += column[p, t] * vector[t]
            along[p] = shrink[p] * total
        # Their terms subtracted two columns per pass, in column order.
        p = 0
        while p + 2 <= k:
            first, second = along[p], along[p + 1]
            for t in range(rounds):
                vector[t] = vector[t] - first * column[p, t] - second * column[p + 1, t]
            p += 2
        if p < k:
            weight = along[p]
            for t in range(rounds):
                vector[t] -= weight * column[p, t]


@jit.over_jobs
def inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, vector: np.ndarray,
                   g: np.ndarray, out: np.ndarray, loads: np.ndarray) -> None:
    r"""`out` := :math:`K_i^{-1} v_i = D_i^{-1/2} F_i F_i D_i^{-1/2} v_i` for every job, shape (n, T),
    and `loads` := :math:`\sum_i g_i \circ` `out`, shape (T,) (the capacity rows' image, summed
    chunk by chunk: `jit.CHUNK`)."""
    n, k, rounds = columns.shape
    partial = np.zeros((jit.chunks(n), rounds))
    for chunk in prange(jit.chunks(n)):
        along = np.empty(k)
        x = np.empty(rounds)
        sums = partial[chunk]
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                x[t] = root[i, t] * vector[i, t]
            _root_times(columns[i], shrink[i], x, along, 2)
            for t in range(rounds):
                value = root[i, t] * x[t]
                out[i, t] = value
                sums[t] += g[i, t] * value
    jit.add_chunks(partial, loads)


@jit.over_jobs
def subtract_inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, g: np.ndarray,
                            correction: np.ndarray, out: np.ndarray) -> None:
    r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job: the Woodbury identity's second term,
    `correction` :math:`c` the capacity system's solution, shape (T,)."""
    n, k, rounds = columns.shape
    for chunk in prange(jit.chunks(n)):
        along = np.empty(k)
        x = np.empty(rounds)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                x[t] = root[i, t] * g[i, t] * correction[t]
            _root_times(columns[i], shrink[i], x, along, 2)
            for t in range(rounds):
                out[i, t] -= root[i, t] * x[t]


@jit.inlined
def _block_times_diagonal(column: np.ndarray, shrink: np.ndarray, scale: np.ndarray, block: np.ndarray) -> None:
    """`block` := F diag(`scale`) for one job: `column` its P^T (S', T), `shrink` its h (S',)."""
    k, rounds = column.shape
    for a in range(rounds):
        row = block[a]
        row[:] = 0.0
        for p in range(k):
            weight = column[p, a] * shrink[p]
            for b in range(rounds):  # contiguous in b: vectorized
                row[b] -= weight * column[p, b]
        for b in range(rounds):
            row[b] *= scale[b]
        row[a] += scale[a]


@jit.over_jobs
def times_diagonal(columns: np.ndarray, shrink: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i]` := :math:`F_i \operatorname{diag}(x_i)`, shape (n, T, T)."""
    n = columns.shape[0]
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            _block_times_diagonal(columns[i], shrink[i], x[i], out[i])


@jit.inlined
def _largest_square(column: np.ndarray, squared: np.ndarray) -> float:
    """`squared` := the squared norms of a job's rows of :math:`P^\top` (S', T); returns the largest."""
    k, rounds = column.shape
    largest = 0.0
    for p in range(k):
        total = 0.0
        for t in range(rounds):
            total += column[p, t] * column[p, t]
        squared[p] = total
        largest = max(largest, total)
    return largest


@jit.over_jobs
def curved_jobs(columns: np.ndarray, limit: float, curved: np.ndarray) -> int:
    r"""`curved[i]` := whether job i's largest :math:`\sigma_p^2 = |P e_p|^2` is above `limit`
    (`gram_pieces`); returns how many are."""
    n, k, _ = columns.shape
    for chunk in prange(jit.chunks(n)):
        squared = np.empty(k)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            curved[i] = not _largest_square(columns[i], squared) <= limit
    total = 0
    for i in range(n):
        total += curved[i]
    return total


@jit.over_jobs
def gram_pieces(columns: np.ndarray, shrink: np.ndarray, x: np.ndarray, curved: np.ndarray, rows: np.ndarray,
                weighted: np.ndarray, diagonal: np.ndarray) -> None:
    r"""The capacity Gram matrix's terms job by job (`vfm.planner.solve.ipm.blocks.BlockFactor.gram`), from the
    low-rank factors `columns` :math:`P^\top` (n, S', T) and `shrink` (n, S'), given the jobs
    `curved` (`curved_jobs`).

    A job not curved: `rows[i]` := :math:`(1 + \sigma_p^2)^{-1/2} P e_p \circ x_i` (S', T) and
    `diagonal` += :math:`x_i^2` (summed chunk by chunk: `jit.CHUNK`). A curved job: `rows[i]` := 0
    and the next of `weighted` (m, T, T), in job order, := :math:`F_i \operatorname{diag}(x_i)`."""
    n, k, rounds = columns.shape
    place = np.empty(n, dtype=np.int64)  # where each curved job's block goes in `weighted`
    m = 0
    for i in range(n):
        place[i] = m
        m += curved[i]
    partial = np.zeros((jit.chunks(n), rounds))
    for chunk in prange(jit.chunks(n)):
        squared = np.empty(k)
        sums = partial[chunk]
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            column, scale = columns[i], x[i]
            if curved[i]:
                rows[i] = 0.0
                _block_times_diagonal(column, shrink[i], scale, weighted[place[i]])
                continue
            _largest_square(column, squared)
            for p in range(k):
                weight = 1.0 / np.sqrt(1.0 + squared[p])
                for t in range(rounds):
                    rows[i, p, t] = weight * column[p, t] * scale[t]
            for t in range(rounds):
                sums[t] += scale[t] * scale[t]
    jit.add_chunks(partial, diagonal)


@jit.over_jobs
def row_free_loads(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i]` := :math:`\lVert F_i D_i^{-1/2} v_i \rVert^2`, :math:`F_i^\top F_i = (I + V_{S,i}
    V_{S,i}^\top)^{-1}` with :math:`V_{S,i}` the first `scenarios` columns of `scaled` (shape (n, S', T)),
    `root` :math:`D^{-1/2}` and `vector` :math:`v` (n, T): with :math:`v_i` the rows' coefficients
    (1 on job i's active entries, on one GPU type), :math:`a_i = v_i^\top K_{0,i}^{-1} v_i` for its
    block :math:`K_{0,i} = D_i^{1/2} (I + V_{S,i} V_{S,i}^\top) D_i^{1/2}` without the rows' column.

    As :math:`\lVert F x \rVert^2`, :math:`x = D^{-1/2} v`, with the symmetric root of
    `low_rank_factor`: accurate to rounding relative to :math:`a_i` itself. For the low-rank form;
    `dense.dense_factor` computes the same from its Cholesky factors."""
    n, _, rounds = scaled.shape
    k = scenarios
    for chunk in prange(jit.chunks(n)):
        gram = np.empty((k, k))
        rotation = np.empty((k, k))
        x = np.empty(rounds)
        along = np.empty(k)
        column = np.empty((k, rounds))
        shrink = np.empty(k)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                x[t] = root[i, t] * vector[i, t]
            _job_root(scaled[i, :k], gram, rotation, column, shrink)
            _root_times(column, shrink, x, along, 1)  # once: a = |F x|^2
            total = 0.0
            for t in range(rounds):
                total += x[t] * x[t]
            out[i] = total
