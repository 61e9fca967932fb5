"""The program above its floors over several scenarios (`vfm.planner.program.above_floor` with a base per
scenario, `PlanningProgram.base` of shape (S, n)), and both backends on it."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

from tests.planner.strategies import programs
from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.planner.program import PlanningProgram, above_floor, commitments
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm.method import solve_saa_ipm

SCENARIOS = 3


def _committed(program: PlanningProgram, rng: np.random.Generator) -> np.ndarray:
    """A few runnable entries committed whole, at most one per job and never one that finishes its job
    (the program above it gives a finished job a base of 1, which its progress need not reach)."""
    need = program.remaining_s / program.round_s
    committed = np.zeros(program.shape[1:], dtype=bool)
    for i in np.flatnonzero(program.runnable.any(axis=1) & (need > 1.0) & (rng.random(program.shape[1]) < 0.5)):
        committed[i, rng.choice(np.flatnonzero(program.runnable[i]))] = True
    return committed


@settings(max_examples=40, deadline=None)
@given(programs(scenarios=SCENARIOS), st.sampled_from([0.0, 0.05, 0.2]), st.integers(0, 2**32 - 1))
def test_the_program_above_its_floors_has_each_scenarios_base(program, share, seed):
    rng = np.random.default_rng(seed)
    committed = _committed(program, rng)
    reduced, lower = above_floor(program, share, committed)
    if not share and not committed.any():
        assert reduced is program
        return
    assert reduced.base.shape == (SCENARIOS, program.shape[1])
    # Each scenario's base is its own: the floor's progress in that scenario.
    expected = program.base[None, :] + np.einsum("snt,nt->sn", program.progress, lower)
    np.testing.assert_allclose(reduced.base, expected, rtol=1e-14, atol=1e-15)
    # So the program above the floor is the program itself at every schedule above it, in every scenario.
    for _ in range(3):
        z = np.where(reduced.runnable, rng.random(lower.shape) * reduced.bounds[None, :], 0.0)
        assert reduced.objective(z) == pytest.approx(program.objective(lower + z), rel=1e-12, abs=1e-12)


def test_one_scenario_keeps_a_base_per_job_and_a_base_per_scenario_is_checked():
    program = PlanningProgram(progress=np.full((1, 2, 3), 0.1), base=np.array([0.2, 0.0]), budgets=np.ones(2),
                              gpus=np.ones(2), capacity=np.full(3, 2.0), round_s=60.0,
                              remaining_s=np.array([600.0, 600.0]))
    reduced, _ = above_floor(program, 0.1)
    assert reduced.base.shape == (2,)
    np.testing.assert_array_equal(program.scenario_base, [[0.2, 0.0]])
    with pytest.raises(ValidationError, match="base must have shape"):
        replace(program, base=np.zeros((2, 2)))


def test_a_job_is_open_while_some_scenario_has_work_left():
    program = PlanningProgram(progress=np.zeros((2, 3, 2)), base=np.array([[1.0, 0.5, 1.0], [0.5, 1.0, 1.0]]),
                              budgets=np.ones(3), gpus=np.ones(3), capacity=np.full(2, 3.0), round_s=60.0,
                              remaining_s=np.full(3, 600.0))
    assert program.open_jobs.tolist() == [True, True, False]
    assert program.fits.any(axis=1).tolist() == [True, True, False]


def _certified(program: PlanningProgram, solution, name: str) -> float:
    """The bound `solution` certifies on `program`'s optimum (objective plus certified gap): optimal, or
    saa-ipm stopped short with a gap that still bounds the optimum. Clarabel ends 'optimal_inaccurate'
    on rare random programs (as `tests/planner/test_plan.py` has it): those examples are left out."""
    if name == "cvxpy" and solution.status == Status.INACCURATE:
        reject()
    assert solution.status == Status.OPTIMAL or (name == "saa-ipm" and solution.status == Status.INACCURATE), \
        solution.message
    return program.objective(solution.x) + solution.gap


@settings(max_examples=25, deadline=None)
@given(programs(scenarios=SCENARIOS), st.sampled_from([0.0, 0.1]), st.integers(1, 8), st.integers(0, 2**32 - 1))
def test_both_backends_certify_the_same_optimum_above_commitments_and_a_floor(program, share, limit, seed):
    rng = np.random.default_rng(seed)
    # Without the tie-breaking term the certificates bound the optimum the backends solve for.
    # Waits that bring some deadlines into the window (about a quarter of the examples commit a round).
    waited = rng.integers(max(0, limit - program.shape[2]), limit + 2, program.shape[1])
    program, committed = commitments(program, share, waited, limit)
    reduced, lower = above_floor(program, share, committed)
    # Left out: a job that the commitments leave no room and no progress in some scenario (its log
    # utility is -inf under every schedule, as it would be on one scenario).
    reachable = reduced.scenario_base + (reduced.progress * reduced.runnable[None]).sum(axis=2)
    assume((reachable > 0).all())
    fast, reference = solve_saa_ipm(reduced, tol=1e-9), solve_saa_cvxpy(reduced)
    bounds = [_certified(reduced, solution, name) for solution, name in ((fast, "saa-ipm"), (reference, "cvxpy"))]
    values = [reduced.objective(solution.x) for solution in (fast, reference)]
    scale = 1.0 + abs(bounds[0])
    # Each bound is above both schedules' objectives, the two optima agree to the backends' accuracy and
    # the bounds as `tests/planner/test_plan.py` has them agree on one scenario (the reference's
    # certificate, from Clarabel's multipliers, is the looser).
    for bound in bounds:
        assert max(values) <= bound + 1e-9 * scale
    assert values[1] == pytest.approx(values[0], rel=1e-6, abs=1e-6)
    assert bounds[1] == pytest.approx(bounds[0], rel=1e-4, abs=1e-4)
    for solution in (fast, reference):
        schedule = lower + solution.x
        # Within the box and the capacity, every committed entry its whole round (or all its job needs).
        assert (schedule >= -1e-9).all() and (schedule <= program.bounds[None, :] + 1e-9).all()
        assert (program.gpus @ schedule <= program.capacity + 1e-7 * (1.0 + program.capacity)).all()
        need = program.remaining_s / program.round_s
        whole = np.minimum(program.bounds[None, :], need[:, None])
        np.testing.assert_allclose(schedule[committed], whole[committed], rtol=0, atol=1e-12)
        # The program above the floors is the program itself there: the same objective, in every scenario.
        done = (committed & (whole >= need[:, None])).any(axis=1)
        if not done.any():
            assert values[0 if solution is fast else 1] == pytest.approx(program.objective(schedule), rel=1e-10,
                                                                         abs=1e-10)
