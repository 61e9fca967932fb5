"""The scaled program: which entries are active, and the maps back to market units."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from vfm import VolatileFisherMarket
from vfm.program import ScaledProgram, present_and_rank
from vfm.testing.strategies import EXTENSIONS, markets


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


def dense_program(market):
    """`ScaledProgram.from_market`'s arrays from the dense (n, m * T) formulas, for any market."""
    n = market.n_buyers
    u, d, s = market.utilities.reshape(n, -1), market.caps.reshape(n, -1), market.supply.reshape(-1)
    buyer, column = np.nonzero(market.reachable.reshape(n, -1))
    most = market.base_utility + np.where(u > 0, u * np.minimum(s[None, :], d), 0.0).sum(axis=1)
    utility_cap = np.where(most > market.utility_cap, market.utility_cap, np.inf)
    equal_split = np.where(u > 0, np.minimum(s[None, :] / n, d), 0.0)
    scale = np.minimum(market.utility_cap, market.base_utility + np.einsum("ik,ik->i", u, equal_split))
    return {"buyer": buyer, "column": column, "utility": u[buyer, column] * s[column] / scale[buyer],
            "upper": d[buyer, column] / s[column], "base": market.base_utility / scale,
            "utility_cap": utility_cap / scale, "scale": scale}


@given(markets(extensions=EXTENSIONS, n_buyers=(1, 12), n_goods=(1, 5)))
def test_program_over_the_pairs_is_the_dense_one_to_the_bit(market):
    program = ScaledProgram.from_market(market)
    for name, expected in dense_program(market).items():
        np.testing.assert_array_equal(getattr(program, name), expected, err_msg=name)
