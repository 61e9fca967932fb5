"""A cluster's GPUs by type: the known GPU types (`GPU_TYPES`) and `ClusterTypes`, a cluster's GPU
count per type (a small frozen value).

Both `vfm.cluster` (a workload's optional ``cluster``, the simulator, the typed baselines) and
`vfm.planner` (`vfm.planner.TypedPolicy`, its checkpoints) take a `ClusterTypes`, so it lives here,
below both, and needs neither. `vfm.cluster.ClusterTypes`, `vfm.cluster.GPU_TYPES` and the same
names in `vfm.cluster.gpu_types` are this module's objects, re-exported; `vfm.cluster.gpu_types`
has each job's epoch times per type, from the throughput profiles whose columns `GPU_TYPES` names.

Examples
--------
>>> cluster = ClusterTypes.split(256, {"v100": 1, "p100": 1, "k80": 1})
>>> dict(cluster), cluster.total
({'v100': 86, 'p100': 85, 'k80': 85}, 256)
>>> check_gpu_type("gpu_type", "a100")
Traceback (most recent call last):
    ...
vfm.errors.ValidationError: gpu_type: unknown GPU type 'a100'; the known types are v100, p100, k80
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from fractions import Fraction
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vfm._validation import is_whole, read_only
from vfm.errors import ValidationError

IntArray = NDArray[np.int64]

__all__ = ["GPU_TYPES", "PROFILED_TYPE", "ClusterTypes", "check_gpu_type"]

#: The GPU types of the throughput profiles (the file's ``types``), fastest first; the
#: workloads' epoch times are times on the first.
GPU_TYPES: tuple[str, ...] = ("v100", "p100", "k80")

#: The type a workload's epoch times (`Job.isolated_s`, its regimes) are measured on; every other
#: type's times follow from the throughput ratio to it, and a workload without types runs on it.
PROFILED_TYPE: str = GPU_TYPES[0]


def check_gpu_type(name: str, gpu_type: Any) -> str:
    """`gpu_type` if it is one of `GPU_TYPES`; else a `vfm.errors.ValidationError` that starts
    with `name` (what the caller was given) and lists the known types."""
    if not isinstance(gpu_type, str) or gpu_type not in GPU_TYPES:
        raise ValidationError(f"{name}: unknown GPU type {gpu_type!r}; the known types are {', '.join(GPU_TYPES)}")
    return gpu_type


class ClusterTypes(Mapping[str, int]):
    """A cluster's GPUs by type: a read-only mapping GPU type -> count, validated on construction.

    Types are kept in `GPU_TYPES` order (fastest first) whatever order they are given in, so two
    clusters of the same counts are equal (and hash alike), and iteration, `types` and `counts`
    agree.

    Parameters
    ----------
    counts : Mapping[str, int]
        GPU type (one of `GPU_TYPES`) -> how many GPUs of it, each a positive whole number; at
        least one type.

    Attributes
    ----------
    types : tuple of str
        The cluster's types, in `GPU_TYPES` order.
    counts : ndarray of int, shape (len(types),)
        The count of each of `types`; read-only.
    total : int
        All the cluster's GPUs.

    Raises
    ------
    ValidationError
        For a non-mapping, no types, an unknown type (naming it and the known ones) or a count
        that is not a positive whole number (naming the type).

    Examples
    --------
    >>> ClusterTypes({"k80": 4, "v100": 8})
    ClusterTypes({'v100': 8, 'k80': 4})
    >>> ClusterTypes.single(32).total
    32
    """

    __slots__ = ("_counts", "_total", "_types")

    def __init__(self, counts: Mapping[str, int]) -> None:
        if not isinstance(counts, Mapping):
            raise ValidationError(f"counts must map GPU types ({', '.join(GPU_TYPES)}) to GPU counts, got "
                                  f"{type(counts).__name__} {counts!r}")
        if not counts:
            raise ValidationError(f"counts must give at least one GPU type ({', '.join(GPU_TYPES)}), got none")
        for gpu_type, count in counts.items():
            check_gpu_type("counts", gpu_type)
            if not is_whole(count) or count < 1:
                raise ValidationError(f"counts[{gpu_type!r}] must be a positive whole number of GPUs, got {count!r} "
                                      f"(leave a type out rather than giving it 0)")
        types = tuple(t for t in GPU_TYPES if t in counts)
        self._types = types
        self._counts: IntArray = read_only(np.array([int(counts[t]) for t in types], dtype=np.int64))
        self._total = int(self._counts.sum())

    @classmethod
    def single(cls, gpus: int, gpu_type: str = PROFILED_TYPE) -> ClusterTypes:
        """A homogeneous cluster: `gpus` GPUs of `gpu_type` (what a workload without a
        ``cluster`` field is, on V100)."""
        _check_positive("gpus", gpus)
        return cls({check_gpu_type("gpu_type", gpu_type): int(gpus)})

    @classmethod
    def split(cls, gpus: int, shares: Mapping[str, float]) -> ClusterTypes:
        """`gpus` GPUs split across types by `shares`, in whole counts summing exactly to `gpus`.

        The rule is the largest remainder (Hamilton's method): type ``t``'s quota is
        ``gpus * shares[t] / sum(shares)``, computed exactly (as fractions); each type gets the
        whole part of its quota, and the GPUs left over go one each to the types of the largest
        fractional parts, ties to the type first in `GPU_TYPES` (the faster). A type whose count
        comes out 0 (a zero share, or too few GPUs to go round) is left out.

        Parameters
        ----------
        gpus : int
            All the cluster's GPUs, a positive whole number.
        shares : Mapping[str, float]
            GPU type -> its share, finite and >= 0, at least one > 0; only the ratios matter.

        Examples
        --------
        >>> dict(ClusterTypes.split(256, {"v100": 1, "p100": 1, "k80": 1}))
        {'v100': 86, 'p100': 85, 'k80': 85}
        >>> dict(ClusterTypes.split(10, {"v100": 0.25, "k80": 0.75}))  # quotas 2.5 and 7.5: a tie
        {'v100': 3, 'k80': 7}
        """
        _check_positive("gpus", gpus)
        if not isinstance(shares, Mapping) or not shares:
            raise ValidationError(f"shares must map GPU types ({', '.join(GPU_TYPES)}) to their shares, got {shares!r}")
        for gpu_type, share in shares.items():
            check_gpu_type("shares", gpu_type)
            if isinstance(share, bool) or not isinstance(share, int | float | np.integer | np.floating) \
                    or not math.isfinite(share) or share < 0:
                raise ValidationError(f"shares[{gpu_type!r}] must be a finite number >= 0, got {share!r}")
        types = [t for t in GPU_TYPES if t in shares]
        exact = [Fraction(float(shares[t])) for t in types]
        if sum(exact) == 0:
            raise ValidationError(f"shares must give some type a share > 0, got {dict(shares)!r}")
        quotas = [int(gpus) * s / sum(exact) for s in exact]
        counts = [math.floor(q) for q in quotas]
        left = int(gpus) - sum(counts)
        # Largest fractional part first; `sorted` is stable, so ties keep GPU_TYPES order.
        for i in sorted(range(len(types)), key=lambda i: quotas[i] - counts[i], reverse=True)[:left]:
            counts[i] += 1
        return cls({t: c for t, c in zip(types, counts, strict=True) if c > 0})

    @property
    def types(self) -> tuple[str, ...]:
        return self._types

    @property
    def counts(self) -> IntArray:
        return self._counts

    @property
    def total(self) -> int:
        return self._total

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
            return self._types == other._types and bool((self._counts == other._counts).all())
        return super().__eq__(other)

    def __hash__(self) -> int:
        return hash((self._types, tuple(self._counts.tolist())))

    def __repr__(self) -> str:
        return f"ClusterTypes({dict(self)!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        if hasattr(self, "_total"):
            raise AttributeError(f"ClusterTypes is read-only; cannot set {name!r}")
        super().__setattr__(name, value)


def _check_positive(name: str, value: Any) -> None:
    if not is_whole(value) or value < 1:
        raise ValidationError(f"{name} must be a positive whole number of GPUs, got {value!r}")
