"""The smoothed dual's array work in JAX: dense, jitted, on JAX's default device (a GPU where
JAX has one).

The continuation is `vfm.solvers.smoothed_dual.solve_smoothed`'s; this engine holds the market as
a dense (buyers, goods) matrix of log utilities (minus infinity where a buyer values nothing) and
runs each stage's Newton steps, line search included, as one compiled loop, so that a stage is
one call to the device. It never drops a pair: on an accelerator the dense products cost less
than finding the pairs that matter. It computes in float64 inside a thread-local
``jax.enable_x64(True)`` scope, as `vfm.utility`'s JAX kernels do.

JAX preallocates 75 % of a GPU's memory when it first starts one: a caller that runs this
backend beside other GPU work sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (or
``XLA_PYTHON_CLIENT_MEM_FRACTION``) before JAX starts. The registry never picks this backend
unasked (`Capabilities.by_default` is False): ``vfm.solve(market, "jax-smoothed-dual")``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from vfm.program import ScaledProgram
from vfm.solvers.base import Capabilities, Solution, check_options
from vfm.solvers.smoothed_dual import (
    FEATURES,
    OPTIONS,
    Centered,
    Settings,
    cleared,
    even_bids,
    solve_smoothed,
)
from vfm.utility.backend import jax_installed, jax_module, x64_scope

__all__ = ["JaxEngine", "JaxSmoothedDualBackend"]


@functools.cache
def _compiled() -> tuple[Any, Any, Any]:
    """The jitted stage, tangent and shares, built once per process."""
    jax = jax_module()
    jnp = jax.numpy

    def smoothed(log_utility: Any, q: Any, tau: Any) -> tuple[Any, Any]:
        """Each pair's share and log bang-per-buck below its buyer's best (0 where absent)."""
        score = log_utility - q[None, :]
        below = score - jnp.max(score, axis=1)[:, None]
        weight = jnp.exp(below / tau)
        return weight / jnp.sum(weight, axis=1)[:, None], jnp.where(jnp.isfinite(below), below, 0.0)

    def factor(budgets: Any, q: Any, share: Any, tau: Any) -> Any:
        rows = jnp.sqrt(budgets / tau)[:, None] * share
        diagonal = jnp.exp(q) + budgets @ share / tau
        return jax.scipy.linalg.cho_factor(jnp.diag(diagonal) - rows.T @ rows)

    def stage(log_utility: Any, budgets: Any, q: Any, tau: Any, max_steps: Any,
              centered: Any) -> tuple[Any, Any, Any, Any]:

        def newton(state: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, Any, Any]:
            q, steps, _, _ = state
            share, _ = smoothed(log_utility, q, tau)
            gradient = jnp.exp(q) - budgets @ share
            step = -jax.scipy.linalg.cho_solve(factor(budgets, q, share, tau), gradient)
            decrement = -gradient @ step

            def shorter(size: Any) -> Any:
                return size * 0.5

            def too_long(size: Any) -> Any:  # as `vfm.solvers.smoothed_dual.line_search`
                moved = q + size * step
                slope = (jnp.exp(moved) - budgets @ smoothed(log_utility, moved, tau)[0]) @ step
                return (size > 2.0**-40) & (slope > 0.0)

            size = jax.lax.while_loop(too_long, shorter, 1.0)
            done = decrement <= centered * tau
            return jnp.where(done, q, q + size * step), steps + 1, decrement, done

        def going(state: tuple[Any, Any, Any, Any]) -> Any:
            _, steps, _, done = state
            return (steps < max_steps) & ~done

        return jax.lax.while_loop(going, newton, (q, 0, jnp.inf, False))

    def tangent(log_utility: Any, budgets: Any, q: Any, tau: Any) -> Any:
        share, below = smoothed(log_utility, q, tau)
        mean = jnp.sum(share * below, axis=1)
        sensitivity = budgets @ (share * (below - mean[:, None])) / tau**2
        return -jax.scipy.linalg.cho_solve(factor(budgets, q, share, tau), sensitivity)

    def shares(log_utility: Any, budgets: Any, q: Any, tau: Any) -> Any:
        return smoothed(log_utility, q, tau)[0]

    return jax.jit(stage), jax.jit(tangent), jax.jit(shares)


@dataclass
class JaxEngine:
    """The continuation's array work in JAX (module docstring)."""

    program: ScaledProgram
    name: str = "jax"
    owner: np.ndarray = field(init=False)
    budgets: np.ndarray = field(init=False)
    log_utility: Any = field(init=False)

    def __post_init__(self) -> None:
        program = self.program
        bidders, self.owner = program.bidders()
        self.budgets = program.weights[bidders]
        dense = np.full((bidders.size, program.traded.size), -np.inf)
        dense[self.owner, program.supply_row] = np.log(program.utility)
        self.log_utility = jax_module().numpy.asarray(dense)

    def start(self) -> np.ndarray:
        return even_bids(self.program, self.owner, self.budgets)

    def center(self, q: np.ndarray, tau: float, previous: float, max_steps: int, centered: float) -> Centered:
        stage = _compiled()[0]
        q_new, steps, _, done = stage(self.log_utility, self.budgets, q, tau, max_steps, centered)
        return Centered(np.asarray(q_new), int(steps), bool(done))

    def tangent(self, q: np.ndarray, tau: float) -> np.ndarray:
        return np.asarray(_compiled()[1](self.log_utility, self.budgets, q, tau))

    def point(self, q: np.ndarray, tau: float) -> tuple[np.ndarray, np.ndarray]:
        share = np.asarray(_compiled()[2](self.log_utility, self.budgets, q, tau))
        good = self.program.supply_row
        return cleared(self.budgets[self.owner] * share[self.owner, good], good, self.program.traded.size)


@dataclass
class JaxSmoothedDualBackend:
    """Newton's method on the smoothed Eisenberg-Gale dual, in JAX (module docstring).

    The options and the answer are `vfm.solvers.smoothed_dual.SmoothedDualBackend`'s. Installed
    where JAX can be imported; used only when named.
    """

    name: str = "jax-smoothed-dual"
    capabilities: Capabilities = field(default_factory=lambda: Capabilities(
        features=FEATURES, options=OPTIONS, by_default=False))

    def prepare(self) -> None:
        jax = jax_module()
        if jax is not None:
            with x64_scope(jax):
                _compiled()

    def is_installed(self) -> bool:
        return jax_installed()

    def solve(self, program: ScaledProgram, **options: Any) -> Solution:
        """Solve `program` with the declared `options` (`SmoothedDualBackend`'s).

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`).
        """
        check_options(self, options)
        jax = jax_module()
        with x64_scope(jax):
            return solve_smoothed(JaxEngine(program), program, Settings.of(options))
