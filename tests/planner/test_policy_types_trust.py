"""`vfm.planner.Policy` with a planner that may fail: re-plans that raise, fail or run late
are discarded and every round is still served (from the standing plan, or whole gangs first-fit
over the types), within each type's GPUs, and `last_decision` says how; with one type, the same
rounds and decisions as `vfm.planner.Policy`, failures included."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from tests.planner.test_policy_trust import Flaky, sources_after_breaking
from vfm.cluster import ClusterTypes
from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.planner import Policy
from vfm.planner.policy import replanning
from vfm.planner.policy import typed_serving as typed_module

from .typed_on_one_type import TypedOnOneType

TYPES = ClusterTypes({"v100": 2, "k80": 2})
BOTH: dict[str, dict[float, float]] = {"v100": {32: 50.0, 64: 30.0}, "k80": {32: 100.0, 64: 60.0}}
K80: dict[str, dict[float, float]] = {"k80": {32: 100.0, 64: 60.0}}
V100: dict[str, dict[float, float]] = {"v100": {32: 50.0, 64: 30.0}}


def _within_counts(policy: Policy, placed: dict[Any, str]) -> bool:
    """Every job placed is present, on a type it was told, and no type runs more GPUs than it has."""
    used = dict.fromkeys(policy.cluster.types, 0)
    for job, gpu_type in placed.items():
        assert job in policy.jobs and policy.state.jobs[job].speeds[policy.cluster.types.index(gpu_type), -1] > 0
        used[gpu_type] += policy._state.jobs[job].gpus
    return all(used[t] <= policy.cluster[t] for t in used)


def _left(policy: Policy, job: Any) -> int:
    record = policy._record(job)
    return record.epochs - record.done


def test_a_replan_that_raises_is_served_from_the_standing_plan_and_says_so():
    forecaster = Flaky()
    policy = Policy(TYPES, rounds=6, replan_every=2, forecaster=forecaster)
    for job in ("a", "b", "c"):
        policy.add_job(job, 1, BOTH, 40)
    assert policy.last_decision is None
    first = policy.next_round()
    decision = policy.last_decision
    assert decision is not None and (decision.source, decision.replanned) == ("plan", True)
    assert decision.reason == "re-planned (no plan yet)"
    forecaster.broken = True
    gone = next(iter(first))
    policy.remove_job(gone)
    policy.add_job("wide", 2, BOTH, 40)  # the next round is due to re-plan
    policy.add_job("slow", 1, K80, 40)
    plan_before = policy.last_plan
    # What the standing plan serves next, before any change.
    _, planned, _ = typed_module.typed_serving(policy.config).serve(policy.state)
    placed = policy.next_round()
    decision = policy.last_decision
    assert decision is not None and (decision.source, decision.replanned) == ("standing", False)
    assert decision.reason.startswith("the re-plan raised RuntimeError: forecaster down; served the standing plan")
    assert policy.last_plan is plan_before and policy.state.stale and policy.state.round_index == 2
    # The plan's own jobs keep its types; the arrivals take what they fit of the GPUs left.
    assert {job: TYPES.types[k] for job, k in planned.items() if job != gone} == \
        {job: t for job, t in placed.items() if job not in ("wide", "slow")}
    assert gone not in placed and _within_counts(policy, placed)
    assert "slow" not in placed or placed["slow"] == "k80"
    forecaster.broken = False  # the next round waits (one failure: two rounds on), the one after plans
    policy.next_round()
    assert policy.last_decision is not None and "the next is tried in round 3" in policy.last_decision.reason
    policy.next_round()
    decision = policy.last_decision
    assert decision is not None and decision.source == "plan" and decision.replanned
    assert policy.last_plan is not plan_before and "wide" in policy.last_plan.job_ids


def test_arrivals_fill_the_idle_gpus_of_the_standing_round_first_fit_over_the_types():
    forecaster = Flaky()
    policy = Policy(TYPES, rounds=6, forecaster=forecaster)
    policy.add_job("wide", 2, V100, 40)
    assert policy.next_round() == {"wide": "v100"}
    forecaster.broken = True
    for job, gpus, regimes in (("n1", 1, V100), ("n2", 2, BOTH), ("n3", 1, BOTH), ("n4", 1, BOTH)):
        policy.add_job(job, gpus, regimes, 40)
    # n1 fits no V100 left and runs nowhere else; n2 takes both K80s; n3 and n4 find no room.
    assert list(policy.next_round().items()) == [("wide", "v100"), ("n2", "k80")]
    assert policy.last_decision is not None and policy.last_decision.source == "standing"


def test_a_planned_job_added_again_with_other_types_is_placed_as_an_arrival():
    forecaster = Flaky()
    policy = Policy(ClusterTypes({"v100": 1, "k80": 1}), rounds=6, forecaster=forecaster)
    policy.add_job("a", 1, V100, 40)
    assert policy.next_round() == {"a": "v100"}
    forecaster.broken = True
    policy.remove_job("a")
    policy.add_job("a", 1, K80, 40)  # the same gang, on another type only
    assert policy.next_round() == {"a": "k80"}
    assert policy.last_decision is not None and policy.last_decision.source == "standing"


def test_with_no_standing_plan_a_failed_replan_places_whole_gangs_first_fit_over_the_types():
    forecaster = Flaky()
    forecaster.broken = True
    policy = Policy(TYPES, rounds=3, forecaster=forecaster)
    for job, gpus, regimes in (("a", 2, BOTH), ("b", 1, K80), ("c", 2, BOTH), ("d", 1, V100), ("e", 1, BOTH)):
        policy.add_job(job, gpus, regimes, 2)
    placed = policy.next_round()
    # In arrival order, each on the first type in the cluster's order that hosts it and has room.
    assert list(placed.items()) == [("a", "v100"), ("b", "k80"), ("e", "k80")]
    decision = policy.last_decision
    assert decision is not None and (decision.source, decision.replanned) == ("fallback", False)
    assert decision.reason == ("the re-plan raised RuntimeError: forecaster down; no standing plan: served "
                               "first-fit in arrival order")
    assert policy.last_plan is None and policy.state.stale
    for job in placed:
        policy.report_progress(job, [32, 32])
    assert policy.next_round() == {"c": "v100"}  # d runs on V100s only, which c fills


def test_a_standing_plan_older_than_its_window_is_not_served():
    forecaster = Flaky()
    policy = Policy(ClusterTypes({"v100": 1, "k80": 1}), rounds=2, forecaster=forecaster)
    for job in ("a", "b", "c"):
        policy.add_job(job, 1, BOTH, 40)
    # The window's second round is served as planned (no re-plan due); then its window has passed
    # (two rounds: not the relaxation's columns, one per type and round).
    assert sources_after_breaking(policy, forecaster,
                                  lambda placed: len(placed) == 2 and _within_counts(policy, placed)) == \
        ["plan", "fallback", "fallback", "fallback"]
    assert policy.last_decision is not None
    assert policy.last_decision.reason.endswith("the standing plan is older than its window: served first-fit in "
                                                "arrival order")


@pytest.mark.parametrize("change", [
    {"status": Status.ITERATION_LIMIT},
    {"status": Status.ERROR},
    {"relaxed": np.full((2, 6), np.nan)},
    {"schedule": np.full((2, 6), np.inf)},
])
def test_a_replan_that_did_not_converge_or_is_not_finite_is_not_used(monkeypatch, change):
    real_plan = replanning.plan_checked

    def spoiled(*args: Any, **kwargs: Any) -> Any:
        return replace(real_plan(*args, **kwargs), **change)

    policy = Policy(ClusterTypes({"v100": 1, "k80": 1}), rounds=3)
    policy.add_job("a", 1, K80, 40)
    policy.add_job("b", 1, BOTH, 40)
    monkeypatch.setattr(replanning, "plan_checked", spoiled)
    assert policy.next_round() == {"a": "k80", "b": "v100"}
    decision = policy.last_decision
    assert decision is not None and decision.source == "fallback" and policy.last_plan is None
    expected = ("the re-plan's schedule holds a value that is not finite" if "status" not in change else
                f"the re-plan ended with status {change['status'].value!r}")
    assert decision.reason.startswith(expected)


def test_a_tiny_deadline_still_serves_every_round_within_each_types_gpus():
    policy = Policy(TYPES, rounds=4, deadline_s=1e-6)
    jobs = {"a": (2, BOTH), "b": (1, K80), "c": (2, BOTH), "d": (1, V100), "e": (1, BOTH)}
    for job, (gpus, regimes) in jobs.items():
        policy.add_job(job, gpus, regimes, 3)
    rounds = 0
    while policy.jobs:
        placed = policy.next_round()
        assert placed and _within_counts(policy, placed)
        decision = policy.last_decision
        assert decision is not None and decision.source == "fallback" and not decision.replanned
        assert "deadline" in decision.reason or "failed in a row" in decision.reason, decision.reason
        for job in placed:
            policy.report_progress(job, [32] * min(2, _left(policy, job)))
        rounds += 1
    # Two rounds each: a, b and e first; then c on the V100s, which d (V100s only) waits for.
    assert policy.completed == ["a", "b", "e", "c", "d"] and rounds == 6 and policy.last_plan is None


def test_a_generous_deadline_changes_nothing():
    def run(**deadline: Any) -> list[dict[Any, str]]:
        policy = Policy(TYPES, rounds=4, **deadline)
        for k in range(5):
            policy.add_job(k, 1, BOTH if k % 2 else K80, 6)
        return [policy.next_round() for _ in range(6)]

    assert run(deadline_s=600.0) == run()


@pytest.mark.parametrize("execution", ["credit", "window"])
def test_with_one_type_failures_are_decided_as_the_one_type_policy_decides_them(execution):
    """The same rounds and the same decisions, round by round, through failed re-plans too."""
    def run(make: Any) -> list[tuple[list[Any], Any]]:
        forecaster = Flaky()
        policy = make(forecaster)
        for k, gpus in enumerate([1, 2, 1, 2, 1]):
            policy.add_job(k, gpus, {32: 50.0, 64: 30.0} if make is plain else {"v100": {32: 50.0, 64: 30.0}}, 9)
        trace = []
        for r in range(12):
            forecaster.broken = r in (0, 3, 4, 5, 6, 9)
            if r == 3:
                policy.remove_job(0)
                policy.add_job("late", 1, {32: 40.0} if make is plain else {"v100": {32: 40.0}}, 4)
            running = list(policy.next_round())
            decision = policy.last_decision
            trace.append((running, (decision.source, decision.reason, decision.replanned)))
            for job in running:
                policy.report_progress(job, [32] * min(2, _left(policy, job)))
        return trace

    def plain(forecaster: Flaky) -> Policy:
        return Policy(4, rounds=4, replan_every=2, forecaster=forecaster, execution=execution)

    def typed(forecaster: Flaky) -> Policy:
        return TypedOnOneType(ClusterTypes.single(4), rounds=4, replan_every=2, forecaster=forecaster,
                              execution=execution)

    ours, theirs = run(typed), run(plain)
    assert ours == theirs
    assert {source for _, (source, _, _) in ours} == {"plan", "standing", "fallback"}


def test_the_deadline_is_checked_as_the_one_type_policy_checks_it():
    with pytest.raises(ValidationError, match=r"^deadline_s must be a finite number of seconds > 0 or None, got 0"):
        Policy(TYPES, deadline_s=0)
