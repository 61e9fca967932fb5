"""Writing a policy checkpoint: the policy's configuration and state as versioned JSON text.

`dumps` writes what `vfm.planner.policy.checkpoint` describes, field by field in the layout of
`vfm.planner.policy.checkpoint.layout`, and refuses, naming it, what the format cannot hold.
"""

from __future__ import annotations

import json
import math
from collections.abc import Hashable
from typing import Any

import numpy as np

from vfm.forecast import Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.parameters import Satisfies, check
from vfm.planner.plan import Plan
from vfm.planner.policy.checkpoint.config import configuration, fingerprint, taught_trajectories, typed_cluster
from vfm.planner.policy.checkpoint.layout import CARRIED_FIELDS, FORMAT, VERSION
from vfm.planner.policy.job_events import ids_of
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState

__all__ = ["dumps"]


def dumps(config: PolicyConfig, state: PolicyState) -> str:
    """The checkpoint of a policy of configuration `config` in `state` as JSON text (module docstring).

    Raises
    ------
    vfm.errors.ValidationError
        For what the format cannot hold, naming it: a job id or kind that is not a string, a whole
        number, a tuple of them (or None, for a kind); a forecaster that has learned from completed
        jobs but is not a `vfm.forecast.PopulationForecaster`.
    """
    plain = configuration(config)
    cluster = typed_cluster(config)
    document = {
        "format": FORMAT, "version": VERSION, "policy": plain["policy"], "config_sha256": fingerprint(plain),
        "config": plain, "round_index": int(state.round_index), "replans": int(state.replans),
        "stale": bool(state.stale), "failed_replans": int(state.failed_replans), "retry_at": int(state.retry_at),
        "jobs": [_record_out(job_id, record, cluster) for job_id, record in state.jobs.items()],
        "completed": [_id_out(job_id, f"the id of completed job {job_id!r}") for job_id in state.completed],
        "carried": _carried_out(state),
        "plan": None if state.plan is None else _plan_out(state.plan, int(state.since_plan), config),
        "taught": [_trajectory_out(t, "a taught trajectory") for t in taught_trajectories(config, state)],
        "finished": [_trajectory_out(t, "a finished trajectory") for t in state.finished],
    }
    # One line: an indent makes the json module fall back to its slower pure-Python encoder.
    return json.dumps(document, allow_nan=False)


def _id_part(value: Any) -> bool:
    """A string or a whole number (Python's or NumPy's), not a bool: what an id is made of."""
    return isinstance(value, str) or (isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_))


#: The ids and kinds a checkpoint holds (`vfm.planner.policy.checkpoint`).
_IDS = ids_of(Satisfies("a string or a whole number (not a bool)", _id_part))
_KINDS = ids_of(Satisfies("None, a string or a whole number (not a bool)", lambda v: v is None or _id_part(v)))


def _id_out(value: Any, what: str, *, none: bool = False) -> Any:
    """An id or a kind (`none`: None too) as JSON (module docstring), or a `ValidationError` naming
    it (`what`) if a checkpoint cannot hold it."""
    if type(value) is str or type(value) is int:  # most ids: nothing to convert
        return value
    check(what, value, _KINDS if none else _IDS)
    return _json_id(value)


def _json_id(value: Any) -> Any:
    """A checked id or kind as JSON: a tuple as ``{"tuple": [...]}``, a NumPy integer as an int."""
    if isinstance(value, tuple):
        return {"tuple": [_json_id(v) for v in value]}
    return value if value is None or isinstance(value, str) else int(value)


def _record_out(job_id: Hashable, record: JobRecord, cluster: ClusterTypes | None) -> dict[str, Any]:
    target = record.fair_finish_at_s
    entry = {
        "id": _id_out(job_id, f"job id {job_id!r}"), "gpus": record.gpus,
        "regimes": [[b, s] for b, s in record.regimes], "epochs": record.epochs, "budget": record.budget,
        "stages": [[c, n] for c, n in record.stages], "fair_finish_at_s": None if np.isnan(target) else target,
        "kind": _id_out(record.kind, f"the kind of job {job_id!r}", none=True), "restart_s": record.restart_s,
    }
    if cluster is not None and record.speeds is not None:  # on several GPU types: by type name
        entry["speeds"] = dict(zip(cluster.types, record.speeds.tolist(), strict=True))
    return entry


def _carried_out(state: PolicyState) -> list[dict[str, Any]]:
    """What each job of `PolicyState.carried` carries into the next plan (credit, waited, ran
    last), in its order: the jobs that left since the plan was made too, whose rows the standing
    plan still serves."""
    return [{"id": _id_out(job_id, f"carried job id {job_id!r}"),
             **dict(zip(CARRIED_FIELDS, (float(c), int(w), bool(r)), strict=True))}
            for job_id, c, w, r in zip(state.carried, state.credit.tolist(), state.waited.tolist(),
                                       state.ran_last.tolist(), strict=True)]


def _number(value: float) -> float | None:
    """A float as JSON: null when not finite (NaN: no bound, no target)."""
    return float(value) if math.isfinite(value) else None


def _plan_out(plan: Plan, since: int, config: PolicyConfig) -> dict[str, Any]:
    """The standing plan: its summary, its program's scalars and one row per job (in the order of
    ``carried``) with what serving the rounds left and warm-starting the next re-plan read; the
    rounds before `since` were served and are not stored."""
    program, types = plan.program, config.types
    n = program.base.size
    rounds = plan.relaxed.shape[1] // types

    def left(array: np.ndarray | None) -> list[Any] | None:
        """Each row's columns from `since` on: a list, or on several types a list per type."""
        if array is None:
            return None
        cut = array.reshape(n, types, rounds)[:, :, since:]
        listed: list[Any] = (cut[:, 0] if types == 1 else cut).tolist()
        return listed

    columns = {"relaxed": left(plan.relaxed), "schedule": left(np.asarray(plan.schedule, dtype=bool)),
               "committed": left(plan.committed)}
    rows = [{"gpus": int(g), "base": b, "weight": w, "remaining_s": r,
             **{name: None if values is None else values[i] for name, values in columns.items()}}
            for i, (g, b, w, r) in enumerate(zip(program.gpus.tolist(), program.base.tolist(),
                                                 program.budgets.tolist(), program.remaining_s.tolist(), strict=True))]
    if types > 1:
        assert plan.placement is not None
        pace = program.pace.reshape(n, types, rounds)[:, :, 0].tolist()
        for i, row in enumerate(rows):
            row["placement"], row["pace"] = plan.placement[i, since:].tolist(), pace[i]
    return {
        "since_plan": since, "fairness": plan.fairness, "status": str(plan.status.value), "solver": plan.solver,
        "message": plan.message, "bound": _number(plan.bound), "ftf_bound": _number(plan.ftf_bound),
        "relaxed_objective": _number(plan.relaxed_objective), "rounded_objective": _number(plan.rounded_objective),
        "prices": [_number(p) for p in plan.prices.tolist()],
        "program": {"round_s": float(program.round_s), "capacity": program.capacity.tolist(),
                    "efficiency": float(program.efficiency), "spread": float(program.spread)},
        "rows": rows,
    }


def _trajectory_out(trajectory: Trajectory, what: str) -> dict[str, Any]:
    ranks = np.asarray(trajectory.ranks)
    starts = np.flatnonzero(np.r_[True, ranks[1:] != ranks[:-1]])
    lengths = np.diff(np.r_[starts, ranks.size])
    return {"kind": _id_out(trajectory.group, f"the kind of {what}"), "regimes": trajectory.labels.tolist(),
            "stages": [[int(r), int(n)] for r, n in zip(ranks[starts].tolist(), lengths.tolist(), strict=True)]}
