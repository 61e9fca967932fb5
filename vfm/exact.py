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

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.sparse.csgraph import connected_components

from vfm.check import Certificate
from vfm.equilibrium import Equilibrium, Status
from vfm.errors import SolverError, ValidationError
from vfm.market import VolatileFisherMarket
from vfm.nswot import certified, require_market, solve

__all__ = [
    "ExactCertificate",
    "ExactEquilibrium",
    "ExactResidual",
    "exact_certificate",
    "polished",
    "solve_exact",
]

#: Support thresholds tried after the gaps of the interior-point answer (share of the good's
#: supply or of the buyer's budget above which a pair counts as trading).
THRESHOLDS = (1e-4, 1e-3, 1e-5, 1e-2, 1e-6, 1e-8)
#: Relative slack of the near-tight supports (bang-per-buck within this of the buyer's best).
TIGHTNESS = (1e-6, 1e-4, 1e-2)
#: Relative tolerance of the floating-point verification in `polished`.
FLOAT_TOLERANCE = 1e-9
#: `polished`'s time budget in `vfm.solve`: at least this many seconds, and at most
#: `POLISH_SOLVE_FACTOR` times the solve's own time (`polish_budget_s`). The first support guess
#: verifies on the tests' and benchmarks' markets; the others are tried only while time is left.
POLISH_MIN_S = 0.05
POLISH_SOLVE_FACTOR = 2.0

Number = Any  # float or Fraction: the construction below is written once for both


class _Rejected(Exception):
    """A support guess that does not give an equilibrium (the message says why)."""


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


# --- plain markets and their data ----------------------------------------------------------------


def require_plain(market: VolatileFisherMarket, what: str) -> VolatileFisherMarket:
    """Return `market` if it is plain, else raise a `ValidationError` naming what is not."""
    market = require_market(market)
    reasons = []
    if market.has_caps:
        index = tuple(int(k) for k in np.argwhere(np.isfinite(market.caps))[0])
        reasons.append(f"caps (caps[{', '.join(map(str, index))}] = {market.caps[index]:g} is finite)")
    if market.has_base_utility:
        i = int(np.argmax(market.base_utility > 0))
        reasons.append(f"base_utility (base_utility[{i}] = {market.base_utility[i]:g} > 0)")
    if market.has_utility_cap:
        i = int(np.argmax(np.isfinite(market.utility_cap)))
        reasons.append(f"utility_cap (utility_cap[{i}] = {market.utility_cap[i]:g} is finite)")
    if reasons:
        raise ValidationError(
            f"{what} needs a plain market (no caps, base_utility or utility_cap); this market has "
            + " and ".join(reasons)
        )
    return market


class _Data:
    """A plain market flattened to buyers x goods (a good is a good-period), floats and rationals."""

    def __init__(self, market: VolatileFisherMarket) -> None:
        self.market = market
        n = market.n_buyers
        self.n, self.goods = n, market.n_goods * market.n_periods
        self.utilities = market.utilities.reshape(n, -1)
        self.reachable = market.reachable.reshape(n, -1)
        self.budgets = market.budgets
        self.supply = market.supply.reshape(-1)
        self.active = self.reachable.any(axis=0)  # goods with a positive price at equilibrium
        self._rational: dict[str, np.ndarray] = {}

    def rational(self, name: str) -> np.ndarray:
        """``utilities``, ``budgets`` or ``supply`` as an object array of exact Fractions (cached)."""
        if name not in self._rational:
            values = getattr(self, name)
            self._rational[name] = np.array([Fraction(v) for v in values.reshape(-1).tolist()],
                                            dtype=object).reshape(values.shape)
        return self._rational[name]

    def field(self, exact: bool) -> tuple[np.ndarray, np.ndarray, Callable[[int, int], Number]]:
        """Budgets, supply and a utility lookup in floats or Fractions."""
        if exact:
            u = self.rational("utilities")
            return self.rational("budgets"), self.rational("supply"), lambda i, g: u[i, g]
        return self.budgets, self.supply, lambda i, g: float(self.utilities[i, g])


# --- the construction on a support ---------------------------------------------------------------


@dataclass
class _Solution:
    """Prices, money per utility and flows of one support, in floats or Fractions (flat goods)."""

    prices: list[Number]
    beta: list[Number]
    edges: np.ndarray  # (E, 2): buyer, good
    flows: list[Number]
    how: str

    def allocation(self, data: _Data, exact: bool) -> np.ndarray:
        x = np.full((data.n, data.goods), Fraction(0) if exact else 0.0, dtype=object if exact else np.float64)
        for (i, g), f in zip(self.edges.tolist(), self.flows, strict=True):
            x[i, g] = f / self.prices[g]
        return x


def _components(data: _Data, edges: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the support graph, nodes 0..n-1 buyers and n.. goods."""
    size = data.n + data.goods
    graph = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], data.n + edges[:, 1])), shape=(size, size))
    return connected_components(graph, directed=False)


def _construct(data: _Data, support: np.ndarray, hint: np.ndarray, exact: bool, how: str) -> _Solution:
    """Solve the equilibrium system on `support` (bool, n x goods); `hint` are float flows to stay close to.

    Raises `_Rejected` if the support cannot carry an equilibrium (a buyer or a sold good without
    an edge, edges that disagree on a price, negative flows).
    """
    support = support & data.reachable
    buyers_without = ~support.any(axis=1)
    if buyers_without.any():
        raise _Rejected(f"buyer {int(np.argmax(buyers_without))} buys nothing")
    unsold = data.active & ~support.any(axis=0)
    if unsold.any():
        raise _Rejected(f"good {_good(data, int(np.argmax(unsold)))} is sold to nobody")
    edges = np.argwhere(support)
    budgets, supply, utility = data.field(exact)
    zero: Number = Fraction(0) if exact else 0.0
    one: Number = Fraction(1) if exact else 1.0
    prices: list[Number] = [zero] * data.goods
    beta: list[Number] = [zero] * data.n
    flows: list[Number] = [zero] * len(edges)
    count, labels = _components(data, edges)
    edge_component = labels[edges[:, 0]]
    by_component = np.argsort(edge_component, kind="stable")
    bounds = np.searchsorted(edge_component[by_component], np.arange(count + 1))
    for c in range(count):
        ids = by_component[bounds[c]:bounds[c + 1]]
        if ids.size == 0:
            continue  # a good nobody can buy: price 0
        comp = edges[ids]
        _prices_on(comp, utility, prices, beta, one, exact)
        buyers = np.unique(comp[:, 0])
        goods = np.unique(comp[:, 1])
        worth = sum((prices[g] * supply[g] for g in goods.tolist()), zero)
        scale = sum((budgets[i] for i in buyers.tolist()), zero) / worth
        for g in goods.tolist():
            prices[g] = prices[g] * scale
        for i in buyers.tolist():
            beta[i] = beta[i] * scale
        demand = {int(i): budgets[i] for i in buyers.tolist()}
        demand.update({data.n + int(g): prices[g] * supply[g] for g in goods.tolist()})
        for k, f in zip(ids.tolist(), _flows_on(data, comp, demand, hint[ids], exact), strict=True):
            flows[k] = f
    return _Solution(prices, beta, edges, flows, how)


def _prices_on(comp: np.ndarray, utility: Callable[[int, int], Number], prices: list[Number],
               beta: list[Number], one: Number, exact: bool) -> None:
    """Prices and betas of one component relative to its first buyer (BFS); other edges must agree."""
    neighbours: dict[tuple[str, int], list[int]] = {}
    for i, g in comp.tolist():
        neighbours.setdefault(("b", i), []).append(g)
        neighbours.setdefault(("g", g), []).append(i)
    root = int(comp[0, 0])
    beta[root] = one
    seen_buyers, seen_goods = {root}, set()
    queue: deque[tuple[str, int]] = deque([("b", root)])
    while queue:
        kind, node = queue.popleft()
        if kind == "b":
            for g in neighbours[("b", node)]:
                if g not in seen_goods:
                    seen_goods.add(g)
                    prices[g] = beta[node] * utility(node, g)
                    queue.append(("g", g))
        else:
            for i in neighbours[("g", node)]:
                if i not in seen_buyers:
                    seen_buyers.add(i)
                    beta[i] = prices[node] / utility(i, node)
                    queue.append(("b", i))
    for i, g in comp.tolist():
        implied = beta[i] * utility(i, g)
        if (implied != prices[g]) if exact else abs(implied - prices[g]) > FLOAT_TOLERANCE * prices[g]:
            raise _Rejected(f"the support's cycles disagree on the price of good index {g} (buyer {i})")


def _flows_on(data: _Data, comp: np.ndarray, demand: dict[int, Number], hint: np.ndarray, exact: bool) -> list[Number]:
    """Money flows of one component meeting `demand` at every node (buyer: budget, good: p s)."""
    nodes = len(demand)
    tree = np.ones(len(comp), dtype=bool)
    fixed: list[Number] = [None] * len(comp)
    if len(comp) > nodes - 1:
        # Cycles: the least-squares flows closest to the hint (floats), then exact on the spanning
        # tree of the largest flows with the other edges fixed at their (nonnegative) values.
        index = {node: k for k, node in enumerate(demand)}
        rows = np.array([index[i] for i in comp[:, 0].tolist()] + [index[data.n + g] for g in comp[:, 1].tolist()])
        cols = np.concatenate([np.arange(len(comp))] * 2)
        target = np.array([float(v) for v in demand.values()])
        projected = hint + _least_change(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(nodes, len(comp))),
                                         target, hint)
        tree = _max_spanning_tree(data, comp, projected)
        for k in np.flatnonzero(~tree).tolist():
            fixed[k] = Fraction(max(float(projected[k]), 0.0)) if exact else max(float(projected[k]), 0.0)
    flows = list(fixed)
    left = dict(demand)
    for k in np.flatnonzero(~tree).tolist():
        left[int(comp[k, 0])] -= flows[k]
        left[data.n + int(comp[k, 1])] -= flows[k]
    # Peel the tree leaf by leaf: a leaf's one edge carries what the leaf still needs.
    incident: dict[int, set[int]] = {node: set() for node in demand}
    for k in np.flatnonzero(tree).tolist():
        incident[int(comp[k, 0])].add(k)
        incident[data.n + int(comp[k, 1])].add(k)
    leaves = deque(node for node, ks in incident.items() if len(ks) == 1)
    while leaves:
        node = leaves.popleft()
        if len(incident[node]) != 1:
            continue
        k = incident[node].pop()
        i, g = int(comp[k, 0]), data.n + int(comp[k, 1])
        other = g if node == i else i
        flows[k] = left[node]
        left[node] -= flows[k]
        left[other] -= flows[k]
        incident[other].discard(k)
        if len(incident[other]) == 1:
            leaves.append(other)
    scale = max(abs(float(v)) for v in demand.values())
    for k, f in enumerate(flows):
        if f < 0:
            if exact or f < -FLOAT_TOLERANCE * scale:
                raise _Rejected(f"negative flow {float(f):.3g} between buyer {comp[k, 0]} and good index {comp[k, 1]}")
            flows[k] = 0.0
    return flows


def _least_change(incidence: sp.csr_matrix, target: np.ndarray, hint: np.ndarray) -> np.ndarray:
    r"""The least change :math:`c` (in the 2-norm) of the flows `hint` with :math:`A (h + c) = d`,
    `incidence` :math:`A` (nodes by edges) of one connected bipartite component.

    :math:`c = A^\top z` with :math:`A A^\top z = d - A h`: :math:`A A^\top` is the component's
    signless Laplacian, singular only along the vector of +1 on buyers and -1 on goods, so one
    node's :math:`z` is pinned to 0 and the rest is one sparse solve (nodes by nodes). A dense
    least-squares solve of :math:`A` costs nodes squared times edges: 154 s for the 200,000 pairs of
    2,000 identical buyers of 100 goods, against milliseconds here. The system is consistent: the
    component's budgets equal its goods' worth (the price scale is set so).
    """
    residual = target - incidence @ hint
    gram = (incidence @ incidence.T).tocsc()
    z = np.zeros(incidence.shape[0])
    if incidence.shape[0] > 1:
        z[1:] = scipy.sparse.linalg.spsolve(gram[1:, 1:], residual[1:])
    return np.asarray(incidence.T @ z)


def _max_spanning_tree(data: _Data, comp: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Kruskal: a spanning tree of the component of the largest weights (bool over its edges)."""
    parent: dict[int, int] = {}

    def root(v: int) -> int:
        parent.setdefault(v, v)
        while parent[v] != v:
            parent[v] = parent[parent[v]]
            v = parent[v]
        return v

    tree = np.zeros(len(comp), dtype=bool)
    for k in np.argsort(-weight, kind="stable").tolist():
        a, b = root(int(comp[k, 0])), root(data.n + int(comp[k, 1]))
        if a != b:
            parent[a] = b
            tree[k] = True
    return tree


def _good(data: _Data, g: int) -> tuple[int, int]:
    j, t = np.unravel_index(g, data.market.supply.shape)
    return int(j), int(t)


# --- guessing the support ------------------------------------------------------------------------


def _candidates(data: _Data, result: Equilibrium) -> Iterator[tuple[np.ndarray, str]]:
    """Support guesses from an interior-point answer, most plausible first, without repeats."""
    x = np.where(data.reachable, np.maximum(np.nan_to_num(result.allocation.reshape(data.n, -1)), 0.0), 0.0)
    prices = np.maximum(np.nan_to_num(result.prices.reshape(-1)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.maximum(x / data.supply[None, :], prices[None, :] * x / data.budgets[:, None])
    share = np.where(data.reachable, share, 0.0)
    share = np.nan_to_num(share)
    # The largest gaps (in decades) in the sorted shares separate trading pairs from the rest.
    levels = np.sort(np.log10(share[share > 1e-14]))[::-1]
    gaps = levels[:-1] - levels[1:]
    thresholds = [10.0 ** ((levels[k] + levels[k + 1]) / 2) for k in np.argsort(-gaps)[:3] if gaps[k] > 1.0]
    seen: set[bytes] = set()
    for threshold in (*thresholds, *THRESHOLDS):
        mask = share > threshold
        if mask.tobytes() not in seen:
            seen.add(mask.tobytes())
            yield mask, f"pairs trading more than {threshold:.2g} of the good's supply or the buyer's budget"
    utilities = np.einsum("ig,ig->i", data.utilities, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        bang = np.where(data.reachable, data.utilities * (data.budgets / utilities)[:, None], 0.0)
        tight = bang / bang.max(axis=0)[None, :]
    for slack in TIGHTNESS:
        mask = np.nan_to_num(tight) >= 1.0 - slack
        if mask.tobytes() not in seen:
            seen.add(mask.tobytes())
            yield mask, f"pairs within {slack:g} of the best bang-per-buck"


def _float_violation(data: _Data, solution: _Solution) -> str | None:
    """Floating-point verification of a float construction: bang-per-buck on every pair."""
    prices = np.array(solution.prices, dtype=np.float64)
    beta = np.array(solution.beta, dtype=np.float64)
    excess = np.where(data.reachable, beta[:, None] * data.utilities - prices[None, :] * (1.0 + FLOAT_TOLERANCE), 0.0)
    if (excess > 0).any():
        i, g = np.unravel_index(int(np.argmax(excess)), excess.shape)
        return f"buyer {int(i)} prefers good {_good(data, int(g))} to what it buys"
    return None


def _hint(data: _Data, result: Equilibrium) -> np.ndarray:
    """The interior-point money flows per pair, flat over (buyer, good)."""
    x = np.maximum(np.nan_to_num(result.allocation.reshape(data.n, -1)), 0.0)
    return x * np.maximum(np.nan_to_num(result.prices.reshape(-1)), 0.0)[None, :]


#: What `_float_solutions` records in `tried` when its deadline stops the guesses.
_STOPPED = "the polish stopped at its time budget"


def _float_solutions(data: _Data, result: Equilibrium, tried: list[str],
                     deadline: float | None = None) -> Iterator[_Solution]:
    """Float constructions on the support guesses that pass the float verification; after the
    first guess, none once `deadline` (`time.perf_counter`) has passed (`_STOPPED` ends `tried`)."""
    flows = _hint(data, result)
    for mask, how in _candidates(data, result):
        if deadline is not None and tried and time.perf_counter() > deadline:
            tried.append(_STOPPED)
            return
        try:
            edges = np.argwhere(mask & data.reachable)
            solution = _construct(data, mask, flows[edges[:, 0], edges[:, 1]], exact=False, how=how)
        except _Rejected as reason:
            tried.append(f"{how}: {reason}")
            continue
        violation = _float_violation(data, solution)
        if violation is not None:
            tried.append(f"{how}: {violation}")
            continue
        yield solution


def _require_point(result: Equilibrium) -> None:
    if not np.isfinite(result.allocation).all() or not np.isfinite(result.prices).all():
        raise SolverError(f"the solve returned no point to start from ({result.solver} ended '{result.status}': "
                          f"{result.message})", status=str(result.status), result=result)


# --- the API -------------------------------------------------------------------------------------


def polish_budget_s(solve_s: float) -> float:
    """Seconds `vfm.solve` gives `polished` after a solve of `solve_s` seconds:
    ``max(POLISH_MIN_S, POLISH_SOLVE_FACTOR * solve_s)``."""
    return max(POLISH_MIN_S, POLISH_SOLVE_FACTOR * float(solve_s)) if np.isfinite(solve_s) else POLISH_MIN_S


def polished(market: VolatileFisherMarket, result: Equilibrium, deadline: float | None = None) -> Equilibrium:
    """Polish an interior-point answer of a plain market to its exact equilibrium, in floating point.

    Guesses the support from `result`, solves the equilibrium system on it (see the module's
    docstring) and verifies the answer (bang-per-buck on every pair within `FLOAT_TOLERANCE`
    relative; clearing, budgets and nonnegative flows hold by construction). Prices and
    utilities are then within about 1e-12 relative of the exact equilibrium, the allocation
    within that of each good's supply (bounded by 1e-9 in the tests).

    Parameters
    ----------
    market : VolatileFisherMarket
        Must be plain and be ``result.market``.
    result : Equilibrium
        A solved point, e.g. from `vfm.solve`.
    deadline : float, optional
        A `time.perf_counter` instant after which no further support guess is tried (the first
        always is); `vfm.solve` passes its solve time's `polish_budget_s`.

    Returns
    -------
    Equilibrium
        On success a new point with status ``OPTIMAL`` (vfm's certificate is re-run on it), the
        input's solver, timings and accuracy, and a message that ends with ``"; polished to the
        exact equilibrium (...)"``. If no support guess verifies, or `result` has no point, the
        input unchanged except for a note in its message (its status is kept); when the
        deadline stops the guesses, the note says the polish stopped at its time budget.

    Raises
    ------
    vfm.errors.ValidationError
        If the market is not plain, or is not the market of `result`.
    """
    started = time.perf_counter()
    market = require_plain(market, "polished")
    if result.market is not market:
        raise ValidationError("polished needs the market that `result` solved (result.market is another object)")
    try:
        _require_point(result)
    except SolverError:
        return result
    data = _Data(market)
    tried: list[str] = []
    for solution in _float_solutions(data, result, tried, deadline):
        allocation = solution.allocation(data, exact=False).reshape(market.shape)
        prices = np.array(solution.prices, dtype=np.float64).reshape(market.supply.shape)
        note = (f"; polished to the exact equilibrium (support: {solution.how}, {len(solution.edges)} pairs, "
                f"{time.perf_counter() - started:.2g}s)")
        candidate = certified(dataclasses.replace(
            result, allocation=allocation, prices=prices, status=Status.OPTIMAL, message=result.message + note,
            wall_time=result.wall_time + time.perf_counter() - started))
        if candidate.status is Status.OPTIMAL:
            return candidate
        tried.append(f"{solution.how}: {candidate.message.rsplit(';', 1)[-1].strip()}")
    if tried and tried[-1] == _STOPPED:
        return result.relabel(message=result.message + f"; {_STOPPED} after {len(tried) - 1} support guesses "
                              f"({time.perf_counter() - started:.2g}s), kept the solver's point ("
                              + "; ".join(tried[:3]) + ")")
    return result.relabel(message=result.message + "; polish failed, kept the solver's point ("
                          + "; ".join(tried[:3]) + ")")


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
    _require_point(result)
    data = _Data(market)
    tried: list[str] = []
    for approximate in _float_solutions(data, result, tried):
        support = np.zeros((data.n, data.goods), dtype=bool)
        support[approximate.edges[:, 0], approximate.edges[:, 1]] = True
        hint = np.array(approximate.flows, dtype=np.float64)
        for mask, how in _exact_supports(data, support, approximate, hint):
            try:
                solution = _construct(data, mask, hint[mask[support]], exact=True, how=how)
            except _Rejected as reason:
                tried.append(f"{how} (exact): {reason}")
                continue
            exact = _exact_result(data, solution, mask)
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


def _exact_supports(data: _Data, support: np.ndarray, approximate: _Solution,
                    hint: np.ndarray) -> Iterator[tuple[np.ndarray, str]]:
    """The float-verified support, then (if its cycles are only near-ties in binary) the forest that
    breaks the near-ties the way the exact data does."""
    yield support, approximate.how
    edges = approximate.edges
    count, _ = _components(data, edges)
    if len(edges) == data.n + data.goods - count:
        return  # a forest: nothing to break
    forest = _break_near_ties(data, support, approximate, hint)
    if forest is not None:
        yield forest, approximate.how + ", near-ties broken by a linear program on the exact reduced costs"


def _break_near_ties(data: _Data, support: np.ndarray, approximate: _Solution,
                     hint: np.ndarray) -> np.ndarray | None:
    r"""Ties that hold in decimals but not in binary (e.g. :math:`0.1 \cdot 0.7 \ne 0.7 \cdot 0.1` style
    cycles): the exact equilibrium's support is a forest inside the float support.

    To first order in the tiny cycle discrepancies, the exact flows maximize
    :math:`\sum_e f_e \log(\beta_i u_{ig} / p_g)` over the flows of the support (the prices of a
    spanning tree, in rationals, give the reduced costs exactly); the vertex of that linear
    program is the forest.
    """
    edges = approximate.edges
    tree_mask = np.zeros(len(edges), dtype=bool)
    count, labels = _components(data, edges)
    edge_component = labels[edges[:, 0]]
    for c in range(count):
        ids = np.flatnonzero(edge_component == c)
        if ids.size:
            tree_mask[ids[_max_spanning_tree(data, edges[ids], hint[ids])]] = True
    tree = np.zeros_like(support)
    tree[edges[tree_mask, 0], edges[tree_mask, 1]] = True
    try:
        _, _, utility = data.field(True)
        prices: list[Number] = [Fraction(0)] * data.goods
        beta: list[Number] = [Fraction(0)] * data.n
        for c in range(count):
            ids = np.flatnonzero(tree_mask & (edge_component == c))
            if ids.size:
                _prices_on(edges[ids], utility, prices, beta, Fraction(1), True)
    except _Rejected:  # pragma: no cover - a tree has no cycle to disagree on
        return None
    reduced = np.array([float(beta[i] * utility(i, g) / prices[g] - 1) for i, g in edges.tolist()])
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
    keep = lp.x > 1e-9 * np.maximum(demand[edges[:, 0]], demand[data.n + edges[:, 1]])
    forest = np.zeros_like(support)
    forest[edges[keep, 0], edges[keep, 1]] = True
    return forest


def _exact_result(data: _Data, solution: _Solution, support: np.ndarray) -> ExactEquilibrium:
    market = data.market
    allocation = solution.allocation(data, exact=True)
    utilities = np.array([Fraction(b) / beta for b, beta in zip(market.budgets.tolist(), solution.beta, strict=True)],
                         dtype=object)
    prices = np.array(solution.prices, dtype=object)
    return ExactEquilibrium(
        market=market,
        allocation=_frozen(allocation.reshape(market.shape)),
        prices=_frozen(prices.reshape(market.supply.shape)),
        utilities=_frozen(utilities),
        support=_frozen((support & data.reachable).reshape(market.shape)),
        how=solution.how,
    )


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
    shapes = {"allocation": (exact.allocation, market.shape), "prices": (exact.prices, market.supply.shape),
              "utilities": (exact.utilities, (n,))}
    for name, (values, shape) in shapes.items():
        if np.shape(values) != shape:
            raise ValidationError(f"exact.{name} has shape {np.shape(values)}, the market needs {shape}")
    data = _Data(market)
    u = data.rational("utilities")
    budgets, supply = data.rational("budgets"), data.rational("supply")
    x = np.array([Fraction(v) for v in np.asarray(exact.allocation).reshape(-1).tolist()],
                 dtype=object).reshape(n, -1)
    prices = np.array([Fraction(v) for v in np.asarray(exact.prices).reshape(-1).tolist()], dtype=object)
    stored = np.array([Fraction(v) for v in np.asarray(exact.utilities).tolist()], dtype=object)
    zero = Fraction(0)
    where_good = lambda g: _good(data, g)  # noqa: E731
    where_entry = lambda i, g: (i, *_good(data, g))  # noqa: E731

    bought = [(i, g) for i, g in zip(*np.nonzero(x != zero), strict=True)]
    bought = [(int(i), int(g)) for i, g in bought]
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
    spent = [zero] * n
    achieved = [zero] * n
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
