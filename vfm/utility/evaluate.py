"""The functions of `vfm.utility`: each validates its arguments once (`vfm.utility.inputs`), evaluates
its quantity on the backend asked for (`vfm.utility.numpy_kernels`, `vfm.utility.jax_kernels`; chosen
by `vfm.utility.backend`) and shapes the result; the package's docstring documents them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray
from vfm.utility.backend import Backend, resolve_backend
from vfm.utility.inputs import UtilityInputs, validated_inputs
from vfm.utility.jax_kernels import run_jax
from vfm.utility.numpy_kernels import NUMPY_FUNCTIONS, numpy_safe_nswot

# The NSWOT quantities whose overflow is evaluated again in logs, by how the logs give them.
_IN_LOGS: dict[str, Callable[[UtilityInputs], FloatArray]] = {
    "nswot": numpy_safe_nswot,
    "expected": lambda inputs: numpy_safe_nswot(inputs).mean(axis=0),
}


def _evaluated(name: str, utilities: ArrayLike, allocation: ArrayLike, budgets: ArrayLike | None,
               base_utility: ArrayLike | None, backend: object) -> tuple[UtilityInputs, FloatArray]:
    """What every public function does before shaping its result: validate the arguments, resolve
    the backend and evaluate quantity `name` (a key of `vfm.utility.numpy_kernels.NUMPY_FUNCTIONS`) on it;
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
