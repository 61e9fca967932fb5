"""Which backends exist, which are installed here, and which one a solve uses.

One registry for both problem types (`Capabilities.problem`): markets (`vfm.solve`) and planning
programs (`vfm.planner.plan`, whose backends `vfm.planner.backends` registers on import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from vfm.errors import UnknownSolverError, UnsupportedMarketError
from vfm.market import VolatileFisherMarket
from vfm.solvers.base import Backend
from vfm.solvers.clarabel_direct import ClarabelDirectBackend
from vfm.solvers.cvxpy_conic import CVXPY_BACKENDS
from vfm.solvers.schur_ipm import SchurIPMBackend

if TYPE_CHECKING:  # the planner imports this module: no import at run time
    from vfm.planner.program import PlanningProgram

# In order of preference (fastest first, as measured by benchmarks/solve.py): the first
# installed backend that supports a market is the default.
_REGISTRY: dict[str, Backend] = {
    backend.name: backend for backend in (SchurIPMBackend(), ClarabelDirectBackend(), *CVXPY_BACKENDS)
}


def register(backend: Backend, *, preferred: bool = False) -> None:
    """Add a backend (first in the default order if `preferred`), replacing one of the same name."""
    global _REGISTRY
    rest = {name: b for name, b in _REGISTRY.items() if name != backend.name}
    _REGISTRY = {backend.name: backend, **rest} if preferred else {**rest, backend.name: backend}


def available_solvers(problem: Literal["market", "planning"] = "market") -> tuple[str, ...]:
    """Names of the backends for `problem` installed on this machine, default first.

    Examples
    --------
    >>> "clarabel" in available_solvers()
    True
    >>> available_solvers("planning")
    ('saa-ipm', 'cvxpy')
    """
    return tuple(name for name, backend in _REGISTRY.items()
                 if backend.capabilities.problem == problem and backend.is_installed())


def _kind(problem: VolatileFisherMarket | PlanningProgram) -> Literal["market", "planning"]:
    return "market" if isinstance(problem, VolatileFisherMarket) else "planning"


def candidates(market: VolatileFisherMarket | PlanningProgram) -> list[Backend]:
    """The installed backends that support `market` (or planning program), in order of preference.

    Raises
    ------
    vfm.errors.UnknownSolverError
        If no backend is installed.
    vfm.errors.UnsupportedMarketError
        If no installed backend supports the market.
    """
    kind = _kind(market)
    installed = [_REGISTRY[name] for name in available_solvers(kind)]
    if not installed:
        raise UnknownSolverError(f"no {kind} backend is installed; install clarabel (pip install clarabel)")
    fitting = [backend for backend in installed if not backend.capabilities.unsupported(market)]
    if not fitting:
        raise UnsupportedMarketError(
            f"no installed backend supports this {kind} problem ({market!r}); installed: "
            f"{', '.join(available_solvers(kind))}"
        )
    return fitting


def select(market: VolatileFisherMarket | PlanningProgram, solver: str | None = None) -> Backend:
    """The backend for `market` (or planning program): the one named by `solver`, else the first
    installed that fits.

    Raises
    ------
    vfm.errors.UnknownSolverError
        If `solver` is not a registered backend or is not installed.
    vfm.errors.UnsupportedMarketError
        If the named backend (or, without a name, every installed backend) lacks a feature the
        market uses.
    """
    if solver is None:
        return candidates(market)[0]
    if not isinstance(solver, str):
        raise UnknownSolverError(f"solver must be a backend name (str) or None, got {type(solver).__name__}")
    kind = _kind(market)
    known = [name for name, backend in _REGISTRY.items() if backend.capabilities.problem == kind]
    if solver.lower() not in known:
        raise UnknownSolverError(
            f"solver={solver!r} is not a vfm {kind} backend; known: {', '.join(known)} "
            f"(installed here: {', '.join(available_solvers(kind)) or 'none'})"
        )
    backend = _REGISTRY[solver.lower()]
    if not backend.is_installed():
        raise UnknownSolverError(
            f"solver={solver!r} is known but not installed here; installed: "
            f"{', '.join(available_solvers(kind)) or 'none'}"
        )
    missing = backend.capabilities.unsupported(market)
    if missing:
        raise UnsupportedMarketError(f"solver={solver!r} does not support {', '.join(missing)}, which this {kind} uses")
    return backend
