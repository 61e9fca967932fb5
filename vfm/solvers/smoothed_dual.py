r"""Newton's method on the smoothed Eisenberg-Gale dual, for wide plain markets.

A plain market (linear utilities; no caps, base utility or utility cap) with many goods is what
the interior-point backends are slowest on: `schur-ipm`'s price block is (K, K) and every buyer
adds a dense term to it at every one of its iterations. This backend works on the dual alone,
K variables, and most of its Newton steps touch only the pairs near each buyer's best
bang-per-buck.

On the scaled program (`vfm.program`: supply 1 per good-period, budgets :math:`\hat B` summing to
1, entries :math:`e = (i, k)` with utility :math:`\hat u_e > 0`) the dual of the Eisenberg-Gale
program is, with log-prices :math:`q_k = \log p_k`,

.. math::

    \min_q \; \sum_k e^{q_k} + \sum_i \hat B_i \max_{e \in i} (\log \hat u_e - q_k),

convex and piecewise smooth. Replacing each max by :math:`\tau \log \sum_{e \in i}
\exp((\log \hat u_e - q_k) / \tau)` makes it smooth; its stationary point is an equilibrium of a
market in which buyer i spends the share :math:`\pi_e` (the softmax of its log bang-per-buck at
temperature :math:`\tau`) of its budget on each good: every good is sold exactly and every budget
spent, and the duality gap of that pair is at most :math:`\tau \log(\text{entries per buyer})`.

`solve_smoothed` follows the stationary points as :math:`\tau` falls from 1 by `SHRINK` per stage
to ``0.01 tol / log(most entries of a buyer)`` (`final_temperature`): Newton's method with a
backtracking line search in each stage (the Hessian is :math:`\mathrm{diag}(e^q) + \tau^{-1}
\sum_i \hat B_i (\mathrm{diag}\,\pi_i - \pi_i \pi_i^T)`, a (K, K) Cholesky), and from one stage to
the next the tangent of the path
(one more solve with the same factor), which puts the next stage's start within a few Newton
steps of its end. Once :math:`\tau` is small, pairs far below a buyer's best bang-per-buck carry
no weight: the NumPy engine drops them from a stage and checks afterwards that none came back.

The answer is the last stage's market, cleared at the buyers' spending: optimal when its exact
duality gap is within ``tol`` (a few more Newton steps at the last temperature if needed), which
`vfm.solve`'s certificate checks again; `vfm.solve` then polishes it to the exact equilibrium like any
backend's (`vfm.nswot.polish`): with :math:`\tau` far below the smallest gap between a buyer's
best and second-best bang-per-buck, the pairs that trade are the equilibrium's support.

The continuation is written once (`solve_smoothed`); an engine does the array work: NumPy here
(`NumpyEngine`, sparse over the entries), JAX in `vfm.solvers.smoothed_dual_jax` (dense, for a GPU).
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from vfm.equilibrium import Status
from vfm.program import ScaledProgram
from vfm.solvers.base import (
    COMMON_OPTIONS,
    MARKET_FEATURES,
    Capabilities,
    OptionKind,
    Problem,
    Solution,
    check_options,
)

#: The features the backends handle: several goods per period and nothing else (a plain market).
FEATURES: frozenset[str] = MARKET_FEATURES & {"several_goods_per_period"}
#: Default relative duality gap of the answer (checked on its exact gap, `relative_gap`).
DEFAULT_TOL = 1e-7
#: Default Newton steps in all stages together.
DEFAULT_MAX_ITER = 500
#: Factor by which the temperature falls from one stage to the next.
SHRINK = 0.1
#: A stage ends when the Newton decrement (squared) is below this times its temperature.
CENTERED = 1e-6
#: The last stage's threshold when its point's gap is above tol (in place of `CENTERED`): near
#: rounding level.
REFINED = 1e-16
#: The path ends this far below the temperature whose gap bound is tol: the gap is within tol
#: sooner, but the polish needs a temperature well below the smallest margin by which a buyer
#: prefers its best good to a good it does not buy (a 100,000 x 400 market's support was not
#: found at 1.8e-9 and was at 1.8e-10). So low, rounding in the log bang-per-buck (about 1e-15
#: over the temperature, relative to each share) can keep the market from clearing to tol (a
#: 1,000 x 400 market's gap stayed at 1.7e-7): the answer is then inaccurate, and polished.
BELOW_BOUND = 0.01
#: Newton steps at most in one stage, and in the last temperature's further steps.
STAGE_STEPS = 60
REFINE_STEPS = 10
#: Pairs more than this many temperatures of the previous stage below their buyer's best
#: bang-per-buck are left out of a stage (their weight is below exp(-30) once checked).
DROPPED = 30.0
#: The registry prefers these backends for a plain market with at least this many good-periods
#: and this many (buyer, good-period) pairs (`wide`; docs/solvers.md says where they were measured).
WIDE_GOODS = 100
WIDE_PAIRS = 100_000

#: Options of both backends (`Capabilities.options`).
OPTIONS: tuple[tuple[str, OptionKind], ...] = (*COMMON_OPTIONS, ("time_limit", "seconds"))


def wide(problem: Problem) -> bool:
    """Whether the registry should prefer the smoothed dual for `problem`: a plain market with at
    least `WIDE_GOODS` good-periods and `WIDE_PAIRS` (buyer, good-period) pairs."""
    if problem.problem_kind != "market" or problem.features - FEATURES:
        return False
    n, m, periods = problem.shape  # type: ignore[attr-defined]
    return bool(m * periods >= WIDE_GOODS and n * m * periods >= WIDE_PAIRS)


@dataclass(frozen=True)
class Centered:
    """Where one stage's Newton steps stopped."""

    q: np.ndarray
    steps: int
    converged: bool


class Engine(Protocol):
    """The array work of the continuation, on one scaled program (see the module docstring)."""

    name: str

    def start(self) -> np.ndarray:
        """Log-prices of every buyer's budget spread evenly over its entries."""
        ...

    def center(self, q: np.ndarray, tau: float, previous: float, max_steps: int, centered: float) -> Centered:
        """Newton steps from `q` to the stationary point at temperature `tau`, until the Newton
        decrement is at most ``centered * tau`` (`previous` is the last stage's temperature, for
        the pairs an engine may leave out)."""
        ...

    def tangent(self, q: np.ndarray, tau: float) -> np.ndarray:
        """d q / d tau of the path at its point `q` of temperature `tau`."""
        ...

    def point(self, q: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """The scaled allocation over the program's entries and its prices, from the buyers'
        shares at `q` (`cleared`)."""
        ...


@dataclass(frozen=True)
class Settings:
    """The options of a solve, checked by `vfm.solve` against `OPTIONS`."""

    tol: float = DEFAULT_TOL
    max_iter: int = DEFAULT_MAX_ITER
    time_limit: float = math.inf

    @classmethod
    def of(cls, options: dict[str, Any]) -> Settings:
        return cls(float(options.get("tol", DEFAULT_TOL)), int(options.get("max_iter", DEFAULT_MAX_ITER)),
                   float(options.get("time_limit", math.inf)))


def final_temperature(program: ScaledProgram, tol: float) -> float:
    """`BELOW_BOUND` times the temperature whose gap bound, tau * log(most entries of a buyer), is
    `tol`."""
    most = int(np.bincount(program.buyer).max())
    return BELOW_BOUND * tol / math.log(max(most, 2))


def solve_smoothed(engine: Engine, program: ScaledProgram, settings: Settings) -> Solution:
    """Follow the smoothed dual's path down to `final_temperature` (module docstring); optimal if
    the cleared point's gap is within ``settings.tol``."""
    started = time.perf_counter()
    end = final_temperature(program, settings.tol)
    q, tau, previous, steps, stages = engine.start(), 1.0, 1.0, 0, 0
    while True:
        stage = engine.center(q, tau, previous, min(STAGE_STEPS, settings.max_iter - steps), CENTERED)
        q, steps, stages = stage.q, steps + stage.steps, stages + 1
        if tau <= end or not stage.converged or time.perf_counter() - started > settings.time_limit:
            break
        following = max(tau * SHRINK, end)
        q = q + (following - tau) * engine.tangent(q, tau)
        previous, tau = tau, following
    z, prices = engine.point(q, tau)
    gap = relative_gap(program, z, prices)
    if gap > settings.tol and stage.converged and tau <= end and steps < settings.max_iter:
        # The answer's market clears at the buyers' spending, and its gap feels the clearing
        # error left in the Hessian's stiff directions: a few more Newton steps remove it.
        stage = engine.center(q, tau, tau, min(REFINE_STEPS, settings.max_iter - steps), REFINED)
        q, steps = stage.q, steps + stage.steps
        z, prices = engine.point(q, tau)
        gap = relative_gap(program, z, prices)
    how = (f"smoothed dual ({engine.name}): {stages} stages, {steps} Newton steps, temperature {tau:.1e}, "
           f"relative duality gap {gap:.1e}")
    if gap <= settings.tol:
        status = Status.OPTIMAL
    elif tau <= end:
        # Rounding keeps the gap above tol: an inaccurate answer, which `vfm.solve`'s polish still
        # takes to the exact equilibrium.
        status = Status.INACCURATE
        how += "; the last temperature's Newton steps stopped at rounding level above tol"
    else:
        status = Status.ITERATION_LIMIT
        how += "; stopped above tol: " + (
            "time_limit reached" if stage.converged else
            "max_iter reached" if steps >= settings.max_iter else
            f"a stage did not converge in {STAGE_STEPS} Newton steps")
    return Solution(z, prices, status, how, steps, time.perf_counter() - started, settings.tol)


# --- the NumPy engine ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Bids:
    """The bids: entries of the scaled program (or a subset), grouped by bidding buyer."""

    log_utility: np.ndarray  # (E,)
    good: np.ndarray  # (E,) supply row
    owner: np.ndarray  # (E,) index of the bidding buyer
    starts: np.ndarray  # (nb,) first entry of each bidder
    budget: np.ndarray  # (E,) the owner's scaled budget

    @classmethod
    def of(cls, log_utility: np.ndarray, good: np.ndarray, owner: np.ndarray, budgets: np.ndarray) -> Bids:
        starts = np.searchsorted(owner, np.arange(budgets.size))  # entries are sorted by bidder
        return cls(log_utility, good, owner, starts, budgets[owner])

    def subset(self, keep: np.ndarray, budgets: np.ndarray) -> Bids:
        return Bids.of(self.log_utility[keep], self.good[keep], self.owner[keep], budgets)


@dataclass(frozen=True)
class Smoothed:
    """The smoothed dual at one point: each pair's share of its buyer's budget and its log
    bang-per-buck below its buyer's best (the line search reads slopes, not values)."""

    share: np.ndarray
    below: np.ndarray


@dataclass
class NumpyEngine:
    """The continuation's array work in NumPy and SciPy, over the program's entries."""

    program: ScaledProgram
    name: str = "numpy"
    pairs: Bids = field(init=False)
    budgets: np.ndarray = field(init=False)
    goods: int = field(init=False)

    def __post_init__(self) -> None:
        program = self.program
        bidders, owner = program.bidders()
        self.budgets = program.weights[bidders]
        self.goods = int(program.traded.size)
        self.pairs = Bids.of(np.log(program.utility), program.supply_row, owner, self.budgets)

    def start(self) -> np.ndarray:
        return even_bids(self.program, self.pairs.owner, self.budgets)

    def smoothed(self, pairs: Bids, q: np.ndarray, tau: float) -> Smoothed:
        score = pairs.log_utility - q[pairs.good]
        best = np.maximum.reduceat(score, pairs.starts)
        below = score - best[pairs.owner]
        weight = np.exp(below / tau)
        total = np.add.reduceat(weight, pairs.starts)
        return Smoothed(weight / total[pairs.owner], below)

    def hessian(self, pairs: Bids, q: np.ndarray, share: np.ndarray, tau: float) -> np.ndarray:
        spend = pairs.budget * share
        hessian = np.diag(np.exp(q) + np.bincount(pairs.good, spend, minlength=self.goods) / tau)
        # The rank-one terms of every buyer: one dense product while most pairs carry weight,
        # a sparse one once the weight sits on a few pairs per buyer.
        weighted = np.sqrt(pairs.budget / tau) * share
        keep = share > 1e-17
        if keep.sum() > 0.1 * self.budgets.size * self.goods:
            dense = np.zeros((self.budgets.size, self.goods))
            dense[pairs.owner, pairs.good] = weighted
            hessian -= dense.T @ dense
        else:
            rows = sp.csr_matrix((weighted[keep], (pairs.owner[keep], pairs.good[keep])),
                                 shape=(self.budgets.size, self.goods))
            hessian -= (rows.T @ rows).toarray()
        return hessian

    def newton(self, pairs: Bids, q: np.ndarray, tau: float, max_steps: int, centered: float) -> Centered:
        steps = 0
        while steps < max_steps:
            at = self.smoothed(pairs, q, tau)
            gradient = self.gradient(pairs, q, at.share)
            factor = scipy.linalg.cho_factor(self.hessian(pairs, q, at.share, tau))
            step = -scipy.linalg.cho_solve(factor, gradient)
            decrement = float(-gradient @ step)
            steps += 1
            if decrement <= centered * tau:
                return Centered(q, steps, True)
            q = q + line_search(functools.partial(self.slope_along, pairs, q, step, tau)) * step
        return Centered(q, steps, False)

    def gradient(self, pairs: Bids, q: np.ndarray, share: np.ndarray) -> np.ndarray:
        return np.exp(q) - np.bincount(pairs.good, pairs.budget * share, minlength=self.goods)

    def slope_along(self, pairs: Bids, q: np.ndarray, step: np.ndarray, tau: float, size: float) -> float:
        moved = q + size * step
        return float(self.gradient(pairs, moved, self.smoothed(pairs, moved, tau).share) @ step)

    def center(self, q: np.ndarray, tau: float, previous: float, max_steps: int, centered: float) -> Centered:
        below = self.smoothed(self.pairs, q, tau).below
        keep = below > -DROPPED * previous
        if keep.all():
            return self.newton(self.pairs, q, tau, max_steps, centered)
        stage = self.newton(self.pairs.subset(keep, self.budgets), q, tau, max_steps, centered)
        # A dropped pair that came within DROPPED temperatures of its buyer's best would carry
        # weight: then the stage is run again on every pair.
        if (self.smoothed(self.pairs, stage.q, tau).below[~keep] > -DROPPED * tau).any():
            return self.newton(self.pairs, stage.q, tau, max_steps, centered)
        return stage

    def tangent(self, q: np.ndarray, tau: float) -> np.ndarray:
        pairs = self.pairs
        at = self.smoothed(pairs, q, tau)
        mean = np.add.reduceat(at.share * at.below, pairs.starts)
        sensitivity = np.bincount(pairs.good, pairs.budget * at.share * (at.below - mean[pairs.owner]),
                                  minlength=self.goods) / tau**2
        factor = scipy.linalg.cho_factor(self.hessian(pairs, q, at.share, tau))
        return -scipy.linalg.cho_solve(factor, sensitivity)

    def point(self, q: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
        spend = self.pairs.budget * self.smoothed(self.pairs, q, tau).share
        return cleared(spend, self.pairs.good, self.goods)


def relative_gap(program: ScaledProgram, z: np.ndarray, prices: np.ndarray) -> float:
    """The exact duality gap of a cleared point (`cleared`) divided by the budgets' sum: every
    good is sold and every budget spent, so only the buyers' regret remains,
    :math:`\\sum_i \\hat B_i \\log(\\hat B_i \\max_{e \\in i} (\\hat u_e / p_k) / U_i)`."""
    bidders, owner = program.bidders()
    budgets = program.weights[bidders]
    bang = program.utility / prices[program.supply_row]
    best = np.maximum.reduceat(bang, np.searchsorted(owner, np.arange(bidders.size)))  # entries by buyer
    utility = np.bincount(owner, program.utility * z)
    return float(budgets @ np.log(budgets * best / utility))


def even_bids(program: ScaledProgram, owner: np.ndarray, budgets: np.ndarray) -> np.ndarray:
    """Both engines' start: the log-prices of every bidder's budget spread evenly over its entries
    (`owner`: each entry's bidder, as `ScaledProgram.bidders` numbers them)."""
    counts = np.bincount(owner, minlength=budgets.size)
    bids = budgets[owner] / counts[owner]
    return np.log(np.bincount(program.supply_row, bids, minlength=program.traded.size))


def cleared(spend: np.ndarray, good: np.ndarray, goods: int) -> tuple[np.ndarray, np.ndarray]:
    """The market in which each pair's money is `spend`: every good priced at what is spent on it,
    so that every good is sold exactly and every budget spent (the scaled allocation, prices)."""
    prices = np.bincount(good, spend, minlength=goods)
    return spend / prices[good], prices


def line_search(slope: Any) -> float:
    """The Newton step's length: the longest of 1, 1/2, ... (at least 2**-40) at which the smoothed
    dual still decreases along the step (`slope`, its derivative along the step, is at most 0).

    The dual is convex, so that length decreases it; the test reads gradients, not values, whose
    differences fall below rounding once the temperature is small."""
    size = 1.0
    while size > 2.0**-40 and slope(size) > 0.0:
        size *= 0.5
    return size


@dataclass
class SmoothedDualBackend:
    """Newton's method on the smoothed Eisenberg-Gale dual, in NumPy (module docstring).

    For plain markets only (several goods per period, nothing else). The registry prefers it
    for wide plain markets (`wide`).

    Options
    -------
    tol : float
        Relative duality gap of the answer (default 1e-7): the last stage's temperature is
        ``0.01 tol / log(most pairs of a buyer)`` (`final_temperature`).
    max_iter : int
        Newton steps at most, all stages together (default 500).
    time_limit : float
        Seconds after which no further stage starts (default none).
    """

    name: str = "smoothed-dual"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        features=FEATURES, options=OPTIONS, preferred_when=wide))

    def prepare(self) -> None:
        pass  # nothing compiled

    def is_installed(self) -> bool:
        return True

    def solve(self, program: ScaledProgram, **options: Any) -> Solution:
        """Solve `program` with the declared `options` (class docstring).

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`).
        """
        check_options(self, options)
        with np.errstate(divide="ignore", over="ignore", under="ignore"):
            return solve_smoothed(NumpyEngine(program), program, Settings.of(options))
