"""The allocations of the Shockwave paper's baselines on one GPU type: pure functions, over all jobs at once.

With one GPU type every LP of the Shockwave artifact's policies (uw-mad-dash/shockwave,
``scheduler/policies/*.py``, itself built on Gavel, stanford-futuredata/gavel) has a closed form
or a one-dimensional search, computed here with numpy: the programs on arrays (`water_filling`,
`ftf_allocation`, `allox_positions`), and the allocations Gavel's rounds serve as pure functions
of the round's frozen state (``allocate_*``, `vfm.cluster.baselines.mechanisms.Allocation`), which
the policies of `vfm.cluster.baselines.policies` compose with them. ``docs/baselines.md`` states
each formulation and every decision.
"""

from __future__ import annotations

from types import MappingProxyType

import numpy as np
from scipy.optimize import linear_sum_assignment

from vfm.cluster.baselines.mechanisms import Allocated, FloatArray, IntArray, equal_share, remaining_s
from vfm.cluster.baselines.round_book import RoundState
from vfm.jobs import window_market
from vfm.nswot.per_period import solve_per_period

__all__ = [
    "allocate_finish_time_fairness",
    "allocate_max_min",
    "allocate_max_sum_throughput",
    "allocate_min_total_duration",
    "allocate_static_market",
    "allox_positions",
    "allox_positions_lsa",
    "ftf_allocation",
    "water_filling",
]


def water_filling(gpus: IntArray, capacity: int) -> FloatArray:
    """Max-min fair time fractions: ``x_i = min(1, L / w_i)`` with ``sum_i min(w_i, L) = G``.

    Gavel's max-min fairness with one GPU type maximizes ``min_i w_i x_i`` (a job's normalized
    throughput is its GPU share: its throughput cancels against its throughput under Gavel's
    proportional split) subject to ``sum_i w_i x_i <= G``, ``0 <= x <= 1``. The LP fixes only the
    minimum; water-filling is the lexicographic max-min optimum among its solutions: every job
    gets the same number of GPUs' worth of time, `L`, unless its gang is narrower.

    Examples
    --------
    >>> water_filling(np.array([1, 2, 4]), 4).tolist()
    [1.0, 0.75, 0.375]
    """
    w = np.asarray(gpus, dtype=float)
    if w.sum() <= capacity:
        return np.ones_like(w)
    ws = np.sort(w)
    n = ws.size
    before = np.concatenate(([0.0], np.cumsum(ws)[:-1]))  # GPUs of the k narrowest gangs
    level = (capacity - before) / (n - np.arange(n))  # level if exactly those k are saturated
    k = int(np.argmax(level <= ws))  # first k whose level does not saturate gang k
    return np.minimum(1.0, level[k] / w)


def ftf_allocation(
    remaining_s: FloatArray, elapsed_s: FloatArray, fair_s: FloatArray, gpus: IntArray, capacity: int
) -> tuple[FloatArray, float]:
    """Time fractions minimizing the largest estimated finish-time-fairness ratio.

    ``rho_i(x) = (elapsed_i + remaining_i / x_i) / fair_i`` (Gavel's
    ``FinishTimeFairnessPolicyWithPerf``), minimized in the max over jobs subject to
    ``sum_i w_i x_i <= G``, ``0 < x <= 1``. Each ``rho_i`` decreases in ``x_i``, so the optimum
    is a common level ``rho*``: ``x_i = remaining_i / (rho* fair_i - elapsed_i)``, with `rho*` the
    smallest level whose allocation fits, and at least ``max_i (elapsed_i + remaining_i) / fair_i``
    (every job running all the time). Found by bisection, vectorized over jobs.

    Returns
    -------
    x : ndarray
        Time fractions.
    rho : float
        The optimal largest ratio.
    """
    w = np.asarray(gpus, dtype=float)
    floor = float(((elapsed_s + remaining_s) / fair_s).max())

    def shares(rho: float) -> FloatArray:
        slack = np.maximum(rho * fair_s - elapsed_s, remaining_s)  # x <= 1
        return remaining_s / slack

    if float(w @ shares(floor)) <= capacity:
        return shares(floor), floor
    lo, hi = floor, 2.0 * floor
    while float(w @ shares(hi)) > capacity:
        lo, hi = hi, 2.0 * hi
    for _ in range(60):  # relative width 2^-60: machine precision
        mid = 0.5 * (lo + hi)
        if float(w @ shares(mid)) > capacity:
            lo = mid
        else:
            hi = mid
    return shares(hi), hi


def allox_positions(remaining_s: FloatArray, slots: int) -> IntArray:
    """AlloX's matching of jobs to GPU time slots on identical GPUs, in closed form.

    AlloX (via Gavel's ``allox.py``) matches jobs to columns (GPU j, position k) at cost
    ``k * p_i``: a job placed k-th from the end of a GPU's queue delays k completions by its
    processing time `p_i` (the job's waiting time, added to every column of its row, does not
    change the matching). On identical GPUs the columns of one position are identical, and by the
    rearrangement inequality the min-cost matching deals the jobs in shortest-first order round
    robin over the GPUs. Returns, per job, how many jobs run before it on its GPU (0 = starts now).
    `allox_positions_lsa` solves the same matching with `scipy.optimize.linear_sum_assignment`
    (far slower at 900 jobs than this); the tests check that both are optimal.

    Examples
    --------
    >>> allox_positions(np.array([5.0, 1.0, 3.0, 2.0]), 2).tolist()
    [1, 0, 1, 0]
    """
    order = np.lexsort((np.arange(remaining_s.size), remaining_s))
    ahead = np.empty(remaining_s.size, dtype=np.int64)
    ahead[order] = np.arange(remaining_s.size) // slots
    return ahead


def allox_positions_lsa(remaining_s: FloatArray, slots: int) -> tuple[IntArray, float]:
    """The AlloX matching solved as a min-cost bipartite matching (reference for tests).

    Builds AlloX's cost matrix ``[p, 2p, 3p, ...]`` over `slots` GPUs and as many positions as
    needed, solves it with `scipy.optimize.linear_sum_assignment`, and returns, per job, the
    number of jobs before it on its GPU, and the optimal cost.
    """
    m = remaining_s.size
    positions = -(-m // slots)
    k = np.repeat(np.arange(1, positions + 1), slots)  # column (k, j) at k * slots + j
    cost = remaining_s[:, None] * k[None, :]
    rows, cols = linear_sum_assignment(cost)
    gpu = cols % slots
    per_gpu = np.bincount(gpu, minlength=slots)
    ahead = np.empty(m, dtype=np.int64)
    ahead[rows] = per_gpu[gpu] - k[cols]  # the job with the largest k on a GPU runs first
    return ahead, float(cost[rows, cols].sum())


# --- allocations under Gavel's rounds, over the cluster's one type (pure functions of the frozen state) --


def allocate_max_min(state: RoundState) -> Allocated:
    """Gavel's max-min fairness on one type: `water_filling` of the GPUs over the gangs."""
    return Allocated(water_filling(state.col("gpus"), state.capacity))


def allocate_finish_time_fairness(state: RoundState) -> Allocated:
    """Themis' finish-time fairness as the Shockwave artifact runs it (`FinishTimeFairness`);
    ``details["rho"]`` is the optimal largest ratio."""
    remaining = remaining_s(state)
    fair = (state.col("done_s") + remaining) / equal_share(state)
    elapsed = state.clock_s - state.col("arrival_s")
    x, rho = ftf_allocation(remaining, elapsed, fair, state.col("gpus"), state.capacity)
    return Allocated(x, details=MappingProxyType({"rho": rho}))


def allocate_max_sum_throughput(state: RoundState) -> Allocated:
    """Gavel's max-sum-throughput on one type: the fractional knapsack of `MaxSumThroughput`."""
    w = state.col("gpus").astype(float)
    density = 1.0 / (state.col("epoch_s")[:, 0] * state.col("epochs") * w)
    order = np.lexsort((state.col("seq"), -density))
    used = np.cumsum(w[order])
    before = used - w[order]
    x = np.zeros(state.n)
    x[order] = np.clip((state.capacity - before) / w[order], 0.0, 1.0)
    return Allocated(x)


def allocate_min_total_duration(state: RoundState) -> Allocated:
    """Gavel's min-total-duration on one type: ``x_i = R_i / T*`` (`MinTotalDuration`)."""
    remaining = remaining_s(state)
    horizon = max(float(remaining.max()), float(state.col("gpus") @ remaining) / state.capacity)
    return Allocated(remaining / horizon)


def allocate_static_market(state: RoundState) -> Allocated:
    """The one-round Fisher market's equilibrium fractions (`StaticMarket`)."""
    epochs, done = state.col("epochs").astype(np.float64), state.col("done").astype(np.float64)
    rate = state.round_s / state.col("epoch_s")[:, 0]
    window = window_market(state.col("gpus"), epochs, done, np.minimum(rate, epochs - done)[:, None],
                           float(state.capacity))
    result = solve_per_period(window.market)
    return Allocated(np.asarray(window.schedule(result)[:, 0], dtype=np.float64))
