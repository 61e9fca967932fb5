"""The scheduler-facing policy: one object a cluster scheduler drives round by round.

It holds the jobs and what has been observed of them, and re-plans with `vfm.planner.plan` only
when it must: when a job arrives, when a job completes or is removed, and every `replan_every`
rounds (default 8); in between it serves the next round of the standing plan. It depends on no
simulator: a scheduler calls `add_job`, `report_progress` and `remove_job` as things happen and
`next_round` once per round.

Examples
--------
A toy scheduler loop: two jobs on 2 GPUs; each round, every running job finishes the epochs that
fit in the round at its current batch size.

>>> from vfm.planner import Policy
>>> policy = Policy(capacity=2, rounds=6, round_s=120.0)
>>> policy.add_job("resnet", gpus=1, regimes={64: 60.0, 128: 40.0}, epochs=12)
>>> policy.add_job("bert", gpus=2, regimes={32: 120.0}, epochs=3)
>>> batch = {"resnet": 64, "bert": 32}
>>> for round_index in range(12):
...     for job in policy.next_round():
...         epochs = int(120.0 // policy.regimes(job)[batch[job]])
...         policy.report_progress(job, [batch[job]] * min(epochs, policy.epochs_left(job)))
>>> policy.jobs, policy.completed
([], ['bert', 'resnet'])
"""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from functools import partial
from types import MappingProxyType
from typing import Any, Literal

import numpy as np

from vfm._validation import (
    FloatArray,
    checked_job_id,
    is_real,
    is_whole,
    read_only,
)
from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, Forecaster, JobStates, LearningForecaster, Trajectory
from vfm.forecast.base import batch_sizes as read_batch_sizes
from vfm.jobs import equal_share
from vfm.planner import checkpoint as checkpoint_format
from vfm.planner import shockwave
from vfm.planner.decision import Decision, Placement, Serving, decide_placed
from vfm.planner.inputs import checked_forecast
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan, plan
from vfm.planner.rounding import first_fit
from vfm.planner.shockwave import SHOCKWAVE_EFFICIENCY, SHOCKWAVE_PRIORITY_EXPONENT, SHOCKWAVE_RESERVE
from vfm.planner.state import JobRecord, PolicyConfig, PolicyState, checked_record
from vfm.solvers.registry import prepare


def _with_jobs(state: PolicyState, jobs: dict[Hashable, JobRecord], **changes: Any) -> PolicyState:
    return replace(state, jobs=MappingProxyType(jobs), **changes)


def _job(state: PolicyState, job_id: Hashable) -> JobRecord:
    return _record_in(state.jobs, job_id, lambda: _completed(state, job_id))


def _record_in(jobs: Mapping[Hashable, JobRecord], job_id: Hashable, completed: Any) -> JobRecord:
    """Job `job_id`'s record in `jobs`, or a `ValidationError` saying whether it completed
    (`completed()`: asked only on the way to the error)."""
    try:
        return jobs[job_id]
    except (KeyError, TypeError):
        pass
    if completed():
        raise ValidationError(f"job {job_id!r} has completed all its epochs and left the policy; it takes no "
                              f"more reports") from None
    raise ValidationError(f"job {job_id!r} is not in the policy (add it with add_job)") from None


def _completed(state: PolicyState, job_id: Hashable) -> bool:
    try:
        return job_id in state.completed
    except TypeError:  # an unhashable id compares fine with a tuple's entries, but be safe
        return False


def checked_new_id(jobs: Mapping[Hashable, JobRecord], completed: Any, job_id: Hashable) -> Hashable:
    """`job_id` as keyed (`vfm._validation.checked_job_id`), refused when it is already present in
    `jobs` or has completed (`completed`, a container). O(1)."""
    try:
        hash(job_id)
    except TypeError:
        raise ValidationError(f"job_id must be hashable (a string, a whole number or a tuple of them), got "
                              f"{type(job_id).__name__} {job_id!r}") from None
    key = checked_job_id(job_id)
    if key in jobs:
        raise ValidationError(f"job {job_id!r} is already in the policy; job ids must be unique (remove it first)")
    if key in completed:
        raise ValidationError(f"job {job_id!r} has already completed in this policy; job ids must be unique "
                              f"(give the new job another id)")
    return key


def add_job(config: PolicyConfig, state: PolicyState, job_id: Hashable, gpus: int, regimes: Mapping[float, float],
            epochs: int, budget: float = 1.0, kind: Hashable = None) -> PolicyState:
    """The state after job `job_id` arrives (`Policy.add_job` checks and raises the same).

    A pure function of the state: O(jobs present), since it copies the mapping of jobs; a
    `Policy` adds a job in O(1)."""
    key = checked_new_id(state.jobs, state.completed, job_id)
    record = checked_record(config.capacity, job_id, gpus, regimes, epochs, budget, kind)
    return _with_jobs(state, {**state.jobs, key: record}, stale=True)


def remove_job(state: PolicyState, job_id: Hashable) -> PolicyState:
    """The state after job `job_id` leaves (O(jobs present); a `Policy` removes a job in O(1))."""
    _job(state, job_id)
    return _with_jobs(state, {key: job for key, job in state.jobs.items() if key != job_id}, stale=True)


def reported(job: JobRecord, job_id: Hashable, batch_sizes: Sequence[float]) -> JobRecord:
    """Job `job_id`'s record after it reports finished epochs, or the `ValidationError`
    `Policy.report_progress` raises; O(its epochs reported and regimes)."""
    sizes = read_batch_sizes(batch_sizes, f"batch_sizes of job {job_id!r}")
    labels = np.array([b for b, _ in job.regimes])
    match = sizes[:, None] == labels
    unknown = ~match.any(axis=1)
    if unknown.any():
        k = int(np.argmax(unknown))
        raise ValidationError(
            f"batch_sizes[{k}] of job {job_id!r} is {sizes[k]:g}, which is not in the job's regimes "
            f"{{{', '.join(f'{b:g}' for b in labels)}}}")
    left = job.epochs - job.done
    if sizes.size > left:
        raise ValidationError(f"batch_sizes of job {job_id!r} reports {sizes.size} epochs, more epochs done than "
                              f"the job has left ({left} of {job.epochs})")
    return replace(job, stages=_runs(job.stages, np.argmax(match, axis=1)))


def report_progress(state: PolicyState, job_id: Hashable, batch_sizes: Sequence[float]) -> PolicyState:
    """The state after job `job_id` reports finished epochs (`Policy.report_progress`; O(jobs
    present) here, O(the report) in a `Policy`)."""
    job = reported(_job(state, job_id), job_id, batch_sizes)
    if job.done == job.epochs:
        taught = (job.trajectory(),) if job.kind is not None else ()
        return _with_jobs(state, {key: other for key, other in state.jobs.items() if key != job_id},
                          completed=(*state.completed, job_id), stale=True, finished=state.finished + taught)
    return _with_jobs(state, {**state.jobs, job_id: job})


def _runs(stages: tuple[tuple[int, int], ...], columns: np.ndarray) -> tuple[tuple[int, int], ...]:
    """`stages` followed by the epochs in regime `columns`, as maximal runs (column, epochs)."""
    if not columns.size:
        return stages
    starts = np.flatnonzero(np.r_[True, columns[1:] != columns[:-1]])
    new = list(zip(columns[starts].tolist(), np.diff(np.r_[starts, columns.size]).tolist(), strict=True))
    if stages and stages[-1][0] == new[0][0]:
        return (*stages[:-1], (new[0][0], stages[-1][1] + new[0][1]), *new[1:])
    return (*stages, *new)


def _taught_forecaster(config: PolicyConfig, state: PolicyState) -> Forecaster:
    """The forecaster the next re-plan uses: the configured one, taught the jobs that completed."""
    forecaster = config.forecaster if state.forecaster is None else state.forecaster
    if state.finished and isinstance(forecaster, LearningForecaster):
        forecaster = forecaster.learned(state.finished)
    return forecaster


def serving(config: PolicyConfig) -> Serving:
    """`Policy`'s `Serving`: one type of `config.capacity` GPUs, which hosts every job present."""
    return Serving(counts=np.array([config.capacity]), replan=partial(_replan, config),
                   serve=partial(_serve_placed, config), hosts=_anywhere)


def _anywhere(state: PolicyState, ids: list[Hashable]) -> np.ndarray:
    return np.ones((len(ids), 1), dtype=bool)  # every gang fits the capacity: `add_job` checks it


def step(config: PolicyConfig, state: PolicyState) -> tuple[PolicyState, list[Hashable]]:
    """One round: re-plan if due, then the jobs to run; a pure function of the config and state
    (with a deadline, of the time the re-plan takes too). `decide` says how it was decided."""
    state, running, _ = decide(config, state)
    return state, running


def decide(config: PolicyConfig, state: PolicyState,
           started: float | None = None) -> tuple[PolicyState, list[Hashable], Decision]:
    """`step`, and how the round was decided (`decide_placed` with `Policy`'s `serving`)."""
    state, placed, decision = decide_placed(config, state, serving(config), started)
    return state, list(placed), decision


def _serve(config: PolicyConfig, state: PolicyState) -> tuple[PolicyState, list[Hashable], dict[str, int]]:
    """The round `state.since_plan` of the standing plan, by the configured execution; the jobs it
    runs and how many of them each guard decided (`vfm.planner.shockwave.guards_fired`)."""
    plan_ = state.plan
    assert plan_ is not None and plan_.job_ids is not None
    program = plan_.program
    open_ = program.base < 1.0
    first = shockwave.overdue_order(state.waited, open_, config.max_wait)
    committed = shockwave.committed_order(plan_.committed, state.since_plan, state.waited)
    if config.execution == "window":
        planned = np.flatnonzero(plan_.schedule[:, state.since_plan])
        ran = np.zeros(open_.size, dtype=bool)
        order = shockwave.served_first(first, shockwave.served_first(committed, planned))
        ran[first_fit(order, program.gpus, float(config.capacity))] = True
        credit, fired = state.credit, shockwave.guards_fired(ran, first[~np.isin(first, committed)])
    else:
        precedence = shockwave.Precedence(overdue=first, committed=committed, ran_last=state.ran_last,
                                          continuity=config.continuity, owed_first=config.options.service_floor > 0)
        ran, credit, fired = shockwave.serve_with_credit(
            program, plan_.relaxed[:, state.since_plan], state.credit, float(config.capacity), precedence)
    running = [plan_.job_ids[i] for i in np.flatnonzero(ran)]
    waited = np.where(ran | ~open_, 0, state.waited + 1)
    return replace(state, credit=read_only(credit), waited=read_only(waited), ran_last=read_only(ran),
                   since_plan=state.since_plan + 1, round_index=state.round_index + 1), running, fired


def _serve_placed(config: PolicyConfig, state: PolicyState) -> tuple[PolicyState, Placement, dict[str, int]]:
    """`_serve`, its jobs placed on the one type, and the guards that fired."""
    state, running, fired = _serve(config, state)
    return state, dict.fromkeys(running, 0), fired


def _replan(config: PolicyConfig, state: PolicyState, options: PlanOptions | None = None) -> PolicyState:
    """The state with a new plan of the jobs present (`options`: default the configured ones)."""
    ids = tuple(state.jobs)
    jobs = [state.jobs[i] for i in ids]
    states = _states(jobs, ids)
    gpus = np.array([j.gpus for j in jobs])
    forecaster = _taught_forecaster(config, state)
    targets = None
    if config.fairness:
        jobs, targets = _fair_finish(config, forecaster, state.round_index, states, jobs)
    options = config.options if options is None else options
    new_plan = plan(
        states, gpus, config.capacity, options, forecaster=forecaster,
        seed=np.random.SeedSequence((config.seed, state.replans)), budgets=[j.budget for j in jobs],
        fair_finish_s=targets, warm_start=warm_start(state, ids, options.rounds),
        waited=None if options.wait_limit is None else carried(state.waited, carried_rows(state, ids), 0),
    )
    return _replanned(state, ids, jobs, new_plan, forecaster)


def carried_rows(state: PolicyState, ids: tuple[Hashable, ...]) -> np.ndarray:
    """Each job of `ids`'s row in the arrays `state` carries (`PolicyState.carried`): -1 for a job
    the last plan did not hold."""
    row = {job: k for k, job in enumerate(state.carried)}
    return np.array([row.get(job, -1) for job in ids], dtype=np.int64)


def carried(values: np.ndarray, rows: np.ndarray, new: Any) -> np.ndarray:
    """`values` (aligned to `PolicyState.carried`) taken at `rows` (`carried_rows`), `new` where -1."""
    return read_only(np.where(rows >= 0, values[np.maximum(rows, 0)] if values.size else new, new))


def warm_start(state: PolicyState, ids: tuple[Hashable, ...], rounds: int) -> FloatArray | None:
    """The last plan's relaxation moved forward by the rounds served since, when it planned the
    same jobs `ids` and is not older than its window (else None); with GPU types each type's
    rounds are moved (the relaxation's columns are type-major goods)."""
    planned = () if state.plan is None or state.plan.job_ids is None else state.plan.job_ids
    if state.plan is None or ids != planned or state.since_plan >= rounds:
        return None
    keep = np.minimum(np.arange(rounds) + state.since_plan, rounds - 1)
    relaxed = state.plan.relaxed
    return relaxed.reshape(len(ids), -1, rounds)[:, :, keep].reshape(len(ids), -1)


def _replanned(state: PolicyState, ids: tuple[Hashable, ...], jobs: list[JobRecord], new_plan: Plan,
               forecaster: Forecaster) -> PolicyState:
    """The state after a re-plan: the new plan, and the credit, waits and last round of the jobs
    still present (`PolicyState.carried`) carried into its order (`ids`)."""
    rows = carried_rows(state, ids)
    return _with_jobs(state, dict(zip(ids, jobs, strict=True)), plan=new_plan,
                      credit=carried(state.credit, rows, 0.0), waited=carried(state.waited, rows, 0),
                      ran_last=carried(state.ran_last, rows, False), since_plan=0, stale=False,
                      replans=state.replans + 1, forecaster=forecaster, finished=(), carried=ids)


def _fair_finish(config: PolicyConfig, forecaster: Forecaster, round_index: int, states: JobStates,
                 jobs: list[JobRecord], slowdown: FloatArray | None = None) -> tuple[list[JobRecord], FloatArray]:
    """The jobs with their updated finish-time targets, and FT* of each in seconds from now.

    `slowdown` (n,): how much longer than the forecast's remaining time each job takes at its
    fair pace (on GPU types: on a proportional slice of the cluster, `vfm.planner.TypedPolicy`);
    default 1."""
    now = round_index * config.options.round_s
    share = equal_share(len(jobs), config.capacity)
    remaining = checked_forecast(forecaster, "remaining_runtime", forecaster.remaining_runtime(states), states,
                                 (states.n_jobs,))
    estimate = now + (remaining if slowdown is None else remaining * slowdown) / share
    targets = shockwave.updated_targets(np.array([job.fair_finish_at_s for job in jobs]), estimate)
    jobs = [replace(job, fair_finish_at_s=at) for job, at in zip(jobs, targets.tolist(), strict=True)]
    # A target already passed cannot be met: it counts as due in one second, which makes the
    # constraints infeasible (the planner falls back to the priority relaxation) and keeps the
    # projected ratios finite and ordered by the time the jobs have left.
    return jobs, np.maximum(targets - now, 1.0)


def _states(jobs: list[JobRecord], ids: tuple[Hashable, ...]) -> JobStates:
    """The jobs' states, regimes padded to the largest set (each job was validated on arrival)."""
    recent = np.array([job.recent for job in jobs], dtype=np.int64).T
    n, width = len(jobs), max(len(job.regimes) for job in jobs)
    labels, durations = np.full((n, width), np.nan), np.zeros((n, width))
    mask, counts = np.zeros((n, width), dtype=np.bool_), np.zeros((n, width))
    for row, job in enumerate(jobs):  # per job by nature: a mapping of jobs
        k = len(job.regimes)
        labels[row, :k], durations[row, :k] = np.array(job.regimes).T
        mask[row, :k], counts[row, :k] = True, job.counts
    return JobStates(np.array([job.epochs for job in jobs], dtype=np.float64), counts, durations, mask,
                     regime_labels=labels, job_ids=ids, groups=[job.kind for job in jobs], recent=tuple(recent))


def shockwave_configuration(round_s: float) -> dict[str, Any]:
    """The arguments of `Policy.shockwave` (and `vfm.planner.TypedPolicy.shockwave`) for rounds of `round_s`."""
    return {"rounds": 20, "round_s": round_s, "replan_every": 8, "fairness": True, "rho_max": 1.0,
            "priority_exponent": SHOCKWAVE_PRIORITY_EXPONENT, "efficiency": SHOCKWAVE_EFFICIENCY,
            "reserve": SHOCKWAVE_RESERVE, "execution": "credit", "wait_limit": shockwave.WAIT_LIMIT}


def policy_config(capacity: int, options: PlanOptions | None = None, *, replan_every: int = 8,
                  forecaster: Forecaster | None = None, seed: int = 0, fairness: bool = False,
                  execution: Literal["credit", "window"] = "credit", max_wait: int | None = shockwave.MAX_WAIT,
                  continuity: float = shockwave.CONTINUITY, deadline_s: float | None = None,
                  **overrides: Any) -> PolicyConfig:
    """`Policy`'s arguments validated once (each named in its error), as a `PolicyConfig`."""
    if not is_whole(capacity) or capacity < 1:
        raise ValidationError(f"capacity must be a positive whole number of GPUs, got {capacity!r}")
    if not is_whole(replan_every) or replan_every < 1:
        raise ValidationError(f"replan_every must be a positive whole number of rounds, got {replan_every!r}")
    if options is not None and not isinstance(options, PlanOptions):
        raise ValidationError(f"options must be a vfm.planner.PlanOptions or None (or give its fields as keywords, "
                              f"as Policy(8, rounds=10)), got {type(options).__name__}")
    if isinstance(forecaster, type):
        raise ValidationError(f"forecaster must be a forecaster object, got the class {forecaster.__name__}; "
                              f"pass an instance, as {forecaster.__name__}()")
    if forecaster is not None and not isinstance(forecaster, Forecaster):
        raise ValidationError(f"forecaster must implement vfm.forecast.Forecaster (remaining_runtime, "
                              f"epochs_per_round, sample_epochs_per_round), got {type(forecaster).__name__}")
    if not isinstance(fairness, bool | np.bool_):
        raise ValidationError(f"fairness must be True or False, got {fairness!r}")
    if not is_whole(seed) or seed < 0:
        raise ValidationError(f"seed must be a non-negative whole number, got {seed!r}")
    if execution not in ("credit", "window"):
        raise ValidationError(f"execution must be 'credit' or 'window', got {execution!r}")
    if max_wait is not None and (not is_whole(max_wait) or max_wait < 1):
        raise ValidationError(f"max_wait must be a positive whole number of rounds or None, got {max_wait!r}")
    if isinstance(continuity, bool) or not (isinstance(continuity, int | float) and 0 <= continuity < np.inf):
        raise ValidationError(f"continuity must be a finite number of rounds >= 0, got {continuity!r}")
    if deadline_s is not None and not (is_real(deadline_s) and 0 < deadline_s < np.inf):
        raise ValidationError(f"deadline_s must be a finite number of seconds > 0 or None, got {deadline_s!r}")
    plan_options = (PlanOptions() if options is None else options).updated(**overrides)
    return PolicyConfig(
        capacity=int(capacity), options=plan_options, replan_every=min(int(replan_every), plan_options.rounds),
        forecaster=DirichletForecaster() if forecaster is None else forecaster, seed=int(seed),
        fairness=bool(fairness), execution=execution, max_wait=None if max_wait is None else int(max_wait),
        continuity=float(continuity), deadline_s=None if deadline_s is None else float(deadline_s))


class StateView:
    """A policy's state held for O(1) events, shared by `Policy` and `vfm.planner.TypedPolicy`.

    The jobs live in a private dict (insertion order: arrival order) and the completed ids in a
    list and a set, so that an arrival, a report and a removal cost O(1) amortized (plus the
    size of the report), not a copy of every job. The frozen `PolicyState` is built from them
    only when asked for (`_snapshot`, O(jobs present), kept until the next change) and a round
    installs the state it steps to (`_install`, O(jobs present), once per round like the
    re-plan itself). ``_state`` reads and writes through these two, so code that swaps whole
    states (`Policy.restore`) keeps working.

    Every method holds the policy's re-entrant lock (``_lock``): a policy is safe to share
    between threads, and its calls are serialized (each sees the state the previous one left).
    """

    config: PolicyConfig
    _lock: threading.RLock
    _jobs: dict[Hashable, JobRecord]
    _completed: list[Hashable]
    _completed_ids: set[Hashable]
    _finished: list[Trajectory]
    _stale: bool
    _rest: PolicyState  # the state last installed: every other field (its jobs, completed, finished, stale are old)
    _cached: PolicyState | None
    _last_decision: Decision | None

    def _start(self, state: PolicyState | None = None) -> None:
        """Make the lock and install `state` (default: an empty one); the constructors call it first."""
        self._lock = threading.RLock()
        self._last_decision = None
        self._install(PolicyState() if state is None else state)

    def _snapshot(self) -> PolicyState:
        """The state as a frozen `PolicyState` (the same object until the next change)."""
        with self._lock:
            if self._cached is None:
                self._cached = replace(self._rest, jobs=MappingProxyType(dict(self._jobs)),
                                       completed=tuple(self._completed), finished=tuple(self._finished),
                                       stale=self._stale)
            return self._cached

    def _install(self, state: PolicyState) -> None:
        """Continue from the frozen `state` (copied into the private containers)."""
        with self._lock:
            self._jobs = dict(state.jobs)
            self._completed = list(state.completed)
            self._completed_ids = set(state.completed)
            self._finished = list(state.finished)
            self._stale = state.stale
            self._rest = state
            self._cached = state

    @property
    def _state(self) -> PolicyState:
        return self._snapshot()

    @_state.setter
    def _state(self, state: PolicyState) -> None:
        self._install(state)

    def _record(self, job_id: Hashable) -> JobRecord:
        """Job `job_id`'s record, or the `ValidationError` naming it (and saying if it completed)."""
        with self._lock:
            return _record_in(self._jobs, job_id, lambda: _member(self._completed_ids, job_id))

    def _add(self, config: PolicyConfig, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int,
             budget: float, kind: Hashable) -> JobRecord:
        """Job `job_id` arrives (checked by `checked_new_id` and `checked_record`, O(1)); its record."""
        with self._lock:
            key = checked_new_id(self._jobs, self._completed_ids, job_id)
            record = checked_record(config.capacity, job_id, gpus, regimes, epochs, budget, kind)
            self._jobs[key] = record
            self._stale, self._cached = True, None
            return record

    def _remove(self, job_id: Hashable) -> None:
        with self._lock:
            self._record(job_id)
            del self._jobs[job_id]
            self._stale, self._cached = True, None

    def _report(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        with self._lock:
            job = reported(self._record(job_id), job_id, batch_sizes)
            if job.done == job.epochs:
                del self._jobs[job_id]
                self._completed.append(job_id)
                self._completed_ids.add(job_id)
                if job.kind is not None:
                    self._finished.append(job.trajectory())
                self._stale = True
            else:
                self._jobs[job_id] = job
            self._cached = None

    def _decide(self, serving: Serving) -> Placement:
        """The next round decided by `decide_placed` with `serving`: the state it steps to installed
        and how it was decided kept (`last_decision`, its seconds the whole call's); its jobs."""
        with self._lock:
            started = time.perf_counter()
            state, placed, decision = decide_placed(self.config, self._snapshot(), serving, started)
            self._install(state)
            self._last_decision = replace(decision, seconds=time.perf_counter() - started)
            return placed

    @property
    def jobs(self) -> list[Hashable]:
        """The jobs in the policy, in arrival order."""
        with self._lock:
            return list(self._jobs)

    @property
    def completed(self) -> list[Hashable]:
        """The jobs that completed all their epochs, in completion order."""
        with self._lock:
            return list(self._completed)

    @property
    def last_plan(self) -> Plan | None:
        """The standing plan (None before the first re-plan and after `restore`, whose next round
        re-plans); its arrays are read-only."""
        with self._lock:
            return self._rest.plan

    @property
    def replans(self) -> int:
        """How many times the policy has re-planned."""
        with self._lock:
            return self._rest.replans

    def diagnostics(self) -> dict[str, Any]:
        """How the round `next_round` last returned was decided, for a scheduler's logs and the
        simulator (`vfm.cluster.protocol.ReportsDiagnostics`): ``"guards"`` (`Decision.guards`)
        and ``"replan"``, None or, when the round re-planned, the plan's ``solver``, ``status``,
        ``fairness`` and the seconds of each stage (`Plan.timings`)."""
        with self._lock:
            decision, plan = self._last_decision, self._rest.plan
            if decision is None:
                return {"guards": {}, "replan": None}
            replan = None if not decision.replanned or plan is None else {
                "solver": plan.solver, "status": str(plan.status), "fairness": plan.fairness, **plan.timings}
            return {"guards": dict(decision.guards), "replan": replan}

    @property
    def last_decision(self) -> Decision | None:
        """How the last round was decided (`Decision`: from the plan, the standing plan or the
        fallback, and why); None before the first round."""
        with self._lock:
            return self._last_decision


def _member(ids: set[Hashable], job_id: Hashable) -> bool:
    try:
        return job_id in ids
    except TypeError:  # an unhashable id is in no set
        return False


class Policy(StateView):
    """A receding-horizon planner a scheduler drives round by round (module docstring).

    Parameters
    ----------
    capacity : int
        GPUs in the cluster.
    options : vfm.planner.PlanOptions, optional
        How each re-plan plans (window, Shockwave options, backend; default: `PlanOptions`'s
        defaults). Keyword overrides of its fields are accepted too
        (``Policy(8, rounds=10)`` is ``Policy(8, PlanOptions(rounds=10))``).
    replan_every : int
        `K`: re-plan at least every `K` rounds (default 8), besides arrivals and completions.
    forecaster : vfm.forecast.Forecaster, optional
        Default: `vfm.forecast.DirichletForecaster()`. A `vfm.forecast.LearningForecaster` (as
        `vfm.forecast.PopulationForecaster`) is taught each job of a known ``kind`` that
        completes, at the next re-plan; `forecaster` is then the one taught so far.
    seed : int
        Scenarios of the `k`-th re-plan are drawn from ``(seed, k)``: reproducible runs.
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
        it yields its gang (default `vfm.planner.shockwave.CONTINUITY`, 2): fewer restarts.
    deadline_s : float or None
        Seconds `next_round` may spend deciding a round that re-plans (finite, > 0; default None:
        no deadline). The planner is told the time left when `vfm.planner.PlanOptions` has a
        ``time_limit_s``; a re-plan that ends past the deadline is not used.

    Notes
    -----
    Every round is served, whatever the re-plan does: a re-plan that raises, ends with a status
    other than optimal or inaccurate, gives a schedule that is not finite or ends past the
    deadline is discarded, and the round is served from the standing plan (the jobs that
    arrived since first-fit on the idle GPUs) or, with none young enough, whole gangs first-fit
    in arrival order; the next round re-plans again. `last_decision` says which and why. No
    round runs more GPUs than `capacity`.

    The policy is safe to share between threads: every method holds the policy's lock, so calls
    are serialized. `add_job`, `remove_job` and `report_progress` cost O(1) amortized (plus the
    epochs reported); `state` and a round cost O(jobs present).
    """

    def __init__(
        self,
        capacity: int,
        options: PlanOptions | None = None,
        *,
        replan_every: int = 8,
        forecaster: Forecaster | None = None,
        seed: int = 0,
        fairness: bool = False,
        execution: Literal["credit", "window"] = "credit",
        max_wait: int | None = shockwave.MAX_WAIT,
        continuity: float = shockwave.CONTINUITY,
        deadline_s: float | None = None,
        **overrides: Any,
    ) -> None:
        self.config = policy_config(capacity, options, replan_every=replan_every, forecaster=forecaster, seed=seed,
                                    fairness=fairness, execution=execution, max_wait=max_wait,
                                    continuity=continuity, deadline_s=deadline_s, **overrides)
        self._start()
        # Here, not in the first re-plan: a scheduler's re-plans stay predictable.
        prepare("planning", self.config.options.solver)

    @classmethod
    def shockwave(cls, capacity: int, round_s: float = 120.0, **overrides: Any) -> Policy:
        """The policy configured as Shockwave: what the reproduction of the paper runs.

        A window of 20 rounds of `round_s` seconds, re-planned on arrivals, completions and every
        8 rounds; finish-time-fairness targets with :math:`\\rho_{\\max} = 1` and the priority
        relaxation (exponent `SHOCKWAVE_PRIORITY_EXPONENT`, the same for every cluster); the efficiency term
        :math:`-k \\max_i S_i` with `SHOCKWAVE_EFFICIENCY`; `SHOCKWAVE_RESERVE` of each window's
        GPU-rounds left to it; credit execution; the certainty-equivalent forecast (S = 1); plans
        that keep every wait within `vfm.planner.shockwave.WAIT_LIMIT` rounds where the load allows
        (`PlanOptions.wait_limit`; with ``scenarios`` > 1 pass ``wait_limit=None``).

        Parameters
        ----------
        capacity : int
            GPUs in the cluster.
        round_s : float
            Seconds per round.
        **overrides
            Any other `Policy` argument or `vfm.planner.PlanOptions` field (``seed``,
            ``scenarios``, ``efficiency``, ``reserve``, ``execution``, ``solver``, ``tol``, ...),
            replacing the configuration's value.

        Examples
        --------
        >>> policy = Policy.shockwave(32)
        >>> policy.fairness, policy.options.efficiency, policy.options.priority_exponent
        (True, 1.0, 15.0)
        """
        return cls(capacity, **{**shockwave_configuration(round_s), **overrides})

    # --- the state --------------------------------------------------------------------------------

    @property
    def state(self) -> PolicyState:
        """Everything the policy remembers, frozen: for use in this process (inspect it, step it with
        `vfm.planner.policy.step`, go back to it with `restore`). To keep it on disk or send it
        elsewhere, use `checkpoint`."""
        with self._lock:
            return self._state

    def checkpoint(self) -> str:
        """The policy's checkpoint: JSON text of a versioned plain-data format (`vfm.planner.checkpoint`)
        that `restore` reads back into a policy of the same configuration.

        It holds the jobs, what each carries into the next plan (credit, rounds waited, whether it
        ran last), the completed jobs, the trajectories taught to the forecaster and the counters;
        not the standing plan: the restored policy re-plans at its next round.

        Raises
        ------
        vfm.errors.ValidationError
            For what the format cannot hold, naming it: a job id or kind other than a string, a
            whole number or a tuple of them (or None, for a kind); a forecaster that has learned
            from completed jobs and is not a `vfm.forecast.PopulationForecaster`.
        """

        with self._lock:
            return checkpoint_format.dumps(self.config, self._state)

    def restore(self, state: PolicyState | str | bytes | Mapping[str, Any], *, allow_resize: bool = False) -> None:
        """Continue from a checkpoint (`checkpoint`'s JSON text, its bytes or the dict it parses to)
        or, in this process, from a `state`; either is checked in full first.

        A checkpoint is read as JSON, never unpickled. It must come from a `Policy` (not a
        `vfm.planner.TypedPolicy`) of this configuration (its fingerprint, `vfm.planner.checkpoint`);
        it holds no plan (`last_plan` is None) and the first round after it re-plans. A
        `PolicyState` holds no configuration: it is checked against this policy's as far as it
        shows it (gangs, finish-time targets, its plan's window, round length, capacity and
        fairness).

        Parameters
        ----------
        state : str, bytes, dict or PolicyState
            What to continue from.
        allow_resize : bool
            Accept a checkpoint made with another capacity (a cluster that grew or shrank); every
            other field of the configuration must still match. A job whose gang is wider than this
            policy's capacity is refused, naming it: remove it first (restore into a policy of the
            old capacity, `remove_job`, checkpoint again). Default False: the capacity must match.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the field (and the job), leaving the policy as it was: another format or
            version (both named), another kind of policy, another configuration (the fields that
            differ named), a field missing, unknown or of the wrong type, a count out of range
            (``round_index``, ``replans``, ``waited``, ``since_plan`` >= 0), a credit that is not
            finite, arrays of different lengths, a job record `add_job` and the reports would not
            make (gang, regimes, epochs, budget, stages), an id repeated or not a string, whole
            number or tuple of them.
        """

        with self._lock:
            restored, _ = checkpoint_format.restored(self.config, state, allow_resize=allow_resize)
            self._state = restored

    @property
    def capacity(self) -> int:
        return self.config.capacity

    @property
    def options(self) -> PlanOptions:
        return self.config.options

    @property
    def replan_every(self) -> int:
        return self.config.replan_every

    @property
    def forecaster(self) -> Forecaster:
        """The forecaster of the last re-plan (the configured one, taught the jobs completed before it)."""
        with self._lock:
            return self.config.forecaster if self._rest.forecaster is None else self._rest.forecaster

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def fairness(self) -> bool:
        return self.config.fairness

    @property
    def execution(self) -> str:
        return self.config.execution

    @property
    def round_index(self) -> int:
        """Rounds served so far."""
        with self._lock:
            return self._rest.round_index

    # --- what the scheduler tells the policy ---------------------------------------------------

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int,
                budget: float = 1.0, *, kind: Hashable = None) -> None:
        """A job arrives: its gang size, its regimes (batch size -> seconds per epoch), its total epochs.

        `kind` says what kind of job it is, for a forecaster that learns from finished jobs of the
        same kind (the simulator passes ``(model, adaptation)``); None: unknown.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job, and leaving the policy as it was: an id that is not a string, a whole
            number (not a bool) or a tuple of them (a NumPy integer is keyed as the equal int),
            already present or of a job that completed (ids are unique over the policy's life; a
            removed job's id may be used again); a gang size that is not a positive whole number or
            is wider than the cluster; a malformed regime set (batch sizes and seconds must be real
            numbers, not bools or strings; seconds finite and > 0); an epoch count that is not a
            whole number in [1, `MAX_JOB_EPOCHS`]; epochs times the slowest regime's seconds above
            `MAX_JOB_SECONDS`; a budget that is not a finite number in (0, `MAX_BUDGET`]; a kind
            that is not hashable.
        """
        self._add(self.config, job_id, gpus, regimes, epochs, budget, kind)

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves (cancelled, or finished by the scheduler's own account)."""
        self._remove(job_id)

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished since the last report, one batch size (its regime) per epoch.

        Each call reports *new* epochs: the same epochs reported twice count twice. A scheduler
        that cannot tell whether a report went through compares `epochs_done` with its own count
        before reporting again. A job whose epochs are all done completes: it leaves the policy and
        is listed in `completed`, and the next round re-plans.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job, and leaving the policy as it was: an unknown id or a job that has
            completed; `batch_sizes` that is not a flat list (or 1-D array) of finite numbers (a
            string, a number, a mapping, a masked array, NaN); a batch size not in its regimes;
            more epochs than it has left.
        """
        self._report(job_id, batch_sizes)

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> list[Hashable]:
        """The jobs to run in the next round (each on its whole gang), re-planning if due.

        Always served, within `capacity`: a failed or late re-plan falls back to the standing
        plan or to first-fit (class Notes); `last_decision` says how the round was decided."""
        return list(self._decide(serving(self.config)))

    def regimes(self, job_id: Hashable) -> dict[float, float]:
        """Job `job_id`'s regimes (batch size -> seconds per epoch)."""
        return dict(self._record(job_id).regimes)

    def epochs_left(self, job_id: Hashable) -> int:
        """Epochs job `job_id` has not finished yet."""
        job = self._record(job_id)
        return job.epochs - job.done

    def epochs_done(self, job_id: Hashable) -> int:
        """Epochs of job `job_id` reported so far (the sum of its `report_progress` calls).

        A scheduler that is unsure whether a report was taken (a retry after an error of its
        own) compares this with its own count: `report_progress` adds every call's epochs.

        Raises
        ------
        vfm.errors.ValidationError
            For a job not in the policy, saying so if it has completed (all its epochs are done).
        """
        return self._record(job_id).done
