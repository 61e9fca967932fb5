"""The oracle forecaster: exact against a direct simulation of each job's future, and its errors."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.errors import ValidationError
from vfm.forecast import Forecaster, JobStates, OracleForecaster


def futures(seed: int) -> tuple[dict[str, np.ndarray], JobStates]:
    """Jobs of random lengths with noisy epoch times over two regimes, at random progress."""
    rng = np.random.default_rng(seed)
    epoch_s, regimes, observed, ids = {}, [], [], []
    for job in range(12):
        epochs = int(rng.integers(1, 40))
        batch = np.where(np.arange(epochs) < rng.integers(0, epochs + 1), 32.0, 64.0)
        seconds = np.where(batch == 32.0, 70.0, 25.0) * rng.lognormal(0.0, 0.3, epochs)
        done = int(rng.integers(0, epochs + 1)) if job else epochs  # job 0 has finished
        epoch_s[f"j{job}"] = seconds
        regimes.append({32.0: 70.0, 64.0: 25.0})
        observed.append(batch[:done].tolist())
        ids.append(f"j{job}")
    states = JobStates.from_lists([s.size for s in epoch_s.values()], regimes, observed, job_ids=ids)
    return epoch_s, states


def direct(seconds: np.ndarray, done: int, clock: float) -> float:
    """Epochs finished by `clock` seconds of running from epoch `done` on, the running one's fraction included."""
    for k, d in enumerate(seconds[done:]):
        if clock < d:
            return k + clock / d
        clock -= d
    return float(seconds.size - done)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forecasts_are_each_jobs_true_future(seed):
    epoch_s, states = futures(seed)
    oracle = OracleForecaster(epoch_s, scenario_progress="whole")
    rounds, round_s = 15, 90.0
    done = states.epochs_done.astype(int)
    np.testing.assert_allclose(oracle.remaining_runtime(states),
                               [s[d:].sum() for s, d in zip(epoch_s.values(), done, strict=True)], rtol=1e-12)
    want = np.array([[direct(s, d, round_s * (t + 1)) for t in range(rounds)]
                     for s, d in zip(epoch_s.values(), done, strict=True)])
    got = np.cumsum(oracle.epochs_per_round(states, rounds, round_s), axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    # Whole-epoch scenarios count the epochs that have ended; every scenario is the truth.
    whole = oracle.sample_epochs_per_round(states, rounds, round_s, 3, seed=0)
    np.testing.assert_array_equal(np.cumsum(whole, axis=2), np.broadcast_to(np.floor(want + 1e-9), (3, *want.shape)))
    fluid = OracleForecaster(epoch_s).sample_epochs_per_round(states, rounds, round_s, 2)
    np.testing.assert_allclose(np.cumsum(fluid, axis=2), np.broadcast_to(want, (2, *want.shape)), atol=1e-9)
    assert np.all(oracle.epochs_per_round(states, rounds, round_s)[0] == 0)  # the finished job


def test_implements_the_forecaster_interface():
    assert isinstance(OracleForecaster({"a": [1.0]}), Forecaster)


@pytest.mark.parametrize("epoch_s, ids, message", [
    ({"a": [60.0, 30.0]}, ["b"], r"no epoch_s for job 0 \(id 'b'\)"),
    ({"a": [60.0]}, ["a"], r"epoch_s for job 0 \(id 'a'\) lists 1 epochs, but the job has 2"),
    ({"a": [60.0, 30.0]}, None, r"states.job_ids must be the jobs' ids, by which OracleForecaster finds"),
])
def test_jobs_it_does_not_know_are_named(epoch_s, ids, message):
    states = JobStates.from_lists([2], [{32: 60.0, 64: 30.0}], job_ids=ids)
    with pytest.raises(ValidationError, match=message):
        OracleForecaster(epoch_s).remaining_runtime(states)


@pytest.mark.parametrize("epoch_s, message", [
    ({}, "non-empty mapping"),
    ({"a": [60.0, -1.0]}, r"epoch_s\['a'\]\[1\] must be a finite number of seconds > 0, got -1"),
    ({"a": [[60.0]]}, r"epoch_s\['a'\] must have shape \(any\), one duration per epoch"),
    ({"a": ["x"]}, r"epoch_s\['a'\] must hold real numbers"),
    ({"a": [np.nan]}, r"epoch_s\['a'\]\[0\] must be a finite number of seconds > 0, got nan"),
    ({"a": []}, r"epoch_s\['a'\] must list at least one epoch"),
])
def test_bad_durations_are_named(epoch_s, message):
    with pytest.raises(ValidationError, match=message):
        OracleForecaster(epoch_s)
    with pytest.raises(ValidationError, match="scenario_progress"):
        OracleForecaster({"a": [1.0]}, scenario_progress="exact")


def test_states_that_are_not_job_states_are_rejected():
    with pytest.raises(ValidationError, match=r"states given to OracleForecaster must be a vfm.forecast.JobStates"):
        OracleForecaster({"a": [60.0]}).remaining_runtime("states")
