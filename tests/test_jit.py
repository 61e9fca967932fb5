"""The kernels' interpreted tier (vfm._numerics.jit): the same floats as the compiled kernels, per thread."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vfm._numerics.interior_point import largest_step
from vfm._numerics.jit import interpreting, is_interpreting
from vfm.planner._kernels import entries

positive = arrays(np.float64, 7, elements=st.floats(1e-6, 1e3))
changes = arrays(np.float64, 7, elements=st.floats(-1e3, 1e3))


@given(positive, changes)
def test_a_kernel_gives_the_same_float_interpreted(values, change):
    compiled = largest_step([values], [change])
    with interpreting():
        interpreted = largest_step([values], [change])
    assert interpreted == compiled or (np.isinf(interpreted) and np.isinf(compiled))


def test_a_division_by_zero_is_inf_as_compiled_not_an_error():
    # A value already at 0 that falls blocks any step: a rate of inf, a largest step of 0.
    values, change = np.array([0.0, 1.0]), np.array([-1.0, 1.0])
    with interpreting():
        interpreted = largest_step([values], [change])
    assert interpreted == largest_step([values], [change]) == 0.0


def test_a_kernel_over_jobs_calls_its_helpers_interpreted():
    # evaluate_entries calls inlined helpers (_utilities, _gradients) through module names.
    assert callable(entries.evaluate_entries.interpreted)
    assert entries.evaluate_entries.interpreted is not entries.evaluate_entries.function
    assert entries.evaluate_entries.interpreted.__globals__["_utilities"] is not entries._utilities


def test_the_scope_is_the_calling_threads_only():
    seen = []
    with interpreting():
        assert is_interpreting()
        other = threading.Thread(target=lambda: seen.append(is_interpreting()))
        other.start()
        other.join()
    assert seen == [False]
    assert not is_interpreting()
