"""The polish's work over a market's pairs against a dense, queue-and-loop reference of the same method.

The reference below guesses supports on dense (n, goods) arrays, fixes prices by a queue-based
search of each component in Python, peels tree flows leaf by leaf and grows spanning trees with
Kruskal's union-find: the method `vfm.nswot.polish` describes, element by element. The library
does the same work over the market's pairs with array operations and scipy's graph routines; the
tests check it guesses the same supports, accepts and rejects the same ones and constructs the
same prices, money per utility and flows (exactly in rationals).
"""

from __future__ import annotations

from collections import deque
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st

import vfm
from vfm.equilibrium import Equilibrium, Status
from vfm.nswot import polish as mp
from vfm.nswot.polish import FLOAT_TOLERANCE, THRESHOLDS, TIGHTNESS, MarketData, Rejected
from vfm.testing.strategies import markets

# --- the reference -------------------------------------------------------------------------------


def reference_candidates(data: MarketData, result: Equilibrium) -> list[tuple[np.ndarray, str]]:
    """The support guesses on dense (n, goods) masks, the gaps found by sorting every share."""
    x = np.where(data.reachable, np.maximum(np.nan_to_num(result.allocation.reshape(data.n, -1)), 0.0), 0.0)
    prices = np.maximum(np.nan_to_num(result.prices.reshape(-1)), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.maximum(x / data.supply[None, :], prices[None, :] * x / data.budgets[:, None])
    share = np.nan_to_num(np.where(data.reachable, share, 0.0))
    levels = np.sort(np.log10(share[share > 1e-14]))[::-1]
    gaps = levels[:-1] - levels[1:]
    order = np.argsort(-gaps, kind="stable")[:3]
    thresholds = [10.0 ** ((levels[k] + levels[k + 1]) / 2) for k in order if gaps[k] > 1.0]
    guesses, seen = [], set()
    for threshold in (*thresholds, *THRESHOLDS):
        mask = share > threshold
        if mask.tobytes() not in seen:
            seen.add(mask.tobytes())
            how = f"pairs trading more than {threshold:.2g} of the good's supply or the buyer's budget"
            guesses.append((mask, how))
    utilities = np.einsum("ig,ig->i", data.utilities, x)
    with np.errstate(divide="ignore", invalid="ignore"):
        bang = np.where(data.reachable, data.utilities * (data.budgets / utilities)[:, None], 0.0)
        tight = bang / bang.max(axis=0)[None, :]
    for slack in TIGHTNESS:
        mask = np.nan_to_num(tight) >= 1.0 - slack
        if mask.tobytes() not in seen:
            seen.add(mask.tobytes())
            guesses.append((mask, f"pairs within {slack:g} of the best bang-per-buck"))
    return guesses


def reference_violation(data: MarketData, prices: np.ndarray, beta: np.ndarray) -> bool:
    excess = np.where(data.reachable, beta[:, None] * data.utilities - prices[None, :] * (1.0 + FLOAT_TOLERANCE), 0.0)
    return bool((excess > 0).any())


def reference_tree(data: MarketData, comp: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """Kruskal's algorithm with a union-find, the largest weights first (ties: the earlier edge)."""
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


def reference_prices(comp, utility, prices, beta, one, exact) -> None:
    """A component's prices and betas by a queue-based search from its first buyer."""
    neighbours: dict[tuple[str, int], list[int]] = {}
    for i, g in comp.tolist():
        neighbours.setdefault(("b", i), []).append(g)
        neighbours.setdefault(("g", g), []).append(i)
    root = int(comp[0, 0])
    beta[root] = one
    seen_buyers, seen_goods = {root}, set()
    queue = deque([("b", root)])
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
            raise Rejected("cycles disagree")


def reference_flows(data, comp, demand, hint, exact):
    """A component's flows: least change of the hint on cycles, then the tree peeled leaf by leaf."""
    nodes = len(demand)
    tree = np.ones(len(comp), dtype=bool)
    fixed = [None] * len(comp)
    if len(comp) > nodes - 1:
        index = {node: k for k, node in enumerate(demand)}
        rows = np.array([index[i] for i in comp[:, 0].tolist()] + [index[data.n + g] for g in comp[:, 1].tolist()])
        cols = np.concatenate([np.arange(len(comp))] * 2)
        target = np.array([float(v) for v in demand.values()])
        incidence = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(nodes, len(comp)))
        projected = hint + mp._least_change(incidence, target, hint)
        tree = reference_tree(data, comp, projected)
        for k in np.flatnonzero(~tree).tolist():
            fixed[k] = Fraction(max(float(projected[k]), 0.0)) if exact else max(float(projected[k]), 0.0)
    flows = list(fixed)
    left = dict(demand)
    for k in np.flatnonzero(~tree).tolist():
        left[int(comp[k, 0])] -= flows[k]
        left[data.n + int(comp[k, 1])] -= flows[k]
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
                raise Rejected("negative flow")
            flows[k] = 0.0
    return flows


def reference_construct(data: MarketData, support: np.ndarray, hint: np.ndarray, exact: bool):
    """Prices, betas and flows (per edge of ``np.argwhere(support & reachable)``) as lists, or `Rejected`."""
    support = support & data.reachable
    if (~support.any(axis=1)).any() or (data.active & ~support.any(axis=0)).any():
        raise Rejected("uncovered")
    edges = np.argwhere(support)
    budgets, supply, u = data.field(exact)
    utility = (lambda i, g: u[i, g]) if exact else (lambda i, g: float(u[i, g]))
    zero, one = (Fraction(0), Fraction(1)) if exact else (0.0, 1.0)
    prices, beta, flows = [zero] * data.goods, [zero] * data.n, [zero] * len(edges)
    count, labels = mp.components(data, edges)
    edge_component = labels[edges[:, 0]]
    for c in range(count):
        ids = np.flatnonzero(edge_component == c)
        if ids.size == 0:
            continue
        comp = edges[ids]
        reference_prices(comp, utility, prices, beta, one, exact)
        buyers, goods = np.unique(comp[:, 0]), np.unique(comp[:, 1])
        worth = sum((prices[g] * supply[g] for g in goods.tolist()), zero)
        scale = sum((budgets[i] for i in buyers.tolist()), zero) / worth
        for g in goods.tolist():
            prices[g] = prices[g] * scale
        for i in buyers.tolist():
            beta[i] = beta[i] * scale
        demand = {int(i): budgets[i] for i in buyers.tolist()}
        demand.update({data.n + int(g): prices[g] * supply[g] for g in goods.tolist()})
        for k, f in zip(ids.tolist(), reference_flows(data, comp, demand, hint[ids], exact), strict=True):
            flows[k] = f
    return prices, beta, flows, edges


# --- helpers -------------------------------------------------------------------------------------


def point(market: vfm.VolatileFisherMarket, allocation: np.ndarray, prices: np.ndarray) -> Equilibrium:
    return Equilibrium(market=market, allocation=allocation, prices=prices, status=Status.OPTIMAL, solver="test")


def dense(data: MarketData, keep: np.ndarray) -> np.ndarray:
    """A guess over the pairs as a dense (n, goods) mask."""
    mask = np.zeros((data.n, data.goods), dtype=bool)
    mask[data.pairs.buyer[keep], data.pairs.column[keep]] = True
    return mask


def assert_same_construction(data: MarketData, keep: np.ndarray, hint: np.ndarray, exact: bool) -> None:
    """The library and the reference both reject the guess, or build the same solution on it."""
    try:
        expected = reference_construct(data, dense(data, keep), hint[keep], exact)
    except Rejected:
        expected = None
    try:
        got = mp.construct(data, data.edges(keep), hint[keep], exact=exact, how="test")
    except Rejected:
        got = None
    assert (got is None) == (expected is None), (got, expected)
    if got is None or expected is None:
        return
    prices, beta, flows, edges = expected
    np.testing.assert_array_equal(got.edges, edges)
    if exact:
        assert list(got.prices) == prices and list(got.beta) == beta and list(got.flows) == flows
        return
    # The same breadth-first trees and sums: the same prices; flows differ by rounding only.
    np.testing.assert_array_equal(got.prices, prices)
    np.testing.assert_array_equal(got.beta, beta)
    scale = max(float(data.budgets.max()), 1.0)
    np.testing.assert_allclose(got.flows, np.array(flows, dtype=np.float64), rtol=1e-12, atol=1e-12 * scale)
    assert (mp._float_violation(data, got) is not None) == reference_violation(data, np.array(prices), np.array(beta))


def solved(market: vfm.VolatileFisherMarket) -> Equilibrium:
    return vfm.solve(market, polish=False)


# --- guesses -------------------------------------------------------------------------------------


def assert_same_guesses(data: MarketData, result: Equilibrium) -> None:
    got = list(mp._candidates(data, result))
    expected = reference_candidates(data, result)
    assert [how for _, how in got] == [how for _, how in expected]
    for (keep, _), (mask, _) in zip(got, expected, strict=True):
        np.testing.assert_array_equal(dense(data, keep), mask)


@given(markets(n_buyers=(1, 6), n_goods=(1, 3), n_periods=(1, 3)), st.data())
def test_guesses_match_the_dense_reference_on_random_points(market, data):
    _, m, periods = market.shape
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    # Shares over many decades, some exact zeros and ties, prices that may be 0.
    allocation = 10.0 ** rng.integers(-16, 1, market.shape) * rng.choice([0.0, 1.0, 0.5], market.shape)
    prices = rng.choice([0.0, 1.0, 2.0, 1e-3], (m, periods))
    assert_same_guesses(MarketData(market), point(market, allocation, prices))


def assert_same_polish(data, result):
    """Every guess, and each guess's construction in float and exact arithmetic, as the reference's."""
    assert_same_guesses(data, result)
    hint = mp._hint(data, result)
    for keep, _ in mp._candidates(data, result):
        assert_same_construction(data, keep, hint, exact=False)
        assert_same_construction(data, keep, hint, exact=True)


@given(markets(n_buyers=(1, 6), n_goods=(1, 3), n_periods=(1, 3)))
def test_guesses_and_constructions_match_the_reference_on_solved_points(market):
    result = solved(market)
    assert_same_polish(MarketData(market), result)


@given(markets(n_buyers=(1, 6), n_goods=(1, 3), n_periods=(1, 3)), st.data())
def test_constructions_match_the_reference_on_random_supports(market, data):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    market_data = MarketData(market)
    pairs = market.pairs
    keep = rng.random(pairs.size) < data.draw(st.sampled_from([0.3, 0.7, 1.0]))
    keep[pairs.indptr[:-1]] = True  # every buyer keeps its first pair: more guesses get past the cover check
    hint = rng.random(pairs.size)
    assert_same_construction(market_data, keep, hint, exact=False)
    assert_same_construction(market_data, keep, hint, exact=True)


def test_gap_thresholds_match_sorting_with_ties_and_empty_decades():
    rng = np.random.default_rng(0)
    for _ in range(200):
        share = 10.0 ** rng.choice([-15.0, -9.0, -7.5, -3.0, -2.2, -1.0, 0.0, -6.0], rng.integers(0, 30))
        share[rng.random(share.size) < 0.2] = 0.0
        levels = np.sort(np.log10(share[share > 1e-14]))[::-1]
        gaps = levels[:-1] - levels[1:]
        expected = [10.0 ** ((levels[k] + levels[k + 1]) / 2) for k in np.argsort(-gaps, kind="stable")[:3]
                    if gaps[k] > 1.0]
        assert mp._gap_thresholds(share) == expected


# --- spanning trees ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_spanning_forest_is_kruskals_with_ties(seed):
    rng = np.random.default_rng(seed)
    n, goods = int(rng.integers(1, 8)), int(rng.integers(1, 6))
    market = vfm.VolatileFisherMarket.static(np.ones((n, goods)))
    data = MarketData(market)
    keep = rng.random(n * goods) < 0.6
    edges = data.edges(keep)
    weight = rng.choice([0.0, 1.0, 2.0, 0.5], len(edges))  # many ties
    expected = np.zeros(len(edges), dtype=bool)
    count, labels = mp.components(data, edges)
    for c in range(count):
        ids = np.flatnonzero(labels[edges[:, 0]] == c)
        expected[ids[reference_tree(data, edges[ids], weight[ids])]] = True
    np.testing.assert_array_equal(mp.max_spanning_tree(data, edges, weight), expected)


# --- hand-made edge cases ------------------------------------------------------------------------


@pytest.mark.parametrize("utilities", [
    [[1.0, 0.0, 0.0], [0.0, 2.0, 3.0], [1.0, 1.0, 1.0]],  # a buyer with one good
    [[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [0.0, 1.0, 0.0]],  # a good nobody wants
    [[1.0, 1.0, 0.0], [1.0, 1.0, 0.0], [0.0, 1.0, 1.0]],  # identical buyers: cycles of ties
    [[1.0, 2.0, 4.0], [1.0, 2.0, 4.0], [1.0, 2.0, 4.0]],  # everybody ties on everything
])
def test_polish_matches_the_reference_on_edge_cases(utilities):
    market = vfm.VolatileFisherMarket.static(utilities, budgets=[1.0, 2.0, 1.5])
    result = solved(market)
    assert_same_polish(MarketData(market), result)
    assert "polished to the exact equilibrium" in mp.polished(market, result).message


def test_a_good_nobody_wants_is_free_and_unsold():
    market = vfm.VolatileFisherMarket.static([[1.0, 0.0], [2.0, 0.0]])
    result = vfm.solve(market)
    assert "polished to the exact equilibrium" in result.message
    assert result.prices[1, 0] == 0.0 and not result.allocation[:, 1].any()


def test_a_long_chain_of_components_levels():
    """A support whose search tree is deep (a chain buyer - good - buyer - ...): every level in turn."""
    n = 40
    utilities = np.zeros((n, n))
    utilities[np.arange(n), np.arange(n)] = 1.0
    utilities[np.arange(1, n), np.arange(n - 1)] = 1.0
    market = vfm.VolatileFisherMarket.static(utilities)
    data = MarketData(market)
    keep = np.ones(market.pairs.size, dtype=bool)
    hint = np.ones(market.pairs.size)
    assert_same_construction(data, keep, hint, exact=False)
    assert_same_construction(data, keep, hint, exact=True)
