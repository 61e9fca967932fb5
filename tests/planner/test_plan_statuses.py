"""`vfm.planner.plan`'s statuses never lie: hostile inputs are refused naming the argument, and a plan
is `Status.OPTIMAL` or `Status.INACCURATE` only with a finite bound, objectives and prices and a
schedule within capacity; the polish and the window are bounded in steps, time and rounds."""

from __future__ import annotations

import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.forecast import JobStates
from vfm.limits import MAX_WINDOW_ROUNDS
from vfm.planner import JobTerms, PlanOptions, plan
from vfm.solvers import Solution

SERVED = (Status.OPTIMAL, Status.INACCURATE)


def _states(n: int = 3) -> JobStates:
    return JobStates.from_lists([10] * n, [{32: 60.0 + 10 * i} for i in range(n)])


def _honest(result, gpus, capacity) -> None:
    """What a served status promises."""
    if result.status not in SERVED:
        return
    assert np.isfinite(result.bound) and np.isfinite(result.relaxed_objective), result.message
    assert np.isfinite(result.prices).all() and np.isfinite(result.relaxed).all(), result.message
    assert not np.isnan(result.rounded_objective) and result.rounded_objective != np.inf
    used = np.asarray(gpus, dtype=float) @ result.schedule
    assert np.all(used <= np.broadcast_to(capacity, used.shape) + 1e-9), (used, result.message)


# --- boundary checks ---------------------------------------------------------------------------------


def test_budgets_whose_sum_overflows_are_refused():
    with pytest.raises(ValidationError, match="budgets must sum to at most 1e"):
        plan(_states(), gpus=[1, 1, 2], capacity=2, rounds=4, terms=JobTerms(budgets=[1e308] * 3))
    with pytest.raises(ValidationError, match="budgets must sum to at most 1e"):  # with FTF: 1e308 times 1e4
        plan(_states(1), gpus=[1], capacity=1, rounds=1, terms=JobTerms(budgets=[1e308], fair_finish_s=[1.0]))


@pytest.mark.parametrize("bad, match", [
    (np.full((3, 4), np.nan), r"warm_start contains NaN"),
    (np.zeros((3, 5)), r"warm_start must have shape \(3, 4\), \(n, rounds\)"),
    (np.zeros(12), r"warm_start must have shape \(3, 4\), \(n, rounds\)"),
    (np.full((3, 4), -0.5), r"warm_start\[0, 0\] must be a fraction of a round in \[0, 1\], got -0.5"),
    (np.full((3, 4), np.inf), r"warm_start contains an infinite value"),
])
def test_a_bad_warm_start_is_refused_naming_it(bad, match):
    with pytest.raises(ValidationError, match=match):
        plan(_states(), gpus=[1, 1, 2], capacity=2, rounds=4, warm_start=bad)


def test_rounds_has_an_upper_bound():
    assert PlanOptions(rounds=MAX_WINDOW_ROUNDS).rounds == MAX_WINDOW_ROUNDS
    with pytest.raises(ValidationError, match=f"rounds must be at most {MAX_WINDOW_ROUNDS}"):
        PlanOptions(rounds=100_000)
    with pytest.raises(ValidationError, match="rounds must be at most"):
        plan(_states(), gpus=[1, 1, 2], capacity=2, rounds=MAX_WINDOW_ROUNDS + 1)


@pytest.mark.parametrize("value", [0, -1.0, float("nan"), float("inf"), "1", True])
def test_time_limit_s_is_a_positive_finite_number_or_none(value):
    assert PlanOptions(time_limit_s=None).time_limit_s is None and PlanOptions(time_limit_s=0.5).time_limit_s == 0.5
    with pytest.raises(ValidationError, match="time_limit_s must be a finite number of seconds > 0 or None"):
        PlanOptions(time_limit_s=value)


# --- statuses --------------------------------------------------------------------------------------


def test_a_fresh_job_gets_its_round_rather_than_an_infinite_loss():
    """Two jobs, one GPU, one round, FTF targets: the late job's priority weight (1e4) leaves the
    fresh job a sliver of the round that the rounding read as 0, and the rounded objective was -inf
    under OPTIMAL; the fresh job is owed its first round."""
    states = JobStates.from_lists([1, 18], [{32: 50.0}, {32: 50.0}], observed=[[], [32] * 12])
    result = plan(states, gpus=[1, 1], capacity=1, rounds=1, terms=JobTerms(fair_finish_s=[1858.0, 133.0]))
    assert result.status == Status.OPTIMAL
    assert np.isfinite(result.rounded_objective) and result.schedule[0, 0], result.schedule


def test_the_time_limit_gives_a_status_that_is_not_optimal():
    states = _states(6)
    result = plan(states, gpus=[1] * 6, capacity=2, rounds=6, time_limit_s=1e-9)
    assert result.status == Status.ITERATION_LIMIT
    assert result.message.startswith("time limit of 1e-09 s reached in forecast"), result.message
    assert plan(states, gpus=[1] * 6, capacity=2, rounds=6, time_limit_s=60.0).status == Status.OPTIMAL


def test_the_time_limit_stops_the_interior_point(monkeypatch):
    import vfm.planner.solve.backends as backends
    from vfm.planner.program import PlanningProgram
    from vfm.planner.solve.ipm import solve_saa_ipm

    program = PlanningProgram(progress=np.array([[[0.2, 0.2, 0.1], [0.1, 0.3, 0.3]]]), base=np.array([0.1, 0.0]),
                              budgets=np.ones(2), gpus=np.ones(2), capacity=np.ones(3), round_s=60.0,
                              remaining_s=np.array([300.0, 200.0]), spread=0.1)
    stopped = solve_saa_ipm(program, tol=1e-9, deadline=time.perf_counter() - 1.0)
    assert stopped.status == Status.ITERATION_LIMIT and "reached its time limit after 0 iterations" in stopped.message

    def late(program, deadline=None, **options):  # the solve starts after the limit has passed
        time.sleep(0.05)
        return solve_saa_ipm(program, deadline=deadline, **options)

    monkeypatch.setattr(backends, "solve_saa_ipm", late)
    result = plan(_states(4), gpus=[1] * 4, capacity=2, rounds=5, time_limit_s=0.04)
    assert result.status == Status.ITERATION_LIMIT, result.message
    assert result.message.startswith("time limit of 0.04 s reached in solve"), result.message


def test_a_plan_cut_short_by_its_time_limit_runs_nothing_and_says_it_once():
    result = plan(_states(6), gpus=[1] * 6, capacity=2, rounds=6, time_limit_s=1e-9)
    assert result.status == Status.ITERATION_LIMIT and not result.schedule.any()
    assert result.message.count("time limit of 1e-09 s") == 1, result.message


def test_with_a_time_limit_only_the_first_backend_is_tried(monkeypatch):
    """The reference backend's model building cannot stop at a deadline: after saa-ipm stops short
    of it, it is not started (it would take seconds at scale), whatever time is left."""
    import vfm.planner.solve.backends as backends

    def short(program, deadline=None, **options):  # stops early, before its deadline
        return Solution(None, None, Status.ITERATION_LIMIT, "saa-ipm stopped (stub)", 0, 0.0, float("nan"))

    def unbounded(program, **options):
        pytest.fail("a second backend was tried under a time limit")

    monkeypatch.setattr(backends, "solve_saa_ipm", short)
    monkeypatch.setattr(backends, "solve_saa_cvxpy", unbounded)
    result = plan(_states(4), gpus=[1] * 4, capacity=2, rounds=5, time_limit_s=30.0)
    assert result.status == Status.ITERATION_LIMIT and "saa-ipm stopped (stub)" in result.message


def test_a_backend_that_says_infeasible_is_followed_by_the_others(monkeypatch):
    """`PlanOptions.solver` names the backend tried first; the others are tried when it fails, an
    'infeasible' on a program that is feasible included."""
    import vfm.planner.solve.backends as backends

    def infeasible(program, **options):
        return Solution(None, None, Status.INFEASIBLE, "cvxpy/CLARABEL infeasible (stub)", 0, 0.0, 1e-9)

    monkeypatch.setattr(backends, "solve_saa_cvxpy", infeasible)
    result = plan(_states(), gpus=[1, 1, 2], capacity=2, rounds=4, solver="cvxpy")
    assert result.status == Status.OPTIMAL and result.solver == "saa-ipm", result.message
    assert "after cvxpy: cvxpy/CLARABEL infeasible (stub)" in result.message
    assert result.schedule.any()


def test_a_non_finite_answer_is_an_error(monkeypatch):
    import vfm.planner.solve.backends as backends

    def nan_prices(program, tol=1e-9, warm_start=None, **options):
        n, goods = program.shape[1:]
        return Solution(np.full((n, goods), 0.5), np.full(goods, np.nan), Status.OPTIMAL, "stub", 1, 0.0, tol,
                        gap=0.0, relative_gap=0.0)

    monkeypatch.setattr(backends, "solve_saa_ipm", nan_prices)
    monkeypatch.setattr(backends, "solve_saa_cvxpy", nan_prices)
    result = plan(_states(), gpus=[1, 1, 2], capacity=2, rounds=4, polish=False)
    assert result.status == Status.ERROR and "not usable: a price is nan" in result.message


# --- the polish's bounds ---------------------------------------------------------------------------


def test_a_polish_that_does_not_converge_stops_at_its_step_limit(monkeypatch):
    """A window whose polish does not converge: with no time limit the polish stops at its step
    limit, whatever the time its steps take (no wall-clock budget: the outcome does not depend on
    the machine's load), and the backend's answer is kept with its status."""
    from vfm.planner.solve import polish as polish_module

    real_newton = polish_module._newton
    seen: list[float | None] = []

    def stubborn(data, duals, start, max_steps, deadline):  # never converges: every step is slow
        seen.append(deadline)
        y, found_duals, steps, _, _ = real_newton(data, duals, start, 0, None)
        while steps < max_steps:
            time.sleep(0.002)
            steps += 1
        return y, found_duals, steps, 1.0, f"its limit of {max_steps} steps"

    monkeypatch.setattr(polish_module, "_newton", stubborn)
    result = plan(_states(7), gpus=[1] * 7, capacity=3, rounds=6)
    assert result.status == Status.OPTIMAL and "not polished: the polish stopped" in result.message, result.message
    assert seen and all(deadline is None for deadline in seen)  # no deadline of its own
    limited = plan(_states(7), gpus=[1] * 7, capacity=3, rounds=6, time_limit_s=30.0)
    assert limited.status == Status.OPTIMAL and seen[-1] is not None  # the caller's limit is passed on


def test_polish_max_steps_is_bounded():
    from vfm.planner.solve.polish import MAX_STEPS

    assert MAX_STEPS <= 20


# --- properties over hostile inputs ------------------------------------------------------------------


@st.composite
def hostile(draw):
    n = draw(st.integers(1, 4))
    rounds = draw(st.integers(1, 3))
    totals = draw(st.lists(st.integers(1, 30), min_size=n, max_size=n))
    done = [draw(st.integers(0, t - 1)) for t in totals]
    seconds = draw(st.lists(st.floats(1e-2, 1e4), min_size=n, max_size=n))
    states = JobStates.from_lists(totals, [{32: s} for s in seconds], observed=[[32] * d for d in done])
    gpus = draw(st.lists(st.integers(1, 3), min_size=n, max_size=n))
    scale = draw(st.sampled_from([1.0, 2.0, 1e3, 1e12, 1e300]))
    capacity = float(max(gpus)) * scale
    budgets = draw(st.none() | st.lists(st.sampled_from([1e-300, 1e-8, 1.0, 1e8, 1e300, 1e308]), min_size=n,
                                        max_size=n))
    targets = draw(st.none() | st.lists(st.floats(1.0, 1e5), min_size=n, max_size=n))
    warm = draw(st.none() | st.sampled_from(["nan", "inf", "negative", "shape", "fine"]))
    return states, gpus, capacity, rounds, budgets, targets, warm


def _warm_start(kind, n, rounds):
    return {None: None, "nan": np.full((n, rounds), np.nan), "inf": np.full((n, rounds), np.inf),
            "negative": np.full((n, rounds), -1.0), "shape": np.zeros((n + 1, rounds)),
            "fine": np.full((n, rounds), 0.5)}[kind]


@settings(max_examples=40, deadline=None)
@given(hostile(), st.sampled_from([None, "cvxpy"]))
def test_hostile_plans_are_refused_or_honest(case, solver):
    states, gpus, capacity, rounds, budgets, targets, warm = case
    n = states.n_jobs
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = plan(states, gpus, capacity, rounds=rounds, terms=JobTerms(budgets=budgets, fair_finish_s=targets),
                          warm_start=_warm_start(warm, n, rounds), solver=solver)
    except ValidationError as error:
        assert any(name in str(error) for name in ("budgets", "warm_start", "fair_finish_s", "gpus", "epochs")), error
        return
    assert warm in (None, "fine")
    _honest(result, gpus, capacity)
