"""Every command line of benchmarks/: named `python -m benchmarks.<name>` in --help, bad input as
one line on stderr with exit status 2 (benchmarks/_cli.py)."""

from __future__ import annotations

import importlib
import json

import pytest

COMMANDS = ["calibrate_tolerances", "decisions", "demo", "determinism", "forecast", "heterogeneous", "plan",
            "policy_scale", "reproduce", "robustness", "shockwave_milp", "solve", "uncertainty", "warm_start"]


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
    (["--mixes", "all-k80"], "--mixes must be comma-separated names from thirds, v100-heavy, got all-k80 "
                             "(unknown mix 'all-k80')"),
    (["--policies", "fifo"], "--policies must be comma-separated names from vfm, vfm-plain, gavel, static_market, "),
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
    assert all(f"thirds      {policy} " in table for policy in ("vfm", "vfm-plain", "gavel", "static_market"))
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


# Every bad argument: one line naming the option as written, exit 2, and nothing done (no output, no
# folder made). The `--out` of the commands that have one is a folder in tmp_path, which must stay absent.
BAD_ARGUMENTS = [
    ("demo", ["--repeats", "0"], "--repeats must be a whole number >= 1, got 0"),
    ("demo", ["--rounds", "0"], "--rounds must be a whole number >= 1, got 0"),
    ("demo", ["--repeats", "three"], "--repeats must be a whole number >= 1, got three"),
    ("warm_start", ["--replans", "0"], "--replans must be a whole number >= 1, got 0"),
    ("warm_start", ["--rounds", "-2"], "--rounds must be a whole number >= 1, got -2"),
    ("calibrate_tolerances", ["--markets", "0"], "--markets must be a whole number >= 1, got 0"),
    ("calibrate_tolerances", ["--seed", "-1"], "--seed must be a whole number >= 0, got -1"),
    ("solve", ["--milp-limit", "-1"], "--milp-limit must be a number > 0, got -1"),
    ("solve", ["--milp-limit", "nan"], "--milp-limit must be a number > 0, got nan"),
    ("solve", ["--runs", "0"], "--runs must be a whole number >= 1, got 0"),
    ("solve", ["--rounds", "0"], "--rounds must be a whole number >= 1, got 0"),
    ("solve", ["--budget", "0"], "--budget must be a number > 0, got 0"),
    ("plan", ["--runs", "0"], "--runs must be a whole number >= 1, got 0"),
    ("forecast", ["--scenarios", "0"], "--scenarios must be a whole number >= 1, got 0"),
    ("uncertainty", ["--scenarios", "0"], "--scenarios must be a whole number >= 1, got 0"),
    ("uncertainty", ["--workers", "0"], "--workers must be a whole number >= 1, got 0"),
    ("uncertainty", ["--jobs", "0"], "--jobs must be a whole number >= 1, got 0"),
    ("uncertainty", ["--planners", "ce,median"], "(unknown planner 'median')"),
    ("heterogeneous", ["--workers", "0"], "--workers must be a whole number >= 1, got 0"),
    ("heterogeneous", ["--jobs", "0"], "--jobs must be a whole number >= 1, got 0"),
    ("heterogeneous", ["--efficiency", "-1"], "--efficiency must be a number >= 0, got -1"),
    ("heterogeneous", ["--policies", "static-market"], "(unknown policy 'static-market')"),
    ("robustness", ["--workers", "0"], "--workers must be a whole number >= 1, got 0"),
    ("robustness", ["--policies", "vfm,static-market"], "(unknown policy 'static-market')"),
    ("robustness", ["--vfm", "reserve=2"], "--vfm reserve=2: reserve must be a fraction in [0, 1), got 2"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-reserve", "2"],
     "--vfm-reserve must be a number in [0, 1), got 2"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-efficiency", "-0.1"],
     "--vfm-efficiency must be a number >= 0, got -0.1"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-service-floor", "0.6"],
     "--vfm-service-floor must be a number in [0, 0.5], got 0.6"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-scenarios", "0"],
     "--vfm-scenarios must be a whole number >= 1, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-wait-limit", "0"],
     "--vfm-wait-limit must be a whole number >= 1 or none, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--workers", "0"],
     "--workers must be a whole number >= 1, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--jobs", "0"],
     "--jobs must be a whole number >= 1, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--policies", "vfm,static-market"],
     "(unknown policy 'static-market')"),
    ("determinism", ["--workload", "shockwave_120jobs_32gpus", "--jobs", "0"],
     "--jobs must be a whole number >= 1, got 0"),
    ("determinism", ["--workload", "shockwave_120jobs_32gpus", "--json", "/nonexistent/x.json"],
     "--json must be a file in a folder you can write, got /nonexistent/x.json (there is no folder /nonexistent)"),
    ("decisions", ["--cases", "0"], "--cases must be a whole number >= 1, got 0"),
    ("policy_scale", ["--jobs", "0"], "--jobs must be a whole number >= 1, got 0"),
    ("policy_scale", ["--jobs", "4", "--profile", "0"], "--profile must be a whole number >= 1, got 0"),
    ("shockwave_milp", ["--size", "121"], "--size must be one of 120, 220, 460, 900, 1800, 3600, got 121"),
    ("shockwave_milp", ["--time-limit", "0"], "--time-limit must be a number > 0, got 0"),
]
#: The commands whose results go to a folder `--out`.
OUT_FOLDER = ("forecast", "heterogeneous", "plan", "reproduce", "robustness", "solve", "uncertainty")


def _fails(name, argv, capsys):
    """Run command `name` on `argv`, which it must reject: its stderr (one line) and stdout."""
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(f"benchmarks.{name}").main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and captured.err.startswith(f"python -m benchmarks.{name}: error: ")
    return captured.err, captured.out


@pytest.mark.parametrize(("name", "argv", "message"), BAD_ARGUMENTS,
                         ids=[f"{name} {' '.join(argv)}" for name, argv, _ in BAD_ARGUMENTS])
def test_a_bad_argument_is_one_line_naming_its_option_before_any_work(name, argv, message, capsys, tmp_path):
    out = tmp_path / "out"
    extra = ["--out", str(out)] if name in OUT_FOLDER else []
    err, printed = _fails(name, [*argv, *extra], capsys)
    assert message in err and printed == "" and not out.exists()


@pytest.mark.parametrize("name", OUT_FOLDER)
def test_an_unwritable_out_folder_is_rejected_before_any_work(name, capsys, tmp_path):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    argv = ["--workload", "shockwave_120jobs_32gpus"] if name == "reproduce" else []
    err, printed = _fails(name, [*argv, "--out", str(blocker / "out")], capsys)
    assert f"--out must be a folder you can write, got {blocker / 'out'} ({blocker} is not a folder you can write)" \
        in err and printed == ""


def test_an_out_file_that_is_a_folder_is_rejected(capsys, tmp_path):
    err, _ = _fails("decisions", ["--cases", "1", "--out", str(tmp_path)], capsys)
    assert f"--out must be a file you can write, got {tmp_path} ({tmp_path} is a folder; name a file)" in err


@pytest.mark.parametrize("name", OUT_FOLDER)
def test_the_default_out_folder_is_results_of_the_command_not_the_tracked_one(name, capsys):
    with pytest.raises(SystemExit):
        importlib.import_module(f"benchmarks.{name}").main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    default = "results/<workload>" if name == "reproduce" else f"results/{name}"
    assert f"(default {default})" in text and "benchmarks/results" not in text


def test_policy_names_are_spelled_as_the_library_registry_spells_them():
    from vfm.cluster import BASELINES

    heterogeneous = importlib.import_module("benchmarks.heterogeneous")
    reproduce = importlib.import_module("benchmarks.reproduce")
    assert "static_market" in BASELINES and "static_market" in reproduce.POLICIES
    assert "static_market" in heterogeneous.POLICIES and "static-market" not in heterogeneous.POLICIES
