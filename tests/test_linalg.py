"""The shared preconditioned conjugate gradients (`vfm._numerics.linalg`)."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from vfm._numerics.linalg import cholesky, cholesky_solve, lu, lu_solve, preconditioned_cg

# Ill conditioned with a useless preconditioner: the residual creeps down without halving each step.
CURVATURES = np.logspace(0, 8, 60)
RHS = np.random.default_rng(0).standard_normal(60)


def _counted() -> tuple[list[int], object]:
    calls = [0]

    def apply(vector: np.ndarray) -> np.ndarray:
        calls[0] += 1
        return CURVATURES * vector

    return calls, apply


def test_patience_stops_a_stalled_solve_early_and_reports_its_true_residual():
    full_calls, full_apply = _counted()
    _, full_error = preconditioned_cg(full_apply, lambda r: r.copy(), RHS, 1e-14, 40)
    calls, apply = _counted()
    solution, error = preconditioned_cg(apply, lambda r: r.copy(), RHS, 1e-14, 40, patience=2)
    assert calls[0] < full_calls[0]
    assert error == float(np.abs(RHS - CURVATURES * solution).max())
    assert error > full_error  # it stopped before the full run's residual


def test_patience_does_not_stop_a_converging_solve():
    # An exact preconditioner: the start solves the system, no step is taken either way.
    solution, error = preconditioned_cg(lambda v: CURVATURES * v, lambda r: r / CURVATURES, RHS, 1e-12, 40,
                                        patience=1)
    np.testing.assert_allclose(solution, RHS / CURVATURES, rtol=1e-14)
    assert error <= 1e-12 * float(np.abs(RHS).max())


def _spd(size: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).standard_normal((size + 3, size))
    return rows.T @ rows + 1e-3 * np.eye(size)


def test_cholesky_and_its_solve_are_scipys_bit_for_bit():
    for size, seed in ((1, 0), (5, 1), (20, 2)):
        matrix = _spd(size, seed)
        rhs = np.random.default_rng(seed + 10).standard_normal(size)
        reference = scipy.linalg.cho_factor(matrix, lower=True)
        factor = cholesky(matrix)
        assert np.array_equal(np.tril(factor), np.tril(reference[0]))
        assert np.array_equal(cholesky_solve(factor, rhs), scipy.linalg.cho_solve(reference, rhs))


def test_cholesky_refuses_what_is_not_positive_definite_or_not_finite():
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        cholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="infs or NaNs"):
        cholesky(np.array([[1.0, np.nan], [np.nan, 1.0]]))


def test_lu_and_its_solve_are_scipys_bit_for_bit_and_a_singular_matrix_gives_none():
    matrix = np.random.default_rng(3).standard_normal((7, 7))
    rhs = np.random.default_rng(4).standard_normal(7)
    factors = lu(matrix)
    assert factors is not None
    assert np.array_equal(lu_solve(factors, rhs), scipy.linalg.lu_solve(scipy.linalg.lu_factor(matrix), rhs))
    assert lu(np.array([[1.0, 2.0], [2.0, 4.0]])) is None
