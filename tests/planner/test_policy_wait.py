"""The no-starvation guarantee: no job with work left goes more than `wait_bound` rounds without
running (docs/planning.md, "No starvation")."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.cluster import simulate, summarize, workload_from_dict
from vfm.cluster.generate import WorkloadSpec, generate_workload
from vfm.cluster.metrics import longest_wait_rounds, present_rounds, waits_reaching
from vfm.cluster.simulator import Simulation
from vfm.cluster.workload import Workload
from vfm.planner import Policy
from vfm.planner.shockwave import CREDIT_FLOOR, GUARDS, guards_fired, overdue_order, wait_bound


def _largest_demand(simulation: Simulation, workload: Workload) -> float:
    """The most GPUs the jobs present in any round wanted together."""
    return float((present_rounds(simulation) @ np.array([job.gpus for job in workload.jobs])).max())


def _check(workload: Workload, max_wait: int | None, **policy: object) -> tuple[np.ndarray, np.ndarray]:
    """Each job's longest wait and its bound (with max_wait, else the bound for max_wait=4)."""
    simulation = simulate(workload, Policy(workload.gpus, rounds=8, max_wait=max_wait, **policy))
    waits = longest_wait_rounds(simulation)
    gangs = np.array([job.gpus for job in workload.jobs])
    bound = wait_bound(max_wait or 4, workload.gpus, gangs, _largest_demand(simulation, workload))
    return waits, bound


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("execution", ["credit", "window"])
def test_no_job_waits_longer_than_the_bound(seed: int, execution: str) -> None:
    # A burst of mixed gangs on 4 GPUs, long enough that jobs queue for many rounds.
    workload = generate_workload(WorkloadSpec(jobs=14, gpus=4, interarrival_s=0.0, duration_s=(900.0, 5400.0),
                                              gang_mix={1: 0.5, 2: 0.3, 4: 0.2}), seed)
    waits, bound = _check(workload, 4, execution=execution, fairness=True, efficiency=0.05, reserve=0.3)
    assert np.all(waits <= bound), (waits, bound)


def test_the_bound_binds_where_jobs_would_otherwise_wait_longer() -> None:
    workload = generate_workload(WorkloadSpec(jobs=14, gpus=4, interarrival_s=0.0, duration_s=(900.0, 5400.0),
                                              gang_mix={1: 0.5, 2: 0.3, 4: 0.2}), 0)
    unguarded, bound = _check(workload, None)
    assert np.any(unguarded > bound)  # so the test above can fail
    guarded, bound = _check(workload, 4)
    assert np.all(guarded <= bound) and guarded.max() < unguarded.max()


def test_a_job_with_a_one_second_remainder_runs_within_the_bound() -> None:
    # The case that starved a job for 109 rounds: after its first round, "almost" has one 1 s
    # epoch left, while six long jobs compete for 2 GPUs; whatever the plan gives it, it runs
    # within the bound.
    jobs = [{"id": f"long{k}", "arrival_s": 0.0, "gpus": 1, "epochs": 60,
             "phases": [{"epochs": 60, "batch_size": 32, "epoch_s": 95.0}]} for k in range(6)]
    jobs.append({"id": "almost", "arrival_s": 0.0, "gpus": 1, "epochs": 2,
                 "phases": [{"epochs": 1, "batch_size": 32, "epoch_s": 99.0},
                            {"epochs": 1, "batch_size": 64, "epoch_s": 1.0}]})
    workload = workload_from_dict({"gpus": 2, "round_s": 120.0, "jobs": jobs})
    waits, bound = _check(workload, 3, fairness=True, efficiency=0.05, reserve=0.3)
    assert waits[-1] <= bound[-1] == 3 + (7 - 1) // 2


def test_overdue_jobs_are_ordered_by_wait_then_arrival() -> None:
    waited = np.array([5, 9, 5, 2, 9])
    open_ = np.array([True, True, True, True, False])
    assert overdue_order(waited, open_, 5).tolist() == [1, 0, 2]
    assert overdue_order(waited, open_, None).tolist() == []
    assert wait_bound(10, 8, np.array([1, 4]), 20).tolist() == [10 + 19 // 8, 10 + 16 // 5]


@pytest.mark.parametrize(("kwargs", "message"), [({"max_wait": 0}, "max_wait"), ({"max_wait": 2.5}, "max_wait"),
                                                 ({"continuity": -1.0}, "continuity")])
def test_bad_wait_options_are_named(kwargs: dict, message: str) -> None:
    from vfm.errors import ValidationError
    with pytest.raises(ValidationError, match=message):
        Policy(4, **kwargs)


@pytest.mark.parametrize("execution", ["credit", "window"])
def test_every_time_the_wait_guard_serves_a_job_is_reported(execution: str) -> None:
    # Each run of waiting that reaches max_wait ends with the guard serving the job (it is served
    # before every job that waited less), once: the decisions' counts, summed by the simulator,
    # equal the waits the simulation shows reaching the guard.
    workload = generate_workload(WorkloadSpec(jobs=14, gpus=4, interarrival_s=0.0, duration_s=(900.0, 5400.0),
                                              gang_mix={1: 0.5, 2: 0.3, 4: 0.2}), 0)
    simulation = simulate(workload, Policy(workload.gpus, rounds=8, max_wait=3, execution=execution))
    assert simulation.guards["max_wait"] == waits_reaching(simulation, 3) > 0
    assert summarize(simulation)["guards"] == simulation.guards
    assert set(simulation.guards) == set(GUARDS)


def test_guards_fired_counts_each_guard() -> None:
    ran = np.array([True, True, False, True, False])
    first = np.array([1, 2])  # overdue: job 1 ran, job 2 did not
    want = np.array([0.5, 0.0, 1.0, -0.2, 0.3])
    by_credit = np.array([True, True, False, True, False])  # jobs 1 and 3 owed nothing: continuity's
    owed = np.array([-0.5, -1.0, 1.0, CREDIT_FLOOR - 0.2, 0.3])  # job 3 below the floor
    assert guards_fired(ran, first, want=want, by_credit=by_credit, owed=owed) == \
        {"max_wait": 1, "continuity": 2, "credit_floor": 1}
    assert guards_fired(ran, first) == {"max_wait": 1, "continuity": 0, "credit_floor": 0}
