"""The one-round Fisher market over GPU types, at equal budgets: `static_market_allocation`.

The goods are the types' GPUs for one round, the buyers the jobs (budget 1 each, utility the
fraction of their epochs the round gives them); its equilibrium is solved as a
`vfm.planner.PlanningProgram` by the planning backend `MARKET_SOLVER` of the solver registry
(`vfm.solvers.registry`). It is the allocation of
`vfm.cluster.baselines.policies.HeterogeneousStaticMarket` (``docs/baselines_typed.md``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import as_real_array, read_only, require_per_job
from vfm.cluster.baselines.typed.instance import FloatArray, IntArray, checked_instance
from vfm.cluster.gpu_types import ClusterTypes
from vfm.equilibrium import Status
from vfm.errors import SolverError
from vfm.parameters import Interval, Real, check
from vfm.planner import PlanningProgram  # the planner registers its planning backends as it loads
from vfm.solvers.registry import select

#: The planning backend the market is solved by: the planner's interior point.
MARKET_SOLVER = "saa-ipm"
#: Relative gap `static_market_allocation` asks of the interior point (the backend's ``tol``).
MARKET_TOL = 1e-9
#: Market fractions below this (a millionth of a round, 0.12 ms of a 120 s round) are set to 0.
#: The interior point's iterates are strictly positive, and an entry that is 0 at the optimum keeps
#: a residue that shrinks only with the barrier (up to ~4e-7 at 120 jobs with `MARKET_TOL`); left
#: in, it would make the job a candidate of that type in Gavel's placement.
MARKET_X_TOL = 1e-6

__all__ = [
    "MARKET_SOLVER",
    "MARKET_TOL",
    "MARKET_X_TOL",
    "MarketAllocation",
    "solve_market",
    "static_market_allocation",
]


class MarketAllocation(NamedTuple):
    """The equilibrium of the one-round market, as `static_market_allocation` returns it (arrays
    read-only).

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
    the planning backend `MARKET_SOLVER` to a relative gap of `MARKET_TOL`; fractions below
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
    >>> (result.x.round(6) + 0.0).ravel().tolist()  # + 0.0: a -0.0 prints as 0.0
    [1.0, 0.75, 0.375]
    """
    thr, w, c = checked_instance(throughputs, gpus, counts)
    n = thr.shape[0]
    total = as_real_array(epochs, "epochs", (n,))
    done = as_real_array(epochs_done, "epochs_done", (n,))
    require_per_job("epochs", total, total <= 0, "must be > 0")
    require_per_job("epochs_done", done, (done < 0) | (done >= total), "must be in [0, epochs) (a finished job "
                    "has left)")
    check("round_s", round_s, Interval(Real, 0, closed="neither"))
    return solve_market(thr, w, c, total, done, float(round_s))


def solve_market(thr: FloatArray, w: IntArray, c: IntArray, epochs: FloatArray, done: FloatArray,
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
        progress=(rate / epochs[:, None])[None], base=np.zeros(n), budgets=np.ones(n),
        gpus=w.astype(np.float64), capacity=c.astype(np.float64), round_s=round_s,
        # Used only by finish-time and efficiency terms, which this program has none of; the
        # planner's convention: seconds left on the job's fastest type, `speed` relative to it.
        remaining_s=left / fastest, good_round=np.zeros(k, dtype=np.int64), speed=thr / fastest[:, None])
    solution = select(program, MARKET_SOLVER).solve(program, tol=MARKET_TOL)
    usable = solution.status == Status.OPTIMAL or solution.status == Status.INACCURATE
    if not usable or solution.x is None or solution.prices is None or not np.isfinite(solution.x).all():
        raise SolverError(f"the static market over GPU types ({n} jobs, {k} types) was not solved: "
                          f"{MARKET_SOLVER} ended {solution.status.value}: {solution.message}",
                          status=str(solution.status), result=solution)
    x = np.clip(solution.x, 0.0, 1.0)
    x[x < MARKET_X_TOL] = 0.0
    utilities = program.base + (program.progress[0] * x).sum(axis=1)
    return MarketAllocation(read_only(x), read_only(utilities), read_only(np.array(solution.prices, dtype=np.float64)),
                            solution.status, solution.iterations)

