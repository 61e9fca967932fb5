"""vfm: fair and efficient allocations in Volatile Fisher Markets.

``import vfm`` loads NumPy and SciPy only: the solvers, the planner and the scheduling layer (and
with them CVXPY, Clarabel, Numba and JAX) load when one of their names is first used, so that a
process that imports vfm pays only for what it runs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from vfm import errors
from vfm.equilibrium import Equilibrium, Status
from vfm.market import VolatileFisherMarket

if TYPE_CHECKING:
    from vfm import check, cluster, planner
    from vfm.nswot import solve
    from vfm.nswot.per_period import solve_per_period
    from vfm.solvers.registry import available_solvers

#: The names that load on first use: the module each comes from, and its attribute there (None:
#: the name is that module).
_ON_FIRST_USE: dict[str, tuple[str, str | None]] = {
    "check": ("vfm.check", None),
    "cluster": ("vfm.cluster", None),
    "planner": ("vfm.planner", None),
    "solve": ("vfm.nswot", "solve"),
    "solve_per_period": ("vfm.nswot.per_period", "solve_per_period"),
    "available_solvers": ("vfm.solvers.registry", "available_solvers"),
}

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
__version__ = "0.2.0"


def __getattr__(name: str) -> Any:
    """Load a name of `_ON_FIRST_USE` when it is first asked for (PEP 562), and keep it."""
    if name not in _ON_FIRST_USE:
        raise AttributeError(f"module 'vfm' has no attribute {name!r}")
    module_name, attribute = _ON_FIRST_USE[name]
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_ON_FIRST_USE})
