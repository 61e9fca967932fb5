"""Planning with recourse: the lifted program, its projection, and what it is worth."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.forecast import JobStates
from vfm.planner import PlanningProgram, PlanOptions, plan, recourse
from vfm.planner.saa_cvxpy import solve_saa_cvxpy
from vfm.planner.saa_ipm import solve_saa_ipm

TOL = 1e-9


def _program(scenarios: int = 4, n: int = 8, rounds: int = 5, seed: int = 0, ftf: bool = True) -> PlanningProgram:
    rng = np.random.default_rng(seed)
    remaining = rng.uniform(600.0, 3000.0, n)
    return PlanningProgram(
        progress=rng.uniform(0.0, 0.05, (scenarios, n, rounds)), base=rng.uniform(0.05, 0.5, n), weights=np.ones(n),
        gpus=rng.integers(1, 3, n).astype(float), capacity=np.full(rounds, 4.0), round_s=60.0,
        remaining_s=remaining, efficiency=0.01,
        # Limits every job meets by running about a fifth of the window.
        leftover_limit_s=remaining - 60.0 * rounds / 5.0 if ftf else None)


def _optimum(program: PlanningProgram) -> tuple[float, np.ndarray]:
    solution = solve_saa_ipm(program, tol=TOL)
    assert solution.status == Status.OPTIMAL, solution.message
    return program.objective(solution.x), solution.x


def test_identical_scenarios_give_the_sample_average_plan():
    one = _program(scenarios=1)
    same = replace(one, progress=np.repeat(one.progress, 3, axis=0))
    value, x = _optimum(one)
    two_stage = recourse.lifted(same)
    lifted_value, lifted_x = _optimum(two_stage)
    assert lifted_value == pytest.approx(value, abs=1e-7 * (1 + abs(value)))
    np.testing.assert_allclose(recourse.scenario_schedules(lifted_x, 3), np.broadcast_to(x, (3, *x.shape)), atol=1e-4)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recourse_is_worth_at_least_the_sample_average_and_its_projection_is_feasible(seed):
    program = _program(seed=seed)
    saa_value, _ = _optimum(program)
    two_stage = recourse.lifted(program)
    solution = solve_saa_ipm(two_stage, tol=TOL)
    assert solution.status == Status.OPTIMAL
    assert two_stage.objective(solution.x) >= saa_value - 1e-7 * (1 + abs(saa_value))
    projected = recourse.projected(program, two_stage, solution)
    x = projected.x
    assert x.shape == (program.shape[1], program.shape[2]) and (x >= 0).all() and (x <= 1 + 1e-12).all()
    assert program.capacity_excess(x) <= 1e-9
    # The FTF rows hold for the expected running time, which the projection keeps.
    assert (program.leftover_s(x) <= program.leftover_limit_s + 1e-6).all()
    # The projected bound is an upper bound on the sample-average optimum.
    assert program.objective(x) + projected.gap >= saa_value - 1e-9
    # Round 0 is shared: every scenario's schedule starts with it.
    schedules = recourse.scenario_schedules(solution.x, program.shape[0])
    np.testing.assert_array_equal(schedules[:, :, 0], np.broadcast_to(x[:, 0], schedules[:, :, 0].shape))


def test_the_interior_point_and_cvxpy_agree_on_the_lifted_program():
    two_stage = recourse.lifted(_program(seed=3))
    value, _ = _optimum(two_stage)
    reference = solve_saa_cvxpy(two_stage, tol_gap_abs=TOL, tol_gap_rel=TOL, tol_feas=TOL)
    assert reference.status in (Status.OPTIMAL, Status.INACCURATE)
    assert two_stage.objective(reference.x) == pytest.approx(value, abs=1e-6 * (1 + abs(value)))


def test_recourse_pays_when_the_scenarios_disagree_on_the_later_rounds():
    # One GPU, two jobs, two rounds. Round 0 is worth the same to both; in round 1 scenario 0
    # favours job 0 and scenario 1 job 1. One schedule for both scenarios splits round 1; with
    # recourse each scenario gives it to the job it favours.
    progress = np.array([[[0.2, 0.4], [0.2, 0.0]], [[0.2, 0.0], [0.2, 0.4]]])
    program = PlanningProgram(progress=progress, base=np.full(2, 0.1), weights=np.ones(2), gpus=np.ones(2),
                              capacity=np.ones(2), round_s=60.0, remaining_s=np.full(2, 600.0))
    saa_value, _ = _optimum(program)
    lifted_value, _ = _optimum(recourse.lifted(program))
    assert lifted_value > saa_value + 0.1


def test_plan_with_recourse_reports_a_bound_above_the_sample_average_plan():
    states = JobStates.from_lists([40, 30, 60, 20], [{32: 50.0, 64: 30.0}] * 4, [[32] * 5, [], [32, 64], [64] * 3])
    options = PlanOptions(rounds=6, round_s=120.0, scenarios=4)
    saa = plan(states, [1, 1, 2, 1], 2, options, seed=7)
    two_stage = plan(states, [1, 1, 2, 1], 2, options.updated(recourse=True), seed=7)
    assert saa.status == two_stage.status == Status.OPTIMAL
    assert two_stage.bound >= saa.relaxed_objective - 1e-9
    assert two_stage.schedule.shape == saa.schedule.shape and two_stage.prices.shape == (6,)
    assert (np.array([1, 1, 2, 1]) @ two_stage.schedule <= 2).all()


def test_recourse_must_be_a_bool():
    with pytest.raises(ValidationError, match="recourse must be True or False, got 'yes'"):
        PlanOptions(recourse="yes")  # type: ignore[arg-type]
