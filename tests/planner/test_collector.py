"""vfm/planner/policy/collector.py: no cycle collection runs inside a decision, and the collector is
left as the caller had it."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from vfm.planner import Policy
from vfm.planner.policy.collector import pause_collector, resume_collector


@pytest.fixture
def eager_collector() -> Iterator[list[bool]]:
    """A collector that starts a generation-0 collection at nearly every container allocation, and
    the list of whether each collection started inside a decision (`inside` set by the caller)."""
    threshold = gc.get_threshold()
    started: list[bool] = []

    def watch(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(inside[0])

    gc.callbacks.append(watch)
    gc.set_threshold(1, 10, 10)
    try:
        yield started
    finally:
        gc.set_threshold(*threshold)
        gc.callbacks.remove(watch)
        gc.enable()


#: Whether a decision is running: a list item, set without allocating (an Event's set and clear
#: allocate, and with a collector this eager that starts collections).
inside = [False]


def _decide_rounds(policy: Policy, rounds: int) -> None:
    for _ in range(rounds):
        inside[0] = True
        policy.next_round()
        inside[0] = False
        [{} for _ in range(50)]  # the caller's own allocations between rounds


def _policy() -> Policy:
    policy = Policy.shockwave(4, 120.0)
    for job in range(6):
        policy.add_job(job, 1 + job % 2, {32: 60.0 + 7 * job}, 20 + job)
    return policy


def test_no_collection_starts_inside_a_decision_and_the_deferred_ones_run_after(eager_collector: list[bool]) -> None:
    policy = _policy()
    _decide_rounds(policy, 6)
    assert gc.isenabled()
    assert eager_collector, "the eager collector should have collected between the rounds"
    assert not any(eager_collector), f"{sum(eager_collector)} collections started inside a decision"


def test_a_collector_the_caller_disabled_stays_disabled(eager_collector: list[bool]) -> None:
    policy = _policy()
    gc.disable()
    eager_collector.clear()
    _decide_rounds(policy, 2)
    assert not gc.isenabled()
    assert not eager_collector, "no automatic collection while the caller keeps the collector disabled"


def test_overlapping_pauses_on_two_threads_restore_the_collector_once_both_leave() -> None:
    assert gc.isenabled()
    entered, release = threading.Barrier(3), threading.Event()

    def pause() -> None:
        pause_collector()
        try:
            entered.wait()
            release.wait()
        finally:
            resume_collector()

    threads = [threading.Thread(target=pause) for _ in range(2)]
    for thread in threads:
        thread.start()
    entered.wait()
    assert not gc.isenabled()  # both inside
    release.set()
    for thread in threads:
        thread.join()
    assert gc.isenabled()


def test_the_collector_is_restored_when_a_decision_raises() -> None:
    policy = _policy()
    policy._decide = None  # type: ignore[method-assign]  # the decision fails inside the pause
    with pytest.raises(TypeError):
        policy.next_round()
    assert gc.isenabled()
