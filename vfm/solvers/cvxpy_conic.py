"""NSWOT through CVXPY with any installed conic solver that has the exponential cone.

The model is built from one vector variable over the active entries and two sparse matrices
(utilities, supply), so CVXPY canonicalizes it in a handful of sparse operations whatever the
market's size: no Python loop over buyers, goods or periods. CVXPY writes each
:math:`\\log \\hat U_i \\ge \\tau_i` as the exponential cone :math:`(\\tau_i, 1, \\hat U_i) \\in K_{exp}`.
"""

from __future__ import annotations

import importlib.util
import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from vfm.equilibrium import Status
from vfm.program import ScaledProgram
from vfm.solvers.base import COMMON_OPTIONS, Capabilities, OptionKind, Solution, check_options
from vfm.solvers.clarabel_direct import CLARABEL_SETTINGS, CLARABEL_TOL

if TYPE_CHECKING:
    import cvxpy as cp

# CVXPY's status strings (`cvxpy.settings`), written out so that reading a status does not import CVXPY.
_STATUS = {
    "optimal": (Status.OPTIMAL, "converged to the requested accuracy"),
    "optimal_inaccurate": (Status.INACCURATE, "stopped close to optimal but short of the requested accuracy"),
    "user_limit": (Status.ITERATION_LIMIT, "stopped at its iteration or time limit before converging"),
    "infeasible": (Status.INFEASIBLE, "reported the program infeasible"),
    "infeasible_inaccurate": (Status.INFEASIBLE, "reported the program infeasible, inaccurately"),
    "unbounded": (Status.UNBOUNDED, "reported the program unbounded (numerical trouble: NSWOT is bounded)"),
    "unbounded_inaccurate": (Status.UNBOUNDED, "reported the program unbounded, inaccurately"),
}


def cvxpy_status(status: str) -> tuple[Status, str]:
    """vfm's status for a CVXPY problem status, and what it means (the one map, for markets and
    planning programs alike)."""
    return _STATUS.get(status, (Status.ERROR, "ended without a solution"))


@dataclass(frozen=True)
class CvxpyConicBackend:
    """A CVXPY conic solver as a `vfm` backend.

    Attributes
    ----------
    name : str
        The `vfm` name (lower case), e.g. ``"clarabel"``.
    cvxpy_name : str
        CVXPY's name for the solver, e.g. ``"CLARABEL"``.
    accuracy_options : dict of str to float
        The solver options that set its relative gap / feasibility tolerances, with the
        defaults CVXPY uses; the largest in force is reported as `Equilibrium.accuracy`.
    capabilities : Capabilities
        With the options the solver takes (its own, CVXPY's and `COMMON_OPTIONS`).
    aliases : dict of str to tuple of str
        The solver's own names for the common options: ``tol`` sets every name it maps to
        (the solver's gap and feasibility tolerances), ``max_iter`` its iteration limit. An
        option given under the solver's own name wins over the alias.
    module : str, optional
        The Python module the solver comes in (default: `cvxpy_name` in lower case, ``"clarabel"``):
        the backend is installed when it and CVXPY are, found without importing either, so that
        CVXPY loads at the backend's first solve, not when the registry lists what is installed.
    """

    name: str
    cvxpy_name: str
    accuracy_options: dict[str, float] = field(default_factory=dict)
    capabilities: Capabilities = field(default_factory=Capabilities)
    aliases: dict[str, tuple[str, ...]] = field(default_factory=dict)
    module: str | None = None

    def translate(self, options: dict[str, Any]) -> dict[str, Any]:
        """`options` with the common names (`aliases`) replaced by the solver's own."""
        own = {key: value for key, value in options.items() if key not in self.aliases}
        common = {target: options[alias] for alias, targets in self.aliases.items() if alias in options
                  for target in targets}
        return {**common, **own}

    def prepare(self) -> None:
        pass  # nothing to load ahead of the first solve

    def is_installed(self) -> bool:
        modules = ("cvxpy", self.module or self.cvxpy_name.lower())
        return all(importlib.util.find_spec(module) is not None for module in modules)

    def accuracy(self, options: dict[str, Any]) -> float:
        """The relative accuracy the solver is asked for under `options`."""
        values = [float(options.get(key, default)) for key, default in self.accuracy_options.items()]
        return max(values) if values else 1e-8

    def build(self, program: ScaledProgram) -> tuple[cp.Problem, cp.Variable, cp.Constraint]:
        """The CVXPY problem, its variable and its supply constraint (whose duals are the prices)."""
        import cvxpy as cp

        z = cp.Variable(program.n_entries, nonneg=True)
        utility = program.base + program.utility_matrix() @ z
        supply = program.supply_matrix() @ z <= 1.0
        constraints: list[cp.Constraint] = [supply]
        capped = np.flatnonzero(program.upper < 1.0)
        if capped.size:
            constraints.append(z[capped] <= program.upper[capped])
        saturable = np.flatnonzero(np.isfinite(program.utility_cap))
        if saturable.size:
            constraints.append(utility[saturable] <= program.utility_cap[saturable])
        problem = cp.Problem(cp.Maximize(program.weights @ cp.log(utility)), constraints)
        return problem, z, supply

    def solve(self, program: ScaledProgram, **options: Any) -> Solution:
        """Solve `program` through CVXPY with the declared `options` (`capabilities`); a solver
        failure is reported in the status, never raised.

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`).
        """
        import cvxpy as cp

        check_options(self, options)
        options = self.translate(options)
        problem, z, supply = self.build(program)
        started = time.perf_counter()
        try:
            with warnings.catch_warnings():
                # CVXPY warns on inaccurate solves; vfm reports them in Equilibrium.status instead.
                warnings.filterwarnings("ignore", message="Solution may be inaccurate")
                problem.solve(solver=self.cvxpy_name, **options)
        except cp.error.SolverError as exc:
            return Solution(
                None, None, Status.ERROR, f"{self.cvxpy_name} failed: {exc}", -1,
                time.perf_counter() - started, self.accuracy(options),
            )
        stats = problem.solver_stats
        status, meaning = cvxpy_status(problem.status)
        message = f"{self.cvxpy_name} {meaning} (CVXPY status '{problem.status}')"
        info = stats.extra_stats.get("info") if isinstance(stats.extra_stats, dict) else None
        if isinstance(info, dict) and ("infostring" in info or "status" in info):
            message += f"; solver says: {info.get('infostring', info.get('status'))}"
        has_point = z.value is not None and supply.dual_value is not None
        return Solution(
            x=np.asarray(z.value, dtype=np.float64) if has_point else None,
            prices=np.asarray(supply.dual_value, dtype=np.float64).reshape(-1) if has_point else None,
            # A status that promises a point but comes without one is an error.
            status=status if has_point or status not in (Status.OPTIMAL, Status.INACCURATE) else Status.ERROR,
            message=message,
            iterations=int(stats.num_iters) if stats.num_iters is not None else -1,
            solve_time=float(stats.solve_time) if stats.solve_time is not None else time.perf_counter() - started,
            accuracy=self.accuracy(options),
        )


#: Options of `cvxpy.Problem.solve` itself, taken with every CVXPY solver.
_CVXPY_OPTIONS: tuple[tuple[str, OptionKind], ...] = (
    ("verbose", "flag"), ("warm_start", "flag"), ("ignore_dpp", "flag"), ("enforce_dpp", "flag"),
    ("canon_backend", "any"),
)
_SCS_OPTIONS: tuple[tuple[str, OptionKind], ...] = (
    ("eps_rel", "tolerance"), ("eps_abs", "tolerance"), ("eps_infeas", "tolerance"), ("max_iters", "count"),
    ("time_limit_secs", "seconds"),
    *((name, "any") for name in (
        "alpha", "rho_x", "scale", "adaptive_scale", "normalize", "acceleration_lookback",
        "acceleration_interval", "write_data_filename", "log_csv_filename", "use_indirect", "gpu", "mkl",
    )),
)
_ECOS_OPTIONS: tuple[tuple[str, OptionKind], ...] = (
    ("abstol", "tolerance"), ("reltol", "tolerance"), ("feastol", "tolerance"), ("abstol_inacc", "tolerance"),
    ("reltol_inacc", "tolerance"), ("feastol_inacc", "tolerance"), ("max_iters", "count"),
)
_MOSEK_OPTIONS: tuple[tuple[str, OptionKind], ...] = (
    ("eps", "tolerance"), ("mosek_params", "any"), ("save_file", "any"), ("bfs", "flag"), ("accept_unknown", "flag"),
)


def _declared(*groups: tuple[tuple[str, OptionKind], ...]) -> Capabilities:
    """Capabilities of a market backend taking the options of `groups` (later groups win)."""
    return Capabilities(options=tuple({name: kind for group in groups for name, kind in group}.items()))


#: The CVXPY solvers `vfm` knows to have the exponential cone, in order of preference, with the
#: options that set their accuracy and CVXPY's defaults for them.
CVXPY_BACKENDS = (
    CvxpyConicBackend("clarabel", "CLARABEL", {"tol_gap_rel": 1e-8, "tol_feas": 1e-8},
                      _declared(COMMON_OPTIONS, _CVXPY_OPTIONS, CLARABEL_SETTINGS), {"tol": CLARABEL_TOL}),
    # MOSEK has no iteration limit option through CVXPY; `tol` sets its `eps`.
    CvxpyConicBackend("mosek", "MOSEK", {}, _declared(COMMON_OPTIONS[:1], _CVXPY_OPTIONS, _MOSEK_OPTIONS),
                      {"tol": ("eps",)}),
    CvxpyConicBackend("scs", "SCS", {"eps_rel": 1e-5, "eps_abs": 1e-5},
                      _declared(COMMON_OPTIONS, _CVXPY_OPTIONS, _SCS_OPTIONS),
                      {"tol": ("eps_rel", "eps_abs"), "max_iter": ("max_iters",)}),
    # Last: on every job window of benchmarks/solve.py its line search stalls ("NUMERICAL PROBLEMS").
    CvxpyConicBackend("ecos", "ECOS", {"reltol": 1e-8, "feastol": 1e-8},
                      _declared(COMMON_OPTIONS, _CVXPY_OPTIONS, _ECOS_OPTIONS),
                      {"tol": ("reltol", "abstol", "feastol"), "max_iter": ("max_iters",)}),
)
