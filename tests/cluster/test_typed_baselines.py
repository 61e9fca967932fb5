"""Gavel's heterogeneity-aware max-min fairness (vfm.cluster.typed_baselines): the allocation
against water-filling, an independent LP and a brute-force lexicographic reference; a hand-solved
two-job case; the round mechanism against the homogeneous one; runs on a mixed cluster; bad input."""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from vfm.cluster import GPU_TYPES, ClusterTypes, TypedSchedulingPolicy, load_workload, simulate
from vfm.cluster.baselines import MaxMinFairness, water_filling
from vfm.cluster.typed_baselines import (
    TYPED_BASELINES,
    HeterogeneousMaxMinFairness,
    max_min_allocation,
    normalized_throughputs,
    proportional_throughputs,
)
from vfm.errors import ValidationError

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


class WaterFilled(HeterogeneousMaxMinFairness):
    """The policy's rounds on the homogeneous allocation (`water_filling`) instead of the LP's; it
    records how far the LP's allocation was from it."""

    gap = 0.0

    def _ensure_allocation(self) -> np.ndarray:
        x = super()._ensure_allocation()
        exact = water_filling(self._table.col("gpus"), self.cluster.total)[:, None]
        self.gap = max(self.gap, float(np.abs(x - exact).max()))
        self._x = exact
        return exact


def test_on_one_type_the_rounds_are_the_homogeneous_max_min_fairness() -> None:
    # Same allocation -> the very same rounds (jobs and their order) as MaxMinFairness, whole run;
    # and along it the LP's allocation is water-filling to rounding.
    trace = load_workload("shockwave_120jobs_32gpus").head(40)
    typed = dataclasses.replace(trace, cluster=ClusterTypes.single(trace.gpus))
    policy = WaterFilled(typed.cluster, trace.round_s)
    ours = simulate(typed, policy)
    homogeneous = simulate(trace, MaxMinFairness(trace.gpus, trace.round_s))
    assert [r.jobs for r in ours.rounds] == [r.jobs for r in homogeneous.rounds]
    assert all(set(r.types) <= {"v100"} for r in ours.rounds)
    np.testing.assert_array_equal(ours.finish_s, homogeneous.finish_s)
    assert policy.gap < 1e-12


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


def test_a_mixed_cluster_runs_to_the_end_within_each_types_count() -> None:
    workload = mixed_workload()
    policy = HeterogeneousMaxMinFairness(workload.cluster, workload.round_s)
    assert isinstance(policy, TypedSchedulingPolicy)
    sim = simulate(workload, policy)
    assert np.isfinite(sim.finish_s).all()
    assert sorted(policy.completed) == sorted(job.id for job in workload.jobs) and policy.jobs == []
    gang = {job.id: job.gpus for job in workload.jobs}
    for r in sim.rounds:
        used = {t: sum(gang[j] for j, u in zip(r.jobs, r.types, strict=True) if u == t) for t in workload.cluster}
        assert all(used[t] <= workload.cluster[t] for t in workload.cluster)
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
    policy = TYPED_BASELINES["heterogeneous_max_min_fairness"](ClusterTypes({"v100": 2, "k80": 2}), 60.0, 3)
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
    (("a", 1, {}, 3), r"regimes of job 'a' must map at least one GPU type of the cluster \(v100, k80\)"),
    (("a", 1, [("v100", {32.0: 1.0})], 3), r"regimes of job 'a' must map at least one GPU type"),
    (("a", 1, {"p100": {32.0: 10.0}}, 3), r"regimes of job 'a' name type 'p100', not a GPU type of the cluster "
                                           r"\(v100, k80\)"),
    (("a", 1, {"v100": {}}, 3), r"regimes\['v100'\] of job 'a' must map batch sizes to seconds per epoch"),
    (("a", 1, {"v100": {32.0: -1.0}}, 3), r"regimes\['v100'\] of job 'a' must map batch sizes > 0 to finite"),
    (("a", 1, {"v100": {32.0: float("inf")}}, 3), r"regimes\['v100'\] of job 'a' must map batch sizes > 0"),
    (("a", 1, {"v100": {"32": 10.0}}, 3), r"regimes\['v100'\] of job 'a' must map batch sizes > 0"),
    (("a", 1, {"v100": {32.0: 10.0}, "k80": {64.0: 10.0}}, 3),
     r"regimes of job 'a' list batch sizes \[64.0\] on 'k80' but \[32.0\] on 'v100'; every type must list"),
    (("a", 8, GOOD, 3), r"gpus of job 'a' is 8, more than every type its regimes name has \(v100: 4, k80: 6\)"),
])
def test_bad_jobs_are_refused_naming_the_job_and_field(args: tuple[Any, ...], pattern: str) -> None:
    policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 4, "k80": 6}))
    with pytest.raises(ValidationError, match=pattern):
        policy.add_job(*args)
    assert policy.jobs == []


def test_bad_calls_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"cluster must be a vfm\.cluster\.ClusterTypes"):
        HeterogeneousMaxMinFairness({"v100": 4})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="round_s must be a finite number > 0"):
        HeterogeneousMaxMinFairness(ClusterTypes({"v100": 4}), 0.0)
    policy = HeterogeneousMaxMinFairness(ClusterTypes({"v100": 4, "k80": 6}))
    policy.add_job("a", 1, GOOD, 3)
    with pytest.raises(ValidationError, match="job 'a' is already in the policy"):
        policy.add_job("a", 1, GOOD, 3)
    with pytest.raises(ValidationError, match="job 'b' is not in the policy"):
        policy.remove_job("b")
    with pytest.raises(ValidationError, match="job 'b' is not in the policy"):
        policy.report_progress("b", [32.0])
    with pytest.raises(ValidationError, match=r"job 'a' reported batch size 16.0, not in its regimes \(\[32.0, 64"):
        policy.report_progress("a", [16.0])
    with pytest.raises(ValidationError, match="job 'a' reported 4 epochs, more than the 3 it has left"):
        policy.report_progress("a", [32.0] * 4)
    policy.report_progress("a", [64.0])
    assert policy.allocation().throughputs.tolist() == [[1 / 7.0, 1 / 20.0]]
    policy.report_progress("a", [32.0, 32.0])
    assert policy.completed == ["a"] and policy.jobs == []


@pytest.mark.parametrize(("args", "pattern"), [
    (([[1.0, -1.0]], [1], [2, 2]), r"throughputs\[0, 1\] must be >= 0"),
    (([[1.0, 1.0]], [1, 1], [2, 2]), r"gpus must have shape \(1\)"),
    (([[1.0, 1.0]], [0], [2, 2]), r"gpus\[0\] must be a positive whole number"),
    (([[1.0, 1.0]], [1], [2, 0]), r"counts must be positive whole numbers"),
    (([[1.0, 0.0]], [4], [2, 8]), r"job 0 \(row 0 of throughputs\) has no type that can host it"),
    (([[np.nan, 1.0]], [1], [2, 2]), r"throughputs contains NaN"),
])
def test_bad_instances_are_refused(args: tuple[Any, ...], pattern: str) -> None:
    with pytest.raises(ValidationError, match=pattern):
        max_min_allocation(*args)
