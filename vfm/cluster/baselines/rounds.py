"""The one conversation of every round-based baseline: `RoundPolicy`, the jobs' book composed with a round mechanism.

`RoundPolicy` is a `vfm.cluster.ClusterAware` policy on one GPU type or several, as
`vfm.planner.Policy` is: built on a GPU count (one type) or a `vfm.cluster.ClusterTypes`, it is
told each job's regimes per type (on one type, plainly ``batch size -> seconds`` too), and
answers each round with the jobs' ids (one type) or each job with its type (several). Events (an
arrival, a report, a cancellation) are O(1) changes to its book
(`vfm.cluster.baselines.round_book.RoundBook`); each round it snapshots the book, steps its
mechanism (`vfm.cluster.baselines.mechanisms.RoundMechanism`) on the mechanism's allocation, and
writes back the counters the step returns. The allocation (if the mechanism has one) is kept
while nothing it depends on changed (the job set, an estimate, or what it names itself:
`Allocated.stale_after_report`; one that names nothing serves one round), else computed again.

Examples
--------
A baseline of your own: an allocation composed with Gavel's rounds, no subclass.

>>> from vfm.cluster.baselines.mechanisms import Allocated, GavelRounds, remaining_s
>>> def shortest_first(state: RoundState) -> Allocated:
...     return Allocated((remaining_s(state) <= remaining_s(state).min()).astype(float))
>>> policy = RoundPolicy(2, mechanism=GavelRounds(shortest_first))
>>> policy.add_job("long", 2, {32: 60.0}, 10)
>>> policy.add_job("short", 2, {32: 60.0}, 2)
>>> policy.next_round()
['short']
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from vfm._validation import read_only
from vfm.cluster.baselines.mechanisms import Allocated, FloatArray, RoundMechanism, RoundStep, throughputs
from vfm.cluster.baselines.round_book import RoundBook, RoundState, RowTable
from vfm.cluster.baselines.typed.instance import normalized_from_checked
from vfm.errors import ValidationError
from vfm.gpu_cluster import ClusterTypes
from vfm.parameters import Constraint, Either, Instance, Interval, Known, Real, Whole, check, check_parameters

__all__ = ["PolicyAllocation", "RoundPolicy"]

#: A regime of a job's `add_job`: a batch size and its seconds per epoch on a type.
_BATCH_SIZE = Interval(Real, 0, closed="neither")
_EPOCH_S = Interval(Real, 0, closed="neither", unit="seconds per epoch")
_CONSTRAINTS: dict[str, Constraint] = {
    "capacity": Either(Interval(Whole, 1, unit="GPUs"),
                       Instance(ClusterTypes, "a vfm.cluster.ClusterTypes (GPU type -> count)")),
    "round_s": Interval(Real, 0, closed="neither"),
}


class PolicyAllocation(NamedTuple):
    """A policy's current allocation (`RoundPolicy.allocation`); arrays read-only.

    Attributes
    ----------
    jobs : tuple
        The present jobs, in the rows' order.
    types : tuple of str
        The cluster's types, in the columns' order.
    x : ndarray, shape (len(jobs), len(types))
        Fraction of time each job should spend on each type.
    normalized : ndarray, shape (len(jobs),)
        Each job's normalized effective throughput under `x`
        (`vfm.cluster.baselines.typed.normalized_throughputs`).
    throughputs : ndarray, shape (len(jobs), len(types))
        The throughput estimates the allocation was computed from: 1 / current epoch seconds,
        0 where the type cannot host the job.
    """

    jobs: tuple[Hashable, ...]
    types: tuple[str, ...]
    x: FloatArray
    normalized: FloatArray
    throughputs: FloatArray


def _table(types: int) -> RowTable:
    """The present jobs' table: 1-D columns ``(n,)`` and per-type ones ``(n, K)``; its ``regimes``
    map each batch size to its seconds per type (inf: cannot host)."""
    return RowTable({
        "gpus": (np.int64, ()), "seq": (np.int64, ()), "epochs": (np.int64, ()), "done": (np.int64, ()),
        "epoch_s": (np.float64, (types,)),   # current seconds per epoch on each type
        "job_time": (np.float64, (types,)),  # Gavel's _job_time_so_far
        "should": (np.float64, (types,)),    # time it should have received since the reset
        "deficit": (np.float64, (types,)),   # Gavel's _deficits
        "arrival_s": (np.float64, ()),       # policy clock when added (finish-time fairness)
        "done_s": (np.float64, ()),          # finished epochs' seconds on the types' mix (idem)
        "pass_": (np.float64, ()),           # stride scheduling's pass
        "ran": (np.bool_, ()),               # selected in the previous round (AlloX)
    })


class RoundPolicy(RoundBook):
    """The `SchedulingPolicy` conversation over the jobs' book, rounds decided by `mechanism`.

    Parameters
    ----------
    capacity : int or vfm.cluster.ClusterTypes
        The cluster: a GPU count (one GPU type, the profiled one) or the GPU counts per type.
    round_s : float
        Seconds per round (default 120); `next_round` is called once per round.
    seed : int
        Accepted so that every policy is built alike; the baselines are deterministic (ties go to
        the earlier arrival) and draw no random numbers.
    mechanism : RoundMechanism, optional
        How rounds are decided; default the class's `mechanism` (each baseline names one). One
        that decides on one type only (`RoundMechanism.over_types` False) takes one-type clusters.

    Attributes
    ----------
    cluster : vfm.cluster.ClusterTypes
    capacity : int
        All the cluster's GPUs.
    last_step : RoundStep or None
        What the last round's mechanism decided (None before the first round with jobs).
    lps, solves, iterations : int
        The allocation's LP solves, conic or market solves and interior-point iterations so far.
    """

    name = "round"
    mechanism: RoundMechanism  # each baseline's class names one; an instance may have its own

    #: Reuse the allocation while nothing it depends on changed (tests switch it off to check
    #: that reusing it gives the schedule of a fresh one every round).
    reuse_allocation = True

    def __init__(self, capacity: int | ClusterTypes, round_s: float = 120.0, seed: int = 0, *,
                 mechanism: RoundMechanism | None = None) -> None:
        check_parameters({"capacity": capacity, "round_s": round_s}, _CONSTRAINTS)
        self.cluster = capacity if isinstance(capacity, ClusterTypes) else ClusterTypes.single(int(capacity))
        super().__init__(_table(len(self.cluster)), round_s, seed)
        self.capacity = self.cluster.total
        if mechanism is not None:
            self.mechanism = mechanism
        elif not hasattr(self, "mechanism"):
            raise ValidationError(f"{type(self).__name__} needs a mechanism (GavelRounds, StrideRounds, "
                                  f"MatchingRounds or your own RoundMechanism)")
        if len(self.cluster) > 1 and not self.mechanism.over_types:
            raise ValidationError(f"{type(self).__name__} schedules a cluster of one GPU type, not "
                                  f"{dict(self.cluster)}; on several types use one that allocates over them "
                                  f"(vfm.cluster.BASELINES)")
        self._types = self.cluster.types
        self._standing: Allocated | None = None  # the allocation in force while it holds
        self._latest: Allocated | None = None  # the last one computed (its details outlive it)
        self.last_step: RoundStep | None = None
        self.lps = self.solves = self.iterations = 0

    @property
    def details(self) -> Mapping[str, Any]:
        """What the last allocation computed reported (`Allocated.details`; empty before the first)."""
        return MappingProxyType({}) if self._latest is None else self._latest.details

    def allocation(self) -> PolicyAllocation:
        """The allocation the next round will use (computed now if needed), over the cluster's
        types; arrays read-only.

        Raises
        ------
        vfm.errors.ValidationError
            For a policy whose mechanism decides without an allocation.
        """
        state = self.state()
        allocated = self._allocated(state)
        if allocated is None:
            raise ValidationError(f"{type(self).__name__} decides its rounds without an allocation")
        x = np.clip(allocated.x, 0.0, 1.0).reshape(state.n, len(self._types))
        thr = throughputs(state)
        normalized = normalized_from_checked(x, thr, state.col("gpus"), state.counts)
        return PolicyAllocation(state.ids, self._types, read_only(x), read_only(normalized), read_only(thr))

    # --- what the scheduler tells the policy ---------------------------------------------------

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float] | Mapping[str, Mapping[float, float]],
                epochs: int, *, kind: Hashable = None, restart_s: float | None = None) -> None:
        """A job arrives; `regimes` maps each type that can host it to batch size -> seconds per
        epoch there; on a cluster of one type, plainly batch size -> seconds is its regimes there.
        `kind` and `restart_s` are not used: the baselines decide each round from their
        allocations alone, as the systems they reproduce do, whatever a restart costs.

        A type whose count is smaller than the gang cannot host it and is ignored.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job and the field: an id already present; a gang that is not a positive
            whole number, or wider than every type its regimes name; regimes that are not a
            non-empty mapping of the cluster's types to non-empty mappings batch size ->
            seconds > 0 (finite), or that list different batch sizes on different types; epochs
            that are not a positive whole number.
        """
        self.refuse_present(job_id)
        check(f"gpus of job {job_id!r}", gpus, Interval(Whole, 1))
        check(f"epochs of job {job_id!r}", epochs, Interval(Whole, 1))
        table = self._checked_regimes(job_id, int(gpus), regimes)
        seconds = np.stack(list(table.values()))
        self.admit(job_id, table, {
            "gpus": int(gpus), "epochs": int(epochs), "arrival_s": self.clock_s,
            "epoch_s": seconds.mean(axis=0),  # the regimes' mean per type, inf where it cannot run
            **self.mechanism.admitted(self.table, self.round_s),
        })

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished last round, one batch size per epoch.

        The last batch size's seconds on each type become the job's estimates; a job with all
        epochs done completes and leaves.

        Raises
        ------
        vfm.errors.ValidationError
            An unknown job, a batch size not in its regimes, more epochs than it has left.
        """
        t = self.table
        i = self.row_of(job_id)
        if not len(batch_sizes):
            return
        reg = t.regimes[i]
        known = Real(f"a batch size of its regimes ({sorted(reg)})", lambda size: float(size) in reg)
        for k, size in enumerate(batch_sizes):
            check(f"batch_sizes[{k}] job {job_id!r} reported", size, known)
        done = t.col("done")
        check(f"the epochs job {job_id!r} reported", len(batch_sizes),
              Interval(Whole, high=t.col("epochs")[i] - done[i], unit="epochs", note="the epochs it has left"))
        done[i] += len(batch_sizes)
        if done[i] >= t.col("epochs")[i]:
            self.complete(job_id)
            return
        self._reestimated(i, np.stack([reg[float(b)] for b in batch_sizes]))

    def job_set_changed(self) -> None:
        """An arrival, completion or cancellation: Gavel's counts reset and the allocation is stale."""
        super().job_set_changed()
        self._standing = None

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> list[Hashable] | dict[Hashable, str]:
        """The jobs to run in the next round, whole gangs within each type's count: on one GPU type
        their ids, on several a mapping of each to its type; decided by the mechanism from the
        book's frozen state (`state`)."""
        t = self.table
        chosen, on = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self._standing is not None and self._standing.stale_after_report is None:
            self._standing = None  # an allocation for one round: each round computes its own
        if t.n:
            state = self.state()
            self.last_step = self.mechanism.step(state, self._allocated(state))
            chosen = self.last_step.chosen
            on = self.last_step.types if self.last_step.types is not None else np.zeros(chosen.size, dtype=np.int64)
            for name, values in self.last_step.columns.items():
                t.col(name)[:] = values
        ran = t.col("ran")
        ran[:] = False
        ran[chosen] = True
        self.close_round()
        if len(self._types) == 1:
            return [t.ids[i] for i in chosen]
        return {t.ids[i]: self._types[k] for i, k in zip(chosen.tolist(), on.tolist(), strict=True)}

    def state(self) -> RoundState:
        """The book as the next round sees it, frozen (`RoundBook.snapshot`)."""
        return self.snapshot(self.cluster)

    # --- internals ----------------------------------------------------------------------------

    def _allocated(self, state: RoundState) -> Allocated | None:
        """The mechanism's allocation for `state`: the one in force while it holds, else a new one."""
        allocate = self.mechanism.allocate
        if allocate is None:
            return None
        standing = self._standing
        if standing is None or not self.reuse_allocation:
            standing = allocate(state)
            self.lps += standing.lps
            self.solves += standing.solves
            self.iterations += standing.iterations
            self._standing = self._latest = standing
        return standing

    def _reestimated(self, i: int, seconds: FloatArray) -> None:
        """Row `i`'s finished epochs recorded (`seconds`: one row per epoch, one column per type, inf
        where it cannot run): their seconds on the types' mix, the last one's as its estimates; the
        allocation in force dropped when they change them, or when it says so
        (`Allocated.stale_after_report`)."""
        t = self.table
        t.col("done_s")[i] += self._seconds_on_mix(seconds)
        epoch_s = t.col("epoch_s")
        if not np.array_equal(epoch_s[i], seconds[-1]):
            epoch_s[i] = seconds[-1]
            self._standing = None
        stale = None if self._standing is None else self._standing.stale_after_report
        if stale is not None and stale({name: t.col(name)[i] for name in t.names}, self.round_s):
            self._standing = None

    def _seconds_on_mix(self, seconds: FloatArray) -> float:
        """The seconds of epochs (rows of `seconds`, one column per type) on the proportional mix of
        the cluster's types, each epoch at ``1 / sum_k (count_k / C) / s_k``: on one type, their
        seconds there, summed in order (1 / (1 / s) is not always s)."""
        if len(self._types) == 1:
            return sum(seconds[:, 0].tolist())
        counts = self.cluster.counts
        mix = counts / float(counts.sum())
        return float((1.0 / (mix / seconds).sum(axis=1)).sum())

    def _checked_regimes(self, job_id: Hashable, gpus: int, regimes: Any) -> dict[float, FloatArray]:
        """``batch size -> seconds on each of the cluster's types`` (inf where it cannot host)."""
        plain = len(self._types) == 1 and isinstance(regimes, Mapping) and not any(
            isinstance(regime, Mapping) for regime in regimes.values())
        if plain:  # one type: its regimes, named as given
            return self._regimes_table(job_id, gpus, {self._types[0]: regimes}, lambda gpu_type: "regimes")
        types = ", ".join(self._types)
        check(f"regimes of job {job_id!r}", regimes, Instance(
            Mapping, f"a mapping of at least one GPU type of the cluster ({types}) to its batch size -> seconds per "
            f"epoch", with_value=True, nonempty=True))
        for gpu_type in regimes:
            check(f"each key of regimes of job {job_id!r}", gpu_type, Known(self._types, "a GPU type of the cluster"))
        return self._regimes_table(job_id, gpus, regimes, lambda gpu_type: f"regimes[{gpu_type!r}]")

    def _regimes_table(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Any],
                       named: Callable[[str], str]) -> dict[float, FloatArray]:
        """`_checked_regimes` once the keys are the cluster's types; `named(type)` names a type's regimes."""
        sizes: tuple[float, ...] | None = None
        per_type: dict[str, dict[float, float]] = {}
        for gpu_type, regime in regimes.items():
            check(f"{named(gpu_type)} of job {job_id!r}", regime,
                  Instance(Mapping, "a non-empty mapping of batch sizes to seconds per epoch", with_value=True,
                           nonempty=True))
            for size, seconds in regime.items():
                check(f"each batch size of {named(gpu_type)} of job {job_id!r}", size, _BATCH_SIZE)
                check(f"{named(gpu_type)}[{size!r}] of job {job_id!r}", seconds, _EPOCH_S)
            reg = {float(b): float(s) for b, s in regime.items()}
            if sizes is None:
                sizes = tuple(sorted(reg))
            elif tuple(sorted(reg)) != sizes:
                first = next(iter(per_type))
                raise ValidationError(f"regimes of job {job_id!r} list batch sizes {sorted(reg)} on {gpu_type!r} but "
                                      f"{list(sizes)} on {first!r}; every type must list the same batch sizes")
            per_type[gpu_type] = reg
        wide = [t for t in per_type if self.cluster[t] < gpus]
        if len(wide) == len(per_type):
            counts = ", ".join(f"{t}: {self.cluster[t]}" for t in per_type)
            raise ValidationError(f"gpus of job {job_id!r} is {gpus}, more than every type its regimes name has "
                                  f"({counts})")
        assert sizes is not None
        table = {b: np.full(len(self._types), np.inf) for b in sizes}
        for gpu_type, reg in per_type.items():
            if gpu_type in wide:
                continue
            k = self._types.index(gpu_type)
            for b, s in reg.items():
                table[b][k] = s
        return table
