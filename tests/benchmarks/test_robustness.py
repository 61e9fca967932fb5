"""The robustness benchmark: its cases, its target check and its outputs (on small cases)."""

from __future__ import annotations

import pytest

from benchmarks import robustness


def test_the_cases_span_what_the_issue_asks_and_split_in_two_halves() -> None:
    scenarios = robustness.SCENARIOS
    assert len(robustness.case_names()) == 2 * len(scenarios) >= 24
    contention = [s.jobs / s.gpus for s in scenarios]
    assert min(contention) <= 2 and max(contention) >= 10
    assert {s.gpus for s in scenarios} >= {32, 256}
    assert {s.gangs for s in scenarios} == {"single", "artifact", "wide"}
    assert any(s.interarrival_s == 0 for s in scenarios) and any(s.jobs * s.interarrival_s >= 8 * 3600
                                                                  for s in scenarios)
    assert any(s.source for s in scenarios) and any(not s.source for s in scenarios)
    # The two halves draw the same scenario with different seeds.
    a = robustness.case_workload("g32-c2-artifact-trace@choose")
    b = robustness.case_workload("g32-c2-artifact-trace@report")
    assert a.n_jobs == b.n_jobs and a.isolated_s.tolist() != b.isolated_s.tolist()


def _metrics(makespan: float, jct: float, ftf: float, unfair: float) -> dict[str, float]:
    return {"makespan_s": makespan, "avg_jct_s": jct, "worst_ftf": ftf, "unfair_pct": unfair}


def test_target_misses_names_each_target_missed() -> None:
    fair = {"max_min_fairness": _metrics(100, 50, 2.0, 10), "finish_time_fairness": _metrics(100, 60, 1.5, 5),
            "min_total_duration": _metrics(90, 80, 9.0, 50)}
    assert robustness.target_misses({**fair, "vfm": _metrics(94, 52, 1.2, 2)}) == []
    missed = robustness.target_misses({**fair, "vfm": _metrics(101, 53, 1.8, 7)})
    assert missed == ["makespan_s > Gavel/Themis", "worst_ftf > Themis", "unfair_pct > Themis",
                      "avg_jct +6.0% > 5%", "makespan +12.2% vs OSSP > 5%"]


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
    assert (tmp_path / "robustness.png").stat().st_size > 0


def test_unknown_cases_and_options_are_one_line_errors(capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        robustness.main(["--cases", "nope@report", "--quiet"])
    assert exit_.value.code == 2 and "unknown cases ['nope@report']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        robustness.main(["--cases", "g32-c2-artifact-trace@choose", "--vfm", "efficiency"])
    assert "--vfm takes NAME=VALUE" in capsys.readouterr().err
