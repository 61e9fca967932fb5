"""`vfm.planner.round_schedule`: whole gangs within capacity, owed rounds, lateness first, work conservation."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vfm.planner import RoundingContext, round_schedule
from vfm.planner.rounding import quantize

ROUND_S = 120.0


@st.composite
def fractional_inputs(draw, ample: bool = False):
    """Random fractional schedules (not necessarily within capacity), gangs, capacities, remaining
    times (some 0), optional lateness, base progress (some 0) and useful rounds. With `ample`,
    every round holds every gang at once."""
    n = draw(st.integers(1, 12))
    rounds = draw(st.integers(1, 6))
    fractions = st.floats(0.0, 1.0, allow_nan=False) | st.sampled_from([0.0, 0.5, 1.0])
    relaxed = draw(arrays(np.float64, (n, rounds), elements=fractions))
    gpus = draw(arrays(np.int64, n, elements=st.integers(1, 8))).astype(np.float64)
    if ample:
        capacity = np.full(rounds, gpus.sum()) + draw(arrays(np.int64, rounds, elements=st.integers(0, 4)))
    else:
        capacity = draw(arrays(np.int64, rounds, elements=st.integers(0, 16)))
    remaining_s = draw(arrays(np.float64, n, elements=st.sampled_from([0.0, 60.0, 120.0, 500.0, 1e5])
                              | st.floats(0.0, 2000.0, allow_nan=False, allow_subnormal=False)))
    lateness = draw(st.none() | arrays(np.float64, n, elements=st.floats(0.0, 10.0, allow_nan=False)))
    base = draw(st.none() | arrays(np.float64, n, elements=st.sampled_from([0.0, 0.3])))
    useful = draw(st.none() | arrays(np.bool_, (n, rounds)))
    return relaxed, gpus, capacity.astype(np.float64), remaining_s, lateness, base, useful


def _round(inputs):
    relaxed, gpus, capacity, remaining_s, lateness, base, useful = inputs
    return round_schedule(relaxed, gpus, capacity, remaining_s, ROUND_S, RoundingContext(lateness, base, useful))


def _owed(relaxed, gpus, capacity, base, useful):
    """The rounds each job is owed (the module docstring): round(sum_t y) with y read to RESOLUTION,
    at least 1 for a job with no progress planned any time (read before quantizing), at most the
    rounds it fits and makes progress in."""
    planned = quantize(relaxed).sum(axis=1)
    owed = np.floor(planned + 0.5)
    if base is not None:
        owed = np.where((base == 0) & (relaxed.sum(axis=1) > 0), np.maximum(owed, 1), owed)
    serves = gpus[:, None] <= capacity[None, :]
    if useful is not None:
        serves &= useful
    return np.minimum(owed, serves.sum(axis=1))


@given(fractional_inputs())
def test_whole_gangs_within_capacity_only_where_they_fit(inputs):
    relaxed, gpus, capacity, *_ = inputs
    schedule = _round(inputs)
    assert schedule.dtype == np.bool_ and schedule.shape == relaxed.shape
    assert np.all(gpus @ schedule <= capacity)
    assert not schedule[gpus[:, None] > capacity[None, :]].any()


@given(fractional_inputs())
def test_work_conserving(inputs):
    # In every round, no job is left waiting that fits the GPUs left free and has running time left
    # after the rounds it was given so far.
    relaxed, gpus, capacity, remaining_s, *_ = inputs
    schedule = _round(inputs)
    for t in range(relaxed.shape[1]):
        free = capacity[t] - gpus @ schedule[:, t]
        left_s = remaining_s - ROUND_S * schedule[:, :t].sum(axis=1)
        waiting = ~schedule[:, t] & (gpus <= free) & (left_s > 0)
        assert not waiting.any(), (t, np.flatnonzero(waiting), schedule.astype(int))


@given(fractional_inputs())
def test_jobs_neither_owed_nor_with_time_left_never_run(inputs):
    relaxed, gpus, capacity, remaining_s, _lateness, base, useful = inputs
    schedule = _round(inputs)
    idle = (_owed(relaxed, gpus, capacity, base, useful) == 0) & (remaining_s <= 0)
    assert not schedule[idle].any()


@given(fractional_inputs(ample=True))
def test_ample_capacity_serves_every_owed_round(inputs):
    relaxed, gpus, capacity, remaining_s, _lateness, base, useful = inputs
    schedule = _round(inputs)
    owed = _owed(relaxed, gpus, capacity, base, useful)
    assert np.all(schedule.sum(axis=1) >= owed), (owed, schedule.sum(axis=1))
    # Owed rounds are served where the job makes progress.
    if useful is not None:
        assert np.all((schedule & useful).sum(axis=1) >= owed)
    # Work conservation: with ample capacity every unfinished job runs in every round its gang
    # fits (even past its forecast time: forecasts can be short); a finished job only where owed.
    fits = gpus[:, None] <= capacity[None, :]
    unfinished = remaining_s > 0
    assert schedule[unfinished][fits[unfinished]].all()
    assert np.all(schedule[~unfinished].sum(axis=1) <= owed[~unfinished])


@given(fractional_inputs())
def test_owed_rounds_are_served_when_they_all_fit_together(inputs):
    # If the owed jobs of every round fit together (so no owed job can crowd out another), every job
    # gets at least its owed rounds, whatever the capacity.
    relaxed, gpus, capacity, _remaining_s, _lateness, base, useful = inputs
    owed = _owed(relaxed, gpus, capacity, base, useful)
    serves = (gpus[:, None] <= capacity[None, :]) & (True if useful is None else useful)
    if np.all(gpus @ (serves & (owed > 0)[:, None]) <= capacity):
        assert np.all(_round(inputs).sum(axis=1) >= owed)


def test_docstring_example():
    schedule = round_schedule(np.full((3, 2), 2 / 3), np.array([2, 2, 2]), np.array([4, 4]),
                              remaining_s=np.full(3, 1e4), round_s=ROUND_S)
    np.testing.assert_array_equal(schedule.astype(int), [[1, 1], [1, 0], [0, 1]])


def test_latest_job_is_served_first():
    # Two 2-GPU jobs planned half of each of two rounds, 2 GPUs: each owed one round. The later
    # one (by lateness) runs first, whatever the job order.
    relaxed = np.full((2, 2), 0.5)
    for late in ([0.0, 3.0], [3.0, 0.0]):
        schedule = round_schedule(relaxed, np.array([2.0, 2.0]), np.array([2.0, 2.0]), np.zeros(2), ROUND_S,
                                  RoundingContext(lateness=np.array(late)))
        first = int(np.argmax(late))
        np.testing.assert_array_equal(schedule[:, 0], np.arange(2) == first)
        np.testing.assert_array_equal(schedule[:, 1], np.arange(2) != first)


def test_a_job_that_must_run_now_goes_before_a_larger_fraction():
    # Job 0 is owed 2 rounds and fits 2: it must run in both. Job 1 has the larger fraction in
    # round 0 but is owed a single round out of two.
    relaxed = np.array([[0.9, 0.9], [1.0, 0.0]])
    schedule = round_schedule(relaxed, np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.zeros(2), ROUND_S)
    np.testing.assert_array_equal(schedule.astype(int), [[1, 1], [0, 0]])


def test_fresh_job_planned_any_time_is_owed_a_round():
    # Job 0 has no progress yet and is planned 0.3 rounds: owed one (round(0.3) = 0 otherwise).
    relaxed = np.array([[0.2, 0.1], [1.0, 0.0]])
    schedule = round_schedule(relaxed, np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.zeros(2), ROUND_S,
                              RoundingContext(base=np.array([0.0, 0.5])))
    np.testing.assert_array_equal(schedule.astype(int), [[0, 1], [1, 0]])
    schedule = round_schedule(relaxed, np.array([1.0, 1.0]), np.array([1.0, 1.0]), np.zeros(2), ROUND_S,
                              RoundingContext(base=np.array([0.2, 0.5])))
    np.testing.assert_array_equal(schedule.astype(int), [[0, 0], [1, 0]])


def test_a_fresh_job_planned_below_the_resolution_is_still_owed_a_round():
    # Job 0 has no progress yet and is planned a sliver (6.5e-4 of the round, as a large priority
    # weight on job 1 leaves it), which quantizes to 0: it is planned, so it is owed its round.
    relaxed = np.array([[6.5e-4], [1.0 - 6.5e-4]])
    schedule = round_schedule(relaxed, np.array([1.0, 1.0]), np.array([1.0]), np.full(2, 1e4), ROUND_S,
                              RoundingContext(base=np.array([0.0, 0.5])))
    np.testing.assert_array_equal(schedule.astype(int), [[1], [0]])
    # Planned no time at all, it is owed none.
    schedule = round_schedule(np.array([[0.0], [1.0]]), np.array([1.0, 1.0]), np.array([1.0]), np.full(2, 1e4),
                              ROUND_S, RoundingContext(base=np.array([0.0, 0.5])))
    np.testing.assert_array_equal(schedule.astype(int), [[0], [1]])


@pytest.mark.parametrize(("relaxed", "gpus", "capacity"), [
    # plan's relaxation of two fresh jobs on 4 GPUs for 3 rounds (test_plan.py): a 1-GPU job all of
    # every round, a 4-GPU job 3/4 of every round. Owed 3 and round(2.25) = 2 rounds.
    ([[1.0, 1.0, 1.0], [0.75, 0.75, 0.75]], [1.0, 4.0], [4.0, 4.0, 4.0]),
    # Two 1-GPU jobs on 1 GPU: job 1 planned 0.3 rounds (owed 1: it is fresh), job 0 both rounds.
    ([[1.0, 1.0], [0.2, 0.1]], [1.0, 1.0], [1.0, 1.0]),
])
def test_fresh_job_owed_rounds_is_not_starved_by_a_must_run_job(relaxed, gpus, capacity):
    relaxed = np.array(relaxed)
    schedule = round_schedule(relaxed, np.array(gpus), np.array(capacity), np.full(2, 1e4), ROUND_S,
                              RoundingContext(base=np.array([0.5, 0.0])))
    assert schedule[1].any()


def test_a_fresh_job_gets_its_first_round_where_every_scenario_credits_progress():
    # Job 0 has no progress yet and is planned for round 2, where some scenario forecasts it has
    # already finished (progress 0 there): rounded there, its utility is 0 in that scenario. Its
    # only round with progress in every scenario is round 0, so its owed round goes there.
    relaxed = np.array([[0.0, 0.0, 1.0], [1.0, 1.0, 0.0]])
    covering = np.array([[True, False, False], [True, True, True]])
    common = dict(gpus=np.array([1, 1]), capacity=np.array([1, 1, 1]), remaining_s=np.array([360.0, 360.0]),
                  round_s=120.0)
    base, useful = np.array([0.0, 0.5]), np.ones((2, 3), dtype=bool)
    without = round_schedule(relaxed, context=RoundingContext(base=base, useful=useful), **common)
    assert not without[0, 0] and without[0, 2]  # without covering rounds: the round earns nothing somewhere
    schedule = round_schedule(relaxed, context=RoundingContext(base=base, useful=useful, covering=covering), **common)
    assert schedule[0, 0] and schedule[0].sum() == 1 and schedule[1, 1:].all()
