"""NSWOT backends and the registry that picks among them (cvxpy's solver layer, in small)."""

from vfm.solvers.base import Backend, Capabilities, ScaledSolution
from vfm.solvers.cvxpy_conic import CvxpyConicBackend
from vfm.solvers.registry import available_solvers, register, select

__all__ = [
    "Backend",
    "Capabilities",
    "CvxpyConicBackend",
    "ScaledSolution",
    "available_solvers",
    "register",
    "select",
]
