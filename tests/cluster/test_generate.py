"""The workload generator and resampler: seeded, following the mixes asked for, profiles that follow
the shipped throughputs and adaptation rules, uncertain adaptation as documented, and errors that
name the field."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from vfm.cluster import (
    ClusterTypes,
    Workload,
    load_workload,
    simulate,
    summarize,
    workload_from_dict,
    workload_to_dict,
)
from vfm.cluster.artifact import simulate as artifact_simulate
from vfm.cluster.artifact import throughput_table
from vfm.cluster.artifact._adaptation import LARGEST, SCALED, accordion_critical
from vfm.cluster.baselines import BASELINES
from vfm.cluster.generate import SAMPLES_PER_EPOCH, Uncertainty, WorkloadSpec, generate_workload, resample_workload
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


def test_a_duration_mix_draws_each_job_from_one_of_its_ranges() -> None:
    short, long = (360.0, 1800.0), (18000.0, 54000.0)
    spec = WorkloadSpec(jobs=2000, gpus=32, duration_mix={short: 0.85, long: 0.15})
    assert spec.duration_weights == ((short, 0.85), (long, 0.15))
    workload = generate_workload(spec, 3)
    run_s = np.array([job.training.total_steps / _speed(job.training.model, job.batch_size[0], job.gpus)
                      for job in workload.jobs if job.training])
    in_short = (run_s >= short[0] - 1) & (run_s <= short[1] + 1)
    in_long = (run_s >= long[0] - 1) & (run_s <= long[1] + 1)
    assert np.all(in_short | in_long)
    # Binomial(2000, 0.15): the share of long jobs is within 4 standard deviations (0.032) of 0.15.
    assert abs(in_long.mean() - 0.15) < 0.032
    # Log-uniform within each range: half the short jobs below its geometric middle (4 SDs: 0.05).
    assert abs((run_s[in_short] < math.sqrt(short[0] * short[1])).mean() - 0.5) < 0.05


def test_without_a_duration_mix_a_seed_draws_what_it_drew_before() -> None:
    # The default draws from duration_s exactly as before the field existed (the pinned digest of
    # test_without_uncertainty_a_seed_gives_what_it_gave_before holds too); a mix changes the draw.
    spec = WorkloadSpec(jobs=30, gpus=8, duration_s=(600.0, 3600.0))
    assert spec.duration_mix is None and spec.duration_weights is None
    plain = generate_workload(spec, 4)
    assert plain.isolated_s.tolist() == generate_workload(replace(spec, duration_mix=None), 4).isolated_s.tolist()
    mixed = generate_workload(replace(spec, duration_mix={(600.0, 3600.0): 1.0}), 4)
    assert mixed.isolated_s.tolist() != plain.isolated_s.tolist()


@pytest.mark.parametrize(("mix", "message"), [
    ({(100.0, 10.0): 1.0}, "duration_mix's range must be a (low, high) pair with low <= high"),
    ({(0.0, 10.0): 1.0}, "duration_mix's range must be a (low, high) pair with low <= high"),
    ({(10.0, 20.0, 30.0): 1.0}, "duration_mix's range must be a (low, high) pair with low <= high"),
    ({(10.0, 20.0): -1.0}, "duration_mix's weight for (10.0, 20.0) must be a finite number >= 0, got -1.0"),
    ((((10, 20), 1.0), ([10.0, 20.0], 1.0)), "duration_mix lists a range twice"),
    ({}, "duration_mix must be a non-empty mapping"),
])
def test_bad_duration_mixes_name_the_field(mix: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        WorkloadSpec(jobs=4, gpus=8, duration_mix=mix)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"jobs": 0}, "jobs must be a positive whole number"),
    ({"gpus": 2.5}, "gpus must be a positive whole number"),
    ({"interarrival_s": -1.0}, "interarrival_s must be a number of seconds in "),
    ({"gang_mix": {1: 1, 16: 1}}, "gang_mix's gang size must be a positive whole number, at most 8 "
                                  "(the cluster's GPUs), got 16"),
    ({"gang_mix": {1.0: 1}}, "gang_mix's gang size must be a positive whole number, at most 8 (the cluster's GPUs), "
                             "got 1.0"),
    ({"gang_mix": {1: -1}}, "gang_mix's weight for 1 must be a finite number >= 0, got -1"),
    ({"adaptation_mix": {"pruning": 1}},
     "adaptation_mix's mode must be 'static', 'gns' or 'accordion', got 'pruning'"),
    ({"duration_s": (100.0, 10.0)}, "duration_s must be a (low, high) pair"),
    ({"throughputs": "azure"}, "throughputs must be 'tacc' or 'wisr', got 'azure'"),
    ({"round_s": 0}, "round_s must be a number of seconds in "),
    ({"jobs": True}, "jobs must be a positive whole number"),
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


# ---------------------------------------------------------------------------------------------
# Uncertain adaptation
# ---------------------------------------------------------------------------------------------

MIXED = WorkloadSpec(jobs=300, gpus=64, adaptation_mix={"static": 1, "gns": 1, "accordion": 1})


def _nominal_s(job: Any, batch: Sequence[float]) -> np.ndarray:
    t = job.training
    return np.array([math.ceil(t.samples_per_epoch / b) / _speed(t.model, b, job.gpus) for b in batch])


def _changes(batch: np.ndarray) -> np.ndarray:
    """The epochs at which the batch size changes."""
    return np.flatnonzero(batch[1:] != batch[:-1]) + 1


def _runs(batch: np.ndarray) -> list[float]:
    """The batch sizes in the order the job runs them, one per run."""
    return batch[np.r_[0, _changes(batch)]].tolist()


def _is_subsequence(short: list[float], long: list[float]) -> bool:
    rest = iter(long)
    return all(any(x == y for y in rest) for x in short)


def test_without_uncertainty_a_seed_gives_what_it_gave_before() -> None:
    spec = WorkloadSpec(jobs=40, gpus=8, adaptation_mix={"static": 1, "gns": 1, "accordion": 1})
    for workload in (generate_workload(spec, 11), generate_workload(replace(spec, uncertainty=Uncertainty()), 11)):
        digest = hashlib.sha256()
        for job in workload.jobs:
            digest.update(job.batch_size.tobytes())
            digest.update(job.epoch_s.tobytes())
        # Pinned from the generator before `Uncertainty` existed.
        assert digest.hexdigest() == "4eb3647d97156db309776c1430d8b9191f65ac068fc88a9206a1edf71912f0a4"
        assert [job.epochs for job in workload.jobs][:8] == [693, 40, 5, 7, 401, 200, 49, 12]
        assert "profile" not in json.dumps(workload_to_dict(workload))


def test_uncertainty_leaves_the_jobs_and_arrivals_alone() -> None:
    nominal = generate_workload(MIXED, 3)
    uncertain = generate_workload(replace(MIXED, uncertainty=Uncertainty(0.3, 0.2, True)), 3)
    for a, b in zip(nominal.jobs, uncertain.jobs, strict=True):
        assert (a.arrival_s, a.gpus, a.epochs, a.training) == (b.arrival_s, b.gpus, b.epochs, b.training)
        assert b.batch_size[0] == a.batch_size[0]  # the job type, its Training's initial size
    seed = np.random.SeedSequence(9)  # a caller's sequence is not consumed
    first, again = (generate_workload(replace(MIXED, uncertainty=Uncertainty(0.3, 0.2)), seed) for _ in range(2))
    assert all(np.array_equal(a.epoch_s, b.epoch_s) for a, b in zip(first.jobs, again.jobs, strict=True))


def test_epoch_noise_has_mean_one_and_the_asked_cv_around_the_told_profile() -> None:
    nominal = generate_workload(MIXED, 4)
    noisy = generate_workload(replace(MIXED, uncertainty=Uncertainty(epoch_noise=0.2)), 4)
    ratios = []
    for a, b in zip(nominal.jobs, noisy.jobs, strict=True):
        assert np.array_equal(a.batch_size, b.batch_size)  # noise alone moves no change
        assert b.regimes == a.regimes  # told the nominal durations
        told = np.array([b.regimes[size] for size in b.batch_size.tolist()])
        assert not np.array_equal(b.epoch_s, told)
        assert np.isclose(b.isolated_s, b.epoch_s.sum(), rtol=1e-12)
        ratios.append(b.epoch_s / told)
    ratio = np.concatenate(ratios)
    assert ratio.size > 100_000
    # Log-normal with cv 0.2: over 1e5 epochs the mean is within 0.1 % of 1 (4 standard errors)
    # and the sample cv within 0.005 of 0.2.
    assert abs(ratio.mean() - 1) < 0.01
    assert abs(ratio.std() / ratio.mean() - 0.2) < 0.005
    assert np.unique(ratio).size > 0.99 * ratio.size  # independent per epoch


def test_change_jitter_stretches_each_schedule_by_one_factor_keeping_its_order() -> None:
    nominal = generate_workload(MIXED, 5)
    jittered = generate_workload(replace(MIXED, uncertainty=Uncertainty(change_jitter=0.3)), 5)
    changing = moved = same_sizes = 0
    log_stretch = []
    for a, b in zip(nominal.jobs, jittered.jobs, strict=True):
        assert np.allclose(b.epoch_s, _nominal_s(b, b.batch_size.tolist()), rtol=1e-12)  # no noise
        assert _is_subsequence(_runs(b.batch_size), _runs(a.batch_size))
        was, now = _changes(a.batch_size), _changes(b.batch_size)
        if was.size == 0:
            assert now.size == 0
            continue
        changing += 1
        moved += not np.array_equal(was, now)
        same_sizes += set(a.batch_size.tolist()) == set(b.batch_size.tolist())
        if now.size == was.size:
            # One factor f for the job: every change at e moved to round(e f), so the intervals
            # [(c - 1/2) / e, (c + 1/2) / e] of f share a point.
            low, high = np.max((now - 0.5) / was), np.min((now + 0.5) / was)
            assert low <= high + 1e-12
            log_stretch.append(math.log((low + high) / 2))
    assert changing > 60 and moved > 0.8 * changing and same_sizes > 0.8 * changing
    # log f ~ N(0, 0.3^2): over some 80 jobs the sample std's standard error is about 0.025.
    assert len(log_stretch) > 60 and abs(np.std(log_stretch) - 0.3) < 0.075


def test_hidden_regimes_list_every_size_the_mode_can_reach() -> None:
    nominal = generate_workload(MIXED, 6)
    hidden = generate_workload(replace(MIXED, uncertainty=Uncertainty(hidden_regimes=True)), 6)
    unused = 0
    for a, b in zip(nominal.jobs, hidden.jobs, strict=True):
        assert np.array_equal(a.batch_size, b.batch_size) and np.array_equal(a.epoch_s, b.epoch_s)
        t, initial = b.training, int(b.batch_size[0])
        assert t is not None
        if t.adaptation == "gns":
            reach = [initial * 2**k for k in range(12) if initial * 2**k <= LARGEST[t.model]]
        elif t.adaptation == "accordion":
            reach = [initial, SCALED[t.model]]
        else:
            reach = [initial]
        expected = sorted(size for size in reach if f"{t.model} (batch size {size})|{b.gpus}" in TABLE)
        assert list(b.regimes) == expected
        assert np.allclose(list(b.regimes.values()), _nominal_s(b, expected), rtol=1e-12)
        assert set(b.batch_size.tolist()) <= set(b.regimes)
        unused += len(b.regimes) > len(set(b.batch_size.tolist()))
    assert unused > 30


def test_an_uncertain_workload_round_trips_through_the_file_format() -> None:
    workload = generate_workload(WorkloadSpec(jobs=60, gpus=16, uncertainty=Uncertainty(0.3, 0.2, True)), 7)
    raw = json.loads(json.dumps(workload_to_dict(workload)))
    assert sum("profile" in job for job in raw["jobs"]) == 60  # noise: every job's profile says more
    back = workload_from_dict(raw)
    for a, b in zip(workload.jobs, back.jobs, strict=True):
        assert np.array_equal(a.batch_size, b.batch_size) and np.array_equal(a.epoch_s, b.epoch_s)
        assert (a.profile, a.training, a.isolated_s) == (b.profile, b.training, b.isolated_s)
    # Resampled onto other gangs, a job keeps its told sizes, scaled by the throughput ratio.
    resampled = resample_workload(workload, WorkloadSpec(jobs=40, gpus=16, gang_mix={1: 1, 2: 1}), 0)
    for job in resampled.jobs:
        t = job.training
        assert t is not None
        source = next(j for j in workload.jobs if j.training == t and np.array_equal(j.batch_size, job.batch_size))
        assert list(job.regimes) == list(source.regimes)
        scale = [_speed(t.model, b, source.gpus) / _speed(t.model, b, job.gpus) for b in source.regimes]
        assert np.allclose(list(job.regimes.values()), np.array(list(source.regimes.values())) * scale, rtol=1e-12)


class _Told:
    """A baseline that records the regimes each job is told on arrival."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.told = inner, {}

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        self.told[job_id] = dict(regimes)
        self.inner.add_job(job_id, gpus, regimes, epochs, kind=kind)

    def remove_job(self, job_id: Hashable) -> None:
        self.inner.remove_job(job_id)

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        self.inner.report_progress(job_id, batch_sizes)

    def next_round(self) -> Any:
        return self.inner.next_round()


def test_an_uncertain_workload_runs_to_completion_told_its_profiles() -> None:
    workload: Workload = generate_workload(
        WorkloadSpec(jobs=30, gpus=8, uncertainty=Uncertainty(0.3, 0.2, True)), 0)
    policy = _Told(BASELINES["max_min_fairness"](8, 120.0, 0))
    simulation = simulate(workload, policy)
    assert np.isfinite(simulation.finish_s).all()
    assert np.array_equal(simulation.isolated_s, workload.isolated_s)  # the true, noisy durations
    assert policy.told == {job.id: dict(job.profile) for job in workload.jobs}
    assert any(len(told) > len(set(job.batch_size.tolist())) for told, job in zip(
        policy.told.values(), workload.jobs, strict=True))


@pytest.mark.parametrize(("fields", "message"), [
    ({"change_jitter": -0.1}, r"change_jitter must be a number in \[0, 10\], got -0.1"),
    ({"change_jitter": float("nan")}, r"change_jitter must be a number in \[0, 10\], got nan"),
    ({"change_jitter": "0.3"}, r"change_jitter must be a number in \[0, 10\], got '0.3'"),
    ({"epoch_noise": -1}, r"epoch_noise must be a number in \[0, 100\], got -1"),
    ({"epoch_noise": float("inf")}, r"epoch_noise must be a number in \[0, 100\], got inf"),
    ({"epoch_noise": True}, r"epoch_noise must be a number in \[0, 100\], got True"),
    ({"hidden_regimes": 1}, "hidden_regimes must be True or False, got 1"),
    ({"hidden_regimes": "yes"}, "hidden_regimes must be True or False, got 'yes'"),
])
def test_bad_uncertainty_names_the_field(fields: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Uncertainty(**fields)


def test_uncertainty_fields_are_normalized_and_the_spec_checks_its_type() -> None:
    assert Uncertainty(np.float64(0.5), 1, np.bool_(True)) == Uncertainty(0.5, 1.0, True)
    with pytest.raises(ValidationError, match="uncertainty must be an Uncertainty or None, got dict"):
        WorkloadSpec(jobs=4, gpus=8, uncertainty={"epoch_noise": 0.2})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: WorkloadSpec(10, 8, gang_mix=3),
         r"gang_mix must be a non-empty mapping of values to weights or a list of \(value, weight\) pairs, got int 3"),
        (lambda: WorkloadSpec(10, 8, adaptation_mix=None), r"adaptation_mix must be a non-empty mapping"),
        (lambda: generate_workload(WorkloadSpec(3, 2), seed=-1),
         r"seed must be a whole number >= 0 or a numpy SeedSequence, got -1"),
        (lambda: generate_workload(WorkloadSpec(3, 2), seed="x"), r"seed must be a whole number >= 0"),
        (lambda: resample_workload("shockwave_120jobs_32gpus", WorkloadSpec(3, 8), seed=1.5),
         r"seed must be a whole number >= 0"),
    ],
)
def test_malformed_mixes_and_seeds_are_rejected_by_name(call, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call()


def test_resampling_a_workload_with_gpu_types_keeps_its_mix():
    source = replace(load_workload("shockwave_120jobs_32gpus"),
                                 cluster=ClusterTypes({"v100": 16, "p100": 8, "k80": 8}))
    resampled = resample_workload(source, WorkloadSpec(jobs=20, gpus=64), seed=1)
    assert dict(resampled.cluster) == {"v100": 32, "p100": 16, "k80": 16}
    assert resample_workload(load_workload("shockwave_120jobs_32gpus"), WorkloadSpec(jobs=20, gpus=64)).cluster is None
