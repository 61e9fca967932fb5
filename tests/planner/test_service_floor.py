"""A service floor (`PlanOptions.service_floor`): every job gets a share of every round it can run in."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.cluster import ClusterTypes, simulate
from vfm.cluster.generate import WorkloadSpec, generate_workload
from vfm.cluster.metrics import longest_wait_rounds
from vfm.errors import ValidationError
from vfm.forecast import JobStates
from vfm.planner import JobTerms, Policy, plan
from vfm.planner.program import above_floor

# Job 3 has done most of its work: without a floor the program gives it nothing in this window.
STATES = JobStates.from_lists([40, 12, 30, 50], [{32: 60.0, 64: 30.0}, {16: 200.0}, {64: 90.0, 128: 45.0}, {8: 100.0}],
                              [[32] * 5 + [64] * 3, [], [64] * 2, [8] * 30])
GPUS = [1, 2, 2, 1]


def test_without_a_floor_a_job_with_much_done_can_get_nothing_and_with_one_it_gets_its_share():
    plain = plan(STATES, GPUS, 3, rounds=10)
    floored = plan(STATES, GPUS, 3, rounds=10, service_floor=0.1)
    assert plain.relaxed[3].max() < 1e-6
    assert floored.relaxed.min() >= 0.1 - 1e-9  # every job can run in every round here
    assert (GPUS @ floored.relaxed <= 3 + 1e-7).all()
    assert floored.status.value == "optimal"
    # The bound is over the schedules that give every job its floor: at most the plain one.
    assert floored.bound <= plain.bound + 1e-9


@pytest.mark.parametrize("solver", ["saa-ipm", "cvxpy"])
def test_the_program_above_the_floor_is_the_program_with_the_floor_added(solver):
    result = plan(STATES, GPUS, 3, rounds=10, service_floor=0.1, solver=solver, polish=False, spread=0.0)
    reduced, lower = above_floor(result.program, 0.1)
    z = result.relaxed - lower
    assert (z >= -1e-9).all() and (z <= reduced.bounds[None, :] + 1e-9).all()
    # The same objective, the floor's progress moved to the base and its time out of the leftover.
    assert reduced.objective(z) == pytest.approx(result.program.objective(result.relaxed), rel=1e-12)
    np.testing.assert_allclose(reduced.capacity, 3 - np.asarray(GPUS) @ lower)


def test_a_floor_leaves_room_for_the_widest_gang_and_skips_jobs_that_need_less():
    states = JobStates.from_lists([10, 10, 1], [{8: 120.0}, {8: 120.0}, {8: 6.0}])
    program = plan(states, [1, 4, 1], 5, rounds=4).program
    reduced, lower = above_floor(program, 0.5)
    # Round capacity 5, widest gang 4: the floor may take 1 GPU of it, shared by the 6 GPUs the
    # runnable jobs want in round 0 (5 later: job 2 is forecast finished after it).
    np.testing.assert_allclose(lower[:2], [[1 / 6, 0.2, 0.2, 0.2]] * 2)
    assert np.all(reduced.capacity >= 4.0 - 1e-12)
    assert np.all(lower[2] == 0)  # 6 s of work left: less than the floor would give it


#: Shockwave's program: a job's utility its share of total work, no time cost.
PAPER = {"utility": "progress", "completion_time": 0.0}


@pytest.mark.parametrize("program", [{}, PAPER], ids=["default", "paper"])
def test_a_policy_with_a_floor_keeps_waits_shorter(program):
    workload = generate_workload(WorkloadSpec(jobs=24, gpus=4, interarrival_s=0.0, duration_s=(900.0, 5400.0),
                                              gang_mix={1: 0.6, 2: 0.4}), 0)
    plain = simulate(workload, Policy.shockwave(workload.gpus, workload.round_s, wait_limit=None, **program))
    floored = simulate(workload, Policy.shockwave(workload.gpus, workload.round_s, service_floor=0.1,
                                                  wait_limit=None, **program))
    assert longest_wait_rounds(floored).max() < longest_wait_rounds(plain).max()
    assert floored.guards["max_wait"] == 0
    if program == PAPER:
        # Under Shockwave's program the floor alone keeps every wait within a window of 20 rounds.
        # The time cost moves the short jobs' rounds to the window's start, which can delay a
        # floored job's whole round past it (21 rounds on this workload).
        assert longest_wait_rounds(floored).max() <= 20


@pytest.mark.parametrize(("options", "message"), [
    ({"service_floor": 0.6}, "service_floor must be a share of a round in"),
    ({"service_floor": -0.1}, "service_floor must be a share of a round in"),
])
def test_bad_floors_are_named(options, message):
    with pytest.raises(ValidationError, match=message):
        Policy(4, **options)


def test_a_floor_is_refused_on_gpu_types():
    with pytest.raises(ValidationError, match=r"service_floor and wait_limit apply to (a cluster of )?one GPU type"):
        Policy(ClusterTypes({"v100": 2, "k80": 2}), service_floor=0.1)
    with pytest.raises(ValidationError, match=r"service_floor and wait_limit apply to (a cluster of )?one GPU type"):
        plan(STATES, GPUS, [3, 3], rounds=4, terms=JobTerms(speed=np.ones((4, 2))), service_floor=0.1)
