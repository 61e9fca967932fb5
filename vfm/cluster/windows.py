"""Shockwave workloads (benchmarks/data/shockwave) and the job windows built from them."""

from __future__ import annotations

import json
from dataclasses import dataclass
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
    """Expected epoch duration of a job before any epoch is observed.

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


# ---------------------------------------------------------------------------------------------
# Workloads as arrays, and the window at a workload's busiest moment (benchmarks/solve.py).
#
# "Busiest moment". Nothing is simulated. A job counts as active at time tau if it has arrived
# and would not have finished yet had it progressed at its *equal share* of the cluster since
# arrival, i.e. at 1 / f of its isolated speed with f = max(1, N / G) (N jobs in the workload,
# G GPUs: the same equal-share slowdown as the FTF rho). The busiest moment is
# the arrival time with the most active jobs (the earliest such). Each active job has done the
# whole epochs it would have finished by then at that speed, and the window's forecast for
# round t is the epochs its own phase profile completes in round t of uninterrupted running
# from that epoch on (a perfect forecaster: rates change when a batch-size phase changes, so
# the window is volatile, and past the job's last epoch its last phase's rate continues, so
# the progress cap U <= 1 is what binds). Restart costs are ignored. `activity="isolated"`
# uses f = 1 instead (each job at its isolated speed), which leaves only 82 / 118 / 285 / 587
# jobs active in the 120 / 220 / 460 / 900-job workloads, because the isolated assumption
# ignores that the cluster is ~3.5x oversubscribed; with the equal share the windows hold
# 118 / 203 / 436 / 874 jobs, close to the workloads' nominal sizes.
# ---------------------------------------------------------------------------------------------

ACTIVITY = ("equal-share", "isolated")


@dataclass(frozen=True)
class JobTable:
    """A workload as arrays, one row per job; phase arrays padded to the longest profile.

    Padded phases have 0 epochs and repeat the job's last real epoch duration, so they never
    change the epoch-versus-time curve.
    """

    name: str
    capacity: int
    round_s: float
    arrival_s: np.ndarray  # (n,)
    gpus: np.ndarray  # (n,) int
    epochs: np.ndarray  # (n,) int
    isolated_s: np.ndarray  # (n,)
    phase_epochs: np.ndarray  # (n, P) int
    phase_epoch_s: np.ndarray  # (n, P)
    n_phases: np.ndarray  # (n,) int

    @property
    def n_jobs(self) -> int:
        return int(self.arrival_s.size)


def job_table(workload: dict[str, Any]) -> JobTable:
    """Read a workload (as returned by `load`) into a `JobTable`; the only loop over jobs."""
    jobs = workload["jobs"]
    phases = [job["phases"] for job in jobs]
    n_phases = np.array([len(p) for p in phases])
    width = int(n_phases.max())
    phase_epochs = np.zeros((len(jobs), width), dtype=np.int64)
    phase_epoch_s = np.zeros((len(jobs), width))
    flat = [phase for p in phases for phase in p]
    rows = np.repeat(np.arange(len(jobs)), n_phases)
    cols = np.arange(rows.size) - np.repeat(np.cumsum(n_phases) - n_phases, n_phases)
    phase_epochs[rows, cols] = [phase["epochs"] for phase in flat]
    phase_epoch_s[rows, cols] = [phase["epoch_s"] for phase in flat]
    last = phase_epoch_s[np.arange(len(jobs)), n_phases - 1]
    padding = np.arange(width)[None, :] >= n_phases[:, None]
    phase_epoch_s = np.where(padding, last[:, None], phase_epoch_s)
    return JobTable(
        name=workload["name"],
        capacity=int(workload["gpus"]),
        round_s=float(workload["round_s"]),
        arrival_s=np.array([job["arrival_s"] for job in jobs], dtype=float),
        gpus=np.array([job["gpus"] for job in jobs], dtype=np.int64),
        epochs=np.array([job["epochs"] for job in jobs], dtype=np.int64),
        isolated_s=np.array([job["isolated_s"] for job in jobs], dtype=float),
        phase_epochs=phase_epochs,
        phase_epoch_s=phase_epoch_s,
        n_phases=n_phases,
    )


def synthetic_table(n_jobs: int, capacity: int, seed: int = 0,
                    base: str = "shockwave_900jobs_256gpus") -> JobTable:
    """`n_jobs` jobs drawn with replacement (fixed `seed`) from workload `base`, on `capacity` GPUs.

    Each drawn job keeps its arrival time, gang size and phase profile, so the arrival process
    keeps its shape at n_jobs / n_base times the density; with `capacity` scaled by the same
    factor the oversubscription N / G stays that of `base`.
    """
    table = job_table(load(base))
    pick = np.sort(np.random.default_rng(seed).integers(0, table.n_jobs, n_jobs))
    return JobTable(
        name=f"synthetic_{n_jobs}jobs_{capacity}gpus (resampled from {base}, seed {seed})",
        capacity=capacity,
        round_s=table.round_s,
        arrival_s=table.arrival_s[pick],
        gpus=table.gpus[pick],
        epochs=table.epochs[pick],
        isolated_s=table.isolated_s[pick],
        phase_epochs=table.phase_epochs[pick],
        phase_epoch_s=table.phase_epoch_s[pick],
        n_phases=table.n_phases[pick],
    )


def _phase_starts(table: JobTable) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per phase: start time, start epoch, end time (inf for padding), end epoch; each (n, P)."""
    span = table.phase_epochs * table.phase_epoch_s
    end_s = np.cumsum(span, axis=1)
    end_epoch = np.cumsum(table.phase_epochs, axis=1)
    start_s = end_s - span
    start_epoch = end_epoch - table.phase_epochs
    padding = np.arange(span.shape[1])[None, :] >= table.n_phases[:, None]
    return start_s, start_epoch, np.where(padding, np.inf, end_s), np.where(padding, np.inf, end_epoch)


def epochs_after(table: JobTable, seconds: np.ndarray) -> np.ndarray:
    """Fractional epochs job i has done after ``seconds[i, k]`` of uninterrupted isolated running.

    Piecewise linear through the phase profile; past the last epoch it continues at the last
    phase's rate. `seconds` has shape (n, K); so has the result.
    """
    start_s, start_epoch, end_s, _ = _phase_starts(table)
    phase = (end_s[:, None, :] <= seconds[:, :, None]).sum(axis=2)
    phase = np.minimum(phase, table.n_phases[:, None] - 1)
    rows = np.arange(table.n_jobs)[:, None]
    return start_epoch[rows, phase] + (seconds - start_s[rows, phase]) / table.phase_epoch_s[rows, phase]


def seconds_until(table: JobTable, epochs: np.ndarray) -> np.ndarray:
    """Isolated running time job i needs for ``epochs[i]`` (< its total) epochs, shape (n,)."""
    start_s, start_epoch, _, end_epoch = _phase_starts(table)
    phase = np.minimum((end_epoch <= epochs[:, None]).sum(axis=1), table.n_phases - 1)
    rows = np.arange(table.n_jobs)
    return start_s[rows, phase] + (epochs - start_epoch[rows, phase]) * table.phase_epoch_s[rows, phase]


def busiest_moment(table: JobTable, activity: str = "equal-share") -> tuple[float, np.ndarray, np.ndarray]:
    """The busiest moment of `table` (see the comment above `JobTable`).

    Returns
    -------
    moment_s : float
        The arrival time with the most active jobs.
    active : ndarray of bool, shape (n,)
    elapsed_s : ndarray, shape (n,)
        Isolated-equivalent running time of each job by then (meaningful where active).
    """
    if activity not in ACTIVITY:
        raise ValueError(f"activity must be one of {ACTIVITY}, got {activity!r}")
    slowdown = max(1.0, table.n_jobs / table.capacity) if activity == "equal-share" else 1.0
    finish = table.arrival_s + slowdown * table.isolated_s
    arrived = np.searchsorted(np.sort(table.arrival_s), table.arrival_s, side="right")
    finished = np.searchsorted(np.sort(finish), table.arrival_s, side="right")
    moment = float(table.arrival_s[np.argmax(arrived - finished)])  # first maximum: earliest time
    active = (table.arrival_s <= moment) & (finish > moment)
    return moment, active, (moment - table.arrival_s) / slowdown


@dataclass(frozen=True)
class BusiestWindow:
    """The window of `rounds` rounds at a workload's busiest moment, and how it was built."""

    window: JobWindow
    workload: str
    capacity: int
    moment_s: float
    jobs: np.ndarray  # (n,) row indices of the active jobs in the JobTable
    epochs_done: np.ndarray  # (n,)
    epochs_per_round: np.ndarray  # (n, T)
    epochs: np.ndarray  # (n,)


def busiest_window(workload: dict[str, Any] | JobTable, rounds: int = 20,
                   activity: str = "equal-share") -> BusiestWindow:
    """The job window of `rounds` rounds at the busiest moment of `workload` (equal budgets)."""
    table = workload if isinstance(workload, JobTable) else job_table(workload)
    moment, active, elapsed = busiest_moment(table, activity)
    jobs = np.flatnonzero(active)
    sub = JobTable(
        name=table.name, capacity=table.capacity, round_s=table.round_s,
        **{field: getattr(table, field)[jobs] for field in (
            "arrival_s", "gpus", "epochs", "isolated_s", "phase_epochs", "phase_epoch_s", "n_phases")},
    )
    # Whole epochs finished (the scheduler observes finished epochs only); the window starts
    # from that epoch's boundary. The guard keeps a job a hair from its end in the window.
    done = np.floor(epochs_after(sub, elapsed[jobs, None])[:, 0] + 1e-9)
    done = np.clip(done, 0, sub.epochs - 1)
    start = seconds_until(sub, done)
    edges = start[:, None] + sub.round_s * np.arange(rounds + 1)[None, :]
    rate = np.diff(epochs_after(sub, edges), axis=1)
    window = window_market(
        gpus=sub.gpus, epochs=sub.epochs, epochs_done=done, epochs_per_round=rate, capacity=table.capacity,
    )
    return BusiestWindow(
        window=window, workload=table.name, capacity=table.capacity, moment_s=moment, jobs=jobs,
        epochs_done=done, epochs_per_round=rate, epochs=sub.epochs.astype(float),
    )
