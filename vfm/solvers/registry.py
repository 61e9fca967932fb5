"""Which backends exist, which are installed here, and which one a solve uses."""

from __future__ import annotations

from vfm.errors import UnknownSolverError, UnsupportedMarketError
from vfm.market import VolatileFisherMarket
from vfm.solvers.base import Backend
from vfm.solvers.cvxpy_conic import CVXPY_BACKENDS

# In order of preference: the first installed backend that supports a market is the default.
_REGISTRY: dict[str, Backend] = {backend.name: backend for backend in CVXPY_BACKENDS}


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
        installed = [_REGISTRY[name] for name in available_solvers()]
        for backend in installed:
            if not backend.capabilities.unsupported(market):
                return backend
        if not installed:
            raise UnknownSolverError("no NSWOT backend is installed; install clarabel (pip install clarabel)")
        raise UnsupportedMarketError(
            f"no installed backend supports this market ({market!r}); installed: {', '.join(available_solvers())}"
        )
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
