"""Baselines for clusters of several GPU types: Gavel's heterogeneity-aware max-min fairness and
the per-type static market.

`HeterogeneousMaxMinFairness` implements `vfm.cluster.protocol.TypedSchedulingPolicy` after
Gavel (Narayanan et al., OSDI'20, "Heterogeneity-Aware Cluster Scheduling Policies for Deep
Learning Workloads"; stanford-futuredata/gavel). Every round it

1. computes the allocation `X` (jobs x types, the fraction of time each job should spend on each
   type) that maximizes, lexicographically, the jobs' effective throughputs normalized by their
   throughputs under Gavel's proportional split (`max_min_allocation`: one or a few
   `scipy.optimize.linprog` solves with HiGHS; reused while neither the job set nor any job's
   throughput estimate changed);
2. turns it into whole gangs on types with Gavel's round mechanism: per-(job, type) priorities
   ``X_ik / (share of type k's time job i received)``, deficits as tie-breakers, type by type
   (fastest first), whole gangs first-fit, each job on at most one type; then work conservation:
   idle GPUs go to waiting jobs that fit, each on the fastest type for it with room.

`HeterogeneousStaticMarket` runs the same round mechanism on another allocation: the equilibrium
of the one-round Fisher market over the types (`static_market_allocation`: equal budgets, utility
each job's normalized progress; one `vfm.planner.saa_ipm.solve_saa_ipm` solve per round).
`HeterogeneousFinishTimeFairness`, `HeterogeneousMaxSumThroughput` and
`HeterogeneousMinTotalDuration` run it on Gavel's other heterogeneity-aware ("_perf") programs:
`finish_time_fairness_allocation` (a cone program, CVXPY and Clarabel),
`max_sum_throughput_allocation` and `min_total_duration_allocation` (one HiGHS LP each).

``docs/baselines_typed.md`` states the formulation and every decision, and where each part
follows Gavel's code (``scheduler/policies/max_min_fairness.py``, ``proportional.py``,
``max_min_fairness_water_filling.py``; ``scheduler/scheduler.py``: ``_update_priorities``,
``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``).

Examples
--------
One V100 and three K80s; job ``a`` is 4x faster on the V100 than on a K80, job ``b`` 1.2x. The
max-min allocation equalizes the normalized throughputs: ``b`` gains little on the V100 but its
proportional reference is low, so it keeps most of the V100 and ``a`` runs mostly on a K80
(``docs/baselines_typed.md`` derives it by hand: ``a`` gets 3/10 of the V100):

>>> from vfm.cluster.gpu_types import ClusterTypes
>>> policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 1, "k80": 3}))
>>> policy.add_job("a", 1, {"v100": {32.0: 25.0}, "k80": {32.0: 100.0}}, 10)
>>> policy.add_job("b", 1, {"v100": {32.0: 100.0}, "k80": {32.0: 120.0}}, 10)
>>> current = policy.allocation()
>>> current.jobs, current.types
(('a', 'b'), ('v100', 'k80'))
>>> current.x.round(6).tolist()
[[0.3, 0.7], [0.7, 0.3]]
>>> current.normalized.round(6).tolist()  # both at the same level
[1.085714, 1.085714]
>>> policy.next_round()
{'b': 'v100', 'a': 'k80'}
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, NamedTuple

import cvxpy as cp
import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import linprog

from vfm._validation import as_real_array, is_real, is_whole, read_only, require_per_job
from vfm.cluster._rounds import RowTable
from vfm.cluster.gpu_types import ClusterTypes
from vfm.equilibrium import Status
from vfm.errors import SolverError, ValidationError
from vfm.planner.program import PlanningProgram
from vfm.planner.rounding import first_fit
from vfm.planner.saa_ipm import solve_saa_ipm

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]
BoolArray = NDArray[np.bool_]

__all__ = [
    "TYPED_BASELINES",
    "DurationAllocation",
    "FinishTimeAllocation",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxMinFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "MarketAllocation",
    "MaxMinAllocation",
    "PolicyAllocation",
    "ThroughputAllocation",
    "TypedPolicyFactory",
    "finish_time_fairness_allocation",
    "max_min_allocation",
    "max_sum_throughput_allocation",
    "min_total_duration_allocation",
    "normalized_throughputs",
    "proportional_throughputs",
    "static_market_allocation",
]

#: Relative tolerance of the lexicographic max-min's comparisons (HiGHS's feasibility tolerance
#: is 1e-7): a level within it of a job's cap saturates the job. A frozen job's floor in later
#: LPs is its level exactly; only should HiGHS then fail is the LP solved again with the floors
#: lowered by this much.
RTOL = 1e-7
#: Dual values above this mark a job as pinned at the level of its LP (the duals of the level rows
#: sum to 1, so the largest is at least 1 / n).
DUAL_TOL = 1e-9
#: Allocations below this (a billionth of a round) are solver noise and set to 0.
X_TOL = 1e-9
#: Relative gap `static_market_allocation` asks of the interior point (`solve_saa_ipm`'s `tol`).
MARKET_TOL = 1e-9
#: Market fractions below this (a millionth of a round, 0.12 ms of a 120 s round) are set to 0.
#: The interior point's iterates are strictly positive, and an entry that is 0 at the optimum keeps
#: a residue that shrinks only with the barrier (up to ~4e-7 at 120 jobs with `MARKET_TOL`); left
#: in, it would make the job a candidate of that type in Gavel's placement.
MARKET_X_TOL = 1e-6


# --- the allocation (pure functions, so that tests can check them on their own) -------------------


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


def _instance(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes
              ) -> tuple[FloatArray, IntArray, IntArray]:
    """Checked ``(throughputs with 0 where a type cannot host the job, gpus, counts)``."""
    thr = np.array(as_real_array(throughputs, "throughputs", (None, None)))
    n, k = thr.shape
    if k == 0:
        raise ValidationError("throughputs must have one column per GPU type, got none")
    raw_counts = counts.counts if isinstance(counts, ClusterTypes) else np.asarray(counts)
    c = as_real_array(raw_counts, "counts", (k,))
    if not (np.all(c >= 1) and np.all(c == np.round(c))):
        raise ValidationError(f"counts must be positive whole numbers of GPUs, got {c.tolist()}")
    w = as_real_array(gpus, "gpus", (n,))
    if not (np.all(w >= 1) and np.all(w == np.round(w))):
        bad = int(np.flatnonzero((w < 1) | (w != np.round(w)))[0])
        raise ValidationError(f"gpus[{bad}] must be a positive whole number, got {w[bad]:g}")
    if (thr < 0).any():
        i, kk = (int(v) for v in np.argwhere(thr < 0)[0])
        raise ValidationError(f"throughputs[{i}, {kk}] must be >= 0 (0: the type cannot host the job), "
                              f"got {thr[i, kk]:g}")
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
    thr, w, c = _instance(throughputs, gpus, counts)
    return _normalized(as_real_array(x, "x", thr.shape), thr, w, c)


def _normalized(x: FloatArray, thr: FloatArray, w: IntArray, c: IntArray) -> FloatArray:
    """`normalized_throughputs` on checked input."""
    out: FloatArray = w * (thr * x).sum(axis=1) / (thr @ c.astype(np.float64) / float(c.sum()))
    return out


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
    >>> result.x.round(6).ravel().tolist(), result.normalized.round(6).tolist()
    ([1.0, 0.75, 0.375], [1.0, 1.5, 1.5])
    """
    thr, w, c = _instance(throughputs, gpus, counts)
    x, normalized, lps = _lex_max_min(thr, w, c)
    return MaxMinAllocation(read_only(x), read_only(normalized), lps)


def _lex_max_min(thr: FloatArray, w: IntArray, c: IntArray) -> tuple[FloatArray, FloatArray, int]:
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


class MarketAllocation(NamedTuple):
    """What `static_market_allocation` returns (read-only arrays).

    Attributes
    ----------
    x : ndarray, shape (n, K)
        The equilibrium fraction of the round job i buys on type k: ``x >= 0``, rows sum to at
        most 1, ``sum_i w_i x_ik <= count_k``, 0 where type k cannot host job i.
    utilities : ndarray, shape (n,)
        Each job's utility under `x`, the fraction of its epochs the round gives it,
        ``sum_k r_ik x_ik / E_i`` (at most 1).
    prices : ndarray, shape (K,)
        The price of one GPU of each type for the round, in units of the objective (each job's
        budget is 1); 0 for a type with GPUs to spare. Not unique where the market is degenerate
        (e.g. a type only one job wants): the interior point returns one in the range.
    status : vfm.Status
        The solve's status: `Status.OPTIMAL`, or `Status.INACCURATE` (stalled with a point; its
        certified gap still bounds the optimum).
    iterations : int
        Interior-point iterations.
    """

    x: FloatArray
    utilities: FloatArray
    prices: FloatArray
    status: Status
    iterations: int


def static_market_allocation(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes,
                             epochs: ArrayLike, epochs_done: ArrayLike, round_s: float = 120.0) -> MarketAllocation:
    r"""The one-round Fisher market over the GPU types, at equal budgets: its equilibrium fractions.

    .. math::

        \max_y \sum_i \log\Big(\sum_k \frac{r_{ik}}{E_i} y_{ik}\Big)
        \quad\text{s.t.}\quad \sum_i w_i y_{ik} \le G_k,\;\; \sum_k y_{ik} \le 1,\;\;
        0 \le y \le 1,\;\; y_{ik} = 0 \text{ where type } k \text{ cannot host job } i,

    with :math:`r_{ik} = \min(W T_{ik}, E_i - e_i)` the epochs a whole round of `round_s` seconds
    (:math:`W`) gives it on type k at throughput :math:`T_{ik}` (epochs per second), capped by the
    epochs it has left. It is the Eisenberg-Gale program of a Fisher market whose goods are the
    types' GPUs for the round and whose buyers are the jobs, each with budget 1 and linear utility
    in the time it buys (a job's gang on one type at a time), without the base utility of the
    epochs already done: a static market knows no history (as `vfm.solve_per_period`, which
    `vfm.cluster.baselines.StaticMarket` solves on one type); its maximizer is the market
    equilibrium, the capacity duals the prices. Solved as a `vfm.planner.PlanningProgram` with one
    scenario, one round and K goods in it (`good_round` all 0, which adds the one-type rows) by
    `vfm.planner.saa_ipm.solve_saa_ipm` to a relative gap of `MARKET_TOL`; fractions below
    `MARKET_X_TOL` are the interior point's residue and set to 0.

    Parameters
    ----------
    throughputs : array_like, shape (n, K)
        Job i's epochs per second on type k (1 / seconds per epoch), ``>= 0``, 0 where it cannot
        run there; every job needs a type that hosts it.
    gpus : array_like of int, shape (n,)
        Gang sizes, ``>= 1``; a type with fewer GPUs than a job's gang cannot host it.
    counts : array_like of int, shape (K,), or ClusterTypes
        GPUs of each type.
    epochs : array_like, shape (n,)
        Total epochs :math:`E_i > 0`.
    epochs_done : array_like, shape (n,)
        Epochs done, :math:`0 \le e_i < E_i`.
    round_s : float
        Seconds per round.

    Returns
    -------
    MarketAllocation

    Raises
    ------
    ValidationError
        Malformed input (as `max_min_allocation`, and epochs, epochs done, `round_s`).
    SolverError
        If the interior point ends without a usable point (any status but `Status.OPTIMAL`, or
        `Status.INACCURATE` with a finite point); `status` and `result` carry its answer.

    Examples
    --------
    On one type every job's utility is proportional to its time, so the equal budgets buy equal
    GPU shares, capped by each job's gang (`water_filling`, as `StaticMarket`):

    >>> result = static_market_allocation([[1.0], [1.0], [1.0]], [1, 2, 4], [4], [10, 10, 10], [0, 0, 0])
    >>> result.x.round(6).ravel().tolist()
    [1.0, 0.75, 0.375]
    """
    thr, w, c = _instance(throughputs, gpus, counts)
    n = thr.shape[0]
    total = as_real_array(epochs, "epochs", (n,))
    done = as_real_array(epochs_done, "epochs_done", (n,))
    require_per_job("epochs", total, total <= 0, "must be > 0")
    require_per_job("epochs_done", done, (done < 0) | (done >= total), "must be in [0, epochs) (a finished job "
                    "has left)")
    if not (is_real(round_s) and np.isfinite(round_s) and round_s > 0):
        raise ValidationError(f"round_s must be a finite number > 0, got {round_s!r}")
    return _market(thr, w, c, total, done, float(round_s))


def _market(thr: FloatArray, w: IntArray, c: IntArray, epochs: FloatArray, done: FloatArray,
            round_s: float) -> MarketAllocation:
    """`static_market_allocation` on checked input (`thr` 0 where a type cannot host the job)."""
    n, k = thr.shape
    if n == 0:
        return MarketAllocation(read_only(np.zeros((0, k))), read_only(np.zeros(0)),
                                read_only(np.zeros(k)), Status.OPTIMAL, 0)
    left = epochs - done
    rate = np.minimum(round_s * thr, left[:, None])  # 0 where the type cannot host: thr is 0 there
    fastest = thr.max(axis=1)  # > 0: every job has a hosting type (checked)
    program = PlanningProgram(
        progress=(rate / epochs[:, None])[None], base=np.zeros(n), weights=np.ones(n),
        gpus=w.astype(np.float64), capacity=c.astype(np.float64), round_s=round_s,
        # Used only by finish-time and efficiency terms, which this program has none of; the
        # planner's convention: seconds left on the job's fastest type, `speed` relative to it.
        remaining_s=left / fastest, good_round=np.zeros(k, dtype=np.int64), speed=thr / fastest[:, None])
    solution = solve_saa_ipm(program, tol=MARKET_TOL)
    usable = solution.status == Status.OPTIMAL or solution.status == Status.INACCURATE
    if not usable or solution.x is None or solution.prices is None or not np.isfinite(solution.x).all():
        raise SolverError(f"the static market over GPU types ({n} jobs, {k} types) was not solved: "
                          f"saa-ipm ended {solution.status.value}: {solution.message}",
                          status=str(solution.status), result=solution)
    x = np.clip(solution.x, 0.0, 1.0)
    x[x < MARKET_X_TOL] = 0.0
    utilities = program.base + (program.progress[0] * x).sum(axis=1)
    return MarketAllocation(read_only(x), read_only(utilities), read_only(np.array(solution.prices, dtype=np.float64)),
                            solution.status, solution.iterations)


# --- Gavel's other heterogeneity-aware ("_perf") programs -----------------------------------------


class FinishTimeAllocation(NamedTuple):
    """What `finish_time_fairness_allocation` returns (read-only arrays).

    Attributes
    ----------
    x : ndarray, shape (n, K)
        Fraction of time job i should spend on type k (feasible as in `MaxMinAllocation`).
    rho : float
        The optimal largest finish-time-fairness ratio.
    ratios : ndarray, shape (n,)
        Each job's ratio under `x` (all equal to `rho` up to the solver's accuracy: every row is
        scaled down to the throughput the job needs to finish at `rho`).
    """

    x: FloatArray
    rho: float
    ratios: FloatArray


class ThroughputAllocation(NamedTuple):
    """What `max_sum_throughput_allocation` returns (read-only array).

    Attributes
    ----------
    x : ndarray, shape (n, K)
        Fraction of time job i should spend on type k (feasible as in `MaxMinAllocation`).
    total : float
        The optimal total effective throughput ``sum_ik thr_ik x_ik``.
    """

    x: FloatArray
    total: float


class DurationAllocation(NamedTuple):
    """What `min_total_duration_allocation` returns (read-only array).

    Attributes
    ----------
    x : ndarray, shape (n, K)
        Fraction of time job i should spend on type k (feasible as in `MaxMinAllocation`); every
        job's effective throughput is exactly what it needs to finish at `makespan_s`.
    makespan_s : float
        The smallest time within which every job can finish at constant allocation.
    """

    x: FloatArray
    makespan_s: float


def _pair_rows(thr: FloatArray, w: IntArray, c: IntArray) -> tuple[IntArray, IntArray, sp.csr_array, FloatArray]:
    """The variables and base rows shared by Gavel's _perf programs (``get_base_constraints``).

    Variables are the (job, type) pairs that can host (``thr > 0``), row-major, so that ``x_ik = 0``
    where type k cannot host job i holds by construction. Returns ``(job of each variable, type of
    each variable, A, b)`` with ``A x <= b`` the rows ``sum_k x_ik <= 1`` (n of them) then
    ``sum_i w_i x_ik <= count_k`` (K).
    """
    n, k = thr.shape
    ii, kk = np.nonzero(thr > 0)
    var = np.arange(ii.size)
    a = sp.csr_array((np.concatenate((np.ones(ii.size), w[ii].astype(np.float64))),
                      (np.concatenate((ii, n + kk)), np.concatenate((var, var)))), shape=(n + k, ii.size))
    return ii, kk, a, np.concatenate((np.ones(n), c.astype(np.float64)))


def _unpairs(values: FloatArray, ii: IntArray, kk: IntArray, shape: tuple[int, int]) -> FloatArray:
    """The (n, K) allocation of the pair variables, clipped to [0, 1], noise below `X_TOL` set to 0."""
    x = np.zeros(shape)
    x[ii, kk] = np.clip(values[: ii.size], 0.0, 1.0)
    x[x < X_TOL] = 0.0
    return x


def _checked_left(left: ArrayLike, n: int, name: str = "epochs_left") -> FloatArray:
    out = as_real_array(left, name, (n,))
    require_per_job(name, out, out <= 0, "must be > 0 (a finished job has left)")
    return out


def finish_time_fairness_allocation(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes,
                                    epochs_left: ArrayLike, elapsed_s: ArrayLike, done_s: ArrayLike
                                    ) -> FinishTimeAllocation:
    r"""Gavel's heterogeneity-aware finish-time fairness (``FinishTimeFairnessPolicyWithPerf``).

    .. math::

        \min_x \max_i \rho_i(x), \qquad
        \rho_i(x) = \frac{t_i + L_i / \sum_k T_{ik} x_{ik}}{F_i}, \qquad
        F_i = \frac{d_i + L_i / P_i}{s_i},

    subject to ``x >= 0``, ``sum_k x_ik <= 1``, ``sum_i w_i x_ik <= count_k`` and ``x_ik = 0``
    where type k cannot host job i (as `max_min_allocation`). :math:`t_i` is the time since the
    job arrived, :math:`L_i` its epochs left, :math:`T_{ik}` its epochs per second on type k, and
    :math:`F_i` its finish time alone on its 1/n share of the cluster: Gavel's ``IsolatedPolicy``
    gives job i ``count_k / max(n w_i, C)`` of each type (C all GPUs), the proportional row
    ``count_k / C`` times its equal share :math:`s_i = \min(1, C / (n w_i))`, so it runs at
    :math:`s_i P_i` with :math:`P_i = \sum_k T_{ik} count_k / C` (`proportional_throughputs`);
    :math:`d_i` is the time its finished epochs took on the proportional mix at full speed
    (``done_s``), so that :math:`d_i / s_i` is Gavel's cumulative isolated time.

    Each :math:`\rho_i` is convex in ``x`` (``inv_pos`` of a linear function), so the program is
    the second-order cone program Gavel writes; it is solved with CVXPY and Clarabel on the
    variables scaled by each job's fastest throughput. The optimum fixes only the largest ratio;
    as `vfm.cluster.baselines.ftf_allocation` does on one type, every row is then scaled down to
    the throughput the job needs to finish exactly at :math:`\rho^*` (still feasible: the
    constraints only bound ``x`` from above), so every job's ratio is :math:`\rho^*`. On one type
    this is `vfm.cluster.baselines.ftf_allocation` with ``remaining = L_i / T_i`` and
    ``fair = F_i``.

    Deviations from Gavel (``scheduler/policies/finish_time_fairness.py``, ``isolated.py``):
    Gavel accumulates the isolated time step by step at the isolated throughput of the moment;
    here the caller passes the finished epochs' seconds :math:`d_i` and today's share prices them,
    as `vfm.cluster.baselines.FinishTimeFairness` does on one type. Gavel returns the solver's
    point as is (clipped to [0, 1]); here rows are tightened as above, and rows or types the
    solver overfilled by its tolerance are scaled back first.

    Parameters
    ----------
    throughputs : array_like, shape (n, K)
        Epochs per second of job i on type k, ``>= 0``, 0 where it cannot run there.
    gpus : array_like of int, shape (n,)
        Gang sizes, ``>= 1``.
    counts : array_like of int, shape (K,), or ClusterTypes
        GPUs of each type.
    epochs_left : array_like, shape (n,)
        :math:`L_i > 0`.
    elapsed_s : array_like, shape (n,)
        :math:`t_i \ge 0`, seconds since the job arrived.
    done_s : array_like, shape (n,)
        :math:`d_i \ge 0`, seconds the finished epochs take on the proportional mix of types
        (each epoch ``1 / sum_k (count_k / C) / seconds_k``).

    Returns
    -------
    FinishTimeAllocation

    Raises
    ------
    ValidationError
        Malformed input (as `max_min_allocation`, and the three per-job vectors).
    SolverError
        If Clarabel ends without an optimal (or optimal-inaccurate) point.

    Examples
    --------
    One V100 and one K80; both jobs run 2 epochs per second on the V100 and 1 on the K80 and have
    3 epochs left; ``a`` has waited 2 s. Each runs at 1.5 on its isolated half, so ``F = 2`` s.
    ``a`` cannot do better than all of the V100, ``rho_a = (2 + 3/2) / 2 = 7/4``, and ``b`` needs
    only ``3 / (7/4 * 2) = 6/7`` epochs per second to match it, on the K80:

    >>> result = finish_time_fairness_allocation([[2.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1], [3, 3],
    ...                                          [2.0, 0.0], [0.0, 0.0])
    >>> round(result.rho, 6), result.x.round(6).tolist()
    (1.75, [[1.0, 0.0], [0.0, 0.857143]])
    """
    thr, w, c = _instance(throughputs, gpus, counts)
    n = thr.shape[0]
    left = _checked_left(epochs_left, n)
    elapsed = as_real_array(elapsed_s, "elapsed_s", (n,))
    require_per_job("elapsed_s", elapsed, elapsed < 0, "must be >= 0")
    done = as_real_array(done_s, "done_s", (n,))
    require_per_job("done_s", done, done < 0, "must be >= 0")
    x, rho, ratios = _finish_time(thr, w, c, left, elapsed, done)
    return FinishTimeAllocation(read_only(x), rho, read_only(ratios))


def _finish_time(thr: FloatArray, w: IntArray, c: IntArray, left: FloatArray, elapsed: FloatArray,
                 done: FloatArray) -> tuple[FloatArray, float, FloatArray]:
    """`finish_time_fairness_allocation` on checked input: ``(x, rho, ratios)``."""
    n, k = thr.shape
    if n == 0:
        return np.zeros((0, k)), float("nan"), np.zeros(0)
    total = float(c.sum())
    share = total / np.maximum(n * w, total)           # Gavel's isolated share min(1, C / (n w_i))
    isolated = (done + left / (thr @ c.astype(np.float64) / total)) / share
    best = thr.max(axis=1)
    # rho_i = e_i + s_i / u_i with u_i = sum_k (thr_ik / best_i) x_ik in (0, 1]: dimensionless and
    # of order 1 whatever the jobs' speeds, which keeps the conic solver's tolerances meaningful.
    e, s = elapsed / isolated, left / (best * isolated)
    ii, kk, a, b = _pair_rows(thr, w, c)
    speed = sp.csr_matrix((thr[ii, kk] / best[ii], (ii, np.arange(ii.size))), shape=(n, ii.size))
    xv, rho = cp.Variable(ii.size, nonneg=True), cp.Variable()
    problem = cp.Problem(cp.Minimize(rho), [sp.csr_matrix(a) @ xv <= b,
                                            e + cp.multiply(s, cp.inv_pos(speed @ xv)) <= rho])
    try:
        problem.solve(solver=cp.CLARABEL)
    except cp.error.SolverError as err:
        raise SolverError(f"Clarabel failed on the finish-time-fairness program ({n} jobs, {k} types): {err}",
                          status="error") from err
    if problem.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or xv.value is None:
        raise SolverError(f"Clarabel ended {problem.status} on the finish-time-fairness program ({n} jobs, {k} types)",
                          status=str(problem.status))
    x = _unpairs(np.asarray(xv.value, dtype=np.float64), ii, kk, (n, k))
    # Undo the solver's overfill (within its tolerance) of rows, then of types: both only scale down.
    x /= np.maximum(x.sum(axis=1), 1.0)[:, None]
    x *= np.minimum(c / np.maximum(w @ x, 1e-300), 1.0)[None, :]
    u = (thr / best[:, None] * x).sum(axis=1)
    achieved = float((e + s / u).max())
    # Tighten: each job gets exactly the throughput that makes its ratio `achieved` (u_i >= that).
    x *= np.minimum(s / ((achieved - e) * u), 1.0)[:, None]
    ratios = e + s / (thr / best[:, None] * x).sum(axis=1)
    return x, achieved, ratios


def max_sum_throughput_allocation(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes
                                  ) -> ThroughputAllocation:
    r"""Gavel's heterogeneity-aware max-sum-throughput (``ThroughputSumWithPerf``).

    .. math::

        \max_x \sum_i \sum_k T_{ik} x_{ik}

    subject to ``x >= 0``, ``sum_k x_ik <= 1``, ``sum_i w_i x_ik <= count_k`` and ``x_ik = 0``
    where type k cannot host job i (as `max_min_allocation`): one `scipy.optimize.linprog` solve
    with HiGHS, its vertex returned (the optimum need not be unique: e.g. two jobs with equal
    throughputs). Gavel's program (``scheduler/policies/max_sum_throughput.py``, no SLOs, instance
    costs 1) exactly; what :math:`T` is (Gavel: steps per second) is the caller's choice
    (`HeterogeneousMaxSumThroughput` passes the fraction of the job per second). On one type it
    is a fractional knapsack by ``T_i / w_i``, `vfm.cluster.baselines.MaxSumThroughput`.

    Parameters
    ----------
    throughputs : array_like, shape (n, K)
        ``>= 0``, 0 where the type cannot host the job; every job needs a type that hosts it.
    gpus : array_like of int, shape (n,)
    counts : array_like of int, shape (K,), or ClusterTypes

    Returns
    -------
    ThroughputAllocation

    Raises
    ------
    ValidationError
        Malformed input (as `max_min_allocation`).
    SolverError
        If HiGHS fails (the LP is always feasible and bounded).

    Examples
    --------
    One V100 and one K80: ``a`` gains 4x on the V100, ``b`` 2x; the V100 goes to the job with the
    larger V100/K80 ratio (4 + 1 = 5 against 1 + 2 = 3):

    >>> result = max_sum_throughput_allocation([[4.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1])
    >>> result.x.tolist(), result.total
    ([[1.0, 0.0], [0.0, 1.0]], 5.0)
    """
    thr, w, c = _instance(throughputs, gpus, counts)
    x, total = _max_sum(thr, w, c)
    return ThroughputAllocation(read_only(x), total)


def _max_sum(thr: FloatArray, w: IntArray, c: IntArray) -> tuple[FloatArray, float]:
    """`max_sum_throughput_allocation` on checked input."""
    n, k = thr.shape
    if n == 0:
        return np.zeros((0, k)), 0.0
    ii, kk, a, b = _pair_rows(thr, w, c)
    # Costs scaled to at most 1: HiGHS's optimality tolerance is absolute.
    res = linprog(-thr[ii, kk] / thr.max(), A_ub=a, b_ub=b, bounds=(0, None), method="highs")
    if res.status != 0:
        raise SolverError(f"HiGHS failed on the max-sum-throughput LP (linprog status {res.status})",
                          status=str(res.status))
    x = _unpairs(np.asarray(res.x, dtype=np.float64), ii, kk, (n, k))
    return x, float((thr * x).sum())


def min_total_duration_allocation(throughputs: ArrayLike, gpus: ArrayLike, counts: ArrayLike | ClusterTypes,
                                  epochs_left: ArrayLike) -> DurationAllocation:
    r"""Gavel's heterogeneity-aware min-total-duration (``MinTotalDurationPolicyWithPerf``).

    .. math::

        \min_{x, M} M \quad\text{s.t.}\quad \sum_k T_{ik} x_{ik} \ge L_i / M \;\; \forall i,

    with ``x >= 0``, ``sum_k x_ik <= 1``, ``sum_i w_i x_ik <= count_k`` and ``x_ik = 0`` where
    type k cannot host job i (as `max_min_allocation`): the smallest horizon :math:`M` within
    which every job, at constant allocation, finishes its :math:`L_i` epochs left. With
    :math:`\sigma = 1 / M` the constraints are linear: one `scipy.optimize.linprog` solve
    (HiGHS) maximizing :math:`\sigma`, rows scaled by each job's fastest throughput.

    Deviations from Gavel (``scheduler/policies/min_total_duration.py``): Gavel bisects over
    :math:`M` (from 100 s, to within a factor 1.05) with a feasibility problem each time and
    returns an arbitrary feasible point at the last feasible :math:`M`; here :math:`M` is exact
    (one LP) and the throughput rows are equalities, ``sum_k T_ik x_ik = L_i / M``: every job gets
    exactly what finishing at :math:`M` needs (the optimum is the same: a row with more can be
    scaled down), as `vfm.cluster.baselines.MinTotalDuration` on one type (``x_i = R_i / M``);
    how a job's time is split over types is HiGHS's vertex (not unique in general).

    Parameters
    ----------
    throughputs : array_like, shape (n, K)
        Epochs per second of job i on type k, ``>= 0``, 0 where it cannot run there.
    gpus : array_like of int, shape (n,)
    counts : array_like of int, shape (K,), or ClusterTypes
    epochs_left : array_like, shape (n,)
        :math:`L_i > 0`.

    Returns
    -------
    DurationAllocation

    Raises
    ------
    ValidationError
        Malformed input (as `max_min_allocation`, and `epochs_left`).
    SolverError
        If HiGHS fails (the LP is always feasible and bounded).

    Examples
    --------
    One V100 and one K80; ``a`` (20 epochs left) runs 2 epochs per second on the V100 and 1 on
    the K80, ``b`` (10 left) 1 on either. ``b`` needs 10 s whatever it gets; ``a`` finishes in 10 s
    only with all of the V100, so ``b`` takes the K80:

    >>> result = min_total_duration_allocation([[2.0, 1.0], [1.0, 1.0]], [1, 1], [1, 1], [20, 10])
    >>> round(result.makespan_s, 6), result.x.round(6).tolist()
    (10.0, [[1.0, 0.0], [0.0, 1.0]])
    """
    thr, w, c = _instance(throughputs, gpus, counts)
    x, makespan = _min_duration(thr, w, c, _checked_left(epochs_left, thr.shape[0]))
    return DurationAllocation(read_only(x), makespan)


def _min_duration(thr: FloatArray, w: IntArray, c: IntArray, left: FloatArray) -> tuple[FloatArray, float]:
    """`min_total_duration_allocation` on checked input."""
    n, k = thr.shape
    if n == 0:
        return np.zeros((0, k)), 0.0
    ii, kk, a, b = _pair_rows(thr, w, c)
    m = ii.size
    best = thr.max(axis=1)
    solo = left / best           # seconds alone on its fastest type
    horizon = float(solo.max())  # M >= horizon: sigma = horizon / M is in (0, 1]
    # Row i: (solo_i / horizon) sigma - sum_k (thr_ik / best_i) x_ik = 0.
    eq = sp.csr_array((np.concatenate((-thr[ii, kk] / best[ii], solo / horizon)),
                       (np.concatenate((ii, np.arange(n))), np.concatenate((np.arange(m), np.full(n, m))))),
                      shape=(n, m + 1))
    ub = sp.hstack((a, sp.csr_array((n + k, 1))), format="csr")
    cost = np.zeros(m + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=ub, b_ub=b, A_eq=eq, b_eq=np.zeros(n), bounds=(0, None), method="highs")
    if res.status != 0 or res.x[-1] <= 0:
        raise SolverError(f"HiGHS failed on the min-total-duration LP (linprog status {res.status})",
                          status=str(res.status))
    return _unpairs(np.asarray(res.x, dtype=np.float64), ii, kk, (n, k)), horizon / float(res.x[-1])


# --- the policy -----------------------------------------------------------------------------------


class PolicyAllocation(NamedTuple):
    """A policy's current allocation (`HeterogeneousMaxMinFairness.allocation`); arrays read-only.

    Attributes
    ----------
    jobs : tuple
        The present jobs, in the rows' order.
    types : tuple of str
        The cluster's types, in the columns' order.
    x : ndarray, shape (len(jobs), len(types))
        Fraction of time each job should spend on each type.
    normalized : ndarray, shape (len(jobs),)
        Each job's normalized effective throughput under `x` (`normalized_throughputs`).
    throughputs : ndarray, shape (len(jobs), len(types))
        The throughput estimates the allocation was computed from: 1 / current epoch seconds,
        0 where the type cannot host the job.
    """

    jobs: tuple[Hashable, ...]
    types: tuple[str, ...]
    x: FloatArray
    normalized: FloatArray
    throughputs: FloatArray


def _table(types: int) -> RowTable:
    """The present jobs' table: 1-D columns ``(n,)`` and per-type ones ``(n, K)``; its ``regimes``
    map each batch size to its seconds per type (inf: cannot host)."""
    return RowTable({
        "gpus": (np.int64, ()), "seq": (np.int64, ()), "epochs": (np.int64, ()), "done": (np.int64, ()),
        "epoch_s": (np.float64, (types,)),   # current seconds per epoch on each type
        "job_time": (np.float64, (types,)),  # Gavel's _job_time_so_far
        "should": (np.float64, (types,)),    # time it should have received since the reset
        "deficit": (np.float64, (types,)),   # Gavel's _deficits
        "arrival_s": (np.float64, ()),       # policy clock when added (finish-time fairness)
        "done_mix_s": (np.float64, ()),      # finished epochs' seconds on the proportional mix (idem)
    })


class HeterogeneousMaxMinFairness:
    """Gavel's heterogeneity-aware max-min fairness: `max_min_allocation` + Gavel's typed rounds.

    A `vfm.cluster.protocol.TypedSchedulingPolicy`. Each round:

    1. The allocation ``X`` (n jobs x K types) of `max_min_allocation` on the current throughput
       estimates (``1 / epoch seconds`` of each job's current regime on each type), recomputed
       when the job set or an estimate changed, else reused (the LPs are a deterministic function
       of those inputs, so reuse gives the very allocation a new solve would).
    2. Gavel's per-(job, type) priority ``X_ik / f_ik``, ``f_ik`` the share of type k's counted
       time (since the last reset) that job i received; counts start at ``round_s / 2`` and a job
       that runs on type k is credited ``round_s`` there. When the job set changes the counts are
       reset and each job's deficit on each type grows by the time it should have received there
       (``sum of X_ik round_s`` over the rounds since the reset) minus what it received.
    3. Type by type in the cluster's order (`vfm.cluster.gpu_types.GPU_TYPES`, fastest first),
       the jobs with ``X_ik > 0`` not yet placed, by (priority, deficit, allocation) descending
       then arrival, take whole gangs first-fit (Gavel's ``_schedule_jobs_on_workers_helper``).
    4. Work conservation: every job still waiting, by (its largest priority, its total deficit)
       descending then arrival, goes to the type with the highest throughput for it among those
       that host it and still have room for its gang.

    Parameters
    ----------
    cluster : ClusterTypes
        The cluster's GPU counts per type.
    round_s : float
        Seconds per round (default 120); `next_round` is called once per round.
    seed : int
        Accepted so that every policy is built alike; the policy is deterministic (ties go to
        the earlier arrival) and draws no random numbers.

    Attributes
    ----------
    cluster : ClusterTypes
    round_s : float
    seed : int
    round_index : int
        Rounds decided so far.
    lps : int
        LP solves so far (all rounds).
    """

    name = "heterogeneous_max_min_fairness"

    #: Reuse the allocation while nothing it depends on changed (tests switch it off to check
    #: that reuse gives the schedule a fresh solve every round gives).
    reuse_allocation = True

    def __init__(self, cluster: ClusterTypes, round_s: float = 120.0, seed: int = 0) -> None:
        if not isinstance(cluster, ClusterTypes):
            raise ValidationError(f"cluster must be a vfm.cluster.ClusterTypes (GPU counts per type), got "
                                  f"{type(cluster).__name__} {cluster!r}")
        if not (is_real(round_s) and np.isfinite(round_s) and round_s > 0):
            raise ValidationError(f"round_s must be a finite number > 0, got {round_s!r}")
        self.cluster = cluster
        self.round_s = float(round_s)
        self.seed = seed
        self.round_index = 0
        self.lps = 0
        self._types = cluster.types
        self._counts = np.array(cluster.counts, dtype=np.int64)
        self._table = _table(len(self._types))
        self._seq = 0
        self._changed = True  # the job set changed since the last round: reset the counts
        self._stale = True    # the allocation must be recomputed
        self._x = np.zeros((0, len(self._types)))
        self._normalized = np.zeros(0)
        self._thr = np.zeros((0, len(self._types)))
        self._completed: list[Hashable] = []

    # --- state --------------------------------------------------------------------------------

    @property
    def clock_s(self) -> float:
        """Start time of the next round: rounds decided so far x `round_s`."""
        return self.round_index * self.round_s

    @property
    def jobs(self) -> list[Hashable]:
        """The present jobs (row order, not arrival order)."""
        return list(self._table.ids)

    @property
    def completed(self) -> list[Hashable]:
        """Jobs that finished all their epochs, in completion order."""
        return list(self._completed)

    def allocation(self) -> PolicyAllocation:
        """The allocation the next round will use (computed now if needed); arrays read-only."""
        self._ensure_allocation()
        return PolicyAllocation(tuple(self._table.ids), self._types, read_only(self._x),
                                read_only(self._normalized), read_only(self._thr))

    # --- what the scheduler tells the policy ---------------------------------------------------

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Mapping[float, float]], epochs: int, *,
                kind: Hashable = None) -> None:
        """A job arrives; `regimes` maps each type that can host it to batch size -> seconds per
        epoch there. `kind` is not used.

        A type whose count is smaller than the gang cannot host it and is ignored.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job and the field: an id already present; a gang that is not a positive
            whole number, or wider than every type its regimes name; regimes that are not a
            non-empty mapping of the cluster's types to non-empty mappings batch size ->
            seconds > 0 (finite), or that list different batch sizes on different types; epochs
            that are not a positive whole number.
        """
        if job_id in self._table.row:
            raise ValidationError(f"job {job_id!r} is already in the policy; remove it first")
        if not is_whole(gpus) or gpus < 1:
            raise ValidationError(f"gpus of job {job_id!r} must be a positive whole number, got {gpus!r}")
        if not is_whole(epochs) or epochs < 1:
            raise ValidationError(f"epochs of job {job_id!r} must be a positive whole number, got {epochs!r}")
        table = self._checked_regimes(job_id, int(gpus), regimes)
        seconds = np.stack(list(table.values()))
        self._table.append(job_id, table, {
            "gpus": int(gpus), "seq": self._seq, "epochs": int(epochs),
            "epoch_s": seconds.mean(axis=0),  # the regimes' mean per type, inf where it cannot run
            "job_time": self.round_s / 2.0, "arrival_s": self.clock_s,
        })
        self._seq += 1
        self._changed = self._stale = True

    def _checked_regimes(self, job_id: Hashable, gpus: int, regimes: Any) -> dict[float, FloatArray]:
        """``batch size -> seconds on each of the cluster's types`` (inf where it cannot host)."""
        types = ", ".join(self._types)
        if not isinstance(regimes, Mapping) or not regimes:
            raise ValidationError(f"regimes of job {job_id!r} must map at least one GPU type of the cluster ({types}) "
                                  f"to its batch size -> seconds per epoch, got {regimes!r}")
        sizes: tuple[float, ...] | None = None
        per_type: dict[str, dict[float, float]] = {}
        for gpu_type, regime in regimes.items():
            if gpu_type not in self._types:
                raise ValidationError(f"regimes of job {job_id!r} name type {gpu_type!r}, not a GPU type of the "
                                      f"cluster ({types})")
            if not isinstance(regime, Mapping) or not regime:
                raise ValidationError(f"regimes[{gpu_type!r}] of job {job_id!r} must map batch sizes to seconds per "
                                      f"epoch, got {regime!r}")
            if not all(is_real(b) and np.isfinite(b) and b > 0 and is_real(s) and np.isfinite(s) and s > 0
                       for b, s in regime.items()):
                raise ValidationError(f"regimes[{gpu_type!r}] of job {job_id!r} must map batch sizes > 0 to finite "
                                      f"seconds per epoch > 0, got {dict(regime)!r}")
            reg = {float(b): float(s) for b, s in regime.items()}
            if sizes is None:
                sizes = tuple(sorted(reg))
            elif tuple(sorted(reg)) != sizes:
                first = next(iter(per_type))
                raise ValidationError(f"regimes of job {job_id!r} list batch sizes {sorted(reg)} on {gpu_type!r} but "
                                      f"{list(sizes)} on {first!r}; every type must list the same batch sizes")
            per_type[gpu_type] = reg
        wide = [t for t in per_type if self.cluster[t] < gpus]
        if len(wide) == len(per_type):
            counts = ", ".join(f"{t}: {self.cluster[t]}" for t in per_type)
            raise ValidationError(f"gpus of job {job_id!r} is {gpus}, more than every type its regimes name has "
                                  f"({counts})")
        assert sizes is not None
        table = {b: np.full(len(self._types), np.inf) for b in sizes}
        for gpu_type, reg in per_type.items():
            if gpu_type in wide:
                continue
            k = self._types.index(gpu_type)
            for b, s in reg.items():
                table[b][k] = s
        return table

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves without finishing (cancelled)."""
        if job_id not in self._table.row:
            raise ValidationError(f"job {job_id!r} is not in the policy")
        self._table.remove(job_id)
        self._changed = self._stale = True

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished last round, one batch size per epoch.

        The last batch size's seconds on each type become the job's estimates; a job with all
        epochs done completes and leaves.

        Raises
        ------
        vfm.errors.ValidationError
            An unknown job, a batch size not in its regimes, more epochs than it has left.
        """
        t = self._table
        if job_id not in t.row:
            raise ValidationError(f"job {job_id!r} is not in the policy")
        if not len(batch_sizes):
            return
        i = t.row[job_id]
        reg = t.regimes[i]
        unknown = [b for b in batch_sizes if not is_real(b) or float(b) not in reg]
        if unknown:
            raise ValidationError(f"job {job_id!r} reported batch size {unknown[0]!r}, not in its regimes "
                                  f"({sorted(reg)})")
        done = t.col("done")
        if done[i] + len(batch_sizes) > t.col("epochs")[i]:
            raise ValidationError(f"job {job_id!r} reported {len(batch_sizes)} epochs, more than the "
                                  f"{int(t.col('epochs')[i] - done[i])} it has left")
        done[i] += len(batch_sizes)
        if done[i] >= t.col("epochs")[i]:
            t.remove(job_id)
            self._completed.append(job_id)
            self._changed = self._stale = True
            return
        current = reg[float(batch_sizes[-1])]
        epoch_s = t.col("epoch_s")
        if not np.array_equal(epoch_s[i], current):
            epoch_s[i] = current
            self._stale = True

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> dict[Hashable, str]:
        """The jobs to run in the next round, each with the type its whole gang runs on."""
        t = self._table
        if t.n == 0:
            self._changed = False
            self.round_index += 1
            return {}
        if self._changed:
            self._reset()
        x = self._ensure_allocation()
        rows, on = self._place(x)
        t.col("job_time")[rows, on] += self.round_s
        t.col("should")[:] += x * self.round_s
        self._changed = False
        self.round_index += 1
        return {t.ids[i]: self._types[k] for i, k in zip(rows.tolist(), on.tolist(), strict=True)}

    # --- internals ----------------------------------------------------------------------------

    def _ensure_allocation(self) -> FloatArray:
        if self._stale or not self.reuse_allocation:
            t = self._table
            epoch_s = t.col("epoch_s")
            gpus = t.col("gpus")
            thr = np.where(np.isfinite(epoch_s), 1.0 / epoch_s, 0.0)
            thr[gpus[:, None] > self._counts[None, :]] = 0.0  # (already inf there: a gang too wide)
            self._x, self._normalized = self._solve(thr)
            self._thr = thr
            self._stale = False
        return self._x

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        """The allocation ``X`` (n, K) of the present jobs and their normalized throughputs under it
        (n,), from the throughputs `thr` (0 where a type cannot host the job): the one part a
        subclass changes (`HeterogeneousStaticMarket`)."""
        x, normalized, lps = _lex_max_min(thr, self._table.col("gpus"), self._counts)
        self.lps += lps
        return x, normalized

    def _reset(self) -> None:
        """Gavel's ``_reset_time_run_so_far``: deficits absorb the time owed, counts restart."""
        t = self._table
        job_time = t.col("job_time")
        t.col("deficit")[:] += t.col("should") - (job_time - self.round_s / 2.0)
        t.col("should")[:] = 0.0
        job_time[:] = self.round_s / 2.0

    def _place(self, x: FloatArray) -> tuple[IntArray, IntArray]:
        """Rows to run and the type index of each, in placement order."""
        t = self._table
        gpus, seq, deficit = t.col("gpus"), t.col("seq"), t.col("deficit")
        job_time = t.col("job_time")
        fraction = job_time / job_time.sum(axis=0)  # > 0: every count starts at round_s / 2
        priority = np.where(x > 0, x / fraction, 0.0)
        placed = np.full(t.n, -1, dtype=np.int64)
        free = self._counts.copy()
        rows, on = [], []
        for k in range(len(self._types)):  # the types (at most 3), each a vectorized first-fit
            cand = np.flatnonzero((x[:, k] > 0) & (placed < 0))
            order = cand[np.lexsort((seq[cand], -x[cand, k], -deficit[cand, k], -priority[cand, k]))]
            chosen = first_fit(order, gpus, int(free[k]))
            placed[chosen] = k
            free[k] -= int(gpus[chosen].sum())
            rows.append(chosen)
            on.append(np.full(chosen.size, k, dtype=np.int64))
        hosts = np.isfinite(t.col("epoch_s"))
        waiting = np.flatnonzero((placed < 0) & (hosts & (gpus[:, None] <= free[None, :])).any(axis=1))
        if waiting.size:
            extra_rows, extra_on = self._fill(waiting, priority, deficit, seq, gpus, free)
            rows.append(extra_rows)
            on.append(extra_on)
        return np.concatenate(rows), np.concatenate(on)

    def _fill(self, waiting: IntArray, priority: FloatArray, deficit: FloatArray, seq: IntArray, gpus: IntArray,
              free: IntArray) -> tuple[IntArray, IntArray]:
        """Work conservation: waiting jobs in order, each on its fastest type with room.

        A loop over the waiting jobs: each job's choice depends on the room the jobs before it
        left on every type, a sequential greedy with no vectorized pass equivalent once jobs
        prefer different types. It is plain Python over small lists, runs only over jobs whose
        gang fits some type's idle GPUs, and stops as soon as no waiting gang fits anywhere.
        """
        epoch_s = self._table.col("epoch_s")
        order = waiting[np.lexsort((seq[waiting], -deficit[waiting].sum(axis=1), -priority[waiting].max(axis=1)))]
        # Each job's hosting types, fastest first (ties: the cluster's order).
        prefs = np.argsort(epoch_s[order], axis=1, kind="stable")
        hosting = np.isfinite(np.take_along_axis(epoch_s[order], prefs, axis=1))
        room = free.tolist()
        widths = gpus[order].tolist()
        smallest = min(widths)
        rows, on = [], []
        for pos, (i, width) in enumerate(zip(order.tolist(), widths, strict=True)):
            if max(room) < smallest:
                break
            if width > max(room):
                continue
            for k, ok in zip(prefs[pos].tolist(), hosting[pos].tolist(), strict=True):
                if ok and width <= room[k]:
                    room[k] -= width
                    rows.append(i)
                    on.append(k)
                    break
        free[:] = room
        return np.array(rows, dtype=np.int64), np.array(on, dtype=np.int64)


class HeterogeneousStaticMarket(HeterogeneousMaxMinFairness):
    """The static Fisher market over GPU types, round by round: `static_market_allocation` + Gavel's
    typed rounds.

    A `vfm.cluster.protocol.TypedSchedulingPolicy`: `HeterogeneousMaxMinFairness` with another
    allocation. Each round ``X`` is the equilibrium of the one-round market over the cluster's
    types (every present job a buyer with budget 1, utility the fraction of its epochs a round
    gives it, ``sum_k r_ik y_ik / E_i`` at its current epoch-time estimates), and Gavel's
    priorities, deficits, type-by-type placement and work conservation
    (`HeterogeneousMaxMinFairness`) turn it into whole gangs. It is the VFM without forecasts or a
    window: one round, what a round on each type gives each job now. On one type its allocation
    is `vfm.cluster.baselines.StaticMarket`'s (``docs/baselines_typed.md``).

    The allocation is recomputed when the job set or an estimate changes, and when a job's epochs
    left fall below what a round on one of its types gives (the cap of :math:`r_{ik}`); else reused.

    Parameters
    ----------
    cluster, round_s, seed
        As for `HeterogeneousMaxMinFairness`.

    Attributes
    ----------
    market : MarketAllocation or None
        The last solve (fractions, utilities, prices per type, status); None before the first.
    solves : int
        Market solves so far.
    iterations : int
        Interior-point iterations so far.

    Raises
    ------
    vfm.errors.SolverError
        From `next_round` or `allocation`, when the interior point ends without a usable point
        (`static_market_allocation`): the policy never runs a round on a NaN allocation.
    """

    name = "heterogeneous_static_market"

    def __init__(self, cluster: ClusterTypes, round_s: float = 120.0, seed: int = 0) -> None:
        super().__init__(cluster, round_s, seed)
        self.market: MarketAllocation | None = None
        self.solves = 0
        self.iterations = 0

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        super().report_progress(job_id, batch_sizes)
        t = self._table
        if len(batch_sizes) and job_id in t.row:
            # The market sees epochs done only through the cap r_ik <= epochs left.
            row = t.row[job_id]
            left = t.col("epochs")[row] - t.col("done")[row]
            if (left < self.round_s / t.col("epoch_s")[row]).any():
                self._stale = True

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        gpus = t.col("gpus")
        result = _market(thr, gpus, self._counts, t.col("epochs").astype(np.float64),
                         t.col("done").astype(np.float64), self.round_s)
        self.market = result
        self.solves += 1
        self.iterations += result.iterations
        return np.array(result.x), _normalized(result.x, thr, gpus, self._counts)


class HeterogeneousFinishTimeFairness(HeterogeneousMaxMinFairness):
    """Gavel's heterogeneity-aware finish-time fairness: `finish_time_fairness_allocation` + Gavel's
    typed rounds.

    A `vfm.cluster.protocol.TypedSchedulingPolicy`: `HeterogeneousMaxMinFairness` with another
    allocation. Each round ``X`` minimizes the largest ratio
    ``rho_i = (t_i + L_i / sum_k T_ik X_ik) / F_i`` (time since arrival plus epochs left at the
    effective throughput, over the job's finish time alone on its 1/n share of the cluster), the
    inputs computed as `vfm.cluster.baselines.FinishTimeFairness` computes them on one type: `t_i`
    from the policy clock and the job's arrival (table column ``arrival_s``), `T_ik` the current
    estimates, and the finished epochs priced at their profiled seconds on the proportional mix of
    types (column ``done_mix_s``) at today's equal share. The ratios depend on the clock, so the
    allocation is recomputed every round.

    Parameters
    ----------
    cluster, round_s, seed
        As for `HeterogeneousMaxMinFairness`.

    Attributes
    ----------
    rho : float
        The optimal largest ratio of the last solve (NaN before the first).
    solves : int
        Conic solves so far.

    Raises
    ------
    vfm.errors.SolverError
        From `next_round` or `allocation`, when Clarabel ends without an optimal point.
    """

    name = "heterogeneous_finish_time_fairness"

    def __init__(self, cluster: ClusterTypes, round_s: float = 120.0, seed: int = 0) -> None:
        super().__init__(cluster, round_s, seed)
        self.rho = float("nan")
        self.solves = 0
        self._mix = self._counts / float(self._counts.sum())  # the proportional row count_k / C

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        super().report_progress(job_id, batch_sizes)
        t = self._table
        if len(batch_sizes) and job_id in t.row:  # (a job that finished has left: nothing to keep)
            row = t.row[job_id]
            seconds = np.stack([t.regimes[row][float(b)] for b in batch_sizes])  # (epochs, K), inf: cannot host
            t.col("done_mix_s")[row] += float((1.0 / (self._mix / seconds).sum(axis=1)).sum())

    def next_round(self) -> dict[Hashable, str]:
        self._stale = True  # the ratios move with the clock
        return super().next_round()

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        gpus = t.col("gpus")
        left = (t.col("epochs") - t.col("done")).astype(np.float64)
        x, self.rho, _ = _finish_time(thr, gpus, self._counts, left, self.clock_s - t.col("arrival_s"),
                                      t.col("done_mix_s"))
        self.solves += 1
        return x, _normalized(x, thr, gpus, self._counts)


class HeterogeneousMaxSumThroughput(HeterogeneousMaxMinFairness):
    """Gavel's heterogeneity-aware max-sum-throughput: `max_sum_throughput_allocation` + Gavel's
    typed rounds.

    A `vfm.cluster.protocol.TypedSchedulingPolicy`: `HeterogeneousMaxMinFairness` with another
    allocation. ``X`` maximizes ``sum_ik T_ik X_ik / E_i``, each job's throughput in fractions of
    the job per second (epochs per second over its total epochs `E_i`), as
    `vfm.cluster.baselines.MaxSumThroughput` on one type: Gavel sums raw steps per second, which
    are not comparable across jobs here (an epoch of one job is not an epoch of another). The LP
    depends only on the estimates and the job set, so the allocation is reused while they hold.

    Parameters
    ----------
    cluster, round_s, seed
        As for `HeterogeneousMaxMinFairness`.

    Attributes
    ----------
    total : float
        The last solve's optimal objective (fractions of jobs per second; NaN before the first).
    """

    name = "heterogeneous_max_sum_throughput"

    def __init__(self, cluster: ClusterTypes, round_s: float = 120.0, seed: int = 0) -> None:
        super().__init__(cluster, round_s, seed)
        self.total = float("nan")

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        gpus = t.col("gpus")
        x, self.total = _max_sum(thr / t.col("epochs")[:, None], gpus, self._counts)
        self.lps += 1 if t.n else 0
        return x, _normalized(x, thr, gpus, self._counts)


class HeterogeneousMinTotalDuration(HeterogeneousMaxMinFairness):
    """Gavel's heterogeneity-aware min-total-duration: `min_total_duration_allocation` + Gavel's
    typed rounds.

    A `vfm.cluster.protocol.TypedSchedulingPolicy`: `HeterogeneousMaxMinFairness` with another
    allocation. ``X`` gives every present job exactly the effective throughput that finishes its
    epochs left by the smallest common horizon (`makespan_s`); the horizon moves as epochs are
    done, so the allocation is recomputed whenever a job reports progress.

    Parameters
    ----------
    cluster, round_s, seed
        As for `HeterogeneousMaxMinFairness`.

    Attributes
    ----------
    makespan_s : float
        The last solve's horizon, seconds from the round it was computed for (NaN before the first).
    """

    name = "heterogeneous_min_total_duration"

    def __init__(self, cluster: ClusterTypes, round_s: float = 120.0, seed: int = 0) -> None:
        super().__init__(cluster, round_s, seed)
        self.makespan_s = float("nan")

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        super().report_progress(job_id, batch_sizes)
        if len(batch_sizes):
            self._stale = True  # fewer epochs left: another horizon

    def _solve(self, thr: FloatArray) -> tuple[FloatArray, FloatArray]:
        t = self._table
        gpus = t.col("gpus")
        x, self.makespan_s = _min_duration(thr, gpus, self._counts,
                                           (t.col("epochs") - t.col("done")).astype(np.float64))
        self.lps += 1 if t.n else 0
        return x, _normalized(x, thr, gpus, self._counts)


TypedPolicyFactory = Callable[[ClusterTypes, float, int], HeterogeneousMaxMinFairness]

#: name -> ``factory(cluster, round_s, seed)`` of each typed baseline.
TYPED_BASELINES: dict[str, TypedPolicyFactory] = {
    "heterogeneous_max_min_fairness": HeterogeneousMaxMinFairness,
    "heterogeneous_static_market": HeterogeneousStaticMarket,
    "heterogeneous_finish_time_fairness": HeterogeneousFinishTimeFairness,
    "heterogeneous_max_sum_throughput": HeterogeneousMaxSumThroughput,
    "heterogeneous_min_total_duration": HeterogeneousMinTotalDuration,
}
