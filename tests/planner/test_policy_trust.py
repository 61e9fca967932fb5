"""`vfm.planner.Policy` under a scheduler it cannot trust and a planner that may fail: calls from
several threads, hostile job arguments refused at `add_job`, re-plans that raise, fail or run
late (every round is still served, within capacity, and `last_decision` says how), and events
that stay O(1) as the jobs grow."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.cluster import ClusterTypes
from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster
from vfm.limits import MAX_BUDGET, MAX_JOB_EPOCHS, MAX_JOB_SECONDS
from vfm.planner import PlanOptions, Policy
from vfm.planner.policy import Decision, replanning
from vfm.planner.policy.decision import DeadlinePassed, within_deadline

REGIMES: dict[float, float] = {32: 50.0, 64: 30.0}


class Flaky:
    """`DirichletForecaster`, until `broken` is set: then every forecast raises."""

    def __init__(self) -> None:
        self.inner = DirichletForecaster()
        self.broken = False

    def _check(self) -> None:
        if self.broken:
            raise RuntimeError("forecaster down")

    def remaining_runtime(self, states: Any) -> Any:
        self._check()
        return self.inner.remaining_runtime(states)

    def epochs_per_round(self, states: Any, rounds: int, round_s: float) -> Any:
        self._check()
        return self.inner.epochs_per_round(states, rounds, round_s)

    def sample_epochs_per_round(self, states: Any, rounds: int, round_s: float, scenarios: int,
                                seed: Any = None) -> Any:
        self._check()
        return self.inner.sample_epochs_per_round(states, rounds, round_s, scenarios, seed)


@contextmanager
def _switching_often() -> Iterator[None]:
    """Threads switch every microsecond: a read-modify-write without a lock loses updates."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _in_threads(work: Callable[[int], None], threads: int) -> None:
    start = threading.Barrier(threads)
    errors: list[BaseException] = []

    def run(k: int) -> None:
        start.wait()
        try:
            work(k)
        except BaseException as error:  # pragma: no cover - a failure explains itself
            errors.append(error)

    workers = [threading.Thread(target=run, args=(k,)) for k in range(threads)]
    with _switching_often():
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
    assert not errors, errors


# --- threads ---------------------------------------------------------------------------------------


def test_threads_adding_and_reporting_at_once_lose_no_event():
    policy = Policy(8, rounds=3)
    _in_threads(lambda t: [policy.add_job((t, k), 1, REGIMES, 10) for k in range(500)], threads=4)
    assert len(policy.jobs) == 2000 and len(set(policy.jobs)) == 2000

    def report(t: int) -> None:
        for job in policy.jobs:
            policy.report_progress(job, [32])

    _in_threads(report, threads=4)
    assert {policy.epochs_done(job) for job in policy.jobs} == {4}
    assert len(policy.state.jobs) == 2000


def test_threads_removing_reporting_and_serving_rounds_keep_the_policy_consistent():
    policy = Policy(4, rounds=3, replan_every=2)
    for k in range(400):
        policy.add_job(k, 1 + k % 2, REGIMES, 3)
    served: list[list[Any]] = []

    def work(t: int) -> None:
        if t == 0:
            for k in range(0, 400, 4):
                policy.remove_job(k)
        elif t == 1:
            for k in range(1, 400, 4):
                policy.report_progress(k, [32, 32, 32])  # completes job k
        else:
            for _ in range(5):
                served.append(policy.next_round())

    _in_threads(work, threads=3)
    assert sorted(policy.completed) == list(range(1, 400, 4))
    assert policy.jobs == [k for k in range(400) if k % 4 in (2, 3)]
    gangs = {k: 1 + k % 2 for k in range(400)}
    assert all(sum(gangs[job] for job in running) <= 4 for running in served)


def test_typed_policy_threads_lose_no_arrival():
    policy = Policy(ClusterTypes({"v100": 2, "k80": 2}), rounds=3)
    _in_threads(lambda t: [policy.add_job(f"{t}-{k}", 1, {"v100": {32: 10.0}, "k80": {32: 20.0}}, 5)
                           for k in range(300)], threads=4)
    assert len(policy.jobs) == 1200 and sum(r.speeds is not None for r in policy.state.jobs.values()) == 1200


# Each thread's script: events on its own jobs, ("add", k, epochs), ("report", k, n) or ("remove", k).
_events = st.lists(st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), st.integers(1, 4)),
    st.tuples(st.just("report"), st.integers(0, 5), st.integers(1, 3)),
    st.tuples(st.just("remove"), st.integers(0, 5)),
), max_size=25)


def _replayed(policy: Policy | None, thread: int, events: list[tuple[Any, ...]]) -> dict[Any, int] | None:
    """Play `events` on the jobs ``(thread, k)``, skipping the ones a plain model says are invalid;
    the model's jobs present -> epochs done (completed jobs left out) when `policy` is None."""
    present: dict[Any, list[int]] = {}  # job -> [epochs, done]
    done: set[Any] = set()
    for kind, k, *rest in events:
        job = (thread, k)
        if kind == "add" and job not in present and job not in done:
            present[job] = [rest[0], 0]
            if policy is not None:
                policy.add_job(job, 1 + k % 2, REGIMES, rest[0])
        elif kind == "report" and job in present:
            n = min(rest[0], present[job][0] - present[job][1])
            present[job][1] += n
            if policy is not None:
                policy.report_progress(job, [32] * n)
            if present[job][1] == present[job][0]:
                del present[job]
                done.add(job)
        elif kind == "remove" and job in present:
            del present[job]
            if policy is not None:
                policy.remove_job(job)
    return None if policy is not None else {job: d for job, (_, d) in present.items()}


@settings(max_examples=15)
@given(st.lists(_events, min_size=2, max_size=3), st.integers(0, 6))
def test_random_interleavings_from_threads_end_as_the_serial_model(scripts, rounds):
    """Threads playing random event scripts on their own jobs while another serves rounds: every
    event is kept (the policy ends as a plain model of each script) and no round overfills."""
    policy = Policy(3, rounds=3, replan_every=2)
    served: list[list[Any]] = []

    def work(t: int) -> None:
        if t == len(scripts):
            served.extend(policy.next_round() for _ in range(rounds))
        else:
            _replayed(policy, t, scripts[t])

    _in_threads(work, threads=len(scripts) + 1)
    model: dict[Any, int] = {}
    for t, script in enumerate(scripts):
        model.update(_replayed(None, t, script) or {})
    assert sorted(policy.jobs) == sorted(model)
    assert all(policy.epochs_done(job) == epochs for job, epochs in model.items())
    assert all(sum(1 + job[1] % 2 for job in running) <= 3 for running in served)


# --- hostile job arguments -------------------------------------------------------------------------


@pytest.mark.parametrize(("job_id", "message"), [
    (float("nan"), r"^job_id must be a string, a whole number \(not a bool\) or a tuple of them, got float nan "
                   r"\(NaN is not equal to itself"),
    (1.0, r"^job_id must be a string.*got float 1.0$"),
    (True, r"^job_id must be a string.*got bool True$"),
    # NumPy names the type bool_ before 2.0 and bool after.
    (np.bool_(False), r"^job_id must be a string.*got bool_? (np\.)?False_?$"),
    (("a", float("nan")), r"^job_id must be a string.*got tuple \('a', nan\)$"),
    (b"a", r"^job_id must be a string.*got bytes b'a'$"),
    (None, r"^job_id must be a string.*got NoneType None$"),
])
def test_job_ids_that_are_not_strings_whole_numbers_or_tuples_of_them_are_refused(job_id, message):
    policy = Policy(2)
    with pytest.raises(ValidationError, match=message):
        policy.add_job(job_id, 1, REGIMES, 10)
    assert policy.jobs == []


def test_a_nan_job_id_cannot_enter_twice_and_never_runs():
    policy = Policy(2, rounds=3)
    for _ in range(2):
        with pytest.raises(ValidationError, match="job_id must be"):
            policy.add_job(float("nan"), 1, REGIMES, 10)
    policy.add_job("a", 1, REGIMES, 1)
    assert policy.next_round() == ["a"]


def test_large_and_structured_job_ids_are_keyed_and_served():
    policy = Policy(3, rounds=3)
    policy.add_job(2**63, 1, REGIMES, 2)
    policy.add_job(("trace", 7, ("a", -1)), 1, REGIMES, 2)
    policy.add_job(np.int64(5), 1, REGIMES, 2)
    assert policy.jobs == [2**63, ("trace", 7, ("a", -1)), 5] and type(policy.jobs[2]) is int
    assert sorted(map(str, policy.next_round())) == sorted(map(str, policy.jobs))
    policy.report_progress(2**63, [32, 32])
    policy.remove_job(np.int64(5))
    assert policy.completed == [2**63] and policy.jobs == [("trace", 7, ("a", -1))]


def test_a_job_whose_runtime_overflows_is_refused_and_the_policy_keeps_serving():
    policy = Policy(32, rounds=3)
    policy.add_job("small", 1, REGIMES, 10)
    with pytest.raises(ValidationError, match=r"^regimes of job 'big' gives batch size 32 an epoch duration of "
                                              r"1e\+300 s, more than the 1e\+12 s a job may run in all"):
        policy.add_job("big", 1, {32: 1e300}, 10**9)
    with pytest.raises(ValidationError, match=r"^epochs of job 'long' must be a whole number of epochs that run at "
                                              r"most 1e\+12 s in all \(MAX_JOB_SECONDS\) at its slowest regime's "
                                              r"1e\+06 s each, got 10000000$"):
        policy.add_job("long", 1, {32: 1.0, 64: 1e6}, 10**7)
    assert policy.jobs == ["small"] and policy.next_round() == ["small"]
    policy.add_job("edge", 1, {32: MAX_JOB_SECONDS / 1000}, 1000)  # exactly the bound: accepted


@pytest.mark.parametrize(("arguments", "message"), [
    ({"epochs": 10**30},
     r"^epochs of job 'x' must be a positive whole number, at most 1e\+09 \(MAX_JOB_EPOCHS\), got "
     r"1000000000000000000000000000000 \(beyond int64"),
    ({"epochs": MAX_JOB_EPOCHS + 1},
     r"^epochs of job 'x' must be a positive whole number, at most 1e\+09 \(MAX_JOB_EPOCHS\), got 1000000001$"),
    ({"budget": 1e308}, r"^budget of job 'x' must be a number in \(0, 1e\+06\] \(MAX_BUDGET\)"),
    ({"budget": MAX_BUDGET * 1.0001}, r"^budget of job 'x' must be a number in \(0, 1e\+06\]"),
    ({"budget": True}, r"^budget of job 'x' must be a number in \(0, "),
    ({"regimes": {True: 60.0}}, r"^regimes of job 'x' must map batch sizes to epoch durations in seconds \(real "
                                r"numbers, not bools or strings\), as \{32: 60.0\} or \[\(32, 60.0\)\]; got batch "
                                r"size True of type bool$"),
    ({"regimes": {32: "60"}}, r"^regimes of job 'x' must map.*got epoch duration '60' of type str$"),
    ({"regimes": {"32": 60.0}}, r"^regimes of job 'x' must map.*got batch size '32' of type str$"),
    ({"regimes": {32: np.True_}}, r"^regimes of job 'x' must map.*got epoch duration (np\.)?True_? of type bool"),
    ({"regimes": "32"}, r"^regimes of job 'x' must map batch sizes to epoch durations in seconds"),
    ({"regimes": 32}, r"^regimes of job 'x' must map batch sizes to epoch durations in seconds"),
    ({"regimes": [(32, 60.0, 1)]}, r"^regimes of job 'x' must map batch sizes"),
    ({"regimes": [(32, 60.0), (32.0, 30.0)]}, r"^regimes of job 'x' lists a batch size twice"),
    ({"regimes": {float("inf"): 60.0}}, r"^regimes of job 'x' has a batch size that is not finite"),
])
def test_hostile_job_arguments_are_refused_at_add_job_naming_the_job(arguments, message):
    policy = Policy(2)
    with pytest.raises(ValidationError, match=message):
        policy.add_job("x", **{"gpus": 1, "regimes": REGIMES, "epochs": 10, **arguments})
    assert policy.jobs == []


def test_the_largest_budget_and_epochs_allowed_are_served():
    policy = Policy(2, rounds=3)
    policy.add_job("rich", 1, REGIMES, 10, budget=MAX_BUDGET)
    policy.add_job("long", 1, {32: 1.0}, MAX_JOB_EPOCHS)
    policy.add_job("pairs", 1, [(32, 50.0), (np.int64(64), np.float32(30.0))], 10)
    assert sorted(policy.next_round()) == ["long", "rich"]
    assert policy.regimes("pairs") == {32.0: 50.0, 64.0: 30.0}


# --- re-plans that fail, and the deadline --------------------------------------------------------


def test_a_replan_that_raises_is_served_from_the_standing_plan_and_says_so():
    forecaster = Flaky()
    policy = Policy(2, rounds=6, replan_every=2, forecaster=forecaster)
    for job in ("a", "b", "c"):
        policy.add_job(job, 1, REGIMES, 40)
    assert policy.last_decision is None
    first = policy.next_round()
    decision = policy.last_decision
    assert decision is not None and (decision.source, decision.replanned) == ("plan", True)
    assert decision.reason == "re-planned (no plan yet)" and decision.seconds > 0
    forecaster.broken = True
    policy.add_job("d", 1, REGIMES, 40)  # the next round is due to re-plan
    policy.remove_job(first[0])
    plan_before = policy.last_plan
    running = policy.next_round()
    decision = policy.last_decision
    assert decision is not None and (decision.source, decision.replanned) == ("standing", False)
    assert decision.reason.startswith("the re-plan raised RuntimeError: forecaster down; served the standing plan")
    assert len(running) == 2 and first[0] not in running and set(running) <= set(policy.jobs)
    assert policy.last_plan is plan_before and policy.state.stale and policy.round_index == 2
    forecaster.broken = False  # the next round waits (one failure: two rounds on), the one after plans
    policy.next_round()
    decision = policy.last_decision
    assert decision is not None and decision.source == "standing" and "the next is tried in round 3" in decision.reason
    policy.next_round()
    decision = policy.last_decision
    assert decision is not None and decision.source == "plan" and decision.replanned
    assert policy.last_plan is not plan_before and "d" in policy.last_plan.job_ids


def test_jobs_that_arrived_since_the_standing_plan_fill_its_idle_gpus_in_arrival_order():
    forecaster = Flaky()
    policy = Policy(4, rounds=6, forecaster=forecaster)
    policy.add_job("wide", 2, REGIMES, 40)
    assert policy.next_round() == ["wide"]
    forecaster.broken = True
    for job, gpus in (("n1", 1), ("n2", 2), ("n3", 1)):
        policy.add_job(job, gpus, REGIMES, 40)
    assert policy.next_round() == ["wide", "n1", "n3"]  # n2 does not fit the 2 GPUs left after n1
    assert policy.last_decision is not None and policy.last_decision.source == "standing"


def test_with_no_standing_plan_a_failed_replan_falls_back_to_first_fit():
    forecaster = Flaky()
    forecaster.broken = True
    policy = Policy(1, rounds=3, forecaster=forecaster)
    policy.add_job("a", 1, REGIMES, 2)
    policy.add_job("b", 1, REGIMES, 2)
    assert policy.next_round() == ["a"]
    decision = policy.last_decision
    assert decision is not None and (decision.source, decision.replanned) == ("fallback", False)
    assert decision.reason == ("the re-plan raised RuntimeError: forecaster down; no standing plan: served "
                               "first-fit in arrival order")
    policy.report_progress("a", [32, 32])
    assert policy.next_round() == ["b"] and policy.last_plan is None


def test_a_standing_plan_older_than_its_window_is_not_served():
    forecaster = Flaky()
    policy = Policy(1, rounds=2, forecaster=forecaster)
    policy.add_job("a", 1, REGIMES, 40)
    policy.add_job("b", 1, REGIMES, 40)
    # The window's second round is served as planned (no re-plan due); then its window has passed.
    assert sources_after_breaking(policy, forecaster, lambda served: len(served) == 1) == \
        ["plan", "fallback", "fallback", "fallback"]
    assert policy.last_decision is not None
    assert policy.last_decision.reason.endswith("the standing plan is older than its window: served first-fit in "
                                                "arrival order")


def sources_after_breaking(policy: Any, forecaster: Flaky, served: Any, rounds: int = 4) -> list[str]:
    """After a first round, break `forecaster` and serve `rounds` rounds, each answer passing
    `served`; how each was decided (`Decision.source`)."""
    policy.next_round()
    forecaster.broken = True
    sources = []
    for _ in range(rounds):
        assert served(policy.next_round())
        assert policy.last_decision is not None
        sources.append(policy.last_decision.source)
    return sources


@pytest.mark.parametrize("change", [
    {"status": Status.ITERATION_LIMIT},
    {"status": Status.ERROR},
    {"relaxed": np.full((2, 3), np.nan)},
])
def test_a_replan_that_did_not_converge_or_is_not_finite_is_not_used(monkeypatch, change):
    real_plan = replanning.plan_checked

    def spoiled(*args: Any, **kwargs: Any) -> Any:
        return replace(real_plan(*args, **kwargs), **change)

    policy = Policy(1, rounds=3)
    policy.add_job("a", 1, REGIMES, 40)
    policy.add_job("b", 1, REGIMES, 40)
    monkeypatch.setattr(replanning, "plan_checked", spoiled)
    assert policy.next_round() == ["a"]
    decision = policy.last_decision
    assert decision is not None and decision.source == "fallback"
    expected = ("the re-plan's schedule holds a value that is not finite" if "relaxed" in change else
                f"the re-plan ended with status {change['status'].value!r}")
    assert decision.reason.startswith(expected) and policy.last_plan is None


def test_a_tiny_deadline_still_serves_every_round_within_capacity():
    policy = Policy(2, rounds=4, deadline_s=1e-6)
    gangs = {"a": 1, "b": 2, "c": 1}
    for job, gpus in gangs.items():
        policy.add_job(job, gpus, REGIMES, 3)
    rounds = 0
    while policy.jobs:
        running = policy.next_round()
        assert running and sum(gangs[job] for job in running) <= 2
        decision = policy.last_decision
        assert decision is not None and decision.source == "fallback"
        assert "deadline" in decision.reason or "failed in a row" in decision.reason, decision.reason
        for job in running:
            policy.report_progress(job, [32] * min(2, policy.epochs_left(job)))
        rounds += 1
    assert policy.completed == ["a", "c", "b"] and rounds == 4


def test_after_failed_re_plans_the_policy_tries_again_only_after_two_to_the_k_rounds_at_most_a_window():
    policy = Policy(2, rounds=4, deadline_s=1e-6)
    for k in range(3):
        policy.add_job(k, 1, REGIMES, 1000)
    tried = []
    for round_index in range(16):
        policy.next_round()
        decision = policy.last_decision
        assert decision is not None and decision.source == "fallback" and not decision.replanned
        if "failed in a row" not in decision.reason:
            tried.append(round_index)
    # 1, 2 and then at most a window (4 rounds) after 1, 2, 3, ... failures in a row.
    assert tried == [0, 2, 6, 10, 14]
    assert policy.state.failed_replans == 5 and policy.state.retry_at == 18


def test_the_planner_gets_what_the_re_plans_preparation_left_of_the_deadline():
    options = PlanOptions(time_limit_s=0.5)
    begun = time.perf_counter()
    left = within_deadline(options, begun - 0.2).time_limit_s
    assert left is not None and left <= 0.3
    assert within_deadline(PlanOptions(), begun - 10.0).time_limit_s is None
    with pytest.raises(DeadlinePassed, match="before the planner started"):
        within_deadline(options, begun - 1.0)
    # Time left, but not for gathering a million jobs' states (about 3 s) before the next look.
    with pytest.raises(DeadlinePassed, match="too little time to gather 1000000 jobs' states"):
        within_deadline(options, begun, 1_000_000)
    assert within_deadline(options, begun, 10).time_limit_s is not None


def test_a_re_plan_that_succeeds_clears_the_failures():
    policy = Policy(2, rounds=4)
    for k in range(3):
        policy.add_job(k, 1, REGIMES, 1000)
    policy.restore(replace(policy.state, failed_replans=3, retry_at=0))
    policy.next_round()
    assert policy.last_decision is not None and policy.last_decision.replanned
    assert policy.state.failed_replans == 0 and policy.state.retry_at == 0


def test_a_generous_deadline_changes_nothing():
    def run(**deadline: Any) -> list[list[Any]]:
        policy = Policy(2, rounds=4, **deadline)
        for k in range(4):
            policy.add_job(k, 1, REGIMES, 6)
        return [policy.next_round() for _ in range(6)]

    assert run(deadline_s=600.0) == run()


@pytest.mark.parametrize("deadline", [0, -1.0, float("nan"), float("inf"), True, "1"])
def test_the_deadline_must_be_a_finite_positive_number_of_seconds(deadline):
    with pytest.raises(ValidationError, match=r"^deadline_s must be a finite number of seconds > 0 or None, got"):
        Policy(2, deadline_s=deadline)


def test_a_decision_is_frozen() -> None:
    decision = Decision("plan", "no jobs", 0.0, False)
    with pytest.raises(AttributeError):
        decision.source = "fallback"  # type: ignore[misc]


# --- scale -----------------------------------------------------------------------------------------


def test_events_cost_the_same_with_many_jobs_present():
    """20,000 arrivals in well under 5 s (each copied every job before: about 20 s), and the
    state is built once per change, not per event."""
    policy = Policy(256, rounds=3)
    started = time.perf_counter()
    for k in range(20_000):
        policy.add_job(k, 1 + k % 4, REGIMES, 100)
    assert time.perf_counter() - started < 5.0
    started = time.perf_counter()
    for k in range(0, 20_000, 2):
        policy.report_progress(k, [32])
    for k in range(1, 20_000, 2):
        policy.remove_job(k)
    assert time.perf_counter() - started < 5.0
    state = policy.state
    assert policy.state is state and len(state.jobs) == 10_000
    assert policy.jobs == list(range(0, 20_000, 2))
