r"""Compiled kernels for `saa_ipm`'s per-job blocks (Numba).

Each job's Newton block is :math:`D^{1/2} (I + V V^\top) D^{1/2}` with :math:`V` of shape
(T, S'), S' small (the scenarios plus one column for the FTF and efficiency rows). NumPy can
only treat the n blocks as whole-array passes, one temporary (n, S', T) or (n, T) array per
operation; at 900 jobs an interior-point iteration made ~600 such passes and spent most of its
time moving memory. These kernels run each operation as one loop over the jobs with the block's
few numbers in registers. Pure functions of their inputs, except that the results are written to
an ``out`` array the caller owns (the solver reuses its buffers across iterations).

Numba compiles them once per machine (``cache=True`` keeps the machine code beside this module);
they take float64 C-contiguous arrays, which is what `saa_ipm` passes.
"""

from __future__ import annotations

import numba
import numpy as np

#: The Jacobi rotations of `_eigen` stop when every off-diagonal entry is below this, relative to
#: the diagonal's largest: the eigenvalues are then exact to rounding.
_JACOBI_TOLERANCE = 1e-15
_JACOBI_SWEEPS = 30

#: Reassociation lets the compiler vectorize the short dot products (as BLAS does): the results
#: are as accurate, and the same on every run of the same build.
_compiled = numba.njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})


@_compiled
def _eigen(a: np.ndarray, vectors: np.ndarray) -> None:  # pragma: no cover - compiled
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


@_compiled
def low_rank_factor(scaled: np.ndarray, columns: np.ndarray, shrink: np.ndarray) -> None:  # pragma: no cover
    r"""For every job, :math:`F = I - P \operatorname{diag}(h) P^\top` with
    :math:`F^2 = (I + V V^\top)^{-1}`: :math:`V^\top V = U \Sigma^2 U^\top`, :math:`P = V U`,
    :math:`h = 1 / (\sqrt{1 + \sigma^2} (1 + \sqrt{1 + \sigma^2}))`.

    `scaled` holds :math:`V^\top`, shape (n, S', T); writes :math:`P^\top` to `columns`
    (n, S', T) and `h` to `shrink` (n, S').
    """
    n, k, rounds = scaled.shape
    gram = np.empty((k, k))
    rotation = np.empty((k, k))
    for i in range(n):
        v = scaled[i]
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
            shrink[i, p] = 1.0 / (root * (1.0 + root))
            for t in range(rounds):
                total = 0.0
                for q in range(k):
                    total += rotation[q, p] * v[q, t]
                columns[i, p, t] = total


@_compiled
def _root_times(columns: np.ndarray, shrink: np.ndarray, i: int, vector: np.ndarray,
                along: np.ndarray) -> None:  # pragma: no cover - compiled
    """`vector` := F_i `vector`, in place (length T); `along` is scratch of length S'."""
    k, rounds = columns.shape[1], columns.shape[2]
    for p in range(k):
        total = 0.0
        for t in range(rounds):
            total += columns[i, p, t] * vector[t]
        along[p] = shrink[i, p] * total
    for p in range(k):
        for t in range(rounds):
            vector[t] -= along[p] * columns[i, p, t]


@_compiled
def inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, vector: np.ndarray,
                   g: np.ndarray, out: np.ndarray, loads: np.ndarray) -> None:  # pragma: no cover
    r"""`out` := :math:`K_i^{-1} v_i = D_i^{-1/2} F_i F_i D_i^{-1/2} v_i` for every job, shape (n, T),
    and `loads` := :math:`\sum_i g_i \circ` `out`, shape (T,) (the capacity rows' image)."""
    n, k, rounds = columns.shape
    along = np.empty(k)
    loads[:] = 0.0
    for i in range(n):
        x = out[i]
        for t in range(rounds):
            x[t] = root[i, t] * vector[i, t]
        _root_times(columns, shrink, i, x, along)
        _root_times(columns, shrink, i, x, along)
        for t in range(rounds):
            x[t] *= root[i, t]
            loads[t] += g[i, t] * x[t]


@_compiled
def times_diagonal(columns: np.ndarray, shrink: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    r"""`out[i]` := :math:`F_i \operatorname{diag}(x_i)`, shape (n, T, T)."""
    n, k, rounds = columns.shape
    for i in range(n):
        block, column, scale = out[i], columns[i], x[i]
        for a in range(rounds):
            row = block[a]
            row[:] = 0.0
            for p in range(k):
                weight = column[p, a] * shrink[i, p]
                for b in range(rounds):  # contiguous in b: vectorized
                    row[b] -= weight * column[p, b]
            for b in range(rounds):
                row[b] *= scale[b]
            row[a] += scale[a]


@_compiled
def hessian_times(curvature: np.ndarray, diagonal: np.ndarray, vector: np.ndarray,
                  out: np.ndarray) -> None:  # pragma: no cover - compiled
    r"""`out` := :math:`(\operatorname{diag}(d_i) + \sum_s c_{is} c_{is}^\top) v_i` for every job,
    `curvature` the columns :math:`c_{is}`, shape (n, S', T)."""
    n, k, rounds = curvature.shape
    for i in range(n):
        for t in range(rounds):
            out[i, t] = diagonal[i, t] * vector[i, t]
        for p in range(k):
            total = 0.0
            for t in range(rounds):
                total += curvature[i, p, t] * vector[i, t]
            for t in range(rounds):
                out[i, t] += total * curvature[i, p, t]


@_compiled
def subtract_inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, g: np.ndarray,
                            correction: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover - compiled
    r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job: the Woodbury identity's second term,
    `correction` :math:`c` the capacity system's solution, shape (T,)."""
    n, k, rounds = columns.shape
    along = np.empty(k)
    x = np.empty(rounds)
    for i in range(n):
        for t in range(rounds):
            x[t] = root[i, t] * g[i, t] * correction[t]
        _root_times(columns, shrink, i, x, along)
        _root_times(columns, shrink, i, x, along)
        for t in range(rounds):
            out[i, t] -= root[i, t] * x[t]


@_compiled
def scaled_columns(progress: np.ndarray, beta: np.ndarray, u: np.ndarray, row: np.ndarray, active: np.ndarray,
                   diagonal: np.ndarray, regularization: float, curvature: np.ndarray, root: np.ndarray,
                   scaled: np.ndarray) -> None:  # pragma: no cover - compiled
    r"""The Hessian's columns and their scaled form, for every job.

    `curvature[i, s]` := :math:`\sqrt{\beta_i} / U_{si}\, a_{si}` for the S scenarios (`progress`
    :math:`a`, shape (n, S, T)) and, when `curvature` has a column more, `row[i]` on the active
    entries (the square root of the FTF and efficiency rows' curvature); `root` :=
    :math:`(d + \text{regularization})^{-1/2}` and `scaled` := `curvature` times `root`
    (:math:`V_i^\top`)."""
    n, scenarios, rounds = progress.shape
    extra = curvature.shape[1] > scenarios
    for i in range(n):
        for t in range(rounds):
            root[i, t] = 1.0 / np.sqrt(diagonal[i, t] + regularization)
        weight = np.sqrt(beta[i])
        for s in range(scenarios):
            factor = weight / u[i, s]
            for t in range(rounds):
                curvature[i, s, t] = factor * progress[i, s, t]
                scaled[i, s, t] = curvature[i, s, t] * root[i, t]
        if extra:
            for t in range(rounds):
                curvature[i, scenarios, t] = row[i] if active[i, t] else 0.0
                scaled[i, scenarios, t] = curvature[i, scenarios, t] * root[i, t]


@_compiled
def dense_factor(scaled: np.ndarray, lower_inverse: np.ndarray) -> bool:  # pragma: no cover - compiled
    r"""`lower_inverse[i]` := :math:`L_i^{-1}`, :math:`L_i L_i^\top = I + V_i V_i^\top` (Cholesky),
    `scaled` holding :math:`V_i^\top`, shape (n, S', T); the upper triangles are set to 0.
    False when a block is not numerically positive definite (a pivot not positive or not finite)."""
    n, k, rounds = scaled.shape
    lower = np.empty((rounds, rounds))
    for i in range(n):
        v = scaled[i]
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
        inverse = lower_inverse[i]
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


@_compiled
def _dense_inverse(lower_inverse: np.ndarray, i: int, x: np.ndarray, inner: np.ndarray) -> None:  # pragma: no cover
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


@_compiled
def dense_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, vector: np.ndarray, g: np.ndarray,
                         out: np.ndarray, loads: np.ndarray) -> None:  # pragma: no cover - compiled
    """`inverse_blocks` for the dense factor :math:`F_i = L_i^{-1}`."""
    n, rounds = vector.shape
    inner = np.empty(rounds)
    loads[:] = 0.0
    for i in range(n):
        x = out[i]
        for t in range(rounds):
            x[t] = root[i, t] * vector[i, t]
        _dense_inverse(lower_inverse, i, x, inner)
        for t in range(rounds):
            x[t] *= root[i, t]
            loads[t] += g[i, t] * x[t]


@_compiled
def dense_subtract_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, g: np.ndarray,
                                  correction: np.ndarray, out: np.ndarray) -> None:  # pragma: no cover
    """`subtract_inverse_blocks` for the dense factor :math:`F_i = L_i^{-1}`."""
    n, rounds = out.shape
    inner = np.empty(rounds)
    x = np.empty(rounds)
    for i in range(n):
        for t in range(rounds):
            x[t] = root[i, t] * g[i, t] * correction[t]
        _dense_inverse(lower_inverse, i, x, inner)
        for t in range(rounds):
            out[i, t] -= root[i, t] * x[t]
