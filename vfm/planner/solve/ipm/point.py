r"""The interior point's iterate (`vfm.planner.solve.ipm.method`): its variables, grouped by the constraints
they belong to, and what the stopping test, the line search and the Newton system need of it.

`evaluate` computes all of that in one pass over the (n, T) entries (a compiled kernel,
`vfm.planner._kernels.entries`): the value, the utilities, the dual residuals (with the logarithms'
multipliers and at the true gradient), the complementarity, the merit and the certified gap.
`primal` sets the logarithms' multipliers to their values without a second pass.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np

from vfm._validation import FloatArray
from vfm.planner._kernels import entries
from vfm.planner.solve.scaled_program import ScaledProgram, cost_value, gap_from_terms, row_terms, with_cost

#: The logarithms' multipliers are replaced by their values budgets / U once every row w U = budgets is met
#: within this fraction (`settled`): from there the primal Newton step converges as fast, and the
#: certified gap, which takes the true gradient, no longer lags the iterate.
_LOG_SETTLED = 1e-2


@dataclass(frozen=True)
class Longest:
    """The efficiency term's variable and rows at one point (or a step of them)."""

    zeta: float  # the longest leftover, rounds
    s_e: FloatArray  # (n,) slacks of the efficiency rows
    z_e: FloatArray  # (n,) their multipliers
    z_zeta: float  # multiplier of zeta >= 0

    def moved(self, step: Longest, alpha: float) -> Longest:
        """This point moved by `alpha` times `step`."""
        return Longest(self.zeta + alpha * step.zeta, self.s_e + alpha * step.s_e, self.z_e + alpha * step.z_e,
                       self.z_zeta + alpha * step.z_zeta)

    def complementarity(self) -> float:
        return float(self.s_e @ self.z_e) + self.zeta * self.z_zeta


@dataclass(frozen=True)
class TypeRows:
    r"""The one-type-per-round rows at one point (or a step of them): per job and round with several
    active goods, :math:`\sum_{t \in r} y_{it} + s_{ir} = u_r`, :math:`s, z \ge 0`."""

    s: FloatArray  # (n, R) slacks; 1 off `ScaledProgram.shared`
    z: FloatArray  # (n, R) multipliers; 0 off `ScaledProgram.shared`

    def moved(self, step: TypeRows, alpha: float) -> TypeRows:
        """This point moved by `alpha` times `step`."""
        return TypeRows(self.s + alpha * step.s, self.z + alpha * step.z)

    def complementarity(self) -> float:
        return float(np.vdot(self.s, self.z))


class Slacks(NamedTuple):
    """The slacks of the box's upper bounds, of the capacity rows and of the FTF rows at one point."""

    s_hi: FloatArray  # (n, T) u - y; 1 off `active`
    s_cap: FloatArray  # (T,) 1 - sum_i g y
    s_f: FloatArray  # (n,) 1 off the constrained jobs


class Multipliers(NamedTuple):
    """The multipliers of the box's bounds, of the capacity rows (their prices) and of the FTF rows at one
    point."""

    z_lo: FloatArray  # (n, T) of y >= 0; 0 off `active`
    z_hi: FloatArray  # (n, T) of y <= u; 0 off `active`
    prices: FloatArray  # (T,)
    z_f: FloatArray  # (n,) 0 off the constrained jobs


@dataclass(frozen=True)
class Point:
    """An iterate and what the stopping test, the line search and the Newton system need of it."""

    y: FloatArray  # (n, T); 0 off `active`
    s_hi: FloatArray  # (n, T) u - y; 1 off `active`
    s_cap: FloatArray  # (T,) 1 - sum_i g y
    z_lo: FloatArray  # (n, T); 0 off `active`
    z_hi: FloatArray  # (n, T); 0 off `active`
    prices: FloatArray  # (T,)
    s_f: FloatArray  # (n,) slacks of the FTF rows on constrained jobs; 1 elsewhere
    ftf_residual: FloatArray  # (n,) sum_t y_it - m_i - s_f (the rows may start violated); 0 elsewhere
    z_f: FloatArray  # (n,) multipliers of the FTF constraints; 0 elsewhere
    longest: Longest  # zeta, the efficiency rows' slacks and multipliers (zeta 1, slacks 1, multipliers 0 without)
    type_rows: TypeRows  # the one-type-per-round rows' slacks and multipliers
    u: FloatArray  # (n, S) utilities
    value: float  # F(y) + kappa zeta
    dual_residual: FloatArray  # (n, T) with the logarithms' multipliers w; 0 off `active`
    zeta_residual: float  # kappa - sum z_e - z_zeta; 0 without the efficiency term
    complementarity: float
    merit: float  # complementarity + |dual residual| . max(y, 1 - y) + the log residual
    gap: float  # the certified gap (`vfm.planner.solve.ipm.method`'s module docstring)
    w: FloatArray  # (n, S) the logarithms' multipliers (`evaluate`)
    primal_residual: FloatArray  # (n, T) the dual residual at w = budgets / U (the true gradient of F); 0 off `active`
    log_residual: float  # sum |w U - budgets|
    inexact: float = 0.0  # relative residual of the missed solves of the direction that reached it; 0 if none


def evaluate(data: ScaledProgram, y: FloatArray, slacks: Slacks, multipliers: Multipliers, longest: Longest,
             type_rows: TypeRows, w: FloatArray | None) -> Point:
    """Everything the iteration needs at one point; O(n S T), one pass over the entries.

    `w` (n, S) are the logarithms' multipliers (`vfm.planner.solve.ipm.method`'s module docstring, Iterations;
    None: their values budgets / U, the primal point alone)."""
    s_hi, s_cap, s_f = slacks
    z_lo, z_hi, prices, z_f = multipliers
    n, scenarios, rounds = data.progress.shape
    zeta, z_e = longest.zeta, longest.z_e
    u, dual_residual, running = np.empty((n, scenarios)), np.empty((n, rounds)), np.empty(n)
    primal_residual = np.empty((n, rounds))
    value, bounds_complementarity, bounds_residual, bounds_gap, log_residual = entries.evaluate_entries(
        data.progress, data.base, data.budgets, data.spread, data.active, data.g, y, s_hi, z_lo, z_hi, prices,
        with_cost(data, row_terms(data, z_f + z_e, type_rows.z)), data.pace, u if w is None else w, w is not None, u,
        dual_residual, primal_residual, running)
    if w is None:
        w = data.budgets[:, None] / u
    reduced_zeta = data.kappa - float(z_e.sum())  # the gradient of the Lagrangian in zeta, before z_zeta
    zeta_residual = reduced_zeta - longest.z_zeta if data.kappa else 0.0
    type_complementarity = type_rows.complementarity() if data.typed else 0.0
    complementarity = bounds_complementarity + float(s_cap @ prices + s_f @ z_f) + longest.complementarity() \
        + type_complementarity
    ftf_residual = np.where(data.constrained, running - data.floor - s_f, 0.0)
    merit = complementarity + bounds_residual + abs(zeta_residual) * max(zeta, data.zeta_max) \
        + float(np.abs(ftf_residual).sum()) + log_residual
    gap = gap_from_terms(data, bounds_gap, type_complementarity, (s_cap, prices), (s_f, ftf_residual, z_f),
                         (zeta, longest.s_e, z_e))
    return Point(y, s_hi, s_cap, z_lo, z_hi, prices, s_f, ftf_residual, z_f, longest, type_rows, u,
                 value + cost_value(data, y) + data.kappa * zeta, dual_residual, zeta_residual, complementarity, merit,
                 gap, w, primal_residual, log_residual)


def settled(data: ScaledProgram, point: Point) -> bool:
    r"""Whether every logarithm's row of `point` is met within `_LOG_SETTLED`: :math:`|w U - \beta| \le
    \epsilon \beta` (then its multipliers may be replaced by their values :math:`\beta / U`, `primal`)."""
    return bool((np.abs(point.w * point.u - data.budgets[:, None]) <= _LOG_SETTLED * data.budgets[:, None]).all())


def primal(data: ScaledProgram, point: Point) -> Point:
    r"""`point` with the logarithms' multipliers at their values :math:`\beta / U` (the primal Newton step's).

    What `evaluate` with ``w=None`` returns, bit for bit, without its pass over the entries: the
    value, the utilities, the complementarity and the gap do not depend on :math:`w`, the dual
    residual becomes `point`'s primal one, and only the merit's residual term is summed again
    (`vfm.planner._kernels.box_residual`, in `entries.evaluate_entries`' order)."""
    bounds_residual = entries.box_residual(data.active, point.primal_residual, point.y, point.s_hi)
    zeta_term = abs(point.zeta_residual) * max(point.longest.zeta, data.zeta_max)
    merit = point.complementarity + bounds_residual + zeta_term + float(np.abs(point.ftf_residual).sum()) + 0.0
    return replace(point, dual_residual=point.primal_residual, merit=merit, w=data.budgets[:, None] / point.u,
                   log_residual=0.0, inexact=0.0)


def relative_gap(point: Point) -> float:
    """The certified gap of `point` relative to 1 + |objective| (the stopping test's measure)."""
    return point.gap / (1.0 + abs(point.value))


#: A point whose merit (complementarity plus the dual residual times the box) is more than this many
#: times its complementarity is dominated by its dual residual (`residual_dominated`). The dual
#: residual counts once per entry: on a window of many jobs sharing every round (the optimum interior
#: in every entry) the start's is proportional to the jobs per GPU, and steps of 0.99 keep the ratio,
#: 5,500 at 10,000 jobs on 256 GPUs where the Newton system has no digits left. Of the reproductions'
#: windows (120 to 900 jobs, 10,000 tiled on 2,560 GPUs) only the Shockwave configuration's first
#: iterates exceed 100 (the efficiency rows' residual), in as many iterations as without the rule.
_RESIDUAL_RATIO = 100.0


def residual_dominated(point: Point) -> bool:
    """Whether the dual residual dominates the merit of `point` (`_RESIDUAL_RATIO`)."""
    return point.merit > _RESIDUAL_RATIO * point.complementarity
