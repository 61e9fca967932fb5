r"""The interior point's start (`vfm.planner.solve.ipm.method`): strictly feasible in the primal (the FTF rows
excepted) and dual feasible, every complementarity product near the same small value.

The schedule gives every job the same share of each round it fits in (mixed half and half with a
warm start), the capacity prices minimize the start's certified gap, the bounds' multipliers
balance the gradient, and a centring shift keeps every product at least :math:`1 / m` (m the
constraints). With the efficiency term, :math:`\zeta` starts on the central path of its rows.
"""

from __future__ import annotations

import numpy as np
import scipy.optimize

from vfm._validation import FloatArray
from vfm.planner.solve.ipm.point import Longest, Multipliers, Point, Slacks, TypeRows, evaluate
from vfm.planner.solve.scaled_program import ScaledProgram, gap_minimizing_prices, objective, row_terms

_START_SHARE = 0.5


def start(data: ScaledProgram, warm_start: FloatArray | None, n_constraints: int) -> Point:
    """A primal start strictly inside the box, the capacity and the efficiency rows (the FTF rows may
    start violated) and a dual-feasible start with every product near 1 / n_constraints."""
    active, g = data.active, data.g
    # The same share of every round for every job that fits (half its bound), half the capacity at most.
    load = g.sum(axis=0)
    y = np.where(active, np.minimum(_START_SHARE * data.upper, _START_SHARE / np.maximum(load, 1e-300))[None, :], 0.0)
    if data.typed:
        # The job's goods in a round share its half: the one-type rows start half slack.
        y /= np.maximum(active.astype(np.float64) @ data.rounds_of_goods, 1.0)[:, data.good_round]
    if warm_start is not None:
        # Scale the old schedule into 90 % of each round's capacity (and of each one-type row),
        # then mix it half and half with the cold start: every entry stays in (0, 0.75 u] and
        # every round under 70 % full.
        previous = np.where(active, np.clip(warm_start, 0.0, data.upper[None, :]), 0.0)
        previous = previous * np.minimum(1.0, 0.9 / np.maximum((g * previous).sum(axis=0), 1e-300))[None, :]
        if data.typed:
            room = np.minimum(1.0, 0.9 * data.round_upper / np.maximum(previous @ data.rounds_of_goods, 1e-300))
            previous = previous * room[:, data.good_round]
        y = 0.5 * y + 0.5 * previous
    s_hi = np.where(active, data.upper[None, :] - y, 1.0)
    s_cap = 1.0 - (g * y).sum(axis=0)
    # The FTF rows may start infeasible: their slacks start at least 1 and the Newton steps close
    # the residual sum_t y - m - s_f (a full step closes it).
    running = (y * data.pace).sum(axis=1)
    s_f = np.where(data.constrained, np.maximum(running - data.floor, 1.0), 1.0)
    _, gradient, _ = objective(data, y)
    # Multipliers that make the start dual feasible (the Newton steps then only have to centre
    # and reduce mu, not also repair stationarity, which took a third of the iterations), shifted by
    # mu0 / slack so that every product is at least mu0 = 1 / n_constraints.
    mu0 = 1.0 / n_constraints
    z_f = np.where(data.constrained, mu0 / s_f, 0.0)
    zeta, s_e, z_e, z_zeta = 1.0, np.ones_like(s_f), np.zeros_like(s_f), 0.0
    if data.kappa:
        zeta = _central_zeta(data, running, mu0)
        s_e = np.where(data.efficient, running + zeta - data.leftover, 1.0)
        z_e = np.where(data.efficient, mu0 / s_e, 0.0)
        z_zeta = max(data.kappa - float(z_e.sum()), 0.0) + mu0 / zeta
    s_o = np.where(data.shared, data.round_upper[None, :] - y @ data.rounds_of_goods, 1.0)
    type_rows = TypeRows(s_o, np.where(data.shared, mu0 / s_o, 0.0))
    # The prices that minimize the start's gap given the rows' multipliers (with the efficiency
    # term, z_e carries kappa: the reduced gradient below includes it).
    rows = row_terms(data, z_f + z_e, type_rows.z)
    prices = gap_minimizing_prices(gradient - rows, g, y, s_hi, s_cap)
    reduced = np.where(active, gradient + g * prices[None, :] - rows, 0.0)
    z_lo = np.where(active, np.maximum(reduced, 0.0) + mu0 / np.where(active, y, 1.0), 0.0)
    z_hi = np.where(active, np.maximum(-reduced, 0.0) + mu0 / s_hi, 0.0)
    return evaluate(data, y, Slacks(s_hi, s_cap, s_f), Multipliers(z_lo, z_hi, prices + mu0 / s_cap, z_f),
                    Longest(zeta, s_e, z_e, z_zeta), type_rows, None)


def _central_zeta(data: ScaledProgram, running: FloatArray, mu0: float) -> float:
    r"""The start's :math:`\zeta`: on the central path at `mu0` for the efficiency rows, if that is
    within a round of the longest leftover.

    Every efficiency row strictly satisfied needs :math:`\zeta > \ell = \max_i (r_i - \sum_t y_{it})^+`.
    With :math:`z^e_i = \mu_0 / s^e_i` and :math:`z_\zeta = \mu_0 / \zeta`, the stationarity in
    :math:`\zeta`, :math:`\kappa = \sum_i z^e_i + z_\zeta`, reads
    :math:`\mu_0 (\sum_i 1 / s^e_i(\zeta) + 1 / \zeta) = \kappa`, whose left side falls from
    :math:`+\infty` at :math:`\ell` to 0: one root. A start at :math:`\ell + 1` instead (a round of
    margin) leaves the rows' multipliers at :math:`\mu_0 / s^e \ll \kappa` and :math:`z_\zeta` at
    :math:`\kappa`, so :math:`\zeta z_\zeta` (~7 at the busiest 874-job window, where :math:`\zeta`
    starts at 142 rounds) was most of the start's complementarity, and the first Newton steps moved
    :math:`\zeta` by hundreds of rounds and were cut to ~1e-3 by the box: 31 iterations there, 23
    from this start. The root is used when it is below :math:`\ell + 1` (with a small :math:`\kappa`
    it is far above, and :math:`\ell + 1` is kept)."""
    excess = np.where(data.efficient, running - data.leftover, np.inf)
    lowest = max(0.0, -float(excess.min(initial=np.inf)))
    margin = lowest + 1.0

    def surplus(zeta: float) -> float:
        return mu0 * (float((1.0 / (excess + zeta)).sum()) + 1.0 / zeta) - data.kappa

    if surplus(margin) >= 0:
        return margin
    # Above the root: the term of the job at `lowest` (or 1 / zeta when lowest = 0) alone is
    # 2 kappa at lowest + mu0 / (2 kappa), which is then below `margin` (surplus(margin) < 0 needs
    # mu0 < kappa).
    return float(scipy.optimize.brentq(surplus, lowest + mu0 / (2.0 * data.kappa), margin, rtol=1e-12))
