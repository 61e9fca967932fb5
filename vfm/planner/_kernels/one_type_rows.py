r"""The one-type-per-round rows' kernels over GPU types, compiled: their rank-one terms per job and
round, and the capacity system's Gram matrix in pieces (`vfm.planner.solve.ipm.blocks.TypeFold`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


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
def _gram_chunk(columns: np.ndarray, shrink: np.ndarray, diagonal_part: np.ndarray, rank_one_left: np.ndarray,
                rank_one_right: np.ndarray, group: np.ndarray, members: np.ndarray, scaled_q: np.ndarray,
                sums: np.ndarray) -> None:
    """`typed_gram` for one chunk of jobs (its rows of every per-job argument), `sums` (R, K, K) its
    partial sum."""
    count, k, goods = columns.shape
    rounds, width = members.shape
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
    outside = np.empty((k, k, jit.CHUNK))
    hq = np.empty((k, width, jit.CHUNK))
    y = np.empty((width, width, jit.CHUNK))
    total = np.empty(jit.CHUNK)
    for r in range(rounds):
        for p in range(k):  # the other rounds', as sums (no difference)
            for s in range(k):
                for job in range(count):
                    outside[p, s, job] = before[r, p, s, job] + after[r, p, s, job]
        for m in range(width):
            c = members[r, m]
            for p in range(k):
                for job in range(count):
                    hq[p, m, job] = shrink[job, p] * q[p, c, job] if c >= 0 else 0.0
        for row in range(width):
            a = members[r, row]
            for m in range(width):
                c = members[r, m]
                for job in range(count):
                    if a < 0 or c < 0:
                        y[row, m, job] = 0.0
                        continue
                    value = left[a, job] * right[c, job]
                    if a == c:
                        value += diagonal[c, job]
                    for p in range(k):
                        value -= p_t[p, a, job] * hq[p, m, job]
                    y[row, m, job] = value
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
                for job in range(count):  # in job order: the chunk's sum as one job after another
                    sums[r, m, m2] += total[job]


@jit.over_jobs
def add_round_sums(vector: np.ndarray, sum_weights: np.ndarray, round_weights: np.ndarray, add_weights: np.ndarray,
                   group: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i, j, t]` += `add_weights[i, t]` `round_weights[i, r]` :math:`\sum_{s \in r}` `sum_weights[i, s]`
    `vector[i, j, s]`, r = `group[t]` the round of good t: the one-type rows' rank-one terms per job and
    round (`vfm.planner.solve.ipm.blocks.TypeFold`, the Newton matrix's product). `vector`, `out` (n, k, T);
    `sum_weights`, `add_weights` (n, T); `round_weights` (n, R)."""
    n, k, goods = vector.shape
    for chunk in prange(jit.chunks(n)):
        sums = np.empty(round_weights.shape[1])
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            for j in range(k):
                sums[:] = 0.0
                for t in range(goods):
                    sums[group[t]] += sum_weights[i, t] * vector[i, j, t]
                for t in range(goods):
                    out[i, j, t] += add_weights[i, t] * round_weights[i, group[t]] * sums[group[t]]
