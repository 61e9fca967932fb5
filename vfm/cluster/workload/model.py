"""A workload in memory: a cluster, its round length and its jobs, as read-only records.

A `Workload` is a cluster of ``gpus`` GPUs (by type when it has a `vfm.gpu_cluster.ClusterTypes`),
a round length and its jobs. A `Job` holds what it truly runs, the batch size and seconds of each
epoch, and its profile, what a scheduler is told on arrival (`Job.regimes`); a job of the
Shockwave artifact's kind also carries its run in training steps (`Training`).
`Workload.arrays` is the same workload as padded numpy arrays (`WorkloadArrays`), for
computations over all jobs at once.

`vfm.cluster.workload` reads these records from the workload format, checking every field, and
writes them back to it. A job and a workload keep the file's ``annotations``, the user's own data
(any JSON object), which nothing in vfm reads.

Examples
--------
>>> import numpy as np
>>> job = Job(id=0, arrival_s=0.0, gpus=1, epochs=3, isolated_s=30.0,
...           batch_size=np.array([32.0, 32.0, 64.0]), epoch_s=np.array([12.0, 12.0, 6.0]))
>>> job.regimes
{32.0: 12.0, 64.0: 6.0}
>>> workload = Workload(name="two", gpus=2, round_s=60.0, jobs=(job, job))
>>> workload.arrays().seconds_until(np.array([1.0, 2.5])).tolist()
[12.0, 27.0]
"""

from __future__ import annotations

import copy
from collections.abc import Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm.errors import ValidationError
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_JOB_SECONDS
from vfm.parameters import Instance, Interval, Real, Whole, check

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["ADAPTATIONS", "Job", "Training", "Workload", "WorkloadArrays", "annotations_of", "derived_profile"]

#: How a job's batch size evolves in the Shockwave artifact's simulator.
ADAPTATIONS = ("static", "gns", "accordion")


class _Annotations(Mapping[str, Any]):
    """A read-only mapping over its own dict (`annotations_of`); unlike a ``MappingProxyType`` it
    pickles, so that a `Job` and a `Workload` go to worker processes as they are."""

    __slots__ = ("_data",)

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return repr(self._data)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self._data,)


#: A job's restart cost (`Job.restart_s`), when stated: seconds, at least 0, at most a job's whole run.
RESTART_S = Interval(Real, 0, MAX_JOB_SECONDS, unit="seconds", note="MAX_JOB_SECONDS")

#: No annotations: the default of `Job.annotations` and `Workload.annotations`.
_NO_ANNOTATIONS: Mapping[str, Any] = _Annotations({})


def annotations_of(value: Any, where: str) -> Mapping[str, Any]:
    """`value`, a JSON object of the user's own data (``annotations`` of a workload or a job), as a
    read-only mapping of a deep copy of it (so that changing `value` afterwards changes nothing
    here), or a ValidationError naming `where` unless it is a mapping with string keys.

    Examples
    --------
    >>> dict(annotations_of({"trace_duration_s": 5400.0, "team": "vision"}, "job 0"))
    {'trace_duration_s': 5400.0, 'team': 'vision'}
    >>> annotations_of(["trace"], "job 0")
    Traceback (most recent call last):
        ...
    vfm.errors.ValidationError: job 0: annotations must be a JSON object (keys are strings), got list
    """
    check(f"{where}: annotations", value, Instance(Mapping, "a JSON object (keys are strings)"))
    if not value:
        return _NO_ANNOTATIONS
    for key in value:
        check(f"{where}: each key of annotations", key, Instance(str, "a string (annotations are a JSON object)",
                                                                 with_value=True))
    return _Annotations(copy.deepcopy(dict(value)))


@dataclass(frozen=True)
class Training:
    """A job's training run in steps, as the Shockwave artifact's simulator describes it.

    Optional in a workload file (all four fields of a job or none); only
    `vfm.cluster.artifact` needs it.

    Attributes
    ----------
    model : str
        The model's name in the throughput table (``"ResNet-18"``, ``"LM"``, ...).
    adaptation : {"static", "gns", "accordion"}
        How the artifact's simulator changes the batch size while the job runs.
    total_steps : int
        Training steps at the initial batch size (``batch_size[0]`` of the job).
    samples_per_epoch : int
        Dataset size: an epoch at batch size ``b`` is ``ceil(samples_per_epoch / b)`` steps.
    """

    model: str
    adaptation: str
    total_steps: int
    samples_per_epoch: int


@dataclass(frozen=True, eq=False)
class Job:
    """One job of a workload; the per-epoch arrays are read-only.

    Attributes
    ----------
    id : int or str
        The job's id in the workload file (unique within it).
    arrival_s : float
        Arrival time (seconds from the start of the trace).
    gpus : int
        Gang size: the job runs on exactly this many GPUs or not at all.
    epochs : int
        Total epochs.
    isolated_s : float
        Seconds the job needs alone on its gang without restarts: ``epoch_s.sum()``.
    batch_size : ndarray, shape (epochs,)
        Batch size of each epoch (its regime), expanded from the phases.
    epoch_s : ndarray, shape (epochs,)
        Duration of each epoch in seconds, expanded from the phases.
    training : Training or None
        The job in training steps, when the file gives ``model``, ``adaptation``,
        ``total_steps`` and ``samples_per_epoch``.
    profile : tuple of (float, float)
        ``(batch_size, epoch_s)`` pairs in ascending batch size: what a scheduler is told, the
        nominal seconds per epoch of each batch size the job may run. The file's ``profile``
        when it gives one; otherwise (and when constructed with ``()``) read off the per-epoch
        arrays, each batch size with its epoch duration.
    annotations : mapping of str to JSON values
        The user's own data about the job (the file's ``annotations``, any JSON object): kept
        and written back (`vfm.cluster.workload_to_dict`), never read by vfm. A read-only view
        of a copy of what was given; empty by default.
    restart_s : float or None
        Seconds the job loses each time it starts or restarts (checkpoint and restore of its
        model), when the file states it (its ``restart_s``, a number in [0, ``MAX_JOB_SECONDS``]);
        None (default): not stated, and a simulator charges its own (`vfm.cluster.simulate`'s
        ``restart_s``). The simulator tells the policy this cost on arrival.
    """

    id: Hashable
    arrival_s: float
    gpus: int
    epochs: int
    isolated_s: float
    batch_size: FloatArray
    epoch_s: FloatArray
    training: Training | None = None
    profile: tuple[tuple[float, float], ...] = ()
    annotations: Mapping[str, Any] = field(default_factory=lambda: _NO_ANNOTATIONS)
    restart_s: float | None = None

    def __post_init__(self) -> None:
        if self.restart_s is not None:
            check(f"job {self.id!r}: restart_s", self.restart_s, RESTART_S)
            object.__setattr__(self, "restart_s", float(self.restart_s))
        if not self.profile:
            object.__setattr__(self, "profile", derived_profile(self.batch_size, self.epoch_s))
        if not isinstance(self.annotations, _Annotations):  # not already a copy of its own
            object.__setattr__(self, "annotations", annotations_of(self.annotations, f"job {self.id!r}"))

    @property
    def regimes(self) -> dict[float, float]:
        """Batch size -> seconds per epoch, the profile a policy is told on arrival."""
        return dict(self.profile)


@dataclass(frozen=True, eq=False)
class Workload:
    """A cluster and its jobs (in file order).

    Attributes
    ----------
    name : str
    gpus : int
        GPUs in the cluster.
    round_s : float
        Round length in seconds.
    jobs : tuple of Job, length n
    throughputs : str or None
        The throughput set (of ``gpu_types_throughputs.json``) the jobs' profiles come from,
        when the file names one (``"tacc"`` for the shipped workloads).
    cluster : ClusterTypes or None
        The cluster's GPUs by type, totalling `gpus`, when the file gives them (its
        ``"cluster"`` field); None for the homogeneous cluster of `gpus` V100s (the shipped
        workloads). `vfm.cluster.simulate` runs the workload on it.
    annotations : mapping of str to JSON values
        The user's own data about the workload (the file's top-level ``annotations``, any JSON
        object): kept and written back, never read by vfm; read-only, empty by default (`Job`'s
        ``annotations`` are per job).
    """

    name: str
    gpus: int
    round_s: float
    jobs: tuple[Job, ...]
    throughputs: str | None = None
    cluster: ClusterTypes | None = None
    annotations: Mapping[str, Any] = field(default_factory=lambda: _NO_ANNOTATIONS)

    def __post_init__(self) -> None:
        if not isinstance(self.annotations, _Annotations):  # not already a copy of its own
            object.__setattr__(self, "annotations", annotations_of(self.annotations, "workload"))
        if self.cluster is not None:
            check("workload: cluster", self.cluster, Instance(ClusterTypes, "a ClusterTypes or None", with_value=True))
            if self.cluster.total != self.gpus:
                raise ValidationError(f"workload: cluster has {self.cluster.total} GPUs ({dict(self.cluster)}) but "
                                      f"gpus is {self.gpus}; make the cluster's counts sum to gpus")

    @property
    def n_jobs(self) -> int:
        return len(self.jobs)

    @property
    def arrival_s(self) -> FloatArray:
        """Arrival times, shape (n,)."""
        return np.array([job.arrival_s for job in self.jobs], dtype=float)

    @property
    def isolated_s(self) -> FloatArray:
        """Isolated times, shape (n,)."""
        return np.array([job.isolated_s for job in self.jobs], dtype=float)

    def head(self, jobs: int) -> Workload:
        """The first `jobs` jobs (same cluster and round), named ``name[:jobs]``."""
        check("jobs", jobs, Interval(Whole, 1))
        return Workload(name=f"{self.name}[:{jobs}]", gpus=self.gpus, round_s=self.round_s, jobs=self.jobs[:jobs],
                        throughputs=self.throughputs, cluster=self.cluster, annotations=self.annotations)

    def arrays(self) -> WorkloadArrays:
        """The workload as arrays (`WorkloadArrays`)."""
        return WorkloadArrays.of(self)


@dataclass(frozen=True)
class WorkloadArrays:
    """A workload as arrays, one row per job (workload order); read-only.

    A job's epochs are grouped into phases of equal epoch duration, padded to the longest
    profile: padded phases have 0 epochs and repeat the job's last epoch duration, so they never
    change the epoch-versus-time curve (`epochs_after`, `seconds_until`).

    Attributes
    ----------
    name : str
    capacity : int
        GPUs in the cluster.
    round_s : float
    arrival_s, isolated_s : ndarray, shape (n,)
    gpus, epochs : ndarray of int, shape (n,)
    phase_epochs : ndarray of int, shape (n, P)
    phase_epoch_s : ndarray, shape (n, P)
    n_phases : ndarray of int, shape (n,)
    """

    name: str
    capacity: int
    round_s: float
    arrival_s: FloatArray
    gpus: IntArray
    epochs: IntArray
    isolated_s: FloatArray
    phase_epochs: IntArray
    phase_epoch_s: FloatArray
    n_phases: IntArray

    def __post_init__(self) -> None:
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    @classmethod
    def of(cls, workload: Workload) -> WorkloadArrays:
        """The arrays of `workload` (`Workload.arrays`)."""
        jobs = workload.jobs
        epochs = np.array([job.epochs for job in jobs], dtype=np.int64)
        epoch_s = np.concatenate([job.epoch_s for job in jobs])
        owner = np.repeat(np.arange(len(jobs)), epochs)
        # A phase starts at each job's first epoch and wherever the epoch duration changes.
        starts = np.flatnonzero(np.r_[True, (owner[1:] != owner[:-1]) | (epoch_s[1:] != epoch_s[:-1])])
        lengths = np.diff(np.r_[starts, epoch_s.size])
        phase_owner = owner[starts]
        n_phases = np.bincount(phase_owner, minlength=len(jobs))
        column = np.arange(starts.size) - np.repeat(np.cumsum(n_phases) - n_phases, n_phases)
        phase_epochs = np.zeros((len(jobs), int(n_phases.max())), dtype=np.int64)
        phase_epoch_s = np.zeros(phase_epochs.shape)
        phase_epochs[phase_owner, column] = lengths
        phase_epoch_s[phase_owner, column] = epoch_s[starts]
        last = phase_epoch_s[np.arange(len(jobs)), n_phases - 1]
        padding = np.arange(phase_epochs.shape[1])[None, :] >= n_phases[:, None]
        return cls(name=workload.name, capacity=workload.gpus, round_s=workload.round_s,
                   arrival_s=workload.arrival_s, gpus=np.array([job.gpus for job in jobs], dtype=np.int64),
                   epochs=epochs, isolated_s=workload.isolated_s, phase_epochs=phase_epochs,
                   phase_epoch_s=np.where(padding, last[:, None], phase_epoch_s), n_phases=n_phases)

    @property
    def n_jobs(self) -> int:
        return int(self.arrival_s.size)

    def take(self, rows: IntArray, name: str | None = None, capacity: int | None = None) -> WorkloadArrays:
        """The jobs `rows` (in that order, repeats allowed), optionally renamed or on another cluster."""
        return WorkloadArrays(
            name=self.name if name is None else name, capacity=self.capacity if capacity is None else capacity,
            round_s=self.round_s, **{field: getattr(self, field)[rows] for field in (
                "arrival_s", "gpus", "epochs", "isolated_s", "phase_epochs", "phase_epoch_s", "n_phases")})

    def _phase_starts(self) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """Per phase: start time, start epoch, end time (inf for padding), end epoch; each (n, P)."""
        span = self.phase_epochs * self.phase_epoch_s
        end_s = np.cumsum(span, axis=1)
        end_epoch = np.cumsum(self.phase_epochs, axis=1)
        padding = np.arange(span.shape[1])[None, :] >= self.n_phases[:, None]
        return (end_s - span, (end_epoch - self.phase_epochs).astype(float), np.where(padding, np.inf, end_s),
                np.where(padding, np.inf, end_epoch))

    def epochs_after(self, seconds: FloatArray) -> FloatArray:
        """Fractional epochs job i has done after ``seconds[i, k]`` of uninterrupted isolated running.

        Piecewise linear through the phase profile; past the last epoch it continues at the last
        phase's rate. `seconds` has shape (n, K); so has the result.
        """
        start_s, start_epoch, end_s, _ = self._phase_starts()
        phase = (end_s[:, None, :] <= seconds[:, :, None]).sum(axis=2)
        phase = np.minimum(phase, self.n_phases[:, None] - 1)
        rows = np.arange(self.n_jobs)[:, None]
        return start_epoch[rows, phase] + (seconds - start_s[rows, phase]) / self.phase_epoch_s[rows, phase]

    def seconds_until(self, epochs: FloatArray) -> FloatArray:
        """Isolated running time job i needs for ``epochs[i]`` (< its total) epochs, shape (n,)."""
        start_s, start_epoch, _, end_epoch = self._phase_starts()
        phase = np.minimum((end_epoch <= epochs[:, None]).sum(axis=1), self.n_phases - 1)
        rows = np.arange(self.n_jobs)
        return start_s[rows, phase] + (epochs - start_epoch[rows, phase]) * self.phase_epoch_s[rows, phase]


def derived_profile(batch_size: FloatArray, epoch_s: FloatArray) -> tuple[tuple[float, float], ...]:
    """The profile a job's per-epoch arrays imply: each batch size it runs with its epoch
    duration (the last one, should it have several), in ascending batch size.

    A job's `Job.profile` is this unless its file gives another; a writer of the file format
    writes ``profile`` only when it differs from this.
    """
    return tuple(sorted(dict(zip(np.asarray(batch_size, dtype=float).tolist(),
                                 np.asarray(epoch_s, dtype=float).tolist(), strict=True)).items()))
