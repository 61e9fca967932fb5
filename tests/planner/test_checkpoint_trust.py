"""What a checkpoint must refuse or keep: GPU types in another order, ids it cannot hold,
duplicate JSON keys, objects that are not JSON data in a parsed checkpoint."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import numpy as np
import pytest

from vfm.cluster import ClusterTypes, GpuProfiles
from vfm.errors import ValidationError
from vfm.planner import Policy
from vfm.planner.policy.checkpoint import MAX_ID_DEPTH

REGIMES: dict[float, float] = {32: 50.0, 64: 30.0}


# A type of one's own: the profiles' order (the clusters' type order) depends on where it was added.
T4_BEFORE_K80 = ClusterTypes({"t4": 2, "k80": 2}, GpuProfiles.shipped().with_type("t4", {}, before="k80"))
T4_LAST = ClusterTypes({"t4": 2, "k80": 2}, GpuProfiles.shipped().with_type("t4", {}))


def _typed(cluster: ClusterTypes) -> Policy:
    """A policy on two types with a job that runs only on t4 and one that runs only on k80."""
    policy = Policy(cluster, rounds=4)
    policy.add_job("t4 only", 1, {"t4": {32: 60.0}}, epochs=30)
    policy.add_job("k80 only", 1, {"k80": {32: 60.0}}, epochs=30)
    policy.add_job("both", 1, {"t4": {32: 60.0}, "k80": {32: 90.0}}, epochs=30)
    for _ in range(2):
        policy.next_round()
    return policy


# --- GPU types in another order ---------------------------------------------------------------------


def test_a_checkpoint_into_a_cluster_with_its_types_in_another_order_is_refused_naming_the_order() -> None:
    assert T4_BEFORE_K80.types == ("t4", "k80") and T4_LAST.types == ("k80", "t4")
    policy = _typed(T4_BEFORE_K80)
    other = Policy(T4_LAST, rounds=4)
    before = other.state
    with pytest.raises(ValidationError, match=r"GPU types.*order.*'t4', 'k80'.*'k80', 't4'"):
        other.restore(policy.checkpoint())
    assert other.state is before
    with pytest.raises(ValidationError, match=r"GPU types.*order.*'t4', 'k80'.*'k80', 't4'"):
        other.restore(policy.state)
    assert other.state is before


def test_speeds_are_stored_by_gpu_type_name() -> None:
    policy = _typed(T4_BEFORE_K80)
    document = json.loads(policy.checkpoint())
    speeds = {row["id"]: row["speeds"] for row in document["jobs"]}
    assert set(speeds["t4 only"]) == {"t4", "k80"}
    assert max(speeds["t4 only"]["k80"]) == 0 and min(speeds["t4 only"]["t4"]) > 0
    assert max(speeds["k80 only"]["t4"]) == 0 and min(speeds["k80 only"]["k80"]) > 0


def test_a_restored_typed_policy_places_each_job_only_on_the_types_that_host_it() -> None:
    for cluster in (T4_BEFORE_K80, T4_LAST):
        _places_on_hosting_types(cluster)


def _places_on_hosting_types(cluster: ClusterTypes) -> None:
    policy = Policy(cluster, rounds=4)
    policy.restore(_typed(cluster).checkpoint())
    for _ in range(6):
        placed = policy.next_round()
        assert placed.get("t4 only", "t4") == "t4" and placed.get("k80 only", "k80") == "k80"  # type: ignore[union-attr]


# --- ids the checkpoint cannot hold -----------------------------------------------------------------


def _nested(depth: int) -> Any:
    job_id: Any = "a"
    for _ in range(depth):
        job_id = (job_id,)
    return job_id


@pytest.mark.parametrize("depth", [MAX_ID_DEPTH + 1, 40, 10_000])
def test_add_job_refuses_an_id_nested_deeper_than_a_checkpoint_holds_naming_job_id(depth: int) -> None:
    policy = Policy(4, rounds=3)
    with pytest.raises(ValidationError, match="job_id"):
        policy.add_job(_nested(depth), gpus=1, regimes=REGIMES, epochs=9)
    assert policy.jobs == []
    with pytest.raises(ValidationError, match="not in the policy"):
        policy.remove_job(_nested(depth))


def test_every_id_add_job_takes_is_one_a_checkpoint_holds() -> None:
    policy = Policy(4, rounds=3)
    deepest = _nested(MAX_ID_DEPTH)
    ids = [deepest, ("x", (1, np.int64(2))), np.int64(5), -3, ""]
    for job_id in ids:
        policy.add_job(job_id, gpus=1, regimes=REGIMES, epochs=9)
    restored = Policy(4, rounds=3)
    restored.restore(policy.checkpoint())
    assert restored.jobs == policy.jobs


@pytest.mark.parametrize("job_id", [True, ("a", False), ("a", 1.5), ("a", None), (b"x",), 2.0])
def test_add_job_refuses_an_id_with_a_part_a_checkpoint_cannot_hold(job_id: Any) -> None:
    policy = Policy(4, rounds=3)
    with pytest.raises(ValidationError, match="job_id"):
        policy.add_job(job_id, gpus=1, regimes=REGIMES, epochs=9)
    assert policy.jobs == []


# --- duplicate keys and objects that are not JSON data ------------------------------------------------


def _checkpoint() -> str:
    policy = Policy(4, rounds=3)
    for k in range(3):
        policy.add_job(k, gpus=1, regimes=REGIMES, epochs=9)
    policy.next_round()
    return policy.checkpoint()


def test_a_repeated_key_at_the_top_of_a_checkpoint_is_refused_naming_it() -> None:
    text = _checkpoint()
    repeated = text[:-1].rstrip() + ',\n "jobs": []\n}'
    assert json.loads(repeated)["jobs"] == []  # plain JSON would take the last one
    policy = Policy(4, rounds=3)
    with pytest.raises(ValidationError, match="'jobs'"):
        policy.restore(repeated)
    assert policy.jobs == []


def test_a_repeated_key_inside_a_job_is_refused_naming_it() -> None:
    text = _checkpoint().replace('"epochs": 9,', '"epochs": 9, "epochs": 8,', 1)
    with pytest.raises(ValidationError, match=r"repeats .*'epochs'"):
        Policy(4, rounds=3).restore(text)


@pytest.mark.parametrize("field", ["round_index", "format", "version", "jobs", "completed", "config_sha256"])
def test_a_numpy_array_in_a_parsed_checkpoint_is_refused_naming_the_field(field: str) -> None:
    document = json.loads(_checkpoint())
    document[field] = np.array([1, 2])
    policy = Policy(4, rounds=3)
    with pytest.raises(ValidationError, match=field):
        policy.restore(document)
    assert policy.jobs == []


def test_a_numpy_value_inside_a_job_of_a_parsed_checkpoint_is_refused_naming_the_job_field() -> None:
    document = json.loads(_checkpoint())
    document["jobs"][1]["budget"] = np.array([1.0])
    with pytest.raises(ValidationError, match=r"jobs\[1\]\.budget"):
        Policy(4, rounds=3).restore(document)


def test_a_typed_plan_that_places_more_gpus_than_a_type_has_is_refused() -> None:
    cluster = ClusterTypes({"v100": 2, "k80": 2})
    policy = Policy(cluster, rounds=4)
    for k in range(4):
        policy.add_job(k, 1, {"v100": {32: 60.0}, "k80": {32: 90.0}}, epochs=30)
    policy.next_round()
    document = json.loads(policy.checkpoint())
    for row in document["plan"]["rows"]:
        row["placement"] = [0] * len(row["placement"])  # every job on the two V100s
    restored = Policy(cluster, rounds=4)
    with pytest.raises(ValidationError, match=r"the GPUs placed in the state's plan must be at most the cluster's of "
                                              r"each type \(v100: 2, k80: 2\)"):
        restored.restore(document)
    assert restored.jobs == []


def test_a_state_with_an_id_nested_too_deep_is_refused_without_a_recursion_error() -> None:
    policy = Policy(4, rounds=3)
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=9)
    state = policy.state
    deep = dict(state.jobs)
    deep[_nested(10_000)] = deep.pop("a")
    with pytest.raises(ValidationError, match=r"each key of jobs of the state must be a job id: .*MAX_ID_DEPTH"):
        Policy(4, rounds=3).restore(dataclasses.replace(state, jobs=deep))
