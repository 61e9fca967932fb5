"""The checks at vfm's entry points: `require_market` on the market passed in, `certified` on the point returned."""

from __future__ import annotations

from typing import cast

import numpy as np

from vfm.check import Residual, certify
from vfm.equilibrium import Equilibrium, Status
from vfm.market import VolatileFisherMarket
from vfm.parameters import Instance, check

__all__ = ["certified", "require_market"]

#: The market every entry point solves.
_MARKET = Instance(VolatileFisherMarket, "a vfm.VolatileFisherMarket",
                   hint="build one with vfm.VolatileFisherMarket(utilities, budgets, supply)")


def require_market(market: object) -> VolatileFisherMarket:
    """Return `market` if it is a `VolatileFisherMarket`, else raise naming what was passed."""
    return cast(VolatileFisherMarket, check("market", market, _MARKET))



def certified(result: Equilibrium) -> Equilibrium:
    """Set the status of a solved point by vfm's own certificate, `vfm.check.certify`.

    Solvers judge convergence on their own conic reformulation, whose extra dual variables
    (caps, utility caps, cone duals) can lag behind the allocation and prices that matter here;
    on degenerate markets (many jobs that can finish inside the window, rounds with identical
    forecasts) Clarabel then stops with "almost solved". The certificate instead measures the
    exact duality gap of (allocation, prices) and their feasibility, buyer by buyer (each
    relative to its own budget) and good by good (each relative to its own supply), at the
    tolerances derived from the accuracy the solver was asked for (`vfm.check`). So `OPTIMAL`
    means the certificate holds, whatever the solver said, and a point the solver called
    optimal that fails it is downgraded to `INACCURATE`; the message gives the residual
    furthest beyond its tolerance, then every other violated one.
    """
    if result.status not in (Status.OPTIMAL, Status.INACCURATE):
        return result
    certificate = certify(result)
    if certificate.holds:
        if result.status is Status.OPTIMAL:
            return result
        note = (f"; vfm's certificate verifies the requested accuracy anyway "
                f"(relative duality gap {result.relative_gap:.1e})")
        return result.relabel(status=Status.OPTIMAL, message=result.message + note)
    violated = sorted((r for r in certificate if not r.holds), key=_excess, reverse=True)
    worst, *others = violated
    note = f"; vfm's certificate does not hold: {worst}"
    if others:
        note += " (also violated: " + ", ".join(
            f"{r.name} {r.value:.1e} > {r.tolerance:.1e} at {r.where}" for r in others) + ")"
    return result.relabel(status=Status.INACCURATE, message=result.message + note)


def _excess(residual: Residual) -> float:
    """How far beyond its tolerance a residual is (inf when it is not finite)."""
    if not np.isfinite(residual.value):
        return np.inf
    return residual.value / residual.tolerance if residual.tolerance > 0 else np.inf
