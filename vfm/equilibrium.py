"""`Equilibrium`: the one result type of every solve."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np

from vfm._validation import FloatArray, check_shape, frozen
from vfm.duality import GapDecomposition, duality_gap
from vfm.errors import SolverError
from vfm.market import VolatileFisherMarket


class Status(StrEnum):
    """How a solve ended. Only `OPTIMAL` means the requested accuracy was reached."""

    OPTIMAL = "optimal"
    INACCURATE = "optimal_inaccurate"
    ITERATION_LIMIT = "iteration_limit"
    INFEASIBLE = "infeasible"
    UNBOUNDED = "unbounded"
    ERROR = "error"


@dataclass(frozen=True, eq=False)
class Equilibrium:
    r"""The solution of a Volatile Fisher Market, as returned by `vfm.solve`.

    Like `scipy.optimize.OptimizeResult`, a failed solve returns an `Equilibrium` whose
    `status` says what happened (call `raise_for_status` to turn it into an exception);
    derived quantities are computed on first access and cached.

    Attributes
    ----------
    market : VolatileFisherMarket
        The market that was solved.
    allocation : ndarray, shape (n, m, T)
        :math:`x_{ijt}`, as returned by the solver (not rounded or clipped: see `vfm.check` for
        its feasibility residuals). NaN if the solver returned no point.
    prices : ndarray, shape (m, T)
        :math:`p_{jt}`, the duals of the supply rows. 0 for good-periods with zero supply or that
        nobody can use.
    status : Status
    solver : str
        Name of the backend that produced the result.
    message : str
        The solver's own account of how it ended, readable by a person.
    iterations : int
        Solver iterations (-1 if unknown).
    solve_time : float
        Seconds spent inside the solver.
    wall_time : float
        Seconds spent in `vfm.solve`, model building included.
    accuracy : float
        The relative accuracy the solver was asked for (its gap and feasibility tolerance on the
        scaled program); `vfm.check` derives its default tolerances from it.
    attempts : tuple of (str, str)
        ``(backend, reason)`` for every other backend `vfm.solve` tried that did not give a
        certified result, in the order tried (empty when the first backend succeeded or a solver
        was named). When every backend failed, the result is the most useful of their answers
        (one with a point, if any) and `attempts` holds the reasons of all the others.

    Raises
    ------
    vfm.errors.ValidationError
        If `allocation` is not of shape (n, m, T) or `prices` of shape (m, T) of `market`.

    Notes
    -----
    A status that vouches for a point (`Status.OPTIMAL`, `Status.INACCURATE`) with a NaN or
    infinite allocation or price is turned into `Status.ERROR` on construction, the message saying
    so. Every array a result hands out (`allocation`, `prices`, `utilities`, the arrays of `gap`) is
    read-only for good: ``setflags(write=True)`` raises, so cached quantities cannot go stale.
    The constructor copies `allocation` and `prices` once unless they are already frozen.
    """

    market: VolatileFisherMarket
    allocation: FloatArray
    prices: FloatArray
    status: Status
    solver: str
    message: str = ""
    iterations: int = -1
    solve_time: float = float("nan")
    wall_time: float = float("nan")
    accuracy: float = 1e-8
    attempts: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        # A private immutable copy: a caller's later writes to the arrays it passed, or writes
        # through the result, would leave the cached utilities, objective and gap stale.
        object.__setattr__(self, "allocation", frozen(self.allocation))
        object.__setattr__(self, "prices", frozen(self.prices))
        market = self.market
        if isinstance(market, VolatileFisherMarket):
            for name, want in (("allocation", market.shape), ("prices", (market.n_goods, market.n_periods))):
                check_shape(name, getattr(self, name), want, f" for this market ({market.n_buyers} buyers, "
                                                            f"{market.n_goods} goods, {market.n_periods} periods)")
        # No status that vouches for a point (optimal, inaccurate) without a finite point.
        if self.status in (Status.OPTIMAL, Status.INACCURATE):
            bad = [name for name in ("allocation", "prices") if not np.isfinite(getattr(self, name)).all()]
            if bad:
                object.__setattr__(self, "status", Status.ERROR)
                object.__setattr__(self, "message", f"{self.message}; not usable: the {' and the '.join(bad)} "
                                                    f"{'is' if len(bad) == 1 else 'are'} not finite")

    @property
    def success(self) -> bool:
        """Whether the solver reached its requested accuracy."""
        return self.status is Status.OPTIMAL

    def raise_for_status(self) -> Equilibrium:
        """Return `self` if the solve succeeded, else raise `vfm.errors.SolverError`.

        Raises
        ------
        vfm.errors.SolverError
            With the status and the solver's message.
        """
        if not self.success:
            raise SolverError(
                f"{self.solver} ended with status '{self.status}': {self.message}",
                status=str(self.status),
                result=self,
            )
        return self

    def relabel(self, **report: Any) -> Equilibrium:
        """A copy with other `status`, `message` or timings, keeping what was already derived.

        The point (market, allocation, prices) cannot change here, so cached utilities,
        objective and duality gap stay valid and are not recomputed.
        """
        point = {"market", "allocation", "prices"} & report.keys()
        if point:
            raise ValueError(f"relabel cannot change {sorted(point)}; build a new Equilibrium")
        new = dataclasses.replace(self, **report)
        for name in ("utilities", "objective", "gap"):
            if name in self.__dict__:
                new.__dict__[name] = self.__dict__[name]
        return new

    @cached_property
    def utilities(self) -> FloatArray:
        """:math:`U_i(x)`, shape (n,)."""
        return frozen(self.market.utility_of(self.allocation))

    @cached_property
    def objective(self) -> float:
        r"""NSWOT of the allocation, :math:`\sum_i B_i \log U_i(x)`."""
        return self.market.nswot(self.allocation)

    @cached_property
    def gap(self) -> GapDecomposition:
        """The duality gap of (allocation, prices), split by buyer and good (see `vfm.duality`)."""
        return duality_gap(self.market, self.allocation, self.prices)

    @property
    def duality_gap(self) -> float:
        r"""Dual bound :math:`g(p)` minus NSWOT: how much better any allocation could be, at most."""
        return self.gap.total

    @property
    def relative_gap(self) -> float:
        r"""`duality_gap` divided by :math:`\sum_i B_i`.

        Invariant to rescaling any buyer's utilities and to rescaling all budgets. A relative
        gap :math:`\epsilon` means the budget-weighted geometric mean of the buyers' utilities is
        within a factor :math:`e^{\epsilon}` of the best possible.
        """
        return self.duality_gap / float(self.market.budgets.sum())

    def __repr__(self) -> str:
        return (
            f"Equilibrium(status='{self.status}', solver='{self.solver}', objective={self.objective:.6g}, "
            f"relative_gap={self.relative_gap:.2e}, iterations={self.iterations}, "
            f"wall_time={self.wall_time:.3g}s, market={self.market!r})"
        )


def failed(market: VolatileFisherMarket, solver: str, status: Status, message: str, **timing: float) -> Equilibrium:
    """An `Equilibrium` for a solve that produced no point: NaN allocation and prices."""
    return Equilibrium(
        market=market,
        allocation=np.full(market.shape, np.nan),
        prices=np.full((market.n_goods, market.n_periods), np.nan),
        status=status,
        solver=solver,
        message=message,
        **timing,  # type: ignore[arg-type]
    )
