"""vfm.cluster.workload: a job's told profile (the optional ``profile`` field), its checks, and the
writer (`workload_to_dict`) that reads back to the same workload."""

from __future__ import annotations

import copy
import json
from types import MappingProxyType
from typing import Any

import numpy as np
import pytest

from vfm.cluster import Job, load_workload, workload_from_dict, workload_to_dict
from vfm.cluster.workload import shipped_workloads
from vfm.errors import ValidationError

# Job 1 truly runs batch size 64 at two speeds (noise) and is told 64 and 128 (a size it never reaches).
TOLD: dict[str, Any] = {
    "name": "told", "gpus": 4, "round_s": 120,
    "jobs": [
        {"id": 3, "arrival_s": 0.0, "gpus": 1, "epochs": 3,
         "phases": [{"epochs": 2, "batch_size": 16, "epoch_s": 40.0},
                    {"epochs": 1, "batch_size": 32, "epoch_s": 50.0}]},
        {"id": 7, "arrival_s": 30.0, "gpus": 2, "epochs": 3,
         "phases": [{"epochs": 1, "batch_size": 64, "epoch_s": 24.0},
                    {"epochs": 2, "batch_size": 64, "epoch_s": 27.0}],
         "profile": [{"batch_size": 128, "epoch_s": 15.0}, {"batch_size": 64, "epoch_s": 25.0}]},
    ],
}
JOB = r"job 1 \(id 7\)"


def _with_profile(profile: Any) -> dict[str, Any]:
    raw = copy.deepcopy(TOLD)
    raw["jobs"][1]["profile"] = profile
    return raw


def test_a_given_profile_is_what_the_policy_is_told_and_the_phases_what_runs() -> None:
    workload = workload_from_dict(TOLD)
    plain, told = workload.jobs
    assert told.profile == ((64.0, 25.0), (128.0, 15.0))  # sorted by batch size
    assert told.regimes == {64.0: 25.0, 128.0: 15.0}
    assert told.epoch_s.tolist() == [24.0, 27.0, 27.0] and told.isolated_s == 78.0
    # Without a profile, it is read off the phases, as before the field existed.
    assert plain.profile == ((16.0, 40.0), (32.0, 50.0)) and plain.regimes == {16.0: 40.0, 32.0: 50.0}
    with pytest.raises(AttributeError):
        told.profile = ()  # type: ignore[misc]


def test_shipped_workloads_are_told_what_their_phases_imply() -> None:
    for name in shipped_workloads():
        for job in load_workload(name).jobs:
            old = dict(zip(job.batch_size.tolist(), job.epoch_s.tolist(), strict=True))
            assert job.regimes == old, (name, job.id)
            assert list(job.regimes) == list(old), (name, job.id)  # the same order, too


def test_a_job_built_without_a_profile_derives_it() -> None:
    batch, seconds = np.array([32.0, 16.0, 32.0]), np.array([5.0, 9.0, 5.0])
    job = Job(id="x", arrival_s=0.0, gpus=1, epochs=3, isolated_s=19.0, batch_size=batch, epoch_s=seconds)
    assert job.profile == ((16.0, 9.0), (32.0, 5.0))


@pytest.mark.parametrize(("profile", "message"), [
    ({"64": 25.0}, rf"{JOB}: 'profile' must be a non-empty list of {{batch_size, epoch_s}} objects, got dict"),
    ([], rf"{JOB}: 'profile' must be a non-empty list of .* got list \[\]"),
    ([64], rf"{JOB}, profile entry 0 must be a JSON object, got int"),
    ([{"batch_size": 64}], rf"{JOB}, profile entry 0: missing field 'epoch_s'"),
    ([{"epoch_s": 25.0}], rf"{JOB}, profile entry 0: missing field 'batch_size'"),
    ([{"batch_size": 64, "epoch_s": "slow"}], rf"{JOB}, profile entry 0: epoch_s must be a finite number, got 'slow'"),
    ([{"batch_size": 64, "epoch_s": float("nan")}], rf"{JOB}, profile entry 0: epoch_s must be a finite number"),
    ([{"batch_size": 64, "epoch_s": True}], rf"{JOB}, profile entry 0: epoch_s must be a finite number, got True"),
    ([{"batch_size": 64, "epoch_s": 25.0}, {"batch_size": 0, "epoch_s": 1.0}],
     rf"{JOB}: profile entry 1: batch_size must be > 0, got 0"),
    ([{"batch_size": 64, "epoch_s": 25.0}, {"batch_size": 128, "epoch_s": -1.0}],
     rf"{JOB}: profile entry 1: epoch_s must be > 0, got -1"),
    ([{"batch_size": 64, "epoch_s": 25.0}, {"batch_size": 64, "epoch_s": 26.0}],
     rf"{JOB}: profile entry 1: batch_size 64 repeats profile entry 0"),
    ([{"batch_size": 128, "epoch_s": 15.0}],
     rf"{JOB}: phase 0 runs batch_size 64, which the profile does not list; add it to 'profile'"),
])
def test_a_malformed_profile_names_the_job_and_field(profile: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        workload_from_dict(json.loads(json.dumps(_with_profile(profile))))


def test_without_a_profile_one_batch_size_still_has_one_duration() -> None:
    raw = copy.deepcopy(TOLD)
    raw["jobs"][0]["phases"][1] = {"epochs": 1, "batch_size": 16, "epoch_s": 41.0}
    with pytest.raises(ValidationError, match=r"job 0 \(id 3\): phase 1: batch_size 16 has epoch_s 41 but another "
                                              r"phase gives it 40"):
        workload_from_dict(raw)
    del raw["jobs"][1]["profile"]  # job 7's two durations of 64 are malformed without it, too
    raw["jobs"][0]["phases"][1]["epoch_s"] = 40.0
    with pytest.raises(ValidationError, match=rf"{JOB}: phase 1: batch_size 64 has epoch_s 27"):
        workload_from_dict(raw)


def test_records_that_are_mappings_but_not_dicts_read_the_same() -> None:
    raw = copy.deepcopy(TOLD)
    job = raw["jobs"][1]
    job["phases"] = [MappingProxyType(phase) for phase in job["phases"]]
    job["profile"] = [MappingProxyType(entry) for entry in job["profile"]]
    slow, fast = workload_from_dict(raw).jobs[1], workload_from_dict(TOLD).jobs[1]
    assert slow.profile == fast.profile and slow.epoch_s.tolist() == fast.epoch_s.tolist()


def test_the_writer_reads_back_to_the_same_workload() -> None:
    for workload in (workload_from_dict(TOLD), load_workload("shockwave_120jobs_32gpus")):
        raw = json.loads(json.dumps(workload_to_dict(workload)))
        back = workload_from_dict(raw)
        assert (back.name, back.gpus, back.round_s, back.throughputs) == (
            workload.name, workload.gpus, workload.round_s, workload.throughputs)
        for a, b in zip(workload.jobs, back.jobs, strict=True):
            assert (a.id, a.arrival_s, a.gpus, a.epochs, a.isolated_s, a.training, a.profile) == (
                b.id, b.arrival_s, b.gpus, b.epochs, b.isolated_s, b.training, b.profile)
            assert np.array_equal(a.batch_size, b.batch_size) and np.array_equal(a.epoch_s, b.epoch_s)
        # A profile is written only where it says more than the phases.
        assert [("profile" in job) for job in raw["jobs"]] == [
            job.profile != tuple(sorted(dict(zip(job.batch_size.tolist(), job.epoch_s.tolist(), strict=True)).items()))
            for job in workload.jobs]
    assert [("profile" in job) for job in workload_to_dict(workload_from_dict(TOLD))["jobs"]] == [False, True]


def test_a_workload_with_absurdly_many_epochs_is_rejected_at_load_stating_the_limit() -> None:
    # Was: a MemoryError expanding 1e12 epochs to per-epoch arrays.
    from vfm.limits import MAX_WORKLOAD_EPOCHS

    raw = {"gpus": 1, "round_s": 120.0, "jobs": [
        {"id": "big", "arrival_s": 0.0, "gpus": 1, "epochs": 10**12,
         "phases": [{"epochs": 10**12, "batch_size": 32, "epoch_s": 1.0}]}]}
    with pytest.raises(ValidationError, match=r"^workload: its jobs have 1e\+12 epochs in all, more than the 1e\+07 a "
                                              r"workload may have \(the largest, job 0 \(id 'big'\), has 1e\+12\)"):
        workload_from_dict(raw)
    raw["jobs"][0]["epochs"] = raw["jobs"][0]["phases"][0]["epochs"] = MAX_WORKLOAD_EPOCHS
    assert workload_from_dict(raw).jobs[0].epochs == MAX_WORKLOAD_EPOCHS  # the limit itself loads


def test_a_path_that_is_not_a_string_is_rejected():
    with pytest.raises(ValidationError, match=r"path_or_name must be a path \(str or Path\) .* got int 3"):
        load_workload(3)  # type: ignore[arg-type]


# --- annotations: the user's own data, kept and written back ----------------------------------------


def _annotated() -> dict[str, Any]:
    raw = copy.deepcopy(TOLD)
    raw["annotations"] = {"source": "cluster A, March", "scaled": [1.5, {"by": "arrivals"}]}
    raw["jobs"][1]["annotations"] = {"trace_duration_s": 5400.0, "team": "vision", "tags": ["gns"]}
    return raw


def test_annotations_are_kept_read_only_and_apart_from_the_file() -> None:
    raw = _annotated()
    workload = workload_from_dict(raw)
    assert dict(workload.annotations) == raw["annotations"]
    assert dict(workload.jobs[1].annotations) == raw["jobs"][1]["annotations"]
    assert dict(workload.jobs[0].annotations) == {}  # a job without any
    assert dict(workload.head(1).annotations) == raw["annotations"]
    with pytest.raises(TypeError):
        workload.jobs[1].annotations["team"] = "nlp"  # type: ignore[index]
    raw["jobs"][1]["annotations"]["tags"].append("changed later")  # a copy was kept
    assert workload.jobs[1].annotations["tags"] == ["gns"]
    # Nothing reads them: the workload is the same one without them.
    plain = workload_from_dict(TOLD)
    assert [job.profile for job in workload.jobs] == [job.profile for job in plain.jobs]
    assert workload.arrays().phase_epoch_s.tolist() == plain.arrays().phase_epoch_s.tolist()


def test_annotations_are_written_back_and_read_again() -> None:
    workload = workload_from_dict(_annotated())
    raw = json.loads(json.dumps(workload_to_dict(workload)))
    assert raw["annotations"] == _annotated()["annotations"]
    assert [job.get("annotations") for job in raw["jobs"]] == [None, _annotated()["jobs"][1]["annotations"]]
    back = workload_from_dict(raw)
    assert dict(back.annotations) == dict(workload.annotations)
    assert [dict(job.annotations) for job in back.jobs] == [dict(job.annotations) for job in workload.jobs]
    assert "annotations" not in workload_to_dict(workload_from_dict(TOLD))  # none: none written


def test_a_workload_and_its_jobs_pickle_with_their_annotations() -> None:
    import pickle

    workload = pickle.loads(pickle.dumps(workload_from_dict(_annotated())))
    assert workload.annotations["source"] == "cluster A, March"
    assert workload.jobs[1].annotations["team"] == "vision"


def test_a_job_or_workload_built_in_memory_takes_annotations() -> None:
    job = Job(id="a", arrival_s=0.0, gpus=1, epochs=1, isolated_s=60.0, batch_size=np.array([32.0]),
              epoch_s=np.array([60.0]), annotations={"trace_duration_s": 75.5})
    assert job.annotations == {"trace_duration_s": 75.5}
    with pytest.raises(ValidationError, match=r"^job 'a': each key of annotations must be a string \(annotations "
                                              r"are a JSON object\), got int 1$"):
        Job(id="a", arrival_s=0.0, gpus=1, epochs=1, isolated_s=60.0, batch_size=np.array([32.0]),
            epoch_s=np.array([60.0]), annotations={1: "x"})


@pytest.mark.parametrize(("where", "value", "message"), [
    ("workload", ["a note"], r"^workload: annotations must be a JSON object \(keys are strings\), got list$"),
    ("job", "a note", r"^job 1 \(id 7\): annotations must be a JSON object \(keys are strings\), got str$"),
    ("job", None, r"^job 1 \(id 7\): annotations must be a JSON object \(keys are strings\), got NoneType$"),
])
def test_annotations_that_are_not_an_object_are_refused_naming_where(where: str, value: Any, message: str) -> None:
    raw = copy.deepcopy(TOLD)
    (raw if where == "workload" else raw["jobs"][1])["annotations"] = value
    with pytest.raises(ValidationError, match=message):
        workload_from_dict(raw)


@pytest.mark.parametrize(("field", "message"), [
    ("trace_duration_s", r"^job 1 \(id 7\): unknown field 'trace_duration_s'; did you mean 'static_duration_s'\? "
                         r"\(data of your own goes in 'annotations', a JSON object\)$"),
    ("annotation", r"^job 1 \(id 7\): unknown field 'annotation'; did you mean 'annotations'\?$"),
])
def test_an_unknown_field_beside_the_annotations_is_still_refused(field: str, message: str) -> None:
    raw = _annotated()
    raw["jobs"][1][field] = 5400.0
    with pytest.raises(ValidationError, match=message):
        workload_from_dict(raw)


# --- restart_s: a job's own restart cost -------------------------------------------------------------


def test_a_jobs_restart_cost_is_read_kept_and_written_back() -> None:
    raw = copy.deepcopy(TOLD)
    raw["jobs"][1]["restart_s"] = 45
    workload = workload_from_dict(raw)
    assert [job.restart_s for job in workload.jobs] == [None, 45.0]  # absent: None (the simulator's)
    assert isinstance(workload.jobs[1].restart_s, float)
    written = workload_to_dict(workload)
    assert [job.get("restart_s") for job in written["jobs"]] == [None, 45.0]
    assert "restart_s" not in written["jobs"][0]
    back = workload_from_dict(json.loads(json.dumps(written)))
    assert [job.restart_s for job in back.jobs] == [None, 45.0]
    assert [job.restart_s for job in workload.head(1).jobs] == [None]


@pytest.mark.parametrize(("value", "message"), [
    (-1.0, r"^job 1 \(id 7\): restart_s must be a number of seconds in \[0, 1e\+12\] \(MAX_JOB_SECONDS\), got -1"),
    (1e13, r"^job 1 \(id 7\): restart_s must be a number of seconds in \[0, 1e\+12\] .* got 10000000000000.0$"),
    ("20", r"^job 1 \(id 7\): restart_s must be a finite number, got '20'$"),
    (None, r"^job 1 \(id 7\): restart_s must be a finite number, got None$"),
    (True, r"^job 1 \(id 7\): restart_s must be a finite number, got True$"),
    (float("inf"), r"^job 1 \(id 7\): restart_s must be a finite number, got inf$"),
])
def test_a_bad_restart_cost_is_refused_naming_the_job_and_field(value: Any, message: str) -> None:
    raw = copy.deepcopy(TOLD)
    raw["jobs"][1]["restart_s"] = value
    with pytest.raises(ValidationError, match=message):
        workload_from_dict(raw)


def test_a_job_built_in_memory_checks_its_restart_cost() -> None:
    arrays = {"batch_size": np.array([32.0]), "epoch_s": np.array([60.0])}
    assert Job(id="a", arrival_s=0.0, gpus=1, epochs=1, isolated_s=60.0, restart_s=30, **arrays).restart_s == 30.0
    with pytest.raises(ValidationError, match=r"^job 'a': restart_s must be a number of seconds in \[0, 1e\+12\]"):
        Job(id="a", arrival_s=0.0, gpus=1, epochs=1, isolated_s=60.0, restart_s=-5.0, **arrays)
