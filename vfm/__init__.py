"""vfm: fair and efficient allocations in Volatile Fisher Markets."""

from vfm import check, cluster, errors, planner
from vfm.equilibrium import Equilibrium, Status
from vfm.market import VolatileFisherMarket
from vfm.nswot import solve
from vfm.per_period import solve_per_period
from vfm.solvers.registry import available_solvers

__all__ = [
    "Equilibrium",
    "Status",
    "VolatileFisherMarket",
    "available_solvers",
    "check",
    "cluster",
    "errors",
    "planner",
    "solve",
    "solve_per_period",
]
__version__ = "0.1.0"
