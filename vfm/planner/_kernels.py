r"""Compiled kernels of `saa_ipm`'s iteration and of `polish`'s Lagrangian minimizer (Numba).

Each job's Newton block is :math:`D^{1/2} (I + V V^\top) D^{1/2}` with :math:`V` of shape
(T, S'), S' small (the scenarios plus one column for the FTF and efficiency rows), and a point's
evaluation, right-hand side and back-substitution are a few operations per entry. NumPy can only
run them as whole-array passes, one call and one temporary (n, S', T) or (n, T) array each, so an
iteration over hundreds of jobs is mostly Python-level calls. These kernels run each step as one
loop over the jobs with a block's few numbers in registers. Pure functions of their inputs,
except that results are written to ``out`` arrays the caller owns (the solver reuses its buffers
across iterations).

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

#: No fast-math: reassociating the short sums changed the last digits enough that, at the end of
#: some 900-job solves, the Newton systems' conjugate gradients no longer converged (the solve
#: stopped at a relative gap of 1.1e-9 instead of 1e-9). NumPy's error model: a division by zero
#: gives inf or NaN as in NumPy (the solver guards against them) instead of raising, which also
#: lets loops with divisions vectorize.
_compiled = numba.njit(cache=True, nogil=True, error_model="numpy")
#: Helpers called from the kernels: inlined, so that their loops see the caller's arrays.
_inlined = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")


@_inlined
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


@_inlined
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


@_compiled
def low_rank_factor(scaled: np.ndarray, columns: np.ndarray, shrink: np.ndarray) -> None:
    r"""For every job, :math:`F = I - P \operatorname{diag}(h) P^\top` with
    :math:`F^2 = (I + V V^\top)^{-1}`: :math:`V^\top V = U \Sigma^2 U^\top`, :math:`P = V U`,
    :math:`h = 1 / (\sqrt{1 + \sigma^2} (1 + \sqrt{1 + \sigma^2}))`.

    `scaled` holds :math:`V^\top`, shape (n, S', T); writes :math:`P^\top` to `columns`
    (n, S', T) and `h` to `shrink` (n, S').
    """
    n, k, _ = scaled.shape
    gram = np.empty((k, k))
    rotation = np.empty((k, k))
    for i in range(n):
        _job_root(scaled[i], gram, rotation, columns[i], shrink[i])


@_inlined
def _root_times(column: np.ndarray, shrink: np.ndarray, vector: np.ndarray, along: np.ndarray, times: int) -> None:
    """`vector` := F^times `vector`, in place, for one job: `column` its P^T (S', T), `shrink` its h (S',);
    `along` is scratch of length S'. (F twice for the inverse, not I - P diag(2h - h^2 s^2) P^T: the
    same in exact arithmetic, but the difference loses digits where the inverse is small.)"""
    k, rounds = column.shape
    for _ in range(times):
        for p in range(k):
            total = 0.0
            for t in range(rounds):
                total += column[p, t] * vector[t]
            along[p] = shrink[p] * total
        for p in range(k):
            weight = along[p]
            for t in range(rounds):
                vector[t] -= weight * column[p, t]


@_compiled
def inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, vector: np.ndarray,
                   g: np.ndarray, out: np.ndarray, loads: np.ndarray) -> None:
    r"""`out` := :math:`K_i^{-1} v_i = D_i^{-1/2} F_i F_i D_i^{-1/2} v_i` for every job, shape (n, T),
    and `loads` := :math:`\sum_i g_i \circ` `out`, shape (T,) (the capacity rows' image)."""
    n, k, rounds = columns.shape
    along = np.empty(k)
    x = np.empty(rounds)
    loads[:] = 0.0
    for i in range(n):
        for t in range(rounds):
            x[t] = root[i, t] * vector[i, t]
        _root_times(columns[i], shrink[i], x, along, 2)
        for t in range(rounds):
            value = root[i, t] * x[t]
            out[i, t] = value
            loads[t] += g[i, t] * value


@_inlined
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


@_compiled
def times_diagonal(columns: np.ndarray, shrink: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i]` := :math:`F_i \operatorname{diag}(x_i)`, shape (n, T, T)."""
    for i in range(columns.shape[0]):
        _block_times_diagonal(columns[i], shrink[i], x[i], out[i])


@_compiled
def gram_pieces(columns: np.ndarray, shrink: np.ndarray, x: np.ndarray, limit: float, rows: np.ndarray,
                weighted: np.ndarray, diagonal: np.ndarray) -> int:
    r"""The capacity Gram matrix's terms job by job (`saa_ipm._BlockFactor.gram`), from the
    low-rank factors `columns` :math:`P^\top` (n, S', T) and `shrink` (n, S').

    A job whose largest :math:`\sigma_p^2 = |P e_p|^2` is at most `limit`: `rows[i]` :=
    :math:`(1 + \sigma_p^2)^{-1/2} P e_p \circ x_i` (S', T) and `diagonal` += :math:`x_i^2`. Any other
    job: `rows[i]` := 0 and the next of `weighted` (m, T, T) := :math:`F_i \operatorname{diag}(x_i)`.
    Returns m, the number of the latter."""
    n, k, rounds = columns.shape
    squared = np.empty(k)
    diagonal[:] = 0.0
    m = 0
    for i in range(n):
        column, scale = columns[i], x[i]
        largest = 0.0
        for p in range(k):
            total = 0.0
            for t in range(rounds):
                total += column[p, t] * column[p, t]
            squared[p] = total
            largest = max(largest, total)
        if largest <= limit:
            for p in range(k):
                weight = 1.0 / np.sqrt(1.0 + squared[p])
                for t in range(rounds):
                    rows[i, p, t] = weight * column[p, t] * scale[t]
            for t in range(rounds):
                diagonal[t] += scale[t] * scale[t]
            continue
        rows[i] = 0.0
        _block_times_diagonal(column, shrink[i], scale, weighted[m])
        m += 1
    return m


@_compiled
def hessian_times(curvature: np.ndarray, diagonal: np.ndarray, g: np.ndarray, prices_term: np.ndarray,
                  vector: np.ndarray, out: np.ndarray) -> None:
    r"""`out` := :math:`(\operatorname{diag}(d_i) + \sum_s c_{is} c_{is}^\top) v_i + g_i \circ p` for every
    job, `curvature` the columns :math:`c_{is}`, shape (n, S', T), `prices_term` :math:`p` (T,) (the
    capacity rows' part, :math:`\lambda / s_c` times the load of `vector`)."""
    n, k, rounds = curvature.shape
    for i in range(n):
        for t in range(rounds):
            out[i, t] = diagonal[i, t] * vector[i, t] + g[i, t] * prices_term[t]
        for p in range(k):
            total = 0.0
            for t in range(rounds):
                total += curvature[i, p, t] * vector[i, t]
            for t in range(rounds):
                out[i, t] += total * curvature[i, p, t]


@_compiled
def subtract_inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, g: np.ndarray,
                            correction: np.ndarray, out: np.ndarray) -> None:
    r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job: the Woodbury identity's second term,
    `correction` :math:`c` the capacity system's solution, shape (T,)."""
    n, k, rounds = columns.shape
    along = np.empty(k)
    x = np.empty(rounds)
    for i in range(n):
        for t in range(rounds):
            x[t] = root[i, t] * g[i, t] * correction[t]
        _root_times(columns[i], shrink[i], x, along, 2)
        for t in range(rounds):
            out[i, t] -= root[i, t] * x[t]


@_compiled
def scaled_columns(progress: np.ndarray, weights: np.ndarray, u: np.ndarray, row: np.ndarray,
                   diagonal: np.ndarray, regularization: float, curvature: np.ndarray, root: np.ndarray,
                   scaled: np.ndarray) -> None:
    r"""The Hessian's columns and their scaled form, for every job.

    `curvature[i, s]` := :math:`\sqrt{w_{si} / U_{si}}\, a_{si}` for the S scenarios (`progress`
    :math:`a`, shape (n, S, T); `weights` :math:`w` (n, S) the logarithms' multipliers, whose value
    :math:`\beta_i / U_{si}` gives the Hessian of F) and, when `curvature` has a column more, `row` (n, T) (the
    square root of the FTF and efficiency rows' curvature times the entries' pace, 0 off the
    active entries); `root` :=
    :math:`(d + \text{regularization})^{-1/2}` and `scaled` := `curvature` times `root`
    (:math:`V_i^\top`)."""
    n, scenarios, rounds = progress.shape
    extra = curvature.shape[1] > scenarios
    for i in range(n):
        for t in range(rounds):
            root[i, t] = 1.0 / np.sqrt(diagonal[i, t] + regularization)
        for s in range(scenarios):
            factor = np.sqrt(weights[i, s] / u[i, s])
            for t in range(rounds):
                curvature[i, s, t] = factor * progress[i, s, t]
                scaled[i, s, t] = curvature[i, s, t] * root[i, t]
        if extra:
            for t in range(rounds):
                curvature[i, scenarios, t] = row[i, t]
                scaled[i, scenarios, t] = curvature[i, scenarios, t] * root[i, t]


@_inlined
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


@_inlined
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


@_compiled
def dense_factor(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray,
                 lower_inverse: np.ndarray, loads: np.ndarray) -> bool:
    r"""`lower_inverse[i]` := :math:`L_i^{-1}`, :math:`L_i L_i^\top = I + V_i V_i^\top` (Cholesky),
    `scaled` holding :math:`V_i^\top`, shape (n, S', T); the upper triangles are set to 0.
    False when a block is not numerically positive definite (a pivot not positive or not finite).

    The block without the rows' column (the first `scenarios` columns, when S' has one more) is
    factored first and the column added by a rank-one update of the factor, :math:`O(T^2)`; on
    the way, `loads[i]` := `row_free_loads`'s :math:`a_i = \lVert L_{0,i}^{-1} x \rVert^2`,
    :math:`x = D^{-1/2} v` (`root` :math:`D^{-1/2}`, `vector` :math:`v`): the
    efficiency border's Schur complement needs it, and a second Cholesky per job for it cost
    ~18 % of an iteration at S = 16. Without the efficiency term `loads` is empty and skipped."""
    n, k, rounds = scaled.shape
    lower = np.empty((rounds, rounds))
    x = np.empty(rounds)
    column = np.empty(rounds)
    for i in range(n):
        if not _cholesky(scaled[i, :scenarios], lower):
            return False
        if loads.shape[0]:
            for t in range(rounds):
                x[t] = root[i, t] * vector[i, t]
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
                column[t] = scaled[i, scenarios, t]
            if not _cholesky_update(lower, column):
                return False
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


@_inlined
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


@_compiled
def dense_inverse_blocks(root: np.ndarray, lower_inverse: np.ndarray, vector: np.ndarray, g: np.ndarray,
                         out: np.ndarray, loads: np.ndarray) -> None:
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
                                  correction: np.ndarray, out: np.ndarray) -> None:
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


@_compiled
def evaluate_entries(progress: np.ndarray, base: np.ndarray, beta: np.ndarray, spread: np.ndarray,
                     active: np.ndarray, g: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray,
                     z_hi: np.ndarray, prices: np.ndarray, rows: np.ndarray, pace: np.ndarray, weights: np.ndarray,
                     own_weights: bool, u: np.ndarray, dual_residual: np.ndarray, primal_residual: np.ndarray,
                     running: np.ndarray) -> tuple[float, float, float, float, float]:
    r"""`saa_ipm`'s point evaluation over the (n, T) entries, in one pass.

    Writes the utilities `u` (n, S), the dual residual :math:`q - z^{lo} + z^{hi}` (`dual_residual`,
    0 off `active`; :math:`q = -\sum_s w_s a_s + \nabla \text{spread} + g \lambda - r`, with the
    logarithms' multipliers `weights` :math:`w` (n, S) if `own_weights`, else their values
    :math:`\beta / U`; `rows` :math:`r` (n, T) the rows' multipliers' part of the gradient of the
    Lagrangian on each entry), the same with :math:`w = \beta / U` (`primal_residual`: with the true
    gradient of F) and the rows' running sums
    :math:`\sum_t p_{it} y_{it}` (`running`, `pace` :math:`p`); returns
    :math:`F(y)`, the bounds' complementarity :math:`\sum y z^{lo} + s^{hi} z^{hi}`, the dual residual
    weighted by the box :math:`\sum |q - z^{lo} + z^{hi}| \max(y, s^{hi})`, the bounds' part of
    the certified gap :math:`\sum q^+ y + q^- s^{hi}` (at the true gradient) and the logarithms'
    residual :math:`\sum |w U - \beta|` (0 without `own_weights`)."""
    n, scenarios, rounds = progress.shape
    value = 0.0
    complementarity = 0.0
    residual_norm = 0.0
    gap = 0.0
    log_residual = 0.0
    weight = np.empty(scenarios)
    true_weight = np.empty(scenarios)
    for i in range(n):
        squares = 0.0
        total_y = 0.0
        for s in range(scenarios):
            total = base[i]
            for t in range(rounds):
                total += progress[i, s, t] * y[i, t]
            u[i, s] = total
            value -= beta[i] * np.log(total)
            true_weight[s] = beta[i] / total
            if own_weights:
                weight[s] = weights[i, s]
                log_residual += abs(weights[i, s] * total - beta[i])
            else:
                weight[s] = true_weight[s]
        for t in range(rounds):
            if not active[i, t]:
                dual_residual[i, t] = 0.0
                primal_residual[i, t] = 0.0
                continue
            gradient = spread[i] * y[i, t]
            true_gradient = gradient
            for s in range(scenarios):
                gradient -= weight[s] * progress[i, s, t]
                true_gradient -= true_weight[s] * progress[i, s, t]
            outside = g[i, t] * prices[t] - rows[i, t]
            priced = true_gradient + outside
            residual = gradient + outside - z_lo[i, t] + z_hi[i, t]
            dual_residual[i, t] = residual
            primal_residual[i, t] = priced - z_lo[i, t] + z_hi[i, t]
            complementarity += y[i, t] * z_lo[i, t] + s_hi[i, t] * z_hi[i, t]
            residual_norm += abs(residual) * max(y[i, t], s_hi[i, t])
            gap += max(priced, 0.0) * y[i, t] + max(-priced, 0.0) * s_hi[i, t]
            squares += y[i, t] * y[i, t]
            total_y += pace[i, t] * y[i, t]
        running[i] = total_y
        value += 0.5 * spread[i] * squares
    return value, complementarity, residual_norm, gap, log_residual


@_compiled
def box_residual(active: np.ndarray, residual: np.ndarray, y: np.ndarray, s_hi: np.ndarray) -> float:
    r"""The dual residual weighted by the box, :math:`\sum |q - z^{lo} + z^{hi}| \max(y, s^{hi})` over
    the `active` entries, summed in `evaluate_entries`' order (the same float)."""
    n, rounds = y.shape
    total = 0.0
    for i in range(n):
        for t in range(rounds):
            if active[i, t]:
                total += abs(residual[i, t]) * max(y[i, t], s_hi[i, t])
    return total


@_compiled
def newton_rhs(active: np.ndarray, dual_residual: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray,
               z_hi: np.ndarray, g: np.ndarray, capacity_term: np.ndarray, rows: np.ndarray, sigma_mu: float,
               second_order: float, dy: np.ndarray, dz_lo: np.ndarray, dz_hi: np.ndarray,
               out: np.ndarray) -> None:
    r"""The Newton system's right-hand side on the entries (0 off `active`), the bounds' targets
    :math:`\sigma\mu - w\,\Delta y \Delta z^{lo}` and :math:`\sigma\mu + w\,\Delta y \Delta z^{hi}`
    (`second_order` :math:`w`, the predictor's `dy`, `dz_lo`, `dz_hi`):
    :math:`-q + t^{lo}/y - z^{lo} - t^{hi}/s^{hi} + z^{hi} - g\,c + r`, `capacity_term` :math:`c` (T,),
    `rows` :math:`r` (n, T)."""
    n, rounds = y.shape
    for i in range(n):
        for t in range(rounds):
            if not active[i, t]:
                out[i, t] = 0.0
                continue
            target_lo = sigma_mu - second_order * dy[i, t] * dz_lo[i, t]
            target_hi = sigma_mu + second_order * dy[i, t] * dz_hi[i, t]
            out[i, t] = (-dual_residual[i, t] + target_lo / y[i, t] - z_lo[i, t] - target_hi / s_hi[i, t] + z_hi[i, t]
                         - g[i, t] * capacity_term[t] + rows[i, t])


@_compiled
def newton_back(active: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray, z_hi: np.ndarray,
                g: np.ndarray, sigma_mu: float, second_order: float, dy_aff: np.ndarray, dz_lo_aff: np.ndarray,
                dz_hi_aff: np.ndarray, pace: np.ndarray, dy: np.ndarray, dz_lo: np.ndarray, dz_hi: np.ndarray,
                loads: np.ndarray, running: np.ndarray) -> float:
    r"""The bounds' multiplier steps from `dy` (targets as in `newton_rhs`), in one pass: zeroes `dy`
    off `active`, writes `dz_lo`, `dz_hi`, the capacity load :math:`\sum_i g_i \Delta y_i` (`loads`,
    (T,)) and the rows' :math:`\sum_t p_{it} \Delta y_{it}` (`running`, (n,), `pace` :math:`p`); returns
    the largest rate
    :math:`-\Delta v / v` over the falling :math:`y, s^{hi}, z^{lo}, z^{hi}` (`largest_step`'s)."""
    n, rounds = y.shape
    rate = 0.0
    loads[:] = 0.0
    for i in range(n):
        total = 0.0
        for t in range(rounds):
            if not active[i, t]:
                dy[i, t] = 0.0
                dz_lo[i, t] = 0.0
                dz_hi[i, t] = 0.0
                continue
            step = dy[i, t]
            target_lo = sigma_mu - second_order * dy_aff[i, t] * dz_lo_aff[i, t]
            target_hi = sigma_mu + second_order * dy_aff[i, t] * dz_hi_aff[i, t]
            lo = (target_lo - z_lo[i, t] * step) / y[i, t] - z_lo[i, t]
            hi = (target_hi + z_hi[i, t] * step) / s_hi[i, t] - z_hi[i, t]
            dz_lo[i, t] = lo
            dz_hi[i, t] = hi
            loads[t] += g[i, t] * step
            total += pace[i, t] * step
            if step < 0:
                rate = max(rate, -step / y[i, t])
            elif step > 0:
                rate = max(rate, step / s_hi[i, t])
            if lo < 0:
                rate = max(rate, -lo / z_lo[i, t])
            if hi < 0:
                rate = max(rate, -hi / z_hi[i, t])
        running[i] = total
    return rate


@_compiled
def row_free_loads(scaled: np.ndarray, scenarios: int, root: np.ndarray, vector: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i]` := :math:`\lVert F_i D_i^{-1/2} v_i \rVert^2`, :math:`F_i^\top F_i = (I + V_{S,i}
    V_{S,i}^\top)^{-1}` with :math:`V_{S,i}` the first `scenarios` columns of `scaled` (shape (n, S', T)),
    `root` :math:`D^{-1/2}` and `vector` :math:`v` (n, T): with :math:`v_i` the rows' coefficients
    (1 on job i's active entries, on one GPU type), :math:`a_i = v_i^\top K_{0,i}^{-1} v_i` for its
    block :math:`K_{0,i} = D_i^{1/2} (I + V_{S,i} V_{S,i}^\top) D_i^{1/2}` without the rows' column.

    As :math:`\lVert F x \rVert^2`, :math:`x = D^{-1/2} v`, with the symmetric root of
    `low_rank_factor`: accurate to rounding relative to :math:`a_i` itself. For the low-rank form;
    `dense_factor` computes the same from its Cholesky factors."""
    n, _, rounds = scaled.shape
    k = scenarios
    gram = np.empty((k, k))
    rotation = np.empty((k, k))
    x = np.empty(rounds)
    along = np.empty(k)
    column = np.empty((k, rounds))
    shrink = np.empty(k)
    for i in range(n):
        for t in range(rounds):
            x[t] = root[i, t] * vector[i, t]
        _job_root(scaled[i, :k], gram, rotation, column, shrink)
        _root_times(column, shrink, x, along, 1)  # once: a = |F x|^2
        total = 0.0
        for t in range(rounds):
            total += x[t] * x[t]
        out[i] = total


@_compiled
def add_group_outer(columns: np.ndarray, group: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i, a, g]` += `columns[i, a, group[g]]` `weights[i, g]` for every job: the rank-one terms
    :math:`(F_i a_{ir}) b_{ir}^\top` of the capacity system's factor with GPU types (`saa_ipm`), each
    :math:`b_{ir}` supported on the goods of round `r` (`group` (T,), the round of each good);
    `columns` (n, T, R), `weights` (n, T), `out` (n, T, T)."""
    n, rounds, _ = columns.shape
    for i in range(n):
        for a in range(rounds):
            row = out[i, a]
            source = columns[i, a]
            for g in range(rounds):
                row[g] += source[group[g]] * weights[i, g]


@_compiled
def typed_gram(columns: np.ndarray, shrink: np.ndarray, diagonal_part: np.ndarray, rank_one_left: np.ndarray,
               rank_one_right: np.ndarray, group: np.ndarray, members: np.ndarray, scaled_q: np.ndarray,
               blocks: np.ndarray) -> None:
    r"""The capacity system's Gram matrix :math:`\sum_i X_i^\top F_i^2 X_i` with GPU types, in pieces
    (`saa_ipm._TypeFold.gram`), for the low-rank factor :math:`F = I - P \operatorname{diag}(h) P^\top`
    (`columns` :math:`P^\top` (n, S', T), `shrink` :math:`h` (n, S')) and
    :math:`X = \operatorname{diag}(x) + \sum_r a_r b_r^\top` (`diagonal_part` :math:`x`,
    `rank_one_left` :math:`a`, `rank_one_right` :math:`b`, each (n, T), the r-th term supported on
    round r's goods: `group` (T,) the round of each good, `members` (R, K) the goods of each round,
    padded with -1).

    With :math:`Q = P^\top X` (S', T) and :math:`F^2 = I - P \operatorname{diag}(1 / (1 + \sigma^2)) P^\top`
    (:math:`\sigma^2` the squared norms of P's columns), the blocks between two different rounds are
    :math:`-Q_r^\top \operatorname{diag}(1/(1+\sigma^2)) Q_{r'}`: `scaled_q` := :math:`Q / \sqrt{1+\sigma^2}`,
    whose Gram matrix the caller forms. A round's own block is a sum of squares, without the
    difference: :math:`Y^\top Y + (h Q_r)^\top P_{\ne r}^\top P_{\ne r} (h Q_r)` with
    :math:`Y = X_r - P_r h Q_r` its rows in the round and :math:`P_{\ne r}^\top P_{\ne r}` the other
    rounds' (S', S') Gram matrices summed: `blocks` (R, K, K) += it, over the jobs."""
    n, k, goods = columns.shape
    rounds, width = members.shape
    along = np.empty((k, rounds))
    q = np.empty((k, goods))
    per_round = np.empty((rounds, k, k))
    before = np.empty((rounds, k, k))  # the rounds' Gram matrices summed below r, and above r
    after = np.empty((rounds, k, k))
    outside = np.empty((k, k))
    y = np.empty((width, width))
    hq = np.empty((k, width))
    for i in range(n):
        p_t = columns[i]
        along[:] = 0.0
        per_round[:] = 0.0
        for a in range(goods):
            r = group[a]
            for p in range(k):
                along[p, r] += p_t[p, a] * rank_one_left[i, a]
                for s in range(k):
                    per_round[r, p, s] += p_t[p, a] * p_t[s, a]
        for p in range(k):
            for s in range(k):
                before[0, p, s] = 0.0
                after[rounds - 1, p, s] = 0.0
                for r in range(1, rounds):
                    before[r, p, s] = before[r - 1, p, s] + per_round[r - 1, p, s]
                    after[rounds - 1 - r, p, s] = after[rounds - r, p, s] + per_round[rounds - r, p, s]
        for p in range(k):
            norm = 0.0
            for a in range(goods):
                norm += p_t[p, a] * p_t[p, a]
            scale = 1.0 / np.sqrt(1.0 + norm)
            for c in range(goods):
                value = p_t[p, c] * diagonal_part[i, c] + rank_one_right[i, c] * along[p, group[c]]
                q[p, c] = value
                scaled_q[i, p, c] = scale * value
        for r in range(rounds):
            for p in range(k):  # the other rounds', as sums (no difference)
                for s in range(k):
                    outside[p, s] = before[r, p, s] + after[r, p, s]
            for m in range(width):
                c = members[r, m]
                for p in range(k):
                    hq[p, m] = shrink[i, p] * q[p, c] if c >= 0 else 0.0
            for row in range(width):
                a = members[r, row]
                for m in range(width):
                    c = members[r, m]
                    if a < 0 or c < 0:
                        y[row, m] = 0.0
                        continue
                    value = rank_one_left[i, a] * rank_one_right[i, c]
                    if a == c:
                        value += diagonal_part[i, c]
                    for p in range(k):
                        value -= p_t[p, a] * hq[p, m]
                    y[row, m] = value
            for m in range(width):
                for m2 in range(width):
                    total = 0.0
                    for row in range(width):
                        total += y[row, m] * y[row, m2]
                    for p in range(k):
                        for s in range(k):
                            total += hq[p, m] * outside[p, s] * hq[s, m2]
                    blocks[r, m, m2] += total


@_compiled
def add_round_sums(vector: np.ndarray, sum_weights: np.ndarray, round_weights: np.ndarray, add_weights: np.ndarray,
                   group: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i, j, t]` += `add_weights[i, t]` `round_weights[i, r]` :math:`\sum_{s \in r}` `sum_weights[i, s]`
    `vector[i, j, s]`, r = `group[t]` the round of good t: the one-type rows' rank-one terms per job and
    round (`saa_ipm._TypeFold`, the Newton matrix's product). `vector`, `out` (n, k, T); `sum_weights`,
    `add_weights` (n, T); `round_weights` (n, R)."""
    n, k, goods = vector.shape
    sums = np.empty(round_weights.shape[1])
    for i in range(n):
        for j in range(k):
            sums[:] = 0.0
            for t in range(goods):
                sums[group[t]] += sum_weights[i, t] * vector[i, j, t]
            for t in range(goods):
                out[i, j, t] += add_weights[i, t] * round_weights[i, group[t]] * sums[group[t]]


@_inlined
def _breakpoints(a: float, c: float, sigma: float, beta: float, upper: float) -> tuple[float, float]:
    """Where an entry of the Lagrangian minimizer leaves its upper bound and where it reaches 0, as
    utilities U (inf: never, for any U > 0)."""
    top = c + sigma * upper
    return (beta * a / top if top > 0 else np.inf), (beta * a / c if c > 0 else np.inf)


@_inlined
def _minimize_job(a: np.ndarray, c: np.ndarray, s: float, b: float, base: float, upper: np.ndarray,
                  active: np.ndarray, points: np.ndarray, weighted: np.ndarray, y: np.ndarray,
                  free: np.ndarray) -> float:
    """One job's `lagrangian_minimizer` (its rows `a`, `c`, `active`, `y`, `free`, of length T, and
    scratch `points` (2T,) and `weighted` (T,)): writes `y` and `free`, returns U."""
    rounds = a.shape[0]
    inverse_s = 1.0 / s
    m = 0
    for t in range(rounds):
        weighted[t] = b * a[t]
        if active[t]:
            for point in _breakpoints(a[t], c[t], s, b, upper[t]):
                if 0 < point < np.inf:
                    points[m] = point
                    m += 1
    ordered = points[:m]
    ordered.sort()
    low, high = 0, m
    while low < high:  # the last breakpoint where the root's function is >= 0
        middle = (low + high) // 2
        at = ordered[middle]
        inverse_at = 1.0 / at
        total = base - at
        for t in range(rounds):
            if active[t]:
                total += a[t] * min(max((weighted[t] * inverse_at - c[t]) * inverse_s, 0.0), upper[t])
        if total >= 0:
            low = middle + 1
        else:
            high = middle
    left = ordered[low - 1] if low > 0 else 0.0
    right = ordered[low] if low < m else np.inf
    k0, k1 = base, 0.0
    for t in range(rounds):
        to_upper, to_zero = _breakpoints(a[t], c[t], s, b, upper[t])
        at_upper = active[t] and to_upper >= right
        free[t] = active[t] and not at_upper and to_zero > left
        y[t] = upper[t] if at_upper else 0.0
        if at_upper:
            k0 += a[t] * upper[t]
        elif free[t]:
            k0 -= a[t] * c[t] * inverse_s
            k1 += weighted[t] * a[t] * inverse_s
    root = np.sqrt(k0 * k0 + 4.0 * k1)
    u = (k0 + root) / 2.0 if k0 >= 0 else 2.0 * k1 / (root - k0)
    inverse_u = 1.0 / u
    for t in range(rounds):
        if free[t]:
            y[t] = min(max((weighted[t] * inverse_u - c[t]) * inverse_s, 0.0), upper[t])
    return u


@_compiled
def lagrangian_minimizer(a: np.ndarray, c: np.ndarray, sigma: np.ndarray, beta: np.ndarray, base: np.ndarray,
                         upper: np.ndarray, active: np.ndarray, y: np.ndarray, utility: np.ndarray,
                         free: np.ndarray) -> None:
    r"""For every job, the minimizer of its part of the Lagrangian (`vfm.planner.polish`):
    :math:`y_t = \operatorname{clip}((\beta a_t / U - c_t) / \sigma, 0, u_t)` with :math:`U` the
    root of :math:`b + a^\top y(U) - U`. Writes `y` (n, T), `utility` (n,) and `free` (n, T): the
    entries strictly inside the box.

    The root's function is decreasing and, between two of the job's 2T breakpoints, reads
    :math:`K_0 + K_1 / U - U`: a bisection over the sorted breakpoints finds the piece and the
    quadratic's root gives U (written to avoid cancellation for either sign of :math:`K_0`).
    """
    n, rounds = a.shape
    points = np.empty(2 * rounds)
    weighted = np.empty(rounds)  # beta a_t: the entries' numerators
    for i in range(n):
        utility[i] = _minimize_job(a[i], c[i], sigma[i], beta[i], base[i], upper, active[i], points, weighted,
                                   y[i], free[i])


@_inlined
def _progress_at(w: float, a: np.ndarray, cost: np.ndarray, pace: np.ndarray, s: float, b: float, base: float,
                 upper: np.ndarray, active: np.ndarray, points: np.ndarray, weighted: np.ndarray, c: np.ndarray,
                 y: np.ndarray, free: np.ndarray) -> float:
    """One job's progress :math:`p^\top y` in its Lagrangian minimizer at row multiplier `w`."""
    for t in range(c.shape[0]):
        c[t] = cost[t] - w * pace[t]
    _minimize_job(a, c, s, b, base, upper, active, points, weighted, y, free)
    total = 0.0
    for t in range(c.shape[0]):
        total += pace[t] * y[t]
    return total


@_compiled
def matched_rows(a: np.ndarray, cost: np.ndarray, pace: np.ndarray, sigma: np.ndarray, beta: np.ndarray,
                 base: np.ndarray, upper: np.ndarray, active: np.ndarray, low: np.ndarray, high: np.ndarray,
                 target: np.ndarray, steps: int, out: np.ndarray) -> None:
    r"""For every job, the row multiplier :math:`w \in` [`low`, `high`] at which its Lagrangian
    minimizer (`lagrangian_minimizer` with :math:`c = \text{cost} - w\,p`, `pace` :math:`p`) has
    progress :math:`p^\top y` equal to `target`, written to `out` (NaN where the target is outside
    the progress at the bracket's ends). The progress does not decrease in w: regula falsi with the
    Illinois rule (the end that stays has its value halved), at most `steps` evaluations, until
    the bracket is 1e-14 of w or the progress within 1e-14 of the target."""
    n, rounds = a.shape
    points, weighted, c, y = np.empty(2 * rounds), np.empty(rounds), np.empty(rounds), np.empty(rounds)
    free = np.empty(rounds, dtype=np.bool_)
    for i in range(n):
        s, b, z = sigma[i], beta[i], base[i]
        left, right = low[i], high[i]
        f_left = _progress_at(left, a[i], cost[i], pace[i], s, b, z, upper, active[i], points, weighted, c, y,
                              free) - target[i]
        f_right = _progress_at(right, a[i], cost[i], pace[i], s, b, z, upper, active[i], points, weighted, c, y,
                               free) - target[i]
        if not (f_left <= 0.0 <= f_right):
            out[i] = np.nan
            continue
        kept = 0  # which end stayed at the last step: -1 left, 1 right
        w = left if f_left == 0.0 else right
        for _ in range(steps):
            if f_left == 0.0 or f_right == 0.0 or right - left <= 1e-14 * right:
                break
            w = (left * f_right - right * f_left) / (f_right - f_left)
            if not left < w < right:
                w = 0.5 * (left + right)
            f = _progress_at(w, a[i], cost[i], pace[i], s, b, z, upper, active[i], points, weighted, c, y,
                             free) - target[i]
            if abs(f) <= 1e-14 * (1.0 + abs(target[i])):
                break
            if f < 0.0:
                left, f_left = w, f
                if kept == -1:
                    f_right *= 0.5
                kept = -1
            else:
                right, f_right = w, f
                if kept == 1:
                    f_left *= 0.5
                kept = 1
        out[i] = w
