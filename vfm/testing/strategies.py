"""Hypothesis strategies that generate valid Volatile Fisher Markets.

Theorists can write their own property tests against `vfm` with them:

    from hypothesis import given
    import vfm
    from vfm.testing.strategies import markets

    @given(markets(n_buyers=(2, 6), budgets="equal"))
    def test_envy_free(market):
        result = vfm.solve(market)
        assert vfm.check.envy_freeness(result).holds

Every generated market passes `vfm.VolatileFisherMarket`'s validation: each buyer has an
*anchor* entry (a good-period with positive utility, supply and cap), zeros, zero supply and
zero caps fall elsewhere, and a utility cap is never below the base utility.

Requires the ``hypothesis`` package (``pip install vfm[test]``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Literal

import numpy as np

try:
    from hypothesis import strategies as st
    from hypothesis.extra.numpy import arrays
except ImportError as exc:  # pragma: no cover - exercised only without the test extra
    raise ImportError("vfm.testing.strategies needs hypothesis: pip install 'vfm[test]'") from exc

from vfm.market import VolatileFisherMarket

Size = int | tuple[int, int]

#: The model's extensions `markets` can draw (`VolatileFisherMarket.features`' names).
EXTENSIONS: tuple[str, ...] = ("caps", "base_utility", "utility_cap")


def _size(draw: st.DrawFn, size: Size) -> int:
    if isinstance(size, int):
        return size
    low, high = size
    return draw(st.integers(low, high))


def _unit_floats(low: float = 0.0, high: float = 1.0) -> st.SearchStrategy[float]:
    return st.floats(low, high, allow_nan=False, allow_infinity=False)


@st.composite
def markets(
    draw: st.DrawFn,
    n_buyers: Size = (1, 6),
    n_goods: Size = (1, 3),
    n_periods: Size = (1, 4),
    *,
    budgets: Literal["equal", "unequal", "any"] = "any",
    decades: float = 6.0,
    degenerate: bool = True,
    extensions: Collection[str] = (),
) -> VolatileFisherMarket:
    """Strategy for `VolatileFisherMarket` instances.

    Parameters
    ----------
    n_buyers, n_goods, n_periods : int or (int, int)
        A fixed size or an inclusive range to draw from.
    budgets : {"equal", "unequal", "any"}
        ``"equal"``: all budgets equal (to a drawn value); ``"unequal"``: drawn from
        [0.1, 10] independently; ``"any"``: either.
    decades : float
        Utilities are drawn as :math:`10^e` with `e` uniform in ``[-decades/2, decades/2]``,
        so they span `decades` orders of magnitude (six by default).
    degenerate : bool
        Allow the degenerate cases: zero utilities, zero supply and (with caps) zero caps off the
        anchors; identical buyers (duplicated rows) and tied values (integer exponents).
    extensions : collection of str
        The model's extensions to allow, among `EXTENSIONS` (``"caps"``, ``"base_utility"``,
        ``"utility_cap"``: the names of `VolatileFisherMarket.features`), each drawn present or
        absent when allowed. Default: none, plain markets.
    """
    unknown = sorted(set(extensions) - set(EXTENSIONS))
    if unknown:
        raise ValueError(f"extensions must be among {', '.join(EXTENSIONS)}, got {', '.join(map(repr, unknown))}")
    zeros = ties = degenerate
    caps, base_utility, utility_cap = (name in extensions for name in EXTENSIONS)
    n, m, periods = _size(draw, n_buyers), _size(draw, n_goods), _size(draw, n_periods)
    shape = (n, m, periods)
    half = decades / 2.0
    exponents = draw(arrays(np.float64, shape, elements=_unit_floats(-half, half)))
    if ties and draw(st.booleans()):
        exponents = np.round(exponents)
    utilities = 10.0**exponents
    anchors = draw(arrays(np.int64, n, elements=st.integers(0, m * periods - 1)))
    anchor_mask = np.zeros((n, m * periods), dtype=bool)
    anchor_mask[np.arange(n), anchors] = True
    anchor_mask = anchor_mask.reshape(shape)
    if zeros:
        keep = draw(arrays(np.bool_, shape))
        utilities = np.where(keep | anchor_mask, utilities, 0.0)
    if ties and n > 1 and draw(st.booleans()):
        utilities[1] = utilities[0]  # two identical buyers
        anchor_mask[1] = anchor_mask[0]

    supply = 10.0 ** draw(arrays(np.float64, (m, periods), elements=_unit_floats(-1.0, 1.0)))
    if zeros:
        empty = draw(arrays(np.bool_, (m, periods))) & ~anchor_mask.any(axis=0)
        supply = np.where(empty, 0.0, supply)

    kind = budgets if budgets != "any" else draw(st.sampled_from(["equal", "unequal"]))
    if kind == "equal":
        budget = np.full(n, draw(_unit_floats(0.1, 10.0)))
    else:
        budget = draw(arrays(np.float64, n, elements=_unit_floats(0.1, 10.0)))

    drawn: dict[str, np.ndarray] = {}
    if caps and draw(st.booleans()):
        fraction = draw(arrays(np.float64, shape, elements=_unit_floats(0.01, 2.0)))
        bounded = draw(arrays(np.bool_, shape))
        cap = np.where(bounded, fraction * supply[None], np.inf)
        if zeros:
            cap = np.where(draw(arrays(np.bool_, shape)) & bounded & ~anchor_mask, 0.0, cap)
        drawn["caps"] = cap
    if base_utility and draw(st.booleans()):
        base = draw(arrays(np.float64, n, elements=_unit_floats(0.0, 2.0)))
        drawn["base_utility"] = np.where(draw(arrays(np.bool_, n)), base, 0.0) if zeros else base
    if utility_cap and draw(st.booleans()):
        base = drawn.get("base_utility", np.zeros(n))
        cap = drawn.get("caps", np.full(shape, np.inf))
        reachable = np.where(utilities > 0, utilities * np.minimum(supply[None], cap), 0.0).sum(axis=(1, 2))
        headroom = draw(arrays(np.float64, n, elements=_unit_floats(0.05, 2.0))) * reachable
        limited = draw(arrays(np.bool_, n))
        drawn["utility_cap"] = np.where(limited, base + headroom, np.inf)
    return VolatileFisherMarket(utilities, budget, supply, **drawn)
