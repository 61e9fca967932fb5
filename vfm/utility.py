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
* ``"auto"`` (the default): ``"numpy"``. It never starts JAX, which on a GPU preallocates most of
  the device's memory when it starts; ask for ``"jax"`` to use it (and set
  ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` to keep it from taking the memory up front; see
  `vfm.utility_backend.automatic_backend`).

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

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray
from vfm.utility_backend import Backend, available_backends, resolve_backend
from vfm.utility_inputs import UtilityInputs, validated_inputs
from vfm.utility_jax import run_jax
from vfm.utility_numpy import NUMPY_FUNCTIONS, numpy_safe_nswot

__all__ = [
    "Backend",
    "available_backends",
    "cumulative_utilities",
    "expected_nswot",
    "expected_nswot_gradient",
    "nswot",
    "nswot_gradient",
]

# The NSWOT quantities whose overflow is evaluated again in logs, by how the logs give them.
_IN_LOGS: dict[str, Callable[[UtilityInputs], FloatArray]] = {
    "nswot": numpy_safe_nswot,
    "expected": lambda inputs: numpy_safe_nswot(inputs).mean(axis=0),
}


def _evaluated(name: str, utilities: ArrayLike, allocation: ArrayLike, budgets: ArrayLike | None,
               base_utility: ArrayLike | None, backend: object) -> tuple[UtilityInputs, FloatArray]:
    """What every public function does before shaping its result: validate the arguments, resolve
    the backend and evaluate quantity `name` (a key of `vfm.utility_numpy.NUMPY_FUNCTIONS`) on it;
    an NSWOT value that overflows is evaluated again in logs (`_IN_LOGS`)."""
    inputs = validated_inputs(utilities, allocation, budgets, base_utility)
    if name not in _IN_LOGS:
        return inputs, _evaluate(name, inputs, resolve_backend(backend))
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below, not warned of
        result = _evaluate(name, inputs, resolve_backend(backend))
    if not np.all(np.isfinite(result) | np.isneginf(result)):  # an overflow: evaluated again in logs
        result = _IN_LOGS[name](inputs)
    return inputs, result


def _evaluate(name: str, inputs: UtilityInputs, backend: str) -> FloatArray:
    return run_jax(name, inputs) if backend == "jax" else NUMPY_FUNCTIONS[name](inputs)


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
    inputs, result = _evaluated("cumulative", utilities, allocation, None, base_utility, backend)
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
    inputs, result = _evaluated("nswot", utilities, allocation, budgets, base_utility, backend)
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
        :math:`u \ge 0`: one market's utilities, or `S` forecast scenarios of them, each with its
        own gradient.
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
        :math:`x \ge 0`: the allocation at which the gradient is taken, or a batch of `A`.
    budgets : array_like, shape (n,), optional
        :math:`B > 0`, each buyer's weight in the NSWOT. Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        :math:`c \ge 0`, utility accrued before the window, which flattens a buyer's gradient.
        Default 0.
    backend : {"auto", "jax", "numpy"}
        See the module docstring.

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
    inputs, result = _evaluated("gradient", utilities, allocation, budgets, base_utility, backend)
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
        :math:`u \ge 0`: the `S` forecast scenarios averaged over; one market's utilities count
        as a single scenario.
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
        :math:`x \ge 0`: one allocation, or a batch of `A`, each scored against every scenario.
    budgets : array_like, shape (n,), optional
        :math:`B > 0`, the same in every scenario. Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        :math:`c \ge 0`, the same in every scenario. Default 0.
    backend : {"auto", "jax", "numpy"}
        See the module docstring.

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
    inputs, result = _evaluated("expected", utilities, allocation, budgets, base_utility, backend)
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
        :math:`u \ge 0`: the `S` forecast scenarios whose gradients are averaged; one market's
        utilities count as a single scenario.
    allocation : array_like, shape (n, m, T) or (A, n, m, T)
        :math:`x \ge 0`: the allocation at which the gradient is taken, or a batch of `A`; the
        result has its shape.
    budgets : array_like, shape (n,), optional
        :math:`B > 0`, each buyer's weight, shared by all scenarios. Default: equal budgets of 1.
    base_utility : array_like, shape (n,), optional
        :math:`c \ge 0`, utility accrued before the window, shared by all scenarios. Default 0.
    backend : {"auto", "jax", "numpy"}
        See the module docstring.

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
    inputs, result = _evaluated("expected_gradient", utilities, allocation, budgets, base_utility, backend)
    return _shaped(result, (*inputs.allocation_batch, *inputs.market_shape))
