"""benchmarks/restart_costs.py: the workloads it draws, the policy told nothing, and its table."""

from __future__ import annotations

import numpy as np

from benchmarks import restart_costs
from vfm.cluster import ReportsDiagnostics, SchedulingPolicy, simulate
from vfm.planner import Policy
from vfm.planner.shockwave import DEFAULT_RESTART_S


def test_every_job_gets_a_seeded_restart_cost_in_the_range_and_the_same_jobs_whatever_the_range() -> None:
    low = restart_costs.workload(16, 3, 25.0, 115.0)
    again = restart_costs.workload(16, 3, 25.0, 115.0)
    wide = restart_costs.workload(16, 3, 25.0, 250.0)
    costs = np.array([job.restart_s for job in low.jobs])
    assert ((costs >= 25.0) & (costs <= 115.0)).all() and np.unique(costs).size == costs.size
    assert costs.tolist() == [job.restart_s for job in again.jobs]
    assert [job.arrival_s for job in wide.jobs] == [job.arrival_s for job in low.jobs]
    assert [job.isolated_s for job in wide.jobs] == [job.isolated_s for job in low.jobs]


def test_the_untold_policy_takes_every_job_at_the_default_cost_and_the_simulator_charges_the_same() -> None:
    costed = restart_costs.workload(8, 0, 25.0, 115.0)
    told, inner = Policy(costed.gpus), Policy(costed.gpus)
    untold = restart_costs.Untold(inner)
    assert isinstance(untold, SchedulingPolicy) and isinstance(untold, ReportsDiagnostics)
    with_costs = simulate(costed, told)
    without = simulate(costed, untold)
    assert {record.restart_s for record in inner.state.jobs.values()} <= {DEFAULT_RESTART_S}
    assert inner.completed and sorted(inner.completed) == sorted(told.completed)
    assert with_costs.job_restart_s.tolist() == without.job_restart_s.tolist() == [j.restart_s for j in costed.jobs]


def test_the_table_has_a_row_per_round_length_and_policy() -> None:
    rows = [(configuration, policy, {"restarts_mean": 1.5, "restarts_max": 4.0, "committed_pct": 50.0,
                                     "restart_gpu_h": 2.0, "avg_jct_s": 100.0, "makespan_s": 200.0,
                                     "worst_ftf": 1.25, "waits_over_20": 3.0})
            for configuration in restart_costs.CONFIGURATIONS for policy, _, _ in restart_costs.RUNS]
    table = restart_costs.report(rows, seeds=2, jobs=16).splitlines()
    assert table[0].startswith("vfm on generated workloads of 16 jobs on 32 GPUs")
    assert [line.split()[:3] for line in table[2:]] == [
        [round_s, "25-250", policy] for round_s in ("120", "360") for policy in ("told", "untold", "no-limit")]


def test_starts_on_committed_rounds_are_counted_only_where_the_plan_commits_rounds() -> None:
    # 48 jobs on 32 GPUs: some wait long enough for the wait limit to commit their rounds. A
    # committed start is one of the starts, so their share is below 100 % (every first start of a
    # job that never waited is not committed).
    limited = restart_costs.run(48, 1, 120.0, 25.0, 250.0, told=True)
    unlimited = restart_costs.run(48, 1, 120.0, 25.0, 250.0, told=True, wait_limit=False)
    assert unlimited["committed_pct"] == 0.0
    assert 0.0 < limited["committed_pct"] < 100.0


def test_both_round_lengths_draw_costs_up_to_250_s() -> None:
    assert restart_costs.CONFIGURATIONS == ((120.0, 25.0, 250.0), (360.0, 25.0, 250.0))


def test_restarts_longer_than_the_round_are_charged_and_counted_as_gpu_hours_lost() -> None:
    # Costs of 25 to 250 s on 120-s rounds: every job finishes, and the GPU-hours held without
    # work are at least those of one restart per job.
    costed = restart_costs.workload(8, 0, 25.0, 250.0)
    assert any(job.restart_s > 120.0 for job in costed.jobs)
    measured = restart_costs.run(8, 0, 120.0, 25.0, 250.0, told=True)
    floor = sum(job.gpus * job.restart_s for job in costed.jobs) / 3600
    assert measured["restart_gpu_h"] >= floor * (1 - 1e-9) and measured["restarts_mean"] >= 1
