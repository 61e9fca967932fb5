"""Market-side statuses never lie: `Equilibrium` checks its shapes and never vouches for a
non-finite point, `vfm.utility.nswot` never returns NaN, and `vfm.solve`'s polish is bounded in time."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vfm
from vfm.equilibrium import Equilibrium, Status
from vfm.errors import ValidationError
from vfm.utility import expected_nswot, nswot


def _market() -> vfm.VolatileFisherMarket:
    return vfm.VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]])


@pytest.mark.parametrize("allocation, prices, match", [
    (np.zeros((3, 2, 1)), np.ones((2, 1)), r"allocation must have shape \(2, 2, 1\) for this market"),
    (np.zeros((2, 2, 1)), np.ones(2), r"prices must have shape \(2, 1\) for this market"),
])
def test_an_equilibrium_checks_its_shapes(allocation, prices, match):
    with pytest.raises(ValidationError, match=match):
        Equilibrium(market=_market(), allocation=allocation, prices=prices, status=Status.OPTIMAL, solver="x")


def test_an_equilibrium_never_vouches_for_a_non_finite_point():
    result = Equilibrium(market=_market(), allocation=np.full((2, 2, 1), np.nan), prices=np.ones((2, 1)),
                         status=Status.OPTIMAL, solver="x", message="stub")
    assert result.status == Status.ERROR and "not usable: the allocation is not finite" in result.message
    failed = Equilibrium(market=_market(), allocation=np.full((2, 2, 1), np.nan), prices=np.ones((2, 1)),
                         status=Status.ITERATION_LIMIT, solver="x")
    assert failed.status == Status.ITERATION_LIMIT


@pytest.mark.parametrize("backend", ["numpy", "auto"])
def test_nswot_overflows_into_logs_not_nan(backend):
    one = nswot(np.array([[[1e308]]]), np.array([[[10.0]]]), backend=backend)
    assert one == pytest.approx(np.log(1e308) + np.log(10.0))
    two = nswot(np.array([[[1e308]], [[1.0]]]), np.array([[[10.0]], [[0.0]]]), backend=backend)
    assert two == -np.inf  # a buyer with utility 0, not inf - inf = NaN
    assert expected_nswot(np.array([[[[1e308]]]]), np.array([[[10.0]]]), backend=backend) == pytest.approx(one)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([0.0, 1e-300, 1.0, 1e300, 1e308]), min_size=4, max_size=4),
       st.lists(st.sampled_from([0.0, 1e-300, 1.0, 10.0, 1e308]), min_size=4, max_size=4),
       st.lists(st.sampled_from([1e-300, 1.0, 1e300]), min_size=2, max_size=2))
def test_nswot_is_never_nan(u, x, budgets):
    value = nswot(np.reshape(u, (2, 2, 1)), np.reshape(x, (2, 2, 1)), budgets=budgets, backend="numpy")
    assert not np.isnan(value)


def test_the_polish_of_many_identical_buyers_is_quick():
    """2,000 identical buyers of 10 goods in 10 periods: one support of 200,000 pairs with cycles,
    whose flows a dense least-squares solve took 154 s to find."""
    market = vfm.VolatileFisherMarket(np.broadcast_to(np.linspace(0.5, 2.0, 100).reshape(1, 10, 10),
                                                      (2000, 10, 10)).copy())
    started = time.perf_counter()
    result = vfm.solve(market)
    elapsed = time.perf_counter() - started
    assert result.status == Status.OPTIMAL and elapsed < 20.0, (elapsed, result.message)


def test_the_polish_stops_at_its_budget(monkeypatch):
    from vfm.nswot import polish as market_polish

    market = vfm.VolatileFisherMarket.static([[1.0, 1.0], [0.0, 1.0]], budgets=[2.0, 1.0])
    solved = vfm.solve(market, polish=False)
    kept = market_polish.polished(market, solved, deadline=time.perf_counter() - 1.0)  # the first guess is still tried
    assert "polished to the exact equilibrium" in kept.message
    monkeypatch.setattr(market_polish, "_float_violation", lambda data, solution: "rejected (stub)")
    market = vfm.VolatileFisherMarket(np.random.default_rng(0).uniform(0.1, 1.0, (6, 3, 2)))  # several guesses
    solved = vfm.solve(market, polish=False)
    stopped = market_polish.polished(market, solved, deadline=time.perf_counter() - 1.0)
    assert stopped.status == solved.status and "the polish stopped at its time budget" in stopped.message
    budget = market_polish.polish_budget_s
    assert budget(0.0) == market_polish.POLISH_MIN_S and budget(10.0) == 20.0
