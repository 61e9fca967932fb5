"""The policy's re-plan helpers (`vfm.planner.policy.replanning`)."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.planner.policy.replanning import job_states
from vfm.planner.policy.state import JobRecord


def _records(seed: int) -> list[JobRecord]:
    rng = np.random.default_rng(seed)
    records = []
    for _ in range(int(rng.integers(1, 12))):
        regimes = tuple((float(2 ** k), float(rng.uniform(10, 100))) for k in range(int(rng.integers(1, 5))))
        stages = tuple((int(rng.integers(len(regimes))), int(rng.integers(1, 6)))
                       for _ in range(int(rng.integers(0, 6))))
        records.append(JobRecord(gpus=1, regimes=regimes, epochs=100, budget=1.0, stages=stages, kind="k"))
    return records


@pytest.mark.parametrize("seed", range(10))
def test_job_states_pads_each_jobs_regimes_and_counts_its_stages(seed):
    records = _records(seed)
    states = job_states(records, tuple(range(len(records))))
    for row, record in enumerate(records):  # the job's own view of itself, regime by regime
        k = len(record.regimes)
        assert np.array_equal(states.regime_labels[row, :k], [label for label, _ in record.regimes])
        assert np.array_equal(states.regime_durations[row, :k], [seconds for _, seconds in record.regimes])
        assert np.array_equal(states.regime_counts[row, :k], record.counts)
        assert states.regime_mask[row].sum() == k and np.isnan(states.regime_labels[row, k:]).all()
        assert (states.regime_counts[row, k:] == 0).all()
    assert states.job_ids == tuple(range(len(records)))
