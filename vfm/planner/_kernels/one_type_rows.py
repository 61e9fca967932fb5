r"""The one-type-per-round rows' kernels over GPU types, compiled: their rank-one terms per job and
round, the capacity system's Gram matrix in pieces (`vfm.planner.solve.ipm.blocks.TypeFold`), the
interior point's Newton system and block solves with the rows folded in, and the rows' terms and
steps of a Newton direction (the polish's own over the types: `vfm.planner._kernels.polish_types`).

Over three types a job has three times the entries of one type, and a chain of whole-array NumPy
steps between the kernels costs more than their arithmetic: the kernels here take the one-type
rows' work into as few passes over the jobs as the sums over jobs allow.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit
from vfm.planner._kernels.entries import job_columns, job_diagonal
from vfm.planner._kernels.low_rank import _job_root


@jit.over_jobs
def add_group_outer(columns: np.ndarray, group: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i, a, g]` += `columns[i, a, group[g]]` `weights[i, g]` for every job: the rank-one terms
    :math:`(F_i a_{ir}) b_{ir}^\top` of the capacity system's factor with GPU types
    (`vfm.planner.solve.ipm.method`), each :math:`b_{ir}` supported on the goods of round `r`
    (`group` (T,), the round of each good);
    `columns` (n, T, R), `weights` (n, T), `out` (n, T, T)."""
    n, rounds, _ = columns.shape
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for a in range(rounds):
                row = out[i, a]
                source = columns[i, a]
                for g in range(rounds):
                    row[g] += source[group[g]] * weights[i, g]


@jit.over_jobs
def typed_gram(columns: np.ndarray, shrink: np.ndarray, diagonal_part: np.ndarray, rank_one_left: np.ndarray,
               rank_one_right: np.ndarray, group: np.ndarray, members: np.ndarray, scaled_q: np.ndarray,
               blocks: np.ndarray) -> None:
    r"""The capacity system's Gram matrix :math:`\sum_i X_i^\top F_i^2 X_i` with GPU types, in pieces
    (`vfm.planner.solve.ipm.blocks.TypeFold.gram`), for the low-rank factor
    :math:`F = I - P \operatorname{diag}(h) P^\top` (`columns` :math:`P^\top` (n, S', T), `shrink` :math:`h`
    (n, S')) and
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
    rounds' (S', S') Gram matrices summed: `blocks` (R, K, K) += it, over the jobs.

    A chunk's jobs are computed side by side (`_gram_chunk`): scratch arrays whose last axis is the
    job, so that the short loops over a job's columns and a round's goods run across the chunk's
    jobs and vectorize; each job gets the same operations in the same order as alone, and the
    chunk's sums add the jobs in order."""
    n = columns.shape[0]
    rounds, width = members.shape
    partial = np.zeros((jit.chunks(n), rounds, width, width))
    for chunk in prange(jit.chunks(n)):
        jobs = slice(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK))
        _gram_chunk(columns[jobs], shrink[jobs], diagonal_part[jobs], rank_one_left[jobs], rank_one_right[jobs],
                    group, members, scaled_q[jobs], partial[chunk])
    totals = np.empty((rounds, width, width))
    jit.add_chunks(partial, totals)
    blocks += totals


@jit.inlined
def _transposed(values: np.ndarray) -> np.ndarray:
    """`values` (jobs, T) as (T, CHUNK): the chunk's jobs in the last axis."""
    count, goods = values.shape
    out = np.empty((goods, jit.CHUNK))
    for a in range(goods):
        for job in range(count):
            out[a, job] = values[job, a]
    return out


@jit.inlined
def _gram_pieces(columns: np.ndarray, diagonal_part: np.ndarray, rank_one_left: np.ndarray,
                 rank_one_right: np.ndarray, group: np.ndarray, rounds: int,
                 scaled_q: np.ndarray) -> tuple[np.ndarray, ...]:
    """`_gram_chunk`'s per-job pieces, the chunk's jobs in the last axis: the columns (K, T), the
    rank-one factors and the diagonal (T), the rounds' Gram matrices summed below and above each
    round (R, K, K) and the columns through the block, `q` (K, T) (written scaled to `scaled_q`)."""
    count, k, goods = columns.shape
    p_t = np.empty((k, goods, jit.CHUNK))
    for p in range(k):
        for a in range(goods):
            for job in range(count):
                p_t[p, a, job] = columns[job, p, a]
    left, right, diagonal = _transposed(rank_one_left), _transposed(rank_one_right), _transposed(diagonal_part)
    along = np.zeros((k, rounds, jit.CHUNK))
    per_round = np.zeros((rounds, k, k, jit.CHUNK))
    for a in range(goods):
        r = group[a]
        for p in range(k):
            for job in range(count):
                along[p, r, job] += p_t[p, a, job] * left[a, job]
            for s in range(k):
                for job in range(count):
                    per_round[r, p, s, job] += p_t[p, a, job] * p_t[s, a, job]
    # The rounds' Gram matrices summed below r (`before`) and above r (`after`).
    before = np.zeros((rounds, k, k, jit.CHUNK))
    after = np.zeros((rounds, k, k, jit.CHUNK))
    for p in range(k):
        for s in range(k):
            for r in range(1, rounds):
                for job in range(count):
                    before[r, p, s, job] = before[r - 1, p, s, job] + per_round[r - 1, p, s, job]
                    after[rounds - 1 - r, p, s, job] = after[rounds - r, p, s, job] + per_round[rounds - r, p, s, job]
    q = np.empty((k, goods, jit.CHUNK))
    norm = np.empty(jit.CHUNK)
    for p in range(k):
        norm[:] = 0.0
        for a in range(goods):
            for job in range(count):
                norm[job] += p_t[p, a, job] * p_t[p, a, job]
        for c in range(goods):
            for job in range(count):
                value = p_t[p, c, job] * diagonal[c, job] + right[c, job] * along[p, group[c], job]
                q[p, c, job] = value
                scaled_q[job, p, c] = 1.0 / np.sqrt(1.0 + norm[job]) * value
    return p_t, left, right, diagonal, before, after, q


@jit.inlined
def _gram_chunk(columns: np.ndarray, shrink: np.ndarray, diagonal_part: np.ndarray, rank_one_left: np.ndarray,
                rank_one_right: np.ndarray, group: np.ndarray, members: np.ndarray, scaled_q: np.ndarray,
                sums: np.ndarray) -> None:
    """`typed_gram` for one chunk of jobs (its rows of every per-job argument), `sums` (R, K, K) its
    partial sum."""
    count, k, _ = columns.shape
    rounds, width = members.shape
    p_t, left, right, diagonal, before, after, q = _gram_pieces(columns, diagonal_part, rank_one_left,
                                                                 rank_one_right, group, rounds, scaled_q)
    outside = np.empty((k, k, jit.CHUNK))
    hq = np.empty((k, width, jit.CHUNK))
    y = np.empty((width, width, jit.CHUNK))
    total = np.empty(jit.CHUNK)
    # Each job's terms of the blocks, added to `sums` once all are formed: job after job, all blocks'
    # entries side by side (each entry's sum the same chain of additions as one entry at a time, but
    # the entries' chains overlap instead of waiting on each other).
    terms = np.empty((jit.CHUNK, rounds * width * width))
    for r in range(rounds):
        for p in range(k):  # the other rounds', as sums (no difference)
            for s in range(k):
                for job in range(count):
                    outside[p, s, job] = before[r, p, s, job] + after[r, p, s, job]
        for m in range(width):
            c = members[r, m]
            for p in range(k):
                if c < 0:
                    hq[p, m, :] = 0.0
                    continue
                for job in range(count):
                    hq[p, m, job] = shrink[job, p] * q[p, c, job]
        # The tests on the goods outside the loops over the jobs, which then vectorize.
        for row in range(width):
            a = members[r, row]
            for m in range(width):
                c = members[r, m]
                if a < 0 or c < 0:
                    y[row, m, :] = 0.0
                    continue
                for job in range(count):
                    y[row, m, job] = left[a, job] * right[c, job]
                if a == c:
                    for job in range(count):
                        y[row, m, job] += diagonal[c, job]
                for p in range(k):
                    for job in range(count):
                        y[row, m, job] -= p_t[p, a, job] * hq[p, m, job]
        for m in range(width):
            for m2 in range(width):
                total[:] = 0.0
                for row in range(width):
                    for job in range(count):
                        total[job] += y[row, m, job] * y[row, m2, job]
                for p in range(k):
                    for s in range(k):
                        for job in range(count):
                            total[job] += hq[p, m, job] * outside[p, s, job] * hq[s, m2, job]
                entry = (r * width + m) * width + m2
                for job in range(count):
                    terms[job, entry] = total[job]
    flat = sums.reshape(rounds * width * width)
    for job in range(count):  # in job order: the chunk's sum as one job after another
        for entry in range(flat.size):
            flat[entry] += terms[job, entry]


@jit.over_jobs
def add_round_sums(sum_weights: np.ndarray, round_weights: np.ndarray, add_weights: np.ndarray, members: np.ndarray,
                   tiled: bool, vector: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i k + j, t]` += `add_weights[i, t]` `round_weights[i, r]` :math:`\sum_{s \in r}` `sum_weights[i, s]`
    `vector[i k + j, s]`, r the round of good t (`members` (R, K) the goods of each round, `tiled` as in
    `_fold_rows`): the one-type rows' rank-one terms per job and round for k vectors per job
    (`vfm.planner.solve.ipm.blocks.TypeFold`, the Newton matrix's product). `vector`, `out` (n k, T), job
    i's vectors in rows i k to i k + k - 1 (an (n, k, T) array reshaped); `sum_weights`, `add_weights`
    (n, T); `round_weights` (n, R)."""
    n = sum_weights.shape[0]
    k = vector.shape[0] // n
    for chunk in prange(jit.chunks(n)):
        sums = np.empty(members.shape[0])
        lo, hi = chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)
        _fold_rows(vector[lo * k:hi * k], sum_weights[lo:hi], round_weights[lo:hi], add_weights[lo:hi], members,
                   tiled, k, sums, out[lo * k:hi * k], out[lo * k:hi * k])


@jit.inlined
def _fold_rows(vector: np.ndarray, sum_weights: np.ndarray, round_weights: np.ndarray, add_weights: np.ndarray,
               members: np.ndarray, tiled: bool, per_job: int, sums: np.ndarray, start: np.ndarray,
               out: np.ndarray) -> None:
    """`out[a]` := `start[a]` plus the rank-one terms per round of `vector[a]` for each row `a` of a chunk's
    jobs, `per_job` rows per job (the weights' row `a // per_job`; `members` (R, K) the goods of each round
    in increasing order, padded with -1; `sums` (R,) scratch; `out` may be `start` or `vector`). Each
    round's sum over its goods in the goods' order. One call per chunk, not per job: a call that passes
    a job's rows costs about as much as the job's work.

    `tiled`: the goods are K whole blocks of the R rounds in order (good m R + r is round r's m-th,
    `vfm.planner.solve.scaled_program.ScaledProgram.tiled`); the sums then run over contiguous runs
    of goods and vectorize, where a loop over `members` is a chain of dependent scalar operations
    per round. Both add the same terms in the same order."""
    rounds, width = members.shape
    for a in range(vector.shape[0]):
        i = a // per_job
        if tiled:
            for r in range(rounds):
                sums[r] = 0.0
            for m in range(width):
                base = m * rounds
                for r in range(rounds):
                    sums[r] += sum_weights[i, base + r] * vector[a, base + r]
            for m in range(width):
                base = m * rounds
                for r in range(rounds):
                    out[a, base + r] = start[a, base + r] + add_weights[i, base + r] * round_weights[i, r] * sums[r]
            continue
        for r in range(rounds):
            total = 0.0
            for m in range(width):
                c = members[r, m]
                if c >= 0:
                    total += sum_weights[i, c] * vector[a, c]
            sums[r] = total
        for r in range(rounds):
            weight = round_weights[i, r]
            for m in range(width):
                c = members[r, m]
                if c >= 0:
                    out[a, c] = start[a, c] + add_weights[i, c] * weight * sums[r]


@jit.inlined
def _root_times_rows(columns: np.ndarray, shrink: np.ndarray, vector: np.ndarray, along: np.ndarray,
                     times: int) -> None:
    """`low_rank._root_times` for each of a chunk's jobs (`columns` (jobs, S', T), `shrink` (jobs, S'),
    `vector` (jobs, T)): the same operations, one call per chunk."""
    count, k, goods = columns.shape
    for a in range(count):
        for _ in range(times):
            p = 0
            while p + 2 <= k:
                first = second = 0.0
                for t in range(goods):
                    first += columns[a, p, t] * vector[a, t]
                    second += columns[a, p + 1, t] * vector[a, t]
                along[p], along[p + 1] = shrink[a, p] * first, shrink[a, p + 1] * second
                p += 2
            if p < k:
                total = 0.0
                for t in range(goods):
                    total += columns[a, p, t] * vector[a, t]
                along[p] = shrink[a, p] * total
            p = 0
            while p + 2 <= k:
                first, second = along[p], along[p + 1]
                for t in range(goods):
                    vector[a, t] = vector[a, t] - first * columns[a, p, t] - second * columns[a, p + 1, t]
                p += 2
            if p < k:
                weight = along[p]
                for t in range(goods):
                    vector[a, t] -= weight * columns[a, p, t]


@jit.inlined
def _scaled_block_solve(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, along: np.ndarray,
                        x: np.ndarray) -> None:
    """The block solve between the folds of `typed_inverse_blocks` and `typed_subtract_inverse_blocks`
    for a chunk's jobs, in place: `x` scaled by `root`, through the low-rank factor twice
    (`_root_times_rows`), and scaled by `root` again."""
    count, goods = x.shape
    for a in range(count):
        for t in range(goods):
            x[a, t] = root[a, t] * x[a, t]
    _root_times_rows(columns, shrink, x, along, 2)
    for a in range(count):
        for t in range(goods):
            x[a, t] = root[a, t] * x[a, t]


@jit.over_jobs
def typed_inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, alpha: np.ndarray,
                         inverse_diagonal: np.ndarray, active: np.ndarray, members: np.ndarray, tiled: bool,
                         vector: np.ndarray, g: np.ndarray, out: np.ndarray, loads: np.ndarray) -> None:
    r"""`out` := :math:`K_i^{-1} v_i = N_i^\top D_i^{-1/2} F_i^2 D_i^{-1/2} N_i v_i` for every job, shape
    (n, T), and `loads` := :math:`\sum_i g_i \circ` `out` (T,), summed chunk by chunk (`jit.CHUNK`): the
    block solves with the one-type rows folded in (`vfm.planner.solve.ipm.blocks.TypeFold`), low-rank
    factor (`columns`, `shrink`), in one pass instead of the fold, the block solve and the unfold one
    after the other over the whole (n, T) arrays (each step the same floats as alone). `alpha` (n, R),
    `inverse_diagonal` and `active` (n, T) are the fold's, `members` and `tiled` as in `_fold_rows`."""
    n, k, goods = columns.shape
    partial = np.zeros((jit.chunks(n), goods))
    for chunk in prange(jit.chunks(n)):
        along = np.empty(k)
        sums = np.empty(members.shape[0])
        lo, hi = chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)
        x = np.empty((hi - lo, goods))
        _fold_rows(vector[lo:hi], inverse_diagonal[lo:hi], alpha[lo:hi], active[lo:hi], members, tiled, 1,
                   sums, vector[lo:hi], x)
        _scaled_block_solve(root[lo:hi], columns[lo:hi], shrink[lo:hi], along, x)
        _fold_rows(x, active[lo:hi], alpha[lo:hi], inverse_diagonal[lo:hi], members, tiled, 1, sums, x,
                   out[lo:hi])
        totals = partial[chunk]
        for a in range(hi - lo):
            for t in range(goods):
                totals[t] += g[lo + a, t] * out[lo + a, t]
    jit.add_chunks(partial, loads)


@jit.over_jobs
def typed_subtract_inverse_blocks(root: np.ndarray, columns: np.ndarray, shrink: np.ndarray, alpha: np.ndarray,
                                  inverse_diagonal: np.ndarray, active: np.ndarray, members: np.ndarray,
                                  tiled: bool, g: np.ndarray, correction: np.ndarray, out: np.ndarray) -> None:
    r"""`out` -= :math:`K_i^{-1} (g_i \circ c)` for every job (`typed_inverse_blocks`' blocks): the Woodbury
    identity's second term with the one-type rows folded in, `correction` :math:`c` (T,)."""
    n, k, goods = columns.shape
    for chunk in prange(jit.chunks(n)):
        along = np.empty(k)
        sums = np.empty(members.shape[0])
        lo, hi = chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)
        x = np.empty((hi - lo, goods))
        for a in range(hi - lo):
            for t in range(goods):
                x[a, t] = g[lo + a, t] * correction[t]
        _fold_rows(x, inverse_diagonal[lo:hi], alpha[lo:hi], active[lo:hi], members, tiled, 1, sums, x, x)
        _scaled_block_solve(root[lo:hi], columns[lo:hi], shrink[lo:hi], along, x)
        _fold_rows(x, active[lo:hi], alpha[lo:hi], inverse_diagonal[lo:hi], members, tiled, 1, sums, x, x)
        for a in range(hi - lo):
            for t in range(goods):
                out[lo + a, t] -= x[a, t]


@jit.over_jobs
def typed_curvature(active: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray, z_hi: np.ndarray,
                    spread: np.ndarray, progress: np.ndarray, weights: np.ndarray, u: np.ndarray, row: np.ndarray,
                    pace: np.ndarray, regularization: float, group: np.ndarray, diagonal: np.ndarray,
                    curvature: np.ndarray, root: np.ndarray, inverse_diagonal: np.ndarray, sigma: np.ndarray) -> None:
    r"""The first half of one Newton system's per-job work over GPU types with the low-rank factor
    (`vfm.planner.solve.ipm.blocks.typed_low_rank_system`), in one pass: for every job, `diagonal`,
    `curvature` (with the rows' column `row[i]` times `pace` when it has a column more than `progress`
    has scenarios) and `root` as `entries.bounds_curvature` and `entries.scaled_columns` compute them,
    `inverse_diagonal` := :math:`1 / d` on the active entries (0 elsewhere) and `sigma` (n, R) :=
    :math:`\sigma_r = e_r^\top D^{-1} e_r` (`group` (T,) the round of each good), the one-type rows'
    fold's terms (`vfm.planner.solve.ipm.blocks.TypeFold`)."""
    n, scenarios, goods = progress.shape
    k = curvature.shape[1]
    extra = k > scenarios
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            job_diagonal(active[i], y[i], s_hi[i], z_lo[i], z_hi[i], spread[i], diagonal[i])
            job_columns(progress[i], weights[i], u[i], diagonal[i], regularization, curvature[i], root[i])
            for t in range(goods):
                inverse_diagonal[i, t] = root[i, t] * root[i, t] if active[i, t] else 0.0
            if extra:
                for t in range(goods):
                    curvature[i, scenarios, t] = row[i] * pace[i, t]
            sums = sigma[i]
            sums[:] = 0.0
            for t in range(goods):
                sums[group[t]] += inverse_diagonal[i, t]


@jit.over_jobs
def typed_factor(curvature: np.ndarray, root: np.ndarray, inverse_diagonal: np.ndarray, alpha: np.ndarray,
                 active_weights: np.ndarray, g: np.ndarray, group: np.ndarray, members: np.ndarray, tiled: bool,
                 scaled: np.ndarray, columns: np.ndarray, shrink: np.ndarray, scaled_q: np.ndarray,
                 blocks: np.ndarray) -> None:
    r"""The second half of `typed_curvature`'s pass, given the fold's `alpha` (n, R)
    (`vfm.planner.solve.ipm.blocks.TypeFold`): for every job, `scaled` := :math:`V^\top = D^{-1/2} N C`
    and its low-rank factor (`columns`, `shrink`, as `low_rank.low_rank_factor`), and the capacity Gram
    matrix's pieces of `typed_gram` (`scaled_q`, `blocks` (R, K, K) := the rounds' own blocks summed
    chunk by chunk). `active_weights` is the active entries as floats, `group` (T,) the round of each
    good, `members` and `tiled` as in `_fold_rows`."""
    n, k, goods = curvature.shape
    rounds, width = members.shape
    partial = np.zeros((jit.chunks(n), rounds, width, width))
    for chunk in prange(jit.chunks(n)):
        gram = np.empty((k, k))
        rotation = np.empty((k, k))
        sums = np.empty(rounds)
        lo, hi = chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)
        count = (hi - lo) * k
        _fold_rows(curvature[lo:hi].reshape(count, goods), inverse_diagonal[lo:hi], alpha[lo:hi],
                   active_weights[lo:hi], members, tiled, k, sums, curvature[lo:hi].reshape(count, goods),
                   scaled[lo:hi].reshape(count, goods))
        diagonal_part = np.empty((hi - lo, goods))
        left = np.empty((hi - lo, goods))
        right = np.empty((hi - lo, goods))
        for i in range(lo, hi):
            for p in range(k):
                for t in range(goods):
                    scaled[i, p, t] = root[i, t] * scaled[i, p, t]
            _job_root(scaled[i], gram, rotation, columns[i], shrink[i])
            for t in range(goods):
                diagonal_part[i - lo, t] = g[i, t] * root[i, t]
                left[i - lo, t] = root[i, t] * (alpha[i, group[t]] * active_weights[i, t])
                right[i - lo, t] = inverse_diagonal[i, t] * g[i, t]
        _gram_chunk(columns[lo:hi], shrink[lo:hi], diagonal_part, left, right, group, members, scaled_q[lo:hi],
                    partial[chunk])
    jit.add_chunks(partial, blocks)


@jit.over_jobs
def type_row_terms(shared: np.ndarray, target: np.ndarray, s: np.ndarray, z: np.ndarray, group: np.ndarray,
                   out: np.ndarray) -> None:
    r"""`out` (n, T) := each entry's one-type row's term of the Newton right-hand side,
    :math:`t / s - z` of its round's row (`target` :math:`t`, slacks `s`, multipliers `z` (n, R); 0
    where the job has no row there, `shared`), `group` (T,) the round of each good
    (`vfm.planner.solve.ipm.newton.NewtonSystem.direction`)."""
    n, goods = out.shape
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(goods):
                r = group[t]
                out[i, t] = target[i, r] / s[i, r] - z[i, r] if shared[i, r] else 0.0


@jit.over_jobs
def type_row_steps(shared: np.ndarray, dy: np.ndarray, target: np.ndarray, s: np.ndarray, z: np.ndarray,
                   group: np.ndarray, ds: np.ndarray, dz: np.ndarray) -> float:
    r"""The one-type rows' slack and multiplier steps from the entries' step `dy` (n, T), 0 where the job
    has no row (`shared` (n, R)): :math:`\Delta s = -\sum_{t \in r} \Delta y_t` (each round's sum in the
    goods' order, `group` (T,) the round of each good), :math:`\Delta z = (t - z \Delta s) / s - z`
    (`target` :math:`t`), written to `ds` and `dz` (n, R); returns the largest rate
    :math:`-\Delta v / v` over the falling slacks and multipliers (`largest_step`'s), in one pass."""
    n, goods = dy.shape
    rounds = shared.shape[1]
    rates = np.zeros(jit.chunks(n))
    for chunk in prange(jit.chunks(n)):
        rate = 0.0
        sums = np.empty(rounds)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            sums[:] = 0.0
            for t in range(goods):
                sums[group[t]] += dy[i, t]
            for r in range(rounds):
                if not shared[i, r]:
                    ds[i, r] = 0.0
                    dz[i, r] = 0.0
                    continue
                step = -sums[r]
                change = (target[i, r] - z[i, r] * step) / s[i, r] - z[i, r]
                ds[i, r] = step
                dz[i, r] = change
                if step < 0:
                    rate = max(rate, -step / s[i, r])
                if change < 0:
                    rate = max(rate, -change / z[i, r])
        rates[chunk] = rate
    return jit.largest_of_chunks(rates)


@jit.over_jobs
def typed_row_terms(per_job: np.ndarray, pace: np.ndarray, per_round: np.ndarray, group: np.ndarray,
                    out: np.ndarray) -> None:
    r"""`out` (n, T) := :math:`r_i p_{it} - o_{i, r(t)}` (`vfm.planner.solve.scaled_program.row_terms` over GPU
    types: `per_job` :math:`r` (n,), `pace` :math:`p` (n, T), `per_round` :math:`o` (n, R), `group` (T,)
    the round of each good), in one pass: the same floats as the product and the gathered difference."""
    n, goods = pace.shape
    for chunk in prange(jit.chunks(n)):
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for t in range(goods):
                out[i, t] = per_job[i] * pace[i, t] - per_round[i, group[t]]
