"""The threads the planner's kernels over jobs run on (`vfm.planner._kernels.jit.over_jobs`), set per
calling thread within a scope (`kernel_threads`).

A kernel's results do not depend on its threads: each job writes only its own outputs and every
sum over jobs is taken chunk by chunk in a fixed order (`vfm.planner._kernels.jit.CHUNK`). The
threads only change how long a solve takes.

The default is one thread (`DEFAULT_THREADS`): a kernel over a window's jobs takes a millisecond
or less, and an iteration calls a dozen of them between serial NumPy work and the capacity system,
so more threads pay only on windows of thousands of jobs, on idle cores, and with a threading
layer that launches fast (the measurements are in docs/guarantees.md, "Kernel threads", and
`benchmarks/results/threads/`, from ``python -m benchmarks.threads``).

Numba's threading layer: unless the process chose one (``NUMBA_THREADING_LAYER``, or
``numba.config.THREADING_LAYER`` set before the first parallel call), the first scope of more than
one thread asks Numba for a fork-safe one (`_fork_safe_layer`), after loading TBB's library from
the ``tbb`` package where it is installed (`_load_tbb`): TBB then, else Numba's own
``workqueue``, never GNU OpenMP. A scheduler may fork workers after a re-plan, and GNU OpenMP's
thread pool does not survive a fork; its threads also spin while they wait, which on a host whose
cores are busy stalls a re-plan for seconds. ``workqueue`` is safe but slow to launch (a
parallel call can cost more than a small window's kernel, where TBB's costs microseconds), and it
takes one parallel call at a time:
a second from another thread terminates the process, so parallel calls take turns on a lock
(`launching`) whatever the layer. One kernel thread (``threads=1``) never starts a threading
layer.

Examples
--------
>>> with kernel_threads(1):
...     current()
1
>>> current()
1
"""

from __future__ import annotations

import ctypes
import importlib.metadata
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import numba

from vfm.parameters import Interval, Optional, Whole

__all__ = ["DEFAULT_THREADS", "THREADS", "available", "current", "kernel_threads", "launching"]

#: The threads a solve takes by default (`kernel_threads` with None; module docstring).
DEFAULT_THREADS = 1

#: What a ``threads`` argument may be (`vfm.planner.PlanOptions.threads`).
THREADS = Optional(Interval(Whole, 1, unit="threads"))

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


@contextmanager
def kernel_threads(threads: int | None) -> Iterator[int]:
    """Run the block's kernels on `threads` threads (more than `available` are capped to it; None:
    the enclosing scope's, or `DEFAULT_THREADS` outside any), restoring the calling thread's setting
    and Numba's on exit. Yields the threads in effect."""
    previous = getattr(_local, "threads", None)
    if threads is None:
        count = DEFAULT_THREADS if previous is None else previous
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
    """Ask Numba for a fork-safe threading layer unless the process chose one (module docstring),
    with TBB's library loaded where the ``tbb`` package is installed (`_load_tbb`); no effect once
    a parallel call has started a layer."""
    if numba.config.THREADING_LAYER == "default":  # type: ignore[attr-defined]
        _load_tbb()
        numba.config.THREADING_LAYER = "forksafe"  # type: ignore[attr-defined]


def _load_tbb() -> bool:
    """Load the shared library of the ``tbb`` package (the ``threads`` extra), if installed, so that
    Numba's TBB layer finds it; whether it is loaded.

    pip puts ``libtbb.so.12`` in the environment's ``lib`` folder, which a virtual environment's
    Python does not search: Numba's TBB layer then fails to load and Numba falls back to
    ``workqueue``, whose every parallel call is slow to launch (module docstring). Loaded first,
    with its symbols global, the library is found by name."""
    try:
        files = importlib.metadata.distribution("tbb").files or []
    except importlib.metadata.PackageNotFoundError:
        return False
    for file in files:
        if file.name == "libtbb.so.12":
            try:
                ctypes.CDLL(str(file.locate()), mode=ctypes.RTLD_GLOBAL)
            except OSError:
                return False
            return True
    return False


@contextmanager
def launching() -> Iterator[None]:
    """Hold the lock parallel kernel calls take turns on (module docstring)."""
    with _launch:
        yield
