"""The workload format: a cluster, its round length and its jobs, validated once.

A workload file is a JSON object::

    {"name": "...", "gpus": 32, "round_s": 120.0,
     "jobs": [{"id": 0, "arrival_s": 0.0, "gpus": 1, "epochs": 30,
               "phases": [{"epochs": 10, "batch_size": 32, "epoch_s": 51.2}, ...]}, ...]}

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

import json
import math
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import first_bad, is_whole
from vfm.errors import ValidationError

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["SHIPPED", "Job", "Training", "Workload", "WorkloadArrays", "load_workload", "shipped_workloads",
           "workload_from_dict"]

#: The shipped workloads (and the artifact's published results), loadable by name.
SHIPPED = Path(__file__).resolve().parent / "data" / "shockwave"

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
    """

    id: Hashable
    arrival_s: float
    gpus: int
    epochs: int
    isolated_s: float
    batch_size: FloatArray
    epoch_s: FloatArray
    training: Training | None = None

    @property
    def regimes(self) -> dict[float, float]:
        """Batch size -> seconds per epoch, the profile a policy is told on arrival."""
        return dict(zip(self.batch_size.tolist(), self.epoch_s.tolist(), strict=True))


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
    """

    name: str
    gpus: int
    round_s: float
    jobs: tuple[Job, ...]
    throughputs: str | None = None

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
                        throughputs=self.throughputs)

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


def _is_number(value: Any) -> bool:
    # JSON gives int or float; bool is an int subclass but never a meaningful quantity here.
    return isinstance(value, int | float) and not isinstance(value, bool)


def _whole(value: Any) -> bool:
    return _is_number(value) and math.isfinite(value) and float(value).is_integer()


def _describe_job(index: int, job_id: Any) -> str:
    return f"job {index} (id {job_id!r})"


def _read_field(record: Mapping[str, Any], field: str, where: str, *, whole: bool) -> float:
    """``record[field]`` as a number, or a ValidationError naming `where` and `field`."""
    if field not in record:
        raise ValidationError(f"{where}: missing field {field!r}")
    value = record[field]
    if whole and not _whole(value):
        raise ValidationError(f"{where}: {field} must be a whole number, got {value!r}")
    if not _is_number(value) or not math.isfinite(value):
        raise ValidationError(f"{where}: {field} must be a finite number, got {value!r}")
    return float(value)


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
        raise ValidationError(f"{where}: model must be a non-empty string, got {model!r}")
    if adaptation not in ADAPTATIONS:
        raise ValidationError(f"{where}: adaptation must be one of {', '.join(ADAPTATIONS)}, got {adaptation!r}")
    steps = _read_field(job, "total_steps", where, whole=True)
    samples = _read_field(job, "samples_per_epoch", where, whole=True)
    if steps < 1 or samples < 1:
        field, value = ("total_steps", steps) if steps < 1 else ("samples_per_epoch", samples)
        raise ValidationError(f"{where}: {field} must be >= 1, got {value:g}")
    return Training(model=model, adaptation=adaptation, total_steps=int(steps), samples_per_epoch=int(samples))


def workload_from_dict(raw: Any, default_name: str = "workload") -> Workload:
    """Check a decoded workload file (the JSON object) and build the `Workload`.

    `default_name` names the workload when `raw` has no ``name``. Raises what `load_workload`
    raises for a malformed file.
    """
    if not isinstance(raw, Mapping):
        raise ValidationError(f"a workload file must hold a JSON object, got {type(raw).__name__}")
    name = raw.get("name", default_name)
    if not isinstance(name, str):
        raise ValidationError(f"workload name must be a string, got {name!r}")
    capacity = _read_field(raw, "gpus", "workload", whole=True)
    if capacity < 1:
        raise ValidationError(f"workload: gpus must be >= 1, got {capacity:g}")
    round_s = _read_field(raw, "round_s", "workload", whole=False)
    if round_s <= 0:
        raise ValidationError(f"workload: round_s must be > 0, got {round_s:g}")
    jobs = raw.get("jobs")
    if not isinstance(jobs, list) or not jobs:
        raise ValidationError("workload: 'jobs' must be a non-empty list")

    # One pass over the records for what only Python can check (presence and types); the
    # range checks below run on arrays and name the first offending job.
    ids: list[Any] = []
    scalars = np.empty((len(jobs), 3))  # arrival_s, gpus, epochs
    stated_isolated = np.full(len(jobs), np.nan)
    phase_rows: list[tuple[float, float, float]] = []  # (epochs, batch_size, epoch_s)
    phase_job: list[int] = []
    phase_index: list[int] = []
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
        for k, phase in enumerate(phases):
            at = f"{where}, phase {k}"
            if not isinstance(phase, Mapping):
                raise ValidationError(f"{at}: must be a JSON object, got {type(phase).__name__}")
            phase_rows.append((_read_field(phase, "epochs", at, whole=True),
                               _read_field(phase, "batch_size", at, whole=False),
                               _read_field(phase, "epoch_s", at, whole=False)))
            phase_job.append(index)
            phase_index.append(k)

    arrival_s, gang, epochs = scalars.T
    seen: dict[Any, int] = {}
    for index, job_id in enumerate(ids):
        if job_id in seen:
            raise ValidationError(f"{_describe_job(index, job_id)}: id repeats job {seen[job_id]}")
        seen[job_id] = index

    def fail(index: int, message: str) -> None:
        raise ValidationError(f"{_describe_job(index, ids[index])}: {message}")

    if (i := first_bad(arrival_s < 0)) is not None:
        fail(i, f"arrival_s must be >= 0, got {arrival_s[i]:g}")
    if (i := first_bad(gang < 1)) is not None:
        fail(i, f"gpus must be >= 1, got {gang[i]:g}")
    if (i := first_bad(gang > capacity)) is not None:
        fail(i, f"gpus ({gang[i]:g}) exceeds the cluster's {capacity:g} GPUs")
    if (i := first_bad(epochs < 1)) is not None:
        fail(i, f"epochs must be >= 1, got {epochs[i]:g}")

    phase = np.array(phase_rows)  # (P, 3)
    owner = np.array(phase_job)
    for column, field in ((1, "batch_size"), (2, "epoch_s")):
        if (p := first_bad(phase[:, column] <= 0)) is not None:
            fail(int(owner[p]), f"phase {phase_index[p]}: {field} must be > 0, got {phase[p, column]:g}")
    if (p := first_bad(phase[:, 0] < 0)) is not None:
        fail(int(owner[p]), f"phase {phase_index[p]}: epochs must be >= 0, got {phase[p, 0]:g}")
    summed = np.bincount(owner, weights=phase[:, 0], minlength=len(jobs))
    if (i := first_bad(summed != epochs)) is not None:
        fail(i, f"phases' epochs sum to {summed[i]:g}, but epochs is {epochs[i]:g}")
    # A batch size is a regime with one epoch duration; a policy is told {batch_size: epoch_s}.
    order = np.lexsort((phase[:, 1], owner))
    same = (owner[order][1:] == owner[order][:-1]) & (phase[order, 1][1:] == phase[order, 1][:-1])
    if (p := first_bad(same & (phase[order, 2][1:] != phase[order, 2][:-1]))) is not None:
        q = int(order[p + 1])
        fail(int(owner[q]), f"phase {phase_index[q]}: batch_size {phase[q, 1]:g} has epoch_s {phase[q, 2]:g} "
                            f"but another phase gives it {phase[int(order[p]), 2]:g}")

    # Expand phases to epochs for all jobs at once, then cut per job.
    counts = phase[:, 0].astype(np.int64)
    batch_flat = np.repeat(phase[:, 1], counts)
    epoch_s_flat = np.repeat(phase[:, 2], counts)
    cuts = np.cumsum(epochs.astype(np.int64))[:-1]
    batches = np.split(batch_flat, cuts)
    durations = np.split(epoch_s_flat, cuts)
    isolated = np.bincount(owner, weights=phase[:, 0] * phase[:, 2], minlength=len(jobs))
    off = ~np.isnan(stated_isolated) & ~np.isclose(stated_isolated, isolated, rtol=_ISOLATED_RTOL, atol=0.0)
    if (i := first_bad(off)) is not None:
        fail(i, f"isolated_s ({stated_isolated[i]:g}) differs from the sum of its epoch durations ({isolated[i]:g})")

    built = []
    for index, job_id in enumerate(ids):
        batches[index].setflags(write=False)
        durations[index].setflags(write=False)
        built.append(Job(id=job_id, arrival_s=float(arrival_s[index]), gpus=int(gang[index]),
                         epochs=int(epochs[index]), isolated_s=float(isolated[index]),
                         batch_size=batches[index], epoch_s=durations[index], training=trainings[index]))
    throughputs = raw.get("throughputs")
    if throughputs is not None and not isinstance(throughputs, str):
        raise ValidationError(f"workload: throughputs must name a throughput set (a string), got {throughputs!r}")
    return Workload(name=name, gpus=int(capacity), round_s=float(round_s), jobs=tuple(built),
                    throughputs=throughputs)


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
        For a malformed file, naming the job (index and id), the field and what is wrong: a
        missing field, a non-numeric or non-whole value, negative arrival, gpus < 1 or wider than
        the cluster, epochs < 1, phases' epochs not summing to ``epochs``, a non-positive
        epoch_s or batch_size, one batch size with two epoch durations, a stated ``isolated_s``
        that is not the sum of the epoch durations, a repeated id.
    FileNotFoundError
        If there is no such file or shipped workload.
    """
    path = Path(path_or_name)
    if not path.exists() and path.parent == Path("."):
        path = SHIPPED / (path.name if path.suffix == ".json" else f"{path.name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no workload file {str(path_or_name)!r}, and no shipped workload of that name "
                                f"(shipped: {', '.join(shipped_workloads())})")
    with open(path) as handle:
        try:
            raw = json.load(handle)
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{path} is not valid JSON: {exc}") from exc
    return workload_from_dict(raw, default_name=path.stem)
