r"""The interior point's passes over the (n, T) entries, compiled: a point's evaluation, the Newton
system's columns, its Hessian products, right-hand side and back-substitution
(`vfm.planner.solve.ipm.point`, `vfm.planner.solve.ipm.newton`).

Each is a few operations per entry. NumPy can only run them as whole-array passes, one call and
one temporary (n, S', T) or (n, T) array each, so an iteration over hundreds of jobs would be
mostly Python-level calls; each kernel here is one loop over the jobs.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


@jit.inlined
def job_diagonal(active: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray, z_hi: np.ndarray,
                 spread: float, out: np.ndarray) -> None:
    """One job's `bounds_curvature` (its rows of the (T,) arguments)."""
    for t in range(y.shape[0]):
        out[t] = z_lo[t] / y[t] + z_hi[t] / s_hi[t] + spread if active[t] else 1.0


@jit.inlined
def job_columns(progress: np.ndarray, weights: np.ndarray, u: np.ndarray, diagonal: np.ndarray,
                regularization: float, curvature: np.ndarray, root: np.ndarray) -> None:
    """One job's `scaled_columns` without the scaling: `root` (T,) and the scenarios' rows of `curvature`
    (`progress` (S, T), `weights` and `u` (S,))."""
    scenarios, rounds = progress.shape
    for t in range(rounds):
        root[t] = 1.0 / np.sqrt(diagonal[t] + regularization)
    for s in range(scenarios):
        factor = np.sqrt(weights[s] / u[s])
        for t in range(rounds):
            curvature[s, t] = factor * progress[s, t]


@jit.over_jobs
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
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            job_columns(progress[i], weights[i], u[i], diagonal[i], regularization, curvature[i], root[i])
            if extra:
                for t in range(rounds):
                    curvature[i, scenarios, t] = row[i, t]
            for s in range(curvature.shape[1]):
                for t in range(rounds):
                    scaled[i, s, t] = curvature[i, s, t] * root[i, t]


@jit.over_jobs
def bounds_curvature(active: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray, z_hi: np.ndarray,
                     spread: np.ndarray, out: np.ndarray) -> None:
    r"""`out` := the Newton system's diagonal :math:`z^{lo} / y + z^{hi} / s^{hi} + \text{spread}_i` on the
    `active` entries (the box's curvature and the tie-breaking term's), 1 elsewhere."""
    n = y.shape[0]
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            job_diagonal(active[i], y[i], s_hi[i], z_lo[i], z_hi[i], spread[i], out[i])


@jit.over_jobs
def moved_entries(active: np.ndarray, alpha: float, y: np.ndarray, dy: np.ndarray, s_hi: np.ndarray,
                  z_lo: np.ndarray, dz_lo: np.ndarray, z_hi: np.ndarray, dz_hi: np.ndarray, y_out: np.ndarray,
                  s_hi_out: np.ndarray, z_lo_out: np.ndarray, z_hi_out: np.ndarray) -> None:
    r"""The entries moved by `alpha` along a Newton step, in one pass: :math:`y + \alpha \Delta y`,
    :math:`s^{hi} - \alpha \Delta y` (1 off `active`), :math:`z^{lo} + \alpha \Delta z^{lo}` and
    :math:`z^{hi} + \alpha \Delta z^{hi}`, written to the `_out` arrays (a line search's trial point)."""
    n, rounds = y.shape
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                step = alpha * dy[i, t]
                y_out[i, t] = y[i, t] + step
                s_hi_out[i, t] = s_hi[i, t] - step if active[i, t] else 1.0
                z_lo_out[i, t] = z_lo[i, t] + alpha * dz_lo[i, t]
                z_hi_out[i, t] = z_hi[i, t] + alpha * dz_hi[i, t]


@jit.over_jobs
def hessian_times(curvature: np.ndarray, diagonal: np.ndarray, g: np.ndarray, prices_term: np.ndarray,
                  vector: np.ndarray, out: np.ndarray) -> None:
    r"""`out` := :math:`(\operatorname{diag}(d_i) + \sum_s c_{is} c_{is}^\top) v_i + g_i \circ p` for every
    job, `curvature` the columns :math:`c_{is}`, shape (n, S', T), `prices_term` :math:`p` (T,) (the
    capacity rows' part, :math:`\lambda / s_c` times the load of `vector`)."""
    n, k, rounds = curvature.shape
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                out[i, t] = diagonal[i, t] * vector[i, t] + g[i, t] * prices_term[t]
            # Four columns' dot products side by side, each in the order of the rounds: four chains
            # of additions that overlap, `out` taking their terms in column order (faster than one
            # chain per column at many scenarios).
            p = 0
            while p + 4 <= k:
                first = second = third = fourth = 0.0
                for t in range(rounds):
                    first += curvature[i, p, t] * vector[i, t]
                    second += curvature[i, p + 1, t] * vector[i, t]
                    third += curvature[i, p + 2, t] * vector[i, t]
                    fourth += curvature[i, p + 3, t] * vector[i, t]
                for t in range(rounds):
                    out[i, t] = out[i, t] + first * curvature[i, p, t] + second * curvature[i, p + 1, t] \
                        + third * curvature[i, p + 2, t] + fourth * curvature[i, p + 3, t]
                p += 4
            for last in range(p, k):
                total = 0.0
                for t in range(rounds):
                    total += curvature[i, last, t] * vector[i, t]
                for t in range(rounds):
                    out[i, t] += total * curvature[i, last, t]


@jit.over_jobs
def evaluate_entries(progress: np.ndarray, base: np.ndarray, budgets: np.ndarray, spread: np.ndarray,
                     active: np.ndarray, g: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray,
                     z_hi: np.ndarray, prices: np.ndarray, rows: np.ndarray, pace: np.ndarray, weights: np.ndarray,
                     own_weights: bool, u: np.ndarray, dual_residual: np.ndarray, primal_residual: np.ndarray,
                     running: np.ndarray) -> tuple[float, float, float, float, float]:
    r"""`vfm.planner.solve.ipm.method`'s point evaluation over the (n, T) entries, in one pass.

    Writes the utilities `u` (n, S) (`base` :math:`c_{si}` of shape (n, S), one per job and
    scenario), the dual residual :math:`q - z^{lo} + z^{hi}` (`dual_residual`,
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
    partial = np.zeros((jit.chunks(n), 5))  # each chunk's sums, in the order of the returned tuple
    for chunk in prange(jit.chunks(n)):
        weight = np.empty(scenarios)
        true_weight = np.empty(scenarios)
        gradients = np.empty((2, rounds))
        value = 0.0
        complementarity = 0.0
        residual_norm = 0.0
        gap = 0.0
        log_residual = 0.0
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            squares = 0.0
            total_y = 0.0
            _utilities(progress[i], base[i], y[i], u[i])
            for s in range(scenarios):
                total = u[i, s]
                value -= budgets[i] * np.log(total)
                true_weight[s] = budgets[i] / total
                if own_weights:
                    weight[s] = weights[i, s]
                    log_residual += abs(weights[i, s] * total - budgets[i])
                else:
                    weight[s] = true_weight[s]
            _gradients(progress[i], spread[i], y[i], weight, true_weight, gradients)
            for t in range(rounds):
                if not active[i, t]:
                    dual_residual[i, t] = 0.0
                    primal_residual[i, t] = 0.0
                    continue
                gradient = gradients[0, t]
                true_gradient = gradients[1, t]
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
        partial[chunk, 0] = value
        partial[chunk, 1] = complementarity
        partial[chunk, 2] = residual_norm
        partial[chunk, 3] = gap
        partial[chunk, 4] = log_residual
    totals = np.empty(5)
    jit.add_chunks(partial, totals)
    return totals[0], totals[1], totals[2], totals[3], totals[4]


@jit.inlined
def _utilities(progress: np.ndarray, base: np.ndarray, y: np.ndarray, u: np.ndarray) -> None:
    """`u[s]` := `base[s]` + the sum over t of `progress[s, t] * y[t]`, in order, for one job's scenarios.

    Four scenarios' sums side by side, each still one chain of additions in the order of the rounds:
    the chains overlap instead of waiting on each other (with `_gradients`, a faster evaluation of a
    point at many scenarios; at S = 1 no slower)."""
    scenarios, rounds = progress.shape
    s = 0
    while s + 4 <= scenarios:
        first, second, third, fourth = base[s], base[s + 1], base[s + 2], base[s + 3]
        for t in range(rounds):
            first += progress[s, t] * y[t]
            second += progress[s + 1, t] * y[t]
            third += progress[s + 2, t] * y[t]
            fourth += progress[s + 3, t] * y[t]
        u[s], u[s + 1], u[s + 2], u[s + 3] = first, second, third, fourth
        s += 4
    for last in range(s, scenarios):
        total = base[last]
        for t in range(rounds):
            total += progress[last, t] * y[t]
        u[last] = total


@jit.inlined
def _gradients(progress: np.ndarray, spread: float, y: np.ndarray, weight: np.ndarray, true_weight: np.ndarray,
               out: np.ndarray) -> None:
    """`out[0, t]` := `spread * y[t]` minus `weight[s] * progress[s, t]` over s in order, `out[1, t]` the
    same with `true_weight`, for one job's rounds (inactive ones included: the caller skips them).

    By scenario, four per pass, and over the rounds within: the loop over the rounds vectorizes,
    each round's sum keeping its order."""
    scenarios, rounds = progress.shape
    for t in range(rounds):
        out[0, t] = spread * y[t]
        out[1, t] = out[0, t]
    s = 0
    while s + 4 <= scenarios:
        w0, w1, w2, w3 = weight[s], weight[s + 1], weight[s + 2], weight[s + 3]
        v0, v1, v2, v3 = true_weight[s], true_weight[s + 1], true_weight[s + 2], true_weight[s + 3]
        for t in range(rounds):
            p0, p1, p2, p3 = progress[s, t], progress[s + 1, t], progress[s + 2, t], progress[s + 3, t]
            out[0, t] = out[0, t] - w0 * p0 - w1 * p1 - w2 * p2 - w3 * p3
            out[1, t] = out[1, t] - v0 * p0 - v1 * p1 - v2 * p2 - v3 * p3
        s += 4
    for last in range(s, scenarios):
        for t in range(rounds):
            out[0, t] -= weight[last] * progress[last, t]
            out[1, t] -= true_weight[last] * progress[last, t]


@jit.over_jobs
def box_residual(active: np.ndarray, residual: np.ndarray, y: np.ndarray, s_hi: np.ndarray) -> float:
    r"""The dual residual weighted by the box, :math:`\sum |q - z^{lo} + z^{hi}| \max(y, s^{hi})` over
    the `active` entries, summed in `evaluate_entries`' order (the same float)."""
    n, rounds = y.shape
    partial = np.zeros((jit.chunks(n), 1))
    for chunk in prange(jit.chunks(n)):
        total = 0.0
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                if active[i, t]:
                    total += abs(residual[i, t]) * max(y[i, t], s_hi[i, t])
        partial[chunk, 0] = total
    totals = np.empty(1)
    jit.add_chunks(partial, totals)
    return totals[0]


@jit.over_jobs
def newton_rhs(active: np.ndarray, dual_residual: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray,
               z_hi: np.ndarray, g: np.ndarray, capacity_term: np.ndarray, per_job: np.ndarray, pace: np.ndarray,
               per_round: np.ndarray, sigma_mu: float, second_order: float, dy: np.ndarray, dz_lo: np.ndarray,
               dz_hi: np.ndarray, out: np.ndarray) -> None:
    r"""The Newton system's right-hand side on the entries (0 off `active`), the bounds' targets
    :math:`\sigma\mu - w\,\Delta y \Delta z^{lo}` and :math:`\sigma\mu + w\,\Delta y \Delta z^{hi}`
    (`second_order` :math:`w`, the predictor's `dy`, `dz_lo`, `dz_hi`):
    :math:`-q + t^{lo}/y - z^{lo} - t^{hi}/s^{hi} + z^{hi} - g\,c + r`, `capacity_term` :math:`c` (T,),
    :math:`r` the rows' terms `vfm.planner.solve.scaled_program.row_terms` computes, here entry by entry
    from the per-job terms `per_job` (n,), the entries' `pace` (n, T) and the one-type rows' terms
    `per_round` (n, T, each entry its round's; zeros without them): the same floats, without the
    (n, T) array."""
    n, rounds = y.shape
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(rounds):
                if not active[i, t]:
                    out[i, t] = 0.0
                    continue
                target_lo = sigma_mu - second_order * dy[i, t] * dz_lo[i, t]
                target_hi = sigma_mu + second_order * dy[i, t] * dz_hi[i, t]
                rows = per_job[i] * pace[i, t] - per_round[i, t]
                out[i, t] = (-dual_residual[i, t] + target_lo / y[i, t] - z_lo[i, t] - target_hi / s_hi[i, t]
                             + z_hi[i, t] - g[i, t] * capacity_term[t] + rows)


@jit.over_jobs
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
    partial = np.zeros((jit.chunks(n), rounds))
    rates = np.zeros(jit.chunks(n))
    for chunk in prange(jit.chunks(n)):
        sums = partial[chunk]
        rate = 0.0
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
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
                sums[t] += g[i, t] * step
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
        rates[chunk] = rate
    jit.add_chunks(partial, loads)
    return jit.largest_of_chunks(rates)


@jit.compiled
def row_steps(constrained: np.ndarray, efficient: np.ndarray, running: np.ndarray, ftf_residual: np.ndarray,
              d_zeta: float, target_f: np.ndarray, target_e: np.ndarray, s_f: np.ndarray, z_f: np.ndarray,
              s_e: np.ndarray, z_e: np.ndarray, ds_f: np.ndarray, dz_f: np.ndarray, ds_e: np.ndarray,
              dz_e: np.ndarray) -> float:
    r"""The FTF and efficiency rows' slack and multiplier steps from the rows' running sums of the
    step :math:`\sum_t p_{it} \Delta y_{it}` (`running`, `newton_back`'s), 0 off the jobs with such a
    row: :math:`\Delta s^f = \text{running} + r` (`ftf_residual` r),
    :math:`\Delta z^f = (t^f - z^f \Delta s^f) / s^f - z^f`, :math:`\Delta s^e = \text{running} + \Delta\zeta`,
    :math:`\Delta z^e = (t^e - z^e \Delta s^e) / s^e - z^e`; returns the largest rate :math:`-\Delta v / v`
    over the falling :math:`s^f, z^f, s^e, z^e` (`largest_step`'s). One pass over the jobs instead of
    a dozen NumPy passes of n entries, in every Newton direction."""
    rate = 0.0
    for i in range(running.shape[0]):
        ds_f[i] = dz_f[i] = ds_e[i] = dz_e[i] = 0.0
        if constrained[i]:
            ds_f[i] = running[i] + ftf_residual[i]
            dz_f[i] = (target_f[i] - z_f[i] * ds_f[i]) / s_f[i] - z_f[i]
        if efficient[i]:
            ds_e[i] = running[i] + d_zeta
            dz_e[i] = (target_e[i] - z_e[i] * ds_e[i]) / s_e[i] - z_e[i]
        for value, change in ((s_f[i], ds_f[i]), (z_f[i], dz_f[i]), (s_e[i], ds_e[i]), (z_e[i], dz_e[i])):
            if change < 0:
                rate = max(rate, -change / value)
    return rate


@jit.compiled
def log_steps(budgets: np.ndarray, w: np.ndarray, u: np.ndarray, du: np.ndarray, s_cap: np.ndarray,
              ds_cap: np.ndarray, prices: np.ndarray, d_prices: np.ndarray, longest: np.ndarray,
              d_longest: np.ndarray, dw: np.ndarray) -> float:
    r"""The logarithms' multiplier steps :math:`\Delta w = (\beta - w (U + \Delta U)) / U` (`dw`, shape
    (n, S), the rows :math:`w U = \beta` linearized), and the largest rate :math:`-\Delta v / v` over
    the falling utilities, logarithms' multipliers, capacity slacks, prices and `longest`
    (:math:`\zeta` and its multiplier, with their steps `d_longest`): the rest of a Newton
    direction's `largest_step` after `newton_back` and `row_steps`, in one call."""
    n, scenarios = w.shape
    rate = 0.0
    for i in range(n):
        for s in range(scenarios):
            step = (budgets[i] - w[i, s] * (u[i, s] + du[i, s])) / u[i, s]
            dw[i, s] = step
            if du[i, s] < 0:
                rate = max(rate, -du[i, s] / u[i, s])
            if step < 0:
                rate = max(rate, -step / w[i, s])
    for values, changes in ((s_cap, ds_cap), (prices, d_prices), (longest, d_longest)):
        for t in range(values.shape[0]):
            if changes[t] < 0:
                rate = max(rate, -changes[t] / values[t])
    return rate
