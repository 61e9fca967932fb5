r"""The interior point's stopping test and the measure its iterations are judged by
(`vfm.planner.solve.ipm.method`'s module docstring, Stopping), with a second certificate: the same point at
the capacity prices that minimize its certified gap.
"""

from __future__ import annotations

import time

import numpy as np

from vfm._numerics.interior_point import Outcome
from vfm.equilibrium import Status
from vfm.planner.solve.ipm.point import (
    Multipliers,
    Point,
    Slacks,
    evaluate,
    relative_gap,
    residual_dominated,
    settled,
)
from vfm.planner.solve.scaled_program import ScaledProgram, gap_minimizing_prices, objective, row_terms

#: A residual-dominated point is also certified at the gap-minimizing prices (`Repricing`) once its
#: own certified relative gap is within this factor of the tolerance ...
_REPRICE_WITHIN = 1e3
#: ... or when its own gap is more than this many times the least measured so far.
_REPRICE_JUMP = 2.0


class Repricing:
    r"""The stopping test and the iterations' measure, with a second certificate for residual-dominated
    points: the same point at the capacity prices that minimize its certified gap (`gap_minimizing_prices`).

    Any prices :math:`\lambda \ge 0` certify a gap (`vfm.planner.solve.ipm.method`'s module docstring, Stopping); the
    iterate's own lag the optimal ones by the dual residual, which counts once per entry. At 10,000 jobs on 256
    GPUs the iterate's prices certify 1.1e-6 at the point where the Newton system has no digits
    left, the gap-minimizing ones 3.4e-8 at the same point; at 30,000 jobs and more the first step's
    own gap is 18 to 60 times the start's (whose prices are the gap-minimizing ones), which
    `vfm._numerics.interior_point.iterate` would take for a stall. The prices cost one sort of the (n, T)
    entries (costly at tens of thousands of jobs), so they are computed only for points that are
    residual-dominated or were reached by a direction whose solves missed their tolerance (the
    Newton system running out of digits), within `_REPRICE_WITHIN` of the tolerance or
    `_REPRICE_JUMP` above the least gap; and once for the point reported when the iterations end
    short of the tolerance before the deadline.
    """

    def __init__(self, data: ScaledProgram, tol: float, deadline: float | None) -> None:
        self.data, self.tol, self.deadline = data, tol, deadline
        self.last: tuple[Point, Point] | None = None  # a point and its repricing
        self.measured: list[tuple[Point, float]] = []  # `iterate` measures the new point and the best one
        self.least = np.inf

    def measure(self, point: Point) -> float:
        """The certified gap of `point`, or, when that is more than `_REPRICE_JUMP` times the least
        measured so far, the smaller of it and the gap at the gap-minimizing prices; the least so far
        instead of a larger value while its logarithms' rows are far from met."""
        for seen, value in self.measured:
            if seen is point:
                return value
        value = point.gap
        if not value <= _REPRICE_JUMP * self.least:
            value = min(value, self.better(point, jump=True).gap)
        if not value <= self.least and (point.log_residual > point.complementarity or not settled(self.data, point)):
            # Its logarithms' rows are far from met (`vfm.planner.solve.ipm.method`'s module docstring, Iterations):
            # the certificate, at the true gradient, lags the iterate, which counts as neither better than
            # the best nor a stall.
            value = self.least
        self.least = min(self.least, value)
        self.measured = [*self.measured[-1:], (point, value)]
        return value

    def converged(self, point: Point) -> str | None:
        """What certifies `point` (the message's words), or None while it is not within the tolerance."""
        if relative_gap(point) <= self.tol:
            return f"certified relative gap {relative_gap(point):.1e}"
        better = self.better(point)
        if better is not point and relative_gap(better) <= self.tol:
            return f"certified relative gap {relative_gap(better):.1e} at the gap-minimizing prices"
        return None

    def better(self, point: Point, jump: bool = False, final: bool = False) -> Point:
        """`point` at the gap-minimizing prices where those certify a smaller gap, its own is finite and
        within `_REPRICE_WITHIN` of the tolerance (with `jump`: whatever it is), and it is
        residual-dominated or inexact (with `final`: whatever it is); else `point`."""
        near = jump or relative_gap(point) <= _REPRICE_WITHIN * self.tol
        if not (near and np.isfinite(point.gap) and (residual_dominated(point) or point.inexact > 0 or final)):
            return point
        if self.last is None or self.last[0] is not point:
            self.last = point, _repriced(self.data, point)
        repriced = self.last[1]
        return repriced if repriced.gap < point.gap else point

    def outcome(self, outcome: Outcome[Point]) -> tuple[Point, Status, str]:
        """The point to report, its status and message: the outcome's point at the gap-minimizing
        prices when those certify it better (`better`), `Status.OPTIMAL` when they certify the tolerance."""
        in_time = self.deadline is None or time.perf_counter() < self.deadline
        best = self.better(outcome.point, final=outcome.status != Status.OPTIMAL and in_time)
        if best is outcome.point or outcome.status == Status.OPTIMAL or relative_gap(best) > self.tol:
            return best, outcome.status, outcome.message
        return best, Status.OPTIMAL, (f"{outcome.message}; its best iterate is certified at relative gap "
                                      f"{relative_gap(best):.1e} at the gap-minimizing prices")


def _repriced(data: ScaledProgram, point: Point) -> Point:
    """`point` with the capacity prices that minimize its certified gap (its other multipliers kept)."""
    _, gradient, _ = objective(data, point.y)
    rows = row_terms(data, point.z_f + point.longest.z_e, point.type_rows.z)
    prices = gap_minimizing_prices(gradient - rows, data.g, point.y, point.s_hi, point.s_cap)
    return evaluate(data, point.y, Slacks(point.s_hi, point.s_cap, point.s_f),
                    Multipliers(point.z_lo, point.z_hi, prices, point.z_f), point.longest, point.type_rows, point.w)
