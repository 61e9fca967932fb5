"""Which backends exist, which are installed here, and which one a solve uses."""

from __future__ import annotations

from vfm.errors import UnknownSolverError, UnsupportedMarketError
from vfm.market import VolatileFisherMarket
from vfm.solvers.base import Backend
from vfm.solvers.clarabel_direct import ClarabelDirectBackend
from vfm.solvers.cvxpy_conic import CVXPY_BACKENDS
from vfm.solvers.schur_ipm import SchurIPMBackend

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


def available_solvers() -> tuple[str, ...]:
    """Names of the backends installed on this machine, default first.

    Examples
    --------
    >>> "clarabel" in available_solvers()
    True
    """
    return tuple(name for name, backend in _REGISTRY.items() if backend.is_installed())


def candidates(market: VolatileFisherMarket) -> list[Backend]:
    """The installed backends that support `market`, in order of preference.

    Raises
    ------
    vfm.errors.UnknownSolverError
        If no backend is installed.
    vfm.errors.UnsupportedMarketError
        If no installed backend supports the market.
    """
    installed = [_REGISTRY[name] for name in available_solvers()]
    if not installed:
        raise UnknownSolverError("no NSWOT backend is installed; install clarabel (pip install clarabel)")
    fitting = [backend for backend in installed if not backend.capabilities.unsupported(market)]
    if not fitting:
        raise UnsupportedMarketError(
            f"no installed backend supports this market ({market!r}); installed: {', '.join(available_solvers())}"
        )
    return fitting


def select(market: VolatileFisherMarket, solver: str | None = None) -> Backend:
    """The backend for `market`: the one named by `solver`, else the first installed that fits.

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
    if solver.lower() not in _REGISTRY:
        raise UnknownSolverError(
            f"solver={solver!r} is not a vfm backend; known: {', '.join(_REGISTRY)} "
            f"(installed here: {', '.join(available_solvers()) or 'none'})"
        )
    backend = _REGISTRY[solver.lower()]
    if not backend.is_installed():
        raise UnknownSolverError(
            f"solver={solver!r} is known but not installed here; installed: {', '.join(available_solvers()) or 'none'}"
        )
    missing = backend.capabilities.unsupported(market)
    if missing:
        raise UnsupportedMarketError(f"solver={solver!r} does not support {', '.join(missing)}, which this market uses")
    return backend
