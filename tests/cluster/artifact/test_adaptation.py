"""Batch-size adaptation as the artifact applies it."""

from __future__ import annotations

import numpy as np

from vfm.cluster.artifact._adaptation import Rules, rescale, wanted
from vfm.cluster.artifact.mechanics import throughput_table

TABLE = throughput_table()


def rules(model: str, adaptation: str, initial: int, samples: int, gang: int = 1) -> Rules:
    return Rules.of([model], [adaptation], np.array([initial]), np.array([gang]), np.array([samples]), TABLE)


def test_a_change_keeps_the_epoch_count_and_rounds_progress_up_to_whole_epochs() -> None:
    # The artifact's own example: Recommendation, 117,907 samples, bs 4096 -> 8192 with 3500
    # steps left to run keeps 121 epochs, 1815 steps (15 per epoch), not 1750.
    r = rules("Recommendation", "gns", 4096, 117_907)
    changed = rescale(r, np.array([0]), np.array([True]), np.array([4096]), np.array([3500]), np.array([40]))
    assert changed.batch.tolist() == [8192] and changed.total_steps.tolist() == [1815]
    # 40 steps at 29 per epoch is 1.4 epochs: credited as 2 whole epochs of 15 steps.
    assert changed.steps_run.tolist() == [30]
    assert changed.throughput[0] == TABLE["Recommendation (batch size 8192)|1"]


def test_a_job_that_starts_at_the_scaled_size_never_changes() -> None:
    r = rules("ResNet-18", "accordion", 256, 50_000)
    changed = rescale(r, np.array([0]), np.array([True]), np.array([256]), np.array([1000]), np.array([10]))
    assert changed.rows.size == 0


def test_accordion_asks_for_the_large_size_outside_critical_regimes_and_back_inside() -> None:
    r = rules("ResNet-18", "accordion", 32, 50_000)
    per_epoch = 1563  # ceil(50000 / 32)
    up, down = wanted(r, np.array([32]), np.array([5 * per_epoch]))
    assert not up[0] and not down[0]  # epoch 5 < 10 is critical
    up, down = wanted(r, np.array([32]), np.array([10 * per_epoch + 1]))
    assert up[0]  # the ceiling puts a job inside its 11th epoch at epoch 11
    up, down = wanted(r, np.array([256]), np.array([150 * 196]))
    assert down[0] and not up[0]


def test_gns_looks_one_epoch_ahead_on_the_artifacts_schedule() -> None:
    r = rules("ResNet-18", "gns", 32, 50_000)  # schedule: 64 from epoch 21
    per_epoch = 1563
    assert not wanted(r, np.array([32]), np.array([19 * per_epoch]))[0][0]
    assert wanted(r, np.array([32]), np.array([20 * per_epoch]))[0][0]
    # Once at 64, progress counts in epochs of 782 steps: epoch 20 wants nothing more yet.
    assert not wanted(r, np.array([64]), np.array([20 * 782]))[0][0]
