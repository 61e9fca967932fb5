r"""One re-plan of the receding-horizon planner: forecast, solve the relaxation, round.

`plan` turns job states into an integral schedule for the next `rounds` rounds:

1. **Forecast.** With ``scenarios=1``, the forecaster's point forecast of epochs per round (the
   certainty-equivalent planner); with ``scenarios=S > 1``, `S` posterior predictive scenarios
   drawn from ``seed``.
2. **Solve** the expected-NSWOT program of `vfm.planner.program` exactly (its relaxation over
   :math:`y \in [0, 1]`), with the Shockwave options when asked for.
3. **Round** it with `vfm.planner.rounding.round_schedule`.

The relaxation's optimum bounds the objective of every integral schedule that fits the capacity,
so the result reports the rounded schedule's loss against it (`Plan.rounding_gap`).
"""

from __future__ import annotations

import time
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, read_only, require_per_job
from vfm.blas_threads import one_blas_thread
from vfm.equilibrium import Status
from vfm.forecast import DirichletForecaster, Forecaster, JobStates, SeedLike
from vfm.planner import shockwave
from vfm.planner._kernels import kernel_threads
from vfm.planner.inputs import Arguments, Inputs, JobTerms, checked_forecast, checked_inputs
from vfm.planner.kernel_loading import Forms, serving
from vfm.planner.options import STRICT_TOL, PlanOptions
from vfm.planner.pace import utility_terms, window_epochs
from vfm.planner.program import PlanningProgram, above_floor, commitments, completion_time_cost, shortest_first_budgets
from vfm.planner.rounding import RoundingContext, round_placement, round_schedule
from vfm.planner.solve.polish import polish
from vfm.planner.solve.polish import supports as polish_supports
from vfm.solvers.base import Solution
from vfm.solvers.registry import candidates, select

Fairness = Literal["none", "constraints", "relaxed"]

#: With several scenarios, rounding serves a job's owed rounds only where its expected progress is
#: at least this share of its best round's (`owed_rounds`).
OWED_PROGRESS_SHARE = 0.5


def owed_rounds(progress: FloatArray) -> np.ndarray:
    r"""The rounds in which rounding may serve job `i`'s owed rounds, shape (n, T), from the
    forecast `progress` of shape (S, n, T).

    With one scenario, every round the forecast gives the job progress in. With several, the
    rounds whose expected progress :math:`\bar a_{it} = \frac1S \sum_s a_{sit}` is positive and
    at least `OWED_PROGRESS_SHARE` of the job's best :math:`\max_t \bar a_{it}`: a round late in
    the window in which most scenarios have the job finished earns the relaxation a sliver of
    progress, and a whole round there is mostly lost (the rounding gap at 874 jobs, S = 16:
    1.6 % with every round some scenario credits, 0.7 % with this rule; docs/planning.md). One
    scenario keeps every round: its only low round is the job's last, which it needs to finish.
    """
    if progress.shape[0] == 1:
        return progress[0] > 0
    mean = progress.mean(axis=0)
    return (mean > 0) & (mean >= OWED_PROGRESS_SHARE * mean.max(axis=1, keepdims=True))


@dataclass(frozen=True, eq=False)
class Plan:
    r"""A re-plan's schedule for the window, its bound, and how it was obtained.

    Attributes
    ----------
    schedule : ndarray of bool, shape (n, T)
        ``schedule[i, t]``: job `i` runs all of round `t` on its whole gang. Finished jobs never run.
    relaxed : ndarray, shape (n, T)
        The relaxation's fractional schedule :math:`y`.
    prices : ndarray, shape (T,)
        The relaxation's price of a GPU in each round (objective units per GPU).
    bound : float
        An upper bound on the objective of any schedule within capacity: the relaxation's
        objective plus the gap its backend's multipliers certify for the objective without the
        tie-breaking term (`vfm.planner.solve.ipm.method.certified_gap`; every backend). NaN when the
        backend returned no schedule. With a service floor (`PlanOptions.service_floor`), a bound
        over the schedules that give every job its floor.
    relaxed_objective, rounded_objective : float
        The program's objective at `relaxed` and at `schedule`.
    program : PlanningProgram
        The program solved (its budgets include the FTF relaxation's priorities).
    fairness : {"none", "constraints", "relaxed"}
        No FTF targets; FTF constraints held in the relaxation (at `ftf_bound`, for every job
        that can meet its target); or they were infeasible and the priority relaxation was
        solved instead.
    ftf_bound : float
        With ``fairness="constraints"``, the bound :math:`\theta \ge \rho_{\max}` on the
        projected finish-time ratios the constraints held (`plan`'s ``reserve``); NaN otherwise.
    status : Status
        The relaxation solve's status; only `Status.OPTIMAL` certifies `bound`.
    message, solver : str
    timings : mapping of str to float
        Seconds spent in ``forecast``, ``build`` (the program, the FTF bound search and the
        maximum flow, or LP over GPU types, that checks the FTF rows have room), ``solve``
        (with the relaxation's fallback solve, if any), ``rounding`` and in ``total``.
    job_ids : tuple of hashable, or None
    committed : ndarray of bool, shape (n, T), or None
        The rounds the plan commits whole to a job so that its wait stays within
        `PlanOptions.wait_limit` (`vfm.planner.program.wait_floor`); a policy serves them before the
        others. None without a limit.
    placement : ndarray of int, shape (n, T), or None
        With GPU types (``JobTerms.speed``): the type each job runs on in each round, -1 where it
        does not run; `schedule`, `relaxed` and `prices` are then over the goods (type, round),
        K T columns type-major. None on one type.
    """

    schedule: np.ndarray
    relaxed: FloatArray
    prices: FloatArray
    bound: float
    relaxed_objective: float
    rounded_objective: float
    program: PlanningProgram
    fairness: Fairness
    ftf_bound: float
    status: Status
    message: str
    solver: str
    timings: Mapping[str, float] = field(default_factory=dict)
    job_ids: tuple[Hashable, ...] | None = None
    placement: np.ndarray | None = None
    committed: np.ndarray | None = None

    def __post_init__(self) -> None:
        # A plan is shared (a policy serves rounds from it): its arrays are read-only for good
        # (`vfm._validation.read_only`: no setflags(write=True) undoes it), its timings a
        # read-only mapping.
        for name in ("schedule", "relaxed", "prices", "placement", "committed"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, read_only(np.asarray(getattr(self, name))))
        object.__setattr__(self, "timings", MappingProxyType(dict(self.timings)))

    def __reduce__(self) -> tuple[Any, ...]:
        # A read-only mapping does not pickle: pickle a dict, and rebuild through the constructor
        # (which makes the arrays read-only again).
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return (Plan, tuple({**values, "timings": dict(self.timings)}.values()))

    @property
    def rounding_gap(self) -> float:
        r"""Relative loss of the rounded schedule against the bound, in weighted geometric-mean utility.

        .. math:: 1 - \exp\!\Big(\frac{\text{rounded} - \text{bound}}{\sum_i B_i}\Big),

        the fraction of the budget-weighted geometric mean of the jobs' progress that rounding
        costs at most (0: no loss; the NSWOT difference itself is in log units).
        """
        return float(-np.expm1((self.rounded_objective - self.bound) / self.program.budgets.sum()))

    def jobs_in_round(self, round_index: int = 0) -> list[Hashable]:
        """The jobs that run in round `round_index` (their ids if given, else their indices)."""
        rows = np.flatnonzero(self.schedule[:, round_index] if self.placement is None
                              else self.placement[:, round_index] >= 0)
        return [int(i) for i in rows] if self.job_ids is None else [self.job_ids[i] for i in rows]


def plan(
    states: JobStates,
    gpus: ArrayLike,
    capacity: ArrayLike,
    options: PlanOptions | None = None,
    *,
    forecaster: Forecaster | None = None,
    seed: SeedLike = None,
    terms: JobTerms | None = None,
    warm_start: FloatArray | None = None,
    **overrides: Any,
) -> Plan:
    r"""Plan the next `rounds` rounds: forecast, solve expected NSWOT exactly, round to whole gangs.

    Parameters
    ----------
    states : vfm.forecast.JobStates
        The `n` jobs' epochs and observed regimes. Finished jobs (no epoch left) are kept in
        place and never scheduled.
    gpus : array_like of int, shape (n,)
        Gang sizes :math:`w_i \ge 1`, each at most the largest round capacity.
    capacity : float or array_like, shape (rounds,)
        GPUs :math:`G_t` in each round.
    options : PlanOptions, optional
        The window, the Shockwave options, the backend and its accuracy (`PlanOptions`;
        default: its defaults).
    forecaster : vfm.forecast.Forecaster, optional
        Default: `vfm.forecast.DirichletForecaster()` (Shockwave's).
    seed : int, numpy.random.Generator, optional
        Makes the scenarios reproducible (with ``options.scenarios > 1``).
    terms : JobTerms, optional
        What the scheduler tells the planner about each job besides its epochs and gang: its
        budget, its finish-time-fairness target, the rounds it has waited and its speed on each
        GPU type (`JobTerms`; default: equal budgets, no targets, no waits, one GPU type).
    warm_start : ndarray, shape (n, T), or (n, K T) with `JobTerms.speed`, optional
        A previous relaxed schedule shifted to this window (``"saa-ipm"`` only; ignored otherwise).
    **overrides
        Options that replace those of `options` (``plan(..., rounds=10)`` is
        ``plan(..., PlanOptions(rounds=10))``).

    Returns
    -------
    Plan

    Raises
    ------
    vfm.errors.ValidationError
        (a `ValueError`) naming the job and field: a gang size that is not a positive whole
        number or is wider than the cluster, budgets or targets of the wrong shape or sign,
        budgets summing to more than `vfm.limits.MAX_BUDGET_SUM`, a warm start of the wrong shape or with
        an entry outside [0, 1], a masked array; naming the option (`PlanOptions`); or naming the
        forecaster's class, its method and the job when a forecast is malformed (`checked_forecast`: the wrong shape,
        NaN, an infinity, a negative value, more epochs than the job has left).

    Examples
    --------
    >>> from vfm.forecast import JobStates
    >>> from vfm.planner import plan
    >>> states = JobStates.from_lists([10, 10, 10], [{32: 60.0}, {32: 30.0}, {64: 90.0, 128: 45.0}])
    >>> result = plan(states, gpus=[1, 1, 2], capacity=2, rounds=4)
    >>> result.schedule.astype(int)  # two GPUs in every round, whole gangs
    array([[1, 1, 0, 1],
           [1, 1, 0, 1],
           [0, 0, 1, 0]])
    >>> bool(result.rounded_objective <= result.bound)
    True
    """
    started = time.perf_counter()
    inputs = checked_inputs(states, forecaster, options, overrides, Arguments(gpus, capacity, terms, warm_start))
    return plan_checked(states, inputs, forecaster, seed, started)


def plan_checked(states: JobStates, inputs: Inputs, forecaster: Forecaster | None = None, seed: SeedLike = None,
                 started: float | None = None) -> Plan:
    """`plan` of arguments already checked (`vfm.planner.inputs.Inputs`), its time limit counted from
    `started` (a `time.perf_counter` instant; default: now).

    For a caller whose jobs were checked as they arrived, as `vfm.planner.Policy` checks each job in
    `Policy.add_job` and each restored checkpoint: its re-plans hand their inputs on as they are,
    checked once at the library's boundary rather than on every re-plan."""
    clock = _Clock(time.perf_counter() if started is None else started, inputs.options.time_limit_s)
    # A window's small products gain nothing from BLAS threads (vfm.blas_threads); the per-job
    # kernels run on the options' threads, with the same plan on any number, and interpreted while a
    # fresh process compiles them (vfm.planner.kernel_loading), with the same plan too.
    with (one_blas_thread(), kernel_threads(inputs.options.threads) as threads,
          serving(*_forms(states, inputs, threads), clock.deadline)):
        forecast = _forecast(states, forecaster, inputs, seed, clock)
        built = _build(states, inputs, forecast, clock)
        solved = _solved(inputs, forecast, built, clock)
        return _round(states, inputs, forecast, built, solved, clock)


def _forms(states: JobStates, inputs: Inputs, threads: int) -> tuple[Forms, int]:
    """The kernels' forms a plan of `inputs` uses, and its window's entries (scenarios x jobs x rounds x types)."""
    types = 1 if inputs.window is None else inputs.window.capacity.shape[0]
    scenarios = inputs.options.scenarios
    return Forms.used_by(scenarios, types, threads), scenarios * states.n_jobs * inputs.options.rounds * types


@dataclass(frozen=True, eq=False)
class _Forecast:
    """`plan`'s forecast: each job's remaining seconds, whether it has finished, the rounds its gang
    fits (n, T), its epochs in each round (S, n, T), the seconds it took, the time limit's message."""

    remaining_s: FloatArray
    finished: np.ndarray
    fits: np.ndarray
    epochs: FloatArray
    seconds: float
    late: str | None


@dataclass(frozen=True, eq=False)
class _Built:
    """`plan`'s program (FTF rows, types, commitments), the progress the rounding credits, the fairness,
    the program solved above its floor `lower` and the warm start above it, the seconds, the limit."""

    program: PlanningProgram
    budgets: FloatArray  # the window's (`shortest_first_budgets`), before any priority weight
    per_round: FloatArray
    fairness: Fairness
    lateness: FloatArray | None
    ftf_bound: float
    committed: np.ndarray
    solved: PlanningProgram
    lower: FloatArray
    warm: FloatArray | None
    has_room: bool
    seconds: float
    late: str | None


@dataclass(frozen=True, eq=False)
class _Solved:
    """`plan`'s relaxation solved: the program (`_Built.program`, or its priority relaxation), its
    floor, the fairness held, the backend's solution and name, the seconds, the time limit's message."""

    program: PlanningProgram
    lower: FloatArray
    fairness: Fairness
    ftf_bound: float
    solution: Solution
    solver: str
    seconds: float
    late: str | None


def _forecast(states: JobStates, forecaster: Forecaster | None, inputs: Inputs, seed: SeedLike,
              clock: _Clock) -> _Forecast:
    """The forecast of `forecaster` (default: `DirichletForecaster()`) over the window (`window_epochs`)."""
    width, supply, window, n = inputs.width, inputs.supply, inputs.window, states.n_jobs
    model = DirichletForecaster() if forecaster is None else forecaster
    remaining_s = checked_forecast(model, "remaining_runtime", model.remaining_runtime(states), states, (n,))
    finished = states.remaining_epochs <= 0
    fits = (width[:, None] <= supply[None, :]) if window is None else window.hosts(width).any(axis=1)
    fits &= ~finished[:, None]
    epochs = window_epochs(model, states, inputs.options, remaining_s, fits, seed)
    return _Forecast(remaining_s, finished, fits, epochs, time.perf_counter() - clock.started, clock.late("forecast"))


def _build(states: JobStates, inputs: Inputs, forecast: _Forecast, clock: _Clock) -> _Built:
    """The expected-NSWOT program of the forecast, with the FTF constraints (`shockwave.constrain`),
    over the GPU types, with the rounds committed to waits and the service floor (`commitments`)."""
    opts, window, targets, late = inputs.options, inputs.window, inputs.targets, forecast.late
    finished = forecast.finished
    progress, base = utility_terms(states, forecast.epochs, finished, opts.utility)
    budgets = shortest_first_budgets(inputs.budgets, forecast.remaining_s, ~finished, opts.round_s, opts.shortest_first)
    program = PlanningProgram(
        progress=progress, base=base,
        budgets=budgets, gpus=inputs.width, capacity=inputs.supply, round_s=float(opts.round_s),
        remaining_s=forecast.remaining_s,
        # k per second of leftover from kappa per window relative to the mean log utility: scale-free.
        efficiency=float(opts.efficiency) * float(inputs.budgets[~finished].sum()) / (opts.rounds * opts.round_s),
        spread=float(opts.spread),
    )
    if opts.completion_time:
        program = replace(program, time_cost=completion_time_cost(program, float(opts.completion_time)))
    per_round = program.progress  # (S, n, T): on the jobs' reference types
    stuck = ~finished & (program.base == 0) & (program.progress.sum(axis=(0, 2)) == 0)
    require_per_job("epochs", program.base, stuck,
                    "cannot progress: the forecast gives it no epoch in any round it fits and it has done none",
                    ids=states.job_ids)
    fairness: Fairness = "none"
    lateness, ftf_bound = None, float("nan")
    if targets is not None and late is None:
        # On types the bound is judged on the reference types at the cluster's effective capacity
        # (`TypeWindow.effective_capacity`); the room below, on the program solved, over the types.
        decision = shockwave.constrain(program, targets, finished, forecast.remaining_s,
                                       inputs.supply if window is None else window.effective_capacity(forecast.fits),
                                       opts)
        program, lateness, ftf_bound = decision.program, decision.lateness, decision.ftf_bound
        fairness = "constraints"
    if window is not None:
        program = window.program(program)
    # Every backend solves the program above its floors (`above_floor`), which is the program
    # itself without them; `lower` is added back to its schedule.
    program, committed = commitments(program, opts.service_floor, inputs.waits, None if late else opts.wait_limit)
    if committed.any():  # one GPU type: a committed round is credited, so the rounding serves it
        per_round = program.progress
    solved, lower = above_floor(program, opts.service_floor, committed)
    warm = None if inputs.warm_start is None else np.maximum(inputs.warm_start - lower, 0.0)
    # Rows infeasible, or feasible only in a sliver that backends resolve differently, are relaxed
    # before any backend sees them, the same for all: judged on the program solved (one maximum
    # flow; one LP over GPU types). A check on the reference-type program of a typed window, whose
    # capacity is one type's GPUs, relaxed nine in ten re-plans at 460 jobs.
    has_room = late is None and fairness == "constraints" and solved.fairness_room(
        shockwave.FAIRNESS_MARGIN, None if clock.limit_s is None else clock.left())
    return _Built(program, budgets, per_round, fairness, lateness, ftf_bound, committed, solved, lower, warm,
                  has_room, time.perf_counter() - clock.started - forecast.seconds, late or clock.late("build"))


def _solved(inputs: Inputs, forecast: _Forecast, built: _Built, clock: _Clock) -> _Solved:
    """The relaxation solved (`_solve`) and polished (`_polished`); with FTF rows that have no room
    or that the backends find infeasible, the priority relaxation (`shockwave.relax`) instead."""
    opts, late, program, solved, lower = inputs.options, built.late, built.program, built.solved, built.lower
    fairness, ftf_bound = built.fairness, built.ftf_bound
    early = opts.polish and polish_supports(solved) is None  # backends may stop early: the polish finishes
    solution: Solution | None = None
    name = opts.solver or candidates(solved)[0].name
    if late is not None:
        solution = _unsolved(late)
    if fairness == "constraints" and solution is None:
        if built.has_room:
            solution, name = _solve(solved, opts, built.warm, early, clock.deadline)
        if solution is None or solution.status == Status.INFEASIBLE:
            assert built.lateness is not None
            program = shockwave.relax(program, built.budgets, built.lateness, opts)
            solved, lower = above_floor(program, opts.service_floor, built.committed)
            fairness, ftf_bound, solution = "relaxed", float("nan"), None
    if solution is None:
        solution, name = _solve(solved, opts, built.warm, early, clock.deadline)
    # No polish starts that a step of the solve says would end past the time limit (the interior
    # point's own rule): the polish's setup alone can take most of a step.
    step_s = solution.solve_time / max(solution.iterations, 1)
    cut = clock.limit_s is not None and clock.left() < step_s
    late = late or clock.late("solve") or (f"time limit of {clock.limit_s:g} s reached in solve" if cut else None)
    if opts.polish and late is None:
        solution, name = _polished(solved, opts, built.warm, solution, name, clock)
        late = clock.late("polish")
    return _Solved(program, lower, fairness, ftf_bound, solution, name,
                   time.perf_counter() - clock.started - forecast.seconds - built.seconds, late)


def _round(states: JobStates, inputs: Inputs, forecast: _Forecast, built: _Built, solved: _Solved,
           clock: _Clock) -> Plan:
    """The `Plan`: the relaxation rounded to whole gangs (`round_schedule`; over GPU types,
    `round_placement`), its status saying whether the time limit cut it short (`_guarded`)."""
    n, fits, per_round, lateness, window = states.n_jobs, forecast.fits, built.per_round, built.lateness, inputs.window
    program, solution, round_s = solved.program, solved.solution, float(inputs.options.round_s)
    # Without a point (every backend failed, or the time limit came first) nothing runs; the status says why.
    goods = program.shape[2]
    relaxed = solution.x + solved.lower if solution.x is not None else np.zeros((n, goods))
    prices = solution.prices if solution.prices is not None else np.full(goods, np.nan)
    placement = None
    left_s = np.where(forecast.finished, 0.0, forecast.remaining_s)
    owed, useful = owed_rounds(per_round), per_round.min(axis=0) > 0
    context = RoundingContext(lateness, program.base, useful=owed, covering=useful)
    unrounded = solution.x is None or solved.late is not None  # no point, or the time limit came first
    if window is None:
        schedule = np.zeros((n, goods), dtype=bool) if unrounded else \
            round_schedule(relaxed, inputs.width, inputs.supply, left_s, round_s, context) & fits
    else:
        rounds = inputs.options.rounds
        placement = np.full((n, rounds), -1) if unrounded else np.where(fits, round_placement(
            relaxed.reshape(n, window.types, rounds), inputs.width, window.capacity, left_s, round_s, context,
            window.pace), -1)
        schedule = window.schedule(placement)
    with np.errstate(all="ignore"):  # non-finite values are the guard's to report (`_guarded`)
        relaxed_objective = program.objective(relaxed)
        rounded_objective = program.objective(schedule.astype(np.float64))
    gap = solution.gap  # certified for the objective without the tie-breaking term, by every backend
    late = solved.late or clock.late("rounding")
    status, message = solution.status, solution.message
    if late is not None:
        message = late if message == late else f"{late} ({message})"
        if status in (Status.OPTIMAL, Status.INACCURATE) or solution.x is None:
            status = Status.ITERATION_LIMIT
    total_s = time.perf_counter() - clock.started
    forecast_s, build_s, solve_s = forecast.seconds, built.seconds, solved.seconds
    return _guarded(Plan(
        schedule=schedule, relaxed=relaxed, prices=prices, bound=relaxed_objective + gap,
        relaxed_objective=relaxed_objective, rounded_objective=rounded_objective, program=program,
        fairness=solved.fairness, ftf_bound=solved.ftf_bound, status=status, message=message, solver=solved.solver,
        timings={"forecast": forecast_s, "build": build_s, "solve": solve_s,
                 "rounding": total_s - forecast_s - build_s - solve_s, "total": total_s},
        job_ids=states.job_ids, placement=placement,
        committed=None if inputs.options.wait_limit is None else built.committed,
    ), inputs.supply)


@dataclass(frozen=True)
class _Clock:
    """`PlanOptions.time_limit_s` counted from `started` (`time.perf_counter`)."""

    started: float
    limit_s: float | None

    @property
    def deadline(self) -> float | None:
        return None if self.limit_s is None else self.started + self.limit_s

    def left(self) -> float:
        """Seconds left (inf without a limit)."""
        return float("inf") if self.limit_s is None else self.started + self.limit_s - time.perf_counter()

    def late(self, phase: str) -> str | None:
        """The message saying the limit was reached in `phase`, or None while time is left."""
        if self.limit_s is None or self.left() > 0:
            return None
        return f"time limit of {self.limit_s:g} s reached in {phase}"


def _unsolved(late: str) -> Solution:
    """No point: the time limit came before the solve."""
    return Solution(None, None, Status.ITERATION_LIMIT, late, 0, 0.0, float("nan"), gap=float("nan"))


def _guarded(plan: Plan, supply: FloatArray) -> Plan:
    """`plan`, with `Status.OPTIMAL` or `Status.INACCURATE` downgraded to `Status.ERROR` when what
    they vouch for is not so: a non-finite bound, relaxed objective, price or relaxed schedule, or
    (one GPU type; over types the rounding checks the placement) a schedule over `supply` in some
    round.

    The rounded objective may be -inf under any status: it is the program's objective of the
    schedule, -inf exactly when the schedule leaves a job with no progress yet without a round
    (the window cannot hold every such job); NaN or +inf is an error.
    """
    if plan.status not in (Status.OPTIMAL, Status.INACCURATE):
        return plan
    values = (("the bound", plan.bound), ("the relaxed objective", plan.relaxed_objective))
    problems = [f"{what} is {value}" for what, value in values if not np.isfinite(value)]
    if np.isnan(plan.rounded_objective) or plan.rounded_objective == np.inf:
        problems.append(f"the rounded objective is {plan.rounded_objective}")
    if not np.isfinite(plan.prices).all():
        problems.append(f"a price is {plan.prices[~np.isfinite(plan.prices)][0]}")
    if not np.isfinite(plan.relaxed).all():
        problems.append("the relaxed schedule is not finite")
    if plan.placement is None:
        used = plan.program.gpus @ plan.schedule
        over = used > supply * (1.0 + 1e-12)
        if over.any():
            t = int(np.argmax(over))
            problems.append(f"the schedule uses {used[t]:g} GPUs in round {t}, more than its {supply[t]:g}")
    if not problems:
        return plan
    return replace(plan, status=Status.ERROR, message=f"{plan.message}; not usable: {', '.join(problems)}")


#: `plan` keeps a backend's inaccurate solution, instead of solving again with the next backend,
#: when its certified relative gap is within this factor of the tolerance. `saa-ipm` stops short
#: of 1e-9 on a few windows whose Newton systems have no digits left at the end (the efficiency
#: rows' curvature 1e7): in the 460-job reproduction seven of 184 re-plans, at 1.2e-9 to 2.6e-9.
NEAR_TOLERANCE = 10.0


def _polished(program: PlanningProgram, options: PlanOptions, warm_start: FloatArray | None,
              solution: Solution, name: str, clock: _Clock) -> tuple[Solution, str]:
    """`solution` (from backend `name`) polished (`vfm.planner.solve.polish`), within its Newton-step
    bound and the caller's time limit (if any); should the polish not converge from a backend's
    default early start (`vfm.solvers.PlanningCapabilities.polish_start_tol`) that reached that tolerance
    (optimal), `program` solved again at `STRICT_TOL` and that polished, the message keeping both.
    Otherwise the backend's answer is kept with its own status, its message saying that the polish
    stopped.

    No wall-clock budget of its own: what the polish does depends on the program alone, not on
    how busy the machine is, so a re-plan gives the same schedule on a loaded host as on an idle
    one. Only the caller's own limit (`PlanOptions.time_limit_s`, a policy's deadline) cuts it."""
    deadline = clock.deadline
    polished = polish(program, solution, deadline=deadline)
    # A backend that stopped short of its early tolerance (inaccurate) stops at the same point when
    # asked for a stricter one (the same iterations from the same start): solving again would only
    # spend the time, and keep the first answer.
    retry = options.tol is None and solution.status == Status.OPTIMAL and solution.accuracy > STRICT_TOL
    if polished.x is not solution.x or not retry:  # `polish` keeps the point itself when it does not converge
        return polished, name
    if deadline is not None and deadline - time.perf_counter() < solution.solve_time:  # no room for a second solve
        return replace(polished, message=f"{polished.message}; no time left before the time limit to solve "
                                         f"again at tol {STRICT_TOL:g}"), name
    again, again_name = _solve(program, options, warm_start, False, deadline)
    if again.status != Status.OPTIMAL:  # the fallback did not finish: keep the first answer
        return replace(polished, message=f"{polished.message}; solved again at tol {STRICT_TOL:g}: "
                                         f"{again.message}; kept the first answer"), name
    again = polish(program, again, deadline=deadline)
    return replace(again, message=f"{polished.message}; solved again at tol {STRICT_TOL:g}: {again.message}"), \
        again_name


def _solve(program: PlanningProgram, options: PlanOptions, warm_start: FloatArray | None,
           early: bool, deadline: float | None = None) -> tuple[Solution, str]:
    """Solve with the backend `options.solver` names (default: the registry's first for planning
    programs), then, until one is optimal, with the others that support the program; each to the
    relative gap `PlanOptions.backend_tol` (stopping `early` if it may) and by `deadline`.

    A scheduler needs a dependable answer every round: the first optimal solution is used, else the
    first whose gap still bounds the optimum (INACCURATE), else the first that says the program is
    infeasible, else the last; the message keeps what the others reported. An infeasible answer
    does not stop the search: `plan` solves a program with FTF rows only when a maximum flow
    has found room for them (and one without is always feasible), so a backend that says
    infeasible has failed on it, and the next is tried. An inaccurate solution whose certified
    relative gap is within `NEAR_TOLERANCE` times the tolerance is used at once (its status stays
    inaccurate): another backend's answer would be no better established (CVXPY stops on
    Clarabel's own measure, not on the certified gap) and would cost a solve more. With a
    `deadline` only the first backend is tried: the others would start late, and the reference
    backend's model building (CVXPY's) takes seconds at scale before any time limit applies.
    """
    backends = candidates(program)
    if options.solver is not None:
        first = select(program, options.solver)
        backends = [first, *(backend for backend in backends if backend.name != first.name)]
    attempts: list[tuple[Solution, str]] = []
    for backend in backends:
        if attempts and deadline is not None:
            break
        tol = options.backend_tol(backend.capabilities, early)
        given = {"warm_start": warm_start, "deadline": deadline}  # to a backend that declares them
        solution = backend.solve(program, tol=tol, **{name: value for name, value in given.items()
                                                       if value is not None and backend.capabilities.declares(name)})
        attempts.append((solution, backend.name))
        if solution.status == Status.OPTIMAL or (
                solution.status == Status.INACCURATE and solution.relative_gap <= NEAR_TOLERANCE * tol):
            break
    # min keeps the first of equals: optimal first, then inaccurate, then infeasible, then the rest.
    rank = {Status.OPTIMAL: 0, Status.INACCURATE: 1, Status.INFEASIBLE: 2}
    solution, chosen = min(attempts, key=lambda attempt: rank.get(attempt[0].status, 3))
    others = [f"{name}: {attempt.message}" for attempt, name in attempts if attempt is not solution]
    if others:
        solution = replace(solution, message=f"{solution.message} (after {'; '.join(others)})")
    return solution, chosen
