r"""Vectorized evaluation of cumulative utilities and NSWOT over scenarios and allocations.

A planner evaluates the same few quantities many times: for every forecast
scenario :math:`s` of the utilities and every candidate allocation :math:`a`, buyer `i`'s
cumulative utility

.. math:: U_{sai} = c_i + \sum_{j,t} u_{sijt}\, x_{aijt},

the Nash social welfare over time (NSWOT) and its gradient with respect to the allocation

.. math::

    F_{sa} = \sum_i B_i \log U_{sai}, \qquad
    \frac{\partial F_{sa}}{\partial x_{aijt}} = \frac{B_i\, u_{sijt}}{U_{sai}},

and the sample-average (SAA) objective of the stochastic planner with its gradient

.. math::

    \bar F_a = \frac1S \sum_s F_{sa}, \qquad
    \frac{\partial \bar F_a}{\partial x_{aijt}} = \frac1S \sum_s \frac{B_i\, u_{sijt}}{U_{sai}} .

With :math:`S = 1` and the posterior-mean utilities this is the certainty-equivalent objective.

Shapes and broadcasting
-----------------------
``utilities`` is either one market, shape ``(n, m, T)``, or a batch of `S` scenarios, shape
``(S, n, m, T)``. ``allocation`` is either one allocation, shape ``(n, m, T)``, or a batch of
`A` allocations, shape ``(A, n, m, T)``. The trailing ``(n, m, T)`` must agree. Every scenario
is paired with every allocation (an outer product over the two batch axes, not NumPy
broadcasting), and a batch axis appears in the result exactly when the corresponding argument
has one:

============================  ======================  =============================
utilities, allocation         `cumulative_utilities`  `nswot`, `expected_nswot`
============================  ======================  =============================
(n, m, T),    (n, m, T)       (n,)                    (),      ()
(S, n, m, T), (n, m, T)       (S, n)                  (S,),    ()
(n, m, T),    (A, n, m, T)    (A, n)                  (A,),    (A,)
(S, n, m, T), (A, n, m, T)    (S, A, n)               (S, A),  (A,)
============================  ======================  =============================

`nswot_gradient` has the shape of `nswot` followed by ``(n, m, T)``; `expected_nswot_gradient`
has the shape of ``allocation``. An unbatched ``utilities`` counts as a single scenario
(:math:`S = 1`) in the expectation. ``budgets`` (`B`, default all ones) and ``base_utility``
(`c`, default zeros) have shape ``(n,)`` and are shared by all scenarios.

Where NSWOT is not finite
-------------------------
All inputs are non-negative, so :math:`U_{sai} \ge 0`. Where some :math:`U_{sai} = 0`, the
NSWOT :math:`F_{sa}` is ``-inf`` (no NaN, no warning). The gradient entry of such a buyer is
the one-sided derivative into the feasible region: ``+inf`` where :math:`u_{sijt} > 0` and
``0`` where :math:`u_{sijt} = 0` (the objective does not depend on that entry). The same rule
holds for every term of the expected gradient, so it is ``+inf`` where any scenario
contributes ``+inf``.

Backends
--------
Every function takes ``backend``:

* ``"numpy"``: fully vectorized NumPy (batched matrix products, no Python loop over buyers,
  scenarios or allocations);
* ``"jax"``: single-market kernels (utilities, NSWOT, gradient, weights :math:`B_i / U_i`)
  mapped with `jax.vmap` over allocations and then scenarios and compiled with `jax.jit`; the
  expected gradient contracts the mapped ``(S, A, n)`` weights with the utilities instead of
  averaging ``(S, A, n, m, T)`` gradients. The compiled functions are cached for the life of
  the process; JAX re-compiles for every new combination of ``(S, A, n, m*T)``, so the first
  call for a shape pays the compile time (0.1 to 0.3 s per function). It computes in float64
  inside a thread-local ``jax.enable_x64(True)`` scope (``jax.experimental.enable_x64`` on
  older JAX), which leaves the caller's global ``jax_enable_x64`` setting untouched. This
  module imports JAX on first use, not at import time;
* ``"auto"`` (the default): ``"jax"`` when JAX can be imported and runs on an accelerator
  (GPU/TPU), else ``"numpy"``: on a CPU the NumPy path measured as fast or faster (see
  `_automatic_backend`).

Both backends return NumPy float64 arrays (or a NumPy float64 scalar for 0-d results) and agree
to rounding (about :math:`10^{-15}` relative), with one exception: XLA on CPU flushes subnormal
numbers (magnitude below about :math:`2.2 \times 10^{-308}`) to zero, so where a product
:math:`u x`, a :math:`c_i` or a :math:`U_{sai}` is subnormal the JAX backend sees 0 (and may
return ``-inf`` where NumPy returns a finite value). Quotients :math:`B_i / U_{sai}` that
overflow become ``inf`` in both backends, silently.

Inputs are validated once, here, at the boundary: real numbers of the documented shapes, no
NaN or infinity, :math:`u, c, x \ge 0` and :math:`B > 0`. A violation raises
`vfm.errors.ValidationError` naming the argument.

Examples
--------
>>> import numpy as np
>>> from vfm.utility import cumulative_utilities, nswot
>>> u = np.array([[[1.0, 2.0]], [[3.0, 0.0]]])         # n=2 buyers, m=1 good, T=2 periods
>>> scenarios = np.stack([u, 2 * u])                     # S=2
>>> x = np.full((2, 1, 2), 0.5)                          # the equal split
>>> cumulative_utilities(scenarios, x, backend="numpy")  # shape (S, n)
array([[1.5, 1.5],
       [3. , 3. ]])
>>> nswot(scenarios, np.stack([x, 2 * x]), backend="numpy").shape  # (S, A)
(2, 2)
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, real_array
from vfm.errors import ValidationError

__all__ = [
    "Backend",
    "available_backends",
    "cumulative_utilities",
    "expected_nswot",
    "expected_nswot_gradient",
    "nswot",
    "nswot_gradient",
]

Backend = Literal["auto", "jax", "numpy"]
_BACKENDS = ("auto", "jax", "numpy")


# --------------------------------------------------------------------------------------------
# Backend selection
# --------------------------------------------------------------------------------------------


@functools.cache
def _jax_module() -> Any:
    """Import JAX once; return the module, or None if it cannot be imported."""
    try:
        import jax
    except Exception:  # ImportError, or a broken install failing at import time
        return None
    return jax


def available_backends() -> tuple[str, ...]:
    """The backends usable in this environment.

    Returns
    -------
    tuple of str
        ``("jax", "numpy")`` when JAX can be imported, else ``("numpy",)``. ``backend="auto"``
        picks JAX only on an accelerator. Calling this imports JAX if it is installed.

    Examples
    --------
    >>> from vfm.utility import available_backends
    >>> "numpy" in available_backends()
    True
    """
    return ("jax", "numpy") if _jax_module() is not None else ("numpy",)


def _automatic_backend() -> str:
    """JAX where it runs on an accelerator, NumPy otherwise.

    On a CPU, at the planner's sizes (16 scenarios x 4 allocations x 900 jobs x 20 rounds) the
    jitted JAX kernels measured 0.9 to 3 ms per call against 0.5 to 2.5 ms for NumPy on this
    project's 2-core machine, and every new shape costs 0.1 to 0.3 s of compilation; JAX pays
    off only where XLA has a GPU or TPU to use.
    """
    jax = _jax_module()
    if jax is not None and jax.default_backend() != "cpu":
        return "jax"
    return "numpy"


def _resolve_backend(backend: object) -> str:
    if not isinstance(backend, str) or backend not in _BACKENDS:
        raise ValidationError(f"backend must be one of {', '.join(map(repr, _BACKENDS))}, got {backend!r}")
    if backend == "auto":
        return _automatic_backend()
    if backend == "jax" and _jax_module() is None:
        raise ValidationError(
            "backend='jax' needs JAX, which cannot be imported here: pip install 'vfm[jax]', "
            "or pass backend='numpy' (or 'auto')"
        )
    return backend


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _check_entries(array: FloatArray, name: str, *, positive: bool = False) -> None:
    """Reject NaN, infinities and negative (or, with `positive`, non-positive) entries."""
    finite = np.isfinite(array)
    if not finite.all():
        where = tuple(int(i) for i in np.argwhere(~finite)[0])
        what = "NaN" if np.isnan(array[where]) else f"an infinite value {array[where]}"
        raise ValidationError(f"{name} contains {what} at index {where}")
    bad = array <= 0 if positive else array < 0
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValidationError(f"{name} must be {'> 0' if positive else '>= 0'}, got {array[where]} at index {where}")


class _Inputs(NamedTuple):
    """Validated inputs, always batched and flattened over goods and periods."""

    utilities: FloatArray  # (S, n, K), K = m * T
    allocation: FloatArray  # (A, n, K)
    budgets: FloatArray  # (n,)
    base_utility: FloatArray  # (n,)
    market_shape: tuple[int, int, int]  # (n, m, T)
    scenario_batch: tuple[int, ...]  # () or (S,)
    allocation_batch: tuple[int, ...]  # () or (A,)


def _validate(
    utilities: ArrayLike,
    allocation: ArrayLike,
    budgets: ArrayLike | None,
    base_utility: ArrayLike | None,
) -> _Inputs:
    u = real_array(utilities, "utilities")
    if u.ndim not in (3, 4):
        raise ValidationError(f"utilities must have shape (n, m, T) or (S, n, m, T) with S scenarios, got {u.shape}")
    if 0 in u.shape:
        raise ValidationError(f"utilities must have at least one scenario, buyer, good and period, got shape {u.shape}")
    market_shape: tuple[int, int, int] = (u.shape[-3], u.shape[-2], u.shape[-1])
    n, m, periods = market_shape
    x = real_array(allocation, "allocation")
    if x.ndim not in (3, 4) or x.shape[-3:] != market_shape:
        raise ValidationError(
            f"allocation must have shape {market_shape} or (A, {n}, {m}, {periods}) with A allocations, "
            f"matching utilities' trailing (n, m, T) = {market_shape}; got {x.shape}"
        )
    if x.ndim == 4 and x.shape[0] == 0:
        raise ValidationError(f"allocation must hold at least one allocation, got shape {x.shape}")
    b = np.ones(n) if budgets is None else real_array(budgets, "budgets")
    if b.shape != (n,):
        raise ValidationError(f"budgets must have shape ({n},), one per buyer of utilities, got {b.shape}")
    c = np.zeros(n) if base_utility is None else real_array(base_utility, "base_utility")
    if c.shape != (n,):
        raise ValidationError(f"base_utility must have shape ({n},), one per buyer of utilities, got {c.shape}")
    _check_entries(u, "utilities")
    _check_entries(x, "allocation")
    _check_entries(b, "budgets", positive=True)
    _check_entries(c, "base_utility")
    return _Inputs(
        utilities=u.reshape(-1, n, m * periods),
        allocation=x.reshape(-1, n, m * periods),
        budgets=b,
        base_utility=c,
        market_shape=market_shape,
        scenario_batch=u.shape[:-3],
        allocation_batch=x.shape[:-3],
    )


# --------------------------------------------------------------------------------------------
# NumPy backend: batched matrix products over the buyer axis
# --------------------------------------------------------------------------------------------


def _np_cumulative(inputs: _Inputs) -> FloatArray:
    """(S, A, n): for every buyer i, the (S, K) @ (K, A) product of its utilities and allocations."""
    u, x = inputs.utilities, inputs.allocation
    products = np.matmul(u.transpose(1, 0, 2), x.transpose(1, 2, 0))  # (n, S, A)
    return inputs.base_utility + products.transpose(1, 2, 0)


def _np_nswot(inputs: _Inputs) -> FloatArray:
    with np.errstate(divide="ignore"):
        return np.log(_np_cumulative(inputs)) @ inputs.budgets  # (S, A)


def _np_log_cumulative(inputs: _Inputs) -> FloatArray:
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


def _np_safe_nswot(inputs: _Inputs) -> FloatArray:
    """(S, A): NSWOT from `_np_log_cumulative`; -inf where some buyer's utility is 0, and
    +inf only where the sum itself exceeds the largest float."""
    logs = _np_log_cumulative(inputs)
    with np.errstate(over="ignore", invalid="ignore"):
        terms = logs * inputs.budgets
        total = np.sum(np.where(np.isneginf(logs), 0.0, terms), axis=-1)
    return np.where(np.isneginf(logs).any(axis=-1), -np.inf, total)


def _np_weights(inputs: _Inputs) -> FloatArray:
    """(S, A, n): B_i / U_sai, ``inf`` where U_sai = 0 (or where the quotient overflows)."""
    with np.errstate(divide="ignore", over="ignore"):
        return inputs.budgets / _np_cumulative(inputs)


def _np_gradient(inputs: _Inputs) -> FloatArray:
    weights = _np_weights(inputs)
    u = inputs.utilities
    with np.errstate(invalid="ignore", over="ignore"):
        gradient = weights[..., None] * u[:, None]  # (S, A, n, K)
    if np.isinf(weights).any():  # inf * 0 = NaN where the buyer does not value the entry
        gradient = np.where(u[:, None] > 0, gradient, 0.0)
    return gradient


def _np_expected_gradient(inputs: _Inputs) -> FloatArray:
    """(A, n, K): (1/S) sum_s w_sai u_sik without forming the (S, A, n, K) array."""
    weights = _np_weights(inputs)
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


# --------------------------------------------------------------------------------------------
# JAX backend: a single-market kernel, vmapped over allocations and scenarios, jitted
# --------------------------------------------------------------------------------------------


class _JaxFunctions(NamedTuple):
    cumulative: Callable[..., Any]  # (S, A, n)
    nswot: Callable[..., Any]  # (S, A)
    gradient: Callable[..., Any]  # (S, A, n, K)
    expected: Callable[..., Any]  # (A,)
    expected_gradient: Callable[..., Any]  # (A, n, K)


@functools.cache
def _jax_functions() -> _JaxFunctions:
    """Build and jit the JAX functions once per process (module-level cache)."""
    jax = _jax_module()
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


def _x64_scope(jax: Any) -> Any:
    """A context manager that enables float64 in JAX for the current thread only."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    # JAX before jax.enable_x64 became a context manager.
    return importlib.import_module("jax.experimental").enable_x64(True)


def _run_jax(name: str, inputs: _Inputs) -> FloatArray:
    jax = _jax_module()
    function = getattr(_jax_functions(), name)
    with _x64_scope(jax):
        result = function(inputs.utilities, inputs.allocation, inputs.budgets, inputs.base_utility)
        return np.asarray(result, dtype=np.float64)


# --------------------------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------------------------


def _evaluate(name: str, inputs: _Inputs, backend: str) -> FloatArray:
    if backend == "jax":
        return _run_jax(name, inputs)
    numpy_functions: dict[str, Callable[[_Inputs], FloatArray]] = {
        "cumulative": _np_cumulative,
        "nswot": _np_nswot,
        "gradient": _np_gradient,
        "expected": lambda i: _np_nswot(i).mean(axis=0),
        "expected_gradient": _np_expected_gradient,
    }
    return numpy_functions[name](inputs)


def _shaped(result: FloatArray, shape: tuple[int, ...]) -> FloatArray:
    """Reshape to the documented output shape; 0-d results become NumPy float64 scalars."""
    out = result.reshape(shape)
    return out[()] if out.ndim == 0 else out


def cumulative_utilities(
    utilities: ArrayLike,
    allocation: ArrayLike,
    base_utility: ArrayLike | None = None,
    *,
    backend: Backend = "auto",
) -> FloatArray:
    r"""Cumulative utilities :math:`U_{sai} = c_i + \sum_{j,t} u_{sijt}\, x_{aijt}`.

    Parameters
    ----------
    utilities : array_like, shape (n, m, T) or (S, n, m, T)
        :math:`u \ge 0`: one market's utilities, or `S` forecast scenarios of them.
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
        :math:`x \ge 0`: one allocation, or a batch of `A`.
    base_utility : array_like, shape (n,), optional
        :math:`c \ge 0`, utility accrued before the window. Default 0.
    backend : {"auto", "jax", "numpy"}
        See the module docstring.

    Returns
    -------
    ndarray, shape (S, A, n), (S, n), (A, n) or (n,)
        A batch axis is present exactly when the argument has one (module docstring).

    Raises
    ------
    vfm.errors.ValidationError
        On a wrong shape or dtype, NaN, an infinity, a negative entry, or an unknown or
        unavailable backend; the message names the argument.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm.utility import cumulative_utilities
    >>> u = np.array([[[1.0, 2.0]], [[3.0, 0.0]]])  # (n, m, T) = (2, 1, 2)
    >>> cumulative_utilities(u, np.full((2, 1, 2), 0.5), base_utility=[0.0, 1.0], backend="numpy")
    array([1.5, 2.5])
    """
    inputs = _validate(utilities, allocation, None, base_utility)
    result = _evaluate("cumulative", inputs, _resolve_backend(backend))
    n = inputs.market_shape[0]
    return _shaped(result, (*inputs.scenario_batch, *inputs.allocation_batch, n))


def nswot(
    utilities: ArrayLike,
    allocation: ArrayLike,
    budgets: ArrayLike | None = None,
    base_utility: ArrayLike | None = None,
    *,
    backend: Backend = "auto",
) -> FloatArray:
    r"""Nash social welfare over time :math:`F_{sa} = \sum_i B_i \log U_{sai}`.

    ``-inf`` where some :math:`U_{sai} = 0`; never NaN. A utility :math:`U_{sai}` beyond the
    largest float (say :math:`u = 10^{308}`, :math:`x = 10`) is evaluated in logs, so the result
    is finite unless the weighted sum of logs itself overflows (then ``+inf``) or some
    :math:`U_{sai} = 0`.

    Parameters
    ----------
    utilities : array_like, shape (n, m, T) or (S, n, m, T)
        :math:`u \ge 0`: one market's utilities, or `S` forecast scenarios of them.
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
        :math:`x \ge 0`: one allocation, or a batch of `A`.
    budgets : array_like, shape (n,), optional
        :math:`B > 0`. Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        :math:`c \ge 0`. Default 0.
    backend : {"auto", "jax", "numpy"}
        See the module docstring.

    Returns
    -------
    ndarray, shape (S, A), (S,), (A,) or ()
        0-d results are returned as a NumPy float64 scalar.

    Raises
    ------
    vfm.errors.ValidationError
        As `cumulative_utilities`, and for non-positive budgets.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm.utility import nswot
    >>> u = np.array([[[1.0, 2.0]], [[3.0, 0.0]]])
    >>> x = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])  # U = (2, 3)
    >>> bool(np.isclose(nswot(u, x, budgets=[1.0, 2.0], backend="numpy"), np.log(2) + 2 * np.log(3)))
    True
    >>> float(nswot(u, np.zeros((2, 1, 2)), backend="numpy"))
    -inf
    """
    inputs = _validate(utilities, allocation, budgets, base_utility)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below, not warned of
        result = _evaluate("nswot", inputs, _resolve_backend(backend))
    if not np.all(np.isfinite(result) | np.isneginf(result)):  # an overflow: evaluated again in logs
        result = _np_safe_nswot(inputs)
    return _shaped(result, (*inputs.scenario_batch, *inputs.allocation_batch))


def nswot_gradient(
    utilities: ArrayLike,
    allocation: ArrayLike,
    budgets: ArrayLike | None = None,
    base_utility: ArrayLike | None = None,
    *,
    backend: Backend = "auto",
) -> FloatArray:
    r"""Gradient of NSWOT with respect to the allocation, :math:`B_i u_{sijt} / U_{sai}`.

    Where :math:`U_{sai} = 0` the entries of buyer `i` are ``+inf`` where
    :math:`u_{sijt} > 0` and 0 elsewhere (module docstring).

    Parameters
    ----------
    utilities : array_like, shape (n, m, T) or (S, n, m, T)
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
    budgets : array_like, shape (n,), optional
        Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        Default 0.
    backend : {"auto", "jax", "numpy"}

    Returns
    -------
    ndarray, shape (S, A, n, m, T), (S, n, m, T), (A, n, m, T) or (n, m, T)
        Entry ``[s, a, i, j, t]`` is :math:`\partial F_{sa} / \partial x_{aijt}`.

    Raises
    ------
    vfm.errors.ValidationError
        As `nswot`.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm.utility import nswot_gradient
    >>> u = np.array([[[1.0, 2.0]], [[3.0, 0.0]]])
    >>> x = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])  # U = (2, 3)
    >>> nswot_gradient(u, x, backend="numpy")[:, 0, :]
    array([[0.5, 1. ],
           [1. , 0. ]])
    """
    inputs = _validate(utilities, allocation, budgets, base_utility)
    result = _evaluate("gradient", inputs, _resolve_backend(backend))
    return _shaped(result, (*inputs.scenario_batch, *inputs.allocation_batch, *inputs.market_shape))


def expected_nswot(
    utilities: ArrayLike,
    allocation: ArrayLike,
    budgets: ArrayLike | None = None,
    base_utility: ArrayLike | None = None,
    *,
    backend: Backend = "auto",
) -> FloatArray:
    r"""Sample-average NSWOT over scenarios, :math:`\bar F_a = \frac1S \sum_s \sum_i B_i \log U_{sai}`.

    The objective of the SAA planner (without its efficiency term). An
    unbatched ``utilities`` is one scenario, giving the certainty-equivalent objective.

    Parameters
    ----------
    utilities : array_like, shape (n, m, T) or (S, n, m, T)
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
    budgets : array_like, shape (n,), optional
        Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        Default 0.
    backend : {"auto", "jax", "numpy"}

    Returns
    -------
    ndarray, shape (A,) or ()
        ``-inf`` where some scenario has some :math:`U_{sai} = 0`.

    Raises
    ------
    vfm.errors.ValidationError
        As `nswot`.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm.utility import expected_nswot, nswot
    >>> rng = np.random.default_rng(0)
    >>> u, x = rng.random((5, 3, 1, 4)), rng.random((2, 3, 1, 4))  # S=5, A=2
    >>> expected_nswot(u, x, backend="numpy").shape
    (2,)
    >>> bool(np.allclose(expected_nswot(u, x, backend="numpy"), nswot(u, x, backend="numpy").mean(axis=0)))
    True
    """
    inputs = _validate(utilities, allocation, budgets, base_utility)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below, not warned of
        result = _evaluate("expected", inputs, _resolve_backend(backend))
    if not np.all(np.isfinite(result) | np.isneginf(result)):  # an overflow: evaluated again in logs
        result = _np_safe_nswot(inputs).mean(axis=0)
    return _shaped(result, inputs.allocation_batch)


def expected_nswot_gradient(
    utilities: ArrayLike,
    allocation: ArrayLike,
    budgets: ArrayLike | None = None,
    base_utility: ArrayLike | None = None,
    *,
    backend: Backend = "auto",
) -> FloatArray:
    r"""Gradient of `expected_nswot`, :math:`\frac1S \sum_s B_i u_{sijt} / U_{sai}`.

    The NumPy backend never forms the ``(S, A, n, m, T)`` array of per-scenario gradients.

    Parameters
    ----------
    utilities : array_like, shape (n, m, T) or (S, n, m, T)
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
    budgets : array_like, shape (n,), optional
        Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        Default 0.
    backend : {"auto", "jax", "numpy"}

    Returns
    -------
    ndarray, the shape of ``allocation``
        ``+inf`` where some scenario contributes ``+inf`` (module docstring).

    Raises
    ------
    vfm.errors.ValidationError
        As `nswot`.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm.utility import expected_nswot_gradient
    >>> u = np.array([[[1.0, 2.0]], [[3.0, 0.0]]])
    >>> x = np.array([[[0.0, 1.0]], [[1.0, 0.0]]])
    >>> expected_nswot_gradient(np.stack([u, 2 * u]), x, backend="numpy")[:, 0, :]  # same as S=1
    array([[0.5, 1. ],
           [1. , 0. ]])
    """
    inputs = _validate(utilities, allocation, budgets, base_utility)
    result = _evaluate("expected_gradient", inputs, _resolve_backend(backend))
    return _shaped(result, (*inputs.allocation_batch, *inputs.market_shape))
