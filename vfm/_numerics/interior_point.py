"""The interior-point driver shared by vfm's two structure-exploiting solvers.

`vfm.solvers.schur_ipm` (markets) and `vfm.planner.solve.ipm` (planning programs) differ in their
variables and Newton systems; what an iteration does with them is the same and lives here once:
the loop (`iterate`: stopping test, best iterate, stall detection, the solver's exhausted-step
test, iteration limit, messages), the step to the boundary (`largest_step`, `STEP_TO_BOUNDARY`)
and Mehrotra's centring (`centring`). Each solver supplies its start, its step and how it
measures and describes a point.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np

from vfm._numerics.jit import kernel
from vfm._validation import FloatArray
from vfm.equilibrium import Status

#: A step stops this fraction of the way to the nearest boundary.
STEP_TO_BOUNDARY = 0.99
#: A measure this many times the best so far means the Newton systems have run out of digits:
#: later steps only do harm, and the best iterate is returned.
STALL_FACTOR = 10.0
#: Conjugate-gradient refinement of the Newton systems: at most this many steps, to this relative
#: max-norm residual.
CG_STEPS = 25
CG_TOLERANCE = 1e-10
#: Inexact Newton (`cg_tolerance`): a solve's residual need only be this fraction of the mean
#: complementarity mu, relative to its right-hand side within `INEXACT_RANGE`.
INEXACT_FRACTION = 0.1
INEXACT_RANGE = (1e-11, 1e-6)


def cg_tolerance(mu: float, scale: float) -> float:
    """The conjugate gradients' relative tolerance for a Newton system at mean complementarity
    `mu` whose right-hand side has max-norm `scale`: an inexact Newton rule.

    ``clip(INEXACT_FRACTION * mu / scale, *INEXACT_RANGE)``, i.e. a residual of at most a tenth
    of mu. A solve's residual becomes the next iterate's dual residual, which the merit and the
    certified gap count entry by entry next to the complementarity: far from the optimum a
    looser residual than 1e-10 of the right-hand side serves as well and costs no
    conjugate-gradient step where the preconditioner alone reaches it (`vfm.planner.solve.ipm.method`;
    `vfm.solvers.schur_ipm` keeps the fixed `CG_TOLERANCE`); near it a fixed 1e-10 left a dual residual
    larger than the complementarity, and the certified gap stalled just above the tolerance
    asked for (a 10,000-job window stopped at 1.0e-9 to 1.2e-9 of the 1e-9 asked, depending on
    the rounding of its Gram matrix; with this rule it converges to 1.1e-10 to 2.1e-10). The
    certificate is computed from the point, not from the solves.
    """
    low, high = INEXACT_RANGE
    return min(high, max(low, INEXACT_FRACTION * mu / scale)) if scale > 0 else high

Point = TypeVar("Point")


@dataclass(frozen=True)
class Outcome(Generic[Point]):
    """How the iterations ended: the point to report (the best seen unless converged), at which
    iteration, the status and a message that names the solver."""

    point: Point
    iteration: int
    status: Status
    message: str


@dataclass(frozen=True)
class Method(Generic[Point]):
    """What a solver supplies to `iterate`.

    Attributes
    ----------
    name : str
        Starts every message (``"saa-ipm"``).
    step : callable
        ``point -> next point``, or None when no step is usable (none keeps the iterate
        interior, or none decreases the solver's merit); may raise
        `numpy.linalg.LinAlgError` when its Newton system cannot be factored.
    measure : callable
        ``point -> float``, smaller is better (a certified gap, or complementarity and residual);
        the best iterate and stalls are judged on it.
    converged : callable
        ``(point, iteration) -> str or None``: what certifies convergence (for the message), or
        None while not converged.
    describe : callable
        ``point -> str``, how far a point is from converged (``"certified relative gap 1e-7"``).
    asked : str
        The tolerance asked for, as the messages state it.
    trace : callable, optional
        Called with ``(point, iteration)`` before each test (``verbose=True``).
    exhausted : callable, optional
        ``(previous, point) -> bool``: True when the step from `previous` to `point` shows that
        the Newton systems have no digits left (an inaccurate step that gained little), so that
        further steps would only cost time; the iterations then end with the best point.
    """

    name: str
    step: Callable[[Point], Point | None]
    measure: Callable[[Point], float]
    converged: Callable[[Point, int], str | None]
    describe: Callable[[Point], str]
    asked: str
    trace: Callable[[Point, int], None] | None = None
    exhausted: Callable[[Point, Point], bool] | None = None


def iterate(start: Point, method: Method[Point], max_iter: int, deadline: float | None = None) -> Outcome[Point]:
    """Run `method` from `start` until it converges, stalls, finds no step or reaches `max_iter`
    (or the `time.perf_counter` instant `deadline`: no step starts that the last one's duration
    says would end past it, so a deadline is kept to within the variation of one step).

    Returns the converged point (`Status.OPTIMAL`), else the best point by `method.measure`:
    `Status.INACCURATE` when the measure rose `STALL_FACTOR` above the best, a step showed the
    Newton systems exhausted (`Method.exhausted`), no step was found or the Newton system could
    not be factored; `Status.ITERATION_LIMIT` after `max_iter` steps or past `deadline` (the
    message then says "time limit"). Every test is NaN-safe: a NaN measure stalls, never converges.
    """
    point, best, best_iteration, previous = start, start, 0, None
    step_s = 0.0  # the last step's duration
    for iteration in range(max_iter + 1):
        if method.trace is not None:
            method.trace(point, iteration)
        certificate = method.converged(point, iteration)
        if certificate is not None:
            return Outcome(point, iteration, Status.OPTIMAL,
                           f"{method.name} converged in {iteration} iterations ({certificate})")
        value = method.measure(point)
        if not value <= STALL_FACTOR * method.measure(best):
            return Outcome(best, best_iteration, Status.INACCURATE,
                           f"{method.name} stalled after {best_iteration} iterations at "
                           f"{method.describe(best)} (asked for {method.asked})")
        if value < method.measure(best):
            best, best_iteration = point, iteration
        if previous is not None and method.exhausted is not None and method.exhausted(previous, point):
            return Outcome(best, best_iteration, Status.INACCURATE,
                           f"{method.name} stopped after {iteration} iterations: its Newton systems have no digits "
                           f"left (an inaccurate step gained little); at {method.describe(best)} "
                           f"(asked for {method.asked})")
        if iteration == max_iter:
            break
        began = time.perf_counter()
        if deadline is not None and began + step_s > deadline:
            return Outcome(best, best_iteration, Status.ITERATION_LIMIT,
                           f"{method.name} reached its time limit after {iteration} iterations; at "
                           f"{method.describe(best)} (asked for {method.asked})")
        try:
            trial = method.step(point)
        except np.linalg.LinAlgError as error:
            # Should not happen with the regularized preconditioners; never raise on a bad input.
            return Outcome(best, best_iteration, Status.INACCURATE,
                           f"{method.name} could not factor its Newton system at iteration {iteration} ({error}); "
                           f"stopped at {method.describe(best)} (asked for {method.asked})")
        if trial is None:
            return Outcome(best, best_iteration, Status.INACCURATE,
                           f"{method.name} found no usable step at iteration {iteration}; "
                           f"stopped at {method.describe(best)} (asked for {method.asked})")
        previous, point, step_s = point, trial, time.perf_counter() - began
    return Outcome(best, best_iteration, Status.ITERATION_LIMIT,
                   f"{method.name} stopped at max_iter={max_iter} before converging; at {method.describe(best)} "
                   f"(asked for {method.asked})")


def largest_step(values: Sequence[FloatArray], changes: Sequence[FloatArray]) -> float:
    """Largest step in [0, inf) keeping every ``value + step * change`` nonnegative (inf if none falls).

    Entries that do not fall are left out, so constraints a solver keeps at value 0 and change 0
    (absent ones) never block.
    """
    if len(values) != len(changes):
        raise ValueError(f"largest_step: {len(values)} values and {len(changes)} changes")
    if not values:
        return float("inf")
    flat = tuple(np.ravel(np.asarray(array, dtype=np.float64)) for array in (*values, *changes))
    blocking = _blocking_rate(flat[:len(values)], flat[len(values):])
    return 1.0 / blocking if blocking > 0 else float("inf")


@kernel
def _blocking_rate(values: tuple[FloatArray, ...], changes: tuple[FloatArray, ...]) -> float:
    """max of -change / value over the falling entries of every pair: 1 / (the step at which the
    first hits 0).

    Compiled, all pairs in one call: one pass instead of NumPy's four (a division, a comparison, a
    masked maximum), and one call instead of one per pair, on the arrays of every iteration."""
    rate = 0.0
    for pair in range(len(values)):
        value, change = values[pair], changes[pair]
        for k in range(value.shape[0]):
            if change[k] < 0:
                rate = max(rate, -change[k] / value[k])
    return rate


def centring(moved_complementarity: float, complementarity: float) -> float:
    r"""Mehrotra's centring parameter :math:`\sigma = \min(1, (\mu_{\text{aff}} / \mu)^3)` from the
    complementarity after the affine (predictor) step and before it."""
    return min(1.0, (moved_complementarity / complementarity) ** 3)
