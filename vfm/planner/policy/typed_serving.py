"""How `vfm.planner.Policy` serves and re-plans rounds on a cluster of several GPU types.

On several types the policy is the same receding-horizon loop with goods (type, round): the same
job records (on each job's *reference* type, below), re-planned with `vfm.planner.plan`'s
``speed`` (docs/planning.md, "GPU types") on arrivals, completions and every `replan_every`
rounds, and the same executions:

- ``"credit"`` (default): `vfm.planner.shockwave.serve_with_credit` over types: credit counted in
  rounds of the reference type (a K80 round at speed 0.4 pays 0.4 of a round owed), the jobs
  with the most first, each on the type of its largest planned fraction that has room
  (`vfm.planner.rounding.place`), then idle GPUs to the waiting jobs on their fastest types;
- ``"window"``: the plan's own placement (`vfm.planner.Plan.placement`).

Overdue jobs (`max_wait`) are served first in both. A re-plan that fails or ends past the deadline
is discarded by `vfm.planner.policy.decision.decide_placed`, the one decision path: the round is served
from the standing plan or by whole gangs first-fit over the types. One type is the plain program's
fast path (`vfm.planner.policy.serving`); on one type the typed program gives the same plans
(tests).

A job is told its regimes on each type that can host it. Its reference type is the one of its
shortest mean epoch time (ties: the cluster's type order); the forecaster sees its regimes there,
and its speed on type `k` is the ratio of its current regime's epoch times, reference over `k`
(the regime of its last observed epoch, before any the mean over its regimes), at most 1 (a type
faster than the reference at the current regime counts as the reference's speed). With
``fairness=True`` (`vfm.planner.Policy.shockwave`) it keeps Shockwave's finish-time targets with
the equal share of all the cluster's GPUs, each job at its pace on a proportional slice of the
cluster (its speeds weighted by the types' GPU counts: what finish-time fairness measures against,
`vfm.cluster.proportional_isolated_s`), and plans with them (`vfm.planner.plan`'s
``fair_finish_s`` on types).

`typed_serving` is the `vfm.planner.policy.decision.Serving` of a configuration: functions of the frozen
state, as the one-type path's, each job's speeds per type in its record
(`vfm.planner.policy.state.JobRecord.speeds`, from `typed_regimes` and `job_speeds`).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np

from vfm._validation import FloatArray, read_only
from vfm.gpu_cluster import ClusterTypes
from vfm.parameters import Anything, Fields, Interval, Keyed, Known, Real, Satisfies, Whole, check
from vfm.planner import shockwave
from vfm.planner.plan import Plan
from vfm.planner.policy.decision import Placement, Serving
from vfm.planner.policy.replanning import replan
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState, continuity_of
from vfm.planner.rounding import place
from vfm.planner.typed import hosting

__all__ = ["job_speeds", "typed_regimes", "typed_serving"]


def typed_serving(config: PolicyConfig) -> Serving:
    """How a policy of `config` on several GPU types re-plans and serves rounds, for
    `vfm.planner.policy.decision.decide_placed`."""
    cluster = _cluster(config)
    return Serving(counts=cluster.counts, replan=partial(replan, config, over_types=True),
                   serve=partial(_serve, config), hosts=partial(_hosts, len(cluster)))


def _cluster(config: PolicyConfig) -> ClusterTypes:
    assert config.cluster is not None
    return config.cluster


def _hosts(types: int, state: PolicyState, ids: list[Hashable]) -> np.ndarray:
    """Which types can host each job of `ids`, shape (len(ids), K): those it has a speed on."""
    # Column -1 (the regimes' mean) is positive exactly on the types that can host the job (`job_speeds`).
    return np.array([_speeds(state.jobs[job])[:, -1] > 0 for job in ids], dtype=bool).reshape(len(ids), types)


def _speeds(job: JobRecord) -> FloatArray:
    assert job.speeds is not None  # every record on several types has them (`Policy.add_job`, the checks)
    return job.speeds


def _serve(config: PolicyConfig, state: PolicyState) -> tuple[PolicyState, Placement, dict[str, int]]:
    """Round ``state.since_plan`` of the standing plan by the configured execution: the state after
    it, the jobs it runs, each with its type's index, and how many each guard decided."""
    standing = state.plan
    assert standing is not None and standing.placement is not None and standing.job_ids is not None
    open_ = standing.program.open_jobs
    first = shockwave.overdue_order(state.waited, open_, config.max_wait)
    if config.execution == "window":
        placed, credit = _serve_window(config, state, first), state.credit
        fired = shockwave.guards_fired(placed >= 0, first)
    else:
        placed, credit, fired = _serve_credit(config, state, first)
    ran = placed >= 0
    waited = np.where(ran | ~open_, 0, state.waited + 1)
    state = replace(state, credit=read_only(credit), waited=read_only(waited), ran_last=read_only(ran),
                    since_plan=state.since_plan + 1, round_index=state.round_index + 1)
    ids = standing.job_ids
    return state, {ids[i]: k for i, k in enumerate(placed.tolist()) if k >= 0}, fired


def _round_view(config: PolicyConfig, state: PolicyState) -> tuple[Plan, FloatArray, FloatArray, np.ndarray]:
    """The standing plan, its fractions of this round per type (n, K), the speeds (n, K) and
    which types can host each job (n, K)."""
    standing, cluster = state.plan, _cluster(config)
    assert standing is not None
    n, types = standing.program.shape[1], len(cluster)
    rounds = standing.program.shape[2] // types
    fractions = standing.relaxed.reshape(n, types, rounds)[:, :, state.since_plan]
    pace = standing.program.pace.reshape(n, types, rounds)[:, :, 0]
    hosts = hosting(standing.program.gpus, cluster.counts[:, None].astype(np.float64), pace)[:, :, 0]
    return standing, fractions, pace, hosts


def _serve_window(config: PolicyConfig, state: PolicyState, first: np.ndarray) -> np.ndarray:
    """The plan's own placement for this round, the overdue jobs (`first`) placed before it."""
    standing, fractions, pace, hosts = _round_view(config, state)
    assert standing.placement is not None
    planned = standing.placement[:, state.since_plan]
    if not first.size:
        return planned.copy()
    order = shockwave.served_first(first, np.flatnonzero(planned >= 0))
    # A planned job keeps its planned type if it can; an overdue one takes its fastest with room.
    on_plan = fractions + 2.0 * (planned[:, None] == np.arange(pace.shape[1]))
    preference = np.where(planned[:, None] >= 0, _preference(on_plan, pace), _fastest(pace))
    return _placed(order, standing.program.gpus, _cluster(config), preference, hosts)


def _serve_credit(config: PolicyConfig, state: PolicyState,
                  first: np.ndarray) -> tuple[np.ndarray, FloatArray, dict[str, int]]:
    """One round by carried credit (`vfm.planner.shockwave.serve_with_credit` over types): credit
    in rounds of the reference type, each job placed on the type of its largest planned fraction
    that has room, then idle GPUs to the waiting jobs on their fastest types."""
    standing, fractions, pace, hosts = _round_view(config, state)
    program, gpus = standing.program, standing.program.gpus
    planned = (pace * fractions).sum(axis=1)  # reference rounds planned this round
    assert standing.job_ids is not None  # a standing plan names its jobs (`serve_typed`)
    precedence = shockwave.Precedence(overdue=first, ran_last=state.ran_last,
                                      continuity=continuity_of(config, state, standing.job_ids))
    want, order = shockwave.credit_order(program, planned, state.credit, precedence)
    free = _cluster(config).counts.astype(np.float64)
    placed = np.full(planned.size, -1, dtype=np.int64)
    jobs, kinds = place(order, gpus, free, _preference(fractions, pace), hosts)
    placed[jobs] = kinds
    by_credit = placed >= 0
    remaining = np.where(program.open_jobs, program.remaining_s, 0.0)
    waiting = np.flatnonzero((placed < 0) & program.open_jobs)
    jobs, kinds = place(waiting[np.argsort(-remaining[waiting], kind="stable")], gpus, free, _fastest(pace), hosts)
    placed[jobs] = kinds
    work = np.where(placed >= 0, np.take_along_axis(pace, np.maximum(placed, 0)[:, None], axis=1)[:, 0], 0.0)
    # A job that ran beyond its plan (idle GPUs) owes at most `CREDIT_FLOOR` rounds for it.
    owed = want - work
    fired = shockwave.guards_fired(placed >= 0, first, want=want, by_credit=by_credit, owed=owed)
    return placed, np.maximum(owed, shockwave.CREDIT_FLOOR), fired


def job_speeds(seconds: FloatArray, on_reference: FloatArray) -> FloatArray:
    """A job's speed on each type at each regime and at their mean, shape (K, R + 1), from its epoch
    seconds per type and regime `seconds` (K, R; inf: the type cannot host it) and on its reference
    type `on_reference` (R,): the ratio, at most 1; 0 where the type cannot host it."""
    mean = np.where(np.isfinite(seconds), seconds, np.nan).mean(axis=1, keepdims=True)
    now = np.hstack([seconds, mean])
    reference = np.append(on_reference, on_reference.mean())
    with np.errstate(invalid="ignore"):
        return np.where(np.isfinite(now), np.minimum(reference[None, :] / now, 1.0), 0.0)


def _reads_as_float(value: Any) -> bool:
    """Whether ``float(value)`` reads `value`: how a job's regimes per type are read."""
    try:
        float(value)
    except (TypeError, ValueError, OverflowError):
        return False
    return True


#: A job's regimes on one GPU type, as given: batch size -> seconds per epoch, each read as a float.
_NUMBER = Satisfies("a number", _reads_as_float)
_PER_TYPE = Keyed(_NUMBER, _NUMBER, "a non-empty mapping of batch sizes to seconds per epoch", nonempty=True)
_SECONDS = Interval(Real, 0, closed="neither", unit="seconds per epoch")


def typed_regimes(cluster: ClusterTypes, job_id: Hashable, gpus: int,
                   regimes: Mapping[str, Mapping[float, float]]) -> tuple[FloatArray, dict[float, float]]:
    """A job's regimes per type as a (K, R) array over the cluster's types (inf: cannot host), and its
    regimes on its reference type (module docstring), or a `ValidationError` naming the job."""
    of = f" of job {job_id!r}"
    check("regimes", regimes, Keyed(
        Known(cluster.types, "a GPU type of the cluster"), _PER_TYPE,
        f"a non-empty mapping of GPU types ({', '.join(cluster.types)}) to {{batch size: seconds per epoch}}",
        nonempty=True), of=of)
    check("gpus", gpus, Interval(Whole, 1, unit="GPUs"), of=of)
    table = {gpu_type: {float(b): float(d) for b, d in per_type.items()} for gpu_type, per_type in regimes.items()}
    sizes = sorted(next(iter(table.values())))
    # Every type gives the same batch sizes (those of its first), each finite seconds per epoch > 0.
    same = Fields(dict.fromkeys(sizes, _SECONDS), "a mapping of the batch sizes of its first type", member="batch size")
    check("regimes", table, Keyed(Anything(), same, "a mapping of GPU types to the same batch sizes"), of=of)
    # A type whose GPUs cannot hold the gang cannot host the job; some type of its regimes must.
    check("gpus", gpus, Interval(Whole, 1, max(cluster[t] for t in table), unit="GPUs", note="the GPUs of its largest "
                                 f"GPU type: {', '.join(f'{t}: {cluster[t]}' for t in table)}"), of=of)
    given = np.array([[values[b] for b in sizes] for values in table.values()])
    seconds = np.full((len(cluster), len(sizes)), np.inf)  # inf: a type not named, which cannot host the job
    seconds[[cluster.types.index(t) for t in table]] = given
    seconds[gpus > cluster.counts] = np.inf
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
