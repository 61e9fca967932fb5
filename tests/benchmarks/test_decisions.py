"""benchmarks/decisions.py: random small clusters driven round by round, every decision timed."""

from __future__ import annotations

import pytest

from benchmarks import decisions


def test_a_case_is_a_function_of_its_seed():
    assert decisions.random_case(7, 10) == decisions.random_case(7, 10)
    case = decisions.random_case(7, 10)
    assert 1 <= case.capacity <= decisions.MAX_CAPACITY and 1 <= len(case.jobs) <= 10
    assert all(1 <= job.gpus <= case.capacity and 1 <= len(job.regimes) <= 4 and 1 <= len(job.path) <= 500
               and 0.1 <= job.budget <= 10 and all(1 <= s <= 1000 for s in job.regimes.values())
               for job in case.jobs)
    assert case.jobs[0].arrival == 0


def test_every_round_is_timed_with_at_most_max_jobs_present():
    timed = decisions.run([3, 4], max_jobs=3)
    assert len(timed) == sum(decisions.random_case(seed, 3).rounds for seed in (3, 4))
    assert all(0 <= t.jobs <= 3 and t.seconds > 0 and t.decision is not None for t in timed)
    replans = [t for t in timed if t.plan]
    assert replans and all(set(t.plan["timings"]) >= {"solve", "total"} for t in replans)


def test_a_decision_is_timed_again_from_the_same_state():
    timed = [t for t in decisions.run([3], max_jobs=3) if t.plan]
    again = decisions.retimed(3, timed[-1].round, max_jobs=3, repeats=2)
    assert 0 < again < 10


def test_the_report_is_written_with_the_slowest_decisions(tmp_path, capsys):
    out = tmp_path / "decisions.txt"
    decisions.main(["--cases", "2", "--seed", "5", "--max-jobs", "3", "--out", str(out)])
    header, _, report = out.read_text().partition("\n# date: ")
    assert header.startswith("# command: python -m benchmarks.decisions --cases 2 --seed 5")
    report = report.split("\n", 1)[1]
    assert report.startswith("decisions: ") and "the 5 slowest:" in report and "case seed " in report
    assert report.count("(again, best of 3: ") >= 5 and "\ntimed again" in report
    assert "command: python -m benchmarks.decisions --cases 2 --seed 5 --max-jobs 3 --out" in report
    assert report in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    (["--cases", "0"], "--cases must be a whole number from 1 to 100000, got 0"),
    (["--max-jobs", "0"], "--max-jobs must be a whole number from 1 to 1000, got 0"),
    (["--seed", "-1"], "--seed must be a whole number from 0 to 4294967295, got -1"),
    (["--replay", "3,x"], "--replay must be comma-separated case seeds"),
])
def test_bad_options_are_one_line_before_any_work(argv, message, capsys, tmp_path):
    out = tmp_path / "decisions.txt"
    with pytest.raises(SystemExit) as stop:
        decisions.main([*argv, "--out", str(out)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err and not out.exists()


def test_decisions_over_the_target_are_told_apart_by_their_time_again():
    timed = [decisions.Timed(1, 2, 3, 0.09, None), decisions.Timed(1, 5, 3, 0.07, None),
             decisions.Timed(4, 0, 1, 0.001, None)]
    line = decisions._again_line(timed, {(1, 2): 0.08, (1, 5): 0.004})
    assert line == "timed again (best of 3, same state): 1 of 2 still over 50.0 ms, max 80.0 ms; (case seed, round): " \
                   "[(1, 2)]"
    assert decisions._again_line(timed[2:], {}).startswith("timed again: none to time")
