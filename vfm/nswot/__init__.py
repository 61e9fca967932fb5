"""Solving a market: `vfm.solve`, from a market to its certified equilibrium, and what runs with it.

- `vfm.nswot.entry`: `solve` (``vfm.solve``), the one entry point: the market checked, the backends
  of `vfm.solvers` tried in turn, a plain market's answer polished, the point certified;
- `vfm.nswot.entry_checks`: the checks at the entry points, `require_market` on the market passed
  in and `certified` on the point returned;
- `vfm.nswot.polish`: the floating-point polish of a plain market's interior-point answer to its
  exact equilibrium (`polished`, within `polish_budget_s`; `vfm.exact` solves it in rationals);
- `vfm.nswot.per_period`: `solve_per_period` (``vfm.solve_per_period``), the round-by-round static
  market, the baseline NSWOT improves on.
"""

from vfm.nswot.entry import solve
from vfm.nswot.per_period import solve_per_period
from vfm.nswot.polish import polish_budget_s, polished

__all__ = ["polish_budget_s", "polished", "solve", "solve_per_period"]
