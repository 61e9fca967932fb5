"""A job's restart cost (`Policy.add_job`'s ``restart_s``): kept on its record, checked, and the
continuity it gets in proportion (`vfm.planner.shockwave.job_continuity`), on one GPU type and on
several; in the simulator, a job dear to restart restarts no more often."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from vfm.cluster import ClusterTypes, simulate, workload_from_dict
from vfm.errors import ValidationError
from vfm.planner import Policy
from vfm.planner.shockwave import CONTINUITY, DEFAULT_RESTART_S, job_continuity

SLOW = {32: 1000.0}  # an epoch longer than a round: a job never finishes in these tests


def _served(policy: Policy, rounds: int) -> list[Any]:
    """The one job each round runs on a one-GPU policy (a toy scheduler reporting no epoch)."""
    return [running[0] for running in (policy.next_round() for _ in range(rounds))]


def test_the_restart_cost_is_kept_on_the_record_none_meaning_the_default() -> None:
    policy = Policy(capacity=2)
    policy.add_job("told", gpus=1, regimes=SLOW, epochs=5, restart_s=90)
    policy.add_job("free", gpus=1, regimes=SLOW, epochs=5, restart_s=0.0)
    policy.add_job("unknown", gpus=1, regimes=SLOW, epochs=5)
    costs = {job: record.restart_s for job, record in policy.state.jobs.items()}
    assert costs == {"told": 90.0, "free": 0.0, "unknown": DEFAULT_RESTART_S}
    assert isinstance(costs["told"], float) and DEFAULT_RESTART_S == 20.0


@pytest.mark.parametrize(("restart_s", "message"), [
    (-1.0, r"^restart_s of job 'x' must be a number of seconds in \[0, 1e\+12\] \(MAX_JOB_SECONDS\), got -1"),
    (float("nan"), r"^restart_s of job 'x' must be a number of seconds in \[0, 1e\+12\]"),
    (float("inf"), r"^restart_s of job 'x' must be a number of seconds in \[0, 1e\+12\]"),
    ("20", r"^restart_s of job 'x' must be a number of seconds .* got '20'"),
    (True, r"^restart_s of job 'x' must be a number of seconds .* got True"),
])
def test_a_bad_restart_cost_is_refused_naming_the_job_and_the_argument(restart_s: Any, message: str) -> None:
    policy = Policy(capacity=2)
    with pytest.raises(ValidationError, match=message):
        policy.add_job("x", gpus=1, regimes=SLOW, epochs=10, restart_s=restart_s)
    assert policy.jobs == []


def test_job_continuity_scales_the_configured_one_by_the_restart_cost() -> None:
    costs = np.array([DEFAULT_RESTART_S, 10 * DEFAULT_RESTART_S, 0.0, 5.0])
    assert job_continuity(CONTINUITY, costs).tolist() == [CONTINUITY, 10 * CONTINUITY, 0.0, CONTINUITY / 4]
    # The default job keeps exactly the configured continuity, whatever it is.
    assert job_continuity(1.5, np.array([DEFAULT_RESTART_S]))[0] == 1.5


@pytest.mark.parametrize(("restart_s", "stretch"), [(0.0, 1), (10.0, 3), (None, 5), (20.0, 5), (40.0, 9)])
def test_two_jobs_sharing_a_gpu_swap_less_often_the_more_a_restart_costs(restart_s: float | None,
                                                                          stretch: int) -> None:
    # Two identical jobs planned half of every round on one GPU: with continuity c they swap every
    # 2c + 1 rounds, and c = CONTINUITY * restart_s / DEFAULT_RESTART_S (2 at the default cost).
    policy = Policy(capacity=1, rounds=4, replan_every=1)
    for job in ("a", "b"):
        policy.add_job(job, gpus=1, regimes=SLOW, epochs=50, restart_s=restart_s)
    served = _served(policy, 40)
    runs = [len(list(group)) for _, group in itertools.groupby(served)]
    assert set(runs[1:-1]) == {stretch}, served


def test_a_pair_with_one_job_dear_to_restart_swaps_less_often_with_the_same_shares() -> None:
    # "dear" restarts for 4x the default (continuity 8), "cheap" for the default (continuity 2).
    # The running job yields once the other is owed more than its own continuity, so the credit
    # gap swings across a band of 8 + 2 rounds: each runs 8 + 2 + 1 rounds in a row, where two
    # default jobs swap every 2 + 2 + 1, and they still share the GPU equally.
    policy = Policy(capacity=1, rounds=4, replan_every=1)
    policy.add_job("dear", gpus=1, regimes=SLOW, epochs=50, restart_s=4 * DEFAULT_RESTART_S)
    policy.add_job("cheap", gpus=1, regimes=SLOW, epochs=50)
    served = _served(policy, 60)
    runs = [len(list(group)) for _, group in itertools.groupby(served)]
    assert set(runs[1:-1]) == {11}, served
    assert abs(served.count("dear") - served.count("cheap")) <= 11


def test_on_several_gpu_types_the_continuity_follows_the_restart_cost_too() -> None:
    cluster = ClusterTypes({"v100": 1, "k80": 1})
    regimes = {"v100": {32: 1000.0}, "k80": {32: 1000.0}}

    def swaps(restart_s: float | None) -> int:
        policy = Policy(cluster, rounds=4, replan_every=1)
        for job in ("a", "b", "c", "d"):
            policy.add_job(job, gpus=1, regimes=regimes, epochs=50, restart_s=restart_s)
        rounds = [policy.next_round() for _ in range(40)]
        return sum(before != after for before, after in itertools.pairwise(rounds))

    assert swaps(0.0) > swaps(None) > swaps(200.0)


def _contended(own_s: float | None) -> Any:
    """Five one-GPU jobs on two GPUs in rounds of 300 s; job 0 states `own_s` (None: none)."""
    jobs: list[dict[str, Any]] = [
        {"id": k, "arrival_s": 0.0 if k < 3 else 900.0 * k, "gpus": 1, "epochs": 40,
         "phases": [{"epochs": 40, "batch_size": 32, "epoch_s": 100.0 + 10 * k}]} for k in range(5)]
    if own_s is not None:
        jobs[0]["restart_s"] = own_s
    return workload_from_dict({"gpus": 2, "round_s": 300.0, "jobs": jobs})


@pytest.mark.parametrize("factory", [Policy, Policy.shockwave])
def test_in_the_simulator_a_job_ten_times_dearer_to_restart_restarts_no_more_often(factory: Any) -> None:
    default = simulate(_contended(None), factory(2, round_s=300.0), restart_s=DEFAULT_RESTART_S)
    dear = simulate(_contended(10 * DEFAULT_RESTART_S), factory(2, round_s=300.0), restart_s=DEFAULT_RESTART_S)
    assert dear.job_restart_s[0] == 10 * DEFAULT_RESTART_S and default.job_restart_s[0] == DEFAULT_RESTART_S
    assert dear.restarts[0] <= default.restarts[0]
    np.testing.assert_allclose(dear.held_s - dear.restarts * dear.job_restart_s, dear.isolated_s)
