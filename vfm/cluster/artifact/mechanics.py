"""The Shockwave artifact's simulator and Gavel's round mechanism, for its baselines.

`simulate` replays a workload the way the artifact's ``scheduler.py`` (uw-mad-dash/shockwave,
MIT) does when it produced the paper's published baseline numbers, so that our baselines can be
checked against those numbers mechanism by mechanism. docs/baselines.md ("Artifact mechanics")
lists every rule with its reason; in brief:

* **Work in steps.** A job runs ``total_steps`` steps at the throughput of its current batch
  size and gang (``gpu_types_throughputs.json``); its batch size changes online
  (`vfm.cluster.artifact._adaptation`), one executed round after the job asks for it.
* **Rounds end when their last job does.** A dispatched job runs
  ``min(int(throughput * round_s), remaining)`` steps; the round ends at the latest planned
  finish, so rounds are a little shorter than ``round_s`` and a round of finishing jobs can be
  much shorter. Arrivals join at the end of the round they arrive in.
* **Restarts.** A job not run in the round before loses ``restart_s`` seconds of work, but only
  when it runs more than ``round_s - 5`` seconds in the round, and never in the first round.
* **Gavel's rounds.** The allocation ``x`` is recomputed only when a job arrived, finished or
  failed, and at least ``reset_interval_s`` after the previous recomputation (the first two
  recomputations excepted); each job's received time restarts then from half a round. Jobs are
  taken by ``x / (received / total received)``, then deficit, then ``x``, descending, and packed
  first-fit; a job that arrived after the recomputation holds its GPUs in that pass but does
  not run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vfm.cluster.artifact._adaptation import Rules, ceil_div, rescale, wanted
from vfm.cluster.artifact.allocations import BASELINE_NAME, AllocationInputs, Allocator, make_allocator
from vfm.cluster.gpu_types import PROFILED_TYPE, throughput_table
from vfm.cluster.protocol import SchedulingPolicy
from vfm.cluster.simulator import Round, Simulation, ask_policy, checked_answer
from vfm.cluster.workload.model import Training, Workload
from vfm.errors import ValidationError
from vfm.gang_packing import first_fit
from vfm.parameters import Constraint, Instance, Interval, Optional, Real, Whole, check, check_parameters

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["ArtifactOptions", "simulate", "throughput_table"]


@dataclass(frozen=True)
class ArtifactOptions:
    """The artifact's constants (its defaults; the published runs did not change them).

    Attributes
    ----------
    round_s : float or None
        Round length; None takes the workload's.
    restart_s : float
        Work a restarted job loses.
    restart_free_s : float
        A job that runs at most ``round_s - restart_free_s`` seconds in a round pays no restart.
    reset_interval_s : float
        Least time between two allocation recomputations.
    max_failures : int
        A job whose round does no work this many times in a row is dropped as failed.
    deadline_factor : float
        A job is completed once it has run ``int(deadline_factor * int(isolated_s))`` seconds.
    gpu_type : str
        The column of the throughput table the cluster's GPUs are.
    """

    round_s: float | None = None
    restart_s: float = 20.0
    restart_free_s: float = 5.0
    reset_interval_s: float = 1000.0
    max_failures: int = 5
    deadline_factor: float = 1.5
    gpu_type: str = PROFILED_TYPE

    def __post_init__(self) -> None:
        # Each against its own range only: `round_s` may be None (the workload's), so how
        # `restart_s` and `restart_free_s` compare with it is the artifact's business at run time.
        check_parameters(vars(self), _OPTIONS_CONSTRAINTS)


#: `ArtifactOptions`' constraints, checked on construction (`vfm.parameters`); `gpu_type` names a
#: column of the workload's throughput table, checked when a simulation reads it.
_OPTIONS_CONSTRAINTS: dict[str, Constraint] = {
    "round_s": Optional(Interval(Real, 0, closed="neither", unit="seconds")),
    "restart_s": Interval(Real, 0, unit="seconds"),
    "restart_free_s": Interval(Real, 0, unit="seconds"),
    # Infinite is allowed: the allocation is then recomputed only where the interval does not apply.
    "reset_interval_s": Interval(Real, 0, unit="seconds", finite=False),
    "max_failures": Interval(Whole, 1),
    "deadline_factor": Interval(Real, 0, closed="neither"),
    "gpu_type": Instance(str, "a GPU type's name (a str)"),
}
#: A job's run in training steps, which the artifact's mechanics need of every job.
_TRAINED = Instance(Training, "a vfm.cluster.workload.Training (the artifact's mechanics run jobs in training steps: "
                              "give each job model, adaptation, total_steps and samples_per_epoch)")


def _rules(workload: Workload, gpu_type: str) -> tuple[Rules, FloatArray, IntArray]:
    for index, job in enumerate(workload.jobs):
        check(f"training of job {index} (id {job.id!r})", job.training, _TRAINED)
    trainings = [job.training for job in workload.jobs if job.training is not None]
    table = throughput_table(workload.throughputs or "tacc", gpu_type)
    initial = np.array([int(job.batch_size[0]) for job in workload.jobs], dtype=np.int64)
    gang = np.array([job.gpus for job in workload.jobs], dtype=np.int64)
    rules = Rules.of([t.model for t in trainings], [t.adaptation for t in trainings], initial, gang,
                     np.array([t.samples_per_epoch for t in trainings], dtype=np.int64), table)
    rows = np.arange(workload.n_jobs)
    throughput = rules.throughput(rows, initial)
    if (i := next(iter(np.flatnonzero(~(throughput > 0))), None)) is not None:
        raise ValidationError(f"job {i} (id {workload.jobs[i].id!r}): the throughput table has no "
                              f"'{rules.model[i]} (batch size {initial[i]})|{gang[i]}' for {gpu_type}")
    return rules, throughput, np.array([t.total_steps for t in trainings], dtype=np.int64)


class _Gavel:
    """Gavel's priorities, deficits and gated recomputation (``scheduler.py``
    ``_update_priorities``, ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``),
    over the workload's rows."""

    def __init__(self, gang: IntArray, capacity: int, allocator: Allocator, options: ArtifactOptions,
                 round_s: float):
        self.capacity, self.allocator, self.options = capacity, allocator, options
        n = gang.size
        self.gang = gang.astype(np.float64)  # first_fit's GPU counts
        self.credit = round_s / 2.0  # every job starts each period having "received" half a round
        self.x = np.zeros(n)
        self.allocated = np.zeros(n, dtype=bool)
        self.received = np.zeros(n)
        self.deficit = np.zeros(n)
        self.total_received = 0.0
        self.last_reset = 0.0
        self.pending = False  # a job arrived, finished or failed since the last recomputation
        self.recomputes: list[dict[str, object]] = []
        self.guards: dict[str, int] = {}  # an allocation of the artifact's has none

    def add(self, rows: IntArray, jobs: _Jobs) -> None:
        """Jobs arrive (their rows, in arrival order)."""
        self.received[rows] = self.credit
        self.deficit[rows] = 0.0
        self.pending = self.pending or len(rows) > 0

    def after_round(self, end: _RoundEnd) -> None:
        """Credit run time (rows in the artifact's completion order, latest finish first); a
        completion, drop or failure calls for a recomputation."""
        self.received[end.ran] += end.seconds
        # The artifact adds job by job; a left fold keeps its rounding (ties in priority depend on it).
        self.total_received = sum(end.seconds.tolist(), self.total_received)
        self.pending = self.pending or bool(end.completed.size or end.dropped.size or end.failed)

    def maybe_recompute(self, now: float, active: IntArray, inputs: Callable[[IntArray], AllocationInputs]) -> None:
        due = now - self.last_reset >= self.options.reset_interval_s or self.last_reset == 0
        if not (self.pending and due):
            return
        received = self.received[active] - self.credit
        should = np.where(self.allocated[active], self.x[active] * (now - self.last_reset), 0.0)
        self.deficit[active] += should - received
        self.received[active] = self.credit
        self.total_received = self.credit * len(active)
        self.last_reset = now
        self.x[:] = 0.0
        self.allocated[:] = False
        tic = time.perf_counter()
        answer = self.allocator(inputs(active))
        self.recomputes.append({"t_s": now, "solver": answer.method, "status": answer.status,
                                "solve": time.perf_counter() - tic})
        self.x[active] = answer.x
        self.allocated[active] = True
        self.pending = False

    def decide(self, now: float, jobs: _Jobs) -> IntArray:
        """Recompute if due, then the rows that run next round."""
        active = np.flatnonzero(jobs.active)

        def inputs(rows: IntArray) -> AllocationInputs:
            return AllocationInputs(job=rows, throughput=jobs.throughput[rows].copy(),
                                    gpus=jobs.rules.gang[rows].copy(),
                                    remaining_steps=jobs.total_steps[rows] - jobs.steps_run[rows],
                                    since_arrival_s=now - jobs.arrival_s[rows], capacity=self.capacity)

        self.maybe_recompute(now, active, inputs)
        return self.choose(active, jobs.throughput)

    def choose(self, active: IntArray, throughput: FloatArray) -> IntArray:
        """The rows that run next round (the artifact's greedy pass over its priority order)."""
        x = self.x[active]
        received = self.received[active]
        fraction = received / self.total_received if self.total_received != 0.0 else np.zeros_like(received)
        ratio = np.divide(x, fraction, out=x * 1e9, where=fraction > 0)
        priority = np.where(self.allocated[active] & (x > 0) & (throughput[active] != 0), ratio, 0.0)
        # sorted(key=(priority, deficit, x), reverse=True) is stable: ties stay in arrival order.
        order = active[np.lexsort((np.arange(len(active)), -x, -self.deficit[active], -priority))]
        rows = first_fit(order[throughput[order] > 0], self.gang, self.capacity)
        # A job not in the allocation held its GPUs in the pass above but is not placed.
        return rows[self.allocated[rows]]


@dataclass
class _Jobs:
    """The simulation's per-job state, shape (n,) each (mutable: the shell of `simulate`)."""

    rules: Rules
    throughput: FloatArray
    total_steps: IntArray
    arrival_s: FloatArray
    deadline_s: FloatArray
    batch: IntArray
    steps_run: IntArray
    up: NDArray[np.bool_]
    down: NDArray[np.bool_]
    active: NDArray[np.bool_]
    failures: IntArray
    ran_s: FloatArray
    held_s: FloatArray
    finish_s: FloatArray
    restarts: IntArray

    @classmethod
    def of(cls, workload: Workload, options: ArtifactOptions) -> _Jobs:
        rules, throughput, total_steps = _rules(workload, options.gpu_type)
        n = workload.n_jobs
        deadline = np.floor(options.deadline_factor * np.floor(workload.isolated_s))
        return cls(rules=rules, throughput=throughput, total_steps=total_steps, arrival_s=workload.arrival_s,
                   deadline_s=deadline, batch=rules.initial.copy(), steps_run=np.zeros(n, dtype=np.int64),
                   up=np.zeros(n, dtype=bool), down=np.zeros(n, dtype=bool), active=np.zeros(n, dtype=bool),
                   failures=np.zeros(n, dtype=np.int64), ran_s=np.zeros(n), held_s=np.zeros(n),
                   finish_s=np.full(n, np.nan), restarts=np.zeros(n, dtype=np.int64))

    def dispatch(self, rows: IntArray, now: float, round_s: float) -> tuple[IntArray, FloatArray]:
        """Steps each of `rows` runs this round and when it is planned to finish.

        A job with no steps left (possible after a batch-size change, see `rescale`) is planned
        to finish at once: the artifact never plans a finish before the round's start.
        """
        steps = np.minimum((self.throughput[rows] * round_s).astype(np.int64),
                           self.total_steps[rows] - self.steps_run[rows])
        return steps, np.maximum(now, now + steps / self.throughput[rows])

    def apply_batch_changes(self, rows: IntArray) -> None:
        """Pending batch-size changes of `rows`, which just ran a round."""
        rows = rows[self.up[rows] | self.down[rows]]
        changed = rescale(self.rules, rows, self.up, self.batch, self.total_steps, self.steps_run)
        self.batch[changed.rows] = changed.batch
        self.throughput[changed.rows] = changed.throughput
        self.total_steps[changed.rows] = changed.total_steps
        self.steps_run[changed.rows] = changed.steps_run
        self.up[rows] = self.down[rows] = False

    def ask_batch_changes(self) -> None:
        """Every active job says whether it wants another batch size (flags stay until applied)."""
        up, down = wanted(self.rules, self.batch, self.steps_run)
        self.up |= up & self.active
        self.down |= down & self.active


class _Driven:
    """A `SchedulingPolicy` choosing the rounds under the artifact's mechanics.

    The policy is told what a scheduler knows: on arrival the job's gang, its regimes (the batch
    sizes its scaling rule can reach, at ``ceil(samples / b) / throughput`` seconds per epoch)
    and its epochs (``ceil(total_steps / steps per epoch)`` at the initial batch size), and the
    mechanics' own restart cost (`ArtifactOptions.restart_s`, every job's here); after
    each round the whole epochs it now has (steps done over steps per epoch, at the batch size
    it ran), all of them when it completes. A job the artifact drops after failing rounds is
    removed.
    """

    def __init__(self, policy: SchedulingPolicy, workload: Workload, jobs: _Jobs, restart_s: float) -> None:
        self.policy, self.capacity, self.restart_s = policy, workload.gpus, restart_s
        self.ids = [job.id for job in workload.jobs]
        self.index_of = {job_id: row for row, job_id in enumerate(self.ids)}
        rules = jobs.rules
        self.epochs = ceil_div(jobs.total_steps, ceil_div(rules.samples, rules.initial))
        self.reported = np.zeros(workload.n_jobs, dtype=np.int64)
        self.recomputes: list[dict[str, object]] = []
        self.guards: dict[str, int] = {}
        self.rounds = 0

    def _regimes(self, jobs: _Jobs, row: int) -> dict[float, float]:
        """The batch sizes the job's adaptation can reach (its declared scaling rule, not its
        trajectory) that the throughput table has, with their seconds per epoch."""
        rules = jobs.rules
        initial, largest = int(rules.initial[row]), int(rules.largest[row])
        if rules.gns_job[row]:
            sizes = [initial << k for k in range(20) if initial << k <= max(initial, largest)]
        elif rules.accordion_job[row] and rules.scaled[row]:
            sizes = [initial, int(rules.scaled[row])]
        else:
            sizes = [initial]
        throughput = rules.throughput(np.full(len(sizes), row), np.array(sizes))
        seconds = ceil_div(rules.samples[row], np.array(sizes)) / throughput
        return {float(b): float(s) for b, s in zip(sizes, seconds.tolist(), strict=True) if np.isfinite(s)}

    def add(self, rows: IntArray, jobs: _Jobs) -> None:
        for row in rows.tolist():
            self.policy.add_job(self.ids[row], int(jobs.rules.gang[row]), self._regimes(jobs, row),
                                int(self.epochs[row]), restart_s=self.restart_s)

    def after_round(self, end: _RoundEnd) -> None:
        completed = set(end.completed.tolist())
        for row, epochs, batch in zip(end.ran.tolist(), end.epochs.tolist(), end.batch.tolist(), strict=True):
            # A job still running reports at most all but its last epoch: the last ends it.
            target = int(self.epochs[row]) if row in completed else min(epochs, int(self.epochs[row]) - 1)
            if target > self.reported[row]:
                self.policy.report_progress(self.ids[row], [float(batch)] * int(target - self.reported[row]))
                self.reported[row] = target
        for row in end.dropped.tolist():
            self.policy.remove_job(self.ids[row])

    def decide(self, now: float, jobs: _Jobs) -> IntArray:
        answer, _, replan = ask_policy(self.policy, self.guards)
        if replan is not None:
            self.recomputes.append(replan)
        self.rounds += 1
        finished = ~np.isnan(jobs.finish_s)
        return checked_answer(answer, self.policy, self.rounds - 1, self.index_of, jobs.active, finished,
                             jobs.rules.gang, self.capacity)


def simulate(workload: Workload, policy: str | Allocator | SchedulingPolicy,
             options: ArtifactOptions | None = None) -> Simulation:
    """Run one of the artifact's baselines, or any scheduling policy, under the artifact's mechanics.

    Parameters
    ----------
    workload : Workload
        Its jobs need `vfm.cluster.workload.Training` (the shipped workloads have it).
    policy : str, Allocator or SchedulingPolicy
        A name of `vfm.cluster.artifact.ALLOCATIONS` or an allocation function, run through
        Gavel's round mechanism as the artifact runs its baselines; or a
        `vfm.cluster.SchedulingPolicy` (`vfm.planner.Policy`, say), which then chooses every
        round itself and is told what `_Driven` says.
    options : ArtifactOptions, optional

    Returns
    -------
    Simulation
        ``finish_s`` is each job's planned finish in its last round (a failed job's: its last
        failed round's); ``rounds`` the jobs placed in each round; ``held_s`` and
        ``busy_gpu_s`` count run time net of restarts, as the artifact's utilization does;
        ``planner_s`` times each round's decision, recomputation included.

    Examples
    --------
    >>> from vfm.cluster import load_workload
    >>> sim = simulate(load_workload("shockwave_120jobs_32gpus").head(8), "gandiva_fair")
    >>> sim.n_jobs, bool((sim.finish_s > sim.arrival_s).all())
    (8, True)
    """
    check_parameters({"options": options}, {"options": Optional(Instance(ArtifactOptions, "an ArtifactOptions"))})
    opts = options or ArtifactOptions()
    round_s = float(opts.round_s if opts.round_s is not None else workload.round_s)
    jobs = _Jobs.of(workload, opts)
    gang = jobs.rules.gang
    chooser: _Gavel | _Driven
    if isinstance(policy, SchedulingPolicy):
        chooser, name = _Driven(policy, workload, jobs, opts.restart_s), type(policy).__name__
    else:
        allocator = make_allocator(check("policy", policy, BASELINE_NAME)) if isinstance(policy, str) else policy
        name = policy if isinstance(policy, str) else getattr(allocator, "__name__", type(allocator).__name__)
        chooser = _Gavel(jobs.rules.gang, workload.gpus, allocator, opts, round_s)
    queue = np.argsort(jobs.arrival_s, kind="stable")
    arrived = 0
    now = float(jobs.arrival_s[queue[0]])

    rounds: list[Round] = []
    planner_s: list[float] = []
    placed: list[IntArray] = []
    running, steps, ends = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(0)
    round_start, last_end = 0.0, None
    while True:
        if len(running):
            now = float(ends.max())
            if last_end is not None:
                round_start = last_end
            last_end = now
            previous = placed[-2] if len(placed) > 1 else None
            chooser.after_round(_end_round(jobs, _Dispatched(running, steps, ends, round_start), previous, gang,
                                           round_s, opts))
        elif arrived < len(queue):
            now = max(now, float(jobs.arrival_s[queue[arrived]]))
            last_end = now  # an idle cluster: the next round starts at the arrival
        else:
            break
        jobs.ask_batch_changes()
        new = queue[arrived:][jobs.arrival_s[queue[arrived:]] <= now]
        arrived += len(new)
        jobs.active[new] = True
        chooser.add(np.sort(new), jobs)
        if not jobs.active.any():
            running = np.zeros(0, dtype=np.int64)
            continue
        tic = time.perf_counter()
        running = chooser.decide(now, jobs)
        planner_s.append(time.perf_counter() - tic)
        placed.append(running)
        rounds.append(Round(now, tuple(workload.jobs[row].id for row in running.tolist())))
        steps, ends = jobs.dispatch(running, now, round_s)

    ids = [job.id for job in workload.jobs]
    return Simulation(
        workload=workload.name, policy=f"artifact:{name}",
        gpus=workload.gpus, n_jobs=workload.n_jobs, round_s=round_s, restart_s=opts.restart_s,
        job_id=np.array(ids, dtype=np.int64 if all(isinstance(i, int) for i in ids) else object),
        arrival_s=jobs.arrival_s, finish_s=jobs.finish_s, isolated_s=workload.isolated_s, restarts=jobs.restarts,
        held_s=jobs.held_s, rounds=tuple(rounds), planner_s=np.array(planner_s),
        planner_busy=np.ones(len(planner_s), dtype=bool), busy_gpu_s=float((gang * jobs.held_s).sum()),
        replans=tuple(chooser.recomputes), guards=chooser.guards)


@dataclass(frozen=True)
class _RoundEnd:
    """What a round did, for whoever chooses the rounds: the rows that ran and the seconds they
    ran (net of restarts), the whole epochs they now have at the batch size they ran at, the
    rows that completed, that were dropped after failing, and whether any round failed."""

    ran: IntArray
    seconds: FloatArray
    epochs: IntArray
    batch: IntArray
    completed: IntArray
    dropped: IntArray
    failed: bool


@dataclass(frozen=True)
class _Dispatched:
    """A round as it was dispatched: the rows placed, the steps each was to run, when each was
    planned to finish, and when the round started."""

    rows: IntArray
    steps: IntArray
    ends: FloatArray
    start: float


def _end_round(jobs: _Jobs, dispatched: _Dispatched, previous: IntArray | None, gang: IntArray, round_s: float,
               opts: ArtifactOptions) -> _RoundEnd:
    """Account for the round `dispatched` just ran (``scheduler.py`` main loop and ``_done_callback``)."""
    # The artifact completes jobs latest planned finish first (ties by id).
    order = np.lexsort((dispatched.rows, -dispatched.ends))
    running, steps, ends = dispatched.rows[order], dispatched.steps[order].copy(), dispatched.ends[order]
    ran = ends - dispatched.start
    if previous is not None:
        charged = ~np.isin(running, previous) & (ran != 0) & (ran > round_s - opts.restart_free_s)
        factor = (ran[charged] - opts.restart_s) / ran[charged]
        steps[charged] = np.trunc(steps[charged] * factor).astype(np.int64)
        ran[charged] -= opts.restart_s
        jobs.restarts[running[charged]] += 1
    jobs.ran_s[running] += ran
    # A round that does no work (one worker's share of the steps <= 0 and no time) fails.
    size = gang[running]
    share = steps // size
    lowest = np.where(size > 1, np.minimum(share, steps - (size - 1) * share), steps)
    failed = (lowest <= 0) & (ran <= 0)
    ok = running[~failed]
    jobs.steps_run[ok] += steps[~failed]
    done = np.zeros(len(running), dtype=bool)
    done[~failed] = (jobs.total_steps[ok] - jobs.steps_run[ok] <= 0) | (jobs.ran_s[ok] > jobs.deadline_s[ok])
    jobs.held_s[ok] += ran[~failed]
    jobs.failures[ok] = 0
    jobs.failures[running[failed]] += 1
    dropped = failed & (jobs.failures[running] >= opts.max_failures)
    leaving = done | dropped
    jobs.finish_s[running[leaving]] = ends[leaving]
    batch = jobs.batch[ok].copy()
    jobs.apply_batch_changes(running[~leaving])
    # Epochs counted after the round's batch-size change, at the new batch size, as the artifact
    # does (``_scale_bs_and_iters`` in ``_done_callback``, then ``_update_shockwave_scheduler``):
    # the rescaled steps round the epoch in progress up.
    epochs = jobs.steps_run[ok] // ceil_div(jobs.rules.samples[ok], jobs.batch[ok])
    jobs.active[running[leaving]] = False
    return _RoundEnd(ran=ok, seconds=ran[~failed], epochs=epochs, batch=batch, completed=running[done],
                     dropped=running[dropped], failed=bool(failed.any()))
