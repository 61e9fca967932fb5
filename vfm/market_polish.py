r"""The floating-point polish of a plain market's interior-point answer to its exact equilibrium.

`polished` guesses the support of the equilibrium from the interior-point answer, solves the
equilibrium's linear system on it and verifies the result in floating point (the method is
described in `vfm.exact`, whose rational solve builds on the construction here, written once for
floats and Fractions); `vfm.solve` runs it on plain markets within `polish_budget_s`.
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
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.sparse.csgraph import connected_components

from vfm.entry_checks import certified, require_market
from vfm.equilibrium import Equilibrium, Status
from vfm.errors import SolverError, ValidationError
from vfm.market import VolatileFisherMarket

# What `polished` needs and `vfm.exact`'s rational solve builds on too: the market's data, the
# supports tried, an equilibrium constructed on a support.
__all__ = [
    "MarketData",
    "Rejected",
    "SupportSolution",
    "components",
    "construct",
    "float_solutions",
    "good_of",
    "max_spanning_tree",
    "polish_budget_s",
    "polished",
    "prices_on",
    "require_plain",
    "require_point",
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


class Rejected(Exception):
    """A support guess that does not give an equilibrium (the message says why)."""


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


class MarketData:
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
class SupportSolution:
    """Prices, money per utility and flows of one support, in floats or Fractions (flat goods)."""

    prices: list[Number]
    beta: list[Number]
    edges: np.ndarray  # (E, 2): buyer, good
    flows: list[Number]
    how: str

    def allocation(self, data: MarketData, exact: bool) -> np.ndarray:
        x = np.full((data.n, data.goods), Fraction(0) if exact else 0.0, dtype=object if exact else np.float64)
        for (i, g), f in zip(self.edges.tolist(), self.flows, strict=True):
            x[i, g] = f / self.prices[g]
        return x


def components(data: MarketData, edges: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the support graph, nodes 0..n-1 buyers and n.. goods."""
    size = data.n + data.goods
    graph = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], data.n + edges[:, 1])), shape=(size, size))
    return connected_components(graph, directed=False)


def construct(data: MarketData, support: np.ndarray, hint: np.ndarray, exact: bool, how: str) -> SupportSolution:
    """Solve the equilibrium system on `support` (bool, n x goods); `hint` are float flows to stay close to.

    Raises `Rejected` if the support cannot carry an equilibrium (a buyer or a sold good without
    an edge, edges that disagree on a price, negative flows).
    """
    support = support & data.reachable
    buyers_without = ~support.any(axis=1)
    if buyers_without.any():
        raise Rejected(f"buyer {int(np.argmax(buyers_without))} buys nothing")
    unsold = data.active & ~support.any(axis=0)
    if unsold.any():
        raise Rejected(f"good {good_of(data, int(np.argmax(unsold)))} is sold to nobody")
    edges = np.argwhere(support)
    budgets, supply, utility = data.field(exact)
    zero: Number = Fraction(0) if exact else 0.0
    one: Number = Fraction(1) if exact else 1.0
    prices: list[Number] = [zero] * data.goods
    beta: list[Number] = [zero] * data.n
    flows: list[Number] = [zero] * len(edges)
    count, labels = components(data, edges)
    edge_component = labels[edges[:, 0]]
    by_component = np.argsort(edge_component, kind="stable")
    bounds = np.searchsorted(edge_component[by_component], np.arange(count + 1))
    for c in range(count):
        ids = by_component[bounds[c]:bounds[c + 1]]
        if ids.size == 0:
            continue  # a good nobody can buy: price 0
        comp = edges[ids]
        prices_on(comp, utility, prices, beta, one, exact)
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
    return SupportSolution(prices, beta, edges, flows, how)


def prices_on(comp: np.ndarray, utility: Callable[[int, int], Number], prices: list[Number],
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
            raise Rejected(f"the support's cycles disagree on the price of good index {g} (buyer {i})")


def _flows_on(data: MarketData, comp: np.ndarray, demand: dict[int, Number], hint: np.ndarray,
              exact: bool) -> list[Number]:
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
        tree = max_spanning_tree(data, comp, projected)
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
                raise Rejected(f"negative flow {float(f):.3g} between buyer {comp[k, 0]} and good index {comp[k, 1]}")
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


def max_spanning_tree(data: MarketData, comp: np.ndarray, weight: np.ndarray) -> np.ndarray:
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


def good_of(data: MarketData, g: int) -> tuple[int, int]:
    j, t = np.unravel_index(g, data.market.supply.shape)
    return int(j), int(t)


# --- guessing the support ------------------------------------------------------------------------


def _candidates(data: MarketData, result: Equilibrium) -> Iterator[tuple[np.ndarray, str]]:
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


def _float_violation(data: MarketData, solution: SupportSolution) -> str | None:
    """Floating-point verification of a float construction: bang-per-buck on every pair."""
    prices = np.array(solution.prices, dtype=np.float64)
    beta = np.array(solution.beta, dtype=np.float64)
    excess = np.where(data.reachable, beta[:, None] * data.utilities - prices[None, :] * (1.0 + FLOAT_TOLERANCE), 0.0)
    if (excess > 0).any():
        i, g = np.unravel_index(int(np.argmax(excess)), excess.shape)
        return f"buyer {int(i)} prefers good {good_of(data, int(g))} to what it buys"
    return None


def _hint(data: MarketData, result: Equilibrium) -> np.ndarray:
    """The interior-point money flows per pair, flat over (buyer, good)."""
    x = np.maximum(np.nan_to_num(result.allocation.reshape(data.n, -1)), 0.0)
    return x * np.maximum(np.nan_to_num(result.prices.reshape(-1)), 0.0)[None, :]


#: What `float_solutions` records in `tried` when its deadline stops the guesses.
_STOPPED = "the polish stopped at its time budget"


def float_solutions(data: MarketData, result: Equilibrium, tried: list[str],
                     deadline: float | None = None) -> Iterator[SupportSolution]:
    """Float constructions on the support guesses that pass the float verification; after the
    first guess, none once `deadline` (`time.perf_counter`) has passed (`_STOPPED` ends `tried`)."""
    flows = _hint(data, result)
    for mask, how in _candidates(data, result):
        if deadline is not None and tried and time.perf_counter() > deadline:
            tried.append(_STOPPED)
            return
        try:
            edges = np.argwhere(mask & data.reachable)
            solution = construct(data, mask, flows[edges[:, 0], edges[:, 1]], exact=False, how=how)
        except Rejected as reason:
            tried.append(f"{how}: {reason}")
            continue
        violation = _float_violation(data, solution)
        if violation is not None:
            tried.append(f"{how}: {violation}")
            continue
        yield solution


def require_point(result: Equilibrium) -> None:
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

    Guesses the support from `result`, solves the equilibrium system on it (see `vfm.exact`'s
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
        require_point(result)
    except SolverError:
        return result
    data = MarketData(market)
    tried: list[str] = []
    for solution in float_solutions(data, result, tried, deadline):
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
