r"""Jobs on a GPU cluster as a Volatile Fisher Market.

One good per round: the cluster's :math:`G_t` GPUs in round `t`. Job `i` runs gang-scheduled on
:math:`w_i` GPUs for a fraction :math:`y_{it} \in [0, 1]` of round `t`, so it holds
:math:`x_{it} = w_i y_{it}` GPUs and capacity is :math:`\sum_i x_{it} \le G_t`. Its utility is its
normalized progress

.. math:: U_i = \frac{e_i + \sum_t r_{it} y_{it}}{E_i} \le 1,

which is the market of `vfm.VolatileFisherMarket` with :math:`u_{it} = r_{it} / (E_i w_i)` per
GPU, :math:`c_i = e_i / E_i`, caps :math:`d_{it} = w_i` (:math:`y \le 1`) and
:math:`\bar U_i = 1`. A job pays :math:`w_i p_t` for a whole round `t`. A round whose capacity
is below a job's gang size cannot run that job at all, so its cap there is 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, as_real_array, require_per_job
from vfm.equilibrium import Equilibrium
from vfm.market import VolatileFisherMarket
from vfm.parameters import Instance, Interval, Real, Whole, check, check_array, check_nonempty


@dataclass(frozen=True, eq=False)
class JobWindow:
    """A planning window of jobs, its market, and the maps back to job terms.

    Attributes
    ----------
    market : VolatileFisherMarket
        Shape (n_jobs, 1, n_rounds).
    gpus : ndarray, shape (n,)
        GPUs per job, :math:`w_i`.
    """

    market: VolatileFisherMarket
    gpus: FloatArray

    def schedule(self, result: Equilibrium) -> FloatArray:
        """Fraction of each round each job runs, :math:`y_{it} = x_{it} / w_i`, shape (n, T)."""
        return result.allocation[:, 0, :] / self.gpus[:, None]

    def job_prices(self, result: Equilibrium) -> FloatArray:
        """What each job pays for a whole round, :math:`w_i p_t`, shape (n, T)."""
        return self.gpus[:, None] * result.prices[0][None, :]

    def progress(self, result: Equilibrium) -> FloatArray:
        """Normalized progress at the end of the window, :math:`U_i`, shape (n,)."""
        return result.utilities


def equal_share(n_jobs: int, gpus: float, gang: ArrayLike = 1) -> Any:
    r"""The fraction of time a job runs when `gpus` GPUs are split equally among `n_jobs` jobs.

    Each job gets :math:`G/N` GPUs' worth of time, so a gang of :math:`w` GPUs runs
    :math:`\min(1, G / (N w))` of the time. With ``gang=1`` this is the share behind the
    finish-time-fairness metric (:math:`
ho = JCT / (T^{iso} / \min(1, G/N))`) and Shockwave's
    finish-time targets; Themis' isolated finish times pass each job's gang.

    Parameters
    ----------
    n_jobs : int
        Jobs sharing the cluster (N >= 1).
    gpus : float
        GPUs in the cluster (G).
    gang : array_like, optional
        GPUs per job (w); a float is returned for a scalar, an array of its shape otherwise.

    Examples
    --------
    >>> equal_share(120, 32), equal_share(10, 32), equal_share(16, 32, [1, 4]).tolist()
    (0.26666666666666666, 1.0, [1.0, 0.5])
    """
    check("n_jobs", n_jobs, Interval(Whole, 1, unit="jobs"))
    check("gpus", gpus, Interval(Real, 0, closed="neither", unit="GPUs"))
    width = as_real_array(gang, "gang", np.shape(gang) if np.ndim(gang) else ())
    check_array("gang", width, Interval(Real, 0, closed="neither", unit="GPUs"))
    share = np.minimum(1.0, gpus / (n_jobs * width))
    return float(share) if share.ndim == 0 else share


def window_market(
    gpus: ArrayLike,
    epochs: ArrayLike,
    epochs_done: ArrayLike,
    epochs_per_round: ArrayLike,
    capacity: ArrayLike,
    budgets: ArrayLike | None = None,
) -> JobWindow:
    """Build the GPU-cluster market of a planning window from job arrays.

    Parameters
    ----------
    gpus : array_like of int, shape (n,)
        GPUs each job needs at once (its gang size), :math:`w_i \\ge 1`.
    epochs : array_like, shape (n,)
        Total epochs :math:`E_i > 0`.
    epochs_done : array_like, shape (n,)
        Epochs finished before the window, :math:`0 \\le e_i < E_i`.
    epochs_per_round : array_like, shape (n, T)
        Forecast epochs :math:`r_{it} \\ge 0` job `i` completes if it runs all of round `t`.
    capacity : float or array_like, shape (T,)
        GPUs in the cluster, :math:`G` or :math:`G_t`.
    budgets : array_like, shape (n,), optional
        Default: equal.

    Returns
    -------
    JobWindow

    Raises
    ------
    vfm.errors.ValidationError
        Naming the job and field: a gang size that is not a positive integer or exceeds every
        round's capacity, non-positive epochs, epochs done outside ``[0, epochs)`` (a finished job
        must leave the window), negative forecasts, or a job that can make no progress at all.

    Examples
    --------
    Two one-GPU jobs on one GPU for two rounds; job 1 is twice as fast in round 2.

    >>> import vfm
    >>> from vfm.jobs import window_market
    >>> window = window_market([1, 1], [10, 10], [0, 0], [[1, 1], [1, 2]], capacity=1)
    >>> window.schedule(vfm.solve(window.market)).round(3)
    array([[1., 0.],
           [0., 1.]])
    """
    w = as_real_array(gpus, "gpus", (None,))
    n = w.size
    check_nonempty("gpus", n, "job")
    total = as_real_array(epochs, "epochs", (n,))
    done = as_real_array(epochs_done, "epochs_done", (n,))
    rate = as_real_array(epochs_per_round, "epochs_per_round", (n, None))
    rounds = rate.shape[1]
    check_nonempty("epochs_per_round", rounds, "round (shape (n, T) with T >= 1)")
    raw_capacity = np.asarray(capacity)
    g = as_real_array(
        np.broadcast_to(raw_capacity, (rounds,)) if raw_capacity.ndim == 0 else raw_capacity,
        "capacity", (rounds,),
    )
    check_array("capacity", g, Interval(Real, 0, unit="GPUs"))

    require_per_job("gpus", w, (w < 1) | (w != np.round(w)), "must be a positive whole number of GPUs")
    require_per_job("gpus", w, w > g.max(),
             f"exceeds the cluster's largest capacity ({g.max():g} GPUs), so the job can never run")
    require_per_job("epochs", total, total <= 0, "must be > 0")
    require_per_job("epochs_done", done, done < 0, "must be >= 0")
    require_per_job("epochs_done", done, done > total, "exceeds the job's total epochs")
    require_per_job("epochs_done", done, done == total,
             "equals the job's total epochs: the job is finished, remove it from the window")
    require_per_job("epochs_per_round", rate, rate < 0, "must be >= 0")
    fits = w[:, None] <= g[None, :]
    stuck = (done == 0) & ~((rate > 0) & fits).any(axis=1)
    require_per_job("epochs_per_round", rate, stuck[:, None] & np.ones_like(fits),
             "is 0 in every round the job fits and it has done no epochs, so it can make no progress")

    market = VolatileFisherMarket(
        (rate / (total * w)[:, None])[:, None, :],
        budgets,
        g[None, :],
        base_utility=done / total,
        caps=np.where(fits, w[:, None], 0.0)[:, None, :],
        utility_cap=np.ones(n),
    )
    w.setflags(write=False)
    return JobWindow(market=market, gpus=w)


def shift_rounds(result: Equilibrium, rounds: int = 1) -> tuple[FloatArray, FloatArray]:
    """A warm start for the next re-plan: `result`'s allocation and prices moved `rounds` earlier.

    The window of the next re-plan starts `rounds` later, so what was planned for round
    ``t + rounds`` is the guess for round `t`; the last `rounds` rounds repeat the old last round.
    The job set must be the same (rows are jobs in the same order).

    Parameters
    ----------
    result : Equilibrium
        The previous solve of a window, shapes (n, m, T).
    rounds : int
        Between 1 and T - 1.

    Returns
    -------
    allocation : ndarray, shape (n, m, T)
    prices : ndarray, shape (m, T)

    Examples
    --------
    >>> import vfm
    >>> window = window_market([1, 1], [10, 10], [0, 0], [[1, 1, 1], [1, 2, 3]], capacity=1)
    >>> allocation, prices = shift_rounds(vfm.solve(window.market))
    >>> allocation.shape, prices.shape
    ((2, 1, 3), (1, 3))
    """
    check("result", result, Instance(Equilibrium, "an Equilibrium (the result of vfm.solve)"))
    periods = result.market.n_periods
    check("rounds", rounds, Interval(Whole, 1, periods - 1))
    keep = np.arange(periods) + rounds
    keep = np.minimum(keep, periods - 1)
    return result.allocation[:, :, keep], result.prices[:, keep]
