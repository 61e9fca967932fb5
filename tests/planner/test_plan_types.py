"""`plan` and the rounding on a cluster of GPU types: with one type the homogeneous answers; whole
gangs on one type each within every type's GPUs; bad input named."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm._numerics.jit import interpreting
from vfm.errors import ValidationError
from vfm.forecast import JobStates
from vfm.planner import JobTerms, RoundingContext, plan, round_schedule
from vfm.planner._kernels import placement
from vfm.planner.rounding import place, round_placement

from .strategies import JobSet, job_sets
from .test_rounding import ROUND_S, fractional_inputs


@given(fractional_inputs())
def test_rounding_on_one_type_is_round_schedule(inputs):
    relaxed, gpus, capacity, remaining_s, lateness, base, useful = inputs
    context = RoundingContext(lateness, base, useful)
    placement = round_placement(relaxed[:, None, :], gpus, capacity[None, :], remaining_s, ROUND_S, context)
    expected = round_schedule(relaxed, gpus, capacity, remaining_s, ROUND_S, context)
    np.testing.assert_array_equal(placement >= 0, expected)
    assert set(np.unique(placement)) <= {-1, 0}


@given(inputs=fractional_inputs(), types=st.integers(2, 3), data=st.data())
def test_rounding_places_whole_gangs_on_hosting_types_within_each_count(inputs, types, data):
    relaxed, gpus, capacity, remaining_s, lateness, base, useful = inputs
    n, rounds = relaxed.shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    split = rng.dirichlet(np.ones(types), rounds).T  # each type's share of the round's fraction
    per_type = np.floor(capacity[None, :] * rng.uniform(0.3, 1.0, (types, rounds)))
    speed = rng.uniform(0.0, 1.0, (n, types)) * (rng.random((n, types)) < 0.8)
    placement = round_placement(relaxed[:, None, :] * split[None], gpus, per_type, remaining_s, ROUND_S,
                                RoundingContext(lateness, base, useful), speed=speed)
    for t in range(rounds):
        for k in range(types):
            on = placement[:, t] == k
            assert gpus[on].sum() <= per_type[k, t]
            assert (speed[on, k] > 0).all()
    # Work conservation per type: a job not running that some type could still take is never left
    # waiting while its gang fits that type's idle GPUs (when it has time left).
    for t in range(rounds):
        free = per_type[:, t] - np.array([gpus[placement[:, t] == k].sum() for k in range(types)])
        waiting = (placement[:, t] < 0) & (remaining_s > 0)
        can = (gpus[:, None] <= free[None, :]) & (speed > 0)
        assert not (waiting[:, None] & can).any()


@given(inputs=fractional_inputs(), types=st.integers(1, 3), data=st.data())
def test_the_rounding_walk_interpreted_is_the_compiled_one(inputs, types, data):
    # The walk is a compiled kernel with an interpreted twin (what a plan runs while the kernels load):
    # the same placement either way.
    relaxed, gpus, capacity, remaining_s, lateness, base, useful = inputs
    n, rounds = relaxed.shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    split = rng.dirichlet(np.ones(types), rounds).T
    per_type = np.floor(capacity[None, :] * rng.uniform(0.3, 1.0, (types, rounds)))
    speed = rng.choice([0.0, 0.5, 1.0], (n, types))
    arguments = (relaxed[:, None, :] * split[None], gpus, per_type, remaining_s, ROUND_S,
                 RoundingContext(lateness, base, useful), speed)
    compiled = round_placement(*arguments)
    with interpreting():
        interpreted = round_placement(*arguments)
    np.testing.assert_array_equal(compiled, interpreted)


def test_the_rounding_walk_has_one_compiled_form():
    # Read-only arrays (a plan's program holds them) would give the kernel a second specialization,
    # compiled in the middle of a decision on a machine's first run: the walk takes copies.
    relaxed = np.full((3, 2, 4), 0.25)
    read_only = [np.array(values, dtype=np.float64) for values in ([1, 2, 1], [[4] * 4, [2] * 4], [1e3, 0, 50])]
    for array in read_only:
        array.flags.writeable = False
    gpus, capacity, remaining_s = read_only
    round_placement(relaxed, gpus, capacity, remaining_s, ROUND_S, RoundingContext(lateness=gpus), speed=None)
    round_schedule(relaxed[:, 0], gpus, capacity[0], remaining_s, ROUND_S)
    assert len(placement.walk_rounds.compiled.signatures) == 1


@given(data=st.data())
def test_the_walks_first_fit_is_the_fallbacks(data):
    # The compiled walk packs a round with its own first fit; the first-fit fallback of a failed
    # re-plan uses `rounding.place`: the same rule, so the same jobs on the same types.
    n, types = data.draw(st.integers(1, 12)), data.draw(st.integers(1, 3))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    gpus = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    free = rng.integers(0, 12, types).astype(np.float64)
    preference = np.array([rng.permutation(types) for _ in range(n)])
    hosts = rng.random((n, types, 1)) < 0.8
    queue = rng.permutation(n)
    jobs, kinds = place(queue, gpus, free.copy(), preference, hosts[:, :, 0])
    expected = np.full(n, -1)
    expected[jobs] = kinds
    kind = np.full(n, -1)
    placement._first_fit(queue, gpus, free.copy(), preference, hosts, 0, kind)
    np.testing.assert_array_equal(kind, expected)

def _two_types(case: JobSet, speed_of_second: np.ndarray):
    """`case`'s capacity (every gang fits it) and half as many of a second type, slower for each job by
    `speed_of_second`."""
    return (np.vstack([case.capacity, np.floor(case.capacity / 2)]),
            np.column_stack([np.ones(case.states.n_jobs), speed_of_second]))


@pytest.mark.parametrize("solver", ["saa-ipm", "cvxpy"])
@settings(max_examples=15, deadline=None)
@given(case=job_sets(max_jobs=8, max_rounds=4, scenarios=(1, 3), varying_capacity=False))
def test_one_type_through_speed_gives_the_homogeneous_plan(solver, case):
    # The same backend on both formulations: the polish applies to the homogeneous one only.
    plain = plan(case.states, case.gpus, case.capacity, solver=solver, polish=False, **case.kwargs())
    typed = plan(case.states, case.gpus, case.capacity[None, :], solver=solver, polish=False,
                 **case.kwargs(speed=np.ones((case.states.n_jobs, 1))))
    np.testing.assert_array_equal(typed.schedule, plain.schedule)
    np.testing.assert_array_equal(typed.placement >= 0, plain.schedule)
    np.testing.assert_allclose(typed.relaxed, plain.relaxed, atol=1e-9)
    assert typed.jobs_in_round(0) == plain.jobs_in_round(0)


@settings(max_examples=15, deadline=None)
@given(case=job_sets(max_jobs=8, max_rounds=4, scenarios=(1, 3), varying_capacity=False), data=st.data())
def test_a_plan_on_two_types_places_whole_gangs_within_each_types_gpus(case, data):
    n = case.states.n_jobs
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    per_type, speed = _two_types(case, rng.uniform(0.0, 1.0, n) * (rng.random(n) < 0.8))
    result = plan(case.states, case.gpus, per_type, **case.kwargs(speed=speed))
    assert result.solver == "saa-ipm" and result.schedule.shape == (n, 2 * case.rounds)
    relaxed = result.relaxed.reshape(n, 2, case.rounds)
    assert relaxed.sum(axis=1).max() <= 1.0 + 1e-6  # one type per job and round
    assert (relaxed[:, 1][speed[:, 1] == 0] == 0).all()
    placement = result.placement
    for k in range(2):
        used = (case.gpus[:, None] * (placement == k)).sum(axis=0)
        assert (used <= per_type[k]).all()
    assert (placement[speed[:, 1] == 0] != 1).all()
    assert (placement[case.states.remaining_epochs <= 0] == -1).all()
    if result.status.value == "optimal":
        assert result.rounded_objective <= result.bound + 1e-9


def test_a_slow_type_goes_to_the_job_that_loses_least_on_it():
    # Two identical one-GPU jobs but job 1 runs at 0.9 on the second type, job 0 at 0.2: with one
    # GPU of each type, job 0 gets the fast type and job 1 the slow one in every round.
    states = JobStates.from_lists([100, 100], [{32: 60.0}, {32: 60.0}])
    result = plan(states, [1, 1], [1, 1], terms=JobTerms(speed=[[1.0, 0.2], [1.0, 0.9]]), rounds=3)
    np.testing.assert_array_equal(result.placement, [[0, 0, 0], [1, 1, 1]])


@pytest.mark.parametrize(("kwargs", "pattern"), [
    ({"speed": [[1.0, 0.5]]}, r"speed must have shape \(n, K\) = \(2, number of GPU types\)"),
    ({"speed": [[1.0, 1.5], [1.0, 0.5]]}, r"speed\[0, 1\] \(job 0\) must be in \[0, 1\]"),
    ({"speed": [[1.0, 0.5], [1.0, 0.5]], "capacity": [1, 1, 1]}, r"capacity must have shape \(2, 2\)"),
    ({"speed": [[1.0, 0.5], [1.0, 0.5]], "warm_start": np.zeros((2, 2))},
     r"warm_start must have shape \(2, 4\)"),
])
def test_bad_typed_arguments_are_named(kwargs, pattern):
    states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 60.0}])
    arguments = {"capacity": [1, 1], **kwargs}
    capacity, terms = arguments.pop("capacity"), JobTerms(speed=arguments.pop("speed"))
    with pytest.raises(ValidationError, match=pattern):
        plan(states, [1, 1], capacity, rounds=2, terms=terms, **arguments)


def test_finish_time_targets_on_types_hold_in_running_time_by_speed():
    # Four one-GPU jobs of 12,000 s, one V100 and two K80s at half speed: 2 reference GPUs, an
    # equal share of 0.5. A target of 24,300 s leaves b = 0.5 (24,300 - 720) = 11,790 s after the
    # 6-round window: each job must run 1.75 rounds' worth (of the 3 the cluster has per job), and
    # does, counting K80 rounds at half.
    states = JobStates.from_lists([200] * 4, [{32: 60.0}] * 4)
    speed = np.array([[1.0, 0.5]] * 4)
    terms = JobTerms(speed=speed, fair_finish_s=np.full(4, 24300.0), budgets=[8.0, 1.0, 1.0, 1.0])
    result = plan(states, [1] * 4, [1, 2], terms=terms, rounds=6)
    np.testing.assert_allclose(result.program.fairness_floor, 1.75)
    assert result.fairness == "constraints"
    program = result.program
    running = (program.pace * result.relaxed).sum(axis=1)
    assert (running >= program.fairness_floor - 1e-6).all() and program.fairness_floor.max() > 0


@settings(max_examples=10, deadline=None)
@given(case=job_sets(max_jobs=8, max_rounds=4, scenarios=(1, 3), varying_capacity=False), data=st.data())
def test_a_warm_start_over_goods_reaches_the_cold_plans_optimum(case, data):
    n = case.states.n_jobs
    rng = np.random.default_rng(data.draw(st.integers(0, 2**31)))
    per_type, speed = _two_types(case, rng.uniform(0.2, 1.0, n))
    cold = plan(case.states, case.gpus, per_type, **case.kwargs(speed=speed))
    # The cold plan's relaxation moved forward a round, as `vfm.planner.policy.replanning.warm_start` does.
    shifted = cold.relaxed.reshape(n, 2, case.rounds)[:, :, np.minimum(np.arange(case.rounds) + 1, case.rounds - 1)]
    warm = plan(case.states, case.gpus, per_type, warm_start=shifted.reshape(n, -1), **case.kwargs(speed=speed))
    assert warm.solver == "saa-ipm"
    # Both certify their relaxations: the objectives agree within the sum of the gaps.
    tolerance = (cold.bound - cold.relaxed_objective) + (warm.bound - warm.relaxed_objective) + 1e-9
    assert abs(warm.relaxed_objective - cold.relaxed_objective) <= tolerance


def test_finish_time_constraints_on_types_are_judged_over_the_types_not_one_types_gpus():
    # Six one-GPU jobs on three types of two GPUs each, all at full speed: the equal share is a
    # GPU each, and finish-time targets at that share ask every job to run most of the window.
    # The reference program's capacity is one type's two GPUs (the widest gang a round holds);
    # a room check there finds none, while the six GPUs over the types have room: the plan must
    # hold the targets as constraints, not relax them.
    # A job alone takes 40 rounds of 60 s; a target of 2,508 s leaves it b = 2,508 - 360 = 2,148 s
    # after the 6-round window, so it must run 4.2 of the 6 rounds: 25.2 GPU-rounds in all, more
    # than one type's 12 and less than the cluster's 36.
    states = JobStates.from_lists([40] * 6, [{32: 60.0}] * 6)
    result = plan(states, [1] * 6, [2, 2, 2], terms=JobTerms(speed=np.ones((6, 3)), fair_finish_s=np.full(6, 2508.0)),
                  rounds=6, round_s=60.0)
    assert result.fairness == "constraints"
    assert (result.program.leftover_s(result.relaxed) <= result.program.leftover_limit_s + 1e-6).all()
