"""The compilation forms of the planner's kernels (`vfm.planner._kernels`): `compiled` for a kernel
called from Python, `inlined` for a helper called from kernels, and `over_jobs` for the kernels over
jobs that run on several threads. Each is a `vfm._numerics.jit.Kernel` where Python calls it, so that it
also runs interpreted (`vfm._numerics.jit.interpreting`).

Numba compiles each kernel once per machine (``cache=True`` keeps the machine code beside its
module); the kernels take float64 C-contiguous arrays, which is what their callers pass.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import numba

from vfm._numerics.jit import SETTINGS, Kernel, inlined, kernel
from vfm.planner._kernels import threads

#: A kernel called from Python.
compiled = kernel

#: Jobs per chunk of a kernel over jobs (`over_jobs`): a thread's unit of work, and the unit of every
#: sum over jobs. Each chunk sums its own jobs in job order into its own partial sum and the
#: partial sums are added in chunk order, so a sum is the same float whatever the threads. A
#: constant for that reason: a chunk size that followed the threads would change the sums with them.
#: A window of at most one chunk sums in plain job order.
CHUNK = 64


@inlined
def chunks(n: int) -> int:
    """The chunks of `CHUNK` jobs that cover `n` jobs."""
    return (n + CHUNK - 1) // CHUNK


def over_jobs(function: Callable[..., Any]) -> Kernel:
    """A kernel whose first argument's first axis is the jobs and whose outer loop runs over chunks of
    `CHUNK` jobs with `numba.prange`: compiled twice, serial (``prange`` read as ``range``) and
    ``parallel=True``, and called in parallel when the calling thread's kernel threads
    (`vfm.planner._kernels.threads.current`) are more than one and the jobs more than one chunk.

    Both compile the same loops, chunk by chunk, so they write the same floats; one thread never
    starts Numba's threading layer. Parallel calls from several Python threads take turns
    (`threads.launching`)."""
    serial = numba.njit(**SETTINGS)(function)
    # A copy under its own name: Numba's cache keys a function by its name and bytecode, not by
    # its compilation flags, so the two versions would overwrite each other's cached code.
    copy = types.FunctionType(function.__code__, function.__globals__, function.__name__, function.__defaults__,
                              function.__closure__)
    copy.__qualname__ = f"{function.__qualname__}_parallel"
    parallel = numba.njit(**SETTINGS, parallel=True)(copy)

    def dispatch(*args: Any) -> Any:
        if threads.current() > 1 and args[0].shape[0] > CHUNK:
            with threads.launching():
                return parallel(*args)
        return serial(*args)

    return Kernel(function, dispatch)


@inlined
def add_chunks(partial: Any, out: Any) -> None:
    """`out` := the chunks' partial sums `partial` (chunks, ...) added in chunk order (`out` and
    `partial` C-contiguous)."""
    flat = out.reshape(out.size)
    for j in range(flat.size):  # loops, not array expressions: `parallel=True` would turn those into parallel loops
        flat[j] = 0.0
    for chunk in range(partial.shape[0]):
        part = partial[chunk].reshape(flat.size)
        for j in range(flat.size):
            flat[j] += part[j]


@inlined
def largest_of_chunks(rates: Any) -> float:
    """The largest of the chunks' rates `rates` (chunks,), at least 0: a step's largest rate over
    jobs, each chunk's found by its own thread."""
    largest = 0.0
    for chunk in range(rates.shape[0]):
        largest = max(largest, rates[chunk])
    return largest
