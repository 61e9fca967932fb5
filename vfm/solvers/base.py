"""What a backend is: a declaration of what it supports, and a solve of the scaled program."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from vfm.equilibrium import Status
from vfm.market import VolatileFisherMarket
from vfm.program import ScaledProgram


@dataclass(frozen=True)
class Capabilities:
    """Market features a backend can handle. `vfm.solve` never hands a backend more."""

    caps: bool = True
    base_utility: bool = True
    utility_cap: bool = True
    several_goods_per_period: bool = True

    def unsupported(self, market: VolatileFisherMarket) -> list[str]:
        """The features `market` uses that these capabilities lack."""
        needs = {
            "caps": market.has_caps,
            "base_utility": market.has_base_utility,
            "utility_cap": market.has_utility_cap,
            "several_goods_per_period": market.n_goods > 1,
        }
        return [name for name, needed in needs.items() if needed and not getattr(self, name)]


@dataclass(frozen=True)
class ScaledSolution:
    """What a backend returns: the scaled program's primal and dual point and how it ended.

    `z` and `scaled_prices` are None when the solver produced no point.
    """

    z: np.ndarray | None
    scaled_prices: np.ndarray | None
    status: Status
    message: str
    iterations: int
    solve_time: float
    accuracy: float


class Backend(Protocol):
    """A solver of the scaled NSWOT program (`vfm.program.ScaledProgram`)."""

    @property
    def name(self) -> str:
        """The name `vfm.solve(..., solver=name)` selects it by (lower case)."""
        ...

    @property
    def capabilities(self) -> Capabilities:
        """What the backend supports."""
        ...

    def is_installed(self) -> bool:
        """Whether the backend can run on this machine."""
        ...

    def solve(self, program: ScaledProgram, **options: Any) -> ScaledSolution:
        """Solve `program`; never raise on solver failure, report it in the status."""
        ...
