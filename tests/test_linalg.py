"""The shared preconditioned conjugate gradients (`vfm._linalg`)."""

from __future__ import annotations

import numpy as np

from vfm._linalg import preconditioned_cg

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
