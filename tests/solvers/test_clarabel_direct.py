"""The direct Clarabel backend: same optimum as CVXPY + Clarabel, certified, cached solver, failures reported."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given

import vfm
from vfm import Status, VolatileFisherMarket, check
from vfm.errors import SolverError, ValidationError
from vfm.program import ScaledProgram
from vfm.solvers import Capabilities, registry
from vfm.solvers.clarabel_direct import CacheStats, ClarabelDirectBackend
from vfm.testing.strategies import EXTENSIONS, markets

# Tight tolerances where allocations or prices are compared (accurate to ~sqrt(1e-12) = 1e-6).
TIGHT = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12}


@pytest.fixture(scope="module")
def direct():
    """A fresh instance (its own cache and counters) in place of the registered one, for this module."""
    backend = ClarabelDirectBackend()
    saved = dict(registry._REGISTRY)
    registry.register(backend)
    yield backend
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def replan(rng: np.random.Generator, binding: bool = True) -> VolatileFisherMarket:
    """A market whose numbers are drawn from `rng` but whose program layout never changes.

    Every entry is valued and supplied, buyer 1's entries have finite caps and buyer 0 a finite
    utility cap. With `binding`, the caps are below supply and the utility cap a third of what
    buyer 0 can reach; without, both are out of reach (the scaled program drops them).
    """
    shape = (6, 2, 4)
    supply = rng.uniform(1.0, 2.0, shape[1:])
    caps = np.full(shape, np.inf)
    caps[1] = (rng.uniform(0.2, 0.5) if binding else 3.0) * supply
    utilities = rng.uniform(0.5, 2.0, shape)
    base = rng.uniform(0.1, 0.5, shape[0])
    reachable = base[0] + float((utilities[0] * supply).sum())
    utility_cap = np.full(shape[0], np.inf)
    utility_cap[0] = base[0] + (reachable - base[0]) * (1.0 / 3.0 if binding else 10.0)
    return VolatileFisherMarket(
        utilities, rng.uniform(0.5, 2.0, shape[0]), supply,
        caps=caps, base_utility=base, utility_cap=utility_cap,
    )


def test_declares_a_full_backend():
    backend = ClarabelDirectBackend()
    assert backend.name == "clarabel-direct"
    # Every feature, and its options declared (checked by vfm.solve before solving).
    assert dataclasses.replace(backend.capabilities, options=None) == Capabilities()
    kinds = backend.capabilities.option_kinds()
    assert kinds is not None and kinds["tol"] == "tolerance" and kinds["max_iter"] == "count"
    assert backend.is_installed()
    assert backend.cache_stats == CacheStats(builds=0, updates=0)


# --- every block of the conic form, against closed forms ----------------------------------------


@pytest.mark.parametrize(
    ("market", "allocation", "price"),
    [
        # The cap row: buyer 0 capped at 0.2, buyer 1 takes 0.8 and sets the price 1 / 0.8.
        (VolatileFisherMarket.static([[1.0], [1.0]], caps=[[0.2], [np.inf]]), [0.2, 0.8], 1.25),
        # The utility-cap row: buyer 0 stops at utility 0.3.
        (VolatileFisherMarket.static([[1.0], [1.0]], utility_cap=[0.3, np.inf]), [0.3, 0.7], 1.0 / 0.7),
        # The base utility in the cone: max log(0.5 + x) + log(1 - x) at x = 1/4.
        (VolatileFisherMarket.static([[1.0], [1.0]], base_utility=[0.5, 0.0]), [0.25, 0.75], 4.0 / 3.0),
    ],
)
def test_closed_form_equilibria(direct, market, allocation, price):
    result = vfm.solve(market, "clarabel-direct", **TIGHT)
    assert result.status is Status.OPTIMAL, result.message
    np.testing.assert_allclose(result.allocation[:, 0, 0], allocation, atol=1e-6)
    # Prices are the supply duals with the sign ScaledProgram.prices expects.
    np.testing.assert_allclose(result.prices[0, 0], price, rtol=1e-6)


# --- generated markets: same optimum as CVXPY + Clarabel, and certified -------------------------


@given(market=markets(extensions=EXTENSIONS))
def test_agrees_with_cvxpy_clarabel_and_is_certified(direct, market):
    result = vfm.solve(market, "clarabel-direct")
    assert result.status is Status.OPTIMAL, result.message
    check.kkt(result).assert_holds()
    reference = vfm.solve(market, "clarabel")
    assert reference.success, reference.message
    # NSWOT is a sum of B_i log U_i: measure 1e-6 relative to the budgets as well as to its value,
    # which can be near zero; the two duality gaps bound how far two certified optima can differ.
    scale = max(abs(reference.objective), float(market.budgets.sum()))
    tolerance = max(1e-6 * scale, abs(result.duality_gap) + abs(reference.duality_gap))
    assert abs(result.objective - reference.objective) <= tolerance


# --- the cached solver ----------------------------------------------------------------------------


def test_resolve_with_new_numbers_reuses_the_solver_and_matches_a_fresh_solve():
    rng = np.random.default_rng(7)
    backend = ClarabelDirectBackend()
    backend.solve(ScaledProgram.from_market(replan(rng)), **TIGHT)
    assert backend.cache_stats == CacheStats(builds=1, updates=0)

    market = replan(rng)
    program = ScaledProgram.from_market(market)
    reused = backend.solve(program, **TIGHT)
    assert backend.cache_stats == CacheStats(builds=1, updates=1)
    fresh = ClarabelDirectBackend().solve(program, **TIGHT)
    assert reused.status is fresh.status is Status.OPTIMAL, (reused.message, fresh.message)
    assert reused.x is not None and fresh.x is not None
    assert reused.prices is not None and fresh.prices is not None
    np.testing.assert_allclose(program.allocation(reused.x), program.allocation(fresh.x), atol=1e-5)
    np.testing.assert_allclose(program.prices(reused.prices), program.prices(fresh.prices), rtol=1e-5)
    assert market.nswot(program.allocation(reused.x)) == pytest.approx(
        market.nswot(program.allocation(fresh.x)), abs=1e-9 * market.budgets.sum())


def test_resolve_through_vfm_solve_is_certified(direct):
    rng = np.random.default_rng(11)
    direct.clear_cache()
    vfm.solve(replan(rng), "clarabel-direct")
    market = replan(rng)
    result = vfm.solve(market, "clarabel-direct")
    assert direct.cache_stats == CacheStats(builds=1, updates=1)
    assert result.status is Status.OPTIMAL, result.message
    check.kkt(result).assert_holds()
    reference = vfm.solve(market, "clarabel")
    assert abs(result.objective - reference.objective) <= abs(result.duality_gap) + abs(reference.duality_gap) + 1e-9


def test_caps_that_stop_binding_keep_the_layout(direct):
    """A re-plan that moves caps out of reach changes numbers only, and stays correct both ways."""
    rng = np.random.default_rng(13)
    direct.clear_cache()
    for updates, binding in enumerate([True, False, True]):
        market = replan(rng, binding)
        program = ScaledProgram.from_market(market)
        assert bool(np.isfinite(program.utility_cap[0])) is binding  # the program drops what cannot bind
        assert bool((program.upper[program.buyer == 1] < 1.0).all()) is binding
        result = vfm.solve(market, "clarabel-direct")
        assert direct.cache_stats == CacheStats(builds=1, updates=updates)
        assert result.status is Status.OPTIMAL, result.message
        check.kkt(result).assert_holds()
        reference = vfm.solve(market, "clarabel")
        assert abs(result.objective - reference.objective) <= (
            abs(result.duality_gap) + abs(reference.duality_gap) + 1e-9
        )


def test_new_layout_or_options_rebuild_and_clear_cache_resets():
    rng = np.random.default_rng(3)
    backend = ClarabelDirectBackend()
    market = replan(rng)
    backend.solve(ScaledProgram.from_market(market))
    # Without the utility cap, the program loses a row: same entries, new layout.
    uncapped = VolatileFisherMarket(
        market.utilities, market.budgets, market.supply, caps=market.caps, base_utility=market.base_utility,
    )
    backend.solve(ScaledProgram.from_market(uncapped))
    assert backend.cache_stats == CacheStats(builds=2, updates=0)
    # Options are part of the key: other settings, other solver.
    backend.solve(ScaledProgram.from_market(uncapped), tol_gap_rel=1e-9)
    assert backend.cache_stats == CacheStats(builds=3, updates=0)
    backend.solve(ScaledProgram.from_market(uncapped), tol_gap_rel=1e-9)
    assert backend.cache_stats == CacheStats(builds=3, updates=1)
    backend.clear_cache()
    assert backend.cache_stats == CacheStats(builds=0, updates=0)
    backend.solve(ScaledProgram.from_market(uncapped), tol_gap_rel=1e-9)
    assert backend.cache_stats == CacheStats(builds=1, updates=0)


# --- options and failures ---------------------------------------------------------------------------


def test_iteration_limit_is_reported_not_raised(direct):
    market = replan(np.random.default_rng(5))
    solution = ClarabelDirectBackend().solve(ScaledProgram.from_market(market), max_iter=1)
    assert solution.status is Status.ITERATION_LIMIT
    assert "MaxIterations" in solution.message
    assert solution.iterations == 1

    result = vfm.solve(market, "clarabel-direct", max_iter=1)
    assert result.status is Status.ITERATION_LIMIT
    with pytest.raises(SolverError, match="iteration_limit"):
        result.raise_for_status()


def test_accuracy_is_the_loosest_tolerance_in_force():
    program = ScaledProgram.from_market(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    backend = ClarabelDirectBackend()
    assert backend.solve(program).accuracy == 1e-8
    assert backend.solve(program, tol_gap_rel=1e-6, tol_feas=1e-9).accuracy == 1e-6


@pytest.mark.parametrize(("options", "match"), [
    ({"not_a_setting": 1}, r"^not_a_setting is not an option of solver='clarabel-direct'; it takes: "),
    ({"max_iter": "many"}, r"^option max_iter='many' of solver='clarabel-direct' must be"),
    ({"presolve_enable": "yes"}, "Clarabel setting 'presolve_enable' has the wrong type"),
])
def test_bad_options_are_validation_errors(options, match):
    program = ScaledProgram.from_market(VolatileFisherMarket.static([[1.0]]))
    with pytest.raises(ValidationError, match=match):
        ClarabelDirectBackend().solve(program, **options)


def test_settings_clarabel_rejects_are_an_error_status():
    program = ScaledProgram.from_market(VolatileFisherMarket.static([[1.0]]))
    solution = ClarabelDirectBackend().solve(program, direct_solve_method="nonsense")
    assert solution.status is Status.ERROR
    assert solution.x is None and solution.prices is None
    assert "direct_solve_method" in solution.message
