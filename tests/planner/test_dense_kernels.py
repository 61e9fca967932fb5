"""The dense block factor's kernels (`vfm.planner._kernels.dense`) against the plain per-job
algorithms they compute, operation for operation: the same floats, bit for bit, in the factors'
layout of a chunk's jobs side by side."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.planner._kernels import dense, jit, kernel_threads


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


def _job_factor(lower_inverse, i):
    """Job `i`'s lower triangle of :math:`L_i^{-1}` from `dense`'s packed layout, zeros above, shape (T, T)."""
    packed = lower_inverse[i // jit.CHUNK, :, i % jit.CHUNK]
    rounds = math.isqrt(2 * packed.size)
    factor = np.zeros((rounds, rounds))
    factor[np.tril_indices(rounds)] = packed  # row by row, as `dense.packed` indexes them
    return factor


@pytest.mark.parametrize(("columns", "scenarios"), [(5, 4), (4, 4)])
@pytest.mark.parametrize("with_loads", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_dense_factor_is_the_per_job_algorithm_bit_for_bit(columns, scenarios, with_loads, threads):
    rng = np.random.default_rng(columns + 2 * with_loads)
    n, rounds = jit.CHUNK + 7, 6  # a full chunk and a partial one
    scaled = rng.standard_normal((n, columns, rounds)) * 10.0 ** rng.uniform(-4, 2, (n, columns, rounds))
    failing = (3, jit.CHUNK + 2)
    scaled[failing[0], 0, 2] = np.nan  # fails in the first factor
    scaled[failing[1], columns - 1, 1] = np.inf  # fails in the update, or in the first factor without one
    root = 10.0 ** rng.uniform(-2, 2, (n, rounds))
    vector = rng.standard_normal((n, rounds))
    lower_inverse = np.full(dense.lower_inverse_shape(n, rounds), -7.0)
    assert lower_inverse.shape == (2, rounds * (rounds + 1) // 2, jit.CHUNK)
    loads = np.full(n if with_loads else 0, -7.0)
    with kernel_threads(threads):
        factored = dense.dense_factor(scaled, scenarios, root, vector, lower_inverse, loads)
    assert not factored
    for i in range(n):
        inverse, load, ok = _factor_job(scaled[i], scenarios, root[i] * vector[i])
        if inverse is not None:  # a failing job's L^-1 is meaningless
            np.testing.assert_array_equal(_job_factor(lower_inverse, i), inverse, strict=True)
        if with_loads:
            assert loads[i] == (-7.0 if load is None else load)
        assert ok == (i not in failing)


def _solve_job(inverse, x):
    """:math:`L^{-\\top} L^{-1} x` for one job, `inverse` :math:`L^{-1}` (T, T): the sums by rows, in order."""
    rounds = x.shape[0]
    inner = np.zeros(rounds)
    for a in range(rounds):
        for b in range(a + 1):
            inner[a] += inverse[a, b] * x[b]
    out = np.zeros(rounds)
    for a in range(rounds):
        for b in range(a + 1):
            out[b] += inverse[a, b] * inner[a]
    return out


@pytest.fixture(scope="module")
def factors():
    """Random factors of two full chunks of jobs and a partial one in `dense`'s layout, NaN in the
    padding (never read); `root` and three (n, T) vectors of either sign."""
    rng = np.random.default_rng(5)
    n, rounds = 2 * jit.CHUNK + 7, 6
    lower_inverse = np.full(dense.lower_inverse_shape(n, rounds), np.nan)
    for chunk in range(lower_inverse.shape[0]):
        jobs = min(n - chunk * jit.CHUNK, jit.CHUNK)
        lower_inverse[chunk, :, :jobs] = rng.standard_normal((rounds * (rounds + 1) // 2, jobs))
    root = 10.0 ** rng.uniform(-2, 2, (n, rounds))
    vectors = rng.standard_normal((3, n, rounds))
    return lower_inverse, root, vectors


@pytest.mark.parametrize("threads", [1, 2])
def test_the_block_solves_are_the_per_job_solves_bit_for_bit(factors, threads):
    lower_inverse, root, (vector, g, _) = factors
    n, rounds = vector.shape
    correction = g[0]
    out, loads = np.empty((n, rounds)), np.empty(rounds)
    subtracted = vector.copy()
    with kernel_threads(threads):
        dense.dense_inverse_blocks(root, lower_inverse, vector, g, out, loads)
        dense.dense_subtract_inverse_blocks(root, lower_inverse, g, correction, subtracted)
    partial = np.zeros((lower_inverse.shape[0], rounds))
    for i in range(n):
        inverse = _job_factor(lower_inverse, i)
        expected = _solve_job(inverse, root[i] * vector[i]) * root[i]
        np.testing.assert_array_equal(out[i], expected, strict=True)
        partial[i // jit.CHUNK] += g[i] * expected  # each chunk in job order, then the chunks in order
        solved = _solve_job(inverse, root[i] * g[i] * correction)
        np.testing.assert_array_equal(subtracted[i], vector[i] - root[i] * solved, strict=True)
    np.testing.assert_array_equal(loads, sum(partial, np.zeros(rounds)), strict=True)


@pytest.mark.parametrize("threads", [1, 2])
def test_the_factors_times_diagonals_are_numpys_product_bit_for_bit(factors, threads):
    lower_inverse, _, (_, _, x) = factors
    n, rounds = x.shape
    out = np.empty((n, rounds, rounds))
    with kernel_threads(threads):
        dense.dense_times_diagonal(x, lower_inverse, out)
    full = np.stack([_job_factor(lower_inverse, i) for i in range(n)])
    expected = np.multiply(full, x[:, None, :])
    assert np.signbit(expected[:, 0, 1:]).any()  # negative x: the upper triangles' -0.0 are compared too
    np.testing.assert_array_equal(out.view(np.int64), expected.view(np.int64))
