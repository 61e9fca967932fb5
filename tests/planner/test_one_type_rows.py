"""The one-type rows' Gram kernel (`vfm.planner._kernels.one_type_rows.typed_gram`) against the plain
per-job algorithm it computes, operation for operation: the same floats, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.planner._kernels import one_type_rows


def _job_blocks(p_t, shrink, x, left, right, group, members):
    """One job's scaled Q (S', T) and its rounds' own blocks (R, K, K), job by job and entry by entry."""
    k, goods = p_t.shape
    rounds, width = members.shape
    along, per_round = np.zeros((k, rounds)), np.zeros((rounds, k, k))
    for a in range(goods):
        for p in range(k):
            along[p, group[a]] += p_t[p, a] * left[a]
            for s in range(k):
                per_round[group[a], p, s] += p_t[p, a] * p_t[s, a]
    before, after = np.zeros((rounds, k, k)), np.zeros((rounds, k, k))
    for r in range(1, rounds):
        before[r] = before[r - 1] + per_round[r - 1]
        after[rounds - 1 - r] = after[rounds - r] + per_round[rounds - r]
    q, scaled = np.empty((k, goods)), np.empty((k, goods))
    for p in range(k):
        norm = 0.0
        for a in range(goods):
            norm += p_t[p, a] * p_t[p, a]
        for c in range(goods):
            q[p, c] = p_t[p, c] * x[c] + right[c] * along[p, group[c]]
            scaled[p, c] = 1.0 / math.sqrt(1.0 + norm) * q[p, c]
    blocks = np.zeros((rounds, width, width))
    for r in range(rounds):
        outside = before[r] + after[r]
        hq = np.array([[shrink[p] * q[p, c] if c >= 0 else 0.0 for c in members[r]] for p in range(k)])
        y = np.zeros((width, width))
        for row, a in enumerate(members[r]):
            for m, c in enumerate(members[r]):
                if a >= 0 and c >= 0:
                    value = left[a] * right[c] + (x[c] if a == c else 0.0)
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
                blocks[r, m, m2] = total
    return scaled, blocks


@pytest.mark.parametrize(("jobs", "columns", "rounds", "types", "seed"), [(70, 2, 4, 3, 0), (9, 3, 5, 2, 1)])
def test_typed_gram_is_the_per_job_algorithm_bit_for_bit(jobs, columns, rounds, types, seed):
    rng = np.random.default_rng(seed)
    goods = rounds * types
    group = np.tile(np.arange(rounds), types)
    members = np.stack([np.flatnonzero(group == r) for r in range(rounds)])
    members[0, -1] = -1  # a round with a good fewer: the padding
    p_t = rng.standard_normal((jobs, columns, goods)) * 10.0 ** rng.uniform(-3, 1, (jobs, columns, goods))
    shrink, x, left, right = rng.random((jobs, columns)), *rng.random((3, jobs, goods))
    scaled, blocks = np.empty_like(p_t), np.zeros((rounds, types, types))
    one_type_rows.typed_gram(p_t, shrink, x, left, right, group, members, scaled, blocks)
    expected = np.zeros_like(blocks)
    for chunk in range(0, jobs, 64):  # the chunks' sums, each in job order, added in chunk order
        partial = np.zeros_like(blocks)
        for i in range(chunk, min(jobs, chunk + 64)):
            job_scaled, job_blocks = _job_blocks(p_t[i], shrink[i], x[i], left[i], right[i], group, members)
            assert np.array_equal(scaled[i], job_scaled)
            partial += job_blocks
        expected += partial
    assert np.array_equal(blocks, expected)
