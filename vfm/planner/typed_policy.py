"""The vfm policy on a cluster of several GPU types (a `vfm.cluster.TypedSchedulingPolicy`).

`TypedPolicy` is `vfm.planner.Policy`'s receding-horizon loop with goods (type, round): the same
job records (on each job's *reference* type, below), re-planned with `vfm.planner.plan`'s
``speed`` (docs/planning.md, "GPU types") on arrivals, completions and every `replan_every`
rounds, and the same executions:

- ``"credit"`` (default): `vfm.planner.shockwave.serve_with_credit` over types: credit counted in
  rounds of the reference type (a K80 round at speed 0.4 pays 0.4 of a round owed), the jobs
  with the most first, each on the type of its largest planned fraction that has room
  (`vfm.planner.rounding.place`), then idle GPUs to the waiting jobs on their fastest types;
- ``"window"``: the plan's own placement (`vfm.planner.Plan.placement`).

Overdue jobs (`max_wait`) are served first in both. A re-plan that fails or ends past the
deadline (`deadline_s`) is discarded as `Policy` discards it, by the same code: the round is
served from the standing plan or by whole gangs first-fit over the types (`TypedPolicy`, Notes).
With one type every execution and option gives `Policy`'s run exactly, failed re-plans included
(tests).

A job is told its regimes on each type that can host it. Its reference type is the one of its
shortest mean epoch time (ties: the cluster's type order); the forecaster sees its regimes there,
and its speed on type `k` is the ratio of its current regime's epoch times, reference over `k`
(the regime of its last observed epoch, before any the mean over its regimes), at most 1 (a type
faster than the reference at the current regime counts as the reference's speed). With
``fairness=True`` (`TypedPolicy.shockwave`) it keeps Shockwave's finish-time targets with the
equal share of all the cluster's GPUs, each job at its pace on a proportional slice of the cluster
(its speeds weighted by the types' GPU counts: what finish-time fairness measures against,
`vfm.cluster.proportional_isolated_s`), and plans with them (`vfm.planner.plan`'s
``fair_finish_s`` on types).

Examples
--------
>>> from vfm.cluster import ClusterTypes
>>> policy = TypedPolicy(ClusterTypes({"v100": 1, "k80": 1}), rounds=4)
>>> policy.add_job("a", 1, {"v100": {32: 60.0}, "k80": {32: 240.0}}, epochs=20)
>>> policy.add_job("b", 1, {"v100": {32: 60.0}, "k80": {32: 75.0}}, epochs=20)
>>> policy.next_round()  # b loses least on the K80
{'a': 'v100', 'b': 'k80'}
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from vfm._validation import FloatArray, is_whole, read_only
from vfm.errors import ValidationError
from vfm.forecast import Forecaster
from vfm.gpu_cluster import ClusterTypes
from vfm.planner import checkpoint as checkpoint_format
from vfm.planner import policy as homogeneous
from vfm.planner import shockwave
from vfm.planner.decision import Placement, Serving
from vfm.planner.inputs import JobTerms
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan, plan
from vfm.planner.replanning import fair_finish, job_states, replanned, taught_forecaster, warm_start
from vfm.planner.rounding import place
from vfm.planner.state import JobRecord, PolicyConfig, PolicyState, RoundOptions
from vfm.planner.state_view import StateView
from vfm.planner.typed import hosting
from vfm.solvers.registry import prepare

#: :math:`\kappa` of `TypedPolicy.shockwave` (one type: `vfm.planner.shockwave.SHOCKWAVE_EFFICIENCY`, 1).
#: Chosen on generated workloads (``generated-0`` and ``generated-1`` of `benchmarks.heterogeneous`,
#: 120 jobs on 32 GPUs, thirds and V100-heavy), not on the traces: against Gavel's heterogeneity-aware
#: max-min, 0.25 met the worst-FTF and unfair-share targets on all four and gave 1.14x to 1.18x the
#: makespan; 1 met 6 of 12 targets (unfair share on one), 0 traded makespan (1.05x to 1.09x) for
#: fairness (docs/results.md, "Clusters of several GPU types").
TYPED_SHOCKWAVE_EFFICIENCY = 0.25


class TypedPolicy(StateView):
    """vfm's policy on a cluster of GPU types (module docstring).

    Parameters
    ----------
    cluster : vfm.cluster.ClusterTypes
        The cluster's GPUs by type.
    options : vfm.planner.PlanOptions, optional
        How each re-plan plans (keyword overrides of its fields accepted, as in `Policy`).
    round_options : vfm.planner.RoundOptions, optional
        How each round is decided (keyword overrides of its fields accepted, as in `Policy`).
    forecaster : vfm.forecast.Forecaster, optional
        Default `vfm.forecast.DirichletForecaster()`; forecasts on each job's reference type.
    seed : int
        Scenarios of the `k`-th re-plan are drawn from ``(seed, k)``.
    **overrides
        Fields of `vfm.planner.RoundOptions` or of `vfm.planner.PlanOptions`.

    Notes
    -----
    Rounds are decided as `vfm.planner.Policy` decides them, by the same code
    (`vfm.planner.decision.decide_placed`): a re-plan that raises, ends with a status other than
    optimal or inaccurate, gives a schedule that is not finite or ends past the deadline is
    discarded, and the round is served from the standing plan (the jobs that arrived since
    first-fit on the idle GPUs, each on the first type in the cluster's order that can host it
    and has room) or, with none young enough, whole gangs first-fit the same way in arrival
    order; `last_decision` says which and why. No round runs more GPUs of a type than it has.
    """

    def __init__(self, cluster: ClusterTypes, options: PlanOptions | None = None, *,
                 round_options: RoundOptions | None = None, forecaster: Forecaster | None = None, seed: int = 0,
                 **overrides: Any) -> None:
        if not isinstance(cluster, ClusterTypes):
            raise ValidationError(f"cluster must be a vfm.cluster.ClusterTypes (GPU type -> count), got "
                                  f"{type(cluster).__name__} {cluster!r}")
        # `Policy`'s arguments, with all the cluster's GPUs as its capacity, which the equal share of
        # the finish-time-fairness targets counts (a gang must fit one type: `add_job`).
        self.cluster = cluster
        self.config: PolicyConfig = homogeneous.policy_config(cluster.total, options, round_options=round_options,
                                                              forecaster=forecaster, seed=seed, **overrides)
        if self.config.options.service_floor or self.config.options.wait_limit is not None:
            raise ValidationError("service_floor and wait_limit apply to one GPU type (Policy), not to a TypedPolicy")
        prepare("planning", self.config.options.solver)  # here, not in the first re-plan, as `Policy` does
        self._start()
        # Each job's speed on each type (`_speed`), (K, R + 1): at each of its regimes in its record's
        # order, then at their mean (for a job with no regime observed yet); 0 where the type
        # cannot host it. Computed once per job, so that a re-plan only picks a column per job; a
        # dict changed in place, so that an arrival or a removal is O(1).
        self._typed: dict[Hashable, FloatArray] = {}

    @classmethod
    def shockwave(cls, cluster: ClusterTypes, round_s: float = 120.0, **overrides: Any) -> TypedPolicy:
        """`vfm.planner.Policy.shockwave`'s configuration on GPU types (finish-time-fairness targets,
        the priority relaxation, the efficiency term, the reserve, credit execution), with the
        efficiency term's weight `TYPED_SHOCKWAVE_EFFICIENCY` and no wait limit (the program over
        GPU types has no commitments; the `max_wait` guard bounds waits)."""
        configuration = {**homogeneous.shockwave_configuration(round_s), "efficiency": TYPED_SHOCKWAVE_EFFICIENCY,
                         "wait_limit": None}
        return cls(cluster, **{**configuration, **overrides})

    @property
    def options(self) -> PlanOptions:
        return self.config.options

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Mapping[float, float]], epochs: int,
                budget: float = 1.0, *, kind: Hashable = None) -> None:
        """A job arrives with its regimes on each type that can host it (type -> batch size -> seconds).

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job: `regimes` not a mapping of the cluster's types, types whose batch sizes
            differ, a gang no type it names can hold; and whatever `vfm.planner.Policy.add_job`
            refuses.
        """
        with self._lock:
            seconds, reference = _typed_regimes(self.cluster, job_id, gpus, regimes)
            record = self._add(self.config, job_id, gpus, reference, epochs, budget, kind)
            on_reference = np.array([d for _, d in record.regimes])
            self._typed[job_id] = _speeds(seconds, on_reference)

    def remove_job(self, job_id: Hashable) -> None:
        with self._lock:
            self._remove(job_id)
            self._typed.pop(job_id, None)

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished, one batch size per epoch (as `vfm.planner.Policy.report_progress`)."""
        self._report(job_id, batch_sizes)

    @property
    def state(self) -> PolicyState:
        """Everything the policy remembers but each job's speeds per type, frozen, for use in this
        process (`vfm.planner.Policy.state`); to keep the policy, use `checkpoint`."""
        with self._lock:
            return self._state

    def checkpoint(self) -> str:
        """The policy's checkpoint as JSON text (`vfm.planner.Policy.checkpoint`, with the cluster in
        its configuration and each job's speeds per type); `restore` reads it back."""

        with self._lock:
            return checkpoint_format.dumps(self.config, self._state, cluster=self.cluster, speeds=self._typed)

    def restore(self, state: str | bytes | Mapping[str, Any]) -> None:
        """Continue from a checkpoint of a `TypedPolicy` of this configuration and cluster (its JSON
        text, its bytes or the dict it parses to), checked in full first as
        `vfm.planner.Policy.restore` does; the first round after it re-plans. A `PolicyState`
        is refused: it does not hold the jobs' speeds per type. The cluster cannot change.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the field (and the job), leaving the policy as it was (`vfm.planner.Policy.restore`).
        """

        with self._lock:
            restored, speeds = checkpoint_format.restored(self.config, state, cluster=self.cluster)
            self._state = restored
            self._typed = dict(speeds)

    def next_round(self) -> dict[Hashable, str]:
        """The jobs to run in the next round, each with its type, re-planning if due.

        Always served, within each type's GPUs: a failed or late re-plan falls back to the standing
        plan or to first-fit (class Notes); `last_decision` says how the round was decided."""
        placed = self._decide(self._serving())
        return {job: self.cluster.types[k] for job, k in placed.items()}

    def _serving(self) -> Serving:
        """How this policy re-plans and serves rounds, for `vfm.planner.decision.decide_placed`."""
        return Serving(counts=self.cluster.counts, replan=self._replan, serve=self._serve,
                                   hosts=self._hosts)

    def _hosts(self, state: PolicyState, ids: list[Hashable]) -> np.ndarray:
        """Which types can host each job of `ids`, shape (len(ids), K): those it has a speed on."""
        # Column -1 (the regimes' mean) is positive exactly on the types that can host the job (`_speeds`).
        return np.array([self._typed[job][:, -1] > 0 for job in ids], dtype=bool).reshape(len(ids), len(self.cluster))

    def _serve(self, state: PolicyState) -> tuple[PolicyState, Placement, dict[str, int]]:
        """Round ``state.since_plan`` of the standing plan by the configured execution: the state after
        it, the jobs it runs, each with its type's index, and how many each guard decided."""
        standing = state.plan
        assert standing is not None and standing.placement is not None and standing.job_ids is not None
        open_ = standing.program.base < 1.0
        first = shockwave.overdue_order(state.waited, open_, self.config.max_wait)
        if self.config.execution == "window":
            placed, credit = self._serve_window(state, first), state.credit
            fired = shockwave.guards_fired(placed >= 0, first)
        else:
            placed, credit, fired = self._serve_credit(state, first)
        ran = placed >= 0
        waited = np.where(ran | ~open_, 0, state.waited + 1)
        state = replace(state, credit=read_only(credit), waited=read_only(waited), ran_last=read_only(ran),
                        since_plan=state.since_plan + 1, round_index=state.round_index + 1)
        ids = standing.job_ids
        return state, {ids[i]: k for i, k in enumerate(placed.tolist()) if k >= 0}, fired

    def _round_view(self, state: PolicyState) -> tuple[Plan, FloatArray, FloatArray, np.ndarray]:
        """The standing plan, its fractions of this round per type (n, K), the speeds (n, K) and
        which types can host each job (n, K)."""
        standing = state.plan
        assert standing is not None
        n, types = standing.program.shape[1], len(self.cluster)
        rounds = standing.program.shape[2] // types
        fractions = standing.relaxed.reshape(n, types, rounds)[:, :, state.since_plan]
        pace = standing.program.pace.reshape(n, types, rounds)[:, :, 0]
        hosts = hosting(standing.program.gpus, self.cluster.counts[:, None].astype(np.float64), pace)[:, :, 0]
        return standing, fractions, pace, hosts

    def _serve_window(self, state: PolicyState, first: np.ndarray) -> np.ndarray:
        """The plan's own placement for this round, the overdue jobs (`first`) placed before it."""
        standing, fractions, pace, hosts = self._round_view(state)
        assert standing.placement is not None
        planned = standing.placement[:, state.since_plan]
        if not first.size:
            return planned.copy()
        order = shockwave.served_first(first, np.flatnonzero(planned >= 0))
        # A planned job keeps its planned type if it can; an overdue one takes its fastest with room.
        on_plan = fractions + 2.0 * (planned[:, None] == np.arange(len(self.cluster)))
        preference = np.where(planned[:, None] >= 0, _preference(on_plan, pace), _fastest(pace))
        return _placed(order, standing.program.gpus, self.cluster, preference, hosts)

    def _serve_credit(self, state: PolicyState, first: np.ndarray) -> tuple[np.ndarray, FloatArray, dict[str, int]]:
        """One round by carried credit (`vfm.planner.shockwave.serve_with_credit` over types): credit
        in rounds of the reference type, each job placed on the type of its largest planned fraction
        that has room, then idle GPUs to the waiting jobs on their fastest types."""
        standing, fractions, pace, hosts = self._round_view(state)
        program, gpus = standing.program, standing.program.gpus
        planned = (pace * fractions).sum(axis=1)  # reference rounds planned this round
        precedence = shockwave.Precedence(overdue=first, ran_last=state.ran_last, continuity=self.config.continuity)
        want, order = shockwave.credit_order(program, planned, state.credit, precedence)
        free = self.cluster.counts.astype(np.float64)
        placed = np.full(planned.size, -1, dtype=np.int64)
        jobs, kinds = place(order, gpus, free, _preference(fractions, pace), hosts)
        placed[jobs] = kinds
        by_credit = placed >= 0
        remaining = np.where(program.base < 1.0, program.remaining_s, 0.0)
        waiting = np.flatnonzero((placed < 0) & (program.base < 1.0))
        jobs, kinds = place(waiting[np.argsort(-remaining[waiting], kind="stable")], gpus, free, _fastest(pace), hosts)
        placed[jobs] = kinds
        work = np.where(placed >= 0, np.take_along_axis(pace, np.maximum(placed, 0)[:, None], axis=1)[:, 0], 0.0)
        # A job that ran beyond its plan (idle GPUs) owes at most `CREDIT_FLOOR` rounds for it.
        owed = want - work
        fired = shockwave.guards_fired(placed >= 0, first, want=want, by_credit=by_credit, owed=owed)
        return placed, np.maximum(owed, shockwave.CREDIT_FLOOR), fired

    def _replan(self, state: PolicyState, options: PlanOptions | None = None) -> PolicyState:
        """The state with a new plan of the jobs present (`options`: default the configured ones)."""
        options = self.config.options if options is None else options
        ids = tuple(state.jobs)
        jobs = [state.jobs[i] for i in ids]
        forecaster = taught_forecaster(self.config, state)
        states = job_states(jobs, ids)
        speed = self._speed(ids, jobs)
        targets = None
        if self.config.fairness:
            # The equal share of all the GPUs, each job at its pace on a proportional slice of the
            # cluster: the reference of finish-time fairness (`vfm.cluster.proportional_isolated_s`).
            proportional = speed @ (self.cluster.counts / self.cluster.total)
            jobs, targets = fair_finish(self.config, forecaster, state.round_index, states, jobs,
                                                     slowdown=1.0 / proportional)
        new_plan = plan(
            states, np.array([j.gpus for j in jobs]), self.cluster.counts.astype(np.float64), options,
            forecaster=forecaster, seed=np.random.SeedSequence((self.config.seed, state.replans)),
            terms=JobTerms(budgets=[j.budget for j in jobs], fair_finish_s=targets, speed=speed),
            warm_start=warm_start(state, ids, options.rounds))
        return replanned(state, ids, jobs, new_plan, forecaster)

    def _speed(self, ids: tuple[Hashable, ...], jobs: list[JobRecord]) -> FloatArray:
        """Each job's speed on each type at its current regime relative to its reference, shape (n, K)."""
        # Column -1 (no regime observed yet) is the last: the speed at the regimes' mean.
        return np.stack([self._typed[job_id][:, job.recent[0]] for job_id, job in zip(ids, jobs, strict=True)])


def _speeds(seconds: FloatArray, on_reference: FloatArray) -> FloatArray:
    """A job's speed on each type at each regime and at their mean, shape (K, R + 1), from its epoch
    seconds per type and regime `seconds` (K, R; inf: the type cannot host it) and on its reference
    type `on_reference` (R,): the ratio, at most 1; 0 where the type cannot host it."""
    mean = np.where(np.isfinite(seconds), seconds, np.nan).mean(axis=1, keepdims=True)
    now = np.hstack([seconds, mean])
    reference = np.append(on_reference, on_reference.mean())
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(now), np.minimum(reference[None, :] / now, 1.0), 0.0)


def _typed_regimes(cluster: ClusterTypes, job_id: Hashable, gpus: int,
                   regimes: Mapping[str, Mapping[float, float]]) -> tuple[FloatArray, dict[float, float]]:
    """A job's regimes per type as a (K, R) array over the cluster's types (inf: cannot host), and its
    regimes on its reference type (module docstring), or a `ValidationError` naming the job."""
    if not isinstance(regimes, Mapping) or not regimes:
        raise ValidationError(f"regimes of job {job_id!r} must map GPU types ({', '.join(cluster.types)}) to "
                              f"{{batch size: seconds per epoch}}, got {regimes!r}")
    unknown = [t for t in regimes if t not in cluster.types]
    if unknown:
        raise ValidationError(f"regimes of job {job_id!r} name {unknown[0]!r}, not a GPU type of the cluster "
                              f"({', '.join(cluster.types)})")
    if not is_whole(gpus) or gpus < 1:
        raise ValidationError(f"gpus of job {job_id!r} must be a positive whole number of GPUs, got {gpus!r}")
    table: dict[str, dict[float, float]] = {}
    for gpu_type, per_type in regimes.items():
        if not isinstance(per_type, Mapping) or not per_type:
            raise ValidationError(f"regimes of job {job_id!r} on {gpu_type} must be a non-empty mapping batch size "
                                  f"-> seconds per epoch, got {per_type!r}")
        try:
            table[gpu_type] = {float(b): float(d) for b, d in per_type.items()}
        except (TypeError, ValueError):
            raise ValidationError(f"regimes of job {job_id!r} on {gpu_type} must map batch sizes to seconds per "
                                  f"epoch (numbers), got {per_type!r}") from None
    sizes = sorted(next(iter(table.values())))
    for gpu_type, values in table.items():
        if sorted(values) != sizes:
            raise ValidationError(f"regimes of job {job_id!r} on {gpu_type} must give the same batch sizes as on "
                                  f"its other types ({sizes}), got {regimes[gpu_type]!r}")
    given = np.array([[values[b] for b in sizes] for values in table.values()])
    if not (np.isfinite(given) & (given > 0)).all():
        raise ValidationError(f"regimes of job {job_id!r} must give finite seconds per epoch > 0, got "
                              f"{dict(regimes)!r}")
    seconds = np.full((len(cluster), len(sizes)), np.inf)  # inf: a type not named, which cannot host the job
    seconds[[cluster.types.index(t) for t in table]] = given
    # A type whose GPUs cannot hold the gang cannot host the job either.
    seconds[gpus > cluster.counts] = np.inf
    if not np.isfinite(seconds).any():
        raise ValidationError(f"gpus of job {job_id!r} ({gpus!r}) fits none of its types "
                              f"({', '.join(f'{t}: {cluster[t]} GPUs' for t in regimes)})")
    reference = int(np.argmin(seconds.mean(axis=1)))  # the shortest mean epoch; inf rows never win
    return seconds, dict(zip(sizes, seconds[reference].tolist(), strict=True))


def _fastest(pace: FloatArray) -> np.ndarray:
    """Each job's types, fastest first (ties: the cluster's order), shape (n, K)."""
    return np.argsort(-pace, axis=1, kind="stable")


def _preference(fractions: FloatArray, pace: FloatArray) -> np.ndarray:
    """Each job's types, the largest planned fraction first, then the fastest, shape (n, K)."""
    types = pace.shape[1]
    return np.lexsort((np.broadcast_to(np.arange(types), pace.shape), -pace, -fractions), axis=1)


def _placed(order: np.ndarray, gpus: FloatArray, cluster: ClusterTypes, preference: np.ndarray,
            hosts: np.ndarray) -> np.ndarray:
    """The type of each job placed by `vfm.planner.rounding.place` in `order` (-1: none), shape (n,)."""
    placed = np.full(gpus.size, -1, dtype=np.int64)
    jobs, kinds = place(order, gpus, cluster.counts.astype(np.float64), preference, hosts)
    placed[jobs] = kinds
    return placed
