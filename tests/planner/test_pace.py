"""The program's pace (`PlanOptions.pace`): progress that depends on how many rounds a job runs,
not on when, with the forecast entering through the remaining runtime."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.cluster.generate import WorkloadSpec, generate_workload
from vfm.forecast import JobStates, OracleForecaster
from vfm.planner import plan
from vfm.planner.pace import flat_pace

ROUND_S = 120.0


@given(remaining=st.floats(1.0, 1e5), left=st.integers(1, 500), rounds=st.integers(1, 40))
def test_a_flat_pace_spreads_the_epochs_left_evenly_over_the_remaining_runtime(remaining, left, rounds):
    epochs = flat_pace(np.array([remaining]), np.array([float(left)]), rounds, ROUND_S)[0]
    full = int(remaining // ROUND_S)  # whole rounds before the forecast end
    rate = left * ROUND_S / remaining
    np.testing.assert_allclose(epochs[:min(full, rounds)], rate, rtol=1e-12)
    assert epochs.sum() == pytest.approx(min(left, rate * rounds), rel=1e-12)
    assert (epochs >= 0).all() and (epochs[full + 1:] == 0).all()


def test_a_job_with_no_runtime_left_gets_its_epochs_left_in_the_first_round():
    epochs = flat_pace(np.array([0.0, 240.0]), np.array([3.0, 0.0]), 4, ROUND_S)
    np.testing.assert_array_equal(epochs, [[3.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])


def test_dirichlet_forecasts_are_already_flat_so_the_pace_changes_nothing_for_them():
    states = JobStates.from_lists([40, 12, 30], [{32: 60.0, 64: 30.0}, {16: 200.0}, {64: 90.0, 128: 45.0}],
                                  [[32] * 5 + [64] * 3, [], [64] * 2])
    flat = plan(states, [1, 2, 2], 4, rounds=10)
    calendar = plan(states, [1, 2, 2], 4, rounds=10, pace="forecast")
    np.testing.assert_allclose(flat.program.progress, calendar.program.progress, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(flat.schedule, calendar.schedule)


def _oracle_window(seed: int, jobs: int = 12):
    """A generated workload's first `jobs` jobs at their start, and the oracle of their true epochs."""
    workload = generate_workload(WorkloadSpec(jobs=jobs, gpus=8), seed=seed)
    chosen = workload.jobs[:jobs]
    states = JobStates.from_lists([job.epochs for job in chosen], [job.regimes for job in chosen],
                                  job_ids=[job.id for job in chosen])
    oracle = OracleForecaster({job.id: job.epoch_s for job in chosen})
    return chosen, states, oracle


@settings(max_examples=10, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_with_the_oracle_the_program_credits_what_running_delivers(seed):
    # Executing k rounds of a job whose true epochs are known (the simulator's mechanics without
    # restarts) completes the epochs that fit in k * W seconds. The flat program credits the chord
    # of that curve: the same work at the same end (all epochs when k rounds cover the runtime
    # left), and the same credit wherever in the window the k rounds lie.
    chosen, states, oracle = _oracle_window(seed)
    rounds = 30
    result = plan(states, [job.gpus for job in chosen], 8, rounds=rounds, forecaster=oracle)
    progress = result.program.progress[0] * states.total_epochs[:, None]  # epochs per round
    for i, job in enumerate(chosen):
        ends = np.cumsum(job.epoch_s)
        runtime = ends[-1]
        need = int(np.ceil(runtime / ROUND_S - 1e-12))  # rounds that cover the runtime left
        credited = np.cumsum(progress[i])
        if need <= rounds:
            # Planned to completion: credited all its epochs, exactly what running those rounds does.
            assert credited[need - 1] == pytest.approx(job.epochs, rel=1e-9)
            assert int(np.searchsorted(ends, need * ROUND_S, side="right")) == job.epochs
        else:
            # Not completing in the window: the same credit in every round, so the credit of k
            # rounds does not depend on which; after the window it is the chord's, at the true pace.
            np.testing.assert_allclose(progress[i], job.epochs * ROUND_S / runtime, rtol=1e-9)
            done = np.searchsorted(ends, rounds * ROUND_S, side="right")  # whole epochs run
            chord = job.epochs * rounds * ROUND_S / runtime
            assert credited[-1] == pytest.approx(chord, rel=1e-9)
            # A job that only speeds up runs a convex curve, below its chord (the concave envelope):
            # the credit is an upper bound, met at the end. One that only slows down runs above it.
            if np.all(np.diff(job.epoch_s) <= 0):
                assert done <= chord + 1e-9
            if np.all(np.diff(job.epoch_s) >= 0):
                assert done >= np.floor(chord + 1e-9)


def test_the_calendar_pace_credits_a_deferred_job_the_speed_it_would_have_reached():
    # A job whose epochs get faster (120 s, then 30 s): its k-th round is worth more the later it
    # comes under the calendar pace, the same under the flat one.
    states = JobStates.from_lists([20], [{32: 120.0, 64: 30.0}], job_ids=["a"])
    oracle = OracleForecaster({"a": [120.0] * 4 + [30.0] * 16})
    calendar = plan(states, [1], 1, rounds=6, forecaster=oracle, pace="forecast").program.progress[0, 0]
    flat = plan(states, [1], 1, rounds=6, forecaster=oracle).program.progress[0, 0]
    assert calendar[5] == 4 * calendar[0] > 0
    np.testing.assert_allclose(flat, flat[0])
    assert flat[0] == pytest.approx(ROUND_S / (4 * 120.0 + 16 * 30.0))
