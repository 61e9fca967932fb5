"""`vfm.planner.Policy` on GPU types, driven by the simulator; the typed program on one type gives
the plain program's runs; bad input named."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from vfm.cluster import ClusterAware, ClusterTypes, load_workload, simulate
from vfm.errors import ValidationError
from vfm.planner import Policy
from vfm.planner.policy import replanning, typed_serving

from .typed_on_one_type import TypedOnOneType


@pytest.mark.parametrize("solver", ["saa-ipm", "cvxpy"])
@pytest.mark.parametrize("settings", [{}, {"execution": "window"}, {"execution": "window", "max_wait": 3},
                                      {"fairness": True, "efficiency": 1.0, "reserve": 0.3}])
def test_one_type_gives_the_one_type_policys_run(settings, solver):
    trace = load_workload("shockwave_120jobs_32gpus").head(10)
    single = dataclasses.replace(trace, cluster=ClusterTypes.single(trace.gpus))
    typed = simulate(single, TypedOnOneType(single.cluster, rounds=6, solver=solver, **settings))
    plain = simulate(trace, Policy(trace.gpus, rounds=6, solver=solver, **settings))
    np.testing.assert_array_equal(typed.finish_s, plain.finish_s)
    assert [r.jobs for r in typed.rounds] == [r.jobs for r in plain.rounds]
    assert {t for r in typed.rounds for t in r.types} == {"v100"}  # the typed path placed them


def test_a_mixed_cluster_runs_to_the_end_on_every_type():
    trace = load_workload("shockwave_120jobs_32gpus").head(16)
    cluster = ClusterTypes({"v100": 4, "p100": 2, "k80": 2})
    workload = dataclasses.replace(trace, cluster=cluster, gpus=cluster.total)
    policy = Policy(cluster, rounds=6)
    assert isinstance(policy, ClusterAware)
    sim = simulate(workload, policy)
    assert np.isfinite(sim.finish_s).all()
    assert {t for r in sim.rounds for t in r.types} == {"v100", "p100", "k80"}
    assert policy.last_plan.solver == "saa-ipm" and policy.jobs == []


def test_the_reference_type_is_the_fastest_and_speeds_are_ratios_of_the_current_regime():
    policy = Policy(ClusterTypes({"v100": 2, "k80": 2}), rounds=3)
    policy.add_job("a", 1, {"k80": {32: 100.0, 64: 80.0}, "v100": {32: 50.0, 64: 20.0}}, epochs=40)
    policy.report_progress("a", [64])
    assert policy._state.jobs["a"].regimes == ((32.0, 50.0), (64.0, 20.0))
    current = policy._state.jobs["a"].recent[0]
    np.testing.assert_allclose(policy.state.jobs["a"].speeds[:, current], [1.0, 20.0 / 80.0])


@pytest.mark.parametrize(("regimes", "gpus", "pattern"), [
    ({"a100": {32: 1.0}}, 1, r"each key of regimes of job 'x' must be a GPU type of the cluster "
                             r"\(v100, k80\), got 'a100'"),
    ({"v100": {32: 1.0}, "k80": {64: 2.0}}, 1, r"regimes\['k80'\]\[64\.0\] of job 'x' must be left out: a mapping of "
                                                r"the batch sizes of its first type has the batch size 32\.0 only"),
    ({"v100": {32: -1.0}}, 1, r"regimes\['v100'\]\[32\.0\] of job 'x' must be a finite number of seconds per epoch "
                              r"> 0, got -1\.0"),
    ({"v100": {32: float("inf")}}, 1, r"regimes\['v100'\]\[32\.0\] of job 'x' must be a finite number .*, got inf"),
    ({"v100": {32: float("nan")}}, 1, r"regimes\['v100'\]\[32\.0\] of job 'x' must be a finite number .*, got nan"),
    ({"v100": {32: "slow"}}, 1, r"regimes\['v100'\]\[32\] of job 'x' must be a number, got 'slow'"),
    ({"v100": "x"}, 1, r"regimes\['v100'\] of job 'x' must be a non-empty mapping of batch sizes to seconds per epoch"),
    ({"v100": {}}, 1, r"regimes\['v100'\] of job 'x' must be a non-empty mapping"),
    ({"v100": {32: 1.0}}, "two", r"gpus of job 'x' must be a positive whole number of GPUs"),
    ({"k80": {32: 1.0}}, 3, r"gpus of job 'x' must be a positive whole number of GPUs, at most 2 \(the GPUs of its "
                            r"largest GPU type: k80: 2\), got 3"),
    ({}, 1, r"regimes of job 'x' must be a non-empty mapping of GPU types"),
])
def test_bad_jobs_are_named(regimes, gpus, pattern):
    policy = Policy(ClusterTypes({"v100": 4, "k80": 2}))
    with pytest.raises(ValidationError, match=pattern):
        policy.add_job("x", gpus, regimes, epochs=10)
    assert policy.jobs == []


def test_the_shockwave_configuration_runs_on_types_with_finish_time_targets(monkeypatch):
    trace = load_workload("shockwave_120jobs_32gpus").head(16)
    cluster = ClusterTypes({"v100": 4, "p100": 2, "k80": 2})
    workload = dataclasses.replace(trace, cluster=cluster, gpus=cluster.total)
    policy = Policy.shockwave(cluster, rounds=6)
    assert policy.config.fairness and policy.options.efficiency > 0
    fairness = []
    original = replanning.replan

    def recording(config, state, options=None, **kwargs):
        new = original(config, state, options, **kwargs)
        fairness.append(new.plan.fairness)
        assert np.isfinite(new.jobs[new.plan.job_ids[0]].fair_finish_at_s)
        return new

    monkeypatch.setattr(typed_serving, "replan", recording)
    sources = []
    next_round = policy.next_round

    def deciding():
        placed = next_round()
        sources.append(policy.last_decision.source)
        return placed

    policy.next_round = deciding
    sim = simulate(workload, policy)
    assert np.isfinite(sim.finish_s).all() and set(sources) == {"plan"}  # no re-plan failed
    assert set(fairness) <= {"constraints", "relaxed"} and "constraints" in fairness


def test_bad_options_are_named():
    with pytest.raises(ValidationError, match="execution must be 'credit' or 'window'"):
        Policy(ClusterTypes({"v100": 4}), execution="fifo")
    with pytest.raises(ValidationError, match=r"capacity must be a positive whole number of GPUs.* or a "
                                              r"vfm\.cluster\.ClusterTypes \(GPU type -> count\), got \{'v100': 4\}"):
        Policy({"v100": 4})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"service_floor and wait_limit apply to one GPU type"):
        Policy(ClusterTypes({"v100": 4, "k80": 2}), wait_limit=20)
    with pytest.raises(ValidationError, match=r"each key of regimes of job 'x' must be the cluster's one GPU type "
                                              r"\(v100\), got 'k80' \(give \{batch size: seconds per epoch\} or"):
        Policy(ClusterTypes({"v100": 4})).add_job("x", 1, {"k80": {32: 1.0}}, 3)
