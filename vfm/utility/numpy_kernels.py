"""NumPy formulas of `vfm.utility`: utilities, NSWOT and gradients as batched matrix products over the buyers.

Every function takes `vfm.utility.inputs.UtilityInputs` (``(S, n, K)`` utilities, ``(A, n, K)``
allocations) and returns the unshaped result, ``(S, A, ...)``; no Python loop runs over buyers,
scenarios or allocations. `NUMPY_FUNCTIONS` maps each quantity's name to its function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from vfm._validation import FloatArray
from vfm.utility.inputs import UtilityInputs

__all__ = ["NUMPY_FUNCTIONS", "numpy_safe_nswot"]


def numpy_cumulative(inputs: UtilityInputs) -> FloatArray:
    """(S, A, n): for every buyer i, the (S, K) @ (K, A) product of its utilities and allocations."""
    u, x = inputs.utilities, inputs.allocation
    products = np.matmul(u.transpose(1, 0, 2), x.transpose(1, 2, 0))  # (n, S, A)
    return inputs.base_utility + products.transpose(1, 2, 0)


def numpy_nswot(inputs: UtilityInputs) -> FloatArray:
    with np.errstate(divide="ignore"):
        return np.log(numpy_cumulative(inputs)) @ inputs.budgets  # (S, A)


def _log_cumulative(inputs: UtilityInputs) -> FloatArray:
    r"""(S, A, n): :math:`\log U_{sai}` without overflow: each buyer's utilities scaled by their
    largest entry (and its base utility), each allocation by its largest entry when above 1, so
    that the sum left is at most K + 1, and the scales' logs added back."""
    u, x, c = inputs.utilities, inputs.allocation, inputs.base_utility
    u_scale = np.maximum(u.max(axis=(0, 2)), c)  # (n,)
    u_scale = np.where(u_scale > 0, u_scale, 1.0)
    x_scale = np.maximum(x.max(axis=2), 1.0)  # (A, n)
    inner = np.matmul((u / u_scale[None, :, None]).transpose(1, 0, 2),
                      (x / x_scale[:, :, None]).transpose(1, 2, 0)).transpose(1, 2, 0)  # (S, A, n)
    inner = inner + (c / u_scale)[None, None, :] / x_scale[None, :, :]
    with np.errstate(divide="ignore"):
        return np.log(inner) + np.log(u_scale)[None, None, :] + np.log(x_scale)[None, :, :]


def numpy_safe_nswot(inputs: UtilityInputs) -> FloatArray:
    """(S, A): NSWOT from `_log_cumulative`; -inf where some buyer's utility is 0, and
    +inf only where the sum itself exceeds the largest float."""
    logs = _log_cumulative(inputs)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = logs * inputs.budgets
        total = np.sum(np.where(np.isneginf(logs), 0.0, terms), axis=-1)
    return np.where(np.isneginf(logs).any(axis=-1), -np.inf, total)


def _weights(inputs: UtilityInputs) -> FloatArray:
    """(S, A, n): B_i / U_sai, ``inf`` where U_sai = 0 (or where the quotient overflows)."""
    with np.errstate(divide="ignore", over="ignore"):
        return inputs.budgets / numpy_cumulative(inputs)


def numpy_gradient(inputs: UtilityInputs) -> FloatArray:
    weights = _weights(inputs)
    u = inputs.utilities
    with np.errstate(invalid="ignore", over="ignore"):
        gradient = weights[..., None] * u[:, None]  # (S, A, n, K)
    if np.isinf(weights).any():  # inf * 0 = NaN where the buyer does not value the entry
        gradient = np.where(u[:, None] > 0, gradient, 0.0)
    return gradient


def numpy_expected_gradient(inputs: UtilityInputs) -> FloatArray:
    """(A, n, K): (1/S) sum_s w_sai u_sik without forming the (S, A, n, K) array."""
    weights = _weights(inputs)
    u = inputs.utilities
    infinite = np.isinf(weights)
    finite_weights = np.where(infinite, 0.0, weights)
    # For every buyer i: (A, S) @ (S, K).
    with np.errstate(over="ignore"):
        gradient = np.matmul(finite_weights.transpose(2, 1, 0), u.transpose(1, 0, 2)).transpose(1, 0, 2)
        gradient /= u.shape[0]
    if infinite.any():
        hits = np.matmul(infinite.transpose(2, 1, 0).astype(np.float64), (u > 0).transpose(1, 0, 2).astype(np.float64))
        gradient = np.where(hits.transpose(1, 0, 2) > 0, np.inf, gradient)
    return gradient


#: Each quantity of `vfm.utility` by name (the names `vfm.utility.jax_kernels.run_jax` takes too).
NUMPY_FUNCTIONS: dict[str, Callable[[UtilityInputs], FloatArray]] = {
    "cumulative": numpy_cumulative,
    "nswot": numpy_nswot,
    "gradient": numpy_gradient,
    "expected": lambda i: numpy_nswot(i).mean(axis=0),
    "expected_gradient": numpy_expected_gradient,
}
