"""The workload format: a cluster, its round length and its jobs, validated once.

A workload file is a JSON object::

    {"name": "...", "gpus": 32, "round_s": 120.0,
     "jobs": [{"id": 0, "arrival_s": 0.0, "gpus": 1, "epochs": 30,
               "phases": [{"epochs": 10, "batch_size": 32, "epoch_s": 51.2}, ...],
               "profile": [{"batch_size": 32, "epoch_s": 51.2}, ...]}, ...]}

An optional ``"cluster": {"v100": 86, "p100": 85, "k80": 85}`` gives the cluster's GPUs by type
(`vfm.cluster.gpu_types.ClusterTypes`; they must sum to ``gpus``); without it the cluster is
``gpus`` V100s, as the jobs' epoch times are (docs/simulation.md, "GPU types").

A job's ``phases`` are what it truly runs: its batch size and seconds of each epoch, as runs of
equal epochs. Its optional ``profile`` is what a scheduler is told on arrival: the nominal seconds
per epoch of every batch size the job may run (`Job.regimes`). Without a profile, a batch size has
one epoch duration across the job's phases and the profile is read off them; with one, the phases
may give a batch size other (noisy) durations and need not use every batch size the profile
lists, but every batch size they use must be listed.

A file may hold only these fields (and the descriptive ones the shipped files carry: ``source``;
a job's ``dataset``, ``job_type``, ``static_duration_s``; a phase's ``mem_mib``, ``util_pct``): a
misspelled field is refused, naming the closest known one, not ignored. Times and counts are
bounded (`vfm._validation`: a job runs at most ``MAX_JOB_SECONDS`` = 1e12 s alone, a cluster has
at most ``MAX_GPUS`` GPUs) so that every time derived from them stays finite.

`load_workload` reads a path or the name of a shipped workload (the Shockwave artifact's four
traces, ``vfm/cluster/data/shockwave``, MIT: see the LICENSE there), checks every field at this
boundary and returns a `Workload` of read-only `Job` records; `Workload.arrays` is the same
workload as padded numpy arrays, for computations over all jobs at once.

Examples
--------
>>> workload = load_workload("shockwave_120jobs_32gpus")
>>> workload.gpus, workload.round_s, workload.n_jobs
(32, 120.0, 120)
>>> arrays = workload.arrays()
>>> arrays.epochs_after(arrays.isolated_s[:, None])[:2, 0].tolist() == arrays.epochs[:2].tolist()
True
"""

from __future__ import annotations

import difflib
import json
import reprlib
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import finite_float, first_bad, is_whole
from vfm.errors import ValidationError
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_ARRIVAL_ROUNDS, MAX_COUNT, MAX_GPUS, MAX_JOB_SECONDS, MAX_WORKLOAD_EPOCHS

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["SHIPPED", "Job", "Training", "Workload", "WorkloadArrays", "derived_profile", "epoch_records",
           "load_workload", "shipped_workloads", "workload_from_dict", "workload_to_dict"]

#: The shipped workloads (and the artifact's published results), loadable by name.
SHIPPED = Path(__file__).resolve().parent / "data" / "shockwave"

# The fields a workload file may give, per object. The shipped files also carry descriptive
# fields that nothing reads (``source``; a job's ``dataset``, ``job_type``, ``static_duration_s``;
# a phase's ``mem_mib``, ``util_pct``): they are known, so that only a misspelled field is refused.
_WORKLOAD_KEYS = ("name", "gpus", "round_s", "jobs", "throughputs", "cluster", "source")
_JOB_KEYS = ("id", "arrival_s", "gpus", "epochs", "isolated_s", "phases", "profile", "model", "adaptation",
             "total_steps", "samples_per_epoch", "dataset", "job_type", "static_duration_s")
_PHASE_KEYS = ("epochs", "batch_size", "epoch_s", "mem_mib", "util_pct")
_PROFILE_KEYS = ("batch_size", "epoch_s")

# Values in messages: one short line whatever the file holds (a 4000-digit number, a list nested
# a thousand deep, a megabyte string).
_SHORT = reprlib.Repr()
_SHORT.maxlevel, _SHORT.maxstring, _SHORT.maxother, _SHORT.maxlong = 2, 60, 60, 40
_SHORT.maxlist = _SHORT.maxdict = _SHORT.maxtuple = 4

# A file's own `isolated_s`, when present, must agree with the sum of its epoch durations this
# closely: the shipped files carry six decimals, so anything looser than rounding is an error.
_ISOLATED_RTOL = 1e-6


#: How a job's batch size evolves in the Shockwave artifact's simulator.
ADAPTATIONS = ("static", "gns", "accordion")


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

    def __post_init__(self) -> None:
        if not self.profile:
            object.__setattr__(self, "profile", derived_profile(self.batch_size, self.epoch_s))

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
    """

    name: str
    gpus: int
    round_s: float
    jobs: tuple[Job, ...]
    throughputs: str | None = None
    cluster: ClusterTypes | None = None

    def __post_init__(self) -> None:
        if self.cluster is not None:
            if not isinstance(self.cluster, ClusterTypes):
                raise ValidationError(f"workload: cluster must be a ClusterTypes or None, got "
                                      f"{type(self.cluster).__name__} {self.cluster!r}")
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
        if not is_whole(jobs) or jobs < 1:
            raise ValidationError(f"jobs must be a positive whole number, got {jobs!r}")
        return Workload(name=f"{self.name}[:{jobs}]", gpus=self.gpus, round_s=self.round_s, jobs=self.jobs[:jobs],
                        throughputs=self.throughputs, cluster=self.cluster)

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


def _shown(value: Any) -> str:
    """`value` for a message: its repr, cut short (`_SHORT`); never raises."""
    try:
        return _SHORT.repr(value)
    except ValueError:  # an int past Python's 4300-digit limit for str()
        return f"<an integer of {value.bit_length()} bits>"


def _whole(value: Any) -> bool:
    number = finite_float(value)
    return number is not None and number.is_integer()


def _describe_job(index: int, job_id: Any) -> str:
    return f"job {index} (id {_shown(job_id)})"


def _read_field(record: Mapping[str, Any], field: str, where: str, *, whole: bool) -> float:
    """``record[field]`` as a number, or a ValidationError naming `where` and `field`."""
    if field not in record:
        raise ValidationError(f"{where}: missing field {field!r}")
    value = record[field]
    number = finite_float(value)
    if number is None and isinstance(value, int) and not isinstance(value, bool):
        raise ValidationError(f"{where}: {field} ({_shown(value)}) is too large for a float (about 1.8e308 at most)")
    if whole and (number is None or not number.is_integer()):
        raise ValidationError(f"{where}: {field} must be a whole number, got {_shown(value)}")
    if number is None:
        raise ValidationError(f"{where}: {field} must be a finite number, got {_shown(value)}")
    return number


def _check_keys(record: Mapping[Any, Any], known: tuple[str, ...], where: str) -> None:
    """Refuse a field `record` does not know, naming it and the closest known field: a misspelled
    optional field (``isolated_sec``) would otherwise be silently ignored."""
    for key in record:
        if key not in known:
            _unknown_key(key, known, where)


def _unknown_key(key: Any, known: tuple[str, ...], where: str) -> None:
    close = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    hint = f"did you mean {close[0]!r}?" if close else f"the fields are {', '.join(known)}"
    raise ValidationError(f"{where}: unknown field {_shown(key)}; {hint}")


_TRAINING_FIELDS = ("model", "adaptation", "total_steps", "samples_per_epoch")


def _read_training(job: Mapping[str, Any], where: str) -> Training | None:
    """The job's `Training`, None when the file gives none of its fields."""
    given = [field for field in _TRAINING_FIELDS if field in job]
    if not given:
        return None
    if len(given) < len(_TRAINING_FIELDS):
        missing = next(field for field in _TRAINING_FIELDS if field not in job)
        raise ValidationError(f"{where}: missing field {missing!r} (a job gives all of "
                              f"{', '.join(_TRAINING_FIELDS)} or none)")
    model, adaptation = job["model"], job["adaptation"]
    if not isinstance(model, str) or not model:
        raise ValidationError(f"{where}: model must be a non-empty string, got {_shown(model)}")
    if not isinstance(adaptation, str) or adaptation not in ADAPTATIONS:
        raise ValidationError(f"{where}: adaptation must be one of {', '.join(ADAPTATIONS)}, got {_shown(adaptation)}")
    for field in ("total_steps", "samples_per_epoch"):
        count = _read_field(job, field, where, whole=True)
        if not 1 <= count < MAX_COUNT:
            raise ValidationError(f"{where}: {field} must be >= 1 and below 2^53 (where floats still count every "
                                  f"one), got {count:g}")
    steps, samples = job["total_steps"], job["samples_per_epoch"]
    return Training(model=model, adaptation=adaptation, total_steps=int(steps), samples_per_epoch=int(samples))


_PHASE_FIELDS = (("epochs", True), ("batch_size", False), ("epoch_s", False))
_PROFILE_FIELDS = (("batch_size", False), ("epoch_s", False))


def _read_plain(records: list[Any], fields: tuple[tuple[str, bool], ...], known: tuple[str, ...]) -> FloatArray | None:
    """`records` as rows of their `fields` when every record is a dict of `known` keys whose fields
    are all finite numbers (whole where asked), else None: the bulk read of a well-formed file (a
    generated workload with noisy epochs has a phase per epoch, hundreds of thousands of them)."""
    get = itemgetter(*(name for name, _ in fields))
    try:
        values = [get(record) for record in records if type(record) is dict]
    except KeyError:
        return None
    if len(values) < len(records) or not set(map(type, chain.from_iterable(values))) <= {int, float}:
        return None  # bool is an int subclass, but not of type int
    if not set().union(*map(dict.keys, records)) <= set(known):
        return None
    try:
        rows = np.array(values, dtype=float)
    except OverflowError:
        return None
    whole = [k for k, (_, is_whole_field) in enumerate(fields) if is_whole_field]
    if not np.isfinite(rows).all() or (rows[:, whole] != np.floor(rows[:, whole])).any():
        return None
    return rows


def _read_records(records: list[Any], fields: tuple[tuple[str, bool], ...], known: tuple[str, ...], where: str,
                  label: str) -> FloatArray:
    """The objects of `records` as rows of their `fields` (``(name, whole)``), shape (len, fields);
    a record may hold only `known` keys.

    Raises a ValidationError naming `where`, the record (`label` and its index) and the field.
    """
    rows = _read_plain(records, fields, known)
    if rows is not None:
        return rows
    # Something is off (or merely unusual, e.g. a Mapping that is not a dict): record by record.
    rows = np.empty((len(records), len(fields)))
    for k, record in enumerate(records):
        at = f"{where}, {label} {k}"
        if not isinstance(record, Mapping):
            raise ValidationError(f"{at}: must be a JSON object, got {type(record).__name__}")
        _check_keys(record, known, at)
        rows[k] = [_read_field(record, field, at, whole=whole) for field, whole in fields]
    return rows


def _read_profile(job: Mapping[str, Any], where: str) -> FloatArray:
    """The job's told profile as rows ``(batch_size, epoch_s)``; no rows when the file gives none."""
    if "profile" not in job:
        return np.empty((0, 2))
    profile = job["profile"]
    if not isinstance(profile, list) or not profile:
        got = "an empty list" if isinstance(profile, list) else type(profile).__name__
        raise ValidationError(f"{where}: 'profile' must be a non-empty list of {{batch_size, epoch_s}} objects, "
                              f"got {got}")
    return _read_records(profile, _PROFILE_FIELDS, _PROFILE_KEYS, where, "profile entry")


def _indices(counts: IntArray) -> tuple[IntArray, IntArray]:
    """For records grouped by owner, `counts` per owner: each record's owner and index within it."""
    owner = np.repeat(np.arange(counts.size), counts)
    return owner, np.arange(owner.size) - np.repeat(np.cumsum(counts) - counts, counts)


@dataclass(frozen=True)
class _Records:
    """The phases or profile entries of all jobs, flattened: rows, each row's job and index in it."""

    rows: FloatArray
    owner: IntArray
    index: IntArray

    @classmethod
    def of(cls, blocks: list[FloatArray]) -> _Records:
        """The records of `blocks`, one (records, fields) array per job."""
        owner, index = _indices(np.array([len(block) for block in blocks], dtype=np.int64))
        return cls(np.concatenate(blocks), owner, index)


def _job_keys(phases: _Records, told: _Records) -> tuple[IntArray, IntArray]:
    """Each phase's and each profile entry's (job, batch size) as one integer: the job times the
    number of distinct batch sizes, plus the rank of its batch size (so keys sort by job, then size)."""
    sizes, rank = np.unique(np.r_[told.rows[:, 0], phases.rows[:, 1]], return_inverse=True)
    return phases.owner * sizes.size + rank[told.owner.size:], told.owner * sizes.size + rank[:told.owner.size]


def _check_profiles(phases: _Records, told: _Records, phase_key: IntArray, told_key: IntArray,
                    has_profile: NDArray[np.bool_], fail: Callable[[int, str], None]) -> None:
    """A given profile has positive entries, no repeated batch size and every batch size its
    phases use; without one, a batch size has one epoch duration across the job's phases."""
    for column, field in enumerate(("batch_size", "epoch_s")):
        if (t := first_bad(told.rows[:, column] <= 0)) is not None:
            fail(int(told.owner[t]), f"profile entry {told.index[t]}: {field} must be > 0, "
                                     f"got {told.rows[t, column]:g}")
    order = np.argsort(told_key, kind="stable")
    if (t := first_bad(told_key[order][1:] == told_key[order][:-1])) is not None:
        later, earlier = int(order[t + 1]), int(order[t])
        fail(int(told.owner[later]), f"profile entry {told.index[later]}: batch_size {told.rows[later, 0]:g} "
                                     f"repeats profile entry {told.index[earlier]}")
    unlisted = has_profile[phases.owner] & ~np.isin(phase_key, told_key)
    if (p := first_bad(unlisted)) is not None:
        fail(int(phases.owner[p]), f"phase {phases.index[p]} runs batch_size {phases.rows[p, 1]:g}, which the "
                                   "profile does not list; add it to 'profile'")
    # Without a profile a policy is told {batch_size: epoch_s} read off the phases, so a batch
    # size is one regime with one epoch duration.
    order = np.argsort(phase_key, kind="stable")
    same = (phase_key[order][1:] == phase_key[order][:-1]) & ~has_profile[phases.owner[order][1:]]
    if (p := first_bad(same & (phases.rows[order, 2][1:] != phases.rows[order, 2][:-1]))) is not None:
        q, other = int(order[p + 1]), int(order[p])
        fail(int(phases.owner[q]), f"phase {phases.index[q]}: batch_size {phases.rows[q, 1]:g} has epoch_s "
                                   f"{phases.rows[q, 2]:g} but another phase gives it {phases.rows[other, 2]:g}")


def _profiles(phases: _Records, told: _Records, n_jobs: int,
              fail: Callable[[int, str], None]) -> list[tuple[tuple[float, float], ...]]:
    """Check the given profiles (`told`) against the phases and return every job's profile, given
    or read off its phases, in ascending batch size."""
    phase_key, told_key = _job_keys(phases, told)
    has_profile = np.bincount(told.owner, minlength=n_jobs) > 0
    _check_profiles(phases, told, phase_key, told_key, has_profile, fail)
    # The derived profiles: each (job, batch size) a job without a profile runs, once.
    runs = ~has_profile[phases.owner] & (phases.rows[:, 0] > 0)
    derived_key, first = np.unique(phase_key[runs], return_index=True)
    key = np.r_[told_key, derived_key]
    rows = np.r_[told.rows, phases.rows[runs][first, 1:]]
    owner = np.r_[told.owner, phases.owner[runs][first]]
    order = np.argsort(key, kind="stable")  # by job, then ascending batch size
    blocks = np.split(rows[order], np.cumsum(np.bincount(owner, minlength=n_jobs))[:-1])
    return [tuple((b, s) for b, s in block.tolist()) for block in blocks]


@dataclass(frozen=True)
class _Header:
    """A workload file's top-level fields, checked: its name, GPUs, round length and job records."""

    name: str
    capacity: float
    round_s: float
    jobs: list[Any]


def _read_header(raw: Any, default_name: str) -> _Header:
    """The top-level fields of `raw` (`workload_from_dict`), or a ValidationError naming the field."""
    if not isinstance(raw, Mapping):
        raise ValidationError(f"a workload file must hold a JSON object, got {type(raw).__name__}")
    _check_keys(raw, _WORKLOAD_KEYS, "workload")
    name = raw.get("name", default_name)
    if not isinstance(name, str):
        raise ValidationError(f"workload name must be a string, got {_shown(name)}")
    capacity = _read_field(raw, "gpus", "workload", whole=True)
    if not 1 <= capacity <= MAX_GPUS:
        raise ValidationError(f"workload: gpus must be >= 1 and at most {MAX_GPUS:.0e} (MAX_GPUS), got {capacity:g}")
    round_s = _read_field(raw, "round_s", "workload", whole=False)
    if not 0 < round_s <= MAX_JOB_SECONDS:
        raise ValidationError(f"workload: round_s must be > 0 and at most {MAX_JOB_SECONDS:.0e} s (MAX_JOB_SECONDS), "
                              f"got {round_s:g}")
    jobs = raw.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ValidationError("workload: 'jobs' must be a non-empty list")
    return _Header(name=name, capacity=capacity, round_s=round_s, jobs=jobs)


@dataclass(frozen=True)
class _JobFields:
    """The job records' fields, read (present and of the right type) but not yet range-checked."""

    ids: list[Any]
    arrival_s: FloatArray
    gang: FloatArray
    epochs: FloatArray
    stated_isolated: FloatArray  # NaN where the file gives no isolated_s
    trainings: list[Training | None]
    phase_blocks: list[FloatArray]  # per job, rows (epochs, batch_size, epoch_s)
    profile_blocks: list[FloatArray]  # per job, rows (batch_size, epoch_s); none: derived


def _read_jobs(jobs: list[Any]) -> _JobFields:
    """The fields of the job records, or a ValidationError naming the job and the field."""
    # One pass over the records for what only Python can check (presence and types); the
    # range checks below run on arrays and name the first offending job.
    ids: list[Any] = []
    scalars = np.empty((len(jobs), 3))  # arrival_s, gpus, epochs
    stated_isolated = np.full(len(jobs), np.nan)
    phase_blocks: list[FloatArray] = []
    profile_blocks: list[FloatArray] = []
    trainings: list[Training | None] = []
    for index, job in enumerate(jobs):
        if not isinstance(job, Mapping):
            raise ValidationError(f"job {index}: must be a JSON object, got {type(job).__name__}")
        if "id" not in job:
            raise ValidationError(f"job {index}: missing field 'id'")
        job_id = job["id"]
        where = _describe_job(index, job_id)
        if isinstance(job_id, bool) or not isinstance(job_id, int | str):
            raise ValidationError(f"{where}: id must be an integer or a string")
        _check_keys(job, _JOB_KEYS, where)
        ids.append(job_id)
        scalars[index, 0] = _read_field(job, "arrival_s", where, whole=False)
        scalars[index, 1] = _read_field(job, "gpus", where, whole=True)
        scalars[index, 2] = _read_field(job, "epochs", where, whole=True)
        if "isolated_s" in job:
            stated_isolated[index] = _read_field(job, "isolated_s", where, whole=False)
        trainings.append(_read_training(job, where))
        phases = job.get("phases")
        if not isinstance(phases, list) or not phases:
            raise ValidationError(f"{where}: 'phases' must be a non-empty list"
                                  + ("" if "phases" in job else " (missing field 'phases')"))
        phase_blocks.append(_read_records(phases, _PHASE_FIELDS, _PHASE_KEYS, where, "phase"))
        profile_blocks.append(_read_profile(job, where))
    arrival_s, gang, epochs = scalars.T
    return _JobFields(ids=ids, arrival_s=arrival_s, gang=gang, epochs=epochs, stated_isolated=stated_isolated,
                      trainings=trainings, phase_blocks=phase_blocks, profile_blocks=profile_blocks)


def _check_unique_ids(ids: list[Any]) -> None:
    """No two jobs share an id (naming the later one and the job it repeats)."""
    seen: dict[Any, int] = {}
    for index, job_id in enumerate(ids):
        if job_id in seen:
            raise ValidationError(f"{_describe_job(index, job_id)}: id repeats job {seen[job_id]}")
        seen[job_id] = index


def _failing(ids: list[Any]) -> Callable[[int, str], None]:
    """``fail(index, message)``: raise a ValidationError naming the job (index and id) and what is wrong."""
    def fail(index: int, message: str) -> None:
        raise ValidationError(f"{_describe_job(index, ids[index])}: {message}")

    return fail


def _checked_records(fields: _JobFields, capacity: float, round_s: float,
                     fail: Callable[[int, str], None]) -> tuple[_Records, _Records]:
    """Range-check the jobs' numbers and return their phases and told profile entries, flattened."""
    arrival_s, gang, epochs = fields.arrival_s, fields.gang, fields.epochs
    if (i := first_bad(arrival_s < 0)) is not None:
        fail(i, f"arrival_s must be >= 0, got {arrival_s[i]:g}")
    if (i := first_bad(gang < 1)) is not None:
        fail(i, f"gpus must be >= 1, got {gang[i]:g}")
    if (i := first_bad(gang > capacity)) is not None:
        fail(i, f"gpus ({gang[i]:g}) exceeds the cluster's {capacity:g} GPUs")
    if (i := first_bad(epochs < 1)) is not None:
        fail(i, f"epochs must be >= 1, got {epochs[i]:g}")

    phases_of = _Records.of(fields.phase_blocks)
    phase, owner = phases_of.rows, phases_of.owner
    for column, field in ((1, "batch_size"), (2, "epoch_s")):
        if (p := first_bad(phase[:, column] <= 0)) is not None:
            fail(int(owner[p]), f"phase {phases_of.index[p]}: {field} must be > 0, got {phase[p, column]:g}")
    if (p := first_bad(phase[:, 0] < 0)) is not None:
        fail(int(owner[p]), f"phase {phases_of.index[p]}: epochs must be >= 0, got {phase[p, 0]:g}")
    summed = np.bincount(owner, weights=phase[:, 0], minlength=len(fields.ids))
    if (i := first_bad(summed != epochs)) is not None:
        fail(i, f"phases' epochs sum to {summed[i]:g}, but epochs is {epochs[i]:g}")
    told = _Records.of(fields.profile_blocks)
    _check_bounds(phases_of, told, epochs, arrival_s, round_s, fields.ids, fail)
    return phases_of, told


def _built_jobs(fields: _JobFields, phases_of: _Records, profiles: list[tuple[tuple[float, float], ...]],
                fail: Callable[[int, str], None]) -> tuple[Job, ...]:
    """The checked jobs as `Job` records, their phases expanded to read-only per-epoch arrays."""
    phase, owner, epochs, n_jobs = phases_of.rows, phases_of.owner, fields.epochs, len(fields.ids)
    # Expand phases to epochs for all jobs at once, then cut per job.
    counts = phase[:, 0].astype(np.int64)
    batch_flat = np.repeat(phase[:, 1], counts)
    epoch_s_flat = np.repeat(phase[:, 2], counts)
    cuts = np.cumsum(epochs.astype(np.int64))[:-1]
    batches = np.split(batch_flat, cuts)
    durations = np.split(epoch_s_flat, cuts)
    isolated = np.bincount(owner, weights=phase[:, 0] * phase[:, 2], minlength=n_jobs)
    _check_job_seconds(isolated, epochs, profiles, fail)
    stated = fields.stated_isolated
    off = ~np.isnan(stated) & ~np.isclose(stated, isolated, rtol=_ISOLATED_RTOL, atol=0.0)
    if (i := first_bad(off)) is not None:
        fail(i, f"isolated_s ({stated[i]:g}) differs from the sum of its epoch durations ({isolated[i]:g})")

    built = []
    for index, job_id in enumerate(fields.ids):
        batches[index].setflags(write=False)
        durations[index].setflags(write=False)
        built.append(Job(id=job_id, arrival_s=float(fields.arrival_s[index]), gpus=int(fields.gang[index]),
                         epochs=int(epochs[index]), isolated_s=float(isolated[index]),
                         batch_size=batches[index], epoch_s=durations[index], training=fields.trainings[index],
                         profile=profiles[index]))
    return tuple(built)


def workload_from_dict(raw: Any, default_name: str = "workload") -> Workload:
    """Check a decoded workload file (the JSON object) and build the `Workload`.

    `default_name` names the workload when `raw` has no ``name``. Raises what `load_workload`
    raises for a malformed file, without the file's path.
    """
    header = _read_header(raw, default_name)
    fields = _read_jobs(header.jobs)
    _check_unique_ids(fields.ids)
    fail = _failing(fields.ids)
    phases_of, told = _checked_records(fields, header.capacity, header.round_s, fail)
    profiles = _profiles(phases_of, told, len(fields.ids), fail)
    built = _built_jobs(fields, phases_of, profiles, fail)
    throughputs = raw.get("throughputs")
    if throughputs is not None and not isinstance(throughputs, str):
        raise ValidationError(f"workload: throughputs must name a throughput set (a string), got {_shown(throughputs)}")
    return Workload(name=header.name, gpus=int(header.capacity), round_s=float(header.round_s), jobs=built,
                    throughputs=throughputs, cluster=_read_cluster(raw))


# Per phase (its column) and per profile entry (the column before): no batch size or epoch may
# state a number past what the rest of the pipeline keeps exact and finite.
_PER_RECORD_BOUNDS = (
    (1, "batch_size", float(MAX_COUNT), "2^53 (where floats still count every sample)"),
    (2, "epoch_s", MAX_JOB_SECONDS, f"the {MAX_JOB_SECONDS:.0e} s a job may run in all (MAX_JOB_SECONDS)"),
)


def _check_bounds(phases_of: _Records, told: _Records, epochs: FloatArray, arrival_s: FloatArray, round_s: float,
                  ids: list[Any], fail: Callable[[int, str], None]) -> None:
    """The bounds of `vfm.limits` on a workload's records: each phase's and profile entry's batch
    size and epoch time (`_PER_RECORD_BOUNDS`), the epochs of all jobs, the arrivals' rounds."""
    phase, owner = phases_of.rows, phases_of.owner
    for column, field, bound, why in _PER_RECORD_BOUNDS:
        if (p := first_bad(phase[:, column] > bound)) is not None:
            fail(int(owner[p]), f"phase {phases_of.index[p]}: {field} ({phase[p, column]:g}) is more than {why}")
    for column, field, bound, why in _PER_RECORD_BOUNDS[1:]:
        if (t := first_bad(told.rows[:, column - 1] > bound)) is not None:
            fail(int(told.owner[t]), f"profile entry {told.index[t]}: {field} ({told.rows[t, column - 1]:g}) is "
                                     f"more than {why}")
    if epochs.sum() > MAX_WORKLOAD_EPOCHS:
        biggest = int(np.argmax(epochs))
        raise ValidationError(
            f"workload: its jobs have {epochs.sum():.4g} epochs in all, more than the {MAX_WORKLOAD_EPOCHS:.0e} a "
            f"workload may have (the largest, {_describe_job(biggest, ids[biggest])}, has {epochs[biggest]:.4g}): "
            f"every epoch is expanded to per-epoch arrays here and in the simulator, about 100 bytes each at the peak "
            f"of a run")
    with np.errstate(over="ignore"):  # an arrival of 1e300 s in rounds of 1e-10 s: inf rounds, refused
        far = arrival_s / round_s >= MAX_ARRIVAL_ROUNDS
    if (i := first_bad(far)) is not None:
        fail(i, f"arrival_s ({arrival_s[i]:g}) is {arrival_s[i] / round_s:.3g} rounds of {round_s:g} s away, more "
                f"than the {MAX_ARRIVAL_ROUNDS:.3g} rounds whose starts are exact in floating point")


def _check_job_seconds(isolated: NDArray[Any], epochs: FloatArray, profiles: list[tuple[tuple[float, float], ...]],
                       fail: Callable[[int, str], None]) -> None:
    """A job's time alone (its epochs' durations summed) and its epochs at the slowest epoch its
    profile tells a scheduler (what a policy plans with) are at most `MAX_JOB_SECONDS`."""
    if (i := first_bad(isolated > MAX_JOB_SECONDS)) is not None:
        fail(i, f"its epochs take {isolated[i]:.4g} s in all (the sum of epochs * epoch_s), more than the "
                f"{MAX_JOB_SECONDS:.0e} s a job may run (MAX_JOB_SECONDS)")
    slowest = np.array([max(seconds for _, seconds in profile) for profile in profiles])
    if (i := first_bad(epochs * slowest > MAX_JOB_SECONDS)) is not None:
        fail(i, f"epochs ({epochs[i]:g}) times its profile's slowest epoch_s ({slowest[i]:g}) is "
                f"{epochs[i] * slowest[i]:.4g} s, more than the {MAX_JOB_SECONDS:.0e} s a job may run "
                f"(MAX_JOB_SECONDS)")


def _read_cluster(raw: Mapping[str, Any]) -> ClusterTypes | None:
    """The file's ``cluster`` (GPU type -> count), None when it gives none."""
    if raw.get("cluster") is None:
        return None
    given = raw["cluster"]
    if not isinstance(given, Mapping):
        raise ValidationError(f"workload: cluster must be a JSON object of GPU type -> count "
                              f"(e.g. {{\"v100\": 16, \"k80\": 16}}), got {_shown(given)}")
    # Checked here: ClusterTypes keeps its counts as int64, which a larger JSON integer overflows.
    big = next((t for t, c in given.items() if isinstance(c, int | float) and not isinstance(c, bool)
                and c > MAX_GPUS), None)
    if big is not None:
        raise ValidationError(f"workload: cluster[{_shown(big)}] ({_shown(given[big])}) is more than the "
                              f"{MAX_GPUS:.0e} GPUs a cluster may have (MAX_GPUS)")
    try:  # a JSON number with a zero fraction (16.0) is a whole count, as gpus may be
        return ClusterTypes({t: int(c) if _whole(c) else c for t, c in given.items()})
    except ValidationError as exc:
        raise ValidationError(f"workload: cluster: {exc}") from exc


def epoch_records(batch_size: FloatArray, epoch_s: FloatArray,
                  profile: FloatArray | None = None) -> dict[str, list[dict[str, float]]]:
    """A job's per-epoch arrays as the file format's ``phases`` (runs of equal epochs), and its
    told `profile` (rows ``(batch_size, epoch_s)``) as ``profile`` when given and not the one
    the arrays imply (`derived_profile`), so that a file holds a profile only where it says more.
    """
    batch, seconds = np.asarray(batch_size, dtype=float), np.asarray(epoch_s, dtype=float)
    start = np.flatnonzero(np.r_[True, (batch[1:] != batch[:-1]) | (seconds[1:] != seconds[:-1])])
    lengths = np.diff(np.r_[start, batch.size])
    # Through lists, not numpy scalars: with noisy epochs every epoch is a phase.
    records: dict[str, list[dict[str, float]]] = {"phases": [
        {"epochs": n, "batch_size": b, "epoch_s": s}
        for n, b, s in zip(lengths.tolist(), batch[start].tolist(), seconds[start].tolist(), strict=True)]}
    if profile is not None:
        told = tuple((b, s) for b, s in np.asarray(profile, dtype=float).tolist())
        if told != derived_profile(batch, seconds):
            records["profile"] = [{"batch_size": b, "epoch_s": s} for b, s in told]
    return records


def workload_to_dict(workload: Workload) -> dict[str, Any]:
    """`workload` as a workload file's JSON object; `workload_from_dict` reads it back to the same
    jobs, per-epoch arrays and profiles (``json.dumps`` writes it; floats round-trip exactly)."""
    jobs = []
    for job in workload.jobs:
        record: dict[str, Any] = {"id": job.id, "arrival_s": job.arrival_s, "gpus": job.gpus, "epochs": job.epochs}
        if job.training is not None:
            record |= {"model": job.training.model, "adaptation": job.training.adaptation,
                       "total_steps": job.training.total_steps, "samples_per_epoch": job.training.samples_per_epoch}
        jobs.append(record | epoch_records(job.batch_size, job.epoch_s, np.array(job.profile)))
    raw: dict[str, Any] = {"name": workload.name, "gpus": workload.gpus, "round_s": workload.round_s}
    if workload.throughputs is not None:
        raw["throughputs"] = workload.throughputs
    if workload.cluster is not None:
        raw["cluster"] = dict(workload.cluster)
    return raw | {"jobs": jobs}


def shipped_workloads() -> list[str]:
    """The names of the shipped workloads (`load_workload` takes them)."""
    return sorted(path.stem for path in SHIPPED.glob("shockwave_*.json"))


def load_workload(path_or_name: str | Path) -> Workload:
    """Read and check a workload file.

    Parameters
    ----------
    path_or_name : str or Path
        A path to a JSON file, or the name of a shipped workload in `SHIPPED`
        (e.g. ``"shockwave_120jobs_32gpus"``, with or without ``.json``).

    Returns
    -------
    Workload
        Jobs in file order; each job's per-epoch arrays expanded from its phases.

    Raises
    ------
    ValidationError
        One line starting with the file's path. For bytes that are not UTF-8, text that is not
        JSON (or nests too deeply for Python's parser, or holds an integer past its 4300-digit
        limit); and for a malformed workload, naming the job (index and id), the field and what
        is wrong: an unknown field (with the closest known one), a missing field, a non-numeric,
        non-finite or non-whole value, negative arrival, gpus < 1 or wider than the cluster,
        epochs < 1, phases' epochs not summing to ``epochs``, a non-positive epoch_s or
        batch_size, one batch size with two epoch durations (without a profile), a stated
        ``isolated_s`` that is not the sum of the epoch durations, a repeated id; a ``profile``
        that is not a non-empty list of objects, repeats a batch size or does not list a batch
        size the phases run; more than `MAX_WORKLOAD_EPOCHS` epochs in all; an arrival more than 2^53
        rounds away; a ``cluster`` that does not map known GPU types to positive whole counts or
        does not sum to ``gpus``; a bound of `vfm._validation` passed (``MAX_GPUS`` GPUs;
        ``MAX_JOB_SECONDS`` for ``round_s``, an ``epoch_s``, a job's time alone and its epochs
        at its profile's slowest epoch; 2^53 for a batch size, ``total_steps`` and
        ``samples_per_epoch``).
    FileNotFoundError
        If there is no such file or shipped workload.
    OSError
        If the file cannot be read.
    """
    if not isinstance(path_or_name, str | Path):
        raise ValidationError(f"path_or_name must be a path (str or Path) or a shipped workload's name, got "
                              f"{type(path_or_name).__name__} {path_or_name!r}")
    path = Path(path_or_name)
    if not path.exists() and path.parent == Path("."):
        path = SHIPPED / (path.name if path.suffix == ".json" else f"{path.name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no workload file {str(path_or_name)!r}, and no shipped workload of that name "
                                f"(shipped: {', '.join(shipped_workloads())})")
    raw = _decoded(path)
    try:
        return workload_from_dict(raw, default_name=path.stem)
    except ValidationError as exc:
        raise ValidationError(f"{path}: {exc}") from None


def _decoded(path: Path) -> Any:
    """The JSON value in the file at `path`, or a one-line ValidationError naming the file."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")  # JSON's encoding (RFC 8259), whatever the locale's
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path} is not UTF-8 text (JSON's encoding): byte {data[exc.start]:#04x} at offset "
                              f"{exc.start}; save the file as UTF-8") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path} is not valid JSON: {exc}") from None
    except RecursionError:
        raise ValidationError(f"{path} nests JSON arrays or objects too deeply for Python's parser; a workload "
                              f"file nests them five deep") from None
    except ValueError as exc:  # an integer past Python's 4300-digit limit for int()
        raise ValidationError(f"{path} holds a number Python cannot read: {exc}".split(";")[0]) from None
