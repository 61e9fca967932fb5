"""The scaled program: which entries are active, and the maps back to market units."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vfm import VolatileFisherMarket
from vfm.program import ScaledProgram, present_and_rank


def test_inactive_entries_are_dropped():
    market = VolatileFisherMarket.static(
        [[1.0, 0.0, 2.0], [3.0, 1.0, 0.0]], supply=[1.0, 2.0, 0.0], caps=[[np.inf, 1.0, 1.0], [0.0, 1.0, 1.0]]
    )
    program = ScaledProgram.from_market(market)
    # (0,0) active; (0,1) no utility; (0,2) no supply; (1,0) capped at 0; (1,1) active.
    assert list(zip(program.buyer, program.column, strict=True)) == [(0, 0), (1, 1)]
    np.testing.assert_array_equal(program.traded, [0, 1])


def test_round_trip_to_market_units():
    market = VolatileFisherMarket.static([[2.0, 1.0], [1.0, 4.0]], budgets=[1.0, 3.0], supply=[2.0, 5.0])
    program = ScaledProgram.from_market(market)
    z = np.full(program.n_entries, 0.25)
    x = program.allocation(z)
    np.testing.assert_allclose(x.sum(axis=0)[:, 0], [1.0, 2.5])  # two buyers x 0.25 of supply
    # The scaled utility of z is the market utility divided by the buyer scale.
    scaled = program.base + program.utility_matrix() @ z
    np.testing.assert_allclose(scaled * program.scale, market.utility_of(x))
    # Scaled prices map back through the budget total and the supply.
    np.testing.assert_allclose(program.prices(np.array([1.0, 1.0]))[:, 0], [4.0 / 2.0, 4.0 / 5.0])
    assert program.weights.sum() == 1.0


@given(st.lists(st.integers(0, 12), min_size=0, max_size=40), st.integers(13, 20))
def test_present_and_rank_is_unique_with_its_inverse(values, size):
    values = np.asarray(values, dtype=np.int64)
    present, rank = present_and_rank(values, size)
    expected_present, expected_rank = np.unique(values, return_inverse=True)
    np.testing.assert_array_equal(present, expected_present)
    np.testing.assert_array_equal(rank, expected_rank.reshape(-1))
