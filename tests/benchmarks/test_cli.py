"""Every command line of benchmarks/: named `python -m benchmarks.<name>` in --help, bad input as
one line on stderr with exit status 2 (benchmarks/_cli.py)."""

from __future__ import annotations

import importlib

import pytest

COMMANDS = ["reproduce", "determinism", "plan", "solve", "demo", "warm_start", "calibrate_tolerances", "uncertainty",
            "heterogeneous"]


@pytest.mark.parametrize("name", COMMANDS)
def test_help_names_the_command(name, capsys):
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(f"benchmarks.{name}").main(["--help"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: python -m benchmarks.{name} ")


@pytest.mark.parametrize("name", COMMANDS)
def test_an_unknown_option_is_one_line(name, capsys):
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(f"benchmarks.{name}").main(["--no-such-option"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"python -m benchmarks.{name}: error: ")


@pytest.mark.parametrize("name", ["demo", "warm_start", "determinism"])
def test_a_missing_workload_is_one_line(name, capsys):
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(f"benchmarks.{name}").main(["--workload", "no_such_workload"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no workload file 'no_such_workload'" in err


@pytest.mark.parametrize(("argv", "message"), [
    (["--workloads", "no_such_workload"], "no workload file 'no_such_workload'"),
    (["--mixes", "all-k80"], "unknown mix 'all-k80'; choose from thirds, v100-heavy"),
    (["--policies", "fifo"], "unknown policy 'fifo'; choose from vfm, vfm-plain, gavel, static-market"),
])
def test_heterogeneous_bad_choices_are_one_line(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as stop:
        importlib.import_module("benchmarks.heterogeneous").main([*argv, "--out", str(tmp_path)])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_heterogeneous_runs_a_slice_and_reports_the_targets(tmp_path, capsys):
    importlib.import_module("benchmarks.heterogeneous").main(
        ["--workloads", "shockwave_120jobs_32gpus", "--mixes", "thirds", "--jobs", "6", "--workers", "1",
         "--out", str(tmp_path)])
    table = (tmp_path / "table.txt").read_text()
    assert all(f"thirds      {policy} " in table for policy in ("vfm", "vfm-plain", "gavel", "static-market"))
    assert (tmp_path / "shockwave_120jobs_32gpus_metrics.png").stat().st_size > 0
    assert (tmp_path / "shockwave_120jobs_32gpus_ftf_cdf.png").stat().st_size > 0
    assert "shockwave_120jobs_32gpus thirds: makespan" in table and "worst FTF" in table
