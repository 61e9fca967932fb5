r"""The rounding's walk over the window's rounds, compiled (`vfm.planner.rounding.round_placement`):
each round's owed jobs in their order, packed first-fit on their preferred GPU types, then the idle
GPUs filled; every round depends on what the rounds before it gave, so the walk is one loop.

The orders are those of `numpy.lexsort` and stable `numpy.argsort`, ties to the job order, and the
packing is first fit (`vfm.gang_packing.first_fit`), so the placement is the one the rounding's
module docstring defines, job for job.
"""

from __future__ import annotations

import numpy as np

from vfm.planner._kernels import jit


@jit.inlined
def _stable_descending(jobs: np.ndarray, key: np.ndarray) -> np.ndarray:
    """`jobs` ordered by `key[jobs]` largest first, ties in the order given (a stable sort)."""
    values = np.empty(jobs.size)
    for k in range(jobs.size):
        values[k] = -key[jobs[k]]
    return jobs[np.argsort(values, kind="mergesort")]


@jit.inlined
def _first_fit(queue: np.ndarray, gpus: np.ndarray, free: np.ndarray, preference: np.ndarray,
               hosts: np.ndarray, t: int, kind: np.ndarray) -> None:
    """Place the jobs of `queue` (in that order) first fit on GPU types, in passes (`rounding.place`):
    pass `p` offers every job still unplaced its `p`-th preferred type (`preference` (n, K)), where
    it is admitted if the type can host it in round `t` (`hosts` (n, K, T)) and its gang fits the
    type's GPUs left `free` (K,); `kind[i]` := the type of job i placed (`free` decreased)."""
    types = free.size
    placed = np.zeros(queue.size, dtype=np.bool_)
    for rank in range(types):
        for position in range(queue.size):
            i = queue[position]
            if placed[position]:
                continue
            k = preference[i, rank]
            if hosts[i, k, t] and gpus[i] <= free[k]:
                free[k] -= gpus[i]
                kind[i] = k
                placed[position] = True


@jit.inlined
def _owed_order(candidates: np.ndarray, must: np.ndarray, starving: np.ndarray, late: np.ndarray,
                share: np.ndarray) -> np.ndarray:
    """`candidates` in the rounding's order: must run now and starving first, then must run now, then
    starving, then the others; within each, the largest `late`, then the largest `share`, then job
    order (`numpy.lexsort((-share, -late, ~starving, ~must))`)."""
    order = _stable_descending(_stable_descending(candidates, share), late)
    out = np.empty_like(order)
    filled = 0
    for wanted_must in (True, False):
        for wanted_starving in (True, False):
            for i in order:
                if must[i] == wanted_must and starving[i] == wanted_starving:
                    out[filled] = i
                    filled += 1
    return out


@jit.inlined
def _planned_types(relaxed: np.ndarray, pace: np.ndarray, t: int, jobs: np.ndarray, preference: np.ndarray) -> None:
    """The types of each of `jobs`, the largest planned fraction of round `t` first, then the fastest,
    then the type order (`numpy.lexsort((arange(K), -pace, -relaxed[:, :, t]), axis=1)`), into
    `preference` (the other jobs' rows are left as they are)."""
    types = pace.shape[1]
    for i in jobs:
        for k in range(types):
            position = k
            while position > 0:
                other = preference[i, position - 1]
                if relaxed[i, other, t] > relaxed[i, k, t] or (
                        relaxed[i, other, t] == relaxed[i, k, t] and pace[i, other] >= pace[i, k]):
                    break
                preference[i, position] = other
                position -= 1
            preference[i, position] = k


@jit.inlined
def _owed_now(t: int, owed: np.ndarray, covered: np.ndarray, serves: np.ndarray, first: np.ndarray,
              later_serves: np.ndarray, later_first: np.ndarray, fresh: np.ndarray, given: np.ndarray,
              must: np.ndarray, starving: np.ndarray) -> np.ndarray:
    """The jobs owed a round that can take round `t` (a job not yet `covered` only where it is served
    `first`), in job order; for each, `must` := it has no later round to spare (owed as many as the
    rounds left from `t`) and `starving` := it must, is `fresh` and has been `given` none."""
    n = owed.size
    candidates = np.empty(n, dtype=np.int64)
    count = 0
    for i in range(n):
        if owed[i] > 0 and (serves[i, t] if covered[i] else first[i, t]):
            candidates[count] = i
            count += 1
            must[i] = owed[i] >= (later_serves[i, t] if covered[i] else later_first[i, t])
            # A fresh job with no round yet that must run now: without this round its utility is 0.
            starving[i] = must[i] and fresh[i] and given[i] == 0
    return candidates[:count]


@jit.compiled
def walk_rounds(relaxed: np.ndarray, share: np.ndarray, owed: np.ndarray, late: np.ndarray, fresh: np.ndarray,
                covered: np.ndarray, serves: np.ndarray, first: np.ndarray, fits: np.ndarray, hosts: np.ndarray,
                gpus: np.ndarray, capacity: np.ndarray, remaining_s: np.ndarray, round_s: float, pace: np.ndarray,
                fastest: np.ndarray, speeds: bool, placement: np.ndarray) -> None:
    """The rounding's walk (`vfm.planner.rounding.round_placement`, whose arrays these are): `placement`
    (n, T), filled with -1, := the type each job runs on in each round; `owed` and `covered` are
    updated as the rounds are given. `speeds`: whether running times are counted at the jobs' `pace`
    (else in rounds)."""
    n, types, rounds = relaxed.shape
    given = np.zeros(n)
    given_s = np.zeros(n) if speeds else given  # without speeds, the rounds themselves
    # The rounds from t on that each job is served in, or served first in (`covered` chooses).
    later_serves = np.zeros((n, rounds + 1), dtype=np.int64)
    later_first = np.zeros((n, rounds + 1), dtype=np.int64)
    for i in range(n):
        for t in range(rounds - 1, -1, -1):
            later_serves[i, t] = later_serves[i, t + 1] + serves[i, t]
            later_first[i, t] = later_first[i, t + 1] + first[i, t]
    must, starving = np.zeros(n, dtype=np.bool_), np.zeros(n, dtype=np.bool_)
    preference = fastest.copy()
    kind = np.empty(n, dtype=np.int64)
    free = np.empty(types)
    left_s = np.empty(n)
    for t in range(rounds):
        candidates = _owed_now(t, owed, covered, serves, first, later_serves, later_first, fresh, given, must,
                               starving)
        order = _owed_order(candidates, must, starving, late, share[:, t])
        if types > 1:
            _planned_types(relaxed, pace, t, order, preference)  # only the owed jobs' are read
        for k in range(types):
            free[k] = capacity[k, t]
        kind[:] = -1
        _first_fit(order, gpus, free, preference, hosts, t, kind)
        for i in range(n):
            left_s[i] = remaining_s[i] - round_s * given_s[i]
        # Every unfinished job may fill idle GPUs, even one whose forecast time is used up: the forecast
        # can be short, and an idle GPU earns nothing (longest forecast time left first).
        waiting = np.empty(n, dtype=np.int64)
        count = 0
        for i in range(n):
            if kind[i] < 0 and fits[i, t] and remaining_s[i] > 0:
                waiting[count] = i
                count += 1
        running = kind >= 0
        _first_fit(_stable_descending(waiting[:count], left_s), gpus, free, fastest, hosts, t, kind)
        for i in range(n):
            if kind[i] < 0:
                continue
            placement[i, t] = kind[i]
            if running[i]:
                owed[i] -= 1
            covered[i] = covered[i] or first[i, t]
            given[i] += 1
            if speeds:
                given_s[i] += pace[i, kind[i]]
