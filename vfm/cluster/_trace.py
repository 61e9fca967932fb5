"""The workload flattened for the simulator's hot path (`vfm.cluster.simulator`): every job's epochs
on one time line per GPU type (`Trace`)."""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vfm.cluster.gpu_types import ClusterTypes, type_profile
from vfm.cluster.workload.model import Workload

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


class Trace:
    """The workload flattened for the hot path: every job's epochs on one time line per GPU type.

    On type k, job j's epochs end at ``ends[k, offset[j] : offset[j] + epochs[j]]``, a slice of the
    cumulative sum of all epoch durations on that type in workload order, so job j's work there
    occupies the stretch that starts at ``origin[k, j]`` (the previous job's last epoch end). The
    epochs all running jobs have finished are then one `searchsorted` of ``origin + work done`` per
    type. The work itself is kept per job (seconds done on the type it last ran on, out of
    ``isolated_s[k, j]``) so that finish times carry no rounding from the global sum; the lines
    only count epochs and carry a job's position in its current epoch over to another type.
    Epochs a type cannot run (``inf``, `vfm.cluster.gpu_types.epoch_seconds_by_type`) take no time
    on its line: the jobs they belong to never run there (``hosts``).
    """

    def __init__(self, workload: Workload, cluster: ClusterTypes) -> None:
        jobs = workload.jobs
        self.epochs = np.array([job.epochs for job in jobs], dtype=np.int64)
        self.gpus = np.array([job.gpus for job in jobs], dtype=np.int64)
        self.batch_size = np.concatenate([job.batch_size for job in jobs])
        self.offset = np.cumsum(self.epochs) - self.epochs
        # The type the workload's epoch times are measured on: the cluster's profiles say which.
        measured_on = cluster.profiles.profiled
        # Each job's profile on the types, computed once (with throughput profiles and several types).
        profiles = (None if cluster.types == (measured_on,) or workload.throughputs is None
                    else [type_profile(job, workload.throughputs, cluster) for job in jobs])
        told: list[dict[str, dict[float, float]]]
        if profiles is not None:
            seconds = np.concatenate([profile.seconds for profile in profiles], axis=1)
            isolated = np.stack([profile.isolated_s for profile in profiles], axis=1)
            told = [profile.regimes for profile in profiles]
        else:  # one type, or no profiles to carry the measured times over with: that type only
            rows = np.asarray(cluster.types)[:, None] == measured_on
            seconds = np.where(rows, np.concatenate([job.epoch_s for job in jobs])[None, :], np.inf)
            isolated = np.where(rows, workload.isolated_s[None, :], np.inf)
            told = [{measured_on: job.regimes} if measured_on in cluster.types else {} for job in jobs]
        runs = np.isfinite(seconds)
        self.seconds = np.where(runs, seconds, 0.0)
        self.ends = np.cumsum(self.seconds, axis=1)
        # Each epoch's start is the previous one's end, the very number (not ends - seconds).
        self.starts = np.concatenate([np.zeros((len(cluster), 1)), self.ends[:, :-1]], axis=1)
        self.origin = self.starts[:, self.offset]
        # Per job and type: every epoch runs there, the scheduler was told so (`type_regimes`), and
        # the type's GPUs can hold the gang.
        listed = np.array([[t in regimes for regimes in told] for t in cluster.types], dtype=bool)
        self.hosts = (np.logical_and.reduceat(runs, self.offset, axis=1) & listed.reshape(len(cluster), -1)
                      & (self.gpus[None, :] <= cluster.counts[:, None]))
        # Seconds alone on each type (`isolated_s_by_type`: the workload's own isolated_s on the
        # profiled type).
        self.isolated_s = np.where(self.hosts, isolated, np.inf)
        # What a typed policy is told of each job: its regimes on each type that hosts it.
        self.regimes = [{t: r for t, r in regimes.items() if self.hosts[cluster.types.index(t), j]}
                        for j, regimes in enumerate(told)]
        # Each job's isolated time on the slowest type that hosts it (`default_max_rounds`).
        self.slowest_s = np.where(np.isfinite(self.isolated_s), self.isolated_s, 0.0).max(axis=0)
        # Each job's finish-time-fairness reference (`proportional_isolated_s`; on one type its
        # isolated time; without throughput profiles, the profiled type's time over its share of
        # the GPUs), inf where no type hosts it.
        if len(cluster) == 1:
            self.reference_s = self.isolated_s[0]
        elif profiles is not None:
            self.reference_s = np.array([profile.proportional_s(job.gpus, cluster)
                                         for profile, job in zip(profiles, jobs, strict=True)])
        else:
            share = cluster[measured_on] / cluster.total if measured_on in cluster.types else 0.0
            with np.errstate(divide="ignore"):
                self.reference_s = np.where(self.hosts.any(axis=0), workload.isolated_s / share, np.inf)

    def carried(self, jobs: IntArray, old: IntArray, new: IntArray, work_s: FloatArray, done: IntArray) -> FloatArray:
        """The work of `jobs` moving from types `old` to `new` (all shape (m,)): seconds on the new
        type up to the same fraction of the same epoch (`done` epochs finished)."""
        epoch = self.offset[jobs] + done
        into = self.origin[old, jobs] + work_s - self.starts[old, epoch]
        fraction = np.clip(into / self.seconds[old, epoch], 0.0, 1.0)
        return self.starts[new, epoch] - self.origin[new, jobs] + fraction * self.seconds[new, epoch]

    def epochs_done(self, jobs: IntArray, types: IntArray, work_s: FloatArray) -> IntArray:
        """Epoch ends on each job's line at or before its position (unclipped)."""
        after = np.empty(jobs.size, dtype=np.int64)
        for k in np.unique(types).tolist():  # one searchsorted per type present
            on = types == k
            after[on] = np.searchsorted(self.ends[k], self.origin[k, jobs[on]] + work_s[on], side="right")
        return after - self.offset[jobs]
