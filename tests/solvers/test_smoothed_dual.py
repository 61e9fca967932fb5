"""The smoothed-dual backends (NumPy and JAX): exact equilibria of plain markets, their options,
and the registry's rules for them (preferred for wide plain markets, the JAX one only by name)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings

import vfm
from vfm import Status, VolatileFisherMarket, check
from vfm.duality import duality_gap
from vfm.errors import UnsupportedMarketError, ValidationError
from vfm.program import ScaledProgram
from vfm.solvers import Capabilities, registry
from vfm.solvers.smoothed_dual import WIDE_GOODS, WIDE_PAIRS, NumpyEngine, SmoothedDualBackend, relative_gap, wide
from vfm.testing.strategies import markets

POLISHED = "polished to the exact equilibrium"


def plain_market(n: int, m: int, periods: int = 1, seed: int = 0) -> VolatileFisherMarket:
    """Utilities uniform in [0, 1) with about half set to 0 (every buyer keeps one positive),
    budgets uniform in [1, 2)."""
    rng = np.random.default_rng(seed)
    utilities = rng.uniform(size=(n, m, periods))
    utilities[rng.uniform(size=utilities.shape) < 0.5] = 0.0
    utilities[np.arange(n), rng.integers(0, m, n), rng.integers(0, periods, n)] += 0.5
    return VolatileFisherMarket(utilities, rng.uniform(1.0, 2.0, n))


SMALL = [pytest.param((30, 12, 1, 0), id="30x12"), pytest.param((200, 40, 1, 1), id="200x40")]
SEVERAL_PERIODS = pytest.param((40, 5, 4, 2), id="40x5x4")


def assert_same_prices(prices: np.ndarray, reference: np.ndarray, rtol: float = 1e-9) -> None:
    np.testing.assert_allclose(prices, reference, rtol=rtol, atol=rtol * float(np.abs(reference).max()))


# --- exact equilibria -------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [*SMALL, SEVERAL_PERIODS])
def test_polished_prices_are_the_exact_equilibrium(shape):
    market = plain_market(*shape)
    result = vfm.solve(market, "smoothed-dual")
    assert result.status is Status.OPTIMAL, result.message
    assert POLISHED in result.message and result.solver == "smoothed-dual"
    check.certify(result).assert_holds()
    default = vfm.solve(market)
    assert default.solver == "schur-ipm" and POLISHED in default.message
    assert_same_prices(result.prices, default.prices)
    clarabel = vfm.solve(market, "clarabel")
    assert POLISHED in clarabel.message
    assert_same_prices(result.prices, clarabel.prices)


@pytest.mark.parametrize("tol", [None, 1e-6])
@pytest.mark.parametrize("shape", [*SMALL, SEVERAL_PERIODS])
def test_unpolished_answer_is_certified_to_tol(shape, tol):
    market = plain_market(*shape)
    options = {} if tol is None else {"tol": tol}
    result = vfm.solve(market, "smoothed-dual", polish=False, **options)
    assert result.status is Status.OPTIMAL, result.message
    assert POLISHED not in result.message
    assert tol is None or result.accuracy == tol
    check.certify(result).assert_holds()
    assert 0.0 <= result.relative_gap <= result.accuracy


@pytest.mark.parametrize("shape", [*SMALL, SEVERAL_PERIODS])
def test_the_backend_reports_the_exact_gap_of_its_point(shape):
    """The gap in the backend's message and status is `vfm.duality`'s gap of the point it returns."""
    market = plain_market(*shape)
    program = ScaledProgram.from_market(market)
    solution = SmoothedDualBackend().solve(program)
    assert solution.status is Status.OPTIMAL, solution.message
    exact = duality_gap(market, program.allocation(solution.x), program.prices(solution.prices))
    own = relative_gap(program, solution.x, solution.prices)
    assert own == pytest.approx(exact.total / market.budgets.sum(), rel=1e-3, abs=1e-12)
    assert 0.0 <= own <= solution.accuracy


ONE_BUYER_TWO_GOODS = VolatileFisherMarket.static([[10.0, 10.0]], [6.31977912444591], [5.2560350190880545, 1.0])


def test_one_buyer_split_between_two_goods_is_certified():
    result = vfm.solve(ONE_BUYER_TWO_GOODS, "smoothed-dual", polish=False)
    assert result.status is Status.OPTIMAL, result.message
    check.certify(result).assert_holds()


# A buyer split between two goods: the last stage's threshold (REFINED) must clear the market
# well enough that the answer's gap is within tol.
def test_one_buyer_split_between_two_goods_reaches_the_default_tol_in_the_backend():
    program = ScaledProgram.from_market(ONE_BUYER_TWO_GOODS)
    solution = SmoothedDualBackend().solve(program)
    assert solution.status is Status.OPTIMAL, solution.message
    assert relative_gap(program, solution.x, solution.prices) <= solution.accuracy


@given(markets())
@settings(max_examples=30)
def test_agrees_with_the_default_solver_on_generated_plain_markets(market):
    reference = vfm.solve(market)
    result = vfm.solve(market, "smoothed-dual", tol=1e-6)
    assert result.success, result.message
    check.certify(result).assert_holds()
    scale = max(float(market.budgets.sum()), abs(reference.objective))
    assert abs(result.objective - reference.objective) <= 1e-6 * scale
    if POLISHED in result.message and POLISHED in reference.message:
        assert_same_prices(result.prices, reference.prices)


@pytest.mark.parametrize("market", [
    # Buyer 0 values good 2 alone; nobody values good 3.
    pytest.param(VolatileFisherMarket.static(
        [[0.0, 0.0, 1.0, 0.0], [0.5, 0.2, 0.9, 0.0], [0.3, 0.8, 0.1, 0.0], [0.7, 0.4, 0.6, 0.0]],
        [1.0, 1.5, 2.0, 1.2]), id="single-utility-and-unvalued-good"),
    # Every buyer values one good only.
    pytest.param(VolatileFisherMarket.static(np.eye(3)[[0, 1, 2, 0]], [1.0, 2.0, 3.0, 4.0]), id="one-good-each"),
    pytest.param(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]), id="two-by-two"),
])
def test_degenerate_supports_solve(market):
    result = vfm.solve(market, "smoothed-dual")
    assert result.status is Status.OPTIMAL, result.message
    check.certify(result).assert_holds()
    assert_same_prices(result.prices, vfm.solve(market).prices)
    unvalued = ~(market.utilities > 0).any(axis=0)
    np.testing.assert_array_equal(result.prices[unvalued], 0.0)
    np.testing.assert_array_equal(result.allocation[:, unvalued], 0.0)
    # A buyer with a single valued good spends its whole budget on it.
    for buyer in np.flatnonzero((market.utilities > 0).sum(axis=(1, 2)) == 1):
        good = np.nonzero(market.utilities[buyer])
        spent = float((result.allocation[buyer][good] * result.prices[good]).sum())
        assert spent == pytest.approx(market.budgets[buyer], rel=1e-9)


def test_one_buyer_one_good_pays_its_budget():
    result = vfm.solve(VolatileFisherMarket.static([[3.0]], [2.5]), "smoothed-dual")
    assert result.status is Status.OPTIMAL, result.message
    assert result.prices[0, 0] == pytest.approx(2.5, rel=1e-12)
    assert result.allocation[0, 0, 0] == pytest.approx(1.0, rel=1e-12)


# --- the arrays the backend returns ----------------------------------------------------------------


def assert_cleared(program: ScaledProgram, solution) -> None:
    """Every good sold exactly, every budget spent exactly, at positive prices."""
    assert solution.x.shape == (program.n_entries,) and solution.prices.shape == (program.traded.size,)
    assert (solution.x >= 0).all() and (solution.prices > 0).all()
    sold = np.bincount(program.supply_row, solution.x, minlength=program.traded.size)
    np.testing.assert_allclose(sold, 1.0, rtol=0, atol=1e-12)
    spent = np.bincount(program.buyer, solution.x * solution.prices[program.supply_row],
                        minlength=program.market.n_buyers)
    np.testing.assert_allclose(spent, program.weights, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("shape", [*SMALL, SEVERAL_PERIODS])
def test_the_point_clears_every_good_and_spends_every_budget(shape):
    program = ScaledProgram.from_market(plain_market(*shape))
    solution = SmoothedDualBackend().solve(program)
    assert solution.status is Status.OPTIMAL, solution.message
    assert_cleared(program, solution)
    # Also where the solve stops early.
    stopped = SmoothedDualBackend().solve(program, max_iter=3)
    assert stopped.status is Status.ITERATION_LIMIT
    assert_cleared(program, stopped)


@pytest.mark.parametrize("tau", [1.0, 1e-3])  # the Hessian's dense and sparse rank-one terms
def test_newton_hessian_is_the_gradients_derivative(tau):
    program = ScaledProgram.from_market(plain_market(30, 12))
    engine = NumpyEngine(program)
    pairs = engine.pairs
    q = engine.start() + np.random.default_rng(5).normal(scale=0.1, size=engine.goods)

    def gradient(at: np.ndarray) -> np.ndarray:
        share = engine.smoothed(pairs, at, tau).share
        return np.exp(at) - np.bincount(pairs.good, pairs.budget * share, minlength=engine.goods)

    hessian = engine.hessian(pairs, q, engine.smoothed(pairs, q, tau).share, tau)
    h = 1e-4 * tau
    numeric = np.column_stack([(gradient(q + h * e) - gradient(q - h * e)) / (2 * h) for e in np.eye(engine.goods)])
    np.testing.assert_allclose(hessian, numeric, rtol=1e-5, atol=1e-6 * np.abs(hessian).max())
    np.linalg.cholesky(hessian)  # positive definite


# --- options ---------------------------------------------------------------------------------------


def test_options_are_accepted():
    market = plain_market(30, 12)
    result = vfm.solve(market, "smoothed-dual", tol=1e-6, max_iter=200, time_limit=30.0)
    assert result.status is Status.OPTIMAL, result.message
    assert result.accuracy == 1e-6 and 0 < result.iterations <= 200


def test_unknown_or_wrong_options_are_rejected_by_name():
    market = plain_market(30, 12)
    with pytest.raises(ValidationError, match=r"tolerance is not an option of solver='smoothed-dual'; "
                                              r"it takes: max_iter, time_limit, tol"):
        vfm.solve(market, "smoothed-dual", tolerance=1e-3)
    with pytest.raises(ValidationError, match=r"option time_limit=-1\.0 of solver='smoothed-dual' must be"):
        vfm.solve(market, "smoothed-dual", time_limit=-1.0)
    with pytest.raises(ValidationError, match=r"option max_iter=0 of solver='smoothed-dual' must be"):
        vfm.solve(market, "smoothed-dual", max_iter=0)


@pytest.mark.parametrize("polish", [False, True])
def test_max_iter_stops_with_a_readable_status(polish):
    market = plain_market(30, 12)
    result = vfm.solve(market, "smoothed-dual", polish=polish, max_iter=3)
    assert result.status is Status.ITERATION_LIMIT
    assert result.message.startswith("smoothed dual (numpy)") and "max_iter" in result.message
    assert POLISHED not in result.message
    assert 0 < result.iterations <= 3
    assert np.isfinite(result.allocation).all() and np.isfinite(result.prices).all()
    with pytest.raises(vfm.errors.SolverError, match="iteration_limit"):
        result.raise_for_status()


def test_time_limit_stops_after_a_stage():
    result = vfm.solve(plain_market(30, 12), "smoothed-dual", polish=False, time_limit=1e-9)
    assert result.status is Status.ITERATION_LIMIT
    assert "time_limit" in result.message
    assert np.isfinite(result.allocation).all() and np.isfinite(result.prices).all()


# --- the registry ----------------------------------------------------------------------------------


def _shaped(n: int, m: int, periods: int = 1, **extensions) -> VolatileFisherMarket:
    """A plain market of this shape (built, never solved), or one with `extensions`."""
    return VolatileFisherMarket(np.ones((n, m, periods)), **extensions)


def _names(market: VolatileFisherMarket) -> list[str]:
    return [backend.name for backend in registry.candidates(market)]


@pytest.mark.parametrize(("shape", "preferred"), [
    ((1000, 100, 1), True),
    ((2000, 20, 5), True),  # good-periods count, not goods
    ((1000, 100, 4), True),
    ((10_000, WIDE_GOODS - 1, 1), False),  # too few good-periods, however many buyers
    ((999, 100, 1), False),  # 99_900 pairs
    ((30, 12, 1), False),
])
def test_wide_plain_markets_prefer_the_smoothed_dual(shape, preferred):
    market = _shaped(*shape)
    n, m, periods = shape
    assert wide(market) is preferred
    assert preferred == (m * periods >= WIDE_GOODS and n * m * periods >= WIDE_PAIRS)
    names = _names(market)
    assert names[0] == ("smoothed-dual" if preferred else "schur-ipm")
    assert "smoothed-dual" in names
    if not preferred:  # after the interior points, in registry order
        assert names.index("smoothed-dual") > names.index("clarabel")


@pytest.mark.parametrize("extension", [
    {"caps": np.full((1000, 100, 1), 2.0)},
    {"base_utility": np.full(1000, 0.5)},
    {"utility_cap": np.full(1000, 50.0)},
])
def test_markets_with_extensions_never_get_the_smoothed_dual(extension):
    market = _shaped(1000, 100, **extension)
    assert not wide(market)
    assert not SmoothedDualBackend().capabilities.prefers(market)
    names = _names(market)
    assert names[0] == "schur-ipm"
    assert not {"smoothed-dual", "jax-smoothed-dual"} & set(names)


def test_a_named_smoothed_dual_refuses_an_extension():
    capped = VolatileFisherMarket.static([[1.0, 2.0]], caps=[[0.5, np.inf]])
    with pytest.raises(UnsupportedMarketError, match="solver='smoothed-dual' does not support caps"):
        vfm.solve(capped, "smoothed-dual")


def test_the_jax_backend_is_never_a_default_candidate():
    assert "smoothed-dual" in vfm.available_solvers()
    jax_installed = registry._REGISTRY["jax-smoothed-dual"].is_installed()
    assert ("jax-smoothed-dual" in vfm.available_solvers()) is jax_installed
    assert registry._REGISTRY["jax-smoothed-dual"].capabilities.by_default is False
    for market in (_shaped(1000, 100), _shaped(30, 12), plain_market(30, 12)):
        assert "jax-smoothed-dual" not in _names(market)


def test_prefers_only_what_the_backend_supports():
    eager = Capabilities(features=frozenset({"several_goods_per_period"}), preferred_when=lambda problem: True)
    assert eager.prefers(_shaped(3, 2))
    assert not eager.prefers(_shaped(3, 2, caps=np.full((3, 2, 1), 0.5)))
    assert not Capabilities().prefers(_shaped(3, 2))


def test_a_backend_off_by_default_runs_only_when_named(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    hidden = dataclasses.replace(registry._REGISTRY["clarabel"], name="hidden",
                                 capabilities=Capabilities(by_default=False))
    registry.register(hidden, preferred=True)
    market = plain_market(30, 12)
    assert vfm.available_solvers()[0] == "hidden"
    assert "hidden" not in _names(market)
    assert vfm.solve(market).solver == "schur-ipm"
    named = vfm.solve(market, "hidden")
    assert named.solver == "hidden" and named.status is Status.OPTIMAL, named.message


# --- the JAX engine --------------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [*SMALL, SEVERAL_PERIODS])
def test_jax_engine_gives_the_numpy_engines_answer(shape):
    pytest.importorskip("jax")
    market = plain_market(*shape)
    numpy_result = vfm.solve(market, "smoothed-dual")
    result = vfm.solve(market, "jax-smoothed-dual")
    assert result.status is Status.OPTIMAL, result.message
    assert result.solver == "jax-smoothed-dual" and POLISHED in result.message
    assert result.message.startswith("smoothed dual (jax)")
    assert_same_prices(result.prices, numpy_result.prices)
    unpolished = vfm.solve(market, "jax-smoothed-dual", polish=False)
    assert unpolished.status is Status.OPTIMAL, unpolished.message
    check.certify(unpolished).assert_holds()
    assert unpolished.relative_gap <= unpolished.accuracy


def test_jax_engine_returns_a_cleared_point_and_honours_max_iter():
    pytest.importorskip("jax")
    program = ScaledProgram.from_market(plain_market(30, 12))
    backend = registry._REGISTRY["jax-smoothed-dual"]
    solution = backend.solve(program)
    assert solution.status is Status.OPTIMAL, solution.message
    assert_cleared(program, solution)
    reference = SmoothedDualBackend().solve(program)
    assert_same_prices(solution.prices, reference.prices, rtol=1e-6)
    stopped = backend.solve(program, max_iter=3)
    assert stopped.status is Status.ITERATION_LIMIT and 0 < stopped.iterations <= 3
    assert_cleared(program, stopped)


@pytest.mark.parametrize("backend", ["smoothed-dual", "jax-smoothed-dual"])
def test_a_direct_call_with_an_unknown_option_is_refused_by_name(backend):
    if backend.startswith("jax"):
        pytest.importorskip("jax")
    from vfm.solvers import registry

    program = ScaledProgram.from_market(VolatileFisherMarket.static([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValidationError, match=rf"^bogus is not an option of solver='{backend}'; "
                                              r"it takes: max_iter, time_limit, tol"):
        registry.select(program.market, backend).solve(program, bogus=1)


def test_the_registry_asks_whether_jax_is_installed_without_importing_it():
    from vfm.utility.backend import jax_installed, jax_module

    assert jax_installed() is (jax_module() is not None)
    assert ("jax-smoothed-dual" in vfm.available_solvers()) is jax_installed()
