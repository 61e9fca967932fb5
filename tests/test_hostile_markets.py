"""Hostile markets (issue 15): numbers over sixteen decades, zeros, ties, caps and base utility.

Whatever the market, `vfm.solve` may fail, but it must never call a point OPTIMAL that an
independent per-buyer, per-good check rejects; no NaN may pass a check; no array a market or a
result hands out may be made writable; and every bad argument is rejected when the market is
built, by name.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import vfm
from vfm import VolatileFisherMarket, check
from vfm.duality import best_response_values
from vfm.errors import ValidationError
from vfm.testing.strategies import EXTENSIONS, markets

#: Decades every scale is drawn from: budgets, per-buyer utility units and per-good supply units
#: each span 1e-8..1e8.
DECADES = 8.0


def _scales(size: int) -> st.SearchStrategy[np.ndarray]:
    exponents = arrays(np.float64, size, elements=st.floats(-DECADES, DECADES, allow_nan=False))
    return exponents.map(lambda e: 10.0**e)


@st.composite
def hostile_markets(draw: st.DrawFn) -> VolatileFisherMarket:
    """A valid market of `vfm.testing.strategies.markets` (zeros, ties, every extension), its
    units stretched: each buyer's utilities (with its base utility and utility cap) by its own
    factor, each good-period's supply (with its caps) by its own, budgets drawn anew; all over
    1e-8..1e8, ties kept on request (equal budgets)."""
    market = draw(markets(n_buyers=(1, 4), n_goods=(1, 2), n_periods=(1, 3),
                          extensions=EXTENSIONS))
    n, m, periods = market.shape
    buyer = draw(_scales(n))
    good = draw(_scales(m * periods)).reshape(m, periods)
    budgets = draw(st.one_of(_scales(1).map(lambda b: np.repeat(b, n)), _scales(n)))
    supply = market.supply * good
    # A utility cap relative to the reachable utility, recomputed with the new supply.
    reach = np.where(market.reachable, market.utilities * np.minimum(supply[None], market.caps * good[None]),
                     0.0).sum(axis=(1, 2))
    old_reach = np.where(market.reachable, market.utilities * np.minimum(market.supply[None], market.caps),
                         0.0).sum(axis=(1, 2))
    share = np.where(np.isfinite(market.utility_cap), (market.utility_cap - market.base_utility) / old_reach, np.inf)
    return VolatileFisherMarket(
        market.utilities * buyer[:, None, None], budgets, supply,
        base_utility=market.base_utility * buyer,
        caps=market.caps * good[None],
        utility_cap=(market.base_utility + share * reach) * buyer,
    )


def _assert_independently_certified(result: vfm.Equilibrium) -> None:
    """Per good: supply and caps respected to the accuracy; per buyer: what it could gain at the
    prices, relative to its own budget, within 100 x the accuracy (docs/verifying.md)."""
    market, x, p = result.market, result.allocation, result.prices
    eps = result.accuracy
    assert np.isfinite(x).all() and np.isfinite(p).all()
    supply = np.where(market.supply > 0, market.supply, 1.0)
    assert ((x.sum(axis=0) - market.supply) / supply).max() <= eps
    assert (-x / supply[None]).max() <= eps
    assert ((x - market.caps) / supply[None]).max() <= eps
    n = market.n_buyers
    value = market.budgets * np.log(market.utility_of(x)) - x.reshape(n, -1) @ p.reshape(-1)
    regret = (best_response_values(market, p) - value) / market.budgets
    assert np.abs(regret).max() <= 100 * eps


def _assert_read_only(*arrays_: np.ndarray) -> None:
    for array in arrays_:
        with pytest.raises(ValueError):
            array.setflags(write=True)
        with pytest.raises(ValueError):
            array.reshape(-1)[0] = 0


# Bounded (some solves try every backend): at most 80 examples in a derandomized run such as the
# `ci` profile's (its 50 take about 2 s); a randomized profile such as `deep` runs all of its own.
@settings(max_examples=min(settings.default.max_examples, 80) if settings.default.derandomize
          else settings.default.max_examples)
@given(hostile_markets(), st.data())
def test_no_optimal_result_fails_an_independent_check(market, data):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        result = vfm.solve(market)
    if result.success:
        _assert_independently_certified(result)
        check.certify(result).assert_holds()
    else:
        assert result.status is not vfm.Status.OPTIMAL and result.message
    _assert_read_only(result.allocation, result.prices, result.utilities, result.gap.regret,
                      market.utilities, market.budgets, market.supply, market.caps, market.reachable)
    # One NaN anywhere fails every check.
    field = data.draw(st.sampled_from(["allocation", "prices"]))
    spoiled = getattr(result, field).copy()
    spoiled.reshape(-1)[data.draw(st.integers(0, spoiled.size - 1))] = np.nan
    broken = vfm.Equilibrium(market, **{"allocation": result.allocation, "prices": result.prices, field: spoiled},
                             status=vfm.Status.OPTIMAL, solver="spoiled", accuracy=result.accuracy)
    for residual in (*check.kkt(broken), *check.properties(broken), check.budget_exhaustion(broken),
                     check.bang_per_buck(broken), check.market_clearing(broken)):
        assert not residual.holds and np.isnan(residual.value), residual


# --- every bad argument is rejected at construction, by name ---------------------------------------

_SHAPES = {"utilities": (2, 2, 2), "budgets": (2,), "supply": (2, 2), "base_utility": (2,), "caps": (2, 2, 2),
           "utility_cap": (2,)}
_VALUES = {"nan": np.nan, "-inf": -np.inf, "inf": np.inf, "negative": -1.0, "zero": 0.0, "huge": 1e305}
#: The corruptions each argument accepts: "no cap" is inf, zeros are meaningful where the model
#: allows them, and a huge cap or utility cap is harmless (it cannot bind).
_ACCEPTED = {
    "utilities": {"zero"}, "budgets": set(), "supply": {"zero"}, "base_utility": {"zero"},
    "caps": {"inf", "zero", "huge"}, "utility_cap": {"inf", "huge"},
}


@given(st.sampled_from(sorted(_SHAPES)), st.sampled_from([*_VALUES, "shape", "text"]), st.integers(0, 7))
def test_every_bad_argument_is_rejected_by_name(name, bad, index):
    arguments = {key: np.ones(shape) for key, shape in _SHAPES.items()}
    arguments["base_utility"] = np.zeros(2)
    arguments["utility_cap"] = np.full(2, np.inf)
    arguments["caps"] = np.full(_SHAPES["caps"], np.inf)
    if bad == "shape":
        arguments[name] = np.ones((*_SHAPES[name], 1))
    elif bad == "text":
        arguments[name] = np.full(_SHAPES[name], "x")
    else:
        arguments[name].reshape(-1)[index % arguments[name].size] = _VALUES[bad]
    build = lambda: VolatileFisherMarket(  # noqa: E731
        arguments.pop("utilities"), arguments.pop("budgets"), arguments.pop("supply"), **arguments)
    if bad in _ACCEPTED[name]:
        market = build()
        _assert_read_only(market.utilities, market.budgets, market.supply, market.caps, market.utility_cap)
        return
    with pytest.raises(ValidationError) as info:
        build()
    # Named as the caller wrote it (a huge supply or base utility overflows "utilities[i] times supply"
    # and names base_utility[i] in the remedy).
    assert name in str(info.value), str(info.value)
