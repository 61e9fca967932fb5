"""Reading a policy checkpoint: JSON text checked field by field into the state a policy continues from.

`restored` parses a checkpoint (never unpickling anything), checks its header against the policy's
configuration, reads every job, completed id and trajectory by name, and hands the state it builds
to `vfm.planner.checkpoint_state.checked_state`, so that a damaged or hostile checkpoint can at worst
be refused, naming the field (and the job) at fault.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Callable, Hashable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from vfm._validation import FloatArray, is_real, is_whole, read_only
from vfm.errors import ValidationError
from vfm.forecast import Forecaster, Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_JOB_EPOCHS
from vfm.planner import shockwave
from vfm.planner.checkpoint_config import configuration, differences, fingerprint, typed_cluster
from vfm.planner.checkpoint_layout import (
    CARRIED_FIELDS,
    FORMAT,
    JOB_FIELDS,
    MAX_ID_DEPTH,
    TOP_FIELDS,
    TRAJECTORY_FIELDS,
    VERSION,
)
from vfm.planner.checkpoint_state import as_float, check_record, check_stages, checked_count, checked_state
from vfm.planner.state import JobRecord, PolicyConfig, PolicyState

__all__ = ["restored"]


def restored(config: PolicyConfig, state: object, *, allow_resize: bool = False) -> PolicyState:
    """The state a policy of configuration `config` continues from, from `state`: a checkpoint
    (JSON text or bytes, or the dict it parses to) or a `PolicyState`; checked in full.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the field (and the job) of what is refused (`Policy.restore`).
    """
    if not isinstance(allow_resize, bool):
        raise ValidationError(f"allow_resize must be True or False, got {allow_resize!r}")
    cluster = typed_cluster(config)
    if isinstance(state, PolicyState):
        if allow_resize:
            raise ValidationError("allow_resize applies to a checkpoint (Policy.checkpoint()), not to a PolicyState")
        return checked_state(config, state, types=None if cluster is None else len(cluster))
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
           allow_resize: bool) -> PolicyState:
    _header(config, document, cluster, allow_resize)
    _keys(document, TOP_FIELDS, "checkpoint")
    rows = _list(document["jobs"], "jobs")
    if allow_resize:
        _fits(config, rows)
    jobs: dict[Hashable, JobRecord] = {}
    carried: dict[Hashable, tuple[float, int, bool]] = {}
    round_index = checked_count(document["round_index"], "round_index")
    for k, row in enumerate(rows):
        job_id, record, carry = _record_in(config, row, k, round_index, cluster)
        if job_id in jobs:
            raise ValidationError(f"jobs[{k}] repeats job id {job_id!r}; job ids are unique")
        jobs[job_id] = record
        if carry is not None:
            carried[job_id] = carry
    completed = tuple(_id_in(v, f"completed[{k}]") for k, v in enumerate(_list(document["completed"], "completed")))
    taught = [_trajectory_in(v, f"taught[{k}]") for k, v in enumerate(_list(document["taught"], "taught"))]
    finished = tuple(_trajectory_in(v, f"finished[{k}]") for k, v in enumerate(_list(document["finished"],
                                                                                          "finished")))
    types = None if cluster is None else len(cluster)
    state = PolicyState(
        jobs=MappingProxyType(jobs), completed=completed, stale=True, round_index=round_index,
        replans=checked_count(document["replans"], "replans"), forecaster=_forecaster(config, taught),
        finished=finished,
        **_carried_in(jobs, carried))
    return checked_state(config, state, types=types)


def _header(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
            allow_resize: bool) -> None:
    """The format, version, kind of policy and configuration, each checked in turn."""
    if document["format"] != FORMAT:
        raise ValidationError(f"format of the checkpoint is {document['format']!r}, expected {FORMAT!r}")
    version = document.get("version")
    if version != VERSION or not is_whole(version):
        raise ValidationError(f"version of the checkpoint is {version!r}; this vfm reads version {VERSION} only")
    if document.get("policy") != "Policy":
        raise ValidationError(f"policy of the checkpoint is {document.get('policy')!r}, expected 'Policy'")
    if allow_resize and cluster is not None:
        raise ValidationError("allow_resize applies to a cluster of one GPU type; a cluster of several types must be "
                              "the checkpoint's")
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
    plain = configuration(config)
    if stated == fingerprint(plain):
        return
    differ = differences(theirs, plain, ("capacity",) if allow_resize else ())
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


def _real(value: Any, what: str, ok: Callable[[float], bool], expected: str) -> float:
    if not is_real(value) or not np.isfinite(as_float(value)) or not ok(as_float(value)):
        raise ValidationError(f"{what} must be {expected}, got {value!r}")
    return float(value)


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
               ) -> tuple[Hashable, JobRecord, tuple[float, int, bool] | None]:
    """Job row `k`: its id, its record (with its speeds per type on several types) and what it
    carries (or None), each checked."""
    if not isinstance(row, Mapping):
        raise ValidationError(f"jobs[{k}] must be an object, got {type(row).__name__}")
    job_id = _id_in(row.get("id"), f"jobs[{k}].id")
    what = f"jobs[{k}] (job {job_id!r})"
    _keys(row, (*JOB_FIELDS, *(("speeds",) if cluster is not None else ())), what)
    target = row["fair_finish_at_s"]
    raw = JobRecord(
        gpus=checked_count(row["gpus"], f"gpus of {what}", 1, config.capacity),
        regimes=tuple(_pairs(row["regimes"], f"regimes of {what}", whole=False)), epochs=row["epochs"],
        budget=row["budget"], stages=tuple(_pairs(row["stages"], f"stages of {what}")),
        fair_finish_at_s=float("nan") if target is None else target,
        kind=_id_in(row["kind"], f"kind of {what}", none=True),
        speeds=None if cluster is None else _speeds_in(row["speeds"], what, len(cluster), len(row["regimes"]) + 1))
    check_record(config, job_id, raw)
    # As `Policy.add_job` keeps them: floats for the regimes, the budget and the target.
    record = dataclasses.replace(
        raw, regimes=tuple((float(b), float(s)) for b, s in raw.regimes), budget=float(raw.budget),
        fair_finish_at_s=float(raw.fair_finish_at_s))
    carried = row["carried"]
    carry = None
    if carried is not None:
        if not isinstance(carried, Mapping):
            raise ValidationError(f"carried of {what} must be an object or null, got {type(carried).__name__}")
        _keys(carried, CARRIED_FIELDS, f"carried of {what}")
        credit = _real(carried["credit"], f"credit of {what}",
                       lambda c: shockwave.CREDIT_FLOOR <= c <= round_index + 1,
                       f"a finite number of rounds in [{shockwave.CREDIT_FLOOR:g}, round_index + 1]")
        ran = carried["ran_last"]
        if not isinstance(ran, bool):
            raise ValidationError(f"ran_last of {what} must be true or false, got {ran!r}")
        carry = (credit, checked_count(carried["waited"], f"waited of {what}", 0, round_index), ran)
    return job_id, record, carry


def _pairs(value: Any, what: str, whole: bool = True) -> list[tuple[Any, Any]]:
    """A list of [a, b] pairs (whole numbers, or any JSON numbers), as tuples; checked further by the caller."""
    pairs = _list(value, what)
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                is_whole(v) if whole else is_real(v) and np.isfinite(as_float(v)) for v in pair)):
            kind = "whole" if whole else "finite"
            raise ValidationError(f"{what}[{k}] must be a pair of {kind} numbers, got {pair!r}")
    return [(pair[0], pair[1]) for pair in pairs]


def _speeds_in(value: Any, what: str, types: int, columns: int) -> FloatArray:
    """A job's speeds per type as an array (types, columns), from `types` lists of `columns` finite
    numbers; their values are checked with the record (`check_record`)."""
    rows = _list(value, f"speeds of {what}")
    if len(rows) != types or not all(isinstance(r, list) and len(r) == columns for r in rows) or \
            not all(is_real(v) and np.isfinite(as_float(v)) for r in rows for v in r):
        raise ValidationError(f"speeds of {what} must be {types} lists (one per GPU type) of {columns} numbers")
    return read_only(np.array(rows, dtype=np.float64))


def _trajectory_in(value: Any, what: str) -> Trajectory:
    if not isinstance(value, Mapping):
        raise ValidationError(f"{what} must be an object, got {type(value).__name__}")
    _keys(value, TRAJECTORY_FIELDS, what)
    kind = _id_in(value["kind"], f"kind of {what}")
    labels = _list(value["regimes"], f"regimes of {what}")
    if not labels or not all(is_real(b) and np.isfinite(as_float(b)) for b in labels) or \
            any(a >= b for a, b in itertools.pairwise(labels)):
        raise ValidationError(f"regimes of {what} must be finite numbers in ascending order, at least one")
    stages = _pairs(value["stages"], f"stages of {what}")
    check_stages(stages, len(labels), MAX_JOB_EPOCHS, f"stages of {what}", "ranks")
    ranks = np.array([r for r, _ in stages], dtype=np.int64)
    lengths = np.array([n for _, n in stages], dtype=np.int64)
    if not stages:
        raise ValidationError(f"stages of {what} must list at least one epoch")
    return Trajectory(kind, np.repeat(np.array(labels, dtype=np.float64)[ranks], lengths), regimes=labels)


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
