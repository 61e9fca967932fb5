"""The workload generator and resampler: seeded, following the mixes asked for, profiles that follow
the shipped throughputs and adaptation rules, and errors that name the field."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.cluster import load_workload, simulate, summarize
from vfm.cluster.artifact import simulate as artifact_simulate
from vfm.cluster.artifact import throughput_table
from vfm.cluster.artifact._adaptation import SCALED, accordion_critical
from vfm.cluster.baselines import BASELINES
from vfm.cluster.generate import SAMPLES_PER_EPOCH, WorkloadSpec, generate_workload, resample_workload
from vfm.errors import ValidationError

TABLE = throughput_table("tacc", "v100")


def _speed(model: str, batch: float, gang: int) -> float:
    return TABLE[f"{model} (batch size {int(batch)})|{gang}"]


def test_same_seed_same_workload_and_other_seed_another() -> None:
    spec = WorkloadSpec(jobs=30, gpus=8)
    a, b, c = generate_workload(spec, 5), generate_workload(spec, 5), generate_workload(spec, 6)
    for x, y in zip(a.jobs, b.jobs, strict=True):
        assert (x.arrival_s, x.gpus, x.training) == (y.arrival_s, y.gpus, y.training)
        assert np.array_equal(x.epoch_s, y.epoch_s)
    assert a.isolated_s.tolist() != c.isolated_s.tolist()


def test_mixes_and_arrivals_follow_the_spec() -> None:
    spec = WorkloadSpec(jobs=2000, gpus=64, interarrival_s=30.0, gang_mix={1: 0.5, 4: 0.5},
                        adaptation_mix={"gns": 1.0})
    workload = generate_workload(spec, 0)
    gangs = np.array([job.gpus for job in workload.jobs])
    assert set(gangs.tolist()) == {1, 4}
    # Binomial(2000, 0.5): the share of 1-GPU jobs is within 4 standard deviations (0.045) of 0.5.
    assert abs((gangs == 1).mean() - 0.5) < 0.045
    gaps = np.diff(workload.arrival_s)
    assert workload.arrival_s[0] == 0 and np.all(gaps >= 0)
    # Exponential gaps, 1999 of them: the mean is within 4 standard errors (30 / sqrt(1999) * 4 = 2.7 s).
    assert abs(gaps.mean() - 30.0) < 2.7
    assert {job.training.adaptation for job in workload.jobs if job.training} == {"gns"}
    burst = generate_workload(WorkloadSpec(jobs=10, gpus=4, interarrival_s=0.0), 0)
    assert burst.arrival_s.tolist() == [0.0] * 10


def test_epoch_times_and_steps_follow_the_profiles() -> None:
    workload = generate_workload(WorkloadSpec(jobs=300, gpus=32, adaptation_mix={"static": 1, "gns": 1,
                                                                                   "accordion": 1}), 2)
    low, high = 720.0, 18000.0
    for job in workload.jobs:
        t = job.training
        assert t is not None and t.samples_per_epoch == SAMPLES_PER_EPOCH[t.model]
        initial = job.batch_size[0]
        steps_per_epoch = math.ceil(t.samples_per_epoch / initial)
        assert job.epochs == max(1, math.ceil(t.total_steps / steps_per_epoch))
        # The static run time the steps came from lies in duration_s.
        run_s = t.total_steps / _speed(t.model, initial, job.gpus)
        assert low - 1 <= run_s <= high + 1
        expected = [math.ceil(t.samples_per_epoch / b) / _speed(t.model, b, job.gpus) for b in job.batch_size]
        assert np.allclose(job.epoch_s, expected, rtol=1e-12)
        if t.adaptation == "static":
            assert np.all(job.batch_size == initial)
        elif t.adaptation == "gns":
            assert np.all(np.diff(job.batch_size) >= 0)
        else:
            critical = accordion_critical(np.array(t.model), np.array(int(initial)), np.arange(job.epochs))
            assert np.all(job.batch_size[critical] == initial)
            assert np.all(job.batch_size[~critical] == SCALED[t.model])
    modes = {job.training.adaptation for job in workload.jobs if job.training}
    assert modes == {"static", "gns", "accordion"}


def test_resampled_jobs_keep_their_epochs_and_scale_by_the_throughput_ratio() -> None:
    source = load_workload("shockwave_120jobs_32gpus")
    spec = WorkloadSpec(jobs=200, gpus=16, gang_mix={1: 1, 2: 1, 8: 1}, interarrival_s=0.0)
    resampled = resample_workload(source, spec, 3)
    assert resampled.n_jobs == 200 and resampled.gpus == 16
    profiles = {(j.training.model, tuple(j.batch_size.tolist())): j for j in source.jobs if j.training}
    for job in resampled.jobs:
        t = job.training
        assert t is not None
        original = profiles[(t.model, tuple(job.batch_size.tolist()))]
        ratio = np.array([_speed(t.model, b, original.gpus) / _speed(t.model, b, job.gpus) for b in job.batch_size])
        assert np.allclose(job.epoch_s, original.epoch_s * ratio, rtol=1e-12)
        assert job.gpus == 1 or t.model != "Recommendation"  # its profile covers one GPU only
    assert {job.gpus for job in resampled.jobs} == {1, 2, 8}


def test_generated_workloads_run_in_both_simulators() -> None:
    workload = generate_workload(WorkloadSpec(jobs=12, gpus=4, duration_s=(600.0, 3600.0)), 0)
    ours = simulate(workload, BASELINES["max_min_fairness"](4, 120.0, 0))
    theirs = artifact_simulate(workload, "max_min_fairness")
    assert np.isfinite(ours.finish_s).all() and np.isfinite(theirs.finish_s).all()
    assert summarize(ours)["makespan_s"] > 0 and summarize(theirs)["makespan_s"] > 0


@pytest.mark.parametrize(("overrides", "message"), [
    ({"jobs": 0}, "jobs must be a positive whole number"),
    ({"gpus": 2.5}, "gpus must be a positive whole number"),
    ({"interarrival_s": -1.0}, "interarrival_s must be a finite number >= 0"),
    ({"gang_mix": {1: 1, 16: 1}}, "gang_mix has gang size 16"),
    ({"gang_mix": {1: -1}}, "gang_mix's weights"),
    ({"adaptation_mix": {"pruning": 1}}, "adaptation_mix has 'pruning'"),
    ({"duration_s": (100.0, 10.0)}, "duration_s must be (low, high)"),
    ({"throughputs": "azure"}, "throughputs must be one of the shipped sets"),
])
def test_bad_specs_name_the_field(overrides: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        WorkloadSpec(**{"jobs": 4, "gpus": 8, **overrides})


def test_a_gang_no_job_runs_on_is_an_error() -> None:
    only_recommendation = load_workload("shockwave_120jobs_32gpus")
    rows = [job for job in only_recommendation.jobs if job.training and job.training.model == "Recommendation"]
    from vfm.cluster.workload import Workload
    source = Workload("rec", 32, 120.0, tuple(rows), "tacc")
    with pytest.raises(ValidationError, match="gang size 2, but no job of 'rec' runs on it"):
        resample_workload(source, WorkloadSpec(jobs=4, gpus=8, gang_mix={2: 1}), 0)
