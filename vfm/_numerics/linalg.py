"""Linear algebra shared by vfm's interior-point solvers."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.linalg import lapack

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
    size = float(np.abs(residual).max())
    if not size > target:
        return solution, size
    preconditioned = precondition(residual)
    search = preconditioned
    inner = float(np.vdot(residual, preconditioned))
    best, best_at = size, 0
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


# The interior points' small dense systems, (T, T) with T ~ 20, are factored and solved thousands of
# times a plan: LAPACK's routines are called directly, the ones `scipy.linalg.cho_factor`,
# `cho_solve`, `lu_factor` and `lu_solve` call (the same results), without their argument
# handling, which costs more per call than the arithmetic.


def cholesky(matrix: FloatArray) -> FloatArray:
    """The lower Cholesky factor of the symmetric positive definite `matrix` (its lower triangle
    read; the upper triangle of the result is not cleared), for `cholesky_solve`.

    Raises `numpy.linalg.LinAlgError` when `matrix` is not numerically positive definite, and
    ValueError when it is not finite."""
    if not np.isfinite(matrix).all():
        raise ValueError("array must not contain infs or NaNs")
    factor, info = lapack.dpotrf(matrix, lower=1, clean=0)
    if info > 0:
        raise np.linalg.LinAlgError(f"{info}-th leading minor of the array is not positive definite")
    return factor


def cholesky_solve(factor: FloatArray, rhs: FloatArray) -> FloatArray:
    """The solution of ``matrix x = rhs``, `factor` being `cholesky(matrix)`."""
    solution, _ = lapack.dpotrs(factor, rhs, lower=1)
    return solution


def lu(matrix: FloatArray) -> tuple[FloatArray, np.ndarray] | None:
    """The LU factors and pivots of `matrix` (LAPACK getrf) for `lu_solve`; None when a pivot is 0 or
    a factor is not finite."""
    factors, pivots, _ = lapack.dgetrf(matrix)
    if not np.all(np.isfinite(factors) & (np.diag(factors) != 0)):
        return None
    return factors, pivots


def lu_solve(factored: tuple[FloatArray, np.ndarray], rhs: FloatArray) -> FloatArray:
    """The solution of ``matrix x = rhs``, `factored` being `lu(matrix)`."""
    solution, _ = lapack.dgetrs(*factored, rhs)
    return solution
