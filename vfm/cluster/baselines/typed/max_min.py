"""Gavel's heterogeneity-aware max-min fair allocation over GPU types, lexicographically optimal.

`max_min_allocation` maximizes, lexicographically, the jobs' effective throughputs normalized by
their throughputs under Gavel's proportional split (`vfm.cluster.baselines.typed.instance`), by progressive
filling with one or a few `scipy.optimize.linprog` solves (HiGHS). It is the allocation of
`vfm.cluster.baselines.typed.rounds.HeterogeneousMaxMinFairness`; ``docs/baselines_typed.md`` states the
formulation and where it follows Gavel's code (``scheduler/policies/max_min_fairness.py``,
``proportional.py``, ``max_min_fairness_water_filling.py``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from vfm._validation import read_only
from vfm.cluster.baselines.typed.instance import X_TOL, BoolArray, FloatArray, IntArray, checked_instance
from vfm.cluster.gpu_types import ClusterTypes
from vfm.errors import SolverError

__all__ = [
    "DUAL_TOL",
    "RTOL",
    "MaxMinAllocation",
    "max_min_allocation",
    "solve_lex_max_min",
]

#: Relative tolerance of the lexicographic max-min's comparisons (HiGHS's feasibility tolerance
#: is 1e-7): a level within it of a job's cap saturates the job. A frozen job's floor in later
#: LPs is its level exactly; only should HiGHS then fail is the LP solved again with the floors
#: lowered by this much.
RTOL = 1e-7
#: Dual values above this mark a job as pinned at the level of its LP (the duals of the level rows
#: sum to 1, so the largest is at least 1 / n).
DUAL_TOL = 1e-9


class MaxMinAllocation(NamedTuple):
    """What `max_min_allocation` returns (read-only arrays).

    Attributes
    ----------
    x : ndarray, shape (n, K)
        Fraction of time job i should spend on type k: ``x >= 0``, rows sum to at most 1,
        ``sum_i w_i x_ik <= count_k``, 0 where type k cannot host job i.
    normalized : ndarray, shape (n,)
        Each job's normalized effective throughput under `x` (`normalized_throughputs`).
    lps : int
        `scipy.optimize.linprog` solves it took.
    """

    x: FloatArray
    normalized: FloatArray
    lps: int


class _LexMaxMin:
    """The LPs of one lexicographic max-min computation (`max_min_allocation`).

    Variables: ``x_ik`` for the (job, type) pairs that can host (``m`` of them, row-major), then
    the level ``t``. Rows of ``A_ub z <= b_ub``:

    - ``0..n-1``, job i's level: ``t - sum_k a_ik x_ik <= 0`` for the jobs raised with the level,
      ``- sum_k a_ik x_ik <= - floor_i`` for the others (frozen, or saturated: ``floor_i`` their
      level);
    - ``n..2n-1``, job i's time: ``sum_k x_ik <= 1``;
    - ``2n..2n+K-1``, type k's GPUs: ``sum_i w_i x_ik <= count_k``.

    The x columns are built once; each LP only changes the t column and the right-hand side.
    """

    def __init__(self, a: FloatArray, w: IntArray, c: IntArray) -> None:
        n, k = a.shape
        self.n, self.k = n, k
        ii, kk = np.nonzero(a > 0)
        self.ii, self.kk, self.m = ii, kk, ii.size
        var = np.arange(self.m)
        rows = np.concatenate((ii, n + ii, 2 * n + kk))
        cols = np.concatenate((var, var, var))
        vals = np.concatenate((-a[ii, kk], np.ones(self.m), w[ii].astype(np.float64)))
        self._x_part = (rows, cols, vals)
        self._b_tail = np.concatenate((np.ones(n), c.astype(np.float64)))
        self._cost = np.zeros(self.m + 1)
        self._cost[-1] = -1.0  # minimize -t
        self.lps = 0

    def solve(self, raised: BoolArray, floor: FloatArray) -> tuple[int, float, FloatArray, FloatArray]:
        """Maximize the level ``t`` of the `raised` jobs, the others at least `floor`.

        Returns ``(status, t, x (n, K), duals of the level rows (n,), >= 0)``; status is
        `scipy.optimize.linprog`'s (0 = optimal).
        """
        rows, cols, vals = self._x_part
        up = np.flatnonzero(raised)
        matrix = sp.csr_array(
            (np.concatenate((vals, np.ones(up.size))),
             (np.concatenate((rows, up)), np.concatenate((cols, np.full(up.size, self.m))))),
            shape=(2 * self.n + self.k, self.m + 1))
        # With no job raised the LP only asks for a feasible point (t, unconstrained, stays 0).
        cost = self._cost if up.size else np.zeros(self.m + 1)
        for slack in (0.0, RTOL):  # floors exact; lowered by RTOL only should HiGHS fail on them
            b = np.concatenate((np.where(raised, 0.0, -floor * (1.0 - slack)), self._b_tail))
            self.lps += 1
            res = linprog(cost, A_ub=matrix, b_ub=b, bounds=(0, None), method="highs")
            if res.status == 0 or not (floor[~raised] > 0).any():
                break
        x = np.zeros((self.n, self.k))
        if res.status != 0:
            return int(res.status), float("nan"), x, np.zeros(self.n)
        x[self.ii, self.kk] = res.x[: self.m]
        duals = -np.asarray(res.ineqlin.marginals[: self.n])
        return 0, float(res.x[-1]) if up.size else 0.0, x, duals


def max_min_allocation(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes) -> MaxMinAllocation:
    """Gavel's heterogeneity-aware max-min fair allocation, lexicographically optimal.

    Maximize ``min_i norm_i(x)`` with ``norm_i(x) = w_i sum_k thr_ik x_ik / prop_i``
    (`normalized_throughputs`) subject to ``x >= 0``, ``sum_k x_ik <= 1``,
    ``sum_i w_i x_ik <= count_k``, and ``x_ik = 0`` where type k cannot host job i (throughput 0,
    or a gang wider than the type's count): Gavel's ``MaxMinFairnessPolicyWithPerf`` with priority
    weights 1. That LP fixes only the minimum; among its solutions this returns the
    lexicographic max-min one (the smallest level as high as possible, then the next, ...), as
    Gavel's ``MaxMinFairnessWaterFillingPolicyWithPerf`` does. With one type it is
    `vfm.cluster.baselines.water_filling`.

    Progressive filling by LPs: raise the level of all unfrozen jobs together (one LP: maximize
    ``t`` with every unfrozen job at least ``t``, every frozen one at least its level). A job
    is frozen at ``t`` when the dual of its level row is positive (by complementary slackness it is
    at ``t`` in every optimal solution: raising it would lower another) or when ``t`` reaches the
    most it can have, ``amax_i = max_k w_i thr_ik / prop_i`` (all its time on its best type).
    Where jobs saturate one after the other, a binary search over the sorted ``amax`` finds in a
    few LPs how many of them saturate before the level is blocked, instead of one LP per job.

    Parameters
    ----------
    throughputs : array_like, shape (n, K)
        Job i's throughput on type k (e.g. 1 / seconds per epoch), ``>= 0``, 0 where the type
        cannot host it; every job needs a type that hosts it.
    gpus : array_like of int, shape (n,)
        Gang sizes, ``>= 1``.
    counts : array_like of int, shape (K,), or ClusterTypes
        GPUs of each type.

    Returns
    -------
    MaxMinAllocation
        ``x`` (n, K), ``normalized`` (n,), ``lps``.

    Raises
    ------
    ValidationError
        Malformed input, or a job no type can host.
    SolverError
        If HiGHS fails on the first LP (always feasible: ``x = 0``). A later failure keeps the
        allocation of the last successful LP, as Gavel's water-filling loop does.

    Examples
    --------
    >>> result = max_min_allocation([[1.0], [1.0], [1.0]], [1, 2, 4], [4])
    >>> (result.x.round(6) + 0.0).ravel().tolist(), result.normalized.round(6).tolist()  # + 0.0: a -0.0 prints as 0.0
    ([1.0, 0.75, 0.375], [1.0, 1.5, 1.5])
    """
    thr, w, c = checked_instance(throughputs, gpus, counts)
    x, normalized, lps = solve_lex_max_min(thr, w, c)
    return MaxMinAllocation(read_only(x), read_only(normalized), lps)


def solve_lex_max_min(thr: FloatArray, w: IntArray, c: IntArray) -> tuple[FloatArray, FloatArray, int]:
    """`max_min_allocation` on checked input (`thr` 0 where a type cannot host the job)."""
    n = thr.shape[0]
    if n == 0:
        return np.zeros(thr.shape), np.zeros(0), 0
    prop = thr @ c.astype(np.float64) / float(c.sum())
    a = w[:, None] * thr / prop[:, None]  # normalized throughput per unit of time on each type
    amax = a.max(axis=1)
    lp = _LexMaxMin(a, w, c)
    frozen = np.zeros(n, dtype=bool)
    floor = np.zeros(n)  # frozen jobs' levels
    x: FloatArray | None = None
    while not frozen.all():
        free = ~frozen
        status, t, xs, duals = lp.solve(free, floor)
        if status != 0:
            if x is None:
                raise SolverError(f"HiGHS failed on the max-min LP (linprog status {status})", status=str(status))
            break  # keep the last allocation (Gavel's _run_get_allocation_iterations)
        levels = np.unique(amax[free])
        if t >= levels[0] * (1 - RTOL):  # the lowest-capped jobs saturate: find how many levels do
            t, xs, duals, saturated, done = _saturation(lp, frozen, floor, amax, levels, (t, xs, duals))
            frozen |= saturated
            floor[saturated] = amax[saturated]
            if done:
                x = xs
                break
            free = ~frozen
        pinned = free & ((duals > DUAL_TOL) | (amax <= t * (1 + RTOL)))
        if not pinned.any():  # cannot happen with exact duals (they sum to 1); never loop forever
            pinned = free
        frozen |= pinned
        floor[pinned] = t
        x = xs
    assert x is not None
    x = np.clip(x, 0.0, 1.0)
    x[x < X_TOL] = 0.0
    x = _symmetrized(x, a, floor)
    return x, (a * x).sum(axis=1), lp.lps


def _symmetrized(x: FloatArray, a: FloatArray, floor: FloatArray) -> FloatArray:
    """`x` with the rows of identical jobs (same row of `a`, hence same gang, and same level
    `floor`) replaced by their mean.

    Identical jobs are interchangeable, so the mean is as feasible and gives each the group's
    mean normalized throughput, at least the level. The LP gives such jobs rows that differ in
    the last bits (or, on several types, split their time differently); equal rows make Gavel's
    priorities tie exactly between them, so that deficits and arrival order decide, as in the
    homogeneous `vfm.cluster.baselines.MaxMinFairness`.
    """
    _, group = np.unique(np.column_stack((a, floor)), axis=0, return_inverse=True)
    group = group.reshape(-1)
    size = np.bincount(group).astype(np.float64)
    if size.max() == 1:
        return x
    sums = np.zeros((size.size, x.shape[1]))
    np.add.at(sums, group, x)
    out: FloatArray = (sums / size[:, None])[group]
    return out


def _saturation(lp: _LexMaxMin, frozen: BoolArray, floor: FloatArray, amax: FloatArray, levels: FloatArray,
                plain: tuple[float, FloatArray, FloatArray]) -> tuple[float, FloatArray, FloatArray, BoolArray, bool]:
    """The levels of `levels` (sorted caps ``amax`` of the unfrozen jobs) reached before the
    common level is blocked, by binary search.

    ``P(j)``: the jobs capped at ``levels[j]`` or lower can all saturate while every other
    unfrozen job is at least ``levels[j]``. ``P`` holds at 0 (the caller's LP reached
    ``levels[0]``) and fails from some point on; for the last ``j`` where it holds, the LP that
    tested it gives the level ``t`` of the others (``levels[j] <= t < levels[j + 1]``). Returns
    ``(t, x, duals, saturated jobs, whether every unfrozen job saturated)``; `plain` is the
    caller's LP ``(t, x, duals)`` (no job saturated), the answer should ``P(0)`` fail by
    numerical noise.
    """
    free = ~frozen

    def test(j: int) -> tuple[bool, tuple[int, float, FloatArray, FloatArray], BoolArray]:
        saturated = free & (amax <= levels[j])
        with_caps = np.where(saturated, amax, floor)
        raised = free & ~saturated
        result = lp.solve(raised, with_caps)
        status, t = result[0], result[1]
        ok = status == 0 and (not raised.any() or t >= levels[j] * (1 - RTOL))
        return ok, result, saturated

    last = levels.size - 1
    ok, result, saturated = test(last)
    if ok:
        return result[1], result[2], result[3], saturated, not (free & ~saturated).any()
    lo, hi = 0, last
    best = test(0)
    if not best[0]:  # only by numerical noise (the caller's LP reached levels[0]): saturate none
        return plain[0], plain[1], plain[2], np.zeros_like(free), False
    while hi - lo > 1:
        mid = (lo + hi) // 2
        probe = test(mid)
        if probe[0]:
            lo, best = mid, probe
        else:
            hi = mid
    _, (_, t, x, duals), saturated = best
    return t, x, duals, saturated, False

