r"""Shockwave's program on top of the planner, in one place: targets, constraints, priorities, execution.

The NSDI'23 Shockwave paper makes a plain NSWOT planner fair over a job's lifetime with four
mechanisms, each with one owner here:

- **Finish-time targets** (`updated_targets`): job `i`'s target :math:`FT^*_i` is when it would
  finish with an equal share of the cluster (`vfm.jobs.equal_share`), a momentum average over
  re-plans (``FT* <- 0.9 FT* + 0.1 estimate``) so that it does not chase the forecast.
- **Constraints and their bound** (`constrain`, `FairFinishLimits`): each job's leftover after
  the window must let it finish by :math:`\theta FT^*_i`; :math:`\theta` is the smallest bound
  :math:`\ge \rho_{\max}` at which the constraints fit the share of the cluster the reserve leaves.
- **Priorities** (`priority_weights`, `relax`): a job that cannot meet its target, or every job
  when the constraints are infeasible (Shockwave's relaxation), has its log utility weighted by
  its projected ratio to the power :math:`\lambda` (the priority exponent).
- **Execution** (`serve_with_credit`): rounds are served from the standing plan by the credit
  each job has carried, most credit first; jobs that have waited too long first of all
  (`overdue_order`, the no-starvation guarantee `wait_bound`).

`vfm.planner.plan` and `vfm.planner.Policy` call these; the constants of the configuration the
reproduction runs (`vfm.planner.Policy.shockwave`) are here too. docs/planning.md states the
mathematics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from vfm._validation import FloatArray
from vfm.gang_packing import first_fit
from vfm.jobs import equal_share
from vfm.planner.options import PlanOptions
from vfm.planner.program import PlanningProgram
from vfm.planner.rounding import RESOLUTION, quantize

__all__ = ["GUARDS", "SHOCKWAVE_EFFICIENCY", "SHOCKWAVE_PRIORITY_EXPONENT", "SHOCKWAVE_RESERVE",
           "TYPED_SHOCKWAVE_EFFICIENCY", "FairFinishLimits", "FairnessDecision", "Precedence", "constrain",
           "guards_fired", "overdue_order", "priority_weights", "relax", "serve_with_credit", "served_first",
           "updated_targets", "wait_bound"]

#: The Shockwave configuration (`vfm.planner.Policy.shockwave`), one for every cluster: the
#: efficiency term's kappa (`PlanOptions.efficiency`: the longest forecast leftover, in windows,
#: against the mean log utility), chosen among 1 and 3 on the choose half of
#: ``benchmarks.robustness``; the reserve of each window's GPU-rounds the finish-time-fairness
#: constraints leave to it, chosen on the 120- and 900-job Shockwave workloads (docs/results.md).
SHOCKWAVE_EFFICIENCY = 1.0
SHOCKWAVE_RESERVE = 0.3
#: The priority exponent of the FTF relaxation, one for every cluster: chosen on the choose half
#: of ``benchmarks.robustness`` among the artifact's per-size values 5, 12 and 15 (its table
#: gave 12 at 32 GPUs, 15 at 128 and 5 at 256).
SHOCKWAVE_PRIORITY_EXPONENT = 15.0
#: What a job's utility in the window measures under `vfm.planner.Policy.shockwave` on one GPU type
#: (`PlanOptions.utility`): the share of its remaining work the window does, so that finishing counts.
SHOCKWAVE_UTILITY = "completion"
#: The weight of the mean busy time of the jobs that can finish in the window under
#: `vfm.planner.Policy.shockwave` on one GPU type (`PlanOptions.completion_time`): chosen among
#: 0.03, 0.1, 0.3 and 1 on the choose half of ``benchmarks.robustness`` (0.1 to 1 met the same
#: targets there; 0.3 is the middle of that plateau), reported on its report half.
SHOCKWAVE_COMPLETION_TIME = 0.3
#: The efficiency term's kappa of `vfm.planner.Policy.shockwave` on a cluster of several GPU types.
#: Chosen on generated workloads (``generated-0`` and ``generated-1`` of `benchmarks.heterogeneous`,
#: 120 jobs on 32 GPUs, thirds and V100-heavy), not on the traces: against Gavel's heterogeneity-aware
#: max-min, 0.25 met the worst-FTF and unfair-share targets on all four and gave 1.14x to 1.18x the
#: makespan; 1 met 6 of 12 targets (unfair share on one), 0 traded makespan (1.05x to 1.09x) for
#: fairness (docs/results.md, "Clusters of several GPU types").
TYPED_SHOCKWAVE_EFFICIENCY = 0.25

#: Momentum of the finish-time-fairness targets: FT* <- 0.9 FT* + 0.1 estimate.
TARGET_MOMENTUM = 0.9
#: With `execution="credit"`: the most rounds a job can owe for rounds it ran beyond its plan.
CREDIT_FLOOR = -2.0
#: Rounds a job with work left may go without running before it is served ahead of every job
#: that has waited less (`overdue_order`; the guarantee is `wait_bound`).
MAX_WAIT = 80
#: Rounds a job may wait in a row under `vfm.planner.Policy.shockwave` (`PlanOptions.wait_limit`):
#: one window of 20 rounds, 40 minutes of 120 s rounds. The target itself, not a tuned value.
WAIT_LIMIT = 20
#: Rounds of credit a job that ran in the previous round may run ahead of its plan before it
#: yields its gang (`serve_with_credit`), for a job whose restart costs `DEFAULT_RESTART_S` on
#: rounds of `CONTINUITY_ROUND_S`; other costs and rounds scale it (`job_continuity`).
CONTINUITY = 2.0
#: Seconds a job loses per start or restart when the scheduler does not say (`Policy.add_job`'s
#: ``restart_s=None``): the simulator's default (`vfm.cluster.simulate`'s ``restart_s``), the
#: restart cost `CONTINUITY` was chosen for.
DEFAULT_RESTART_S = 20.0
#: The round length `CONTINUITY` was chosen for (the Shockwave traces' 120 s rounds).
CONTINUITY_ROUND_S = 120.0


def job_continuity(continuity: float, restart_s: FloatArray, round_s: float = CONTINUITY_ROUND_S) -> FloatArray:
    r"""Rounds of credit each job that ran in the previous round may run ahead of its plan, shape
    (n,): `continuity` (the configured one, `CONTINUITY` by default) scaled by the job's restart
    cost `restart_s` (seconds, shape (n,)) over `DEFAULT_RESTART_S` and by `CONTINUITY_ROUND_S`
    over the round length `round_s`.

    A job that stops and starts again every :math:`k` rounds loses :math:`s_i / (k \, T)` of its
    time to restarts (restart cost :math:`s_i`, rounds of :math:`T` seconds). Running up to
    :math:`c_i` rounds ahead of its plan stretches its runs: two jobs planned half a GPU each swap
    every :math:`k = 2 c_i + 1` rounds instead of every round. With
    :math:`c_i = c \, (s_i / s_0) (T_0 / T)` (:math:`s_0` = `DEFAULT_RESTART_S`, :math:`T_0` =
    `CONTINUITY_ROUND_S`) the share it loses, :math:`s_i / ((2 c_i + 1) T)`, stays below
    :math:`s_0 / (2 c T_0)`, the share `CONTINUITY` allows the default job on its rounds, whatever
    the job's restart cost and the round length: a job dear to restart runs further ahead, and no
    further than keeps that share (in seconds, :math:`c_i T` grows with the restart cost, not
    with the round). The default job on 120-s rounds keeps exactly :math:`c`; a job that restarts
    for free gets no continuity.

    >>> job_continuity(2.0, np.array([20.0, 200.0, 0.0])).tolist()
    [2.0, 20.0, 0.0]
    >>> job_continuity(2.0, np.array([20.0, 200.0]), round_s=360.0).round(3).tolist()
    [0.667, 6.667]
    """
    return continuity * (np.asarray(restart_s, dtype=np.float64) / DEFAULT_RESTART_S) * (CONTINUITY_ROUND_S / round_s)


def updated_targets(previous_at_s: FloatArray, estimate_at_s: FloatArray) -> FloatArray:
    """Each job's target finish instant after this re-plan, shape (n,): the momentum average of
    its previous target (NaN for a job without one yet, which takes its estimate) and `estimate_at_s`,
    the instant it would finish with an equal share from now."""
    averaged = TARGET_MOMENTUM * previous_at_s + (1 - TARGET_MOMENTUM) * estimate_at_s
    return np.where(np.isnan(previous_at_s), estimate_at_s, averaged)


#: `plan` relaxes the FTF constraints for every backend when no schedule meets them all with this
#: margin (rounds, `PlanningProgram.fairness_room`).
FAIRNESS_MARGIN = 1e-3

#: Share of the GPU-rounds available to the FTF constraints that a relaxed bound leaves free.
_RELAXED_BOUND_MARGIN = 0.01


@dataclass(frozen=True)
class FairFinishLimits:
    r"""The FTF constraints' leftover limits as functions of the bound :math:`\theta`.

    :math:`b_i(\theta) = \max(0, s (\theta FT^*_i - T W))` with the equal share :math:`s`.
    :math:`S_i \ge 0`, so a target inside the window asks the job to finish within it
    (:math:`S_i = 0`), not before the window ends (impossible as written).
    """

    program: PlanningProgram
    targets_s: FloatArray
    share: float
    window_s: float

    def leftover_limit_s(self, bound: float) -> FloatArray:
        r""":math:`b_i(\theta)`, shape (n,); infinite for finished jobs."""
        limit = np.maximum(self.share * (bound * self.targets_s - self.window_s), 0.0)
        return np.where(self.program.open_jobs, limit, np.inf)

    def rounds_needed(self, bound: float) -> FloatArray:
        r"""Rounds of the window job `i` must run to meet :math:`b_i(\theta)`, shape (n,)."""
        program = self.program
        return np.maximum(program.remaining_s - self.leftover_limit_s(bound), 0.0) / program.round_s

    def hopeless(self, bound: float) -> np.ndarray:
        r"""Jobs that miss :math:`b_i(\theta)` even running every round they can progress in."""
        return self.rounds_needed(bound) > self.program.runnable.sum(axis=1) + 1e-9

    def without_room(self, bound: float) -> np.ndarray:
        r"""Jobs that meet :math:`b_i(\theta)` only by running all but `FAIRNESS_MARGIN` of every
        round they can progress in: their constraint leaves no interior, which backends resolve
        differently (and saa-ipm not at all)."""
        needed = self.rounds_needed(bound)
        return (needed > 0) & (needed > self.program.runnable.sum(axis=1) - FAIRNESS_MARGIN)

    def tightest_bound(self, rho_max: float, excluded: np.ndarray, gpu_rounds: FloatArray) -> float:
        r"""The smallest :math:`\theta \ge \rho_{\max}` at which the jobs not `excluded` fit
        `gpu_rounds` (shape (T,), GPU-rounds per round available to the constraints).

        A job can only run in its `runnable` rounds, the last of which is its deadline, so this
        is the condition of earliest-deadline-first: for every round `t`, the GPU-rounds needed
        by the jobs whose last runnable round is at most `t` fit those of rounds 0..t. It is
        necessary, not sufficient (the solver has the last word); the need falls as
        :math:`\theta` grows, so the bound is found by bisection, to a relative 1e-6. A bound
        above :math:`\rho_{\max}` leaves `_RELAXED_BOUND_MARGIN` of the GPU-rounds free.
        """
        program = self.program
        _, _, rounds = program.shape
        runnable = program.runnable & ~excluded[:, None]
        last = np.where(runnable.any(axis=1), rounds - 1 - np.argmax(runnable[:, ::-1], axis=1), -1)
        jobs = last >= 0
        available = np.cumsum(gpu_rounds)

        def excess(bound: float, fraction: float = 1.0) -> float:
            need = np.bincount(last[jobs], weights=(program.gpus * self.rounds_needed(bound))[jobs],
                               minlength=rounds)
            return float((np.cumsum(need) - fraction * available).max())

        if excess(rho_max) <= 0:
            return rho_max
        # A relaxed bound leaves a margin: at the very edge of feasibility the interior is empty
        # to rounding and an interior-point method cannot converge.
        fraction = 1.0 - _RELAXED_BOUND_MARGIN
        # At theta_i every limit covers job i's whole remaining time: nothing is needed.
        with np.errstate(divide="ignore"):
            enough = (program.remaining_s / self.share + self.window_s) / self.targets_s
        low, high = rho_max, max(rho_max, float(np.where(jobs, enough, 0.0).max()))
        while high - low > 1e-6 * high:
            middle = 0.5 * (low + high)
            low, high = (middle, high) if excess(middle, fraction) > 0 else (low, middle)
        return high


#: The largest ratio of priority weights in the FTF relaxation (see `priority_weights`).
_PRIORITY_RANGE = 1e4


def priority_weights(lateness: FloatArray, rho_max: float, exponent: float) -> FloatArray:
    r""":math:`\hat\rho_i^{\lambda}` for the jobs projected past :math:`\rho_{\max}`, 1 for the others.

    Computed in logarithms: :math:`\hat\rho^{\lambda}` overflows for late jobs (:math:`30^{12}`
    is already 5e17). When the weights would span more than `_PRIORITY_RANGE`, the late jobs'
    weights are divided by a common factor (at least 1 each): the ratios among the late jobs
    are kept, and a weight ratio beyond that range would be below any solver's accuracy anyway.
    """
    late = lateness > rho_max
    finite = np.minimum(np.where(late, lateness, 1.0), np.finfo(np.float64).max)
    log_priority = np.where(late, exponent * np.log(finite), 0.0)
    excess = max(0.0, float(log_priority.max(initial=0.0)) - np.log(_PRIORITY_RANGE))
    return np.exp(np.where(late, np.maximum(log_priority - excess, 0.0), 0.0))


@dataclass(frozen=True, eq=False)
class FairnessDecision:
    """What `constrain` makes of a program: the program with its FTF constraints and weights, each
    job's projected FTF ratio (``lateness``, 0 for finished jobs) and the bound :math:`\theta`.
    Whether the constraints leave room (`FAIRNESS_MARGIN`) is for the caller to judge on the
    program it solves (`vfm.planner.plan`: over the GPU types on a typed window)."""

    program: PlanningProgram
    lateness: FloatArray
    ftf_bound: float


def constrain(program: PlanningProgram, targets_s: FloatArray, finished: np.ndarray, remaining_s: FloatArray,
              supply: FloatArray, options: PlanOptions) -> FairnessDecision:
    r"""Add the finish-time-fairness constraints :math:`S_i \le b_i(\theta)` to `program`.

    A job that cannot meet its target even running every round it can progress in gets the
    relaxation's priority weight instead of a constraint; the others keep theirs. `supply` is the
    capacity per round (T,); `targets_s` the targets :math:`FT^*_i` in seconds from now (n,).
    """
    rounds = supply.size
    share = equal_share(program.shape[1], float(supply.mean()))
    lateness = np.where(finished, 0.0, remaining_s / share / targets_s)
    limits = FairFinishLimits(program, targets_s, share, rounds * program.round_s)
    hopeless = limits.hopeless(options.rho_max)
    bound = limits.tightest_bound(options.rho_max, hopeless, (1.0 - options.reserve) * supply)
    hopeless |= limits.without_room(bound)
    budgets = program.budgets * np.where(
        hopeless, priority_weights(lateness, options.rho_max, options.priority_exponent), 1.0)
    constrained = replace(program, leftover_limit_s=np.where(hopeless, np.inf, limits.leftover_limit_s(bound)),
                          budgets=budgets)
    return FairnessDecision(constrained, lateness, bound)


def relax(program: PlanningProgram, budgets: FloatArray, lateness: FloatArray, options: PlanOptions) -> PlanningProgram:
    """Shockwave's relaxation: no FTF constraints; the jobs projected past :math:`\rho_{\\max}`
    weighted by `priority_weights` on top of their `budgets`."""
    priority = priority_weights(lateness, options.rho_max, options.priority_exponent)
    return replace(program, leftover_limit_s=None, budgets=budgets * priority)


def overdue_order(waited: np.ndarray, open_: np.ndarray, max_wait: int | None) -> np.ndarray:
    """The jobs served before any other this round: those with work left (`open_`) that have
    waited `max_wait` rounds or more, longest wait first, ties in plan (arrival) order."""
    if max_wait is None:
        return np.empty(0, dtype=np.int64)
    due = np.flatnonzero(open_ & (waited >= max_wait))
    return due[np.argsort(-waited[due], kind="stable")]


def committed_order(committed: np.ndarray | None, column: int, waited: np.ndarray) -> np.ndarray:
    """The jobs a plan commits round `column` of its window to (`vfm.planner.Plan.committed`),
    longest wait first, ties in plan (arrival) order; none without commitments."""
    if committed is None or column >= committed.shape[1]:
        return np.empty(0, dtype=np.int64)
    jobs = np.flatnonzero(committed[:, column])
    return jobs[np.argsort(-waited[jobs], kind="stable")]


def served_first(first: np.ndarray, order: np.ndarray) -> np.ndarray:
    """`order` with the jobs `first` moved to its front, in `first`'s order."""
    return np.concatenate([first, order[~np.isin(order, first)]])


def wait_bound(max_wait: int, capacity: float, gang: int | np.ndarray, demand: float) -> int | np.ndarray:
    r"""The most rounds a job of `gang` GPUs with work left goes without running (the guarantee).

    A job that has waited `max_wait` rounds is served before every job that has waited less,
    longest wait first, whole gangs first-fit. Each round it is not served, the overdue jobs
    ahead of it hold more than ``capacity - gang`` GPUs and leave the queue for `max_wait`
    rounds once served, and a job that becomes overdue later queues behind it; so it waits at
    most :math:`M + \lfloor (D - g) / (C - g + 1) \rfloor` rounds, with `demand` :math:`D` the
    GPUs wanted by the jobs present when it became overdue (at most the largest demand of a
    run). With one-GPU jobs that is :math:`M + \lfloor (N - 1) / C \rfloor` for :math:`N` jobs.
    """
    return max_wait + np.floor_divide(np.maximum(demand - gang, 0), capacity - gang + 1).astype(np.int64)


@dataclass(frozen=True)
class Precedence:
    """Who the credit execution serves ahead of the credit order, and how it ranks the rest
    (`credit_order`, `serve_with_credit`).

    Attributes
    ----------
    overdue : ndarray of int, optional
        Jobs placed before every other (`overdue_order`), in that order: the `max_wait` guard.
    committed : ndarray of int, optional
        Jobs the plan commits this round to (`vfm.planner.Plan.committed`), served after `overdue`
        and before the others: the plan's own decision, not a guard.
    ran_last : ndarray of bool, shape (n,), optional
        Jobs that ran in the previous round.
    continuity : float or ndarray, shape (n,)
        Rounds of credit a job that ran in the previous round may run ahead of its plan before it
        yields its gang: each stop and start costs a restart, so a job owed half the rounds runs
        longer stretches instead of every other round. One number for every job, or one per job
        (`job_continuity`: from each job's restart cost and the round length).
    owed_first : bool
        Serve the jobs owed a whole round (of what they can use) before the others, and give
        continuity only to the jobs planned `OWED_FIRST_CONTINUITY_SHARE` of this round or more:
        the execution of a plan with a service floor (`vfm.planner.PlanOptions.service_floor`).
    """

    overdue: np.ndarray | None = None
    committed: np.ndarray | None = None
    ran_last: np.ndarray | None = None
    continuity: float | FloatArray = 0.0
    owed_first: bool = False

    @property
    def guarded(self) -> np.ndarray:
        """The overdue jobs the guard, not a commitment, puts first."""
        overdue = np.empty(0, dtype=np.int64) if self.overdue is None else self.overdue
        return overdue if self.committed is None else overdue[~np.isin(overdue, self.committed)]


def credit_order(program: PlanningProgram, planned: FloatArray, credit: FloatArray,
                 precedence: Precedence = Precedence()) -> tuple[FloatArray, np.ndarray]:
    """What each job is owed this round (credit plus `planned`, read to `RESOLUTION`) and the jobs
    with a claim in the order `serve_with_credit` serves them (arguments as there)."""
    want = quantize(credit + planned)
    ran_last, owed_first = precedence.ran_last, precedence.owed_first
    if ran_last is not None and owed_first:
        # Continuity only for the jobs the plan gives half a round or more: a job planned a small
        # share that runs ahead of it waits that many rounds over again (docs/planning.md).
        ran_last = ran_last & (planned >= OWED_FIRST_CONTINUITY_SHARE)
    claim = want if ran_last is None else quantize(want + precedence.continuity * ran_last)
    remaining = np.where(program.open_jobs, program.remaining_s, 0.0)
    # Most credit first, counted in rounds the job can use: a job that needs a tenth of a round
    # to finish and is owed that tenth is owed all it can use, as much as a job owed a whole
    # round (without this, a job one epoch from the end is owed a hundredth of a round per
    # round and waits for dozens). Read to vfm.planner.rounding.RESOLUTION; ties to the longest
    # forecast time left, then to arrival order.
    usable = np.clip(remaining / program.round_s, RESOLUTION, 1.0)
    # With `owed_first`, the jobs owed a whole round of what they can use come before the others.
    owed = quantize(want / usable) >= 1.0 if owed_first else np.zeros(want.size, dtype=bool)
    order = np.lexsort((-remaining, -quantize(claim / usable), ~owed))  # stable
    order = order[(claim[order] > 0) & (remaining[order] > 0)]
    # The plan's commitments, then the overdue jobs before them: `wait_bound` holds whatever the plan says.
    if precedence.committed is not None:
        order = served_first(precedence.committed, order)
    if precedence.overdue is not None:
        order = served_first(precedence.overdue, order)
    return want, order


#: With a service floor, continuity applies only to the jobs planned at least this share of the round.
OWED_FIRST_CONTINUITY_SHARE = 0.5

#: The execution's guards, in the order `guards_fired` counts them.
GUARDS = ("max_wait", "continuity", "credit_floor")


def guards_fired(ran: np.ndarray, first: np.ndarray, *, want: FloatArray | None = None,
                 by_credit: np.ndarray | None = None, owed: FloatArray | None = None,
                 floor: float | FloatArray = CREDIT_FLOOR) -> dict[str, int]:
    """How many jobs each guard of the execution decided this round, by name (`GUARDS`).

    ``max_wait``: overdue jobs (`first`, `overdue_order`) that ran. ``continuity``: jobs placed by
    the credit order (`by_credit`, bool (n,)) while owed nothing of their own (`want` <= 0): the
    continuity bonus alone put them there. ``credit_floor``: jobs whose credit after the round
    (`owed`, before the floor) is below the credit floor (`floor`: `CREDIT_FLOOR`, or per job), so
    that the floor raised it. Without `want` and `by_credit` (window execution) continuity counts
    0; without `owed`, the floor does.
    """
    continued = 0 if want is None or by_credit is None else int((by_credit & (quantize(want) <= 0)).sum())
    floored = 0 if owed is None else int((owed < floor).sum())
    return {"max_wait": int(ran[first].sum()), "continuity": continued, "credit_floor": floored}


def serve_with_credit(program: PlanningProgram, planned: FloatArray, credit: FloatArray, capacity: float,
                      precedence: Precedence = Precedence()) -> tuple[np.ndarray, FloatArray, dict[str, int]]:
    """One round served from a standing plan by carried credit.

    Parameters
    ----------
    program : PlanningProgram
        The plan's program (gangs, bases, forecast time left).
    planned : ndarray, shape (n,)
        The plan's relaxed share of each job in this round.
    credit : ndarray, shape (n,)
        Rounds each job is owed (negative: owes) from the rounds served before.
    capacity : float
        GPUs this round.
    precedence : Precedence
        Who goes ahead of the credit order, continuity and the service floor's rules.

    Returns
    -------
    ran : ndarray of bool, shape (n,)
    credit : ndarray, shape (n,)
        The credit after this round: owed plus planned minus run, at least `CREDIT_FLOOR`.
    fired : dict of str to int
        How many jobs each guard decided (`guards_fired`).
    """
    want, order = credit_order(program, planned, credit, precedence)
    chosen = first_fit(order, program.gpus, capacity)
    remaining = np.where(program.open_jobs, program.remaining_s, 0.0)
    ran = np.zeros(want.size, dtype=bool)
    ran[chosen] = True
    by_credit = ran.copy()
    waiting = np.flatnonzero(~ran & program.open_jobs)
    free = capacity - float(program.gpus[chosen].sum())
    ran[first_fit(waiting[np.argsort(-remaining[waiting], kind="stable")], program.gpus, free)] = True
    # A job that ran beyond its plan (idle GPUs) owes at most `CREDIT_FLOOR` rounds for it. With
    # `owed_first`, at most that share of the rounds it can use (a job a few seconds from its end
    # owing two rounds would wait for them with its last epoch), scaled down with its planned share
    # below `OWED_FIRST_CONTINUITY_SHARE` (a debt repaid at a small share is a long wait).
    owed = want - ran
    floor = CREDIT_FLOOR * (np.clip(remaining / program.round_s, RESOLUTION, 1.0)
                            * np.minimum(1.0, planned / OWED_FIRST_CONTINUITY_SHARE) if precedence.owed_first
                            else 1.0)
    # An overdue job that a commitment serves anyway is the plan's decision, not the guard's.
    fired = guards_fired(ran, precedence.guarded, want=want, by_credit=by_credit, owed=owed, floor=floor)
    return ran, np.maximum(owed, floor), fired
