"""JAX formulas of `vfm.utility`: single-market kernels, vmapped over allocations and scenarios, and jitted.

The kernels are built and compiled once per process, on first use (`run_jax`), and compute in
float64 inside a thread-local ``jax.enable_x64(True)`` scope that leaves the caller's global
``jax_enable_x64`` setting alone. The expected gradient contracts the mapped ``(S, A, n)`` weights
:math:`B_i / U_{sai}` with the utilities instead of averaging ``(S, A, n, K)`` gradients.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from vfm._validation import FloatArray
from vfm.utility.backend import jax_module, x64_scope
from vfm.utility.inputs import UtilityInputs

__all__ = ["run_jax"]


class _JaxFunctions(NamedTuple):
    """The jitted functions, one per quantity, on batched inputs ``(S, n, K)``, ``(A, n, K)``."""

    cumulative: Callable[..., Any]  # (S, A, n)
    nswot: Callable[..., Any]  # (S, A)
    gradient: Callable[..., Any]  # (S, A, n, K)
    expected: Callable[..., Any]  # (A,)
    expected_gradient: Callable[..., Any]  # (A, n, K)


@functools.cache
def _jax_functions() -> _JaxFunctions:
    """Build and jit the JAX functions once per process (module-level cache)."""
    jax = jax_module()
    jnp = jax.numpy

    # Single market: u, x (n, K); budgets b, base utility c (n,).
    def cumulative_one(u: Any, x: Any, b: Any, c: Any) -> Any:
        return c + jnp.einsum("ik,ik->i", u, x)

    def nswot_one(u: Any, x: Any, b: Any, c: Any) -> Any:
        return jnp.dot(b, jnp.log(cumulative_one(u, x, b, c)))

    def weights_one(u: Any, x: Any, b: Any, c: Any) -> Any:
        return b / cumulative_one(u, x, b, c)  # (n,), inf where U_i = 0

    def gradient_one(u: Any, x: Any, b: Any, c: Any) -> Any:
        return jnp.where(u > 0, weights_one(u, x, b, c)[:, None] * u, 0.0)

    def batched(kernel: Callable[..., Any]) -> Callable[..., Any]:
        over_allocations = jax.vmap(kernel, in_axes=(None, 0, None, None))
        return jax.vmap(over_allocations, in_axes=(0, None, None, None))

    def expected(u: Any, x: Any, b: Any, c: Any) -> Any:
        return jnp.mean(batched(nswot_one)(u, x, b, c), axis=0)

    def expected_gradient(u: Any, x: Any, b: Any, c: Any) -> Any:
        # Contract the (S, A, n) weights with u instead of averaging (S, A, n, K) gradients.
        weights = batched(weights_one)(u, x, b, c)
        infinite = jnp.isinf(weights)
        gradient = jnp.einsum("sai,sik->aik", jnp.where(infinite, 0.0, weights), u) / u.shape[0]

        def mark_infinite(g: Any) -> Any:
            hits = jnp.einsum("sai,sik->aik", infinite.astype(u.dtype), (u > 0).astype(u.dtype))
            return jnp.where(hits > 0, jnp.inf, g)

        return jax.lax.cond(jnp.any(infinite), mark_infinite, lambda g: g, gradient)

    return _JaxFunctions(
        cumulative=jax.jit(batched(cumulative_one)),
        nswot=jax.jit(batched(nswot_one)),
        gradient=jax.jit(batched(gradient_one)),
        expected=jax.jit(expected),
        expected_gradient=jax.jit(expected_gradient),
    )


def run_jax(name: str, inputs: UtilityInputs) -> FloatArray:
    """Quantity `name` (a key of `vfm.utility.numpy_kernels.NUMPY_FUNCTIONS`) by the jitted JAX kernels, as NumPy
    float64."""
    jax = jax_module()
    function = getattr(_jax_functions(), name)
    with x64_scope(jax):
        result = function(inputs.utilities, inputs.allocation, inputs.budgets, inputs.base_utility)
        return np.asarray(result, dtype=np.float64)
