"""Which backends exist, which are installed here, and which one a solve uses.

One registry for both problem types (`Capabilities.problem`): markets (`vfm.solve`) and planning
programs (the planner's `plan`, whose backends the planner registers on import). The one check of
a backend's options is the backends' own, `vfm.solvers.base.check_options`.
"""

from __future__ import annotations

from vfm.errors import UnknownSolverError, UnsupportedMarketError
from vfm.solvers.base import Backend, Problem, ProblemKind
from vfm.solvers.clarabel_direct import ClarabelDirectBackend
from vfm.solvers.cvxpy_conic import CVXPY_BACKENDS
from vfm.solvers.schur_ipm import SchurIPMBackend
from vfm.solvers.smoothed_dual import SmoothedDualBackend
from vfm.solvers.smoothed_dual_jax import JaxSmoothedDualBackend

__all__ = ["available_solvers", "candidates", "prepare", "register", "select"]

# In order of preference (fastest first, as measured by benchmarks/solve.py): the first
# installed backend that supports a market is the default, except that a backend whose
# `Capabilities.preferred_when` holds for the market goes first (`candidates`). The smoothed
# dual comes after the interior points: only wide plain markets prefer it (the NumPy engine; the
# JAX one runs when named, so that no solve starts an accelerator unasked).
_REGISTRY: dict[str, Backend] = {
    backend.name: backend for backend in (SchurIPMBackend(), ClarabelDirectBackend(), *CVXPY_BACKENDS,
                                          SmoothedDualBackend(), JaxSmoothedDualBackend())
}


def register(backend: Backend, *, preferred: bool = False) -> None:
    """Add a backend (first in the default order if `preferred`), replacing one of the same name."""
    global _REGISTRY
    rest = {name: b for name, b in _REGISTRY.items() if name != backend.name}
    _REGISTRY = {backend.name: backend, **rest} if preferred else {**rest, backend.name: backend}


def available_solvers(problem: ProblemKind = "market") -> tuple[str, ...]:
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


def _kind(problem: Problem) -> ProblemKind:
    return problem.problem_kind


def candidates(market: Problem) -> list[Backend]:
    """The installed backends that support `market` (or planning program), in order of preference:
    those whose capabilities prefer the problem (`Capabilities.prefers`) first, then the others,
    each group in registry order.

    Raises
    ------
    vfm.errors.UnknownSolverError
        If no backend is installed.
    vfm.errors.UnsupportedMarketError
        If no installed backend supports the market.
    """
    kind = _kind(market)
    installed = [_REGISTRY[name] for name in available_solvers(kind) if _REGISTRY[name].capabilities.by_default]
    if not installed:
        raise UnknownSolverError(f"no {kind} backend is installed; install clarabel (pip install clarabel)")
    fitting = [backend for backend in installed if not backend.capabilities.unsupported(market)]
    if not fitting:
        raise UnsupportedMarketError(
            f"no installed backend supports this {kind} problem ({market!r}); installed: "
            f"{', '.join(available_solvers(kind))}"
        )
    preferred = [backend for backend in fitting if backend.capabilities.prefers(market)]
    return preferred + [backend for backend in fitting if backend not in preferred]


def prepare(problem: ProblemKind, solver: str | None = None) -> None:
    """Prepare the backend a solve of a `problem` kind would use first: the one named by `solver`,
    else the default (`Backend.prepare`: compiled kernels loaded once, ahead of the first solve).
    A name that is not a backend of that kind, or not installed here, is left to the solve to report."""
    names = available_solvers(problem)
    name = solver.lower() if solver is not None else next(iter(names), None)
    if name in names:
        _REGISTRY[name].prepare()


def select(market: Problem, solver: str | None = None) -> Backend:
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
