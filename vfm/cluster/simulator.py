"""The round-based, trace-driven cluster simulator.

A workload (`vfm.cluster.workload.load_workload`) is a cluster of ``gpus`` GPUs and a list of
jobs, each with its arrival time, gang size and per-epoch profile (batch size and seconds per
epoch, expanded from the file's ``phases``). `simulate` drives a
`vfm.cluster.protocol.SchedulingPolicy` round by round and records what happened in a
`Simulation`; `vfm.cluster.metrics` turns it into the metrics. ``docs/simulation.md`` states
the semantics and every decision made where the Shockwave paper and artifact leave a choice.

Semantics in brief (round ``r`` covers ``[r * round_s, (r + 1) * round_s)``):

1. Jobs with ``arrival_s <= r * round_s`` not yet added are added, in arrival order; the policy
   is told each one's restart cost (``add_job(..., restart_s=...)``).
2. ``policy.next_round()`` is called and timed. Rounds in which no job is present (before the
   first arrival, or after every job present has finished and before the next arrives) are
   skipped: the simulator jumps to the round of the next arrival, and does not record them.
3. The answer is checked: known, present, unfinished jobs, no duplicates, gangs within capacity.
4. A scheduled job that did not run in round ``r - 1`` starts (or restarts): it spends its first
   seconds of running restarting, its own restart cost (`Job.restart_s`) where the workload
   states one, else ``restart_s``; then it works through its epochs at their durations. A restart
   longer than the round goes on over the job's next rounds, which make no progress until it
   ends; a job not scheduled in a round before its restart has ended loses it, and its next
   start pays the whole cost again. Work carries over: a job preempted in the middle of an epoch
   resumes there. A job finishing inside the round frees its GPUs then.
5. Every job that finished at least one epoch reports their batch sizes to the policy.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import numpy as np
from numpy.typing import NDArray

from vfm._validation import checked_job_id, first_bad
from vfm.cluster._trace import Trace
from vfm.cluster.gpu_types import ClusterTypes
from vfm.cluster.protocol import ClusterAware, ReportsDiagnostics, SchedulingPolicy
from vfm.cluster.workload.model import Workload
from vfm.errors import PolicyError, ValidationError
from vfm.limits import MAX_ARRIVAL_ROUNDS, MAX_JOB_SECONDS
from vfm.parameters import Constraint, Function, Instance, Interval, Optional, Real, Whole, check, check_parameters

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["Round", "Simulation", "default_max_rounds", "simulate"]



class Round(NamedTuple):
    """One simulated round: its start, the jobs holding GPUs in it (the policy's order) and, when the
    policy placed them on types (an answer that maps jobs to types), the type each of them ran on
    (empty for a list of job ids, which run on the cluster's one type)."""

    start_s: float
    jobs: tuple[Hashable, ...]
    types: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Simulation:
    """What `simulate` recorded. Arrays are per job in workload order (n jobs) or per round (R).

    Attributes
    ----------
    workload : str
        The workload's name.
    policy : str
        The policy's class name.
    gpus : int
        GPUs in the cluster.
    n_jobs : int
    round_s, restart_s : float
        The round length and the simulator's restart cost (charged to the jobs that state none).
    job_restart_s : ndarray, shape (n,) or None
        Seconds each job lost per restart: its own restart cost (`Job.restart_s`) or `restart_s`.
        None only for a record built by hand (then `restart_s` for every job).
    job_id : ndarray, shape (n,)
        int64 when every id is an integer within int64, else object (the ids themselves: an
        integer of any size, a string, a tuple).
    arrival_s, finish_s, isolated_s : ndarray, shape (n,)
        ``finish_s`` is the instant the job's last epoch ended. ``isolated_s`` is the reference of
        the finish-time fairness metrics: `Job.isolated_s` on the V100 cluster of a workload
        without types; on a cluster of several, the job's time alone on a proportional slice of
        the cluster (`proportional_isolated_s`).
    restarts : ndarray of int, shape (n,)
        Rounds the job started after not running in the previous round (its first included) or
        on another GPU type than in the previous round; each pays the job's whole restart cost,
        even after a restart lost before it ended.
    held_s : ndarray, shape (n,)
        Seconds the job held its gang: from each of its rounds' start to the round's end or to
        its finish, restarting included (``restarts * job_restart_s`` of them when every restart
        ends inside its round; a restart lost to a descheduling counts the part it ran).
    rounds : tuple of Round, length R
        The rounds in which jobs were present, in order (the empty rounds between them are
        skipped, module docstring); ``start_s`` says which round each is.
    planner_s : ndarray, shape (R,)
        Wall-clock seconds of each ``policy.next_round()`` call.
    planner_busy : ndarray of bool, shape (R,)
        Whether jobs were present when that call was made (`summarize` times those only); True
        for every recorded round, since empty rounds are skipped.
    busy_gpu_s : float
        GPU-seconds held by jobs: ``sum(gpus * held_s)``.
    replans : tuple of dict
        For a policy that reports diagnostics (`vfm.cluster.protocol.ReportsDiagnostics`, as
        `vfm.planner.Policy` does), one entry per re-plan: the backend (``solver``), the
        ``status``, the ``fairness`` of its FTF targets (``Plan.fairness``) and the seconds of each
        component of ``Plan.timings``. Empty for other policies.
    guards : mapping of str to int
        For a policy that reports diagnostics: over the run, how many job-rounds each guard of
        its execution decided (`vfm.planner.Decision.guards`). Empty for other policies.
    cluster : ClusterTypes or None
        The cluster's GPUs by type (`Workload.cluster`, or `gpus` V100s for a workload without
        types); None only for a record built by hand.
    """

    workload: str
    policy: str
    gpus: int
    n_jobs: int
    round_s: float
    restart_s: float
    job_id: NDArray[Any]
    arrival_s: FloatArray
    finish_s: FloatArray
    isolated_s: FloatArray
    restarts: IntArray
    held_s: FloatArray
    rounds: tuple[Round, ...]
    planner_s: FloatArray
    planner_busy: NDArray[np.bool_]
    busy_gpu_s: float
    replans: tuple[dict[str, Any], ...] = ()
    guards: Mapping[str, int] = field(default_factory=dict)
    cluster: ClusterTypes | None = None
    job_restart_s: FloatArray | None = None

    def __post_init__(self) -> None:
        # A record: its arrays are read-only (a caller who wants to edit one copies it), its
        # guard counts its own.
        object.__setattr__(self, "guards", dict(self.guards))
        for value in vars(self).values():
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    @property
    def jct_s(self) -> FloatArray:
        """Job completion times ``finish_s - arrival_s``, shape (n,)."""
        return self.finish_s - self.arrival_s


def default_max_rounds(workload: Workload, round_s: float, restart_s: float) -> int:
    """A generous bound on the rounds any policy that keeps a job running needs.

    After the last arrival, a policy that runs only one job at a time and restarts it as soon as
    its restart is over and it has worked for the rest of that round runs it ``k`` rounds per start,
    ``k = floor(restart_s / round_s) + 1``, each start giving ``w = k * round_s - restart_s``
    seconds of work, so it needs ``k * ceil(isolated_s / w)`` rounds per job (for a restart
    shorter than the round, ``k = 1``: ``ceil(isolated_s / (round_s - restart_s))``, a restart
    every round). On a cluster of several types ``isolated_s`` is the job's isolated time on the
    slowest type that can run it; `restart_s` is the job's own restart cost where the workload
    states one. The bound is twice the sum of that plus the rounds up to the last arrival, plus
    one round per job.
    """
    cluster = workload.cluster if workload.cluster is not None else ClusterTypes.single(workload.gpus)
    return _rounds_bound(workload, Trace(workload, cluster).slowest_s, round_s, _restart_costs(workload, restart_s))


def _restart_costs(workload: Workload, restart_s: float) -> FloatArray:
    """Each job's restart cost, shape (n,): its own (`Job.restart_s`) where the workload states
    one, else `restart_s`."""
    return np.array([restart_s if job.restart_s is None else job.restart_s for job in workload.jobs], dtype=float)


def _rounds_bound(workload: Workload, slowest_s: FloatArray, round_s: float, restart_s: FloatArray) -> int:
    """`default_max_rounds` given each job's isolated time on the slowest type that hosts it and
    its restart cost."""
    per_start = np.floor(restart_s / round_s) + 1  # rounds per start: the restart and some work
    serial = int((per_start * np.ceil(slowest_s / (per_start * round_s - restart_s))).sum())
    last_arrival = math.ceil(float(workload.arrival_s.max()) / round_s)
    return last_arrival + 2 * serial + workload.n_jobs + 1


# `ask_policy` and `checked_answer` are how any simulator talks to a policy: the artifact's
# mechanics (`vfm.cluster.artifact`) use them too.


def ask_policy(policy: SchedulingPolicy, guards: dict[str, int]) -> tuple[Any, float, dict[str, Any] | None]:
    """``policy.next_round()``, its wall-clock seconds, and, when a policy that reports diagnostics
    (`ReportsDiagnostics`) re-planned for it, the re-plan's record (`Simulation.replans`); the
    guards that decided the round are added to `guards` (`Simulation.guards`)."""
    tic = time.perf_counter()
    answer = policy.next_round()
    seconds = time.perf_counter() - tic
    if not isinstance(policy, ReportsDiagnostics):
        return answer, seconds, None
    report = policy.diagnostics()
    for name, count in report.get("guards", {}).items():
        guards[name] = guards.get(name, 0) + int(count)
    replan = report.get("replan")
    return answer, seconds, None if replan is None else dict(replan)


def checked_answer(answer: Any, policy: object, round_index: int, index_of: Mapping[Hashable, int],
                  present: NDArray[np.bool_], finished: NDArray[np.bool_], gpus: IntArray,
                  capacity: int) -> IntArray:
    """The indices of the jobs in a policy's answer, or a PolicyError saying what is wrong."""
    who = _who(policy, round_index)
    if isinstance(answer, str | bytes) or not isinstance(answer, Sequence):
        raise PolicyError(f"{who} must return a list of job ids, got {type(answer).__name__}")
    picked = np.empty(len(answer), dtype=np.int64)
    for k, job_id in enumerate(answer):
        try:
            picked[k] = index_of[job_id]
        except (KeyError, TypeError):
            raise PolicyError(f"{who} returned job {job_id!r}, which is not in the workload") from None
    if (p := first_bad(~present[picked])) is not None:
        state = "has finished" if finished[picked[p]] else "has not arrived yet"
        raise PolicyError(f"{who} returned job {answer[p]!r}, which {state}")
    times = np.bincount(picked, minlength=present.size)
    if (p := first_bad(times[picked] > 1)) is not None:
        raise PolicyError(f"{who} returned job {answer[p]!r} {times[picked[p]]} times")
    used = int(gpus[picked].sum())
    if used > capacity:
        raise PolicyError(f"{who} asked for {used} GPUs (jobs {list(answer)!r}); the cluster has {capacity}")
    return picked


def _who(policy: object, round_index: int) -> str:
    return f"{type(policy).__name__}.next_round() in round {round_index}"


def _answered(answer: Any, who: str, cluster: ClusterTypes) -> tuple[Any, list[Any] | None]:
    """An answer as its jobs and their types: a mapping job id -> type as its keys and values; on a
    cluster of one type, a list of job ids as it is, with no types (each runs on that type)."""
    if isinstance(answer, Mapping):
        return list(answer.keys()), list(answer.values())
    if len(cluster) > 1:
        raise PolicyError(f"{who} must return a mapping job id -> GPU type on a cluster of several types "
                          f"({', '.join(cluster.types)}), got {type(answer).__name__}")
    return answer, None


def _check_placement(answer: Any, run: _Run, round_index: int, present: NDArray[np.bool_],
                     finished: NDArray[np.bool_]) -> tuple[IntArray, IntArray]:
    """A policy's answer as job indices and the index of each one's type (`checked_answer` for the
    jobs, then the types: known, able to run the job, within each type's count)."""
    policy, trace, cluster = run.policy, run.trace, run.cluster
    who = _who(policy, round_index)
    jobs, told = _answered(answer, who, cluster)
    picked = checked_answer(jobs, policy, round_index, run.index_of, present, finished, trace.gpus, cluster.total)
    types = [cluster.types[0]] * picked.size if told is None else told
    placed = np.empty(picked.size, dtype=np.int64)
    for k, gpu_type in enumerate(types):
        if not isinstance(gpu_type, str) or gpu_type not in cluster.types:
            raise PolicyError(f"{who} placed job {jobs[k]!r} on {gpu_type!r}, not a GPU type of the cluster "
                              f"({', '.join(cluster.types)})")
        placed[k] = cluster.types.index(gpu_type)
    if (p := first_bad(~trace.hosts[placed, picked])) is not None:
        raise PolicyError(f"{who} placed job {jobs[p]!r} on {types[p]}, which cannot run it (it was told the "
                          f"types {', '.join(trace.regimes[picked[p]])})")
    used = np.bincount(placed, weights=trace.gpus[picked], minlength=len(cluster))
    if (over := first_bad(used > cluster.counts)) is not None:
        raise PolicyError(f"{who} asked for {int(used[over])} GPUs of type {cluster.types[over]} (jobs {jobs!r}); "
                          f"the cluster has {int(cluster.counts[over])}")
    return picked, placed


def _check_ids(workload: Workload) -> None:
    """Every job id is one a policy keys (`checked_job_id`: a string, an int that is not a bool,
    or a tuple of them), checked before the run rather than at a policy's first call."""
    for index, job in enumerate(workload.jobs):
        try:
            checked_job_id(job.id)
        except ValidationError as exc:
            raise ValidationError(f"workload job {index}: {exc}") from None


_INT64 = np.iinfo(np.int64)


def _id_array(ids: list[Hashable]) -> NDArray[Any]:
    """The ids as `Simulation.job_id`: int64 when every id is an int within int64, else an object
    array holding the ids themselves (a 2**63 id, a tuple id: numpy would overflow or add an axis)."""
    if all(type(i) is int and _INT64.min <= i <= _INT64.max for i in ids):  # type(): no bool, no subclass
        return np.array(ids, dtype=np.int64)
    array = np.empty(len(ids), dtype=object)  # filled one by one: a tuple id stays one entry
    for k, job_id in enumerate(ids):
        array[k] = job_id
    return array


def _first_round_at(arrival_s: float, round_s: float, at_least: int) -> int:
    """The first round ``r >= at_least`` whose start ``r * round_s`` is at or after `arrival_s`:
    the round in which stepping round by round would add the job (exact in floating point: the
    candidate from the quotient is corrected with the very product the arrival test computes)."""
    r = max(at_least, math.ceil(arrival_s / round_s))
    while r * round_s < arrival_s:
        r += 1
    while r > at_least and (r - 1) * round_s >= arrival_s:
        r -= 1
    return r


def _checked_policy(workload: Workload, policy: object) -> ClusterTypes:
    """The workload's cluster, once `policy` is a policy object for it (built for that cluster, if
    `ClusterAware`; else the workload's cluster must be of the profiled type alone)."""
    if isinstance(policy, type):
        raise ValidationError(f"policy must be a policy object, got the class {policy.__name__}; pass an instance "
                              f"for this workload's cluster, as {policy.__name__}({workload.gpus})")
    check("policy", policy, Instance(SchedulingPolicy, "an implementation of vfm.cluster.SchedulingPolicy (add_job, "
                                     "remove_job, report_progress, next_round)"))
    cluster = workload.cluster if workload.cluster is not None else ClusterTypes.single(workload.gpus)
    typed = isinstance(policy, ClusterAware)
    if isinstance(policy, ClusterAware) and policy.cluster != cluster:
        raise ValidationError(f"policy.cluster is {policy.cluster!r} but the workload's cluster is {cluster!r}; "
                              f"build the policy for the workload's cluster")
    if not typed and cluster.types != (cluster.profiles.profiled,):
        raise ValidationError(f"{type(policy).__name__} schedules a cluster of one GPU type, but the workload's "
                              f"cluster is {dict(cluster)}; use a policy with a `cluster` "
                              f"(vfm.cluster.ClusterAware)")
    return cluster


#: `simulate`'s own arguments' constraints (`vfm.parameters`); the policy is checked against the
#: workload.
_CONSTRAINTS: dict[str, Constraint] = {
    "workload": Instance(Workload, "a vfm.cluster.Workload (load_workload or generate_workload makes one)"),
    "progress": Optional(Function("a callable progress(round_index, finished_jobs, total_jobs)")),
    "round_s": Optional(Interval(Real, 0, closed="neither", unit="seconds")),
    "max_rounds": Optional(Interval(Whole, 1, unit="rounds")),
    "restart_s": Interval(Real, 0, MAX_JOB_SECONDS, unit="seconds", note="MAX_JOB_SECONDS"),
}


def _check_arguments(workload: Workload, policy: SchedulingPolicy, round_s: float | None,
                     restart_s: float, max_rounds: int | None,
                     progress: Callable[[int, int, int], None] | None) -> tuple[ClusterTypes, float]:
    """`simulate`'s arguments checked before the first round: the workload's cluster (`gpus` V100s
    for a workload without types) and the round length (default ``workload.round_s``)."""
    check_parameters({"workload": workload, "progress": progress, "round_s": round_s, "max_rounds": max_rounds,
                      "restart_s": restart_s}, _CONSTRAINTS)
    cluster = _checked_policy(workload, policy)
    round_s = workload.round_s if round_s is None else float(round_s)
    if float(workload.arrival_s.max()) / round_s >= MAX_ARRIVAL_ROUNDS:
        raise ValidationError(f"round_s = {round_s:g} puts the last arrival more than {MAX_ARRIVAL_ROUNDS:.3g} "
                              f"rounds away, past the rounds whose starts are exact in floating point; use longer "
                              f"rounds")
    _check_ids(workload)
    return cluster, round_s


@dataclass(frozen=True, eq=False)
class _Run:
    """What stays fixed over a run: the checked arguments, the flattened trace and the job lookups."""

    workload: Workload
    policy: SchedulingPolicy
    cluster: ClusterTypes
    typed: bool
    trace: Trace
    round_s: float
    restart_s: FloatArray  # per job: its own restart cost, or the simulator's
    max_rounds: int
    ids: list[Hashable]
    index_of: dict[Hashable, int]
    arrival_order: IntArray
    regimes: list[Any]


def _prepare(workload: Workload, policy: SchedulingPolicy, cluster: ClusterTypes, round_s: float,
             restart_s: float, max_rounds: int | None) -> _Run:
    """The fixed part of a run on checked arguments, or a ValidationError for a job no type can run."""
    typed = isinstance(policy, ClusterAware)
    trace = Trace(workload, cluster)
    restarts = _restart_costs(workload, restart_s)
    if max_rounds is None:
        max_rounds = _rounds_bound(workload, trace.slowest_s, round_s, restarts)
    if (j := first_bad(~np.isfinite(trace.reference_s))) is not None:
        raise ValidationError(f"job {workload.jobs[j].id!r} cannot run on any GPU type of the cluster "
                              f"({', '.join(cluster.types)}): no type runs every batch size of its profile and epochs")
    ids = [job.id for job in workload.jobs]
    return _Run(workload=workload, policy=policy, cluster=cluster, typed=typed, trace=trace, round_s=round_s,
                restart_s=restarts, max_rounds=max_rounds, ids=ids,
                index_of={job_id: j for j, job_id in enumerate(ids)},
                arrival_order=np.argsort(workload.arrival_s, kind="stable"),  # ties keep file order
                regimes=trace.regimes if typed else [job.regimes for job in workload.jobs])


@dataclass(eq=False)
class _State:
    """What a run changes round by round (per job, shape (n,), and per round), recorded at its end."""

    n: int
    work_s: FloatArray = field(init=False)  # seconds of isolated work each job has done
    done_epochs: IntArray = field(init=False)
    added: NDArray[np.bool_] = field(init=False)
    finished: NDArray[np.bool_] = field(init=False)
    ran_last: NDArray[np.bool_] = field(init=False)
    last_type: IntArray = field(init=False)  # the type of each job's last round; its work_s is seconds there
    finish_s: FloatArray = field(init=False)
    restarts: IntArray = field(init=False)
    restart_left: FloatArray = field(init=False)  # seconds of its restart a job that ran last round has left
    held_s: FloatArray = field(init=False)
    rounds: list[Round] = field(default_factory=list)
    planner_s: list[float] = field(default_factory=list)
    planner_busy: list[bool] = field(default_factory=list)
    replans: list[dict[str, Any]] = field(default_factory=list)
    guards: dict[str, int] = field(default_factory=dict)
    next_arrival: int = 0
    n_finished: int = 0

    def __post_init__(self) -> None:
        n = self.n
        self.work_s, self.done_epochs = np.zeros(n), np.zeros(n, dtype=np.int64)
        self.added, self.finished, self.ran_last = (np.zeros(n, dtype=bool) for _ in range(3))
        self.last_type = np.zeros(n, dtype=np.int64)
        self.finish_s = np.full(n, np.nan)
        self.restarts, self.held_s = np.zeros(n, dtype=np.int64), np.zeros(n)
        self.restart_left = np.zeros(n)


def _add_arrivals(run: _Run, state: _State, start: float) -> None:
    """Add to the policy, in arrival order, the jobs that have arrived by the round's `start`."""
    n, arrival, order = state.n, run.workload.arrival_s, run.arrival_order
    while state.next_arrival < n and arrival[order[state.next_arrival]] <= start:
        j = int(order[state.next_arrival])
        job = run.workload.jobs[j]
        kind = None if job.training is None else (job.training.model, job.training.adaptation)
        run.policy.add_job(job.id, job.gpus, run.regimes[j], job.epochs, kind=kind,
                           restart_s=float(run.restart_s[j]))
        state.added[j] = True
        state.next_arrival += 1


def _plan_round(run: _Run, state: _State, round_index: int, start: float) -> tuple[IntArray, IntArray]:
    """Ask the policy for the round, record the call and the round, and return the jobs it runs
    (indices) and the index of the type each runs on (0 on a cluster scheduled without types)."""
    present = state.added & ~state.finished
    answer, seconds, replan = ask_policy(run.policy, state.guards)
    state.planner_s.append(seconds)
    if replan is not None:
        state.replans.append(replan)
    state.planner_busy.append(bool(present.any()))
    picked, placed = _check_placement(answer, run, round_index, present, state.finished)
    state.rounds.append(Round(start, tuple(run.ids[j] for j in picked.tolist()),
                              tuple(run.cluster.types[k] for k in placed.tolist()) if isinstance(answer, Mapping)
                              else ()))
    return picked, placed


def _work_round(run: _Run, state: _State, picked: IntArray, placed: IntArray, start: float) -> NDArray[np.bool_]:
    """Advance the scheduled jobs `picked` (on types `placed`) through the round that starts at
    `start`; return which of them completed in it."""
    trace, work_s, last_type = run.trace, state.work_s, state.last_type
    end = start + run.round_s
    # A job moving to another type continues its epoch there, from the same fraction.
    moved = (placed != last_type[picked]) & (work_s[picked] > 0)
    if moved.any():
        jobs = picked[moved]
        work_s[jobs] = trace.carried(jobs, last_type[jobs], placed[moved], work_s[jobs], state.done_epochs[jobs])
    # The round for every scheduled job at once; a change of type is a restart. A restart that
    # does not end inside the round fills it (no work) and goes on in the job's next round.
    restarting = ~state.ran_last[picked] | (placed != last_type[picked])
    state.restarts[picked] += restarting
    left = np.where(restarting, run.restart_s[picked], state.restart_left[picked])
    filled = left >= run.round_s
    work_from = start + np.where(filled, run.round_s, left)
    isolated = trace.isolated_s[placed, picked]
    need = isolated - work_s[picked]
    completes = (need <= end - work_from) & ~filled
    done_at = np.where(completes, work_from + need, end)
    work_s[picked] = np.where(completes, isolated, work_s[picked] + (end - work_from))
    last_type[picked] = placed
    state.held_s[picked] += done_at - start
    state.finish_s[picked[completes]] = done_at[completes]
    state.finished[picked[completes]] = True
    state.n_finished += int(completes.sum())
    state.ran_last[:] = False
    state.ran_last[picked] = True
    state.restart_left[:] = 0.0  # a job not scheduled loses what it had left of its restart
    state.restart_left[picked] = np.where(filled, left - run.round_s, 0.0)
    return completes


def _report_epochs(run: _Run, state: _State, picked: IntArray, placed: IntArray,
                   completes: NDArray[np.bool_]) -> None:
    """Count the epochs the scheduled jobs have finished and report the new ones to the policy."""
    trace = run.trace
    # Epochs finished so far: epoch ends on the global line at or before the job's position.
    # A completed job has all its epochs by definition (no rounding can leave one behind).
    before = state.done_epochs[picked]
    after = trace.epochs_done(picked, placed, state.work_s[picked])
    after = np.where(completes, trace.epochs[picked], np.clip(after, before, trace.epochs[picked] - 1))
    state.done_epochs[picked] = after
    # The policy sees finished epochs only: one call per job that finished any.
    # In workload order, whatever the order of the policy's answer.
    reports = np.flatnonzero(after > before)
    reports = reports[np.argsort(picked[reports])]
    first = (trace.offset[picked] + before)[reports].tolist()
    last = (trace.offset[picked] + after)[reports].tolist()
    for j, a, b in zip(picked[reports].tolist(), first, last, strict=True):
        run.policy.report_progress(run.ids[j], trace.batch_size[a:b].tolist())


def _run_rounds(run: _Run, state: _State, progress: Callable[[int, int, int], None] | None) -> None:
    """Step round by round until every job has finished, skipping the rounds with no job present."""
    n, arrival = state.n, run.workload.arrival_s
    round_index = 0
    while state.n_finished < n:
        if state.next_arrival == state.n_finished:
            # No job present (each added job has finished): the rounds until the next arrival are
            # empty, so jump to the first round whose start is at or after it, with the same
            # comparison the arrivals below make.
            round_index = _first_round_at(float(arrival[run.arrival_order[state.next_arrival]]), run.round_s,
                                          round_index)
        if round_index >= run.max_rounds:
            raise PolicyError(
                f"{type(run.policy).__name__} left {n - state.n_finished} of {n} jobs unfinished after "
                f"{run.max_rounds} rounds (is it starving jobs?); first unfinished: "
                f"{run.ids[int(np.flatnonzero(~state.finished)[0])]!r}")
        start = round_index * run.round_s
        _add_arrivals(run, state, start)
        picked, placed = _plan_round(run, state, round_index, start)
        completes = _work_round(run, state, picked, placed, start)
        _report_epochs(run, state, picked, placed, completes)
        if progress is not None:
            progress(round_index, state.n_finished, n)
        round_index += 1


def _recorded(run: _Run, state: _State, restart_s: float) -> Simulation:
    """The finished run as a `Simulation`."""
    workload = run.workload
    return Simulation(
        workload=workload.name, policy=type(run.policy).__name__, gpus=workload.gpus, n_jobs=state.n,
        round_s=run.round_s, restart_s=float(restart_s), job_id=_id_array(run.ids), arrival_s=workload.arrival_s,
        finish_s=state.finish_s, isolated_s=run.trace.reference_s, restarts=state.restarts, held_s=state.held_s,
        rounds=tuple(state.rounds), planner_s=np.array(state.planner_s),
        planner_busy=np.array(state.planner_busy, dtype=bool), busy_gpu_s=float((run.trace.gpus * state.held_s).sum()),
        replans=tuple(state.replans), guards=state.guards, cluster=run.cluster, job_restart_s=run.restart_s,
    )


def simulate(workload: Workload, policy: SchedulingPolicy, *, round_s: float | None = None,
             restart_s: float = 20.0, max_rounds: int | None = None,
             progress: Callable[[int, int, int], None] | None = None) -> Simulation:
    """Run `policy` on `workload`, round by round, until every job has finished.

    Parameters
    ----------
    workload : Workload
    policy : SchedulingPolicy
        A fresh policy for this workload's cluster (its state is advanced by the run).
    round_s : float, optional
        Round length; default ``workload.round_s``.
    restart_s : float
        Seconds a job spends restarting when it is scheduled after a round it did not run in (its
        first round included), in ``[0, MAX_JOB_SECONDS]``. A job whose workload states its own
        restart cost (`Job.restart_s`) spends that instead. A restart longer than the round goes
        on through the job's next rounds, without progress until it ends; a job not scheduled in
        a round before then loses it and pays the whole cost again at its next start. Each job's
        cost is told to the policy on arrival.
    max_rounds : int, optional
        Stop with a PolicyError after this many rounds; default `default_max_rounds`.
    progress : callable, optional
        Called after every round as ``progress(round_index, finished_jobs, total_jobs)``.

    Returns
    -------
    Simulation

    Raises
    ------
    PolicyError
        If the policy returns an unknown, absent, finished or repeated job or more GPUs than
        the cluster has (naming the policy class, the round and the job), or if the jobs have
        not all finished after `max_rounds` rounds.
    ValidationError
        For a bad `round_s`, `restart_s` or `max_rounds`, or a job id that is not a string, an
        int (not a bool) or a tuple of them (naming the job), before the first round.
    """
    cluster, round_s = _check_arguments(workload, policy, round_s, restart_s, max_rounds, progress)
    checked = cast(SchedulingPolicy, policy)  # _check_arguments: it implements SchedulingPolicy
    run = _prepare(workload, checked, cluster, round_s, restart_s, max_rounds)
    state = _State(workload.n_jobs)
    _run_rounds(run, state, progress)
    return _recorded(run, state, restart_s)
