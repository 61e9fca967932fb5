"""Shockwave workloads (benchmarks/data/shockwave) and the job windows built from them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from vfm.jobs import JobWindow, window_market

DATA = Path(__file__).resolve().parent / "data" / "shockwave"


def load(name: str) -> dict[str, Any]:
    """Read ``DATA / f"{name}.json"``, e.g. ``load("shockwave_900jobs_256gpus")``."""
    with open(DATA / f"{name}.json") as handle:
        workload: dict[str, Any] = json.load(handle)
    return workload


def prior_mean_epoch_s(job: dict[str, Any]) -> float:
    """Expected epoch duration of a job before any epoch is observed (SPEC section 4).

    The Dirichlet prior puts equal mass E / |regimes| on each batch-size regime, so the posterior
    mean splits the epochs evenly across regimes and the expected epoch duration is the mean of
    the regimes' epoch durations.
    """
    durations = {phase["batch_size"]: phase["epoch_s"] for phase in job["phases"]}
    return float(np.mean(list(durations.values())))


def fresh_window(workload: dict[str, Any], rounds: int = 20) -> JobWindow:
    """Every job of `workload` present at once with no epoch done: the largest window it gives.

    The forecast of epochs per round is the round length over the prior mean epoch duration,
    the same in every round of the window.
    """
    jobs = workload["jobs"]
    rate = np.array([workload["round_s"] / prior_mean_epoch_s(job) for job in jobs])
    return window_market(
        gpus=[job["gpus"] for job in jobs],
        epochs=[job["epochs"] for job in jobs],
        epochs_done=np.zeros(len(jobs)),
        epochs_per_round=np.repeat(rate[:, None], rounds, axis=1),
        capacity=workload["gpus"],
    )
