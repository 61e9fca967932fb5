"""Every exception that `vfm` raises on purpose, in one place.

The hierarchy lets a caller catch as broadly or as narrowly as it needs:

    VFMError
    ├── ValidationError (also a ValueError)      bad input, caught at the boundary
    │   ├── InfeasibleMarketError                 inputs that admit no NSWOT solution
    │   ├── UnknownSolverError                    a solver name that is not usable here
    │   └── UnsupportedMarketError                a backend asked for what it cannot do
    ├── SolverError (also a RuntimeError)         the solver ran but did not succeed
    ├── PolicyError (also a RuntimeError)         a scheduling policy's answer cannot be run
    └── CertificateError (also an AssertionError) a vfm.check certificate does not hold
"""

from __future__ import annotations

from typing import Any


class VFMError(Exception):
    """Base class of every error raised by `vfm`."""


class ValidationError(VFMError, ValueError):
    """An argument is malformed; the message names it and says what to fix."""


class InfeasibleMarketError(ValidationError):
    """The market's inputs admit no allocation with finite Nash social welfare."""


class UnknownSolverError(ValidationError):
    """The requested solver is not registered or not installed."""


class UnsupportedMarketError(ValidationError):
    """The requested backend does not support a feature the market uses."""


class SolverError(VFMError, RuntimeError):
    """The solver did not reach an optimal solution.

    Attributes
    ----------
    status : str
        The `Equilibrium.status` of the failed solve.
    result : Equilibrium or None
        The result object, with whatever the solver returned.
    """

    def __init__(self, message: str, status: str = "error", result: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.result = result


class PolicyError(VFMError, RuntimeError):
    """A scheduling policy answered something the simulator cannot run, or starved the jobs."""


class CertificateError(VFMError, AssertionError):
    """A certificate from `vfm.check` does not hold within its tolerance."""
