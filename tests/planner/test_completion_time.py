"""The time cost of the jobs' mean busy time (`PlanOptions.completion_time`): what every backend
solves, what the objective counts and what it does to a schedule."""

from __future__ import annotations

import warnings
from dataclasses import replace

import numpy as np
import pytest

from vfm.equilibrium import Status
from vfm.forecast import JobStates
from vfm.planner import plan
from vfm.planner.program import completion_time_cost


def _states(seed: int, n: int = 10) -> tuple[JobStates, list[int]]:
    rng = np.random.default_rng(seed)
    epochs = [int(e) for e in rng.integers(2, 40, n)]
    regimes = [{32: float(rng.uniform(20, 200))} for _ in range(n)]
    return JobStates.from_lists(epochs, regimes), [int(g) for g in rng.choice([1, 2, 4], n)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_backend_finds_the_same_certified_optimum_with_a_time_cost(seed: int) -> None:
    states, gpus = _states(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CVXPY's own warnings
        ipm = plan(states, gpus, 8, rounds=8, completion_time=0.3, solver="saa-ipm")
        cvxpy = plan(states, gpus, 8, rounds=8, completion_time=0.3, solver="cvxpy", tol=1e-8)
    for result in (ipm, cvxpy):
        assert result.status == Status.OPTIMAL
        assert result.program.time_cost is not None
        assert result.rounded_objective <= result.bound
    # Each backend's relaxation is within the other's certified bound.
    assert ipm.relaxed_objective <= cvxpy.bound + 1e-9 * abs(cvxpy.bound)
    assert cvxpy.relaxed_objective <= ipm.bound + 1e-9 * abs(ipm.bound)


def test_the_objective_subtracts_the_time_cost_of_the_runnable_entries() -> None:
    states, gpus = _states(3)
    result = plan(states, gpus, 8, rounds=6, completion_time=0.5)
    program = result.program
    assert program.time_cost is not None
    without = replace(program, time_cost=None)
    x = result.relaxed
    cost = float((np.where(program.runnable, program.time_cost, 0.0) * x).sum())
    assert cost > 0
    assert program.objective(x) == pytest.approx(without.objective(x) - cost, rel=1e-12, abs=1e-12)


def test_the_cost_grows_with_the_round_and_falls_with_the_work_left_for_the_jobs_that_can_finish() -> None:
    states, gpus = _states(4)
    program = plan(states, gpus, 8, rounds=6).program
    cost = completion_time_cost(program, 1.0)
    finishing = program.remaining_s / program.round_s <= 6
    assert finishing.any() and not finishing.all()
    assert (np.diff(cost[finishing], axis=1) > 0).all()  # later rounds cost more, for every job that can finish
    assert (cost[~finishing] == 0).all()  # a job that cannot finish in the window has no completion in it
    need = np.maximum(program.remaining_s / program.round_s, 1.0)
    np.testing.assert_allclose(cost[finishing, 0] * need[finishing], 0.5 * program.budgets[finishing])  # B_i / 2p_i
    assert not cost.flags.writeable


def test_a_short_job_runs_first_where_the_logarithms_are_indifferent() -> None:
    # One GPU, a job two rounds from its end and one far beyond the window: without the cost the
    # plan shares the first rounds between them; with it the short job has them whole.
    states = JobStates.from_lists([2, 200], [{32: 120.0}, {32: 120.0}])
    shared = plan(states, [1, 1], 1, rounds=6, utility="completion")
    first = plan(states, [1, 1], 1, rounds=6, utility="completion", completion_time=0.3)
    assert first.schedule[0, :2].all() and not first.schedule[1, :2].any()
    mean_round = (first.relaxed[0] * np.arange(6)).sum() / first.relaxed[0].sum()
    assert mean_round < (shared.relaxed[0] * np.arange(6)).sum() / shared.relaxed[0].sum()


def test_without_a_weight_the_program_has_no_time_cost() -> None:
    states, gpus = _states(5)
    assert plan(states, gpus, 8, rounds=4).program.time_cost is None
