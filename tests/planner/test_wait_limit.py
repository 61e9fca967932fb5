"""A limit on waits (`PlanOptions.wait_limit`): the plan commits a round to a job before its wait passes it."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.cluster import ClusterTypes, simulate
from vfm.cluster.generate import WorkloadSpec, generate_workload
from vfm.cluster.metrics import longest_wait_rounds
from vfm.errors import ValidationError
from vfm.forecast import JobStates
from vfm.planner import JobTerms, Policy, plan
from vfm.planner._kernels import waits
from vfm.planner.program import above_floor, commitments, wait_floor

STATES = JobStates.from_lists([40, 12, 30, 50], [{32: 60.0, 64: 30.0}, {16: 200.0}, {64: 90.0, 128: 45.0}, {8: 100.0}],
                              [[32] * 5 + [64] * 3, [], [64] * 2, [8] * 30])
GPUS = [1, 2, 2, 1]


def test_each_job_gets_the_latest_round_that_keeps_its_wait_within_the_limit():
    program = plan(STATES, GPUS, 3, rounds=10).program
    committed = wait_floor(program, np.array([25, 5, 0, 17]), 20, program.capacity)
    # Job 0 is overdue (round 0), job 3 reaches the limit in round 3; the others do not in the window.
    assert [tuple(np.flatnonzero(row)) for row in committed] == [(0,), (), (), (3,)]


def test_commitments_fit_the_room_given_and_move_to_the_nearest_round_with_room():
    states = JobStates.from_lists([50, 50, 50], [{8: 100.0}] * 3)
    program = plan(states, [2, 2, 1], 3, rounds=5).program
    committed = wait_floor(program, np.array([30, 30, 30]), 20, program.capacity)  # the whole capacity
    # All three are due in round 0; 3 GPUs hold one 2-GPU gang and the 1-GPU job there.
    assert [tuple(np.flatnonzero(row)) for row in committed] == [(0,), (1,), (0,)]
    assert (np.asarray([2, 2, 1]) @ committed <= 3).all()


def test_a_plan_runs_its_committed_rounds_whole_and_bounds_the_schedules_that_keep_them():
    plain = plan(STATES, GPUS, 3, rounds=10)
    assert plain.relaxed[3].max() < 1e-6  # without a limit job 3 gets nothing in this window
    limited = plan(STATES, GPUS, 3, rounds=10, wait_limit=20, terms=JobTerms(waited=[0, 0, 0, 15]))
    assert limited.committed is not None and np.flatnonzero(limited.committed[3]).tolist() == [5]
    assert limited.committed.sum() == 1
    assert limited.relaxed[3, 5] == pytest.approx(1.0)
    assert limited.schedule[3, 5]
    assert (np.asarray(GPUS) @ limited.relaxed <= 3 + 1e-7).all()
    assert limited.status.value == "optimal"
    assert limited.bound <= plain.bound + 1e-9
    program, committed = commitments(limited.program, 0.0, np.array([0, 0, 0, 15]), 20)
    reduced, lower = above_floor(program, 0.0, committed)
    assert not reduced.runnable[committed].any()  # nothing to plan above a whole round
    assert reduced.objective(limited.relaxed - lower) == pytest.approx(limited.program.objective(limited.relaxed))


def test_a_commitment_that_covers_a_job_finishes_it_in_the_program():
    states = JobStates.from_lists([10, 10], [{8: 120.0}, {8: 6.0}], [[8] * 9, []])
    program, committed = commitments(plan(states, [1, 1], 2, rounds=4).program, 0.0, np.array([0, 40]), 20)
    reduced, lower = above_floor(program, 0.0, committed)
    assert committed[1, 0] and 0 < lower[1, 0] < 1  # it needs a sliver of a round to finish
    assert reduced.base[1] == 1.0 and reduced.remaining_s[1] == 0.0 and not reduced.runnable[1].any()


def test_a_round_committed_after_a_jobs_forecast_end_is_credited_its_next_round_of_running():
    # Job 1 needs a sliver of a round: the forecast credits it progress in round 0 only. With
    # round 0 committed to job 0 it is committed round 1, worth what its next round of running is.
    states = JobStates.from_lists([10, 10], [{8: 120.0}, {8: 6.0}], [[8] * 9, []])
    result = plan(states, [2, 2], 4, rounds=4, wait_limit=3, terms=JobTerms(waited=[5, 2]))  # room: one gang a round
    assert np.flatnonzero(result.committed[0]).tolist() == [0]
    assert np.flatnonzero(result.committed[1]).tolist() == [1]
    program = result.program
    assert program.progress[0, 1, 1] == program.progress[0, 1, 0] > 0
    assert np.isfinite(result.relaxed_objective) and np.isfinite(result.bound)
    assert result.status.value == "optimal" and result.schedule[1, 1]


def test_a_policy_with_a_limit_keeps_every_wait_within_it_without_the_guard():
    # 24 jobs of 1.4 GPUs on average on 8 GPUs: half the cluster serves each a round in 13.
    workload = generate_workload(WorkloadSpec(jobs=24, gpus=8, interarrival_s=0.0, duration_s=(900.0, 5400.0),
                                              gang_mix={1: 0.6, 2: 0.4}), 0)
    plain = simulate(workload, Policy.shockwave(workload.gpus, workload.round_s))
    limited = simulate(workload, Policy.shockwave(workload.gpus, workload.round_s, wait_limit=12))
    assert longest_wait_rounds(plain).max() > 12
    assert longest_wait_rounds(limited).max() <= 12
    assert limited.guards["max_wait"] == 0


@pytest.mark.parametrize(("options", "message"), [
    ({"wait_limit": 0}, "wait_limit must be a positive whole number of rounds or None"),
    ({"wait_limit": 2.5}, "wait_limit must be a positive whole number of rounds or None"),
])
def test_bad_limits_are_named(options, message):
    with pytest.raises(ValidationError, match=message):
        Policy(4, **options)


def test_a_limit_is_whole_and_bad_waits_are_named_by_job():
    with pytest.raises(ValidationError, match="waited"):
        plan(STATES, GPUS, 3, rounds=4, wait_limit=5, terms=JobTerms(waited=[0, -1, 0, 0]))
    with pytest.raises(ValidationError, match="waited"):
        plan(STATES, GPUS, 3, rounds=4, wait_limit=5, terms=JobTerms(waited=[0, 1]))


def test_a_limit_is_refused_on_gpu_types():
    with pytest.raises(ValidationError, match=r"wait_limit apply to (a cluster of )?one GPU type"):
        Policy(ClusterTypes({"v100": 2, "k80": 2}), wait_limit=20)
    with pytest.raises(ValidationError, match=r"wait_limit apply to (a cluster of )?one GPU type"):
        plan(STATES, GPUS, [3, 3], rounds=4, terms=JobTerms(speed=np.ones((4, 2))), wait_limit=20)


def test_commitments_take_at_most_half_of_a_round():
    states = JobStates.from_lists([50] * 4, [{8: 100.0}] * 4)
    program = plan(states, [2, 2, 2, 2], 4, rounds=5).program
    program, committed = commitments(program, 0.0, np.array([30, 30, 30, 30]), 20)
    _, lower = above_floor(program, 0.0, committed)
    # 2 of the 4 GPUs per round: one 2-GPU gang in each of the first four rounds, longest wait (ties: order) first.
    assert [tuple(np.flatnonzero(row)) for row in committed] == [(0,), (1,), (2,), (3,)]
    assert (np.asarray([2, 2, 2, 2]) @ lower <= 2 + 1e-12).all()


def test_a_job_with_two_rounds_left_is_committed_the_earliest_round_it_fits():
    # Job 1 needs 1.5 rounds (60 s epochs, 3 left, 120-s rounds); job 0 needs many.
    states = JobStates.from_lists([50, 3], [{8: 100.0}, {8: 60.0}])
    program = plan(states, [1, 1], 2, rounds=10).program
    committed = wait_floor(program, np.array([15, 15]), 20, program.capacity)
    assert [tuple(np.flatnonzero(row)) for row in committed] == [(5,), (0,)]


def test_no_commitments_where_the_load_cannot_keep_the_limit():
    states = JobStates.from_lists([50] * 4, [{8: 100.0}] * 4)
    program = plan(states, [2, 2, 2, 2], 4, rounds=5).program
    # 8 GPUs of gangs waiting, 2 GPUs of room a round: a limit of 3 rounds cannot be kept, 4 can.
    assert not commitments(program, 0.0, np.array([30, 30, 30, 30]), 3)[1].any()
    assert commitments(program, 0.0, np.array([30, 30, 30, 30]), 4)[1].sum() == 4


def _committed_one_by_one(order, candidates, gpus, deadline, earliest, room):
    """The wait limit's greedy assignment, job by job in NumPy: the reference for the compiled one."""
    room, committed = room.copy(), np.zeros(candidates.shape, dtype=bool)
    for i in order:
        fit = np.flatnonzero(candidates[i] & (gpus[i] <= room + 1e-9))
        before, after = fit[fit <= deadline[i]], fit[fit > deadline[i]]
        if before.size or after.size:
            t = (before[0] if earliest[i] else before[-1]) if before.size else after[0]
            committed[i, t] = True
            room[t] -= gpus[i]
    return committed, room


@pytest.mark.parametrize("seed", range(20))
def test_the_compiled_assignment_commits_what_the_job_by_job_one_does(seed):
    rng = np.random.default_rng(seed)
    n, goods = int(rng.integers(1, 30)), int(rng.integers(1, 12))
    candidates = rng.random((n, goods)) < 0.7
    gpus = rng.choice([1.0, 2.0, 4.0, 8.0], n)
    deadline = rng.integers(0, goods, n)
    room = rng.choice([0.0, 2.0, 4.0, 8.0, 3.0 + 1e-10], goods)
    earliest = rng.random(n) < 0.3
    order = rng.permutation(n)
    committed, left = np.zeros((n, goods), dtype=bool), room.copy()
    waits.commit_rounds(order, candidates, gpus, deadline, earliest, left, committed)
    expected, expected_left = _committed_one_by_one(order, candidates, gpus, deadline, earliest, room)
    assert np.array_equal(committed, expected)
    assert np.array_equal(left, expected_left)
