r"""Seeded workload generation, the way the Shockwave artifact builds its traces, and resampling of
shipped traces onto other clusters, loads and gang mixes.

`generate_workload` draws each job as the artifact's trace generator does
(``scripts/utils/generate_trace.py`` and ``utils.py`` ``generate_job`` of uw-mad-dash/shockwave):

1. a gang size from `WorkloadSpec.gang_mix`;
2. a job type (model and initial batch size) uniformly from the artifact's job table, among the
   types the throughput profiles cover at that gang (Recommendation runs on one GPU only);
3. a static run time, log-uniform over `WorkloadSpec.duration_s`; the job's training steps are
   that time at its initial batch size's throughput, and its epochs follow from the model's
   dataset size (the epoch count stays fixed when the batch size changes);
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

`resample_workload` draws jobs, with replacement, from a workload (a shipped trace by name) and
gives them new arrivals and gang sizes: a job moved to another gang keeps its epochs and batch
sizes, and each epoch's time is scaled by the throughput ratio of the two gangs; a job is only
moved to a gang its profile covers.

Examples
--------
>>> from vfm.cluster.generate import WorkloadSpec, generate_workload, resample_workload
>>> spec = WorkloadSpec(jobs=64, gpus=16, interarrival_s=60.0, gang_mix={1: 0.5, 2: 0.5})
>>> workload = generate_workload(spec, seed=1)
>>> workload.n_jobs, workload.gpus, sorted({job.gpus for job in workload.jobs})
(64, 16, [1, 2])
>>> generate_workload(spec, seed=1).isolated_s.tolist() == workload.isolated_s.tolist()
True
>>> resampled = resample_workload("shockwave_120jobs_32gpus", WorkloadSpec(jobs=40, gpus=8), seed=0)
>>> resampled.n_jobs, resampled.gpus
(40, 8)
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np

from vfm._validation import is_whole
from vfm.cluster.artifact._adaptation import LARGEST, SCALED, accordion_critical, gns_schedules
from vfm.cluster.artifact.mechanics import throughput_table
from vfm.cluster.workload import ADAPTATIONS, SHIPPED, Workload, load_workload, workload_from_dict
from vfm.errors import ValidationError

__all__ = ["JOB_TYPES", "SAMPLES_PER_EPOCH", "WorkloadSpec", "generate_workload", "resample_workload"]

#: The artifact's job table (``job_table.py``): model -> initial batch sizes it generates.
JOB_TYPES: Mapping[str, tuple[int, ...]] = {
    "ResNet-18": (32, 64, 128, 256), "ResNet-50": (16, 32, 64), "Transformer": (16, 32, 64, 128),
    "LM": (5, 10, 20, 40, 80), "Recommendation": (512, 1024, 2048, 4096, 8192)}
#: Dataset size (samples per epoch) of each model, as in the shipped traces.
SAMPLES_PER_EPOCH: Mapping[str, int] = {
    "ResNet-18": 50000, "ResNet-50": 100000, "Transformer": 10000, "LM": 59675, "Recommendation": 117907}
# The artifact's gang mix (``--scale-factor-mix`` of its trace generator).
_ARTIFACT_GANG_MIX = ((1, 0.6), (2, 0.3), (4, 0.09), (8, 0.01))
# The artifact turns an Accordion job shorter than this (static run time, seconds) into a static one.
_ACCORDION_MIN_S = 1000.0


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate (frozen; validated on construction, naming the field).

    Parameters
    ----------
    jobs : int
        Number of jobs.
    gpus : int
        GPUs in the cluster. Contention is ``jobs / gpus`` jobs per GPU over the trace.
    interarrival_s : float
        Mean gap between arrivals of the Poisson process (default 40 s, the 120-job trace's);
        0 makes every job arrive at t = 0.
    gang_mix : mapping of int to float
        Gang size -> probability weight (normalized). Default (None): the artifact's 0.6 / 0.3 /
        0.09 / 0.01 for 1 / 2 / 4 / 8 GPUs, without the gangs wider than the cluster. A gang
        given wider than the cluster is an error.
    adaptation_mix : mapping of str to float
        ``"static"``, ``"gns"``, ``"accordion"`` -> weight; default the shipped traces' 0 / 0.5 / 0.5.
        Generated jobs only: a resampled job keeps its own adaptation.
    duration_s : tuple of float
        ``(low, high)`` of the log-uniform static run time; default 0.2 h to 5 h, the shipped
        traces' range. Generated jobs only.
    round_s : float
        Round length of the workload (default 120 s).
    throughputs : str
        Throughput set of the shipped profiles (``"tacc"``, default, or ``"wisr"``).
    """

    jobs: int
    gpus: int
    interarrival_s: float = 40.0
    gang_mix: Mapping[int, float] | tuple[tuple[int, float], ...] | None = None
    adaptation_mix: Mapping[str, float] | tuple[tuple[str, float], ...] = (
        ("static", 0.0), ("gns", 0.5), ("accordion", 0.5))
    duration_s: tuple[float, float] = (720.0, 18000.0)
    round_s: float = 120.0
    throughputs: str = "tacc"

    def __post_init__(self) -> None:
        for name in ("jobs", "gpus"):
            value = getattr(self, name)
            if not is_whole(value) or value < 1:
                raise ValidationError(f"{name} must be a positive whole number, got {value!r}")
        _finite("interarrival_s", self.interarrival_s, lambda v: v >= 0, ">= 0")
        _finite("round_s", self.round_s, lambda v: v > 0, "> 0")
        gang_mix = self.gang_mix if self.gang_mix is not None else tuple(
            (g, w) for g, w in _ARTIFACT_GANG_MIX if g <= self.gpus)
        object.__setattr__(self, "gang_mix", _mix("gang_mix", gang_mix))
        object.__setattr__(self, "adaptation_mix", _mix("adaptation_mix", self.adaptation_mix))
        bad_gang = next((g for g, _ in self.gang_weights if not is_whole(g) or not 1 <= g <= self.gpus), None)
        if bad_gang is not None:
            raise ValidationError(f"gang_mix has gang size {bad_gang!r}; gang sizes must be whole numbers from 1 "
                                  f"to the cluster's {self.gpus} GPUs")
        bad_mode = next((m for m, _ in self.adaptation_weights if m not in ADAPTATIONS), None)
        if bad_mode is not None:
            raise ValidationError(f"adaptation_mix has {bad_mode!r}; the modes are {', '.join(ADAPTATIONS)}")
        low_high = self.duration_s
        if not (isinstance(low_high, tuple | list) and len(low_high) == 2
                and all(_is_real(v) and 0 < v < math.inf for v in low_high) and low_high[0] <= low_high[1]):
            raise ValidationError(f"duration_s must be (low, high) seconds with 0 < low <= high, got {low_high!r}")
        object.__setattr__(self, "duration_s", (float(low_high[0]), float(low_high[1])))
        sets = throughput_sets()
        if self.throughputs not in sets:
            raise ValidationError(f"throughputs must be one of the shipped sets {', '.join(sets)}, "
                                  f"got {self.throughputs!r}")


    @property
    def gang_weights(self) -> tuple[tuple[int, float], ...]:
        """`gang_mix` as ``((gang, probability), ...)``, probabilities summing to 1."""
        return cast(tuple[tuple[int, float], ...], self.gang_mix)

    @property
    def adaptation_weights(self) -> tuple[tuple[str, float], ...]:
        """`adaptation_mix` as ``((mode, probability), ...)``, probabilities summing to 1."""
        return cast(tuple[tuple[str, float], ...], self.adaptation_mix)


def _is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)


def _finite(name: str, value: Any, in_range: Any, what: str) -> None:
    if not (_is_real(value) and math.isfinite(value) and in_range(value)):
        raise ValidationError(f"{name} must be a finite number {what}, got {value!r}")


def _mix(name: str, mix: Any) -> tuple[tuple[Any, float], ...]:
    """A mix as ``((value, probability), ...)``, probabilities normalized."""
    pairs = tuple(mix.items()) if isinstance(mix, Mapping) else tuple(mix)
    if not pairs or not all(isinstance(p, tuple) and len(p) == 2 for p in pairs):
        raise ValidationError(f"{name} must be a non-empty mapping of values to weights, got {mix!r}")
    weights = [w for _, w in pairs]
    if not all(_is_real(w) and math.isfinite(w) and w >= 0 for w in weights) or sum(weights) <= 0:
        raise ValidationError(f"{name}'s weights must be finite numbers >= 0, not all 0, got {weights!r}")
    total = float(sum(weights))
    return tuple((value, float(w) / total) for value, w in pairs)


def throughput_sets() -> tuple[str, ...]:
    """The throughput sets of the shipped profiles."""
    with open(SHIPPED / "gpu_types_throughputs.json") as handle:
        return tuple(json.load(handle)["sets"])


def _draw(rng: np.random.Generator, mix: tuple[tuple[Any, float], ...], size: int) -> list[Any]:
    values = [v for v, _ in mix]
    return [values[i] for i in rng.choice(len(values), size=size, p=[p for _, p in mix])]


def _arrivals(rng: np.random.Generator, spec: WorkloadSpec) -> np.ndarray:
    """Arrival times: the first job at 0, then exponential gaps of mean `interarrival_s`."""
    gaps = rng.exponential(spec.interarrival_s, size=spec.jobs - 1) if spec.interarrival_s > 0 \
        else np.zeros(spec.jobs - 1)
    return np.concatenate(([0.0], np.cumsum(gaps))).round(3)


def _phases(batch: np.ndarray, epoch_s: np.ndarray) -> list[dict[str, float]]:
    """Per-epoch batch sizes and times as the file format's phases (runs of equal epochs)."""
    change = np.flatnonzero(np.r_[True, (batch[1:] != batch[:-1]) | (epoch_s[1:] != epoch_s[:-1])])
    lengths = np.diff(np.r_[change, batch.size])
    return [{"epochs": int(n), "batch_size": float(batch[i]), "epoch_s": float(epoch_s[i])}
            for i, n in zip(change, lengths, strict=True)]


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
    """Steps per second of each entry of `batch` on `gang` GPUs (NaN where the profile lacks it)."""
    return np.array([table.get(f"{model} (batch size {b})|{gang}", np.nan) for b in batch.tolist()])


def _job_types(gang: int, table: Mapping[str, float]) -> list[tuple[str, int]]:
    return [(m, b) for m, sizes in JOB_TYPES.items() for b in sizes if f"{m} (batch size {b})|{gang}" in table]


def generate_workload(spec: WorkloadSpec, seed: int | np.random.SeedSequence = 0, name: str | None = None) -> Workload:
    """A generated workload (module docstring); the same `spec` and `seed` give the same workload.

    Parameters
    ----------
    spec : WorkloadSpec
    seed : int or numpy.random.SeedSequence
    name : str, optional
        Default ``"generated-<jobs>jobs-<gpus>gpus-seed<seed>"``.

    Returns
    -------
    Workload
        Jobs in arrival order, ids 0..jobs-1, each with its `Training`.
    """
    if not isinstance(spec, WorkloadSpec):
        raise ValidationError(f"spec must be a WorkloadSpec, got {type(spec).__name__}")
    rng = np.random.default_rng(seed)
    table = throughput_table(spec.throughputs, "v100")
    gangs = _draw(rng, spec.gang_weights, spec.jobs)
    low, high = np.log(spec.duration_s)
    run_s = np.exp(rng.uniform(low, high, size=spec.jobs))
    modes = _draw(rng, spec.adaptation_weights, spec.jobs)
    arrivals = _arrivals(rng, spec)
    schedules = gns_schedules()
    types_of = {gang: _job_types(gang, table) for gang in set(gangs)}
    jobs = []
    for i, (gang, run, mode) in enumerate(zip(gangs, run_s.tolist(), modes, strict=True)):
        types = types_of[gang]
        if not types:
            raise ValidationError(f"gang_mix has gang size {gang}, which no job type of the profiles runs on")
        model, initial = types[int(rng.integers(len(types)))]
        static = mode == "accordion" and (run < _ACCORDION_MIN_S or model == "Transformer"
                                          or initial == SCALED.get(model))
        mode = "static" if static else mode
        samples = SAMPLES_PER_EPOCH[model]
        total_steps = math.ceil(run * table[f"{model} (batch size {initial})|{gang}"])
        epochs = max(1, math.ceil(total_steps / math.ceil(samples / initial)))
        batch = _job_batches(model, initial, gang, mode, epochs, table, schedules)
        epoch_s = np.ceil(samples / batch) / _speed(model, batch, gang, table)
        jobs.append({"id": i, "arrival_s": float(arrivals[i]), "gpus": int(gang), "epochs": epochs,
                     "model": model, "adaptation": mode, "total_steps": total_steps, "samples_per_epoch": samples,
                     "phases": _phases(batch, epoch_s)})
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
        Jobs in arrival order, ids 0..jobs-1; a job of `source` moved to a gang its profile does
        not cover (a job without `Training`, to any other gang) is never drawn for it.

    Raises
    ------
    vfm.errors.ValidationError
        When no job of `source` can run on a gang size of the mix.
    """
    if not isinstance(spec, WorkloadSpec):
        raise ValidationError(f"spec must be a WorkloadSpec, got {type(spec).__name__}")
    workload = source if isinstance(source, Workload) else load_workload(source)
    rng = np.random.default_rng(seed)
    table = throughput_table(workload.throughputs or spec.throughputs, "v100")
    gang_sizes = [g for g, _ in spec.gang_weights]
    # speed[g][j]: job j's per-epoch speed-up moving from its own gang to g (None: cannot).
    speedup: dict[int, list[np.ndarray | None]] = {g: [] for g in gang_sizes}
    for job in workload.jobs:  # per source job, once: profile lookups by name
        batch = job.batch_size.astype(np.int64)
        own = None if job.training is None else _speed(job.training.model, batch, job.gpus, table)
        for g in gang_sizes:
            if job.training is None:
                speedup[g].append(np.ones(job.epochs) if g == job.gpus else None)
                continue
            ratio = _speed(job.training.model, batch, g, table) / own
            speedup[g].append(ratio if np.all(ratio > 0) else None)
    gangs = _draw(rng, spec.gang_weights, spec.jobs)
    arrivals = _arrivals(rng, spec)
    jobs = []
    for i, gang in enumerate(gangs):
        eligible = [j for j, ratio in enumerate(speedup[gang]) if ratio is not None]
        if not eligible:
            raise ValidationError(f"gang_mix has gang size {gang}, but no job of {workload.name!r} runs on it")
        j = eligible[int(rng.integers(len(eligible)))]
        job, ratio = workload.jobs[j], speedup[gang][j]
        assert ratio is not None
        record: dict[str, Any] = {"id": i, "arrival_s": float(arrivals[i]), "gpus": int(gang), "epochs": job.epochs,
                                  "phases": _phases(job.batch_size, job.epoch_s / ratio)}
        if job.training is not None:
            t = job.training
            record |= {"model": t.model, "adaptation": t.adaptation, "total_steps": t.total_steps,
                       "samples_per_epoch": t.samples_per_epoch}
        jobs.append(record)
    label = name or f"{workload.name}-resampled-{spec.jobs}jobs-{spec.gpus}gpus-seed{seed}"
    return workload_from_dict({"name": label, "gpus": spec.gpus, "round_s": spec.round_s,
                               "throughputs": workload.throughputs or spec.throughputs, "jobs": jobs})
