"""The robustness benchmark: its cases, its target check and its outputs (on small cases)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import robustness


def test_the_cases_span_what_the_issue_asks_and_split_in_two_halves() -> None:
    scenarios = robustness.SCENARIOS
    assert len(robustness.case_names()) == 2 * len(scenarios) >= 24
    contention = [s.jobs / s.gpus for s in scenarios]
    assert min(contention) <= 2 and max(contention) >= 10
    assert {s.gpus for s in scenarios} >= {12, 16, 32, 256}
    assert {s.gangs for s in scenarios} == {"single", "artifact", "wide", "gang8"}
    assert {s.durations for s in scenarios} == {"artifact", "shortlong"}
    assert any(s.interarrival_s == 0 for s in scenarios) and any(s.jobs * s.interarrival_s >= 8 * 3600
                                                                  for s in scenarios)
    assert any(s.source for s in scenarios) and any(not s.source for s in scenarios)
    # The two halves draw the same scenario with different seeds.
    a = robustness.case_workload("g32-c2-artifact-trace@choose")
    b = robustness.case_workload("g32-c2-artifact-trace@report")
    assert a.n_jobs == b.n_jobs and a.isolated_s.tolist() != b.isolated_s.tolist()


NEW = ("g12-c6-gang8-trace", "g16-c6-gang8-trace", "g32-c3-artifact-trace-shortlong")


def test_the_earlier_scenarios_keep_their_seeds() -> None:
    # New scenarios are appended: an earlier one's index in SCENARIOS (its seed) does not move.
    assert [s.name for s in robustness.SCENARIOS[:12]][:2] == ["g32-c2-artifact-trace", "g32-c6-artifact-burst"]
    assert [s.name for s in robustness.SCENARIOS[12:]] == list(NEW)


@pytest.mark.parametrize("name", NEW)
def test_the_new_scenarios_build_and_every_gang_fits_the_cluster(name: str) -> None:
    scenario = next(s for s in robustness.SCENARIOS if s.name == name)
    assert 60 <= scenario.jobs <= 120 and scenario.jobs * scenario.interarrival_s == pytest.approx(
        robustness._TRACE_SPAN_S)
    for half in robustness.HALVES:
        workload = robustness.case_workload(f"{name}@{half}")
        gangs = np.array([job.gpus for job in workload.jobs])
        assert workload.n_jobs == scenario.jobs and workload.gpus == scenario.gpus
        assert gangs.max() <= workload.gpus
        if scenario.gangs == "gang8":
            assert 0.55 <= (gangs == 8).mean() <= 0.85 and set(gangs.tolist()) <= {1, 2, 4, 8}
        else:  # many short jobs, few long ones
            long = workload.isolated_s > 3 * 3600
            assert 0.05 <= long.mean() <= 0.3 and np.median(workload.isolated_s) < 3600


def _metrics(makespan: float, jct: float, ftf: float, unfair: float) -> dict[str, float]:
    return {"makespan_s": makespan, "avg_jct_s": jct, "worst_ftf": ftf, "unfair_pct": unfair}


BASELINES = {"max_min_fairness": _metrics(100, 50, 2.0, 10), "finish_time_fairness": _metrics(100, 60, 1.5, 5),
             "allox": _metrics(120, 45, 3.0, 20), "gandiva_fair": _metrics(110, 55, 1.6, 4),
             "min_total_duration": _metrics(90, 80, 9.0, 50)}


def test_target_misses_pass_when_every_target_is_met_within_its_tolerance() -> None:
    # Worst FTF within 0.1 % of Themis's (the best), unfair share within 0.1 points of Gandiva's,
    # average JCT below the best of Gavel/Themis/Gandiva and +9.8 % of AlloX's, makespan +1.9 % of OSSP's.
    vfm = _metrics(91.7, 49.4, 1.5014, 4.09)
    assert robustness.target_misses({**BASELINES, "vfm": vfm}) == []
    assert robustness.target_checks({**BASELINES, "vfm": vfm}) == dict.fromkeys(robustness.TARGETS)


def test_target_misses_names_each_target_missed_and_by_how_much() -> None:
    missed = robustness.target_misses({**BASELINES, "vfm": _metrics(100, 51.5, 1.8, 7)})
    assert missed == ["worst_ftf 1.8 > Themis's 1.5 (+20.0%)", "unfair_pct 7 > Gandiva's 4 (+3.00 pts)",
                      "avg_jct +3.0% vs Gavel > 2%", "avg_jct +14.4% vs AlloX > 10%",
                      "makespan +11.1% vs OSSP > 2%"]
    # Just past each tolerance is a miss; AlloX's JCT target alone.
    checks = robustness.target_checks({**BASELINES, "vfm": _metrics(91.9, 49.6, 1.502, 4.11)})
    assert [t for t, miss in checks.items() if miss] == ["worst_ftf", "unfair_pct", "avg_jct_allox", "makespan_ossp"]
    alone = robustness.target_checks({**BASELINES, "allox": _metrics(120, 40, 3.0, 20), "vfm": _metrics(90, 45, 1, 1)})
    assert [t for t, miss in alone.items() if miss] == ["avg_jct_allox"]


def test_targets_without_their_baselines_do_not_apply() -> None:
    policies = {"max_min_fairness": BASELINES["max_min_fairness"], "vfm": _metrics(200, 50, 2.0, 10)}
    assert robustness.target_checks(policies) == {"worst_ftf": None, "unfair_pct": None, "avg_jct": None}


def test_a_run_writes_the_table_and_win_matrix(tmp_path, monkeypatch) -> None:
    small = robustness.Scenario("tiny", 10, 4, 30.0, "single")
    monkeypatch.setattr(robustness, "SCENARIOS", (small,))
    robustness.case_workload.cache_clear()
    robustness.main(["--executor", "serial", "--quiet", "--out", str(tmp_path),
                     "--policies", "vfm,max_min_fairness,finish_time_fairness,min_total_duration"])
    robustness.case_workload.cache_clear()
    table = (tmp_path / "table.txt").read_text()
    assert "tiny@choose" in table and "tiny@report" in table
    assert "report half: targets met on" in table and "longest wait under vfm" in table
    assert "workloads meeting each target: worst_ftf" in table and "makespan_ossp" in table
    assert "max_wait guard decided" in table and ">20" in table and "fired" in table
    result = json.loads((tmp_path / "results.json").read_text())
    for entry in result["cases"].values():
        vfm, gavel = entry["policies"]["vfm"], entry["policies"]["max_min_fairness"]
        assert vfm["max_wait_fired"] >= 0 and vfm["waits_over_20"] >= 0 and gavel["waits_over_20"] >= 0
        assert "max_wait_fired" not in gavel
        # Every job is present in at least one round, and no guard decides more job-rounds than there are.
        assert vfm["job_rounds"] >= 10 and all(0 <= count <= vfm["job_rounds"] for count in vfm["guards"].values())
        assert vfm["guards"]["max_wait"] == vfm["max_wait_fired"]
    assert "largest share of a workload's job-rounds each guard decided" in table
    assert (tmp_path / "robustness.png").stat().st_size > 0


def test_guard_shares_name_the_largest_share_of_each_guard_and_its_workload() -> None:
    cases = {
        "a@report": {"policies": {"vfm": {"guards": {"max_wait": 5, "continuity": 10}, "job_rounds": 1000}}},
        "b@report": {"policies": {"vfm": {"guards": {"max_wait": 3, "continuity": 40}, "job_rounds": 100}}},
        "c@report": {"policies": {"vfm": {"max_wait_fired": 0}}},  # a result from before the counts
    }
    assert robustness.guard_shares(cases) == {"max_wait": (3.0, "b@report"), "continuity": (40.0, "b@report")}


def test_unknown_cases_and_options_are_one_line_errors(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        robustness.main(["--cases", "nope@report", "--quiet"])
    assert exit_.value.code == 2 and "(unknown case 'nope@report')" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        robustness.main(["--cases", "g32-c2-artifact-trace@choose", "--vfm", "efficiency"])
    assert "--vfm must be NAME=VALUE, got efficiency" in capsys.readouterr().err
