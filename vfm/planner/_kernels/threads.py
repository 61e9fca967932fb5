"""The threads the planner's kernels over jobs run on (`vfm.planner._kernels.jit.over_jobs`), set per
calling thread within a scope (`kernel_threads`).

A kernel's results do not depend on its threads: each job writes only its own outputs and every
sum over jobs is taken chunk by chunk in a fixed order (`vfm.planner._kernels.jit.CHUNK`). The
threads only change how long a solve takes.

The default is one thread (`DEFAULT_THREADS`). A kernel over a window's jobs takes a millisecond
or less, and an iteration calls a dozen of them between serial NumPy work and the capacity
system, so a parallel launch costs about what it saves: on a quiet 16-core host
(``python -m benchmarks.threads``, `benchmarks/results/threads/`), 16 threads took the
10,000-job window from 1.07 s to 0.84 s and the 100,000-job window from 13.7 s to 9.6 s, while
a 900-job window took 95 ms on one thread against 147 ms on four; on a quiet 2-core machine two
threads made both windows slower. On a busy host more threads only wait for cores. Ask for
them (`vfm.planner.PlanOptions.threads`) for windows of 10,000 jobs or more on a host with many
idle cores. The first parallel call on a machine compiles the kernels' parallel form (tens of
seconds, then cached beside the module).

Numba's threading layer: unless the process chose one (``NUMBA_THREADING_LAYER``, or
``numba.config.THREADING_LAYER`` set before the first parallel call), the first scope of more than
one thread asks Numba for a fork-safe one (`_fork_safe_layer`): TBB where it is installed, else
Numba's own ``workqueue``, never GNU OpenMP. A scheduler may fork workers after a re-plan, and GNU
OpenMP's thread pool does not survive a fork; on a host whose cores are busy it also waited far
longer: the 10,000-job window of ``python -m benchmarks.threads --threads 1 2`` took a median
6.0 s on 2 threads with GNU OpenMP and 0.96 s with ``workqueue`` (0.84 s and 0.86 s on 1 thread in
the same runs), on a 2-core machine with a load average near 2. The ``workqueue`` layer takes one
parallel call at a time, and a second from another thread terminates the process, so parallel calls take turns on a
lock (`launching`): concurrent solves from several Python threads stay safe, and each still runs
its serial work concurrently. One kernel thread (``threads=1``) never starts the threading layer.

Examples
--------
>>> with kernel_threads(1):
...     current()
1
>>> current()
1
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numba

from vfm.parameters import Optional, Whole

__all__ = ["DEFAULT_THREADS", "THREADS", "available", "current", "default_threads", "kernel_threads", "launching"]

#: The threads a solve takes by default (`default_threads`; module docstring).
DEFAULT_THREADS = 1

#: What a ``threads`` argument may be (`vfm.planner.PlanOptions.threads`).
THREADS = Optional(Whole("a positive whole number of threads", lambda v: v >= 1))

_local = threading.local()  # `threads`: the calling thread's kernel threads, unset outside any scope
_launch = threading.Lock()


def current() -> int:
    """The kernel threads of the calling thread: 1 outside `kernel_threads`."""
    threads = getattr(_local, "threads", None)
    return 1 if threads is None else int(threads)


def available() -> int:
    """The threads Numba may run (its ``NUMBA_NUM_THREADS``, by default the CPUs), at most the
    CPUs this process may run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    numba_threads = int(numba.config.NUMBA_NUM_THREADS)  # type: ignore[attr-defined]
    return max(1, min(numba_threads, cpus))


def default_threads() -> int:
    """The kernel threads of ``threads=None``: `DEFAULT_THREADS`, at most `available`."""
    return min(DEFAULT_THREADS, available())


@contextmanager
def kernel_threads(threads: int | None) -> Iterator[int]:
    """Run the block's kernels on `threads` threads (more than `available` are capped to it; None:
    the enclosing scope's, or `default_threads` outside any), restoring the calling thread's setting
    and Numba's on exit. Yields the threads in effect."""
    previous = getattr(_local, "threads", None)
    if threads is None:
        count = default_threads() if previous is None else previous
    else:
        count = max(1, min(int(threads), available()))
    if count > 1:
        _fork_safe_layer()
    numba_previous = numba.get_num_threads() if count > 1 else None
    _local.threads = count
    if count > 1:
        numba.set_num_threads(count)  # per calling thread in Numba, like `_local`
    try:
        yield count
    finally:
        _local.threads = previous
        if numba_previous is not None:
            numba.set_num_threads(numba_previous)


def _fork_safe_layer() -> None:
    """Ask Numba for a fork-safe threading layer unless the process chose one (module docstring); no
    effect once a parallel call has started a layer."""
    if numba.config.THREADING_LAYER == "default":  # type: ignore[attr-defined]
        numba.config.THREADING_LAYER = "forksafe"  # type: ignore[attr-defined]


@contextmanager
def launching() -> Iterator[None]:
    """Hold the lock parallel kernel calls take turns on (module docstring)."""
    with _launch:
        yield
