"""A cluster's GPUs by type: `ClusterTypes`, a cluster's GPU count per type (a small frozen
value), of the types of some `vfm.gpu_profiles.GpuProfiles` (the shipped ones by default, whose
types are `GPU_TYPES`).

Both `vfm.cluster` (a workload's optional ``cluster``, the simulator, the typed baselines) and
`vfm.planner` (`vfm.planner.Policy`, its checkpoints) take a `ClusterTypes`, so it lives here,
below both, and needs neither. `vfm.cluster.ClusterTypes`, `vfm.cluster.GPU_TYPES` and the same
names in `vfm.cluster.gpu_types` are this module's objects, re-exported; `vfm.cluster.gpu_types`
has each job's epoch times per type, from the cluster's profiles (`ClusterTypes.profiles`).

A cluster carries its profiles because they say what its type names mean: the speed order its
types are kept in, the profiled type, and the throughputs the simulator turns epoch times with.
A GPU type of the user's is a type of their own profiles (`GpuProfiles.with_type`), given as
``ClusterTypes(counts, profiles=...)``.

Examples
--------
>>> cluster = ClusterTypes.split(256, {"v100": 1, "p100": 1, "k80": 1})
>>> dict(cluster), cluster.total
({'v100': 86, 'p100': 85, 'k80': 85}, 256)
>>> check_gpu_type("gpu_type", "a100")
Traceback (most recent call last):
    ...
vfm.errors.ValidationError: gpu_type must be a known GPU type (v100, p100, k80), got 'a100' (a type of your own: \
GpuProfiles.shipped().with_type(...), passed as profiles=)
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import read_only
from vfm.errors import ValidationError
from vfm.gpu_profiles import GpuProfiles, checked_profiles
from vfm.limits import MAX_GPUS
from vfm.parameters import Instance, Interval, Known, Real, Whole, check

IntArray = NDArray[np.int64]

__all__ = ["GPU_TYPES", "PROFILED_TYPE", "ClusterTypes", "check_gpu_type"]

#: The GPU types of the shipped throughput profiles (`GpuProfiles.shipped`), fastest first.
GPU_TYPES: tuple[str, ...] = GpuProfiles.shipped().types

#: The shipped profiles' profiled type: the type the shipped workloads' epoch times
#: (`Job.isolated_s`, its regimes) are measured on, and the one a workload without types runs on.
#: Code that has a cluster asks its profiles (``cluster.profiles.profiled``) instead.
PROFILED_TYPE: str = GpuProfiles.shipped().profiled

#: A cluster's GPUs, and one type's count in it (a type with none is left out, not given 0).
_GPUS = Interval(Whole, 1, MAX_GPUS, unit="GPUs", note="MAX_GPUS")
_COUNT = Interval(Whole, 1, MAX_GPUS, unit="GPUs", note="MAX_GPUS; leave a type with none out")


def check_gpu_type(name: str, gpu_type: Any, profiles: GpuProfiles | None = None) -> str:
    """`gpu_type` if it is one of the types of `profiles` (the shipped ones by default); else a
    `vfm.errors.ValidationError` that starts with `name` (what the caller was given) and lists the
    known types."""
    known = checked_profiles(profiles)
    hint = "(a type of your own: GpuProfiles.shipped().with_type(...), passed as profiles=)" \
        if profiles is None else ""
    return check(name, gpu_type, Known(known.types, "a known GPU type", hint))


class ClusterTypes(Mapping[str, int]):
    """A cluster's GPUs by type: a read-only mapping GPU type -> count, validated on construction.

    **Order.** Types are kept in the speed order of the cluster's profiles (their
    `~vfm.gpu_profiles.GpuProfiles.types`, fastest first; `GPU_TYPES` for the shipped ones)
    whatever order they are given in, so two clusters of the same counts and profiles are equal
    (and hash alike), and iteration, `types` and `counts` agree. A type of the user's goes where
    its profiles put it (`GpuProfiles.with_type`'s ``before``).

    Parameters
    ----------
    counts : Mapping[str, int]
        GPU type (one of the profiles' types) -> how many GPUs of it, each a positive whole
        number; at least one type, and at most `vfm.limits.MAX_GPUS` (1e6) GPUs in all.
    profiles : GpuProfiles, optional
        The GPU types the names are of, their speed order and throughputs; the shipped profiles
        (`GpuProfiles.shipped`) by default.
    name : str, default "counts"
        What messages call `counts` (a workload file's reader passes ``"workload: cluster"``).

    Attributes
    ----------
    types : tuple of str
        The cluster's types, in the profiles' order.
    counts : ndarray of int, shape (len(types),)
        The count of each of `types`; read-only.
    total : int
        All the cluster's GPUs.
    profiles : GpuProfiles
        The profiles given (the shipped ones by default).

    Raises
    ------
    ValidationError
        For a non-mapping, no types, an unknown type (naming it and the known ones), a count
        that is not a positive whole number (naming the type), more than `vfm.limits.MAX_GPUS`
        GPUs in all, or `profiles` that are not a `GpuProfiles`.

    Examples
    --------
    >>> ClusterTypes({"k80": 4, "v100": 8})
    ClusterTypes({'v100': 8, 'k80': 4})
    >>> ClusterTypes.single(32).total
    32
    >>> mine = GpuProfiles.shipped().with_type("t4", {"tacc": {"LM (batch size 10)|1": 60.0}}, before="k80")
    >>> list(ClusterTypes({"k80": 4, "t4": 2, "v100": 8}, profiles=mine))
    ['v100', 't4', 'k80']
    """

    __slots__ = ("_counts", "_profiles", "_total", "_types")

    def __init__(self, counts: Mapping[str, int], profiles: GpuProfiles | None = None, *,
                 name: str = "counts") -> None:
        known = checked_profiles(profiles)
        check(name, counts, Instance(Mapping, f"a non-empty mapping of GPU types ({', '.join(known.types)}) to "
                                              f"GPU counts", with_value=True, nonempty=True))
        for gpu_type, count in counts.items():
            check_gpu_type(name, gpu_type, profiles)
            check(f"{name}[{gpu_type!r}]", count, _COUNT)
        # Summed as Python ints: several counts of up to MAX_GPUS each may pass it together.
        if sum(int(count) for count in counts.values()) > MAX_GPUS:
            raise ValidationError(f"{name} must give at most {MAX_GPUS:.0e} GPUs in all (MAX_GPUS), got "
                                  f"{_shown_total(counts)}")
        types = tuple(t for t in known.types if t in counts)
        self._types = types
        self._profiles = profiles
        self._counts: IntArray = read_only(np.array([int(counts[t]) for t in types], dtype=np.int64))
        self._total = int(self._counts.sum())  # set last: it marks the value complete (`__setattr__`)

    @classmethod
    def single(cls, gpus: int, gpu_type: str | None = None, profiles: GpuProfiles | None = None) -> ClusterTypes:
        """A homogeneous cluster: `gpus` GPUs of `gpu_type`, by default the profiles' profiled
        type (what a workload without a ``cluster`` field is: V100 for the shipped profiles)."""
        check("gpus", gpus, _GPUS)
        chosen = checked_profiles(profiles).profiled if gpu_type is None else gpu_type
        return cls({check_gpu_type("gpu_type", chosen, profiles): int(gpus)}, profiles)

    @classmethod
    def split(cls, gpus: int, shares: Mapping[str, float], profiles: GpuProfiles | None = None) -> ClusterTypes:
        """`gpus` GPUs split across types by `shares`, in whole counts summing exactly to `gpus`.

        The rule is the largest remainder (Hamilton's method): type ``t``'s quota is
        ``gpus * shares[t] / sum(shares)``, computed exactly (as fractions); each type gets the
        whole part of its quota, and the GPUs left over go one each to the types of the largest
        fractional parts, ties to the type first in the profiles' order (the faster). A type
        whose count comes out 0 (a zero share, or too few GPUs to go round) is left out.

        Parameters
        ----------
        gpus : int
            All the cluster's GPUs, a positive whole number.
        shares : Mapping[str, float]
            GPU type -> its share, finite and >= 0, at least one > 0; only the ratios matter.
        profiles : GpuProfiles, optional
            As for `ClusterTypes`.

        Examples
        --------
        >>> dict(ClusterTypes.split(256, {"v100": 1, "p100": 1, "k80": 1}))
        {'v100': 86, 'p100': 85, 'k80': 85}
        >>> dict(ClusterTypes.split(10, {"v100": 0.25, "k80": 0.75}))  # quotas 2.5 and 7.5: a tie
        {'v100': 3, 'k80': 7}
        """
        check("gpus", gpus, _GPUS)
        known = checked_profiles(profiles)
        check("shares", shares, Instance(Mapping, f"a non-empty mapping of GPU types ({', '.join(known.types)}) to "
                                                  f"their shares", with_value=True, nonempty=True))
        for gpu_type, share in shares.items():
            check_gpu_type("shares", gpu_type, profiles)
            check(f"shares[{gpu_type!r}]", share, Interval(Real, 0))
        types = [t for t in known.types if t in shares]
        exact = [Fraction(float(shares[t])) for t in types]
        check("the largest of shares", float(max(exact)), Interval(Real, 0, closed="neither",
                                                                   note="give some type a share > 0"))
        quotas = [int(gpus) * s / sum(exact) for s in exact]
        counts = [math.floor(q) for q in quotas]
        left = int(gpus) - sum(counts)
        # Largest fractional part first; `sorted` is stable, so ties keep the profiles' order.
        for i in sorted(range(len(types)), key=lambda i: quotas[i] - counts[i], reverse=True)[:left]:
            counts[i] += 1
        return cls({t: c for t, c in zip(types, counts, strict=True) if c > 0}, profiles)

    @property
    def types(self) -> tuple[str, ...]:
        return self._types

    @property
    def counts(self) -> IntArray:
        return self._counts

    @property
    def total(self) -> int:
        return self._total

    @property
    def profiles(self) -> GpuProfiles:
        return GpuProfiles.shipped() if self._profiles is None else self._profiles

    def __getitem__(self, gpu_type: str) -> int:
        if gpu_type not in self._types:
            raise KeyError(gpu_type)
        return int(self._counts[self._types.index(gpu_type)])

    def __iter__(self) -> Iterator[str]:
        return iter(self._types)

    def __len__(self) -> int:
        return len(self._types)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ClusterTypes):
            return (self._types == other._types and bool((self._counts == other._counts).all())
                    and self.profiles == other.profiles)
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self._types, tuple(self._counts.tolist())))

    def __repr__(self) -> str:
        if self._profiles is None or self._profiles == GpuProfiles.shipped():
            return f"ClusterTypes({dict(self)!r})"
        return f"ClusterTypes({dict(self)!r}, profiles={self._profiles!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (ClusterTypes, (dict(self), self._profiles))

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_total"):
            raise AttributeError(f"ClusterTypes is read-only; cannot set {name!r}")
        super().__setattr__(name, value)


def _shown_total(counts: Mapping[str, Any]) -> str:
    """The sum of `counts` (each checked) with the counts, as a message shows them."""
    return f"{sum(int(c) for c in counts.values())} ({', '.join(f'{t}: {int(c)}' for t, c in counts.items())})"
