"""vfm.cluster.metrics: the metrics (docs/simulation.md) checked against the Shockwave artifact's published results."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from vfm.cluster import load_workload, simulate
from vfm.cluster.metrics import (
    avg_jct_s,
    ftf_rho,
    headline,
    jct_s,
    makespan_s,
    summarize,
    unfair_pct,
    utilization,
    worst_ftf,
)
from vfm.cluster.workload import SHIPPED
from vfm.errors import ValidationError

from .test_simulator import Fifo

CANONICAL = json.loads((SHIPPED / "canonical_results_120jobs_32gpus.json").read_text())
WORKLOAD = load_workload("shockwave_120jobs_32gpus")
ARRIVAL = WORKLOAD.arrival_s
ISOLATED = WORKLOAD.isolated_s

# Tolerances from the published rounding. The per-job jct_s carry one decimal, so each is off
# by at most JCT_ROUND = 0.05 s from the value the artifact computed its metrics from; arrivals
# are whole seconds (exact). Each headline number is then rounded once more for publication:
# makespan_s and avg_jct_s to one decimal (another 0.05 s), worst_ftf to four decimals (5e-5),
# unfair_pct to two decimals (0.005), per-job ftf_rho to five decimals (5e-6). A JCT error of
# 0.05 s moves job i's rho by at most 0.05 / (isolated_s[i] * N / G).
JCT_ROUND = 0.05
FLOAT_SLACK = 1e-9  # binary floating point on top of decimal rounding


def test_the_workload_matches_the_published_results() -> None:
    assert CANONICAL["workload"] == WORKLOAD.name
    assert CANONICAL["round_s"] == WORKLOAD.round_s
    assert np.array_equal(ARRIVAL, np.round(ARRIVAL))  # whole seconds: no rounding there
    for published in CANONICAL["policies"].values():
        assert len(published["jct_s"]) == WORKLOAD.n_jobs


@pytest.mark.parametrize("policy", sorted(CANONICAL["policies"]))
def test_metrics_reproduce_the_published_numbers(policy: str) -> None:
    published = CANONICAL["policies"][policy]
    jct = np.array(published["jct_s"])
    factor = WORKLOAD.n_jobs / WORKLOAD.gpus  # 3.75
    rho = ftf_rho(jct, ISOLATED, WORKLOAD.gpus)
    rho_slack = JCT_ROUND / (ISOLATED * factor)  # (n,) what the JCT rounding can do to rho

    assert makespan_s(ARRIVAL, jct) == pytest.approx(published["makespan_s"], abs=JCT_ROUND + 0.05 + FLOAT_SLACK)
    assert avg_jct_s(jct) == pytest.approx(published["avg_jct_s"], abs=JCT_ROUND + 0.05 + FLOAT_SLACK)
    assert worst_ftf(rho) == pytest.approx(published["worst_ftf"], abs=rho_slack.max() + 5e-5)
    assert np.all(np.abs(rho - np.array(published["ftf_rho"])) <= rho_slack + 5e-6 + FLOAT_SLACK)
    # No job's rho is within the JCT rounding of the threshold, so the unfair count is exact
    # and only the two-decimal publication rounding remains.
    assert np.all(np.abs(rho - 1.05) > rho_slack)
    assert unfair_pct(rho) == pytest.approx(published["unfair_pct"], abs=0.005 + FLOAT_SLACK)
    # utilization needs busy GPU-seconds, which the published file does not give per job.
    got = headline(ARRIVAL, jct, ISOLATED, WORKLOAD.gpus)
    assert set(got) == {"makespan_s", "avg_jct_s", "worst_ftf", "unfair_pct"}
    assert got["worst_ftf"] == worst_ftf(rho)


def test_metrics_on_a_hand_computed_example() -> None:
    arrival = np.array([0.0, 10.0, 20.0])
    finish = np.array([100.0, 50.0, 220.0])
    isolated = np.array([50.0, 40.0, 100.0])
    jct = jct_s(arrival, finish)
    assert jct.tolist() == [100.0, 40.0, 200.0]
    assert makespan_s(arrival, jct) == 220.0
    assert avg_jct_s(jct) == pytest.approx(340.0 / 3)
    # N = 3 jobs on G = 2 GPUs: equal share slows each job by 1.5.
    rho = ftf_rho(jct, isolated, gpus=2)
    assert rho == pytest.approx([100 / 75, 40 / 60, 200 / 150])
    assert worst_ftf(rho) == pytest.approx(4 / 3)
    assert unfair_pct(rho) == pytest.approx(200 / 3)
    # More GPUs than jobs: no slowdown below isolated (max(1, N/G)).
    assert ftf_rho(jct, isolated, gpus=8) == pytest.approx(jct / isolated)
    # n_jobs counts the workload, not the arrays passed.
    assert ftf_rho(jct, isolated, gpus=2, n_jobs=6) == pytest.approx(jct / (isolated * 3))
    assert utilization(busy_gpu_s=220.0, gpus=2, makespan=220.0) == 0.5
    assert unfair_pct(np.array([1.05, 1.0500001])) == 50.0  # strictly greater than 1.05


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: jct_s([0.0, 1.0], [2.0]), r"finish_s must have 2 entries, one per job of arrival_s, got 1"),
        (lambda: jct_s([0.0], [np.nan]), "finite"),
        (lambda: makespan_s([], []), "arrival_s must list at least one job, got none"),
        (lambda: makespan_s([[0.0]], [1.0]), r"arrival_s must have shape \(any\), one entry per job, got \(1, 1\)"),
        (lambda: ftf_rho([1.0], [0.0], gpus=1), r"isolated_s\[0\] must be a finite number > 0"),
        (lambda: ftf_rho([1.0], [1.0], gpus=0), "gpus"),
        (lambda: utilization(1.0, 2, 0.0), "makespan"),
    ],
)
def test_bad_inputs_raise(call, message) -> None:
    with pytest.raises(ValidationError, match=message):
        call()


def test_summarize_a_simulation() -> None:
    simulation = simulate(WORKLOAD, Fifo(WORKLOAD.gpus))
    summary = summarize(simulation)
    json.dumps(summary)  # plain Python values only
    assert summary["makespan_s"] == pytest.approx(simulation.finish_s.max())
    assert summary["avg_jct_s"] == pytest.approx((simulation.finish_s - ARRIVAL).mean())
    assert summary["utilization"] == pytest.approx(simulation.busy_gpu_s / (32 * summary["makespan_s"]))
    assert 0 < summary["utilization"] <= 1
    assert 0 <= summary["unfair_pct"] <= 100
    assert summary["worst_ftf"] == max(job["ftf_rho"] for job in summary["jobs"])
    assert 0 <= summary["planner_s"]["median"] <= summary["planner_s"]["max"]
    assert [job["id"] for job in summary["jobs"]] == [job.id for job in WORKLOAD.jobs]
    for job in summary["jobs"]:
        assert job["jct_s"] == pytest.approx(job["finish_s"] - job["arrival_s"])
        assert math.isfinite(job["ftf_rho"])
    assert len(summary["rounds"]) == len(simulation.rounds)
    assert summary["rounds"][0] == {"start_s": 0.0, "jobs": [0]}  # only job 0 arrives at t = 0


class _Scripted:
    """Runs the jobs in a fixed order, one at a time, each to its end (a 1-GPU cluster)."""

    def __init__(self, order):
        self.order, self.left = list(order), {}

    def add_job(self, job_id, gpus, regimes, epochs, budget=1.0, *, kind=None, restart_s=None):
        self.left[job_id] = epochs

    def remove_job(self, job_id):
        del self.left[job_id]

    def report_progress(self, job_id, batch_sizes):
        self.left[job_id] -= len(batch_sizes)
        if self.left[job_id] == 0:
            self.remove_job(job_id)

    def next_round(self):
        while self.order and self.order[0] not in self.left:  # finished (or, here never, not arrived)
            self.order.pop(0)
        return self.order[:1]


def test_longest_wait_counts_rounds_present_and_not_running() -> None:
    from vfm.cluster import simulate, workload_from_dict
    from vfm.cluster.metrics import longest_wait_rounds, waits_reaching

    def job(i, arrival, epochs):
        return {"id": i, "arrival_s": arrival, "gpus": 1, "epochs": epochs,
                "phases": [{"epochs": epochs, "batch_size": 1, "epoch_s": 100.0}]}

    # Round 100 s with no restart cost: a runs rounds 0-2, b (arrived at 50 s) rounds 3-4, c (at 0) round 5.
    workload = workload_from_dict({"gpus": 1, "round_s": 100.0, "jobs": [job("a", 0, 3), job("b", 50, 2),
                                                                          job("c", 0, 1)]})
    simulation = simulate(workload, _Scripted(["a", "b", "c"]), restart_s=0.0)
    # b is present from round 1 (the first starting after its arrival): waits rounds 1, 2; c waits 0-4.
    assert longest_wait_rounds(simulation).tolist() == [0, 2, 5]
    assert summarize(simulation)["longest_wait_rounds"] == 5
    assert summarize(simulation)["jobs_waiting_over"] == {"20": 0}
    # Runs reaching 2 rounds: b's and c's; 5: c's only; 6: none.
    assert [waits_reaching(simulation, k) for k in (1, 2, 5, 6)] == [2, 2, 1, 0]
