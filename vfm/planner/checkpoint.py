"""Checkpoints of a policy: a versioned plain-data format (JSON), and what restoring one checks.

`vfm.planner.Policy.checkpoint` (and `vfm.planner.TypedPolicy.checkpoint`) write the policy as
JSON text; `restore` reads it back into a policy built with the same configuration. Nothing here
ever unpickles: a checkpoint is data, read field by field by name and checked before the policy
takes it, so a checkpoint from an untrusted or damaged file can at worst be refused.

Format (``"format": "vfm.policy-checkpoint"``, ``"version": 1``), one JSON object:

``policy``
    ``"Policy"`` or ``"TypedPolicy"``: a checkpoint restores only into the class that made it.
``config``, ``config_sha256``
    The policy's configuration in readable form (`configuration`: capacity, the plan options,
    ``replan_every``, seed, fairness, execution, ``max_wait``, continuity, the deadline, the
    forecaster's class and plain parameters, and on GPU types the cluster's types and counts) and
    the SHA-256 of its canonical JSON (`fingerprint`). A restore into a policy of another
    configuration is refused, naming the fields that differ.
``round_index``, ``replans``
    Rounds served and re-plans made (the policy clock, and the seed of the next re-plan).
``jobs``
    The jobs present, in arrival order, each an object: ``id``, ``gpus``, ``regimes`` (pairs
    [batch size, seconds per epoch], on the job's reference type on GPU types), ``epochs``,
    ``budget``, ``stages`` (the epochs observed as runs [column in regimes, epochs]),
    ``fair_finish_at_s`` (null: none yet), ``kind``, ``carried`` and, on GPU types, ``speeds``
    (the job's speed on each type at each regime and at their mean, K rows of R + 1).
``completed``
    The ids of the jobs that completed, in completion order (ids stay unique over a policy's life).
``taught``, ``finished``
    Completed jobs as trajectories (``kind``, ``regimes`` ascending, ``stages`` as runs [rank in
    regimes, epochs]): those already taught to the forecaster, and those not taught yet.

The standing plan is not stored. ``carried`` holds, for each job of the standing plan, what it
carries into the next one: its credit (rounds owed), the rounds it has waited, whether it ran in
the last round (null for a job that arrived since). A restored state has no plan (`last_plan` is
None): it holds these in `vfm.planner.state.PolicyState.carried` and its arrays, and the policy
re-plans at its next round, from them. A learning forecaster is stored as the trajectories it was
taught, and taught them again on restore: `vfm.forecast.PopulationForecaster`'s references are
exactly its trajectories; another forecaster that has learned something is refused at checkpoint
time (it has no plain-data form to store).

Job ids and kinds are strings, whole numbers (not bools) or tuples of them (nested too); a kind may
also be None. In JSON a string is a string, a whole number a number, and a tuple an object
``{"tuple": [...]}``, so every id reads back as exactly the id it was.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
from collections.abc import Callable, Hashable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from vfm._validation import (
    FloatArray,
    checked_job_id,
    is_real,
    is_whole,
    read_only,
)
from vfm.errors import ValidationError
from vfm.forecast import Forecaster, PopulationForecaster, Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_COUNT, MAX_JOB_EPOCHS
from vfm.planner import shockwave
from vfm.planner.plan import Plan
from vfm.planner.program import PlanningProgram
from vfm.planner.state import JobRecord, PolicyConfig, PolicyState, checked_record

#: The format's name (the ``format`` field).
FORMAT = "vfm.policy-checkpoint"
#: The format's version: a checkpoint of another version is refused, naming both.
VERSION = 1
#: The deepest nesting of tuples in an id or a kind.
MAX_ID_DEPTH = 32

_TOP = ("format", "version", "policy", "config_sha256", "config", "round_index", "replans", "jobs", "completed",
        "taught", "finished")
_JOB = ("id", "gpus", "regimes", "epochs", "budget", "stages", "fair_finish_at_s", "kind", "carried")
_CARRIED = ("credit", "waited", "ran_last")
_TRAJECTORY = ("kind", "regimes", "stages")


# --- the configuration -----------------------------------------------------------------------------


def configuration(config: PolicyConfig, cluster: ClusterTypes | None = None) -> dict[str, Any]:
    """The configuration as plain data: every `PolicyConfig` field, the forecaster as its class
    and plain parameters, and on GPU types the cluster (type -> count), by name."""
    plain: dict[str, Any] = {"policy": "Policy" if cluster is None else "TypedPolicy"}
    for spec in dataclasses.fields(config):
        plain[spec.name] = _plain(getattr(config, spec.name))
    if cluster is not None:
        plain["cluster"] = {t: int(c) for t, c in zip(cluster.types, cluster.counts.tolist(), strict=True)}
    return plain


def fingerprint(plain: Mapping[str, Any]) -> str:
    """The SHA-256 (hex) of a configuration's canonical JSON (keys sorted, no spaces)."""
    return hashlib.sha256(_canonical(plain).encode()).hexdigest()


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def _plain(value: Any) -> Any:
    """`value` as JSON data: numbers, strings, lists, objects; a dataclass (a forecaster, the plan
    options) as its class and fields; an array as its shape, type and SHA-256; another object as
    its class and its public plain attributes. Non-finite floats become strings ("nan", "inf")."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if np.isfinite(value) else str(float(value))
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        array = np.ascontiguousarray(value)
        return {"array": str(array.dtype), "shape": list(array.shape),
                "sha256": hashlib.sha256(array.tobytes()).hexdigest()}
    if isinstance(value, Mapping):
        return {str(key): _plain(v) for key, v in sorted(value.items(), key=lambda item: repr(item[0]))}
    name = f"{type(value).__module__}.{type(value).__qualname__}"
    if dataclasses.is_dataclass(value):
        return {"class": name, **{f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}}
    public = {k: v for k, v in sorted(getattr(value, "__dict__", {}).items())
              if not k.startswith("_") and (v is None or isinstance(v, bool | str | int | float))}
    return {"class": name, **{k: _plain(v) for k, v in public.items()}}


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _differences(theirs: Mapping[str, Any], ours: Mapping[str, Any], allowed: tuple[str, ...]) -> list[str]:
    """The configuration fields that differ, each as 'field: X in the checkpoint, Y in this policy'."""
    a, b = _flat(dict(theirs)), _flat(dict(ours))
    missing = object()
    found = []
    for key in [*a, *(k for k in b if k not in a)]:
        x, y = a.get(key, missing), b.get(key, missing)
        if x != y and key not in allowed:
            def shown(v: Any) -> str:
                return "(absent)" if v is missing else json.dumps(v) if isinstance(v, dict | list) else repr(v)
            found.append(f"{key}={shown(x)} in the checkpoint, {shown(y)} in this policy")
    return found


# --- writing ---------------------------------------------------------------------------------------


def dumps(config: PolicyConfig, state: PolicyState, *, cluster: ClusterTypes | None = None,
          speeds: Mapping[Hashable, FloatArray] | None = None) -> str:
    """The checkpoint of a policy of configuration `config` in `state` as JSON text (module docstring).

    `cluster` and `speeds` (each job's speeds per type) for a `vfm.planner.TypedPolicy`.

    Raises
    ------
    vfm.errors.ValidationError
        For what the format cannot hold, naming it: a job id or kind that is not a string, a whole
        number, a tuple of them (or None, for a kind); a forecaster that has learned from completed
        jobs but is not a `vfm.forecast.PopulationForecaster`.
    """
    plain = configuration(config, cluster)
    carried = _carried_out(state)
    jobs = []
    for job_id, record in state.jobs.items():
        entry = _record_out(job_id, record, carried.get(job_id))
        if speeds is not None:
            entry["speeds"] = [[float(s) for s in row] for row in np.asarray(speeds[job_id]).tolist()]
        jobs.append(entry)
    document = {
        "format": FORMAT, "version": VERSION, "policy": plain["policy"], "config_sha256": fingerprint(plain),
        "config": plain, "round_index": int(state.round_index), "replans": int(state.replans), "jobs": jobs,
        "completed": [_id_out(job_id, f"the id of completed job {job_id!r}") for job_id in state.completed],
        "taught": [_trajectory_out(t, "a taught trajectory") for t in _taught(config, state)],
        "finished": [_trajectory_out(t, "a finished trajectory") for t in state.finished],
    }
    return json.dumps(document, allow_nan=False, indent=1)


def _id_out(value: Any, what: str, *, none: bool = False, depth: int = 0) -> Any:
    """An id or a kind as JSON (module docstring), or a `ValidationError` naming it (`what`)."""
    if isinstance(value, str) or (value is None and none):
        return value
    if isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, tuple) and depth < MAX_ID_DEPTH:
        return {"tuple": [_id_out(v, what, none=none, depth=depth + 1) for v in value]}
    allowed = "strings, whole numbers (not bools), None or tuples of them" if none else \
        "strings, whole numbers (not bools) or tuples of them"
    raise ValidationError(f"{what} is {type(value).__name__} {value!r}: a checkpoint holds ids and kinds that are "
                          f"{allowed}")


def _record_out(job_id: Hashable, record: JobRecord, carried: tuple[float, int, bool] | None) -> dict[str, Any]:
    target = record.fair_finish_at_s
    return {
        "id": _id_out(job_id, f"job id {job_id!r}"), "gpus": record.gpus,
        "regimes": [[b, s] for b, s in record.regimes], "epochs": record.epochs, "budget": record.budget,
        "stages": [[c, n] for c, n in record.stages], "fair_finish_at_s": None if np.isnan(target) else target,
        "kind": _id_out(record.kind, f"the kind of job {job_id!r}", none=True),
        "carried": None if carried is None else dict(zip(_CARRIED, carried, strict=True)),
    }


def _carried_out(state: PolicyState) -> dict[Hashable, tuple[float, int, bool]]:
    """What each job present carries into the next plan (credit, waited, ran last): those of
    `PolicyState.carried`."""
    return {job_id: (float(c), int(w), bool(r)) for job_id, c, w, r
            in zip(state.carried, state.credit.tolist(), state.waited.tolist(), state.ran_last.tolist(),
                   strict=True) if job_id in state.jobs}


def _trajectory_out(trajectory: Trajectory, what: str) -> dict[str, Any]:
    ranks = np.asarray(trajectory.ranks)
    starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
    lengths = np.diff(np.r_[starts, ranks.size])
    return {"kind": _id_out(trajectory.group, f"the kind of {what}"), "regimes": trajectory.labels.tolist(),
            "stages": [[int(r), int(n)] for r, n in zip(ranks[starts].tolist(), lengths.tolist(), strict=True)]}


def _taught(config: PolicyConfig, state: PolicyState) -> list[Trajectory]:
    """The trajectories the policy taught its configured forecaster so far (none if it learns nothing)."""
    learned, configured = state.forecaster, config.forecaster
    if learned is None or learned is configured or _plain(learned) == _plain(configured):
        return []
    if isinstance(learned, PopulationForecaster) and isinstance(configured, PopulationForecaster):
        references = learned.population
        taught = [_reference(references, j) for j in range(configured.population.size, references.size)]
        if _plain(configured.learned(taught)) == _plain(learned):
            return taught
    raise ValidationError(f"the forecaster has learned from completed jobs ({type(learned).__name__}) in a form a "
                          f"checkpoint cannot hold: a checkpoint stores what a vfm.forecast.PopulationForecaster "
                          f"learned as the trajectories it was taught, and no other learned state")


def _reference(references: Any, j: int) -> Trajectory:
    """Reference `j` of a `vfm.forecast.Population` as the trajectory it was taught."""
    width, stages = int(references.width[j]), int(references.stages[j])
    labels = references.labels[j, :width]
    lengths = references.stage_length[j, :stages].astype(np.int64)
    return Trajectory(references.kinds[int(references.code[j])],
                      np.repeat(labels[references.stage_rank[j, :stages]], lengths), regimes=labels)


# --- reading ---------------------------------------------------------------------------------------


def restored(config: PolicyConfig, state: object, *, cluster: ClusterTypes | None = None,
             allow_resize: bool = False) -> tuple[PolicyState, dict[Hashable, FloatArray]]:
    """The state a policy of configuration `config` continues from, and each job's speeds per type
    (on GPU types, `cluster`; else empty), from `state`: a checkpoint (JSON text or bytes, or the
    dict it parses to) or, for a `vfm.planner.Policy`, a `PolicyState`; checked in full.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the field (and the job) of what is refused (`Policy.restore`).
    """
    if not isinstance(allow_resize, bool):
        raise ValidationError(f"allow_resize must be True or False, got {allow_resize!r}")
    if isinstance(state, PolicyState):
        if cluster is not None:
            raise ValidationError("state is a PolicyState; a TypedPolicy restores from its checkpoint "
                                  "(TypedPolicy.checkpoint()), which also holds each job's speeds per type")
        if allow_resize:
            raise ValidationError("allow_resize applies to a checkpoint (Policy.checkpoint()), not to a PolicyState")
        return checked_state(config, state), {}
    document = _parsed(state)
    return _loads(config, document, cluster, allow_resize)


def _parsed(state: object) -> Mapping[str, Any]:
    """A checkpoint's JSON object, from its text, its UTF-8 bytes or the dict it parses to."""
    expected = "state must be a PolicyState (Policy.state) or a checkpoint (Policy.checkpoint(): its JSON text, " \
               "or the dict it parses to)"
    if isinstance(state, bytes | bytearray):
        try:
            state = bytes(state).decode("utf-8")
        except UnicodeDecodeError:
            raise ValidationError(f"{expected}; got bytes that are not UTF-8 text (checkpoints are JSON; "
                                  f"pickle is never loaded)") from None
    if isinstance(state, str):
        try:
            state = json.loads(state, parse_constant=_no_constant)
        except (ValueError, RecursionError) as error:
            raise ValidationError(f"{expected}; got text that is not JSON ({error})") from None
    if not isinstance(state, Mapping):
        raise ValidationError(f"{expected}, got {type(state).__name__}")
    if "format" not in state:
        raise ValidationError(f"{expected}; got a {type(state).__name__} with no 'format' field")
    return state


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a checkpoint may hold")


def _loads(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
           allow_resize: bool) -> tuple[PolicyState, dict[Hashable, FloatArray]]:
    _header(config, document, cluster, allow_resize)
    _keys(document, _TOP, "checkpoint")
    rows = _list(document["jobs"], "jobs")
    if allow_resize:
        _fits(config, rows)
    jobs: dict[Hashable, JobRecord] = {}
    speeds: dict[Hashable, FloatArray] = {}
    carried: dict[Hashable, tuple[float, int, bool]] = {}
    round_index = _count(document["round_index"], "round_index")
    for k, row in enumerate(rows):
        job_id, record, carry, speed = _record_in(config, row, k, round_index, cluster)
        if job_id in jobs:
            raise ValidationError(f"jobs[{k}] repeats job id {job_id!r}; job ids are unique")
        jobs[job_id] = record
        if carry is not None:
            carried[job_id] = carry
        if speed is not None:
            speeds[job_id] = speed
    completed = tuple(_id_in(v, f"completed[{k}]") for k, v in enumerate(_list(document["completed"], "completed")))
    taught = [_trajectory_in(v, f"taught[{k}]") for k, v in enumerate(_list(document["taught"], "taught"))]
    finished = tuple(_trajectory_in(v, f"finished[{k}]") for k, v in enumerate(_list(document["finished"],
                                                                                          "finished")))
    types = None if cluster is None else len(cluster)
    state = PolicyState(
        jobs=MappingProxyType(jobs), completed=completed, stale=True, round_index=round_index,
        replans=_count(document["replans"], "replans"), forecaster=_forecaster(config, taught), finished=finished,
        **_carried_in(jobs, carried))
    return checked_state(config, state, types=types), speeds


def _header(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
            allow_resize: bool) -> None:
    """The format, version, kind of policy and configuration, each checked in turn."""
    if document["format"] != FORMAT:
        raise ValidationError(f"format of the checkpoint is {document['format']!r}, expected {FORMAT!r}")
    version = document.get("version")
    if version != VERSION or not is_whole(version):
        raise ValidationError(f"version of the checkpoint is {version!r}; this vfm reads version {VERSION} only")
    ours = "Policy" if cluster is None else "TypedPolicy"
    if document.get("policy") != ours:
        raise ValidationError(f"policy of the checkpoint is {document.get('policy')!r}: a checkpoint restores only "
                              f"into the class that made it, and this is a {ours}")
    if allow_resize and cluster is not None:
        raise ValidationError("allow_resize applies to a Policy; a TypedPolicy's cluster must be the checkpoint's")
    theirs = document.get("config")
    if not isinstance(theirs, Mapping):
        raise ValidationError(f"config of the checkpoint must be an object, got {type(theirs).__name__}")
    try:
        stated = fingerprint(theirs)
    except (TypeError, ValueError, RecursionError):
        stated = None
    if stated != document.get("config_sha256"):
        raise ValidationError("config_sha256 of the checkpoint is not the SHA-256 of its config: the checkpoint "
                              "was altered")
    plain = configuration(config, cluster)
    if stated == fingerprint(plain):
        return
    differ = _differences(theirs, plain, ("capacity",) if allow_resize else ())
    if differ:
        shown = "; ".join(differ[:8]) + (f"; and {len(differ) - 8} more" if len(differ) > 8 else "")
        resized = cluster is None and len(differ) == 1 and differ[0].startswith("capacity=")
        raise ValidationError(f"config of the checkpoint differs from this policy's: {shown}"
                              + (" (for a cluster that changed size: restore(..., allow_resize=True))" if resized
                                 else ""))


def _fits(config: PolicyConfig, rows: list[Any]) -> None:
    """On a resize, every job's gang fits this policy's capacity; else the jobs that do not, named."""
    wide = [(row.get("id"), row.get("gpus")) for row in rows
            if isinstance(row, Mapping) and is_whole(row.get("gpus")) and row["gpus"] > config.capacity]
    if wide:
        named = ", ".join(f"{_id_in(i, 'jobs[].id')!r} ({g} GPUs)" for i, g in wide)
        raise ValidationError(f"jobs {named} have gangs wider than this policy's {config.capacity} GPUs: remove them "
                              f"(restore into a policy of the old capacity, remove_job, checkpoint again)")


def _keys(value: Mapping[str, Any], names: tuple[str, ...], what: str, optional: tuple[str, ...] = ()) -> None:
    for name in names:
        if name not in value:
            raise ValidationError(f"{what} has no field {name!r}")
    extra = [k for k in value if k not in names and k not in optional]
    if extra:
        raise ValidationError(f"{what} has an unknown field {extra[0]!r}")


def _list(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list):
        raise ValidationError(f"{what} must be a list, got {type(value).__name__}")
    return value


def _count(value: Any, what: str, low: int = 0, high: int = MAX_COUNT) -> int:
    if not is_whole(value) or not low <= value <= high:
        raise ValidationError(f"{what} must be a whole number in [{low}, {high}], got {value!r}")
    return int(value)


def _real(value: Any, what: str, ok: Callable[[float], bool], expected: str) -> float:
    if not is_real(value) or not np.isfinite(_float(value)) or not ok(_float(value)):
        raise ValidationError(f"{what} must be {expected}, got {value!r}")
    return float(value)


def _float(value: Any) -> float:
    """A real number as a float; an integer too large for one as an infinity of its sign."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def _id_in(value: Any, what: str, *, none: bool = False, depth: int = 0) -> Any:
    """An id or a kind from its JSON (module docstring), or a `ValidationError` naming it (`what`)."""
    if isinstance(value, str) or (value is None and none):
        return value
    if type(value) is int:
        return value
    if isinstance(value, Mapping) and list(value) == ["tuple"] and isinstance(value["tuple"], list) \
            and depth < MAX_ID_DEPTH:
        return tuple(_id_in(v, what, none=none, depth=depth + 1) for v in value["tuple"])
    raise ValidationError(f"{what} must be a string, a whole number{', null' if none else ''} or "
                          f'{{"tuple": [...]}} of them, got {json.dumps(value, default=repr)[:80]}')


def _record_in(config: PolicyConfig, row: Any, k: int, round_index: int, cluster: ClusterTypes | None
               ) -> tuple[Hashable, JobRecord, tuple[float, int, bool] | None, FloatArray | None]:
    """Job row `k`: its id, record, what it carries (or None) and its speeds (or None), each checked."""
    if not isinstance(row, Mapping):
        raise ValidationError(f"jobs[{k}] must be an object, got {type(row).__name__}")
    job_id = _id_in(row.get("id"), f"jobs[{k}].id")
    what = f"jobs[{k}] (job {job_id!r})"
    _keys(row, (*_JOB, *(("speeds",) if cluster is not None else ())), what)
    target = row["fair_finish_at_s"]
    raw = JobRecord(
        gpus=_count(row["gpus"], f"gpus of {what}", 1, config.capacity),
        regimes=tuple(_pairs(row["regimes"], f"regimes of {what}", whole=False)), epochs=row["epochs"],
        budget=row["budget"], stages=tuple(_pairs(row["stages"], f"stages of {what}")),
        fair_finish_at_s=float("nan") if target is None else target,
        kind=_id_in(row["kind"], f"kind of {what}", none=True))
    _check_record(config, job_id, raw)
    # As `Policy.add_job` keeps them: floats for the regimes, the budget and the target.
    record = dataclasses.replace(
        raw, regimes=tuple((float(b), float(s)) for b, s in raw.regimes), budget=float(raw.budget),
        fair_finish_at_s=float(raw.fair_finish_at_s))
    carried = row["carried"]
    carry = None
    if carried is not None:
        if not isinstance(carried, Mapping):
            raise ValidationError(f"carried of {what} must be an object or null, got {type(carried).__name__}")
        _keys(carried, _CARRIED, f"carried of {what}")
        credit = _real(carried["credit"], f"credit of {what}",
                       lambda c: shockwave.CREDIT_FLOOR <= c <= round_index + 1,
                       f"a finite number of rounds in [{shockwave.CREDIT_FLOOR:g}, round_index + 1]")
        ran = carried["ran_last"]
        if not isinstance(ran, bool):
            raise ValidationError(f"ran_last of {what} must be true or false, got {ran!r}")
        carry = (credit, _count(carried["waited"], f"waited of {what}", 0, round_index), ran)
    speed = None if cluster is None else _speeds_in(row["speeds"], what, record, cluster)
    return job_id, record, carry, speed


def _pairs(value: Any, what: str, whole: bool = True) -> list[tuple[Any, Any]]:
    """A list of [a, b] pairs (whole numbers, or any JSON numbers), as tuples; checked further by the caller."""
    pairs = _list(value, what)
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                is_whole(v) if whole else is_real(v) and np.isfinite(_float(v)) for v in pair)):
            kind = "whole" if whole else "finite"
            raise ValidationError(f"{what}[{k}] must be a pair of {kind} numbers, got {pair!r}")
    return [(pair[0], pair[1]) for pair in pairs]


def _speeds_in(value: Any, what: str, record: JobRecord, cluster: ClusterTypes) -> FloatArray:
    """A job's speeds per type (K, R + 1): finite, in [0, 1], 0 on a type too small for its gang, and
    in each column positive on some type."""
    rows = _list(value, f"speeds of {what}")
    shape = (len(cluster), len(record.regimes) + 1)
    if len(rows) != shape[0] or not all(isinstance(r, list) and len(r) == shape[1] for r in rows) or \
            not all(is_real(v) and np.isfinite(_float(v)) for r in rows for v in r):
        raise ValidationError(f"speeds of {what} must be {shape[0]} lists (one per GPU type) of {shape[1]} numbers")
    speeds = np.array(rows, dtype=np.float64)
    fits = cluster.counts >= (record.gpus if is_whole(record.gpus) else np.inf)
    if not (np.isfinite(speeds).all() and ((speeds >= 0) & (speeds <= 1)).all()):
        raise ValidationError(f"speeds of {what} must be finite numbers in [0, 1]")
    if (speeds[~fits] > 0).any():
        raise ValidationError(f"speeds of {what} give a speed on a GPU type with fewer GPUs than its gang")
    if not (speeds > 0).any(axis=0).all():
        raise ValidationError(f"speeds of {what} leave a regime with no GPU type that can host the job")
    return read_only(speeds)


def _trajectory_in(value: Any, what: str) -> Trajectory:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be an object, got {type(value).__name__}")
    _keys(value, _TRAJECTORY, what)
    kind = _id_in(value["kind"], f"kind of {what}")
    labels = _list(value["regimes"], f"regimes of {what}")
    if not labels or not all(is_real(b) and np.isfinite(_float(b)) for b in labels) or \
            any(a >= b for a, b in itertools.pairwise(labels)):
        raise ValidationError(f"regimes of {what} must be finite numbers in ascending order, at least one")
    stages = _pairs(value["stages"], f"stages of {what}")
    _check_stages(stages, len(labels), MAX_JOB_EPOCHS, f"stages of {what}", "ranks")
    ranks = np.array([r for r, _ in stages], dtype=np.int64)
    lengths = np.array([n for _, n in stages], dtype=np.int64)
    if not stages:
        raise ValidationError(f"stages of {what} must list at least one epoch")
    return Trajectory(kind, np.repeat(np.array(labels, dtype=np.float64)[ranks], lengths), regimes=labels)


def _check_stages(stages: Any, regimes: int, most: int, what: str, column: str = "columns") -> int:
    """Runs (column, epochs): columns in [0, `regimes`), epochs >= 1, a new column each run, at most
    `most` epochs in all; the epochs."""
    if not isinstance(stages, tuple | list):
        raise ValidationError(f"{what} must be a sequence of (column, epochs) runs, got {type(stages).__name__}")
    total, last = 0, -1
    for k, run in enumerate(stages):
        if not (isinstance(run, tuple | list) and len(run) == 2 and all(is_whole(v) for v in run)):
            raise ValidationError(f"{what}, run {k}, must be (column, epochs), whole numbers, got {run!r}")
        c, n = run
        if not (0 <= c < regimes and n >= 1):
            raise ValidationError(f"{what}, run {k}, is {list(run)}: its {column[:-1]} must be in [0, {regimes}) and "
                                  f"its epochs at least 1")
        if c == last:
            raise ValidationError(f"{what}, run {k}, repeats the {column[:-1]} of the run before it (runs are maximal)")
        total, last = total + int(n), int(c)
        if total > most:
            raise ValidationError(f"{what} lists {total} epochs or more, more than the {most} allowed")
    return total


def _forecaster(config: PolicyConfig, taught: list[Trajectory]) -> Forecaster | None:
    """The configured forecaster taught `taught` (None: nothing taught, the configured one)."""
    if not taught:
        return None
    learn = getattr(config.forecaster, "learned", None)
    if learn is None:
        raise ValidationError(f"taught of the checkpoint lists {len(taught)} trajectories, but this policy's "
                              f"forecaster ({type(config.forecaster).__name__}) does not learn")
    try:
        forecaster: Forecaster = learn(taught)
    except ValidationError as error:
        raise ValidationError(f"taught of the checkpoint: the forecaster refused it: {error}") from None
    return forecaster


def _carried_in(jobs: Mapping[Hashable, JobRecord],
               carried: Mapping[Hashable, tuple[float, int, bool]]) -> dict[str, Any]:
    """The fields of a restored state that carry the jobs' credit, waits and last round into the next
    re-plan: `PolicyState.carried` (the carrying jobs, in arrival order) and the arrays aligned to
    it; no plan (the standing plan is not stored)."""
    ids = tuple(job_id for job_id in jobs if job_id in carried)
    if not ids:
        return {}
    credit, waited, ran = (np.array(v) for v in zip(*(carried[j] for j in ids), strict=True))
    return {"carried": ids, "credit": credit.astype(np.float64), "waited": waited.astype(np.int64),
            "ran_last": ran.astype(bool)}


# --- checking a state ------------------------------------------------------------------------------


def checked_state(config: PolicyConfig, state: PolicyState, *, types: int | None = None) -> PolicyState:
    """`state`, checked in full against `config` (`types`: GPU types of a `vfm.planner.TypedPolicy`,
    whose plans place jobs on types; None: a `vfm.planner.Policy`); a `ValidationError` naming the
    field (and the job) of the first thing wrong.

    A `PolicyState` holds no configuration: it is checked against `config` as far as it shows it
    (gangs within the capacity, finish-time targets only with fairness, its plan's window, round
    length, capacity and fairness)."""
    if not isinstance(state, PolicyState):
        raise ValidationError(f"state must be a PolicyState, got {type(state).__name__}")
    if not isinstance(state.jobs, Mapping):
        raise ValidationError(f"jobs of the state must be a mapping of job id to JobRecord, got "
                              f"{type(state.jobs).__name__}")
    for job_id, record in state.jobs.items():
        _check_id(job_id, f"job id {job_id!r}")
        _check_record(config, job_id, record)
    if not isinstance(state.completed, tuple):
        raise ValidationError(f"completed of the state must be a tuple of job ids, got "
                              f"{type(state.completed).__name__}")
    seen: set[Hashable] = set()
    for job_id in state.completed:
        _check_id(job_id, f"completed job {job_id!r}")
        if job_id in seen or job_id in state.jobs:
            raise ValidationError(f"completed lists job {job_id!r} twice or also as present; job ids are unique")
        seen.add(job_id)
    for name in ("round_index", "replans"):
        _count(getattr(state, name), f"{name} of the state")
    if not isinstance(state.stale, bool | np.bool_):
        raise ValidationError(f"stale of the state must be True or False, got {state.stale!r}")
    _check_plan(config, state, types)
    forecaster = state.forecaster
    if forecaster is not None and type(forecaster) is not type(config.forecaster):
        raise ValidationError(f"forecaster of the state is a {type(forecaster).__name__}, this policy's a "
                              f"{type(config.forecaster).__name__}: the state was made with another configuration")
    if not isinstance(state.finished, tuple) or not all(
            isinstance(t, Trajectory) and t.group is not None for t in state.finished):
        raise ValidationError("finished of the state must be a tuple of vfm.forecast.Trajectory of known kinds")
    return state


def _check_id(job_id: Any, what: str) -> None:
    try:
        canonical = checked_job_id(job_id)
    except (ValidationError, RecursionError):
        raise ValidationError(f"{what} must be a string, a whole number or a tuple of them") from None
    if type(canonical) is not type(job_id):
        raise ValidationError(f"{what} must be a Python string, int or tuple, got {type(job_id).__name__}")


def _check_record(config: PolicyConfig, job_id: Hashable, record: Any) -> None:
    """A job's record (`vfm.planner.state.JobRecord`) as `Policy.add_job` and the reports make them."""
    what = f"job {job_id!r}"
    if not isinstance(record, JobRecord):
        raise ValidationError(f"the record of {what} must be a JobRecord, got {type(record).__name__}")
    if not isinstance(record.regimes, tuple):
        raise ValidationError(f"regimes of {what} must be a tuple of (batch size, seconds) pairs")
    # The same checks as an arrival's: what add_job would refuse, a checkpoint may not hold.
    checked_record(config.capacity, job_id, record.gpus, record.regimes, record.epochs, record.budget, record.kind)
    done = _check_stages(record.stages, len(record.regimes), record.epochs, f"stages of {what}")
    if done >= record.epochs:
        raise ValidationError(f"stages of {what} count all its {record.epochs} epochs done, but the job is not "
                              f"completed")
    target = _float(record.fair_finish_at_s) if is_real(record.fair_finish_at_s) else None
    if target is None or (not np.isnan(target) and not (np.isfinite(target) and target >= 0)):
        raise ValidationError(f"fair_finish_at_s of {what} must be NaN (none yet) or a finite time >= 0, got "
                              f"{record.fair_finish_at_s!r}")
    if not config.fairness and not np.isnan(target):
        raise ValidationError(f"fair_finish_at_s of {what} is set, but this policy keeps no finish-time targets "
                              f"(fairness=False): the state was made with another configuration")
    try:
        hash(record.kind)
    except TypeError:
        raise ValidationError(f"kind of {what} must be hashable") from None


def _check_plan(config: PolicyConfig, state: PolicyState, types: int | None) -> None:
    """The standing plan and what the jobs carry (credit, waits, last round), against `config`."""
    n = _check_arrays(state)
    _check_carried_ids(state.carried, n)
    since = state.since_plan
    if not is_whole(since) or since < 0:
        raise ValidationError(f"since_plan of the state must be a whole number >= 0, got {since!r}")
    plan = state.plan
    if plan is None:
        if since:
            raise ValidationError(f"the state has no plan but since_plan {since} (rounds served from a plan)")
        return
    if not isinstance(plan, Plan):
        raise ValidationError(f"plan of the state must be a vfm.planner.Plan or None, got {type(plan).__name__}")
    ids = plan.job_ids
    if not isinstance(ids, tuple) or len(ids) != n:
        raise ValidationError(f"credit, waited and ran_last of the state have {n} entries, the plan has "
                              f"{len(ids) if isinstance(ids, tuple) else 'no'} job ids")
    if len(set(ids)) != n:
        raise ValidationError("the plan's job ids repeat a job")
    if not state.stale and ids != tuple(state.jobs):
        raise ValidationError("the state is not stale, but its plan is not over the jobs present")
    for job_id in ids:
        _check_id(job_id, f"plan job id {job_id!r}")
    if ids != state.carried:
        raise ValidationError("carried of the state must be its plan's job ids (the jobs credit, waited and "
                              "ran_last are aligned to)")
    rounds = config.options.rounds
    columns = rounds * (types or 1)
    if (plan.placement is None) != (types is None):
        raise ValidationError("the state is a TypedPolicy's (its plan places jobs on GPU types); a Policy restores a "
                              "Policy's state" if types is None else "the state's plan places no job on GPU types")
    relaxed, schedule = plan.relaxed, plan.schedule
    if not (isinstance(relaxed, np.ndarray) and isinstance(schedule, np.ndarray)
            and relaxed.shape == schedule.shape and relaxed.ndim == 2 and relaxed.shape[0] == n):
        raise ValidationError(f"the plan's schedule must be {n} rows (its jobs) by its window")
    if relaxed.shape[1] != columns:
        raise ValidationError(f"the plan's window is {relaxed.shape[1] // (types or 1)} rounds, this policy plans "
                              f"{rounds}: the state was made with another configuration")
    if not np.isfinite(relaxed).all():
        raise ValidationError("the plan's relaxed schedule holds a value that is not finite")
    committed = getattr(plan, "committed", None)
    if committed is not None and not (isinstance(committed, np.ndarray) and committed.dtype == np.bool_
                                      and committed.shape == relaxed.shape):
        raise ValidationError(f"the plan's committed rounds must be a bool array of the schedule's shape "
                              f"{relaxed.shape}")
    if since > rounds:
        raise ValidationError(f"since_plan of the state ({since}) is past the plan's window of {rounds} rounds")
    program = plan.program
    if not isinstance(program, PlanningProgram) or program.gpus.shape != (n,) or program.base.shape != (n,):
        raise ValidationError("the plan's program is not over the plan's jobs")
    if program.round_s != config.options.round_s:
        raise ValidationError(f"the plan's rounds last {program.round_s:g} s, this policy's "
                              f"{config.options.round_s:g} s: the state was made with another configuration")
    if types is None and (program.capacity > config.capacity).any():
        raise ValidationError(f"the plan was made for {program.capacity.max():g} GPUs, this policy has "
                              f"{config.capacity}: the state was made with another configuration")
    if not config.fairness and plan.fairness != "none":
        raise ValidationError("the plan keeps finish-time targets, but this policy does not (fairness=False): the "
                              "state was made with another configuration")
    for k, job_id in enumerate(ids):
        if job_id in state.jobs and program.gpus[k] != state.jobs[job_id].gpus:
            raise ValidationError(f"the plan gives job {job_id!r} {program.gpus[k]:g} GPUs, its record "
                                  f"{state.jobs[job_id].gpus}")


def _check_carried_ids(ids: Any, n: int) -> None:
    """`PolicyState.carried`: a tuple of `n` distinct job ids (one per entry of credit, waited, ran_last)."""
    if not isinstance(ids, tuple) or len(ids) != n:
        shown = f"{len(ids)} ids" if isinstance(ids, tuple) else type(ids).__name__
        raise ValidationError(f"carried of the state must be a tuple of the {n} job ids credit, waited and "
                              f"ran_last are aligned to, got {shown}")
    for job_id in ids:
        _check_id(job_id, f"carried job id {job_id!r}")
    if len(set(ids)) != n:
        raise ValidationError("carried of the state repeats a job")


def _check_arrays(state: PolicyState) -> int:
    """credit, waited and ran_last: arrays of one length (returned), finite, in range."""
    arrays = {name: getattr(state, name) for name in _CARRIED}
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.ndim != 1:
            raise ValidationError(f"{name} of the state must be a 1-D array, got {type(array).__name__}")
    lengths = {array.size for array in arrays.values()}
    if len(lengths) != 1:
        raise ValidationError(f"credit, waited and ran_last of the state differ in length: "
                              f"{', '.join(f'{k} {v.size}' for k, v in arrays.items())}")
    credit, waited, ran = arrays["credit"], arrays["waited"], arrays["ran_last"]
    rounds = state.round_index
    if credit.dtype.kind not in "fiu" or not np.isfinite(credit).all():
        raise ValidationError("credit of the state must be finite numbers (a credit is NaN or infinite)")
    if credit.size and not ((credit >= shockwave.CREDIT_FLOOR) & (credit <= rounds + 1)).all():
        raise ValidationError(f"credit of the state must be in [{shockwave.CREDIT_FLOOR:g}, round_index + 1]")
    if waited.dtype.kind not in "iu" or (waited.size and not ((waited >= 0) & (waited <= rounds)).all()):
        raise ValidationError("waited of the state must be whole numbers of rounds in [0, round_index]")
    if ran.dtype != np.bool_:
        raise ValidationError(f"ran_last of the state must be booleans, got {ran.dtype}")
    return int(credit.size)
