r"""The Lagrangian dual of NSWOT: an exact, solver-independent optimality certificate.

Relaxing the supply rows with prices :math:`p \ge 0` separates the program by buyer:

.. math::

    g(p) = \sum_{j,t} p_{jt} s_{jt} + \sum_i \varphi_i^*(p), \qquad
    \varphi_i^*(p) = \max_{0 \le x_i \le d_i,\; U_i(x_i) \le \bar U_i}
        B_i \log U_i(x_i) - p \cdot x_i .

Weak duality gives :math:`g(p) \ge \text{NSWOT}(x)` for every feasible `x`, so
:math:`g(p) - \text{NSWOT}(x)` bounds how far `x` is from optimal whatever produced it.
The gap splits exactly into parts that name who is off and by how much:

.. math::

    g(p) - \sum_i B_i \log U_i(x) =
    \underbrace{\sum_i \big[\varphi_i^*(p) - (B_i \log U_i(x_i) - p \cdot x_i)\big]}_{\text{buyers' regret} \ge 0}
    + \underbrace{\sum_{j,t} p_{jt}\big(s_{jt} - \textstyle\sum_i x_{ijt}\big)}_{\text{value of unsold supply}} .

Buyer `i`'s problem is a fractional knapsack: the cheapest way to reach utility `U` buys goods
in increasing order of price per utility :math:`p_{jt}/u_{ijt}`, so its cost is convex and
piecewise linear in `U`, and :math:`B_i \log U - \text{cost}(U)` is maximized segment by segment
in closed form. Everything is vectorized over buyers (one sort per buyer row).

Only the entries a buyer can buy (positive utility, cap and supply) enter; prices are taken
at their nonnegative part, since only nonnegative multipliers give a valid bound.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, frozen
from vfm.market import VolatileFisherMarket


def best_response_values(market: VolatileFisherMarket, prices: ArrayLike) -> FloatArray:
    r"""Each buyer's optimal value :math:`\varphi_i^*(p)` at prices `p`.

    Parameters
    ----------
    market : VolatileFisherMarket
    prices : array_like, shape (m, T)

    Returns
    -------
    ndarray, shape (n,)
        ``+inf`` for a buyer that can get unbounded utility for free (a valued good at price 0
        with no cap), ``-inf`` for a buyer that can reach no positive utility.

    Examples
    --------
    One buyer, one unit of one good at price 1: it buys everything (:math:`\log 1 - 1`).

    >>> from vfm import VolatileFisherMarket
    >>> float(best_response_values(VolatileFisherMarket.static([[1.0]]), [[1.0]])[0])
    -1.0
    """
    if market.is_plain:
        price = np.maximum(np.asarray(prices, dtype=np.float64).reshape(-1), 0.0)
        return _plain_best_response_values(market, price)
    return _general_best_response_values(market, prices)


def _general_best_response_values(market: VolatileFisherMarket, prices: ArrayLike) -> FloatArray:
    """`best_response_values` along each buyer's sorted cost curve (caps, base utility, utility cap)."""
    n = market.n_buyers
    budgets = market.budgets[:, None]
    price = np.maximum(np.asarray(prices, dtype=np.float64).reshape(-1), 0.0)
    buyable = market.reachable.reshape(n, -1)
    utility = market.utilities.reshape(n, -1)
    cap = market.caps.reshape(n, -1)

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # Price per unit of utility; non-buyable entries sort last and never form a segment.
        unit_cost = np.where(buyable, price[None, :] / np.where(buyable, utility, 1.0), np.inf)
        order = np.argsort(unit_cost, axis=1, kind="stable")
        unit_cost = np.take_along_axis(unit_cost, order, axis=1)
        buyable = np.take_along_axis(buyable, order, axis=1)
        cap = np.take_along_axis(cap, order, axis=1)
        u = np.take_along_axis(utility, order, axis=1)
        p = price[order]
        # Segment k of the cost curve: buy the k-th cheapest entry up to its cap.
        gain = np.where(buyable, u * cap, 0.0)
        cost = np.where(buyable & (p > 0), p * cap, 0.0)
        end = market.base_utility[:, None] + np.cumsum(gain, axis=1)
        start = np.concatenate([market.base_utility[:, None], end[:, :-1]], axis=1)
        cost_start = np.concatenate([np.zeros((n, 1)), np.cumsum(cost, axis=1)[:, :-1]], axis=1)
        ceiling = market.utility_cap[:, None]
        valid = buyable & (start <= ceiling) & np.isfinite(cost_start) & np.isfinite(start)
        # On a segment the derivative is B/U - unit_cost: stationary at U = B / unit_cost.
        level = np.clip(budgets / unit_cost, np.minimum(start, ceiling), np.minimum(end, ceiling))
        spent = cost_start + np.where(unit_cost > 0, unit_cost * (level - start), 0.0)
        value = np.where(valid, budgets * np.log(level) - spent, -np.inf)
        unbounded = (valid & np.isinf(level)).any(axis=1)
        nothing = market.budgets * np.log(market.base_utility)
    best = np.maximum(nothing, value.max(axis=1, initial=-np.inf))
    return np.where(unbounded, np.inf, best)


def _plain_best_response_values(market: VolatileFisherMarket, price: FloatArray) -> FloatArray:
    """`best_response_values` of a plain market: each buyer spends its budget on its cheapest
    unit of utility, with no sort (the general curve's first segment, the same arithmetic), over
    the market's pairs (`vfm.market.Pairs`) only."""
    pairs = market.pairs
    budgets = market.budgets
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # A minimum is exact: the same as over the dense row, where the other entries are inf.
        unit_cost = pairs.row_reduce(np.minimum, price[pairs.column] / pairs.utility, np.inf)
        level = budgets / unit_cost
        value = budgets * np.log(level) - np.where(unit_cost > 0, unit_cost * (level - 0.0), 0.0)
    return np.where(np.isinf(unit_cost), -np.inf, np.where(np.isinf(level), np.inf, value))


@dataclass(frozen=True)
class GapDecomposition:
    """The duality gap of an allocation and prices, split by cause (its arrays are read-only).

    Attributes
    ----------
    regret : ndarray, shape (n,)
        :math:`\\varphi_i^*(p) - (B_i \\log U_i(x_i) - p \\cdot x_i) \\ge 0` (up to rounding):
        how much buyer `i` could gain by re-optimizing its own bundle at prices `p`.
    unsold_value : ndarray, shape (m, T)
        :math:`p_{jt}(s_{jt} - \\sum_i x_{ijt})`: value of supply left unsold at a positive price
        (negative where the allocation over-uses supply).
    total : float
        ``regret.sum() + unsold_value.sum()`` = dual bound minus NSWOT.
    dual_bound : float
        :math:`g(p)`, an upper bound on the optimal NSWOT.
    """

    regret: FloatArray
    unsold_value: FloatArray
    total: float
    dual_bound: float


def duality_gap(market: VolatileFisherMarket, allocation: ArrayLike, prices: ArrayLike) -> GapDecomposition:
    """Duality gap of `allocation` (primal) and `prices` (dual) for the NSWOT program.

    Parameters
    ----------
    market : VolatileFisherMarket
    allocation : array_like, shape (n, m, T)
    prices : array_like, shape (m, T)

    Returns
    -------
    GapDecomposition
    """
    n = market.n_buyers
    x = np.asarray(allocation, dtype=np.float64)
    price = np.maximum(np.asarray(prices, dtype=np.float64), 0.0)
    best = best_response_values(market, price)
    with np.errstate(divide="ignore", invalid="ignore"):
        achieved = market.budgets * np.log(market.utility_of(x)) - x.reshape(n, -1) @ price.reshape(-1)
        regret = best - achieved
    unsold_value = price * (market.supply - x.sum(axis=0))
    dual_bound = float(best.sum() + (price * market.supply).sum())
    return GapDecomposition(
        regret=frozen(regret),
        unsold_value=frozen(unsold_value),
        total=float(regret.sum() + unsold_value.sum()),
        dual_bound=dual_bound,
    )


def stationary_prices(market: VolatileFisherMarket, allocation: ArrayLike) -> FloatArray:
    r"""Prices recovered from an allocation of a plain market by stationarity.

    In a plain market (no caps, base utility or utility caps) the optimality conditions give
    :math:`p_{jt} = \max_i B_i u_{ijt} / U_i(x)` exactly, for every good someone values. These
    prices inherit the allocation's error: where every good has a single holder at the optimum
    the utilities, and so the prices, come out far more accurate than the solver's duals
    (which are only about :math:`\sqrt{\epsilon}`-accurate, the dual bound being flat to first
    order in the prices); where buyers share goods the allocation's split is itself only
    :math:`\sqrt{\epsilon}`-accurate and the duals can be better. `vfm.solve` computes both and
    keeps whichever certifies the smaller duality gap.

    Parameters
    ----------
    market : VolatileFisherMarket
        Must be plain.
    allocation : array_like, shape (n, m, T)

    Returns
    -------
    ndarray, shape (m, T)
    """
    utilities = market.utility_of(allocation)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = market.budgets / utilities
    if not np.isfinite(rate).all():
        # 0 * inf off the pairs makes NaN prices in the dense product: keep its arithmetic.
        with np.errstate(divide="ignore", invalid="ignore"):
            bang = np.where(market.reachable, market.utilities, 0.0) * rate[:, None, None]
        return np.asarray(bang.max(axis=0), dtype=np.float64)
    pairs = market.pairs
    column = pairs.by_column
    best = pairs.column_reduce(np.maximum, column.utility * rate[column.buyer], -np.inf)
    # A good-period some buyer cannot buy has that buyer's 0 in its dense column.
    best = np.where(pairs.column_full(), best, np.maximum(best, 0.0))
    return best.reshape(market.supply.shape)
