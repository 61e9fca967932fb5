"""Batch-size adaptation as the Shockwave artifact's simulator performs it, for all jobs at once.

The artifact does not replay a job's recorded batch sizes: every round it decides, from the
job's progress, whether the job wants a larger (or, under Accordion, the original) batch size,
and applies the change when the job's next executed round ends. These are those two steps on
arrays over the jobs (`Jobs`), following ``scheduler.py`` of uw-mad-dash/shockwave
(``_simulate_gns``, ``_simulate_accordion``, ``_scale_bs_and_iters``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vfm.cluster.workload import SHIPPED

IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

# The largest batch size each model's profile covers; a job there never asks for more.
LARGEST = {"ResNet-18": 256, "ResNet-50": 128, "Transformer": 128, "LM": 80, "Recommendation": 8192}
# The smallest; an Accordion job there never asks for less.
SMALLEST = {"ResNet-18": 16, "ResNet-50": 16, "Transformer": 16, "LM": 5, "Recommendation": 512}
# What Accordion scales up to. A job that *starts* at this size never changes (the artifact
# rejects the change); Transformer jobs are absent, so they never change either.
SCALED = {"LM": 80, "ResNet-18": 256, "ResNet-50": 128, "Recommendation": 8192}
# Epochs covered by a GNS schedule; the artifact evaluates its patterns over 760 epochs, and a
# job further on keeps the schedule's last batch size (no shipped job gets there).
GNS_EPOCHS = 760


def ceil_div(a: IntArray, b: IntArray) -> IntArray:
    """Integer ``ceil(a / b)`` for b > 0 (equal to the artifact's float ``math.ceil`` here)."""
    return -(-a // b)


def gns_schedules() -> dict[str, list[list[int]]]:
    """The artifact's GNS batch-size schedules: ``"<model> (batch size b)|<gang>"`` ->
    ``[[first epoch, batch size], ...]`` (``data/shockwave/gns_batch_sizes.json``)."""
    with open(SHIPPED / "gns_batch_sizes.json") as handle:
        schedules: dict[str, list[list[int]]] = json.load(handle)["schedules"]
    return schedules


@dataclass(frozen=True)
class Rules:
    """Per-job constants of the adaptation rules, shape (n,) each (read-only).

    ``gns`` is the (n, GNS_EPOCHS) batch size a GNS job wants in each epoch (zeros for other
    jobs); ``critical`` holds the parameters of Accordion's critical regimes.
    """

    model: NDArray[np.str_]
    gns_job: BoolArray
    accordion_job: BoolArray
    initial: IntArray
    samples: IntArray
    largest: IntArray
    smallest: IntArray
    scaled: IntArray  # 0 where the model has no scaled size
    gns: IntArray
    gang: IntArray
    table: dict[str, float]  # steps/s of "<model> (batch size b)|<gang>"

    def throughput(self, rows: IntArray, batch: IntArray) -> NDArray[np.float64]:
        """Steps per second of `rows` at batch sizes `batch` (NaN where the table has none)."""
        keys = (f"{self.model[r]} (batch size {b})|{self.gang[r]}" for r, b in zip(rows, batch, strict=True))
        return np.array([self.table.get(key, np.nan) for key in keys], dtype=float)

    @classmethod
    def of(cls, model: list[str], adaptation: list[str], initial: IntArray, gang: IntArray,
           samples: IntArray, table: dict[str, float]) -> Rules:
        schedules = gns_schedules()
        gns_job = np.array([a == "gns" for a in adaptation])
        accordion_job = np.array([a == "accordion" for a in adaptation])
        gns = np.zeros((len(model), GNS_EPOCHS), dtype=np.int64)
        for row in np.flatnonzero(gns_job):
            key = f"{model[row]} (batch size {initial[row]})|{gang[row]}"
            for first, size in schedules.get(key, [[0, int(initial[row])]]):
                gns[row, first:] = size
        return cls(model=np.array(model), gns_job=gns_job, accordion_job=accordion_job & (
                       np.array(model) != "Transformer"), initial=initial, samples=samples,
                   largest=np.array([LARGEST.get(m, -1) for m in model]),
                   smallest=np.array([SMALLEST.get(m, -1) for m in model]),
                   scaled=np.array([SCALED.get(m, 0) for m in model]), gns=gns, gang=gang, table=table)

    def critical(self, epoch: IntArray) -> BoolArray:
        """Whether each job's current epoch is in an Accordion critical regime."""
        return accordion_critical(self.model, self.initial, epoch)


def accordion_critical(model: NDArray[np.str_], initial: IntArray, epoch: IntArray) -> BoolArray:
    """Whether `epoch` (0-based) of a `model` job that started at batch size `initial` is in one of
    Accordion's critical regimes, where it trains at its initial batch size (arrays broadcast)."""
    resnet18_head = np.where(initial == 256, 20, 10)
    recommendation_head = np.select([np.isin(initial, (512, 1024)), initial == 2048], [30, 40], 10)
    return np.select(
        [model == "LM", model == "Recommendation", model == "ResNet-50", model == "ResNet-18"],
        [epoch < 10, epoch < recommendation_head, epoch % 30 < 10,
         (epoch < resnet18_head) | ((150 <= epoch) & (epoch < 160)) | ((250 <= epoch) & (epoch < 260))],
        False)


def wanted(rules: Rules, batch: IntArray, steps_run: IntArray) -> tuple[BoolArray, BoolArray]:
    """Which jobs now want a larger batch size, and which (Accordion) want the original back.

    The artifact's current epoch is ``ceil(steps_run / steps_per_epoch)``, so a job in the middle
    of its e-th epoch (0-based) is at epoch e + 1; GNS also looks one epoch further.
    """
    epoch = ceil_div(steps_run, ceil_div(rules.samples, batch))
    rows = np.arange(len(batch))
    ahead = rules.gns[rows, np.minimum(epoch + 1, GNS_EPOCHS - 1)]
    now = rules.gns[rows, np.minimum(epoch, GNS_EPOCHS - 1)]
    below_largest = batch != rules.largest
    gns_up = rules.gns_job & ((ahead > batch) | (now > batch)) & below_largest
    critical = rules.critical(epoch)
    original = batch == rules.initial
    accordion_up = rules.accordion_job & original & ~critical & below_largest
    accordion_down = rules.accordion_job & ~original & critical & (batch != rules.smallest)
    return gns_up | accordion_up, accordion_down


@dataclass(frozen=True)
class Rescaled:
    """The jobs whose batch size changed: new batch size, throughput, total and completed steps."""

    rows: IntArray
    batch: IntArray
    throughput: NDArray[np.float64]
    total_steps: IntArray
    steps_run: IntArray


def rescale(rules: Rules, rows: IntArray, up: BoolArray, batch: IntArray, total_steps: IntArray,
            steps_run: IntArray) -> Rescaled:
    """Apply the pending changes of `rows` (``up``: a larger size is pending, else the original).

    A job that started at its model's scaled size, or whose new (batch size, gang) the throughput
    table lacks, keeps its size, as in the artifact. The total steps keep the job's epoch count
    and the completed steps are rounded up to whole epochs (the artifact credits the partial
    epoch as done).
    """
    old = batch[rows]
    new = np.where(rules.gns_job[rows], 2 * old, np.where(up[rows], rules.scaled[rows], rules.initial[rows]))
    throughput = rules.throughput(rows, new)
    keep = (rules.initial[rows] == rules.scaled[rows]) | ~(throughput > 0)
    rows, old, new, throughput = rows[~keep], old[~keep], new[~keep], throughput[~keep]
    samples = rules.samples[rows]
    old_epoch, new_epoch = ceil_div(samples, old), ceil_div(samples, new)
    total = total_steps[rows]
    old_epochs = ceil_div(total, old_epoch)
    # The artifact scales in floating point: ceil(total * (1 / (new / old))).
    scaled_total = np.ceil(total * (1.0 / (new / old))).astype(np.int64)
    scaled_total = np.where(ceil_div(scaled_total, new_epoch) == old_epochs, scaled_total, new_epoch * old_epochs)
    run = ceil_div(steps_run[rows], old_epoch) * new_epoch
    return Rescaled(rows=rows, batch=new, throughput=throughput, total_steps=scaled_total, steps_run=run)
