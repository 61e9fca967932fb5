"""`vfm.solve_per_period`: the round-by-round static market, the baseline NSWOT improves on."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vfm.check import objective_tolerance
from vfm.equilibrium import Equilibrium, Status
from vfm.market import VolatileFisherMarket
from vfm.nswot.entry import solve
from vfm.nswot.entry_checks import require_market


def solve_per_period(market: VolatileFisherMarket, solver: str | None = None, **options: Any) -> Equilibrium:
    r"""Solve each period as its own static Fisher market, in order.

    This is what a scheduler that re-solves a market every round does. Period `t` is the
    market with that period's utilities, supply and caps and the *full* budgets, with no base
    utility (a static market knows no history). A utility cap is a cap on cumulative utility,
    so it carries over as the headroom left, :math:`\bar U_i - c_i - \sum_{t' < t} u_{it'} x_{it'}`
    (a job does not buy progress past 100 %). A buyer that can buy nothing it values in period
    `t`, or has no headroom left (none beyond the solver's feasibility tolerance,
    `vfm.check.objective_tolerance`, relative to its cap), sits the period out and gets nothing.

    Solving over time with `vfm.solve` is never worse in NSWOT, and the per-period solution is
    generally not Pareto optimal over the window: a buyer whose value arrives late is served
    early, at the expense of buyers who value the early periods more.

    Parameters
    ----------
    market : VolatileFisherMarket
    solver : str, optional
    **options
        As for `vfm.solve`.

    Returns
    -------
    Equilibrium
        For the whole `market`: the stacked allocation, each period's own prices (each period
        spends the full budgets again, so they are not comparable with `vfm.solve`'s prices),
        the status of the first period that did not succeed (else optimal), summed iterations
        and solve times. Its `duality_gap` is measured against the joint program at the
        per-period prices: an upper bound on what per-period solving gives up.

    Examples
    --------
    Buyer 1 values period 2 ten times more than buyer 0 does; per period, both split each
    period equally; over time, buyer 0 takes period 1 and buyer 1 period 2.

    >>> import numpy as np, vfm
    >>> market = vfm.VolatileFisherMarket(np.array([[[1.0, 1.0]], [[1.0, 10.0]]]))
    >>> vfm.solve_per_period(market).utilities.round(2)
    array([1. , 5.5])
    >>> vfm.solve(market).utilities.round(2)
    array([ 1., 10.])
    """
    started = time.perf_counter()
    market = require_market(market)
    _, m, periods = market.shape
    allocation = np.zeros(market.shape)
    prices = np.zeros((m, periods))
    accrued = market.base_utility.copy()
    results: list[Equilibrium] = []
    # Headroom left by rounding in an earlier period (a buyer that reached its cap to within the
    # solver's feasibility tolerance) is not real headroom; as a cap it would be a tiny number
    # the next solve cannot handle.
    at_cap_tolerance = 0.0
    for t in range(periods):  # periods are sequential by definition: period t needs t-1's outcome
        headroom = market.utility_cap - accrued
        at_cap = headroom <= at_cap_tolerance * np.where(np.isfinite(market.utility_cap), market.utility_cap, 0.0)
        active = market.reachable[:, :, t].any(axis=1) & ~at_cap
        if not active.any():
            continue
        period_market = VolatileFisherMarket(
            market.utilities[active][:, :, t : t + 1],
            market.budgets[active],
            market.supply[:, t : t + 1],
            caps=market.caps[active][:, :, t : t + 1],
            utility_cap=headroom[active],
        )
        result = solve(period_market, solver, **options)
        results.append(result)
        at_cap_tolerance = max(at_cap_tolerance, objective_tolerance(result))
        if result.status in (Status.ERROR, Status.INFEASIBLE, Status.UNBOUNDED) or np.isnan(result.allocation).any():
            allocation[active, :, t] = np.nan
            prices[:, t] = np.nan
            continue
        allocation[active, :, t] = result.allocation[:, :, 0]
        prices[:, t] = result.prices[:, 0]
        accrued[active] += np.einsum("ij,ij->i", market.utilities[active][:, :, t], result.allocation[:, :, 0])
    worst = next((r for r in results if not r.success), None)
    return Equilibrium(
        market=market,
        allocation=allocation,
        prices=prices,
        status=Status.OPTIMAL if worst is None else worst.status,
        solver=f"per-period:{results[0].solver if results else (solver or 'default')}",
        message=(
            f"{len(results)} of {periods} periods solved as static markets"
            + ("" if worst is None else f"; a period failed: {worst.message}")
        ),
        iterations=sum(r.iterations for r in results),
        solve_time=sum(r.solve_time for r in results),
        wall_time=time.perf_counter() - started,
        accuracy=max((r.accuracy for r in results), default=1e-8),
    )
