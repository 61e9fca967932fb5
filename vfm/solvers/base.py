"""What a backend is: a declaration of what it supports, and a solve of one problem type."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np

from vfm.equilibrium import Status
from vfm.market import VolatileFisherMarket

if TYPE_CHECKING:  # the planner imports this module: no import at run time
    from vfm.planner.program import PlanningProgram


#: The kinds of solver option a backend can declare (`Capabilities.options`), each checked the
#: same way for every backend by `vfm.solvers.registry.check_options`:
#: ``"tolerance"`` a real number in (0, 1); ``"count"`` a whole number >= 1; ``"seconds"`` a
#: real number > 0; ``"flag"`` a bool; ``"any"`` passed on unchecked (the backend checks it).
OptionKind = Literal["tolerance", "count", "seconds", "flag", "any"]

#: The options every market backend takes, whatever its own names for them: ``tol`` (the
#: relative accuracy, set on all the backend's gap and feasibility tolerances) and ``max_iter``.
COMMON_OPTIONS: tuple[tuple[str, OptionKind], ...] = (("tol", "tolerance"), ("max_iter", "count"))


@dataclass(frozen=True)
class Capabilities:
    """What a backend solves: one problem type and the features of it that it handles.

    `problem` is ``"market"`` (a `VolatileFisherMarket`, through its scaled program; `vfm.solve`)
    or ``"planning"`` (a `vfm.planner.PlanningProgram`; `vfm.planner.plan`). The registry never
    hands a backend a problem of the other type or with a feature it lacks.

    `options` declares the solver options the backend takes, as ``(name, kind)`` pairs (kinds:
    `OptionKind`); `vfm.solve` rejects any other name, and any value of the wrong kind, before
    solving. None (the default) declares nothing: options are passed on unchecked.
    """

    problem: Literal["market", "planning"] = "market"
    # Market features.
    caps: bool = True
    base_utility: bool = True
    utility_cap: bool = True
    several_goods_per_period: bool = True
    # Planning-program features (`warm_start` is a solve option: a backend without it ignores it).
    scenarios: bool = True
    efficiency: bool = True
    fairness: bool = True
    spread: bool = True
    gpu_types: bool = True  # goods of several types per round, or a running time per good (`PlanningProgram.speed`)
    warm_start: bool = False
    # Takes a ``deadline`` solve option (a `time.perf_counter` instant after which it stops with
    # `Status.ITERATION_LIMIT`); `vfm.planner.plan` passes none to a backend without it.
    deadline: bool = False
    # The relative gap a planning backend is asked by default for a program `vfm.planner.polish`
    # takes to its exact optimum: where the polish converges from its answers as surely as from
    # a stricter one's (None: `vfm.planner.options.STRICT_TOL`, as for any other program).
    polish_start_tol: float | None = None
    options: tuple[tuple[str, OptionKind], ...] | None = None

    def option_kinds(self) -> dict[str, OptionKind] | None:
        """`options` as a dict from name to kind (None if undeclared)."""
        return None if self.options is None else dict(self.options)

    def unsupported(self, problem: VolatileFisherMarket | PlanningProgram) -> list[str]:
        """The features `problem` uses that these capabilities lack (its type first, if it is not `problem`)."""
        if isinstance(problem, VolatileFisherMarket):
            kind = "market"
            needs = {
                "caps": problem.has_caps,
                "base_utility": problem.has_base_utility,
                "utility_cap": problem.has_utility_cap,
                "several_goods_per_period": problem.n_goods > 1,
            }
        else:
            kind = "planning"
            needs = {
                "scenarios": problem.shape[0] > 1,
                "efficiency": problem.efficiency > 0,
                "fairness": problem.leftover_limit_s is not None,
                "spread": problem.spread > 0,
                "gpu_types": problem.over_types,
            }
        if kind != self.problem:
            return [f"{kind} problems (it solves {self.problem} problems)"]
        return [name for name, needed in needs.items() if needed and not getattr(self, name)]


@dataclass(frozen=True)
class Solution:
    """What every backend returns, for either problem type: its point, its prices and how it ended.

    Attributes
    ----------
    x : ndarray or None
        The primal point: for a market, the scaled program's allocation over its entries, shape
        (nnz,) (`vfm.program.ScaledProgram`); for a planning program, the fractional schedule
        :math:`y`, shape (n, T). None when the solver produced no point.
    prices : ndarray or None
        The capacity duals: a market's scaled supply prices, shape (K,); a planning program's
        price of a GPU in each round, shape (T,), in objective units per GPU. None with `x`.
    status, message, iterations, solve_time
        How the solve ended.
    accuracy : float
        The tolerance in force.
    gap : float
        A certified absolute optimality gap of `x` (planning programs: the objective without the
        tie-breaking term; inf when `x` violates an FTF row), NaN when the backend certifies none
        (a market's certificate is `vfm.solve`'s, from `vfm.duality`).
    relative_gap : float
        The certified relative gap of the program the backend solved, the measure its tolerance
        bounds (`saa-ipm`: with the tie-breaking term, relative to 1 + |objective| with budgets
        summing to 1); NaN when the backend certifies none.
    ftf_multipliers, efficiency_multipliers : ndarray or None
        A planning program's row multipliers, shape (n,), in its objective divided by the budgets'
        sum: of the FTF rows and of the efficiency rows (0 for a job without the row). None for a
        market, or when the backend produced none. `vfm.planner.polish` starts from them.
    """

    x: np.ndarray | None
    prices: np.ndarray | None
    status: Status
    message: str
    iterations: int
    solve_time: float
    accuracy: float
    gap: float = float("nan")
    relative_gap: float = float("nan")
    ftf_multipliers: np.ndarray | None = None
    efficiency_multipliers: np.ndarray | None = None


class Backend(Protocol):
    """A solver of one problem type (`Capabilities.problem`): the scaled NSWOT program of a market
    (`vfm.program.ScaledProgram`) or a planning program (`vfm.planner.PlanningProgram`); either
    returns a `Solution`."""

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

    def solve(self, program: Any, **options: Any) -> Solution:
        """Solve `program`; never raise on solver failure, report it in the status."""
        ...
