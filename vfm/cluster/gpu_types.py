"""GPU types as goods: a heterogeneous cluster's GPU counts and each job's epoch times per type.

The data is a `GpuProfiles` (`vfm.gpu_profiles`, re-exported here): the GPU types in speed order,
the *profiled* type, and per throughput set (``"tacc"``, ``"wisr"``) and per
``"<model> (batch size <b>)|<gang>"`` the training steps per second of the whole gang, one job
alone on ``gang`` GPUs of each type, None where that type cannot run the job. The shipped ones
(`GpuProfiles.shipped`) are the Shockwave artifact's ``gpu_types_throughputs.json`` in
``vfm/cluster/data/shockwave`` (uw-mad-dash/shockwave, MIT: see the LICENSE and README there):
V100, P100 and K80 (`GPU_TYPES`), V100 profiled (`PROFILED_TYPE`). Every function here takes the
profiles of its cluster (`ClusterTypes.profiles`), or an optional ``profiles=`` (the shipped ones
by default) when given type names: a GPU type of the user's is a type of their own profiles
(`GpuProfiles.with_type`, docs/how-to/add-a-gpu-type.md), not an edit of the library.

**The ratio rule.** A workload's epoch times are times on the profiled type ``p`` (V100 for the
shipped profiles) on the throughput set its ``throughputs`` field names. An epoch of batch size
``b`` of a job of gang ``g`` takes, on GPU type ``t``::

    epoch_s * thr_p(b, g) / thr_t(b, g)

(`epoch_seconds_by_type`). Where the ratio is unknown the job keeps what is known for sure:

* On the profiled type a job always takes its own ``epoch_s`` (the workload's times are the
  truth there), even at a batch size the profiles have no throughput for.
* ``inf`` on type ``t`` (the job cannot run there) where the profiles have None for ``t``, or
  have no profiled throughput to carry the time over with, or have no entry for the model, batch
  size and gang at all; and on every type but the profiled one for a job without `Training` (its
  model is unknown, so only its profiled times are).

`ClusterTypes` is a cluster's GPU count per type (a workload file's optional ``"cluster"``
field, `vfm.cluster.workload.Workload.cluster`), of the types of its profiles; it and
`GPU_TYPES` are `vfm.gpu_cluster`'s, re-exported here (both `vfm.cluster` and `vfm.planner` take
a cluster, so it lives below both).
`vfm.cluster.simulate` runs a workload on such a cluster with a `vfm.cluster.ClusterAware`
policy (docs/simulation.md, "GPU types").

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

A type of the user's is a type of their profiles; a cluster of it carries them:

>>> shipped = GpuProfiles.shipped()
>>> half = {key: row["v100"] / 2 for key, row in shipped.rows("tacc").items() if row["v100"]}
>>> mine = shipped.with_type("t4", {"tacc": half}, before="k80")  # half a V100, all round
>>> on_t4 = ClusterTypes({"v100": 4, "t4": 4}, profiles=mine)
>>> v100, t4 = isolated_s_by_type(job, "tacc", on_t4)
>>> bool(v100 == job.isolated_s), bool(np.isclose(t4, 2 * job.isolated_s))
(True, True)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import read_only
from vfm.cluster.workload.model import Job
from vfm.errors import ValidationError
from vfm.gpu_cluster import GPU_TYPES, PROFILED_TYPE, ClusterTypes, check_gpu_type
from vfm.gpu_profiles import THROUGHPUTS_FILE, GpuProfiles, checked_profiles
from vfm.parameters import Instance, Known, Listed, check, check_distinct, check_nonempty

FloatArray = NDArray[np.float64]

__all__ = [
    "GPU_TYPES",
    "PROFILED_TYPE",
    "THROUGHPUTS_FILE",
    "ClusterTypes",
    "GpuProfiles",
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

Types = ClusterTypes | Sequence[str] | None


def throughput_sets(profiles: GpuProfiles | None = None) -> tuple[str, ...]:
    """The throughput sets of `profiles` (the shipped ones by default)."""
    return checked_profiles(profiles).throughput_sets


def throughput_table(throughput_set: str = "tacc", gpu_type: str | None = None,
                     profiles: GpuProfiles | None = None) -> dict[str, float]:
    """Steps/s of each ``"<model> (batch size b)|<gang>"`` of a throughput set of `profiles` (the
    shipped ``gpu_types_throughputs.json``, the artifact's, by default) on one GPU type (the
    profiled one by default); a new dict, without the keys the type cannot run."""
    return checked_profiles(profiles).table(throughput_set, gpu_type)


def _resolve_types(types: Any, profiles: Any) -> tuple[tuple[str, ...], GpuProfiles]:
    """The type names of `types` (a `ClusterTypes`, a sequence of the profiles' type names, or
    None for all of them) and the profiles they are of: a cluster's own, else `profiles` (the
    shipped ones by default)."""
    if isinstance(types, ClusterTypes):
        if profiles is not None and checked_profiles(profiles) != types.profiles:
            raise ValidationError(f"profiles: {profiles!r} are not the profiles of the cluster types {types!r}; "
                                  f"leave profiles out (a cluster carries its own)")
        return types.types, types.profiles
    known = checked_profiles(profiles)
    if types is None:
        return known.types, known
    check("types", types, Listed(f"a ClusterTypes or a sequence of GPU type names (e.g. {known.types!r})",
                                 kinds=(Sequence,)))
    check_nonempty("types", len(types), f"GPU type ({', '.join(known.types)})")
    for gpu_type in types:
        check_gpu_type("types", gpu_type, profiles)
    check_distinct("types", types, "a GPU type")
    return tuple(types), known


def _check_job(job: Any, throughputs: Any, profiles: GpuProfiles) -> None:
    check("job", job, Instance(Job, "a vfm.cluster.Job (a workload's jobs)"))
    which = "a shipped throughput set" if profiles == GpuProfiles.shipped() else "a throughput set of the profiles"
    check(f"throughputs (for job id {job.id!r})", throughputs,
          Known(profiles.throughput_sets, which, "(pass the workload's `throughputs`)"))


def _size_key(model: str, batch_size: float, gang: int) -> str:
    size = int(batch_size) if float(batch_size).is_integer() else batch_size
    return f"{model} (batch size {size})|{gang}"


def epoch_seconds_by_type(job: Job, throughputs: str, types: Types = None, *,
                          profiles: GpuProfiles | None = None) -> FloatArray:
    """Each of `job`'s epochs' seconds on each GPU type, by the ratio rule (module docstring).

    Parameters
    ----------
    job : Job
        A workload's job; its ``epoch_s`` are times on the profiled type on the throughput set
        `throughputs`.
    throughputs : str
        The throughput set (`throughput_sets`) the job's workload names (`Workload.throughputs`).
    types : ClusterTypes or sequence of str, optional
        The GPU types, in the rows' order (a `ClusterTypes`'s `~ClusterTypes.types`); all the
        profiles' types by default.
    profiles : GpuProfiles, optional
        The profiles the type names are of; a `ClusterTypes`'s own (`ClusterTypes.profiles`)
        when `types` is one, else the shipped ones by default.

    Returns
    -------
    ndarray, shape (len(types), job.epochs)
        ``job.epoch_s`` exactly on the profiled type's row; ``epoch_s * thr_p / thr_t`` on type
        ``t``, ``inf`` where ``t`` cannot run the epoch or the ratio is unknown (module
        docstring). Each distinct batch size is looked up once.

    Raises
    ------
    ValidationError
        For a `job` that is not a `Job`, an unknown throughput set, `types` that are not types
        of the profiles (or repeat one), `profiles` that are not a `GpuProfiles` or differ from
        the cluster's.
    """
    names, known = _resolve_types(types, profiles)
    _check_job(job, throughputs, known)
    return _by_ratio(job, throughputs, names, known, job.batch_size, job.epoch_s)


def _by_ratio(job: Job, throughputs: str, names: tuple[str, ...], profiles: GpuProfiles, batch_size: FloatArray,
              seconds: FloatArray) -> FloatArray:
    """Profiled-type `seconds` at `batch_size` (both shape (k,)) of `job`'s model and gang on each
    of `names`, shape (len(names), k), by the ratio rule ``seconds * thr_p / thr_t`` in that order
    of operations: exactly `seconds` on the profiled type, ``inf`` where the rule gives no time
    (module docstring). Each distinct batch size is looked up once."""
    reference = profiles.profiled
    out = np.full((len(names), seconds.size), np.inf)
    others = [i for i, t in enumerate(names) if t != reference]
    if reference in names:
        out[names.index(reference)] = seconds
    if job.training is None or not others:
        return out
    rows = profiles.rows(throughputs)
    sizes, inverse = np.unique(batch_size, return_inverse=True)
    entries = [rows.get(_size_key(job.training.model, b, job.gpus), {}) for b in sizes.tolist()]
    inverse = inverse.reshape(-1)
    # None (cannot run), or no entry: NaN, and NaN times become inf below.
    profiled = np.array([row.get(reference) or np.nan for row in entries])[inverse]
    for i in others:
        times = seconds * profiled / np.array([row.get(names[i]) or np.nan for row in entries])[inverse]
        out[i] = np.where(np.isnan(times), np.inf, times)
    return out


def type_regimes(job: Job, throughputs: str, types: Types = None, *,
                 profiles: GpuProfiles | None = None) -> dict[str, dict[float, float]]:
    """What a scheduler of a cluster of `types` is told about `job`: for each type that can run
    every batch size of the job's profile, batch size -> seconds per epoch there.

    The profile's (`Job.regimes`, on the profiled type) seconds carried over by the ratio rule
    (module docstring). A type that cannot run one of the profile's batch sizes is left out: the job may
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
    names, known = _resolve_types(types, profiles)
    _check_job(job, throughputs, known)
    sizes, nominal = np.array(job.profile, dtype=np.float64).reshape(-1, 2).T
    seconds = _by_ratio(job, throughputs, names, known, sizes, nominal)
    return {name: dict(zip(sizes.tolist(), row.tolist(), strict=True))
            for name, row in zip(names, seconds, strict=True) if np.isfinite(row).all()}


def job_types(job: Job, throughputs: str, types: Types = None, *,
              profiles: GpuProfiles | None = None) -> tuple[str, ...]:
    """The types of `types` that can host `job`: those that run every batch size of its profile
    and of its epochs (`type_regimes`, `epoch_seconds_by_type`), in the order of `types`.

    Parameters and errors as `epoch_seconds_by_type`.
    """
    names, known = _resolve_types(types, profiles)
    hosts = type_profile(job, throughputs, names, profiles=known).hosts
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
        `type_regimes`: what a scheduler is told, per type that runs every batch size of the job's
        profile.
    hosts : ndarray of bool, shape (len(types),)
        The types that can host the job (`job_types`): they run every epoch and are in `regimes`.
    isolated_s : ndarray, shape (len(types),)
        `isolated_s_by_type`: the sum of the epochs' seconds, ``job.isolated_s`` exactly on the
        profiled type.
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


def type_profile(job: Job, throughputs: str, types: Types = None, *,
                 profiles: GpuProfiles | None = None) -> TypeProfile:
    """`job` on `types`: its epochs' seconds, told regimes, hosting types and isolated times, each
    computed once (`TypeProfile`). Parameters and errors as `epoch_seconds_by_type`."""
    names, known = _resolve_types(types, profiles)
    seconds = epoch_seconds_by_type(job, throughputs, names, profiles=known)
    regimes = type_regimes(job, throughputs, names, profiles=known)
    hosts = np.isfinite(seconds).all(axis=1) & np.isin(names, list(regimes))
    totals = seconds.sum(axis=1)
    if known.profiled in names:
        totals[names.index(known.profiled)] = job.isolated_s
    return TypeProfile(names, read_only(seconds), regimes, read_only(hosts), read_only(totals))


def fastest_isolated_s(job: Job, throughputs: str, types: Types = None, *,
                       profiles: GpuProfiles | None = None) -> float:
    """`job`'s isolated time on the fastest of `types` for it: ``min`` over the types of the sum
    of its epochs' seconds there (`epoch_seconds_by_type`); ``inf`` if no type can run it.

    A job runs on one type in a round (its gang is never split across types), so alone on this
    cluster its best is its whole run on its fastest type: the reference type of
    `vfm.planner.Policy` on several types (whose forecasts are there). Finish-time fairness measures against
    `proportional_isolated_s` instead: no fair split gives every job its fastest type. On the
    profiled type the time is ``job.isolated_s`` exactly.

    Parameters and errors as `epoch_seconds_by_type`.
    """
    return float(isolated_s_by_type(job, throughputs, types, profiles=profiles).min())


def proportional_isolated_s(job: Job, throughputs: str, cluster: ClusterTypes) -> float:
    r"""`job`'s isolated time on a slice of `cluster` proportional to it: every epoch at the rate
    :math:`\sum_k (c_k / G) / s_{ke}`, the cluster's types in proportion to their GPU counts
    :math:`c_k` (:math:`G` all of them), :math:`s_{ke}` the epoch's seconds on type `k` (a type that
    cannot host the job, `job_types`, or whose GPUs cannot hold its gang, adds nothing).

    The reference of finish-time fairness on a cluster of types (docs/simulation.md, "GPU
    types"): the job's time with an equal share of every type, which is what a fair split of a
    mixed cluster can give it (Gavel normalizes its heterogeneous max-min the same way). On one
    type it is the job's isolated time there (`isolated_s_by_type`; ``job.isolated_s`` on the
    profiled type); ``inf`` if no type of the cluster can host the job.

    Parameters and errors as `epoch_seconds_by_type` (`cluster` a `ClusterTypes`, of its own
    profiles).
    """
    check("cluster", cluster, Instance(ClusterTypes, "a ClusterTypes (the counts weigh the types)", with_value=True))
    return type_profile(job, throughputs, cluster).proportional_s(job.gpus, cluster)


def isolated_s_by_type(job: Job, throughputs: str, types: Types = None, *,
                       profiles: GpuProfiles | None = None) -> FloatArray:
    """`job`'s isolated time on each of `types`, shape (len(types),): the sum of its epochs' seconds
    there (`epoch_seconds_by_type`), ``job.isolated_s`` exactly on the profiled type, ``inf``
    where a type cannot run one of its epochs; a new array.

    Parameters and errors as `epoch_seconds_by_type`.
    """
    return type_profile(job, throughputs, types, profiles=profiles).isolated_s.copy()
