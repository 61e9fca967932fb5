"""The GPU-cluster window: job validation and the maps between job and market terms."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vfm
from vfm.errors import ValidationError
from vfm.jobs import equal_share, shift_rounds, window_market

JOB = {"gpus": [1, 2], "epochs": [10, 20], "epochs_done": [0, 5], "epochs_per_round": [[1, 1], [2, 2]],
       "capacity": 2}


def window(**overrides):
    return window_market(**{**JOB, **overrides})


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"gpus": [0, 2]}, r"gpus\[0\] \(job 0\) must be a positive whole number of GPUs, got 0"),
        ({"gpus": [1, 1.5]}, r"gpus\[1\] \(job 1\) must be a positive whole number"),
        ({"gpus": [1, 4]}, r"gpus\[1\] \(job 1\) exceeds the cluster's largest capacity \(2 GPUs\)"),
        ({"epochs": [10, 0]}, r"epochs\[1\] \(job 1\) must be > 0"),
        ({"epochs_done": [-1, 5]}, r"epochs_done\[0\] \(job 0\) must be >= 0"),
        ({"epochs_done": [0, 25]}, r"epochs_done\[1\] \(job 1\) exceeds the job's total epochs"),
        ({"epochs_done": [10, 5]}, r"epochs_done\[0\] \(job 0\) equals the job's total epochs: the job is finished"),
        ({"epochs_per_round": [[1, -1], [2, 2]]}, r"epochs_per_round\[0, 1\] \(job 0\) must be >= 0"),
        ({"epochs_per_round": [[0, 0], [2, 2]]}, r"epochs_per_round\[0, 0\] \(job 0\) is 0 in every round"),
        ({"epochs_per_round": [[1, 1]]}, r"epochs_per_round must have shape \(2, any\)"),
        ({"capacity": [2, -1]}, r"capacity\[1\] must be a finite number of GPUs >= 0"),
        ({"capacity": [2, 2, 2]}, r"capacity must have shape \(2\)"),
        ({"epochs": [10, np.nan]}, r"epochs contains NaN"),
    ],
)
def test_malformed_jobs_are_rejected_naming_job_and_field(overrides, pattern):
    with pytest.raises(ValidationError, match=pattern):
        window(**overrides)


def test_market_encodes_the_jobs():
    market = window().market
    assert market.shape == (2, 1, 2)
    np.testing.assert_allclose(market.utilities[:, 0, 0], [1 / 10, 2 / (20 * 2)])
    np.testing.assert_allclose(market.base_utility, [0.0, 0.25])
    np.testing.assert_allclose(market.caps[:, 0, 0], [1.0, 2.0])
    np.testing.assert_allclose(market.utility_cap, [1.0, 1.0])


def test_a_round_too_small_for_a_gang_is_closed_to_it():
    market = window(capacity=[2, 1]).market
    np.testing.assert_allclose(market.caps[:, 0, 1], [1.0, 0.0])


@given(
    st.integers(2, 12).flatmap(
        lambda n: st.tuples(
            st.lists(st.sampled_from([1, 2, 4]), min_size=n, max_size=n),
            st.lists(st.floats(0.0, 0.9), min_size=n, max_size=n),
            st.lists(st.lists(st.floats(0.1, 5.0), min_size=3, max_size=3), min_size=n, max_size=n),
        )
    ),
    st.integers(4, 8),
)
def test_schedule_respects_capacity_gangs_and_completion(jobs, capacity):
    gpus, done_fraction, rate = (np.array(a, dtype=float) for a in jobs)
    epochs = np.full(gpus.size, 20.0)
    window_ = window_market(gpus, epochs, np.floor(done_fraction * epochs), rate, capacity)
    result = vfm.solve(window_.market)
    assert result.success
    y = window_.schedule(result)
    tolerance = 1e-6
    assert (y >= -tolerance).all() and (y <= 1 + tolerance).all()
    assert ((gpus[:, None] * y).sum(axis=0) <= capacity * (1 + tolerance)).all()
    assert (window_.progress(result) <= 1 + tolerance).all()
    np.testing.assert_allclose(window_.job_prices(result), gpus[:, None] * result.prices[0][None, :])
    vfm.check.kkt(result).assert_holds()


# --- issue 15: equal_share and shift_rounds check their arguments ---------------------------------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: equal_share(0, 32), r"n_jobs must be a positive whole number of jobs, got 0"),
        (lambda: equal_share(True, 32), r"n_jobs must be a positive whole number of jobs, got True"),
        (lambda: equal_share("2", 32), r"n_jobs must be a positive whole number of jobs, got '2'"),
        (lambda: equal_share(2, -32), r"gpus must be a finite number of GPUs > 0, got -32"),
        (lambda: equal_share(2, float("nan")), r"gpus must be a finite number of GPUs > 0, got nan"),
        (lambda: equal_share(2, 32, gang=0), r"gang must be a finite number of GPUs > 0, got 0"),
        (lambda: equal_share(2, 32, gang="a"), r"gang must hold real numbers"),
        (lambda: window_market([True], [10], [0], [[1]], capacity=2), r"gpus must hold numbers, got booleans"),
        (lambda: shift_rounds("result"), r"result must be an Equilibrium \(the result of vfm.solve\), got str"),
        (lambda: shift_rounds(vfm.solve(window_market([1], [10], [0], [[1, 1, 1]], capacity=1).market), True),
         r"rounds must be a positive whole number, at most 2, got True"),
    ],
)
def test_bad_share_and_shift_arguments_are_rejected(call, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call()
