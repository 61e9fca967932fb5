"""`vfm.solve`: the one entry point from a market to its equilibrium."""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from vfm.blas_threads import one_blas_thread
from vfm.duality import duality_gap, stationary_prices
from vfm.equilibrium import Equilibrium, Status, failed
from vfm.errors import ValidationError
from vfm.market import VolatileFisherMarket
from vfm.nswot.entry_checks import certified, require_market
from vfm.nswot.polish import polish_budget_s, polished
from vfm.parameters import Boolean, check
from vfm.program import ScaledProgram
from vfm.solvers.base import Backend, check_options
from vfm.solvers.registry import candidates, select


def solve(market: VolatileFisherMarket, solver: str | None = None, *, polish: bool = True,
          **options: Any) -> Equilibrium:
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
        market, fastest first; the first certified result is returned, its message lists the
        backends that were tried before it and `Equilibrium.attempts` their reasons. A backend
        that fails in any way (a status short of certified, or an exception inside it) passes
        the market on to the next.
    polish : bool
        For a plain market (no caps, base utility or utility caps), polish the interior-point
        answer to the exact equilibrium (`vfm.nswot.polish.polished`: identify the support, solve the
        equilibrium's linear system on it, verify; default True). A polished result is within a
        relative 1e-9 of the exact equilibrium (an interior point alone is within about
        :math:`\sqrt{\epsilon}`, 1e-3 on generated markets); when no guess of the support
        verifies, the interior-point answer is returned with the reason in its message. The
        polish gets `vfm.nswot.polish.polish_budget_s` of the solve's time (at least 0.05 s, at most
        twice the solve): past it no further support guess is tried, and the interior-point
        answer keeps its status, its message saying the polish stopped.
    **options
        Passed to the backend named by `solver` (options without a solver are rejected, since
        each backend has its own). Every market backend takes ``tol`` (its relative accuracy, in
        (0, 1)) and ``max_iter`` (a whole number >= 1), and its own options (e.g.
        ``tol_gap_rel=1e-10`` for Clarabel, ``eps_abs`` for SCS). Checked before any solve.

    Returns
    -------
    Equilibrium
        Check ``result.status`` or call ``result.raise_for_status()``: a solver failure is
        reported, not raised.

    Raises
    ------
    vfm.errors.ValidationError
        If `market` is not a market, `solver` is unknown, not installed or unsupported, or an
        option is not one the backend takes or has a value of the wrong kind (the message names
        the option and the backend).

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
    check("polish", polish, Boolean())
    if options and solver is None:
        raise ValidationError(
            f"solver options ({', '.join(sorted(options))}) belong to one backend: name it with solver=..."
        )
    # A named solver is used alone; by default the backends that support the market are tried
    # fastest first, and the first certified result wins (a scheduler needs an answer every round).
    backends = [select(market, solver)] if solver is not None else candidates(market)
    if solver is not None:
        check_options(backends[0], options)
    with one_blas_thread():  # the solve's small products gain nothing from BLAS threads (vfm.blas_threads)
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
        results: list[Equilibrium] = []
        for backend in backends:
            results.append(_attempt(backend, program, options))
            if results[-1].success:
                break
        result = _report(results)
        if polish and market.is_plain and result.status in (Status.OPTIMAL, Status.INACCURATE):
            result = polished(market, result, deadline=time.perf_counter() + polish_budget_s(result.solve_time))
        return result.relabel(wall_time=time.perf_counter() - started)


def _report(results: list[Equilibrium]) -> Equilibrium:
    """The result to return from the backends' `results` (in the order tried), with the others'
    reasons in `attempts` and the message.

    The last is the certified one if any is; else every backend failed, and the first that
    returned a point (an inexact answer is more use than none) is reported.
    """
    if results[-1].success:
        chosen = results[-1]
    else:
        with_point = [r for r in results if np.isfinite(r.allocation).all() and np.isfinite(r.prices).all()]
        chosen = with_point[0] if with_point else results[-1]
    others = [r for r in results if r is not chosen]
    if not others:
        return chosen
    attempts = tuple((r.solver, f"ended '{r.status}' ({r.message})") for r in others)
    lead = "tried first" if chosen.success else "every backend failed; the others"
    message = chosen.message + f"; {lead}: " + "; ".join(f"{name} {reason}" for name, reason in attempts)
    return chosen.relabel(message=message, attempts=attempts)


def _attempt(backend: Backend, program: ScaledProgram, options: dict[str, Any]) -> Equilibrium:
    """`_solve_with`, with an exception inside the backend turned into its failure (status
    ``error``, the exception as the reason). A `ValidationError` is the caller's and is raised."""
    started = time.perf_counter()
    try:
        with np.errstate(all="ignore"):  # a failing backend's overflow is reported by its status
            return _solve_with(backend, program, options)
    except ValidationError:
        raise
    except Exception as exc:
        return failed(program.market, backend.name, Status.ERROR,
                      f"{backend.name} raised {type(exc).__name__}: {exc}",
                      solve_time=time.perf_counter() - started)


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
