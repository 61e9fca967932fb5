"""Every command line of benchmarks/: named `python -m benchmarks.<name>` in --help, bad input as
one line on stderr with exit status 2 (benchmarks/_cli.py)."""

from __future__ import annotations

import importlib
import json

import pytest

COMMANDS = ["reproduce", "determinism", "plan", "solve", "demo", "warm_start", "calibrate_tolerances", "uncertainty",
            "heterogeneous", "decisions"]


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


def _hostile_files(folder) -> dict[str, tuple[object, str]]:
    """Workload files the loader must refuse, each with a part of its one-line message."""
    phases = [{"epochs": 1, "batch_size": 8, "epoch_s": 9.0}]
    job = {"id": 0, "arrival_s": 0.0, "gpus": 1, "epochs": 1, "phases": phases}
    valid = {"gpus": 2, "round_s": 120.0, "jobs": [job]}
    text = json.dumps(valid)
    contents = {
        "huge_int": (text.replace('"gpus": 1', '"gpus": ' + "9" * 400).encode(), "gpus (999"),
        "deep": (text.replace('"round_s": 120.0', '"round_s": ' + "[" * 100_000 + "]" * 100_000).encode(),
                 "nests JSON arrays or objects too deeply"),
        "latin1": (text.replace("phases", "phas\u00e9s").encode("latin-1"), "is not UTF-8 text"),
        "typo": (text.replace('"epoch_s"', '"epoch_sec"').encode(),
                 "unknown field 'epoch_sec'; did you mean 'epoch_s'?"),
        "inf_time": (text.replace('"epoch_s": 9.0', '"epoch_s": 1e308').encode(), "epoch_s (1e+308) is more than"),
    }
    paths = {}
    for name, (data, message) in contents.items():
        path = folder / f"{name}.json"
        path.write_bytes(data)
        paths[name] = (path, message)
    return paths


HOSTILE = ["huge_int", "deep", "latin1", "typo", "inf_time"]


@pytest.mark.parametrize("kind", HOSTILE)
@pytest.mark.parametrize(("name", "option"), [("demo", "--workload"), ("warm_start", "--workload"),
                                              ("determinism", "--workload"), ("reproduce", "--workload"),
                                              ("heterogeneous", "--workloads"), ("uncertainty", "--workloads")])
def test_a_bad_workload_file_is_one_line_before_any_work(name, option, kind, capsys, tmp_path):
    path, message = _hostile_files(tmp_path)[kind]
    out = tmp_path / "out"
    extra = ["--out", str(out)] if name in ("reproduce", "heterogeneous", "uncertainty") else []
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(f"benchmarks.{name}").main([option, str(path), *extra])
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"python -m benchmarks.{name}: error: {path}")
    assert message in captured.err and captured.out == "" and not out.exists()
