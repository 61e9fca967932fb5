"""The planning backends, registered in the one solver registry (`vfm.solvers.registry`).

Each declares, like the market backends, what it supports and the options it takes
(`vfm.solvers.PlanningCapabilities` with ``problem="planning"``; its options checked by
`vfm.solvers.base.check_options`, as every backend's); `vfm.planner.plan` picks
among them through `vfm.solvers.registry`.
Both solve every planning program, on one GPU type or several (`vfm.planner.PlanningProgram.good_round`,
``speed``); only ``saa-ipm`` takes a warm start. Both take a ``deadline`` (a `time.perf_counter`
instant): past it they stop with `Status.ITERATION_LIMIT` (``saa-ipm`` checks it at every
iteration; ``cvxpy`` passes the time left to Clarabel's ``time_limit``).
"""

from __future__ import annotations

import importlib.util
import time
from dataclasses import dataclass, field
from typing import Any

from vfm.equilibrium import Status
from vfm.planner.program import PlanningProgram
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm.method import solve_saa_ipm
from vfm.solvers.base import PLANNING_OPTIONS, PlanningCapabilities, Solution, check_options
from vfm.solvers.registry import register

#: The relative gap a planning backend is asked for when the caller names none.
DEFAULT_TOL = 1e-9


@dataclass(frozen=True)
class SaaIpmBackend:
    """vfm's structure-exploiting interior point for the planning program (`vfm.planner.solve.ipm.method`)."""

    name: str = "saa-ipm"
    # The polish converges from its 1e-7 answers in as few Newton steps as from its 1e-9 ones (at
    # most 5 on the reproductions' windows), and its last two iterations cost a fifth of the
    # 10,000-job window's solve (docs/planning.md, "The polish's start").
    capabilities: PlanningCapabilities = field(default_factory=lambda: PlanningCapabilities(
        options=(*PLANNING_OPTIONS, ("threads", "count")), polish_start_tol=1e-7))

    def prepare(self) -> None:
        pass  # the planner's kernels serve every backend: a policy and `plan` ask for them (`kernel_loading`)

    def is_installed(self) -> bool:
        return True

    def solve(self, program: PlanningProgram, **options: Any) -> Solution:
        """`solve_saa_ipm` with the declared `options`: ``tol`` (default `DEFAULT_TOL`),
        ``warm_start``, ``deadline`` and ``threads`` (kernel threads; without it the caller's
        `kernel_threads` scope, else the default: `vfm.planner.PlanOptions.threads`).

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`).
        """
        check_options(self, options)
        # Only the options given are passed on: stand-ins for the solver need take no others.
        return solve_saa_ipm(program, **{"tol": DEFAULT_TOL, **options})


@dataclass(frozen=True)
class SaaCvxpyBackend:
    """The planning program as one CVXPY model solved by Clarabel (`vfm.planner.solve.cvxpy_model`): the
    independent reference. Its gap is certified from Clarabel's multipliers, like `saa-ipm`'s."""

    name: str = "cvxpy"
    # No looser polish start: from Clarabel's 1e-7 answers the polish failed on one of the 900-job
    # reproduction's 201 windows (a second solve) and took up to 17 steps.
    # No ``warm_start``: Clarabel starts from its own point.
    capabilities: PlanningCapabilities = field(default_factory=lambda: PlanningCapabilities(
        options=tuple(option for option in PLANNING_OPTIONS if option[0] != "warm_start")))

    def prepare(self) -> None:
        pass  # CVXPY and Clarabel load on import

    def is_installed(self) -> bool:
        return all(importlib.util.find_spec(module) is not None for module in ("cvxpy", "clarabel"))

    def solve(self, program: PlanningProgram, **options: Any) -> Solution:
        """The CVXPY model solved to ``tol`` (default `DEFAULT_TOL`) by ``deadline`` if given.

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`).
        """
        check_options(self, options)
        tol, deadline = options.get("tol", DEFAULT_TOL), options.get("deadline")
        limit: dict[str, Any] = {}
        if deadline is not None:
            left = deadline - time.perf_counter()
            if left <= 0:
                return Solution(None, None, Status.ITERATION_LIMIT, f"{self.name}: time limit reached before the solve",
                                0, 0.0, tol)
            limit = {"time_limit": left}  # Clarabel's own limit, in seconds
        # Clarabel's gap and feasibility tolerances at `tol`: both backends then resolve the same ties.
        return solve_saa_cvxpy(program, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol, **limit)


# Fastest first (benchmarks/plan.py): the default order of `vfm.planner.plan`.
register(SaaIpmBackend())
register(SaaCvxpyBackend())
