r"""The floating-point polish of a plain market's interior-point answer to its exact equilibrium.

`polished` guesses the support of the equilibrium from the interior-point answer, solves the
equilibrium's linear system on it and verifies the result in floating point (the method is
described in `vfm.exact`, whose rational solve builds on the construction here, written once for
floats and Fractions); `vfm.solve` runs it on plain markets within `polish_budget_s`.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg
from scipy.sparse.csgraph import breadth_first_order, connected_components, minimum_spanning_tree

from vfm.equilibrium import Equilibrium, Status
from vfm.errors import SolverError, ValidationError
from vfm.market import VolatileFisherMarket
from vfm.nswot.entry_checks import certified, require_market

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
        self.pairs = market.pairs
        self.utilities = market.utilities.reshape(n, -1)
        self.reachable = market.reachable.reshape(n, -1)
        self.budgets = market.budgets
        self.supply = market.supply.reshape(-1)
        # Goods with a positive price at equilibrium: those some buyer can buy.
        self.active = np.bincount(self.pairs.column, minlength=self.goods) > 0
        self._rational: dict[str, np.ndarray] = {}

    def rational(self, name: str) -> np.ndarray:
        """``utilities``, ``budgets`` or ``supply`` as an object array of exact Fractions (cached)."""
        if name not in self._rational:
            values = getattr(self, name)
            self._rational[name] = np.array([Fraction(v) for v in values.reshape(-1).tolist()],
                                            dtype=object).reshape(values.shape)
        return self._rational[name]

    def field(self, exact: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Budgets, supply and the (buyers x goods) utilities in floats or Fractions."""
        if exact:
            return self.rational("budgets"), self.rational("supply"), self.rational("utilities")
        return self.budgets, self.supply, self.utilities

    def edges(self, keep: np.ndarray) -> np.ndarray:
        """The pairs where `keep` (bool, one per pair of `pairs`) holds, as (buyer, good) rows in row-major order."""
        return np.column_stack([self.pairs.buyer[keep], self.pairs.column[keep]])


def _numbers(exact: bool) -> tuple[Number, Number, Any]:
    """Zero, one and the array dtype of the construction's field (Fractions or floats)."""
    if exact:
        return Fraction(0), Fraction(1), object
    return 0.0, 1.0, np.float64


# --- the construction on a support ---------------------------------------------------------------


@dataclass
class SupportSolution:
    """Prices (per good), money per utility (per buyer) and flows (per edge) of one support, in
    floats or Fractions (object arrays); goods are flat."""

    prices: np.ndarray
    beta: np.ndarray
    edges: np.ndarray  # (E, 2): buyer, good, in row-major order
    flows: np.ndarray
    how: str

    def allocation(self, data: MarketData, exact: bool) -> np.ndarray:
        zero, _, dtype = _numbers(exact)
        x = np.full((data.n, data.goods), zero, dtype=dtype)
        goods = self.edges[:, 1]
        x[self.edges[:, 0], goods] = self.flows / self.prices[goods]
        return x


def components(data: MarketData, edges: np.ndarray) -> tuple[int, np.ndarray]:
    """Connected components of the support graph, nodes 0..n-1 buyers and n.. goods."""
    size = data.n + data.goods
    graph = sp.coo_matrix((np.ones(len(edges)), (edges[:, 0], data.n + edges[:, 1])), shape=(size, size))
    return connected_components(graph, directed=False)


def construct(data: MarketData, edges: np.ndarray, hint: np.ndarray, exact: bool, how: str) -> SupportSolution:
    """Solve the equilibrium system on the support `edges` ((buyer, good) rows of pairs buyers can
    buy, in row-major order); `hint` are float flows (one per edge) to stay close to.

    Raises `Rejected` if the support cannot carry an equilibrium (a buyer or a sold good without
    an edge, edges that disagree on a price, negative flows).
    """
    _require_cover(data, edges)
    budgets, supply, _ = data.field(exact)
    count, labels = components(data, edges)
    prices, beta = prices_on(data, edges, labels, exact)
    # Each component's budgets buy exactly its goods: that fixes the scale of its prices.
    zero, one, dtype = _numbers(exact)
    sold = np.flatnonzero(np.bincount(edges[:, 1], minlength=data.goods))
    worth = np.full(count, zero, dtype=dtype)
    np.add.at(worth, labels[data.n + sold], prices[sold] * supply[sold])  # goods ascending, as a sum would
    money = np.full(count, zero, dtype=dtype)
    np.add.at(money, labels[:data.n], budgets)  # every buyer has an edge (`_require_cover`)
    used = np.zeros(count, dtype=bool)
    used[labels[edges[:, 0]]] = True
    scale = np.full(count, one, dtype=dtype)
    scale[used] = money[used] / worth[used]
    prices[sold] = prices[sold] * scale[labels[data.n + sold]]
    beta = beta * scale[labels[:data.n]]
    demand = np.concatenate([budgets, prices * supply])
    flows = _flows(data, edges, labels, demand, hint, exact)
    return SupportSolution(prices, beta, edges, flows, how)


def _require_cover(data: MarketData, edges: np.ndarray) -> None:
    """Raise `Rejected` unless every buyer and every good some buyer can buy has an edge."""
    buyers_without = np.bincount(edges[:, 0], minlength=data.n) == 0
    if buyers_without.any():
        raise Rejected(f"buyer {int(np.argmax(buyers_without))} buys nothing")
    unsold = data.active & (np.bincount(edges[:, 1], minlength=data.goods) == 0)
    if unsold.any():
        raise Rejected(f"good {good_of(data, int(np.argmax(unsold)))} is sold to nobody")


def _roots(data: MarketData, edges: np.ndarray, labels: np.ndarray) -> np.ndarray:
    """The smallest buyer of each component that has an edge."""
    buyers = np.flatnonzero(np.bincount(edges[:, 0], minlength=data.n))
    _, first = np.unique(labels[buyers], return_index=True)
    return buyers[first]


def _search(size: int, ends: tuple[np.ndarray, np.ndarray],
            roots: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Breadth-first search of the undirected graph on `size` nodes with edges ``ends[0][e] -- ends[1][e]``,
    from every root at once (one search from a hub joined to the roots).

    Returns the nodes reached in search order (hub first), each node's predecessor and the bounds of
    the levels in the order (``order[bounds[k]:bounds[k + 1]]`` is level k; level 0 the hub, 1 the
    roots). A node's neighbours are visited in ascending order, so every component's tree is the one
    a queue-based search from its root along the sorted edge list grows.
    """
    first, second = ends
    hub = size
    rows = np.concatenate([first, second, np.full(roots.size, hub)])
    cols = np.concatenate([second, first, roots])
    graph = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(size + 1, size + 1))
    graph.sort_indices()
    order, predecessor = breadth_first_order(graph, hub, directed=True, return_predecessors=True)
    position = np.empty(size + 1, dtype=np.int64)
    position[order] = np.arange(order.size)
    # A level's children follow it in one block, in the order of their parents.
    parent_position = position[predecessor[order[1:]]]
    bounds = [0, 1]
    while bounds[-1] < order.size:
        bounds.append(1 + int(np.searchsorted(parent_position, bounds[-1], side="left")))
    return order, predecessor, bounds


def prices_on(data: MarketData, edges: np.ndarray, labels: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """Prices (per good) and money per utility (per buyer) on the components of `edges` (row-major
    pairs; `labels` their `components`), each relative to its smallest buyer's beta of 1, along a
    breadth-first tree; every other edge must agree (else `Rejected`). Goods and buyers without an
    edge get 0."""
    _, _, utilities = data.field(exact)
    zero, one, dtype = _numbers(exact)
    prices = np.full(data.goods, zero, dtype=dtype)
    beta = np.full(data.n, zero, dtype=dtype)
    roots = _roots(data, edges, labels)
    beta[roots] = one
    order, predecessor, bounds = _search(data.n + data.goods, (edges[:, 0], data.n + edges[:, 1]), roots)
    # Level by level down the tree: a good's price from its parent buyer, a buyer's beta from its
    # parent good (levels alternate, the roots being buyers).
    for start, stop in itertools.pairwise(bounds[2:]):
        nodes = order[start:stop]
        parents = predecessor[nodes]
        if nodes[0] >= data.n:
            goods = nodes - data.n
            prices[goods] = beta[parents] * utilities[parents, goods]
        else:
            goods = parents - data.n
            beta[nodes] = prices[goods] / utilities[nodes, goods]
    buyer, good = edges[:, 0], edges[:, 1]
    implied = beta[buyer] * utilities[buyer, good]
    price = prices[good]
    disagree = (implied != price) if exact else np.abs(implied - price) > FLOAT_TOLERANCE * price
    if disagree.any():
        k = _first(disagree, labels[buyer])
        raise Rejected(f"the support's cycles disagree on the price of good index {good[k]} (buyer {buyer[k]})")
    return prices, beta


def _first(flagged: np.ndarray, component: np.ndarray) -> int:
    """The flagged edge of the lowest component, the first of it in edge order."""
    ids = np.flatnonzero(flagged)
    return int(ids[np.lexsort((ids, component[ids]))[0]])


def _flows(data: MarketData, edges: np.ndarray, labels: np.ndarray, demand: np.ndarray, hint: np.ndarray,
           exact: bool) -> np.ndarray:
    """Money flows on `edges` meeting `demand` at every node (buyer: budget, good: p s; nodes as in
    `components`), nonnegative (else `Rejected`; float flows above a relative -`FLOAT_TOLERANCE`
    of their component's largest demand are rounded up to 0)."""
    tree, fixed = _tree_and_fixed(data, edges, labels, demand, hint, exact)
    flows = _tree_flows(data, edges, labels, tree, fixed, demand, exact)
    ends = np.concatenate([edges[:, 0], data.n + edges[:, 1]])
    scale = np.zeros(labels.size)
    np.maximum.at(scale, labels[ends], np.abs(demand[ends].astype(np.float64)))
    edge_label = labels[edges[:, 0]]
    negative = flows < 0
    bad = negative if exact else flows < -FLOAT_TOLERANCE * scale[edge_label]
    if bad.any():
        k = _first(bad, edge_label)
        raise Rejected(f"negative flow {float(flows[k]):.3g} between buyer {edges[k, 0]} and good index {edges[k, 1]}")
    flows[negative] = 0.0
    return flows


def _tree_and_fixed(data: MarketData, edges: np.ndarray, labels: np.ndarray, demand: np.ndarray,
                    hint: np.ndarray, exact: bool) -> tuple[np.ndarray, np.ndarray]:
    """The spanning forest the flows are solved on (bool per edge) and the flows of the other edges.

    A component without a cycle is its own tree. On one with cycles: the least-squares flows closest
    to the hint (floats), then the spanning tree of the largest of them, the other edges fixed at
    their (nonnegative) values.
    """
    zero, _, dtype = _numbers(exact)
    tree = np.ones(len(edges), dtype=bool)
    fixed = np.full(len(edges), zero, dtype=dtype)
    edge_label = labels[edges[:, 0]]
    nodes = np.zeros(labels.size, dtype=bool)
    nodes[edges[:, 0]] = True
    nodes[data.n + edges[:, 1]] = True
    node_count = np.bincount(labels[nodes], minlength=labels.size)
    edge_count = np.bincount(edge_label, minlength=labels.size)
    cyclic = np.flatnonzero((edge_count > 0) & (edge_count > node_count - 1))
    if cyclic.size == 0:
        return tree, fixed
    by_component = np.argsort(edge_label, kind="stable")
    bounds = np.searchsorted(edge_label[by_component], np.arange(labels.size + 1))
    for c in cyclic.tolist():
        ids = by_component[bounds[c]:bounds[c + 1]]
        comp = edges[ids]
        ends = np.concatenate([comp[:, 0], data.n + comp[:, 1]])
        members = np.unique(ends)  # buyers ascending, then goods ascending
        rows, cols = np.searchsorted(members, ends), np.tile(np.arange(len(comp)), 2)
        incidence = sp.csr_matrix((np.ones(ends.size), (rows, cols)), shape=(members.size, len(comp)))
        target = demand[members].astype(np.float64)
        projected = hint[ids] + _least_change(incidence, target, hint[ids])
        in_tree = max_spanning_tree(data, comp, projected)
        tree[ids] = in_tree
        for k, value in zip(ids[~in_tree].tolist(), projected[~in_tree].tolist(), strict=True):
            fixed[k] = Fraction(max(value, 0.0)) if exact else max(value, 0.0)
    return tree, fixed


def _tree_flows(data: MarketData, edges: np.ndarray, labels: np.ndarray, tree: np.ndarray, fixed: np.ndarray,
                demand: np.ndarray, exact: bool) -> np.ndarray:
    """The flows of the forest `tree` meeting what `demand` leaves after the `fixed` flows of the other edges.

    The flow between a node and its parent in the forest is what the node's subtree needs: the
    budgets of its buyers less the worth of its goods (signed from the buyer's side), summed from
    the leaves up, level by level.
    """
    n = data.n
    ends = (edges[:, 0], n + edges[:, 1])
    left = demand.copy()
    off = ~tree
    np.subtract.at(left, ends[0][off], fixed[off])
    np.subtract.at(left, ends[1][off], fixed[off])
    is_buyer = np.arange(left.size) < n
    need = np.where(is_buyer, left, -left)
    forest = edges[tree]
    order, predecessor, bounds = _search(left.size, (forest[:, 0], n + forest[:, 1]), _roots(data, forest, labels))
    for start, stop in reversed(list(itertools.pairwise(bounds[2:]))):
        nodes = order[start:stop]
        np.add.at(need, predecessor[nodes], need[nodes])
    children = order[bounds[2]:]
    parents = predecessor[children]
    buyer = np.where(children < n, children, parents)
    good = np.where(children < n, parents, children) - n
    edge = np.flatnonzero(tree)[np.searchsorted(forest[:, 0] * data.goods + forest[:, 1], buyer * data.goods + good)]
    flows = fixed.copy()
    flows[edge] = np.where(children < n, need[children], -need[children])
    return flows


def _least_change(incidence: sp.csr_matrix, target: np.ndarray, hint: np.ndarray) -> np.ndarray:
    r"""The least change :math:`c` (in the 2-norm) of the flows `hint` with :math:`A (h + c) = d`,
    `incidence` :math:`A` (nodes by edges) of one connected bipartite component.

    :math:`c = A^\top z` with :math:`A A^\top z = d - A h`: :math:`A A^\top` is the component's
    signless Laplacian, singular only along the vector of +1 on buyers and -1 on goods, so one
    node's :math:`z` is pinned to 0 and the rest is one sparse solve (nodes by nodes). A dense
    least-squares solve of :math:`A` costs nodes squared times edges: minutes for the 200,000 pairs
    of 2,000 identical buyers of 100 goods, where this sparse solve is instant. The system is consistent: the
    component's budgets equal its goods' worth (the price scale is set so).
    """
    residual = target - incidence @ hint
    gram = (incidence @ incidence.T).tocsc()
    z = np.zeros(incidence.shape[0])
    if incidence.shape[0] > 1:
        z[1:] = scipy.sparse.linalg.spsolve(gram[1:, 1:], residual[1:])
    return np.asarray(incidence.T @ z)


def max_spanning_tree(data: MarketData, edges: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """A spanning forest of `edges` of the largest weights (bool over the edges): Kruskal's, ties
    going to the earlier edge.

    The edges are ranked by weight, ties by position, so the ranks are distinct and the minimum
    spanning forest of the ranks (which scipy computes) is the only one: the forest Kruskal's
    algorithm grows taking the edges in that order.
    """
    rank = np.empty(len(edges), dtype=np.float64)
    rank[np.argsort(-weight, kind="stable")] = np.arange(1, len(edges) + 1)
    size = data.n + data.goods
    graph = sp.csr_matrix((rank, (edges[:, 0], data.n + edges[:, 1])), shape=(size, size))
    chosen = minimum_spanning_tree(graph).data
    tree = np.zeros(len(edges), dtype=bool)
    tree[np.argsort(rank)[chosen.astype(np.int64) - 1]] = True
    return tree


def good_of(data: MarketData, g: int) -> tuple[int, int]:
    j, t = np.unravel_index(g, data.market.supply.shape)
    return int(j), int(t)


# --- guessing the support ------------------------------------------------------------------------


def _clean_point(data: MarketData, result: Equilibrium) -> tuple[np.ndarray, np.ndarray]:
    """The interior-point allocation at the pairs and the prices, NaN made 0 and negatives cut to 0."""
    x = np.maximum(np.nan_to_num(data.pairs.at(result.allocation)), 0.0)
    return x, np.maximum(np.nan_to_num(result.prices.reshape(-1)), 0.0)


def _candidates(data: MarketData, result: Equilibrium) -> Iterator[tuple[np.ndarray, str]]:
    """Support guesses from an interior-point answer (bool over the pairs), most plausible first,
    without repeats."""
    pairs = data.pairs
    x, prices = _clean_point(data, result)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.maximum(x / data.supply[pairs.column], prices[pairs.column] * x / data.budgets[pairs.buyer])
    share = np.nan_to_num(share)
    seen: set[bytes] = set()
    for threshold in (*_gap_thresholds(share), *THRESHOLDS):
        keep = share > threshold
        if _fresh(keep, seen):
            yield keep, f"pairs trading more than {threshold:.2g} of the good's supply or the buyer's budget"
    utilities = np.bincount(pairs.buyer, pairs.utility * x, minlength=data.n)
    column = pairs.by_column
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = data.budgets / utilities
        bang = pairs.utility * rate[pairs.buyer]
        # bang >= 0, so the 0 of a buyer who cannot buy a good never is its column's maximum.
        best = pairs.column_reduce(np.maximum, column.utility * rate[column.buyer], 0.0)
        tight = bang / best[pairs.column]
    for slack in TIGHTNESS:
        keep = np.nan_to_num(tight) >= 1.0 - slack
        if _fresh(keep, seen):
            yield keep, f"pairs within {slack:g} of the best bang-per-buck"


def _fresh(keep: np.ndarray, seen: set[bytes]) -> bool:
    """Whether the guess `keep` is new, recording it in `seen`."""
    key = np.packbits(keep).tobytes() + keep.size.to_bytes(8, "little")
    if key in seen:
        return False
    seen.add(key)
    return True


def _gap_thresholds(share: np.ndarray) -> list[float]:
    """Thresholds in the three largest gaps (of more than a decade) of the sorted log-shares, largest first.

    The largest gaps separate trading pairs from the rest. Within a decade no gap exceeds one, so
    every such gap runs from the largest share of one decade to the smallest of the next decade
    that has any: the decades' extremes give them with no sort.
    """
    levels = np.log10(share[share > 1e-14])
    if levels.size < 2:
        return []
    decade = np.floor(levels).astype(np.int64)
    decade -= decade.min()
    count = int(decade.max()) + 1
    top = np.full(count, -np.inf)
    np.maximum.at(top, decade, levels)
    bottom = np.full(count, np.inf)
    np.minimum.at(bottom, decade, levels)
    filled = np.flatnonzero(np.isfinite(top))
    # From the highest shares down, as in the levels sorted in decreasing order.
    upper, lower = bottom[filled[1:]][::-1], top[filled[:-1]][::-1]
    gaps = upper - lower
    return [10.0 ** ((upper[k] + lower[k]) / 2) for k in np.argsort(-gaps, kind="stable")[:3] if gaps[k] > 1.0]


def _float_violation(data: MarketData, solution: SupportSolution) -> str | None:
    """Floating-point verification of a float construction: bang-per-buck on every pair."""
    pairs = data.pairs
    prices = np.asarray(solution.prices, dtype=np.float64)
    beta = np.asarray(solution.beta, dtype=np.float64)
    excess = beta[pairs.buyer] * pairs.utility - prices[pairs.column] * (1.0 + FLOAT_TOLERANCE)
    if (excess > 0).any():
        k = int(np.argmax(excess))
        return f"buyer {int(pairs.buyer[k])} prefers good {good_of(data, int(pairs.column[k]))} to what it buys"
    return None


def _hint(data: MarketData, result: Equilibrium) -> np.ndarray:
    """The interior-point money flows of the pairs."""
    x, prices = _clean_point(data, result)
    return x * prices[data.pairs.column]


#: What `float_solutions` records in `tried` when its deadline stops the guesses.
_STOPPED = "the polish stopped at its time budget"


def float_solutions(data: MarketData, result: Equilibrium, tried: list[str],
                     deadline: float | None = None) -> Iterator[SupportSolution]:
    """Float constructions on the support guesses that pass the float verification; after the
    first guess, none once `deadline` (`time.perf_counter`) has passed (`_STOPPED` ends `tried`)."""
    flows = _hint(data, result)
    for keep, how in _candidates(data, result):
        if deadline is not None and tried and time.perf_counter() > deadline:
            tried.append(_STOPPED)
            return
        try:
            solution = construct(data, data.edges(keep), flows[keep], exact=False, how=how)
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
