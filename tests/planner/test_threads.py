"""The planner's kernels on several threads (`vfm.planner._kernels.kernel_threads`): the same plans
bit for bit on one thread and on two, and the ``threads`` option's validation."""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
from dataclasses import replace

import numpy as np
import pytest

from benchmarks.plan import shockwave_options, tiled_window
from vfm.errors import ValidationError
from vfm.planner import PlanOptions, Policy
from vfm.planner._kernels import jit, kernel_threads, threads
from vfm.planner._kernels.threads import DEFAULT_THREADS, available, current
from vfm.planner.plan import plan
from vfm.planner.policy import policy as policy_module
from vfm.planner.solve.ipm import solve_saa_ipm
from vfm.planner.solve.polish import polish

#: Jobs of the synthetic window: several chunks of jobs (`jit.CHUNK`), the last one partial.
JOBS, GPUS = 300, 77


@pytest.fixture(scope="module")
def window():
    """The busiest 900-job window tiled to `JOBS` jobs on `GPUS` GPUs (`benchmarks.plan.tiled_window`)."""
    assert JOBS > 4 * jit.CHUNK and JOBS % jit.CHUNK
    return tiled_window(JOBS, GPUS)


def _plans(window, threads: tuple[int, ...], **options):
    states, gpus, capacity = window
    plans = []
    for count in threads:
        with kernel_threads(count):
            plans.append(plan(states, gpus, capacity, seed=0, **options))
    return plans


def _assert_same_plans(one, two) -> None:
    for name in ("relaxed", "prices", "schedule"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
    assert one.bound == two.bound and one.relaxed_objective == two.relaxed_objective
    assert str(one.status) == str(two.status) == "optimal"


def test_the_shockwave_plan_is_the_same_on_one_thread_and_two(window):
    # The reproduction's configuration: FTF rows, the efficiency term, the low-rank blocks, the polish.
    states, _, capacity = window
    one, two = _plans(window, (1, 2), **shockwave_options(states, capacity))
    _assert_same_plans(one, two)


def test_the_shockwave_programs_multipliers_are_the_same_on_one_thread_and_two(window):
    # The multipliers the certificate is made of, from the backend itself (the plan keeps only its bound).
    states, _, capacity = window
    (base,) = _plans(window, (1,), **shockwave_options(states, capacity))
    one, two = (solve_saa_ipm(base.program, tol=1e-8, threads=count) for count in (1, 2))
    assert str(one.status) == str(two.status) == "optimal"
    for name in ("x", "prices", "ftf_multipliers", "efficiency_multipliers"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name


def test_a_plan_over_sixteen_scenarios_is_the_same_on_one_thread_and_two(window):
    # Sixteen scenarios: the dense block factor.
    one, two = _plans(window, (1, 2), scenarios=16)
    _assert_same_plans(one, two)


@pytest.mark.slow  # the parallel form of the one-type rows compiles on first use
def test_a_solve_on_two_gpu_types_is_the_same_on_one_thread_and_two(window):
    # Two GPU types: the one-type rows' kernels (as `vfm.planner.solve.ipm.method.load_kernels` builds them).
    (base,) = _plans(window, (1,))
    program = base.program
    rounds = program.capacity.shape[0]
    speed = np.where(np.arange(program.progress.shape[1])[:, None] % 3 == 0, 0.5, 0.8)
    typed = replace(program, progress=np.tile(program.progress, 2), capacity=np.tile(0.5 * program.capacity, 2),
                    good_round=np.tile(np.arange(rounds), 2),
                    speed=np.repeat(np.hstack([np.ones_like(speed), speed]), rounds, axis=1))
    one, two = (solve_saa_ipm(typed, tol=1e-8, threads=count) for count in (1, 2))
    assert str(one.status) == str(two.status) == "optimal"
    for name in ("x", "prices", "ftf_multipliers", "efficiency_multipliers"):
        assert np.array_equal(getattr(one, name), getattr(two, name)), name
    # And the polish's kernels over the types (`vfm.planner._kernels.one_type_rows`).
    polished = []
    for count, solution in ((1, one), (2, two)):
        with kernel_threads(count):
            polished.append(polish(typed, solution))
    assert "polished to residual" in polished[0].message
    for name in ("x", "prices", "type_multipliers"):
        assert np.array_equal(getattr(polished[0], name), getattr(polished[1], name)), name


def test_a_scope_sets_the_threads_and_restores_them():
    assert current() == 1
    with kernel_threads(2) as outer:
        assert outer == current() == min(2, available())
        with kernel_threads(None) as inner:  # None keeps the enclosing scope's
            assert inner == outer
        with kernel_threads(1):
            assert current() == 1
        assert current() == outer
    assert current() == 1
    with kernel_threads(None) as default:
        assert default == DEFAULT_THREADS == 1  # one thread unless asked
    with kernel_threads(10**6) as capped:
        assert capped == available()


@pytest.mark.parametrize("threads", [0, -1, 1.5, 2.0, True, "2"])
def test_bad_threads_are_refused_naming_the_option(threads):
    with pytest.raises(ValidationError, match="threads"):
        PlanOptions(threads=threads)
    with pytest.raises(ValidationError, match="threads"):
        PlanOptions().updated(threads=threads)


def test_the_solver_refuses_bad_threads(window):
    (base,) = _plans(window, (1,))
    with pytest.raises(ValidationError, match="threads"):
        solve_saa_ipm(base.program, threads=0)


def test_threads_are_an_option():
    assert PlanOptions().threads is None
    assert PlanOptions(threads=3).threads == 3


def test_without_the_tbb_package_nothing_is_loaded(monkeypatch):
    def missing(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(threads.importlib.metadata, "distribution", missing)
    assert threads._load_tbb() is False


@pytest.mark.skipif(importlib.util.find_spec("numba.np.ufunc.tbbpool") is None, reason="Numba has no TBB layer")
def test_the_tbb_package_library_is_found_where_installed():
    try:
        importlib.metadata.distribution("tbb")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("the threads extra (tbb) is not installed")
    assert threads._load_tbb() is True
    # Numba's TBB layer can now load its extension, which links the library by name.
    importlib.import_module("numba.np.ufunc.tbbpool")


@pytest.mark.skipif(available() < 2, reason="one CPU: every scope runs one thread")
def test_a_policy_that_asks_for_threads_loads_the_kernels_parallel_form_when_built(monkeypatch):
    # Where it is built, not at its first re-plan: the parallel form's first compile takes tens of seconds.
    loaded = []
    monkeypatch.setattr(policy_module, "load_in_background", loaded.append)
    Policy(4)
    Policy(4, threads=2)
    assert [forms.threads for forms in loaded] == [False, True]
