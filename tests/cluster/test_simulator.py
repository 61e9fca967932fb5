"""vfm.cluster.simulator and vfm.cluster.workload: workload files, the round semantics, bad policies."""

from __future__ import annotations

import copy
import json
import math
import random
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.cluster import (
    ClusterTypes,
    Round,
    Simulation,
    Workload,
    load_workload,
    simulate,
    summarize,
    workload_from_dict,
)
from vfm.cluster.protocol import ReportsDiagnostics, SchedulingPolicy
from vfm.errors import PolicyError, ValidationError

# ---------------------------------------------------------------------------------------------
# Test policies
# ---------------------------------------------------------------------------------------------


class Fifo:
    """First come, first served, first fit: every round, in arrival order, each job that fits."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.jobs: dict[Hashable, list[int]] = {}  # id -> [gpus, epochs left]

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        self.jobs[job_id] = [gpus, epochs]

    def remove_job(self, job_id: Hashable) -> None:
        del self.jobs[job_id]

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        self.jobs[job_id][1] -= len(batch_sizes)
        assert self.jobs[job_id][1] >= 0
        if self.jobs[job_id][1] == 0:
            del self.jobs[job_id]

    def next_round(self) -> list[Hashable]:
        free, run = self.capacity, []
        for job_id, (gpus, _) in self.jobs.items():
            if gpus <= free:
                run.append(job_id)
                free -= gpus
        return run


class RandomSubset(Fifo):
    """A random feasible subset: jobs in random order, each that fits taken with probability 0.7."""

    def __init__(self, capacity: int, seed: int) -> None:
        super().__init__(capacity)
        self.rng = random.Random(seed)

    def next_round(self) -> list[Hashable]:
        order = list(self.jobs)
        self.rng.shuffle(order)
        free, run = self.capacity, []
        for job_id in order:
            if self.jobs[job_id][0] <= free and self.rng.random() < 0.7:
                run.append(job_id)
                free -= self.jobs[job_id][0]
        return run


class EvenRounds(Fifo):
    """FIFO on its even calls (0-based), nothing on odd ones: one call per round with jobs present."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.calls = 0

    def next_round(self) -> list[Hashable]:
        self.calls += 1
        return super().next_round() if self.calls % 2 == 1 else []


class Recorder:
    """Wraps a policy and records what the simulator told it and when (round = next_round calls)."""

    def __init__(self, inner: SchedulingPolicy) -> None:
        self.inner = inner
        self.round = 0
        self.added: dict[Hashable, int] = {}
        self.kinds: dict[Hashable, Hashable] = {}
        self.restart_s: dict[Hashable, float | None] = {}
        self.reports: list[tuple[int, Hashable, list[float]]] = []  # (round reported after, id, sizes)

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        self.added[job_id] = self.round
        self.kinds[job_id] = kind
        self.restart_s[job_id] = restart_s
        self.inner.add_job(job_id, gpus, regimes, epochs, kind=kind, restart_s=restart_s)

    def remove_job(self, job_id: Hashable) -> None:
        self.inner.remove_job(job_id)

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        self.reports.append((self.round - 1, job_id, list(batch_sizes)))
        self.inner.report_progress(job_id, batch_sizes)

    def next_round(self) -> list[Hashable]:
        self.round += 1
        return self.inner.next_round()


# ---------------------------------------------------------------------------------------------
# Workloads
# ---------------------------------------------------------------------------------------------


@st.composite
def workloads(draw: st.DrawFn, own_restarts: bool = False, long_restarts: bool = False) -> dict[str, Any]:
    """A small workload file: 1-6 jobs on 1-4 GPUs, 1-3 phases of 1-4 epochs, random arrivals;
    with `own_restarts`, some jobs state their own restart cost (0 to 55 s, within any round;
    with `long_restarts` too, up to 250 s, over several rounds)."""
    gpus = draw(st.integers(1, 4))
    round_s = draw(st.sampled_from([60.0, 120.0]))
    jobs = []
    for job_id in range(draw(st.integers(1, 6))):
        # Each batch size has one epoch duration (a regime); phases pick among them.
        regimes = draw(st.dictionaries(st.sampled_from([8, 16, 32, 64]),
                                       st.floats(1.0, 150.0, allow_nan=False), min_size=1, max_size=3))
        phases = [{"epochs": draw(st.integers(1, 4)), "batch_size": b, "epoch_s": regimes[b]}
                  for b in draw(st.lists(st.sampled_from(sorted(regimes)), min_size=1, max_size=3))]
        jobs.append({
            "id": job_id,
            "arrival_s": draw(st.one_of(st.floats(0.0, 600.0), st.sampled_from([0.0, round_s, 2 * round_s]))),
            "gpus": draw(st.integers(1, gpus)),
            "epochs": sum(p["epochs"] for p in phases),
            "phases": phases,
        })
        if own_restarts and draw(st.booleans()):
            costs = [0.0, 5.0, 30.0, 55.0] + ([60.0, 120.0, 150.0, 250.0] if long_restarts else [])
            jobs[-1]["restart_s"] = draw(st.sampled_from(costs))
    return {"name": "hypothesis", "gpus": gpus, "round_s": round_s, "jobs": jobs}


def first_round(arrival_s: float, round_s: float) -> int:
    """The first round whose start is at or after `arrival_s` (exact even where a / R underflows)."""
    r = math.ceil(arrival_s / round_s)
    return r + 1 if r * round_s < arrival_s else r


def round_numbers(sim: Simulation) -> list[int]:
    """Which round each recorded round is (``start_s / round_s``; empty rounds are not recorded)."""
    return [round(r.start_s / sim.round_s) for r in sim.rounds]


def rounds_per_job(sim: Simulation, workload: Workload) -> list[list[int]]:
    """The rounds (numbers) each job held GPUs in, from `sim.rounds` alone."""
    index = {job.id: j for j, job in enumerate(workload.jobs)}
    held: list[list[int]] = [[] for _ in workload.jobs]
    for r, round_ in zip(round_numbers(sim), sim.rounds, strict=True):
        for job_id in round_.jobs:
            held[index[job_id]].append(r)
    return held


def stretches(held: Sequence[int]) -> list[int]:
    """The lengths of the runs of consecutive rounds in `held` (rounds a job held GPUs in)."""
    lengths: list[int] = []
    for k, r in enumerate(held):
        if k and r == held[k - 1] + 1:
            lengths[-1] += 1
        else:
            lengths.append(1)
    return lengths


def restart_spent_s(held: Sequence[int], cost: float, round_s: float) -> float:
    """Seconds a job that held GPUs in the rounds `held` spent restarting: each run of consecutive
    rounds starts with its restart, cut short where the run ends before it does."""
    return sum(min(cost, n * round_s) for n in stretches(held))


def check_invariants(workload: Workload, sim: Simulation, recorder: Recorder, restart_s: float) -> None:
    """Everything that must hold for any policy, recomputed from the recorded rounds; `restart_s`
    is the simulator's, charged to the jobs that state no restart cost of their own."""
    round_s = workload.round_s
    costs = [restart_s if job.restart_s is None else job.restart_s for job in workload.jobs]
    assert sim.job_restart_s is not None and sim.job_restart_s.tolist() == costs and sim.restart_s == restart_s
    # The policy was told each job's cost (as its Recorder saw it).
    assert recorder.restart_s == {job.id: cost for job, cost in zip(workload.jobs, costs, strict=True)}
    gpus = {job.id: job.gpus for job in workload.jobs}
    assert sim.n_jobs == workload.n_jobs and sim.gpus == workload.gpus
    assert np.isfinite(sim.finish_s).all()
    # The rounds recorded are exactly those in which a job is present (arrived, not finished),
    # in order, and next_round was called once per recorded round.
    numbers = round_numbers(sim)
    assert [r.start_s for r in sim.rounds] == [k * round_s for k in numbers]
    last = int(np.ceil(sim.finish_s.max() / round_s))
    present = [k for k in range(last) if ((sim.arrival_s <= k * round_s) & (sim.finish_s > k * round_s)).any()]
    assert numbers == present
    assert recorder.round == len(sim.rounds) == sim.planner_s.size == sim.planner_busy.size
    assert sim.planner_busy.all()
    # The run ends in the round of the last finish.
    assert numbers[-1] * round_s < sim.finish_s.max() <= (numbers[-1] + 1) * round_s
    busy = 0.0
    for round_ in sim.rounds:
        assert sum(gpus[i] for i in round_.jobs) <= workload.gpus  # capacity
        assert len(set(round_.jobs)) == len(round_.jobs)
    for j, (job, held) in enumerate(zip(workload.jobs, rounds_per_job(sim, workload), strict=True)):
        # Added at the start of the first round at or after its arrival.
        assert numbers[recorder.added[job.id]] == first_round(job.arrival_s, round_s)
        starts = np.array(held) * round_s
        assert held, "every job ran"
        assert (starts >= job.arrival_s).all()  # never before its arrival
        assert (starts < sim.finish_s[j]).all()  # never after its finish
        assert sim.finish_s[j] <= starts[-1] + round_s  # it finished in its last round
        # (to rounding: the simulator adds the restart before the work, this sum after it)
        assert sim.finish_s[j] >= job.arrival_s + job.isolated_s + costs[j] - 1e-9
        # Restarts: its first round and every round after a gap.
        restarts = 1 + int(np.count_nonzero(np.diff(held) > 1))
        assert sim.restarts[j] == restarts
        # Work conservation: time held minus the time spent restarting (each restart's cost, cut
        # short where the job was descheduled before it ended) is exactly the isolated time.
        held_s = len(held) * round_s - (starts[-1] + round_s - sim.finish_s[j])
        assert sim.held_s[j] == pytest.approx(held_s, rel=1e-9, abs=1e-9)
        assert held_s - restart_spent_s(held, costs[j], round_s) == pytest.approx(job.isolated_s, rel=1e-6)
        if costs[j] < round_s:  # every restart ends inside its round: none is cut short
            assert held_s - restarts * costs[j] == pytest.approx(job.isolated_s, rel=1e-6)
        busy += job.gpus * held_s
    assert sim.busy_gpu_s == pytest.approx(busy, rel=1e-9)
    assert sim.busy_gpu_s <= workload.gpus * len(sim.rounds) * round_s * (1 + 1e-12)

    # The policy saw every epoch's batch size exactly once, in order, and only once finished.
    seen: dict[Hashable, list[float]] = {job.id: [] for job in workload.jobs}
    held_rounds = dict(zip((job.id for job in workload.jobs), rounds_per_job(sim, workload), strict=True))
    position_of = {job.id: j for j, job in enumerate(workload.jobs)}
    for call, job_id, sizes in recorder.reports:
        round_index = numbers[call]
        assert sizes, "no empty reports"
        assert round_index in held_rounds[job_id]  # reported after a round it ran
        seen[job_id].extend(sizes)
        job = workload.jobs[[j.id for j in workload.jobs].index(job_id)]
        # Work done by the end of that round, and the epochs it completes.
        rounds_run = [r for r in held_rounds[job_id] if r <= round_index]
        work = len(rounds_run) * round_s - restart_spent_s(rounds_run, costs[position_of[job_id]], round_s)
        ends = np.cumsum(job.epoch_s)
        low, high = np.searchsorted(ends, [work - 1e-6, work + 1e-6], side="right")
        assert low <= len(seen[job_id]) <= max(high, 0) or len(seen[job_id]) == job.epochs
    for job in workload.jobs:
        assert seen[job.id] == job.batch_size.tolist()
    # Within a round, reports come in workload order (whatever the order of the answer).
    position = {job.id: j for j, job in enumerate(workload.jobs)}
    keys = [(call, position[job_id]) for call, job_id, _ in recorder.reports]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)


# ---------------------------------------------------------------------------------------------
# Invariants with hypothesis
# ---------------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(raw=workloads(), restart_s=st.sampled_from([0.0, 20.0, 45.0]))
def test_fifo_invariants(raw: dict[str, Any], restart_s: float) -> None:
    workload = workload_from_dict(raw)
    recorder = Recorder(Fifo(workload.gpus))
    sim = simulate(workload, recorder, restart_s=restart_s)
    check_invariants(workload, sim, recorder, restart_s)
    if all(job.gpus == 1 for job in workload.jobs):
        # Single-GPU FIFO never preempts: the jobs ahead of a running one only leave. (With
        # wider gangs a backfilled job is preempted when an earlier, wider one fits again.)
        assert (sim.restarts == 1).all()


def _random_subsets_keep_the_invariants(raw: dict[str, Any], restart_s: float, seed: int) -> None:
    """The workload `raw` simulated under a policy running random subsets (seeded `seed`) keeps
    every invariant (`check_invariants`)."""
    workload = workload_from_dict(raw)
    recorder = Recorder(RandomSubset(workload.gpus, seed))
    sim = simulate(workload, recorder, restart_s=restart_s, max_rounds=100_000)
    check_invariants(workload, sim, recorder, restart_s)


@settings(max_examples=60)
@given(raw=workloads(), restart_s=st.sampled_from([0.0, 20.0, 45.0]), seed=st.integers(0, 2**16))
def test_random_policy_invariants(raw: dict[str, Any], restart_s: float, seed: int) -> None:
    _random_subsets_keep_the_invariants(raw, restart_s, seed)


@settings(max_examples=60)
@given(raw=workloads(own_restarts=True), restart_s=st.sampled_from([0.0, 20.0]), seed=st.integers(0, 2**16))
def test_jobs_with_their_own_restart_costs_keep_the_invariants(raw: dict[str, Any], restart_s: float,
                                                                seed: int) -> None:
    # Each job is charged its own restart cost where it states one, the simulator's elsewhere:
    # held time minus its cost per restart is its isolated time, and the policy is told each.
    _random_subsets_keep_the_invariants(raw, restart_s, seed)


def _two_jobs(own_s: float | None, round_s: float = 100.0) -> Workload:
    """Two one-GPU jobs of 300 s alone on two GPUs; job "own" states `own_s` (None: none)."""
    jobs = [{"id": name, "arrival_s": 0.0, "gpus": 1, "epochs": 3,
             "phases": [{"epochs": 3, "batch_size": 32, "epoch_s": 100.0}]} for name in ("own", "default")]
    if own_s is not None:
        jobs[0]["restart_s"] = own_s
    return workload_from_dict({"gpus": 2, "round_s": round_s, "jobs": jobs})


def test_a_job_is_charged_its_own_restart_cost_each_time_it_restarts() -> None:
    # Run every other round, each job restarts in every run: "own" loses 45 s per run, "default"
    # the simulator's 20 s, so with w = 100 - cost seconds of work per run, "own" needs 6 runs
    # (55 s each) and finishes at round 10 + 45 + 300 - 5 * 55, "default" 4 runs (80 s each).
    sim = simulate(_two_jobs(45.0), EvenRounds(2), restart_s=20.0)
    assert sim.job_restart_s.tolist() == [45.0, 20.0] and sim.restart_s == 20.0
    assert sim.restarts.tolist() == [6, 4]
    assert sim.finish_s.tolist() == pytest.approx([10 * 100 + 45 + 300 - 5 * 55, 6 * 100 + 20 + 300 - 3 * 80])
    np.testing.assert_allclose(sim.held_s - sim.restarts * sim.job_restart_s, sim.isolated_s)


def test_the_policy_is_told_each_jobs_restart_cost() -> None:
    recorder = Recorder(Fifo(2))
    simulate(_two_jobs(0.0), recorder, restart_s=30.0)
    assert recorder.restart_s == {"own": 0.0, "default": 30.0}


@settings(max_examples=60)
@given(raw=workloads(own_restarts=True, long_restarts=True), restart_s=st.sampled_from([0.0, 20.0, 130.0]),
       seed=st.integers(0, 2**16))
def test_restarts_longer_than_the_round_keep_the_invariants(raw: dict[str, Any], restart_s: float,
                                                             seed: int) -> None:
    # Restarts that go on over several rounds, some lost to a descheduling before they end: held
    # time minus the time spent restarting is still the isolated time.
    _random_subsets_keep_the_invariants(raw, restart_s, seed)


def _one_job(restart_s: float, epoch_s: float = 100.0, epochs: int = 3, round_s: float = 120.0) -> Workload:
    """One one-GPU job of `epochs` epochs of `epoch_s` on one GPU, stating `restart_s`."""
    return workload_from_dict({"gpus": 1, "round_s": round_s, "jobs": [
        {"id": "long", "arrival_s": 0.0, "gpus": 1, "epochs": epochs, "restart_s": restart_s,
         "phases": [{"epochs": epochs, "batch_size": 32, "epoch_s": epoch_s}]}]})


def test_a_restart_longer_than_the_round_goes_on_over_the_next_rounds() -> None:
    # 250 s of restart on 120-s rounds, scheduled every round: rounds 0 and 1 are all restart,
    # round 2 restarts for 10 s more and works from 250 s; 300 s of work end at 550 s.
    recorder = Recorder(Fifo(1))
    sim = simulate(_one_job(250.0), recorder)
    assert sim.restarts.tolist() == [1]
    assert sim.finish_s.tolist() == [pytest.approx(550.0)]
    assert sim.held_s.tolist() == [pytest.approx(550.0)]
    assert len(sim.rounds) == 5
    # No progress until 10 s into the third round: its first epoch (100 s) ends at 350 s, in round 2.
    assert [(call, sizes) for call, _, sizes in recorder.reports] == [(2, [32]), (3, [32]), (4, [32])]


class Pattern(Fifo):
    """FIFO in the rounds (calls, 0-based) whose entry in `on` is true, nothing in the others;
    FIFO in every round past the pattern."""

    def __init__(self, capacity: int, on: Sequence[bool]) -> None:
        super().__init__(capacity)
        self.on, self.calls = list(on), 0

    def next_round(self) -> list[Hashable]:
        self.calls += 1
        return super().next_round() if self.calls > len(self.on) or self.on[self.calls - 1] else []


def test_a_job_descheduled_in_the_middle_of_its_restart_pays_the_whole_cost_again() -> None:
    # Rounds 0-1 (240 s of the 250-s restart), out in round 2, then every round from round 3:
    # the restart is lost, round 3 starts it over (360 + 250 = 610 s), 300 s of work end at 910 s.
    sim = simulate(_one_job(250.0), Pattern(1, [True, True, False]))
    assert sim.restarts.tolist() == [2]  # a lost restart counts: the job started again
    assert sim.finish_s.tolist() == [pytest.approx(910.0)]
    held = [round(r.start_s / 120.0) for r in sim.rounds if r.jobs]
    assert held == [0, 1, 3, 4, 5, 6, 7]
    # Held: 240 s lost, then 250 s of restart and 300 s of work.
    assert sim.held_s.tolist() == [pytest.approx(240.0 + 250.0 + 300.0)]
    assert sim.held_s[0] - restart_spent_s(held, 250.0, 120.0) == pytest.approx(sim.isolated_s[0])
    # Run every other round, it never gets through its restart: the run stops at max_rounds.
    with pytest.raises(PolicyError, match="unfinished after 40 rounds"):
        simulate(_one_job(250.0), EvenRounds(1), max_rounds=40)


def test_a_restart_that_ends_at_the_round_end_leaves_the_next_round_to_work() -> None:
    # 240 s of restart fill rounds 0 and 1 exactly; round 2 works from its start.
    sim = simulate(_one_job(240.0), Fifo(1))
    assert sim.finish_s.tolist() == [pytest.approx(540.0)] and sim.restarts.tolist() == [1]


@settings(max_examples=40)
@given(raw=workloads(own_restarts=True), restart_s=st.sampled_from([0.0, 20.0, 45.0]), seed=st.integers(0, 2**16))
def test_restarts_shorter_than_the_round_are_charged_within_it(raw: dict[str, Any], restart_s: float,
                                                                 seed: int) -> None:
    # With every restart shorter than the round, each one ends inside the round it starts: the
    # run is the one a simulator charging each restart at the start of its round gives, bit for
    # bit (recomputed here from the recorded rounds, with the same floating-point operations).
    workload = workload_from_dict(raw)
    sim = simulate(workload, RandomSubset(workload.gpus, seed), restart_s=restart_s, max_rounds=100_000)
    round_s = workload.round_s
    costs = [restart_s if job.restart_s is None else job.restart_s for job in workload.jobs]
    work = np.zeros(workload.n_jobs)
    held = np.zeros(workload.n_jobs)
    finish = np.full(workload.n_jobs, np.nan)
    ran_last: set[int] = set()
    index = {job.id: j for j, job in enumerate(workload.jobs)}
    for round_ in sim.rounds:
        start, end = round_.start_s, round_.start_s + round_s
        picked = [index[job_id] for job_id in round_.jobs]
        for j in picked:
            work_from = start + (costs[j] if j not in ran_last else 0.0)
            need = workload.jobs[j].isolated_s - work[j]
            if need <= end - work_from:
                finish[j], work[j] = work_from + need, workload.jobs[j].isolated_s
                held[j] += work_from + need - start
            else:
                work[j] += end - work_from
                held[j] += end - start
        ran_last = set(picked)
    assert sim.finish_s.tolist() == finish.tolist()
    assert sim.held_s.tolist() == held.tolist()


@settings(max_examples=40)
@given(raw=workloads(), restart_s=st.sampled_from([0.0, 20.0]))
def test_a_job_alone_finishes_one_restart_after_its_round(raw: dict[str, Any], restart_s: float) -> None:
    # Every job on a GPU of its own (gang 1, as many GPUs as jobs): each is alone on its share
    # and runs every round from the first round start at or after its arrival, so
    # finish = ceil(arrival / round_s) * round_s + restart_s + isolated_s.
    for job in raw["jobs"]:
        job["gpus"] = 1
    raw["gpus"] = len(raw["jobs"])
    workload = workload_from_dict(raw)
    sim = simulate(workload, Fifo(workload.gpus), restart_s=restart_s)
    first = np.array([first_round(a, workload.round_s) for a in workload.arrival_s]) * workload.round_s
    np.testing.assert_allclose(sim.finish_s, first + restart_s + workload.isolated_s, rtol=1e-12)


@settings(max_examples=40)
@given(raw=workloads(), restart_s=st.sampled_from([0.0, 20.0, 45.0]))
def test_a_job_run_every_other_round_restarts_each_time(raw: dict[str, Any], restart_s: float) -> None:
    # One job, run every other round: each run restarts, so it needs k = ceil(isolated_s / w)
    # runs of w = round_s - restart_s seconds of work and finishes in the k-th, at
    # (r0 + 2 (k - 1)) * round_s + restart_s + (isolated_s - (k - 1) w), r0 = its arrival round
    # (the policy's first call: the empty rounds before it are skipped).
    raw["jobs"] = raw["jobs"][:1]
    workload = workload_from_dict(raw)
    job, round_s = workload.jobs[0], workload.round_s
    sim = simulate(workload, EvenRounds(workload.gpus), restart_s=restart_s)
    work = round_s - restart_s
    k = math.ceil(job.isolated_s / work)
    arrival_round = first_round(job.arrival_s, round_s)
    r0 = arrival_round
    expected = (r0 + 2 * (k - 1)) * round_s + restart_s + job.isolated_s - (k - 1) * work
    assert sim.finish_s[0] == pytest.approx(expected, rel=1e-12)
    assert sim.restarts[0] == k


def test_the_120_job_workload_with_fifo() -> None:
    workload = load_workload("shockwave_120jobs_32gpus")
    recorder = Recorder(Fifo(workload.gpus))
    calls: list[tuple[int, int, int]] = []
    sim = simulate(workload, recorder, progress=lambda *args: calls.append(args))
    check_invariants(workload, sim, recorder, 20.0)
    assert [c[0] for c in calls] == list(range(len(sim.rounds)))
    assert all(c[2] == 120 for c in calls)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls) and calls[-1][1] == 120
    assert sim.planner_busy.all()  # job 0 arrives at t = 0 and jobs keep arriving until the end


def test_empty_rounds_are_skipped_to_the_next_arrival() -> None:
    raw = {"gpus": 1, "round_s": 100, "jobs": [
        {"id": "late", "arrival_s": 350, "gpus": 1, "epochs": 1,
         "phases": [{"epochs": 1, "batch_size": 32, "epoch_s": 10.0}]}]}
    recorder = Recorder(Fifo(1))
    sim = simulate(workload_from_dict(raw), recorder)
    assert recorder.added == {"late": 0}  # before the first call: rounds 0-3 are empty, skipped
    assert recorder.round == 1 == len(sim.rounds)
    assert sim.planner_busy.tolist() == [True]
    assert sim.rounds == (Round(400.0, ("late",)),)
    assert sim.finish_s.tolist() == [400 + 20 + 10]
    assert sim.job_id.dtype == object and sim.job_id.tolist() == ["late"]


def test_an_arrival_1e9_seconds_away_is_reached_at_once() -> None:
    # Was: 8.3 million empty rounds stepped one by one (a hang).
    raw = {"gpus": 1, "round_s": 120.0, "jobs": [
        {"id": k, "arrival_s": at, "gpus": 1, "epochs": 3, "phases": [{"epochs": 3, "batch_size": 32, "epoch_s": 50.0}]}
        for k, at in enumerate([0.0, 1e9])]}
    recorder = Recorder(Fifo(1))
    sim = simulate(workload_from_dict(raw), recorder, max_rounds=10**7)
    assert [r.start_s for r in sim.rounds] == [0.0, 120.0, 1_000_000_080.0, 1_000_000_200.0]
    assert recorder.round == 4 and recorder.added == {0: 0, 1: 2}
    assert sim.finish_s.tolist() == [170.0, 1_000_000_080.0 + 170.0]


@settings(max_examples=40)
@given(raw=workloads(), gap_s=st.sampled_from([0.0, 1234.5, 5000.0]))
def test_skipping_empty_rounds_changes_nothing_else(raw: dict[str, Any], gap_s: float) -> None:
    # The same run as stepping every round: a policy that ignores empty rounds (Fifo) gives the
    # same finishes, restarts and rounds with jobs present whatever the gaps between arrivals.
    for k, job in enumerate(raw["jobs"]):
        job["arrival_s"] += gap_s * k
    workload = workload_from_dict(raw)
    sim = simulate(workload, Fifo(workload.gpus))
    stepped = _stepped(workload)
    np.testing.assert_array_equal(sim.finish_s, stepped.finish_s)
    np.testing.assert_array_equal(sim.restarts, stepped.restarts)
    assert sim.rounds == tuple(r for r, busy in zip(stepped.rounds, stepped.planner_busy, strict=True) if busy)
    assert summarize(sim) == {**summarize(stepped), "rounds": summarize(sim)["rounds"],
                              "planner_s": summarize(sim)["planner_s"]}


def _stepped(workload: Workload) -> Simulation:
    """The reference: the round semantics (docs/simulation.md) under `Fifo`, stepped here one
    round at a time in plain Python, empty rounds included (recorded with ``planner_busy`` False)."""
    from vfm.cluster._trace import Trace

    trace = Trace(workload, ClusterTypes.single(workload.gpus))
    isolated, ends, origin = trace.isolated_s[0], trace.ends[0], trace.origin[0]
    round_s, restart_s, n = workload.round_s, 20.0, workload.n_jobs
    policy = Fifo(workload.gpus)
    ids = [job.id for job in workload.jobs]
    order = np.argsort(workload.arrival_s, kind="stable")
    work = np.zeros(n)
    done = np.zeros(n, dtype=np.int64)
    finish = np.full(n, np.nan)
    restarts = np.zeros(n, dtype=np.int64)
    held = np.zeros(n)
    ran_last = np.zeros(n, dtype=bool)
    rounds, busy = [], []
    added = finished = 0
    k = 0
    while finished < n:
        start = k * round_s
        while added < n and workload.arrival_s[order[added]] <= start:
            j = int(order[added])
            policy.add_job(ids[j], workload.jobs[j].gpus, workload.jobs[j].regimes, workload.jobs[j].epochs)
            added += 1
        busy.append(added > finished)
        run = [ids.index(i) for i in policy.next_round()]
        rounds.append(Round(start, tuple(ids[j] for j in run)))
        ran_now = np.zeros(n, dtype=bool)
        for j in run:
            restarting = not ran_last[j]
            restarts[j] += restarting
            begin = start + (restart_s if restarting else 0.0)
            need = isolated[j] - work[j]
            if need <= start + round_s - begin:
                finish[j] = begin + need
                work[j] = isolated[j]
                held[j] += finish[j] - start
                finished += 1
            else:
                work[j] += start + round_s - begin
                held[j] += round_s
            after = np.searchsorted(ends, origin[j] + work[j], side="right") - trace.offset[j]
            after = trace.epochs[j] if not np.isnan(finish[j]) else min(max(after, done[j]), trace.epochs[j] - 1)
            if after > done[j]:
                policy.report_progress(ids[j], trace.batch_size[trace.offset[j] + done[j]:trace.offset[j] + after])
            done[j] = after
            ran_now[j] = True
        ran_last = ran_now
        k += 1
    return Simulation(workload=workload.name, policy="Fifo", gpus=workload.gpus, n_jobs=n, round_s=round_s,
                      restart_s=restart_s, job_id=np.array(ids), arrival_s=workload.arrival_s, finish_s=finish,
                      isolated_s=isolated, restarts=restarts, held_s=held, rounds=tuple(rounds),
                      planner_s=np.zeros(len(rounds)), planner_busy=np.array(busy), busy_gpu_s=float(
                          (trace.gpus * held).sum()))


def test_round_s_and_restart_s_arguments() -> None:
    workload = workload_from_dict({"gpus": 1, "round_s": 120, "jobs": [
        {"id": 0, "arrival_s": 0, "gpus": 1, "epochs": 2, "phases": [{"epochs": 2, "batch_size": 8, "epoch_s": 50}]}]})
    sim = simulate(workload, Fifo(1), round_s=30.0, restart_s=5.0)
    assert sim.finish_s[0] == pytest.approx(105.0)  # 5 s restart, then 100 s of epochs
    assert len(sim.rounds) == 4 and sim.round_s == 30.0
    for bad in (-1.0, float("nan"), float("inf")):
        with pytest.raises(ValidationError, match="restart_s"):
            simulate(workload, Fifo(1), restart_s=bad)
    # A restart as long as the round or longer goes on into the next rounds: 150 s, then 100 s.
    assert simulate(workload, Fifo(1), restart_s=150.0).finish_s[0] == pytest.approx(250.0)
    with pytest.raises(ValidationError, match="round_s"):
        simulate(workload, Fifo(1), round_s=0.0)
    with pytest.raises(ValidationError, match="max_rounds"):
        simulate(workload, Fifo(1), max_rounds=0)


# ---------------------------------------------------------------------------------------------
# Workload files
# ---------------------------------------------------------------------------------------------

VALID: dict[str, Any] = {
    "name": "tiny", "gpus": 4, "round_s": 120,
    "jobs": [
        {"id": 3, "arrival_s": 0.0, "gpus": 1, "epochs": 3, "isolated_s": 130.0,
         "phases": [{"epochs": 2, "batch_size": 16, "epoch_s": 40.0},
                    {"epochs": 1, "batch_size": 32, "epoch_s": 50.0}]},
        {"id": 7, "arrival_s": 30.0, "gpus": 2, "epochs": 2,
         "phases": [{"epochs": 2, "batch_size": 64, "epoch_s": 25.0}]},
    ],
}


def test_load_by_path_and_by_name(tmp_path) -> None:
    path = tmp_path / "tiny.json"
    path.write_text(json.dumps(VALID))
    workload = load_workload(path)
    assert (workload.name, workload.gpus, workload.round_s, workload.n_jobs) == ("tiny", 4, 120.0, 2)
    first = workload.jobs[0]
    assert first.batch_size.tolist() == [16, 16, 32] and first.epoch_s.tolist() == [40, 40, 50]
    assert first.isolated_s == 130.0 and first.regimes == {16: 40.0, 32: 50.0}
    assert not first.epoch_s.flags.writeable
    with pytest.raises(AttributeError):
        first.epochs = 4  # type: ignore[misc]
    shipped = load_workload("shockwave_900jobs_256gpus")
    assert shipped.n_jobs == 900 and shipped.gpus == 256
    assert load_workload("shockwave_120jobs_32gpus.json").n_jobs == 120
    raw = json.loads(path.read_text())
    raw.pop("name")
    assert workload_from_dict(raw, default_name="unnamed").name == "unnamed"


def _edit(path: list[Any], value: Any = None, *, delete: bool = False) -> dict[str, Any]:
    raw = copy.deepcopy(VALID)
    target = raw
    for key in path[:-1]:
        target = target[key]
    if delete:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return raw


JOB = r"job 1 \(id 7\)"
MALFORMED: list[tuple[list[Any], Any, bool, str]] = [
    (["jobs", 1, "arrival_s"], None, True, rf"{JOB}: missing field 'arrival_s'"),
    (["jobs", 1, "epochs"], None, True, rf"{JOB}: missing field 'epochs'"),
    (["jobs", 1, "phases"], None, True, rf"{JOB}: 'phases' must be a non-empty list \(missing"),
    (["jobs", 1, "phases"], [], False, rf"{JOB}: 'phases' must be a non-empty list"),
    (["jobs", 1, "phases", 0, "epoch_s"], None, True, rf"{JOB}, phase 0: missing field 'epoch_s'"),
    (["jobs", 1, "epochs"], 0, False, rf"{JOB}: epochs must be >= 1, got 0"),
    (["jobs", 1, "epochs"], -2, False, rf"{JOB}: epochs must be >= 1, got -2"),
    (["jobs", 1, "epochs"], 3, False, rf"{JOB}: phases' epochs sum to 2, but epochs is 3"),
    (["jobs", 1, "epochs"], 2.5, False, rf"{JOB}: epochs must be a whole number, got 2.5"),
    (["jobs", 1, "epochs"], "two", False, rf"{JOB}: epochs must be a whole number, got 'two'"),
    (["jobs", 1, "epochs"], True, False, rf"{JOB}: epochs must be a whole number, got True"),
    (["jobs", 1, "gpus"], 0, False, rf"{JOB}: gpus must be >= 1, got 0"),
    (["jobs", 1, "gpus"], 5, False, rf"{JOB}: gpus \(5\) exceeds the cluster's 4 GPUs"),
    (["jobs", 1, "arrival_s"], -1.0, False, rf"{JOB}: arrival_s must be >= 0, got -1"),
    (["jobs", 1, "arrival_s"], None, False, rf"{JOB}: arrival_s must be a finite number, got None"),
    (["jobs", 1, "arrival_s"], "soon", False, rf"{JOB}: arrival_s must be a finite number, got 'soon'"),
    (["jobs", 1, "phases", 0, "epoch_s"], 0.0, False, rf"{JOB}: phase 0: epoch_s must be > 0, got 0"),
    (["jobs", 1, "phases", 0, "epoch_s"], -3.0, False, rf"{JOB}: phase 0: epoch_s must be > 0, got -3"),
    (["jobs", 1, "phases", 0, "batch_size"], 0, False, rf"{JOB}: phase 0: batch_size must be > 0"),
    (["jobs", 1, "phases", 0, "epochs"], -1, False, rf"{JOB}: phase 0: epochs must be >= 0, got -1"),
    (["jobs", 1, "phases", 0], "oops", False, rf"{JOB}, phase 0 must be a JSON object"),
    (["jobs", 1, "isolated_s"], 51.0, False, rf"{JOB}: isolated_s \(51\) differs from the sum"),
    (["jobs", 1, "id"], 3, False, r"job 1 \(id 3\): id repeats job 0"),
    (["jobs", 1, "id"], None, True, r"job 1: missing field 'id'"),
    (["jobs", 1, "id"], 1.5, False, r"job 1: id must be an integer or a string, got 1.5"),
    (["jobs", 1], 42, False, r"job 1 must be a JSON object"),
    (["jobs"], [], False, r"'jobs' must be a non-empty list"),
    (["gpus"], None, True, r"workload: missing field 'gpus'"),
    (["gpus"], 0, False, r"workload: gpus must be a whole number in \[1, "),
    (["round_s"], -120, False, r"workload: round_s must be a number of seconds in \(0, "),
]


@pytest.mark.parametrize(("path", "value", "delete", "message"), MALFORMED)
def test_malformed_files_name_the_job_and_field(tmp_path, path, value, delete, message) -> None:
    file = tmp_path / "bad.json"
    file.write_text(json.dumps(_edit(path, value, delete=delete)))
    with pytest.raises(ValidationError, match=message):
        load_workload(file)


def test_one_batch_size_with_two_durations_is_malformed() -> None:
    raw = _edit(["jobs", 1, "phases"], [{"epochs": 1, "batch_size": 64, "epoch_s": 25.0},
                                        {"epochs": 1, "batch_size": 64, "epoch_s": 30.0}])
    with pytest.raises(ValidationError, match=rf"{JOB}: phase 1: batch_size 64 has epoch_s 30"):
        workload_from_dict(raw)


def test_not_json(tmp_path) -> None:
    file = tmp_path / "bad.json"
    file.write_text("{not json")
    with pytest.raises(ValidationError, match="not valid JSON"):
        load_workload(file)
    with pytest.raises(FileNotFoundError, match=r"no shipped workload of that name \(shipped: shockwave_120"):
        load_workload("no_such_workload")


# ---------------------------------------------------------------------------------------------
# Invalid policy answers
# ---------------------------------------------------------------------------------------------


class Scripted(Fifo):
    """FIFO, except in round `at` (0-based) where it answers `answer`."""

    def __init__(self, capacity: int, at: int, answer: Any) -> None:
        super().__init__(capacity)
        self.at, self.answer, self.calls = at, answer, 0

    def next_round(self) -> Any:
        self.calls += 1
        return self.answer if self.calls - 1 == self.at else super().next_round()


TWO_JOBS: dict[str, Any] = {"gpus": 2, "round_s": 100, "jobs": [
    {"id": "a", "arrival_s": 0, "gpus": 1, "epochs": 1, "phases": [{"epochs": 1, "batch_size": 8, "epoch_s": 50}]},
    {"id": "b", "arrival_s": 150, "gpus": 2, "epochs": 1, "phases": [{"epochs": 1, "batch_size": 8, "epoch_s": 500}]},
]}


@pytest.mark.parametrize(
    ("at", "answer", "message"),
    [
        (0, ["zzz"], r"Scripted.next_round\(\) in round 0 returned job 'zzz', which is not in the workload"),
        (0, ["b"], r"in round 0 returned job 'b', which has not arrived yet"),
        (2, ["a"], r"in round 3 returned job 'a', which has finished"),  # round 1 is empty: skipped
        (0, ["a", "a"], r"in round 0 returned job 'a' 2 times"),
        (2, ["b", "b"], r"in round 3 returned job 'b' 2 times"),
        (0, [["a"]], r"in round 0 returned job \['a'\], which is not in the workload"),
        (0, None, r"in round 0 must return a list of job ids, got NoneType"),
        (0, "a", r"in round 0 must return a list of job ids, got str"),
    ],
)
def test_invalid_answers_raise(at: int, answer: Any, message: str) -> None:
    with pytest.raises(PolicyError, match=message):
        simulate(workload_from_dict(TWO_JOBS), Scripted(2, at, answer))


def test_over_capacity_raises() -> None:
    raw = copy.deepcopy(TWO_JOBS)
    raw["jobs"][1]["arrival_s"] = 0
    with pytest.raises(PolicyError, match=r"Scripted.next_round\(\) in round 0 asked for 3 GPUs .*'a', 'b'.* has 2"):
        simulate(workload_from_dict(raw), Scripted(2, 0, ["a", "b"]))


def test_a_starving_policy_hits_max_rounds() -> None:
    class Idle(Fifo):
        def next_round(self) -> list[Hashable]:
            return []

    with pytest.raises(PolicyError, match=r"Idle left 2 of 2 jobs unfinished after 7 rounds .*starving.*'a'"):
        simulate(workload_from_dict(TWO_JOBS), Idle(2), max_rounds=7)
    with pytest.raises(PolicyError, match=r"Idle left 2 of 2 jobs unfinished after \d+ rounds"):
        simulate(workload_from_dict(TWO_JOBS), Idle(2))  # the default bound


def test_vfm_planner_policy_drives_the_simulator() -> None:
    from vfm.planner import Policy

    raw = copy.deepcopy(VALID)
    raw["jobs"].append({"id": 9, "arrival_s": 200.0, "gpus": 4, "epochs": 4,
                        "phases": [{"epochs": 2, "batch_size": 16, "epoch_s": 70.0},
                                   {"epochs": 2, "batch_size": 64, "epoch_s": 35.0}]})
    workload = workload_from_dict(raw)
    policy = Policy(workload.gpus, round_s=workload.round_s)
    assert isinstance(policy, SchedulingPolicy)
    recorder = Recorder(policy)
    sim = simulate(workload, recorder)
    check_invariants(workload, sim, recorder, 20.0)
    assert sorted(policy.completed, key=str) == [3, 7, 9]


def test_the_simulator_tells_a_policy_each_jobs_kind() -> None:
    workload = load_workload("shockwave_120jobs_32gpus")
    recorder = Recorder(Fifo(workload.gpus))
    simulate(workload, recorder)
    expected = {job.id: (job.training.model, job.training.adaptation) for job in workload.jobs
                if job.training is not None}
    assert len(expected) == workload.n_jobs and recorder.kinds == expected
    untrained = workload_from_dict({"gpus": 1, "round_s": 100, "jobs": [
        {"id": "x", "arrival_s": 0, "gpus": 1, "epochs": 1,
         "phases": [{"epochs": 1, "batch_size": 32, "epoch_s": 10.0}]}]})
    recorder = Recorder(Fifo(1))
    simulate(untrained, recorder)
    assert recorder.kinds == {"x": None}


# --- issue 15: simulate's own arguments -----------------------------------------------------------


def _policy_for(workload: Workload) -> Any:
    from vfm.planner import Policy

    return Policy(workload.gpus)


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda w, p: simulate("workload", p), r"workload must be a vfm.cluster.Workload .* got str"),  # type: ignore[arg-type]
        (lambda w, p: simulate(w, "policy"),  # type: ignore[arg-type]
         r"policy must be an implementation of vfm.cluster.SchedulingPolicy \(add_job, .*\), got str"),
        (lambda w, p: simulate(w, type(p)),  # type: ignore[arg-type]
         r"policy must be a policy object, got the class Policy; pass an instance .* as Policy\(32\)"),
        (lambda w, p: simulate(w, p, progress=3), r"progress must be a callable .* got int"),  # type: ignore[arg-type]
        (lambda w, p: simulate(w, p, round_s="x"), r"round_s must be a finite number of seconds > 0 or None"),  # type: ignore[arg-type]
        (lambda w, p: simulate(w, p, round_s=True), r"round_s must be a finite number of seconds > 0 .* got True"),
        (lambda w, p: simulate(w, p, restart_s="x"),  # type: ignore[arg-type]
         r"restart_s must be a number of seconds in \[0, 1e\+12\] \(MAX_JOB_SECONDS\)"),
        (lambda w, p: simulate(w, p, restart_s=True), r"restart_s must be a number of seconds .* got True"),
        (lambda w, p: simulate(w, p, restart_s=None), r"restart_s must be a number of seconds .* got None"),  # type: ignore[arg-type]
    ],
)
def test_bad_simulate_arguments_are_rejected_by_name(call, pattern):
    workload = load_workload("shockwave_120jobs_32gpus").head(2)
    with pytest.raises(ValidationError, match=pattern):
        call(workload, _policy_for(workload))


# ---------------------------------------------------------------------------------------------
# Diagnostics: what a policy says about its rounds, through the protocol only
# ---------------------------------------------------------------------------------------------


class Explaining(Fifo):
    """First fit that says, every third round, that it re-planned, and that a guard decided one job."""

    def __init__(self, capacity: int) -> None:
        super().__init__(capacity)
        self.asked = 0

    def next_round(self) -> list[Hashable]:
        self.asked += 1
        return super().next_round()

    def diagnostics(self) -> Mapping[str, Any]:
        replan = {"solver": "scripted", "status": "optimal", "fairness": "none", "solve": 0.5}
        return {"guards": {"continuity": 1}, "replan": replan if self.asked % 3 == 1 else None}


class Attributes(Fifo):
    """First fit carrying a ``last_plan`` and a ``last_decision`` that are not the protocol's."""

    last_plan = object()
    last_decision = object()


def test_the_simulator_records_what_a_policy_reports_through_diagnostics_and_nothing_else():
    workload = load_workload("shockwave_120jobs_32gpus")
    explained = simulate(workload, Explaining(workload.gpus))
    rounds = len(explained.rounds)
    assert isinstance(Explaining(1), ReportsDiagnostics) and not isinstance(Attributes(1), ReportsDiagnostics)
    assert len(explained.replans) == (rounds + 2) // 3
    assert explained.replans[0] == {"solver": "scripted", "status": "optimal", "fairness": "none", "solve": 0.5}
    assert explained.guards == {"continuity": rounds}
    plain = simulate(workload, Attributes(workload.gpus))
    assert plain.replans == () and plain.guards == {}
    assert [r.jobs for r in plain.rounds] == [r.jobs for r in explained.rounds]


def test_the_default_round_bound_counts_the_rounds_a_long_restart_takes() -> None:
    # 300 s of work on 120-s rounds. A 20-s restart: a restart every round, ceil(300 / 100) = 3
    # rounds. A 250-s restart: k = 3 rounds per start (250 s of restart, 110 s of work), so
    # 3 * ceil(300 / 110) = 9 rounds. Twice that, plus one round per job (no arrival after 0).
    from vfm.cluster.simulator import default_max_rounds
    assert default_max_rounds(_one_job(20.0), 120.0, 20.0) == 2 * 3 + 1 + 1
    assert default_max_rounds(_one_job(250.0), 120.0, 20.0) == 2 * 9 + 1 + 1
    # 240 s (two rounds exactly): k = 3, 120 s of work per start, 3 * 3 rounds.
    assert default_max_rounds(_one_job(240.0), 120.0, 20.0) == 2 * 9 + 1 + 1
    # Run with its default bound, a job kept running through its restart finishes within it.
    assert simulate(_one_job(250.0), Fifo(1)).finish_s.tolist() == [pytest.approx(550.0)]
