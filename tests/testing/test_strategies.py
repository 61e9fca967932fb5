"""The hypothesis strategies generate what they promise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import find, given, settings

from vfm.testing.strategies import EXTENSIONS, markets


@given(markets(n_buyers=3, n_goods=2, n_periods=4, budgets="equal"))
def test_fixed_sizes_and_equal_budgets(market):
    assert market.shape == (3, 2, 4)
    assert (market.budgets == market.budgets[0]).all()
    assert market.is_plain  # no extensions unless asked for


@given(markets(budgets="unequal", degenerate=False, n_buyers=(2, 4)))
def test_no_zeros_means_every_entry_positive(market):
    assert (market.utilities > 0).all() and (market.supply > 0).all()
    assert np.all((market.utilities >= 10.0**-3) & (market.utilities <= 10.0**3))


@given(markets(extensions=EXTENSIONS))
def test_extensions_keep_the_market_feasible(market):
    # Construction validated it; the anchor guarantees every buyer some reachable utility.
    assert (market.reachable.any(axis=(1, 2)) | (market.base_utility > 0)).all()
    assert (market.utility_cap >= market.base_utility).all()


def test_strategies_reach_every_feature():
    """Over the profile's draws every feature shows up: zeros, identical buyers, each extension."""
    seen = {"zero": False, "identical": False, "caps": False, "base": False, "cap": False}

    @given(markets(n_buyers=(2, 6), extensions=EXTENSIONS))
    def collect(market):
        seen["zero"] |= bool((market.utilities == 0).any())
        seen["identical"] |= bool((market.utilities[0] == market.utilities[1]).all())
        seen["caps"] |= market.has_caps
        seen["base"] |= market.has_base_utility
        seen["cap"] |= market.has_utility_cap

    collect()
    assert all(seen.values()), seen


@pytest.mark.slow  # a search of up to 2,000 examples
def test_utilities_span_six_decades():
    """The range is six orders of magnitude, and hypothesis can reach (nearly) all of it."""
    def span(market):
        positive = market.utilities[market.utilities > 0]
        return float(np.log10(positive.max() / positive.min()))

    wide = find(markets(n_buyers=4, n_goods=3, n_periods=4), lambda market: span(market) > 5.5,
                settings=settings(max_examples=2000, database=None))
    assert 5.5 < span(wide) <= 6.0
