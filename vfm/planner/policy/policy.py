"""The scheduler-facing policy: one object a cluster scheduler drives round by round.

It holds the jobs and what has been observed of them, and re-plans with `vfm.planner.plan` only
when it must: when a job arrives, when a job completes or is removed, and every `replan_every`
rounds (default 8); in between it serves the next round of the standing plan. It depends on no
simulator: a scheduler calls `add_job`, `report_progress` and `remove_job` as things happen and
`next_round` once per round.

One class serves a cluster of one GPU type and one of several. Given a count (or a
`vfm.cluster.ClusterTypes` of one type) it plans with the plain program, the fast path, and
`next_round` returns job ids; given several types it plans over goods (type, round)
(`vfm.planner.policy.typed_serving`) and `next_round` returns each job's type.

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

On a cluster of two GPU types each job is told with its regimes on each type, and each round
places it on one:

>>> from vfm.cluster import ClusterTypes
>>> typed = Policy(ClusterTypes({"v100": 1, "k80": 1}), rounds=4)
>>> typed.add_job("a", 1, {"v100": {32: 60.0}, "k80": {32: 240.0}}, epochs=20)
>>> typed.add_job("b", 1, {"v100": {32: 60.0}, "k80": {32: 75.0}}, epochs=20)
>>> typed.next_round()  # b loses least on the K80
{'a': 'v100', 'b': 'k80'}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import fields, replace
from functools import partial
from typing import Any

import numpy as np

from vfm._validation import FloatArray, read_only
from vfm.forecast import DirichletForecaster, Forecaster
from vfm.gang_packing import first_fit
from vfm.gpu_cluster import ClusterTypes
from vfm.limits import MAX_GPUS
from vfm.parameters import (
    Anything,
    Constraint,
    Either,
    Instance,
    Interval,
    Keyed,
    Known,
    Optional,
    Whole,
    check,
    check_names,
    check_parameters,
)
from vfm.planner import shockwave
from vfm.planner._kernels import kernel_threads
from vfm.planner.kernel_loading import Forms, load_in_background
from vfm.planner.options import PlanOptions
from vfm.planner.policy import checkpoint as checkpoint_format
from vfm.planner.policy.collector import pause_collector, resume_collector
from vfm.planner.policy.decision import Decision, Placement, Serving, decide_placed
from vfm.planner.policy.replanning import replan
from vfm.planner.policy.state import PolicyConfig, PolicyState, RoundOptions, checked_record, continuity_of
from vfm.planner.policy.state_view import StateView
from vfm.planner.policy.typed_serving import job_speeds, typed_regimes, typed_serving
from vfm.planner.shockwave import (
    SHOCKWAVE_EFFICIENCY,
    SHOCKWAVE_PRIORITY_EXPONENT,
    SHOCKWAVE_RESERVE,
    TYPED_SHOCKWAVE_EFFICIENCY,
)
from vfm.solvers.registry import prepare


def serving(config: PolicyConfig) -> Serving:
    """`Policy`'s `Serving`: on one GPU type, `config.capacity` GPUs, which host every job present;
    on several, `vfm.planner.policy.typed_serving.typed_serving`."""
    if config.types > 1:
        return typed_serving(config)
    return Serving(counts=np.array([config.capacity]), replan=partial(replan, config),
                   serve=partial(_serve_placed, config), hosts=_anywhere)


def _anywhere(state: PolicyState, ids: list[Hashable]) -> np.ndarray:
    return np.ones((len(ids), 1), dtype=bool)  # every gang fits the capacity: `add_job` checks it


def step(config: PolicyConfig, state: PolicyState) -> tuple[PolicyState, Answer]:
    """One round: re-plan if due, then the jobs to run (as `Policy.next_round` gives them: ids on
    one GPU type, each job's type on several); a pure function of the config and state (with a
    deadline, of the time the re-plan takes too). `decide` says how it was decided."""
    state, running, _ = decide(config, state)
    return state, running


def decide(config: PolicyConfig, state: PolicyState,
           started: float | None = None) -> tuple[PolicyState, Answer, Decision]:
    """`step`, and how the round was decided (`decide_placed` with `Policy`'s `serving`)."""
    state, placed, decision = decide_placed(config, state, serving(config), started)
    return state, answer(config, placed), decision


#: A round's jobs as `Policy.next_round` gives them: ids on one GPU type, job -> type on several.
Answer = list[Hashable] | dict[Hashable, str]


def answer(config: PolicyConfig, placed: Placement) -> Answer:
    """A round's placement (job -> type index) as `Policy.next_round` gives it."""
    if config.cluster is None or config.types == 1:  # one type: the ids (a config built by hand may hold none)
        return list(placed)
    return {job: config.cluster.types[k] for job, k in placed.items()}


def _serve(config: PolicyConfig, state: PolicyState) -> tuple[PolicyState, list[Hashable], dict[str, int]]:
    """The round `state.since_plan` of the standing plan, by the configured execution; the jobs it
    runs and how many of them each guard decided (`vfm.planner.shockwave.guards_fired`)."""
    plan_ = state.plan
    assert plan_ is not None and plan_.job_ids is not None
    program = plan_.program
    open_ = program.open_jobs
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
                                          continuity=continuity_of(config, state, plan_.job_ids),
                                          owed_first=config.options.service_floor > 0)
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


def shockwave_configuration(round_s: float, types: int = 1) -> dict[str, Any]:
    """The arguments of `Policy.shockwave` for rounds of `round_s` on a cluster of `types` GPU types:
    on several, the efficiency weight `TYPED_SHOCKWAVE_EFFICIENCY` and no wait limit (the program
    over GPU types has no commitments; the `max_wait` guard bounds waits)."""
    several = types > 1
    return {"rounds": 20, "round_s": round_s, "replan_every": None, "fairness": True, "rho_max": 1.0,
            "priority_exponent": SHOCKWAVE_PRIORITY_EXPONENT,
            "efficiency": TYPED_SHOCKWAVE_EFFICIENCY if several else SHOCKWAVE_EFFICIENCY,
            "reserve": SHOCKWAVE_RESERVE, "execution": "credit",
            "wait_limit": None if several else shockwave.WAIT_LIMIT,
            # Measured on one GPU type: over several, the program keeps Shockwave's utility for now.
            "utility": "progress" if several else shockwave.SHOCKWAVE_UTILITY,
            "completion_time": 0.0 if several else shockwave.SHOCKWAVE_COMPLETION_TIME}


#: `Policy`'s own arguments' constraints, checked in this order (`vfm.parameters`); the round
#: options check theirs (`RoundOptions`).
_CONSTRAINTS: dict[str, Constraint] = {
    "capacity": Either(Interval(Whole, 1, MAX_GPUS, unit="GPUs", note="MAX_GPUS"),
                       Instance(ClusterTypes, "a vfm.cluster.ClusterTypes (GPU type -> count)")),
    "options": Optional(Instance(PlanOptions, "a vfm.planner.PlanOptions",
                                 "or give its fields as keywords, as Policy(8, rounds=10)")),
    "round_options": Optional(Instance(RoundOptions, "a vfm.planner.RoundOptions",
                                       "or give its fields as keywords, as Policy(8, replan_every=4)")),
    "forecaster": Optional(Instance(Forecaster, "a vfm.forecast.Forecaster",
                                    "a forecaster has remaining_runtime, epochs_per_round, sample_epochs_per_round")),
    "seed": Interval(Whole, 0),
}
_ROUND_FIELDS = tuple(f.name for f in fields(RoundOptions))
_PLAN_FIELDS = tuple(f.name for f in fields(PlanOptions))


def policy_config(capacity: int | ClusterTypes, options: PlanOptions | None = None, *,
                  round_options: RoundOptions | None = None, forecaster: Forecaster | None = None, seed: int = 0,
                  **overrides: Any) -> PolicyConfig:
    """`Policy`'s arguments validated once (each named in its error), as a `PolicyConfig`:
    `overrides` are fields of `RoundOptions` or of `PlanOptions`, replacing those given."""
    check_parameters({"capacity": capacity, "options": options, "round_options": round_options,
                      "forecaster": forecaster, "seed": seed}, _CONSTRAINTS)
    check_names(overrides, {*_ROUND_FIELDS, *_PLAN_FIELDS}, "an argument of the policy",
                f"its keyword arguments are forecaster, seed and the fields of RoundOptions "
                f"({', '.join(_ROUND_FIELDS)}) and of PlanOptions ({', '.join(_PLAN_FIELDS)})")
    rounds = (RoundOptions() if round_options is None else round_options).updated(
        **{name: value for name, value in overrides.items() if name in _ROUND_FIELDS})
    plan_options = (PlanOptions() if options is None else options).updated(
        **{name: value for name, value in overrides.items() if name not in _ROUND_FIELDS})
    # Built once here, not per call: `add_job` reads it for every arrival.
    cluster = capacity if isinstance(capacity, ClusterTypes) else ClusterTypes.single(int(capacity))
    plan_options.check_over_types(len(cluster) > 1)
    return PolicyConfig(
        capacity=cluster.total,
        options=plan_options, cluster=cluster,
        replan_every=rounds.replan_interval(plan_options.rounds),
        forecaster=DirichletForecaster() if forecaster is None else forecaster, seed=int(seed),
        fairness=bool(rounds.fairness), execution=rounds.execution,
        max_wait=None if rounds.max_wait is None else int(rounds.max_wait), continuity=float(rounds.continuity),
        deadline_s=None if rounds.deadline_s is None else float(rounds.deadline_s))


class Policy(StateView):
    """A receding-horizon planner a scheduler drives round by round (module docstring).

    Parameters
    ----------
    capacity : int or vfm.cluster.ClusterTypes
        GPUs in the cluster: a count (of one type), or the cluster's GPUs by type. On several
        types, jobs are told with their regimes per type and `next_round` places each on a type
        (module `vfm.planner.policy.typed_serving`); one type is the plain program's fast path.
    options : vfm.planner.PlanOptions, optional
        How each re-plan plans (window, Shockwave options, backend; default: `PlanOptions`'s
        defaults). Keyword overrides of its fields are accepted too
        (``Policy(8, rounds=10)`` is ``Policy(8, PlanOptions(rounds=10))``).
    round_options : vfm.planner.RoundOptions, optional
        How each round is decided: when to re-plan (``replan_every``), finish-time-fairness
        targets (``fairness``), how a round is served from the plan (``execution``, ``max_wait``,
        ``continuity``) and the time a round may take (``deadline_s``); default: `RoundOptions`'s
        defaults. Keyword overrides of its fields are accepted too (``Policy(8, replan_every=4)``).
    forecaster : vfm.forecast.Forecaster, optional
        Default: `vfm.forecast.DirichletForecaster()`. A `vfm.forecast.LearningForecaster` (as
        `vfm.forecast.PopulationForecaster`) is taught each job of a known ``kind`` that
        completes, at the next re-plan; `forecaster` is then the one taught so far.
    seed : int
        Scenarios of the `k`-th re-plan are drawn from ``(seed, k)``: reproducible runs.
    **overrides
        Fields of `RoundOptions` or of `vfm.planner.PlanOptions`, replacing those of
        `round_options` and `options`.

    Notes
    -----
    Every round is served, whatever the re-plan does: a re-plan that raises, ends with a status
    other than optimal or inaccurate, gives a schedule that is not finite or ends past the
    deadline is discarded, and the round is served from the standing plan (the jobs that
    arrived since first-fit on the idle GPUs) or, with none young enough, whole gangs first-fit
    in arrival order (on GPU types, each on the first type in the cluster's order that can host it
    and has room); the next re-plan is tried `2^k` rounds after `k` failures in a row (at most a
    window later; `vfm.planner.policy.decision`). `last_decision` says which and why. No round
    runs more GPUs of a type than the cluster has.

    The policy is safe to share between threads: every method holds the policy's lock, so calls
    are serialized. `add_job`, `remove_job` and `report_progress` cost O(1) amortized (plus the
    epochs reported); `state` and a round cost O(jobs present).
    """

    def __init__(self, capacity: int | ClusterTypes, options: PlanOptions | None = None, *,
                 round_options: RoundOptions | None = None, forecaster: Forecaster | None = None, seed: int = 0,
                 **overrides: Any) -> None:
        self.config = policy_config(capacity, options, round_options=round_options, forecaster=forecaster, seed=seed,
                                    **overrides)
        self._start()
        # Here, not in the first re-plan: the kernels this policy's plans use load (or compile) in the
        # background from now on, while its first plans run them interpreted (vfm.planner.kernel_loading).
        options, cluster = self.config.options, self.config.cluster
        with kernel_threads(options.threads) as threads:
            load_in_background(Forms.used_by(options.scenarios, 1 if cluster is None else len(cluster.types), threads))
            prepare("planning", options.solver)

    @classmethod
    def shockwave(cls, capacity: int | ClusterTypes, round_s: float = 120.0, **overrides: Any) -> Policy:
        """The policy configured as Shockwave: what the reproduction of the paper runs.

        A window of 20 rounds of `round_s` seconds, re-planned on arrivals, completions and every
        8 rounds; finish-time-fairness targets with :math:`\\rho_{\\max} = 1` and the priority
        relaxation (exponent `SHOCKWAVE_PRIORITY_EXPONENT`, the same for every cluster); the efficiency term
        :math:`-k \\max_i S_i` with `SHOCKWAVE_EFFICIENCY`; `SHOCKWAVE_RESERVE` of each window's
        GPU-rounds left to it; credit execution; the certainty-equivalent forecast (S = 1); plans
        that keep every wait within `vfm.planner.shockwave.WAIT_LIMIT` rounds where the load allows
        (`PlanOptions.wait_limit`, with one scenario or several); a job's utility
        the share of its remaining work the window does (`vfm.planner.shockwave.SHOCKWAVE_UTILITY`)
        and the mean busy time of the jobs that can finish in the window priced
        (`vfm.planner.shockwave.SHOCKWAVE_COMPLETION_TIME`), so that finishing counts and comes
        early. On several GPU types, the efficiency weight is
        `vfm.planner.shockwave.TYPED_SHOCKWAVE_EFFICIENCY`, there is no wait limit and the utility is
        Shockwave's share of total work, with no time cost (`shockwave_configuration`).

        Parameters
        ----------
        capacity : int or vfm.cluster.ClusterTypes
            GPUs in the cluster (a count, or by type).
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
        types = len(capacity) if isinstance(capacity, ClusterTypes) else 1
        return cls(capacity, **{**shockwave_configuration(round_s, types), **overrides})

    # --- the state --------------------------------------------------------------------------------

    @property
    def state(self) -> PolicyState:
        """Everything the policy remembers, frozen: for use in this process (inspect it, step it with
        `vfm.planner.policy.step`, go back to it with `restore`). To keep it on disk or send it
        elsewhere, use `checkpoint`."""
        with self._lock:
            return self._state

    def checkpoint(self) -> str:
        """The policy's checkpoint: JSON text of a versioned plain-data format (`vfm.planner.policy.checkpoint`)
        that `restore` reads back into a policy of the same configuration.

        It holds the jobs (on several GPU types, with their speeds per type), what each carries
        into the next plan (credit, rounds waited, whether it ran last), the completed jobs, the
        trajectories taught to the forecaster, the counters and the standing plan: the restored
        policy decides exactly as this one would have, for the same events.

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

        A checkpoint is read as JSON, never unpickled. It must come from a `Policy` of this
        configuration, its cluster included (its fingerprint, `vfm.planner.policy.checkpoint`; on several GPU
        types, in the same order of types); it holds the standing plan, so the restored policy
        decides exactly as the one that wrote it would have. A `PolicyState` holds no
        configuration: it is checked against this policy's as far as it shows it (gangs,
        finish-time targets, its plan's window, round length, capacity and fairness, and on several
        GPU types each job's speeds per type).

        Parameters
        ----------
        state : str, bytes, dict or PolicyState
            What to continue from.
        allow_resize : bool
            Accept a checkpoint made with another capacity (a cluster that grew or shrank); every
            other field of the configuration must still match. A job whose gang is wider than this
            policy's capacity is refused, naming it: remove it first (restore into a policy of the
            old capacity, `remove_job`, checkpoint again). Default False: the capacity must match.
            On several GPU types the cluster cannot change.

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
            self._state = checkpoint_format.restored(self.config, state, allow_resize=allow_resize)

    @property
    def capacity(self) -> int:
        """All the cluster's GPUs."""
        return self.config.capacity

    @property
    def cluster(self) -> ClusterTypes:
        """The cluster's GPUs by type (a count given as `capacity` is that many of
        `vfm.cluster.PROFILED_TYPE`)."""
        assert self.config.cluster is not None  # `policy_config` always sets it
        return self.config.cluster

    @property
    def _typed(self) -> bool:
        return self.config.types > 1

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

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float] | Mapping[str, Mapping[float, float]],
                epochs: int, budget: float = 1.0, *, kind: Hashable = None,
                restart_s: float | None = None) -> None:
        """A job arrives: its gang size, its regimes (batch size -> seconds per epoch), its total epochs.

        On several GPU types `regimes` maps each type that can host the job to its regimes there
        (type -> batch size -> seconds per epoch; `vfm.cluster.type_regimes`), every type with the
        same batch sizes; on one type, either form (``{64: 60.0}`` or ``{"v100": {64: 60.0}}``).

        `kind` says what kind of job it is, for a forecaster that learns from finished jobs of the
        same kind (the simulator passes ``(model, adaptation)``); None: unknown.

        `restart_s` is the seconds the job loses each time it starts or restarts (checkpoint and
        restore; the simulator passes the workload's, else its own); None: unknown, taken as
        `vfm.planner.shockwave.DEFAULT_RESTART_S` (20 s, the simulator's default). It sets how
        far the job may run ahead of its plan once running before it yields its gang: the
        configured ``continuity`` times ``restart_s / DEFAULT_RESTART_S``, scaled to the round
        length (`vfm.planner.shockwave.job_continuity`), so that a job dear to restart restarts
        less often and every job loses at most the same share of its time to restarts.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job, and leaving the policy as it was: an id that is not a string, a whole
            number (not a bool) or a tuple of them nested at most `vfm.planner.policy.checkpoint.MAX_ID_DEPTH`
            (32) deep (a NumPy integer is keyed as the equal int),
            already present or of a job that completed (ids are unique over the policy's life; a
            removed job's id may be used again); a gang size that is not a positive whole number or
            is wider than the cluster; a malformed regime set (batch sizes and seconds must be real
            numbers, not bools or strings; seconds finite and > 0); an epoch count that is not a
            whole number in [1, `MAX_JOB_EPOCHS`]; epochs times the slowest regime's seconds above
            `MAX_JOB_SECONDS`; a budget that is not a finite number in (0, `MAX_BUDGET`]; a kind
            that is not hashable; a restart cost that is not a number of seconds in
            [0, `MAX_JOB_SECONDS`]; on GPU types, regimes that name a type not in the cluster, types
            whose batch sizes differ, a gang no type it names can hold.
        """
        with self._lock:
            # The regimes' form first, then the id, then the record: each error names the first fault.
            seconds: FloatArray | None = None  # on several types, seconds per epoch by type (`typed_regimes`)
            if self._typed:
                seconds, reference = typed_regimes(self.cluster, job_id, gpus, regimes)  # type: ignore[arg-type]
            else:
                reference = _one_type(self.cluster, job_id, regimes)
            key = self._new_key(job_id)
            record = checked_record(self.config.capacity, job_id, gpus, reference, epochs, budget, kind,
                                    shockwave.DEFAULT_RESTART_S if restart_s is None else restart_s)
            if seconds is not None:
                speeds = job_speeds(seconds, np.array([d for _, d in record.regimes]))
                record = replace(record, speeds=read_only(speeds))
            self._add(key, record)

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

    def next_round(self) -> Answer:
        """The jobs to run in the next round (each on its whole gang), re-planning if due: on one
        GPU type their ids, on several a mapping of each to its type.

        Always served, within each type's GPUs: a failed or late re-plan falls back to the
        standing plan or to first-fit (class Notes); `last_decision` says how the round was
        decided. The cycle collector waits until the decision returns
        (`vfm.planner.policy.collector`)."""
        pause_collector()  # first: no collection the caller made due starts in the decision
        try:
            return answer(self.config, self._decide(serving(self.config)))
        finally:
            resume_collector()

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


def _one_type(cluster: ClusterTypes, job_id: Hashable, regimes: Any) -> Any:
    """A job's regimes on a cluster of one type: `regimes` as given, or the inner mapping of
    ``{type: regimes}`` naming the cluster's type (a `ValidationError` naming the job for another)."""
    if not isinstance(regimes, Mapping) or not any(isinstance(v, Mapping) for v in regimes.values()):
        return regimes  # batch size -> seconds: checked with the rest of the record
    (only,) = cluster.types
    give = f"(give {{batch size: seconds per epoch}} or {{{only!r}: {{...}}}})"
    check("regimes", regimes, Keyed(Known((only,), "the cluster's one GPU type", hint=give), Anything(),
                                    "a mapping of GPU type to regimes"), of=f" of job {job_id!r}")
    return regimes[only]
