"""Linear algebra shared by vfm's interior-point solvers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vfm._validation import FloatArray


def preconditioned_cg(apply: Callable[[FloatArray], FloatArray], precondition: Callable[[FloatArray], FloatArray],
                      rhs: FloatArray, tolerance: float, steps: int,
                      patience: int | None = None) -> tuple[FloatArray, float]:
    """Solve ``H x = rhs`` (H symmetric positive definite) by preconditioned conjugate gradients.

    Starts from ``precondition(rhs)``, the solvers' (approximate) direct inverse, so that an
    accurate preconditioner costs no CG step at all; stops when the max-norm of the recursive
    residual is at most ``tolerance * max|rhs|``, after `steps` steps, or when a curvature
    is not positive (rounding has made the search direction useless).

    Parameters
    ----------
    apply : callable
        ``v -> H v``, from H's definition (exact).
    precondition : callable
        ``r -> P^-1 r`` with P close to H.
    rhs : ndarray
        Any shape; `apply` and `precondition` map arrays of that shape.
    tolerance : float
        Relative max-norm tolerance.
    steps : int
        Most CG steps.
    patience : int, optional
        Stop after this many steps without the residual's max-norm halving (a system with no
        digits left, whose residual then creeps down to the same floor in all `steps`).

    Returns
    -------
    solution : ndarray
    error : float
        ``max|rhs - H solution|``. The recursive residual drifts from the true one with every
        step, so after two or more steps the true one is computed (one more `apply`); after one
        it is the true residual of the start updated once, exact to rounding.
    """
    solution = precondition(rhs)
    residual = rhs - apply(solution)
    target = tolerance * float(np.abs(rhs).max())
    if not float(np.abs(residual).max()) > target:
        return solution, float(np.abs(residual).max())
    preconditioned = precondition(residual)
    search = preconditioned
    inner = float(np.vdot(residual, preconditioned))
    best, best_at = float(np.abs(residual).max()), 0
    for taken in range(1, steps + 1):
        image = apply(search)
        curvature = float(np.vdot(search, image))
        if not (curvature > 0 and inner > 0):
            break
        step = inner / curvature
        solution = solution + step * search
        residual = residual - step * image
        size = float(np.abs(residual).max())
        if not size > target:
            if taken == 1:
                return solution, size
            break
        if size < 0.5 * best:
            best, best_at = size, taken
        elif patience is not None and taken - best_at >= patience:
            break
        preconditioned = precondition(residual)
        previous, inner = inner, float(np.vdot(residual, preconditioned))
        search = preconditioned + (inner / previous) * search
    return solution, float(np.abs(rhs - apply(solution)).max())
