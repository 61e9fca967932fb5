"""The Volatile Fisher Market: buyers, goods and periods."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar, Literal, NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, as_real_array, frozen, read_only, require_nonnegative, require_positive
from vfm.errors import InfeasibleMarketError, ValidationError
from vfm.parameters import check_names, check_nonempty

#: The largest budget total, reachable utility and price scale a market may have. The program and
#: its certificate multiply these by logarithms (at most about 745 in magnitude in float64) and
#: sum them over buyers and goods; below 1e300 every such product is finite.
LARGEST = 1e300
#: The smallest utility a buyer without base utility may be able to reach: below it, utility
#: times supply has underflowed and the buyer's scaled utilities are 0 / 0.
SMALLEST = 1e-300


class ColumnOrder(NamedTuple):
    """A market's pairs (`Pairs`) column by column: ``order`` indexes the pairs, good-period `k`'s
    being ``order[bounds[k]:bounds[k + 1]]``; ``buyer`` and ``utility`` are the pairs' in that order.
    Built once, so that a reduction over columns gathers only from per-buyer arrays."""

    order: np.ndarray
    bounds: np.ndarray
    buyer: np.ndarray
    utility: np.ndarray


class Pairs:
    """A market's reachable entries (`VolatileFisherMarket.reachable`) as compressed sparse rows.

    Rows are buyers, columns the flattened good-periods ``k = j * T + t``; the entries are in
    row-major order (``np.nonzero(market.reachable.reshape(n, -1))``'s), so a reduction over them
    visits each buyer's entries in the order a dense row would. Work over the pairs is linear in
    their number, where the dense (n, m, T) arrays cost every buyer x good-period.

    Attributes
    ----------
    shape : (int, int)
        ``(n, m * T)``.
    buyer, column : ndarray of int, shape (nnz,)
    flat : ndarray of int, shape (nnz,)
        ``buyer * m * T + column``: each pair's index into a flattened (n, m, T) array.
    utility : ndarray, shape (nnz,)
        :math:`u_{ik} > 0`.
    indptr : ndarray of int, shape (n + 1,)
        Buyer `i`'s pairs are ``indptr[i]:indptr[i + 1]``.
    """

    def __init__(self, market: VolatileFisherMarket) -> None:
        n = market.n_buyers
        self.shape = (n, market.n_goods * market.n_periods)
        flat = np.flatnonzero(market.reachable)
        self.flat = read_only(flat)
        self.buyer, self.column = (read_only(v) for v in np.divmod(flat, self.shape[1]))
        self.utility = read_only(market.utilities.reshape(-1)[flat])
        self.indptr = read_only(np.concatenate([[0], np.cumsum(np.bincount(self.buyer, minlength=n))]))

    @property
    def size(self) -> int:
        return int(self.flat.size)

    def at(self, values: ArrayLike) -> np.ndarray:
        """A dense array of the market's shape (n, m, T), or (n, m * T), read at the pairs."""
        return np.asarray(values).reshape(-1)[self.flat]

    @cached_property
    def by_column(self) -> ColumnOrder:
        """The pairs column by column, buyers ascending within a column (a CSR to CSC conversion,
        linear in the pairs; built on first use)."""
        rank = sp.csr_matrix((np.arange(1, self.size + 1), self.column, self.indptr), shape=self.shape).tocsc()
        order = rank.data - 1
        return ColumnOrder(*(read_only(v) for v in (order, rank.indptr, self.buyer[order], self.utility[order])))

    def row_reduce(self, ufunc: np.ufunc, values: np.ndarray, empty: float) -> np.ndarray:
        """``ufunc.reduce`` of `values` (one per pair) over each buyer's pairs, `empty` for a buyer with
        none, shape (n,)."""
        return _segment_reduce(ufunc, values, self.indptr, empty)

    def column_reduce(self, ufunc: np.ufunc, values: np.ndarray, empty: float) -> np.ndarray:
        """``ufunc.reduce`` of `values` (one per pair, in `by_column`'s order) over each good-period's
        pairs, `empty` for a good-period with none, shape (m * T,)."""
        return _segment_reduce(ufunc, values, self.by_column.bounds, empty)

    def row_full(self) -> np.ndarray:
        """Whether each buyer can buy every good-period (its dense row has no 0 off the pairs)."""
        return np.diff(self.indptr) == self.shape[1]

    def column_full(self) -> np.ndarray:
        """Whether every buyer can buy each good-period (its dense column has no 0 off the pairs)."""
        return np.diff(self.by_column.bounds) == self.shape[0]


def _segment_reduce(ufunc: np.ufunc, values: np.ndarray, bounds: np.ndarray, empty: float) -> np.ndarray:
    """``ufunc.reduce`` of ``values[bounds[k]:bounds[k + 1]]`` for every k, `empty` where that is empty."""
    values = np.asarray(values)
    result = np.full(bounds.size - 1, empty, dtype=np.result_type(values.dtype, np.float64))
    # reduceat reads an empty segment as its first element: reduce the others only.
    filled = bounds[:-1] < bounds[1:]
    if filled.any():
        result[filled] = ufunc.reduceat(values, bounds[:-1][filled])
    return result


@dataclass(frozen=True, eq=False, init=False)
class VolatileFisherMarket:
    r"""An immutable Volatile Fisher Market.

    Buyers :math:`i = 1..n` spend budgets on goods :math:`j = 1..m` offered in periods
    :math:`t = 1..T`. Buyer :math:`i`'s cumulative utility of an allocation
    :math:`x \in \mathbb{R}^{n \times m \times T}_{\ge 0}` is

    .. math:: U_i(x) = c_i + \sum_{j,t} u_{ijt}\, x_{ijt},

    and the market's equilibrium maximizes Nash social welfare over time (NSWOT)

    .. math::

        \max_x \sum_i B_i \log U_i(x) \quad\text{s.t.}\quad
        \sum_i x_{ijt} \le s_{jt},\; 0 \le x \le d,\; U_i(x) \le \bar U_i .

    Parameters
    ----------
    utilities : array_like, shape (n, m, T)
        :math:`u_{ijt} \ge 0`, the utility of one unit of good `j` in period `t` to buyer `i`.
    budgets : array_like, shape (n,), optional
        :math:`B_i > 0`. Default: equal budgets of 1.
    supply : array_like, shape (m, T), optional
        :math:`s_{jt} \ge 0`. Default: one unit of every good in every period.
    base_utility : array_like, shape (n,), optional
        :math:`c_i \ge 0`, utility accrued before the window. Default 0.
    caps : array_like, shape (n, m, T), optional
        :math:`d_{ijt} \ge 0` (``inf`` allowed), per-buyer caps on the allocation. Default: none.
    utility_cap : array_like, shape (n,), optional
        :math:`\bar U_i > 0` (``inf`` allowed), cap on cumulative utility. Default: none.

    Raises
    ------
    vfm.errors.ValidationError
        On a wrong shape or dtype, NaN, a forbidden infinity, a negative entry, or a budget
        that is not positive. The message names the argument and the offending index.
    vfm.errors.InfeasibleMarketError
        If a buyer can reach no positive utility, or a utility cap is below the base utility.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm import VolatileFisherMarket
    >>> market = VolatileFisherMarket(np.ones((2, 1, 3)), supply=np.full((1, 3), 4.0))
    >>> market.shape
    (2, 1, 3)
    >>> market.is_plain
    True
    """

    #: The problem type, for the solver registry (`vfm.solvers.base.Problem`).
    problem_kind: ClassVar[Literal["market"]] = "market"

    utilities: FloatArray
    budgets: FloatArray
    supply: FloatArray
    base_utility: FloatArray
    caps: FloatArray
    utility_cap: FloatArray

    def __init__(
        self,
        utilities: ArrayLike,
        budgets: ArrayLike | None = None,
        supply: ArrayLike | None = None,
        *,
        base_utility: ArrayLike | None = None,
        caps: ArrayLike | None = None,
        utility_cap: ArrayLike | None = None,
    ) -> None:
        u = as_real_array(utilities, "utilities", (None, None, None))
        n, m, periods = u.shape
        check_nonempty("utilities", u.size, "buyer, good and period")
        require_nonnegative(u, "utilities")

        b = np.ones(n) if budgets is None else as_real_array(budgets, "budgets", (n,))
        require_positive(b, "budgets")
        s = np.ones((m, periods)) if supply is None else as_real_array(supply, "supply", (m, periods))
        require_nonnegative(s, "supply")
        c = np.zeros(n) if base_utility is None else as_real_array(base_utility, "base_utility", (n,))
        require_nonnegative(c, "base_utility")
        d = (
            np.full(u.shape, np.inf)
            if caps is None
            else as_real_array(caps, "caps", u.shape, allow_inf=True)
        )
        require_nonnegative(d, "caps")
        cap = (
            np.full(n, np.inf)
            if utility_cap is None
            else as_real_array(utility_cap, "utility_cap", (n,), allow_inf=True)
        )
        require_positive(cap, "utility_cap")

        for name, value in (
            ("utilities", u), ("budgets", b), ("supply", s),
            ("base_utility", c), ("caps", d), ("utility_cap", cap),
        ):
            object.__setattr__(self, name, frozen(value))
        self._check_feasible()
        self._check_range()

    def _check_feasible(self) -> None:
        """Reject markets whose NSWOT is -inf for every allocation or which have no feasible point."""
        below = self.utility_cap < self.base_utility
        if below.any():
            i = int(np.argmax(below))
            raise InfeasibleMarketError(
                f"utility_cap[{i}] = {self.utility_cap[i]:g} is below base_utility[{i}] = "
                f"{self.base_utility[i]:g}: buyer {i} already exceeds its cap, so no allocation is feasible"
            )
        stuck = (self.base_utility == 0) & ~self.reachable.any(axis=(1, 2))
        if stuck.any():
            i = int(np.argmax(stuck))
            raise InfeasibleMarketError(
                f"buyer {i} can reach no positive utility: utilities[{i}] is zero wherever supply "
                f"and caps[{i}] allow a purchase, and base_utility[{i}] is 0, so log U_{i} = -inf. "
                f"Give buyer {i} a positive utility for some available good, or remove it"
            )

    def _check_range(self) -> None:
        """Reject markets whose program overflows or underflows float64 (see `LARGEST`).

        Rescaling cannot rescue them exactly in general: every buyer's utilities may be scaled
        by its own factor and all budgets by one factor without changing the allocation, and the
        messages say so, but the prices of the result would still have to be represented.
        """
        with np.errstate(over="ignore"):
            total = float(np.sum(self.budgets))
        if not total <= LARGEST:
            raise ValidationError(
                f"budgets sum to {total:g}, above {LARGEST:g}: NSWOT and the prices multiply the budget "
                "total by log-utilities and divide it by supplies, which must stay finite in float64. "
                "Divide every budget by one common factor (the allocation does not change; prices scale with it)"
            )
        n = self.n_buyers
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            bundle = np.where(self.reachable, self.utilities * np.minimum(self.supply[None], self.caps), 0.0)
            reach = self.base_utility + bundle.reshape(n, -1).sum(axis=1)
        high = ~(reach <= LARGEST)
        if high.any():
            i = int(np.argmax(high))
            raise ValidationError(
                f"utilities[{i}] times supply overflow float64: buyer {i} can reach utility {reach[i]:g}, above "
                f"{LARGEST:g}, and the program needs its utilities finite. Divide utilities[{i}] (with "
                f"base_utility[{i}] and utility_cap[{i}]) by a common factor, which changes neither the "
                "allocation nor the prices, or measure supply in larger units"
            )
        low = (self.base_utility == 0) & (reach < SMALLEST)
        if low.any():
            i = int(np.argmax(low))
            raise ValidationError(
                f"utilities[{i}] times supply underflow float64: buyer {i} can reach utility {reach[i]:g}, below "
                f"{SMALLEST:g}. Multiply utilities[{i}] by a common factor (the allocation and prices do not change)"
            )
        sold = self.supply[self.reachable.any(axis=0)]
        if sold.size and not total / float(sold.min()) <= LARGEST:
            raise ValidationError(
                f"supply has an entry of {float(sold.min()):g} while budgets sum to {total:g}: its price (up to the "
                f"budget total over the supply) would exceed {LARGEST:g}. Measure supply in larger units or "
                "divide every budget by one common factor"
            )

    @classmethod
    def static(
        cls,
        utilities: ArrayLike,
        budgets: ArrayLike | None = None,
        supply: ArrayLike | None = None,
        **extensions: ArrayLike | None,
    ) -> VolatileFisherMarket:
        """Build a one-period (classical) Fisher market.

        Parameters
        ----------
        utilities : array_like, shape (n, m)
        budgets : array_like, shape (n,), optional
        supply : array_like, shape (m,), optional
        **extensions
            ``base_utility`` (n,), ``caps`` (n, m), ``utility_cap`` (n,).

        Examples
        --------
        >>> from vfm import VolatileFisherMarket
        >>> VolatileFisherMarket.static([[1.0, 2.0], [3.0, 1.0]]).shape
        (2, 2, 1)
        """
        check_names(extensions, ("base_utility", "caps", "utility_cap"), "an argument of VolatileFisherMarket.static",
                    "the extensions are base_utility, caps and utility_cap")
        u = as_real_array(utilities, "utilities", (None, None))
        s = None if supply is None else as_real_array(supply, "supply", (u.shape[1],))[:, None]
        caps = extensions.get("caps")
        if caps is not None:
            extensions["caps"] = as_real_array(caps, "caps", u.shape, allow_inf=True)[:, :, None]
        return cls(u[:, :, None], budgets, s, **extensions)

    def __repr__(self) -> str:
        extensions = [
            name
            for name, present in (
                ("caps", self.has_caps),
                ("base_utility", self.has_base_utility),
                ("utility_cap", self.has_utility_cap),
            )
            if present
        ]
        n, m, periods = self.shape
        extra = f", extensions={extensions}" if extensions else ""
        return f"VolatileFisherMarket(n_buyers={n}, n_goods={m}, n_periods={periods}{extra})"

    @property
    def shape(self) -> tuple[int, int, int]:
        """``(n_buyers, n_goods, n_periods)``."""
        n, m, periods = self.utilities.shape
        return n, m, periods

    @property
    def n_buyers(self) -> int:
        return self.shape[0]

    @property
    def n_goods(self) -> int:
        return self.shape[1]

    @property
    def n_periods(self) -> int:
        return self.shape[2]

    # The feature flags read every entry and are asked on every check: the market is immutable,
    # so each is computed once.
    @cached_property
    def has_caps(self) -> bool:
        """Whether any allocation cap is finite."""
        return bool(np.isfinite(self.caps).any())

    @cached_property
    def has_base_utility(self) -> bool:
        return bool((self.base_utility > 0).any())

    @cached_property
    def has_utility_cap(self) -> bool:
        return bool(np.isfinite(self.utility_cap).any())

    @property
    def features(self) -> frozenset[str]:
        """The features the market uses, which a backend must support to solve it
        (`vfm.solvers.base.MARKET_FEATURES`): ``caps``, ``base_utility``, ``utility_cap``,
        ``several_goods_per_period``.

        >>> sorted(VolatileFisherMarket.static([[1.0, 2.0]], base_utility=[1.0]).features)
        ['base_utility', 'several_goods_per_period']
        """
        uses = {
            "caps": self.has_caps,
            "base_utility": self.has_base_utility,
            "utility_cap": self.has_utility_cap,
            "several_goods_per_period": self.n_goods > 1,
        }
        return frozenset(name for name, used in uses.items() if used)

    @property
    def is_plain(self) -> bool:
        """Whether the market has no caps, no base utility and no utility caps (a plain market)."""
        return not (self.has_caps or self.has_base_utility or self.has_utility_cap)

    @cached_property
    def reachable(self) -> np.ndarray:
        """Boolean (n, m, T): entries where buyer `i` can buy something it values."""
        mask = (self.utilities > 0) & (self.caps > 0) & (self.supply > 0)[None]
        return frozen(mask, dtype=np.bool_)

    @cached_property
    def pairs(self) -> Pairs:
        """The reachable entries as compressed sparse rows (`Pairs`), built on first use."""
        return Pairs(self)

    def utility_of(self, allocation: ArrayLike) -> FloatArray:
        """Cumulative utilities :math:`U_i(x) = c_i + \\sum_{j,t} u_{ijt} x_{ijt}`, shape (n,).

        Parameters
        ----------
        allocation : array_like, shape (n, m, T)
        """
        x = np.asarray(allocation, dtype=np.float64)
        n = self.n_buyers
        return self.base_utility + np.einsum("ik,ik->i", self.utilities.reshape(n, -1), x.reshape(n, -1))

    def nswot(self, allocation: ArrayLike) -> float:
        """Nash social welfare over time, :math:`\\sum_i B_i \\log U_i(x)`."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(self.budgets @ np.log(self.utility_of(allocation)))
