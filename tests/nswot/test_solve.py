"""`vfm.solve`: hand-computed equilibria, failures reported as statuses, generated markets certified."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

import vfm
from vfm import Status, VolatileFisherMarket, check
from vfm.errors import SolverError, UnknownSolverError, UnsupportedMarketError, ValidationError
from vfm.testing.strategies import EXTENSIONS, markets

SOLVERS = vfm.available_solvers()


def supports(solver: str, market: VolatileFisherMarket) -> bool:
    """Whether `solver` takes `market` (the smoothed-dual backends take plain markets only)."""
    try:
        vfm.solvers.select(market, solver)
    except UnsupportedMarketError:
        return False
    return True


# Tight Clarabel tolerances for closed-form comparisons: allocations and prices are accurate to
# about the square root of the gap tolerance (see vfm.check), so 1e-12 gives ~1e-6.
TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


def solve_tight(market):
    return vfm.solve(market, "clarabel", **TIGHT)


# --- hand-computed markets (closed form, to 1e-6) ---------------------------------------------


def test_each_buyer_takes_the_good_it_prefers():
    result = solve_tight(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    np.testing.assert_allclose(result.allocation[:, :, 0], np.eye(2), atol=1e-6)
    np.testing.assert_allclose(result.prices[:, 0], [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(result.utilities, [2.0, 2.0], rtol=1e-6)
    assert result.objective == pytest.approx(2 * np.log(2.0), rel=1e-9)


def test_identical_buyers_share_in_proportion_to_budgets():
    # Total money 4 buys 2 units, so p = (2, 2); buyer i gets B_i / 2 units of utility.
    result = solve_tight(VolatileFisherMarket.static([[1.0, 1.0], [1.0, 1.0]], budgets=[1.0, 3.0]))
    np.testing.assert_allclose(result.prices[:, 0], [2.0, 2.0], rtol=1e-6)
    np.testing.assert_allclose(result.utilities, [0.5, 1.5], rtol=1e-6)


def test_unequal_budgets_and_supply():
    # Buyer 0 only values good 0 (supply 2), buyer 1 values both equally; budgets (1, 2).
    # Buyer 1 spends on good 1 (supply 1) and part of good 0: prices equalize bang per buck for
    # buyer 1 (p0 = p1) and total money 3 buys 3 units, so p = (1, 1); x00 = 1, x10 = 1, x11 = 1.
    result = solve_tight(VolatileFisherMarket.static([[1.0, 0.0], [1.0, 1.0]], [1.0, 2.0], [2.0, 1.0]))
    np.testing.assert_allclose(result.prices[:, 0], [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(result.allocation[:, :, 0], [[1.0, 0.0], [1.0, 1.0]], atol=1e-6)


def test_allocation_cap_binds():
    # One unit, buyer 0 capped at 0.2: buyer 1 gets 0.8 and sets the price 1 / 0.8.
    result = solve_tight(VolatileFisherMarket.static([[1.0], [1.0]], caps=[[0.2], [np.inf]]))
    np.testing.assert_allclose(result.allocation[:, 0, 0], [0.2, 0.8], atol=1e-6)
    np.testing.assert_allclose(result.prices[0, 0], 1.25, rtol=1e-6)


def test_base_utility_shifts_the_split():
    # max log(0.5 + x) + log(1 - x): x = 0.25, both utilities 0.75, price 1 / 0.75.
    result = solve_tight(VolatileFisherMarket.static([[1.0], [1.0]], base_utility=[0.5, 0.0]))
    np.testing.assert_allclose(result.allocation[:, 0, 0], [0.25, 0.75], atol=1e-6)
    np.testing.assert_allclose(result.utilities, [0.75, 0.75], rtol=1e-6)
    np.testing.assert_allclose(result.prices[0, 0], 4.0 / 3.0, rtol=1e-6)


def test_utility_cap_binds():
    result = solve_tight(VolatileFisherMarket.static([[1.0], [1.0]], utility_cap=[0.3, np.inf]))
    np.testing.assert_allclose(result.allocation[:, 0, 0], [0.3, 0.7], atol=1e-6)
    np.testing.assert_allclose(result.prices[0, 0], 1.0 / 0.7, rtol=1e-6)


def test_joint_solution_moves_late_value_to_late_periods():
    market = VolatileFisherMarket(np.array([[[1.0, 1.0]], [[1.0, 10.0]]]))
    result = solve_tight(market)
    np.testing.assert_allclose(result.allocation[:, 0, :], [[1.0, 0.0], [0.0, 1.0]], atol=1e-5)
    np.testing.assert_allclose(result.utilities, [1.0, 10.0], rtol=1e-5)


# --- degenerate markets -----------------------------------------------------------------------


def test_good_nobody_values_is_free_and_unallocated():
    result = vfm.solve(VolatileFisherMarket.static([[1.0, 0.0], [2.0, 0.0]]))
    assert result.success
    np.testing.assert_array_equal(result.allocation[:, 1, 0], 0.0)
    assert result.prices[1, 0] == 0.0
    assert check.certify(result).holds


def test_good_with_no_supply_is_unallocated():
    result = vfm.solve(VolatileFisherMarket.static([[1.0, 5.0], [2.0, 5.0]], supply=[1.0, 0.0]))
    assert result.success
    np.testing.assert_array_equal(result.allocation[:, 1, 0], 0.0)
    assert result.prices[1, 0] == 0.0
    assert check.certify(result).holds


def test_nothing_tradable_returns_the_empty_allocation():
    market = VolatileFisherMarket.static([[0.0], [0.0]], base_utility=[1.0, 2.0])
    result = vfm.solve(market)
    assert result.status is Status.OPTIMAL
    np.testing.assert_array_equal(result.allocation, 0.0)
    assert result.objective == pytest.approx(np.log(2.0))


# --- failures are statuses, not exceptions ------------------------------------------------------


def test_iteration_limit_is_reported_and_raised_on_request():
    market = VolatileFisherMarket(np.random.default_rng(0).uniform(0.1, 1.0, (20, 2, 5)))
    result = vfm.solve(market, "clarabel", max_iter=2)
    assert result.status is Status.ITERATION_LIMIT
    assert not result.success
    assert "iteration or time limit" in result.message
    with pytest.raises(SolverError, match="iteration_limit") as info:
        result.raise_for_status()
    assert info.value.result is result
    assert info.value.status == "iteration_limit"


def test_successful_result_passes_raise_for_status():
    result = vfm.solve(VolatileFisherMarket.static([[1.0]]))
    assert result.raise_for_status() is result
    assert result.iterations > 0 and result.wall_time >= result.solve_time > 0
    assert "optimal" in repr(result)


def test_unknown_solver_and_bad_market_are_rejected():
    market = VolatileFisherMarket.static([[1.0]])
    with pytest.raises(UnknownSolverError, match="solver='gurobi-magic' is not a vfm market backend"):
        vfm.solve(market, "gurobi-magic")
    with pytest.raises(UnknownSolverError, match="must be a backend name"):
        vfm.solve(market, 3)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"market must be a vfm\.VolatileFisherMarket, got ndarray"):
        vfm.solve(np.ones((1, 1, 1)))  # type: ignore[arg-type]


def test_solver_names_are_case_insensitive():
    assert vfm.solve(VolatileFisherMarket.static([[1.0]]), "CLARABEL").solver == "clarabel"


# --- invariances --------------------------------------------------------------------------------


@given(markets(n_buyers=(2, 5), extensions=EXTENSIONS))
def test_solution_is_invariant_to_units(market):
    """Rescaling a buyer's utility (and base, cap) by f_i and all budgets by 7 changes nothing real."""
    factor = np.geomspace(1e-3, 1e3, market.n_buyers)
    base = vfm.solve(market)
    scaled = vfm.solve(VolatileFisherMarket(
        market.utilities * factor[:, None, None], market.budgets * 7.0, market.supply,
        base_utility=market.base_utility * factor, caps=market.caps, utility_cap=market.utility_cap * factor,
    ))
    assert base.success and scaled.success
    # Utilities are unique at the optimum (strict concavity in U) even where allocations are not.
    tolerance = check.solution_tolerance(base)
    np.testing.assert_allclose(scaled.utilities / factor, base.utilities, rtol=tolerance)
    assert scaled.objective - 7.0 * base.objective == pytest.approx(
        7.0 * float(market.budgets @ np.log(factor)), abs=tolerance * 7.0 * market.budgets.sum())


# --- every solver, generated markets --------------------------------------------------------------


@pytest.mark.parametrize("solver", SOLVERS)
@given(market=markets(extensions=EXTENSIONS))
def test_certificate_holds_for_every_solver(solver, market):
    """Clarabel always certifies; the others must whenever they report success.

    For plain markets `certify` checks the equilibrium conditions (budgets, bang-per-buck),
    which `vfm.solve` does not use to set the status; Pareto optimality is an independent LP.
    """
    if not supports(solver, market):
        with pytest.raises(UnsupportedMarketError, match=f"solver={solver!r} does not support"):
            vfm.solve(market, solver)
        return
    result = vfm.solve(market, solver)
    if solver == "clarabel":
        assert result.success, result.message
    if result.success:
        check.certify(result).assert_holds()
        assert check.pareto_optimality(result).holds  # PO holds with every extension


@given(markets(extensions=EXTENSIONS))
@settings(max_examples=15)
def test_solvers_agree_on_the_optimum(market):
    results = [vfm.solve(market, s) for s in SOLVERS if supports(s, market)]
    reference = results[0]
    assert reference.success
    for other in results[1:]:
        if other.success:
            tolerance = check.objective_tolerance(other) * market.budgets.sum()
            assert abs(other.objective - reference.objective) <= tolerance + abs(reference.duality_gap)


def test_large_generated_market_is_certified():
    """200 buyers x 10 goods x 20 periods, utilities over six decades, with caps and base utility."""
    rng = np.random.default_rng(2026)
    shape = (200, 10, 20)
    utilities = 10.0 ** rng.uniform(-3, 3, shape) * (rng.random(shape) < 0.7)
    utilities[:, 0, 0] += 1.0
    market = VolatileFisherMarket(
        utilities, rng.uniform(0.5, 2.0, 200), rng.uniform(1.0, 3.0, (10, 20)),
        caps=np.where(rng.random(shape) < 0.2, rng.uniform(0.1, 1.0, shape), np.inf),
        base_utility=rng.uniform(0.0, 1.0, 200) * (rng.random(200) < 0.5),
    )
    result = vfm.solve(market)
    assert result.success, result.message
    check.kkt(result).assert_holds()
    assert check.pareto_optimality(result).holds


# --- OPTIMAL only when every buyer and good is certified (issue 15) ---------------------------------


def _small_buyer_market():
    return VolatileFisherMarket(np.random.default_rng(0).uniform(0.1, 1.0, (3, 2, 1)), [1e-8, 1.0, 1.0])


@pytest.mark.parametrize("market", [
    _small_buyer_market(),
    VolatileFisherMarket(np.random.default_rng(0).uniform(0.1, 1.0, (7, 3, 2)), np.logspace(-6, 6, 7)),
], ids=["budget-1e-8", "budgets-1e-6-to-1e6"])
def test_a_buyer_outside_the_accuracy_is_never_optimal(market):
    """Budgets far below the total: the solvers' accuracy (relative to the total) cannot resolve
    the small buyers. Before, OPTIMAL came back with buyer 0 spending 10x its budget."""
    result = vfm.solve(market)
    certificate = check.certify(result)
    assert result.success == certificate.holds
    if not result.success:
        assert result.status is Status.INACCURATE
        assert "certificate does not hold" in result.message
        assert result.attempts and all(reason for _, reason in result.attempts)


@pytest.mark.parametrize("options", [{}, {"eps_rel": 0.5}, {"eps_rel": 1e-3, "eps_abs": 1e-3}])
def test_scs_over_allocation_is_not_optimal(options):
    market = VolatileFisherMarket(np.random.default_rng(3).uniform(0.1, 1.0, (10, 3, 3)))
    result = vfm.solve(market, "scs", **options)
    clearing = check.market_clearing(result)
    assert result.success == check.certify(result).holds
    if clearing.value > result.accuracy:
        assert not result.success and "market_clearing" in result.message


def test_optimal_results_hold_the_per_buyer_certificate_at_their_accuracy():
    market = VolatileFisherMarket(np.random.default_rng(3).uniform(0.1, 1.0, (10, 3, 3)), np.geomspace(0.1, 10, 10))
    for solver in SOLVERS:
        for tol in (1e-4, 1e-8):
            result = vfm.solve(market, solver, tol=tol)
            if result.success:
                check.certify(result).assert_holds()


# --- solver options: one validation for every backend (issue 15) ---------------------------------


BAD_OPTIONS = [
    ({"tol": float("nan")}, "tol=nan"), ({"tol": -1e-6}, "tol=-1e-06"), ({"tol": 0}, "tol=0"),
    ({"tol": 1000}, "tol=1000"), ({"tol": 1}, "tol=1"), ({"tol": "1e-6"}, "tol='1e-6'"), ({"tol": True}, "tol=True"),
    ({"max_iter": 0}, "max_iter=0"), ({"max_iter": -3}, "max_iter=-3"), ({"max_iter": 2.5}, "max_iter=2.5"),
    ({"max_iter": 10.0}, "max_iter=10.0"), ({"max_iter": None}, "max_iter=None"),
    ({"tolerance": 1e-6}, "tolerance is not an option"),
]


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize(("options", "named"), BAD_OPTIONS, ids=[text for _, text in BAD_OPTIONS])
def test_bad_options_are_rejected_before_solving_by_every_backend(solver, options, named, monkeypatch):
    from vfm.solvers import registry

    def never(*args, **kwargs):
        raise AssertionError("solved despite a bad option")

    monkeypatch.setattr(type(registry._REGISTRY[solver]), "solve", never)
    with pytest.raises(ValidationError) as info:
        vfm.solve(VolatileFisherMarket.static([[1.0]]), solver, **options)
    assert named in str(info.value) and f"solver={solver!r}" in str(info.value)


@pytest.mark.parametrize("option", [{"eps_rel": 1}, {"eps_abs": float("nan")}, {"max_iters": 0}])
def test_a_backend_own_options_are_checked_by_kind(option):
    with pytest.raises(ValidationError, match="solver='scs'"):
        vfm.solve(VolatileFisherMarket.static([[1.0]]), "scs", **option)


@pytest.mark.parametrize("solver", SOLVERS)
def test_every_backend_takes_tol_and_max_iter(solver):
    market = VolatileFisherMarket(np.random.default_rng(4).uniform(0.1, 1.0, (6, 2, 2)))
    loose = vfm.solve(market, solver, tol=1e-4)
    # schur-ipm also stops on gap_tol, 10 * tol by default, and reports the larger.
    assert loose.accuracy == pytest.approx(1e-3 if solver == "schur-ipm" else 1e-4)
    if solver != "mosek":  # MOSEK has no iteration limit through CVXPY
        assert vfm.solve(market, solver, max_iter=1).status is not Status.OPTIMAL


# --- every failure falls back, with its reason (issue 15) ------------------------------------------


def test_a_buyer_already_at_its_utility_cap_is_solved_by_every_backend():
    market = VolatileFisherMarket.static([[1.0], [1.0]], base_utility=[0.5, 0.0], utility_cap=[0.5, 10.0])
    for solver in (s for s in SOLVERS if supports(s, market)):
        result = vfm.solve(market, solver)
        assert result.success or solver in ("scs", "ecos"), (solver, result.message)
        if result.success:
            np.testing.assert_allclose(result.allocation[:, 0, 0], [0.0, 1.0], atol=1e-4)
    assert vfm.solve(market).solver == "schur-ipm"


@pytest.fixture
def crashing_first():
    from vfm.solvers import Capabilities, registry

    class Crashing:
        name = "crashing"
        capabilities = Capabilities()

        def is_installed(self):
            return True

        def solve(self, program, **options):
            raise ValueError("array must not contain infs or NaNs")

    saved = dict(registry._REGISTRY)
    registry.register(Crashing(), preferred=True)
    yield
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_an_exception_inside_a_backend_falls_back_to_the_next(crashing_first):
    result = vfm.solve(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    assert result.success and result.solver == "schur-ipm"
    assert result.attempts == (("crashing", "ended 'error' (crashing raised ValueError: array must not contain "
                                            "infs or NaNs)"),)
    named = vfm.solve(VolatileFisherMarket.static([[1.0]]), "crashing")
    assert named.status is Status.ERROR and "raised ValueError" in named.message and named.attempts == ()


def test_when_every_backend_fails_the_result_carries_every_reason(monkeypatch):
    from vfm.solvers import registry

    def crash(self, program, **options):
        raise RuntimeError(f"{self.name} is broken")

    for backend in registry._REGISTRY.values():
        monkeypatch.setattr(type(backend), "solve", crash)
    result = vfm.solve(VolatileFisherMarket.static([[1.0, 2.0], [2.0, 1.0]]))
    assert result.status is Status.ERROR and not result.success
    tried = [result.solver] + [name for name, _ in result.attempts]
    assert sorted(tried) == sorted(registry.candidates(result.market)[i].name for i in range(len(tried)))
    assert len(tried) == len(registry.candidates(result.market))
    assert "every backend failed" in result.message


def test_a_caller_error_inside_a_backend_is_raised_not_swallowed(crashing_first, monkeypatch):
    from vfm.solvers import registry

    def refuse(program, **options):
        raise ValidationError("bad argument")

    monkeypatch.setattr(registry._REGISTRY["crashing"], "solve", refuse)
    with pytest.raises(ValidationError, match="bad argument"):
        vfm.solve(VolatileFisherMarket.static([[1.0]]))


def test_polish_must_be_a_bool():
    market = VolatileFisherMarket.static([[1.0, 2.0], [3.0, 1.0]])
    with pytest.raises(ValidationError, match=r"polish must be True or False, got 'yes'"):
        vfm.solve(market, polish="yes")
