"""vfm.gang_packing.first_fit: whole gangs admitted in priority order, each if it fits."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.gang_packing import first_fit


def sequential(order: np.ndarray, gpus: np.ndarray, free: float) -> list[int]:
    """First-fit as its definition reads: in order, each job whose gang fits the GPUs left."""
    admitted = []
    for job in order.tolist():
        if gpus[job] <= free:
            admitted.append(job)
            free -= gpus[job]
    return admitted


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=0, max_size=30), st.integers(0, 40), st.randoms(use_true_random=False))
def test_first_fit_is_the_sequential_walk(gangs: list[int], free: int, rng) -> None:
    gpus = np.array(gangs, dtype=np.float64)
    order = np.arange(len(gangs))
    rng.shuffle(order)
    admitted = first_fit(order, gpus, float(free))
    assert admitted.tolist() == sequential(order, gpus, float(free))
    assert gpus[admitted].sum() <= free


def test_a_gang_that_does_not_fit_is_skipped_not_a_stop() -> None:
    # Gavel's scheduler does `continue`, not `break`: the two one-GPU gangs after the wide one run.
    assert first_fit(np.array([0, 1, 2, 3]), np.array([2, 4, 1, 1]), 4).tolist() == [0, 2, 3]
    assert first_fit(np.array([1, 0]), np.array([2, 4]), 1).tolist() == []
    assert first_fit(np.zeros(0, dtype=np.int64), np.zeros(0), 8).dtype == np.int64


def test_the_planner_and_the_baselines_share_it() -> None:
    from vfm.cluster.baselines import mechanisms
    from vfm.planner import rounding

    assert rounding.first_fit is first_fit and mechanisms.first_fit is first_fit
