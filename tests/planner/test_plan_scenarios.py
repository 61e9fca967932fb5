"""`vfm.planner.plan` over several scenarios with the wait limit and the service floor: the program above
the floors has a base per scenario, both backends certify the same optimum, and the schedule keeps
every commitment."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.cluster import simulate
from vfm.cluster.generate import WorkloadSpec, generate_workload
from vfm.cluster.metrics import longest_wait_rounds
from vfm.equilibrium import Status
from vfm.forecast import JobStates
from vfm.planner import JobTerms, Policy, plan

# Job 3 has done most of its work: without a limit the program gives it nothing in this window.
STATES = JobStates.from_lists([40, 12, 30, 50], [{32: 60.0, 64: 30.0}, {16: 200.0}, {64: 90.0, 128: 45.0}, {8: 100.0}],
                              [[32] * 5 + [64] * 3, [], [64] * 2, [8] * 30])
GPUS = np.array([1, 2, 2, 1])
WAITED = JobTerms(waited=[0, 0, 0, 15])


@pytest.mark.parametrize("floor", [0.0, 0.05])
def test_both_backends_plan_the_same_optimum_over_scenarios_above_commitments(floor):
    fast, reference = (plan(STATES, GPUS, 3, rounds=10, scenarios=3, seed=7, wait_limit=20, service_floor=floor,
                            terms=WAITED, solver=solver) for solver in ("saa-ipm", "cvxpy"))
    plain = plan(STATES, GPUS, 3, rounds=10, scenarios=3, seed=7)
    for result in (fast, reference):
        assert result.status == Status.OPTIMAL and result.program.shape[0] == 3
        assert result.committed is not None and result.committed.sum() == 1 and result.committed[3].any()
        # Every committed entry runs its whole round, in the relaxation and in the schedule.
        np.testing.assert_allclose(result.relaxed[result.committed], 1.0, rtol=0, atol=1e-9)
        assert result.schedule[result.committed].all()
        assert (result.relaxed >= floor - 1e-9).all()  # every job runs in every round here
        assert (GPUS @ result.relaxed <= 3 + 1e-7).all() and (GPUS @ result.schedule <= 3).all()
        assert result.rounded_objective <= result.bound + 1e-9 * (1 + abs(result.bound))
        # A bound over the schedules that keep the commitments and the floor: at most the plain one.
        assert result.bound <= plain.bound + 1e-9 * (1 + abs(plain.bound))
    # Both certified bounds are above both relaxations' objectives, which agree.
    for result in (fast, reference):
        assert max(fast.relaxed_objective, reference.relaxed_objective) <= result.bound + 1e-9 * (1 + abs(result.bound))
    assert reference.relaxed_objective == pytest.approx(fast.relaxed_objective, rel=1e-6, abs=1e-6)
    assert reference.bound == pytest.approx(fast.bound, rel=1e-4, abs=1e-4)


def test_a_plan_over_scenarios_takes_a_wait_limit_and_commits_rounds_within_it():
    result = plan(STATES, GPUS, 3, rounds=10, scenarios=4, seed=0, wait_limit=2)
    assert result.status == Status.OPTIMAL and result.committed is not None
    # Where the limit fits: each job that has waited reaches it within the window and runs by then.
    states = JobStates.from_lists([50] * 4, [{8: 100.0}] * 4)
    waited = np.array([1, 2, 0, 3])
    limited = plan(states, [1, 1, 1, 1], 4, rounds=6, scenarios=4, seed=0, wait_limit=2,
                   terms=JobTerms(waited=waited))
    assert limited.status == Status.OPTIMAL and limited.committed is not None and limited.committed.any()
    assert limited.schedule[limited.committed].all()
    deadline = np.maximum(2 - waited, 0)
    first = np.argmax(limited.schedule, axis=1)
    assert (limited.schedule.any(axis=1) & (first <= deadline)).all()


def test_a_policy_over_scenarios_keeps_waits_within_the_limit():
    workload = generate_workload(WorkloadSpec(jobs=24, gpus=8, interarrival_s=0.0, duration_s=(900.0, 5400.0),
                                              gang_mix={1: 0.6, 2: 0.4}), 0)
    plain = simulate(workload, Policy.shockwave(workload.gpus, workload.round_s, scenarios=4, wait_limit=None))
    limited = simulate(workload, Policy.shockwave(workload.gpus, workload.round_s, scenarios=4, wait_limit=12))
    assert longest_wait_rounds(plain).max() > 12
    assert longest_wait_rounds(limited).max() <= 12
    assert limited.guards["max_wait"] == 0
