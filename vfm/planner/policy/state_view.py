"""A policy's state held for O(1) events (`StateView`), `vfm.planner.Policy`'s base: the jobs in
private containers, the frozen `PolicyState` built from them only when asked for, and the lock that
serializes a policy's calls."""

from __future__ import annotations

import threading
import time
from collections.abc import Hashable, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from vfm.forecast import Trajectory
from vfm.planner.plan import Plan
from vfm.planner.policy.decision import Decision, Placement, Serving, decide_placed
from vfm.planner.policy.job_events import checked_new_id, record_in, reported
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState


class StateView:
    """A policy's state held for O(1) events (`vfm.planner.Policy`'s base).

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
        # On several GPU types the state names their order, which its speeds and plans are indexed by.
        types = self.config.cluster.types if self.config.types > 1 and self.config.cluster is not None else ()
        self._install(PolicyState(gpu_types=tuple(types)) if state is None else state)

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
            return record_in(self._jobs, job_id, lambda: _member(self._completed_ids, job_id))

    def _new_key(self, job_id: Hashable) -> Hashable:
        """The key a new job `job_id` is kept under (`_jobs`), checked by `checked_new_id`; O(1)."""
        with self._lock:
            return checked_new_id(self._jobs, self._completed_ids, job_id)

    def _add(self, key: Hashable, record: JobRecord) -> None:
        """A job arrives: its checked `record` kept under `key` (`_new_key`); O(1)."""
        with self._lock:
            self._jobs[key] = record
            self._stale, self._cached = True, None

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
        """The standing plan (None before the first re-plan); its arrays are read-only."""
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
