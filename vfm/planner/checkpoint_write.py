"""Writing a policy checkpoint: the policy's configuration and state as versioned JSON text.

`dumps` writes what `vfm.planner.checkpoint` describes, field by field in the layout of
`vfm.planner.checkpoint_layout`, and refuses, naming it, what the format cannot hold.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from typing import Any

import numpy as np

from vfm.errors import ValidationError
from vfm.forecast import Trajectory
from vfm.planner.checkpoint_config import configuration, fingerprint, taught_trajectories
from vfm.planner.checkpoint_layout import CARRIED_FIELDS, FORMAT, MAX_ID_DEPTH, VERSION
from vfm.planner.state import JobRecord, PolicyConfig, PolicyState

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
    carried = _carried_out(state)
    jobs = []
    for job_id, record in state.jobs.items():
        entry = _record_out(job_id, record, carried.get(job_id))
        if record.speeds is not None:  # on several GPU types
            entry["speeds"] = [[float(s) for s in row] for row in record.speeds.tolist()]
        jobs.append(entry)
    document = {
        "format": FORMAT, "version": VERSION, "policy": plain["policy"], "config_sha256": fingerprint(plain),
        "config": plain, "round_index": int(state.round_index), "replans": int(state.replans), "jobs": jobs,
        "completed": [_id_out(job_id, f"the id of completed job {job_id!r}") for job_id in state.completed],
        "taught": [_trajectory_out(t, "a taught trajectory") for t in taught_trajectories(config, state)],
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
        "carried": None if carried is None else dict(zip(CARRIED_FIELDS, carried, strict=True)),
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
