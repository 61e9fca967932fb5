r"""The options of a re-plan, validated once when they are built.

`PlanOptions` holds what stays the same from one re-plan to the next: the window, the Shockwave
options (efficiency term, FTF bound, priority exponent, reserve), the backend and its accuracy.
`vfm.planner.plan` and `vfm.planner.Policy` take one (or keyword overrides of the defaults); a bad
option raises `vfm.errors.ValidationError` naming it when the object is built, not at the first
re-plan. What changes every re-plan (the jobs, their budgets and targets, a warm start, the seed)
stays an argument of `plan`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from vfm._validation import is_whole
from vfm.errors import UnknownSolverError, ValidationError
from vfm.forecast import check_horizon
from vfm.limits import MAX_JOB_SECONDS, MAX_WINDOW_ROUNDS
from vfm.parameters import Boolean, Constraint, Interval, OneOf, Optional, Real, Whole, check_parameters, updated
from vfm.planner._kernels.threads import THREADS
from vfm.solvers.base import Capabilities, PlanningCapabilities
from vfm.solvers.registry import available_solvers

#: The backend's relative gap by default: both backends then return the same schedule to well
#: within the rounding's resolution. A backend may declare a looser one for programs the polish
#: finishes (`vfm.solvers.PlanningCapabilities.polish_start_tol`; `backend_tol`).
STRICT_TOL = 1e-9

#: The largest `PlanOptions.efficiency` and `PlanOptions.spread` (1e6): both weigh a term against
#: the budget-weighted mean log utility, whose differences between schedules are of order 1. At a
#: million times that, the term alone decides the plan, so a larger weight means nothing more, and
#: far beyond, ``efficiency * sum(budgets)`` overflows (at 1e308 every re-plan fails on NaN).
MAX_WEIGHT = 1e6

#: The largest `PlanOptions.shortest_first` (4), the largest exponent measured: the budgets then
#: span many orders of magnitude (a job with a hundredth of the median work left has 1e8 times the
#: median budget), and the interior point's re-plans took several times longer than at 2.
MAX_SHORTEST_FIRST = 4.0

#: The options' ranges, each checked on construction (`vfm.parameters`); the types of `rounds`,
#: `round_s` and `scenarios` are the forecast horizon's (`vfm.forecast.check_horizon`), and the
#: bound of `round_s` is the planner's.
_CONSTRAINTS: dict[str, Constraint] = {
    "round_s": Interval(Real, 0, MAX_JOB_SECONDS, closed="right", unit="seconds", note="MAX_JOB_SECONDS"),
    "time_limit_s": Optional(Interval(Real, 0, closed="neither", unit="seconds")),
    "efficiency": Interval(Real, 0, MAX_WEIGHT, note="MAX_WEIGHT"),
    "rho_max": Interval(Real, 0, closed="neither"),
    "priority_exponent": Interval(Real, 0),
    "reserve": Interval(Real, 0, 1, closed="left"),
    "tol": Optional(Interval(Real, 0, 1, closed="neither", noun="a relative gap")),
    "spread": Interval(Real, 0, MAX_WEIGHT, note="MAX_WEIGHT"),
    "polish": Boolean(),
    "service_floor": Interval(Real, 0, 0.5, noun="a share of a round"),
    "wait_limit": Optional(Interval(Whole, 1, unit="rounds")),
    "pace": OneOf(("flat", "forecast")),
    "utility": OneOf(("progress", "completion")),
    "completion_time": Interval(Real, 0, MAX_WEIGHT, note="MAX_WEIGHT"),
    "shortest_first": Interval(Real, 0, MAX_SHORTEST_FIRST, note="MAX_SHORTEST_FIRST"),
    "threads": THREADS,
}


@dataclass(frozen=True)
class PlanOptions:
    r"""How `vfm.planner.plan` plans a window (frozen; validated on construction).

    Parameters
    ----------
    rounds : int
        Window length `T` (default 20), at most `MAX_WINDOW_ROUNDS` (2,000: the dense round-by-round
        systems the planner factors grow as :math:`T^2` in memory and :math:`T^3` in time).
    round_s : float
        Seconds per round (default 120), > 0 and at most `vfm.limits.MAX_JOB_SECONDS` (1e12 s, the
        bound of every span of time vfm takes in): the policy's clock is rounds served times
        `round_s`, and its finish-time targets add forecast seconds to it, so with rounds counted
        below 2^53 every such time stays below 1e28 s, finite and far from overflow (at 1.7e308 s the
        clock overflows within a few rounds and every re-plan fails).
    scenarios : int
        `S`: 1 plans on the point forecast (certainty equivalent); more plans on the sample
        average over `S` posterior predictive scenarios.
    efficiency : float
        :math:`\kappa \ge 0`, weight of the makespan term :math:`-k \max_i S_i` in units that do
        not depend on the cluster: :math:`k = \kappa \sum_i B_i / (T W)` per second of
        leftover, so :math:`\kappa` weighs the longest leftover, counted in windows, against the
        budget-weighted mean log utility (default 0: none); at most `MAX_WEIGHT` (1e6), past which
        the plan would no longer see the jobs' progress.
    rho_max : float
        :math:`\rho_{\max} > 0`, the finish-time-fairness bound the constraints aim at (default 1).
    priority_exponent : float
        :math:`\lambda \ge 0` of the priority weights :math:`\hat\rho_i^{\lambda}` (default 10;
        Shockwave uses 5 to 15).
    reserve : float
        Fraction in [0, 1) of the window's GPU-rounds the FTF constraints may not claim
        (default 0).
    solver : str or None
        The planning backend of the solver registry tried first, one of
        ``vfm.solvers.available_solvers("planning")`` (default None: the registry's first,
        ``"saa-ipm"``); the others are tried if it does not reach `tol`.
    tol : float or None
        Relative gap in (0, 1) asked of the backend (`Plan.bound` adds the certified gap, so it
        stays an upper bound at any accuracy). Default None: `STRICT_TOL` (1e-9), except that for a
        program the polish takes to its exact optimum a backend may declare a looser start
        (`vfm.solvers.PlanningCapabilities.polish_start_tol`: ``"saa-ipm"`` 1e-7); `backend_tol`,
        docs/planning.md, "The polish's start".
    spread : float
        :math:`\delta \ge 0`, weight of the tie-breaking term that makes the optimal schedule
        unique (default 0.1; 0 solves the program as it is); at most `MAX_WEIGHT` (1e6), as
        `efficiency`.
    polish : bool
        Take the backend's schedule to the program's exact optimum (`vfm.planner.solve.polish`: one
        scenario, spread > 0; other programs keep the backend's schedule), so that
        every backend and tolerance serves the same jobs (default True; docs/planning.md, "The
        polish"). The polish is bounded in Newton steps (`vfm.planner.solve.polish.MAX_STEPS`), not in
        seconds, so that a re-plan's schedule does not depend on the machine's load; only
        `time_limit_s` cuts it short. When the polish stops, the backend's own answer is kept
        with its status and the message says so.
    pace : {"flat", "forecast"}
        What a round of running is worth to a job in the program. ``"flat"`` (default): the
        same in every round, the job's remaining epochs spread evenly over its forecast remaining
        runtime, so a job's progress depends on how many rounds it runs, not on when
        (`vfm.planner.pace.flat_pace`; docs/planning.md, "Progress that does not depend on the
        calendar"). ``"forecast"``: the forecaster's epochs per round as they come, which credit
        a deferred job the speed it would have reached by running.
    utility : {"progress", "completion"}
        What a job's utility in the window measures. ``"progress"`` (default): the share of its
        total work done by the window's end, Shockwave's NSWOT. ``"completion"``: the share of its
        remaining work the window does, on a base of `vfm.planner.pace.COMPLETION_BASE`; a job that
        finishes in the window reaches its whole utility, so one round from its end it outbids a
        job that has just begun (docs/planning.md, "What a job's utility measures"). One GPU
        type or several, one scenario or many.
    completion_time : float
        :math:`\lambda \ge 0`, the weight of the jobs' budget-weighted mean busy time in the window
        (`vfm.planner.program.completion_time_cost`; default 0: none), so that progress earlier is
        worth more and a short job runs before a long one where the logarithms are indifferent
        (docs/planning.md, "When progress comes"); at most `MAX_WEIGHT` (1e6), as `efficiency`.
    shortest_first : float
        :math:`\alpha \ge 0`: the window's budgets favour the jobs with less running time left,
        :math:`B_i (\tilde T / \hat T_i)^\alpha` (`vfm.planner.program.shortest_first_budgets`;
        default 0: the budgets as given). In a Fisher market a buyer's share grows with its budget,
        so the market then leans towards running the shortest jobs first (Smith's rule), which
        lowers the mean completion time, while the logarithms still give every job a share and the
        FTF rows still bound every job's finish (docs/planning.md, "When progress comes"); at most
        `MAX_SHORTEST_FIRST` (4).
    service_floor : float
        A share in [0, 0.5] of every round that each job that can run in it gets at least
        (`vfm.planner.program.above_floor`; default 0: none). Re-planning moves a job's planned
        rounds to the window's cheaper late rounds again and again; a floor gives it a share of
        the round being served, so a policy serving by credit runs it within about 1 / floor rounds
        (docs/planning.md, "A service floor"). One scenario or many (the program above the floor
        then has a base per scenario), one GPU type.
    wait_limit : int or None
        Rounds a job may wait in a row (default None: no limit). Each plan commits a whole round,
        within the window, to every job whose wait would pass the limit there, before it does
        (`vfm.planner.program.wait_floor`), given the rounds each job has waited (`vfm.planner.plan`'s
        ``waited``); the rest of the window is planned around those commitments, and a policy serves
        a committed round before the others (docs/planning.md, "A limit on waits"). One scenario or
        many, one GPU type.
    time_limit_s : float or None
        Seconds one `vfm.planner.plan` call may take (default None: no limit). `plan` checks the
        time between its phases, before every interior-point iteration (none starts that the last
        one's duration says would end past the limit) and every polish step, and gives the build's
        LP over GPU types what is left; once it is exceeded (or a step would pass it) it returns
        the best relaxation it has, neither polished nor rounded (its schedule runs nothing) and,
        with the tie-breaking term, without a certified gap (NaN: that certificate costs about a
        step), with status `Status.ITERATION_LIMIT` (never `Status.OPTIMAL`), its message saying
        in which phase ("time limit of 0.05 s reached in solve"). A scheduler serves its standing
        plan on such a status.
    threads : int or None
        Threads of the per-job work of the ``"saa-ipm"`` backend and the polish
        (`vfm.planner._kernels.kernel_threads`). The plan is the same bit for bit on any number of
        threads: each job's work writes its own outputs and the sums over jobs are taken in chunks
        of a fixed size, in a fixed order. Default None: one thread
        (`vfm.planner._kernels.threads.DEFAULT_THREADS`), because the kernels of a window of a few
        hundred jobs are too short to gain from more: more threads pay for windows of thousands
        of jobs on a host with idle cores, with the ``threads`` extra installed (Intel's TBB;
        docs/guarantees.md, "Kernel threads", gives the measurements). Values above the CPUs
        (Numba's ``NUMBA_NUM_THREADS``) are capped to them.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the first option out of its range; `vfm.errors.UnknownSolverError` (also a
        `ValueError`) for a backend that does not exist.

    Examples
    --------
    >>> from vfm.planner import PlanOptions
    >>> options = PlanOptions(rounds=10, efficiency=0.05)
    >>> options.rounds, options.scenarios
    (10, 1)
    >>> PlanOptions(reserve=1.5)
    Traceback (most recent call last):
    ...
    vfm.errors.ValidationError: reserve must be a number in [0, 1), got 1.5
    """

    rounds: int = 20
    round_s: float = 120.0
    scenarios: int = 1
    efficiency: float = 0.0
    rho_max: float = 1.0
    priority_exponent: float = 10.0
    reserve: float = 0.0
    solver: str | None = None
    tol: float | None = None
    spread: float = 0.1
    polish: bool = True
    pace: Literal["flat", "forecast"] = "flat"
    utility: Literal["progress", "completion"] = "progress"
    completion_time: float = 0.0
    shortest_first: float = 0.0
    service_floor: float = 0.0
    wait_limit: int | None = None
    time_limit_s: float | None = None
    threads: int | None = None

    def check_over_types(self, over_types: bool) -> None:
        """Refuse, for a program over GPU types (`over_types`), the options that apply to one GPU
        type: the service floor and the wait limit (the program over types has no floors)."""
        if over_types and (self.service_floor or self.wait_limit is not None):
            raise ValidationError("service_floor and wait_limit apply to one GPU type, not over several; pass "
                                  "service_floor=0 and wait_limit=None")

    def __post_init__(self) -> None:
        # Before `check_horizon`, which checks the type and sign: the bound is the planner's own.
        if is_whole(self.rounds) and self.rounds > MAX_WINDOW_ROUNDS:
            raise ValidationError(f"rounds must be at most {MAX_WINDOW_ROUNDS} (MAX_WINDOW_ROUNDS: the planner "
                                  f"factors dense round-by-round systems, O(rounds^2) memory and O(rounds^3) time), "
                                  f"got {self.rounds!r}; plan a shorter window and re-plan as it recedes")
        check_horizon(self.rounds, self.round_s, self.scenarios)
        check_parameters(vars(self), _CONSTRAINTS)
        if self.solver is not None and self.solver not in available_solvers("planning"):
            raise UnknownSolverError(f"solver must be one of the installed planning backends "
                                     f"{list(available_solvers('planning'))} or None, got {self.solver!r}")

    def backend_tol(self, capabilities: Capabilities, early: bool) -> float:
        """The relative gap asked of a backend with `capabilities`: `tol`, or by default its
        `polish_start_tol` if `early` (the polish will take its answer to the exact optimum) and it
        declares one, else `STRICT_TOL`."""
        if self.tol is not None:
            return float(self.tol)
        start = PlanningCapabilities.of(capabilities).polish_start_tol
        return start if early and start is not None else STRICT_TOL

    def updated(self, **overrides: Any) -> PlanOptions:
        """A copy with `overrides` (validated like the constructor's arguments).

        Raises
        ------
        vfm.errors.ValidationError
            For a name that is not an option, or a value out of its range.
        """
        return updated(self, "planning option", **overrides)
