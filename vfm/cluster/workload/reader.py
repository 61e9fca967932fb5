"""Reading a decoded workload file: every field checked at this boundary, then the `Workload`.

`workload_from_dict` takes the JSON object of a workload file (`vfm.cluster.workload` documents
the format) and builds its read-only `Job` records, or raises a one-line ValidationError naming
the job (its index and id), the phase or profile entry, the field and what is wrong: an unknown
field (with the closest known one), a missing one, a value of the wrong type or out of range, a
bound of `vfm.limits` passed. Presence and types are checked record by record; ranges on arrays
of all jobs at once, naming the first offending job. The user's own data has a field of its own,
``annotations`` (any JSON object, at the top level and per job), kept on the `Workload` and its
`Job` records and never read.

Examples
--------
>>> workload = workload_from_dict({"gpus": 4, "round_s": 60.0, "jobs": [
...     {"id": "a", "arrival_s": 0.0, "gpus": 2, "epochs": 3,
...      "phases": [{"epochs": 3, "batch_size": 32, "epoch_s": 10.0}]}]})
>>> workload.name, workload.jobs[0].isolated_s, workload.jobs[0].regimes
('workload', 30.0, {32.0: 10.0})
>>> workload_from_dict({"gpus": 4, "round_s": 60.0, "jobs": [{"id": "a", "arival_s": 0.0}]})  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
vfm.errors.ValidationError: job 0 (id 'a'): unknown field 'arival_s'; did you mean 'arrival_s'? (data of your ...)
"""

from __future__ import annotations

import difflib
import reprlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import beyond_int64, finite_float, first_bad
from vfm.cluster.workload.model import (
    ADAPTATIONS,
    RESTART_S,
    FloatArray,
    IntArray,
    Job,
    Training,
    Workload,
    annotations_of,
)
from vfm.errors import ValidationError
from vfm.gpu_cluster import ClusterTypes
from vfm.gpu_profiles import GpuProfiles, checked_profiles
from vfm.limits import MAX_ARRIVAL_ROUNDS, MAX_COUNT, MAX_GPUS, MAX_JOB_SECONDS, MAX_WORKLOAD_EPOCHS
from vfm.parameters import Constraint, Instance, Interval, OneOf, Optional, Real, Satisfies, check

__all__ = ["workload_from_dict"]

# The fields a workload file may give, per object. The shipped files also carry descriptive
# fields that nothing reads (``source``; a job's ``dataset``, ``job_type``, ``static_duration_s``;
# a phase's ``mem_mib``, ``util_pct``): they are known, so that only a misspelled field is refused.
# ``annotations`` (the workload's and each job's) is the user's own data, kept and never read.
_WORKLOAD_KEYS = ("name", "gpus", "round_s", "jobs", "throughputs", "cluster", "annotations", "source")
_JOB_KEYS = ("id", "arrival_s", "gpus", "epochs", "isolated_s", "phases", "profile", "model", "adaptation",
             "total_steps", "samples_per_epoch", "annotations", "restart_s", "dataset", "job_type",
             "static_duration_s")
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
# The largest float, and the float magnitude from which an integer is beyond int64: a bulk read
# of records whose numbers reach it is left to the record-by-record one, which tells an integer
# (refused, `_field`) from a float (bounded later).
_FLOAT_MAX = sys.float_info.max
_BEYOND_INT64 = 2.0**63



def _shown(value: Any) -> str:
    """`value` for a message: its repr, cut short (`_SHORT`); never raises."""
    try:
        return _SHORT.repr(value)
    except ValueError:  # an int past Python's 4300-digit limit for str()
        return f"<an integer of {value.bit_length()} bits>"


def _whole(value: Any) -> bool:
    number = finite_float(value)
    return number is not None and number.is_integer()


#: A number field: finite (an integer within int64, or a float); a whole one also has no fraction
#: (16.0 is whole: JSON writers differ on how they write it).
_NUMBER = Satisfies("a finite number", lambda value: finite_float(value) is not None, _shown)
_WHOLE = Satisfies("a whole number", _whole, _shown)
#: The number fields' constraints: an integer beyond int64 there is refused first, saying why (`_field`).
_NUMERIC = (_NUMBER, _WHOLE)
#: A job's id: any integer (not a bool: True would be the same key as 1) or a string.
_ID = Satisfies("an integer or a string", lambda value: isinstance(value, int | str) and not isinstance(value, bool),
                _shown)

#: A count a file gives (steps, samples): whole (checked as read) and below 2**53, where floats
#: still count every one.
_COUNT = Interval(Real, 1, MAX_COUNT, closed="left", noun="a whole number", note="2**53")


#: A record of a workload file (the file, a job, a phase, a profile entry).
_OBJECT = Instance(Mapping, "a JSON object")


def _describe_job(index: int, job_id: Any) -> str:
    return f"job {index} (id {_shown(job_id)})"


def _field(record: Mapping[str, Any], field: str, where: str, *constraints: Constraint) -> Any:
    """``record[field]``, present and admitted by each of `constraints` in turn; else a
    ValidationError naming `where` and `field`: the one check of every field a file gives."""
    if field not in record:
        raise ValidationError(f"{where}: missing field {field!r}")
    value = record[field]
    # One rule wherever a number stands (`vfm._validation.INT64_MAX`), told with its reason.
    if beyond_int64(value) and any(c in _NUMERIC for c in constraints):
        size = "too large for a float (about 1.8e308 at most) and " if abs(value) > _FLOAT_MAX else ""
        raise ValidationError(f"{where}: {field} ({_shown(value)}) is {size}an integer beyond int64, which vfm does "
                              f"not read as a number (integers from -2**63 to 2**63 - 1; write a larger one as a "
                              f"float, 1e30, whose own bounds then apply)")
    for constraint in constraints:
        if not constraint.admits(value):  # the name is built for a refusal only: a file has fields per job
            check(f"{where}: {field}", value, constraint)
    return value


def _check_keys(record: Mapping[Any, Any], known: tuple[str, ...], where: str) -> None:
    """Refuse a field `record` does not know, naming it and the closest known field: a misspelled
    optional field (``isolated_sec``) would otherwise be silently ignored."""
    for key in record:
        if key not in known:
            _unknown_key(key, known, where)


def _unknown_key(key: Any, known: tuple[str, ...], where: str) -> None:
    close = difflib.get_close_matches(key, known, n=1) if isinstance(key, str) else []
    hint = f"did you mean {close[0]!r}?" if close else f"the fields are {', '.join(known)}"
    if "annotations" in known and close != ["annotations"]:  # where the file may carry its own data
        hint += " (data of your own goes in 'annotations', a JSON object)"
    raise ValidationError(f"{where}: unknown field {_shown(key)}; {hint}")


#: A job's training fields (`Training`; a job gives all of them or none) and what each must be.
_TRAINING_FIELDS: dict[str, tuple[Constraint, ...]] = {
    "model": (Instance(str, "a non-empty string", with_value=True, nonempty=True),),
    "adaptation": (OneOf(tuple(ADAPTATIONS)),),
    "total_steps": (_WHOLE, _COUNT),
    "samples_per_epoch": (_WHOLE, _COUNT),
}


def _read_training(job: Mapping[str, Any], where: str) -> Training | None:
    """The job's `Training`, None when the file gives none of its fields."""
    given = [field for field in _TRAINING_FIELDS if field in job]
    if not given:
        return None
    if len(given) < len(_TRAINING_FIELDS):
        missing = next(field for field in _TRAINING_FIELDS if field not in job)
        raise ValidationError(f"{where}: missing field {missing!r} (a job gives all of "
                              f"{', '.join(_TRAINING_FIELDS)} or none)")
    model, adaptation, steps, samples = (_field(job, field, where, *constraints)
                                         for field, constraints in _TRAINING_FIELDS.items())
    return Training(model=model, adaptation=adaptation, total_steps=int(steps), samples_per_epoch=int(samples))


#: The number fields of a job, of a phase and of a profile entry, and what each holds, in column order.
_JOB_FIELDS = (("arrival_s", _NUMBER), ("gpus", _WHOLE), ("epochs", _WHOLE))
_PHASE_FIELDS = (("epochs", _WHOLE), ("batch_size", _NUMBER), ("epoch_s", _NUMBER))
_PROFILE_FIELDS = (("batch_size", _NUMBER), ("epoch_s", _NUMBER))


def _read_plain(records: list[Any], fields: tuple[tuple[str, Satisfies], ...],
                known: tuple[str, ...]) -> FloatArray | None:
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
    if (np.abs(rows) >= _BEYOND_INT64).any():  # an integer beyond int64 there is refused record by record
        return None
    whole = [k for k, (_, kind) in enumerate(fields) if kind is _WHOLE]
    if not np.isfinite(rows).all() or (rows[:, whole] != np.floor(rows[:, whole])).any():
        return None
    return rows


def _read_records(records: list[Any], fields: tuple[tuple[str, Satisfies], ...], known: tuple[str, ...], where: str,
                  label: str) -> FloatArray:
    """The objects of `records` as rows of their `fields` (``(name, kind)``), shape (len, fields);
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
        check(at, record, _OBJECT)
        _check_keys(record, known, at)
        rows[k] = [float(_field(record, field, at, kind)) for field, kind in fields]
    return rows


def _read_profile(job: Mapping[str, Any], where: str) -> FloatArray:
    """The job's told profile as rows ``(batch_size, epoch_s)``; no rows when the file gives none."""
    if "profile" not in job:
        return np.empty((0, 2))
    profile = job["profile"]
    check(f"{where}: 'profile'", profile, Instance(list, "a non-empty list of {batch_size, epoch_s} objects",
                                                 with_value=True, nonempty=True))
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
    """A workload file's top-level fields, checked: its name, GPUs, round length, job records and
    annotations."""

    name: str
    capacity: float
    round_s: float
    jobs: list[Any]
    annotations: Mapping[str, Any]


def _read_header(raw: Any, default_name: str) -> _Header:
    """The top-level fields of `raw` (`workload_from_dict`), or a ValidationError naming the field."""
    check("a workload file", raw, _OBJECT)
    _check_keys(raw, _WORKLOAD_KEYS, "workload")
    name = raw.get("name", default_name)
    check("workload name", name, Instance(str, "a string", with_value=True))
    capacity = float(_field(raw, "gpus", "workload", _WHOLE,
                            Interval(Real, 1, MAX_GPUS, noun="a whole number", note="MAX_GPUS")))
    round_s = float(_field(raw, "round_s", "workload", _NUMBER,
                           Interval(Real, 0, MAX_JOB_SECONDS, closed="right", unit="seconds", note="MAX_JOB_SECONDS")))
    jobs = raw.get("jobs")
    check("workload: 'jobs'", jobs, Instance(list, "a non-empty list", with_value=True, nonempty=True))
    return _Header(name=name, capacity=capacity, round_s=round_s, jobs=jobs,
                   annotations=annotations_of(raw.get("annotations", {}), "workload"))


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
    annotations: list[Mapping[str, Any]]  # per job, its annotations (checked; empty where it gives none)
    restart_s: list[float | None]  # per job, its restart cost (checked); None where it gives none


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
    annotations: list[Mapping[str, Any]] = []
    restart_s: list[float | None] = []
    for index, job in enumerate(jobs):
        check(f"job {index}", job, _OBJECT)
        job_id = _field(job, "id", f"job {index}", _ID)
        where = _describe_job(index, job_id)
        _check_keys(job, _JOB_KEYS, where)
        ids.append(job_id)
        scalars[index] = [float(_field(job, field, where, kind)) for field, kind in _JOB_FIELDS]
        if "isolated_s" in job:
            stated_isolated[index] = float(_field(job, "isolated_s", where, _NUMBER))
        trainings.append(_read_training(job, where))
        annotations.append(annotations_of(job.get("annotations", {}), where))
        restart_s.append(float(_field(job, "restart_s", where, _NUMBER, RESTART_S)) if "restart_s" in job else None)
        phases = job.get("phases")
        check(f"{where}: 'phases'", phases, Instance(list, "a non-empty list" + ("" if "phases" in job else
                                                                                 " (missing field 'phases')"),
                                                     with_value=True, nonempty=True))
        phase_blocks.append(_read_records(phases, _PHASE_FIELDS, _PHASE_KEYS, where, "phase"))
        profile_blocks.append(_read_profile(job, where))
    arrival_s, gang, epochs = scalars.T
    return _JobFields(ids=ids, arrival_s=arrival_s, gang=gang, epochs=epochs, stated_isolated=stated_isolated,
                      trainings=trainings, phase_blocks=phase_blocks, profile_blocks=profile_blocks,
                      annotations=annotations, restart_s=restart_s)


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
                         profile=profiles[index], annotations=fields.annotations[index],
                         restart_s=fields.restart_s[index]))
    return tuple(built)


def workload_from_dict(raw: Any, default_name: str = "workload", *, profiles: GpuProfiles | None = None) -> Workload:
    """Check a decoded workload file (the JSON object) and build the `Workload`.

    `default_name` names the workload when `raw` has no ``name``. `profiles` are the GPU types
    the file's ``"cluster"`` may name (`vfm.gpu_profiles.GpuProfiles`, the shipped ones by
    default); the workload's cluster carries them. Raises what `load_workload` raises for a
    malformed file, without the file's path.
    """
    check("default_name", default_name, Instance(str, "a string", with_value=True))
    if profiles is not None:  # checked whether or not the file gives a cluster to read them for
        checked_profiles(profiles)
    header = _read_header(raw, default_name)
    fields = _read_jobs(header.jobs)
    _check_unique_ids(fields.ids)
    fail = _failing(fields.ids)
    phases_of, told = _checked_records(fields, header.capacity, header.round_s, fail)
    told_profiles = _profiles(phases_of, told, len(fields.ids), fail)
    built = _built_jobs(fields, phases_of, told_profiles, fail)
    throughputs = raw.get("throughputs")
    check("workload: throughputs", throughputs, Optional(Instance(str, "a throughput set's name (a string)",
                                                                  with_value=True)))
    return Workload(name=header.name, gpus=int(header.capacity), round_s=float(header.round_s), jobs=built,
                    throughputs=throughputs, cluster=_read_cluster(raw, profiles), annotations=header.annotations)


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


def _read_cluster(raw: Mapping[str, Any], profiles: GpuProfiles | None) -> ClusterTypes | None:
    """The file's ``cluster`` (GPU type -> count, of the types of `profiles`), None when it gives
    none."""
    if raw.get("cluster") is None:
        return None
    given = raw["cluster"]
    check("workload: cluster", given, Instance(Mapping, 'a JSON object of GPU type -> count (e.g. {"v100": 16, '
                                                        '"k80": 16})', with_value=True))
    # A JSON number with a zero fraction (16.0) is a whole count, as gpus may be; ClusterTypes
    # checks the types and counts, naming them as the file does.
    return ClusterTypes({t: int(c) if _whole(c) else c for t, c in given.items()}, profiles, name="workload: cluster")
