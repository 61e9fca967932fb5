"""Gavel's round mechanism over GPU types, composed with an allocation; its heterogeneity-aware max-min fairness.

`TypedRoundPolicy` is a `vfm.cluster.ClusterAware` policy: the jobs' book
(`vfm.cluster.baselines.round_book.RoundBook`) composed with a *typed allocator* (`TypedAllocator`), after
Gavel (Narayanan et al., OSDI'20, "Heterogeneity-Aware Cluster Scheduling Policies for Deep
Learning Workloads"; stanford-futuredata/gavel). `HeterogeneousMaxMinFairness` composes it with
Gavel's max-min fair allocation (`MaxMinAllocator`). Every round it

1. takes the allocation `X` (jobs x types, the fraction of time each job should spend on each
   type) that the allocator computes from the book's frozen state (`RoundState`) and the
   throughput estimates, reused while nothing it depends on changed (the job set, an estimate,
   or what the allocator names: `TypedAllocator.stale_after_report`, `every_round`);
2. turns it into whole gangs on types with Gavel's round mechanism (`gavel_round_step`, a pure
   function of the frozen state and `X`): per-(job, type) priorities ``X_ik / (share of type k's
   time job i received)``, deficits as tie-breakers, type by type (fastest first), whole gangs
   first-fit, each job on at most one type; then work conservation: idle GPUs go to waiting jobs
   that fit, each on the fastest type for it with room.

Step 1 is the one part `vfm.cluster.baselines.typed.policies` changes (an allocator each). Step 2 is
`vfm.cluster.baselines.gavel_rounds.gavel_round_step`, the one implementation of Gavel's rounds, which the
one-type `vfm.cluster.baselines.rounds.GavelRounds` runs too (K = 1). ``docs/baselines_typed.md`` states
every decision and where it follows Gavel's code (``scheduler/scheduler.py``:
``_update_priorities``, ``_reset_time_run_so_far``, ``_schedule_jobs_on_workers_helper``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, NamedTuple, Protocol

import numpy as np

from vfm._validation import read_only
from vfm.cluster.baselines.gavel_rounds import gavel_round_step
from vfm.cluster.baselines.round_book import RoundBook, RoundState, RowTable
from vfm.cluster.baselines.typed.instance import FloatArray, normalized_from_checked
from vfm.cluster.baselines.typed.max_min import solve_lex_max_min
from vfm.cluster.gpu_types import ClusterTypes
from vfm.errors import ValidationError
from vfm.parameters import Instance, Interval, Known, Real, Whole, check

__all__ = [
    "HeterogeneousMaxMinFairness",
    "MaxMinAllocator",
    "PolicyAllocation",
    "TypedAllocated",
    "TypedAllocator",
    "TypedRoundPolicy",
    "epochs_left",
    "normalized_under",
]

#: A regime of a job's `add_job`: a batch size and its seconds per epoch on a type.
_BATCH_SIZE = Interval(Real, 0, closed="neither")
_EPOCH_S = Interval(Real, 0, closed="neither", unit="seconds per epoch")


class PolicyAllocation(NamedTuple):
    """A policy's current allocation (`TypedRoundPolicy.allocation`); arrays read-only.

    Attributes
    ----------
    jobs : tuple
        The present jobs, in the rows' order.
    types : tuple of str
        The cluster's types, in the columns' order.
    x : ndarray, shape (len(jobs), len(types))
        Fraction of time each job should spend on each type.
    normalized : ndarray, shape (len(jobs),)
        Each job's normalized effective throughput under `x` (`normalized_throughputs`).
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
        "done_mix_s": (np.float64, ()),      # finished epochs' seconds on the proportional mix (idem)
    })


@dataclass(frozen=True)
class TypedAllocated:
    """A typed allocation: ``x`` (n, K), the fraction of time each job should spend on each type;
    ``normalized`` (n,), each job's normalized effective throughput under it; the solves it took
    (``lps``: linear programs, ``solves``: conic or market solves, ``iterations``: interior-point
    iterations); and what else the allocator reports (``details``: the optimal ratio, total or
    horizon, the market's equilibrium)."""

    x: FloatArray
    normalized: FloatArray
    lps: int = 0
    solves: int = 0
    iterations: int = 0
    details: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))


class TypedAllocator(Protocol):
    """An allocation over GPU types, composed with Gavel's typed rounds by `TypedRoundPolicy`."""

    @property
    def every_round(self) -> bool:
        """Whether the allocation moves with the clock, so it is recomputed every round."""

    def allocate(self, state: RoundState, thr: FloatArray) -> TypedAllocated:
        """The allocation of the present jobs from the frozen `state` and the throughputs `thr`
        (n, K; 0 where a type cannot host the job): a pure function."""

    def stale_after_report(self, job: Mapping[str, Any], round_s: float) -> bool:
        """Whether a job's report makes the allocation stale beyond a change of its estimates;
        `job` is its row (column name -> its entry), estimates and counts already updated."""


def epochs_left(state: RoundState) -> FloatArray:
    """Each present job's epochs left, as floats."""
    left: FloatArray = (state.col("epochs") - state.col("done")).astype(np.float64)
    return left


def normalized_under(state: RoundState, x: FloatArray, thr: FloatArray) -> FloatArray:
    """The present jobs' normalized throughputs under `x` (`normalized_from_checked`)."""
    return normalized_from_checked(x, thr, state.col("gpus"), state.counts)


@dataclass(frozen=True)
class MaxMinAllocator:
    """Gavel's heterogeneity-aware max-min fairness (`vfm.cluster.baselines.typed.max_min.max_min_allocation`).

    The LPs are a deterministic function of the job set and the throughput estimates, so the
    allocation is reused while they hold."""

    every_round: bool = False

    def allocate(self, state: RoundState, thr: FloatArray) -> TypedAllocated:
        x, normalized, lps = solve_lex_max_min(thr, state.col("gpus"), state.counts)
        return TypedAllocated(x, normalized, lps=lps)

    def stale_after_report(self, job: Mapping[str, Any], round_s: float) -> bool:
        return False


class TypedRoundPolicy(RoundBook):
    """Gavel's round mechanism over GPU types, composed with an allocator (`allocator`).

    A `vfm.cluster.ClusterAware` policy. Each round:

    1. The allocation ``X`` (n jobs x K types) of the allocator on the current throughput
       estimates (``1 / epoch seconds`` of each job's current regime on each type), recomputed
       when the job set or an estimate changed (or when the allocator says it is stale), else
       reused.
    2. Gavel's per-(job, type) priority ``X_ik / f_ik``, ``f_ik`` the share of type k's counted
       time (since the last reset) that job i received; counts start at ``round_s / 2`` and a job
       that runs on type k is credited ``round_s`` there. When the job set changes the counts are
       reset and each job's deficit on each type grows by the time it should have received there
       (``sum of X_ik round_s`` over the rounds since the reset) minus what it received.
    3. Type by type in the cluster's order (its profiles' speed order, fastest first),
       the jobs with ``X_ik > 0`` not yet placed, by (priority, deficit, allocation) descending
       then arrival, take whole gangs first-fit (Gavel's ``_schedule_jobs_on_workers_helper``).
    4. Work conservation: every job still waiting, by (its largest priority, its total deficit)
       descending then arrival, goes to the type with the highest throughput for it among those
       that host it and still have room for its gang.

    Parameters
    ----------
    cluster : ClusterTypes
        The cluster's GPU counts per type.
    round_s : float
        Seconds per round (default 120); `next_round` is called once per round.
    seed : int
        Accepted so that every policy is built alike; the policy is deterministic (ties go to
        the earlier arrival) and draws no random numbers.
    allocator : TypedAllocator, optional
        The allocation; default the class's `allocator` (each typed baseline names one).

    Attributes
    ----------
    cluster : ClusterTypes
    round_s : float
    seed : int
    round_index : int
        Rounds decided so far.
    lps, solves, iterations : int
        The allocator's LP solves, conic or market solves and interior-point iterations so far.
    details : mapping
        What the last allocation reported (`TypedAllocated.details`; empty before the first).
    """

    name = "typed_rounds"
    allocator: TypedAllocator  # each typed baseline's class names one; an instance may have its own

    #: Reuse the allocation while nothing it depends on changed (tests switch it off to check
    #: that reuse gives the schedule a fresh solve every round gives).
    reuse_allocation = True

    def __init__(self, cluster: ClusterTypes, round_s: float = 120.0, seed: int = 0, *,
                 allocator: TypedAllocator | None = None) -> None:
        check("cluster", cluster, Instance(ClusterTypes, "a vfm.cluster.ClusterTypes (GPU counts per type)",
                                           with_value=True))
        check("round_s", round_s, Interval(Real, 0, closed="neither"))
        super().__init__(_table(len(cluster.types)), round_s, seed)
        if allocator is not None:
            self.allocator = allocator
        elif not hasattr(self, "allocator"):
            raise ValidationError(f"{type(self).__name__} needs an allocator (MaxMinAllocator or your own "
                                  f"TypedAllocator)")
        self.cluster = cluster
        self.lps = self.solves = self.iterations = 0
        self.details: Mapping[str, Any] = MappingProxyType({})
        self._stale = True  # the allocation must be recomputed
        self._types = cluster.types
        self._counts = np.array(cluster.counts, dtype=np.int64)
        self._x = np.zeros((0, len(self._types)))
        self._normalized = np.zeros(0)
        self._thr = np.zeros((0, len(self._types)))

    def allocation(self) -> PolicyAllocation:
        """The allocation the next round will use (computed now if needed); arrays read-only."""
        self._ensure_allocation()
        return PolicyAllocation(tuple(self._table.ids), self._types, read_only(self._x),
                                read_only(self._normalized), read_only(self._thr))

    # --- what the scheduler tells the policy ---------------------------------------------------

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Mapping[float, float]], epochs: int, *,
                kind: Hashable = None) -> None:
        """A job arrives; `regimes` maps each type that can host it to batch size -> seconds per
        epoch there. `kind` is not used.

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
            "gpus": int(gpus), "epochs": int(epochs),
            "epoch_s": seconds.mean(axis=0),  # the regimes' mean per type, inf where it cannot run
            "job_time": self.round_s / 2.0, "arrival_s": self.clock_s,
        })

    def job_set_changed(self) -> None:
        """An arrival, completion or cancellation: Gavel's counts reset and the allocation is stale."""
        super().job_set_changed()
        self._stale = True

    def _checked_regimes(self, job_id: Hashable, gpus: int, regimes: Any) -> dict[float, FloatArray]:
        """``batch size -> seconds on each of the cluster's types`` (inf where it cannot host)."""
        types = ", ".join(self._types)
        check(f"regimes of job {job_id!r}", regimes, Instance(
            Mapping, f"a mapping of at least one GPU type of the cluster ({types}) to its batch size -> seconds per "
            f"epoch", with_value=True, nonempty=True))
        sizes: tuple[float, ...] | None = None
        per_type: dict[str, dict[float, float]] = {}
        for gpu_type, regime in regimes.items():
            check(f"each key of regimes of job {job_id!r}", gpu_type, Known(self._types, "a GPU type of the cluster"))
            check(f"regimes[{gpu_type!r}] of job {job_id!r}", regime,
                  Instance(Mapping, "a non-empty mapping of batch sizes to seconds per epoch", with_value=True,
                           nonempty=True))
            for size, seconds in regime.items():
                check(f"each batch size of regimes[{gpu_type!r}] of job {job_id!r}", size, _BATCH_SIZE)
                check(f"regimes[{gpu_type!r}][{size!r}] of job {job_id!r}", seconds, _EPOCH_S)
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

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished last round, one batch size per epoch.

        The last batch size's seconds on each type become the job's estimates; a job with all
        epochs done completes and leaves.

        Raises
        ------
        vfm.errors.ValidationError
            An unknown job, a batch size not in its regimes, more epochs than it has left.
        """
        t = self._table
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
        current = reg[float(batch_sizes[-1])]
        epoch_s = t.col("epoch_s")
        if not np.array_equal(epoch_s[i], current):
            epoch_s[i] = current
            self._stale = True
        # The finished epochs' seconds on the proportional mix of types (finish-time fairness).
        mix = self._counts / float(self._counts.sum())  # the proportional row count_k / C
        seconds = np.stack([reg[float(b)] for b in batch_sizes])  # (epochs, K), inf: cannot host
        t.col("done_mix_s")[i] += float((1.0 / (mix / seconds).sum(axis=1)).sum())
        if self.allocator.stale_after_report({name: t.col(name)[i] for name in t.names}, self.round_s):
            self._stale = True

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> dict[Hashable, str]:
        """The jobs to run in the next round, each with the type its whole gang runs on: Gavel's
        rounds (`gavel_round_step`) from the book's frozen state on the allocator's allocation."""
        t = self._table
        if t.n == 0:
            self.close_round()
            return {}
        if self.allocator.every_round:
            self._stale = True
        x = self._ensure_allocation()
        rows, on, counters = gavel_round_step(self.state(), x)
        for name, values in counters.items():
            t.col(name)[:] = values
        self.close_round()
        return {t.ids[i]: self._types[k] for i, k in zip(rows.tolist(), on.tolist(), strict=True)}

    def state(self) -> RoundState:
        """The book as the next round sees it, frozen (`RoundBook.snapshot`)."""
        return self.snapshot(self.cluster)

    # --- internals ----------------------------------------------------------------------------

    def _ensure_allocation(self) -> FloatArray:
        if self._stale or not self.reuse_allocation:
            state = self.state()
            epoch_s, gpus = state.col("epoch_s"), state.col("gpus")
            thr = np.where(np.isfinite(epoch_s), 1.0 / epoch_s, 0.0)
            thr[gpus[:, None] > self._counts[None, :]] = 0.0  # (already inf there: a gang too wide)
            allocated = self.allocator.allocate(state, thr)
            self._x, self._normalized, self._thr = allocated.x, allocated.normalized, thr
            self.lps += allocated.lps
            self.solves += allocated.solves
            self.iterations += allocated.iterations
            self.details = MappingProxyType(dict(allocated.details))
            self._stale = False
        return self._x


class HeterogeneousMaxMinFairness(TypedRoundPolicy):
    """Gavel's heterogeneity-aware max-min fairness: `max_min_allocation` under Gavel's typed rounds.

    A `vfm.cluster.ClusterAware` policy: `TypedRoundPolicy`'s rounds, built as it is
    (``cluster``, the GPU counts per type; ``round_s``; ``seed``), composed with `MaxMinAllocator`.
    The LPs are a deterministic function of the job set and the throughput estimates, so reusing
    the allocation while they hold gives the very allocation a new solve would; `lps` counts the
    solves.
    """

    name = "heterogeneous_max_min_fairness"
    allocator = MaxMinAllocator()
