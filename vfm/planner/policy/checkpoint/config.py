"""A policy's configuration as plain data: what a checkpoint stores of it and how a restore compares it.

`configuration` turns a `vfm.planner.policy.state.PolicyConfig` (on several GPU types, its cluster too) into JSON
data, `fingerprint` hashes it, and `differences` names the fields in which two configurations
differ. A learning forecaster is part of the configuration too: `taught_trajectories` gives what it
learned beyond the configured one, as the trajectories it was taught, the only learned state a
checkpoint holds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from vfm.errors import ValidationError
from vfm.forecast import PopulationForecaster, Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.planner.policy.state import PolicyConfig, PolicyState

__all__ = ["configuration", "differences", "fingerprint", "taught_trajectories", "typed_cluster"]


def typed_cluster(config: PolicyConfig) -> ClusterTypes | None:
    """The cluster of a policy on several GPU types, whose checkpoint holds it and each job's
    speeds per type; None on one type (whose checkpoint holds the capacity only)."""
    return config.cluster if config.types > 1 else None


#: Plan options that decide how fast a plan is found, not which plan (the threads give the same
#: plan bit for bit): not part of the configuration, so a checkpoint restores on a host with
#: other cores, and one written before the option existed restores too.
_SPEED_ONLY = ("threads",)


def configuration(config: PolicyConfig) -> dict[str, Any]:
    """The configuration as plain data: every `PolicyConfig` field (the plan options less those
    that only decide the speed, `_SPEED_ONLY`), the forecaster as its class and plain parameters,
    and on several GPU types the cluster (type -> count), by name, and its types in order
    (``gpu_types``: the order decides ties, the plans' columns and the first-fit fallback, so a
    cluster of the same types in another order is another configuration)."""
    plain: dict[str, Any] = {"policy": "Policy"}
    for spec in dataclasses.fields(config):
        if spec.name != "cluster":
            plain[spec.name] = _plain(getattr(config, spec.name))
    for name in _SPEED_ONLY:
        plain["options"].pop(name, None)
    cluster = typed_cluster(config)
    if cluster is not None:
        plain["cluster"] = {t: int(c) for t, c in zip(cluster.types, cluster.counts.tolist(), strict=True)}
        plain["gpu_types"] = list(cluster.types)
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


def differences(theirs: Mapping[str, Any], ours: Mapping[str, Any], allowed: tuple[str, ...]) -> list[str]:
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


def taught_trajectories(config: PolicyConfig, state: PolicyState) -> list[Trajectory]:
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
