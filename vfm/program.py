r"""The NSWOT program in scaled variables, shared by every backend.

A backend never sees the market's raw numbers. It solves the equivalent program

.. math::

    \max_{z \ge 0} \sum_i \hat B_i \log \hat U_i(z), \quad
    \hat U_i(z) = \hat c_i + \sum_{e \in E_i} \hat u_e z_e, \quad
    \sum_{e \in \text{column } k} z_e \le 1, \quad z_e \le \hat d_e, \quad \hat U_i \le \hat{\bar U}_i,

where

* only the *active* entries :math:`e = (i, k)`, :math:`k = (j, t)`, appear: those with
  :math:`u_{ik} > 0`, :math:`d_{ik} > 0` and :math:`s_k > 0`. The others carry no value or
  cannot be bought, so fixing them at 0 changes neither the optimal value nor the prices of the
  goods that are traded, and it is what makes the answer unique where the market is
  indifferent (nobody receives a good it does not value);
* :math:`z_e = x_{ik} / s_k` is the share of the supply of good-period `k` (so every variable
  lies in [0, 1]);
* :math:`\hat u_{ik} = u_{ik} s_k / \sigma_i` and :math:`\hat c_i = c_i / \sigma_i` with the
  buyer scale :math:`\sigma_i = \min(\bar U_i, c_i + \sum_k u_{ik} \min(s_k / n, d_{ik}))`, the
  utility of the equal split, so that every :math:`\hat U_i` is of order one;
* :math:`\hat B = B / \sum_i B_i`.

Scaling buyer `i`'s utility adds a constant to the objective and scaling budgets multiplies
it, so the optimal allocation is unchanged; the prices map back as
:math:`p_k = \hat p_k \sum_i B_i / s_k`. Good-periods with zero supply or no active entry get
price 0 (there is nothing to sell, or nobody can use what there is).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from vfm._validation import FloatArray
from vfm.market import Pairs, VolatileFisherMarket


@dataclass(frozen=True, eq=False)
class ScaledProgram:
    """Sparse data of the scaled NSWOT program (see the module docstring).

    Attributes
    ----------
    market : VolatileFisherMarket
    buyer : ndarray of int, shape (nnz,)
        Buyer of each active entry.
    column : ndarray of int, shape (nnz,)
        Good-period (flattened ``j * T + t``) of each active entry.
    supply_row : ndarray of int, shape (nnz,)
        Index into `traded` of each active entry's supply row.
    utility : ndarray, shape (nnz,)
        Scaled utility coefficient :math:`\\hat u_e`.
    upper : ndarray, shape (nnz,)
        Scaled cap :math:`\\hat d_e = d_e / s_k` (``inf`` where uncapped).
    base : ndarray, shape (n,)
    utility_cap : ndarray, shape (n,)
        Scaled, ``inf`` where uncapped or where the cap cannot bind.
    weights : ndarray, shape (n,)
        :math:`\\hat B`, summing to one.
    scale : ndarray, shape (n,)
        :math:`\\sigma`.
    traded : ndarray of int, shape (K,)
        The good-periods that have at least one active entry; the supply rows of the program.
    """

    market: VolatileFisherMarket
    buyer: np.ndarray
    column: np.ndarray
    supply_row: np.ndarray
    utility: FloatArray
    upper: FloatArray
    base: FloatArray
    utility_cap: FloatArray
    weights: FloatArray
    scale: FloatArray
    traded: np.ndarray

    @classmethod
    def from_market(cls, market: VolatileFisherMarket) -> ScaledProgram:
        pairs = market.pairs
        buyer, column = pairs.buyer, pairs.column
        supply = market.supply.reshape(-1)[column]
        scale, upper, utility_cap = _plain_scaling(market) if market.is_plain else _scaling(market, pairs)
        traded, supply_row = present_and_rank(column, market.supply.size)
        return cls(
            market=market,
            buyer=buyer,
            column=column,
            supply_row=supply_row,
            utility=pairs.utility * supply / scale[buyer],
            upper=upper / supply,
            base=market.base_utility / scale,
            utility_cap=utility_cap / scale,
            weights=market.budgets / market.budgets.sum(),
            scale=scale,
            traded=traded,
        )

    def bidders(self) -> tuple[np.ndarray, np.ndarray]:
        """The buyers with at least one entry, ascending, and each entry's index among them."""
        return present_and_rank(self.buyer, self.market.n_buyers)

    @property
    def n_entries(self) -> int:
        return int(self.buyer.size)

    def utility_matrix(self) -> sp.csr_matrix:
        """Sparse (n, nnz) matrix mapping `z` to :math:`\\hat U - \\hat c`."""
        n = self.market.n_buyers
        cols = np.arange(self.n_entries)
        return sp.csr_matrix((self.utility, (self.buyer, cols)), shape=(n, self.n_entries))

    def supply_matrix(self) -> sp.csr_matrix:
        """Sparse (K, nnz) 0/1 matrix summing `z` over each traded good-period."""
        cols = np.arange(self.n_entries)
        ones = np.ones(self.n_entries)
        return sp.csr_matrix((ones, (self.supply_row, cols)), shape=(self.traded.size, self.n_entries))

    def allocation(self, z: np.ndarray) -> FloatArray:
        """Map scaled variables back to the allocation :math:`x`, shape (n, m, T)."""
        market = self.market
        n = market.n_buyers
        x = np.zeros((n, market.n_goods * market.n_periods))
        x[self.buyer, self.column] = z * market.supply.reshape(-1)[self.column]
        return x.reshape(market.shape)

    def prices(self, scaled_prices: np.ndarray) -> FloatArray:
        """Map the duals of the scaled supply rows back to market prices, shape (m, T)."""
        market = self.market
        p = np.zeros(market.n_goods * market.n_periods)
        p[self.traded] = scaled_prices * market.budgets.sum() / market.supply.reshape(-1)[self.traded]
        return p.reshape(market.n_goods, market.n_periods)


def _scaling(market: VolatileFisherMarket, pairs: Pairs) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The buyer scale :math:`\\sigma`, each pair's cap :math:`d_e` and the utility caps that can bind
    (``inf`` elsewhere), in market units, for any market."""
    n = market.n_buyers
    u = market.utilities.reshape(n, -1)
    d = market.caps.reshape(n, -1)
    s = market.supply.reshape(-1)
    equal_split = np.minimum(s[None, :] / n, d)
    # A utility cap the buyer cannot reach even with everything it may buy can never bind;
    # leaving it out removes a degenerate constraint (interior-point solvers stall on those).
    most = market.base_utility + np.where(u > 0, u * np.minimum(s[None, :], d), 0.0).sum(axis=1)
    utility_cap = np.where(most > market.utility_cap, market.utility_cap, np.inf)
    scale = np.minimum(
        market.utility_cap,
        market.base_utility + np.einsum("ik,ik->i", u, np.where(u > 0, equal_split, 0.0)),
    )
    return scale, pairs.at(d), utility_cap


def _plain_scaling(market: VolatileFisherMarket) -> tuple[FloatArray, FloatArray, FloatArray]:
    """`_scaling` for a plain market (no caps, base utility or utility caps), with no dense
    temporaries: the buyer scale is the utility of the equal split :math:`s / n`, no pair is
    capped and no utility cap binds.

    The scale is one pass over the utilities with the general einsum's summation (the same
    reduction loop, so the same floats); entries without utility add 0 there.
    """
    n = market.n_buyers
    scale = np.einsum("ik,k->i", market.utilities.reshape(n, -1), market.supply.reshape(-1) / n)
    return scale, np.full(market.pairs.size, np.inf), np.full(n, np.inf)


def present_and_rank(values: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(values, return_inverse=True)`` for whole numbers in ``[0, size)``, by counting
    instead of sorting (linear in ``values.size``; the same arrays)."""
    present = np.bincount(values, minlength=size) > 0
    rank = np.cumsum(present) - 1
    return np.flatnonzero(present), rank[values]
