r"""The validated inputs of `vfm.utility`'s functions: checked once, at the boundary, then batched and flattened.

`validated_inputs` checks the arguments as the `vfm.utility` module docstring documents (real
numbers of the documented shapes, no NaN or infinity, :math:`u, c, x \ge 0` and :math:`B > 0`) and
returns them as `UtilityInputs`: always batched over scenarios and allocations, and flattened over
goods and periods, which is the form both backends compute on.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, check_shape, real_array
from vfm.errors import ValidationError
from vfm.parameters import Interval, Real, check_array

__all__ = ["UtilityInputs", "validated_inputs"]


def _check_entries(array: FloatArray, name: str, *, positive: bool = False) -> None:
    """Reject NaN, infinities and negative (or, with `positive`, non-positive) entries."""
    finite = np.isfinite(array)
    if not finite.all():
        where = tuple(int(i) for i in np.argwhere(~finite)[0])
        what = "NaN" if np.isnan(array[where]) else f"an infinite value {array[where]}"
        raise ValidationError(f"{name} contains {what} at index {where}")
    check_array(name, array, Interval(Real, 0, closed="neither" if positive else "both"))


class UtilityInputs(NamedTuple):
    """Validated inputs, always batched and flattened over goods and periods."""

    utilities: FloatArray  # (S, n, K), K = m * T
    allocation: FloatArray  # (A, n, K)
    budgets: FloatArray  # (n,)
    base_utility: FloatArray  # (n,)
    market_shape: tuple[int, int, int]  # (n, m, T)
    scenario_batch: tuple[int, ...]  # () or (S,)
    allocation_batch: tuple[int, ...]  # () or (A,)


def validated_inputs(
    utilities: ArrayLike,
    allocation: ArrayLike,
    budgets: ArrayLike | None,
    base_utility: ArrayLike | None,
) -> UtilityInputs:
    """The arguments checked, as `UtilityInputs`; a `ValidationError` naming the first argument at fault."""
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
    check_shape("budgets", b, (n,), ", one per buyer of utilities")
    c = np.zeros(n) if base_utility is None else real_array(base_utility, "base_utility")
    check_shape("base_utility", c, (n,), ", one per buyer of utilities")
    _check_entries(u, "utilities")
    _check_entries(x, "allocation")
    _check_entries(b, "budgets", positive=True)
    _check_entries(c, "base_utility")
    return UtilityInputs(
        utilities=u.reshape(-1, n, m * periods),
        allocation=x.reshape(-1, n, m * periods),
        budgets=b,
        base_utility=c,
        market_shape=market_shape,
        scenario_batch=u.shape[:-3],
        allocation_batch=x.shape[:-3],
    )
