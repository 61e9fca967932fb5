"""`python -m benchmarks.policy_scale`: its report, and bad input as one line with exit 2 before any work."""

from __future__ import annotations

import pytest

from benchmarks import policy_scale


def test_it_reports_the_adds_the_first_round_memory_machine_and_command(capsys):
    policy_scale.main(["--jobs", "40", "--capacity", "8", "--rounds", "3"])
    out = capsys.readouterr().out
    for line in ("jobs: 40 on 8 GPUs", "add: ", "bytes per job: ", "first next_round: ",
                 "(plan: re-planned (no plan yet))", "peak RSS: ", "machine: ",
                 "command: python -m benchmarks.policy_scale --jobs 40 --capacity 8 --rounds 3"):
        assert line in out


def test_the_profile_lists_the_costliest_functions(capsys):
    policy_scale.main(["--jobs", "10", "--capacity", "4", "--rounds", "3", "--profile", "5"])
    assert "cumulative" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "message"), [
    ([], "the following arguments are required: --jobs"),
    (["--jobs", "0"], "--jobs must be a whole number from 1 to 1000000, got 0"),
    (["--jobs", "ten"], "--jobs must be a whole number from 1 to 1000000, got ten"),
    (["--jobs", "5", "--capacity", "-1"], "--capacity must be a whole number from 1 to 1000000, got -1"),
    (["--jobs", "5", "--unknown"], "unrecognized arguments: --unknown"),
])
def test_bad_arguments_are_one_line_with_exit_2_before_any_work(argv, message, capsys, monkeypatch):
    monkeypatch.setattr(policy_scale, "add_jobs", lambda *_: pytest.fail("work started"))
    with pytest.raises(SystemExit) as stop:
        policy_scale.main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m benchmarks.policy_scale: error: ") and message in err
