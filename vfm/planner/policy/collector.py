"""Decisions without the cycle collector: `Policy` decides each round with Python's garbage
collector paused (`pause_collector`), so that a collection the decision's allocations would start
runs after the decision returns, in the caller's time, instead of inside it.

Why
    The collector runs when the allocations of container objects add up, inside whichever call is
    allocating, and a full (generation 2) collection walks every tracked object of the process: a
    few hundred thousand after importing vfm, NumPy, SciPy, CVXPY and Numba, tens of milliseconds,
    more than a re-plan. A decision allocates (the plan's records, the state it steps to), so
    without the pause such a collection lands in some decision, a rare round many times slower
    than the others. Paused, the decision allocates the same and frees what it drops by reference
    counting as always; only the cycle collector waits until it returns.

Threads
    The collector is one per process. Decisions of several policies on several threads overlap
    their pauses: the overlapping pauses record whether any of them found the collector enabled,
    and the last to leave restores that, so the collector is never left paused, and a caller that
    disabled it keeps it disabled.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_depth = 0
_was_enabled = False


def pause_collector() -> None:
    """Pause the cycle collector until the matching `resume_collector` (module docstring). It
    allocates no container object before the collector is paused, so that no collection the
    caller's allocations had made due starts in it."""
    global _depth, _was_enabled
    # Before the lock: entering `with _lock` allocates (its bound method), and that allocation
    # would start the collection that is due.
    enabled = gc.isenabled()
    gc.disable()
    with _lock:
        # Another thread's pause may have disabled it between our reading and its lock: the
        # collector was enabled if any pause of this episode found it so.
        _was_enabled = enabled if _depth == 0 else (_was_enabled or enabled)
        _depth += 1


def resume_collector() -> None:
    """End a `pause_collector`: the last of overlapping pauses to end enables the collector again if
    any of them found it enabled."""
    global _depth
    with _lock:
        _depth -= 1
        if _depth == 0 and _was_enabled:
            gc.enable()
