"""The backend registry: what is installed, what is chosen, and what a backend refuses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vfm
from vfm import Status, VolatileFisherMarket
from vfm.errors import UnknownSolverError, UnsupportedMarketError, ValidationError
from vfm.program import ScaledProgram
from vfm.solvers import Capabilities, CvxpyConicBackend, registry
from vfm.solvers.base import MARKET_FEATURES, PLANNING_FEATURES, check_options

NO_CAPS = Capabilities(features=MARKET_FEATURES - {"caps"})
NO_EFFICIENCY = Capabilities(problem="planning", features=PLANNING_FEATURES - {"efficiency"})


def test_fastest_backend_is_the_default_and_clarabel_is_installed():
    assert vfm.available_solvers()[0] == "schur-ipm"
    assert "clarabel" in vfm.available_solvers()
    assert registry.select(VolatileFisherMarket.static([[1.0]])).name == "schur-ipm"


def test_default_solve_falls_back_when_a_backend_does_not_certify(limited_backend):
    class Stalling:
        name = "stalling"
        capabilities = Capabilities()

        def is_installed(self):
            return True

        def solve(self, program, **options):
            return registry._REGISTRY["clarabel"].solve(program, max_iter=1)

    registry.register(Stalling(), preferred=True)
    result = vfm.solve(VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    assert result.success and result.solver == "limited"
    assert "tried first: stalling ended 'iteration_limit'" in result.message


def test_options_need_a_named_solver():
    with pytest.raises(ValidationError, match=r"solver options \(max_iter\) belong to one backend"):
        vfm.solve(VolatileFisherMarket.static([[1.0]]), max_iter=5)


def test_backend_declares_what_it_lacks():
    capped = VolatileFisherMarket.static([[1.0, 1.0]], caps=[[0.5, np.inf]], base_utility=[1.0])
    limited = Capabilities(features=frozenset({"utility_cap"}))
    assert limited.unsupported(capped) == ["base_utility", "caps", "several_goods_per_period"]
    assert Capabilities().unsupported(capped) == []
    assert Capabilities().features == MARKET_FEATURES
    assert Capabilities(problem="planning").features == PLANNING_FEATURES


def test_each_problem_states_its_kind_and_features():
    full = VolatileFisherMarket.static([[1.0, 1.0]], caps=[[0.5, np.inf]], base_utility=[1.0], utility_cap=[9.0])
    assert full.problem_kind == "market" and full.features == MARKET_FEATURES
    assert VolatileFisherMarket.static([[1.0]]).features == frozenset()
    window = _window(0.01)
    assert window.problem_kind == "planning" and window.features == {"efficiency"}
    assert "efficiency" not in _window().features


def test_capabilities_refuse_a_feature_of_another_problem_type():
    with pytest.raises(ValueError, match="efficiency is not a feature of market problems"):
        Capabilities(features=frozenset({"caps", "efficiency"}))


@pytest.fixture
def limited_backend():
    clarabel = registry._REGISTRY["clarabel"]
    backend = dataclasses.replace(clarabel, name="limited", capabilities=NO_CAPS)
    saved = dict(registry._REGISTRY)
    registry.register(backend, preferred=True)
    yield backend
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_default_skips_a_backend_that_cannot_handle_the_market(limited_backend):
    plain = VolatileFisherMarket.static([[1.0]])
    capped = VolatileFisherMarket.static([[1.0]], caps=[[0.5]])
    assert registry.select(plain).name == "limited"
    assert registry.select(capped).name == "schur-ipm"
    with pytest.raises(UnsupportedMarketError, match="solver='limited' does not support caps"):
        vfm.solve(capped, "limited")


def test_known_but_missing_solver_is_reported():
    missing = CvxpyConicBackend("nowhere", "NOT_A_CVXPY_SOLVER")
    saved = dict(registry._REGISTRY)
    registry.register(missing)
    try:
        assert "nowhere" not in vfm.available_solvers()
        with pytest.raises(UnknownSolverError, match="known but not installed"):
            vfm.solve(VolatileFisherMarket.static([[1.0]]), "nowhere")
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved)


# --- planning programs: the same registry, another problem type -----------------------------------


def _window(efficiency: float = 0.0):
    from vfm.planner import PlanningProgram

    return PlanningProgram(progress=np.full((1, 2, 3), 0.1), base=np.zeros(2), budgets=np.ones(2),
                           gpus=np.ones(2), capacity=np.ones(3), round_s=60.0, remaining_s=np.full(2, 600.0),
                           efficiency=efficiency)


def test_planning_backends_live_in_the_same_registry():
    assert registry.available_solvers("planning") == ("saa-ipm", "cvxpy")
    assert registry.select(_window()).name == "saa-ipm"
    assert registry.select(_window(), "cvxpy").capabilities.problem == "planning"
    # A backend of one problem type refuses the other, naming it.
    with pytest.raises(UnknownSolverError, match="'schur-ipm' is not a vfm planning backend"):
        registry.select(_window(), "schur-ipm")
    assert Capabilities().unsupported(_window()) == ["planning problems (it solves market problems)"]
    with pytest.raises(UnknownSolverError, match="'saa-ipm' is not a vfm market backend"):
        vfm.solve(VolatileFisherMarket.static([[1.0]]), "saa-ipm")


def test_plan_skips_a_planning_backend_that_lacks_a_feature():
    from vfm.forecast import JobStates
    from vfm.planner import plan

    saved = dict(registry._REGISTRY)
    cvxpy_backend = registry._REGISTRY["cvxpy"]
    limited = dataclasses.replace(cvxpy_backend, name="no-efficiency",
                                  capabilities=NO_EFFICIENCY)
    try:
        registry.register(limited, preferred=True)
        states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}])
        assert plan(states, [1, 1], 1, rounds=3).solver == "no-efficiency"
        assert plan(states, [1, 1], 1, rounds=3, efficiency=0.01).solver == "saa-ipm"
        assert NO_EFFICIENCY.unsupported(_window(0.01)) == ["efficiency"]
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved)


def test_a_planning_backend_refuses_an_option_it_does_not_declare_as_the_registry_does():
    for name in registry.available_solvers("planning"):
        backend = registry.select(_window(), name)
        kinds = backend.capabilities.option_kinds()
        assert kinds is not None and {"tol", "deadline"} <= set(kinds), name
        with pytest.raises(ValidationError, match=rf"^max_iter is not an option of solver='{name}'; it takes: "):
            backend.solve(_window(), tol=1e-8, max_iter=5)
        with pytest.raises(ValidationError, match=rf"^max_iter is not an option of solver='{name}'"):
            check_options(backend, {"max_iter": 5})
        with pytest.raises(ValidationError, match=rf"^option tol=2\.0 of solver='{name}' must be"):
            backend.solve(_window(), tol=2.0)


def test_a_planning_backend_takes_a_warm_start_if_and_only_if_it_declares_one():
    saa_ipm, cvxpy = (registry.select(_window(), name) for name in ("saa-ipm", "cvxpy"))
    assert saa_ipm.capabilities.declares("warm_start") and saa_ipm.capabilities.declares("deadline")
    assert not cvxpy.capabilities.declares("warm_start") and cvxpy.capabilities.declares("deadline")
    assert not Capabilities(problem="planning").declares("warm_start")  # declares nothing
    start = np.zeros(_window().shape[1:])
    assert saa_ipm.solve(_window(), tol=1e-8, warm_start=start).status == Status.OPTIMAL
    with pytest.raises(ValidationError, match=r"^warm_start is not an option of solver='cvxpy'; it takes: deadline, "
                                              r"tol"):
        cvxpy.solve(_window(), tol=1e-8, warm_start=start)


# --- option declarations: one check for every backend ---------------------------------------------


def test_every_market_backend_refuses_an_undeclared_option_on_a_direct_call_naming_it():
    program = ScaledProgram.from_market(VolatileFisherMarket.static([[1.0, 2.0], [2.0, 1.0]]))
    for name in vfm.available_solvers():
        backend = registry._REGISTRY[name]
        with pytest.raises(ValidationError, match=rf"^bogus is not an option of solver='{name}'; it takes: "):
            backend.solve(program, bogus=1)
        with pytest.raises(ValidationError, match=rf"^option max_iter=0 of solver='{name}' must be"):
            backend.solve(program, max_iter=0)


def test_every_market_backend_declares_its_options_with_tol_and_max_iter():
    for name in vfm.available_solvers():
        kinds = registry._REGISTRY[name].capabilities.option_kinds()
        assert kinds is not None, name
        assert kinds["tol"] == "tolerance" and kinds["max_iter"] == "count", name


def test_undeclared_options_are_passed_on_unchecked(limited_backend):
    assert limited_backend.capabilities.options is None
    check_options(limited_backend, {"anything": object()})
    result = vfm.solve(VolatileFisherMarket.static([[1.0]]), "limited", tol_gap_rel=1e-9, tol_feas=1e-9)
    assert result.success and result.accuracy == 1e-9


@pytest.mark.parametrize(("kind", "good", "bad"), [
    ("tolerance", [1e-12, 0.5, np.float32(1e-3)], [0, 1, -1e-9, float("nan"), float("inf"), "1e-6", True, None]),
    ("count", [1, np.int64(10)], [0, -1, 1.0, True, "3", None]),
    ("seconds", [0.5, 3, float("inf")], [0, -1.0, float("nan"), "1", False]),
    ("flag", [True, False], [0, 1, "yes", None]),
    ("instant", [0.0, 12.5, -3, float("inf")], [float("nan"), "1", None, True]),
])
def test_option_kinds(kind, good, bad):
    backend = dataclasses.replace(registry._REGISTRY["schur-ipm"], capabilities=Capabilities(options=(("x", kind),)))
    for value in good:
        check_options(backend, {"x": value})
    for value in bad:
        with pytest.raises(ValidationError, match=r"option x=.* of solver='schur-ipm' must be"):
            check_options(backend, {"x": value})


def test_prepare_warms_the_backend_a_solve_would_use_first(monkeypatch):
    prepared = []

    class Warming:
        name = "warming"
        capabilities = Capabilities(problem="planning")

        def is_installed(self):
            return True

        def prepare(self):
            prepared.append(self.name)

    monkeypatch.setattr(registry, "_REGISTRY", dict(registry._REGISTRY))
    registry.register(Warming(), preferred=True)
    registry.prepare("planning")  # the default: the preferred one
    registry.prepare("planning", "WARMING")  # named, in any case
    registry.prepare("planning", "no-such-backend")  # left to the solve to report
    registry.prepare("market", "warming")  # not a market backend
    assert prepared == ["warming", "warming"]
