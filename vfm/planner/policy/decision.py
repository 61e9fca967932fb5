"""How a policy decides a round: from a new plan, from the standing plan, or first-fit.

`decide_placed` is the one decision path of `vfm.planner.Policy`, on one GPU type or several:
each case supplies a `Serving` (how it re-plans, how it serves a round of its plan, which GPU
types can host each job), and gets back the round's jobs with a `Decision` that says how it was decided.
A re-plan that raises, does not converge, is not finite or ends past the policy's deadline is not
used: the round is served from the standing plan or, with none young enough, whole gangs
first-fit in arrival order. After `k` failures in a row the policy tries again only in `2^k`
rounds (at most a window, `retry_round`): a re-plan that cannot end by the deadline would
otherwise cost every round its time, and one that fails on its data would fail again on the same.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from vfm.equilibrium import Status
from vfm.planner.options import PlanOptions
from vfm.planner.policy.state import PolicyConfig, PolicyState
from vfm.planner.rounding import place


@dataclass(frozen=True)
class Decision:
    """How the policy decided a round (`Policy.last_decision`).

    Attributes
    ----------
    source : {"plan", "standing", "fallback"}
        ``"plan"``: served from the policy's plan as usual (made this round or standing, no
        re-plan due). ``"standing"``: a re-plan was due and failed (`reason`); the round was
        served from the standing plan, moved forward by the rounds served since it was made, with
        the jobs that arrived since it first-fit on the idle GPUs in arrival order.
        ``"fallback"``: a re-plan was due and failed with no standing plan young enough to serve
        (none yet, or older than its window): whole gangs first-fit in arrival order (on GPU
        types, each on the first type in the cluster's order that can host it and has room).
    reason : str
        Why: the re-plan's trigger, or what went wrong (the exception, the status, the time).
    seconds : float
        Wall-clock seconds ``next_round`` took for this round.
    replanned : bool
        Whether this round made a new plan, now the standing one.
    guards : mapping of str to int
        How many of the round's jobs each guard of the execution decided
        (`vfm.planner.shockwave.guards_fired`: ``max_wait``, ``continuity``, ``credit_floor``); all 0
        when the plan alone decided, empty for a first-fit fallback round.
    """

    source: Literal["plan", "standing", "fallback"]
    reason: str
    seconds: float
    replanned: bool
    guards: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "guards", MappingProxyType(dict(self.guards)))

    def __reduce__(self) -> tuple[Any, ...]:
        # A read-only mapping does not pickle: rebuilt from a dict through the constructor.
        return (Decision, (self.source, self.reason, self.seconds, self.replanned, dict(self.guards)))


#: A round's jobs, each with the index of its GPU type in the cluster's order (0 on one type).
Placement = dict[Hashable, int]


@dataclass(frozen=True)
class Serving:
    """What `decide_placed` needs of a kind of policy: how it re-plans, how it serves a round of its
    plan, and the cluster on which a round is served when a re-plan fails. `Policy`'s is
    `serving` on one GPU type, `vfm.planner.policy.typed_serving.typed_serving` on several.

    Attributes
    ----------
    counts : ndarray of int, shape (K,)
        GPUs of each type, in the cluster's order (one type: the capacity).
    replan : callable (PolicyState, PlanOptions) -> PolicyState
        The state with a new plan of the jobs present, planned with the options given.
    serve : callable (PolicyState) -> (PolicyState, Placement, dict of str to int)
        Round ``since_plan`` of the standing plan: the state after it, the jobs it runs and how
        many of them each guard decided (`Decision.guards`).
    hosts : callable (PolicyState, list of ids) -> ndarray of bool, shape (len(ids), K)
        Which types can host each of the jobs (present in the state).
    """

    counts: np.ndarray
    replan: Callable[[PolicyState, PlanOptions], PolicyState]
    serve: Callable[[PolicyState], tuple[PolicyState, Placement, dict[str, int]]]
    hosts: Callable[[PolicyState, list[Hashable]], np.ndarray]


def decide_placed(config: PolicyConfig, state: PolicyState, serving: Serving,
                  started: float | None = None) -> tuple[PolicyState, Placement, Decision]:
    """One round of a policy that serves rounds by `serving`: the state after it, the jobs it runs
    (each with its type) and how it was decided (`Decision`, its `seconds` counted from `started`,
    a `time.perf_counter()` reading; default: now).

    A re-plan that fails (`_attempt_replan`) leaves the state stale, and the next is tried at
    `retry_round`; until then and in this round, rounds are served from the standing plan
    (`_serve_standing`) or, with none young enough, whole gangs first-fit (`_serve_fallback`).
    `Policy` decides here on one GPU type and on several."""
    started = time.perf_counter() if started is None else started
    if not state.jobs:
        return replace(state, round_index=state.round_index + 1), {}, _decision("plan", "no jobs", started, False)
    due = _replan_due(config, state)
    if due is None:
        state, placed, fired = serving.serve(state)
        return state, placed, _decision("plan", "no re-plan due: served the standing plan", started, False, fired)
    if state.round_index < state.retry_at:
        failure = f"{state.failed_replans} re-plan(s) failed in a row; the next is tried in round {state.retry_at}"
    else:
        replanned, failure = _attempt_replan(config, state, serving.replan, started)
        if replanned is not None:
            state, placed, fired = serving.serve(replace(replanned, failed_replans=0, retry_at=0))
            return state, placed, _decision("plan", f"re-planned ({due})", started, True, fired)
        failed = state.failed_replans + 1
        state = replace(state, failed_replans=failed,
                        retry_at=retry_round(state.round_index, failed, config.options.rounds))
    if _standing_usable(state, serving):
        state, placed, fired = _serve_standing(serving, state)
        return state, placed, _decision("standing", f"{failure}; served the standing plan", started, False,
                                        fired)
    state, placed = _serve_fallback(serving, state)
    no_plan = "no standing plan" if state.plan is None else "the standing plan is older than its window"
    return state, placed, _decision("fallback", f"{failure}; {no_plan}: served first-fit in arrival order",
                                    started, False)


def retry_round(round_index: int, failures: int, window: int) -> int:
    """The round from which re-plans are tried again after `failures` >= 1 in a row, the last in
    round `round_index`: ``2^failures`` rounds on (the next round is spared), at most a `window`
    (the standing plan's rounds)."""
    return round_index + min(2 ** min(failures, 30), window)


def _decision(source: Literal["plan", "standing", "fallback"], reason: str, started: float,
              replanned: bool, guards: Mapping[str, int] | None = None) -> Decision:
    return Decision(source, reason, time.perf_counter() - started, replanned, {} if guards is None else guards)


def _replan_due(config: PolicyConfig, state: PolicyState) -> str | None:
    """Why the next round re-plans (None: it serves the standing plan)."""
    if state.plan is None:
        return "no plan yet"
    if state.stale:
        return "a job arrived or left"
    if state.since_plan >= config.replan_every:
        return f"{state.since_plan} rounds since the last plan"
    return None


def _attempt_replan(config: PolicyConfig, state: PolicyState,
                    replan: Callable[[PolicyState, PlanOptions], PolicyState],
                    started: float) -> tuple[PolicyState | None, str]:
    """The state re-planned by `replan`, or None and why the re-plan cannot be trusted: it raised,
    its status is neither optimal nor inaccurate, its schedule is not finite, or it ended past the
    deadline."""
    options, deadline = config.options, config.deadline_s
    if deadline is not None:
        left = deadline - (time.perf_counter() - started)
        if left <= 0:
            return None, f"the deadline of {deadline:g} s passed before the re-plan started"
        options = options.updated(time_limit_s=left)  # the planner stops itself when the time runs out
    try:
        replanned = replan(state, options)
    except DeadlinePassed as error:
        return None, str(error)
    except Exception as error:  # any failure of the planner or the forecaster: the round is still served
        return None, f"the re-plan raised {type(error).__name__}: {error}"
    new_plan = replanned.plan
    assert new_plan is not None
    if new_plan.status not in (Status.OPTIMAL, Status.INACCURATE):
        return None, f"the re-plan ended with status {new_plan.status.value!r} ({new_plan.message})"
    if not (np.isfinite(new_plan.relaxed).all() and np.isfinite(new_plan.schedule).all()):
        return None, "the re-plan's schedule holds a value that is not finite"
    took = time.perf_counter() - started
    if deadline is not None and took > deadline:
        return None, f"the round took {took:.3g} s to re-plan, past the deadline of {deadline:g} s"
    return replanned, ""


class DeadlinePassed(RuntimeError):
    """The policy's deadline passed before its re-plan reached the planner (`within_deadline`)."""


#: Seconds per job a re-plan spends gathering the jobs' states before it can look at the clock
#: again (`vfm.planner.policy.replanning.job_states`, measured on the 2-core benchmark machine's
#: largest windows): a re-plan does not start that this says would pass the deadline.
PREPARATION_S_PER_JOB = 3e-6


def within_deadline(options: PlanOptions, begun: float, jobs: int = 0) -> PlanOptions:
    """`options` with its time limit less the seconds since `begun` (a `time.perf_counter()` reading,
    when the re-plan began): the planner gets what the re-plan's own preparation (the jobs' states,
    the finish-time targets) left of the round's time, so that the round ends by the deadline.
    With `jobs`, the time left must also cover gathering that many jobs' states
    (`PREPARATION_S_PER_JOB`), the step before the next look at the clock.

    Raises
    ------
    DeadlinePassed
        When nothing is left (`_attempt_replan` then serves the round without the re-plan).
    """
    if options.time_limit_s is None:
        return options
    left = options.time_limit_s - (time.perf_counter() - begun)
    if left <= PREPARATION_S_PER_JOB * jobs:
        raise DeadlinePassed(
            f"the deadline leaves too little time to gather {jobs} jobs' states (about {PREPARATION_S_PER_JOB:g} s "
            f"each) before the planner" if jobs else
            "the deadline passed while the re-plan prepared the jobs' states and targets, before the planner started")
    return options.updated(time_limit_s=left)


def _standing_usable(state: PolicyState, serving: Serving) -> bool:
    """Whether the standing plan still has a round to serve (it is not older than its window)."""
    plan_ = state.plan
    # The relaxation's columns are the goods (type, round), type-major: the window is a type's share.
    return plan_ is not None and plan_.job_ids is not None and \
        state.since_plan < plan_.relaxed.shape[1] // serving.counts.size


def _serve_standing(serving: Serving, state: PolicyState) -> tuple[PolicyState, Placement, dict[str, int]]:
    """The standing plan's next round without the jobs that left since it was made, then the jobs
    that arrived since (not in it) first-fit on the GPUs left, in arrival order."""
    served, planned_placed, fired = serving.serve(state)
    assert state.plan is not None and state.plan.job_ids is not None
    # A job removed and added again under its id may have another gang, or other types: with
    # another gang, or when its planned type can no longer host it, it counts as arrived.
    planned = dict(zip(state.plan.job_ids, state.plan.program.gpus.tolist(), strict=True))
    kept = [job for job in planned_placed if job in state.jobs and state.jobs[job].gpus == planned[job]]
    types = np.array([planned_placed[job] for job in kept], dtype=np.int64)
    hosted = serving.hosts(state, kept)[np.arange(types.size), types]
    moved = {kept[k] for k in np.flatnonzero(~hosted)}
    placed = {kept[k]: int(types[k]) for k in np.flatnonzero(hosted)}
    arrived = [job for job, record in state.jobs.items() if planned.get(job) != record.gpus or job in moved]
    used = np.bincount(np.array(list(placed.values()), dtype=np.int64),
                       weights=np.array([state.jobs[job].gpus for job in placed], dtype=np.float64),
                       minlength=serving.counts.size)
    return served, {**placed, **_first_fit(serving, state, arrived, serving.counts - used)}, fired


def _serve_fallback(serving: Serving, state: PolicyState) -> tuple[PolicyState, Placement]:
    """With no plan to serve: whole gangs first-fit in arrival order, within each type's GPUs."""
    placed = _first_fit(serving, state, list(state.jobs), serving.counts)
    return replace(state, round_index=state.round_index + 1), placed


def _first_fit(serving: Serving, state: PolicyState, ids: list[Hashable], free: np.ndarray) -> Placement:
    """The jobs of `ids` (present in `state`) admitted whole, in order, each on the first type in
    the cluster's order that can host it and has room in `free` (GPUs of each type); in the order
    of `ids`."""
    if not ids:
        return {}
    gpus = np.array([state.jobs[job].gpus for job in ids], dtype=np.float64)
    types = serving.counts.size
    preference = np.broadcast_to(np.arange(types), (len(ids), types))
    # Offering every job its types in the cluster's order, type by type, is first-fit over types.
    jobs, kinds = place(np.arange(len(ids)), gpus, np.array(free, dtype=np.float64), preference,
                        serving.hosts(state, ids))
    order = np.argsort(jobs, kind="stable")
    return {ids[j]: k for j, k in zip(jobs[order].tolist(), kinds[order].tolist(), strict=True)}
