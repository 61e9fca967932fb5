"""The result type: derived fields, failures, relabelling."""

from __future__ import annotations

import numpy as np
import pytest

import vfm
from vfm import Status, VolatileFisherMarket
from vfm.equilibrium import failed
from vfm.errors import SolverError


def test_relabel_keeps_the_point_and_what_was_derived():
    result = vfm.solve(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    gap = result.gap
    relabelled = result.relabel(status=Status.INACCURATE, message="x")
    assert relabelled.gap is gap and relabelled.status is Status.INACCURATE
    assert relabelled.allocation is result.allocation
    with pytest.raises(ValueError, match=r"relabel cannot change \['prices'\]"):
        result.relabel(prices=result.prices * 2)


def test_failed_result_has_no_point_and_raises_on_request():
    market = VolatileFisherMarket.static([[1.0]])
    result = failed(market, "clarabel", Status.ERROR, "the solver crashed")
    assert np.isnan(result.allocation).all() and np.isnan(result.prices).all()
    assert np.isnan(result.objective)
    with pytest.raises(SolverError, match="clarabel ended with status 'error': the solver crashed"):
        result.raise_for_status()


def test_relative_gap_does_not_depend_on_budget_units():
    market = VolatileFisherMarket.static([[2.0, 1.0], [1.0, 3.0]], budgets=[1.0, 2.0])
    result = vfm.solve(market)
    x, p = result.allocation, result.prices
    scaled = vfm.Equilibrium(
        VolatileFisherMarket.static([[2.0, 1.0], [1.0, 3.0]], budgets=[1000.0, 2000.0]),
        x, p * 1000.0, Status.OPTIMAL, "manual",
    )
    assert scaled.relative_gap == pytest.approx(result.relative_gap, abs=1e-12)


def test_every_array_a_result_hands_out_is_read_only_for_good():
    from tests.test_market import _assert_frozen

    result = vfm.solve(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    for array in (result.allocation, result.prices, result.utilities, result.gap.regret, result.gap.unsold_value):
        _assert_frozen(array)


def test_a_result_keeps_its_own_copy_of_what_it_was_given():
    market = VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]])
    allocation, prices = np.eye(2)[:, :, None].copy(), np.ones((2, 1))
    result = vfm.Equilibrium(market, allocation, prices, Status.OPTIMAL, "manual")
    utilities = result.utilities.copy()
    allocation[:] = 0.0
    prices[:] = 5.0
    np.testing.assert_array_equal(result.utilities, utilities)  # the cache cannot go stale
    assert (result.prices == 1.0).all()
    assert result.relabel(message="x").allocation is result.allocation  # frozen arrays are not copied again
