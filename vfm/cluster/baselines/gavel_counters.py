"""Gavel's time accounting: the counters by which its round mechanism ranks jobs against an allocation.

Gavel's scheduler (``scheduler/scheduler.py``: ``_update_priorities``, ``_reset_time_run_so_far``,
``_schedule_jobs_on_workers_helper``) turns a fractional allocation ``x`` (the share of time each
job should spend on each type) into whole rounds by three counters per job and type, columns of
the baselines' book: ``job_time`` (seconds run since the last reset, starting at ``round_s / 2``),
``should`` (seconds it should have run since the reset, ``sum x round_s``) and ``deficit`` (what
it was owed at earlier resets), each of shape ``(n, K)`` (``(n,)`` works too). The functions here
are pure: `vfm.cluster.baselines.gavel_rounds.gavel_round_step` steps on them, and writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

__all__ = ["Counters", "credited", "priorities", "ranking", "reset"]

#: The three counters by name (``job_time``, ``should``, ``deficit``), each an array over the jobs.
Counters = Mapping[str, NDArray[np.float64]]


def reset(counters: Counters, round_s: float) -> dict[str, NDArray[np.float64]]:
    """Gavel's ``_reset_time_run_so_far``, as new arrays: deficits absorb the time owed, counts restart.

    Each deficit grows by the time the job should have received since the last reset minus the
    time it did receive; ``job_time`` restarts at ``round_s / 2`` and ``should`` at 0.
    """
    job_time = counters["job_time"]
    return {"job_time": np.full_like(job_time, round_s / 2.0), "should": np.zeros_like(counters["should"]),
            "deficit": counters["deficit"] + (counters["should"] - (job_time - round_s / 2.0))}


def credited(counters: Counters, ran: NDArray[np.int64] | tuple[NDArray[np.int64], NDArray[np.int64]],
             x: NDArray[np.float64], round_s: float) -> dict[str, NDArray[np.float64]]:
    """A round closed, as new arrays: the entries `ran` of ``job_time`` (rows, or rows and types)
    ran a whole round, and every job should have received ``x round_s`` more."""
    job_time = counters["job_time"].copy()
    job_time[ran] += round_s
    return {"job_time": job_time, "should": counters["should"] + x * round_s, "deficit": counters["deficit"]}


def priorities(job_time: NDArray[np.float64], x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gavel's priorities ``x / fraction``: `fraction` the share of the counted time (over all
    jobs, per type) each job received; the jobs furthest below their allocation come first.

    Every count starts at ``round_s / 2``, so every fraction is > 0.
    """
    fraction = job_time / job_time.sum(axis=0)
    out: NDArray[np.float64] = x / fraction
    return out


def ranking(seq: NDArray[np.int64], x: NDArray[np.float64], deficit: NDArray[np.float64],
            priority: NDArray[np.float64]) -> NDArray[np.intp]:
    """Positions in Gavel's order: (priority, deficit, allocation) descending, then arrival."""
    # lexsort: the last key is the primary one.
    return np.lexsort((seq, -x, -deficit, -priority))
