"""NSWOT backends and the registry that picks among them (cvxpy's solver layer, in small)."""

from vfm.solvers.base import Backend, Capabilities, PlanningCapabilities, Solution
from vfm.solvers.clarabel_direct import ClarabelDirectBackend
from vfm.solvers.cvxpy_conic import CvxpyConicBackend
from vfm.solvers.registry import available_solvers, candidates, register, select
from vfm.solvers.schur_ipm import SchurIPMBackend

__all__ = [
    "Backend",
    "Capabilities",
    "ClarabelDirectBackend",
    "CvxpyConicBackend",
    "PlanningCapabilities",
    "SchurIPMBackend",
    "Solution",
    "available_solvers",
    "candidates",
    "register",
    "select",
]
