"""`vfm.solve`: the one entry point from a market to its equilibrium."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vfm.check import kkt
from vfm.duality import duality_gap, stationary_prices
from vfm.equilibrium import Equilibrium, Status, failed
from vfm.errors import ValidationError
from vfm.market import VolatileFisherMarket
from vfm.program import ScaledProgram
from vfm.solvers.base import Backend
from vfm.solvers.registry import candidates, select


def require_market(market: object) -> VolatileFisherMarket:
    """Return `market` if it is a `VolatileFisherMarket`, else raise naming what was passed."""
    if not isinstance(market, VolatileFisherMarket):
        raise ValidationError(
            f"market must be a vfm.VolatileFisherMarket, got {type(market).__name__}; "
            "build one with vfm.VolatileFisherMarket(utilities, budgets, supply)"
        )
    return market


def solve(market: VolatileFisherMarket, solver: str | None = None, **options: Any) -> Equilibrium:
    r"""Compute the market's equilibrium by maximizing Nash social welfare over time.

    Solves the exponential-cone program

    .. math::

        \max_x \sum_i B_i \log U_i(x) \quad\text{s.t.}\quad
        \sum_i x_{ijt} \le s_{jt},\; 0 \le x \le d,\; U_i(x) \le \bar U_i,

    whose supply duals are the equilibrium prices. The backend sees a scaled
    copy of the program (`vfm.program`), so results do not depend on the units of utilities,
    budgets or supply.

    Parameters
    ----------
    market : VolatileFisherMarket
    solver : str, optional
        A name from `vfm.available_solvers()` (case-insensitive, e.g. ``"schur-ipm"``,
        ``"clarabel"``, ``"ecos"``, ``"scs"``). Default: the installed backends that support the
        market, fastest first; the first certified result is returned, and its message lists
        the backends that were tried before it.
    **options
        Passed to the backend named by `solver` (options without a solver are rejected, since
        each backend has its own); for CVXPY solvers, the solver's own options (e.g.
        ``max_iter=50``, ``tol_gap_rel=1e-10`` for Clarabel).

    Returns
    -------
    Equilibrium
        Check ``result.status`` or call ``result.raise_for_status()``: a solver failure is
        reported, not raised.

    Raises
    ------
    vfm.errors.ValidationError
        If `market` is not a market or `solver` is unknown, not installed or unsupported.

    Examples
    --------
    Two buyers, two goods: each gets the good it values more, at price 1 (its budget).

    >>> import vfm
    >>> market = vfm.VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]])
    >>> result = vfm.solve(market)
    >>> result.status
    <Status.OPTIMAL: 'optimal'>
    >>> result.allocation[:, :, 0].round(6)
    array([[1., 0.],
           [0., 1.]])
    >>> result.prices[:, 0].round(6)
    array([1., 1.])
    """
    started = time.perf_counter()
    market = require_market(market)
    if options and solver is None:
        raise ValidationError(
            f"solver options ({', '.join(sorted(options))}) belong to one backend: name it with solver=..."
        )
    # A named solver is used alone; by default the backends that support the market are tried
    # fastest first, and the first certified result wins (a scheduler needs an answer every round).
    backends = [select(market, solver)] if solver is not None else candidates(market)
    program = ScaledProgram.from_market(market)
    if program.n_entries == 0:
        # Every buyer lives on its base utility alone: nothing can be traded.
        return Equilibrium(
            market=market,
            allocation=np.zeros(market.shape),
            prices=np.zeros((market.n_goods, market.n_periods)),
            status=Status.OPTIMAL,
            solver=backends[0].name,
            message="nothing is tradable: no buyer values any available good",
            iterations=0,
            solve_time=0.0,
            wall_time=time.perf_counter() - started,
        )
    attempts: list[str] = []
    for backend in backends:
        result = _solve_with(backend, program, options)
        if result.success or backend is backends[-1]:
            break
        attempts.append(f"{backend.name} ended '{result.status}' ({result.message})")
    if attempts:
        result = result.relabel(message=result.message + "; tried first: " + "; ".join(attempts))
    return result.relabel(wall_time=time.perf_counter() - started)


def _solve_with(backend: Backend, program: ScaledProgram, options: dict[str, Any]) -> Equilibrium:
    """One backend's certified result for `program`."""
    market = program.market
    solution = backend.solve(program, **options)
    timing = {
        "iterations": solution.iterations,
        "solve_time": solution.solve_time,
        "accuracy": solution.accuracy,
    }
    if solution.x is None or solution.prices is None:
        return failed(market, backend.name, solution.status, solution.message, **timing)
    allocation = program.allocation(solution.x)
    prices = program.prices(solution.prices)
    message = solution.message
    if market.is_plain:
        polished = stationary_prices(market, allocation)
        if duality_gap(market, allocation, polished).total < duality_gap(market, allocation, prices).total:
            prices = polished
            message += "; prices recovered from the allocation by stationarity (smaller duality gap than the duals)"
    return certified(Equilibrium(
        market=market,
        allocation=allocation,
        prices=prices,
        status=solution.status,
        solver=backend.name,
        message=message,
        **timing,  # type: ignore[arg-type]
    ))


def certified(result: Equilibrium) -> Equilibrium:
    """Set the status of a solved point by vfm's own certificate, `vfm.check.kkt`.

    Solvers judge convergence on their own conic reformulation, whose extra dual variables
    (caps, utility caps, cone duals) can lag behind the allocation and prices that matter here;
    on degenerate markets (many jobs that can finish inside the window, rounds with identical
    forecasts) Clarabel then stops with "almost solved". The certificate instead measures the
    exact duality gap of (allocation, prices) and their feasibility. So `OPTIMAL` means the
    certificate holds at its default tolerances, whatever the solver said, and a point the
    solver called optimal that fails it is downgraded to `INACCURATE`; the message says which.
    """
    if result.status not in (Status.OPTIMAL, Status.INACCURATE):
        return result
    certificate = kkt(result)
    if certificate.holds:
        if result.status is Status.OPTIMAL:
            return result
        note = (f"; vfm's certificate verifies the requested accuracy anyway "
                f"(relative duality gap {result.relative_gap:.1e})")
        return result.relabel(status=Status.OPTIMAL, message=result.message + note)
    worst = max(certificate, key=lambda residual: residual.value / residual.tolerance)
    note = f"; vfm's certificate does not hold: {worst}"
    return result.relabel(status=Status.INACCURATE, message=result.message + note)
