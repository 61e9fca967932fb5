"""vfm.cluster.windows and the workload's arrays view: phase profiles, the busiest moment, resampling."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.cluster.windows import busiest_states, busiest_window, resample
from vfm.cluster.workload import load_workload


def test_epochs_after_follows_the_phase_profile() -> None:
    workload = load_workload("shockwave_120jobs_32gpus")
    table = workload.arrays()
    durations = np.asarray(workload.jobs[0].epoch_s)
    ends = np.cumsum(durations)
    seconds = np.zeros((table.n_jobs, 3))
    seconds[0] = [ends[4], ends[4] + durations[5] / 2, ends[-1] + 2 * durations[-1]]
    assert table.epochs_after(seconds)[0] == pytest.approx([5, 5.5, durations.size + 2])
    epochs = np.zeros(table.n_jobs)
    epochs[0] = 7
    assert table.seconds_until(epochs)[0] == pytest.approx(ends[6])


def test_arrays_are_read_only_and_keep_every_epoch() -> None:
    workload = load_workload("shockwave_900jobs_256gpus")
    arrays = workload.arrays()
    assert not arrays.phase_epochs.flags.writeable and not arrays.arrival_s.flags.writeable
    np.testing.assert_array_equal(arrays.phase_epochs.sum(axis=1), arrays.epochs)
    np.testing.assert_allclose((arrays.phase_epochs * arrays.phase_epoch_s).sum(axis=1), arrays.isolated_s,
                               rtol=1e-12)


def test_resample_keeps_the_drawn_jobs_profiles() -> None:
    arrays = load_workload("shockwave_120jobs_32gpus").arrays()
    drawn = resample(arrays, 500, 128, seed=1)
    assert drawn.n_jobs == 500 and drawn.capacity == 128
    assert set(drawn.isolated_s.tolist()) <= set(arrays.isolated_s.tolist())
    np.testing.assert_array_equal(resample(arrays, 500, 128, seed=1).arrival_s, drawn.arrival_s)


def test_busiest_states_are_the_busiest_windows_jobs() -> None:
    workload = load_workload("shockwave_120jobs_32gpus")
    states, gpus, capacity = busiest_states(workload)
    busy = busiest_window(workload)
    assert capacity == 32 and states.n_jobs == busy.jobs.size == gpus.size
    np.testing.assert_array_equal(states.epochs_done, busy.epochs_done)
    np.testing.assert_array_equal(gpus, [workload.jobs[i].gpus for i in busy.jobs])
