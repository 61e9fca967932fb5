"""Windows of many jobs per GPU: the first re-plan of a policy holding every job, solved by `saa-ipm`.

A policy's first re-plan puts every job in one window. With hundreds of jobs per GPU the optimum
shares every round among all of them (every entry interior), and the dual residual, which counts
once per entry, dominates the certified gap at the iterate's own prices
(`vfm.planner.solve.ipm.stopping.Repricing`). 1,000 jobs on 8 GPUs is as loaded as 30,000 on 256, whose first
step's own-price gap is 18 times the start's: without the gap-minimizing prices the iterations
would read it as a stall and the planner would solve the window again with CVXPY (90 s at 100,000
jobs).
"""

from __future__ import annotations

import numpy as np
import pytest

from vfm.equilibrium import Status
from vfm.planner import Policy
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm import solve_saa_ipm

#: Regimes each job is told: batch size -> seconds per epoch.
REGIMES: dict[float, float] = {32: 60.0, 64: 40.0}


def _loaded_policy(jobs: int, capacity: int) -> Policy:
    """A policy on `capacity` GPUs holding `jobs` jobs (gangs 1, 2, 4, 8 in turn, 50 to 500 epochs),
    after its first round (which plans them all)."""
    policy = Policy(capacity)
    for k in range(jobs):
        policy.add_job(k, min(1 << (k % 4), capacity), REGIMES, 50 + (k * 7919) % 451)
    policy.next_round()
    return policy


@pytest.fixture(scope="module")
def loaded() -> Policy:
    return _loaded_policy(1000, 8)


def test_first_replan_of_a_loaded_policy_is_solved_by_saa_ipm(loaded):
    plan = loaded.last_plan
    assert plan is not None
    assert plan.solver == "saa-ipm", plan.message
    assert plan.status == Status.OPTIMAL, plan.message
    assert loaded.last_decision is not None and loaded.last_decision.source == "plan"
    used = plan.program.gpus @ plan.schedule
    assert np.all(used <= plan.program.capacity)
    assert plan.rounded_objective <= plan.bound


@pytest.mark.parametrize(("jobs", "capacity"), [(600, 16), (1000, 8)])
def test_loaded_windows_reach_the_tolerance(jobs, capacity):
    # 600 jobs on 16 GPUs is as loaded as 10,000 on 256 (at its own prices the last iterate the
    # Newton system reaches certifies 2e-6); 1,000 on 8 as 30,000 on 256 (the first step's gap jumps).
    plan = _loaded_policy(jobs, capacity).last_plan
    assert plan is not None
    solution = solve_saa_ipm(plan.program, tol=1e-7)
    assert solution.status == Status.OPTIMAL, solution.message
    assert solution.relative_gap <= 1e-7
    assert solution.iterations <= 12


def test_the_certified_gap_bounds_the_optimum_on_a_loaded_window(loaded):
    program = loaded.last_plan.program
    ipm = solve_saa_ipm(program, tol=1e-7)
    assert ipm.status == Status.OPTIMAL, ipm.message
    reference = solve_saa_cvxpy(program)
    assert reference.status == Status.OPTIMAL, reference.message
    ours = program.objective(ipm.x)
    # The reference is feasible to Clarabel's accuracy only: scaled into the capacity it is a
    # feasible schedule, which the certified bound must cover.
    y = np.clip(reference.x, 0.0, 1.0) * program.fits
    feasible = y * np.minimum(1.0, program.capacity / np.maximum(program.gpus @ y, 1e-300))[None, :]
    assert program.objective(feasible) <= ours + ipm.gap + 1e-9 * (1.0 + abs(ours))
    # `gap` certifies the objective without the tie-breaking term; the tolerance is met with it.
    assert ipm.relative_gap <= 1e-7
