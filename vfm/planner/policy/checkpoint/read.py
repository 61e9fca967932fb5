"""Reading a policy checkpoint: JSON text checked field by field into the state a policy continues from.

`restored` parses a checkpoint (never unpickling anything; a key repeated in an object, or in a dict
given directly a value JSON cannot hold, is refused), checks its header against the policy's
configuration (the GPU types' order included), reads every job, completed id, carried entry, row of
the standing plan and trajectory by name, and hands the state it builds to
`vfm.planner.policy.checkpoint.state.checked_state`, so that a damaged or hostile checkpoint can at worst
be refused, naming the field (and the job) at fault.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
from collections.abc import Hashable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from vfm._validation import FloatArray, is_real, is_whole, read_only
from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.forecast import Forecaster, Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_COUNT, MAX_JOB_EPOCHS
from vfm.parameters import (
    Constraint,
    Instance,
    Interval,
    OneOf,
    Optional,
    Real,
    Whole,
    check,
    check_array,
    check_distinct,
    check_length,
    check_nonempty,
    check_parameters,
)
from vfm.planner import shockwave
from vfm.planner.plan import Plan
from vfm.planner.policy.checkpoint.config import configuration, differences, fingerprint, typed_cluster
from vfm.planner.policy.checkpoint.layout import (
    CARRIED_FIELDS,
    FORMAT,
    JOB_FIELDS,
    PLAN_FIELDS,
    PLAN_ROW_FIELDS,
    PROGRAM_FIELDS,
    TOP_FIELDS,
    TRAJECTORY_FIELDS,
    TYPED_ROW_FIELDS,
    VERSION,
)
from vfm.planner.policy.checkpoint.state import as_float, check_record, check_stages, checked_count, checked_state
from vfm.planner.policy.job_events import MAX_ID_DEPTH
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState
from vfm.planner.program import PlanningProgram

__all__ = ["restored"]


def restored(config: PolicyConfig, state: object, *, allow_resize: bool = False) -> PolicyState:
    """The state a policy of configuration `config` continues from, from `state`: a checkpoint
    (JSON text or bytes, or the dict it parses to) or a `PolicyState`; checked in full.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the field (and the job) of what is refused (`Policy.restore`).
    """
    check("allow_resize", allow_resize, Instance(bool, "True or False", with_value=True))
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
            state = json.loads(state, parse_constant=_no_constant, object_pairs_hook=_unique_keys)
        except ValidationError:
            raise
        except (ValueError, RecursionError) as error:
            raise ValidationError(f"{expected}; got text that is not JSON ({error})") from None
    elif isinstance(state, Mapping):
        _check_json_data(state)  # a dict given directly may hold anything: JSON's types only
    if not isinstance(state, Mapping):
        raise ValidationError(f"{expected}, got {type(state).__name__}")
    if "format" not in state:
        raise ValidationError(f"{expected}; got a {type(state).__name__} with no 'format' field")
    return state


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a checkpoint may hold")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, refusing a repeated key: JSON readers disagree on which
    of two values wins, so a checkpoint's meaning must not depend on it."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ValidationError(f"the checkpoint repeats the key {key!r} in one object (a checkpoint's keys are "
                                  f"unique): refused rather than guess which value is meant")
        found[key] = value
    return found


#: The Python types of parsed JSON data (exact types: a NumPy value or a tuple is not one).
_JSON_SCALARS = (str, int, float, bool, type(None))


def _check_json_data(document: Mapping[Any, Any]) -> None:
    """A `ValidationError` naming the field (as ``jobs[1].budget``) of the first value in `document`
    that JSON text cannot hold: a checkpoint given as a dict must be what its text parses to.
    Iterative, so a deep document costs no recursion; a path is spelled out only on the way to the
    error (each value keeps a link to its parent)."""
    stack: list[tuple[Any, Any]] = [(document, None)]
    while stack:
        value, path = stack.pop()
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if type(key) is not str:
                    raise ValidationError(f"{_path(path) or 'the checkpoint'} has a key {key!r} that is not a string")
                stack.append((inner, (path, f".{key}" if path is not None else key)))
        elif type(value) is list:
            stack.extend((inner, (path, f"[{k}]")) for k, inner in enumerate(value))
        elif type(value) not in _JSON_SCALARS:
            raise ValidationError(f"{_path(path)} of the checkpoint is a {type(value).__name__}: a checkpoint holds "
                                  f"JSON data only (objects, lists, strings, numbers, true, false, null)")


def _path(link: Any) -> str:
    """A field's path from its chain of (parent, step) links."""
    steps = []
    while link is not None:
        link, step = link
        steps.append(step)
    return "".join(reversed(steps))


def _loads(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
           allow_resize: bool) -> PolicyState:
    _header(config, document, cluster, allow_resize)
    _keys(document, TOP_FIELDS, "checkpoint")
    rows = _list(document["jobs"], "jobs")
    if allow_resize:
        _fits(config, rows)
    jobs: dict[Hashable, JobRecord] = {}
    round_index = checked_count(document["round_index"], "round_index")
    read = [_record_in(config, row, k, cluster) for k, row in enumerate(rows)]
    check_distinct("jobs", [job_id for job_id, _ in read], "a job id", "job ids are unique")
    jobs.update(read)
    completed = tuple(_id_in(v, f"completed[{k}]") for k, v in enumerate(_list(document["completed"], "completed")))
    taught = [_trajectory_in(v, f"taught[{k}]") for k, v in enumerate(_list(document["taught"], "taught"))]
    finished = tuple(_trajectory_in(v, f"finished[{k}]") for k, v in enumerate(_list(document["finished"],
                                                                                          "finished")))
    stale = document["stale"]
    check("stale", stale, _JSON_BOOL)
    carried = _carried_in(document["carried"], round_index)
    # A plan made for another capacity (allow_resize) is checked, then not served: the next round re-plans.
    standing = _standing_in(config, document["plan"], carried.get("carried", ()), resized=allow_resize)
    if allow_resize and standing:
        standing, stale = {}, True
    state = PolicyState(
        jobs=MappingProxyType(jobs), completed=completed, stale=stale, round_index=round_index,
        replans=checked_count(document["replans"], "replans"),
        failed_replans=checked_count(document["failed_replans"], "failed_replans"),
        retry_at=checked_count(document["retry_at"], "retry_at"), forecaster=_forecaster(config, taught),
        finished=finished, gpu_types=() if cluster is None else cluster.types, **carried, **standing)
    return checked_state(config, state, types=None if cluster is None else len(cluster))


def _header(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
            allow_resize: bool) -> None:
    """The format, version, kind of policy and configuration, each checked in turn."""
    check("format of the checkpoint", document["format"], OneOf((FORMAT,)))
    version = document.get("version")
    if version != VERSION or not is_whole(version):
        older = " (an earlier vfm's checkpoint, which does not hold the standing plan)" \
            if isinstance(version, int) and 1 <= version < VERSION else ""
        raise ValidationError(f"version of the checkpoint is {version!r}{older}; this vfm reads version {VERSION} "
                              f"only")
    check("policy of the checkpoint", document.get("policy"), OneOf(("Policy",)))
    if allow_resize and cluster is not None:
        raise ValidationError("allow_resize applies to a cluster of one GPU type; a cluster of several types must be "
                              "the checkpoint's")
    theirs: Any = check("config of the checkpoint", document.get("config"), _OBJECT)
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
    _same_order(theirs, cluster)
    differ = differences(theirs, plain, ("capacity",) if allow_resize else ())
    if differ:
        shown = "; ".join(differ[:8]) + (f"; and {len(differ) - 8} more" if len(differ) > 8 else "")
        resized = cluster is None and len(differ) == 1 and differ[0].startswith("capacity=")
        raise ValidationError(f"config of the checkpoint differs from this policy's: {shown}"
                              + (" (for a cluster that changed size: restore(..., allow_resize=True))" if resized
                                 else ""))


def _same_order(theirs: Mapping[str, Any], cluster: ClusterTypes | None) -> None:
    """A cluster of the checkpoint's GPU types in another order, refused saying so: the order decides
    which column of the plan and of each job's speeds is which type, and breaks ties."""
    order = theirs.get("gpu_types")
    if cluster is None or not isinstance(order, list) or order == list(cluster.types) or \
            sorted(map(str, order)) != sorted(cluster.types):
        return
    raise ValidationError(f"gpu_types: the cluster's GPU types are in another order, {order!r} in the checkpoint, "
                          f"{list(cluster.types)!r} in this policy; a checkpoint restores into a cluster with its "
                          f"types in the same order (build the policy's ClusterTypes in the checkpoint's order)")


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
    return check(what, value, Instance(list, "a list"))


def _real(value: Any, what: str, constraint: Constraint) -> float:
    return float(check(what, value, constraint))


#: A JSON object, and true or false, as a checkpoint's fields must be.
_OBJECT = Instance(Mapping, "an object")
_JSON_BOOL = Instance(bool, "true or false", with_value=True)


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


def _record_in(config: PolicyConfig, row: Any, k: int, cluster: ClusterTypes | None
               ) -> tuple[Hashable, JobRecord]:
    """Job row `k`: its id and its record (with its speeds per type on several types), checked."""
    check(f"jobs[{k}]", row, _OBJECT)
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
        speeds=None if cluster is None else _speeds_in(row["speeds"], what, cluster, len(row["regimes"]) + 1))
    check_record(config, job_id, raw)
    # As `Policy.add_job` keeps them: floats for the regimes, the budget and the target.
    return job_id, dataclasses.replace(
        raw, regimes=tuple((float(b), float(s)) for b, s in raw.regimes), budget=float(raw.budget),
        fair_finish_at_s=float(raw.fair_finish_at_s))


def _carried_in(value: Any, round_index: int) -> dict[str, Any]:
    """``carried``: the `PolicyState` fields of what each job carries into the next plan (its
    ``carried`` ids and the arrays aligned to them), each entry checked."""
    entries = _list(value, "carried")
    ids, values = [], []
    for k, entry in enumerate(entries):
        check(f"carried[{k}]", entry, _OBJECT)
        job_id = _id_in(entry.get("id"), f"carried[{k}].id")
        what = f"carried[{k}] (job {job_id!r})"
        _keys(entry, ("id", *CARRIED_FIELDS), what)
        credit = _real(entry["credit"], f"credit of {what}",
                       Interval(Real, shockwave.CREDIT_FLOOR, round_index + 1, unit="rounds",
                                note="round_index + 1 at most"))
        ran = check(f"ran_last of {what}", entry["ran_last"], _JSON_BOOL)
        ids.append(job_id)
        values.append((credit, checked_count(entry["waited"], f"waited of {what}", 0, round_index), ran))
    if not ids:
        return {}
    return {"carried": tuple(ids), "credit": np.array([v[0] for v in values], dtype=np.float64),
            "waited": np.array([v[1] for v in values], dtype=np.int64),
            "ran_last": np.array([v[2] for v in values], dtype=bool)}


def _pairs(value: Any, what: str, whole: bool = True) -> list[tuple[Any, Any]]:
    """A list of [a, b] pairs (whole numbers, or any JSON numbers), as tuples; checked further by the caller."""
    pairs = _list(value, what)
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, list) and len(pair) == 2 and all(
                is_whole(v) if whole else is_real(v) and np.isfinite(as_float(v)) for v in pair)):
            kind = "whole" if whole else "finite"
            raise ValidationError(f"{what}[{k}] must be a pair of {kind} numbers, got {pair!r}")
    return [(pair[0], pair[1]) for pair in pairs]


def _speeds_in(value: Any, what: str, cluster: ClusterTypes, columns: int) -> FloatArray:
    """A job's speeds per type as an array (types, columns) in the cluster's order, from an object
    of each type's name to `columns` finite numbers; their values are checked with the record
    (`check_record`)."""
    if not isinstance(value, Mapping) or sorted(value) != sorted(cluster.types):
        raise ValidationError(f"speeds of {what} must be an object of each GPU type ({', '.join(cluster.types)}) to "
                              f"its speeds, got {json.dumps(value, default=repr)[:80]}")
    rows = [value[gpu_type] for gpu_type in cluster.types]
    if not all(isinstance(r, list) and len(r) == columns for r in rows) or \
            not all(is_real(v) and np.isfinite(as_float(v)) for r in rows for v in r):
        raise ValidationError(f"speeds of {what} must list {columns} numbers on each GPU type (its regimes and "
                              f"their mean)")
    return read_only(np.array(rows, dtype=np.float64))


def _trajectory_in(value: Any, what: str) -> Trajectory:
    check(what, value, _OBJECT)
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
    check_nonempty(f"stages of {what}", len(stages), "epoch")
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


def _standing_in(config: PolicyConfig, value: Any, ids: tuple[Hashable, ...], *, resized: bool) -> dict[str, Any]:
    """``plan``: the `PolicyState` fields of the standing plan (``plan``, ``since_plan``) over the
    jobs of ``carried`` (`ids`), rebuilt with what serving its rounds left and warm-starting the
    next re-plan read; none for null. `resized`: made for another capacity, its gangs bounded by
    none."""
    if value is None:
        return {}
    check("plan", value, Instance(Mapping, "an object or null"))
    _keys(value, PLAN_FIELDS, "plan")
    rounds, types = config.options.rounds, config.types
    since = checked_count(value["since_plan"], "since_plan of plan", 0, rounds)
    rows = _list(value["rows"], "rows of plan")
    check_length("rows of plan", rows, len(ids), "carried job")
    fields = _plan_rows(rows, ids, since, rounds, types, MAX_COUNT if resized else config.capacity)
    program = _program_in(value["program"], fields, rounds, types)
    fairness, status = value["fairness"], value["status"]
    check_parameters({"fairness of plan": fairness, "status of plan": status},
                     {"fairness of plan": OneOf(("none", "constraints", "relaxed")),
                      "status of plan": OneOf(tuple(s.value for s in Status))})
    for name in ("solver", "message"):
        check(f"{name} of plan", value[name], Instance(str, "a string", with_value=True))
    standing = Plan(
        schedule=fields["schedule"], relaxed=fields["relaxed"],
        prices=_numbers(value["prices"], "prices of plan", rounds * types), bound=_number(value, "bound"),
        relaxed_objective=_number(value, "relaxed_objective"), rounded_objective=_number(value, "rounded_objective"),
        program=program, fairness=fairness, ftf_bound=_number(value, "ftf_bound"), status=Status(status),
        message=value["message"], solver=value["solver"], job_ids=ids, placement=fields.get("placement"),
        committed=fields.get("committed"))
    return {"plan": standing, "since_plan": since}


def _number(value: Mapping[str, Any], name: str) -> float:
    """A plan's summary number: finite, or null for NaN (none)."""
    number = value[name]
    if number is None:
        return float("nan")
    return _real(number, f"{name} of plan", Interval(Real, note="or null"))


def _numbers(value: Any, what: str, size: int) -> FloatArray:
    """`size` finite numbers or nulls (NaN) as an array."""
    numbers = _list(value, what)
    check_length(what, numbers, size, "round of the window and GPU type")
    for v in numbers:
        check(what, v, Optional(Interval(Real)))  # each value: a number, or null for none
    return np.array([np.nan if v is None else float(v) for v in numbers], dtype=np.float64)


def _plan_rows(rows: list[Any], ids: tuple[Hashable, ...], since: int, rounds: int, types: int,
               capacity: int) -> dict[str, np.ndarray]:
    """The plan's rows as arrays over the whole window (n, K R), the columns before `since` (served,
    not stored) 0, False or -1; each row checked, named by its job."""
    n, left = len(rows), rounds - since
    columns: dict[str, list[Any]] = {name: [] for name in (*PLAN_ROW_FIELDS, *TYPED_ROW_FIELDS)}
    committed = None
    for k, row in enumerate(rows):
        what = f"rows[{k}] of plan (job {ids[k]!r})"
        check(what, row, _OBJECT)
        _keys(row, (*PLAN_ROW_FIELDS, *(TYPED_ROW_FIELDS if types > 1 else ())), what)
        if committed is None:
            committed = row["committed"] is not None
        if (row["committed"] is not None) != committed:
            raise ValidationError(f"committed of {what} must be null in every row or in none")
        columns["gpus"].append(checked_count(row["gpus"], f"gpus of {what}", 1, capacity))
        for name, constraint in _ROW_NUMBERS.items():
            columns[name].append(_real(row[name], f"{name} of {what}", constraint))
        windows = (("relaxed", "share"), ("schedule", "bool"), *((("committed", "bool"),) if committed else ()))
        for name, kind in windows:
            columns[name].append(_window(row[name], f"{name} of {what}", types, left, kind))
        if types > 1:
            columns["placement"].append(_window(row["placement"], f"placement of {what}", 1, left, "type", types))
            columns["pace"].append(_window(row["pace"], f"pace of {what}", 1, types, "share")[0])
    return _whole_window(columns, n, since, rounds, types, bool(committed))


#: A plan row's numbers: name, what holds, and what the message says.
_ROW_NUMBERS: dict[str, Constraint] = {
    "base": Interval(Real, 0, 1, note="the share of its epochs done"),
    "weight": Interval(Real, 0),
    "remaining_s": Interval(Real, 0, unit="seconds"),
}


def _window(value: Any, what: str, types: int, left: int, kind: str, most: int = 0) -> list[list[Any]]:
    """A row's columns: `left` values (on several types, `types` lists of them): shares (finite
    numbers in [0, 1]), bools, or type indices in [-1, `most`)."""
    lists = [value] if types == 1 else _list(value, what)
    if len(lists) != types or not all(isinstance(v, list) and len(v) == left for v in lists):
        shape = f"{left} values" if types == 1 else f"{types} lists (one per GPU type) of {left} values"
        raise ValidationError(f"{what} must be {shape} (the rounds of the window left)")
    kinds: dict[str, Constraint] = {"share": Interval(Real, 0, 1), "bool": _JSON_BOOL,
                                    "type": Interval(Whole, -1, most, closed="left", noun="a GPU type index",
                                                     note="-1: not running")}
    each = kinds[kind]
    for v in itertools.chain.from_iterable(lists):
        check(what, v, each)  # each value, the first refused shown
    return lists


def _whole_window(columns: dict[str, list[Any]], n: int, since: int, rounds: int, types: int,
                  committed: bool) -> dict[str, np.ndarray]:
    """The rows' columns left placed at the end of the window (type-major on several types)."""
    def full(name: str, fill: Any, dtype: Any, per_type: int) -> np.ndarray:
        array = np.full((n, per_type, rounds), fill, dtype=dtype)
        array[:, :, since:] = np.array(columns[name], dtype=dtype).reshape(n, per_type, rounds - since)
        return array.reshape(n, per_type * rounds)

    arrays = {"relaxed": full("relaxed", 0.0, np.float64, types), "schedule": full("schedule", False, bool, types),
              **{name: np.array(columns[name], dtype=np.float64).reshape(n) for name in
                 ("gpus", "base", "weight", "remaining_s")}}
    if committed:
        arrays["committed"] = full("committed", False, bool, types)
    if types > 1:
        arrays["placement"] = full("placement", -1, np.int64, 1)
        arrays["pace"] = np.array(columns["pace"], dtype=np.float64).reshape(n, types)
    return arrays


def _program_in(value: Any, fields: Mapping[str, np.ndarray], rounds: int, types: int) -> PlanningProgram:
    """The plan's program as far as serving reads it: its scalars and capacity, and the rows'
    gangs, bases, weights, forecast time left and speeds per type; the scenarios' progress is not
    stored (zeros: a restored plan is served, not solved again)."""
    check("program of plan", value, _OBJECT)
    _keys(value, PROGRAM_FIELDS, "program of plan")
    n, goods = fields["gpus"].size, rounds * types
    capacity = _numbers(value["capacity"], "capacity of program of plan", goods)
    check_array("capacity", capacity, Interval(Real, 0, unit="GPUs"), of=" of program of plan")
    round_s, efficiency, spread = (
        _real(value[name], f"{name} of program of plan", Interval(Real, 0))
        for name in ("round_s", "efficiency", "spread"))
    pace = fields.get("pace")
    return PlanningProgram(
        progress=np.broadcast_to(np.zeros(1), (1, n, goods)), base=fields["base"], weights=fields["weight"],
        gpus=fields["gpus"], capacity=capacity, remaining_s=fields["remaining_s"], round_s=round_s,
        efficiency=efficiency, spread=spread,
        good_round=None if pace is None else np.tile(np.arange(rounds), types),
        speed=None if pace is None else np.repeat(pace, rounds, axis=1))
