r"""The wait limit's commitments, compiled: `vfm.planner.program.wait_floor`'s greedy assignment of
committed rounds, one job after another (each job's choice depends on the GPUs the earlier ones took).
"""

from __future__ import annotations

import numpy as np

from vfm.planner._kernels import jit


@jit.compiled
def commit_rounds(order: np.ndarray, candidates: np.ndarray, gpus: np.ndarray, deadline: np.ndarray,
                  earliest: np.ndarray, room: np.ndarray, committed: np.ndarray) -> None:
    """For each job i of `order` in turn, the latest round t <= `deadline[i]` of `candidates[i]` (bool
    (n, T)) in which its gang `gpus[i]` fits the GPUs left `room` (T,) (within 1e-9), or the earliest
    such round where `earliest[i]`, else the earliest after the deadline: `committed[i, t]` := True
    and `room[t]` -= `gpus[i]`. A job with no such round gets none."""
    goods = candidates.shape[1]
    for i in order:
        chosen = -1
        last = min(deadline[i], goods - 1)
        for k in range(last + 1):
            t = k if earliest[i] else last - k
            if candidates[i, t] and gpus[i] <= room[t] + 1e-9:
                chosen = t
                break
        if chosen < 0:
            for t in range(deadline[i] + 1, goods):
                if candidates[i, t] and gpus[i] <= room[t] + 1e-9:
                    chosen = t
                    break
        if chosen >= 0:
            committed[i, chosen] = True
            room[chosen] -= gpus[i]
