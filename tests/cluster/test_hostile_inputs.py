"""Hostile inputs at vfm.cluster's boundary: workload files, generator settings, job ids.

Every bad input is one `ValidationError` (one line, naming the file, the job and the field, or
the setting), raised before any work; never a numpy or Python error from deep inside.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.cluster.test_simulator import Fifo
from vfm.cluster import Workload, load_workload, simulate, summarize, workload_from_dict
from vfm.cluster.generate import Uncertainty, WorkloadSpec, generate_workload, resample_workload
from vfm.errors import ValidationError

# A valid file using every optional field: a cluster by type, a throughput set, a job's training
# and told profile, a stated isolated time.
VALID: dict[str, Any] = {
    "name": "hostile", "gpus": 4, "round_s": 120.0, "throughputs": "tacc", "cluster": {"v100": 2, "k80": 2},
    "jobs": [
        {"id": 3, "arrival_s": 0.0, "gpus": 1, "epochs": 3, "isolated_s": 130.0,
         "model": "ResNet-18", "adaptation": "gns", "total_steps": 3000, "samples_per_epoch": 50000,
         "phases": [{"epochs": 2, "batch_size": 16, "epoch_s": 40.0},
                    {"epochs": 1, "batch_size": 32, "epoch_s": 50.0}],
         "profile": [{"batch_size": 16, "epoch_s": 40.0}, {"batch_size": 32, "epoch_s": 50.0},
                     {"batch_size": 64, "epoch_s": 30.0}]},
        {"id": "b", "arrival_s": 30.0, "gpus": 2, "epochs": 2,
         "phases": [{"epochs": 2, "batch_size": 64, "epoch_s": 25.0}]},
    ],
}


def _write(tmp_path: Path, raw: Any, name: str = "hostile.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(raw))
    return path


def _edited(path: Sequence[Any], value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(VALID)
    target = raw
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return raw


def _refused(path: Path, *parts: str) -> str:
    """The message of loading `path`: one line, starting with the file, holding every part."""
    with pytest.raises(ValidationError) as caught:
        load_workload(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path)), message
    assert all(part in message for part in parts), message
    return message


def test_the_valid_file_loads(tmp_path) -> None:
    workload = load_workload(_write(tmp_path, VALID))
    assert [job.id for job in workload.jobs] == [3, "b"] and workload.jobs[0].isolated_s == 130.0


# ---------------------------------------------------------------------------------------------
# Workload files: what escaped the loader as another exception, or loaded when it should not
# ---------------------------------------------------------------------------------------------


def test_a_json_integer_too_large_for_a_float_is_one_validation_error(tmp_path) -> None:
    # Was: OverflowError (int too large to convert to float) from math.isfinite.
    path = _write(tmp_path, _edited(["jobs", 1, "gpus"], 10**400))
    _refused(path, "job 1 (id 'b')", "gpus", "too large for a float")


def test_an_integer_past_pythons_digit_limit_is_one_validation_error(tmp_path) -> None:
    # Was: ValueError (exceeds the 4300-digit limit for integer string conversion) from json.
    path = tmp_path / "digits.json"
    path.write_text(json.dumps(VALID).replace('"gpus": 2', '"gpus": ' + "9" * 5000))
    _refused(path, "a number Python cannot read")


def test_deeply_nested_json_is_one_validation_error(tmp_path) -> None:
    # Was: RecursionError from the JSON parser.
    path = tmp_path / "deep.json"
    path.write_text(json.dumps(VALID).replace('"name": "hostile"', '"name": ' + "[" * 100_000 + "]" * 100_000))
    _refused(path, "nests JSON arrays or objects too deeply")


def test_a_file_that_is_not_utf8_is_one_validation_error(tmp_path) -> None:
    # Was: UnicodeDecodeError.
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps(VALID, ensure_ascii=False).replace("hostile", "h\u00f4stile").encode("latin-1"))
    _refused(path, "is not UTF-8 text", "byte 0xf4")


def test_an_epoch_of_1e308_seconds_is_refused_with_the_bound(tmp_path) -> None:
    # Was: loaded, with the job's isolated time inf.
    path = _write(tmp_path, _edited(["jobs", 1, "phases", 0, "epoch_s"], 1e308))
    _refused(path, "job 1 (id 'b'): phase 0: epoch_s (1e+308) is more than the 1e+12 s a job may run")


def test_epochs_whose_sum_passes_the_bound_are_refused(tmp_path) -> None:
    # Each epoch is within the bound, their sum is not.
    raw = _edited(["jobs", 1, "phases", 0, "epoch_s"], 6e11)
    path = _write(tmp_path, raw)
    _refused(path, "job 1 (id 'b'): its epochs take 1.2e+12 s in all", "MAX_JOB_SECONDS")


def test_a_told_profile_slower_than_the_bound_is_refused(tmp_path) -> None:
    # What a policy plans with (epochs x the slowest told epoch) is bounded too, so that a policy
    # that refuses such a job (vfm.planner) never meets one mid-run.
    raw = _edited(["jobs", 0, "profile", 2, "epoch_s"], 5e11)
    _refused(_write(tmp_path, raw), "job 0 (id 3): epochs (3) times its profile's slowest epoch_s (5e+11)")


@pytest.mark.parametrize(("path", "value", "parts"), [
    (["gpus"], 10**7, ("workload: gpus must be a whole number in [1, 1e+06] (MAX_GPUS)",)),
    (["round_s"], 1e13, ("workload: round_s must be a number of seconds in (0, 1e+12]",)),
    (["cluster", "v100"], 10**30, ("workload: cluster['v100']", "at most 1e+06 (MAX_GPUS")),
    (["jobs", 0, "total_steps"], 2**60, ("job 0 (id 3): total_steps must be a whole number in", "(2**53)")),
    (["jobs", 1, "phases", 0, "batch_size"], 1e300, ("job 1 (id 'b'): phase 0: batch_size (1e+300) is more than",)),
])
def test_stated_bounds_name_the_field(tmp_path, path, value, parts) -> None:
    # Was: loaded (or an OverflowError building the cluster's int64 counts).
    _refused(_write(tmp_path, _edited(path, value)), *parts)


@pytest.mark.parametrize(("path", "typo", "parts"), [
    ([], "round_sec", ("workload: unknown field 'round_sec'; did you mean 'round_s'?",)),
    (["jobs", 1], "isolated_sec", ("job 1 (id 'b'): unknown field 'isolated_sec'; did you mean 'isolated_s'?",)),
    (["jobs", 0], "profiles", ("job 0 (id 3): unknown field 'profiles'; did you mean 'profile'?",)),
    (["jobs", 1, "phases", 0], "epoch_sec", ("job 1 (id 'b'), phase 0: unknown field 'epoch_sec'; did you mean "
                                             "'epoch_s'?",)),
    (["jobs", 0, "profile", 1], "batchsize", ("job 0 (id 3), profile entry 1: unknown field 'batchsize'; did you "
                                              "mean 'batch_size'?",)),
    (["jobs", 1], "zzz", ("job 1 (id 'b'): unknown field 'zzz'; the fields are id, arrival_s",)),
])
def test_a_misspelled_field_is_refused_naming_the_closest(tmp_path, path, typo, parts) -> None:
    # Was: silently ignored (a misspelled optional field is a field the file's author believes set).
    raw = copy.deepcopy(VALID)
    target = raw
    for key in path:
        target = target[key]
    target[typo] = 1
    _refused(_write(tmp_path, raw), *parts)


def test_the_shipped_files_descriptive_fields_are_known() -> None:
    # They carry source, dataset, job_type, static_duration_s, mem_mib and util_pct, which
    # nothing reads: still a valid file.
    assert load_workload("shockwave_120jobs_32gpus").n_jobs == 120


def test_messages_stay_one_short_line_whatever_the_value(tmp_path) -> None:
    nested: Any = 0
    for _ in range(500):
        nested = [nested]
    for value in (nested, "x" * 100_000, {"a": "\n" * 10}):
        message = _refused(_write(tmp_path, _edited(["jobs", 1, "arrival_s"], value)), "arrival_s")
        assert len(message) < 400


# Mutations: a field deleted, replaced by a hostile value, or its key misspelled.
_HOSTILE = [10**400, 2**63, -(2**63), float("nan"), float("inf"), float("-inf"), -1, -1e308, 1e308, 0, 0.5, True,
            None, "", "12", [], [[[[1]]]], {}, {"epochs": 1}]


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside `value` (dict keys, list indices), shortest first."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found.append((*prefix, key))
        found.extend(_paths(inner, (*prefix, key)))
    return found


_PATHS = _paths(VALID)


def _reachable(parent: Any, key: Any) -> bool:
    """Whether `parent[key]` exists (an earlier mutation may have replaced a parent by a scalar)."""
    return (isinstance(parent, dict) and key in parent) or (isinstance(parent, list) and isinstance(key, int)
                                                             and key < len(parent))


def _mutate(raw: Any, path: tuple[Any, ...], how: str, value: Any) -> None:
    parent = raw
    for key in path[:-1]:
        if not _reachable(parent, key):
            return
        parent = parent[key]
    key = path[-1]
    if not _reachable(parent, key):
        return
    if how == "delete":
        del parent[key]
    elif how == "misspell" and isinstance(key, str):
        parent[key[:-1] + "x" if len(key) > 1 else key + "x"] = parent.pop(key)
    else:
        parent[key] = value


_MUTATION = st.tuples(st.sampled_from(_PATHS), st.sampled_from(["delete", "replace", "replace", "misspell"]),
                      st.sampled_from(_HOSTILE))


@given(st.lists(_MUTATION, min_size=1, max_size=3))
def test_a_mutated_file_loads_valid_or_is_one_validation_error_naming_the_file(mutations) -> None:
    import tempfile

    raw = copy.deepcopy(VALID)
    for path, how, value in mutations:
        try:
            _mutate(raw, path, how, copy.deepcopy(value))
        except (KeyError, IndexError, TypeError):
            pass  # an earlier mutation removed or replaced what this path leads through
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mutated.json"
        path.write_text(json.dumps(raw))  # NaN and Infinity as JSON's common extension writes them
        try:
            workload = load_workload(path)
        except ValidationError as error:
            message = str(error)
            assert message.startswith(str(path)) and "\n" not in message, message
            return
    _check_valid(workload)


def _check_valid(workload: Workload) -> None:
    """What a loaded workload guarantees: finite, bounded times, whole positive counts."""
    assert 1 <= workload.gpus <= 10**6 and 0 < workload.round_s <= 1e12
    for job in workload.jobs:
        assert isinstance(job.id, int | str) and not isinstance(job.id, bool)
        assert 1 <= job.gpus <= workload.gpus and job.epochs == job.epoch_s.size >= 1
        assert math.isfinite(job.arrival_s) and job.arrival_s >= 0
        assert 0 < job.isolated_s <= 1e12 and np.all(job.epoch_s > 0)
        assert job.epochs * max(seconds for _, seconds in job.profile) <= 1e12
    arrays = workload.arrays()
    assert np.isfinite(arrays.isolated_s).all()


# ---------------------------------------------------------------------------------------------
# Generator settings
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("fields", "message"), [
    ({"duration_s": (1.0, 1e13)}, r"duration_s must be a \(low, high\) pair with low <= high, "
                                  r"each a number of seconds in \(0, 1e\+12\]"),
    ({"interarrival_s": 10**400}, r"interarrival_s must be a number of seconds in \[0, 1e\+12\], got 1000"),
    ({"interarrival_s": 1e13}, r"interarrival_s must be a number of seconds in \[0, 1e\+12\]"),
    ({"round_s": 1e13}, r"round_s must be a number of seconds in \(0, 1e\+12\]"),
    ({"jobs": 10**8}, r"jobs must be a positive whole number, at most 1e\+07 \(MAX_WORKLOAD_EPOCHS: a job has an "
                      r"epoch at least\), got 100000000"),
    ({"gpus": 10**7}, r"gpus must be a positive whole number, at most 1e\+06 \(MAX_GPUS\), got 10000000"),
    ({"round_s": 10**400}, r"round_s must be a number of seconds in \(0, 1e\+12\], got 1000"),
    ({"duration_s": (1.0, 10**400)}, r"duration_s must be a \(low, high\) pair with low <= high, "
                                  r"each a number of seconds in \(0, 1e\+12\]"),
    ({"gang_mix": {1: 10**400}}, r"gang_mix's weight for 1 must be a finite number >= 0, got 1000"),
    ({"gang_mix": ((1, 0.5), (1, 0.5))}, r"gang_mix lists a value twice: 1"),
])
def test_bad_generator_settings_name_the_setting(fields, message) -> None:
    with pytest.raises(ValidationError, match=message):
        WorkloadSpec(**{"jobs": 4, "gpus": 8, **fields})


@pytest.mark.parametrize(("fields", "message"), [
    ({"change_jitter": 1e6}, r"change_jitter must be a number in \[0, 10\]"),
    ({"epoch_noise": 1e200}, r"epoch_noise must be a number in \[0, 100\]"),
])
def test_uncertainty_past_its_bound_is_refused(fields, message) -> None:
    # Was: accepted; exp() overflowed to inf epochs, refused by the loader after all the work.
    with pytest.raises(ValidationError, match=message):
        Uncertainty(**fields)


def test_weights_that_sum_past_a_float_are_normalized() -> None:
    # Was: numpy's "probabilities do not sum to 1" (1e308 + 1e308 is inf, so every weight was 0).
    spec = WorkloadSpec(jobs=8, gpus=8, adaptation_mix={"gns": 1e308, "accordion": 1e308},
                        gang_mix={1: 1e308, 2: 1e308})
    assert spec.adaptation_weights == (("gns", 0.5), ("accordion", 0.5))
    assert spec.gang_weights == ((1, 0.5), (2, 0.5))
    assert generate_workload(spec, seed=0).n_jobs == 8
    assert WorkloadSpec(jobs=8, gpus=8, gang_mix={1: 5e-324, 2: 5e-324}).gang_weights == ((1, 0.5), (2, 0.5))


def test_too_many_epochs_fail_before_any_epoch_is_expanded() -> None:
    # Was: 46 s and 1.8 GB of expanding 7.9e7 epochs before the loader's epoch limit refused them.
    with pytest.raises(ValidationError, match=r"^jobs = 100000 with duration_s = \(720, 18000\) draws 7.87\d*e\+07 "
                                              r"epochs in all \(787.\d* per job\), more than the 1e\+07"):
        generate_workload(WorkloadSpec(jobs=10**5, gpus=256), seed=0)


def test_resampling_too_many_epochs_fails_before_copying_them() -> None:
    # Was: every epoch copied and written out, then the loader's epoch limit.
    with pytest.raises(ValidationError, match=r"^jobs = 100000 drawn from 'shockwave_120jobs_32gpus' have 6.72\d*e\+07 "
                                              r"epochs in all, more than the 1e\+07"):
        resample_workload("shockwave_120jobs_32gpus", WorkloadSpec(jobs=10**5, gpus=64), seed=0)


def test_a_trillion_second_run_time_fails_before_any_memory_is_taken() -> None:
    # Was: a MemoryError (or the process killed) expanding some 1e9 epochs of one job.
    with pytest.raises(ValidationError, match=r"^jobs = 3 with duration_s = \(1e\+11, 1e\+12\) draws"):
        generate_workload(WorkloadSpec(jobs=3, gpus=4, duration_s=(1e11, 1e12)), seed=0)


def test_arrivals_past_the_round_limit_fail_before_the_jobs_are_built() -> None:
    with pytest.raises(ValidationError, match=r"^interarrival_s = 1e\+12 over 3 jobs puts the last arrival"):
        generate_workload(WorkloadSpec(jobs=3, gpus=4, interarrival_s=1e12, round_s=1e-6), seed=0)


def test_a_name_that_is_not_a_string_is_refused_first() -> None:
    with pytest.raises(ValidationError, match="name must be a string or None, got int 5"):
        generate_workload(WorkloadSpec(jobs=3, gpus=4), seed=0, name=5)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Job ids in the simulator
# ---------------------------------------------------------------------------------------------


class _Fifo(Fifo):
    """`Fifo` that counts the jobs it was given."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.calls = 0

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        self.calls += 1
        super().add_job(job_id, gpus, regimes, epochs, kind=kind)


def _with_ids(ids: Sequence[Any]) -> Workload:
    jobs = [{"id": k, "arrival_s": 0.0, "gpus": 1, "epochs": 2, "phases": [{"epochs": 2, "batch_size": 16,
                                                                            "epoch_s": 40.0}]} for k in range(len(ids))]
    workload = workload_from_dict({"name": "ids", "gpus": 2, "round_s": 120.0, "jobs": jobs})
    return replace(workload, jobs=tuple(replace(job, id=i) for job, i in zip(workload.jobs, ids, strict=True)))


def test_ids_past_int64_are_kept_as_python_ints(tmp_path) -> None:
    # Was: the whole run, then OverflowError putting the ids into an int64 array.
    path = _write(tmp_path, {"gpus": 2, "round_s": 120.0, "jobs": [
        {"id": 2**63, "arrival_s": 0.0, "gpus": 1, "epochs": 1, "phases": [{"epochs": 1, "batch_size": 8,
                                                                             "epoch_s": 50.0}]},
        {"id": -(2**63) - 1, "arrival_s": 0.0, "gpus": 1, "epochs": 1, "phases": [{"epochs": 1, "batch_size": 8,
                                                                                    "epoch_s": 50.0}]}]})
    simulation = simulate(load_workload(path), _Fifo(2))
    assert simulation.job_id.dtype == object and simulation.job_id.tolist() == [2**63, -(2**63) - 1]
    assert [job["id"] for job in summarize(simulation)["jobs"]] == [2**63, -(2**63) - 1]
    assert simulate(_with_ids([2**63 - 1, 0]), _Fifo(2)).job_id.dtype == np.int64  # int64 where they fit


def test_tuple_ids_are_one_entry_each() -> None:
    # Was: numpy read the tuples as rows: job_id of shape (2, 2).
    simulation = simulate(_with_ids([("a", 1), ("b", 2)]), _Fifo(2))
    assert simulation.job_id.shape == (2,) and simulation.job_id.tolist() == [("a", 1), ("b", 2)]
    assert [job["id"] for job in summarize(simulation)["jobs"]] == [("a", 1), ("b", 2)]


@pytest.mark.parametrize("bad", [1.5, True, float("nan"), frozenset({1}), ("a", 2.5)])
def test_ids_a_policy_cannot_key_are_refused_before_the_first_round(bad) -> None:
    # Was: run with whatever the policy made of them (a float, a bool: the same key as an int).
    policy = _Fifo(2)
    with pytest.raises(ValidationError, match=r"^workload job 1: job_id must be a string, a whole number"):
        simulate(_with_ids(["ok", bad]), policy)
    assert policy.calls == 0
