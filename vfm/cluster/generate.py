r"""Seeded workload generation, the way the Shockwave artifact builds its traces, and resampling of
shipped traces onto other clusters, loads and gang mixes.

`generate_workload` draws each job as the artifact's trace generator does
(``scripts/utils/generate_trace.py`` and ``utils.py`` ``generate_job`` of uw-mad-dash/shockwave):

1. a gang size from `WorkloadSpec.gang_mix`;
2. a job type (model and initial batch size) uniformly from the artifact's job table, among the
   types the throughput profiles cover at that gang (Recommendation runs on one GPU only);
3. a static run time, log-uniform over `WorkloadSpec.duration_s` (or, given
   `WorkloadSpec.duration_mix`, over a range drawn for the job from that mix: many short jobs and
   a few long ones, say); the job's training steps are that time at its initial batch size's
   throughput, and its epochs follow from the model's dataset size (the epoch count stays fixed
   when the batch size changes);
4. an adaptation mode from `WorkloadSpec.adaptation_mix`: ``static``; ``gns`` (the batch size
   doubles at the epochs of the artifact's gradient-noise-scale schedule for that job type and
   gang); ``accordion`` (the initial batch size in the model's critical regimes, the model's
   scaled batch size elsewhere; as in the artifact, a job shorter than 1000 s, a Transformer job
   or a job that starts at the scaled size stays static);
5. arrivals: a Poisson process with mean gap `WorkloadSpec.interarrival_s` from t = 0 (0: every
   job at t = 0, a burst).

A job's epoch at batch size `b` on `g` GPUs takes ``ceil(samples / b) / throughput(b, g)``
seconds, with the V100 throughputs of the shipped profiles (``gpu_types_throughputs.json``, the
artifact's, MIT). Generated jobs carry their `Training`, so `vfm.cluster.artifact` runs them too.

Uncertain adaptation (`WorkloadSpec.uncertainty`, an `Uncertainty`) perturbs what a job truly
runs, or what the scheduler is told, after the steps above. Its randomness comes from a stream of
its own (the seed's ``SeedSequence`` with one more spawn key), so a seed draws the same jobs,
arrivals and nominal schedules with and without it, and ``Uncertainty()`` (all off) generates
exactly what ``uncertainty=None`` does. With :math:`Z \sim N(0, 1)` independent draws:

- ``change_jitter`` :math:`\sigma_c`: job :math:`j` draws a stretch
  :math:`f_j = \exp(\sigma_c Z_j)`, and a change of its batch size (a GNS doubling, an edge of an
  Accordion critical regime) at nominal epoch :math:`e` moves to epoch :math:`\mathrm{round}(e f_j)`,
  clipped to :math:`[1, E]` for a job of :math:`E` epochs: its epoch :math:`k` runs the batch size
  of nominal epoch :math:`\min(\lfloor (k + 1/2) / f_j \rfloor, E - 1)` (and epoch 0 its initial
  size, its job type). The whole schedule stretches or shrinks and its batch sizes keep their
  order; a change stretched past the last epoch never happens.
- ``epoch_noise`` :math:`c`: epoch :math:`k` truly takes its nominal duration times
  :math:`\exp(\mu + \sigma Z_{jk})` with :math:`\sigma^2 = \log(1 + c^2)` and
  :math:`\mu = -\sigma^2 / 2`, a log-normal factor of mean 1 and coefficient of variation
  :math:`c`, independent across epochs. The told profile keeps the nominal durations.
- ``hidden_regimes``: the told profile lists every batch size the job's mode could reach on its
  gang, whether or not it does: under GNS the initial size and its doublings up to the model's
  largest (``LARGEST``), under Accordion the initial and the model's scaled size (``SCALED``),
  static the initial size; each one the throughput table covers for the gang, at its nominal
  ``ceil(samples / b) / throughput(b, g)``. Without it the told profile is the batch sizes the
  job runs.

A job whose told profile is not the one its phases imply carries it as the file's ``profile``
(`vfm.cluster.workload`); the simulator (`vfm.cluster.simulate`) tells a policy that profile and
runs the true, perturbed epochs. `vfm.cluster.artifact` does not replay the perturbation: its
mechanics rerun the adaptation rules from the job's `Training` and initial batch size (which
jitter keeps) at the table's throughputs, so the batch size changes at the nominal epochs and
every epoch takes its nominal time, and it tells a policy the batch sizes the rules can reach,
not the file's profile; only its completion deadline, from ``isolated_s`` (the sum of the true
epoch durations), sees the noise.

`resample_workload` draws jobs, with replacement, from a workload (a shipped trace by name) and
gives them new arrivals and gang sizes: a job moved to another gang keeps its epochs and batch
sizes, and each epoch's time is scaled by the throughput ratio of the two gangs; a job is only
moved to a gang its profile covers.

Examples
--------
>>> from dataclasses import replace
>>> from vfm.cluster.generate import Uncertainty, WorkloadSpec, generate_workload, resample_workload
>>> spec = WorkloadSpec(jobs=64, gpus=16, interarrival_s=60.0, gang_mix={1: 0.5, 2: 0.5})
>>> workload = generate_workload(spec, seed=1)
>>> workload.n_jobs, workload.gpus, sorted({job.gpus for job in workload.jobs})
(64, 16, [1, 2])
>>> generate_workload(spec, seed=1).isolated_s.tolist() == workload.isolated_s.tolist()
True
>>> resampled = resample_workload("shockwave_120jobs_32gpus", WorkloadSpec(jobs=40, gpus=8), seed=0)
>>> resampled.n_jobs, resampled.gpus
(40, 8)
>>> uncertain = generate_workload(replace(spec, uncertainty=Uncertainty(0.3, 0.2, True)), seed=1)
>>> [job.training.model for job in uncertain.jobs] == [job.training.model for job in workload.jobs]
True
>>> all(set(job.batch_size.tolist()) <= set(job.regimes) for job in uncertain.jobs)
True
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vfm.cluster.artifact._adaptation import LARGEST, SCALED, accordion_critical, gns_schedules
from vfm.cluster.gpu_types import ClusterTypes, throughput_table
from vfm.cluster.workload import epoch_records, load_workload
from vfm.cluster.workload.model import Job, Workload, derived_profile
from vfm.cluster.workload.reader import workload_from_dict
from vfm.cluster.workload_spec import Uncertainty, WorkloadSpec
from vfm.errors import ValidationError
from vfm.limits import MAX_ARRIVAL_ROUNDS, MAX_WORKLOAD_EPOCHS
from vfm.parameters import Either, Instance, Interval, Optional, Whole, check

__all__ = ["JOB_TYPES", "SAMPLES_PER_EPOCH", "Uncertainty", "WorkloadSpec", "generate_workload",
           "resample_workload"]

#: The artifact's job table (``job_table.py``): model -> initial batch sizes it generates.
JOB_TYPES: Mapping[str, tuple[int, ...]] = {
    "ResNet-18": (32, 64, 128, 256), "ResNet-50": (16, 32, 64), "Transformer": (16, 32, 64, 128),
    "LM": (5, 10, 20, 40, 80), "Recommendation": (512, 1024, 2048, 4096, 8192)}
#: Dataset size (samples per epoch) of each model, as in the shipped traces.
SAMPLES_PER_EPOCH: Mapping[str, int] = {
    "ResNet-18": 50000, "ResNet-50": 100000, "Transformer": 10000, "LM": 59675, "Recommendation": 117907}
# The artifact turns an Accordion job shorter than this (static run time, seconds) into a static one.
_ACCORDION_MIN_S = 1000.0
# The spawn key that sets the uncertainty's random stream apart from the seed's own.
_UNCERTAINTY_STREAM = 0x756E63


#: What a `spec` argument must be.
_SPEC = Instance(WorkloadSpec, "a WorkloadSpec")


def _check_seed(seed: Any) -> None:
    """A seed is a whole number within int64 (`vfm._validation.INT64_MAX`, as `vfm.planner.Policy`'s)
    or a SeedSequence (whose entropy may be any size)."""
    check("seed", seed, Either(Interval(Whole, 0), Instance(np.random.SeedSequence, "a numpy SeedSequence")))


def _check_name(name: Any) -> None:
    check("name", name, Optional(Instance(str, "a string", with_value=True)))


def _draw(rng: np.random.Generator, mix: tuple[tuple[Any, float], ...], size: int) -> list[Any]:
    values = [v for v, _ in mix]
    return [values[i] for i in rng.choice(len(values), size=size, p=[p for _, p in mix])]


def _arrivals(rng: np.random.Generator, spec: WorkloadSpec) -> np.ndarray:
    """Arrival times: the first job at 0, then exponential gaps of mean `interarrival_s`."""
    gaps = rng.exponential(spec.interarrival_s, size=spec.jobs - 1) if spec.interarrival_s > 0 \
        else np.zeros(spec.jobs - 1)
    return np.concatenate(([0.0], np.cumsum(gaps))).round(3)


def _told(job: Job) -> np.ndarray | None:
    """`job`'s profile as rows ``(batch_size, epoch_s)``, None when its epochs imply it."""
    return None if job.profile == derived_profile(job.batch_size, job.epoch_s) else np.array(job.profile)


def _uncertainty_rng(seed: int | np.random.SeedSequence) -> np.random.Generator:
    """The uncertainty's random stream: the seed's `SeedSequence` with one more spawn key, apart
    from the stream `generate_workload` draws the jobs from (and never spawned from the caller's
    sequence, which would change it)."""
    sequence = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(seed)
    return np.random.default_rng(np.random.SeedSequence(
        sequence.entropy, spawn_key=(*sequence.spawn_key, _UNCERTAINTY_STREAM), pool_size=sequence.pool_size))


def _jitter(batch: np.ndarray, stretch: float) -> np.ndarray:
    """`batch` (per epoch) with its changes moved from epoch ``e`` to ``round(e * stretch)``,
    within ``[1, epochs]`` (module docstring)."""
    if stretch == 1.0:
        return batch
    # Epoch k runs what the nominal schedule runs at its middle, (k + 1/2) / stretch.
    source = np.minimum(np.floor((np.arange(batch.size) + 0.5) / stretch), batch.size - 1).astype(np.int64)
    source[0] = 0  # the job starts at its initial batch size, its job type (and its Training's)
    return batch[source]


def _reachable(model: str, initial: int, gang: int, mode: str, table: Mapping[str, float]) -> list[int]:
    """The batch sizes a job's adaptation `mode` can reach on `gang` GPUs (`Uncertainty.hidden_regimes`)."""
    sizes = [initial]
    if mode == "gns":
        while sizes[-1] * 2 <= LARGEST[model]:
            sizes.append(sizes[-1] * 2)
    elif mode == "accordion":
        sizes.append(SCALED[model])
    return [b for b in sizes if f"{model} (batch size {b})|{gang}" in table]


def _noisy(nominal_s: list[np.ndarray], rng: np.random.Generator, cv: float) -> list[np.ndarray]:
    """Each job's true epoch durations: its nominal ones (`nominal_s`, per job) times independent
    log-normal factors of mean 1 and coefficient of variation `cv`, drawn for all epochs at once."""
    if cv == 0:
        return nominal_s
    sigma2 = math.log1p(cv * cv)
    factors = np.exp(-sigma2 / 2 + math.sqrt(sigma2) * rng.standard_normal(sum(s.size for s in nominal_s)))
    cuts = np.cumsum([s.size for s in nominal_s])[:-1]
    return [s * f for s, f in zip(nominal_s, np.split(factors, cuts), strict=True)]


def _job_batches(model: str, initial: int, gang: int, mode: str, epochs: int, table: Mapping[str, float],
                 schedules: Mapping[str, list[list[int]]]) -> np.ndarray:
    """The batch size of each of a job's epochs under its adaptation mode (module docstring);
    `schedules` are the GNS schedules (`gns_schedules`)."""
    epoch = np.arange(epochs)
    batch = np.full(epochs, initial, dtype=np.int64)
    if mode == "gns":
        schedule = np.array(schedules.get(f"{model} (batch size {initial})|{gang}", [[0, initial]]))
        batch = schedule[np.searchsorted(schedule[:, 0], epoch, side="right") - 1, 1]
        covered = np.array([f"{model} (batch size {b})|{gang}" in table for b in batch])
        batch = np.where(covered & (batch <= LARGEST[model]), batch, initial)
        batch = np.maximum.accumulate(batch)  # a size the profile lacks holds the last one it has
    elif mode == "accordion" and f"{model} (batch size {SCALED[model]})|{gang}" in table:
        scaled = SCALED[model]
        batch = np.where(accordion_critical(np.array(model), np.array(initial), epoch), initial, scaled)
    return batch


def _speed(model: str, batch: np.ndarray, gang: int, table: Mapping[str, float]) -> np.ndarray:
    """Steps per second of each entry of `batch` (whole numbers) on `gang` GPUs (NaN where the
    profile lacks it)."""
    sizes, inverse = np.unique(batch, return_inverse=True)  # a look-up per size, not per epoch
    speed = np.array([table.get(f"{model} (batch size {b})|{gang}", np.nan) for b in sizes.tolist()])
    return speed[inverse]


def _job_types(gang: int, table: Mapping[str, float]) -> list[tuple[str, int]]:
    return [(m, b) for m, sizes in JOB_TYPES.items() for b in sizes if f"{m} (batch size {b})|{gang}" in table]


@dataclass(frozen=True)
class _Drawn:
    """What `generate_workload` draws before expanding epochs: per job ``(gang, adaptation mode,
    model, initial batch size, total steps, epochs)``, and the arrival times."""

    jobs: list[tuple[int, str, str, int, int, int]]
    arrivals: np.ndarray


def _draw_jobs(rng: np.random.Generator, spec: WorkloadSpec, table: Mapping[str, float]) -> _Drawn:
    """Every job's gang, mode, type, steps and epochs, and the arrivals (in the order the artifact's
    generator draws them from `rng`), checked against the workload's limits: milliseconds for a
    hundred thousand jobs, where expanding their epochs takes minutes and gigabytes."""
    gangs = _draw(rng, spec.gang_weights, spec.jobs)
    if spec.duration_weights is None:
        low, high = np.log(spec.duration_s)
    else:  # each job's range from the mix, then its run time within it
        ranges = np.log(np.array(_draw(rng, spec.duration_weights, spec.jobs)))
        low, high = ranges[:, 0], ranges[:, 1]
    run_s = np.exp(rng.uniform(low, high, size=spec.jobs))
    modes = _draw(rng, spec.adaptation_weights, spec.jobs)
    arrivals = _arrivals(rng, spec)
    last = float(arrivals[-1]) / spec.round_s  # the loader's test; a Python float: inf, not a warning
    if last >= MAX_ARRIVAL_ROUNDS:
        raise ValidationError(f"interarrival_s = {spec.interarrival_s:g} over {spec.jobs} jobs puts the last arrival "
                              f"at {arrivals[-1]:.4g} s, {last:.3g} rounds of round_s = "
                              f"{spec.round_s:g} away: more than the {MAX_ARRIVAL_ROUNDS:.3g} a workload may have")
    types_of = {gang: _job_types(gang, table) for gang in set(gangs)}
    jobs = []
    for gang, run, mode in zip(gangs, run_s.tolist(), modes, strict=True):
        types = types_of[gang]
        if not types:
            raise ValidationError(f"gang_mix has gang size {gang}, which no job type of the profiles runs on")
        model, initial = types[int(rng.integers(len(types)))]
        static = mode == "accordion" and (run < _ACCORDION_MIN_S or model == "Transformer"
                                          or initial == SCALED.get(model))
        total_steps = math.ceil(run * table[f"{model} (batch size {initial})|{gang}"])
        epochs = max(1, math.ceil(total_steps / math.ceil(SAMPLES_PER_EPOCH[model] / initial)))
        jobs.append((gang, "static" if static else mode, model, initial, total_steps, epochs))
    total = sum(job[-1] for job in jobs)
    if total > MAX_WORKLOAD_EPOCHS:
        durations = (f"duration_s = ({spec.duration_s[0]:g}, {spec.duration_s[1]:g})" if spec.duration_mix is None
                     else f"duration_mix = {spec.duration_mix!r}")
        raise ValidationError(
            f"jobs = {spec.jobs} with {durations} draws "
            f"{total:.4g} epochs in all ({total / spec.jobs:.4g} per job), more than the "
            f"{MAX_WORKLOAD_EPOCHS:.0e} a workload may have (vfm.limits.MAX_WORKLOAD_EPOCHS); generate fewer jobs or "
            f"shorter ones")
    return _Drawn(jobs, arrivals)


def generate_workload(spec: WorkloadSpec, seed: int | np.random.SeedSequence = 0, name: str | None = None) -> Workload:
    """A generated workload (module docstring); the same `spec` and `seed` give the same workload.

    Parameters
    ----------
    spec : WorkloadSpec
    seed : int or numpy.random.SeedSequence
        A whole number from 0 to ``2**63 - 1`` (as a `vfm.planner.Policy`'s seed), or a
        SeedSequence.
    name : str, optional
        Default ``"generated-<jobs>jobs-<gpus>gpus-seed<seed>"``.

    Returns
    -------
    Workload
        Jobs in arrival order, ids 0..jobs-1, each with its `Training`; under
        `spec.uncertainty`, with the told profile as `Job.profile` and the true (jittered,
        noisy) epochs as `Job.batch_size` and `Job.epoch_s`.

    Raises
    ------
    vfm.errors.ValidationError
        For a bad `spec`, `seed` or `name`; and, after drawing the jobs' types, run times and
        arrivals but before expanding any epoch (the work, and the memory), when the drawn jobs
        have more epochs in all than a workload may have (`vfm.limits.MAX_WORKLOAD_EPOCHS`:
        fewer jobs or a shorter `duration_s` fit) or the last arrival is more rounds away than
        a workload's may be (`vfm.limits.MAX_ARRIVAL_ROUNDS`).
    """
    check("spec", spec, _SPEC)
    _check_seed(seed)
    _check_name(name)
    rng = np.random.default_rng(seed)
    table = throughput_table(spec.throughputs)  # on the profiled type, which the epoch times are of
    drawn = _draw_jobs(rng, spec, table)
    uncertainty = spec.uncertainty or Uncertainty()
    # Drawn apart from `rng`, so that the jobs above and below are the same with or without it.
    uncertain_rng = _uncertainty_rng(seed)
    stretch = np.exp(uncertainty.change_jitter * uncertain_rng.standard_normal(spec.jobs))
    schedules = gns_schedules()
    jobs: list[dict[str, Any]] = []
    batches: list[np.ndarray] = []
    nominal_s: list[np.ndarray] = []
    told: list[np.ndarray] = []  # per job, rows (batch_size, nominal epoch_s)
    for i, (gang, mode, model, initial, total_steps, epochs) in enumerate(drawn.jobs):
        samples = SAMPLES_PER_EPOCH[model]
        batch = _jitter(_job_batches(model, initial, gang, mode, epochs, table, schedules), float(stretch[i]))
        batches.append(batch)
        nominal_s.append(np.ceil(samples / batch) / _speed(model, batch, gang, table))
        # A GNS schedule's sizes are doublings, so the reachable sizes hold the used ones; the
        # union keeps the profile valid should a schedule ever hold another size.
        sizes = np.array(sorted(set(batch.tolist()).union(
            _reachable(model, initial, gang, mode, table) if uncertainty.hidden_regimes else ())))
        told.append(np.c_[sizes, np.ceil(samples / sizes) / _speed(model, sizes, gang, table)])
        jobs.append({"id": i, "arrival_s": float(drawn.arrivals[i]), "gpus": int(gang), "epochs": epochs,
                     "model": model, "adaptation": mode, "total_steps": total_steps, "samples_per_epoch": samples})
    true_s = _noisy(nominal_s, uncertain_rng, uncertainty.epoch_noise)
    for job, batch, seconds, profile in zip(jobs, batches, true_s, told, strict=True):
        job |= epoch_records(batch, seconds, profile)
    label = name or f"generated-{spec.jobs}jobs-{spec.gpus}gpus-seed{seed}"
    return workload_from_dict({"name": label, "gpus": spec.gpus, "round_s": spec.round_s,
                               "throughputs": spec.throughputs, "jobs": jobs})


def resample_workload(source: Workload | str | Path, spec: WorkloadSpec,
                      seed: int | np.random.SeedSequence = 0, name: str | None = None) -> Workload:
    """`spec.jobs` jobs drawn with replacement from `source`, with new arrivals and gangs.

    Parameters
    ----------
    source : Workload, or a path or shipped workload name
    spec : WorkloadSpec
        Its jobs, cluster, arrivals, gang mix and round length; `duration_s` and
        `adaptation_mix` do not apply (each job keeps its own).
    seed : int or numpy.random.SeedSequence
    name : str, optional
        Default ``"<source>-resampled-<jobs>jobs-<gpus>gpus-seed<seed>"``.

    Returns
    -------
    Workload
        On `spec.gpus` GPUs, of the source's GPU types in its proportions if it has types
        (`ClusterTypes.split`). Jobs in arrival order, ids 0..jobs-1; a job keeps its told profile (`Job.profile`),
        scaled by the throughput ratio as its epochs are. A job of `source` moved to a gang its
        profile does not cover (a job without `Training`, to any other gang) is never drawn for it.

    Raises
    ------
    vfm.errors.ValidationError
        For a bad `source`, `spec`, `seed` or `name`; when no job of `source` can run on a gang
        size of the mix; or, after drawing the source
        jobs and before copying any epoch, when they have more epochs in all than a workload may
        have (`vfm.limits.MAX_WORKLOAD_EPOCHS`).
    """
    check("spec", spec, _SPEC)
    _check_seed(seed)
    _check_name(name)
    check("source", source, Instance(Workload | str | Path, "a Workload, a path (str or Path) or a shipped workload's "
                                     "name", with_value=True))
    workload = source if isinstance(source, Workload) else load_workload(source)
    rng = np.random.default_rng(seed)
    table = throughput_table(workload.throughputs or spec.throughputs)  # on the profiled type
    gang_sizes = [g for g, _ in spec.gang_weights]
    # speed[g][j]: job j's speed-up moving from its own gang to g (None: cannot), per epoch and
    # then per entry of its told profile when it carries one (`told[j]`).
    speedup: dict[int, list[np.ndarray | None]] = {g: [] for g in gang_sizes}
    told = [_told(job) for job in workload.jobs]
    for job, profile in zip(workload.jobs, told, strict=True):  # per source job, once: profile lookups by name
        batch = (job.batch_size if profile is None else np.r_[job.batch_size, profile[:, 0]]).astype(np.int64)
        own = None if job.training is None else _speed(job.training.model, batch, job.gpus, table)
        for g in gang_sizes:
            if job.training is None:
                speedup[g].append(np.ones(batch.size) if g == job.gpus else None)
                continue
            ratio = _speed(job.training.model, batch, g, table) / own
            speedup[g].append(ratio if np.all(ratio > 0) else None)
    gangs = _draw(rng, spec.gang_weights, spec.jobs)
    arrivals = _arrivals(rng, spec)
    eligible = {g: [j for j, ratio in enumerate(speedup[g]) if ratio is not None] for g in gang_sizes}
    drawn = []  # the source job of each new one, drawn (in order) before any epoch is copied
    for gang in gangs:
        if not eligible[gang]:
            raise ValidationError(f"gang_mix has gang size {gang}, but no job of {workload.name!r} runs on it")
        drawn.append(eligible[gang][int(rng.integers(len(eligible[gang])))])
    total = sum(workload.jobs[j].epochs for j in drawn)
    if total > MAX_WORKLOAD_EPOCHS:
        raise ValidationError(f"jobs = {spec.jobs} drawn from {workload.name!r} have {total:.4g} epochs in all, more "
                              f"than the {MAX_WORKLOAD_EPOCHS:.0e} a workload may have "
                              f"(vfm.limits.MAX_WORKLOAD_EPOCHS); resample fewer jobs")
    jobs = []
    for i, (gang, j) in enumerate(zip(gangs, drawn, strict=True)):
        job, ratio, profile = workload.jobs[j], speedup[gang][j], told[j]
        assert ratio is not None
        record: dict[str, Any] = {"id": i, "arrival_s": float(arrivals[i]), "gpus": int(gang), "epochs": job.epochs}
        record |= epoch_records(job.batch_size, job.epoch_s / ratio[:job.epochs],
                                None if profile is None else np.c_[profile[:, 0], profile[:, 1] / ratio[job.epochs:]])
        if job.training is not None:
            t = job.training
            record |= {"model": t.model, "adaptation": t.adaptation, "total_steps": t.total_steps,
                       "samples_per_epoch": t.samples_per_epoch}
        jobs.append(record)
    label = name or f"{workload.name}-resampled-{spec.jobs}jobs-{spec.gpus}gpus-seed{seed}"
    # A source with GPU types keeps its mix: `spec.gpus` split in the source's proportions.
    profiles = None if workload.cluster is None else workload.cluster.profiles
    cluster = {} if workload.cluster is None else {"cluster": dict(ClusterTypes.split(
        spec.gpus, {t: float(c) for t, c in workload.cluster.items()}, profiles=profiles))}
    return workload_from_dict({"name": label, "gpus": spec.gpus, "round_s": spec.round_s,
                               "throughputs": workload.throughputs or spec.throughputs, "jobs": jobs, **cluster},
                              profiles=profiles)
