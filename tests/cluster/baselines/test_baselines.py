"""The baseline policies of vfm.cluster.baselines: hand-checked schedules, feasibility, determinism."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linprog

from vfm.cluster import ClusterAware, ClusterTypes
from vfm.cluster.baselines import (
    BASELINES,
    AlloX,
    FinishTimeFairness,
    GandivaFair,
    MaxMinFairness,
    MaxSumThroughput,
    MinTotalDuration,
    RoundPolicy,
    allox_positions,
    allox_positions_lsa,
    ftf_allocation,
    water_filling,
)
from vfm.cluster.baselines.mechanisms import remaining_s
from vfm.cluster.protocol import SchedulingPolicy
from vfm.errors import ValidationError

NAMES = ["static_market", "max_min_fairness", "finish_time_fairness", "gandiva_fair", "allox", "max_sum_throughput",
         "min_total_duration"]
#: The heterogeneity-aware baselines, in the same registry (tests/cluster/baselines/test_typed_baselines.py).
OVER_TYPES = ["heterogeneous_max_min_fairness", "heterogeneous_static_market", "heterogeneous_finish_time_fairness",
              "heterogeneous_max_sum_throughput", "heterogeneous_min_total_duration"]


def rounds(policy, n):
    """The next `n` rounds as sets of job ids (no progress reported in between)."""
    return [set(policy.next_round()) for _ in range(n)]


def test_one_registry_names_every_baseline_and_each_is_one_round_policy():
    assert list(BASELINES) == NAMES + OVER_TYPES
    two_types = ClusterTypes({"v100": 4, "k80": 4})
    for name, factory in BASELINES.items():
        policy = factory(8, 120.0, 0)
        assert isinstance(policy, RoundPolicy) and isinstance(policy, SchedulingPolicy)
        assert isinstance(policy, ClusterAware) and policy.cluster == ClusterTypes.single(8)
        assert policy.name == name
        assert policy.next_round() == []
        assert policy.mechanism.over_types == (name in OVER_TYPES)
        if name in OVER_TYPES:
            assert factory(two_types, 120.0, 0).next_round() == {}
        else:
            with pytest.raises(ValidationError, match=r"schedules a cluster of one GPU type, not"):
                factory(two_types, 120.0, 0)


def test_on_one_type_regimes_are_taken_plainly_or_by_type_with_the_same_schedule():
    plain, by_type = MaxMinFairness(4, 100.0, 0), MaxMinFairness(4, 100.0, 0)
    for j, gang in enumerate([1, 2, 4, 1]):
        plain.add_job(j, gang, {32.0: 60.0 + j, 64.0: 40.0}, 5)
        by_type.add_job(j, gang, {"v100": {32.0: 60.0 + j, 64.0: 40.0}}, 5)
    for _ in range(6):
        chosen = plain.next_round()
        assert by_type.next_round() == chosen
        for j in chosen:
            plain.report_progress(j, [64.0])
            by_type.report_progress(j, [64.0])
    with pytest.raises(ValidationError, match=r"each key of regimes of job 'x' must be a GPU type of the cluster"):
        plain.add_job("x", 1, {"k80": {32.0: 60.0}}, 3)
    with pytest.raises(ValidationError, match=r"regimes\[32.0\] of job 'x' must be a finite number of seconds"):
        plain.add_job("x", 1, {32.0: -1.0}, 3)


# --- hand-checked three-job cases (round_s = 100, so Gavel's initial count is 50 s) -------------


def test_max_min_fairness_three_jobs():
    # G = 4; A and B one GPU each, C four. Water-filling: level L with min(1,L)+min(1,L)+min(4,L) = 4
    # -> L = 2, x = (1, 1, 1/2). Gavel's rounds, counts start at 50 s:
    # r1: fractions 1/3 each -> priorities (3, 3, 1.5): A, B fit, C (4) does not -> {A, B}
    # r2: counts (150, 150, 50), total 350: A = 350/150 = 2.33, C = 0.5*350/50 = 3.5 -> C first, fills -> {C}
    # r3: counts (150, 150, 150): (3, 3, 1.5) -> {A, B}
    # r4: counts (250, 250, 150), total 650: A = 2.6, C = 0.5*650/150 = 2.17 -> {A, B}
    # r5: counts (350, 350, 150), total 850: A = 2.43, C = 2.83 -> {C}
    p = MaxMinFairness(4, 100.0, 0)
    p.add_job("A", 1, {32: 100.0}, 50)
    p.add_job("B", 1, {32: 100.0}, 50)
    p.add_job("C", 4, {32: 100.0}, 50)
    assert rounds(p, 5) == [{"A", "B"}, {"C"}, {"A", "B"}, {"A", "B"}, {"C"}]
    np.testing.assert_allclose(p.last_step.allocation, [1.0, 1.0, 0.5])


def test_finish_time_fairness_three_jobs():
    # G = 2, round 100 s, every epoch 100 s. A (3 epochs) runs alone in rounds 1-2, finishing
    # 2 epochs; in round 3 (clock 200 s) B (1 epoch) and C (4 epochs) arrive. N = 3, equal
    # share s = 2/3, fair time = isolated / s: A 300*1.5 = 450, B 150, C 600; remaining A 100,
    # B 100, C 400; elapsed A 200, B = C = 0.
    # rho_A = (200 + 100/x_A)/450, rho_B = (100/x_B)/150, rho_C = (400/x_C)/600. Common level rho:
    # x_A = 100/(450 rho - 200), x_B = x_C = 2/(3 rho); x_A + x_B + x_C = 2 gives
    # 27 rho^2 - 33 rho + 8 = 0, rho = 8/9, x = (1/2, 3/4, 3/4).
    # The job set changed: counts reset to 50 s each (A's deficit: should 200 - received 200 = 0),
    # priorities x / (1/3) = (1.5, 2.25, 2.25) -> B, C first and fill the 2 GPUs -> {B, C}.
    # (Max-min fairness would give x = 2/3 each and run A, B by arrival order.)
    p = FinishTimeFairness(2, 100.0, 0)
    p.add_job("A", 1, {32: 100.0}, 3)
    assert p.next_round() == ["A"]
    p.report_progress("A", [32])
    assert p.next_round() == ["A"]
    p.report_progress("A", [32])
    p.add_job("B", 1, {32: 100.0}, 1)
    p.add_job("C", 1, {32: 100.0}, 4)
    assert set(p.next_round()) == {"B", "C"}
    np.testing.assert_allclose(p.last_step.allocation, [0.5, 0.75, 0.75])
    assert p.last_step.details["rho"] == pytest.approx(8 / 9)


def test_gandiva_fair_three_jobs():
    # G = 4; gangs A 1, B 2, C 4; passes start at 0 and advance by the gang (one ticket each).
    # r1 passes (0,0,0): A, B fit, C does not -> {A, B}; passes (1, 2, 0)
    # r2: C lowest -> {C}; (1, 2, 4)
    # r3: A, B -> {A, B}; (2, 4, 4)
    # r4: A (2), then B and C tie at 4, B arrived first: A + B -> {A, B}; (3, 6, 4)
    # r5: A (3), C (4) does not fit in 3, B fits -> {A, B}; (4, 8, 4)
    # r6: A and C tie at 4, A first, C does not fit, B fits -> {A, B}; (5, 10, 4)
    # r7: C lowest -> {C}; (5, 10, 8)
    p = GandivaFair(4, 100.0, 0)
    p.add_job("A", 1, {32: 100.0}, 50)
    p.add_job("B", 2, {32: 100.0}, 50)
    p.add_job("C", 4, {32: 100.0}, 50)
    ab, c = {"A", "B"}, {"C"}
    assert rounds(p, 7) == [ab, c, ab, ab, ab, ab, c]
    # A late arrival starts at the smallest present pass (A's 5), not at 0.
    p.add_job("D", 1, {32: 100.0}, 50)
    assert p.table.col("pass_")[p.table.row["D"]] == 5.0


def test_allox_three_jobs():
    # G = 2, epochs 100 s. Remaining: A 300, B 100, C 200. The matching on 2 GPUs deals the
    # jobs shortest first: B and C start now, A waits behind B -> {B, C}.
    # Round 2: B finished its epoch and left; C (one epoch done) keeps its GPU (non-preemptive)
    # although D (remaining 50 s) is now shorter; the free GPU goes to D, the shorter of A, D.
    p = AlloX(2, 100.0, 0)
    p.add_job("A", 1, {32: 100.0}, 3)
    p.add_job("B", 1, {32: 100.0}, 1)
    p.add_job("C", 1, {32: 100.0}, 2)
    assert set(p.next_round()) == {"B", "C"}
    p.report_progress("B", [32])
    p.report_progress("C", [32])
    assert p.completed == ["B"]
    p.add_job("D", 1, {32: 50.0}, 1)
    assert set(p.next_round()) == {"C", "D"}


def test_max_sum_throughput_three_jobs():
    # G = 3, epochs 100 s. Normalized throughput c = 1/(epoch_s * epochs): A (2 GPUs, 10 epochs)
    # 1e-3, B (1 GPU, 40 epochs) 2.5e-4, C (2 GPUs, 4 epochs) 2.5e-3. Per GPU: C 1.25e-3,
    # A 5e-4, B 2.5e-4. Fractional knapsack on 3 GPUs: x_C = 1, x_A = 1/2, x_B = 0.
    # r1: priorities x/(1/3) = (1.5, 0, 3): C (2), A (2) does not fit, B (1) fills -> {C, B}
    # r2: counts (50, 150, 150), total 350: A = 0.5*350/50 = 3.5, C = 2.33, B = 0:
    #     A (2), C does not fit, B fills -> {A, B}
    p = MaxSumThroughput(3, 100.0, 0)
    p.add_job("A", 2, {32: 100.0}, 10)
    p.add_job("B", 1, {32: 100.0}, 40)
    p.add_job("C", 2, {32: 100.0}, 4)
    assert rounds(p, 2) == [{"C", "B"}, {"A", "B"}]
    np.testing.assert_allclose(p.last_step.allocation, [0.5, 0.0, 1.0])


def test_min_total_duration_three_jobs():
    # G = 2, epochs 100 s. Remaining R: A (1 GPU) 100, B (1 GPU) 200, C (2 GPUs) 300.
    # T* = max(max R, sum w R / G) = max(300, 900/2) = 450; x = R/T* = (2/9, 4/9, 2/3).
    # r1: priorities x/(1/3) = (2/3, 4/3, 2): C takes both GPUs -> {C}
    # r2: counts (50, 50, 150), total 250: A = 10/9, B = 20/9, C = 10/9: B first, C does not
    #     fit in the GPU left whichever of A, C comes next, A does -> {A, B}
    p = MinTotalDuration(2, 100.0, 0)
    p.add_job("A", 1, {32: 100.0}, 1)
    p.add_job("B", 1, {32: 100.0}, 2)
    p.add_job("C", 2, {32: 100.0}, 3)
    assert rounds(p, 2) == [{"C"}, {"A", "B"}]
    np.testing.assert_allclose(p.last_step.allocation, [2 / 9, 4 / 9, 2 / 3])


# --- the allocations against their LPs / matchings ----------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 8), min_size=1, max_size=12), st.integers(1, 16))
def test_water_filling_attains_the_max_min_lp(gpus, capacity):
    w = np.array(gpus)
    x = water_filling(w, capacity)
    assert (x >= 0).all() and (x <= 1 + 1e-12).all() and w @ x <= capacity + 1e-9
    # LP: maximize t s.t. w_i x_i >= t, sum w x <= G, 0 <= x <= 1 (variables x, t).
    n = w.size
    a_ub = np.vstack([np.hstack([-np.diag(w), np.ones((n, 1))]), np.append(w, 0.0)])
    b_ub = np.append(np.zeros(n), capacity)
    lp = linprog(np.append(np.zeros(n), -1.0), A_ub=a_ub, b_ub=b_ub, bounds=[(0, 1)] * n + [(None, None)])
    assert (w * x).min() == pytest.approx(-lp.fun, rel=1e-7)


jobs_strategy = st.lists(st.tuples(st.integers(1, 4), st.floats(10.0, 1e3), st.integers(1, 50)), min_size=1,
                         max_size=10)


def _loaded(cls, jobs, capacity):
    policy = cls(capacity, 120.0, 0)
    for j, (gang, epoch_s, epochs) in enumerate(jobs):
        policy.add_job(j, min(gang, capacity), {32.0: epoch_s}, epochs)
    return policy


@settings(max_examples=30, deadline=None)
@given(jobs_strategy, st.integers(1, 8))
def test_max_sum_throughput_solves_its_lp(jobs, capacity):
    policy = _loaded(MaxSumThroughput, jobs, capacity)
    state = policy.state()
    w = state.col("gpus").astype(float)
    c = 1.0 / (state.col("epoch_s")[:, 0] * state.col("epochs"))
    x = policy.mechanism.allocate(state).x
    assert (x >= 0).all() and (x <= 1).all() and w @ x <= capacity * (1 + 1e-12)
    lp = linprog(-c, A_ub=w[None, :], b_ub=[capacity], bounds=[(0, 1)] * w.size)
    assert c @ x == pytest.approx(-lp.fun, rel=1e-7)


@settings(max_examples=30, deadline=None)
@given(jobs_strategy, st.integers(1, 8))
def test_min_total_duration_solves_its_lp(jobs, capacity):
    # In y = 1/T: maximize y s.t. x_i >= R_i y, sum w x <= G, 0 <= x <= 1 (variables x, y).
    policy = _loaded(MinTotalDuration, jobs, capacity)
    state = policy.state()
    w = state.col("gpus").astype(float)
    remaining = remaining_s(state)
    x = policy.mechanism.allocate(state).x
    assert (x <= 1 + 1e-12).all() and w @ x <= capacity * (1 + 1e-12)
    n = w.size
    a_ub = np.vstack([np.hstack([-np.eye(n), remaining[:, None]]), np.append(w, 0.0)])
    lp = linprog(np.append(np.zeros(n), -1.0), A_ub=a_ub, b_ub=np.append(np.zeros(n), capacity),
                 bounds=[(0, 1)] * n + [(0, None)])
    assert (x / remaining).min() == pytest.approx(-lp.fun, rel=1e-7)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(1.0, 1e4), min_size=1, max_size=10), st.integers(1, 4))
def test_allox_closed_form_is_an_optimal_matching(remaining, slots):
    p = np.array(remaining)
    ahead = allox_positions(p, slots)
    _, optimum = allox_positions_lsa(p, slots)
    # Cost of the closed form: on each GPU the job with j jobs ahead is (count - j)-th from the end.
    gpu = np.empty(p.size, dtype=np.int64)
    gpu[np.lexsort((np.arange(p.size), p))] = np.arange(p.size) % slots
    count = np.bincount(gpu, minlength=slots)
    assert float(p @ (count[gpu] - ahead)) == pytest.approx(optimum, rel=1e-9)


def test_ftf_allocation_equalizes_the_ratios():
    rng = np.random.default_rng(3)
    remaining = rng.uniform(100, 1000, 20)
    elapsed = rng.uniform(0, 500, 20)
    fair = (remaining + rng.uniform(0, 500, 20)) * 3
    gpus = rng.integers(1, 4, 20)
    x, rho = ftf_allocation(remaining, elapsed, fair, gpus, 8)
    assert gpus @ x == pytest.approx(8, rel=1e-9)
    ratios = (elapsed + remaining / x) / fair
    np.testing.assert_allclose(ratios[x < 1], rho, rtol=1e-9)
    assert ratios.max() == pytest.approx(rho, rel=1e-9)


# --- every baseline: feasible and deterministic on random event sequences -----------------------


events = st.lists(
    st.tuples(
        st.lists(st.tuples(st.integers(1, 8), st.integers(1, 6), st.integers(1, 3)), max_size=3),  # arrivals
        st.integers(0, 3),  # epochs each running job reports
        st.booleans(),  # cancel the oldest present job
    ),
    min_size=1,
    max_size=12,
)


def replay(name, capacity, script, seed=0):
    """Drive policy `name` through `script`; check every round; return the rounds chosen."""
    rng = np.random.default_rng(seed)
    policy = BASELINES[name](capacity, 120.0, seed)
    gangs, left, regimes, out = {}, {}, {}, []
    next_id = 0
    for arrivals, per_round, cancel in script:
        for gang, epochs, n_regimes in arrivals:
            gang = min(gang, capacity)
            reg = {float(16 * 2 ** k): float(rng.uniform(30, 300)) for k in range(n_regimes)}
            policy.add_job(next_id, gang, reg, epochs)
            gangs[next_id], left[next_id], regimes[next_id] = gang, epochs, reg
            next_id += 1
        if cancel and left:
            victim = min(left)
            policy.remove_job(victim)
            del left[victim]
        chosen = policy.next_round()
        assert len(set(chosen)) == len(chosen), "a job listed twice"
        assert set(chosen) <= set(left), "a job that is not present"
        assert sum(gangs[j] for j in chosen) <= capacity, "over capacity"
        out.append(list(chosen))
        for j in chosen:
            k = min(per_round, left[j])
            sizes = list(regimes[j])
            policy.report_progress(j, [sizes[int(rng.integers(len(sizes)))] for _ in range(k)])
            left[j] -= k
            if left[j] == 0:
                del left[j]
        assert sorted(policy.jobs) == sorted(left)
    return out


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=25, deadline=None)
@given(capacity=st.integers(1, 8), script=events)
def test_feasible_and_deterministic(name, capacity, script):
    first = replay(name, capacity, script)
    assert replay(name, capacity, script) == first


@pytest.mark.parametrize("name", NAMES)
def test_work_conserving(name):
    # Six one-GPU jobs on four GPUs: every round uses all four GPUs.
    policy = BASELINES[name](4, 120.0, 0)
    for j in range(6):
        policy.add_job(j, 1, {32.0: 60.0 + j}, 20)
    for _ in range(5):
        assert len(policy.next_round()) == 4


@pytest.mark.parametrize("name", NAMES)
def test_rejects_malformed_input(name):
    policy = BASELINES[name](4, 120.0, 0)
    policy.add_job("a", 2, {32.0: 60.0}, 3)
    with pytest.raises(ValidationError, match="already"):
        policy.add_job("a", 2, {32.0: 60.0}, 3)
    with pytest.raises(ValidationError, match="gpus"):
        policy.add_job("b", 5, {32.0: 60.0}, 3)
    with pytest.raises(ValidationError, match="regimes"):
        policy.add_job("b", 1, {}, 3)
    with pytest.raises(ValidationError, match="epochs"):
        policy.add_job("b", 1, {32.0: 60.0}, 0)
    with pytest.raises(ValidationError, match="batch size"):
        policy.report_progress("a", [64.0])
    with pytest.raises(ValidationError, match=r"epochs job 'a' reported must be a whole number of epochs <= 3 "
                                              r"\(the epochs it has left\)"):
        policy.report_progress("a", [32.0] * 4)
    with pytest.raises(ValidationError, match="not in the policy"):
        policy.remove_job("zz")
