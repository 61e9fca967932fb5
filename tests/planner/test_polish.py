"""The polish: each backend's schedule taken to the window program's exact optimum."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.planner import PlanningProgram, PlanOptions
from vfm.planner.options import STRICT_TOL
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm import solve_saa_ipm
from vfm.planner.solve.polish import RESIDUAL, lagrangian_minimizer, polish, supports
from vfm.planner.solve.scaled_program import scale_program


def _program(seed: int, jobs: int = 14, rounds: int = 8, scenarios: int = 1) -> PlanningProgram:
    """Jobs competing for 6 GPUs with FTF limits that bind for some and the efficiency term."""
    rng = np.random.default_rng(seed)
    remaining = rng.uniform(200.0, 3000.0, jobs)
    return PlanningProgram(
        progress=rng.uniform(0.01, 0.08, (scenarios, jobs, rounds)), base=rng.uniform(0.0, 0.5, jobs),
        budgets=rng.uniform(0.5, 2.0, jobs), gpus=rng.choice([1.0, 2.0], jobs), capacity=np.full(rounds, 6.0),
        round_s=60.0, remaining_s=remaining, efficiency=0.002,
        leftover_limit_s=remaining - rng.uniform(0.0, 120.0, jobs), spread=0.1)


@pytest.mark.parametrize("seed", range(4))
def test_both_backends_polish_to_the_same_certified_schedule(seed):
    program = _program(seed)
    assert supports(program) is None
    fast, reference = solve_saa_ipm(program, tol=1e-9), solve_saa_cvxpy(program)
    a, b = polish(program, fast), polish(program, reference)
    assert "; polished to residual" in a.message and "; polished to residual" in b.message
    # Before: the backends' tolerances apart; after: the same schedule to rounding (module docstring:
    # a residual of RESIDUAL moves y by about RESIDUAL / min sigma).
    sigma = scale_program(program)[0].spread.min()
    assert np.abs(a.x - b.x).max() <= 100 * RESIDUAL / sigma
    assert np.abs(a.x - b.x).max() < np.abs(fast.x - reference.x).max()
    for polished, backend in ((a, fast), (b, reference)):
        assert polished.status == backend.status
        assert (polished.x >= 0).all() and (polished.x <= 1).all()
        assert program.capacity_excess(polished.x) <= 1e-9
        # The certificate is for the objective without the tie-breaking term (as the backends'):
        # the same bound from the same optimum, whichever backend the polish started from.
        assert 0 <= polished.gap <= fast.gap + 1e-6 * (1 + abs(program.objective(polished.x)))
        assert np.isnan(polished.relative_gap)


def _random_multipliers(program_seed: int, jobs: int, seed: int):
    """A random program's solver data, random capacity prices and row multipliers, and the generator."""
    program = _program(program_seed, jobs=jobs)
    rng = np.random.default_rng(seed)
    return scale_program(program)[0], rng.uniform(0.0, 0.05, program.shape[2]), rng.uniform(0.0, 0.01, jobs), rng


def test_the_lagrangian_minimizer_is_exact():
    data, prices, rows, _ = _random_multipliers(7, 30, 1)
    y, utility, free = lagrangian_minimizer(data, prices, rows)
    a = data.progress[:, 0, :]
    assert np.allclose(utility, data.base[:, 0] + (a * y).sum(axis=1), rtol=1e-14, atol=0)
    assert ((y >= 0) & (y <= data.upper[None, :])).all() and (y[~data.active] == 0).all()
    # Stationarity on the entries inside the box; the sign of the gradient at the bounds.
    gradient = data.spread[:, None] * y - (data.budgets / utility)[:, None] * a + data.g * prices[None, :] \
        - rows[:, None] * data.pace
    assert np.abs(gradient[free]).max() <= 1e-15 * max(1.0, np.abs(gradient).max()) + 1e-17
    assert (gradient[data.active & ~free & (y == 0)] >= -1e-15).all()
    assert (gradient[data.active & ~free & (y > 0)] <= 1e-15).all()


def test_the_start_matches_each_jobs_multiplier_to_the_backends_progress_within_its_trust_region():
    from vfm.planner.solve.polish import _MATCH, _MATCH_TRUST, _matched

    data, prices, rows, rng = _random_multipliers(7, 30, 2)
    rows = np.where(data.constrained | data.efficient, rng.uniform(5e-4, 5e-3, rows.size), 0.0)
    # The backend's schedule: the minimizer at multipliers moved inside the trust region for some
    # jobs and outside it for others.
    factor = np.ones_like(rows)
    inside, outside = np.arange(0, 30, 3), np.arange(1, 30, 6)
    factor[inside] = 1.0 + rng.choice([-1.0, 1.0], inside.size) * rng.uniform(0.3, 0.9, inside.size) * _MATCH_TRUST
    factor[outside] = 1.0 + 4 * _MATCH_TRUST
    y, _, _ = lagrangian_minimizer(data, prices, rows)
    x, _, _ = lagrangian_minimizer(data, prices, rows * factor)
    matched = _matched(data, prices, rows, np.zeros(data.shared.shape), y, x)

    def progress(schedule):
        return (data.pace * schedule).sum(axis=1)

    target, start = progress(x), progress(y)
    moved = np.abs(start - target) > _MATCH
    assert moved[inside].sum() >= 3 and moved[outside].sum() >= 2  # the example exercises both
    reached, _, _ = lagrangian_minimizer(data, prices, matched)
    matched_jobs = inside[moved[inside]]
    np.testing.assert_allclose(progress(reached)[matched_jobs], target[matched_jobs], rtol=0, atol=1e-12)
    assert (matched[outside] == rows[outside]).all()  # beyond the trust region: left to the Newton steps
    assert (matched[~moved] == rows[~moved]).all()



def test_a_binding_ftf_row_whose_job_sits_at_its_bounds_is_settled_where_its_slack_is_0():
    from vfm.planner.solve.polish import _Duals, _rows, _settled
    from vfm.planner.solve.polish_system import slopes

    data, prices, rows, _ = _random_multipliers(7, 30, 4)
    flat = np.array([0, 1])
    ftf = np.where(data.constrained, rows, 0.0)
    ftf[flat] = 10.0  # every entry of jobs 0 and 1 at its upper bound: their rows' curvature is 0
    efficiency = np.where(data.efficient & ~data.constrained, rows, 0.0)

    def progress(multipliers):
        y, _, free = lagrangian_minimizer(data, prices, multipliers + efficiency)
        return (data.pace * y).sum(axis=1), free

    top, free = progress(ftf)
    assert not free[flat].any() and data.constrained[flat].all()
    at_zero, _ = progress(np.where(np.isin(np.arange(ftf.size), flat), 0.0, ftf))
    assert at_zero[1] > 0
    # Job 0's floor just below its progress (it binds, at the slack the polish met on the 900-job
    # trace); job 1's below its progress at multiplier 0 (the row's multiplier side is its answer).
    floor = data.floor.copy()
    floor[flat] = top[0] - 1e-5, 0.5 * at_zero[1]
    data = replace(data, floor=floor)
    duals = _Duals(prices, ftf, efficiency, 0.0, np.zeros(data.shared.shape))
    found = lagrangian_minimizer(data, prices, ftf + efficiency)
    multipliers, slack = _rows(data, duals, found[0])
    result = _settled(data, duals, found, multipliers, slack,
                      np.abs(slopes(data, found[1], found[2]).diagonal(data)))
    assert result is not None
    settled, (y, _, free) = result
    reached = (data.pace * y).sum(axis=1)
    assert 0 < settled.ftf[0] < 10.0 and abs(reached[0] - floor[0]) <= 1e-12 and free[0].any()
    assert settled.ftf[1] == 0.0
    others = np.arange(2, ftf.size)
    assert (settled.ftf[others] == ftf[others]).all() and (y[others] == found[0][others]).all()
    assert settled.prices is prices and (settled.efficiency == efficiency).all()

def test_the_slopes_are_the_slacks_derivative():
    from vfm.planner.solve.polish import _Duals, _rows
    from vfm.planner.solve.polish_system import NewtonMatrix, slopes

    program = _program(5, jobs=20)
    data, _ = scale_program(program)
    rng = np.random.default_rng(3)
    n = program.shape[1]
    duals = _Duals(rng.uniform(0.0, 0.05, program.shape[2]), np.where(data.constrained, rng.uniform(0, 0.01, n), 0),
                   np.where(data.efficient, rng.uniform(0, 0.01, n), 0), 0.5, np.zeros(data.shared.shape))

    def slack(point):
        y, _, _ = lagrangian_minimizer(data, point.prices, point.ftf + point.efficiency)
        return _rows(data, point, y)[1]

    _, utility, free = lagrangian_minimizer(data, duals.prices, duals.ftf + duals.efficiency)
    size = slack(duals).size
    matrix = NewtonMatrix(data, slopes(data, utility, free), np.ones(size), np.zeros(size))
    direction, h = rng.standard_normal(size), 1e-7
    central = (slack(duals.moved(direction, h, data)) - slack(duals.moved(direction, -h, data))) / (2 * h)
    np.testing.assert_allclose(matrix.times(direction), central, rtol=1e-6, atol=1e-6 * np.abs(central).max())


def test_the_newton_systems_elimination_solves_it():
    from vfm.planner.solve.polish_system import slopes

    data, prices, rows, rng = _random_multipliers(3, 20, 2)
    _, utility, free = lagrangian_minimizer(data, prices, rows)
    # Some rows of every kind bind, with both of a job's rows.
    assert_the_elimination_solves(data, slopes(data, utility, free), 0.7, rng)


def assert_the_elimination_solves(data, derivative, share: float, rng) -> None:
    """The Newton matrix of `derivative` with a random `share` of its rows binding: its solve by
    elimination against a dense solve of the matrix assembled column by column."""
    from vfm.planner.solve.polish_system import NewtonMatrix

    size = derivative.diagonal(data).size
    binding = rng.random(size) < share
    system = NewtonMatrix(data, derivative, binding / np.maximum(np.abs(derivative.diagonal(data)), 1.0),
                          (~binding) + rng.uniform(1e-3, 1e-2, size))
    matrix = np.column_stack([system.times(column) for column in np.eye(size)])
    rhs = rng.standard_normal(size)
    solve = system.factored()
    assert solve is not None
    step = solve(rhs)
    # Backward error of a solve by elimination, in units of the matrix's rounding.
    assert np.abs(matrix @ step - rhs).max() <= 1e-10 * np.abs(matrix).max() * np.abs(step).max()
    np.testing.assert_allclose(step, np.linalg.solve(matrix, rhs), rtol=1e-8, atol=1e-10 * np.abs(step).max())


def test_a_program_it_does_not_apply_to_keeps_the_backends_answer_and_says_why():
    program = _program(0, scenarios=2)
    solution = solve_saa_ipm(program, tol=1e-8)
    kept = polish(program, solution)
    assert kept.x is solution.x and kept.message.endswith("not polished: it has several scenarios")


def test_a_polish_that_stops_early_keeps_the_backends_answer(monkeypatch):
    from vfm.planner.solve import polish as module

    monkeypatch.setattr(module, "MAX_STEPS", 0)
    program = _program(1)
    solution = solve_saa_ipm(program, tol=1e-9)
    kept = polish(program, solution)
    assert kept.x is solution.x and "not polished: the polish stopped at residual" in kept.message


def test_the_option_must_be_a_bool():
    assert PlanOptions(polish=True).polish
    with pytest.raises(ValidationError, match="polish must be True or False, got 'yes'"):
        PlanOptions(polish="yes")


def _window():
    """A small plan window: 12 jobs with 1 or 2 GPUs each on 6 GPUs."""
    from vfm.forecast import JobStates

    rng = np.random.default_rng(3)
    jobs = 12
    totals = rng.integers(20, 60, jobs)
    regimes = [{32: float(seconds), 64: float(seconds) / 1.8} for seconds in rng.uniform(20.0, 90.0, jobs)]
    observed = [[32] * int(done) for done in rng.integers(0, 10, jobs)]
    return JobStates.from_lists(totals, regimes, observed), rng.choice([1, 2], jobs), 6.0


def _recording_tolerances(monkeypatch):
    """The tolerances `plan` asks of the backends, in order, as (backend, tol)."""
    from vfm.planner.solve.backends import SaaCvxpyBackend, SaaIpmBackend

    asked = []
    for backend in (SaaIpmBackend, SaaCvxpyBackend):
        def recording(self, program, *, tol, solve=backend.solve, **options):
            asked.append((self.name, tol))
            return solve(self, program, tol=tol, **options)

        monkeypatch.setattr(backend, "solve", recording)
    return asked


@pytest.mark.parametrize(("options", "expected", "polished"), [
    ({}, [("saa-ipm", 1e-7)], True), ({"solver": "cvxpy"}, [("cvxpy", STRICT_TOL)], True),
    ({"scenarios": 4}, [("saa-ipm", STRICT_TOL)], False), ({"polish": False}, [("saa-ipm", STRICT_TOL)], False),
    ({"spread": 0.0}, [("saa-ipm", STRICT_TOL)], False), ({"tol": 1e-8}, [("saa-ipm", 1e-8)], True),
    ({"tol": 1e-8, "scenarios": 4}, [("saa-ipm", 1e-8)], False)])
def test_the_backend_stops_early_by_default_only_where_the_polish_finishes(monkeypatch, options, expected, polished):
    from vfm.planner import plan

    asked = _recording_tolerances(monkeypatch)
    states, gpus, capacity = _window()
    result = plan(states, gpus, capacity, rounds=8, **options)
    assert asked == expected
    assert ("; polished to residual" in result.message) == polished, result.message


def test_a_polish_that_does_not_converge_from_the_early_stop_solves_again_strictly(monkeypatch):
    from vfm.planner import plan
    from vfm.planner.solve import polish as module

    asked = _recording_tolerances(monkeypatch)
    states, gpus, capacity = _window()
    strict = plan(states, gpus, capacity, rounds=8, tol=STRICT_TOL, polish=False)
    monkeypatch.setattr(module, "MAX_STEPS", 0)
    result = plan(states, gpus, capacity, rounds=8)
    assert asked == [("saa-ipm", STRICT_TOL), ("saa-ipm", 1e-7), ("saa-ipm", STRICT_TOL)]
    assert "not polished: the polish stopped" in result.message and "; solved again at tol 1e-09: " in result.message
    # Neither polish converged: the schedule is the backend's at the strict tolerance.
    np.testing.assert_array_equal(result.relaxed, strict.relaxed)
    # Asked for a tolerance, the caller gets that backend answer, without a second solve.
    asked.clear()
    kept = plan(states, gpus, capacity, rounds=8, tol=1e-7)
    assert asked == [("saa-ipm", 1e-7)] and "solved again" not in kept.message


def test_tol_is_none_or_a_relative_gap():
    from vfm.solvers import Capabilities, PlanningCapabilities

    early = PlanningCapabilities(polish_start_tol=1e-7)
    assert PlanOptions().tol is None and PlanOptions(tol=1e-6).backend_tol(early, True) == 1e-6
    assert PlanOptions().backend_tol(early, True) == 1e-7 and PlanOptions().backend_tol(early, False) == STRICT_TOL
    assert PlanOptions().backend_tol(Capabilities(problem="planning"), True) == STRICT_TOL  # no extras declared
    assert PlanOptions().backend_tol(PlanningCapabilities(), True) == STRICT_TOL
    with pytest.raises(ValueError, match="planning backend"):
        PlanningCapabilities(problem="market")
    with pytest.raises(ValidationError, match=r"tol must be a relative gap in \(0, 1\) or None, got 0"):
        PlanOptions(tol=0)


def _floor_window():
    """A 5-job window of random decisions (`python -m benchmarks.decisions`, case seed 251, round 29)
    whose three fresh jobs are planned a sliver of each round: utilities of 1e-5, spreads of 6e-7."""
    return PlanningProgram(
        progress=np.repeat(np.array([[[0.0027215], [0.0013133], [0.0013537], [0.0152314], [0.0018933]]]), 20, axis=2),
        base=np.array([0.0306, 0.0, 0.0, 0.0231, 0.0]), budgets=np.array([442.0, 45.4, 2.12, 6.91, 1.91]),
        gpus=np.array([1.0, 2.0, 2.0, 2.0, 2.0]), capacity=np.full(20, 2.0), round_s=120.0,
        remaining_s=np.array([42743.5, 91371.5, 88646.0, 7696.7, 63380.8]),
        leftover_limit_s=np.array([np.inf, np.inf, np.inf, 6792.0, 73656.5]), spread=0.1)


def _assert_polished_to_one_certified_schedule(program, backends, polished):
    """Each backend's answer polished (not kept), feasible, certified, and all the same schedule."""
    for backend, result in zip(backends, polished, strict=True):
        assert "; polished to residual" in result.message and "not polished" not in result.message, result.message
        assert result.x is not backend.x and result.status == backend.status == Status.OPTIMAL
        assert (result.x >= 0).all() and (result.x <= 1).all()
        assert program.capacity_excess(result.x) <= 1e-9
        # The polished multipliers certify the polished schedule as well as the backend's own did.
        assert 0 <= result.gap <= backend.gap + 1e-6 * (1 + abs(program.objective(result.x)))
    # Every answer polishes to the same schedule, far within the rounding's resolution of 1e-2.
    assert np.abs(polished[0].x - polished[1].x).max() <= 1e-9


def test_a_window_near_its_rounding_floor_is_polished_whichever_way_it_converges():
    # Its residual ends within `RESIDUAL` or at its rounding floor just above it, depending on the
    # backends' last digits: either way the polish has converged.
    program = _floor_window()
    backends = (solve_saa_ipm(program, tol=1e-7), solve_saa_cvxpy(program))
    _assert_polished_to_one_certified_schedule(program, backends, [polish(program, b) for b in backends])


def test_a_residual_at_its_rounding_floor_is_converged(monkeypatch):
    from vfm.planner.solve import polish as module

    # With a tolerance of 0 no floating-point residual is sure to meet it: the polish converges
    # only by finding the residual at its rounding floor, whatever the backends' last digits.
    monkeypatch.setattr(module, "RESIDUAL", 0.0)
    program = _floor_window()
    backends = (solve_saa_ipm(program, tol=1e-7), solve_saa_cvxpy(program))
    polished = [polish(program, b) for b in backends]
    for result in polished:
        assert "(at its rounding floor)" in result.message, result.message
    _assert_polished_to_one_certified_schedule(program, backends, polished)


def test_a_backend_that_stopped_short_of_its_tolerance_is_not_asked_again(monkeypatch):
    from vfm.planner import plan
    from vfm.planner.solve import polish as module
    from vfm.planner.solve.backends import SaaIpmBackend

    asked = _recording_tolerances(monkeypatch)
    solve = SaaIpmBackend.solve

    def short(self, program, **options):  # an answer that stopped short of its tolerance
        return replace(solve(self, program, **options), status=Status.INACCURATE)

    monkeypatch.setattr(SaaIpmBackend, "solve", short)
    monkeypatch.setattr(module, "MAX_STEPS", 0)
    states, gpus, capacity = _window()
    result = plan(states, gpus, capacity, rounds=8)
    assert asked == [("saa-ipm", 1e-7)], asked
    assert "not polished: the polish stopped" in result.message and "solved again" not in result.message


def test_a_flat_row_at_its_floor_takes_no_step_from_the_ridge_and_one_below_it_is_settled():
    """A job held at its bounds exactly at its FTF floor (slack -1e-15, as the time cost term left
    jobs of 5- to 10-job windows at whole rounds): its row's Newton row is empty, and the ridge
    alone once asked for a step of 1e-3 in its multiplier that the line search halved to nothing,
    step after step. The row is an identity row instead; a flat row below its floor is settled
    upwards, where its slack is 0."""
    from vfm.planner.solve.polish import _RIDGE, _Duals, _rows, _settled
    from vfm.planner.solve.polish_system import NewtonMatrix, level_rows, slopes

    data, prices, rows, _ = _random_multipliers(7, 30, 4)
    ftf = np.where(data.constrained, rows, 0.0)
    ftf[0] = 10.0  # every entry of job 0 at its upper bound: its row's curvature is 0
    efficiency = np.where(data.efficient & ~data.constrained, rows, 0.0)
    found = lagrangian_minimizer(data, prices, ftf + efficiency)
    assert not found[2][0].any() and data.constrained[0]
    floor = data.floor.copy()
    floor[0] = (data.pace[0] * found[0][0]).sum() + 1e-15
    at_floor = replace(data, floor=floor)
    duals = _Duals(prices, ftf, efficiency, 0.0, np.zeros(data.shared.shape))
    multipliers, slack = _rows(at_floor, duals, found[0])
    curvature = np.abs(slopes(at_floor, found[1], found[2]).diagonal(at_floor))
    level = level_rows(at_floor, slack, curvature, RESIDUAL)
    assert level[data.g.shape[1]] and -RESIDUAL <= slack[data.g.shape[1]] < 0
    assert _settled(at_floor, duals, found, multipliers, slack, curvature) is None
    # The Newton step along the row, as `_newton` builds it (slacks divided by their curvature).
    scale = np.where(curvature > 0, curvature, 1.0)
    residual, row = np.minimum(multipliers, slack / scale), data.g.shape[1]
    derivative = slopes(at_floor, found[1], found[2])
    for binding, most in ((slack / scale <= multipliers, None), ((slack / scale <= multipliers) & ~level, 1e-14)):
        jacobian = NewtonMatrix(at_floor, derivative, binding / scale, (~binding).astype(np.float64))
        diagonal = np.abs(jacobian.diagonal())
        ridge = _RIDGE * np.abs(residual).max() * diagonal + 1e-12 * max(diagonal.max(), 1.0)
        step = replace(jacobian, extra=jacobian.extra + ridge).factored()(-residual)
        assert (abs(step[row]) > 1e-6) if most is None else (abs(step[row]) <= most)  # the ridge's step, or none
    # Below its floor by more than the residual: the multiplier rises to where the floor is met.
    floor[0] -= 0.5
    below = replace(data, floor=floor)
    lower = ftf.copy()
    lower[0] = 0.0
    start = replace(duals, ftf=lower)
    flat = lagrangian_minimizer(below, prices, lower + efficiency)
    multipliers, slack = _rows(below, start, flat[0])
    curvature = np.abs(slopes(below, flat[1], flat[2]).diagonal(below))
    assert curvature[data.g.shape[1]] == 0 and slack[data.g.shape[1]] < -RESIDUAL
    result = _settled(below, start, flat, multipliers, slack, curvature)
    assert result is not None
    settled, (y, _, _) = result
    assert settled.ftf[0] > 0 and abs((data.pace[0] * y[0]).sum() - floor[0]) <= 1e-12
