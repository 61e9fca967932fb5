"""The dense block factor's kernel (`vfm.planner._kernels.dense.dense_factor`) against the plain
per-job algorithm it computes, operation for operation: the same floats, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.planner._kernels import dense, jit


@np.errstate(invalid="ignore", over="ignore")  # the failing jobs' non-finite entries
def _factor_job(v, scenarios, x):
    """One job's :math:`L^{-1}`, load and whether it factored, by the row-by-row Cholesky of
    :math:`I + V_0 V_0^\\top`, the forward solve for the load, the rotations that add the last column
    and the inverse row by row (None for what a failed pivot leaves unwritten)."""
    k, rounds = v.shape
    lower = np.zeros((rounds, rounds))
    for p in range(scenarios):
        for a in range(rounds):
            for b in range(a + 1):
                lower[a, b] += v[p, a] * v[p, b]
    for j in range(rounds):
        for a in range(j):
            total = lower[j, a]
            for m in range(a):
                total -= lower[j, m] * lower[a, m]
            lower[j, a] = total / lower[a, a]
        pivot = 1.0 + lower[j, j]
        for m in range(j):
            pivot -= lower[j, m] * lower[j, m]
        if not 0.0 < pivot < math.inf:
            return None, None, False
        lower[j, j] = math.sqrt(pivot)
    load = 0.0
    for a in range(rounds):
        value = x[a]
        for b in range(a):
            value -= lower[a, b] * x[b]
        value /= lower[a, a]
        x[a] = value
        load += value * value
    if k > scenarios:
        column = v[scenarios].copy()
        for j in range(rounds):
            radius = math.sqrt(lower[j, j] * lower[j, j] + column[j] * column[j])
            if not 0.0 < radius < math.inf:
                return None, load, False
            c, s = radius / lower[j, j], column[j] / lower[j, j]
            lower[j, j] = radius
            for a in range(j + 1, rounds):
                updated = (lower[a, j] + s * column[a]) / c
                column[a] = c * column[a] - s * updated
                lower[a, j] = updated
    inverse = np.zeros((rounds, rounds))
    for a in range(rounds):
        for m in range(a):
            for b in range(m + 1):
                inverse[a, b] -= lower[a, m] * inverse[m, b]
        inverse[a, a] = 1.0
        scale = 1.0 / lower[a, a]
        for b in range(a + 1):
            inverse[a, b] *= scale
    return inverse, load, True


@pytest.mark.parametrize(("columns", "scenarios"), [(5, 4), (4, 4)])
@pytest.mark.parametrize("with_loads", [True, False])
def test_the_dense_factor_is_the_per_job_algorithm_bit_for_bit(columns, scenarios, with_loads):
    rng = np.random.default_rng(columns + 2 * with_loads)
    n, rounds = jit.CHUNK + 7, 6  # a full chunk and a partial one
    scaled = rng.standard_normal((n, columns, rounds)) * 10.0 ** rng.uniform(-4, 2, (n, columns, rounds))
    failing = (3, jit.CHUNK + 2)
    scaled[failing[0], 0, 2] = np.nan  # fails in the first factor
    scaled[failing[1], columns - 1, 1] = np.inf  # fails in the update, or in the first factor without one
    root = 10.0 ** rng.uniform(-2, 2, (n, rounds))
    vector = rng.standard_normal((n, rounds))
    lower_inverse = np.full((n, rounds, rounds), -7.0)
    loads = np.full(n if with_loads else 0, -7.0)
    factored = dense.dense_factor(scaled, scenarios, root, vector, lower_inverse, loads)
    assert not factored
    for i in range(n):
        inverse, load, ok = _factor_job(scaled[i], scenarios, root[i] * vector[i])
        expected = np.full((rounds, rounds), -7.0) if inverse is None else inverse
        np.testing.assert_array_equal(lower_inverse[i], expected, strict=True)
        if with_loads:
            assert loads[i] == (-7.0 if load is None else load)
        assert ok == (i not in failing)
