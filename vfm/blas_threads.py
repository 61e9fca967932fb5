"""The BLAS threads of the library's own work: one, whatever the caller's environment.

A solve and a re-plan do many small dense products (a job's block, a window's Schur complement);
spread over BLAS threads they gain nothing and, on a host whose cores are busy with other work
(a scheduler's host rarely is idle), they oversubscribe the cores: each product waits for threads
that are not scheduled. So `vfm.solve` and `vfm.planner.plan` run their work inside
`one_blas_thread`, which sets every loaded BLAS library to one thread and restores the caller's
setting when the outermost call returns. A caller's own BLAS work outside vfm keeps its threads.

`threadpoolctl` does the work: it finds the BLAS libraries numpy and scipy loaded (OpenBLAS, MKL,
BLIS) and sets their threads through each one's own API, which environment variables such as
``OPENBLAS_NUM_THREADS`` cannot do once a library is loaded. It is a small, well-kept library
(scikit-learn's), and the alternative is code per BLAS vendor.

Calls from several threads share one setting: the first to enter sets one thread, the last to
leave restores the caller's (a lock and a count), so concurrent solves never leave the process
at one thread. (OpenBLAS, at least the 0.3 builds numpy and scipy ship, ignores a change asked
for from another thread than the main one once the main thread has set its threads through the
API; a scheduler that does so and calls vfm from worker threads sets ``OPENBLAS_NUM_THREADS=1``.)

Examples
--------
>>> with one_blas_thread():
...     limited = blas_threads()
>>> limited
1
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads", "one_blas_thread"]

_lock = threading.Lock()
_inside = 0  # calls inside `one_blas_thread`, all threads together
_restore: Any = None  # the limiter whose exit restores the caller's setting


@lru_cache(maxsize=1)
def _controller() -> ThreadpoolController:
    # Built at the first solve (numpy and scipy's BLAS are loaded by then), once: inspecting the
    # loaded libraries takes about a millisecond, a limit from the controller some microseconds.
    return ThreadpoolController()


def blas_threads() -> int:
    """The threads the loaded BLAS libraries use now (the largest, if they differ; 1 with none)."""
    return max((info["num_threads"] for info in _controller().info() if info["user_api"] == "blas"), default=1)


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with every loaded BLAS library on one thread (module docstring)."""
    global _inside, _restore
    with _lock:
        if _inside == 0:
            _restore = _controller().limit(limits=1, user_api="blas")
        _inside += 1
    try:
        yield
    finally:
        with _lock:
            _inside -= 1
            if _inside == 0:
                _restore.restore_original_limits()
                _restore = None
