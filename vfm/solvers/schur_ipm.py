r"""A primal-dual interior-point method whose linear algebra reduces to the price block.

The scaled NSWOT program (`vfm.program`) minimizes :math:`F(z) = -\sum_i w_i \log U_i(z)` over
linear inequalities :math:`G z \le g`: the supply rows (one per traded good-period, `K` in all),
:math:`z \ge 0`, the caps :math:`z \le \hat d` and the utility caps. Each Newton step solves

.. math:: H \Delta z = r, \qquad H = \nabla^2 F + G^\top D G, \quad D = \operatorname{diag}(y / s),

and `H` has a structure a generic conic solver does not see:

* :math:`\nabla^2 F = \sum_i \frac{w_i}{U_i^2} a_i a_i^\top`, taken in its primal-dual form
  :math:`\sum_i \frac{\nu_i}{U_i} a_i a_i^\top` (below), and a utility-cap row adds
  :math:`d_i a_i a_i^\top`: one rank-one term :math:`\rho_i a_i a_i^\top` per buyer, on that
  buyer's entries only;
* the bound rows add a diagonal :math:`\delta`;
* only the supply rows couple buyers: :math:`S^\top D_S S` with `S` the (K, nnz) incidence
  matrix.

So :math:`M = \operatorname{diag}(\delta) + \sum_i \rho_i a_i a_i^\top` is inverted buyer by buyer
(Sherman-Morrison), and the Woodbury identity leaves one dense (K, K) system, the Schur
complement on the prices, :math:`C = D_S^{-1} + S M^{-1} S^\top`. A step costs
:math:`O(n K^2 + K^3)` on a dense (n, K) grid of entries: for a 900-job, 20-round window, a
20 x 20 Cholesky factorization and a few passes over 900 x 20 arrays.

Numerics. An entry a buyer holds has :math:`\delta_e \to 0`, and plain Sherman-Morrison,
:math:`1/\delta_e - \gamma_i a_e^2/\delta_e^2`, then subtracts two huge numbers. The diagonal of
:math:`M_i^{-1}` is instead evaluated as
:math:`\delta_e^{-1} (1 + \rho_i \beta_{i,-e}) / (1 + \rho_i \beta_i)` with
:math:`\beta_{i,-e} = \sum_{f \ne e} a_f^2 / \delta_f` summed without the entry itself, and the
Newton system is solved by conjugate gradients on `H` applied from its definition, with the
Woodbury inverse as the preconditioner.

The log objective is handled like a barrier with weights :math:`w_i`: utility multipliers
:math:`\nu_i` (equal to :math:`w_i / U_i` at the optimum) are dual variables of the pairs
:math:`\nu_i U_i = w_i`, linearized by Newton and stepped with the other duals. Their curvature
:math:`\nu_i / U_i` replaces :math:`w_i / U_i^2`, which is right only while :math:`U_i` barely
moves: with it, long steps on degenerate markets (buyers with little to buy, binding utility caps)
left the dual residual behind and the method stalled.

Steps follow Mehrotra's predictor-corrector with one step length for primal and dual, from a
strictly feasible primal start that the method keeps feasible. It stops when complementarity
:math:`s^\top y` and the relative dual residual :math:`\|\nabla F + G^\top y\|_\infty` are below
`tol`, or when they stop improving (then the best iterate is returned as inaccurate);
`vfm.solve` then certifies the result with the exact duality gap of `vfm.duality`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.linalg

from vfm._numerics.interior_point import (
    CG_STEPS,
    CG_TOLERANCE,
    STEP_TO_BOUNDARY,
    Method,
    centring,
    iterate,
    largest_step,
)
from vfm._numerics.linalg import preconditioned_cg
from vfm._validation import as_real_array, reject_masked
from vfm.duality import duality_gap
from vfm.equilibrium import Status
from vfm.market import VolatileFisherMarket
from vfm.parameters import Instance, check, check_length
from vfm.program import ScaledProgram
from vfm.solvers.base import COMMON_OPTIONS, Capabilities, Solution, check_options

_WARM_MIX = 0.6
_START_SHARE = 0.9
_DUAL_START = "stationary"
_REFINE_BELOW = 1e-4
#: Below this complementarity, the exact duality gap is evaluated as a stopping test.
_GAP_CHECK_BELOW = 1e-5
_WARM_MU = 0.1
#: Added to the diagonal of M in the Woodbury inverse only (H itself is applied exactly). When a
#: buyer is indifferent between goods (e.g. its utility cap binds), the bound curvatures of its
#: interior entries fall towards 0 and the exact inverse loses every digit; the regularized one
#: stays a good preconditioner for the conjugate gradients, which remove its bias.
_PRECONDITIONER_REGULARIZATION = 1e-8

Blocks = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class _Inequalities:
    """The system G z <= g of the scaled program on a dense (n, K) grid of entries.

    Row i, column k is buyer i's entry in traded good-period k; `active` marks the program's
    entries (the others are fixed at 0). Dense arrays make every per-buyer and per-row sum a
    contiguous reduction, which is what makes an iteration cheap: markets are dense arrays
    already, and a job window has an entry for nearly every (job, round).

    Blocks: 0 supply rows (K,), 1 nonnegativity (n, K), 2 caps below 1 (n, K), 3 utility caps
    (n,). Entries of a block where the constraint does not exist carry slack 1 and dual 0, so
    they never count.
    """

    utility: np.ndarray  # (n, K), 0 off the active entries
    active: np.ndarray  # (n, K) bool
    capped: np.ndarray  # (n, K) bool
    cap: np.ndarray  # (n, K), 1 where not capped
    saturable: np.ndarray  # (n,) bool
    headroom: np.ndarray  # (n,), 1 where not saturable
    n_constraints: int
    ones_rows: np.ndarray  # (K,) for sums over a buyer's entries
    ones_buyers: np.ndarray  # (n,) for sums over a good-period's entries
    dense: bool  # every (buyer, good-period) is an entry: masks by `active` can be skipped

    @classmethod
    def from_program(cls, program: ScaledProgram) -> _Inequalities:
        shape = (program.market.n_buyers, program.traded.size)
        saturable = np.isfinite(program.utility_cap)
        headroom = np.where(saturable, program.utility_cap - program.base, 1.0)
        # A buyer whose base utility already reaches its utility cap can gain nothing: its
        # entries are fixed at 0 (an interior point needs headroom > 0, and a zero slack would
        # make every scaling of its constraints 0 / 0).
        full = saturable & (headroom <= 0.0)
        keep = ~full[program.buyer]
        entries = (program.buyer[keep], program.supply_row[keep])
        utility = np.zeros(shape)
        utility[entries] = program.utility[keep]
        active = np.zeros(shape, dtype=bool)
        active[entries] = True
        upper = np.ones(shape)
        upper[entries] = np.minimum(program.upper[keep], 1.0)
        capped = active & (upper < 1.0)
        saturable = saturable & ~full
        headroom = np.where(saturable, headroom, 1.0)
        count = shape[1] + int(active.sum()) + int(capped.sum()) + int(saturable.sum())
        return cls(utility, active, capped, np.where(capped, upper, 1.0), saturable, headroom, count,
                   np.ones(shape[1]), np.ones(shape[0]), bool(active.all()))

    def per_buyer(self, values: np.ndarray) -> np.ndarray:
        """Sum over each buyer's entries, (n, K) -> (n,).

        A matrix-vector product: for short rows NumPy's axis reductions cost several times more.
        """
        return np.asarray(values @ self.ones_rows)

    def per_row(self, values: np.ndarray) -> np.ndarray:
        """Sum over each good-period's entries, (n, K) -> (K,)."""
        return np.asarray(self.ones_buyers @ values)

    def masked(self, blocks: Blocks) -> Blocks:
        """`blocks` with the entries of absent constraints set to 0."""
        return (
            blocks[0],
            blocks[1] if self.dense else blocks[1] * self.active,
            blocks[2] * self.capped,
            blocks[3] * self.saturable,
        )



    def slacks(self, z: np.ndarray) -> Blocks:
        bought = self.per_buyer(self.utility * z)
        return (
            1.0 - self.per_row(z),
            np.where(self.active, z, 1.0),
            np.where(self.capped, self.cap - z, 1.0),
            np.where(self.saturable, self.headroom - bought, 1.0),
        )

    def apply(self, dz: np.ndarray) -> Blocks:
        """G dz (dz is 0 off the active entries)."""
        return self.masked((self.per_row(dz), -dz, dz, self.per_buyer(self.utility * dz)))

    def apply_transpose(self, v: Blocks) -> np.ndarray:
        """G^T v, for v that is 0 on absent constraints."""
        out = v[0][None, :] - v[1] + v[2] + self.utility * v[3][:, None]
        return out if self.dense else np.asarray(out * self.active)

    def initial_point(self) -> np.ndarray:
        """A strictly feasible allocation: an equal share of each row, inside every cap."""
        z = _START_SHARE * self.active / np.maximum(self.per_row(self.active.astype(float)), 1.0)[None, :]
        z = np.where(self.capped, np.minimum(z, 0.5 * self.cap), z)
        bought = self.per_buyer(self.utility * z)
        shrink = np.where(self.saturable, np.minimum(1.0, 0.5 * self.headroom / np.maximum(bought, 1e-300)), 1.0)
        return np.asarray(z * shrink[:, None])


@dataclass(frozen=True)
class _NewtonSystem:
    """H = diag(delta) + sum_i rho_i a_i a_i^T + S^T diag(d_supply) S, factored for solves."""

    system: _Inequalities
    scaling: Blocks  # D = y / s, per block
    curvature: np.ndarray  # (n,) w_i / U_i^2
    q: np.ndarray  # (n, K) a / delta
    gamma_q: np.ndarray  # (n, K) gamma_i q_e with gamma_i = rho_i / (1 + rho_i beta_i)
    own: np.ndarray  # (n, K) diagonal of M^{-1}, evaluated stably
    top: np.ndarray  # (n, K) entries that carry their buyer's largest a^2 / delta
    factor: tuple[np.ndarray, bool]  # Cholesky factor of the (K, K) Schur complement

    @classmethod
    def build(cls, system: _Inequalities, scaling: Blocks, curvature: np.ndarray) -> _NewtonSystem:
        a, active = system.utility, system.active
        delta = scaling[1] + scaling[2] + _PRECONDITIONER_REGULARIZATION
        rho = curvature + scaling[3]
        inv_delta = np.where(active, 1.0 / np.where(active, delta, 1.0), 0.0)
        term = a * a * inv_delta
        beta = system.per_buyer(term)
        largest = term.max(axis=1)
        top = active & (term == largest[:, None])
        # beta without entry e, summed without cancellation: the largest terms are never
        # subtracted from a total that contains them.
        rest = system.per_buyer(np.where(top, 0.0, term))
        tied = system.per_buyer(top.astype(float)) - 1.0
        beta_without = np.where(top, (rest + tied * largest)[:, None], beta[:, None] - term)
        ratio = (1.0 + rho[:, None] * beta_without) / (1.0 + rho * beta)[:, None]
        own = inv_delta * ratio
        gamma = rho / (1.0 + rho * beta)
        q = a * inv_delta
        schur = -((q * gamma[:, None]).T @ q)  # -V diag(gamma) V^T
        schur[np.diag_indices_from(schur)] = system.per_row(own) + 1.0 / scaling[0]
        return cls(system, scaling, curvature, q, gamma[:, None] * q, own, top, scipy.linalg.cho_factor(schur))

    def apply_m_inverse(self, vec: np.ndarray) -> np.ndarray:
        """M^{-1} vec, entry e's own term taken from the stable diagonal."""
        qv = self.q * vec
        on_top = qv * self.top
        top_total = self.system.per_buyer(on_top)[:, None]
        rest = self.system.per_buyer(qv - on_top)[:, None]
        # The sum over the buyer's other entries, as rest + (top_total - qv): for a top entry
        # the bracket is exactly 0 (or the other tied top entries), so its own large term is
        # never added and subtracted; for the others the result is dominated by top_total.
        others = rest + (top_total - qv)
        return np.asarray(self.own * vec - self.gamma_q * others)

    def apply_h(self, vec: np.ndarray) -> np.ndarray:
        """H vec, from its definition (the residual of the iterative solve)."""
        system = self.system
        along = system.per_buyer(system.utility * vec)
        scaled = tuple(d * g for d, g in zip(self.scaling, system.apply(vec), strict=True))
        return np.asarray((self.curvature * along)[:, None] * system.utility + system.apply_transpose(scaled))

    def _woodbury(self, vec: np.ndarray) -> np.ndarray:
        first = self.apply_m_inverse(vec)
        correction = scipy.linalg.cho_solve(self.factor, self.system.per_row(first))
        return first - self.apply_m_inverse(correction[None, :] * self.system.active)

    def solve(self, rhs: np.ndarray, refine: bool = True) -> np.ndarray:
        """H^{-1} rhs by conjugate gradients preconditioned with the Woodbury inverse.

        H itself stays well conditioned near the solution, but M does not (its diagonal spans
        1/mu to mu), so the Woodbury inverse can lose most of its digits in the last iterations;
        it is built from M plus `_PRECONDITIONER_REGULARIZATION` on the diagonal, which keeps it
        a good preconditioner, and a few CG steps against H applied from its definition remove
        both the regularization's bias and the rounding.
        """
        if not refine:
            return self._woodbury(rhs)
        solution, _ = preconditioned_cg(self.apply_h, self._woodbury, rhs, CG_TOLERANCE, CG_STEPS)
        return solution


def _direction(system: _Inequalities, newton: _NewtonSystem, s: Blocks, y: Blocks, dual_residual: np.ndarray,
               target: Blocks, refine: bool = True) -> tuple[np.ndarray, Blocks, Blocks]:
    """Newton direction (dz, ds, dy) that drives s * y to `target`, block by block."""
    gap = system.masked(tuple(t - si * yi for t, si, yi in zip(target, s, y, strict=True)))
    rhs = -dual_residual - system.apply_transpose(tuple(g / si for g, si in zip(gap, s, strict=True)))
    dz = newton.solve(rhs, refine)
    g_dz = system.apply(dz)
    ds = tuple(-g for g in g_dz)
    dy = tuple(g / si + di * gd for g, si, di, gd in zip(gap, s, newton.scaling, g_dz, strict=True))
    return dz, ds, dy


@dataclass
class SchurIPMBackend:
    """The structure-exploiting interior-point backend (see the module docstring).

    Options
    -------
    tol : float
        Stopping tolerance on complementarity and the relative dual residual of the scaled
        program (default 1e-8); reported as the result's `accuracy`.
    max_iter : int
        Default 100.
    gap_tol : float
        Stop as soon as the exact relative duality gap of `vfm.duality` (evaluated once
        complementarity is small) is below this (default ``10 * tol``, ten times inside the
        certificate `vfm.solve` applies, ``100 * tol``).
    verbose : bool
        Print one line per iteration (complementarity, relative dual residual).
    warm_start : (allocation, prices), optional
        A previous solution in market units, shapes (n, m, T) and (m, T), e.g. the last
        re-plan's shifted by one round (`vfm.jobs.shift_rounds`), both finite. Projected into the
        feasible set and mixed 60 % with the cold start (see `_warm_point`; the mix and the starting
        centrality were tuned on consecutive Shockwave windows, benchmarks/warm_start.py). Another
        shape, NaN or an infinity raises a `vfm.errors.ValidationError` naming ``warm_start``
        before the solve (`checked_warm_start`).
    """

    name: str = "schur-ipm"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(options=(
        *COMMON_OPTIONS, ("gap_tol", "tolerance"), ("verbose", "flag"), ("warm_start", "any"),
    )))

    def prepare(self) -> None:
        pass  # nothing to load ahead of the first solve

    def is_installed(self) -> bool:
        return True

    def solve(self, program: ScaledProgram, **options: Any) -> Solution:
        """Solve `program` with the declared `options` (class docstring); a solver failure is
        reported in the status, never raised.

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`); a
            malformed ``warm_start`` (`checked_warm_start`).
        """
        check_options(self, options)
        tol = float(options.get("tol", 1e-8))
        gap_tol = float(options.get("gap_tol", 10.0 * tol))
        max_iter = int(options.get("max_iter", 100))
        warm_start = checked_warm_start(program.market, options.get("warm_start"))
        verbose = bool(options.get("verbose", False))
        started = time.perf_counter()
        try:
            return _interior_point(program, tol, gap_tol, max_iter, started, warm_start, verbose)
        except np.linalg.LinAlgError as exc:
            return Solution(None, None, Status.ERROR, f"schur-ipm failed: {exc}", -1,
                                  time.perf_counter() - started, tol)


def checked_warm_start(market: VolatileFisherMarket, warm_start: Any) -> tuple[np.ndarray, np.ndarray] | None:
    """`warm_start` as a finite (allocation, prices) pair of the market's shapes, or None; a
    `vfm.errors.ValidationError` naming ``warm_start`` otherwise. It is the caller's argument, so
    a malformed one is the caller's error, not the backend's failure: `vfm.solve` raises it."""
    if warm_start is None:
        return None
    check("warm_start", warm_start, Instance(tuple | list, f"a pair (allocation, prices) of shapes {market.shape} "
                                                         f"and {market.shape[1:]}"))
    check_length("warm_start", warm_start, 2, "part (allocation, prices)")
    allocation, prices = warm_start
    reject_masked(allocation, "warm_start's allocation")
    reject_masked(prices, "warm_start's prices")
    return (as_real_array(allocation, "warm_start's allocation", market.shape),
            as_real_array(prices, "warm_start's prices", market.shape[1:]))


def _warm_point(program: ScaledProgram, system: _Inequalities, warm_start: Any) -> tuple[np.ndarray, np.ndarray]:
    """The scaled (z, prices) of a previous (allocation, prices), pulled strictly inside.

    A warm start is a hint, so it is projected: entries into their bounds, columns and buyers
    scaled into supply and utility caps, then mixed with the cold start so that every slack is
    positive (an interior-point method cannot start on the boundary).
    """
    allocation, prices = warm_start
    market = program.market
    supply = market.supply.reshape(-1)[program.traded]
    allocation = np.asarray(allocation, dtype=np.float64).reshape(market.n_buyers, -1)[:, program.traded]
    z = np.clip(allocation / supply[None, :], 0.0, None) * system.active
    z = np.where(system.capped, np.minimum(z, system.cap), z)
    z = z / np.maximum(system.per_row(z), 1.0)[None, :]
    bought = system.per_buyer(system.utility * z)
    z = z * np.where(system.saturable, np.minimum(1.0, system.headroom / np.maximum(bought, 1e-300)), 1.0)[:, None]
    z = (1.0 - _WARM_MIX) * z + _WARM_MIX * system.initial_point()
    scaled = np.asarray(prices, dtype=np.float64).reshape(-1)[program.traded] * supply
    return z, np.maximum(scaled / market.budgets.sum(), 0.0)


def _relative_gap(program: ScaledProgram, z: np.ndarray, scaled_prices: np.ndarray) -> float:
    """The exact duality gap of `vfm.duality` at this iterate, over the budget total."""
    market = program.market
    gap = duality_gap(market, program.allocation(z[program.buyer, program.supply_row]),
                      program.prices(scaled_prices))
    return gap.total / float(market.budgets.sum())


def _dot(first: Blocks, second: Blocks) -> float:
    return sum(float(np.vdot(f, g)) for f, g in zip(first, second, strict=True))


def _interior_point(program: ScaledProgram, tol: float, gap_tol: float, max_iter: int, started: float,
                    warm_start: Any = None, verbose: bool = False) -> Solution:
    system = _Inequalities.from_program(program)
    weights, base, a = program.weights, program.base, system.utility
    n_constraints = system.n_constraints

    if warm_start is None:
        z = system.initial_point()
        s = system.slacks(z)
        if _DUAL_START == "stationary":
            u0 = base + system.per_buyer(a * z)
            marginal = (weights / u0)[:, None] * a
            prices = marginal.max(axis=0)
            floor = 1.0 / n_constraints
            y = system.masked((
                np.maximum(prices, floor / s[0]),
                np.maximum(prices[None, :] - marginal, floor / s[1]),
                floor / s[2],
                floor / s[3],
            ))
        else:
            y = system.masked(tuple(1.0 / (np.maximum(block, 1e-12) * n_constraints) for block in s))
    else:
        z, supply_prices = _warm_point(program, system, warm_start)
        s = system.slacks(z)
        # Bound duals on a central path of small mu; the supply duals start at the old prices.
        mu = _WARM_MU / n_constraints
        y = system.masked((np.maximum(supply_prices, mu / s[0]), *(mu / block for block in s[1:])))

    # The utility multipliers nu_i (w_i / U_i at the optimum) are stepped as dual variables of
    # the pairs nu_i U_i = w_i: their Newton curvature nu / U replaces the primal w / U^2, which
    # is only accurate while U barely moves (the primal-dual scaling of the log objective).
    nu = weights / (base + system.per_buyer(a * z))

    def converged(point: _Point, iteration: int) -> str | None:
        if point.merit <= tol:
            return (f"complementarity {point.complementarity:.1e}, relative dual residual "
                    f"{point.residual_norm:.1e}")
        if point.complementarity <= _GAP_CHECK_BELOW:
            # The dual residual measures y against every bound multiplier at once and lags
            # behind; the exact duality gap of (z, supply prices) with the best responses of
            # vfm.duality is what the result is judged on, and it is often met earlier.
            gap = _relative_gap(program, point.z, point.y[0])
            if abs(gap) <= gap_tol:
                return f"exact relative duality gap {gap:.1e}"
        return None

    def trace(point: _Point, iteration: int) -> None:
        print(f"schur-ipm {iteration:3d}  complementarity {point.complementarity:9.2e}  "
              f"dual residual {point.residual_norm:9.2e}")

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        outcome = iterate(_Point.at(system, program, z, s, y, nu), Method(
            name="schur-ipm",
            step=lambda point: _step(system, program, point),
            measure=lambda point: point.merit,
            converged=converged,
            describe=lambda point: f"complementarity / dual residual {point.merit:.1e}",
            asked=f"{tol:.0e}",
            trace=trace if verbose else None,
        ), max_iter)
    best = outcome.point
    return Solution(x=best.z[program.buyer, program.supply_row], prices=best.y[0], status=outcome.status,
                          message=outcome.message, iterations=outcome.iteration,
                          solve_time=time.perf_counter() - started,
                          accuracy=max(tol, gap_tol))  # both are tolerances in force


@dataclass(frozen=True)
class _Point:
    """An iterate (allocation, slacks, multipliers, utility multipliers) and its residuals."""

    z: np.ndarray
    s: Blocks
    y: Blocks
    nu: np.ndarray
    u: np.ndarray
    dual_residual: np.ndarray
    complementarity: float
    residual_norm: float
    merit: float  # max(complementarity, relative dual residual)

    @classmethod
    def at(cls, system: _Inequalities, program: ScaledProgram, z: np.ndarray, s: Blocks, y: Blocks,
           nu: np.ndarray) -> _Point:
        u = program.base + system.per_buyer(system.utility * z)
        gradient = -(program.weights / u)[:, None] * system.utility
        dual_residual = gradient + system.apply_transpose(y)
        complementarity = _dot(s, y)
        residual_norm = float(np.abs(dual_residual).max() / (1.0 + np.abs(gradient).max()))
        return cls(z, s, y, nu, u, dual_residual, complementarity, residual_norm, max(complementarity, residual_norm))


def _step(system: _Inequalities, program: ScaledProgram, point: _Point) -> _Point | None:
    """Mehrotra's predictor-corrector step from `point` (None when no positive step exists)."""
    s, y, nu, u = point.s, point.y, point.nu, point.u
    mu = point.complementarity / system.n_constraints
    scaling: Blocks = tuple(yi / si for si, yi in zip(s, y, strict=True))
    newton = _NewtonSystem.build(system, scaling, nu / u)
    # Mehrotra: an affine-scaling predictor sets the centring, then a corrected step.
    zero: Blocks = tuple(np.zeros_like(si) for si in s)
    # Far from the solution the Woodbury inverse is accurate, and the predictor only
    # sets the centring: neither needs the conjugate-gradient refinement.
    refine = point.complementarity < _REFINE_BELOW
    _, ds_aff, dy_aff = _direction(system, newton, s, y, point.dual_residual, zero, refine=False)
    primal_aff, dual_aff = min(1.0, largest_step(s, ds_aff)), min(1.0, largest_step(y, dy_aff))
    moved_s = tuple(si + primal_aff * dsi for si, dsi in zip(s, ds_aff, strict=True))
    moved_y = tuple(yi + dual_aff * dyi for yi, dyi in zip(y, dy_aff, strict=True))
    sigma = centring(_dot(moved_s, moved_y), point.complementarity)
    target: Blocks = tuple(sigma * mu - d1 * d2 for d1, d2 in zip(ds_aff, dy_aff, strict=True))
    dz, ds, dy = _direction(system, newton, s, y, point.dual_residual, target, refine)
    a = system.utility
    d_nu = (program.weights - nu * u - nu * system.per_buyer(a * dz)) / u
    # One step length: nu_i U_i = w_i couples the utility multipliers to the primal, and
    # unequal steps leave that pair (and with it the dual residual) behind.
    alpha = STEP_TO_BOUNDARY * min(1.0, largest_step(s, ds), largest_step((*y, nu), (*dy, d_nu)))
    if not np.isfinite(alpha) or alpha <= 0:
        return None
    # Slacks move along the step rather than being recomputed as 1 - S z: near a sold-out
    # good that difference cancels to 0 in floating point, and s must stay positive.
    moved_s = tuple(si + alpha * dsi for si, dsi in zip(s, ds, strict=True))
    return _Point.at(system, program, point.z + alpha * dz, moved_s,
                     tuple(yi + alpha * dyi for yi, dyi in zip(y, dy, strict=True)), nu + alpha * d_nu)
