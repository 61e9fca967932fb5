"""Checking a policy's state in full against its configuration, before the policy takes it.

`checked_state` is what `vfm.planner.Policy.restore` applies to a `vfm.planner.policy.state.PolicyState`,
whether given directly or read from a checkpoint (`vfm.planner.policy.checkpoint.read`): every field, the
jobs' records as `Policy.add_job` would make them, the standing plan and what the jobs carry into the
next one. The field checks it shares with the reader (`checked_count`, `check_record`,
`check_stages`) are public here.
"""

from __future__ import annotations

import reprlib
from collections.abc import Hashable, Mapping
from typing import Any, cast

import numpy as np

from vfm._validation import checked_job_id, is_real, is_whole
from vfm.errors import ValidationError
from vfm.forecast import Trajectory
from vfm.limits import MAX_COUNT
from vfm.parameters import (
    Boolean,
    Hashed,
    Instance,
    Interval,
    Real,
    Whole,
    check,
    check_array,
    check_distinct,
    check_length,
)
from vfm.planner import shockwave
from vfm.planner.plan import Plan
from vfm.planner.policy.checkpoint.layout import CARRIED_FIELDS
from vfm.planner.policy.job_events import check_id_depth
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState, checked_record
from vfm.planner.program import PlanningProgram

__all__ = ["as_float", "check_record", "check_stages", "checked_count", "checked_state"]


def checked_state(config: PolicyConfig, state: PolicyState, *, types: int | None = None) -> PolicyState:
    """`state`, checked in full against `config` (`types`: GPU types of a policy on several, whose
    plans place jobs on types; None: on one type); a `ValidationError` naming the
    field (and the job) of the first thing wrong.

    A `PolicyState` holds no configuration: it is checked against `config` as far as it shows it
    (gangs within the capacity, finish-time targets only with fairness, its plan's window, round
    length, capacity and fairness)."""
    check("state", state, Instance(PolicyState, "a PolicyState"))
    _check_gpu_types(config, state)
    check("jobs of the state", state.jobs, Instance(Mapping, "a mapping of job id to JobRecord"))
    for job_id, record in state.jobs.items():
        _check_id(job_id, "job id")
        check_record(config, job_id, record)
    _check_one_type(config, state)
    check("completed of the state", state.completed, Instance(tuple, "a tuple of job ids"))
    for job_id in state.completed:
        _check_id(job_id, "completed job")
    # The jobs' ids are distinct (a mapping's keys): a repeat is in completed, or there and present.
    check_distinct("completed of the state (after its jobs)", (*state.jobs, *state.completed), "a job",
                   "job ids are unique")
    for name in ("round_index", "replans", "failed_replans", "retry_at"):
        checked_count(getattr(state, name), f"{name} of the state")
    check("retry_at of the state", state.retry_at, Interval(Whole, 0, state.round_index + config.options.rounds,
                                                          note="a window past its round_index at most"))
    check("stale of the state", state.stale, Boolean())
    _check_plan(config, state, types)
    forecaster = state.forecaster
    if forecaster is not None:
        _configured("forecaster of the state", type(forecaster).__name__, type(config.forecaster).__name__)
    if not isinstance(state.finished, tuple) or not all(
            isinstance(t, Trajectory) and t.group is not None for t in state.finished):
        raise ValidationError("finished of the state must be a tuple of vfm.forecast.Trajectory of known kinds")
    return state


#: Job ids the state aligns to its arrays (its plan's, its carried).
_IDS = Instance(tuple, "a tuple of job ids")


def _configured(what: str, stated: Any, ours: Any) -> None:
    """What the state holds (`stated`) is what this policy's configuration makes (`ours`); else a
    `ValidationError` saying both: the state was made with another configuration."""
    if stated != ours:
        raise ValidationError(f"{what} is {stated!r}, this policy's {ours!r}: the state was made with another "
                              f"configuration")


def _check_id(job_id: Any, what: str) -> None:
    """`job_id` is an id `Policy.add_job` would take, as it keys it (`what`: which id, named with
    the id's repr cut short, since an id nested thousands deep has no repr)."""
    what = f"{what} {reprlib.repr(job_id)}"
    check_id_depth(job_id, what)
    try:
        canonical = checked_job_id(job_id)
    except ValidationError:
        raise ValidationError(f"{what} must be a string, a whole number or a tuple of them") from None
    if type(canonical) is not type(job_id):
        raise ValidationError(f"{what} must be a Python string, int or tuple, got {type(job_id).__name__}")


def _check_gpu_types(config: PolicyConfig, state: PolicyState) -> None:
    """On several GPU types, the state's `gpu_types` are the cluster's, in the cluster's order: its
    speeds and its plan's columns are indexed by that order. A state with none (built by hand) is
    taken only while it holds no job and no plan. On one type, the state names no types."""
    types = state.gpu_types
    if not isinstance(types, tuple) or not all(isinstance(t, str) for t in types):
        raise ValidationError(f"gpu_types of the state must be a tuple of GPU type names, got {types!r}")
    if config.types == 1 or config.cluster is None:
        return  # checked after the jobs (`_check_one_type`), whose speeds say more
    ours = tuple(config.cluster.types)
    if types == ours or (not types and not state.jobs and state.plan is None):
        return
    if sorted(types) == sorted(ours):
        raise ValidationError(f"gpu_types: the cluster's GPU types are in another order, {list(types)!r} in the "
                              f"state, {list(ours)!r} in this policy; a state restores into a cluster with its types "
                              f"in the same order (build the policy's ClusterTypes in the state's order)")
    raise ValidationError(f"gpu_types of the state are {list(types)!r}, this policy's cluster has {list(ours)!r}: the "
                          f"state was made with another configuration")


def _check_one_type(config: PolicyConfig, state: PolicyState) -> None:
    """On one GPU type, the state names no types."""
    if config.types == 1 and state.gpu_types:
        raise ValidationError(f"gpu_types of the state are {list(state.gpu_types)!r}, but this policy's cluster has "
                              f"one GPU type: the state was made with another configuration")


def check_record(config: PolicyConfig, job_id: Hashable, record: Any) -> None:
    """A job's record (`vfm.planner.policy.state.JobRecord`) as `Policy.add_job` and the reports make them."""
    what = f"job {job_id!r}"
    check(f"the record of {what}", record, Instance(JobRecord, "a JobRecord"))
    check(f"regimes of {what}", record.regimes, Instance(tuple, "a tuple of (batch size, seconds) pairs"))
    # The same checks as an arrival's: what add_job would refuse, a checkpoint may not hold.
    checked_record(config.capacity, job_id, record.gpus, record.regimes, record.epochs, record.budget, record.kind)
    done = check_stages(record.stages, len(record.regimes), record.epochs, f"stages of {what}")
    if done >= record.epochs:
        raise ValidationError(f"stages of {what} count all its {record.epochs} epochs done, but the job is not "
                              f"completed")
    target = as_float(record.fair_finish_at_s) if is_real(record.fair_finish_at_s) else None
    if target is None or (not np.isnan(target) and not (np.isfinite(target) and target >= 0)):
        raise ValidationError(f"fair_finish_at_s of {what} must be NaN (none yet) or a finite time >= 0, got "
                              f"{record.fair_finish_at_s!r}")
    if not config.fairness and not np.isnan(target):
        raise ValidationError(f"fair_finish_at_s of {what} is set, but this policy keeps no finish-time targets "
                              f"(fairness=False): the state was made with another configuration")
    check(f"kind of {what}", record.kind, Hashed())
    _check_speeds(config, what, record)


def _check_speeds(config: PolicyConfig, what: str, record: JobRecord) -> None:
    """On several GPU types, a job's speeds per type (K, R + 1): finite, in [0, 1], 0 on a type too
    small for its gang, and in each column positive on some type; None on one type."""
    speeds = record.speeds
    if config.cluster is None or config.types == 1:
        if speeds is not None:
            raise ValidationError(f"speeds of {what} are set, but this policy's cluster has one GPU type")
        return
    shape = (config.types, len(record.regimes) + 1)
    if not (isinstance(speeds, np.ndarray) and speeds.shape == shape and speeds.dtype == np.float64):
        raise ValidationError(f"speeds of {what} must be a float array of shape {shape} (GPU types, regimes and "
                              f"their mean), got {type(speeds).__name__}")
    check_array("speeds", speeds, Interval(Real, 0, 1), of=f" of {what}")
    if (speeds[config.cluster.counts < record.gpus] > 0).any():
        raise ValidationError(f"speeds of {what} give a speed on a GPU type with fewer GPUs than its gang")
    if not (speeds > 0).any(axis=0).all():
        raise ValidationError(f"speeds of {what} leave a regime with no GPU type that can host the job")


def _check_plan(config: PolicyConfig, state: PolicyState, types: int | None) -> None:
    """The standing plan and what the jobs carry (credit, waits, last round), against `config`."""
    n = _check_arrays(state)
    _check_carried_ids(state.carried, n)
    since = state.since_plan
    check("since_plan of the state", since, Interval(Whole, 0))
    plan = state.plan
    if plan is None:
        if since:
            raise ValidationError(f"the state has no plan but since_plan {since} (rounds served from a plan)")
        return
    check("plan of the state", plan, Instance(Plan, "a vfm.planner.Plan or None"))
    ids = cast("tuple[Hashable, ...]", check("the plan's job ids", plan.job_ids, _IDS))
    check_length("the plan's job ids", ids, n, "entry of credit, waited and ran_last of the state")
    check_distinct("the plan's job ids", ids, "a job")
    if not state.stale and ids != tuple(state.jobs):
        raise ValidationError("the state is not stale, but its plan is not over the jobs present")
    for job_id in ids:
        _check_id(job_id, "plan job id")
    if ids != state.carried:
        raise ValidationError("carried of the state must be its plan's job ids (the jobs credit, waited and "
                              "ran_last are aligned to)")
    rounds = config.options.rounds
    columns = rounds * (types or 1)
    if (plan.placement is None) != (types is None):
        raise ValidationError("the state's plan places jobs on GPU types; this policy's cluster has one type"
                              if types is None else "the state's plan places no job on GPU types")
    relaxed, schedule = plan.relaxed, plan.schedule
    if not (isinstance(relaxed, np.ndarray) and isinstance(schedule, np.ndarray)
            and relaxed.shape == schedule.shape and relaxed.ndim == 2 and relaxed.shape[0] == n):
        raise ValidationError(f"the plan's schedule must be {n} rows (its jobs) by its window")
    _configured("the plan's columns (rounds of each GPU type)", relaxed.shape[1], columns)
    check_array("the plan's relaxed schedule", relaxed, Interval(Real))
    committed = getattr(plan, "committed", None)
    if committed is not None and not (isinstance(committed, np.ndarray) and committed.dtype == np.bool_
                                      and committed.shape == relaxed.shape):
        raise ValidationError(f"the plan's committed rounds must be a bool array of the schedule's shape "
                              f"{relaxed.shape}")
    check("since_plan of the state", since, Interval(Whole, 0, rounds, unit="rounds", note="the plan's window"))
    program = plan.program
    if not isinstance(program, PlanningProgram) or program.gpus.shape != (n,) or program.base.shape != (n,):
        raise ValidationError("the plan's program is not over the plan's jobs")
    _configured("the plan's round_s", program.round_s, config.options.round_s)
    if types is None and (program.capacity > config.capacity).any():
        raise ValidationError(f"the plan was made for {program.capacity.max():g} GPUs, this policy has "
                              f"{config.capacity}: the state was made with another configuration")
    if not config.fairness:  # this policy keeps no finish-time targets
        _configured("the plan's fairness", plan.fairness, "none")
    if types is not None:
        _check_placement(config, plan, since)
    for k, job_id in enumerate(ids):
        if job_id in state.jobs and program.gpus[k] != state.jobs[job_id].gpus:
            raise ValidationError(f"the plan gives job {job_id!r} {program.gpus[k]:g} GPUs, its record "
                                  f"{state.jobs[job_id].gpus}")


def _check_placement(config: PolicyConfig, plan: Plan, since: int) -> None:
    """On several GPU types, the plan's placement of the rounds left (served as it is by the window
    execution): each job on a type it has a speed on, each type's GPUs within the cluster's."""
    placement, counts = plan.placement, config.cluster.counts if config.cluster is not None else None
    n, rounds = plan.relaxed.shape[0], config.options.rounds
    if counts is None or not (isinstance(placement, np.ndarray) and placement.shape == (n, rounds)
                              and placement.dtype.kind == "i"):
        raise ValidationError(f"the plan's placement must be whole numbers of shape ({n}, {rounds}) (jobs, rounds)")
    left = placement[:, since:]
    check_array("the plan's placement", left, Interval(Whole, -1, counts.size, closed="left", noun="a GPU type index",
                                                         note="-1: not running"), of=" (the rounds left)")
    pace = plan.program.pace.reshape(n, counts.size, rounds)[:, :, 0]
    rows, columns = np.nonzero(left >= 0)
    if (pace[rows, left[rows, columns]] <= 0).any():
        raise ValidationError("the plan places a job on a GPU type it cannot run on")
    used = np.zeros((counts.size, left.shape[1]))
    np.add.at(used, (left[rows, columns], columns), plan.program.gpus[rows])
    if (used > counts[:, None]).any():
        raise ValidationError("the plan places more GPUs of a type in a round than the cluster has")


def _check_carried_ids(ids: Any, n: int) -> None:
    """`PolicyState.carried`: a tuple of `n` distinct job ids (one per entry of credit, waited, ran_last)."""
    check("carried of the state", ids, _IDS)
    check_length("carried of the state", ids, n, "entry of credit, waited and ran_last")
    for job_id in ids:
        _check_id(job_id, "carried job id")
    check_distinct("carried of the state", ids, "a job")


def _check_arrays(state: PolicyState) -> int:
    """credit, waited and ran_last: arrays of one length (returned), finite, in range."""
    arrays = {name: getattr(state, name) for name in CARRIED_FIELDS}
    for name, array in arrays.items():
        if not isinstance(array, np.ndarray) or array.ndim != 1:
            raise ValidationError(f"{name} of the state must be a 1-D array, got {type(array).__name__}")
    lengths = {array.size for array in arrays.values()}
    if len(lengths) != 1:
        raise ValidationError(f"credit, waited and ran_last of the state differ in length: "
                              f"{', '.join(f'{k} {v.size}' for k, v in arrays.items())}")
    credit, waited, ran = arrays["credit"], arrays["waited"], arrays["ran_last"]
    rounds = state.round_index
    check_array("credit", credit, Interval(Real, shockwave.CREDIT_FLOOR, rounds + 1, unit="rounds",
                                           note="round_index + 1 at most"), of=" of the state")
    if waited.dtype.kind not in "iu":
        raise ValidationError(f"waited of the state must be whole numbers of rounds, got dtype {waited.dtype}")
    check_array("waited", waited, Interval(Whole, 0, rounds, unit="rounds", note="round_index at most"),
                of=" of the state")
    if ran.dtype != np.bool_:
        raise ValidationError(f"ran_last of the state must be booleans, got {ran.dtype}")
    return int(credit.size)


def checked_count(value: Any, what: str, low: int = 0, high: int = MAX_COUNT) -> int:
    """`value` as an int if it is a whole number in [`low`, `high`]; else a `ValidationError` naming `what`."""
    return int(check(what, value, Interval(Whole, low, high)))


def as_float(value: Any) -> float:
    """A real number as a float; an integer too large for one as an infinity of its sign."""
    try:
        return float(value)
    except OverflowError:
        return float("inf") if value > 0 else float("-inf")


def check_stages(stages: Any, regimes: int, most: int, what: str, column: str = "columns") -> int:
    """Runs (column, epochs): columns in [0, `regimes`), epochs >= 1, a new column each run, at most
    `most` epochs in all; the epochs."""
    check(what, stages, Instance(tuple | list, "a sequence of (column, epochs) runs"))
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
