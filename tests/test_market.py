"""Validation at the boundary: every bad input is rejected with a message naming it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vfm import VolatileFisherMarket
from vfm.errors import InfeasibleMarketError, ValidationError
from vfm.testing.strategies import EXTENSIONS, markets

U = np.ones((2, 1, 3))


def market(**overrides):
    arguments = {"utilities": U, "budgets": np.ones(2), "supply": np.ones((1, 3))}
    arguments.update(overrides)
    utilities = arguments.pop("utilities")
    return VolatileFisherMarket(utilities, **arguments)


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"utilities": np.ones((2, 3))}, r"utilities must have shape \(any, any, any\), got \(2, 3\)"),
        ({"budgets": np.ones(3)}, r"budgets must have shape \(2\), got \(3,\)"),
        ({"supply": np.ones((2, 3))}, r"supply must have shape \(1, 3\), got \(2, 3\)"),
        ({"caps": np.ones((2, 1, 2))}, r"caps must have shape \(2, 1, 3\)"),
        ({"base_utility": np.ones((2, 1))}, r"base_utility must have shape \(2\)"),
        ({"utility_cap": 1.0}, r"utility_cap must have shape \(2\), got \(\)"),
        ({"utilities": np.ones((0, 1, 3))}, r"at least one buyer, good and period"),
    ],
)
def test_wrong_shapes_are_rejected(overrides, pattern):
    with pytest.raises(ValidationError, match=pattern):
        market(**overrides)


@pytest.mark.parametrize(
    "value",
    [np.ones((2, 1, 3), dtype=complex), np.full((2, 1, 3), "a"), [[[1.0]], [[1.0, 2.0]]]],
    ids=["complex", "strings", "ragged"],
)
def test_non_real_utilities_are_rejected(value):
    with pytest.raises(ValidationError, match="utilities must"):
        market(utilities=value)


@pytest.mark.parametrize(
    ("name", "shape"),
    [("utilities", (2, 1, 3)), ("budgets", (2,)), ("supply", (1, 3)), ("caps", (2, 1, 3)),
     ("base_utility", (2,)), ("utility_cap", (2,))],
)
def test_nan_is_rejected_everywhere(name, shape):
    value = np.ones(shape)
    value.flat[-1] = np.nan
    with pytest.raises(ValidationError, match=rf"{name} contains NaN \(first at index"):
        market(**{name: value})


@pytest.mark.parametrize("name,shape", [("utilities", (2, 1, 3)), ("budgets", (2,)), ("supply", (1, 3)),
                                        ("base_utility", (2,))])
def test_infinity_is_rejected_where_meaningless(name, shape):
    value = np.ones(shape)
    value.flat[0] = np.inf
    with pytest.raises(ValidationError, match=rf"{name} contains an infinite value"):
        market(**{name: value})


@pytest.mark.parametrize("name,shape", [("caps", (2, 1, 3)), ("utility_cap", (2,))])
def test_infinity_means_no_cap_but_minus_infinity_is_rejected(name, shape):
    value = np.ones(shape)
    value.flat[0] = np.inf
    assert np.isinf(getattr(market(**{name: value}), name).flat[0])
    value.flat[0] = -np.inf
    with pytest.raises(ValidationError, match=rf"{name} contains an infinite value -inf"):
        market(**{name: value})


@pytest.mark.parametrize("name,shape", [("utilities", (2, 1, 3)), ("supply", (1, 3)), ("caps", (2, 1, 3)),
                                        ("base_utility", (2,))])
def test_negative_entries_are_rejected(name, shape):
    value = np.ones(shape)
    value.flat[1] = -0.5
    with pytest.raises(ValidationError, match=rf"{name} must be >= 0, got -0.5 at index"):
        market(**{name: value})


@pytest.mark.parametrize("bad", [0.0, -1.0])
@pytest.mark.parametrize("name", ["budgets", "utility_cap"])
def test_budgets_and_utility_caps_must_be_positive(name, bad):
    with pytest.raises(ValidationError, match=rf"{name} must be > 0, got {bad:g}"):
        market(**{name: np.array([1.0, bad])})


def test_buyer_with_all_zero_utility_is_rejected():
    u = U.copy()
    u[1] = 0.0
    with pytest.raises(InfeasibleMarketError, match="buyer 1 can reach no positive utility"):
        market(utilities=u)


def test_buyer_valuing_only_unsupplied_goods_is_rejected():
    u = U.copy()
    u[1, 0, :2] = 0.0
    supply = np.array([[1.0, 1.0, 0.0]])
    with pytest.raises(InfeasibleMarketError, match="buyer 1"):
        market(utilities=u, supply=supply)


def test_buyer_capped_at_zero_wherever_it_has_value_is_rejected():
    caps = np.full((2, 1, 3), np.inf)
    caps[0] = 0.0
    with pytest.raises(InfeasibleMarketError, match=r"buyer 0 .* caps\[0\]"):
        market(caps=caps)


def test_base_utility_rescues_a_buyer_without_value():
    u = U.copy()
    u[1] = 0.0
    assert market(utilities=u, base_utility=np.array([0.0, 0.5])).n_buyers == 2


def test_utility_cap_below_base_utility_is_infeasible():
    with pytest.raises(InfeasibleMarketError, match=r"utility_cap\[1\] = 0.5 is below base_utility\[1\] = 1"):
        market(base_utility=np.array([0.0, 1.0]), utility_cap=np.array([2.0, 0.5]))


def test_market_is_immutable_and_owns_its_data():
    utilities = U.copy()
    m = market(utilities=utilities)
    utilities[:] = 7.0
    assert (m.utilities == 1.0).all()
    with pytest.raises(ValueError, match="read-only"):
        m.utilities[0, 0, 0] = 2.0
    with pytest.raises(AttributeError):
        m.budgets = np.ones(2)  # type: ignore[misc]


def test_defaults_and_flags():
    m = VolatileFisherMarket(U)
    assert m.shape == (2, 1, 3)
    np.testing.assert_array_equal(m.budgets, [1.0, 1.0])
    np.testing.assert_array_equal(m.supply, np.ones((1, 3)))
    assert m.is_plain
    assert not market(caps=np.full((2, 1, 3), 5.0)).is_plain
    assert "caps" in repr(market(caps=np.full((2, 1, 3), 5.0)))


def test_static_market_adds_a_period_axis():
    m = VolatileFisherMarket.static([[1.0, 2.0]], supply=[3.0, 4.0], caps=[[1.0, np.inf]])
    assert m.shape == (1, 2, 1)
    np.testing.assert_array_equal(m.supply[:, 0], [3.0, 4.0])
    np.testing.assert_array_equal(m.caps[0, :, 0], [1.0, np.inf])


def test_utility_and_nswot_of_an_allocation():
    m = market(base_utility=np.array([1.0, 0.0]))
    x = np.zeros((2, 1, 3))
    x[1, 0, :] = 1.0
    np.testing.assert_allclose(m.utility_of(x), [1.0, 3.0])
    assert m.nswot(x) == pytest.approx(np.log(3.0))


# --- immutability that cannot be undone (issue 15) -------------------------------------------------


def _assert_frozen(array):
    with pytest.raises(ValueError, match="WRITEABLE"):
        array.setflags(write=True)
    base = array.base
    while isinstance(base, np.ndarray):  # no array up the chain can be made writable either
        with pytest.raises(ValueError, match="WRITEABLE"):
            base.setflags(write=True)
        base = base.base
    with pytest.raises(ValueError, match="read-only"):
        array[(0,) * array.ndim] = 1
    with pytest.raises(ValueError, match="read-only"):
        array += 1


@pytest.mark.parametrize("name", ["utilities", "budgets", "supply", "base_utility", "caps", "utility_cap", "reachable"])
def test_market_arrays_cannot_be_made_writable(name):
    market = VolatileFisherMarket(np.ones((2, 1, 3)), caps=np.full((2, 1, 3), 0.5), utility_cap=[2.0, np.inf])
    _assert_frozen(getattr(market, name))


# --- products that leave float64 (issue 15) -----------------------------------------------------------


@pytest.mark.parametrize(("arguments", "pattern"), [
    ({"utilities": [[1e300], [1.0]], "supply": [1e10]}, r"utilities\[0\] times supply overflow"),
    ({"utilities": [[1.0], [1.0]], "budgets": [1e308, 1e308]}, r"budgets sum to inf, above 1e\+300"),
    ({"utilities": [[1.0], [1.0]], "budgets": [1e301, 1.0]}, r"budgets sum to 1e\+301"),
    ({"utilities": [[1.0], [1.0]], "budgets": [1e200, 1.0], "supply": [1e-200]}, r"supply has an entry of 1e-200"),
    ({"utilities": [[1e-300], [1.0]], "supply": [1e-10]}, r"utilities\[0\] times supply underflow"),
])
def test_products_outside_float64_are_rejected_by_name(arguments, pattern):
    arguments = dict(arguments)
    with pytest.raises(ValidationError, match=pattern):
        VolatileFisherMarket.static(arguments.pop("utilities"), **arguments)


def test_wide_but_representable_markets_are_accepted():
    market = VolatileFisherMarket.static([[1e150, 1.0], [1.0, 1e-150]], budgets=[1e100, 1e-100], supply=[1e100, 1e-100])
    assert market.shape == (2, 2, 1)


# --- issue 15: booleans and unknown extensions are rejected by name -----------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: VolatileFisherMarket([[[1.0]]], budgets=[True]), r"budgets must hold numbers, got booleans"),
        (lambda: VolatileFisherMarket([[[True]]]), r"utilities must hold numbers, got booleans"),
        (lambda: VolatileFisherMarket.static([[1.0, 2.0]], foo=[1.0]),
         r"foo is not an argument of VolatileFisherMarket.static; the extensions are base_utility"),
    ],
)
def test_booleans_and_unknown_extensions_are_rejected(call, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call()


@given(markets(extensions=EXTENSIONS, n_buyers=(1, 6), n_goods=(1, 4), n_periods=(1, 3)), st.data())
def test_pairs_reduce_rows_and_columns_like_the_dense_arrays(market, data):
    n = market.n_buyers
    pairs = market.pairs
    reachable = market.reachable.reshape(n, -1)
    assert list(zip(pairs.buyer, pairs.column, strict=True)) == list(zip(*np.nonzero(reachable), strict=True))
    np.testing.assert_array_equal(pairs.utility, market.utilities.reshape(n, -1)[reachable])
    values = data.draw(arrays(np.float64, reachable.shape, elements=st.sampled_from([-1.0, 0.5, 2.0, 3.0])))
    # A buyer or a good-period without pairs gets the reduction's identity.
    rows = np.where(reachable, values, -np.inf).max(axis=1)
    np.testing.assert_array_equal(pairs.row_reduce(np.maximum, values[reachable], -np.inf), rows)
    columns = np.where(reachable, values, np.inf).min(axis=0)
    column = pairs.by_column
    in_column_order = values[column.buyer, pairs.column[column.order]]
    np.testing.assert_array_equal(pairs.column_reduce(np.minimum, in_column_order, np.inf), columns)
    np.testing.assert_array_equal(column.utility, pairs.utility[column.order])
    np.testing.assert_array_equal(pairs.row_full(), reachable.all(axis=1))
    np.testing.assert_array_equal(pairs.column_full(), reachable.all(axis=0))
