"""The instance every allocation program over GPU types takes, and the throughputs it is measured by.

An instance is ``(throughputs (n, K), gangs (n,), GPU counts (K,))``: `checked_instance` validates
it and zeroes the throughput of every (job, type) pair whose type cannot host the job's gang.
`proportional_throughputs` is each job's throughput under Gavel's proportional split and
`normalized_throughputs` the effective throughput of an allocation relative to it, the objective
of Gavel's max-min fairness and the normalized throughputs every typed baseline reports
(`vfm.cluster.baselines.typed`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vfm._validation import as_real_array
from vfm.cluster.gpu_types import ClusterTypes
from vfm.errors import ValidationError
from vfm.parameters import Interval, Real, Whole, check_array, check_nonempty

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

__all__ = [
    "X_TOL",
    "BoolArray",
    "FloatArray",
    "IntArray",
    "checked_instance",
    "normalized_from_checked",
    "normalized_throughputs",
    "proportional_throughputs",
]

#: Allocations below this (a billionth of a round) are solver noise and set to 0.
X_TOL = 1e-9


def checked_instance(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes
                     ) -> tuple[FloatArray, IntArray, IntArray]:
    """Checked ``(throughputs with 0 where a type cannot host the job, gpus, counts)``: what every
    allocation program here takes as its input.

    Raises
    ------
    ValidationError
        Malformed input, or a job no type can host.
    """
    thr = np.array(as_real_array(throughputs, "throughputs", (None, None)))
    n, k = thr.shape
    check_nonempty("throughputs", k, "column (one per GPU type)")
    raw_counts = counts.counts if isinstance(counts, ClusterTypes) else np.asarray(counts)
    c = as_real_array(raw_counts, "counts", (k,))
    check_array("counts", c, Interval(Whole, 1, unit="GPUs"))
    w = as_real_array(gpus, "gpus", (n,))
    check_array("gpus", w, Interval(Whole, 1))
    check_array("throughputs", thr, Interval(Real, 0, note="0: the type cannot host the job"))
    wi, ci = w.astype(np.int64), c.astype(np.int64)
    thr[wi[:, None] > ci[None, :]] = 0.0  # a gang wider than a type's count never runs there
    if (homeless := np.flatnonzero(~(thr > 0).any(axis=1))).size:
        i = int(homeless[0])
        raise ValidationError(f"job {i} (row {i} of throughputs) has no type that can host it: throughputs "
                              f"{thr[i].tolist()} with gang {int(wi[i])} and counts {ci.tolist()}")
    return thr, wi, ci


def proportional_throughputs(throughputs: ArrayLike, counts: ArrayLike | ClusterTypes) -> FloatArray:
    """Each job's throughput under Gavel's proportional split, shape (n,).

    Gavel's ``ProportionalPolicy`` (``scheduler/policies/proportional.py``) gives every one of the
    n jobs ``count_k / n`` of each type's time, then divides by the largest row sum
    (``sum_k count_k / n``): every job's row becomes ``count_k / C`` (C all GPUs), all of its time
    spread over the types in proportion to their counts. Its throughput there is
    ``sum_k thr_ik count_k / C``. (Any reference allocation ``count_k / N`` per type, the equal
    share of each type, differs from it by the factor ``N / C`` common to all jobs, and gives the
    same max-min allocation.)

    Parameters
    ----------
    throughputs : array_like, shape (n, K)
        Job i's throughput on type k (0 where it cannot run there).
    counts : array_like of int, shape (K,), or ClusterTypes
        GPUs of each type.

    Examples
    --------
    >>> proportional_throughputs([[4.0, 1.0], [1.2, 1.0]], [1, 2]).round(6).tolist()
    [2.0, 1.066667]
    """
    thr = as_real_array(throughputs, "throughputs", (None, None))
    c = np.asarray(counts.counts if isinstance(counts, ClusterTypes) else counts, dtype=np.float64)
    out: FloatArray = thr @ c / c.sum()
    return out


def normalized_throughputs(x: ArrayLike, throughputs: ArrayLike, gpus: ArrayLike,
                           counts: ArrayLike | ClusterTypes) -> FloatArray:
    """The objective of Gavel's max-min fairness per job, shape (n,).

    ``w_i * sum_k thr_ik x_ik / prop_i``: job i's effective throughput under `x` relative to its
    throughput under the proportional split (`proportional_throughputs`), times its gang size
    `w_i` (Gavel's scale factor: ``MaxMinFairnessPolicyWithPerf`` multiplies the throughputs by
    it, so that a one-GPU job gets `w_i` times the time of a `w_i`-GPU job of equal throughput).
    With one type it is ``w_i x_i``, the job's GPUs' worth of time. Throughputs on a type whose
    count is smaller than the job's gang are taken as 0 (the type cannot host it), in the
    reference too, as in `max_min_allocation`.

    Parameters
    ----------
    x : array_like, shape (n, K)
        An allocation (fractions of time per type).
    throughputs : array_like, shape (n, K)
        As for `proportional_throughputs`.
    gpus : array_like of int, shape (n,)
        Gang sizes.
    counts : array_like of int, shape (K,), or ClusterTypes
    """
    thr, w, c = checked_instance(throughputs, gpus, counts)
    return normalized_from_checked(as_real_array(x, "x", thr.shape), thr, w, c)


def normalized_from_checked(x: FloatArray, thr: FloatArray, w: IntArray, c: IntArray) -> FloatArray:
    """`normalized_throughputs` on checked input (`checked_instance`)."""
    out: FloatArray = w * (thr * x).sum(axis=1) / (thr @ c.astype(np.float64) / float(c.sum()))
    return out
