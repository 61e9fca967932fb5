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
from vfm.parameters import Interval, Real, check_array, check_nonempty

__all__ = ["UtilityInputs", "validated_inputs"]


#: The entries of utilities, allocations and base utilities, and of budgets.
_NONNEGATIVE = Interval(Real, 0)
_POSITIVE = Interval(Real, 0, closed="neither")


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
    check_nonempty("utilities", u.size, "scenario, buyer, good and period")
    market_shape: tuple[int, int, int] = (u.shape[-3], u.shape[-2], u.shape[-1])
    n, m, periods = market_shape
    x = real_array(allocation, "allocation")
    if x.ndim not in (3, 4) or x.shape[-3:] != market_shape:
        raise ValidationError(
            f"allocation must have shape {market_shape} or (A, {n}, {m}, {periods}) with A allocations, "
            f"matching utilities' trailing (n, m, T) = {market_shape}; got {x.shape}"
        )
    if x.ndim == 4:
        check_nonempty("allocation", x.shape[0], "allocation")
    b = np.ones(n) if budgets is None else real_array(budgets, "budgets")
    check_shape("budgets", b, (n,), ", one per buyer of utilities")
    c = np.zeros(n) if base_utility is None else real_array(base_utility, "base_utility")
    check_shape("base_utility", c, (n,), ", one per buyer of utilities")
    for name, array, entries in (("utilities", u, _NONNEGATIVE), ("allocation", x, _NONNEGATIVE),
                                 ("budgets", b, _POSITIVE), ("base_utility", c, _NONNEGATIVE)):
        check_array(name, array, entries)
    return UtilityInputs(
        utilities=u.reshape(-1, n, m * periods),
        allocation=x.reshape(-1, n, m * periods),
        budgets=b,
        base_utility=c,
        market_shape=market_shape,
        scenario_batch=u.shape[:-3],
        allocation_batch=x.shape[:-3],
    )
