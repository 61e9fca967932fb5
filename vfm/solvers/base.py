"""What a backend is: a declaration of what it supports and the options it takes (checked by
`check_options`), and a solve of one problem type."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np

from vfm.equilibrium import Status
from vfm.parameters import Anything, Boolean, Constraint, Interval, Real, Whole, check, check_names

#: The problem types a backend solves (`Capabilities.problem`, `Problem.problem_kind`).
ProblemKind = Literal["market", "planning"]

#: The features a market can use (`vfm.VolatileFisherMarket.features`): finite allocation caps,
#: a base utility, a utility cap, and more than one good per period.
MARKET_FEATURES: frozenset[str] = frozenset({"caps", "base_utility", "utility_cap", "several_goods_per_period"})

#: The features a planning program can use (the planner's `PlanningProgram.features`): several
#: scenarios, the efficiency term, FTF rows, the spread (tie-breaking) term, and goods of several
#: GPU types per round or a running time per good (`PlanningProgram.over_types`).
PLANNING_FEATURES: frozenset[str] = frozenset({"scenarios", "efficiency", "fairness", "spread", "gpu_types"})

#: Each problem type's features: what a backend of that type supports unless it says otherwise.
FEATURES: dict[ProblemKind, frozenset[str]] = {"market": MARKET_FEATURES, "planning": PLANNING_FEATURES}


class Problem(Protocol):
    """What the registry needs of a problem, whatever its type: its kind and the features it uses.

    `vfm.VolatileFisherMarket` and the planner's `PlanningProgram` both state them; a backend is
    handed a problem only if its `Capabilities` cover both.
    """

    @property
    def problem_kind(self) -> ProblemKind:
        """``"market"`` or ``"planning"``."""
        ...

    @property
    def features(self) -> frozenset[str]:
        """The features the problem uses (names from `MARKET_FEATURES` or `PLANNING_FEATURES`)."""
        ...


#: The kinds of solver option a backend can declare (`Capabilities.options`), each checked the
#: same way for every backend by `check_options`:
#: ``"tolerance"`` a real number in (0, 1); ``"count"`` a whole number >= 1; ``"seconds"`` a
#: real number > 0; ``"instant"`` a `time.perf_counter` reading (a real number); ``"flag"`` a
#: bool; ``"any"`` passed on unchecked (the backend checks it).
OptionKind = Literal["tolerance", "count", "seconds", "instant", "flag", "any"]

#: The options every market backend takes, whatever its own names for them: ``tol`` (the
#: relative accuracy, set on all the backend's gap and feasibility tolerances) and ``max_iter``.
COMMON_OPTIONS: tuple[tuple[str, OptionKind], ...] = (("tol", "tolerance"), ("max_iter", "count"))

#: The options the planner's `plan` passes a planning backend: ``tol`` (the relative gap) always;
#: ``warm_start`` (a schedule to start from) and ``deadline`` (a `time.perf_counter` instant after
#: which it stops with `Status.ITERATION_LIMIT`) only to a backend that declares them
#: (`Capabilities.declares`).
PLANNING_OPTIONS: tuple[tuple[str, OptionKind], ...] = (
    ("tol", "tolerance"), ("warm_start", "any"), ("deadline", "instant"))


@dataclass(frozen=True)
class Capabilities:
    """What a backend solves: one problem type and the features of it that it handles.

    `problem` is ``"market"`` (a `VolatileFisherMarket`, through its scaled program; `vfm.solve`)
    or ``"planning"`` (the planner's `PlanningProgram`; its `plan`). `features` are the
    features of that problem type the backend supports (None, the default: all of them,
    `MARKET_FEATURES` or `PLANNING_FEATURES`); a backend that lacks some states the rest, e.g.
    ``Capabilities(features=MARKET_FEATURES - {"caps"})``. The registry never hands a backend a
    problem of the other type or with a feature it lacks (`unsupported`).

    The rest are properties of the backend, not of the problems it takes. `options` declares the
    solver options the backend takes, as ``(name, kind)`` pairs (kinds: `OptionKind`); `vfm.solve`
    rejects any other name, and any value of the wrong kind, before solving. None (the default)
    declares nothing: options are passed on unchecked. A backend with `by_default` False runs
    only when named. `preferred_when`, if given, says for which
    problems the backend goes first in the default order whatever its place in the registry
    (e.g. proportional response for wide plain markets); it is consulted only for problems the
    backend supports.

    Examples
    --------
    >>> from vfm import VolatileFisherMarket
    >>> capped = VolatileFisherMarket.static([[1.0, 1.0]], caps=[[0.5, 1.0]])
    >>> sorted(capped.features)
    ['caps', 'several_goods_per_period']
    >>> Capabilities(features=MARKET_FEATURES - {"caps"}).unsupported(capped)
    ['caps']
    >>> Capabilities().unsupported(capped)
    []
    """

    problem: ProblemKind = "market"
    features: frozenset[str] | None = None
    options: tuple[tuple[str, OptionKind], ...] | None = None
    preferred_when: Callable[[Problem], bool] | None = None
    # Whether a solve that names no backend may use it; False for a backend that would start an
    # accelerator (and take its memory) that the caller did not ask for.
    by_default: bool = True

    def __post_init__(self) -> None:
        if self.problem not in FEATURES:
            raise ValueError(f"problem must be 'market' or 'planning', got {self.problem!r}")
        known = FEATURES[self.problem]
        features = known if self.features is None else frozenset(self.features)
        unknown = sorted(features - known)
        if unknown:
            raise ValueError(f"{', '.join(unknown)} is not a feature of {self.problem} problems; "
                             f"they are {', '.join(sorted(known))}")
        object.__setattr__(self, "features", features)

    def option_kinds(self) -> dict[str, OptionKind] | None:
        """`options` as a dict from name to kind (None if undeclared)."""
        return None if self.options is None else dict(self.options)

    def declares(self, option: str) -> bool:
        """Whether the backend declares `option` (none, when it declares no options)."""
        return self.options is not None and any(name == option for name, _ in self.options)

    def unsupported(self, problem: Problem) -> list[str]:
        """The features `problem` uses that these capabilities lack, sorted (its type alone, if it
        is not `problem`)."""
        if problem.problem_kind != self.problem:
            return [f"{problem.problem_kind} problems (it solves {self.problem} problems)"]
        return sorted(problem.features - (self.features or frozenset()))

    def prefers(self, problem: Problem) -> bool:
        """Whether the backend asks to go first for `problem` (`preferred_when`; never for a
        problem it does not support)."""
        return self.preferred_when is not None and not self.unsupported(problem) and bool(self.preferred_when(problem))


@dataclass(frozen=True)
class PlanningCapabilities(Capabilities):
    """`Capabilities` of a planning backend (``problem="planning"``), with what the planner's
    `vfm.planner.plan` needs to know beyond the program. Its options are declared as a market
    backend's (`Capabilities.options`, from `PLANNING_OPTIONS`) and checked by the same registry
    code; `plan` passes ``warm_start`` and ``deadline`` to a backend that declares them.

    Attributes
    ----------
    polish_start_tol : float or None
        The relative gap the backend is asked by default for a program the planner's polish takes
        to its exact optimum: where the polish converges from its answers as surely as from a
        stricter one's (None: the planner's `STRICT_TOL`, as for any other program).
    """

    problem: ProblemKind = "planning"
    polish_start_tol: float | None = None

    def __post_init__(self) -> None:
        if self.problem != "planning":
            raise ValueError(f"PlanningCapabilities are a planning backend's; got problem={self.problem!r}")
        super().__post_init__()

    @classmethod
    def of(cls, capabilities: Capabilities) -> PlanningCapabilities:
        """`capabilities` as a planning backend's: themselves, or none of the planner's extras."""
        return capabilities if isinstance(capabilities, cls) else cls()


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
        market, or when the backend produced none. The planner's `polish` starts from them.
    type_multipliers : ndarray or None
        A planning program over GPU types: the multipliers of its one-type-per-round rows (job i's
        time on round r's goods at most u_r), shape (n, R), in the same units (0 where job i has no
        row in round r). None for other programs, or when the backend produced none.
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
    type_multipliers: np.ndarray | None = None


class Backend(Protocol):
    """A solver of one problem type (`Capabilities.problem`): the scaled NSWOT program of a market
    (`vfm.program.ScaledProgram`) or a planning program (the planner's `PlanningProgram`); either
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

    def prepare(self) -> None:
        """Load what its first solve in a process would otherwise pay for (compiled kernels), so
        that a scheduler's first re-plan costs what the others do; nothing for most backends."""
        ...

    def solve(self, program: Any, **options: Any) -> Solution:
        """Solve `program`; never raise on solver failure, report it in the status."""
        ...


#: What each option kind must be (`vfm.parameters`), as messages state it.
_KINDS: dict[OptionKind, Constraint] = {
    "tolerance": Interval(Real, 0, 1, closed="neither", note="a relative accuracy; 1 or more would accept any point"),
    "count": Interval(Whole, 1),
    "seconds": Interval(Real, 0, closed="neither", finite=False),
    "instant": Real("a time.perf_counter reading (a real number)", finite=False),
    "flag": Boolean(),
    "any": Anything(),
}


def check_options(backend: Backend, options: dict[str, Any]) -> None:
    """Check `options` against what `backend` declares (`Capabilities.options`), before any solve.

    One check for every backend, market or planning: an option the backend does not declare, or
    a value not of its kind (`OptionKind`), is a caller's error. Every built-in backend checks its
    options with it as its solve starts, and `vfm.solve` checks a named market backend's before it
    builds the program. A backend that declares nothing gets its options unchecked.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the option, the backend and what the option must be (or the options it takes).
    """
    kinds = backend.capabilities.option_kinds()
    if kinds is None:
        return
    check_names(options, kinds, f"an option of solver={backend.name!r}", f"it takes: {', '.join(sorted(kinds))}")
    for name, value in options.items():
        kind = _KINDS[kinds[name]]
        # Worded only to refuse: the value's repr (a warm start's whole array) costs more than the solve's setup.
        if not kind.admits(value):
            check(f"option {name}={value!r} of solver={backend.name!r}", value, kind)
