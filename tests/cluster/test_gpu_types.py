"""vfm.cluster.gpu_types: a cluster's GPUs by type, and each job's epoch times per type by the
throughput ratio of the shipped profiles (issue 16, the data model)."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from vfm.cluster import ClusterTypes, Workload, load_workload, workload_from_dict, workload_to_dict
from vfm.cluster.gpu_types import (
    GPU_TYPES,
    THROUGHPUTS_FILE,
    epoch_seconds_by_type,
    fastest_isolated_s,
    isolated_s_by_type,
    job_types,
    throughput_sets,
    throughput_table,
)
from vfm.cluster.workload import Job, Training, shipped_workloads
from vfm.errors import ValidationError

# From gpu_types_throughputs.json, set "tacc" (steps/s of the whole gang):
#   "LM (batch size 10)|1":            v100 94.91094148, p100 82.52274523355302, k80 24.737547489916363
#   "ResNet-50 (batch size 128)|1":    v100 1.59789193,  p100 1.6277178277793367, k80 null
#   "Transformer (batch size 256)|1":  v100 null,        p100 1.7021549759616317, k80 0.4932247600901891


def _job(model: str | None, batch: list[float], epoch_s: list[float], gpus: int = 1, job_id: Any = "j") -> Job:
    training = None if model is None else Training(model=model, adaptation="static", total_steps=1,
                                                     samples_per_epoch=1)
    return Job(id=job_id, arrival_s=0.0, gpus=gpus, epochs=len(batch), isolated_s=float(sum(epoch_s)),
               batch_size=np.array(batch, dtype=float), epoch_s=np.array(epoch_s, dtype=float), training=training)


def test_the_types_are_the_files() -> None:
    with open(THROUGHPUTS_FILE) as handle:
        raw = json.load(handle)
    assert set(GPU_TYPES) == set(raw["types"]) and GPU_TYPES[0] == "v100"
    assert throughput_sets() == ("tacc", "wisr")
    assert throughput_table("tacc", "p100")["LM (batch size 10)|1"] == 82.52274523355302
    assert "ResNet-50 (batch size 128)|1" not in throughput_table("tacc", "k80")  # null: left out


def test_an_epoch_on_another_type_takes_the_v100_time_times_the_throughput_ratio() -> None:
    job = _job("LM", [10, 10], [60.0, 61.0])
    seconds = epoch_seconds_by_type(job, "tacc", ("v100", "p100", "k80"))
    # By hand: 60 * 94.91094148 / 82.52274523355302 = 69.007114...; / 24.737547489916363 = 230.202953...
    assert seconds[1, 0] == pytest.approx(69.007114, rel=1e-7)
    assert seconds[2, 0] == pytest.approx(230.202953, rel=1e-7)
    assert seconds[1, 1] == pytest.approx(61.0 * 94.91094148 / 82.52274523355302, rel=1e-15)
    assert seconds[0].tolist() == [60.0, 61.0]
    # Rows follow the order asked for.
    assert epoch_seconds_by_type(job, "tacc", ["k80", "v100"]).tolist() == [seconds[2].tolist(), [60.0, 61.0]]


def test_inf_where_the_table_has_null() -> None:
    job = _job("ResNet-50", [128, 128], [100.0, 100.0])
    seconds = epoch_seconds_by_type(job, "tacc", GPU_TYPES)
    assert seconds[2].tolist() == [np.inf, np.inf]  # k80 null
    assert seconds[1, 0] == pytest.approx(100.0 * 1.59789193 / 1.6277178277793367)  # p100 slightly faster
    assert fastest_isolated_s(job, "tacc", GPU_TYPES) == pytest.approx(200.0 * 1.59789193 / 1.6277178277793367)


def test_without_a_v100_throughput_the_job_keeps_its_own_v100_time_and_nothing_else_is_known() -> None:
    # Transformer 256 has no V100 throughput: no ratio, so only the workload's own V100 time is known.
    job = _job("Transformer", [256, 64], [30.0, 10.0])
    seconds = epoch_seconds_by_type(job, "tacc", GPU_TYPES)
    assert seconds[0].tolist() == [30.0, 10.0]
    assert np.isinf(seconds[1:, 0]).all() and np.isfinite(seconds[1:, 1]).all()


def test_a_job_without_training_or_an_unprofiled_entry_runs_only_on_v100() -> None:
    for job in (_job(None, [32], [5.0]), _job("LM", [10], [5.0], gpus=3), _job("Nope", [10], [5.0])):
        seconds = epoch_seconds_by_type(job, "tacc", GPU_TYPES)
        assert seconds[:, 0].tolist() == [5.0, np.inf, np.inf]
        assert fastest_isolated_s(job, "tacc", ["k80"]) == np.inf


def test_a_single_v100_cluster_gives_the_jobs_own_times_exactly() -> None:
    workload = load_workload("shockwave_120jobs_32gpus")
    single = ClusterTypes.single(workload.gpus)
    for job in workload.jobs:
        seconds = epoch_seconds_by_type(job, "tacc", single)
        assert seconds.shape == (1, job.epochs)
        assert np.array_equal(seconds[0], job.epoch_s)
        assert fastest_isolated_s(job, "tacc", single) == job.isolated_s


def test_vectorized_equals_a_per_epoch_loop_on_the_120_job_trace() -> None:
    workload = load_workload("shockwave_120jobs_32gpus")
    with open(THROUGHPUTS_FILE) as handle:
        rows = json.load(handle)["sets"][workload.throughputs]
    for job in workload.jobs:
        assert job.training is not None
        got = epoch_seconds_by_type(job, workload.throughputs, GPU_TYPES)
        want = np.empty((len(GPU_TYPES), job.epochs))
        for e in range(job.epochs):
            row = rows[f"{job.training.model} (batch size {int(job.batch_size[e])})|{job.gpus}"]
            for t, gpu_type in enumerate(GPU_TYPES):
                if gpu_type == "v100":
                    want[t, e] = job.epoch_s[e]
                elif row["v100"] and row[gpu_type]:
                    want[t, e] = job.epoch_s[e] * row["v100"] / row[gpu_type]
                else:
                    want[t, e] = np.inf
        assert np.array_equal(got, want), job.id
        best = min(job.isolated_s, *want[1:].sum(axis=1).tolist())
        assert fastest_isolated_s(job, workload.throughputs, GPU_TYPES) == best


def test_split_sums_exactly_by_largest_remainder() -> None:
    assert dict(ClusterTypes.split(256, {"v100": 1, "p100": 1, "k80": 1})) == {"v100": 86, "p100": 85, "k80": 85}
    # Quotas 10 * (0.45, 0.35, 0.2) = 4.5, 3.5, 2: floors 4, 3, 2, one left -> a tie of .5s -> v100.
    assert dict(ClusterTypes.split(10, {"k80": 0.2, "p100": 0.35, "v100": 0.45})) == {"v100": 5, "p100": 3, "k80": 2}
    # Exact quotas need no rounding: 5 GPUs by 1:1:3.
    assert dict(ClusterTypes.split(5, {"v100": 1, "p100": 1, "k80": 3})) == {"v100": 1, "p100": 1, "k80": 3}
    # 7 by 0.1:0.3:0.6 -> 0.7, 2.1, 4.2: floors 0, 2, 4, one left -> v100 (largest part .7).
    assert dict(ClusterTypes.split(7, {"v100": 0.1, "p100": 0.3, "k80": 0.6})) == {"v100": 1, "p100": 2, "k80": 4}
    # 2 GPUs in thirds: the third type gets none and is left out.
    assert dict(ClusterTypes.split(2, {"v100": 1, "p100": 1, "k80": 1})) == {"v100": 1, "p100": 1}
    assert dict(ClusterTypes.split(9, {"v100": 0, "k80": 2})) == {"k80": 9}
    rng = np.random.default_rng(0)
    for _ in range(200):
        gpus = int(rng.integers(1, 1000))
        shares = dict(zip(GPU_TYPES, rng.random(3).tolist(), strict=True))
        split = ClusterTypes.split(gpus, shares)
        assert split.total == gpus
        quota = {t: gpus * s / sum(shares.values()) for t, s in shares.items()}
        assert all(abs(split.get(t, 0) - quota[t]) < 1 for t in GPU_TYPES)


def test_cluster_types_is_a_frozen_mapping_in_type_order() -> None:
    cluster = ClusterTypes({"k80": 4, "v100": 8})
    assert cluster.types == ("v100", "k80") and list(cluster) == ["v100", "k80"]
    assert cluster.counts.tolist() == [8, 4] and cluster.total == 12 and cluster["k80"] == 4
    assert cluster == ClusterTypes({"v100": 8, "k80": 4}) == {"v100": 8, "k80": 4}
    assert hash(cluster) == hash(ClusterTypes({"v100": 8, "k80": 4}))
    assert ClusterTypes.single(32) == {"v100": 32} and ClusterTypes.single(3, "k80").types == ("k80",)
    with pytest.raises(ValueError, match="read-only"):
        cluster.counts[0] = 1
    with pytest.raises(AttributeError):
        cluster._total = 1  # type: ignore[misc]
    with pytest.raises(KeyError):
        cluster["p100"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda: ClusterTypes({"a100": 4}), r"counts must be a known GPU type \(v100, p100, k80\), got 'a100'"),
    (lambda: ClusterTypes({}), r"counts must be a non-empty mapping of GPU types"),
    (lambda: ClusterTypes({"v100": 0}), r"counts\['v100'\] must be a positive whole number"),
    (lambda: ClusterTypes({"v100": 2.5}), r"counts\['v100'\] must be a positive whole number"),
    (lambda: ClusterTypes({"v100": True}), r"counts\['v100'\] must be a positive whole number"),
    (lambda: ClusterTypes([("v100", 4)]), r"counts must be a non-empty mapping of GPU types"),
    (lambda: ClusterTypes.single(0), r"gpus must be a positive whole number"),
    (lambda: ClusterTypes.single(4, "h100"), r"gpu_type must be a known GPU type \(.*\), got 'h100'"),
    (lambda: ClusterTypes.split(4, {"v100": -1}), r"shares\['v100'\] must be a finite number >= 0"),
    (lambda: ClusterTypes.split(4, {"v100": float("nan")}), r"shares\['v100'\] must be a finite number >= 0"),
    (lambda: ClusterTypes.split(4, {"v100": 0}), r"some type a share > 0"),
    (lambda: ClusterTypes.split(4, {"x": 1}), r"shares must be a known GPU type \(.*\), got 'x'"),
    (lambda: epoch_seconds_by_type(_job("LM", [10], [1.0], job_id=9), "nope", GPU_TYPES),
     r"throughputs \(for job id 9\) must be a shipped throughput set \(tacc, wisr\), got 'nope'"),
    (lambda: epoch_seconds_by_type(_job("LM", [10], [1.0]), "tacc", "v100"), r"types must be a ClusterTypes or"),
    (lambda: epoch_seconds_by_type(_job("LM", [10], [1.0]), "tacc", ["v100", "v100"]), r"lists a GPU type twice"),
    (lambda: epoch_seconds_by_type(_job("LM", [10], [1.0]), "tacc", []), r"at least one GPU type"),
    (lambda: epoch_seconds_by_type(_job("LM", [10], [1.0]), "tacc", ["tpu"]),
     r"types must be a known GPU type \(.*\), got 'tpu'"),
    (lambda: fastest_isolated_s("job", "tacc", GPU_TYPES), r"job must be a vfm.cluster.Job"),
])
def test_validation_names_the_argument(call: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        call()


def test_a_workload_with_a_cluster_round_trips() -> None:
    raw = workload_to_dict(load_workload("shockwave_120jobs_32gpus").head(5))
    raw["cluster"] = {"k80": 10, "v100": 11, "p100": 11.0}  # any order; a whole float is a count
    workload = workload_from_dict(raw)
    assert workload.cluster == ClusterTypes({"v100": 11, "p100": 11, "k80": 10})
    written = workload_to_dict(workload)
    assert written["cluster"] == {"v100": 11, "p100": 11, "k80": 10}
    again = workload_from_dict(json.loads(json.dumps(written)))
    assert again.cluster == workload.cluster and workload_to_dict(again) == written
    assert workload.head(2).cluster == workload.cluster


@pytest.mark.parametrize(("cluster", "message"), [
    ({"v100": 16, "k80": 15}, r"cluster has 31 GPUs .* but gpus is 32"),
    ({"v100": 32, "a100": 0}, r"workload: cluster must be a known GPU type \(.*\), got 'a100'"),
    ({"v100": 31.5, "k80": 0.5}, r"workload: cluster\['v100'\] must be a positive whole number"),
    ([32], r"workload: cluster must be a JSON object"),
])
def test_a_bad_cluster_field_is_rejected(cluster: Any, message: str) -> None:
    raw = workload_to_dict(load_workload("shockwave_120jobs_32gpus").head(3))
    raw["cluster"] = cluster
    with pytest.raises(ValidationError, match=message):
        workload_from_dict(raw)
    with pytest.raises(ValidationError, match="cluster has 4 GPUs"):
        Workload("w", 32, 120.0, (), cluster=ClusterTypes.single(4))


@pytest.mark.parametrize("name", shipped_workloads())
def test_shipped_workloads_load_unchanged_without_a_cluster(name: str) -> None:
    workload = load_workload(name)
    assert workload.cluster is None
    assert "cluster" not in workload_to_dict(workload)


def test_the_proportional_reference_blends_the_types_rates_by_their_counts():
    from vfm.cluster import proportional_isolated_s

    workload = load_workload("shockwave_120jobs_32gpus")
    cluster = ClusterTypes({"v100": 2, "p100": 1, "k80": 1})
    checked = 0
    for job in workload.jobs[:40]:
        seconds = epoch_seconds_by_type(job, "tacc", cluster)
        if job.gpus > 1 or not np.isfinite(seconds).all() or len(job_types(job, "tacc", cluster)) < 3:
            continue  # a type that cannot host the job (or hold its gang) adds nothing: below
        # Epoch by epoch: half the rate of V100, a quarter each of P100 and K80.
        expected = sum(1.0 / (0.5 / a + 0.25 / b + 0.25 / c) for a, b, c in seconds.T)
        assert proportional_isolated_s(job, "tacc", cluster) == pytest.approx(expected, rel=1e-12)
        assert isolated_s_by_type(job, "tacc", cluster).min() <= expected
        checked += 1
    assert checked > 10
    job = workload.jobs[0]
    assert proportional_isolated_s(job, "tacc", ClusterTypes.single(8)) == job.isolated_s
    # A gang wider than the P100s and K80s runs on V100 alone, at half the cluster's rate.
    wide = next(j for j in workload.jobs if j.gpus == 2 and "v100" in job_types(j, "tacc", cluster))
    assert proportional_isolated_s(wide, "tacc", cluster) == pytest.approx(2.0 * wide.isolated_s, rel=1e-12)
