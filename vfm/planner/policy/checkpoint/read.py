"""Reading a policy checkpoint: JSON text checked field by field into the state a policy continues from.

`restored` parses a checkpoint (never unpickling anything; a key repeated in an object, or in a dict
given directly a value JSON cannot hold, is refused), checks its header against the policy's
configuration (the GPU types' order included), checks each object against the declaration of its
fields (`vfm.parameters.Fields`, named as `vfm.planner.policy.checkpoint.layout` lists them: the
checkpoint's, each job's, each carried entry's, the plan's, its rows' and program's, each
trajectory's), builds the state from them and hands it to
`vfm.planner.policy.checkpoint.state.checked_state`, so that a damaged or hostile checkpoint can at worst
be refused, naming the field by its path (``jobs[3].budget``) and the job at fault.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from vfm._validation import read_only
from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.forecast import Forecaster, Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_COUNT, MAX_JOB_EPOCHS
from vfm.parameters import (
    Anything,
    Constraint,
    Each,
    Either,
    Equal,
    Fields,
    Fixed,
    Instance,
    Interval,
    OneOf,
    Real,
    Refusal,
    Satisfies,
    Step,
    Whole,
    check,
    check_distinct,
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
from vfm.planner.policy.checkpoint.state import COUNT, check_record, check_type_order, checked_state, runs
from vfm.planner.policy.job_events import ids_of
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState
from vfm.planner.program import PlanningProgram

__all__ = ["restored"]

#: What `restored` reads.
_EXPECTED = ("a PolicyState (Policy.state) or a checkpoint (Policy.checkpoint(): its JSON text, or the dict it "
             "parses to)")


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
        check("allow_resize", allow_resize, Equal(False, says="False for a PolicyState: it applies to a checkpoint "
                                                               "(Policy.checkpoint())"))
        return checked_state(config, state, types=None if cluster is None else len(cluster))
    return _loads(config, _parsed(state), cluster, allow_resize)


def _parsed(state: object) -> Mapping[str, Any]:
    """A checkpoint's JSON object, from its text, its UTF-8 bytes or the dict it parses to."""
    document: Any
    try:
        text = bytes(state).decode("utf-8") if isinstance(state, bytes | bytearray) else state
        document = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_unique_keys) \
            if isinstance(text, str) else text
    except ValidationError:
        raise
    except (ValueError, RecursionError) as error:  # a UnicodeDecodeError is a ValueError
        got = "bytes that are not UTF-8 text (checkpoints are JSON; pickle is never loaded)" \
            if isinstance(error, UnicodeDecodeError) else f"text that is not JSON ({error})"
        raise ValidationError(f"state must be {_EXPECTED}; got {got}") from None
    if isinstance(state, Mapping):
        check("state", document, _JsonData())  # a dict given directly may hold anything: JSON's types only
    return check("state", document, _CHECKPOINT)


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


@dataclass(frozen=True)
class _JsonData:
    """JSON data only, as a checkpoint given as a dict must hold (what its text parses to); a
    refused part is named by its path (``state.jobs[1].budget``). Walked iteratively, so a deep
    document costs no recursion; a path is spelled out only for the message (each part keeps a
    link to its parent)."""

    says: str = "JSON data (objects with string keys, lists, strings, numbers, true, false or null)"

    def admits(self, value: Any) -> bool:
        return self._first(value) is None

    def shown(self, value: Any) -> str:
        return type(value).__name__

    def refusal(self, value: Any) -> Refusal:
        link, shown = self._first(value) or (None, self.shown(value))
        steps = []
        while link is not None:
            link, step = link
            steps.append(("", step))
        return Refusal(tuple(reversed(steps)), self.says, shown)

    @staticmethod
    def _first(document: Any) -> tuple[Any, str] | None:
        """The link to the first part of `document` JSON cannot hold, and the part as shown; None if none."""
        stack: list[tuple[Any, Any]] = [(document, None)]
        while stack:
            value, link = stack.pop()
            if isinstance(value, Mapping):
                for key, inner in value.items():
                    if type(key) is not str:
                        return link, f"an object with a key {key!r} that is not a string"
                    stack.append((inner, (link, f".{key}")))
            elif type(value) is list:
                stack.extend((inner, (link, f"[{k}]")) for k, inner in enumerate(value))
            elif type(value) not in _JSON_SCALARS:
                return link, f"a {type(value).__name__}"
        return None


# --- The declarations of a checkpoint's objects ----------------------------------------------------

_OBJECT = Instance(Mapping, "an object")
_JSON_BOOL = Instance(bool, "true or false", with_value=True)
_STRING = Instance(str, "a string", with_value=True)
_FINITE = Interval(Real)
_NULL = Equal(None, says="null")
_SHARE = Interval(Real, 0, 1)
#: The whole document, as far as `_parsed` reads it.
_CHECKPOINT = Instance(Mapping, f"{_EXPECTED}: an object with a 'format' field", holds=lambda d: "format" in d)


def _json_tuple(value: Any) -> Any:
    """The entries of a tuple as a checkpoint writes it, ``{"tuple": [...]}``; None for any other value."""
    if isinstance(value, Mapping) and list(value) == ["tuple"] and isinstance(value["tuple"], list):
        return value["tuple"]
    return None


#: A job id (a string, a whole number or ``{"tuple": [...]}`` of them) and a kind (also null).
_JSON_ID = ids_of(Satisfies("a string or a whole number", lambda v: type(v) in (str, int)), _json_tuple,
                  '{"tuple": [...]}')
_JSON_KIND = ids_of(Satisfies("a string, a whole number or null", lambda v: v is None or type(v) in (str, int)),
                    _json_tuple, '{"tuple": [...]}')


def _list(item: Constraint, what: str, *, length: int | None = None, nonempty: bool = False,
          step: Step | None = None) -> Each:
    """A JSON list of `item`s (`vfm.parameters.Each`), as `what` says."""
    return Each(item, what, kinds=(list,), length=length, nonempty=nonempty, step=step)


def _pairs(number: Constraint, what: str) -> Each:
    """A list of pairs [a, b] (`what`) of `number`s."""
    return _list(Fixed((number, number), f"a pair {what}", kinds=(list,)), f"a list of pairs {what}")


def _numbers(size: int) -> Each:
    """`size` finite numbers or nulls (NaN), one per round of the window and GPU type."""
    return _list(Either(_FINITE, _NULL), "a list of numbers or nulls, one per round of the window and GPU type",
                 length=size)


def _declared(names: tuple[str, ...], constraints: Mapping[str, Constraint], what: str,
              optional: tuple[str, ...] = ()) -> Fields:
    """An object of the fields `names` (the layout's: `vfm.planner.policy.checkpoint.layout`), each
    with its constraint of `constraints`; those of `optional` may be absent."""
    return Fields({name: constraints[name] for name in names}, what, optional=optional)


_TOP = _declared(TOP_FIELDS, {
    # The header, checked first against this policy (`_header`).
    **dict.fromkeys(("format", "version", "policy", "config_sha256", "config"), Anything()),
    **dict.fromkeys(("round_index", "replans", "failed_replans", "retry_at"), COUNT),
    "stale": _JSON_BOOL,
    "jobs": _list(_OBJECT, "a list of job objects"),
    "completed": _list(_JSON_ID, "a list of job ids"),
    "carried": _list(_OBJECT, "a list of objects of what each job carries"),
    "plan": Instance((Mapping, type(None)), "an object or null"),
    "taught": _list(_OBJECT, "a list of trajectory objects"),
    "finished": _list(_OBJECT, "a list of trajectory objects"),
}, "a checkpoint")

_TRAJECTORY = _declared(TRAJECTORY_FIELDS, {
    "kind": _JSON_ID,
    "regimes": _list(_FINITE, "a list of finite numbers in ascending order", nonempty=True,
                     step=Step(lambda before, now: before < now, "a number above the one before it (regimes ascend)")),
    "stages": _pairs(Interval(Whole), "[rank, epochs]"),
}, "a trajectory object")


@functools.lru_cache(maxsize=64)
def _job_fields(capacity: int, types: tuple[str, ...], columns: int) -> Fields:
    """A job object's fields, on a cluster of `capacity` GPUs; on several GPU types (`types`) with
    its speeds, `columns` on each (its regimes' and their mean). Cached: a restore reads every job
    with one of a few."""
    speeds = Fields({t: _list(_FINITE, f"a list of {columns} numbers (its regimes and their mean)", length=columns)
                     for t in types}, "an object of each GPU type's speeds")
    return _declared((*JOB_FIELDS, *(("speeds",) if types else ())), {
        "id": _JSON_ID,
        "gpus": Interval(Whole, 1, capacity),
        "regimes": _pairs(_FINITE, "[batch size, seconds per epoch]"),
        "stages": _pairs(Interval(Whole), "[column, epochs]"),
        "kind": _JSON_KIND,
        # Their ranges are an arrival's, checked with the whole record (`check_record`).
        **dict.fromkeys(("epochs", "budget", "fair_finish_at_s", "restart_s"), Anything()),
        "speeds": speeds,
    }, "a job object", optional=("restart_s",))


def _carried_fields(round_index: int) -> Fields:
    """An object of what a job carries into the next plan, at round `round_index`."""
    return _declared(("id", *CARRIED_FIELDS), {
        "id": _JSON_ID,
        "credit": Interval(Real, shockwave.CREDIT_FLOOR, round_index + 1, unit="rounds",
                           note="round_index + 1 at most"),
        "waited": Interval(Whole, 0, round_index),
        "ran_last": _JSON_BOOL,
    }, "an object of what a job carries")


def _plan_fields(rounds: int, types: int, jobs: int) -> Fields:
    """The standing plan's object, over a window of `rounds` rounds of `types` GPU types, with one
    row per carried job (`jobs`)."""
    goods = rounds * types
    program = _declared(PROGRAM_FIELDS, {
        "capacity": _list(Interval(Real, 0, unit="GPUs"), "a list of GPU counts, one per round of the window and "
                                                          "GPU type", length=goods),
        **dict.fromkeys(("round_s", "efficiency", "spread"), Interval(Real, 0)),
    }, "a program object")
    return _declared(PLAN_FIELDS, {
        "since_plan": Interval(Whole, 0, rounds),
        "fairness": OneOf(("none", "constraints", "relaxed")),
        "status": OneOf(tuple(s.value for s in Status)),
        **dict.fromkeys(("solver", "message"), _STRING),
        **dict.fromkeys(("bound", "ftf_bound", "relaxed_objective", "rounded_objective"), Either(_FINITE, _NULL)),
        "prices": _numbers(goods),
        "program": program,
        "rows": _list(_OBJECT, "a list of row objects, one per carried job", length=jobs),
    }, "a plan object")


def _window(types: int, left: int, each: Constraint, note: str = "") -> Each:
    """A plan row's values over the `left` rounds of the window left, each admitted by `each`; on
    several GPU types one list of them per type."""
    rounds = _list(each, f"a list of values, one per round of the window left{note}", length=left)
    return rounds if types == 1 else _list(rounds, f"a list of lists, one per GPU type{note}", length=types)


def _row_fields(left: int, types: int, capacity: int, committed: bool) -> Fields:
    """A plan row's object, `left` rounds of the window left, on `types` GPU types and `capacity`
    GPUs; with commitments if the plan's first row has them (`committed`)."""
    null_in_all = " (null in every row or in none)"
    return _declared((*PLAN_ROW_FIELDS, *(TYPED_ROW_FIELDS if types > 1 else ())), {
        "gpus": Interval(Whole, 1, capacity),
        "base": Interval(Real, 0, 1, note="the share of its epochs done"),
        "weight": Interval(Real, 0),
        "remaining_s": Interval(Real, 0, unit="seconds"),
        "relaxed": _window(types, left, _SHARE),
        "schedule": _window(types, left, _JSON_BOOL),
        "committed": _window(types, left, _JSON_BOOL, null_in_all) if committed
        else Equal(None, says=f"null, as in the plan's first row{null_in_all}"),
        "placement": _window(1, left, Interval(Whole, -1, types, closed="left", noun="a GPU type index",
                                                note="-1: not running")),
        "pace": _list(_SHARE, "a list of speeds, one per GPU type", length=types),
    }, "a plan row object")


# --- Reading ---------------------------------------------------------------------------------------


def _id_in(value: Any) -> Any:
    """An id or a kind from its JSON, checked (`_JSON_ID`, `_JSON_KIND`): ``{"tuple": [...]}`` a tuple."""
    return tuple(_id_in(v) for v in value["tuple"]) if isinstance(value, Mapping) else value


def _real(value: Any) -> float:
    """A JSON number, or null for NaN (none), as a float."""
    return float("nan") if value is None else float(value)


def _loads(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
           allow_resize: bool) -> PolicyState:
    _header(config, document, cluster, allow_resize)
    check("", document, _TOP)
    if allow_resize:
        _fits(config, document["jobs"])
    types = () if cluster is None else tuple(cluster.types)
    read = [_record_in(config, row, k, types) for k, row in enumerate(document["jobs"])]
    check_distinct("jobs", [job_id for job_id, _ in read], "a job id", "job ids are unique")
    round_index, stale = document["round_index"], document["stale"]
    carried = _carried_in(document["carried"], round_index)
    # A plan made for another capacity (allow_resize) is checked, then not served: the next round re-plans.
    standing = _standing_in(config, document["plan"], carried.get("carried", ()), resized=allow_resize)
    if allow_resize and standing:
        standing, stale = {}, True
    taught = [_trajectory_in(v, f"taught[{k}]") for k, v in enumerate(document["taught"])]
    state = PolicyState(
        jobs=MappingProxyType(dict(read)), completed=tuple(map(_id_in, document["completed"])), stale=stale,
        round_index=round_index, replans=document["replans"], failed_replans=document["failed_replans"],
        retry_at=document["retry_at"], forecaster=_forecaster(config, taught),
        finished=tuple(_trajectory_in(v, f"finished[{k}]") for k, v in enumerate(document["finished"])),
        gpu_types=types, **carried, **standing)
    return checked_state(config, state, types=None if cluster is None else len(cluster))


#: The header's fields: what kind of checkpoint this is.
_HEADER: dict[str, Constraint] = {
    "format": OneOf((FORMAT,)),
    "version": Equal(VERSION, says=f"{VERSION} (this vfm reads version {VERSION} only; version 1, an earlier vfm's, "
                                   f"holds no standing plan)", same_type=True),
    "policy": OneOf(("Policy",)),
    "config": _OBJECT,
}


def _header(config: PolicyConfig, document: Mapping[str, Any], cluster: ClusterTypes | None,
            allow_resize: bool) -> None:
    """The format, version, kind of policy and configuration, each checked in turn."""
    check_parameters({name: document.get(name) for name in _HEADER}, _HEADER, of=" of the checkpoint")
    if cluster is not None:
        check("allow_resize", allow_resize, Equal(False, says="False on a cluster of several GPU types, which must "
                                                               "be the checkpoint's"))
    theirs = document["config"]
    try:
        stated = fingerprint(theirs)
    except (TypeError, ValueError, RecursionError):
        stated = None
    check("config_sha256 of the checkpoint", document.get("config_sha256"),
          Equal(stated, says="the SHA-256 of its config", hint="the checkpoint was altered"))
    plain = configuration(config)
    if stated == fingerprint(plain):
        return
    order = theirs.get("gpu_types")
    if cluster is not None and isinstance(order, list):
        check_type_order(order, cluster.types, "checkpoint")
    differ = differences(theirs, plain, ("capacity",) if allow_resize else ())
    if differ:
        shown = "; ".join(differ[:8]) + (f"; and {len(differ) - 8} more" if len(differ) > 8 else "")
        resized = cluster is None and len(differ) == 1 and differ[0].startswith("capacity=")
        raise ValidationError(f"config of the checkpoint differs from this policy's: {shown}"
                              + (" (for a cluster that changed size: restore(..., allow_resize=True))" if resized
                                 else ""))


def _fits(config: PolicyConfig, rows: list[Mapping[str, Any]]) -> None:
    """On a resize, every job's gang fits this policy's capacity; else the jobs that do not, named."""
    wide = [(row.get("id"), row.get("gpus")) for row in rows
            if type(row.get("gpus")) is int and row["gpus"] > config.capacity]
    if wide:
        named = ", ".join(f"{_id_in(check('jobs[].id', i, _JSON_ID))!r} ({g} GPUs)" for i, g in wide)
        raise ValidationError(f"jobs {named} have gangs wider than this policy's {config.capacity} GPUs: remove them "
                              f"(restore into a policy of the old capacity, remove_job, checkpoint again)")


def _record_in(config: PolicyConfig, row: Mapping[str, Any], k: int, types: tuple[str, ...]
               ) -> tuple[Hashable, JobRecord]:
    """Job object `k`: its id and its record (with its speeds per type on several types), checked."""
    job_id = _id_in(check(f"jobs[{k}].id", row.get("id"), _JSON_ID))
    regimes = row.get("regimes")
    columns = len(regimes) + 1 if types and isinstance(regimes, list) else 0
    check(f"jobs[{k}]", row, _job_fields(config.capacity, types, columns), of=f" (job {job_id!r})")
    target = row["fair_finish_at_s"]
    raw = JobRecord(
        gpus=row["gpus"], regimes=tuple((b, s) for b, s in row["regimes"]), epochs=row["epochs"],
        budget=row["budget"], stages=tuple((c, n) for c, n in row["stages"]),
        fair_finish_at_s=float("nan") if target is None else target, kind=_id_in(row["kind"]),
        restart_s=row.get("restart_s", shockwave.DEFAULT_RESTART_S),
        speeds=read_only(np.array([row["speeds"][t] for t in types], dtype=np.float64)) if types else None)
    check_record(config, job_id, raw)
    # As `Policy.add_job` keeps them: floats for the regimes, the budget, the target and the restart cost.
    return job_id, dataclasses.replace(
        raw, regimes=tuple((float(b), float(s)) for b, s in raw.regimes), budget=float(raw.budget),
        fair_finish_at_s=float(raw.fair_finish_at_s), restart_s=float(raw.restart_s))


def _carried_in(entries: list[Mapping[str, Any]], round_index: int) -> dict[str, Any]:
    """``carried``: the `PolicyState` fields of what each job carries into the next plan (its
    ``carried`` ids and the arrays aligned to them), each entry checked."""
    fields, ids = _carried_fields(round_index), []
    for k, entry in enumerate(entries):
        job_id = _id_in(check(f"carried[{k}].id", entry.get("id"), _JSON_ID))
        check(f"carried[{k}]", entry, fields, of=f" (job {job_id!r})")
        ids.append(job_id)
    if not ids:
        return {}
    return {"carried": tuple(ids), "credit": np.array([e["credit"] for e in entries], dtype=np.float64),
            "waited": np.array([e["waited"] for e in entries], dtype=np.int64),
            "ran_last": np.array([e["ran_last"] for e in entries], dtype=bool)}


def _trajectory_in(value: Mapping[str, Any], what: str) -> Trajectory:
    """A completed job's trajectory (`what`: where it is, as ``taught[2]``), its runs checked."""
    check(what, value, _TRAJECTORY)
    labels, stages = value["regimes"], value["stages"]
    check("stages", stages, runs(len(labels), "rank", nonempty=True), of=f" of {what}")
    check("the epochs of stages", sum(n for _, n in stages), Interval(Whole, 1, MAX_JOB_EPOCHS, note="MAX_JOB_EPOCHS"),
          of=f" of {what}")
    ranks = np.array([r for r, _ in stages], dtype=np.int64)
    lengths = np.array([n for _, n in stages], dtype=np.int64)
    return Trajectory(_id_in(value["kind"]), np.repeat(np.array(labels, dtype=np.float64)[ranks], lengths),
                      regimes=labels)


def _forecaster(config: PolicyConfig, taught: list[Trajectory]) -> Forecaster | None:
    """The configured forecaster taught `taught` (None: nothing taught, the configured one)."""
    if not taught:
        return None
    learn: Any = getattr(config.forecaster, "learned", None)
    if learn is None:  # only a learning forecaster is taught anything
        check("the trajectories in taught", len(taught), Equal(0, says=f"none: this policy's forecaster "
                                                                      f"({type(config.forecaster).__name__}) does "
                                                                      f"not learn"), of=" of the checkpoint")
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
    rounds, types = config.options.rounds, config.types
    plan = check("plan", value, _plan_fields(rounds, types, len(ids)))
    since, rows = plan["since_plan"], plan["rows"]
    committed = bool(rows) and rows[0].get("committed") is not None
    fields = _row_fields(rounds - since, types, MAX_COUNT if resized else config.capacity, committed)
    for k, row in enumerate(rows):
        check(f"plan.rows[{k}]", row, fields, of=f" (job {ids[k]!r})")
    arrays = _whole_window(rows, since, rounds, types, committed)
    standing = Plan(
        schedule=arrays["schedule"], relaxed=arrays["relaxed"],
        prices=np.array([_real(v) for v in plan["prices"]], dtype=np.float64), bound=_real(plan["bound"]),
        relaxed_objective=_real(plan["relaxed_objective"]), rounded_objective=_real(plan["rounded_objective"]),
        program=_program_in(plan["program"], arrays, rounds, types), fairness=plan["fairness"],
        ftf_bound=_real(plan["ftf_bound"]), status=Status(plan["status"]), message=plan["message"],
        solver=plan["solver"], job_ids=ids, placement=arrays.get("placement"), committed=arrays.get("committed"))
    return {"plan": standing, "since_plan": since}


def _whole_window(rows: list[Mapping[str, Any]], since: int, rounds: int, types: int,
                  committed: bool) -> dict[str, np.ndarray]:
    """The rows' values as arrays over the whole window (n, K R; type-major on several types), the
    columns before `since` (served, not stored) 0, False or -1."""
    n = len(rows)

    def full(name: str, fill: Any, dtype: Any, per_type: int) -> np.ndarray:
        array = np.full((n, per_type, rounds), fill, dtype=dtype)
        array[:, :, since:] = np.array([row[name] for row in rows], dtype=dtype).reshape(n, per_type, rounds - since)
        return array.reshape(n, per_type * rounds)

    arrays = {"relaxed": full("relaxed", 0.0, np.float64, types), "schedule": full("schedule", False, bool, types),
              **{name: np.array([row[name] for row in rows], dtype=np.float64).reshape(n) for name in
                 ("gpus", "base", "weight", "remaining_s")}}
    if committed:
        arrays["committed"] = full("committed", False, bool, types)
    if types > 1:
        arrays["placement"] = full("placement", -1, np.int64, 1)
        arrays["pace"] = np.array([row["pace"] for row in rows], dtype=np.float64).reshape(n, types)
    return arrays


def _program_in(value: Mapping[str, Any], arrays: Mapping[str, np.ndarray], rounds: int,
                types: int) -> PlanningProgram:
    """The plan's program as far as serving reads it: its scalars and capacity, and the rows'
    gangs, bases, weights, forecast time left and speeds per type; the scenarios' progress is not
    stored (zeros: a restored plan is served, not solved again)."""
    n, goods = arrays["gpus"].size, rounds * types
    pace = arrays.get("pace")
    return PlanningProgram(
        progress=np.broadcast_to(np.zeros(1), (1, n, goods)), base=arrays["base"], budgets=arrays["weight"],
        gpus=arrays["gpus"], capacity=np.array(value["capacity"], dtype=np.float64), remaining_s=arrays["remaining_s"],
        round_s=float(value["round_s"]), efficiency=float(value["efficiency"]), spread=float(value["spread"]),
        good_round=None if pace is None else np.tile(np.arange(rounds), types),
        speed=None if pace is None else np.repeat(pace, rounds, axis=1))
