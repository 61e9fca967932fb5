"""Gavel's round mechanism: an allocation turned into whole gangs on types, one round at a time.

Gavel's scheduler (``scheduler/scheduler.py``: ``_update_priorities``, ``_reset_time_run_so_far``,
``_schedule_jobs_on_workers_helper``) turns a fractional allocation ``X`` (jobs x types, the share
of time each job should spend on each type) into a round: per-(job, type) priorities
``X_ik / (share of type k's counted time job i received)``, deficits as tie-breakers, type by type
in the cluster's order, whole gangs first-fit, each job on at most one type; then work
conservation, idle GPUs to the waiting jobs that fit, each on its fastest type with room.
`gavel_round_step` is that round as a pure function of the book's frozen state, for K types and
for one (K = 1), the round of `vfm.cluster.baselines.mechanisms.GavelRounds`; the counters are
`vfm.cluster.baselines.gavel_counters`'.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

from vfm.cluster.baselines.gavel_counters import credited, priorities, ranking, reset
from vfm.cluster.baselines.round_book import RoundState
from vfm.gang_packing import first_fit

__all__ = ["gavel_round_step"]

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]


def gavel_round_step(state: RoundState, x: FloatArray) -> tuple[IntArray, IntArray, dict[str, np.ndarray]]:
    """One round of Gavel's mechanism on allocation `x` (n, K), from the frozen `state` (its counters
    and ``epoch_s`` of shape (n, K)): the rows to run, the type index of each (in placement order),
    and Gavel's counters after the round."""
    counters = {name: state.col(name) for name in ("job_time", "should", "deficit")}
    if state.changed:
        counters = reset(counters, state.round_s)
    rows, on = _placed(state, x, counters)
    return rows, on, credited(counters, (rows, on), x, state.round_s)


def _placed(state: RoundState, x: FloatArray, counters: Mapping[str, np.ndarray]) -> tuple[IntArray, IntArray]:
    """Rows to run and the type index of each, in placement order (steps 3 and 4 of the class)."""
    gpus, seq, deficit = state.col("gpus"), state.col("seq"), counters["deficit"]
    priority = np.where(x > 0, priorities(counters["job_time"], x), 0.0)
    placed = np.full(state.n, -1, dtype=np.int64)
    free = state.counts
    rows, on = [], []
    for k in range(len(state.cluster)):  # the types (at most a few), each a vectorized first-fit
        cand = np.flatnonzero((x[:, k] > 0) & (placed < 0))
        order = cand[ranking(seq[cand], x[cand, k], deficit[cand, k], priority[cand, k])]
        chosen = first_fit(order, gpus, int(free[k]))
        placed[chosen] = k
        free[k] -= int(gpus[chosen].sum())
        rows.append(chosen)
        on.append(np.full(chosen.size, k, dtype=np.int64))
    hosts = np.isfinite(state.col("epoch_s"))
    waiting = np.flatnonzero((placed < 0) & (hosts & (gpus[:, None] <= free[None, :])).any(axis=1))
    if waiting.size:
        order = waiting[np.lexsort((seq[waiting], -deficit[waiting].sum(axis=1), -priority[waiting].max(axis=1)))]
        extra_rows, extra_on = _fill(order, gpus, state.col("epoch_s"), free)
        rows.append(extra_rows)
        on.append(extra_on)
    return np.concatenate(rows), np.concatenate(on)


def _fill(order: IntArray, gpus: IntArray, epoch_s: FloatArray, free: IntArray) -> tuple[IntArray, IntArray]:
    """Work conservation: the waiting jobs in `order`, each on its fastest type with room.

    A loop over the waiting jobs: each job's choice depends on the room the jobs before it
    left on every type, a sequential greedy with no vectorized pass equivalent once jobs
    prefer different types. It is plain Python over small lists, runs only over jobs whose
    gang fits some type's idle GPUs, and stops as soon as no waiting gang fits anywhere.
    """
    # Each job's hosting types, fastest first (ties: the cluster's order).
    prefs = np.argsort(epoch_s[order], axis=1, kind="stable")
    hosting = np.isfinite(np.take_along_axis(epoch_s[order], prefs, axis=1))
    room = free.tolist()
    widths = gpus[order].tolist()
    smallest = min(widths)
    rows, on = [], []
    for pos, (i, width) in enumerate(zip(order.tolist(), widths, strict=True)):
        if max(room) < smallest:
            break
        if width > max(room):
            continue
        for k, ok in zip(prefs[pos].tolist(), hosting[pos].tolist(), strict=True):
            if ok and width <= room[k]:
                room[k] -= width
                rows.append(i)
                on.append(k)
                break
    return np.array(rows, dtype=np.int64), np.array(on, dtype=np.int64)
