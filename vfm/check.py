r"""Numerical certificates of equilibrium and checks of fairness and efficiency properties.

Every function takes a solved `Equilibrium` and returns a `Residual`: the worst violation
(dimensionless, 0 when the condition holds exactly), where it occurs, and the tolerance it is
judged against. Nothing here returns a bare boolean. A point with a NaN or infinite entry
(e.g. a failed solve's) fails every check: its residual is NaN (or inf) and says why.

Residuals are per buyer and per good: a buyer's relative to its own budget, a good's relative
to its own supply, so that a buyer with a tiny budget or a good in tiny supply is checked as
strictly as the largest.

Tolerances
----------
A solver asked for relative accuracy :math:`\epsilon` (`Equilibrium.accuracy`) returns a
primal-dual point whose *objective* is within about :math:`\epsilon` of the optimum. Near
its maximum NSWOT is quadratic, so the *point itself* (allocation and prices) is only accurate
to about :math:`\sqrt{\epsilon}`. The checks therefore have three tiers:

* primal feasibility (market clearing, caps, utility caps), which the solver enforces to its
  own feasibility tolerance: ``tolerance = FEASIBILITY_FACTOR * accuracy``;
* objective-level residuals (duality gap, unsold value, buyers' regret):
  ``tolerance = OBJECTIVE_FACTOR * accuracy``;
* point-level residuals (budget exhaustion, bang-per-buck, envy, proportionality, Pareto
  improvement): ``tolerance = SOLUTION_FACTOR * sqrt(accuracy)``.

The factors absorb the solver's scaling of the program (see ``docs/verifying.md`` for how
they were measured). Pass ``tol=`` to judge against your own number.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

import numpy as np
import scipy.optimize
import scipy.sparse as sp

from vfm.equilibrium import Equilibrium
from vfm.errors import CertificateError, ValidationError
from vfm.market import VolatileFisherMarket
from vfm.parameters import Instance, Interval, Optional, Real
from vfm.parameters import check as check_value
from vfm.program import ScaledProgram

#: Multiplies the solver's accuracy for primal feasibility (over-allocation, cap excess).
FEASIBILITY_FACTOR = 1.0
#: Multiplies the solver's accuracy for objective-level residuals.
OBJECTIVE_FACTOR = 100.0
#: Multiplies the square root of the solver's accuracy for point-level residuals.
SOLUTION_FACTOR = 10.0


def feasibility_tolerance(result: Equilibrium) -> float:
    """Default tolerance of primal-feasibility residuals for `result`."""
    return FEASIBILITY_FACTOR * result.accuracy


def objective_tolerance(result: Equilibrium) -> float:
    """Default tolerance of objective-level residuals for `result`."""
    return OBJECTIVE_FACTOR * result.accuracy


def solution_tolerance(result: Equilibrium) -> float:
    """Default tolerance of point-level residuals for `result`."""
    return SOLUTION_FACTOR * float(np.sqrt(result.accuracy))


@dataclass(frozen=True)
class Residual:
    """The worst violation of one condition.

    Attributes
    ----------
    name : str
    value : float
        Worst violation, dimensionless (see each check for its scale); 0 means exact. A value
        at or below 0 (the condition holds with room to spare, or a rounding's -0.0) is stored
        and printed as 0; NaN and inf are kept as they are.
    where : tuple of int
        Index of the worst violation: ``(i,)`` a buyer, ``(j, t)`` a good-period,
        ``(i, j, t)`` an entry, ``(i, k)`` a pair of buyers.
    tolerance : float
    note : str
        Why the value is what it is when that is not a plain violation (e.g. the point is not
        finite); empty otherwise.
    """

    name: str
    value: float
    where: tuple[int, ...]
    tolerance: float
    note: str = ""

    def __post_init__(self) -> None:
        # "Negative values are reported as 0": a check that holds with room to spare, or whose
        # value is a solver's -0.0 (e.g. an LP's optimum negated), reports 0, never -0.000e+00.
        # `value <= 0` is False for NaN, which stays NaN and never holds.
        value = float(self.value)
        object.__setattr__(self, "value", 0.0 if value <= 0.0 else value)

    @property
    def holds(self) -> bool:
        """``value <= tolerance`` (NaN and inf never hold)."""
        return bool(np.isfinite(self.value) and self.value <= self.tolerance)

    def __str__(self) -> str:
        verdict = "ok" if self.holds else "VIOLATED"
        note = f" ({self.note})" if self.note else ""
        return f"{self.name:<24} {self.value:10.3e}  (tol {self.tolerance:.1e}) at {self.where}  {verdict}{note}"


class _Verdict(Protocol):
    """What a certificate needs of a residual: its name, and whether it holds."""

    @property
    def name(self) -> str: ...

    @property
    def holds(self) -> bool: ...


ResidualT = TypeVar("ResidualT", bound=_Verdict)


@dataclass(frozen=True)
class Certificate(Generic[ResidualT]):
    """Several residuals that together certify a solution: `Residual` (floating point, against
    tolerances) here, `vfm.exact.ExactResidual` (rational, exact) in `vfm.exact`."""

    residuals: tuple[ResidualT, ...]

    def __iter__(self) -> Iterator[ResidualT]:
        return iter(self.residuals)

    def __getitem__(self, name: str) -> ResidualT:
        for residual in self.residuals:
            if residual.name == name:
                return residual
        raise KeyError(name)

    @property
    def holds(self) -> bool:
        return all(r.holds for r in self.residuals)

    def assert_holds(self) -> Certificate[ResidualT]:
        """Return `self`, or raise `vfm.errors.CertificateError` listing what is violated."""
        broken = [str(r) for r in self.residuals if not r.holds]
        if broken:
            raise CertificateError("certificate violated:\n" + "\n".join(broken))
        return self

    def __str__(self) -> str:
        return "\n".join(str(r) for r in self.residuals)


def _worst(values: np.ndarray, name: str, tolerance: float) -> Residual:
    """Residual of the largest entry of `values`; a NaN is worst of all and is reported as NaN.

    (``max(0.0, nan)`` is 0.0: the clamp to 0 must not touch NaN, or a NaN would pass.)
    """
    values = np.asarray(values, dtype=np.float64)
    if values.size == 0:
        return Residual(name, 0.0, (), tolerance)
    flat = values.reshape(-1)
    nan = np.isnan(flat)
    index = int(np.argmax(nan)) if nan.any() else int(np.argmax(flat))
    where = tuple(int(i) for i in np.unravel_index(index, values.shape))
    value = float(flat[index])
    if np.isnan(value):
        return Residual(name, value, where, tolerance, "not a number: the condition cannot be evaluated")
    return Residual(name, max(0.0, value), where, tolerance, "infinite" if np.isinf(value) else "")


def _nonfinite(result: Equilibrium, name: str, tolerance: float) -> Residual | None:
    """A failing residual if the allocation or the prices have a NaN or infinite entry, else None."""
    for label, array in (("allocation", result.allocation), ("prices", result.prices)):
        bad = ~np.isfinite(array)
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            entry = float(array[where])
            return Residual(name, entry if np.isnan(entry) else np.inf, where, tolerance,
                            f"{label}{list(where)} is {entry}: a point that is not finite certifies nothing")
    return None


class Check(Protocol):
    """What every check is: ``check(result, tol=None) -> Residual``, named as its residual."""

    __name__: str

    def __call__(self, result: Equilibrium, tol: float | None = None) -> Residual: ...


def require_result(result: object, where: str) -> None:
    """Raise `ValidationError` unless `result` is an `Equilibrium` (what `vfm.solve` returns)."""
    # A market where its result belongs is the likely mistake: say how to get the result.
    hint = "solve the market first, vfm.solve(market)" if isinstance(result, VolatileFisherMarket) else ""
    check_value(f"result of {where}", result, Instance(Equilibrium, "an Equilibrium (the result of vfm.solve)", hint))


def _in_force(tol: float | None) -> float:
    """The tolerance a check decorated with `_check` receives: never None (the default is filled in)."""
    if tol is None:
        raise TypeError("a check runs with the tolerance in force; call it through its decorated name")
    return float(tol)


def _check(tier: Callable[[Equilibrium], float]) -> Callable[[Check], Check]:
    """Give a check its default tolerance (`tier`) and make it fail on a point that is not finite.

    The check itself then receives the tolerance in force and a finite point.
    """
    def decorate(check: Check) -> Check:
        @functools.wraps(check)
        def checked(result: Equilibrium, tol: float | None = None) -> Residual:
            require_result(result, f"vfm.check.{check.__name__}")
            check_value(f"tol of vfm.check.{check.__name__}", tol, Optional(Interval(Real, 0)))  # None: the default
            tolerance = tier(result) if tol is None else float(tol)
            broken = _nonfinite(result, check.__name__, tolerance)
            return broken if broken is not None else check(result, tolerance)
        return checked
    return decorate


def _flat(result: Equilibrium) -> tuple[np.ndarray, np.ndarray]:
    n = result.market.n_buyers
    return result.allocation.reshape(n, -1), result.prices.reshape(-1)


# --- equilibrium conditions -------------------------------------------------------------------


@_check(feasibility_tolerance)
def market_clearing(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Primal feasibility of supply and sign: :math:`\sum_i x_{ijt} \le s_{jt}`, :math:`x \ge 0`.

    Value: the largest over-allocation or negative entry, relative to the good's supply (the
    feasibility the solver enforces on the scaled program, so the tolerance is its accuracy).
    `where` is ``(j, t)``.
    """
    market = result.market
    supply = _per_good_scale(market)
    over = (result.allocation.sum(axis=0) - market.supply) / supply
    negative = -np.min(result.allocation, axis=0) / supply  # max(-x) exactly, with no negated copy
    return _worst(np.maximum(over, negative), "market_clearing", _in_force(tol))


def _per_good_scale(market: VolatileFisherMarket) -> np.ndarray:
    """Each good's supply, 1 where it is 0 (nothing may be allocated there: any amount is excess)."""
    return np.where(market.supply > 0, market.supply, 1.0)


def _good_budgets(market: VolatileFisherMarket) -> np.ndarray:
    """(m, T): the largest budget of a buyer who can buy each good (all budgets where nobody can).

    The money that could be spent on the good: unsold supply at a positive price is measured
    against it, so a good only a small buyer wants is checked on that buyer's scale.
    """
    pairs = market.pairs
    largest = pairs.column_reduce(np.maximum, market.budgets[pairs.by_column.buyer], 0.0).reshape(market.supply.shape)
    return np.where(largest > 0, largest, market.budgets.sum())


@_check(objective_tolerance)
def price_complementarity(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Prices are nonnegative and positive only on sold-out goods, good by good.

    Value: :math:`\max_{jt} |p_{jt}| \cdot |s_{jt} - \sum_i x_{ijt}| / B_{jt}` over negative
    prices (times the whole supply) and unsold supply, with :math:`B_{jt}` the largest budget of
    a buyer who can buy good `j` in period `t`: the unsold share of the good's supply, weighted
    by the good's value as a share of the money that could buy it. `where` is ``(j, t)``.
    """
    market = result.market
    slack = market.supply - result.allocation.sum(axis=0)
    unsold = np.maximum(result.prices, 0.0) * np.maximum(slack, 0.0)
    negative = np.maximum(-result.prices, 0.0) * market.supply
    value = np.maximum(unsold, negative) / _good_budgets(market)
    return _worst(value, "price_complementarity", _in_force(tol))


@_check(solution_tolerance)
def budget_exhaustion(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Each buyer spends its budget: :math:`|p \cdot x_i - B_i| / B_i`. `where` is ``(i,)``."""
    x, p = _flat(result)
    value = np.abs(x @ p - result.market.budgets) / result.market.budgets
    return _worst(value, "budget_exhaustion", _in_force(tol))


@_check(solution_tolerance)
def bang_per_buck(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Buyers spend only on goods of maximum utility per price.

    With :math:`\beta_i = \max_{jt} u_{ijt} / p_{jt}`, the value is the share of budget spent
    at worse than the best rate, weighted by how much worse:
    :math:`\max_i \sum_{jt} x_{ijt} (p_{jt} - u_{ijt} / \beta_i) / B_i`. It is infinite if a
    valued good is free. `where` is ``(i, j, t)``, the worst entry of the worst buyer.
    """
    market = result.market
    pairs = market.pairs
    x, p = _flat(result)
    with np.errstate(divide="ignore", invalid="ignore"):
        best = _best_rates(market, p)
        # Only the pairs that trade waste anything: sum over them, not over every pair.
        bought = pairs.at(x)
        trading = bought != 0
        buyer, column = pairs.buyer[trading], pairs.column[trading]
        terms = bought[trading] * (p[column] - pairs.utility[trading] / best[buyer])
    spent_badly = np.bincount(buyer, terms, minlength=market.n_buyers)
    per_buyer = np.where(np.isinf(best), np.inf, spent_badly) / market.budgets
    worst = _worst(per_buyer, "bang_per_buck", _in_force(tol))
    if not worst.where:
        return worst
    i = worst.where[0]
    u = np.where(market.reachable[i].reshape(-1), market.utilities[i].reshape(-1), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        waste = np.where(u > 0, x[i] * (p - u / best[i]), 0.0)
    waste = np.where(np.isinf(best[i]), np.inf, waste)
    entry = np.unravel_index(int(np.argmax(waste)), market.shape[1:])
    return Residual(worst.name, worst.value, (i, int(entry[0]), int(entry[1])), worst.tolerance, worst.note)


def _best_rates(market: VolatileFisherMarket, prices: np.ndarray) -> np.ndarray:
    r""":math:`\max_{jt} u_{ijt} / p_{jt}` per buyer over its whole row, 0 off the pairs (inf where a
    valued good is free), shape (n,), from the market's pairs: a maximum is exact, so the dense
    row's value."""
    pairs = market.pairs
    best = pairs.row_reduce(np.maximum, pairs.utility / prices[pairs.column], -np.inf)
    # A buyer who cannot buy some good-period has that entry's 0 in its dense row.
    return np.where(pairs.row_full(), best, np.maximum(best, 0.0))


@_check(objective_tolerance)
def duality_gap(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""The duality gap :math:`|g(p) - \text{NSWOT}(x)| / \sum_i B_i` (see `vfm.duality`).

    The market-wide measure; `buyer_optimality` and `price_complementarity` split it by buyer
    and by good. `where` is ``(i,)``, the buyer with the largest regret at the prices.
    """
    regret = result.gap.regret
    where = (int(np.argmax(np.where(np.isnan(regret), np.inf, regret))),)
    value = abs(result.relative_gap)
    if np.isfinite(value):
        return Residual("duality_gap", value, where, _in_force(tol))
    return Residual("duality_gap", value, where, _in_force(tol), "the gap is not finite")


@_check(objective_tolerance)
def buyer_optimality(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Each bundle is optimal for its buyer at the prices (KKT stationarity and cap slackness).

    Value: :math:`\max_i \text{regret}_i / B_i`, where the regret
    :math:`\varphi_i^*(p) - (B_i \log U_i(x_i) - p \cdot x_i)` is what buyer `i` gains by
    re-optimizing alone within its caps. Divided by the buyer's own budget it is a change of
    :math:`\log U_i` (net of spending), so every buyer, however small, is held to the same
    relative accuracy of its own utility. `where` is ``(i,)``.
    """
    regret = np.abs(result.gap.regret) / result.market.budgets
    return _worst(regret, "buyer_optimality", _in_force(tol))


@_check(feasibility_tolerance)
def feasibility(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Primal feasibility of the whole program: supply, :math:`0 \le x \le d`, :math:`U \le \bar U`.

    Value: the worst of `market_clearing`, cap excess relative to the good's supply (the unit in
    which the solver bounds it) and utility-cap excess relative to the utility cap. `where` is
    ``(j, t)``, ``(i, j, t)`` or ``(i,)``.
    """
    market = result.market
    tolerance = _in_force(tol)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap_excess = np.where(np.isfinite(market.caps),
                              (result.allocation - market.caps) / _per_good_scale(market)[None], 0.0)
        utility_excess = np.where(np.isfinite(market.utility_cap),
                                  (result.utilities - market.utility_cap) / market.utility_cap, 0.0)
    parts = [
        market_clearing(result, tolerance),
        _worst(cap_excess, "caps", tolerance),
        _worst(utility_excess, "utility_cap", tolerance),
    ]
    worst = max(parts, key=lambda r: np.inf if np.isnan(r.value) else r.value)
    return Residual("feasibility", worst.value, worst.where, tolerance, worst.note)


def equilibrium_conditions(result: Equilibrium) -> Certificate:
    """The equilibrium conditions of a plain market: market clearing, price complementarity, budget
    exhaustion and bang per buck (docs/model.md), with the duality gap.

    Raises
    ------
    vfm.errors.ValidationError
        If the market has caps, base utility or utility caps: use `kkt` for those.
    """
    require_result(result, "vfm.check.equilibrium_conditions")
    if not result.market.is_plain:
        raise ValidationError(
            "equilibrium_conditions apply to plain markets only (no caps, base_utility or utility_cap); "
            "use vfm.check.kkt for this market"
        )
    return Certificate((
        market_clearing(result),
        price_complementarity(result),
        budget_exhaustion(result),
        bang_per_buck(result),
        duality_gap(result),
    ))


def kkt(result: Equilibrium) -> Certificate:
    """The KKT system of the NSWOT program, for any market (see ``docs/model.md``)."""
    require_result(result, "vfm.check.kkt")
    return Certificate((
        feasibility(result),
        price_complementarity(result),
        buyer_optimality(result),
        duality_gap(result),
    ))


def certify(result: Equilibrium) -> Certificate:
    """`equilibrium_conditions` for a plain market, else `kkt`.

    Examples
    --------
    >>> import vfm
    >>> result = vfm.solve(vfm.VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    >>> vfm.check.certify(result).holds
    True
    """
    require_result(result, "vfm.check.certify")
    return equilibrium_conditions(result) if result.market.is_plain else kkt(result)


# --- properties -------------------------------------------------------------------------------


@_check(solution_tolerance)
def envy_freeness(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""(Budget-weighted) envy-freeness on cumulative utility.

    With :math:`V_{ik} = \min(\bar U_i, c_i + u_i \cdot x_k)` (buyer `i`'s utility for buyer
    `k`'s bundle, cut at its utility cap: a job cannot pass 100 % progress), the value is the
    largest relative envy :math:`\max_{i,k} (V_{ik}/B_k) / (V_{ii}/B_i) - 1`; `where` is
    ``(i, k)``: `i` envies `k`. Guaranteed for plain markets and for markets whose only
    extension is utility caps.
    """
    market = result.market
    n = market.n_buyers
    x, _ = _flat(result)
    values = np.minimum(market.base_utility[:, None] + market.utilities.reshape(n, -1) @ x.T,
                        market.utility_cap[:, None])
    weighted = values / market.budgets[None, :]
    own = np.diag(weighted)[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        envy = weighted / own - 1.0
    return _worst(envy, "envy_freeness", _in_force(tol))


@_check(solution_tolerance)
def proportionality(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Each buyer is at least as well off as with its budget share of every good.

    The reference bundle of buyer `i` is :math:`\min(d_i, s B_i / \sum_k B_k)` (the equal split
    for equal budgets, cut to the buyer's caps), and its utility is cut at :math:`\bar U_i`.
    Value: :math:`\max_i \min(\bar U_i, U_i(\text{share}_i)) / U_i(x_i) - 1`; `where` is
    ``(i,)``. Guaranteed for plain markets and for markets whose only extension is utility caps.
    """
    market = result.market
    share = market.supply[None] * (market.budgets / market.budgets.sum())[:, None, None]
    reference = np.minimum(market.utility_of(np.minimum(share, market.caps)), market.utility_cap)
    with np.errstate(divide="ignore", invalid="ignore"):
        shortfall = reference / result.utilities - 1.0
    return _worst(shortfall, "proportionality", _in_force(tol))


@_check(solution_tolerance)
def pareto_optimality(result: Equilibrium, tol: float | None = None) -> Residual:
    r"""Search for a Pareto improvement with a linear program.

    Solves (HiGHS, through `scipy.optimize.linprog`)

    .. math::

        \max_{x', g} \sum_i \frac{B_i}{\sum_k B_k} g_i \quad\text{s.t.}\quad
        U_i(x') = U_i(x)(1 + g_i),\; g_i \ge -\eta,\; x' \text{ feasible},

    with :math:`\eta = \text{tol}/10`: every buyer may lose at most :math:`\eta` (relative) so
    that the solver's rounding cannot make the LP infeasible. At a Pareto-optimal allocation the
    optimum is at most :math:`\eta`; an allocation that some feasible :math:`x'` improves for
    everyone by a budget-weighted average of :math:`G` scores at least :math:`G`. Value: that
    optimum; `where` is ``(i,)``, the buyer who gains most.

    Holds for every market `vfm.solve` accepts (caps, base utility and utility caps included),
    relative to the market's own feasible set. A point the LP cannot take (not finite) fails
    with value NaN or inf, never raises.
    """
    tolerance = _in_force(tol)
    slack = tolerance / 10.0
    market = result.market
    program = ScaledProgram.from_market(market)
    n, nnz = market.n_buyers, program.n_entries
    current = result.utilities / program.scale  # scaled utilities of the allocation under test
    # Variables: z (nnz, scaled allocation) then g (n, relative gains).
    objective = np.concatenate([np.zeros(nnz), -market.budgets / market.budgets.sum()])
    equality = sp.hstack([program.utility_matrix(), -sp.diags(current)], format="csr")
    rows = [sp.hstack([program.supply_matrix(), sp.csr_matrix((program.traded.size, n))])]
    upper = [np.ones(program.traded.size)]
    saturable = np.flatnonzero(np.isfinite(program.utility_cap))
    if saturable.size:
        rows.append(sp.hstack([program.utility_matrix()[saturable], sp.csr_matrix((saturable.size, n))]))
        upper.append(program.utility_cap[saturable] - program.base[saturable])
    bounds = np.concatenate([
        np.column_stack([np.zeros(nnz), np.minimum(program.upper, 1.0)]),
        np.column_stack([np.full(n, -slack), np.full(n, np.inf)]),
    ])
    try:
        lp = scipy.optimize.linprog(
            objective,
            A_ub=sp.vstack(rows, format="csr"),
            b_ub=np.concatenate(upper),
            A_eq=equality,
            b_eq=current - program.base,
            bounds=bounds,
            method="highs",
        )
    except ValueError as exc:  # scipy's "Invalid input for linprog" (e.g. utilities that overflow)
        return Residual("pareto_optimality", np.inf, (), tolerance, f"the LP could not be posed: {exc}")
    if lp.status != 0:
        # Infeasible means the allocation under test is itself outside the feasible set by more
        # than the slack: no valid comparison exists, which is a violation, not a pass.
        return Residual("pareto_optimality", np.inf, (), tolerance, f"the LP ended without a solution: {lp.message}")
    gains = lp.x[nnz:]
    # No improvement (the LP's optimum 0, -0.0 or below): `Residual` reports it as 0.
    return Residual("pareto_optimality", -float(lp.fun), (int(np.argmax(gains)),), tolerance)


def properties(result: Equilibrium) -> Certificate:
    """Envy-freeness, proportionality and Pareto optimality of `result`."""
    require_result(result, "vfm.check.properties")
    return Certificate((envy_freeness(result), proportionality(result), pareto_optimality(result)))
