"""Every command line of benchmarks/: named `python -m benchmarks.<name>` in --help, bad input as
one line on stderr with exit status 2 (benchmarks/_cli.py), before any work and before the library
loads; every count bounded, every output path checked up front, every option explained."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchmarks import _cli

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = ["busy_host", "calibrate_tolerances", "checkpoint_format", "cold_start", "deadline", "decisions", "demo",
            "determinism", "forecast", "heterogeneous", "plan", "policy_scale", "replan_speed", "reproduce",
            "restart_costs", "robustness", "shockwave_milp", "solve", "threads", "uncertainty", "warm_start",
            "wide_market"]
#: The options a command cannot run without, with values that pass.
REQUIRED = {"reproduce": ["--workload", "shockwave_120jobs_32gpus"],
            "determinism": ["--workload", "shockwave_120jobs_32gpus"], "policy_scale": ["--jobs", "4"]}
#: The commands that write results, and so must have an output option.
WRITERS = {"busy_host", "checkpoint_format", "cold_start", "deadline", "decisions", "determinism", "forecast",
           "heterogeneous", "plan", "replan_speed", "reproduce", "restart_costs", "robustness", "solve", "threads",
           "uncertainty", "wide_market"}
OUTPUT_CHECKS = (_cli.OUTPUT_FOLDER, _cli.OUTPUT_FILE, _cli.OUTPUT_FILE_MADE)
#: What a command must not have loaded when it refuses its arguments: the library's heavy parts.
HEAVY = ("vfm.planner", "vfm.cluster", "numba", "cvxpy", "jax", "matplotlib")


class _Built(Exception):
    pass


def parser_of(name: str) -> _cli.Parser:
    """The parser command `name`'s `main` builds (caught as it starts to parse, so nothing runs)."""
    built: list[_cli.Parser] = []

    def catch(self, args=None, namespace=None):
        built.append(self)
        raise _Built

    original = _cli.Parser.parse_known_args
    _cli.Parser.parse_known_args = catch  # type: ignore[method-assign]
    try:
        with pytest.raises(_Built):
            importlib.import_module(f"benchmarks.{name}").main([])
    finally:
        _cli.Parser.parse_known_args = original  # type: ignore[method-assign]
    return built[0]


def checks_of(name: str) -> list[tuple[str, object, _cli.Check]]:
    """(flag, action, check) of every checked option of command `name`."""
    return [(action.option_strings[0], action, check) for action, check in parser_of(name)._checks
            if action.option_strings]


def test_commands_lists_every_command_of_the_folder():
    assert sorted(COMMANDS) == sorted(path.stem for path in (ROOT / "benchmarks").glob("*.py")
                                      if not path.stem.startswith("_"))


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


@pytest.mark.slow  # a process pool per GPU-type mix
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
    ("demo", ["--repeats", "0"], "--repeats must be a whole number from 1 to 1000, got 0"),
    ("demo", ["--rounds", "0"], "--rounds must be a whole number from 1 to 1000, got 0"),
    ("demo", ["--repeats", "three"], "--repeats must be a whole number from 1 to 1000, got three"),
    ("warm_start", ["--replans", "0"], "--replans must be a whole number from 1 to 1000, got 0"),
    ("warm_start", ["--rounds", "-2"], "--rounds must be a whole number from 1 to 1000, got -2"),
    ("calibrate_tolerances", ["--markets", "0"], "--markets must be a whole number from 1 to 100000, got 0"),
    ("calibrate_tolerances", ["--seed", "-1"], "--seed must be a whole number from 0 to 4294967295, got -1"),
    ("solve", ["--milp-limit", "-1"], "--milp-limit must be a number in (0, 86400], got -1"),
    ("solve", ["--milp-limit", "nan"], "--milp-limit must be a number in (0, 86400], got nan"),
    ("solve", ["--runs", "0"], "--runs must be a whole number from 1 to 1000, got 0"),
    ("solve", ["--rounds", "0"], "--rounds must be a whole number from 1 to 1000, got 0"),
    ("solve", ["--budget", "0"], "--budget must be a number in (0, 86400], got 0"),
    ("plan", ["--runs", "0"], "--runs must be a whole number from 1 to 1000, got 0"),
    ("forecast", ["--scenarios", "0"], "--scenarios must be a whole number from 1 to 100000, got 0"),
    ("uncertainty", ["--scenarios", "0"], "--scenarios must be a whole number from 1 to 1000, got 0"),
    ("uncertainty", ["--workers", "0"], "--workers must be a whole number from 1 to 256, got 0"),
    ("uncertainty", ["--jobs", "0"], "--jobs must be a whole number from 1 to 100000, got 0"),
    ("uncertainty", ["--planners", "ce,median"], "(unknown planner 'median')"),
    ("heterogeneous", ["--workers", "0"], "--workers must be a whole number from 1 to 256, got 0"),
    ("heterogeneous", ["--jobs", "0"], "--jobs must be a whole number from 1 to 100000, got 0"),
    ("heterogeneous", ["--efficiency", "-1"], "--efficiency must be a number >= 0, got -1"),
    ("heterogeneous", ["--policies", "static-market"], "(unknown policy 'static-market')"),
    ("robustness", ["--workers", "0"], "--workers must be a whole number from 1 to 256, got 0"),
    ("robustness", ["--policies", "vfm,static-market"], "(unknown policy 'static-market')"),
    ("robustness", ["--vfm", "reserve=2"], "--vfm reserve=2: reserve must be a number in [0, 1), got 2"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-reserve", "2"],
     "--vfm-reserve must be a number in [0, 1), got 2"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-efficiency", "-0.1"],
     "--vfm-efficiency must be a number >= 0, got -0.1"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-service-floor", "0.6"],
     "--vfm-service-floor must be a number in [0, 0.5], got 0.6"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-scenarios", "0"],
     "--vfm-scenarios must be a whole number from 1 to 1000, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--vfm-wait-limit", "0"],
     "--vfm-wait-limit must be a whole number from 1 to 10000 or none, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--workers", "0"],
     "--workers must be a whole number from 1 to 256, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--jobs", "0"],
     "--jobs must be a whole number from 1 to 100000, got 0"),
    ("reproduce", ["--workload", "shockwave_120jobs_32gpus", "--policies", "vfm,static-market"],
     "(unknown policy 'static-market')"),
    ("determinism", ["--workload", "shockwave_120jobs_32gpus", "--jobs", "0"],
     "--jobs must be a whole number from 1 to 100000, got 0"),
    ("determinism", ["--workload", "shockwave_120jobs_32gpus", "--json", "/nonexistent/x.json"],
     "--json must be a file in a folder you can write, got /nonexistent/x.json (there is no folder /nonexistent)"),
    ("decisions", ["--cases", "0"], "--cases must be a whole number from 1 to 100000, got 0"),
    ("policy_scale", ["--jobs", "0"], "--jobs must be a whole number from 1 to 1000000, got 0"),
    ("policy_scale", ["--jobs", "4", "--profile", "0"], "--profile must be a whole number from 1 to 1000, got 0"),
    ("shockwave_milp", ["--size", "121"], "--size must be one of 120, 220, 460, 900, 1800, 3600, got 121"),
    ("shockwave_milp", ["--time-limit", "0"], "--time-limit must be a number in (0, 86400], got 0"),
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


# Each command in a fresh process, refusing a series of bad command lines: an unknown option, every
# output option given a path it cannot write, every count one past its bound. Each refusal is one
# line on stderr naming the option, exit 2, nothing printed; and after all of them the library's
# heavy parts are still not loaded (the arguments are checked before the library is imported,
# so --help and a typo answer at once).
_CHILD = """
import contextlib, io, json, sys
from benchmarks.{name} import main
answers = []
for argv in json.loads(sys.argv[1]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(argv)
            code = 0
        except SystemExit as stop:
            code = stop.code
    answers.append({{"argv": argv, "code": code, "out": out.getvalue(), "err": err.getvalue()}})
heavy = sorted(module for module in {heavy!r} if module in sys.modules)
print(json.dumps({{"answers": answers, "heavy": heavy}}))
"""


def unwritable(folder: Path) -> list[str]:
    """Paths no output can go to: under a regular file, and (on Linux) in /proc, a folder that exists
    and says it is writable but takes no new entry."""
    blocker = folder / "a_file"
    blocker.write_text("")
    return [str(blocker / "out"), *(["/proc/nope"] if Path("/proc/self").is_dir() else [])]


def bad_command_lines(name: str, folder: Path) -> list[tuple[str, list[str]]]:
    """(the option a command line must be refused for, the command line) for command `name`."""
    required = REQUIRED.get(name, [])
    lines: list[tuple[str, list[str]]] = [("--no-such-option", [*required, "--no-such-option"])]
    for flag, _, check in checks_of(name):
        if any(check is output for output in OUTPUT_CHECKS):
            lines += [(flag, [*required, flag, path]) for path in unwritable(folder)]
        if check.high is not None:
            lines.append((flag, [*required, flag, str(check.high + 1)]))
    return lines


@pytest.mark.parametrize("name", COMMANDS)
def test_bad_command_lines_are_refused_before_the_library_loads(name, tmp_path):
    lines = bad_command_lines(name, tmp_path)
    code = _CHILD.format(name=name, heavy=HEAVY)
    started = time.perf_counter()
    child = subprocess.run([sys.executable, "-c", code, json.dumps([argv for _, argv in lines])], cwd=ROOT,
                           capture_output=True, text=True, timeout=120,
                           env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    seconds = time.perf_counter() - started
    assert child.returncode == 0, child.stderr
    report = json.loads(child.stdout.splitlines()[-1])
    for (flag, argv), answer in zip(lines, report["answers"], strict=True):
        err = answer["err"]
        assert answer["code"] == 2, (argv, err)
        assert err.count("\n") == 1 and err.startswith(f"python -m benchmarks.{name}: error: "), (argv, err)
        assert flag in err and answer["out"] == "", (argv, err)
    assert report["heavy"] == [], f"{name} loaded {report['heavy']} before checking its arguments"
    written = [path for path in tmp_path.rglob("*") if path.name != "a_file" or path.stat().st_size]
    assert written == []
    assert seconds < 60, f"{len(lines)} refusals took {seconds:.0f} s"


@pytest.mark.parametrize("name", COMMANDS)
def test_help_answers_before_the_library_loads(name):
    code = (f"import sys\nfrom benchmarks.{name} import main\ntry:\n    main(['--help'])\nexcept SystemExit as stop:\n"
            f"    assert stop.code == 0, stop.code\nprint(sorted(m for m in {HEAVY!r} if m in sys.modules))")
    child = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert child.returncode == 0, child.stderr
    assert child.stdout.startswith(f"usage: python -m benchmarks.{name} ")
    assert child.stdout.splitlines()[-1] == "[]"


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_has_a_help_text(name):
    parser = parser_of(name)
    missing = [action.option_strings[0] if action.option_strings else action.dest for action in parser._actions
               if "-h" not in action.option_strings and not (action.help or "").strip()]
    assert missing == []


@pytest.mark.parametrize("name", COMMANDS)
def test_every_count_is_bounded(name):
    unbounded = [flag for flag, _, check in checks_of(name)
                 if check.rule.startswith("a whole number") and check.high is None]
    assert unbounded == []


@pytest.mark.parametrize("name", COMMANDS)
def test_a_command_that_writes_has_a_checked_output_option_whose_default_is_not_the_committed_folder(name):
    outputs = [action for _, action, check in checks_of(name) if any(check is o for o in OUTPUT_CHECKS)]
    assert bool(outputs) == (name in WRITERS)
    for action in outputs:
        for default in (action.default, action.const):
            assert default is None or not str(default).startswith("benchmarks/results"), (action.dest, default)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_count_at_its_bound_passes_the_check(name):
    parser = parser_of(name)
    for flag, _, check in checks_of(name):
        if check.high is not None:
            assert parser.checked(flag, check, str(check.high)) == check.high


@pytest.mark.parametrize("check", OUTPUT_CHECKS, ids=["folder", "file", "file_made"])
def test_an_output_path_in_a_writable_folder_passes_and_leaves_nothing_behind(check, tmp_path):
    path = tmp_path / "out" if check is _cli.OUTPUT_FOLDER or check is _cli.OUTPUT_FILE else tmp_path / "new" / "x.txt"
    assert check.holds(path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
@pytest.mark.parametrize("path", ["/proc/nope", "/proc/nope/deeper", "/proc/self/status"])
def test_proc_is_no_place_for_output(path):
    for check in OUTPUT_CHECKS:
        assert not check.holds(Path(path)), (check.rule, path)


def test_the_command_line_spellings_are_the_library_s():
    """What the parsers take without loading the library, held to the library's own names and defaults."""
    from vfm.cluster import BASELINES, artifact, windows
    from vfm.forecast import Forecaster
    from vfm.planner import shockwave

    reproduce = importlib.import_module("benchmarks.reproduce")
    solve = importlib.import_module("benchmarks.solve")
    # The reproduction runs the library's baselines of one GPU type (the Shockwave paper's).
    assert list(reproduce.BASELINE_NAMES) == [name for name, policy in BASELINES.items()
                                              if not policy.mechanism.over_types]
    assert reproduce.ARTIFACT_RUNS == ["vfm", *(name for name in BASELINES if reproduce.PUBLISHED_NAMES.get(name, name)
                                                in artifact.ALLOCATIONS)]
    assert (reproduce.SHOCKWAVE_EFFICIENCY, reproduce.SHOCKWAVE_RESERVE, reproduce.WAIT_LIMIT) == (
        shockwave.SHOCKWAVE_EFFICIENCY, shockwave.SHOCKWAVE_RESERVE, shockwave.WAIT_LIMIT)
    assert (reproduce.SHOCKWAVE_UTILITY, reproduce.SHOCKWAVE_COMPLETION_TIME) == (
        shockwave.SHOCKWAVE_UTILITY, shockwave.SHOCKWAVE_COMPLETION_TIME)
    assert all(isinstance(reproduce.forecaster(name), Forecaster) for name in reproduce.FORECASTERS)
    assert solve.ACTIVITY == windows.ACTIVITY
