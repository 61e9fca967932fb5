"""Whole gangs packed into free GPUs, first-fit: `first_fit`.

Every scheduler here turns a priority order into a round the same way: in that order, a job is
admitted if its whole gang fits the GPUs still free. The planner's rounding
(`vfm.planner.rounding`) and the baselines' round mechanisms (`vfm.cluster.baselines`) both do,
so it lives here, below both, and needs neither.
"""

from __future__ import annotations

import numpy as np

from vfm._validation import FloatArray

__all__ = ["first_fit"]


def first_fit(order: np.ndarray, gpus: FloatArray, free: float) -> np.ndarray:
    """The jobs of `order` admitted first-fit into `free` GPUs (in order, each if its gang fits).

    A job whose gang no longer fits is skipped and later, smaller gangs may still take the GPUs
    left (Gavel's scheduler does the same: ``continue``, not ``break``). Vectorized in passes:
    a pass admits the longest prefix that fits and drops every job that no longer fits the GPUs
    left, which is exactly what first-fit does with them; each pass lowers the widest gang still
    in play, so there are at most as many passes as distinct gang sizes.

    Parameters
    ----------
    order : ndarray of int
        Jobs in priority order (highest first).
    gpus : ndarray
        Gang size of every job (indexed by job, not by position in `order`).
    free : float
        GPUs to fill.

    Returns
    -------
    ndarray of int
        The jobs admitted, in priority order.

    Examples
    --------
    >>> first_fit(np.array([0, 1, 2, 3]), np.array([2, 4, 1, 1]), 4)
    array([0, 2, 3])
    """
    admitted = []
    queue = order[gpus[order] <= free]
    while queue.size:
        prefix = np.cumsum(gpus[queue]) <= free
        count = int(prefix.sum())  # >= 1: the queue holds only jobs that fit
        admitted.append(queue[:count])
        free -= float(gpus[queue[:count]].sum())
        queue = queue[count:]
        queue = queue[gpus[queue] <= free]
    return np.concatenate(admitted) if admitted else np.zeros(0, dtype=np.int64)
