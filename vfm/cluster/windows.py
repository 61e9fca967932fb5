"""Planning windows built from a workload: every job at once, or the workload's busiest moment.

These are the instances the solver and planner benchmarks time and the tests solve: a
`vfm.jobs.JobWindow` (the window market of a set of jobs over some rounds) built from a
`vfm.cluster.workload.Workload` with a perfect forecast of each job's phase profile.

Examples
--------
>>> from vfm.cluster.workload import load_workload
>>> busiest = busiest_window(load_workload("shockwave_120jobs_32gpus"))
>>> busiest.window.market.n_buyers, busiest.capacity
(118, 32)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vfm.cluster.workload.model import Job, Workload, WorkloadArrays
from vfm.forecast import JobStates
from vfm.jobs import JobWindow, equal_share, window_market

__all__ = ["ACTIVITY", "BusiestWindow", "busiest_moment", "busiest_states", "busiest_window", "fresh_window",
           "prior_mean_epoch_s", "resample"]


def prior_mean_epoch_s(job: Job) -> float:
    """Expected epoch duration of a job before any epoch is observed.

    The Dirichlet prior puts equal mass E / |regimes| on each batch-size regime, so the posterior
    mean splits the epochs evenly across regimes and the expected epoch duration is the mean of
    the regimes' epoch durations.
    """
    return float(np.mean(list(job.regimes.values())))


def fresh_window(workload: Workload, rounds: int = 20) -> JobWindow:
    """Every job of `workload` present at once with no epoch done: the largest window it gives.

    The forecast of epochs per round is the round length over the prior mean epoch duration,
    the same in every round of the window.
    """
    jobs = workload.jobs
    rate = np.array([workload.round_s / prior_mean_epoch_s(job) for job in jobs])
    return window_market(
        gpus=[job.gpus for job in jobs],
        epochs=[job.epochs for job in jobs],
        epochs_done=np.zeros(len(jobs)),
        epochs_per_round=np.repeat(rate[:, None], rounds, axis=1),
        capacity=workload.gpus,
    )


# ---------------------------------------------------------------------------------------------
# The window at a workload's busiest moment.
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


def resample(arrays: WorkloadArrays, n_jobs: int, capacity: int, seed: int = 0) -> WorkloadArrays:
    """`n_jobs` jobs drawn with replacement (fixed `seed`) from `arrays`, on `capacity` GPUs.

    Each drawn job keeps its arrival time, gang size and phase profile, so the arrival process
    keeps its shape at n_jobs / n times the density; with `capacity` scaled by the same factor
    the oversubscription N / G stays the same.
    """
    pick = np.sort(np.random.default_rng(seed).integers(0, arrays.n_jobs, n_jobs))
    return arrays.take(pick, name=f"synthetic_{n_jobs}jobs_{capacity}gpus (resampled from {arrays.name}, "
                                  f"seed {seed})", capacity=capacity)


def busiest_moment(arrays: WorkloadArrays, activity: str = "equal-share") -> tuple[float, np.ndarray, np.ndarray]:
    """The busiest moment of a workload (see the comment above `ACTIVITY`).

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
    slowdown = 1.0 / equal_share(arrays.n_jobs, arrays.capacity) if activity == "equal-share" else 1.0
    finish = arrays.arrival_s + slowdown * arrays.isolated_s
    arrived = np.searchsorted(np.sort(arrays.arrival_s), arrays.arrival_s, side="right")
    finished = np.searchsorted(np.sort(finish), arrays.arrival_s, side="right")
    moment = float(arrays.arrival_s[np.argmax(arrived - finished)])  # first maximum: earliest time
    active = (arrays.arrival_s <= moment) & (finish > moment)
    return moment, active, (moment - arrays.arrival_s) / slowdown


@dataclass(frozen=True)
class BusiestWindow:
    """The window of `rounds` rounds at a workload's busiest moment, and how it was built."""

    window: JobWindow
    workload: str
    capacity: int
    moment_s: float
    jobs: np.ndarray  # (n,) row indices of the active jobs in the workload
    epochs_done: np.ndarray  # (n,)
    epochs_per_round: np.ndarray  # (n, T)
    epochs: np.ndarray  # (n,)


def _busiest_jobs(arrays: WorkloadArrays, activity: str) -> tuple[float, np.ndarray, WorkloadArrays, np.ndarray]:
    """The busiest moment, the rows of the jobs active then, their arrays and their whole epochs done."""
    moment, active, elapsed = busiest_moment(arrays, activity)
    jobs = np.flatnonzero(active)
    sub = arrays.take(jobs)
    # Whole epochs finished (the scheduler observes finished epochs only); the window starts
    # from that epoch's boundary. The guard keeps a job a hair from its end in the window.
    done = np.clip(np.floor(sub.epochs_after(elapsed[jobs, None])[:, 0] + 1e-9), 0, sub.epochs - 1)
    return moment, jobs, sub, done


def busiest_window(workload: Workload | WorkloadArrays, rounds: int = 20,
                   activity: str = "equal-share") -> BusiestWindow:
    """The job window of `rounds` rounds at the busiest moment of `workload` (equal budgets)."""
    arrays = workload.arrays() if isinstance(workload, Workload) else workload
    moment, jobs, sub, done = _busiest_jobs(arrays, activity)
    start = sub.seconds_until(done)
    edges = start[:, None] + sub.round_s * np.arange(rounds + 1)[None, :]
    rate = np.diff(sub.epochs_after(edges), axis=1)
    window = window_market(
        gpus=sub.gpus, epochs=sub.epochs, epochs_done=done, epochs_per_round=rate, capacity=arrays.capacity,
    )
    return BusiestWindow(
        window=window, workload=arrays.name, capacity=arrays.capacity, moment_s=moment, jobs=jobs,
        epochs_done=done, epochs_per_round=rate, epochs=sub.epochs.astype(float),
    )


def busiest_states(workload: Workload, activity: str = "equal-share") -> tuple[JobStates, np.ndarray, int]:
    """The jobs active at the busiest moment of `workload` as a planner sees them.

    Returns the `vfm.forecast.JobStates` (each job's observed epochs are the batch sizes of the
    first epochs of its profile, as many as `busiest_window` counts done), the gang sizes, shape
    (n,), and the cluster's GPUs.
    """
    _, rows, sub, done = _busiest_jobs(workload.arrays(), activity)
    jobs = [workload.jobs[i] for i in rows]
    states = JobStates.from_lists([job.epochs for job in jobs], [job.regimes for job in jobs],
                                  [job.batch_size[: int(d)].tolist() for job, d in zip(jobs, done, strict=True)],
                                  job_ids=[job.id for job in jobs])
    return states, np.asarray(sub.gpus), workload.gpus
