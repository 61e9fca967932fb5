"""Checking a policy's state in full against its configuration, before the policy takes it.

`checked_state` is what `vfm.planner.Policy.restore` applies to a `vfm.planner.policy.state.PolicyState`,
whether given directly or read from a checkpoint (`vfm.planner.policy.checkpoint.read`): every field, the
jobs' records as `Policy.add_job` would make them, the standing plan and what the jobs carry into the
next one. Each field's constraint is declared once, in a table (`_STATE`, and those the
configuration bounds: `_bounded`, `_plan_fields`, `_record_fields`), and checked in one loop that
names the field (and the job). What it shares with the reader is public here: `COUNT`, `runs`,
`check_record` and `check_type_order`.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from vfm.errors import ValidationError
from vfm.forecast import Trajectory
from vfm.limits import MAX_COUNT
from vfm.parameters import (
    Anything,
    Array,
    Boolean,
    Constraint,
    Each,
    Either,
    Equal,
    Fixed,
    Instance,
    Interval,
    Keyed,
    Optional,
    Real,
    Satisfies,
    Step,
    Whole,
    check,
    check_array,
    check_distinct,
    check_parameters,
)
from vfm.planner import shockwave
from vfm.planner.plan import Plan
from vfm.planner.policy.job_events import JOB_ID
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState, checked_record
from vfm.planner.program import PlanningProgram

__all__ = ["COUNT", "check_record", "check_type_order", "checked_state", "runs"]

#: A count a state keeps (rounds served, re-plans made, ...).
COUNT = Interval(Whole, 0, MAX_COUNT)
#: What a refusal of the state's fields against this policy's configuration adds.
_ANOTHER = "the state was made with another configuration"
_JOB_IDS = Each(JOB_ID, "a tuple of job ids")
#: A completed job the forecaster is taught: its kind is what it learns by.
_KNOWN_TRAJECTORY = Instance(Trajectory, "a vfm.forecast.Trajectory of a known kind",
                             holds=lambda t: t.group is not None)

#: A state's fields, as far as they stand alone; those the configuration or other fields bound
#: are checked again by `_bounded`.
_STATE: dict[str, Constraint] = {
    "jobs": Keyed(JOB_ID, Instance(JobRecord, "a JobRecord"), "a mapping of job id to JobRecord"),
    "completed": _JOB_IDS,
    "carried": _JOB_IDS,
    **dict.fromkeys(("round_index", "replans", "failed_replans", "retry_at"), COUNT),
    "since_plan": Interval(Whole, 0),
    "stale": Boolean(),
    "plan": Optional(Instance(Plan, "a vfm.planner.Plan")),
    "finished": Each(_KNOWN_TRAJECTORY, "a tuple of vfm.forecast.Trajectory of known kinds"),
    "gpu_types": Each(Instance(str, "a GPU type name"), "a tuple of GPU type names"),
    "credit": Array((None,), kinds="fiu"),
    "waited": Array((None,), kinds="iu"),
    "ran_last": Array((None,), kinds="b"),
}


def checked_state(config: PolicyConfig, state: PolicyState, *, types: int | None = None) -> PolicyState:
    """`state`, checked in full against `config` (`types`: GPU types of a policy on several, whose
    plans place jobs on types; None: on one type); a `ValidationError` naming the
    field (and the job) of the first thing wrong.

    A `PolicyState` holds no configuration: it is checked against `config` as far as it shows it
    (gangs within the capacity, finish-time targets only with fairness, its plan's window, round
    length, capacity and fairness)."""
    check("state", state, Instance(PolicyState, "a PolicyState"))
    _check_attributes(state, _STATE, " of the state")
    typed = config.cluster is not None and config.types > 1
    if typed:  # before the jobs: their speeds and the plan's columns are indexed by the types' order
        check_type_order(state.gpu_types, config.cluster.types, "state")  # type: ignore[union-attr]
    _check_attributes(state, _bounded(config, state, typed), " of the state")
    for job_id, record in state.jobs.items():
        check_record(config, job_id, record)
    if not typed:  # after the jobs, whose speeds say more
        check("gpu_types", state.gpu_types, _types_of(config, state), of=" of the state")
    # The jobs' ids are distinct (a mapping's keys): a repeat is in completed, or there and present.
    check_distinct("completed of the state (after its jobs)", (*state.jobs, *state.completed), "a job",
                   "job ids are unique")
    check_distinct("carried of the state", state.carried, "a job")
    if state.plan is not None:
        _check_plan(config, state, types)
    return state


def _check_attributes(record: object, constraints: Mapping[str, Constraint], of: str) -> None:
    """Each attribute of `record` that `constraints` names, checked in their order, named with `of`."""
    check_parameters({name: getattr(record, name) for name in constraints}, constraints, of=of)


def _bounded(config: PolicyConfig, state: PolicyState, typed: bool) -> dict[str, Constraint]:
    """The state's fields that its other fields and `config` bound: the arrays aligned to `carried`,
    the clock's ranges, the plan's window, the forecaster's kind, and on several GPU types their
    names (`typed`)."""
    n, rounds, now = state.credit.size, config.options.rounds, state.round_index
    ours = type(config.forecaster).__name__
    return {
        **({"gpu_types": _types_of(config, state)} if typed else {}),
        "credit": Array((n,), kinds="fiu", each=Interval(Real, shockwave.CREDIT_FLOOR, now + 1, unit="rounds",
                                                         note="round_index + 1 at most")),
        "waited": Array((n,), kinds="iu", each=Interval(Whole, 0, now, unit="rounds", note="round_index at most")),
        "ran_last": Array((n,), kinds="b"),
        "carried": Each(JOB_ID, "a tuple of job ids, one per entry of credit, waited and ran_last", length=n),
        "retry_at": Interval(Whole, 0, now + rounds, note="a window past its round_index at most"),
        "since_plan": Interval(Whole, 0, rounds, unit="rounds", note="the plan's window") if state.plan is not None
        else Interval(Whole, 0, 0, unit="rounds", note="the state has no plan to serve rounds from"),
        "forecaster": Optional(Instance(object, f"a {ours}, as this policy's forecaster",
                                        holds=lambda f: type(f).__name__ == ours, hint=_ANOTHER)),
    }


def _types_of(config: PolicyConfig, state: PolicyState) -> Constraint:
    """The state's `gpu_types`: on several types the cluster's, in its order (none in a state built
    by hand, while it holds no job and no plan); none on one type."""
    if config.cluster is None or config.types == 1:
        return Equal((), says="() (this policy's cluster has one GPU type)", hint=_ANOTHER)
    ours = Equal(tuple(config.cluster.types), says=f"this policy's cluster's {list(config.cluster.types)!r}",
                 hint=_ANOTHER)
    return ours if state.jobs or state.plan is not None else Either(ours, Equal((), says="() (a state built by hand)"))


def check_type_order(stated: Sequence[Any], ours: Sequence[str], whose: str) -> None:
    """A cluster of the state's or checkpoint's (`whose`) GPU types `stated` in another order than
    ours, refused saying so: the order decides which column of the plan and of each job's speeds is
    which type, and breaks ties."""
    if list(stated) != list(ours) and sorted(map(str, stated)) == sorted(ours):
        raise ValidationError(f"gpu_types: the cluster's GPU types are in another order, {list(stated)!r} in the "
                              f"{whose}, {list(ours)!r} in this policy; a {whose} restores into a cluster with its "
                              f"types in the same order (build the policy's ClusterTypes in the {whose}'s order)")


@functools.lru_cache(maxsize=64)
def runs(columns: int, column: str = "column", *, nonempty: bool = False) -> Each:
    """Runs ``(column, epochs)`` of epochs observed: columns in [0, `columns`), epochs >= 1, a new
    column each run (runs are maximal); at least one if `nonempty`. Cached: a restore checks every
    job's runs against one of a few."""
    run = Fixed((Interval(Whole, 0, columns, closed="left", noun=f"a {column}"), Interval(Whole, 1, unit="epochs")),
                f"a run ({column}, epochs)")
    return Each(run, f"runs ({column}, epochs)", kinds=(tuple, list), nonempty=nonempty,
                step=Step(lambda before, now: before[0] != now[0],
                          f"a run of another {column} than the run before it (runs are maximal)"))


def _nan(value: Any) -> bool:
    return isinstance(value, float | np.floating) and math.isnan(value)


#: A job's finish-time target: NaN before the first, then a time on the policy clock.
_TARGET = Either(Satisfies("NaN (none yet)", _nan), Interval(Real, 0, unit="seconds"))
_NO_TARGET = Satisfies(f"NaN: this policy keeps no finish-time targets (fairness=False), so {_ANOTHER}", _nan)
_ONE_TYPE_SPEEDS = Equal(None, says="None (this policy's cluster has one GPU type)")


@functools.lru_cache(maxsize=64)
def _typed_speeds(types: int, columns: int) -> Array:
    return Array((types, columns), dtype=np.float64, each=Interval(Real, 0, 1),
                 note="GPU types, regimes and their mean")


def _record_fields(config: PolicyConfig, record: JobRecord) -> dict[str, Constraint]:
    """A record's fields beyond those of an arrival (`checked_record`), which its regimes and
    `config` bound."""
    return {
        "stages": runs(len(record.regimes)),
        "fair_finish_at_s": _TARGET if config.fairness else _NO_TARGET,
        "speeds": _ONE_TYPE_SPEEDS if config.cluster is None or config.types == 1
        else _typed_speeds(config.types, len(record.regimes) + 1),
    }


def check_record(config: PolicyConfig, job_id: Hashable, record: Any) -> None:
    """A job's record (`vfm.planner.policy.state.JobRecord`) as `Policy.add_job` and the reports make them."""
    of = f" of job {job_id!r}"
    check("the record", record, Instance(JobRecord, "a JobRecord"), of=of)
    check("regimes", record.regimes, Instance(tuple, "a tuple of (batch size, seconds) pairs"), of=of)
    # The same checks as an arrival's: what add_job would refuse, a checkpoint may not hold.
    checked_record(config.capacity, job_id, record.gpus, record.regimes, record.epochs, record.budget, record.kind,
                   record.restart_s)
    _check_attributes(record, _record_fields(config, record), of)
    check("epochs done (stages)", sum(n for _, n in record.stages), Interval(
        Whole, 0, record.epochs, closed="left", note=f"fewer than its {record.epochs} epochs: it is not completed"),
        of=of)
    if config.cluster is not None and config.types > 1:
        _check_speeds(config.cluster.counts, record, of)


def _check_speeds(counts: np.ndarray, record: JobRecord, of: str) -> None:
    """On several GPU types, a job's speeds per type (K, R + 1) are 0 on a type too small for its
    gang, and in each column positive on some type."""
    speeds = record.speeds
    assert speeds is not None  # checked with the record's fields
    small = (counts < record.gpus)[:, None]
    check_array("speeds", np.where(small, speeds, 0.0), Interval(
        Real, None, 0, noun="a speed", note="on a GPU type with fewer GPUs than its gang"), of=of)
    check_array("the fastest speed", speeds.max(axis=0), Interval(
        Real, 0, 1, closed="right", noun="a speed", note="some GPU type hosts the job in each regime"),
        of=f" over the GPU types, by regime,{of}")


def _check_plan(config: PolicyConfig, state: PolicyState, types: int | None) -> None:
    """The standing plan, against `config` and the state: its jobs (those the state carries), its
    arrays over its window, its program, and on several types its placement."""
    plan = state.plan
    assert plan is not None
    _check_attributes(plan, _plan_fields(config, state, types), " of the state's plan")
    if not state.stale:  # no job arrived or left since the plan was made: it is over the jobs present
        check("job_ids", plan.job_ids, Equal(tuple(state.jobs), says="the jobs present, as the state is not stale"),
              of=" of the state's plan")
    check("carried", state.carried, Equal(plan.job_ids, says="its plan's job ids (the jobs credit, waited and "
                                                             "ran_last are aligned to)"), of=" of the state")
    program = plan.program
    _check_attributes(program, _program_fields(config, types), " of the state's plan's program")
    # Each job still present planned with its record's gang (the plan's jobs are those carried).
    for k, job_id in enumerate(state.carried):
        record = state.jobs.get(job_id)
        if record is not None:
            check("gpus", program.gpus[k], Equal(record.gpus, says=f"its record's {record.gpus}"),
                  of=f" of job {job_id!r} in the state's plan")
    if types is not None and config.cluster is not None:
        _check_placement(config, plan, state.since_plan)


def _plan_fields(config: PolicyConfig, state: PolicyState, types: int | None) -> dict[str, Constraint]:
    """The plan's fields, over its jobs (the state's `carried`) by its window's columns."""
    n, rounds = len(state.carried), config.options.rounds
    shape, note = (n, rounds * (types or 1)), "its jobs by this policy's window: rounds of each GPU type"
    return {
        "job_ids": _JOB_IDS,
        "placement": Equal(None, says="None (this policy's cluster has one GPU type)") if types is None
        else Array((n, rounds), kinds="i", note="jobs, rounds; on several GPU types"),
        "relaxed": Array(shape, kinds="fiu", each=Interval(Real), note=note),
        "schedule": Array(shape, note=note),
        "committed": Optional(Array(shape, kinds="b", note=note)),
        "program": Instance(PlanningProgram, "a PlanningProgram over the plan's jobs",
                            holds=lambda p: p.gpus.shape == (n,) and p.base.shape == (n,)),
        "fairness": Anything() if config.fairness else Equal("none", says="'none' (this policy keeps no finish-time "
                                                                          "targets)", hint=_ANOTHER),
    }


def _no_entry(where: Callable[[Any], Any], says: str) -> Satisfies:
    """Arrays with no entry `where` picks (a NumPy comparison, which picks no NaN), as `says` says."""
    return Satisfies(says, lambda values: not where(values).any())


def _program_fields(config: PolicyConfig, types: int | None) -> dict[str, Constraint]:
    """The plan's program's scalars, this policy's; on one type its capacity within the policy's."""
    capacity = Anything() if types is not None else _no_entry(
        lambda c: c > config.capacity, f"GPU counts none above this policy's {config.capacity} ({_ANOTHER} otherwise)")
    return {"round_s": Equal(config.options.round_s, says=f"this policy's {config.options.round_s!r}", hint=_ANOTHER),
            "capacity": capacity}


def _check_placement(config: PolicyConfig, plan: Plan, since: int) -> None:
    """On several GPU types, the plan's placement of the rounds left (served as it is by the window
    execution): each job on a type it has a speed on, each type's GPUs within the cluster's."""
    assert config.cluster is not None and plan.placement is not None  # checked with the plan's fields
    counts, names = config.cluster.counts, config.cluster.types
    n, rounds = plan.relaxed.shape[0], config.options.rounds
    left = plan.placement[:, since:]
    check_array("placement", left, Interval(Whole, -1, counts.size, closed="left", noun="a GPU type index",
                                            note="-1: not running"), of=" of the state's plan (the rounds left)")
    pace = plan.program.pace.reshape(n, counts.size, rounds)[:, :, 0]
    # What placing jobs implies, checked as derived values: each job's speed on the type it is
    # placed on (jobs, rounds left), and each type's GPUs in use (types, rounds left).
    rows, columns = np.nonzero(left >= 0)
    used = np.zeros((counts.size, left.shape[1]))
    np.add.at(used, (left[rows, columns], columns), plan.program.gpus[rows])
    spread = ", ".join(f"{t}: {c}" for t, c in zip(names, counts.tolist(), strict=True))
    derived = {"the speeds of the jobs placed": pace[rows, left[rows, columns]], "the GPUs placed": used}
    check_parameters(derived, {
        "the speeds of the jobs placed": _no_entry(lambda speed: speed <= 0, "speeds > 0 (a job is placed only on a "
                                                                             "GPU type it can run on)"),
        "the GPUs placed": _no_entry(lambda gpus: gpus > counts[:, None], f"at most the cluster's of each type "
                                                                          f"({spread}), by type and round left"),
    }, of=" in the state's plan")
