"""Gavel's other heterogeneity-aware ("_perf") allocation programs over GPU types.

`finish_time_fairness_allocation` (``FinishTimeFairnessPolicyWithPerf``: a cone program, CVXPY
and Clarabel), `max_sum_throughput_allocation` (``ThroughputSumWithPerf``) and
`min_total_duration_allocation` (``MinTotalDurationPolicyWithPerf``; one HiGHS LP each), on the
variables and base rows Gavel's ``get_base_constraints`` writes. They are the allocations of
`vfm.cluster.baselines.typed.policies`' `HeterogeneousFinishTimeFairness`, `HeterogeneousMaxSumThroughput`
and `HeterogeneousMinTotalDuration` (``docs/baselines_typed.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike
from scipy.optimize import linprog

from vfm._validation import as_real_array, read_only, require_per_job
from vfm.cluster.baselines.typed.instance import X_TOL, FloatArray, IntArray, checked_instance
from vfm.cluster.gpu_types import ClusterTypes
from vfm.errors import SolverError

__all__ = [
    "DurationAllocation",
    "FinishTimeAllocation",
    "ThroughputAllocation",
    "finish_time_fairness_allocation",
    "max_sum_throughput_allocation",
    "min_total_duration_allocation",
    "solve_finish_time",
    "solve_max_sum",
    "solve_min_duration",
]


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
    """What `max_sum_throughput_allocation` returns: `x` (n, K, read-only), the fraction of time job
    i should spend on type k (feasible as in `MaxMinAllocation`), and `total`, its optimal total
    effective throughput ``sum_ik thr_ik x_ik``."""

    x: FloatArray
    total: float


class DurationAllocation(NamedTuple):
    """What `min_total_duration_allocation` returns: `makespan_s`, the smallest time within which
    every job can finish at a constant allocation, and `x` (n, K, read-only), such an allocation:
    the fraction of time job i should spend on type k (feasible as in `MaxMinAllocation`), every
    job's effective throughput exactly what it needs to finish at `makespan_s`."""

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
    >>> round(result.rho, 6), (result.x.round(6) + 0.0).tolist()  # + 0.0: a -0.0 prints as 0.0
    (1.75, [[1.0, 0.0], [0.0, 0.857143]])
    """
    thr, w, c = checked_instance(throughputs, gpus, counts)
    n = thr.shape[0]
    left = _checked_left(epochs_left, n)
    elapsed = as_real_array(elapsed_s, "elapsed_s", (n,))
    require_per_job("elapsed_s", elapsed, elapsed < 0, "must be >= 0")
    done = as_real_array(done_s, "done_s", (n,))
    require_per_job("done_s", done, done < 0, "must be >= 0")
    x, rho, ratios = solve_finish_time(thr, w, c, left, elapsed, done)
    return FinishTimeAllocation(read_only(x), rho, read_only(ratios))


def solve_finish_time(thr: FloatArray, w: IntArray, c: IntArray, left: FloatArray, elapsed: FloatArray,
                      done: FloatArray) -> tuple[FloatArray, float, FloatArray]:
    """`finish_time_fairness_allocation` on checked input: ``(x, rho, ratios)``."""
    import cvxpy as cp  # here: the one conic program of the module; CVXPY loads when it is first solved

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
    thr, w, c = checked_instance(throughputs, gpus, counts)
    x, total = solve_max_sum(thr, w, c)
    return ThroughputAllocation(read_only(x), total)


def solve_max_sum(thr: FloatArray, w: IntArray, c: IntArray) -> tuple[FloatArray, float]:
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
    >>> round(result.makespan_s, 6), (result.x.round(6) + 0.0).tolist()  # + 0.0: a -0.0 prints as 0.0
    (10.0, [[1.0, 0.0], [0.0, 1.0]])
    """
    thr, w, c = checked_instance(throughputs, gpus, counts)
    x, makespan = solve_min_duration(thr, w, c, _checked_left(epochs_left, thr.shape[0]))
    return DurationAllocation(read_only(x), makespan)


def solve_min_duration(thr: FloatArray, w: IntArray, c: IntArray, left: FloatArray) -> tuple[FloatArray, float]:
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

