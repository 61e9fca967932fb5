"""Certificates and properties: they hold where theory says so, and they catch violations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given

import vfm
from vfm import VolatileFisherMarket, check
from vfm.errors import CertificateError, ValidationError
from vfm.testing.strategies import markets


def perturbed(result, **fields):
    return dataclasses.replace(result, **fields)


# --- the theorems (plain markets) -----------------------------------------------------------


@given(markets(budgets="equal"))
def test_equal_budgets_give_envy_free_proportional_pareto_optimal_allocations(market):
    result = vfm.solve(market)
    check.equilibrium_conditions(result).assert_holds()
    check.properties(result).assert_holds()


@given(markets(budgets="unequal"))
def test_unequal_budgets_give_weighted_envy_freeness_and_proportionality(market):
    result = vfm.solve(market)
    check.envy_freeness(result)  # weighted by budgets
    assert check.envy_freeness(result).holds
    assert check.proportionality(result).holds  # against the budget-share bundle
    assert check.pareto_optimality(result).holds


@given(markets(caps=True, base_utility=True, utility_cap=True))
def test_pareto_optimality_survives_every_extension(market):
    result = vfm.solve(market)
    assert check.pareto_optimality(result).holds
    check.kkt(result).assert_holds()


# --- counterexamples: what the extensions break ---------------------------------------------------


def test_caps_can_break_envy_freeness():
    result = vfm.solve(VolatileFisherMarket.static([[1.0], [1.0]], caps=[[0.2], [np.inf]]))
    envy = check.envy_freeness(result)
    assert not envy.holds and envy.where == (0, 1)
    assert envy.value == pytest.approx(0.8 / 0.2 - 1.0, rel=1e-4)
    assert check.pareto_optimality(result).holds


def test_caps_can_break_proportionality():
    # Found by random search: buyer 1 ends below the utility of its (capped) half share.
    market = VolatileFisherMarket.static([[0.84, 0.71], [0.29, 0.33]], caps=[[0.95, 0.53], [0.58, 0.63]])
    result = vfm.solve(market)
    proportionality = check.proportionality(result)
    assert not proportionality.holds and proportionality.where == (1,)
    assert proportionality.value == pytest.approx(0.0534, abs=1e-3)
    assert check.pareto_optimality(result).holds


def test_base_utility_can_break_envy_freeness_and_proportionality():
    result = vfm.solve(VolatileFisherMarket.static([[1.0], [1.0]], base_utility=[0.5, 0.0]))
    # Buyer 0 gets 0.25, buyer 1 gets 0.75: buyer 0 prefers buyer 1's bundle, and less than half.
    assert not check.envy_freeness(result).holds
    assert not check.proportionality(result).holds
    assert check.pareto_optimality(result).holds


@given(markets(budgets="equal", utility_cap=True))
def test_utility_caps_alone_keep_envy_freeness_and_proportionality(market):
    """Measured on utility cut at the cap (a buyer at its cap has all it can use)."""
    result = vfm.solve(market)
    check.properties(result).assert_holds()


def test_buyer_at_its_utility_cap_envies_nobody():
    # Buyer 0 can use at most 0.3: it gets exactly that, and buyer 1's 0.7 is worth no more to it.
    result = vfm.solve(VolatileFisherMarket.static([[1.0], [1.0]], utility_cap=[0.3, np.inf]))
    np.testing.assert_allclose(result.allocation[:, 0, 0], [0.3, 0.7], atol=1e-6)
    assert check.envy_freeness(result).holds and check.proportionality(result).holds


# --- the checks can fail ---------------------------------------------------------------------------


@pytest.fixture
def textbook():
    return vfm.solve(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]], supply=[1.0, 1.0]))


def test_certificate_rejects_swapped_bundles(textbook):
    swapped = perturbed(textbook, allocation=textbook.allocation[::-1].copy())
    certificate = check.certify(swapped)
    assert not certificate.holds
    assert not certificate["bang_per_buck"].holds
    assert not certificate["duality_gap"].holds
    assert not check.envy_freeness(swapped).holds
    assert not check.pareto_optimality(swapped).holds
    with pytest.raises(CertificateError, match="bang_per_buck"):
        certificate.assert_holds()


def test_certificate_rejects_wrong_prices(textbook):
    doubled = perturbed(textbook, prices=textbook.prices * 2.0)
    assert not check.budget_exhaustion(doubled).holds
    assert check.budget_exhaustion(doubled).value == pytest.approx(1.0, rel=1e-6)
    negative = perturbed(textbook, prices=-textbook.prices)
    assert not check.price_complementarity(negative).holds


def test_certificate_rejects_over_allocation_and_unsold_goods(textbook):
    over = perturbed(textbook, allocation=textbook.allocation * 1.1)
    assert not check.market_clearing(over).holds
    assert check.market_clearing(over).value == pytest.approx(0.1, rel=1e-6)
    under = perturbed(textbook, allocation=textbook.allocation * 0.5)
    assert not check.price_complementarity(under).holds


def test_kkt_rejects_cap_violations():
    result = vfm.solve(VolatileFisherMarket.static([[1.0], [1.0]], caps=[[0.2], [np.inf]]))
    check.kkt(result).assert_holds()
    broken = perturbed(result, allocation=np.array([[[0.5]], [[0.5]]]))
    feasibility = check.feasibility(broken)
    assert not feasibility.holds and feasibility.where == (0, 0, 0)


def test_per_period_solution_is_pareto_dominated_over_time():
    market = VolatileFisherMarket(np.array([[[1.0, 1.0]], [[1.0, 10.0]]]))
    per_period = vfm.solve_per_period(market)
    joint = vfm.solve(market)
    # Per period: (1, 5.5); over time: (1, 10). Buyer 1 gains 10/5.5 - 1 at nobody's expense.
    assert (joint.utilities >= per_period.utilities - 1e-6).all()
    assert joint.utilities[1] > per_period.utilities[1] + 4.0
    po = check.pareto_optimality(per_period)
    assert not po.holds and po.where == (1,)
    assert po.value == pytest.approx(0.5 * (10.0 / 5.5 - 1.0), rel=1e-3)


def test_equilibrium_conditions_refuse_extended_markets():
    result = vfm.solve(VolatileFisherMarket.static([[1.0], [1.0]], base_utility=[0.5, 0.0]))
    with pytest.raises(ValidationError, match=r"use vfm\.check\.kkt"):
        check.equilibrium_conditions(result)
    assert check.certify(result)["buyer_optimality"].holds


def test_tolerances_follow_the_solver_accuracy(textbook):
    assert check.duality_gap(textbook).tolerance == check.OBJECTIVE_FACTOR * textbook.accuracy
    assert check.envy_freeness(textbook).tolerance == pytest.approx(
        check.SOLUTION_FACTOR * np.sqrt(textbook.accuracy))
    loose = vfm.solve(textbook.market, "clarabel", tol_gap_rel=1e-6, tol_feas=1e-6)
    assert loose.accuracy == 1e-6
    assert check.duality_gap(loose, tol=1e-3).tolerance == 1e-3


def test_residual_reports_value_location_and_verdict(textbook):
    residual = check.bang_per_buck(textbook)
    assert residual.name == "bang_per_buck" and len(residual.where) == 3
    assert "ok" in str(residual)
    nan = check.Residual("x", float("nan"), (), 1.0)
    assert not nan.holds
