"""Certificates and properties: they hold where theory says so, and they catch violations."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import vfm
from vfm import VolatileFisherMarket, check
from vfm.errors import CertificateError, ValidationError
from vfm.testing.strategies import EXTENSIONS, markets


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


@given(markets(extensions=EXTENSIONS))
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


@given(markets(budgets="equal", extensions={"utility_cap"}))
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


# --- a point that is not finite never passes (issue 15) ------------------------------------------

ALL_CHECKS = [check.market_clearing, check.feasibility, check.budget_exhaustion, check.bang_per_buck,
              check.price_complementarity, check.buyer_optimality, check.duality_gap, check.envy_freeness,
              check.proportionality, check.pareto_optimality]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("field", ["allocation", "prices"])
@pytest.mark.parametrize("condition", ALL_CHECKS, ids=lambda c: c.__name__)
def test_one_entry_that_is_not_finite_fails_every_check(textbook, condition, field, bad):
    array = getattr(textbook, field).copy()
    array.flat[0] = bad
    residual = condition(perturbed(textbook, **{field: array}))
    assert not residual.holds
    assert not np.isfinite(residual.value)
    assert residual.value != 0.0
    assert "not finite" in str(residual) and "VIOLATED" in str(residual)


def test_a_failed_solve_fails_every_certificate():
    from vfm.equilibrium import failed

    result = failed(VolatileFisherMarket.static([[1.0, 2.0], [2.0, 1.0]]), "clarabel", vfm.Status.ERROR, "crashed")
    for certificate in (check.certify(result), check.kkt(result), check.properties(result)):
        assert not certificate.holds
        assert all(np.isnan(residual.value) for residual in certificate)
    with pytest.raises(CertificateError, match="nan"):
        check.certify(result).assert_holds()


def test_nan_inside_a_residual_is_reported_as_nan_not_zero():
    assert np.isnan(check._worst(np.array([0.5, np.nan, -1.0]), "x", 1.0).value)
    assert check._worst(np.array([-3.0, np.inf]), "x", 1.0).value == np.inf
    assert check._worst(np.array([-3.0, -1.0]), "x", 1.0).value == 0.0
    assert not check.Residual("x", float("inf"), (), float("inf")).holds


@pytest.mark.parametrize("value", [-0.0, -1e-300, -1e-12, -3.0, -np.inf])
def test_a_value_at_or_below_zero_is_reported_as_zero(value):
    # The docs promise "negative values are reported as 0": never as -0.000e+00, whatever a
    # solver or an LP hands the check (an LP's optimum 0.0, negated, is -0.0).
    residual = check.Residual("x", value, (3,), 1e-6)
    assert residual.value == 0.0 and np.copysign(1.0, residual.value) == 1.0
    assert residual.holds and str(residual).split()[1] == "0.000e+00"


def test_no_check_of_a_solved_market_reports_a_negative_zero():
    result = vfm.solve(VolatileFisherMarket(np.array([[[1.0, 1.0]], [[1.0, 10.0]]])))
    for residual in (*check.certify(result), *check.properties(result)):
        assert np.copysign(1.0, residual.value) == 1.0, str(residual)
        assert not str(residual).split()[1].startswith("-"), str(residual)


# --- per buyer and per good (issue 15) ---------------------------------------------------------------


def test_a_small_buyer_is_held_to_its_own_budget(textbook):
    # Buyer 0 overspends its 1e-6 budget fivefold: negligible against the total, not against its own.
    market = VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]], budgets=[1e-6, 1.0])
    allocation = np.array([[[5e-6], [0.0]], [[1.0 - 5e-6], [1.0]]])
    result = vfm.Equilibrium(market, allocation, np.array([[1.0], [1.0]]) * 0.5, vfm.Status.OPTIMAL, "manual")
    assert not check.budget_exhaustion(result).holds and check.budget_exhaustion(result).where == (0,)
    optimality = check.buyer_optimality(result)
    assert not optimality.holds and optimality.where == (0,)


def test_a_good_only_a_small_buyer_wants_is_checked_on_its_scale():
    market = VolatileFisherMarket.static([[1.0, 0.0], [0.0, 1.0]], budgets=[1e-6, 1.0])
    # Half of good 0 unsold at buyer 0's price: a tenth of a millionth of all money, half of buyer 0's.
    result = vfm.Equilibrium(market, np.array([[[0.5], [0.0]], [[0.0], [1.0]]]),
                             np.array([[1e-6], [1.0]]), vfm.Status.OPTIMAL, "manual")
    complementarity = check.price_complementarity(result)
    assert not complementarity.holds and complementarity.where == (0, 0)
    assert complementarity.value == pytest.approx(0.5)


def test_over_allocation_is_judged_at_the_solver_accuracy(textbook):
    over = perturbed(textbook, allocation=textbook.allocation * (1.0 + 10.0 * textbook.accuracy))
    assert check.market_clearing(over).tolerance == check.FEASIBILITY_FACTOR * textbook.accuracy
    assert not check.market_clearing(over).holds


def test_cap_excess_is_relative_to_the_supply():
    # A cap of 1e-6 units of a 1e-3 supply, exceeded by 1e-6 units: 1e-3 of the supply.
    market = VolatileFisherMarket.static([[1.0], [1.0]], supply=[1e-3], caps=[[1e-6], [np.inf]])
    result = vfm.solve(market)
    assert result.success and check.feasibility(result).holds
    broken = perturbed(result, allocation=result.allocation + np.array([[[1e-6]], [[-1e-6]]]))
    assert not check.feasibility(broken).holds
    assert check.feasibility(broken).value == pytest.approx(1e-3, rel=1e-6)


# --- issue 15: a check given something other than a result, or a bad tolerance ------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda r: check.market_clearing(None),
         r"result of vfm.check.market_clearing must be an Equilibrium .* got NoneType"),
        (lambda r: check.certify(r.market),
         r"result of vfm.check.certify must be an Equilibrium .* got VolatileFisherMarket; solve the market first"),
        (lambda r: check.kkt("x"), r"result of vfm.check.kkt must be an Equilibrium"),
        (lambda r: check.properties(3), r"result of vfm.check.properties must be an Equilibrium"),
        (lambda r: check.equilibrium_conditions({}),
         r"result of vfm.check.equilibrium_conditions must be an Equilibrium"),
        (lambda r: check.duality_gap(r, tol=-1), r"tol of vfm.check.duality_gap must be a finite number >= 0"),
        (lambda r: check.feasibility(r, tol="a"), r"tol of vfm.check.feasibility must be a finite number >= 0"),
        (lambda r: check.pareto_optimality(r, tol=float("nan")), r"tol of vfm.check.pareto_optimality must be"),
        (lambda r: check.envy_freeness(r, tol=True), r"tol of vfm.check.envy_freeness must be"),
    ],
)
def test_checks_reject_what_is_not_a_result_or_a_tolerance(call, pattern):
    result = vfm.solve(VolatileFisherMarket.static([[1.0, 2.0], [3.0, 1.0]]))
    with pytest.raises(ValidationError, match=pattern):
        call(result)


# --- the checks over the market's pairs against their dense formulas ------------------------------


def dense_bang_per_buck(result, tol):
    """`check.bang_per_buck` over every buyer x good-period, the 0 of unreachable entries included."""
    market = result.market
    n = market.n_buyers
    x, p = result.allocation.reshape(n, -1), result.prices.reshape(-1)
    u = np.where(market.reachable.reshape(n, -1), market.utilities.reshape(n, -1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        best = np.where(u > 0, u / p[None, :], 0.0).max(axis=1)
        rows, cols = np.nonzero((u > 0) & (x != 0))
        terms = x[rows, cols] * (p[cols] - u[rows, cols] / best[rows])
    per_buyer = np.where(np.isinf(best), np.inf, np.bincount(rows, terms, minlength=n)) / market.budgets
    worst = check._worst(per_buyer, "bang_per_buck", tol)
    if not worst.where:
        return worst
    i = worst.where[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        waste = np.where(np.isinf(best[i]), np.inf, np.where(u[i] > 0, x[i] * (p - u[i] / best[i]), 0.0))
    entry = np.unravel_index(int(np.argmax(waste)), market.shape[1:])
    return check.Residual(worst.name, worst.value, (i, *map(int, entry)), tol, worst.note)


@given(markets(extensions=EXTENSIONS), st.data())
def test_bang_per_buck_and_good_budgets_match_their_dense_formulas(market, data):
    shape = market.supply.shape
    # Prices with zeros (free valued goods) and negatives; allocations with zeros and negatives.
    prices = data.draw(arrays(np.float64, shape, elements=st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e-3])))
    allocation = data.draw(arrays(np.float64, market.shape, elements=st.sampled_from([0.0, 0.0, 1.0, 0.3, -0.1])))
    result = vfm.Equilibrium(market=market, allocation=allocation, prices=prices, status=vfm.Status.OPTIMAL,
                             solver="test")
    got, expected = check.bang_per_buck(result, tol=1.0), dense_bang_per_buck(result, 1.0)
    np.testing.assert_equal((got.value, got.where, got.note), (expected.value, expected.where, expected.note))
    largest = np.where(market.reachable, market.budgets[:, None, None], 0.0).max(axis=0)
    np.testing.assert_array_equal(check._good_budgets(market),
                                  np.where(largest > 0, largest, market.budgets.sum()))
