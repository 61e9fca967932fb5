"""The planner's kernels compiled ahead or in the background, and the interpreted tier that plans
while they load (vfm.planner.kernel_loading): the same plans bit for bit, whichever tier ran them."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from benchmarks.plan import shockwave_options, tiled_window
from vfm._numerics.jit import interpreting, is_interpreting
from vfm.planner import kernel_loading as compile_module
from vfm.planner.kernel_loading import EVERY_FORM, INTERPRETED_ENTRIES, Forms, serving
from vfm.planner.plan import plan


@pytest.fixture(scope="module")
def window():
    return tiled_window(12, 6)


def _same(one, two) -> None:
    for name in ("relaxed", "prices", "schedule"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
    assert one.bound == two.bound and str(one.status) == str(two.status)


@pytest.mark.parametrize("scenarios", [1, 4])
def test_an_interpreted_plan_is_the_compiled_plan_bit_for_bit(window, scenarios):
    states, gpus, capacity = window
    options = shockwave_options(states, capacity, scenarios=scenarios)
    compiled = plan(states, gpus, capacity, seed=0, **options)
    with interpreting():
        interpreted = plan(states, gpus, capacity, seed=0, **options)
    assert str(compiled.status) == "optimal"
    _same(compiled, interpreted)


def test_the_forms_load_what_a_policy_uses_and_no_more():
    assert Forms().pieces() == ("one scenario",)
    assert Forms(types=True).pieces() == ("one scenario", "one scenario, types")
    pieces = EVERY_FORM.pieces()
    assert len(pieces) == len(set(pieces)) == 8
    assert set(Forms(scenarios=True, threads=True).pieces()) < set(pieces)


@pytest.fixture
def cold(monkeypatch):
    """A loader with nothing loaded, whose background thread never starts (so that nothing loads)."""
    loader = compile_module._Loader()
    monkeypatch.setattr(loader, "ask", lambda pieces: None)
    monkeypatch.setattr(compile_module, "_LOADER", loader)
    return loader


def _signatures() -> int:
    """How many compiled signatures the planner's kernels hold: each kernel's (serial and parallel) and
    each helper's."""
    from numba.core.dispatcher import Dispatcher

    from vfm._numerics.jit import Kernel
    from vfm.planner._kernels import dense, entries, lagrangian, low_rank, one_type_rows, placement, system, waits

    count = 0
    for module in (dense, entries, lagrangian, low_rank, one_type_rows, placement, system, waits):
        for value in vars(module).values():
            compiled = value.compiled if isinstance(value, Kernel) else value
            cells = [compiled, *(cell.cell_contents for cell in getattr(compiled, "__closure__", None) or ())]
            count += sum(len(cell.signatures) for cell in cells if isinstance(cell, Dispatcher))
    return count


def test_the_forms_a_policy_over_scenarios_loads_cover_its_plans_above_floors():
    # Above a floor and commitments the program has a base per scenario: the kernels see the same
    # arrays as without one, so the scenarios' form the policy loads compiles everything its plans call.
    from vfm.forecast import JobStates
    from vfm.planner import JobTerms

    compile_module.compile_kernels(Forms(scenarios=True))
    before = _signatures()
    assert before > 0
    states = JobStates.from_lists([40, 12, 30, 50], [{32: 60.0}, {16: 200.0}, {64: 90.0}, {8: 100.0}],
                                  [[32] * 5, [], [64] * 2, [8] * 30])
    result = plan(states, [1, 2, 2, 1], 3, rounds=10, scenarios=4, seed=0, wait_limit=20, service_floor=0.05,
                  efficiency=0.1, terms=JobTerms(waited=[0, 0, 0, 15], fair_finish_s=[3e4, 3e4, 3e4, 3e4]))
    assert str(result.status) == "optimal" and result.committed is not None and result.committed.any()
    assert _signatures() == before


@pytest.mark.parametrize("forms, run", [
    ("Forms()", "from benchmarks.reproduce import run_policy\nrun_policy('shockwave_120jobs_32gpus', 'vfm', jobs=40)"),
    ("Forms(types=True)", "from benchmarks.heterogeneous import run_one\n"
                          "run_one('shockwave_120jobs_32gpus', 'thirds', 'vfm', jobs=40)"),
], ids=["one type", "three types"])
def test_the_forms_a_policy_loads_cover_its_decisions(forms, run):
    # In a fresh process (the kernels' compiled forms are per process): after the forms a policy
    # loads, its decisions (FTF rows, the efficiency term, the wait limit, the polish from both of its
    # starts, the rounding) compile nothing more, which on a machine's first run would take seconds
    # inside a decision.
    script = ("from vfm.planner.kernel_loading import Forms, compile_kernels\n"
              "from tests.planner.test_compile import _signatures\n"
              f"compile_kernels({forms})\n"
              "before = _signatures()\n"
              f"{run}\n"
              "print(before, _signatures())\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600, check=True)
    before, after = map(int, done.stdout.split()[-2:])
    assert before > 0 and after == before


def test_a_small_window_runs_interpreted_until_the_kernels_are_loaded(cold):
    with serving(Forms(), INTERPRETED_ENTRIES) as tier:
        assert tier == "interpreted" and is_interpreting()
    assert not is_interpreting()
    cold.loaded.add("one scenario")
    with serving(Forms(), INTERPRETED_ENTRIES) as tier:
        assert tier == "compiled" and not is_interpreting()


def test_a_large_window_waits_for_the_compiled_kernels(cold):
    # No loader thread runs: the wait ends at once and the calls compile on the calling thread.
    with serving(Forms(), INTERPRETED_ENTRIES + 1) as tier:
        assert tier == "compiled" and not is_interpreting()


def test_a_background_load_loads_the_pieces_asked_for():
    loaded = []
    loader = compile_module._Loader(load_piece=loaded.append)
    loader.ask(Forms(scenarios=True).pieces())
    loader.wait(Forms(scenarios=True).pieces())
    assert loaded == ["one scenario", "scenarios"] and loader.ready(loaded)


def test_a_failed_background_load_leaves_the_plans_to_compile_what_they_call():
    loader = compile_module._Loader(load_piece=lambda piece: 1 / 0)
    loader.ask(Forms().pieces())
    loader.wait(Forms().pieces())  # returns: the thread stopped
    assert isinstance(loader.failed, ZeroDivisionError) and not loader.ready(Forms().pieces())


def test_the_command_line_takes_help_and_refuses_an_unknown_option():
    done = subprocess.run([sys.executable, "-m", "vfm.planner.compile", "--help"], capture_output=True, text=True)
    assert done.returncode == 0 and "--serial-only" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "vfm.planner.compile", "--nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "--nope" in bad.stderr


@pytest.mark.slow  # the fork also waits for what the process's own loader is compiling
@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_fork_waits_for_the_piece_being_compiled_so_that_the_child_can_compile():
    # A child forked while a loader held Numba's compiler lock would wait for it forever.
    from numba.core.compiler_lock import global_compiler_lock

    compiling = threading.Event()

    def slow_load(piece: str) -> None:
        with global_compiler_lock:
            compiling.set()
            time.sleep(0.5)

    loader = compile_module._Loader(load_piece=slow_load)
    loader.ask(["a piece"])
    assert compiling.wait(10)
    child = os.fork()
    if child == 0:  # the child: Numba's lock must be free (no thread of the child holds it)
        os._exit(0 if global_compiler_lock._lock.acquire(timeout=5) else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert loader.ready(["a piece"])  # the fork waited for it


def test_a_redirect_on_the_callers_thread_holds_while_the_loader_compiles():
    # Numba formats error messages while it compiles (its type inference tries overloads), and with
    # colorama installed it swapped sys.stdout for each: a redirect entered meanwhile was undone.
    errors = pytest.importorskip("numba.core.errors")
    stop = threading.Event()

    def compiling(piece: str) -> None:
        while not stop.is_set():
            errors.termcolor().errmsg("a message formatted while typing")

    switch = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)  # the threads take turns often, so that a swap would land in a redirect
    try:
        compile_module._Loader(load_piece=compiling).ask(["a piece"])
        lost, started = 0, time.perf_counter()
        while time.perf_counter() - started < 1.0:
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                print("x")
            lost += printed.getvalue() != "x\n"
    finally:
        stop.set()
        sys.setswitchinterval(switch)
    assert lost == 0


def test_a_wait_with_a_timeout_returns_when_the_piece_is_not_loaded_by_then():
    # A plan under a deadline waits for the compiled kernels only until its deadline.
    release = threading.Event()
    loader = compile_module._Loader(load_piece=lambda piece: release.wait(10))
    loader.ask(["a piece"])
    started = time.perf_counter()
    assert not loader.wait(["a piece"], timeout_s=0.05)
    assert time.perf_counter() - started < 5
    release.set()
    assert loader.wait(["a piece"], timeout_s=10) and loader.ready(["a piece"])
