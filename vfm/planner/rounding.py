r"""From the relaxation's fractional schedule to whole rounds with whole gangs.

`round_schedule` walks the window's rounds in order (one compiled loop,
`vfm.planner._kernels.placement`: each round depends on what the rounds before it gave). In round `t`:

1. **Planned rounds first.** Job `i` is owed :math:`q_i = \operatorname{round}(\sum_t y_{it})`
   whole rounds (at most the rounds it fits and makes forecast progress in; at least one if it
   has made no progress yet and :math:`\sum_t y_{it} > 0`, read before the fractions are
   quantized to `RESOLUTION`, or its utility would be 0; that first round in a round where
   every scenario credits it progress, `covering`). Among
   the jobs still owed a round, those that must run now to receive all of them (owed as many as
   the rounds left) come first, and among them the jobs with no progress that have had no round
   yet (one round is what keeps their utility above 0); then
   the jobs furthest past their fair finish time (largest `lateness`), then the largest planned
   fraction :math:`y_{it}`. They are packed first-fit: in this order, a job is admitted if its
   whole gang fits the GPUs still free.
2. **Work conservation.** GPUs left idle go, first-fit again, to the jobs not yet running whose
   forecast running time left after the rounds already given is longest.

So every round holds whole gangs within capacity, a job receives its planned number of rounds
unless capacity runs out, and no GPU idles while a job that fits and has work left waits.

Ties
    The fractions are read to `RESOLUTION` of a round (`quantize`) before they are compared or
    rounded: solvers return them only to their accuracy, and without it two backends, or two
    tolerances, would order jobs that the program treats alike (an exact tie, such as two
    identical jobs, or a total of exactly 2.5 rounds) by their rounding noise. Ties left after the
    keys are broken by job order (the callers keep jobs in arrival order).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vfm._validation import FloatArray
from vfm.gang_packing import first_fit
from vfm.planner._kernels import placement as placement_kernels
from vfm.planner.typed import hosting

BoolArray = np.ndarray

#: The fractions of a round the planner tells apart: above the backends' disagreement at the
#: default tolerance 1e-9 (3e-4 of a round at the median, 3e-3 at most, over the 120-job
#: reproduction's re-plans; docs/planning.md) and well below a round.
RESOLUTION = 1e-2


def quantize(fractions: FloatArray) -> FloatArray:
    """`fractions` (of rounds) rounded to the nearest multiple of `RESOLUTION` (module docstring)."""
    return np.round(np.asarray(fractions, dtype=np.float64) / RESOLUTION) * RESOLUTION


@dataclass(frozen=True)
class RoundingContext:
    """What the rounding reads of each job besides its fractions (module docstring); every field
    optional, None meaning no preference or no restriction.

    Attributes
    ----------
    lateness : ndarray, shape (n,), optional
        Priority among owed jobs: how far past its fair finish time each job is projected
        (larger goes first). Default: no preference.
    base : ndarray, shape (n,), optional
        Progress before the window. A job with none (0) that the relaxation plans for any
        positive time is owed at least one round, so that its rounded utility is not 0.
    useful : ndarray of bool, shape (n, T), optional
        Rounds in which running makes forecast progress (default: every round the job fits).
        Owed rounds are served only there; the forecast of "epochs in round t if the job runs
        all rounds up to t" is 0 after its forecast end, so a round there would earn nothing.
    covering : ndarray of bool, shape (n, T), optional
        Rounds in which running makes progress in *every* scenario (default: `useful`). A job
        with no progress yet (`base` 0) is served its first owed round only there when it has
        such a round: a round that earns nothing in one scenario leaves its utility 0 (log
        utility -inf) in that scenario. Its later rounds may be any `useful` ones.
    """

    lateness: FloatArray | None = None
    base: FloatArray | None = None
    useful: np.ndarray | None = None
    covering: np.ndarray | None = None


def round_schedule(
    relaxed: FloatArray,
    gpus: FloatArray,
    capacity: FloatArray,
    remaining_s: FloatArray,
    round_s: float,
    context: RoundingContext = RoundingContext(),
) -> BoolArray:
    """Round a fractional schedule to whole rounds (module docstring).

    Parameters
    ----------
    relaxed : ndarray, shape (n, T)
        Fractions :math:`y_{it} \\in [0, 1]` of each round each job runs.
    gpus : ndarray, shape (n,)
        Gang sizes :math:`w_i`.
    capacity : ndarray, shape (T,)
        GPUs :math:`G_t` in each round.
    remaining_s : ndarray, shape (n,)
        Forecast running time each job still needs (seconds); 0 marks a finished job, which the
        work-conserving fill never adds (it orders the others by the time left after the rounds
        already given, longest first, and adds them even when that is used up).
    round_s : float
        Seconds per round.
    context : RoundingContext, optional
        Each job's lateness, progress before the window and useful rounds (default: none).

    Returns
    -------
    ndarray of bool, shape (n, T)
        ``schedule[i, t]``: job `i` runs all of round `t` on its whole gang.

    Examples
    --------
    Three 2-GPU jobs on 4 GPUs for two rounds, each planned for 2/3 of every round, so each is
    owed one round: jobs 0 and 1 run in round 0, job 2 in round 1, and job 0 (its tie with job 1
    broken by order) takes the GPUs left idle in round 1.

    >>> import numpy as np
    >>> round_schedule(np.full((3, 2), 2 / 3), np.array([2, 2, 2]), np.array([4, 4]),
    ...                remaining_s=np.full(3, 1e4), round_s=120.0).astype(int)
    array([[1, 1],
           [1, 0],
           [0, 1]])
    """
    return round_placement(relaxed[:, None, :], gpus, capacity[None, :], remaining_s, round_s, context) >= 0


def round_placement(
    relaxed: FloatArray,
    gpus: FloatArray,
    capacity: FloatArray,
    remaining_s: FloatArray,
    round_s: float,
    context: RoundingContext = RoundingContext(),
    speed: FloatArray | None = None,
) -> np.ndarray:
    r"""`round_schedule` on a cluster of GPU types: whole rounds, each gang on one type.

    The same walk (module docstring) with a job's fraction of round `t` the sum over types
    :math:`\sum_k y_{ikt}`; admitting a job places it on a type (`place`): the owed jobs on the
    types of their largest planned fractions, the work-conserving fill on their fastest types.
    With one type it is `round_schedule`.

    Parameters
    ----------
    relaxed : ndarray, shape (n, K, T)
        Fractions :math:`y_{ikt}` of round `t` job `i` runs on type `k`.
    gpus : ndarray, shape (n,)
    capacity : ndarray, shape (K, T)
        GPUs of each type in each round.
    remaining_s, round_s, context
        As in `round_schedule` (`useful` and `covering` per round, shape (n, T)).
    speed : ndarray, shape (n, K), optional
        Each job's running time per round on each type relative to the type `remaining_s` is
        measured on (default 1); 0 where a type cannot host the job.

    Returns
    -------
    ndarray of int, shape (n, T)
        The type each job runs on in each round, -1 where it does not run.
    """
    # A job with no progress yet and none in the window has utility 0 (log utility -inf): one
    # round, if it is planned any time at all, keeps the rounded objective finite. "Any time" is
    # read before quantizing: a large priority weight on another job can plan it a sliver below
    # the resolution, which would read as none.
    planned_any = np.asarray(relaxed, dtype=np.float64).sum(axis=(1, 2)) > 0
    lateness, base, useful, covering = context.lateness, context.base, context.useful, context.covering
    relaxed = quantize(relaxed)
    n, types, rounds = relaxed.shape
    pace = np.ones((n, types)) if speed is None else speed
    hosts = hosting(gpus, capacity, pace)  # (n, K, T)
    fits: BoolArray = np.any(hosts, axis=1)
    serves: BoolArray = fits if useful is None else fits & useful
    first: BoolArray = serves if covering is None else serves & covering
    # Covered: progress already (base > 0), or no covering round to give; the others need one.
    covered = np.ones(n, dtype=bool) if base is None else (base > 0) | ~first.any(axis=1)
    rounds_that_fit = serves.sum(axis=1)
    share = relaxed.sum(axis=1)  # (n, T): each job's fraction of each round
    planned = share.sum(axis=1)
    owed = np.floor(planned + 0.5)
    if base is not None:
        owed = np.where((base == 0) & planned_any, np.maximum(owed, 1.0), owed)
    owed = np.minimum(owed, rounds_that_fit)
    late = np.zeros(n) if lateness is None else lateness
    fresh = np.zeros(n, dtype=bool) if base is None else base == 0
    placement = np.full((n, rounds), -1, dtype=np.int64)
    # The fill's preference: fastest type first (ties: the type order).
    fastest = np.argsort(-pace, axis=1, kind="stable")
    # The walk itself, one round after another (each depends on what the rounds before gave): compiled,
    # on writable copies of the caller's arrays (a read-only one would need a compilation of its own).
    placement_kernels.walk_rounds(
        np.ascontiguousarray(relaxed), np.ascontiguousarray(share), owed, np.array(late, dtype=np.float64), fresh,
        covered, serves, first, fits, hosts, np.array(gpus, dtype=np.float64), np.array(capacity, dtype=np.float64),
        np.array(remaining_s, dtype=np.float64), float(round_s), np.array(pace, dtype=np.float64), fastest,
        speed is not None, placement)
    return placement


def place(order: np.ndarray, gpus: FloatArray, free: FloatArray, preference: np.ndarray,
          hosts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The jobs of `order` placed first-fit on GPU types, and the type of each.

    In passes: pass `p` offers every job still unplaced its `p`-th preferred type, and each type
    admits, first-fit in `order` (`first_fit`), the jobs offered it. With one type this is
    `first_fit`. `free` (shape (K,)) is decreased by the GPUs taken.

    Parameters
    ----------
    order : ndarray of int
        Jobs in priority order.
    gpus : ndarray, shape (n,)
    free : ndarray, shape (K,)
        GPUs of each type still free (updated in place).
    preference : ndarray of int, shape (n, K)
        Each job's types, most preferred first.
    hosts : ndarray of bool, shape (n, K)
        Whether each type can host each job this round.

    Returns
    -------
    (ndarray of int, ndarray of int)
        The jobs placed (in placement order) and their types.
    """
    if free.size == 1:  # one type: first fit itself
        admitted = first_fit(order[hosts[order, 0]], gpus, float(free[0]))
        free[0] -= float(gpus[admitted].sum())
        return admitted, np.zeros(admitted.size, dtype=np.int64)
    jobs, kinds = [], []
    queue = order
    for rank in range(preference.shape[1]):
        offered = preference[queue, rank]
        taken = np.zeros(queue.size, dtype=bool)
        for k in range(free.size):  # a few types: one vectorized first fit each
            mine = np.flatnonzero((offered == k) & hosts[queue, k])
            admitted = first_fit(queue[mine], gpus, float(free[k]))
            if admitted.size:
                free[k] -= float(gpus[admitted].sum())
                taken[mine[np.isin(queue[mine], admitted)]] = True
                jobs.append(admitted)
                kinds.append(np.full(admitted.size, k, dtype=np.int64))
        queue = queue[~taken]
        if not queue.size:
            break
    if not jobs:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    return np.concatenate(jobs), np.concatenate(kinds)

