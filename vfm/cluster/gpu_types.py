"""GPU types as goods: a heterogeneous cluster's GPU counts and each job's epoch times per type.

The data is the Shockwave artifact's throughput profiles, ``gpu_types_throughputs.json`` in
``vfm/cluster/data/shockwave`` (uw-mad-dash/shockwave, MIT: see the LICENSE and README there):
per throughput set (``"tacc"``, ``"wisr"``) and per ``"<model> (batch size <b>)|<gang>"``, the
training steps per second of the whole gang, one job alone on ``gang`` GPUs of each type
(`GPU_TYPES`), null where that type cannot run the job. This module is the one reader of that
file (`throughput_sets`, `throughput_table`; `vfm.cluster.artifact` and `vfm.cluster.generate`
use them).

**The ratio rule.** A workload's epoch times are V100 times on the throughput set its
``throughputs`` field names. An epoch of batch size ``b`` of a job of gang ``g`` takes, on GPU
type ``t``::

    epoch_s * thr_v100(b, g) / thr_t(b, g)

(`epoch_seconds_by_type`). Where the ratio is unknown the job keeps what is known for sure:

* On V100 a job always takes its own ``epoch_s`` (the workload's times are the truth for V100),
  even at a batch size the table has no V100 throughput for.
* ``inf`` on type ``t`` (the job cannot run there) where the table has null (or 0) for ``t``, or
  has no V100 throughput to carry the time over with, or has no entry for the model, batch size
  and gang at all; and on every type but V100 for a job without `Training` (its model is
  unknown, so only its V100 times are).

`ClusterTypes` is a cluster's GPU count per type (a workload file's optional ``"cluster"``
field, `vfm.cluster.workload.Workload.cluster`); it and `GPU_TYPES` are `vfm.gpu_cluster`'s,
re-exported here (both `vfm.cluster` and `vfm.planner` take a cluster, so it lives below both).
`vfm.cluster.simulate` runs a workload on such a cluster with a
`vfm.cluster.protocol.TypedSchedulingPolicy` (docs/simulation.md, "GPU types").

Examples
--------
>>> from vfm.cluster.workload import load_workload
>>> cluster = ClusterTypes.split(256, {"v100": 1, "p100": 1, "k80": 1})
>>> dict(cluster), cluster.total
({'v100': 86, 'p100': 85, 'k80': 85}, 256)
>>> job = load_workload("shockwave_120jobs_32gpus").jobs[0]
>>> seconds = epoch_seconds_by_type(job, "tacc", cluster)
>>> seconds.shape == (3, job.epochs), bool((seconds[0] == job.epoch_s).all())
(True, True)
>>> fastest_isolated_s(job, "tacc", cluster) == job.isolated_s  # V100 is this job's fastest type
True
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import read_only
from vfm.cluster.workload_model import Job
from vfm.errors import ValidationError
from vfm.gpu_cluster import GPU_TYPES, PROFILED_TYPE, ClusterTypes, check_gpu_type

FloatArray = NDArray[np.float64]

__all__ = [
    "GPU_TYPES",
    "PROFILED_TYPE",
    "THROUGHPUTS_FILE",
    "ClusterTypes",
    "TypeProfile",
    "epoch_seconds_by_type",
    "fastest_isolated_s",
    "isolated_s_by_type",
    "job_types",
    "proportional_isolated_s",
    "throughput_sets",
    "throughput_table",
    "type_profile",
    "type_regimes",
]

#: The shipped throughput profiles (the Shockwave artifact's, MIT).
THROUGHPUTS_FILE = Path(__file__).resolve().parent / "data" / "shockwave" / "gpu_types_throughputs.json"


@lru_cache(maxsize=1)
def _profiles() -> dict[str, Any]:
    """The parsed throughput file, read once (callers copy what they hand out)."""
    with open(THROUGHPUTS_FILE) as handle:
        raw: dict[str, Any] = json.load(handle)
    return raw


def throughput_sets() -> tuple[str, ...]:
    """The throughput sets of the shipped profiles."""
    return tuple(_profiles()["sets"])


def _rows(throughput_set: str) -> Mapping[str, Mapping[str, float | None]]:
    sets = _profiles()["sets"]
    if throughput_set not in sets:
        raise ValidationError(f"unknown throughput set {throughput_set!r}; the shipped ones are {', '.join(sets)}")
    rows: Mapping[str, Mapping[str, float | None]] = sets[throughput_set]
    return rows


def throughput_table(throughput_set: str = "tacc", gpu_type: str = PROFILED_TYPE) -> dict[str, float]:
    """Steps/s of each ``"<model> (batch size b)|<gang>"`` in a set of the shipped
    ``gpu_types_throughputs.json`` (the artifact's profiles), for one GPU type."""
    return {key: float(row[gpu_type]) for key, row in _rows(throughput_set).items()  # type: ignore[arg-type]
            if row.get(gpu_type)}


def _resolve_types(types: ClusterTypes | Sequence[str]) -> tuple[str, ...]:
    """The type names of `types` (a `ClusterTypes` or a sequence of `GPU_TYPES` names)."""
    if isinstance(types, ClusterTypes):
        return types.types
    if isinstance(types, str) or not isinstance(types, Sequence):
        raise ValidationError(f"types must be a ClusterTypes or a sequence of GPU type names (e.g. {GPU_TYPES!r}), "
                              f"got {type(types).__name__} {types!r}")
    if not types:
        raise ValidationError(f"types must name at least one GPU type ({', '.join(GPU_TYPES)}), got none")
    for gpu_type in types:
        check_gpu_type("types", gpu_type)
    if len(set(types)) < len(types):
        raise ValidationError(f"types must not repeat a type, got {list(types)!r}")
    return tuple(types)


def _check_job(job: Any, throughputs: Any) -> None:
    if not isinstance(job, Job):
        raise ValidationError(f"job must be a vfm.cluster.Job (a workload's jobs), got {type(job).__name__}")
    if not isinstance(throughputs, str) or throughputs not in throughput_sets():
        raise ValidationError(f"throughputs (for job id {job.id!r}) must name a shipped throughput set "
                              f"({', '.join(throughput_sets())}), got {throughputs!r}; pass the workload's "
                              f"`throughputs`")


def _size_key(model: str, batch_size: float, gang: int) -> str:
    size = int(batch_size) if float(batch_size).is_integer() else batch_size
    return f"{model} (batch size {size})|{gang}"


def epoch_seconds_by_type(job: Job, throughputs: str, types: ClusterTypes | Sequence[str] = GPU_TYPES) -> FloatArray:
    """Each of `job`'s epochs' seconds on each GPU type, by the ratio rule (module docstring).

    Parameters
    ----------
    job : Job
        A workload's job; its ``epoch_s`` are V100 times on the throughput set `throughputs`.
    throughputs : str
        The throughput set (`throughput_sets`) the job's workload names (`Workload.throughputs`).
    types : ClusterTypes or sequence of str
        The GPU types, in the rows' order (a `ClusterTypes`'s `~ClusterTypes.types`);
        `GPU_TYPES` by default.

    Returns
    -------
    ndarray, shape (len(types), job.epochs)
        ``job.epoch_s`` exactly on the V100 row; ``epoch_s * thr_v100 / thr_t`` on type ``t``,
        ``inf`` where ``t`` cannot run the epoch or the ratio is unknown (module docstring). Each
        distinct batch size is looked up once.

    Raises
    ------
    ValidationError
        For a `job` that is not a `Job`, an unknown throughput set, or `types` that are not
        known GPU types (or repeat one).
    """
    names = _resolve_types(types)
    _check_job(job, throughputs)
    return _by_ratio(job, throughputs, names, job.batch_size, job.epoch_s)


def _by_ratio(job: Job, throughputs: str, names: tuple[str, ...], batch_size: FloatArray,
              seconds: FloatArray) -> FloatArray:
    """V100 `seconds` at `batch_size` (both shape (k,)) of `job`'s model and gang on each of
    `names`, shape (len(names), k), by the ratio rule ``seconds * thr_v100 / thr_t`` in that order
    of operations: exactly `seconds` on V100, ``inf`` where the rule gives no time (module
    docstring). Each distinct batch size is looked up once."""
    out = np.full((len(names), seconds.size), np.inf)
    others = [i for i, t in enumerate(names) if t != PROFILED_TYPE]
    if PROFILED_TYPE in names:
        out[names.index(PROFILED_TYPE)] = seconds
    if job.training is None or not others:
        return out
    rows = _rows(throughputs)
    sizes, inverse = np.unique(batch_size, return_inverse=True)
    entries = [rows.get(_size_key(job.training.model, b, job.gpus), {}) for b in sizes.tolist()]
    inverse = inverse.reshape(-1)
    # null or 0 (cannot run), or no entry: NaN, and NaN times become inf below.
    profiled = np.array([row.get(PROFILED_TYPE) or np.nan for row in entries])[inverse]
    for i in others:
        times = seconds * profiled / np.array([row.get(names[i]) or np.nan for row in entries])[inverse]
        out[i] = np.where(np.isnan(times), np.inf, times)
    return out


def type_regimes(job: Job, throughputs: str,
                 types: ClusterTypes | Sequence[str] = GPU_TYPES) -> dict[str, dict[float, float]]:
    """What a scheduler of a cluster of `types` is told about `job`: for each type that can run
    every batch size of the job's profile, batch size -> seconds per epoch there.

    The profile's (`Job.regimes`, V100) seconds carried over by the ratio rule (module
    docstring). A type that cannot run one of the profile's batch sizes is left out: the job may
    reach that batch size in any round, and the simulator never moves a gang inside a round, so
    such a type cannot host the job (`job_types`).

    Parameters and errors as `epoch_seconds_by_type`.

    Examples
    --------
    >>> from vfm.cluster.workload import load_workload
    >>> job = load_workload("shockwave_120jobs_32gpus").jobs[0]
    >>> regimes = type_regimes(job, "tacc")
    >>> regimes["v100"] == job.regimes, sorted(regimes) == sorted(job_types(job, "tacc"))
    (True, True)
    """
    names = _resolve_types(types)
    _check_job(job, throughputs)
    sizes, nominal = np.array(job.profile, dtype=np.float64).reshape(-1, 2).T
    seconds = _by_ratio(job, throughputs, names, sizes, nominal)
    return {name: dict(zip(sizes.tolist(), row.tolist(), strict=True))
            for name, row in zip(names, seconds, strict=True) if np.isfinite(row).all()}


def job_types(job: Job, throughputs: str, types: ClusterTypes | Sequence[str] = GPU_TYPES) -> tuple[str, ...]:
    """The types of `types` that can host `job`: those that run every batch size of its profile
    and of its epochs (`type_regimes`, `epoch_seconds_by_type`), in the order of `types`.

    Parameters and errors as `epoch_seconds_by_type`.
    """
    names = _resolve_types(types)
    hosts = type_profile(job, throughputs, names).hosts
    return tuple(name for k, name in enumerate(names) if hosts[k])


@dataclass(frozen=True, eq=False)
class TypeProfile:
    """One job on a list of GPU types, computed once (`type_profile`); arrays read-only.

    Attributes
    ----------
    types : tuple of str
    seconds : ndarray, shape (len(types), epochs)
        `epoch_seconds_by_type`.
    regimes : dict
        `type_regimes`: what a scheduler is told, per type that runs every profiled batch size.
    hosts : ndarray of bool, shape (len(types),)
        The types that can host the job (`job_types`): they run every epoch and are in `regimes`.
    isolated_s : ndarray, shape (len(types),)
        `isolated_s_by_type`: the sum of the epochs' seconds, ``job.isolated_s`` exactly on V100.
    """

    types: tuple[str, ...]
    seconds: FloatArray
    regimes: dict[str, dict[float, float]]
    hosts: NDArray[np.bool_]
    isolated_s: FloatArray

    def proportional_s(self, gpus: int, cluster: ClusterTypes) -> float:
        """`proportional_isolated_s` for a job of gang `gpus` on `cluster` (whose types these are)."""
        if len(cluster) == 1:
            return float(self.isolated_s[0])
        hosts = self.hosts & (gpus <= cluster.counts)
        if not hosts.any():
            return float("inf")
        rates = np.where(hosts[:, None], 1.0 / self.seconds, 0.0)
        return float((1.0 / ((cluster.counts / cluster.total) @ rates)).sum())


def type_profile(job: Job, throughputs: str, types: ClusterTypes | Sequence[str] = GPU_TYPES) -> TypeProfile:
    """`job` on `types`: its epochs' seconds, told regimes, hosting types and isolated times, each
    computed once (`TypeProfile`). Parameters and errors as `epoch_seconds_by_type`."""
    names = _resolve_types(types)
    seconds = epoch_seconds_by_type(job, throughputs, names)
    regimes = type_regimes(job, throughputs, names)
    hosts = np.isfinite(seconds).all(axis=1) & np.isin(names, list(regimes))
    totals = seconds.sum(axis=1)
    if PROFILED_TYPE in names:
        totals[names.index(PROFILED_TYPE)] = job.isolated_s
    return TypeProfile(names, read_only(seconds), regimes, read_only(hosts), read_only(totals))


def fastest_isolated_s(job: Job, throughputs: str, types: ClusterTypes | Sequence[str] = GPU_TYPES) -> float:
    """`job`'s isolated time on the fastest of `types` for it: ``min`` over the types of the sum
    of its epochs' seconds there (`epoch_seconds_by_type`); ``inf`` if no type can run it.

    A job runs on one type in a round (its gang is never split across types), so alone on this
    cluster its best is its whole run on its fastest type: the reference type of
    `vfm.planner.TypedPolicy` (whose forecasts are there). Finish-time fairness measures against
    `proportional_isolated_s` instead: no fair split gives every job its fastest type. On V100
    the time is ``job.isolated_s`` exactly.

    Parameters and errors as `epoch_seconds_by_type`.
    """
    return float(isolated_s_by_type(job, throughputs, types).min())


def proportional_isolated_s(job: Job, throughputs: str, cluster: ClusterTypes) -> float:
    r"""`job`'s isolated time on a slice of `cluster` proportional to it: every epoch at the rate
    :math:`\sum_k (c_k / G) / s_{ke}`, the cluster's types in proportion to their GPU counts
    :math:`c_k` (:math:`G` all of them), :math:`s_{ke}` the epoch's seconds on type `k` (a type that
    cannot host the job, `job_types`, or whose GPUs cannot hold its gang, adds nothing).

    The reference of finish-time fairness on a cluster of types (docs/simulation.md, "GPU
    types"): the job's time with an equal share of every type, which is what a fair split of a
    mixed cluster can give it (Gavel normalizes its heterogeneous max-min the same way). On one
    type it is the job's isolated time there (`isolated_s_by_type`; ``job.isolated_s`` on V100);
    ``inf`` if no type of the cluster can host the job.

    Parameters and errors as `epoch_seconds_by_type` (`cluster` a `ClusterTypes`).
    """
    if not isinstance(cluster, ClusterTypes):
        raise ValidationError(f"cluster must be a ClusterTypes (the counts weigh the types), got "
                              f"{type(cluster).__name__} {cluster!r}")
    return type_profile(job, throughputs, cluster).proportional_s(job.gpus, cluster)


def isolated_s_by_type(job: Job, throughputs: str, types: ClusterTypes | Sequence[str] = GPU_TYPES) -> FloatArray:
    """`job`'s isolated time on each of `types`, shape (len(types),): the sum of its epochs' seconds
    there (`epoch_seconds_by_type`), ``job.isolated_s`` exactly on V100, ``inf`` where a type
    cannot run one of its epochs.

    Parameters and errors as `epoch_seconds_by_type`.
    """
    return type_profile(job, throughputs, types).isolated_s.copy()
