"""The simulator on clusters of several GPU types: one type gives the homogeneous answers, a type
change is a restart that carries the epoch's fraction over, the answer's types are checked."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.cluster import (
    ClusterAware,
    ClusterTypes,
    SchedulingPolicy,
    Workload,
    epoch_seconds_by_type,
    isolated_s_by_type,
    job_types,
    load_workload,
    proportional_isolated_s,
    simulate,
    summarize,
    type_regimes,
    workload_from_dict,
)
from vfm.errors import PolicyError, ValidationError

from .test_simulator import Fifo, RandomSubset, workloads


class OnOneType:
    """A homogeneous policy driven through the typed interface on a cluster of one type."""

    def __init__(self, inner: SchedulingPolicy, cluster: ClusterTypes) -> None:
        (self.gpu_type,) = cluster.types
        self.inner, self.cluster = inner, cluster

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Mapping[float, float]], epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        self.inner.add_job(job_id, gpus, regimes[self.gpu_type], epochs, kind=kind, restart_s=restart_s)

    def remove_job(self, job_id: Hashable) -> None:
        self.inner.remove_job(job_id)

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        self.inner.report_progress(job_id, batch_sizes)

    def next_round(self) -> dict[Hashable, str]:
        return {job_id: self.gpu_type for job_id in self.inner.next_round()}


class FastestFree:
    """Arrival order; each job on the first type it was told of (fastest first) with room for its gang."""

    def __init__(self, cluster: ClusterTypes) -> None:
        self.cluster = cluster
        self.jobs: dict[Hashable, list[Any]] = {}  # id -> [gpus, epochs left, types]
        self.told: dict[Hashable, Mapping[str, Mapping[float, float]]] = {}

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Mapping[float, float]], epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        self.jobs[job_id] = [gpus, epochs, [t for t in self.cluster.types if t in regimes]]
        self.told[job_id] = regimes

    def remove_job(self, job_id: Hashable) -> None:
        del self.jobs[job_id]

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        self.jobs[job_id][1] -= len(batch_sizes)
        if self.jobs[job_id][1] == 0:
            del self.jobs[job_id]

    def next_round(self) -> dict[Hashable, str]:
        free, run = dict(self.cluster), {}
        for job_id, (gpus, _, types) in self.jobs.items():
            for gpu_type in types:
                if gpus <= free[gpu_type]:
                    run[job_id] = gpu_type
                    free[gpu_type] -= gpus
                    break
        return run


class Scripted(FastestFree):
    """Whatever `script(round_index, present job ids)` answers."""

    def __init__(self, cluster: ClusterTypes, script: Callable[[int, list[Hashable]], Any]) -> None:
        super().__init__(cluster)
        self.script, self.round = script, 0

    def next_round(self) -> Any:
        self.round += 1
        return self.script(self.round - 1, list(self.jobs))


def _on(workload: Workload, counts: Mapping[str, int]) -> Workload:
    return dataclasses.replace(workload, cluster=ClusterTypes(counts), gpus=sum(counts.values()))


def _trace_job(accepts: Callable[[tuple[str, ...]], bool]) -> Workload:
    """A one-job workload of the 120-job trace's first single-GPU job whose types satisfy `accepts`."""
    trace = load_workload("shockwave_120jobs_32gpus")
    job = next(j for j in trace.jobs if j.gpus == 1 and accepts(job_types(j, "tacc")))
    return dataclasses.replace(trace, jobs=(dataclasses.replace(job, arrival_s=0.0),), name="one")


@settings(max_examples=40)
@given(raw=workloads(), seed=st.integers(0, 3))
def test_one_type_through_the_typed_interface_gives_the_homogeneous_run(raw: dict[str, Any], seed: int) -> None:
    workload = workload_from_dict(raw)
    typed = workload_from_dict({**raw, "cluster": {"v100": raw["gpus"]}})
    for make in (lambda: Fifo(workload.gpus), lambda: RandomSubset(workload.gpus, seed)):
        plain = simulate(workload, make())
        through = simulate(typed, OnOneType(make(), typed.cluster))
        for field in ("finish_s", "restarts", "held_s", "isolated_s"):
            np.testing.assert_array_equal(getattr(through, field), getattr(plain, field))
        assert [r.jobs for r in through.rounds] == [r.jobs for r in plain.rounds]
        assert all(r.types == ("v100",) * len(r.jobs) for r in through.rounds)
        assert summarize(through) == {**summarize(plain), "planner_s": summarize(through)["planner_s"]}


def test_the_homogeneous_policy_on_the_one_type_cluster_of_a_workload_file() -> None:
    trace = load_workload("shockwave_120jobs_32gpus").head(20)
    typed = dataclasses.replace(trace, cluster=ClusterTypes.single(trace.gpus))
    np.testing.assert_array_equal(simulate(typed, Fifo(trace.gpus)).finish_s,
                                  simulate(trace, Fifo(trace.gpus)).finish_s)


def test_a_mixed_cluster_runs_every_job_within_each_types_count() -> None:
    workload = _on(load_workload("shockwave_120jobs_32gpus").head(24), {"v100": 8, "p100": 4, "k80": 4})
    policy = FastestFree(workload.cluster)
    sim = simulate(workload, policy)
    assert np.isfinite(sim.finish_s).all() and sim.cluster == workload.cluster
    gang = {job.id: job.gpus for job in workload.jobs}
    for r in sim.rounds:
        used = {t: sum(gang[j] for j, u in zip(r.jobs, r.types, strict=True) if u == t) for t in workload.cluster}
        assert all(used[t] <= workload.cluster[t] for t in workload.cluster)
    assert {u for r in sim.rounds for u in r.types} == {"v100", "p100", "k80"}
    # The FTF reference is each job's time on a proportional slice of the cluster; what the policy
    # was told is type_regimes.
    expected = [proportional_isolated_s(job, "tacc", workload.cluster) for job in workload.jobs]
    np.testing.assert_array_equal(sim.isolated_s, expected)
    for job in workload.jobs:
        told = type_regimes(job, "tacc", workload.cluster)
        assert policy.told[job.id] == {t: told[t] for t in job_types(job, "tacc", workload.cluster)}
    fastest = np.array([isolated_s_by_type(job, "tacc", workload.cluster).min() for job in workload.jobs])
    assert (sim.finish_s - sim.arrival_s >= fastest).all() and (sim.isolated_s >= fastest).all()


def test_a_change_of_type_restarts_and_carries_the_epochs_fraction_over() -> None:
    one = _trace_job(lambda types: {"v100", "k80"} <= set(types))
    workload = _on(one, {"v100": 1, "k80": 1})
    (job,) = workload.jobs
    sim = simulate(workload, Scripted(workload.cluster, lambda k, ids: {i: "v100" if k == 0 else "k80" for i in ids}))
    assert sim.restarts.tolist() == [2]
    # By hand: 100 s of V100 work in round 0 (120 s less the restart), the same fraction of the
    # same epoch on the K80 from 140 s on (round 1 less its restart), then K80 epochs to the end.
    v100, k80 = epoch_seconds_by_type(job, "tacc", workload.cluster)
    ends = np.cumsum(v100)
    epoch = int(np.searchsorted(ends, 100.0, side="right"))
    fraction = (100.0 - (ends[epoch - 1] if epoch else 0.0)) / v100[epoch]
    left = (1.0 - fraction) * k80[epoch] + k80[epoch + 1:].sum()
    assert sim.finish_s[0] == pytest.approx(140.0 + left, rel=1e-12)
    assert [r.types for r in sim.rounds[:2]] == [("v100",), ("k80",)]


def test_back_on_the_same_type_without_a_pause_is_no_restart() -> None:
    workload = _on(_trace_job(lambda types: "k80" in types), {"v100": 1, "k80": 1})
    sim = simulate(workload, Scripted(workload.cluster, lambda k, ids: {i: "k80" for i in ids}))
    (job,) = workload.jobs
    assert sim.restarts.tolist() == [1]
    k80 = epoch_seconds_by_type(job, "tacc", workload.cluster)[1].sum()
    assert sim.finish_s[0] == pytest.approx(20.0 + k80, rel=1e-12)


@pytest.mark.parametrize(("script", "pattern"), [
    (lambda k, ids: list(ids), "must return a mapping job id -> GPU type"),
    (lambda k, ids: {i: "a100" for i in ids}, r"placed job .* on 'a100', not a GPU type of the cluster \(v100, k80\)"),
    (lambda k, ids: {i: "v100" for i in ids}, r"asked for 2 GPUs of type v100 .* the cluster has 1"),
    (lambda k, ids: {"nobody": "v100"}, "returned job 'nobody', which is not in the workload"),
])
def test_a_bad_placement_is_a_policy_error_naming_it(script: Callable[[int, list[Hashable]], Any],
                                                     pattern: str) -> None:
    trace = load_workload("shockwave_120jobs_32gpus")
    singles = [dataclasses.replace(job, arrival_s=0.0) for job in trace.jobs if job.gpus == 1][:2]
    workload = _on(dataclasses.replace(trace, jobs=tuple(singles)), {"v100": 1, "k80": 1})
    with pytest.raises(PolicyError, match=pattern):
        simulate(workload, Scripted(workload.cluster, script))


def test_a_type_that_cannot_run_the_job_is_refused() -> None:
    workload = _on(_trace_job(lambda types: "k80" not in types), {"v100": 1, "k80": 1})
    (job,) = workload.jobs
    assert "k80" not in type_regimes(job, "tacc", workload.cluster)
    with pytest.raises(PolicyError, match=r"on k80, which cannot run it \(it was told the types v100\)"):
        simulate(workload, Scripted(workload.cluster, lambda k, ids: {i: "k80" for i in ids}))


def test_a_job_no_type_can_run_is_named_before_the_run() -> None:
    workload = _on(_trace_job(lambda types: "k80" not in types), {"k80": 2})
    with pytest.raises(ValidationError, match=r"job .* cannot run on any GPU type of the cluster \(k80\)"):
        simulate(workload, FastestFree(workload.cluster))


def test_a_homogeneous_policy_on_a_mixed_cluster_and_a_policy_for_another_cluster_are_refused() -> None:
    workload = _on(load_workload("shockwave_120jobs_32gpus").head(4), {"v100": 16, "k80": 16})
    with pytest.raises(ValidationError, match=r"Fifo schedules a cluster of one GPU type.*ClusterAware"):
        simulate(workload, Fifo(32))
    with pytest.raises(ValidationError, match=r"policy.cluster is .* but the workload's cluster is"):
        simulate(workload, FastestFree(ClusterTypes({"v100": 32})))
    assert isinstance(FastestFree(workload.cluster), ClusterAware)
    assert not isinstance(Fifo(32), ClusterAware)
