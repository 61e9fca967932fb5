r"""The one-type-per-round rows' kernels over GPU types, compiled: their rank-one terms per job and
round, and the capacity system's Gram matrix in pieces (`vfm.planner.saa_ipm_blocks.TypeFold`).
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


@jit.over_jobs
def add_group_outer(columns: np.ndarray, group: np.ndarray, weights: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i, a, g]` += `columns[i, a, group[g]]` `weights[i, g]` for every job: the rank-one terms
    :math:`(F_i a_{ir}) b_{ir}^\top` of the capacity system's factor with GPU types (`vfm.planner.saa_ipm`), each
    :math:`b_{ir}` supported on the goods of round `r` (`group` (T,), the round of each good);
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
    (`vfm.planner.saa_ipm_blocks.TypeFold.gram`), for the low-rank factor
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
    rounds' (S', S') Gram matrices summed: `blocks` (R, K, K) += it, over the jobs."""
    n, k, goods = columns.shape
    rounds, width = members.shape
    partial = np.zeros((jit.chunks(n), rounds, width, width))
    for chunk in prange(jit.chunks(n)):
        along = np.empty((k, rounds))
        q = np.empty((k, goods))
        per_round = np.empty((rounds, k, k))
        before = np.empty((rounds, k, k))  # the rounds' Gram matrices summed below r, and above r
        after = np.empty((rounds, k, k))
        outside = np.empty((k, k))
        y = np.empty((width, width))
        hq = np.empty((k, width))
        sums = partial[chunk]
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
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
                        sums[r, m, m2] += total
    totals = np.empty((rounds, width, width))
    jit.add_chunks(partial, totals)
    blocks += totals


@jit.over_jobs
def add_round_sums(vector: np.ndarray, sum_weights: np.ndarray, round_weights: np.ndarray, add_weights: np.ndarray,
                   group: np.ndarray, out: np.ndarray) -> None:
    r"""`out[i, j, t]` += `add_weights[i, t]` `round_weights[i, r]` :math:`\sum_{s \in r}` `sum_weights[i, s]`
    `vector[i, j, s]`, r = `group[t]` the round of good t: the one-type rows' rank-one terms per job and
    round (`vfm.planner.saa_ipm_blocks.TypeFold`, the Newton matrix's product). `vector`, `out` (n, k, T);
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
