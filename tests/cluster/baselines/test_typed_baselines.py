"""Gavel's heterogeneity-aware max-min fairness (vfm.cluster.baselines.typed): the allocation
against water-filling, an independent LP and a brute-force lexicographic reference; a hand-solved
two-job case; the round mechanism against the homogeneous one; runs on a mixed cluster; bad input.
The per-type static market: against the one-type StaticMarket and the one-round window market,
feasibility, a case solved by hand from its KKT conditions, a run on a mixed cluster, bad input."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

import vfm
from vfm.cluster import GPU_TYPES, ClusterAware, ClusterTypes, load_workload, simulate
from vfm.cluster.baselines import (
    BASELINES,
    Allocated,
    FinishTimeFairness,
    GavelRounds,
    HeterogeneousFinishTimeFairness,
    HeterogeneousMaxMinFairness,
    HeterogeneousMaxSumThroughput,
    HeterogeneousMinTotalDuration,
    HeterogeneousStaticMarket,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
    RoundState,
    StaticMarket,
    ftf_allocation,
    water_filling,
)
from vfm.cluster.baselines.typed import (
    allocate_max_min_over_types,
    finish_time_fairness_allocation,
    max_min_allocation,
    max_sum_throughput_allocation,
    min_total_duration_allocation,
    normalized_throughputs,
    proportional_throughputs,
    static_market_allocation,
)
from vfm.equilibrium import Status
from vfm.errors import SolverError, ValidationError
from vfm.jobs import window_market
from vfm.solvers import Solution

# --- instances ----------------------------------------------------------------------------------


@st.composite
def instances(draw: st.DrawFn, max_jobs: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(throughputs (n, K), gpus (n,), counts (K,))``: every job hostable on some type."""
    k = draw(st.integers(1, 3))
    counts = np.array([draw(st.integers(1, 12)) for _ in range(k)])
    n = draw(st.integers(1, max_jobs))
    gpus = np.array([draw(st.sampled_from([g for g in (1, 2, 4, 8) if g <= counts.max()])) for _ in range(n)])
    thr = np.array([[draw(st.floats(0.05, 5.0)) for _ in range(k)] for _ in range(n)])
    drop = np.array([[draw(st.booleans()) and draw(st.booleans()) for _ in range(k)] for _ in range(n)])
    thr[drop] = 0.0
    fits = gpus[:, None] <= counts[None, :]
    homeless = ~((thr > 0) & fits).any(axis=1)
    best = np.argmax(counts)  # a type every gang fits (gangs are drawn <= the largest count)
    thr[homeless, best] = 1.0
    return thr, gpus, counts


def hosted(thr: np.ndarray, gpus: np.ndarray, counts: np.ndarray) -> np.ndarray:
    return (thr > 0) & (gpus[:, None] <= counts[None, :])


def assert_feasible(x: np.ndarray, thr: np.ndarray, gpus: np.ndarray, counts: np.ndarray) -> None:
    assert (x >= 0).all()
    assert (x.sum(axis=1) <= 1 + 1e-9).all()
    assert (gpus @ x <= counts * (1 + 1e-9)).all()
    assert (x[~hosted(thr, gpus, counts)] == 0).all()


def equal_share(thr: np.ndarray, gpus: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Gavel's proportional rows ``count_k / C`` (0 where the type cannot host the job), scaled
    down by one common factor until every type's GPUs suffice: a simple feasible allocation."""
    x = np.where(hosted(thr, gpus, counts), counts[None, :] / counts.sum(), 0.0)
    return x * min(1.0, float((counts / np.maximum(gpus @ x, 1e-300)).min()))


def scaled(thr: np.ndarray, gpus: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``a_ik = w_i thr_ik / prop_i``, throughputs 0 where the type cannot host the job."""
    thr = np.where(hosted(thr, gpus, counts), thr, 0.0)
    return gpus[:, None] * thr / proportional_throughputs(thr, counts)[:, None]


def max_min_value(thr: np.ndarray, gpus: np.ndarray, counts: np.ndarray) -> float:
    """The max-min objective by one dense LP written here independently (variables x row-major, t)."""
    n, k = thr.shape
    a = scaled(thr, gpus, counts)
    level = np.zeros((n, n * k + 1))
    time = np.zeros((n, n * k + 1))
    cap = np.zeros((k, n * k + 1))
    for i in range(n):
        level[i, i * k:(i + 1) * k] = -a[i]
        level[i, -1] = 1.0
        time[i, i * k:(i + 1) * k] = 1.0
        cap[:, i * k:(i + 1) * k] = gpus[i] * np.eye(k)
    bounds = [(0.0, None if ok else 0.0) for ok in hosted(thr, gpus, counts).ravel()] + [(0.0, None)]
    cost = np.zeros(n * k + 1)
    cost[-1] = -1.0
    res = linprog(cost, A_ub=np.vstack((level, time, cap)), b_ub=np.concatenate((np.zeros(n), np.ones(n), counts)),
                  bounds=bounds, method="highs")
    assert res.status == 0
    return -float(res.fun)


def lexicographic_reference(thr: np.ndarray, gpus: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """The lexicographic max-min levels by brute force: raise the unfrozen jobs' common level as far
    as it goes, then freeze every job that cannot go above it, found by maximizing each job's own
    normalized throughput with the others held (one LP per job, no duals)."""
    n, k = thr.shape
    a = scaled(thr, gpus, counts)
    ok = hosted(thr, gpus, counts).ravel()
    base = np.zeros((n + k, n * k))
    for i in range(n):
        base[i, i * k:(i + 1) * k] = 1.0
        base[n:, i * k:(i + 1) * k] = gpus[i] * np.eye(k)
    rhs = np.concatenate((np.ones(n), counts))
    rows = np.zeros((n, n * k))
    for i in range(n):
        rows[i, i * k:(i + 1) * k] = -a[i]
    frozen, level = np.zeros(n, dtype=bool), np.zeros(n)

    def solve(cost: np.ndarray, floors: np.ndarray, with_t: bool) -> Any:
        extra = np.zeros((n, 1)) if not with_t else (~frozen).astype(float)[:, None]
        a_ub = np.vstack((np.hstack((rows, extra)), np.hstack((base, np.zeros((n + k, 1))))))
        b_ub = np.concatenate((np.where(frozen | ~with_t, -floors, 0.0), rhs))
        bounds = [(0.0, None if h else 0.0) for h in ok] + [(0.0, None)]
        return linprog(cost, A_ub=a_ub, b_ub=b_ub, bounds=bounds, method="highs")

    while not frozen.all():
        cost = np.zeros(n * k + 1)
        cost[-1] = -1.0
        t = float(solve(cost, level, True).x[-1])
        floors = np.where(frozen, level, t)
        for i in np.flatnonzero(~frozen):
            own = np.zeros(n * k + 1)
            own[i * k:(i + 1) * k] = -a[i]
            best = -float(solve(own, floors, False).fun)
            if best <= t * (1 + 1e-7) + 1e-12:
                frozen[i], level[i] = True, t
    return level


# --- the allocation -----------------------------------------------------------------------------


@given(gpus=st.lists(st.sampled_from([1, 2, 4, 8]), min_size=1, max_size=60), speed=st.floats(0.01, 10.0))
def test_on_one_type_the_allocation_is_water_filling(gpus: list[int], speed: float) -> None:
    w = np.array(gpus)
    result = max_min_allocation(np.full((w.size, 1), speed), w, ClusterTypes.single(32))
    np.testing.assert_allclose(result.x[:, 0], water_filling(w, 32), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(result.normalized, np.minimum(w, w * water_filling(w, 32)), rtol=1e-9)


@settings(max_examples=40)
@given(instance=instances())
def test_the_allocation_is_feasible_and_beats_simple_feasible_ones(instance: Any) -> None:
    thr, gpus, counts = instance
    result = max_min_allocation(thr, gpus, counts)
    assert_feasible(result.x, thr, gpus, counts)
    np.testing.assert_allclose(result.normalized, normalized_throughputs(result.x, thr, gpus, counts), rtol=1e-12)
    best = float(result.normalized.min())
    # The optimum of the max-min LP, solved independently: the lexicographic solution attains it.
    assert best == pytest.approx(max_min_value(thr, gpus, counts), rel=1e-7)
    # ... so no feasible allocation does better: the equal share and random ones.
    rng = np.random.default_rng(len(gpus))
    others = [equal_share(thr, gpus, counts)]
    for _ in range(20):
        x = np.where(hosted(thr, gpus, counts), rng.dirichlet(np.ones(thr.shape[1] + 1), size=len(gpus))[:, 1:], 0.0)
        others.append(x * min(1.0, float((counts / np.maximum(gpus @ x, 1e-300)).min())))
    for x in others:
        assert_feasible(x, thr, gpus, counts)
        assert best >= float(normalized_throughputs(x, thr, gpus, counts).min()) * (1 - 1e-9)


@settings(max_examples=25)
@given(instance=instances(max_jobs=7))
def test_the_allocation_is_the_lexicographic_max_min(instance: Any) -> None:
    thr, gpus, counts = instance
    result = max_min_allocation(thr, gpus, counts)
    np.testing.assert_allclose(result.normalized, lexicographic_reference(thr, gpus, counts), rtol=1e-6)


def test_jobs_saturating_one_after_the_other_take_few_lps() -> None:
    # A light load: 40 one-GPU jobs of distinct speeds on 64 V100s and 64 K80s. Every job saturates
    # (all its time on its best type) at its own level; progressive filling one saturation per LP
    # would take 40 LPs, the binary search over the caps takes a handful.
    rng = np.random.default_rng(0)
    thr = np.column_stack((rng.uniform(1.0, 4.0, 40), np.ones(40)))
    result = max_min_allocation(thr, np.ones(40, dtype=int), [64, 64])
    np.testing.assert_allclose(result.x, np.column_stack((np.ones(40), np.zeros(40))), atol=1e-9)
    assert result.lps <= 4


def test_two_jobs_by_hand() -> None:
    # One V100, m K80s; one-GPU jobs: A runs 4x faster on the V100 (throughputs 4, 1), B 1.2x (1.2, 1).
    # Proportional split: rows count_k / C, so prop_A = (4 + m) / (1 + m), prop_B = (1.2 + m) / (1 + m).
    # Every K80 gang fits, so at the optimum both jobs run all the time and the V100 is always busy:
    # A has p of the V100 and 1 - p of a K80, B the rest, and the max-min equalizes
    #   (1 + 3p) (1 + m) / (4 + m) = (1.2 - 0.2p) (1 + m) / (1.2 + m)
    #   p = (4.8 + 1.2m - 1.2 - m) / (3 (1.2 + m) + 0.2 (4 + m)) = (3.6 + 0.2m) / (4.4 + 3.2m).
    # m = 1: p = 1/2 (the proportional split itself: both levels 1); m = 3: p = 4.2/14 = 3/10, level
    # (1 + 0.9) * 4 / 7 = 38/35 for both, above 1: both jobs do better than under the proportional
    # split, which leaves half of the V100 idle. The V100 does NOT go mostly to A, the job that gains
    # more: A's reference throughput grows with its speed-up too, and A > 1/2 would need
    # (1.2 - 4)(m - 1) > 0 (solve p > 1/2), impossible for m >= 1.
    thr = np.array([[4.0, 1.0], [1.2, 1.0]])
    for m in (1, 2, 3, 4):
        result = max_min_allocation(thr, [1, 1], [1, m])
        p = (3.6 + 0.2 * m) / (4.4 + 3.2 * m)
        np.testing.assert_allclose(result.x, [[p, 1 - p], [1 - p, p]], atol=1e-9)
        level = (1 + 3 * p) * (1 + m) / (4 + m)
        np.testing.assert_allclose(result.normalized, [level, level], rtol=1e-9)
        assert p <= 0.5 + 1e-12
    np.testing.assert_allclose(max_min_allocation(thr, [1, 1], [1, 3]).normalized, [38 / 35, 38 / 35], rtol=1e-9)

    # Through the rounds, with epoch times of that speed ratio: A on the V100 3 rounds of 10.
    policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 1, "k80": 3}))
    policy.add_job("A", 1, {"v100": {32.0: 25.0}, "k80": {32.0: 100.0}}, 50)
    policy.add_job("B", 1, {"v100": {32.0: 100.0}, "k80": {32.0: 120.0}}, 50)
    placed = [policy.next_round() for _ in range(10)]
    assert all(sorted(r.values()) == ["k80", "v100"] for r in placed)
    assert sum(r["A"] == "v100" for r in placed) == 3


def test_a_gang_wider_than_a_type_is_not_placed_there() -> None:
    # A 4-GPU job on {v100: 2, k80: 8}: only the K80s can host it, however fast the V100 would be.
    result = max_min_allocation([[10.0, 1.0], [10.0, 1.0]], [4, 1], [2, 8])
    assert result.x[0, 0] == 0.0 and result.x[0, 1] > 0
    policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 2, "k80": 8}))
    policy.add_job("wide", 4, {"v100": {8.0: 10.0}, "k80": {8.0: 100.0}}, 5)
    assert policy.next_round() == {"wide": "k80"}
    assert policy.allocation().throughputs[0].tolist() == [0.0, 0.01]


# --- one type: the homogeneous max-min fairness -------------------------------------------------


@dataclasses.dataclass(eq=False)
class WaterFilled:
    """An allocation that gives Gavel's rounds over the types the homogeneous allocation
    (`water_filling`) instead of the LP's, held as long as the LP's, and records how far the LP's
    allocation was from it."""

    gap: float = 0.0

    def __call__(self, state: RoundState) -> Allocated:
        lp = allocate_max_min_over_types(state)
        exact = water_filling(state.col("gpus"), state.cluster.total)[:, None]
        self.gap = max(self.gap, float(np.abs(lp.x - exact).max()))
        return dataclasses.replace(lp, x=exact)


def test_on_one_type_the_rounds_are_the_homogeneous_max_min_fairness() -> None:
    # Same allocation -> the very same rounds (jobs and their order) as MaxMinFairness, whole run;
    # and along it the LP's allocation is water-filling to rounding.
    trace = load_workload("shockwave_120jobs_32gpus").head(40)
    typed = dataclasses.replace(trace, cluster=ClusterTypes.single(trace.gpus))
    allocator = WaterFilled()
    mechanism = GavelRounds(allocator, over_types=True)
    policy = HeterogeneousMaxMinFairness(typed.cluster, trace.round_s, mechanism=mechanism)
    ours = simulate(typed, policy)
    homogeneous = simulate(trace, MaxMinFairness(trace.gpus, trace.round_s))
    assert [r.jobs for r in ours.rounds] == [r.jobs for r in homogeneous.rounds]
    assert all(set(r.types) <= {"v100"} for r in ours.rounds)
    np.testing.assert_array_equal(ours.finish_s, homogeneous.finish_s)
    assert allocator.gap < 1e-12


def test_on_one_type_the_policy_allocates_as_max_min_fairness() -> None:
    policy = HeterogeneousMaxMinFairness(ClusterTypes.single(32))
    gangs = [1, 2, 4, 8, 8, 8, 4, 2, 1, 1, 2, 4]
    for i, g in enumerate(gangs):
        policy.add_job(i, g, {"v100": {16.0: 30.0 + i, 32.0: 20.0 + i}}, 10)
    current = policy.allocation()
    np.testing.assert_allclose(current.x[:, 0], water_filling(np.array(gangs), 32), rtol=1e-9)
    chosen = policy.next_round()
    reference = MaxMinFairness(32)
    for i, g in enumerate(gangs):
        reference.add_job(i, g, {16.0: 30.0 + i, 32.0: 20.0 + i}, 10)
    assert list(chosen) == reference.next_round()


# --- mixed clusters -----------------------------------------------------------------------------


def mixed_workload() -> Any:
    trace = load_workload("shockwave_120jobs_32gpus").head(30)
    return dataclasses.replace(trace, cluster=ClusterTypes({"v100": 12, "p100": 10, "k80": 10}), gpus=32)


class Fresh(HeterogeneousMaxMinFairness):
    reuse_allocation = False


def run_within_counts(workload: Any, policy: HeterogeneousMaxMinFairness) -> Any:
    """`policy` simulated on `workload`: every job finishes and leaves, and no round uses more GPUs
    of a type than the cluster has; the simulation."""
    sim = simulate(workload, policy)
    assert np.isfinite(sim.finish_s).all()
    assert sorted(policy.completed) == sorted(job.id for job in workload.jobs) and policy.jobs == []
    gang = {job.id: job.gpus for job in workload.jobs}
    for r in sim.rounds:
        used = {t: sum(gang[j] for j, u in zip(r.jobs, r.types, strict=True) if u == t) for t in workload.cluster}
        assert all(used[t] <= workload.cluster[t] for t in workload.cluster)
    return sim


def test_a_mixed_cluster_runs_to_the_end_within_each_types_count() -> None:
    workload = mixed_workload()
    policy = HeterogeneousMaxMinFairness(workload.cluster, workload.round_s)
    assert isinstance(policy, ClusterAware)
    sim = run_within_counts(workload, policy)
    assert {u for r in sim.rounds for u in r.types} == {"v100", "p100", "k80"}
    # Reusing the allocation while nothing changed gives the schedule of a fresh solve every round.
    fresh = simulate(workload, Fresh(workload.cluster, workload.round_s))
    assert [(r.jobs, r.types) for r in fresh.rounds] == [(r.jobs, r.types) for r in sim.rounds]


@st.composite
def event_runs(draw: st.DrawFn) -> tuple[dict[str, int], list[tuple[Any, ...]]]:
    counts = {t: draw(st.integers(1, 6)) for t in GPU_TYPES if draw(st.booleans())} or {"v100": 4}
    events: list[tuple[Any, ...]] = []
    for job in range(draw(st.integers(1, 12))):
        types = [t for t in counts if draw(st.booleans())] or [next(iter(counts))]
        gpus = draw(st.sampled_from([g for g in (1, 2, 4) if g <= max(counts[t] for t in types)]))
        sizes = draw(st.lists(st.sampled_from([16.0, 32.0, 64.0]), min_size=1, max_size=2, unique=True))
        regimes = {t: {b: draw(st.floats(5.0, 200.0)) for b in sizes} for t in types}
        events.append(("add", job, gpus, regimes, draw(st.integers(1, 6)), draw(st.integers(0, 3))))
    return counts, events


@settings(max_examples=30)
@given(run=event_runs())
def test_random_runs_place_whole_gangs_on_hosting_types_and_conserve_work(run: Any) -> None:
    counts, events = run
    cluster = ClusterTypes(counts)
    policy = HeterogeneousMaxMinFairness(cluster, 100.0)
    twin = HeterogeneousMaxMinFairness(cluster, 100.0)
    info: dict[Hashable, tuple[int, dict[str, dict[float, float]], list[float]]] = {}
    pending = sorted(events, key=lambda e: e[5])
    left: dict[Hashable, int] = {}
    for r in range(40):
        for _, job, gpus, regimes, epochs, at in pending:
            if at == r:
                for p in (policy, twin):
                    p.add_job(job, gpus, regimes, epochs)
                info[job] = (gpus, regimes, sorted(next(iter(regimes.values()))))
                left[job] = epochs
        answer = policy.next_round()
        assert twin.next_round() == answer  # deterministic
        if len(counts) == 1:  # on one type, the jobs' ids
            assert isinstance(answer, list)
            answer = dict.fromkeys(answer, next(iter(counts)))
        used = dict.fromkeys(counts, 0)
        for job, gpu_type in answer.items():
            assert gpu_type in info[job][1]  # only types it was told of
            used[gpu_type] += info[job][0]
        assert all(used[t] <= counts[t] for t in counts)
        # Work conservation: no waiting job's gang fits the idle GPUs of a type that hosts it.
        for job in policy.jobs:
            if job not in answer:
                gpus, regimes, _ = info[job]
                assert all(gpus > counts[t] - used[t] for t in regimes)
        # Progress: each job that ran did one epoch at some batch size of its regimes.
        for job in answer:
            size = info[job][2][(r + hash(job)) % len(info[job][2])]
            for p in (policy, twin):
                p.report_progress(job, [size])
            left[job] -= 1
        if r == 7 and policy.jobs:
            gone = policy.jobs[0]
            for p in (policy, twin):
                p.remove_job(gone)
    for job in policy.completed:
        assert left[job] == 0


def test_an_empty_policy_answers_nothing_and_the_registry_builds_it() -> None:
    policy = BASELINES["heterogeneous_max_min_fairness"](ClusterTypes({"v100": 2, "k80": 2}), 60.0, 3)
    assert policy.next_round() == {} and policy.clock_s == 60.0
    assert policy.allocation().x.shape == (0, 2)


def test_arrays_handed_out_are_read_only() -> None:
    policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 2, "k80": 2}))
    policy.add_job("a", 1, {"v100": {32.0: 10.0}, "k80": {32.0: 30.0}}, 3)
    current = policy.allocation()
    for array in (current.x, current.normalized, current.throughputs):
        with pytest.raises(ValueError, match="read-only"):
            array[0] = 1.0
    result = max_min_allocation([[1.0, 2.0]], [1], [2, 2])
    with pytest.raises(ValueError, match="read-only"):
        result.x[0, 0] = 0.5


# --- bad input ----------------------------------------------------------------------------------

GOOD = {"v100": {32.0: 10.0, 64.0: 7.0}, "k80": {32.0: 30.0, 64.0: 20.0}}


@pytest.mark.parametrize(("args", "pattern"), [
    (("a", 0, GOOD, 3), r"gpus of job 'a' must be a positive whole number, got 0"),
    (("a", True, GOOD, 3), r"gpus of job 'a' must be a positive whole number"),
    (("a", 1.5, GOOD, 3), r"gpus of job 'a' must be a positive whole number"),
    (("a", 1, GOOD, 0), r"epochs of job 'a' must be a positive whole number, got 0"),
    (("a", 1, {}, 3), r"regimes of job 'a' must be a mapping of at least one GPU type of the cluster \(v100, k80\)"),
    (("a", 1, [("v100", {32.0: 1.0})], 3), r"regimes of job 'a' must be a mapping of at least one GPU type"),
    (("a", 1, {"p100": {32.0: 10.0}}, 3), r"each key of regimes of job 'a' must be a GPU type of the cluster "
                                           r"\(v100, k80\), got 'p100'"),
    (("a", 1, {"v100": {}}, 3), r"regimes\['v100'\] of job 'a' must be a non-empty mapping of batch sizes to seconds"),
    (("a", 1, {"v100": {32.0: -1.0}}, 3),
     r"regimes\['v100'\]\[32.0\] of job 'a' must be a finite number of seconds per epoch > 0, got -1.0"),
    (("a", 1, {"v100": {32.0: float("inf")}}, 3), r"regimes\['v100'\]\[32.0\] of job 'a' must be a finite number"),
    (("a", 1, {"v100": {"32": 10.0}}, 3),
     r"each batch size of regimes\['v100'\] of job 'a' must be a finite number > 0, got '32'"),
    (("a", 1, {"v100": {32.0: 10.0}, "k80": {64.0: 10.0}}, 3),
     r"regimes of job 'a' list batch sizes \[64.0\] on 'k80' but \[32.0\] on 'v100'; every type must list"),
    (("a", 8, GOOD, 3), r"gpus of job 'a' is 8, more than every type its regimes name has \(v100: 4, k80: 6\)"),
])
@pytest.mark.parametrize("policy_class", [HeterogeneousMaxMinFairness, HeterogeneousStaticMarket])
def test_bad_jobs_are_refused_naming_the_job_and_field(args: tuple[Any, ...], pattern: str,
                                                       policy_class: type[HeterogeneousMaxMinFairness]) -> None:
    policy = policy_class(ClusterTypes({"v100": 4, "k80": 6}))
    with pytest.raises(ValidationError, match=pattern):
        policy.add_job(*args)
    assert policy.jobs == []


@pytest.mark.parametrize("policy_class", [HeterogeneousMaxMinFairness, HeterogeneousStaticMarket])
def test_bad_calls_are_refused(policy_class: type[HeterogeneousMaxMinFairness]) -> None:
    with pytest.raises(ValidationError, match=r"capacity must be a positive whole number of GPUs or a "
                                              r"vfm\.cluster\.ClusterTypes"):
        policy_class({"v100": 4})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="round_s must be a finite number > 0"):
        policy_class(ClusterTypes({"v100": 4}), 0.0)
    policy = policy_class(ClusterTypes({"v100": 4, "k80": 6}))
    policy.add_job("a", 1, GOOD, 3)
    with pytest.raises(ValidationError, match="job 'a' is already in the policy"):
        policy.add_job("a", 1, GOOD, 3)
    with pytest.raises(ValidationError, match="job 'b' is not in the policy"):
        policy.remove_job("b")
    with pytest.raises(ValidationError, match="job 'b' is not in the policy"):
        policy.report_progress("b", [32.0])
    with pytest.raises(ValidationError, match=r"batch_sizes\[0\] job 'a' reported must be a batch size of its "
                                              r"regimes \(\[32.0, 64.0\]\), got 16.0"):
        policy.report_progress("a", [16.0])
    with pytest.raises(ValidationError, match=r"the epochs job 'a' reported must be a whole number of epochs <= 3 "
                                              r"\(the epochs it has left\), got 4"):
        policy.report_progress("a", [32.0] * 4)
    policy.report_progress("a", [64.0])
    assert policy.allocation().throughputs.tolist() == [[1 / 7.0, 1 / 20.0]]
    policy.report_progress("a", [32.0, 32.0])
    assert policy.completed == ["a"] and policy.jobs == []


@pytest.mark.parametrize(("args", "pattern"), [
    (([[1.0, -1.0]], [1], [2, 2]), r"throughputs\[0, 1\] must be a finite number >= 0"),
    (([[1.0, 1.0]], [1, 1], [2, 2]), r"gpus must have shape \(1\)"),
    (([[1.0, 1.0]], [0], [2, 2]), r"gpus\[0\] must be a positive whole number"),
    (([[1.0, 1.0]], [1], [2, 0]), r"counts\[1\] must be a positive whole number of GPUs, got 0"),
    (([[1.0, 0.0]], [4], [2, 8]), r"job 0 \(row 0 of throughputs\) has no type that can host it"),
    (([[np.nan, 1.0]], [1], [2, 2]), r"throughputs contains NaN"),
])
def test_bad_instances_are_refused(args: tuple[Any, ...], pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        max_min_allocation(*args)


# --- the per-type static market -----------------------------------------------------------------


def log_welfare(x: np.ndarray, thr: np.ndarray, epochs: np.ndarray, done: np.ndarray, round_s: float) -> float:
    """The market's objective, ``sum_i log(sum_k r_ik x_ik / E_i)``, written out here."""
    rate = np.minimum(round_s * thr, (epochs - done)[:, None])
    return float(np.log((rate * x).sum(axis=1) / epochs).sum())


def one_type_jobs(seed: int, n: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(gangs, epochs, epochs done, seconds per epoch)`` of `n` random jobs."""
    rng = np.random.default_rng(seed)
    epochs = rng.integers(5, 60, n)
    return (rng.choice([1, 2, 4, 8], n), epochs, np.floor(rng.uniform(0.0, 1.0, n) * epochs).astype(int),
            rng.uniform(20.0, 300.0, n))


@pytest.mark.parametrize("seed", range(4))
def test_on_one_type_the_policy_allocates_as_the_static_market(seed: int) -> None:
    # On one good, utility r_i y_i / E_i is proportional to the time bought, so the equal budgets
    # buy equal GPU shares, capped by gangs: water-filling, as StaticMarket's.
    gangs, epochs, _, seconds = one_type_jobs(seed, n=16)
    ours = HeterogeneousStaticMarket(ClusterTypes.single(24), 120.0)
    theirs = StaticMarket(24, 120.0)
    for i, (g, e, s) in enumerate(zip(gangs.tolist(), epochs.tolist(), seconds.tolist(), strict=True)):
        ours.add_job(i, g, {"v100": {32.0: s}}, e)
        theirs.add_job(i, g, {32.0: s}, e)
    x = ours.allocation().x[:, 0]
    np.testing.assert_allclose(x, theirs.mechanism.allocate(theirs.state()).x, atol=1e-6)
    np.testing.assert_allclose(x, water_filling(gangs, 24), atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_on_one_type_with_epochs_done_the_market_is_the_per_period_market(seed: int) -> None:
    # StaticMarket's computation (`vfm.solve_per_period` of the one-round window market: no base
    # utility, the rate capped by the epochs left), against ours with epochs done; and the
    # market's KKT conditions: a job's bang per GPU a_i / (w_i U_i) equals the price p where
    # 0 < y_i < 1, is at most p where y_i = 0 and at least p where y_i = 1.
    gangs, epochs, done, seconds = one_type_jobs(seed)
    thr = (1.0 / seconds)[:, None]
    result = static_market_allocation(thr, gangs, [16], epochs, done, 120.0)
    assert result.status == Status.OPTIMAL
    rate = np.minimum(120.0 / seconds, epochs - done)
    window = window_market(gangs, epochs, done, rate[:, None], 16.0)
    per_period = np.asarray(window.schedule(vfm.solve_per_period(window.market))[:, 0])
    np.testing.assert_allclose(result.x[:, 0], per_period, atol=1e-6)
    y = result.x[:, 0]
    a = rate / epochs
    np.testing.assert_allclose(result.utilities, a * y, rtol=1e-12)
    bang = a / (gangs * result.utilities)
    price = float(result.prices[0])
    inside = (y > 1e-4) & (y < 1 - 1e-4)
    np.testing.assert_allclose(bang[inside], price, rtol=1e-3)
    assert (bang[y >= 1 - 1e-4] >= price * (1 - 1e-3)).all()
    assert gangs @ y == pytest.approx(16.0, rel=1e-7)  # every job wants more: no GPU idle


@settings(max_examples=25, deadline=None)
@given(instance=instances(), seed=st.integers(0, 2**31))
def test_the_market_allocation_is_feasible(instance: Any, seed: int) -> None:
    thr, gpus, counts = instance
    rng = np.random.default_rng(seed)
    epochs = rng.integers(1, 50, len(gpus))
    done = np.floor(rng.uniform(0.0, 1.0, len(gpus)) * epochs)
    result = static_market_allocation(thr, gpus, counts, epochs, done, 120.0)
    assert result.status in (Status.OPTIMAL, Status.INACCURATE)
    assert_feasible(result.x, thr, gpus, counts)  # capacity, one type per job (rows <= 1), hosting
    assert (result.x <= 1.0).all() and (result.prices >= 0).all()
    assert (result.utilities <= 1 + 1e-12).all()
    # Optimal: no better than the equal share, and than a few random feasible allocations.
    best = log_welfare(result.x, thr, epochs, done, 120.0)
    for _ in range(5):
        x = np.where(hosted(thr, gpus, counts), rng.dirichlet(np.ones(thr.shape[1] + 1), size=len(gpus))[:, 1:], 0.0)
        x *= min(1.0, float((counts / np.maximum(gpus @ x, 1e-300)).min()))
        assert best >= log_welfare(x, thr, epochs, done, 120.0) - 1e-7


def test_the_market_gives_the_fast_type_to_the_job_that_gains_from_it() -> None:
    # Job A runs 4x faster on the V100 than on a K80 (25 s vs 100 s an epoch), job B equally fast on
    # both (100 s); 1000 epochs each, none done, so a round is worth r_ik / E_i: A (4.8, 1.2) / 1000,
    # B (1.2, 1.2) / 1000, and U_A = (4.8 p + 1.2 q) / 1000 with p, q A's V100 and K80 fractions.
    # One V100 and three K80s: the K80s are in excess, so their price is 0 and both jobs run the
    # whole round. KKT: B's marginal utility is the same on both types, so at a V100 price > 0 it buys
    # none; A's is 4.8 / U_A per V100 round against 1.2 / U_A per K80 round (free; utilities in
    # thousandths), so it takes the whole V100 at any V100 price below 3.6 / U_A = 0.75. A has all of
    # the V100. (Gavel's max-min, by contrast, gives most of the V100 to the job that gains less:
    # test_two_jobs_by_hand.)
    thr = np.array([[1 / 25.0, 1 / 100.0], [1 / 100.0, 1 / 100.0]])
    result = static_market_allocation(thr, [1, 1], [1, 3], [1000, 1000], [0, 0], 120.0)
    np.testing.assert_allclose(result.x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-6)
    assert result.prices[1] == pytest.approx(0.0, abs=1e-6) and 0.0 <= result.prices[0] <= 0.75 + 1e-6
    # One V100 and one K80, B twice: now both types are scarce. The two Bs are alike; with all of
    # the K80 going to them (A values a K80 round 4x less than a V100 round), A has p of the V100
    # and each B (1 - p) / 2 of it and 1/2 of the K80: maximize log(4p) + 2 log(1 - p / 2), so
    # 1 / p = 1 / (1 - p / 2), p = 2/3. Check the prices (marginal log utility per GPU-round): the
    # V100's is A's a_AV / U_A = 4.8 / 3.2 = 3/2 and a B's 1.2 / 0.8 = 3/2 alike (utilities in
    # thousandths); the K80's is a B's 3/2, above A's a_AK / U_A = 1.2 / 3.2 = 3/8, so A buys no K80.
    # Most of the V100 goes to A.
    thr3 = np.array([[1 / 25.0, 1 / 100.0], [1 / 100.0, 1 / 100.0], [1 / 100.0, 1 / 100.0]])
    result = static_market_allocation(thr3, [1, 1, 1], [1, 1], [1000] * 3, [0] * 3, 120.0)
    np.testing.assert_allclose(result.x, [[2 / 3, 0.0], [1 / 6, 1 / 2], [1 / 6, 1 / 2]], atol=1e-6)
    np.testing.assert_allclose(result.prices, [1.5, 1.5], rtol=1e-6)
    # Through the policy: A runs on the V100 in the first round (a first round of 1 V100 + 3 K80s).
    policy = HeterogeneousStaticMarket(ClusterTypes({"v100": 1, "k80": 3}))
    policy.add_job("A", 1, {"v100": {32.0: 25.0}, "k80": {32.0: 100.0}}, 1000)
    policy.add_job("B", 1, {"v100": {32.0: 100.0}, "k80": {32.0: 100.0}}, 1000)
    assert policy.next_round() == {"A": "v100", "B": "k80"}
    assert policy.market is not None and policy.solves == 1


class FreshMarket(HeterogeneousStaticMarket):
    reuse_allocation = False


def test_the_static_market_runs_to_the_end_on_a_mixed_cluster() -> None:
    trace = load_workload("shockwave_120jobs_32gpus").head(16)
    workload = dataclasses.replace(trace, cluster=ClusterTypes({"v100": 12, "p100": 10, "k80": 10}), gpus=32)
    policy = BASELINES["heterogeneous_static_market"](workload.cluster, workload.round_s, 0)
    assert isinstance(policy, HeterogeneousStaticMarket) and isinstance(policy, ClusterAware)
    sim = run_within_counts(workload, policy)
    assert policy.solves > 0 and policy.lps == 0
    # Reusing the allocation while nothing changed gives the schedule of a fresh solve every round.
    fresh = simulate(workload, FreshMarket(workload.cluster, workload.round_s))
    assert [(r.jobs, r.types) for r in fresh.rounds] == [(r.jobs, r.types) for r in sim.rounds]


def test_an_empty_static_market_answers_nothing() -> None:
    policy = HeterogeneousStaticMarket(ClusterTypes({"v100": 2, "k80": 2}), 60.0)
    assert policy.next_round() == {} and policy.clock_s == 60.0
    assert policy.allocation().x.shape == (0, 2)


@pytest.mark.parametrize("solution", [
    Solution(x=None, prices=None, status=Status.ERROR, message="broken", iterations=3, solve_time=0.0, accuracy=1e-9),
    Solution(x=np.full((1, 2), np.nan), prices=np.zeros(2), status=Status.INACCURATE, message="stalled",
             iterations=3, solve_time=0.0, accuracy=1e-9),
    Solution(x=np.full((1, 2), 0.5), prices=np.zeros(2), status=Status.ITERATION_LIMIT, message="out of iterations",
             iterations=80, solve_time=0.0, accuracy=1e-9),
])
def test_a_failed_market_solve_raises_instead_of_scheduling(solution: Solution, monkeypatch: Any) -> None:
    # The market reaches the planning backend through the solver registry: a stand-in registered
    # under its name answers.
    from vfm.solvers import registry

    standing = registry._REGISTRY["saa-ipm"]

    @dataclasses.dataclass(frozen=True)
    class Answers:
        name: str = standing.name
        capabilities: Any = standing.capabilities

        def is_installed(self) -> bool:
            return True

        def solve(self, program: Any, **options: Any) -> Solution:
            assert options == {"tol": 1e-9}
            return solution

    monkeypatch.setitem(registry._REGISTRY, "saa-ipm", Answers())
    policy = HeterogeneousStaticMarket(ClusterTypes({"v100": 2, "k80": 2}))
    policy.add_job("a", 1, {"v100": {32.0: 10.0}, "k80": {32.0: 30.0}}, 3)
    with pytest.raises(SolverError, match=f"saa-ipm ended {solution.status.value}: {solution.message}") as info:
        policy.next_round()
    assert info.value.status == str(solution.status) and info.value.result is solution


@pytest.mark.parametrize(("args", "pattern"), [
    (([[1.0, 1.0]], [1], [2, 2], [0], [0]), r"epochs\[0\] \(job 0\) must be > 0, got 0"),
    (([[1.0, 1.0]], [1], [2, 2], [5], [5]), r"epochs_done\[0\] \(job 0\) must be in \[0, epochs\)"),
    (([[1.0, 1.0]], [1], [2, 2], [5], [-1]), r"epochs_done\[0\] \(job 0\) must be in \[0, epochs\)"),
    (([[1.0, 1.0]], [1], [2, 2], [5, 5], [0]), r"epochs must have shape \(1\)"),
    (([[1.0, 1.0]], [1], [2, 2], [5], [0], 0.0), r"round_s must be a finite number > 0"),
    (([[1.0, -1.0]], [1], [2, 2], [5], [0]), r"throughputs\[0, 1\] must be a finite number >= 0"),
    (([[1.0, 0.0]], [4], [2, 8], [5], [0]), r"job 0 \(row 0 of throughputs\) has no type that can host it"),
    (([[np.nan, 1.0]], [1], [2, 2], [5], [0]), r"throughputs contains NaN"),
])
def test_bad_market_instances_are_refused(args: tuple[Any, ...], pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        static_market_allocation(*args)


# --- Gavel's other heterogeneity-aware policies -------------------------------------------------

NEW_POLICIES = [HeterogeneousFinishTimeFairness, HeterogeneousMaxSumThroughput, HeterogeneousMinTotalDuration]


def fresh_jobs(seed: int, n: int = 12) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(gangs, epochs, epochs done, seconds per epoch, arrival seconds)`` of `n` random jobs."""
    gangs, epochs, done, seconds = one_type_jobs(seed, n)
    rng = np.random.default_rng(seed + 100)
    return gangs, epochs, done, seconds, rng.uniform(0.0, 3000.0, n)


@pytest.mark.parametrize("seed", range(4))
def test_on_one_type_finish_time_fairness_is_the_homogeneous_one(seed: int) -> None:
    # One type: effective throughput x_i / s_i, so L_i / eff = R_i / x_i (R_i = L_i s_i), the
    # proportional mix is the type itself and the isolated time (d_i + R_i) / share is the
    # one-type `fair`: the same program as ftf_allocation's.
    gangs, epochs, done, seconds, elapsed = fresh_jobs(seed)
    left = (epochs - done).astype(float)
    done_s = done * seconds
    ours = finish_time_fairness_allocation(1.0 / seconds[:, None], gangs, [24], left, elapsed, done_s)
    share = np.minimum(1.0, 24 / (gangs.size * gangs))
    x, rho = ftf_allocation(left * seconds, elapsed, (done_s + left * seconds) / share, gangs, 24)
    np.testing.assert_allclose(ours.x[:, 0], x, atol=1e-6)
    assert ours.rho == pytest.approx(rho, rel=1e-6)
    np.testing.assert_allclose(ours.ratios, ours.rho, rtol=1e-9)


@pytest.mark.parametrize("seed", range(4))
def test_on_one_type_max_sum_throughput_is_the_fractional_knapsack(seed: int) -> None:
    # The LP's optimum is unique when the densities c_i / w_i differ (random reals here).
    gangs, epochs, _, seconds = one_type_jobs(seed, n=16)
    value = 1.0 / (seconds * epochs)
    ours = max_sum_throughput_allocation(value[:, None], gangs, [24])
    reference = MaxSumThroughput(24)
    for i in range(gangs.size):
        reference.add_job(i, int(gangs[i]), {32.0: float(seconds[i])}, int(epochs[i]))
    reference.next_round()
    np.testing.assert_allclose(ours.x[:, 0], reference.last_step.allocation, atol=1e-6)


@pytest.mark.parametrize("seed", range(4))
def test_on_one_type_min_total_duration_is_the_homogeneous_one(seed: int) -> None:
    # Tight rows on one type: x_i = R_i / M with M = max(max R, sum w R / G), MinTotalDuration's.
    gangs, epochs, done, seconds = one_type_jobs(seed, n=16)
    left = (epochs - done).astype(float)
    ours = min_total_duration_allocation(1.0 / seconds[:, None], gangs, [24], left)
    reference = MinTotalDuration(24)
    for i in range(gangs.size):
        reference.add_job(i, int(gangs[i]), {32.0: float(seconds[i])}, int(epochs[i]))
        if done[i]:
            reference.report_progress(i, [32.0] * int(done[i]))
    reference.next_round()
    np.testing.assert_allclose(ours.x[:, 0], reference.last_step.allocation, atol=1e-6)
    remaining = left * seconds
    assert ours.makespan_s == pytest.approx(max(remaining.max(), gangs @ remaining / 24), rel=1e-6)


@pytest.mark.parametrize("policy_class", NEW_POLICIES)
def test_on_one_type_the_new_policies_allocate_as_the_homogeneous_ones(
        policy_class: type[HeterogeneousMaxMinFairness]) -> None:
    homogeneous = {HeterogeneousFinishTimeFairness: FinishTimeFairness, HeterogeneousMaxSumThroughput: MaxSumThroughput,
                   HeterogeneousMinTotalDuration: MinTotalDuration}[policy_class]
    ours, reference = policy_class(ClusterTypes.single(24)), homogeneous(24)
    gangs, epochs, _, seconds = one_type_jobs(7, n=14)
    for i in range(gangs.size):
        ours.add_job(i, int(gangs[i]), {"v100": {32.0: float(seconds[i])}}, int(epochs[i]))
        reference.add_job(i, int(gangs[i]), {32.0: float(seconds[i])}, int(epochs[i]))
    # A few rounds: elapsed time and epochs done enter FTF and min-total-duration. The allocations
    # are compared, not the rounds: many jobs' fractions are equal in exact arithmetic (on a fresh
    # cluster FTF's x_i = share_i / rho depends on the gang only), and the two computations round
    # them differently in the last bits, which reorders the ties Gavel's priorities break by x.
    for _ in range(3):
        ours.next_round()
        ran = reference.next_round()
        np.testing.assert_allclose(ours.allocation().x[:, 0], reference.last_step.allocation, atol=1e-6)
        for job in ran:  # the same progress to both
            if int(epochs[job]) - int(reference.table.col("done")[reference.table.row[job]]) > 1:
                ours.report_progress(job, [32.0])
                reference.report_progress(job, [32.0])


@settings(max_examples=25, deadline=None)
@given(instances())
def test_the_new_allocations_are_feasible(instance: Any) -> None:
    thr, gpus, counts = instance
    n = thr.shape[0]
    left = np.arange(1.0, n + 1.0)
    results = [finish_time_fairness_allocation(thr, gpus, counts, left, np.linspace(0.0, 500.0, n), 10.0 * left).x,
               max_sum_throughput_allocation(thr, gpus, counts).x,
               min_total_duration_allocation(thr, gpus, counts, left).x]
    for x in results:
        assert_feasible(x, thr, gpus, counts)
    # Max-sum-throughput is optimal: no simple feasible allocation beats it.
    masked = np.where(hosted(thr, gpus, counts), thr, 0.0)
    assert (masked * results[1]).sum() >= (masked * equal_share(thr, gpus, counts)).sum() * (1 - 1e-7)


def test_finish_time_fairness_two_jobs_by_hand() -> None:
    # One V100, one K80; both jobs 2 epochs/s on the V100, 1 on the K80, 3 epochs left, nothing done.
    # Isolated: each gets count_k / max(n w, C) = 1/2 of each type, 1.5 epochs/s, F = 3 / 1.5 = 2 s.
    # rho_a = (2 + 3 / eff_a) / 2 (a waited 2 s) is at least (2 + 3/2) / 2 = 7/4, with all of the
    # V100; at 7/4 b needs eff_b = 3 / (7/4 * 2) = 6/7 <= 1, which the K80 gives: rho* = 7/4,
    # x_a = (1, 0), and b's row tightened to (0, 6/7).
    result = finish_time_fairness_allocation([[2.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1], [3, 3], [2.0, 0.0], [0.0, 0.0])
    assert result.rho == pytest.approx(1.75, rel=1e-7)
    np.testing.assert_allclose(result.x, [[1.0, 0.0], [0.0, 6 / 7]], atol=1e-7)
    # Without the wait, rho_i = F_i / (L_i / eff_i) inverted: iso_i / eff_i, the max-min of the
    # normalized throughputs (prop = isolated throughput here): 1/rho* is the max-min level.
    same = finish_time_fairness_allocation([[4.0, 1.0], [1.2, 1.0]], [1, 1], [1, 3], [5, 5], [0.0, 0.0], [0.0, 0.0])
    level = max_min_allocation([[4.0, 1.0], [1.2, 1.0]], [1, 1], [1, 3]).normalized
    assert 1.0 / same.rho == pytest.approx(float(level.min()), rel=1e-7)


def test_max_sum_throughput_two_jobs_by_hand() -> None:
    # One V100, one K80, one-GPU jobs; a: 4 on the V100, 1 on the K80; b: 2 and 1. Both GPUs busy,
    # so the only choice is who gets the V100 for how long: moving time p of the V100 from a to b
    # (and of the K80 from b to a) changes the sum by p (2 - 1) - p (4 - 1) = -2p < 0. The V100
    # goes to the job with the larger V100/K80 ratio: total 4 + 1 = 5.
    result = max_sum_throughput_allocation([[4.0, 1.0], [2.0, 1.0]], [1, 1], [1, 1])
    np.testing.assert_allclose(result.x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-9)
    assert result.total == pytest.approx(5.0)
    # A 2-GPU gang cannot use a 1-GPU type: the K80s go to the one-GPU job, the V100s to the gang.
    wide = max_sum_throughput_allocation([[4.0, 4.0], [1.0, 1.0]], [2, 1], [2, 1])
    np.testing.assert_allclose(wide.x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-9)


def test_min_total_duration_two_jobs_by_hand() -> None:
    # One V100, one K80; a: 20 epochs left, 2/s on the V100, 1/s on the K80; b: 10 left, 1/s on
    # either. b finishes no sooner than 10 s whatever it gets, and a in 10 s only with all of the
    # V100 (eff_a = 2 = 20 / 10); then b has the K80: M* = 10, x = [[1, 0], [0, 1]], unique.
    result = min_total_duration_allocation([[2.0, 1.0], [1.0, 1.0]], [1, 1], [1, 1], [20, 10])
    assert result.makespan_s == pytest.approx(10.0, rel=1e-7)
    np.testing.assert_allclose(result.x, [[1.0, 0.0], [0.0, 1.0]], atol=1e-7)
    # Halve a's work: M* is still b's 10 s, and a is tightened to eff_a = 1 epoch/s.
    half = min_total_duration_allocation([[2.0, 1.0], [1.0, 1.0]], [1, 1], [1, 1], [10, 10])
    assert half.makespan_s == pytest.approx(10.0, rel=1e-7)
    np.testing.assert_allclose((half.x * [[2.0, 1.0], [1.0, 1.0]]).sum(axis=1), [1.0, 1.0], rtol=1e-7)


@pytest.mark.parametrize("policy_class", NEW_POLICIES)
def test_the_new_policies_run_to_the_end_on_a_mixed_cluster(policy_class: type[HeterogeneousMaxMinFairness]) -> None:
    trace = load_workload("shockwave_120jobs_32gpus").head(16)
    workload = dataclasses.replace(trace, cluster=ClusterTypes({"v100": 12, "p100": 10, "k80": 10}), gpus=32)
    policy = BASELINES[policy_class.name](workload.cluster, workload.round_s, 0)
    assert type(policy) is policy_class and isinstance(policy, ClusterAware)
    run_within_counts(workload, policy)


@pytest.mark.parametrize("policy_class", NEW_POLICIES)
def test_an_empty_new_policy_answers_nothing(policy_class: type[HeterogeneousMaxMinFairness]) -> None:
    policy = policy_class(ClusterTypes({"v100": 2, "k80": 2}), 60.0)
    assert policy.next_round() == {} and policy.clock_s == 60.0
    assert policy.allocation().x.shape == (0, 2)
    policy.add_job("a", 1, GOOD, 3)
    for array in (policy.allocation().x, finish_time_fairness_allocation([[1.0]], [1], [1], [1], [0], [0]).x,
                  max_sum_throughput_allocation([[1.0]], [1], [1]).x, min_total_duration_allocation([[1.0]], [1], [1],
                                                                                                   [1]).x):
        with pytest.raises(ValueError, match="read-only"):
            array[0, 0] = 0.5


@pytest.mark.parametrize(("args", "pattern"), [
    *[((*bad, [5], [0], [0]), pattern) for bad, pattern in [
        (([[1.0, -1.0]], [1], [2, 2]), r"throughputs\[0, 1\] must be a finite number >= 0"),
        (([[1.0, 0.0]], [4], [2, 8]), r"job 0 \(row 0 of throughputs\) has no type that can host it"),
        (([[np.nan, 1.0]], [1], [2, 2]), r"throughputs contains NaN"),
        (([[1.0, 1.0]], [0], [2, 2]), r"gpus\[0\] must be a positive whole number")]],
    (([[1.0, 1.0]], [1], [2, 2], [0], [0], [0]), r"epochs_left\[0\] \(job 0\) must be > 0"),
    (([[1.0, 1.0]], [1], [2, 2], [5], [-1], [0]), r"elapsed_s\[0\] \(job 0\) must be >= 0"),
    (([[1.0, 1.0]], [1], [2, 2], [5], [0], [-1]), r"done_s\[0\] \(job 0\) must be >= 0"),
    (([[1.0, 1.0]], [1], [2, 2], [5, 5], [0], [0]), r"epochs_left must have shape \(1\)"),
])
def test_bad_finish_time_instances_are_refused(args: tuple[Any, ...], pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        finish_time_fairness_allocation(*args)


@pytest.mark.parametrize(("args", "pattern"), [
    (([[1.0, -1.0]], [1], [2, 2]), r"throughputs\[0, 1\] must be a finite number >= 0"),
    (([[1.0, 1.0]], [1, 1], [2, 2]), r"gpus must have shape \(1\)"),
    (([[1.0, 1.0]], [1], [2, 0]), r"counts\[1\] must be a positive whole number of GPUs, got 0"),
    (([[1.0, 0.0]], [4], [2, 8]), r"job 0 \(row 0 of throughputs\) has no type that can host it"),
])
def test_bad_throughput_and_duration_instances_are_refused(args: tuple[Any, ...], pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        max_sum_throughput_allocation(*args)
    with pytest.raises(ValidationError, match=pattern):
        min_total_duration_allocation(*args, [5])
    with pytest.raises(ValidationError, match=r"epochs_left\[0\] \(job 0\) must be > 0"):
        min_total_duration_allocation([[1.0, 1.0]], [1], [2, 2], [0])


@pytest.mark.parametrize("policy_class", NEW_POLICIES)
def test_bad_jobs_are_refused_by_the_new_policies(policy_class: type[HeterogeneousMaxMinFairness]) -> None:
    # The max-min's validation, inherited: a sample of test_bad_jobs_are_refused_naming_the_job_and_field.
    policy = policy_class(ClusterTypes({"v100": 4, "k80": 6}))
    with pytest.raises(ValidationError, match=r"gpus of job 'a' must be a positive whole number, got 0"):
        policy.add_job("a", 0, GOOD, 3)
    with pytest.raises(ValidationError, match=r"each key of regimes of job 'a' must be a GPU type .*, got 'p100'"):
        policy.add_job("a", 1, {"p100": {32.0: 10.0}}, 3)
    policy.add_job("a", 1, GOOD, 3)
    with pytest.raises(ValidationError,
                       match=r"batch_sizes\[0\] job 'a' reported must be a batch size of its regimes"):
        policy.report_progress("a", [16.0])
    assert policy.jobs == ["a"]
