r"""The polish's kernels over GPU types, compiled (`vfm.planner.solve.polish_system`): the products
of the one-type-per-round rows with the prices and with the rows' multipliers, the bound jobs'
blocks and their coupling to the prices, and the blocks' inverses.

Over several types the polish's Newton system adds the one-type rows of the jobs held at their
bounds; each product here is one pass over the jobs, summed chunk by chunk (`jit.CHUNK`) in job
order, so that the polish gives the same floats on any number of threads.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


@jit.over_jobs
def polish_cross_times(free: np.ndarray, weighted: np.ndarray, a_round: np.ndarray, gamma: np.ndarray,
                       scale: np.ndarray, g: np.ndarray, group: np.ndarray, mu: np.ndarray, out: np.ndarray) -> None:
    r"""`out` (T,) := :math:`\sum_{i, r} g_t e_t^\top M_i e_r \mu_{ir}` for `mu` (n, R)
    (`vfm.planner.solve.polish_system.TypeSlopes.cross_times`), with
    :math:`M_i = (\operatorname{diag}(f_i) - \gamma_i w_i w_i^\top) / \sigma_i`: `free` :math:`f` and `weighted`
    :math:`w` (n, T), `a_round` :math:`A = w^\top e_r` (n, R), `gamma` (n,), `scale` :math:`1 / \sigma` (n,);
    `group` (T,) the round of each good. Summed over the jobs chunk by chunk (`jit.CHUNK`), in one pass
    instead of half a dozen (n, T) temporaries."""
    n, goods = free.shape
    rounds = a_round.shape[1]
    partial = np.zeros((jit.chunks(n), goods))
    for chunk in prange(jit.chunks(n)):
        sums = partial[chunk]
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            total = 0.0
            for r in range(rounds):
                total += a_round[i, r] * mu[i, r]
            along = gamma[i] * total
            for t in range(goods):
                sums[t] += g[i, t] * scale[i] * (free[i, t] * mu[i, group[t]] - along * weighted[i, t])
    jit.add_chunks(partial, out)


@jit.over_jobs
def polish_cross_transposed_times(free: np.ndarray, weighted: np.ndarray, a_round: np.ndarray, gamma: np.ndarray,
                                  scale: np.ndarray, g: np.ndarray, group: np.ndarray, prices: np.ndarray,
                                  out: np.ndarray) -> None:
    r"""`out` (n, R) := :math:`\sum_t e_r^\top M_i g_t e_t x_t` for `prices` :math:`x` (T,)
    (`vfm.planner.solve.polish_system.TypeSlopes.cross_transposed_times`; the arguments as in
    `polish_cross_times`), job by job in one pass."""
    n, goods = free.shape
    rounds = a_round.shape[1]
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            along = 0.0
            for r in range(rounds):
                out[i, r] = 0.0
            for t in range(goods):
                gx = g[i, t] * prices[t]
                along += gx * weighted[i, t]
                out[i, group[t]] += gx * free[i, t]
            for r in range(rounds):
                out[i, r] = scale[i] * (out[i, r] - gamma[i] * along * a_round[i, r])


@jit.over_jobs
def inverse_blocks_dense(blocks: np.ndarray, out: np.ndarray) -> bool:
    """`out[i]` := the inverse of `blocks[i]` (both (k, m, m)), by Gauss-Jordan elimination with partial
    pivoting, job by job (the polish's blocks over GPU types, `vfm.planner.solve.polish_system`: a few
    dozen rows each, where a batched LAPACK call spends most of its time per matrix outside the
    arithmetic). Returns False if a pivot is 0 (a singular block)."""
    k, m, _ = blocks.shape
    singular = np.zeros(jit.chunks(k), dtype=np.bool_)
    for chunk in prange(jit.chunks(k)):
        work = np.empty((m, m))
        for i in range(chunk * jit.CHUNK, min(k, (chunk + 1) * jit.CHUNK)):
            inverse = out[i]
            for a in range(m):
                for b in range(m):
                    work[a, b] = blocks[i, a, b]
                    inverse[a, b] = 1.0 if a == b else 0.0
            for column in range(m):
                pivot = column
                largest = abs(work[column, column])
                for a in range(column + 1, m):
                    if abs(work[a, column]) > largest:
                        pivot, largest = a, abs(work[a, column])
                if not largest > 0.0:
                    singular[chunk] = True
                    break
                if pivot != column:
                    for b in range(m):
                        work[column, b], work[pivot, b] = work[pivot, b], work[column, b]
                        inverse[column, b], inverse[pivot, b] = inverse[pivot, b], inverse[column, b]
                factor = 1.0 / work[column, column]
                for b in range(m):
                    work[column, b] *= factor
                    inverse[column, b] *= factor
                for a in range(m):
                    if a == column:
                        continue
                    weight = work[a, column]
                    if weight == 0.0:
                        continue
                    for b in range(m):
                        work[a, b] -= weight * work[column, b]
                        inverse[a, b] -= weight * inverse[column, b]
    for chunk in range(singular.shape[0]):
        if singular[chunk]:
            return False
    return True


@jit.compiled
def polish_cross_blocks(jobs: np.ndarray, job_cross: np.ndarray, free: np.ndarray, weighted: np.ndarray,
                        a_round: np.ndarray, gamma: np.ndarray, scale: np.ndarray, g: np.ndarray, group: np.ndarray,
                        present: np.ndarray, cross: np.ndarray, cross_present: np.ndarray) -> None:
    r"""For the jobs `jobs` (indices, k of them), the capacity rows in their rows' multipliers
    (`vfm.planner.solve.polish_system.NewtonMatrix`, over GPU types): `cross[j]` (T, 2 + R) := the job
    rows' column `job_cross[:, i]` (`Slopes.cross`, (T, n)) twice, then :math:`g_t e_t^\top M_i e_r` (the
    arguments as in `polish_cross_times`), and `cross_present[j]` the
    same with the columns of the rows the job does not have (`present` (n, 2 + R) False) 0."""
    goods = free.shape[1]
    rounds = a_round.shape[1]
    for j in range(jobs.shape[0]):
        i = jobs[j]
        for t in range(goods):
            g_scaled = g[i, t] * scale[i]
            spread = gamma[i] * weighted[i, t]
            cross[j, t, 0] = job_cross[t, i]
            cross[j, t, 1] = job_cross[t, i]
            for r in range(rounds):
                own = free[i, t] if group[t] == r else 0.0
                cross[j, t, 2 + r] = g_scaled * (own - spread * a_round[i, r])
            for b in range(2 + rounds):
                cross_present[j, t, b] = cross[j, t, b] if present[i, b] else 0.0


@jit.compiled
def polish_blocks(jobs: np.ndarray, own: np.ndarray, rows: np.ndarray, a_round: np.ndarray, gamma: np.ndarray,
                  scale: np.ndarray, in_round: np.ndarray, f: np.ndarray, d: np.ndarray, present: np.ndarray,
                  out: np.ndarray) -> None:
    r"""`out[j]` (2 + R, 2 + R) := :math:`\operatorname{diag}(f_j) J_i + \operatorname{diag}(d_j)` for each job
    i = `jobs[j]`, its columns of the rows it lacks (`present[j]` False) 0: :math:`J_i` its rows'
    slopes in its own multipliers (`vfm.planner.solve.polish_system._block_inverse`), the two job rows'
    `own[i]` among themselves, `rows[i]` (R,) between them and the one-type rows, and
    :math:`e_r^\top M e_{r'} = \text{scale}_i (\text{in\_round}_{ir} [r = r'] - \gamma_i A_{ir} A_{ir'})`
    among those (`TypeSlopes`). `f`, `d`, `present` (k, 2 + R) are the jobs' own rows. The
    same floats as the NumPy expressions, without their (k, 2 + R, 2 + R) temporaries."""
    size = f.shape[1]
    for j in range(jobs.shape[0]):
        i = jobs[j]
        weight = -(gamma[i] * scale[i])
        for a in range(size):
            for b in range(size):
                if a < 2 and b < 2:
                    slope = own[i]
                elif a < 2:
                    slope = rows[i, b - 2]
                elif b < 2:
                    slope = rows[i, a - 2]
                else:
                    slope = weight * a_round[i, a - 2] * a_round[i, b - 2]
                    if a == b:
                        slope += scale[i] * in_round[i, a - 2]
                out[j, a, b] = f[j, a] * slope * (1.0 if present[j, b] else 0.0)
            out[j, a, a] += d[j, a]
