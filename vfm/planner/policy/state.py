"""What a policy remembers and how it is configured: `JobRecord`, `RoundOptions`, `PolicyConfig`,
`PolicyState`.

Plain frozen records, below both the policy that changes them (`vfm.planner.policy`) and the
checkpoint format that writes and reads them (`vfm.planner.policy.checkpoint`).
"""

from __future__ import annotations

import functools
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from functools import partial
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from vfm._validation import FloatArray, checked_regime_pairs, read_only
from vfm.forecast import Forecaster, Trajectory
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_BUDGET, MAX_JOB_EPOCHS, MAX_JOB_SECONDS
from vfm.parameters import (
    Boolean,
    Constraint,
    Hashed,
    Interval,
    OneOf,
    Optional,
    Real,
    Whole,
    check,
    check_parameters,
    updated,
)
from vfm.planner import shockwave
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan


@dataclass(frozen=True)
class JobRecord:
    """What the policy knows of one job (read-only).

    ``stages`` holds the epochs observed, in the order they ran, as runs ``(column in regimes,
    epochs)`` (a handful per job: a report is O(its epochs)); the counts per regime and the recent
    run are derived from them. ``fair_finish_at_s`` is its finish-time target on the policy
    clock, NaN before the first; ``kind`` what kind of job it is (`Policy.add_job`), None if not told;
    ``restart_s`` the seconds it loses per start or restart (`vfm.planner.shockwave.DEFAULT_RESTART_S`
    if not told), which sets its continuity (`vfm.planner.shockwave.job_continuity`).
    On a cluster of several GPU types, ``regimes`` are on the job's reference type and ``speeds``
    is its speed on each type at each regime and at their mean, shape (K, R + 1), read-only
    (`vfm.planner.policy.typed_serving.job_speeds`); None on one type.
    """

    gpus: int
    regimes: tuple[tuple[float, float], ...]  # (batch size, seconds per epoch)
    epochs: int
    budget: float
    stages: tuple[tuple[int, int], ...] = ()
    fair_finish_at_s: float = float("nan")
    kind: Hashable = None
    restart_s: float = shockwave.DEFAULT_RESTART_S
    speeds: FloatArray | None = field(default=None, compare=False)  # an array: no equality, no hash

    @property
    def counts(self) -> FloatArray:
        """Epochs observed per regime, in the order of ``regimes``, shape (R,)."""
        column, length = np.array(self.stages, dtype=np.int64).reshape(-1, 2).T
        return np.bincount(column, weights=length, minlength=len(self.regimes)).astype(np.float64)

    @property
    def done(self) -> int:
        return sum(length for _, length in self.stages)

    @property
    def recent(self) -> tuple[int, int, int]:
        """(last regime's column or -1, epochs in a row in it, regime changes): `JobStates.recent`."""
        return (self.stages[-1][0], self.stages[-1][1], len(self.stages) - 1) if self.stages else (-1, 0, 0)

    def trajectory(self) -> Trajectory:
        """The job's epochs so far as a `vfm.forecast.Trajectory` of its kind."""
        labels = np.array([b for b, _ in self.regimes])
        column, length = np.array(self.stages, dtype=np.int64).reshape(-1, 2).T
        return Trajectory(self.kind, np.repeat(labels[column], length), regimes=labels)


#: `RoundOptions.replan_every`'s default, in rounds: re-plan at least every 8 rounds, or every
#: window's rounds when the window is shorter (`RoundOptions.replan_interval`).
REPLAN_EVERY = 8

#: `RoundOptions`' ranges, each checked on construction (`vfm.parameters`).
_ROUND_CONSTRAINTS: dict[str, Constraint] = {
    "replan_every": Optional(Interval(Whole, 1, unit="rounds")),
    "fairness": Boolean(),
    "execution": OneOf(("credit", "window")),
    "max_wait": Optional(Interval(Whole, 1, unit="rounds")),
    "continuity": Interval(Real, 0, unit="rounds"),
    "deadline_s": Optional(Interval(Real, 0, closed="neither", unit="seconds")),
}


@dataclass(frozen=True)
class RoundOptions:
    """How a policy decides each round (frozen; validated on construction): when it re-plans,
    whether it keeps finish-time-fairness targets, how it serves a round from its plan, and how
    long a round may take. `vfm.planner.Policy` takes one, or its
    fields as keyword arguments (``Policy(8, replan_every=4)``).

    Parameters
    ----------
    replan_every : int or None
        `K`: re-plan at least every `K` rounds, besides arrivals and completions. At most the
        window's rounds (`vfm.planner.PlanOptions.rounds`), since a plan covers its window only:
        a larger `K` is refused (a `vfm.errors.ValidationError` naming ``replan_every``) when the
        policy is built. None (default): `REPLAN_EVERY` (8), or the window's rounds if fewer
        (every 6 rounds with ``rounds=6``); `vfm.planner.Policy.replan_every` is the interval in
        force (`replan_interval`).
    fairness : bool
        Keep Shockwave's finish-time-fairness targets (momentum averages of each job's
        equal-share finish-time estimate) and plan with them (default False).
    execution : {"credit", "window"}
        How a round is served from the standing plan. ``"window"``: the plan's own rounded
        schedule for that round. ``"credit"`` (default): the relaxation's fractions for that
        round plus each job's credit (fractions planned minus rounds received, carried across
        re-plans), jobs with the most first, whole gangs first-fit, then idle GPUs to the other
        jobs with the longest forecast time left; the rounding error of one round is made up in
        the next instead of being lost at every re-plan (as Gavel does with its allocations).
    max_wait : int or None
        `M`: a job with work left that has gone `M` rounds without running is served before
        every job that has waited less (default `vfm.planner.shockwave.MAX_WAIT`, 80); no job
        then waits more than `vfm.planner.shockwave.wait_bound` rounds. None: no guarantee.
    continuity : float
        Rounds of credit a job that ran in the previous round may run ahead of its plan before
        it yields its gang (default `vfm.planner.shockwave.CONTINUITY`, 2): fewer restarts. This
        is the continuity of a job whose restart costs `vfm.planner.shockwave.DEFAULT_RESTART_S`
        (20 s) on 120-s rounds; each job gets it in proportion to its own restart cost and
        inversely to the round length (`Policy.add_job`'s ``restart_s``,
        `vfm.planner.shockwave.job_continuity`).
    deadline_s : float or None
        Seconds `next_round` may spend deciding a round that re-plans (finite, > 0; default None:
        no deadline). The planner is told the time left when `vfm.planner.PlanOptions` has a
        ``time_limit_s``; a re-plan that ends past the deadline is not used.
    """

    replan_every: int | None = None
    fairness: bool = False
    execution: Literal["credit", "window"] = "credit"
    max_wait: int | None = shockwave.MAX_WAIT
    continuity: float = shockwave.CONTINUITY
    deadline_s: float | None = None

    def __post_init__(self) -> None:
        check_parameters(vars(self), _ROUND_CONSTRAINTS)

    def updated(self, **overrides: Any) -> RoundOptions:
        """A copy with `overrides` (validated like the constructor's arguments)."""
        return updated(self, "round option", **overrides)

    def replan_interval(self, rounds: int) -> int:
        """The most rounds between two re-plans with windows of `rounds` rounds: `replan_every`,
        or by default `REPLAN_EVERY` or `rounds` if fewer.

        Raises
        ------
        vfm.errors.ValidationError
            If `replan_every` is larger than `rounds`: the plan would run out before the next
            re-plan.

        Examples
        --------
        >>> RoundOptions().replan_interval(20), RoundOptions().replan_interval(6)
        (8, 6)
        >>> RoundOptions(replan_every=10).replan_interval(6)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
            ...
        vfm.errors.ValidationError: replan_every must be a positive whole number of rounds, at most 6 (rounds, the ...
        """
        if self.replan_every is None:
            return min(REPLAN_EVERY, int(rounds))
        # Bounded by the window: a plan covers its rounds only.
        window = Interval(Whole, 1, rounds, unit="rounds",
                          note=f"rounds, the window a plan covers: the policy re-plans at least every {rounds} rounds; "
                               f"or pass a longer window")
        check("replan_every", self.replan_every, window)
        return int(self.replan_every)


@dataclass(frozen=True)
class PolicyConfig:
    """How a policy plans and serves rounds (`Policy`'s arguments, validated)."""

    capacity: int
    options: PlanOptions
    replan_every: int
    forecaster: Forecaster
    seed: int
    fairness: bool
    execution: Literal["credit", "window"]
    max_wait: int | None
    continuity: float
    deadline_s: float | None = None
    #: The cluster's GPUs by type (`capacity` of them in all); None: `capacity` GPUs of one type.
    cluster: ClusterTypes | None = None

    @property
    def types(self) -> int:
        """How many GPU types the cluster has (1: the plain program's fast path)."""
        return 1 if self.cluster is None else len(self.cluster)


@dataclass(frozen=True)
class PolicyState:
    """Everything a policy remembers between rounds; frozen, so that a scheduler can go back to
    it in the same process (`Policy.restore`, which checks it in full) and test the step on it.

    It is not a checkpoint: to keep a policy on disk or send it elsewhere, use
    `Policy.checkpoint`, a versioned JSON format that `Policy.restore` reads field by field
    (`vfm.planner.policy.checkpoint`). A state pickles, for copies between processes of one program
    (multiprocessing), by field name; never unpickle bytes you did not write yourself: unpickling
    runs whatever code the bytes name, before any check can look at them.

    Attributes
    ----------
    jobs : mapping of job id to JobRecord
        The jobs present, in arrival order (a read-only mapping).
    completed : tuple
        Jobs that finished all their epochs, in completion order.
    plan : Plan or None
        The standing plan, over ``plan.job_ids`` (the jobs present when it was made); None before
        the first re-plan. A plan restored from a checkpoint holds what serving its rounds left
        and warm-starting the next re-plan read (`vfm.planner.policy.checkpoint`).
    credit : ndarray, shape (len(carried),)
        Rounds each job of `carried` is owed by the credit execution (read-only).
    waited : ndarray of int, shape (len(carried),)
        Rounds each job of `carried` has gone without running, since it last ran or arrived.
    ran_last : ndarray of bool, shape (len(carried),)
        The jobs of `carried` that ran in the previous round.
    since_plan : int
        Rounds served from the standing plan (0 with no plan).
    stale : bool
        A job arrived or left since the plan was made: the next round re-plans.
    replans, round_index : int
        Re-plans made and rounds served so far (the policy clock is ``round_index * round_s``).
    forecaster : Forecaster or None
        The forecaster as learned so far (a `vfm.forecast.LearningForecaster` is taught every
        job that completed, at the next re-plan); None: the configured one, untaught.
    finished : tuple of vfm.forecast.Trajectory
        Jobs of a known kind that completed since the last re-plan, not yet taught.
    carried : tuple
        The job ids `credit`, `waited` and `ran_last` are aligned to, in order: what each of them
        carries into the next plan. With a plan, ``plan.job_ids``; with none, the jobs a
        checkpoint restored with something to carry (empty before the first re-plan). Held apart
        from the plan so that a state restored without one still carries them.
    failed_replans : int
        Re-plans that failed in a row (`vfm.planner.policy.decision`; 0 after one that succeeds).
    retry_at : int
        After failed re-plans, the round (`round_index`) from which re-plans are tried again: until
        then the rounds are served without one (`vfm.planner.policy.decision.retry_round`).
    gpu_types : tuple of str
        On a cluster of several GPU types, its types in the order the jobs' speeds and the plan's
        columns are indexed by (a restore into a cluster of another order is refused); empty on
        one type.
    """

    jobs: Mapping[Hashable, JobRecord] = field(default_factory=lambda: MappingProxyType({}))
    completed: tuple[Hashable, ...] = ()
    plan: Plan | None = None
    credit: FloatArray = field(default_factory=lambda: read_only(np.zeros(0)))
    waited: np.ndarray = field(default_factory=lambda: read_only(np.zeros(0, dtype=np.int64)))
    ran_last: np.ndarray = field(default_factory=lambda: read_only(np.zeros(0, dtype=bool)))
    since_plan: int = 0
    stale: bool = True
    replans: int = 0
    round_index: int = 0
    forecaster: Forecaster | None = None
    finished: tuple[Trajectory, ...] = ()
    carried: tuple[Hashable, ...] = ()
    failed_replans: int = 0
    retry_at: int = 0
    gpu_types: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.jobs, MappingProxyType):
            object.__setattr__(self, "jobs", MappingProxyType(dict(self.jobs)))
        for name in ("credit", "waited", "ran_last"):
            object.__setattr__(self, name, read_only(np.asarray(getattr(self, name))))

    def __reduce__(self) -> tuple[Any, ...]:
        # A read-only mapping does not pickle: pickle a dict, and rebuild through the constructor
        # with the fields by name (a copy never depends on the order of the fields).
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        return (partial(PolicyState, **{**values, "jobs": dict(self.jobs)}), ())


@functools.lru_cache(maxsize=8)
def _arrival(capacity: int) -> dict[str, Constraint]:
    """The fields of a job's record on arrival other than its regimes, on a cluster of `capacity`
    GPUs (cached: every arrival on a cluster checks against the same)."""
    return {"gpus": Interval(Whole, 1, capacity, unit="GPUs", note="the cluster's GPUs"),
            "epochs": Interval(Whole, 1, MAX_JOB_EPOCHS, note="MAX_JOB_EPOCHS"),
            "budget": Interval(Real, 0, MAX_BUDGET, closed="right", note="MAX_BUDGET"),
            "kind": Hashed("hashable, as ('ResNet-18', 'gns')"),
            "restart_s": Interval(Real, 0, MAX_JOB_SECONDS, unit="seconds", note="MAX_JOB_SECONDS")}


def checked_record(capacity: int, job_id: Hashable, gpus: Any, regimes: Any, epochs: Any, budget: Any,
                   kind: Any, restart_s: Any = shockwave.DEFAULT_RESTART_S) -> JobRecord:
    """The record of job `job_id` on arrival, every field within `vfm.limits` on a cluster of
    `capacity` GPUs, or the `ValidationError` naming the job and the field (`Policy.add_job`, and
    a checkpoint's records). O(its regimes)."""
    of = f" of job {job_id!r}"
    check_parameters({"gpus": gpus, "epochs": epochs, "budget": budget, "kind": kind, "restart_s": restart_s},
                     _arrival(capacity), of=of)
    regime_set = checked_regime_pairs(regimes, f"regimes{of}", max_seconds=MAX_JOB_SECONDS)
    slowest = max(seconds for _, seconds in regime_set)
    # Its epochs bounded by its slowest regime too: a job runs at most MAX_JOB_SECONDS in all.
    check("epochs", epochs, Whole(f"a whole number of epochs that run at most {MAX_JOB_SECONDS:.0e} s in all "
                                  f"(MAX_JOB_SECONDS) at its slowest regime's {slowest:g} s each",
                                  holds=lambda e: e * slowest <= MAX_JOB_SECONDS), of=of)
    return JobRecord(int(gpus), regime_set, int(epochs), float(budget), kind=kind, restart_s=float(restart_s))


def continuity_of(config: PolicyConfig, state: PolicyState, job_ids: Sequence[Hashable]) -> FloatArray:
    """The continuity of each job of `job_ids` (a plan's), shape (n,): ``config.continuity``
    scaled by the job's restart cost and the round length (`vfm.planner.shockwave.job_continuity`); a job that has left
    since the plan was made takes the default cost (it has nothing left to run)."""
    jobs = state.jobs
    costs = np.array([jobs[j].restart_s if j in jobs else shockwave.DEFAULT_RESTART_S for j in job_ids],
                     dtype=np.float64)
    return shockwave.job_continuity(config.continuity, costs, float(config.options.round_s))
