r"""Exact equilibria of plain markets: polish an interior-point answer, or compute it in rationals.

An interior-point solve returns a point whose prices and utilities are only about
:math:`\sqrt{\epsilon}`-accurate (`vfm.check`). In a plain market (no caps, base utility or
utility caps) the equilibrium is, once its *support* is known, the solution of a linear system,
which this module solves exactly.

The support is the bipartite graph of (buyer, good) pairs that trade (a good is a good-period
:math:`g = (j, t)`). With :math:`\beta_i = B_i / U_i`, the money buyer `i` pays per unit of
utility (the inverse of its best bang-per-buck), the equilibrium conditions read

* :math:`p_g = \beta_i u_{ig}` on every edge of the support, :math:`p_g \ge \beta_i u_{ig}` on
  every pair buyer `i` can buy (maximum bang-per-buck);
* money flows :math:`f_{ig} = p_g x_{ig} \ge 0` on the support with
  :math:`\sum_g f_{ig} = B_i` (budgets) and :math:`\sum_i f_{ig} = p_g s_g` (clearing).

On a connected component of the support, the edges fix every price and every
:math:`\beta_i` relative to one of them (along a spanning tree; the other edges must agree), and
the component's balance :math:`\sum_{i} B_i = \sum_g p_g s_g` fixes the scale. The flows then
solve a transportation system on the component: unique on a tree (peeled leaf by leaf); on a
component with cycles, the one closest to the interior-point flows in least squares (computed
in floating point, then made exact on a spanning tree of the largest flows). Prices and
utilities are unique in a linear Fisher market even where the allocation is not.

The support is guessed from the interior-point answer (pairs whose share of the good or of the
buyer's budget exceeds a threshold, several thresholds in turn, then the near-tight pairs), and
every guess is verified: in floating point for `polished`, in rational arithmetic with no
tolerance (`exact_certificate`) for `solve_exact`. A verified answer is *the* equilibrium,
whatever the guess was.

Examples
--------
>>> import vfm
>>> from vfm.exact import solve_exact, exact_certificate
>>> market = vfm.VolatileFisherMarket.static([[1.0, 1.0], [0.0, 1.0]], budgets=[2.0, 1.0])
>>> exact = solve_exact(market)
>>> [str(p) for p in exact.prices.ravel()]
['3/2', '3/2']
>>> [str(x) for x in exact.allocation[:, 1, 0]]
['1/3', '2/3']
>>> exact_certificate(market, exact).holds
True
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from vfm._validation import check_shape
from vfm.check import Certificate
from vfm.equilibrium import Equilibrium
from vfm.errors import SolverError, ValidationError
from vfm.market import VolatileFisherMarket
from vfm.nswot import solve

# The polish lives in vfm.nswot.polish (vfm.solve runs it); `polished`, `polish_budget_s` and `POLISH_MIN_S` are
# re-exported here, where the docs and tests name them.
from vfm.nswot.polish import POLISH_MIN_S as POLISH_MIN_S
from vfm.nswot.polish import (
    MarketData,
    Rejected,
    SupportSolution,
    components,
    construct,
    float_solutions,
    good_of,
    max_spanning_tree,
    polished,
    prices_on,
    require_plain,
    require_point,
)
from vfm.nswot.polish import polish_budget_s as polish_budget_s

__all__ = [
    "ExactCertificate",
    "ExactEquilibrium",
    "ExactResidual",
    "exact_certificate",
    "polished",
    "solve_exact",
]

# --- results -------------------------------------------------------------------------------------


def _frozen(values: np.ndarray) -> np.ndarray:
    values.setflags(write=False)
    return values


@dataclass(frozen=True, eq=False)
class ExactEquilibrium:
    """The equilibrium of a plain market in rational arithmetic, as returned by `solve_exact`.

    Attributes
    ----------
    market : VolatileFisherMarket
    allocation : ndarray of Fraction, shape (n, m, T), read-only
        :math:`x_{ijt}`; one equilibrium allocation (the closest to the interior-point one
        where the allocation is not unique).
    prices : ndarray of Fraction, shape (m, T), read-only
        :math:`p_{jt}`; 0 for good-periods nobody can buy (zero supply or valued by nobody).
    utilities : ndarray of Fraction, shape (n,), read-only
        :math:`U_i = \\sum_{jt} u_{ijt} x_{ijt}`.
    support : ndarray of bool, shape (n, m, T), read-only
        The pairs the construction allowed to trade (a superset of ``allocation > 0``).
    how : str
        Which support guess was verified.

    ``np.asarray(exact.prices, dtype=float)`` gives correctly rounded floats.
    """

    market: VolatileFisherMarket
    allocation: np.ndarray
    prices: np.ndarray
    utilities: np.ndarray
    support: np.ndarray
    how: str = ""

    @property
    def money_per_utility(self) -> np.ndarray:
        r""":math:`\beta_i = B_i / U_i`, the inverse of buyer `i`'s best bang-per-buck, shape (n,)."""
        return _frozen(np.array([Fraction(b) / u for b, u in zip(self.market.budgets, self.utilities, strict=True)],
                                dtype=object))

    def to_floats(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(allocation, prices, utilities)`` as correctly rounded float64 arrays."""
        return (np.asarray(self.allocation, dtype=np.float64), np.asarray(self.prices, dtype=np.float64),
                np.asarray(self.utilities, dtype=np.float64))


@dataclass(frozen=True)
class ExactResidual:
    """The worst violation of one condition, computed in rational arithmetic.

    Attributes
    ----------
    name : str
    value : Fraction or float
        The worst violation (dimensionless, scaled as in `vfm.check`), exactly 0 when the
        condition holds; ``inf`` where a ratio is undefined (a valued good at price 0).
    where : tuple of int
        ``(i,)`` a buyer, ``(j, t)`` a good-period, ``(i, j, t)`` an entry; ``()`` if it holds.
    """

    name: str
    value: Fraction | float
    where: tuple[int, ...]

    @property
    def holds(self) -> bool:
        """``value == 0``: no tolerance."""
        return self.value == 0

    def __str__(self) -> str:
        verdict = "exact" if self.holds else "VIOLATED"
        return f"{self.name:<24} {float(self.value):10.3e}  at {self.where}  {verdict}"


#: The residuals of `exact_certificate`: it holds only if every one is exactly 0.
ExactCertificate = Certificate[ExactResidual]


# --- the API -------------------------------------------------------------------------------------


def solve_exact(market: VolatileFisherMarket, result: Equilibrium | None = None) -> ExactEquilibrium:
    """The equilibrium of a plain market in exact rational arithmetic, verified with no tolerance.

    Runs `vfm.solve` (unless `result` is given), guesses the support, solves the equilibrium
    system on it in `fractions.Fraction` from the market's floats taken exactly, and returns the
    first answer whose `exact_certificate` holds.

    Parameters
    ----------
    market : VolatileFisherMarket
        Must be plain.
    result : Equilibrium, optional
        A solved point of `market` to start from (default: ``vfm.solve(market)``).

    Returns
    -------
    ExactEquilibrium

    Raises
    ------
    vfm.errors.ValidationError
        If the market is not plain (the message names the extension).
    vfm.errors.SolverError
        If the solve returned no point, or no support guess gives an exact equilibrium (the
        message lists the guesses and why each failed).
    """
    market = require_plain(market, "solve_exact")
    if result is None:
        result = solve(market)
    elif result.market is not market:
        raise ValidationError("solve_exact needs the market that `result` solved (result.market is another object)")
    require_point(result)
    data = MarketData(market)
    tried: list[str] = []
    for approximate in float_solutions(data, result, tried):
        hint = np.array(approximate.flows, dtype=np.float64)
        for keep, how in _exact_supports(data, approximate, hint):
            try:
                solution = construct(data, approximate.edges[keep], hint[keep], exact=True, how=how)
            except Rejected as reason:
                tried.append(f"{how} (exact): {reason}")
                continue
            exact = _exact_result(data, solution)
            certificate = exact_certificate(market, exact)
            if certificate.holds:
                return exact
            worst = next(r for r in certificate if not r.holds)
            tried.append(f"{how} (exact): {worst.name} violated at {worst.where}")
    raise SolverError(
        "solve_exact could not identify the support of the equilibrium: no guess gave an exact equilibrium ("
        + "; ".join(tried) + ")",
        status=str(result.status),
        result=result,
    )


def _exact_supports(data: MarketData, approximate: SupportSolution,
                    hint: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
    """The float-verified support, then (if its cycles are only near-ties in binary) the forest that
    breaks the near-ties the way the exact data does; each as a bool over ``approximate.edges``."""
    edges = approximate.edges
    yield np.ones(len(edges), dtype=bool), approximate.how
    count, _ = components(data, edges)
    if len(edges) == data.n + data.goods - count:
        return  # a forest: nothing to break
    forest = _break_near_ties(data, approximate, hint)
    if forest is not None:
        yield forest, approximate.how + ", near-ties broken by a linear program on the exact reduced costs"


def _break_near_ties(data: MarketData, approximate: SupportSolution, hint: np.ndarray) -> np.ndarray | None:
    r"""Ties that hold in decimals but not in binary (e.g. :math:`0.1 \cdot 0.7 \ne 0.7 \cdot 0.1` style
    cycles): the exact equilibrium's support is a forest inside the float support (returned as a
    bool over its edges).

    To first order in the tiny cycle discrepancies, the exact flows maximize
    :math:`\sum_e f_e \log(\beta_i u_{ig} / p_g)` over the flows of the support (the prices of a
    spanning tree, in rationals, give the reduced costs exactly); the vertex of that linear
    program is the forest.
    """
    edges = approximate.edges
    _, labels = components(data, edges)
    tree = max_spanning_tree(data, edges, hint)
    try:
        prices, beta = prices_on(data, edges[tree], labels, exact=True)
    except Rejected:  # pragma: no cover - a tree has no cycle to disagree on
        return None
    _, _, utility = data.field(True)
    buyer, good = edges[:, 0], edges[:, 1]
    reduced = (beta[buyer] * utility[buyer, good] / prices[good] - 1).astype(np.float64)
    if not np.any(reduced):
        return None
    # Money flows meeting the float demands, steered by the reduced costs.
    nodes = data.n + data.goods
    matrix = sp.coo_matrix((np.ones(2 * len(edges)), (np.concatenate([edges[:, 0], data.n + edges[:, 1]]),
                                                      np.tile(np.arange(len(edges)), 2))), shape=(nodes, len(edges)))
    demand = np.concatenate([data.budgets, np.array(approximate.prices, dtype=np.float64) * data.supply])
    lp = scipy.optimize.linprog(-reduced / np.abs(reduced).max(), A_eq=matrix.tocsr(), b_eq=demand,
                                bounds=(0, None), method="highs")
    if lp.status != 0:
        return None
    return np.asarray(lp.x > 1e-9 * np.maximum(demand[edges[:, 0]], demand[data.n + edges[:, 1]]))


def _exact_result(data: MarketData, solution: SupportSolution) -> ExactEquilibrium:
    market = data.market
    allocation = solution.allocation(data, exact=True)
    utilities = np.array([Fraction(b) / beta for b, beta in zip(market.budgets.tolist(), solution.beta, strict=True)],
                         dtype=object)
    prices = np.array(solution.prices, dtype=object)
    support = np.zeros((data.n, data.goods), dtype=bool)
    support[solution.edges[:, 0], solution.edges[:, 1]] = True
    return ExactEquilibrium(
        market=market,
        allocation=_frozen(allocation.reshape(market.shape)),
        prices=_frozen(prices.reshape(market.supply.shape)),
        utilities=_frozen(utilities),
        support=_frozen(support.reshape(market.shape)),
        how=solution.how,
    )


def _rational_point(market: VolatileFisherMarket,
                    exact: ExactEquilibrium) -> tuple[MarketData, np.ndarray, np.ndarray, np.ndarray]:
    """`market`'s data, and `exact`'s allocation, prices and stored utilities as rationals, once
    their shapes are checked against the market's."""
    n = market.n_buyers
    shapes = {"allocation": (exact.allocation, market.shape), "prices": (exact.prices, market.supply.shape),
              "utilities": (exact.utilities, (n,))}
    for name, (values, shape) in shapes.items():
        check_shape(f"exact.{name}", values, shape, " (the market's)")

    def rational(values: object) -> np.ndarray:
        return np.array([Fraction(v) for v in np.asarray(values).reshape(-1).tolist()], dtype=object)

    allocation = rational(exact.allocation).reshape(n, -1)
    return MarketData(market), allocation, rational(exact.prices), rational(exact.utilities)


def exact_certificate(market: VolatileFisherMarket, exact: ExactEquilibrium) -> ExactCertificate:
    r"""Verify an equilibrium of a plain market in rational arithmetic, with no tolerance.

    Every value is computed from the market's floats taken exactly and `exact`'s allocation and
    prices (utilities are recomputed from the allocation, and the stored ones must equal them).
    The residuals, each exactly 0 when its condition holds:

    * ``nonnegativity``: :math:`x \ge 0` (relative to the good's supply) and :math:`p \ge 0`
      (value of the supply relative to all budgets);
    * ``market_clearing``: :math:`\sum_i x_{ig} \le s_g`, with equality where :math:`p_g > 0`,
      relative to :math:`s_g`;
    * ``budget_exhaustion``: :math:`|p \cdot x_i - B_i| / B_i`;
    * ``bang_per_buck``: :math:`u_{ig} / p_g \le 1/\beta_i = U_i / B_i` on every pair buyer `i`
      can buy; value :math:`\max(B_i u_{ig} / (p_g U_i) - 1)`, ``inf`` if such a good is free;
    * ``maximum_bang_per_buck``: buyers buy only goods of maximum bang-per-buck,
      :math:`B_i u_{ig} = p_g U_i` wherever :math:`x_{ig} > 0` and :math:`p_g > 0`; value
      :math:`\max(1 - B_i u_{ig} / (p_g U_i))`;
    * ``utilities``: the stored utilities equal :math:`\sum_g u_{ig} x_{ig}` (relative).

    Together they are the KKT conditions of the Eisenberg–Gale program, so a certificate that
    holds proves `exact` is an equilibrium of `market` exactly.

    Raises
    ------
    vfm.errors.ValidationError
        If the market is not plain, or the arrays of `exact` do not fit it.
    """
    market = require_plain(market, "exact_certificate")
    n = market.n_buyers
    data, x, prices, stored = _rational_point(market, exact)
    u, budgets, supply = (data.rational(field) for field in ("utilities", "budgets", "supply"))
    zero = Fraction(0)
    where_good = lambda g: good_of(data, g)  # noqa: E731
    where_entry = lambda i, g: (i, *good_of(data, g))  # noqa: E731

    bought = [(int(i), int(g)) for i, g in zip(*np.nonzero(x != zero), strict=True)]
    total = sum(budgets.tolist(), zero)
    unit = [s if s > 0 else Fraction(1) for s in supply.tolist()]

    # Nonnegativity.
    worst: tuple[Fraction | float, tuple[int, ...]] = (zero, ())
    for i, g in bought:
        if x[i, g] < 0 and -x[i, g] / unit[g] > worst[0]:
            worst = (-x[i, g] / unit[g], where_entry(i, g))
    for g, p in enumerate(prices.tolist()):
        if p < 0 and -p * unit[g] / total > worst[0]:
            worst = (-p * unit[g] / total, where_good(g))
    residuals = [ExactResidual("nonnegativity", *worst)]

    # Market clearing.
    sold = [zero] * data.goods
    for i, g in bought:
        sold[g] += x[i, g]
    worst = (zero, ())
    for g in range(data.goods):
        excess = sold[g] - supply[g]
        value = (abs(excess) if prices[g] > 0 else max(excess, zero)) / unit[g]
        if value > worst[0]:
            worst = (value, where_good(g))
    residuals.append(ExactResidual("market_clearing", *worst))

    # Budgets.
    spent, achieved = [zero] * n, [zero] * n
    for i, g in bought:
        spent[i] += prices[g] * x[i, g]
        achieved[i] += u[i, g] * x[i, g]
    worst = (zero, ())
    for i in range(n):
        value = abs(spent[i] - budgets[i]) / budgets[i]
        if value > worst[0]:
            worst = (value, (i,))
    residuals.append(ExactResidual("budget_exhaustion", *worst))

    # Bang-per-buck on every pair: B_i u_ig <= p_g U_i.
    worst = (zero, ())
    free = data.reachable & (prices <= 0)[None, :] | data.reachable & (np.array(achieved, dtype=object) <= 0)[:, None]
    if free.any():
        i, g = (int(k) for k in np.argwhere(free)[0])
        worst = (float("inf"), where_entry(i, g))
    else:
        rate = np.array([b / a for b, a in zip(budgets.tolist(), achieved, strict=True)], dtype=object)
        over = data.reachable & (rate[:, None] * u > prices[None, :])
        for i, g in np.argwhere(over).tolist():
            value = rate[i] * u[i, g] / prices[g] - 1
            if value > worst[0]:
                worst = (value, where_entry(i, g))
    residuals.append(ExactResidual("bang_per_buck", *worst))

    # Buying only the best goods: B_i u_ig = p_g U_i where x_ig > 0 and p_g > 0.
    worst = (zero, ())
    for i, g in bought:
        if prices[g] > 0:
            value = 1 - budgets[i] * u[i, g] / (prices[g] * achieved[i]) if achieved[i] > 0 else Fraction(1)
            if value > worst[0]:
                worst = (value, where_entry(i, g))
    residuals.append(ExactResidual("maximum_bang_per_buck", *worst))

    # Stored utilities.
    worst = (zero, ())
    for i in range(n):
        difference = abs(stored[i] - achieved[i])
        value = difference / achieved[i] if achieved[i] > 0 else difference
        if value > worst[0]:
            worst = (value, (i,))
    residuals.append(ExactResidual("utilities", *worst))
    return ExactCertificate(tuple(residuals))
