"""The interior point's one-pass kernels (`vfm.planner._kernels.entries`) against the NumPy expressions
they replace, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.planner._kernels import entries, jit, kernel_threads


def _arrays(seed: int, shape: tuple[int, ...], count: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random(shape) * 10.0 ** rng.uniform(-6, 2, shape) for _ in range(count)]


@pytest.mark.parametrize("seed", range(5))
def test_the_bounds_curvature_and_a_moved_point_are_numpys(seed):
    n, rounds = 70, 9  # more jobs than a chunk
    active = np.random.default_rng(seed).random((n, rounds)) < 0.8
    y, s_hi, z_lo, z_hi, dy, dz_lo, dz_hi = _arrays(seed, (n, rounds), 7)
    dy, dz_lo = dy - 0.5, dz_lo - 0.5
    spread = _arrays(seed + 1, (n,), 1)[0]
    diagonal = np.empty((n, rounds))
    entries.bounds_curvature(active, y, s_hi, z_lo, z_hi, spread, diagonal)
    safe_y = np.where(active, y, 1.0)
    assert np.array_equal(diagonal, np.where(active, z_lo / safe_y + z_hi / s_hi + spread[:, None], 1.0))
    alpha = 0.37
    moved = [np.empty((n, rounds)) for _ in range(4)]
    entries.moved_entries(active, alpha, y, dy, s_hi, z_lo, dz_lo, z_hi, dz_hi, *moved)
    expected = (y + alpha * dy, np.where(active, s_hi - alpha * dy, 1.0), z_lo + alpha * dz_lo, z_hi + alpha * dz_hi)
    for got, want in zip(moved, expected, strict=True):
        assert np.array_equal(got, want)


@pytest.mark.parametrize("seed", range(5))
def test_the_rows_steps_and_their_rate_are_numpys(seed):
    n = 40
    rng = np.random.default_rng(seed)
    constrained, efficient = rng.random(n) < 0.5, rng.random(n) < 0.5
    running, residual, target_f, target_e = (rng.standard_normal(n) for _ in range(4))
    s_f, z_f, s_e, z_e = _arrays(seed, (n,), 4)
    d_zeta = float(rng.standard_normal())
    steps = [np.empty(n) for _ in range(4)]
    rate = entries.row_steps(constrained, efficient, running, residual, d_zeta, target_f, target_e, s_f, z_f, s_e,
                             z_e, *steps)
    ds_f = np.where(constrained, running + residual, 0.0)
    dz_f = np.where(constrained, (target_f - z_f * ds_f) / s_f - z_f, 0.0)
    ds_e = np.where(efficient, running + d_zeta, 0.0)
    dz_e = np.where(efficient, (target_e - z_e * ds_e) / s_e - z_e, 0.0)
    for got, want in zip(steps, (ds_f, dz_f, ds_e, dz_e), strict=True):
        assert np.array_equal(got, want)
    rates = [np.max(np.where(c < 0, -c / v, 0.0)) for v, c in ((s_f, ds_f), (z_f, dz_f), (s_e, ds_e), (z_e, dz_e))]
    assert rate == max(rates)


def _evaluation(progress, base, beta, spread, active, g, y, s_hi, z_lo, z_hi, prices, rows, pace, weights,
                own_weights):
    """`entries.evaluate_entries` one entry at a time: each utility a sum over the rounds in order, each
    gradient a sum over the scenarios in order, each total chunk by chunk in job order (`jit.CHUNK`)."""
    n, scenarios, rounds = progress.shape
    u, running = np.empty((n, scenarios)), np.empty(n)
    dual, primal = np.empty((n, rounds)), np.empty((n, rounds))
    partial = np.zeros((-(-n // jit.CHUNK), 5))
    for i in range(n):
        sums = partial[i // jit.CHUNK]
        true_weight, weight = np.empty(scenarios), np.empty(scenarios)
        for s in range(scenarios):
            total = base[i, s]
            for t in range(rounds):
                total += progress[i, s, t] * y[i, t]
            u[i, s] = total
            sums[0] -= beta[i] * math.log(total)
            true_weight[s] = beta[i] / total
            weight[s] = weights[i, s] if own_weights else true_weight[s]
            if own_weights:
                sums[4] += abs(weights[i, s] * total - beta[i])
        squares = total_y = 0.0
        for t in range(rounds):
            if not active[i, t]:
                dual[i, t] = primal[i, t] = 0.0
                continue
            gradient = true_gradient = spread[i] * y[i, t]
            for s in range(scenarios):
                gradient -= weight[s] * progress[i, s, t]
                true_gradient -= true_weight[s] * progress[i, s, t]
            outside = g[i, t] * prices[t] - rows[i, t]
            priced = true_gradient + outside
            dual[i, t] = gradient + outside - z_lo[i, t] + z_hi[i, t]
            primal[i, t] = priced - z_lo[i, t] + z_hi[i, t]
            sums[1] += y[i, t] * z_lo[i, t] + s_hi[i, t] * z_hi[i, t]
            sums[2] += abs(dual[i, t]) * max(y[i, t], s_hi[i, t])
            sums[3] += max(priced, 0.0) * y[i, t] + max(-priced, 0.0) * s_hi[i, t]
            squares += y[i, t] * y[i, t]
            total_y += pace[i, t] * y[i, t]
        running[i] = total_y
        sums[0] += 0.5 * spread[i] * squares
    totals = np.zeros(5)
    for sums in partial:
        totals += sums
    return tuple(totals), u, dual, primal, running


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("scenarios", [1, 6])  # one scenario, and four side by side plus two
@pytest.mark.parametrize("own_weights", [True, False])
def test_the_point_evaluation_is_the_sums_in_order_bit_for_bit(threads, scenarios, own_weights):
    n, rounds = 2 * jit.CHUNK + 5, 7
    rng = np.random.default_rng(scenarios + 2 * own_weights)
    progress = rng.random((n, scenarios, rounds)) * 10.0 ** rng.uniform(-3, 1, (n, scenarios, rounds))
    beta, spread = (rng.random(n) + 0.1 for _ in range(2))
    base = rng.random((n, scenarios)) + 0.1  # one per job and scenario
    active = rng.random((n, rounds)) < 0.8
    g, y, s_hi, z_lo, z_hi, pace = _arrays(scenarios, (n, rounds), 6)
    prices = rng.random(rounds)
    rows = rng.standard_normal((n, rounds))
    weights = rng.random((n, scenarios)) + 0.5
    arguments = (progress, base, beta, spread, active, g, y, s_hi, z_lo, z_hi, prices, rows, pace, weights,
                 own_weights)
    u, running = np.empty((n, scenarios)), np.empty(n)
    dual, primal = np.empty((n, rounds)), np.empty((n, rounds))
    with kernel_threads(threads):
        totals = entries.evaluate_entries(*arguments, u, dual, primal, running)
    expected = _evaluation(*arguments)
    assert totals == expected[0]
    for got, want in zip((u, dual, primal, running), expected[1:], strict=True):
        np.testing.assert_array_equal(got, want, strict=True)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("columns", [2, 9])  # the one-scenario columns, and twice four side by side plus one
def test_the_hessian_products_are_the_dot_products_in_order_bit_for_bit(threads, columns):
    n, rounds = 2 * jit.CHUNK + 5, 7
    rng = np.random.default_rng(columns)
    curvature = rng.standard_normal((n, columns, rounds)) * 10.0 ** rng.uniform(-3, 3, (n, columns, rounds))
    diagonal, g, vector = rng.random((n, rounds)), rng.random((n, rounds)), rng.standard_normal((n, rounds))
    prices_term = rng.random(rounds)
    out = np.empty((n, rounds))
    with kernel_threads(threads):
        entries.hessian_times(curvature, diagonal, g, prices_term, vector, out)
    for i in range(n):
        expected = diagonal[i] * vector[i] + g[i] * prices_term
        for p in range(columns):
            total = 0.0
            for t in range(rounds):
                total += curvature[i, p, t] * vector[i, t]
            expected += total * curvature[i, p]
        np.testing.assert_array_equal(out[i], expected, strict=True)
