"""Planning programs over GPU types: goods (type, round), one type per job and round, running time
by speed; solved by the CVXPY backend and by saa-ipm (the registry's choice) with certified gaps,
and with one good per round the one-type program."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.equilibrium import Status
from vfm.planner import PlanningProgram
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm import solve_saa_ipm
from vfm.solvers import registry

TIGHT = {"tol_gap_abs": 1e-10, "tol_gap_rel": 1e-10, "tol_feas": 1e-10}


def typed_program(seed: int, n: int = 6, types: int = 2, rounds: int = 4, scenarios: int = 2,
                  **extra: object) -> PlanningProgram:
    """A random window on `types` GPU types: goods ordered type-major (good k T + t is type k, round t)."""
    rng = np.random.default_rng(seed)
    speed = np.column_stack([np.ones(n), rng.uniform(0.2, 0.9, (n, types - 1))])
    speed[rng.random((n, types)) < 0.15] = 0.0  # a type that cannot host the job
    speed[:, 0] = 1.0
    per_round = rng.uniform(0.01, 0.2, (scenarios, n, rounds)) * (rng.random((scenarios, n, rounds)) < 0.9)
    per_round[:, :, 0] += 0.01
    progress = (per_round[:, :, None, :] * speed[None, :, :, None]).reshape(scenarios, n, types * rounds)
    return PlanningProgram(
        progress=progress, base=np.where(rng.random(n) < 0.3, 0.0, 0.05), budgets=rng.uniform(0.5, 2.0, n),
        gpus=rng.integers(1, 3, n).astype(float), capacity=np.repeat(rng.integers(2, 5, types), rounds).astype(float),
        round_s=120.0, remaining_s=rng.uniform(300.0, 3000.0, n), good_round=np.tile(np.arange(rounds), types),
        speed=np.repeat(speed, rounds, axis=1), **extra)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31), types=st.integers(2, 3), efficiency=st.sampled_from([0.0, 1e-3]))
def test_a_typed_program_is_solved_within_capacity_one_type_per_round_with_a_certified_gap(seed, types, efficiency):
    program = typed_program(seed, types=types, efficiency=efficiency)
    assert program.several_per_round and program.over_types
    solution = solve_saa_cvxpy(program, **TIGHT)
    n, goods = program.shape[1:]
    x = solution.x
    assert (program.gpus @ x <= program.capacity + 1e-7).all()
    per_round = x.reshape(n, types, goods // types).sum(axis=1)
    assert per_round.max() <= 1.0 + 1e-7
    assert (x[~program.fits] == 0).all()
    # The gap bounds the optimum: a feasible point found independently (the optimum of a
    # perturbed solve, scaled into the constraints) is never above objective + gap.
    assert 0.0 <= solution.gap <= 1e-5 * (1.0 + abs(program.objective(x)))
    rng = np.random.default_rng(seed)
    other = x * rng.uniform(0.5, 1.0, x.shape)
    assert program.objective(other) <= program.objective(x) + solution.gap + 1e-12


def test_one_good_per_round_with_unit_speed_is_the_one_type_program():
    program = typed_program(3, types=2)
    plain = PlanningProgram(progress=program.progress[:, :, :4], base=program.base, budgets=program.budgets,
                            gpus=program.gpus, capacity=program.capacity[:4], round_s=120.0,
                            remaining_s=program.remaining_s)
    same = PlanningProgram(progress=plain.progress, base=plain.base, budgets=plain.budgets, gpus=plain.gpus,
                           capacity=plain.capacity, round_s=120.0, remaining_s=plain.remaining_s,
                           good_round=np.arange(4), speed=np.ones((6, 4)))
    assert not same.several_per_round and same.over_types
    a, b = solve_saa_cvxpy(plain, **TIGHT), solve_saa_cvxpy(same, **TIGHT)
    np.testing.assert_allclose(a.x, b.x, atol=1e-6)
    # Both certified optimal, and each schedule within the other's certified gap of its objective.
    for solution, other in ((a, b), (b, a)):
        assert 0.0 <= solution.gap <= 1e-5 * (1.0 + abs(plain.objective(solution.x)))
        assert plain.objective(other.x) <= plain.objective(solution.x) + solution.gap + 1e-9


def test_running_time_counts_by_speed():
    program = typed_program(5, types=2)
    schedule = np.zeros(program.shape[1:])
    schedule[:, 4] = 1.0  # every job one round of the second type
    expected = np.maximum(program.remaining_s - 120.0 * program.speed[:, 4] * program.runnable[:, 4], 0.0)
    np.testing.assert_allclose(program.leftover_s(schedule), expected)


def test_a_job_cannot_use_a_good_of_speed_zero():
    program = typed_program(7, types=3)
    assert not program.fits[program.pace == 0].any()


def test_fairness_room_over_types_is_decided_by_a_flow_or_the_lp():
    program = typed_program(11, types=2, leftover_limit_s=None)
    # Each job must run at least 1.5 rounds' worth of its fastest type: room only if the capacity allows.
    generous = PlanningProgram(**{**_fields(program), "leftover_limit_s": program.remaining_s - 60.0})
    assert generous.fairness_room(1e-3)
    impossible = PlanningProgram(**{**_fields(program), "leftover_limit_s": program.remaining_s - 120.0 * 5})
    assert not impossible.fairness_room(1e-3)


def test_the_lp_proves_no_room_when_its_time_limit_is_too_short_to_start():
    program = typed_program(11, types=2, leftover_limit_s=None)
    generous = PlanningProgram(**{**_fields(program), "leftover_limit_s": program.remaining_s - 60.0})
    jobs = np.flatnonzero(generous.fairness_floor > 0)
    assert jobs.size and generous._typed_lp_room(jobs, 1e-3)
    assert not generous._typed_lp_room(jobs, 1e-3, time_limit_s=1e-12)
    assert generous._typed_lp_room(jobs, 1e-3, time_limit_s=60.0)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), types=st.integers(2, 3), share=st.floats(0.0, 1.2))
def test_the_fastest_goods_flow_proves_room_only_where_the_lp_finds_it(seed, types, share):
    program = typed_program(seed, types=types, leftover_limit_s=None)
    rng = np.random.default_rng(seed)
    # Targets of 0 to `share` of each job's runnable rounds at its fastest pace, some jobs free.
    fastest = np.where(program.runnable, program.pace, 0.0).max(axis=1)
    rounds = program.runnable.reshape(program.shape[1], types, -1).any(axis=1).sum(axis=1)
    needed = rng.uniform(0.0, share, program.shape[1]) * rounds * fastest * program.round_s
    limits = np.where(rng.random(program.shape[1]) < 0.7, program.remaining_s - needed, np.inf)
    program = PlanningProgram(**{**_fields(program), "leftover_limit_s": limits})
    jobs = np.flatnonzero(program.fairness_floor > 0)
    if jobs.size == 0:
        assert program.fairness_room(1e-3)
        return
    for margin in (0.0, 1e-3, 0.5):
        fresh = PlanningProgram(**_fields(program))  # nothing proven yet
        lp = fresh._typed_lp_room(jobs, margin)
        assert not fresh._fastest_goods_room(jobs, margin) or lp, margin  # a certificate, never more
        assert PlanningProgram(**_fields(program)).fairness_room(margin) == lp


def _fields(program: PlanningProgram) -> dict[str, object]:
    from dataclasses import fields

    return {f.name: getattr(program, f.name) for f in fields(program)}


def test_saa_ipm_is_the_registry_s_choice_for_a_typed_program():
    assert registry.select(typed_program(1)).name == "saa-ipm"


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31), types=st.integers(2, 3), scenarios=st.sampled_from([1, 2, 6]),
       rows=st.sampled_from(["none", "efficiency", "ftf", "both"]), spread=st.sampled_from([0.0, 1e-3]))
def test_saa_ipm_solves_a_typed_program_as_cvxpy_does(seed, types, scenarios, rows, spread):
    extra: dict[str, object] = {"spread": spread}
    if rows in ("efficiency", "both"):
        extra["efficiency"] = 1e-3
    program = typed_program(seed, types=types, scenarios=scenarios, **extra)
    if rows in ("ftf", "both"):
        # A finish-time target of a round and a half's running time on the reference type, where there is room.
        program = PlanningProgram(**{**_fields(program), "leftover_limit_s": program.remaining_s - 180.0})
        if not program.fairness_room(1e-3):
            program = PlanningProgram(**{**_fields(program), "leftover_limit_s": program.remaining_s - 30.0})
    solution = solve_saa_ipm(program, tol=1e-9)
    reference = solve_saa_cvxpy(program, **TIGHT)
    # As on one GPU type, a solve may stop short of 1e-9 when its Newton systems have no digits
    # left (`vfm.planner.plan.NEAR_TOLERANCE`); its gap still bounds the optimum.
    assert solution.status in (Status.OPTIMAL, Status.INACCURATE), solution.message
    n, goods = program.shape[1:]
    x = solution.x
    assert (program.gpus @ x <= program.capacity + 1e-9).all()
    assert x.reshape(n, types, goods // types).sum(axis=1).max() <= 1.0 + 1e-9
    assert (x[~program.fits] == 0).all()
    # Both certify their schedules for the objective without the tie-breaking term: each objective
    # is within its own gap of the optimum, so the two are within the sum of the gaps.
    value, other = program.objective(x), program.objective(reference.x)
    assert 0.0 <= solution.gap
    assert abs(value - other) <= solution.gap + reference.gap + 1e-7 * (1.0 + abs(value))
    if solution.status == Status.OPTIMAL and not spread:  # the gap is then the solver's own stopping test
        assert solution.gap <= 1e-9 * (float(program.budgets.sum()) + abs(value)) * (1 + 1e-12)
    if program.leftover_limit_s is not None:
        assert (program.leftover_s(x) <= program.leftover_limit_s + 1e-6 * program.round_s).all()


def test_saa_ipm_with_one_good_per_round_and_unit_speed_gives_the_one_type_answer_exactly():
    program = typed_program(3, types=2, efficiency=1e-3, spread=1e-3)
    plain = PlanningProgram(progress=program.progress[:, :, :4], base=program.base, budgets=program.budgets,
                            gpus=program.gpus, capacity=program.capacity[:4], round_s=120.0,
                            remaining_s=program.remaining_s, efficiency=1e-3, spread=1e-3,
                            leftover_limit_s=program.remaining_s - 60.0)
    same = PlanningProgram(**{**_fields(plain), "good_round": np.arange(4), "speed": np.ones((6, 4))})
    a, b = solve_saa_ipm(plain), solve_saa_ipm(same)
    np.testing.assert_array_equal(a.x, b.x)
    assert a.gap == b.gap and a.iterations == b.iterations
