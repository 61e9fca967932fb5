"""A hostile scheduler drives `vfm.planner.Policy`: random interleavings of its events with valid
and invalid arguments (NaN and huge job ids, durations and budgets that overflow, epochs beyond the
bound, bools and strings in regimes).

Checked after every call: an invalid call raises `ValidationError` naming the job or the argument
and leaves the policy exactly as it was (the next valid call works); no round exceeds the
capacity or runs a job that is not present; no array the policy hands out is writable (nor can be
made so); `jobs`, `completed` and `epochs_done` agree with a plain model of the events.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfm.errors import PolicyError, ValidationError
from vfm.planner import Policy

CAPACITY = 4
REGIMES = {32: 50.0, 64: 30.0}
IDS = ("a", "b", "c", 7, 2**63, math.nan)
HOSTILE_REGIMES = ({32: 1e300}, {True: 50.0}, {32: "50"}, {"32": 50.0})

job_ids = st.sampled_from(IDS)
gangs = st.sampled_from([1, 2, 4, 0, 5, 1.5, "2"])
epoch_counts = st.sampled_from([1, 3, 6, 0, -1, 2.5, "3", math.nan, True, 10**30])
regime_sets = st.sampled_from([REGIMES, REGIMES, *HOSTILE_REGIMES])
budgets = st.sampled_from([1.0, 1.0, 2, 1e308, math.inf, True])
batches = st.one_of(
    st.lists(st.sampled_from([32, 64]), max_size=8),  # valid sizes, possibly more than left
    st.sampled_from(["32", b"64", 32, [math.nan], [-32.0], [[32]], [32, "x"], [128], {32: 1}, None,
                     np.ma.masked_array([32], mask=[True])]),
)
events = st.lists(st.one_of(
    st.tuples(st.just("add"), job_ids, gangs, epoch_counts, regime_sets, budgets),
    st.tuples(st.just("report"), job_ids, batches),
    st.tuples(st.just("remove"), job_ids),
    st.tuples(st.just("round")),
    st.tuples(st.just("completed")),
), min_size=1, max_size=25)


def _valid_count(value: Any, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _valid_id(job: Any) -> bool:
    return isinstance(job, str) or _valid_count(job, 0)


def _frozen(array: np.ndarray) -> None:
    assert not array.flags.writeable
    with pytest.raises(ValueError):
        array.setflags(write=True)


def _check_arrays(policy: Policy) -> None:
    state = policy.state
    for array in (state.credit, state.waited, state.ran_last):
        _frozen(array)
    plan = policy.last_plan
    if plan is not None:
        for array in (plan.schedule, plan.relaxed, plan.prices, plan.program.progress, plan.program.base):
            _frozen(array)


def _run(policy: Policy, event: tuple[Any, ...], present: dict[Any, list[int]], completed: list[Any]) -> None:
    """Apply `event` to `policy`, expecting what the model (`present`, `completed`) says."""
    kind = event[0]
    before = policy.state
    if kind == "add":
        _, job, gpus, epochs, regimes, budget = event
        valid = (_valid_id(job) and job not in present and job not in completed and _valid_count(gpus, 1)
                 and gpus <= CAPACITY and _valid_count(epochs, 1) and epochs <= 10**9 and regimes is REGIMES
                 and budget in (1.0, 2) and budget is not True)
        if valid:
            policy.add_job(job, gpus, regimes, epochs, budget)
            present[job] = [gpus, epochs, 0]
            return
        with pytest.raises(ValidationError) as error:
            policy.add_job(job, gpus, regimes, epochs, budget)
        assert repr(job) in str(error.value)
    elif kind == "report":
        _, job, sizes = event
        plain = isinstance(sizes, list) and all(type(b) is int and b in REGIMES for b in sizes)
        valid = job in present and plain and len(sizes) <= present[job][1] - present[job][2]
        if valid:
            policy.report_progress(job, sizes)
            present[job][2] += len(sizes)
            if present[job][2] == present[job][1]:
                del present[job]
                completed.append(job)
            return
        with pytest.raises(ValidationError) as error:
            policy.report_progress(job, sizes)
        assert repr(job) in str(error.value)
    elif kind == "remove":
        _, job = event
        if job in present:
            policy.remove_job(job)
            del present[job]
            return
        with pytest.raises(ValidationError) as error:
            policy.remove_job(job)
        assert repr(job) in str(error.value)
    elif kind == "round":
        running = policy.next_round()
        assert len(set(running)) == len(running)
        assert all(job in present for job in running)
        assert sum(present[job][0] for job in running) <= CAPACITY
        _check_arrays(policy)
        return
    else:
        assert policy.completed == completed
        return
    # An invalid call: the policy is exactly as it was.
    assert policy.state is before


@given(script=events)
def test_a_hostile_event_sequence_never_breaks_the_policy(script: list[tuple[Any, ...]]) -> None:
    policy = Policy(CAPACITY, rounds=3, replan_every=2)
    present: dict[Any, list[int]] = {}
    completed: list[Any] = []
    for event in script:
        try:
            _run(policy, event, present, completed)
        except (ValidationError, PolicyError) as error:  # pragma: no cover - a failure explains itself
            raise AssertionError(f"{event!r} raised unexpectedly: {error}") from error
        assert policy.jobs == list(present)
        assert policy.completed == completed
        for job, (_, epochs, done) in present.items():
            assert (policy.epochs_done(job), policy.epochs_left(job)) == (done, epochs - done)
    # Usable to the end: a valid job arrives and is served.
    policy.add_job("last", 1, REGIMES, 1)
    assert "last" in policy.next_round() or len(present) > 0
    _check_arrays(policy)
