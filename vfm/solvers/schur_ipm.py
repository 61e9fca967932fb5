r"""A primal-dual interior-point method whose linear algebra reduces to the price block.

The scaled NSWOT program (`vfm.program`) minimizes :math:`F(z) = -\sum_i w_i \log U_i(z)` over
linear inequalities :math:`G z \le g`: the supply rows (one per traded good-period, `K` in all),
:math:`z \ge 0`, the caps :math:`z \le \hat d` and the utility caps. Each Newton step solves

.. math:: H \Delta z = r, \qquad H = \nabla^2 F + G^\top D G, \quad D = \operatorname{diag}(y / s),

and `H` has a structure a generic conic solver does not see:

* :math:`\nabla^2 F = \sum_i \frac{w_i}{U_i^2} a_i a_i^\top` and a utility-cap row adds
  :math:`d_i a_i a_i^\top`: one rank-one term :math:`\rho_i a_i a_i^\top` per buyer, on that
  buyer's entries only;
* the bound rows add a diagonal :math:`\delta`;
* only the supply rows couple buyers: :math:`S^\top D_S S` with `S` the (K, nnz) incidence
  matrix.

So :math:`M = \operatorname{diag}(\delta) + \sum_i \rho_i a_i a_i^\top` is inverted buyer by buyer
(Sherman-Morrison), and the Woodbury identity leaves one dense (K, K) system, the Schur
complement on the prices, :math:`C = D_S^{-1} + S M^{-1} S^\top`. A step costs
:math:`O(\text{nnz} + n K^2 + K^3)`: for a 900-job, 20-round window, a 20 x 20 solve.

Numerics. An entry a buyer holds has :math:`\delta_e \to 0`, and plain Sherman-Morrison,
:math:`1/\delta_e - \gamma_i a_e^2/\delta_e^2`, then subtracts two huge numbers. The diagonal of
:math:`M_i^{-1}` is instead evaluated as
:math:`\delta_e^{-1} (1 + \rho_i \beta_{i,-e}) / (1 + \rho_i \beta_i)` with
:math:`\beta_{i,-e} = \sum_{f \ne e} a_f^2 / \delta_f` summed without the entry itself, and the
Newton system is solved by conjugate gradients on `H` applied from its definition, with the
Woodbury inverse as the preconditioner.

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

from vfm.equilibrium import Status
from vfm.program import ScaledProgram
from vfm.solvers.base import Capabilities, ScaledSolution

_STEP_TO_BOUNDARY = 0.99
_CG_STEPS = 25
_WARM_MIX = 0.6
_WARM_MU = 0.1
_CG_TOLERANCE = 1e-13
#: A merit this many times the best seen so far means the Newton systems have run out of digits.
_STALL_FACTOR = 10.0

Blocks = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class _Inequalities:
    """The system G z <= g of the scaled program, block by block.

    Blocks: 0 supply rows (K), 1 nonnegativity (nnz), 2 caps below 1 (capped entries),
    3 utility caps (saturable buyers).
    """

    buyer: np.ndarray
    row: np.ndarray
    utility: np.ndarray
    capped: np.ndarray
    cap: np.ndarray
    saturable: np.ndarray
    headroom: np.ndarray
    n_buyers: int
    n_rows: int

    @classmethod
    def from_program(cls, program: ScaledProgram) -> _Inequalities:
        capped = np.flatnonzero(program.upper < 1.0)
        saturable = np.flatnonzero(np.isfinite(program.utility_cap))
        return cls(
            buyer=program.buyer, row=program.supply_row, utility=program.utility,
            capped=capped, cap=program.upper[capped],
            saturable=saturable, headroom=program.utility_cap[saturable] - program.base[saturable],
            n_buyers=program.market.n_buyers, n_rows=program.traded.size,
        )

    def per_buyer(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.buyer, weights=values, minlength=self.n_buyers)

    def per_row(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.row, weights=values, minlength=self.n_rows)

    def slacks(self, z: np.ndarray) -> Blocks:
        bought = self.per_buyer(self.utility * z)
        return (1.0 - self.per_row(z), z.copy(), self.cap - z[self.capped], self.headroom - bought[self.saturable])

    def apply(self, dz: np.ndarray) -> Blocks:
        """G dz."""
        bought = self.per_buyer(self.utility * dz)
        return self.per_row(dz), -dz, dz[self.capped], bought[self.saturable]

    def apply_transpose(self, v: Blocks) -> np.ndarray:
        """G^T v."""
        out = v[0][self.row] - v[1]
        out[self.capped] += v[2]
        per_buyer = np.zeros(self.n_buyers)
        per_buyer[self.saturable] = v[3]
        return np.asarray(out + self.utility * per_buyer[self.buyer])

    def initial_point(self) -> np.ndarray:
        """A strictly feasible allocation: an equal share of each row, inside every cap."""
        per_row = np.bincount(self.row, minlength=self.n_rows)
        z = 1.0 / (per_row[self.row] + 1.0)
        z[self.capped] = np.minimum(z[self.capped], 0.5 * self.cap)
        if self.saturable.size:
            bought = self.per_buyer(self.utility * z)[self.saturable]
            shrink = np.ones(self.n_buyers)
            shrink[self.saturable] = np.minimum(1.0, 0.5 * self.headroom / np.maximum(bought, 1e-300))
            z = z * shrink[self.buyer]
        return z


@dataclass(frozen=True)
class _NewtonSystem:
    """H = diag(delta) + sum_i rho_i a_i a_i^T + S^T diag(d_supply) S, factored for solves."""

    system: _Inequalities
    scaling: Blocks  # D = y / s, per block
    curvature: np.ndarray  # w_i / U_i^2
    inv_delta: np.ndarray
    gamma: np.ndarray  # rho_i / (1 + rho_i beta_i)
    own: np.ndarray  # diagonal of M^{-1}, evaluated stably
    top: np.ndarray  # entries that carry their buyer's largest a^2 / delta
    factor: np.ndarray  # Cholesky factor of the (K, K) Schur complement

    @classmethod
    def build(cls, system: _Inequalities, scaling: Blocks, curvature: np.ndarray) -> _NewtonSystem:
        a, buyer, n = system.utility, system.buyer, system.n_buyers
        delta = scaling[1].copy()
        delta[system.capped] += scaling[2]
        rho = curvature.copy()
        rho[system.saturable] += scaling[3]
        inv_delta = 1.0 / delta
        term = a * a * inv_delta
        beta = system.per_buyer(term)
        largest = np.zeros(n)
        np.maximum.at(largest, buyer, term)
        top = term == largest[buyer]
        # beta without entry e, summed without cancellation: the largest terms are never
        # subtracted from a total that contains them.
        rest = system.per_buyer(np.where(top, 0.0, term))
        tied = system.per_buyer(top.astype(float)) - 1.0
        beta_without = np.where(top, rest[buyer] + tied[buyer] * largest[buyer], beta[buyer] - term)
        own = inv_delta * (1.0 + rho[buyer] * beta_without) / (1.0 + rho[buyer] * beta[buyer])
        gamma = rho / (1.0 + rho * beta)
        coupling = np.zeros((system.n_rows, n))
        coupling[system.row, buyer] = a * inv_delta
        schur = -((coupling * gamma[None, :]) @ coupling.T)
        schur[np.diag_indices(system.n_rows)] = system.per_row(own) + 1.0 / scaling[0]
        return cls(system, scaling, curvature, inv_delta, gamma, own, top, np.linalg.cholesky(schur))

    def apply_m_inverse(self, vec: np.ndarray) -> np.ndarray:
        """M^{-1} vec, entry e's own term taken from the stable diagonal."""
        system = self.system
        q = system.utility * self.inv_delta
        qv = q * vec
        total = system.per_buyer(qv)
        top_total = system.per_buyer(np.where(self.top, qv, 0.0))
        rest = total - top_total
        others = np.where(self.top, rest[system.buyer] + top_total[system.buyer] - qv, total[system.buyer] - qv)
        return np.asarray(self.own * vec - self.gamma[system.buyer] * q * others)

    def apply_h(self, vec: np.ndarray) -> np.ndarray:
        """H vec, from its definition (the residual of iterative refinement)."""
        system = self.system
        along = system.per_buyer(system.utility * vec)
        scaled = tuple(d * g for d, g in zip(self.scaling, system.apply(vec), strict=True))
        return np.asarray((self.curvature * along)[system.buyer] * system.utility + system.apply_transpose(scaled))

    def _woodbury(self, vec: np.ndarray) -> np.ndarray:
        first = self.apply_m_inverse(vec)
        coupling = self.system.per_row(first)
        correction = np.linalg.solve(self.factor.T, np.linalg.solve(self.factor, coupling))
        return first - self.apply_m_inverse(correction[self.system.row])

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """H^{-1} rhs by conjugate gradients preconditioned with the Woodbury inverse.

        H itself stays well conditioned near the solution, but M does not (its diagonal spans
        1/mu to mu), so the Woodbury inverse, exact in exact arithmetic, can lose most of its
        digits in the last iterations. As a preconditioner it still clusters H's spectrum, and
        a few CG steps against H applied from its definition recover the lost accuracy.
        """
        solution = self._woodbury(rhs)
        residual = rhs - self.apply_h(solution)
        target = _CG_TOLERANCE * float(np.abs(rhs).max())
        if float(np.abs(residual).max()) <= target:
            return solution
        preconditioned = self._woodbury(residual)
        search = preconditioned
        inner = float(residual @ preconditioned)
        for _ in range(_CG_STEPS):
            image = self.apply_h(search)
            curvature = float(search @ image)
            if curvature <= 0 or inner <= 0:
                break
            step = inner / curvature
            solution = solution + step * search
            residual = residual - step * image
            if float(np.abs(residual).max()) <= target:
                break
            preconditioned = self._woodbury(residual)
            previous, inner = inner, float(residual @ preconditioned)
            search = preconditioned + (inner / previous) * search
        return solution


def _direction(system: _Inequalities, newton: _NewtonSystem, s: Blocks, y: Blocks, dual_residual: np.ndarray,
               target: Blocks) -> tuple[np.ndarray, Blocks, Blocks]:
    """Newton direction (dz, ds, dy) that drives s * y to `target`, block by block."""
    gap = tuple(t - si * yi for t, si, yi in zip(target, s, y, strict=True))
    rhs = -dual_residual - system.apply_transpose(tuple(g / si for g, si in zip(gap, s, strict=True)))
    dz = newton.solve(rhs)
    g_dz = system.apply(dz)
    ds = tuple(-g for g in g_dz)
    dy = tuple(g / si + di * gd for g, si, di, gd in zip(gap, s, newton.scaling, g_dz, strict=True))
    return dz, ds, dy


def _step_length(values: Blocks, changes: Blocks) -> float:
    """Largest step in [0, 1] that keeps every entry of `values + step * changes` nonnegative."""
    step = 1.0
    for value, change in zip(values, changes, strict=True):
        falling = change < 0
        if falling.any():
            step = min(step, float(np.min(-value[falling] / change[falling])))
    return step


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
    warm_start : (allocation, prices), optional
        A previous solution in market units, shapes (n, m, T) and (m, T), e.g. the last
        re-plan's shifted by one round (`vfm.jobs.shift_rounds`). Projected into the feasible
        set and mixed 60 % with the cold start (see `_warm_point`; the mix and the starting
        centrality were tuned on consecutive Shockwave windows, benchmarks/warm_start.py).
    """

    name: str = "schur-ipm"
    capabilities: Capabilities = field(default_factory=Capabilities)

    def is_installed(self) -> bool:
        return True

    def solve(self, program: ScaledProgram, **options: Any) -> ScaledSolution:
        tol = float(options.pop("tol", 1e-8))
        max_iter = int(options.pop("max_iter", 100))
        warm_start = options.pop("warm_start", None)
        started = time.perf_counter()
        if options:
            return ScaledSolution(None, None, Status.ERROR,
                                  f"schur-ipm got unknown options: {', '.join(sorted(options))}", 0, 0.0, tol)
        try:
            return _interior_point(program, tol, max_iter, started, warm_start)
        except np.linalg.LinAlgError as exc:
            return ScaledSolution(None, None, Status.ERROR, f"schur-ipm failed: {exc}", -1,
                                  time.perf_counter() - started, tol)


def _warm_point(program: ScaledProgram, system: _Inequalities, warm_start: Any) -> tuple[np.ndarray, np.ndarray]:
    """The scaled (z, prices) of a previous (allocation, prices), pulled strictly inside.

    A warm start is a hint, so it is projected: entries into their bounds, columns and buyers
    scaled into supply and utility caps, then mixed with the cold start so that every slack is
    positive (an interior-point method cannot start on the boundary).
    """
    allocation, prices = warm_start
    market = program.market
    supply = market.supply.reshape(-1)
    allocation = np.asarray(allocation, dtype=np.float64).reshape(market.n_buyers, -1)
    z = np.clip(allocation[program.buyer, program.column] / supply[program.column], 0.0, None)
    z[system.capped] = np.minimum(z[system.capped], system.cap)
    z = z / np.maximum(system.per_row(z), 1.0)[system.row]
    if system.saturable.size:
        bought = system.per_buyer(system.utility * z)[system.saturable]
        shrink = np.ones(system.n_buyers)
        shrink[system.saturable] = np.minimum(1.0, system.headroom / np.maximum(bought, 1e-300))
        z = z * shrink[system.buyer]
    z = (1.0 - _WARM_MIX) * z + _WARM_MIX * system.initial_point()
    scaled = np.asarray(prices, dtype=np.float64).reshape(-1)[program.traded] * supply[program.traded]
    return z, np.maximum(scaled / market.budgets.sum(), 0.0)


def _interior_point(program: ScaledProgram, tol: float, max_iter: int, started: float,
                    warm_start: Any = None) -> ScaledSolution:
    system = _Inequalities.from_program(program)
    weights, base, a, buyer = program.weights, program.base, system.utility, system.buyer

    if warm_start is None:
        z = system.initial_point()
        s = system.slacks(z)
        n_constraints = sum(block.size for block in s)
        y: Blocks = tuple(1.0 / (np.maximum(block, 1e-12) * n_constraints) for block in s)
    else:
        z, supply_prices = _warm_point(program, system, warm_start)
        s = system.slacks(z)
        n_constraints = sum(block.size for block in s)
        # Bound duals on a central path of small mu; the supply duals start at the old prices.
        mu = _WARM_MU / n_constraints
        y = (np.maximum(supply_prices, mu / s[0]), *(mu / block for block in s[1:]))

    best: tuple[float, np.ndarray, np.ndarray, int] | None = None
    status, message = Status.ITERATION_LIMIT, f"schur-ipm stopped at max_iter={max_iter} before converging"
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        for iteration in range(max_iter + 1):
            u = base + system.per_buyer(a * z)
            gradient = -weights[buyer] * a / u[buyer]
            dual_residual = gradient + system.apply_transpose(y)
            complementarity = sum(float(si @ yi) for si, yi in zip(s, y, strict=True))
            residual_norm = float(np.abs(dual_residual).max() / (1.0 + np.abs(gradient).max()))
            merit = max(complementarity, residual_norm)
            if merit <= tol:
                best = (merit, z, y[0], iteration)
                status, message = Status.OPTIMAL, (
                    f"schur-ipm converged in {iteration} iterations (complementarity {complementarity:.1e}, "
                    f"relative dual residual {residual_norm:.1e})"
                )
                break
            if best is not None and not merit <= _STALL_FACTOR * best[0]:
                # Near the solution the Newton systems lose the digits they need (iterates sit at
                # distance ~mu from their bounds); past that point steps only do harm.
                status, message = Status.INACCURATE, (
                    f"schur-ipm stalled after {best[3]} iterations at complementarity / dual residual "
                    f"{best[0]:.1e} (asked for {tol:.0e})"
                )
                break
            if best is None or merit < best[0]:
                best = (merit, z, y[0], iteration)
            if iteration == max_iter:
                break

            mu = complementarity / n_constraints
            scaling: Blocks = tuple(yi / si for si, yi in zip(s, y, strict=True))
            newton = _NewtonSystem.build(system, scaling, weights / u**2)

            # Mehrotra: an affine-scaling predictor sets the centring, then a corrected step.
            zero: Blocks = tuple(np.zeros_like(si) for si in s)
            _, ds_aff, dy_aff = _direction(system, newton, s, y, dual_residual, zero)
            alpha_aff = min(_step_length(s, ds_aff), _step_length(y, dy_aff))
            mu_aff = sum(
                float((si + alpha_aff * dsi) @ (yi + alpha_aff * dyi))
                for si, yi, dsi, dyi in zip(s, y, ds_aff, dy_aff, strict=True)
            ) / n_constraints
            sigma = min(1.0, (mu_aff / mu) ** 3)
            target: Blocks = tuple(sigma * mu - d1 * d2 for d1, d2 in zip(ds_aff, dy_aff, strict=True))
            dz, ds, dy = _direction(system, newton, s, y, dual_residual, target)
            alpha = _STEP_TO_BOUNDARY * min(_step_length(s, ds), _step_length(y, dy))
            if not np.isfinite(alpha) or alpha <= 0:
                break
            z = z + alpha * dz
            # Slacks move along the step rather than being recomputed as 1 - S z: near a sold-out
            # good that difference cancels to 0 in floating point, and s must stay positive.
            s = tuple(si + alpha * dsi for si, dsi in zip(s, ds, strict=True))
            y = tuple(yi + alpha * dyi for yi, dyi in zip(y, dy, strict=True))

    assert best is not None  # iteration 0 always records one
    _, z, prices, iteration = best
    return ScaledSolution(z=z, scaled_prices=prices, status=status, message=message, iterations=iteration,
                          solve_time=time.perf_counter() - started, accuracy=tol)
