"""The interior point's one-pass kernels (`vfm.planner._kernels.entries`) against the NumPy expressions
they replace, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.planner._kernels import entries


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
