r"""The expected-NSWOT program of a planning window.

Job `i` runs a fraction :math:`y_{it} \in [0, 1]` of round `t` on its :math:`w_i` GPUs. In
forecast scenario `s` it then reaches the normalized progress

.. math:: U_{si}(y) = c_i + \sum_t a_{sit}\, y_{it}, \qquad
          c_i = \frac{e_i}{E_i},\quad a_{sit} = \frac{r_{sit}}{E_i},

(above a service floor or committed rounds, `above_floor`, the base is one per scenario,
:math:`c_{si}`: the floor's progress differs between scenarios), and the planner solves the sample
average approximation (SAA) of expected NSWOT

.. math::

    \max_{y}\; \sum_i \frac{B_i}{S} \sum_s \log U_{si}(y) \;-\; k \max\!\big(0, \max_i S_i(y)\big)
    \;-\; \sum_{it} c_{it} y_{it}
    \quad\text{s.t.}\quad \sum_i w_i y_{it} \le G_t,\;\; 0 \le y \le 1,\;\;
    S_i(y) \le b_i \ (\text{FTF}),

with :math:`S_i(y) = \hat T_i - W \sum_t y_{it}` the forecast running time left after the
window (:math:`W` seconds per round) and :math:`c \ge 0` a price on when a job runs (`time_cost`,
`completion_time_cost`; none by default). A job whose gang does not fit a round's capacity has
:math:`y_{it} = 0` there. The utility cap :math:`U \le 1` is implied: a
forecaster never forecasts more epochs than a job has left, so
:math:`U_{si}(y) \le 1` on the whole box.

GPU types
    On a cluster of several GPU types the program's columns are *goods*: GPUs of type `k` in
    round `t` (`good_round` maps each good to its round). A job's gang runs on one type in a
    round, so the program adds, for every job and round with several goods,
    :math:`\sum_{g \in t} y_{ig} \le 1` (:math:`u_t`), and a fraction of good `g` counts
    :math:`W p_{ig}` seconds of the job's running time (`speed` :math:`p`, its type's speed
    relative to the type `remaining_s` is measured on): :math:`S_i(y) = \hat T_i - W \sum_g p_{ig}
    y_{ig}`, and the FTF rows read :math:`\sum_g p_{ig} y_{ig} \ge m_i`. With one good per round and
    :math:`p = 1` this is the program above.

Choosing among optimal schedules
    The program has many optimal schedules: a job whose progress per round is the same in several
    rounds is indifferent between them, so only its total is determined. The solvers therefore
    maximize the objective minus the strictly convex tie-breaking term

    .. math:: \frac{\delta}{2} \sum_i m_i \sum_t y_{it}^2, \qquad m_i = B_i \max_{s,t} a_{sit},

    whose maximizer is unique: among the schedules that are (nearly) optimal it is the one that
    spreads each job's rounds most evenly over the window. :math:`m_i` scales the term to the
    job's own log utility, so its marginal :math:`\delta m_i y_{it}` is at most the fraction
    :math:`\delta` of the job's marginal value of its best round. `objective` does not include
    the term; the solvers certify their bounds for this program's objective, without it.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import Any, ClassVar, Literal

import numpy as np
import scipy.optimize
import scipy.sparse
import scipy.sparse.csgraph

from vfm import utility
from vfm._validation import FloatArray, read_only
from vfm.errors import ValidationError
from vfm.planner._kernels import waits

#: The array fields of `PlanningProgram` (made read-only on construction).
_ARRAYS = ("progress", "base", "budgets", "gpus", "capacity", "remaining_s", "leftover_limit_s", "upper", "speed",
           "time_cost")


#: Seconds per runnable entry that SciPy's HiGHS spends on `PlanningProgram._typed_lp_room`'s LP
#: before it first checks its time limit (building, passing and presolving the model, which grows
#: with the entries; measured on the 2-core benchmark machine).
_LP_SETUP_S_PER_ENTRY = 1e-6


@dataclass(frozen=True, eq=False)
class PlanningProgram:
    r"""The data of one window's expected-NSWOT program (module docstring).

    Attributes
    ----------
    progress : ndarray, shape (S, n, T)
        :math:`a_{sit} = r_{sit} / E_i`, normalized progress of a full round in each scenario.
    base : ndarray, shape (n,) or (S, n)
        :math:`c_i = e_i / E_i`, the same in every scenario (shape (n,)), or one per scenario
        :math:`c_{si}` (shape (S, n)): the utilities then read :math:`U_{si}(y) = c_{si} + \sum_t
        a_{sit} y_{it}`. A program above a floor (`above_floor`) has one per scenario: the floor's
        progress differs between them. `scenario_base` is the (S, n) form either way; a job is
        open (`open_jobs`) while its base is below 1 in some scenario.
    budgets : ndarray, shape (n,)
        :math:`B_i` times the priority weight of the FTF relaxation (1 without it).
    gpus : ndarray, shape (n,)
        Gang sizes :math:`w_i`.
    capacity : ndarray, shape (T,)
        :math:`G_t`.
    round_s : float
        :math:`W`.
    remaining_s : ndarray, shape (n,)
        Forecast remaining running time :math:`\hat T_i` (seconds).
    efficiency : float
        :math:`k \ge 0` (0: no efficiency term).
    leftover_limit_s : ndarray, shape (n,), or None
        :math:`b_i`, the FTF bound on :math:`S_i` (None: no FTF constraints).
    spread : float
        :math:`\delta \ge 0`, weight of the tie-breaking term `spread_penalty` the solvers
        subtract from the objective (0: none; module docstring).
    upper : ndarray, shape (T,), or None
        The most of round `t` a job can run, :math:`y_{it} \le u_t` (None: 1 in every round,
        which is what `vfm.planner.plan` builds).
    good_round : ndarray of int, shape (T,), or None
        With GPU types (module docstring), the round of each column, which is then a good (type,
        round); rounds numbered from 0, each with at least one good. None: column `t` is round `t`.
    speed : ndarray, shape (n, T), or None
        :math:`p_{ig} \ge 0`, the running time one round of good `g` gives job `i`, relative to a
        round on the type `remaining_s` is measured on (None: 1 everywhere). A good with
        :math:`p_{ig} = 0` cannot host job `i` (`fits` is False there).
    time_cost : ndarray, shape (n, T), or None
        :math:`c_{it} \ge 0`: the objective subtracts :math:`\sum_{it} c_{it} y_{it}`, a price on
        when a job runs (`completion_time_cost`; None: no such term).
    """

    #: The problem type, for the solver registry (`vfm.solvers.base.Problem`).
    problem_kind: ClassVar[Literal["planning"]] = "planning"

    progress: FloatArray
    base: FloatArray
    budgets: FloatArray
    gpus: FloatArray
    capacity: FloatArray
    round_s: float
    remaining_s: FloatArray
    efficiency: float = 0.0
    leftover_limit_s: FloatArray | None = None
    spread: float = 0.0
    upper: FloatArray | None = None
    good_round: np.ndarray | None = None
    speed: FloatArray | None = None
    time_cost: FloatArray | None = None

    def __post_init__(self) -> None:
        # A plan hands its program out: its arrays are read-only for good (`read_only`).
        for name in _ARRAYS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, read_only(np.asarray(value, dtype=np.float64)))
        if self.good_round is not None:
            object.__setattr__(self, "good_round", read_only(np.asarray(self.good_round, dtype=np.int64)))
        scenarios, n = self.progress.shape[:2] if self.progress.ndim == 3 else (None, None)
        if self.base.shape not in ((n,), (scenarios, n)):
            raise ValidationError(f"base must have shape (n,) = ({n},) or (S, n) = ({scenarios}, {n}) for progress of "
                                  f"shape (S, n, T) = {self.progress.shape}, got shape {self.base.shape}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Rebuilt through the constructor: the arrays are read-only again, the cached values recomputed.
        return (PlanningProgram, tuple(getattr(self, f.name) for f in fields(self)))

    @property
    def shape(self) -> tuple[int, int, int]:
        """(S, n, T)."""
        s, n, t = self.progress.shape
        return s, n, t

    @property
    def over_types(self) -> bool:
        """Whether the program is over GPU types (`good_round` or `speed` given, module docstring):
        a backend must declare the ``gpu_types`` feature (`features`) to be given it."""
        return self.good_round is not None or self.speed is not None

    @property
    def features(self) -> frozenset[str]:
        """The features the program uses, which a backend must support to solve it
        (`vfm.solvers.base.PLANNING_FEATURES`): ``scenarios`` (more than one), ``efficiency``,
        ``fairness`` (FTF rows), ``spread`` and ``gpu_types`` (`over_types`)."""
        uses = {
            "scenarios": self.shape[0] > 1,
            "efficiency": self.efficiency > 0,
            "fairness": self.leftover_limit_s is not None,
            "spread": self.spread > 0,
            "gpu_types": self.over_types,
        }
        return frozenset(name for name, used in uses.items() if used)

    @cached_property
    def scenario_base(self) -> FloatArray:
        """:math:`c_{si}`, each scenario's base, shape (S, n): `base` itself, or a (n,) base repeated
        in every scenario (a read-only view)."""
        return read_only(np.broadcast_to(self.base, self.shape[:2]))

    @cached_property
    def open_jobs(self) -> np.ndarray:
        """Whether job `i` has epochs left, its base below 1 (in some scenario, with one per scenario),
        shape (n,) bool."""
        below: np.ndarray = self.base < 1.0
        return read_only(below if below.ndim == 1 else np.asarray(below.any(axis=0)))

    @cached_property
    def several_per_round(self) -> bool:
        """Whether some round has several goods: the program then has the one-type-per-round rows."""
        return self.good_round is not None and np.unique(self.good_round).size < self.good_round.size

    @cached_property
    def pace(self) -> FloatArray:
        """:math:`p_{ig}`, the running time per round of each good, shape (n, T) (`speed`, or ones)."""
        return read_only(np.ones(self.shape[1:])) if self.speed is None else self.speed

    @cached_property
    def round_index(self) -> np.ndarray:
        """The round of each good, shape (T,) (`good_round`, or ``arange(T)``)."""
        return read_only(np.arange(self.shape[2])) if self.good_round is None else self.good_round

    @cached_property
    def window_rounds(self) -> int:
        """`R`, the rounds of the window (`round_index`'s largest plus one; `T` on one GPU type)."""
        return int(self.round_index.max()) + 1

    @cached_property
    def rounds_of_goods(self) -> scipy.sparse.csr_array:
        """The (T, R) 0/1 matrix of goods to their rounds (`round_index`)."""
        goods = self.shape[2]
        return scipy.sparse.csr_array((np.ones(goods), (np.arange(goods), self.round_index)),
                                      shape=(goods, self.window_rounds))

    @cached_property
    def bounds(self) -> FloatArray:
        """:math:`u_t`, the upper bound of every job's :math:`y_{it}`, shape (T,) (`upper`, or ones)."""
        return read_only(np.ones(self.shape[2])) if self.upper is None else self.upper

    @cached_property
    def fits(self) -> np.ndarray:
        """Whether job `i` can run in round `t`: its gang fits the round's capacity, it has epochs
        left (`open_jobs`: :math:`c_i < 1`) and (with GPU types) the good can host it, shape (n, T) bool."""
        return read_only((self.gpus[:, None] <= self.capacity[None, :]) & self.open_jobs[:, None]
                         & (self.pace > 0))

    @cached_property
    def runnable(self) -> np.ndarray:
        """`fits` and some scenario forecasts progress there, shape (n, T) bool: the entries the
        solvers optimize (the others are fixed at 0). Elsewhere running earns nothing, and it does
        not count as running time in `leftover_s` either."""
        return read_only(self.fits & (self.progress > 0).any(axis=0))

    def leftover_s(self, schedule: FloatArray) -> FloatArray:
        r""":math:`S_i = \max(0, \hat T_i - W \sum_t p_{it} y_{it})` for `schedule` of shape (n, T),
        counting only `runnable` entries: a round in which the forecast gives the job no progress
        does not shorten the time it has left."""
        return np.maximum(self.remaining_s - self.round_s * (schedule * self.runnable * self.pace).sum(axis=1), 0.0)

    def objective(self, schedule: FloatArray) -> float:
        """The program's objective at `schedule` (fractional or integral), shape (n, T)."""
        x = np.asarray(schedule, dtype=np.float64)
        if self.base.ndim == 1:
            value = float(utility.expected_nswot(
                self.progress[:, :, None, :], x[:, None, :], budgets=self.budgets, base_utility=self.base,
                backend="numpy",
            ))
        else:  # a base per scenario: the mean of each scenario's NSWOT
            value = float(np.mean([utility.expected_nswot(
                progress[:, None, :], x[:, None, :], budgets=self.budgets, base_utility=base, backend="numpy",
            ) for progress, base in zip(self.progress, self.base, strict=True)]))
        if self.efficiency:
            value -= self.efficiency * float(self.leftover_s(x).max())
        if self.time_cost is not None:
            value -= float(np.vdot(np.where(self.runnable, self.time_cost, 0.0), x))
        return value

    @cached_property
    def fairness_floor(self) -> FloatArray:
        r""":math:`m_i = (\hat T_i - b_i) / W`, the rounds job `i` must run for its FTF constraint
        :math:`S_i \le b_i` (which reads :math:`\sum_t y_{it} \ge m_i`), shape (n,); 0 for the jobs
        whose constraint cannot bind (none, an infinite limit, or :math:`m_i \le 0`)."""
        if self.leftover_limit_s is None:
            return read_only(np.zeros(self.shape[1]))
        with np.errstate(invalid="ignore"):
            floor = np.where(np.isfinite(self.leftover_limit_s),
                             (self.remaining_s - self.leftover_limit_s) / self.round_s, 0.0)
        return read_only(np.maximum(floor, 0.0))

    def fairness_room(self, margin: float, time_limit_s: float | None = None) -> bool:
        r"""Whether some schedule meets every FTF constraint with `margin` >= 0 rounds to spare.

        That is, :math:`\sum_t p_{it} y_{it} \ge m_i + \text{margin}` for every job with a binding
        constraint (`fairness_floor` > 0), with :math:`0 \le y \le 1` on its `runnable` entries
        and the capacity (and, over GPU types, one type per job and round). On one type
        (:math:`p = 1`), measured in GPU-rounds (:math:`x_{it} = w_i y_{it}`), this is a
        transportation problem, decided by one maximum flow (`_flow_room`; much faster than the
        equivalent LP). Over types the paces make it no flow: it is decided
        by one LP (`_typed_lp_room`), unless a maximum flow proves it first by counting each job
        only on its fastest goods, at their pace (a schedule on those goods has room over the
        types too). That certificate settled 202 of the 205 checks of the 460-job trace on thirds
        of V100, P100 and K80 and all 231 of the 900-job trace's, each in a fraction of the LP's time;
        the LP found room in the other three.

        True without binding constraints; False when a constrained job has no runnable entry, or
        when the LP runs out of `time_limit_s` seconds (None: no limit) before proving room.
        Room at a margin is room at every smaller one: the largest margin proven is remembered,
        so `vfm.planner.plan`'s check (1e-3 rounds) spares saa-ipm's (1e-6) a second one.
        """
        if margin <= self._room_proven[0]:
            return True
        floor = self.fairness_floor
        jobs = np.flatnonzero(floor > 0)
        if jobs.size == 0:
            return True
        if self.over_types:
            room = self._fastest_goods_room(jobs, margin) or self._typed_lp_room(jobs, margin, time_limit_s)
        else:
            room = self._flow_room(jobs, margin, self.runnable, np.ones(self.shape[1]))
        if room:
            self._room_proven[0] = margin
        return room

    def _fastest_goods_room(self, jobs: np.ndarray, margin: float) -> bool:
        """Room over GPU types proven by `_flow_room` with each job only on its fastest goods."""
        fastest = np.where(self.runnable, self.pace, 0.0).max(axis=1)
        return self._flow_room(jobs, margin, self.runnable & (self.pace >= fastest[:, None]), fastest)

    def _flow_room(self, jobs: np.ndarray, margin: float, allowed: np.ndarray, pace: FloatArray) -> bool:
        r"""Room proven by one maximum flow in GPU-rounds, each job `jobs[k]` counting only its
        `allowed` entries (n, T), every one at `pace[i]` (n,), at most its true pace there.

        Source to job `i` with capacity :math:`w_i (m_i + \text{margin}) / \text{pace}_i`, job to
        each allowed good with :math:`w_i u_t` (through one node per job and round, capped at the
        round's bound, when a round has several goods: one type per round), good to sink with
        :math:`G_t`; room when the flow saturates the source arcs. The flow is integral, so
        capacities are counted in units of :math:`1 / u` GPU-rounds, :math:`u` the largest scale at
        which the total capacity fits an int32: demands rounded up, arc capacities down. True is
        therefore exact; False means no such schedule has room `margin` plus at most
        :math:`T / u` GPU-rounds per job (about 1e-4 at 256 GPUs)."""
        job, good = np.nonzero(allowed & (self.fairness_floor > 0)[:, None])
        if not np.isin(jobs, job).all():
            return False
        n_jobs, goods = jobs.size, self.shape[2]
        node_of_job = np.zeros(self.shape[1], dtype=np.int64)
        node_of_job[jobs] = 1 + np.arange(n_jobs)
        unit = np.floor((np.iinfo(np.int32).max - 1) / (float(self.capacity.sum()) + 1.0))
        # Clipped: a demand above the total capacity cannot be met either way.
        demand = np.minimum(np.ceil(self.gpus[jobs] * (self.fairness_floor[jobs] + margin) / pace[jobs] * unit),
                            np.iinfo(np.int32).max)
        reach = np.floor(self.gpus[job] * self.bounds[good] * unit)
        first_good = n_jobs + 1
        if self.several_per_round:  # job -> (job, round) -> good
            rounds = self.round_bounds.size
            pair, pair_of_entry = np.unique(job * rounds + self.round_index[good], return_inverse=True)
            first_good += pair.size
            pair_job, pair_round = np.divmod(pair, rounds)
            tails = [node_of_job[pair_job], n_jobs + 1 + pair_of_entry]
            heads = [n_jobs + 1 + np.arange(pair.size), first_good + good]
            caps = [np.floor(self.gpus[pair_job] * self.round_bounds[pair_round] * unit), reach]
        else:
            tails, heads, caps = [node_of_job[job]], [first_good + good], [reach]
        sink = first_good + goods
        # 32-bit indices: SciPy 1.11's maximum flow refuses 64-bit ones.
        tail = np.concatenate([np.zeros(n_jobs, dtype=np.int64), *tails, first_good + np.arange(goods)])
        head = np.concatenate([node_of_job[jobs], *heads, np.full(goods, sink)])
        arcs = scipy.sparse.csr_array(
            (np.concatenate([demand, *caps, np.floor(self.capacity * unit)]).astype(np.int32),
             (tail.astype(np.int32), head.astype(np.int32))), shape=(sink + 1, sink + 1))
        return bool(scipy.sparse.csgraph.maximum_flow(arcs, 0, sink, method="dinic").flow_value >= demand.sum())

    def _typed_lp_room(self, jobs: np.ndarray, margin: float, time_limit_s: float | None = None) -> bool:
        r"""`fairness_room` with GPU types by one LP: the largest :math:`\epsilon \le` `margin` with
        :math:`\sum_g p_{ig} y_{ig} \ge m_i + \epsilon` within the capacity, the one-type-per-round
        rows and the box; room when it reaches `margin`. HiGHS stops at `time_limit_s` (no room
        proven then): at thousands of jobs over types this LP takes seconds."""
        _, n, goods = self.shape
        job, good = np.nonzero(self.runnable)
        entries, rounds = job.size, self.window_rounds
        if time_limit_s is not None and time_limit_s < _LP_SETUP_S_PER_ENTRY * entries:
            return False  # HiGHS would pass the limit before it looks at the clock: no room proven
        columns = np.arange(entries)
        constrained = np.zeros(n, dtype=bool)
        constrained[jobs] = True
        keep = constrained[job]
        row_of_job = np.cumsum(constrained) - 1
        blocks = [  # capacity; one type per job and round; -(sum p y) + eps <= -m
            scipy.sparse.csr_array((self.gpus[job], (good, columns)), shape=(goods, entries + 1)),
            scipy.sparse.csr_array((np.ones(entries), (job * rounds + self.round_index[good], columns)),
                                   shape=(n * rounds, entries + 1)),
            scipy.sparse.csr_array(
                (np.concatenate([-self.pace[job, good][keep], np.ones(jobs.size)]),
                 (np.concatenate([row_of_job[job[keep]], np.arange(jobs.size)]),
                  np.concatenate([columns[keep], np.full(jobs.size, entries)]))),
                shape=(jobs.size, entries + 1)),
        ]
        upper = np.concatenate([self.capacity, np.tile(self.round_bounds, n), -self.fairness_floor[jobs]])
        # Maximize eps, up to the margin asked (a bounded LP whatever the data).
        cost = np.zeros(entries + 1)
        cost[-1] = -1.0
        box = np.column_stack([np.zeros(entries + 1), np.append(self.bounds[good], margin)])
        result = scipy.optimize.linprog(cost, A_ub=scipy.sparse.vstack(blocks, format="csr"), b_ub=upper,
                                        bounds=box, method="highs",
                                        options={} if time_limit_s is None else {"time_limit": max(time_limit_s, 1e-3)})
        return bool(result.status == 0 and -result.fun >= margin * (1.0 - 1e-9))

    @cached_property
    def round_bounds(self) -> FloatArray:
        """The most of each round a job can run, shape (R,): its goods' bound (`bounds`)."""
        out = np.ones(self.window_rounds)
        out[self.round_index] = self.bounds
        return out

    @cached_property
    def _room_proven(self) -> list[float]:
        """The largest margin `fairness_room` has proven (a one-element list: the program is frozen)."""
        return [-np.inf]

    @cached_property
    def spread_weights(self) -> FloatArray:
        r""":math:`m_i = B_i \max_{s, t} a_{sit}` over `runnable` entries, shape (n,): job `i`'s
        log utility has marginal value at least :math:`B_i a_{sit}` per round (:math:`U \le 1`), so the
        tie-breaking term's marginal :math:`\delta m_i y_{it}` is at most :math:`\delta` of it in the
        job's best round."""
        return read_only(self.budgets * np.where(self.runnable[None], self.progress, 0.0).max(axis=(0, 2)))

    def capacity_excess(self, schedule: FloatArray) -> float:
        """Largest GPUs over capacity in any round (<= 0 when the schedule fits)."""
        return float((self.gpus @ np.asarray(schedule, dtype=np.float64) - self.capacity).max())


#: A job with at most this many rounds of running left is committed the earliest round its gang
#: fits, not the latest before its wait limit (`wait_floor`).
SHORT_JOB_ROUNDS = 2.0

#: The floors take at most this share of a round's capacity, a service floor leaving room for its
#: widest gang too (`above_floor`, `wait_floor`): at least half of every round stays the program's
#: to allocate.
FLOOR_CAPACITY_SHARE = 0.5


def completion_time_cost(program: PlanningProgram, weight: float) -> FloatArray:
    r"""The time cost (`PlanningProgram.time_cost`) of the mean busy time of the jobs that can finish
    in the window, shape (n, T):

    .. math:: \lambda \sum_{i: p_i \le T} B_i M_i, \qquad
              M_i = \frac{1}{p_i} \sum_t \left(t + \tfrac12\right) y_{it}, \qquad
              c_{it} = \lambda B_i \frac{t + 1/2}{p_i},

    :math:`p_i = \max(1, \hat T_i / W)` the rounds of running job `i` has left, :math:`T` the
    window's rounds and :math:`t` the round of entry `t` (its good's round over GPU types).
    :math:`M_i` is the job's mean busy time in rounds from now; its completion time is at least
    :math:`M_i + p_i / 2`, and the schedule that minimizes :math:`\sum_i B_i M_i` runs the jobs in
    order of :math:`p_i / B_i`, shortest first (Smith's rule). A job that cannot finish in the
    window (:math:`p_i > T`) has no completion there to bring forward, and pricing its rounds too
    pushes the longest jobs back at every re-plan, which lengthens the makespan: its cost is 0.
    Linear in the schedule, the term keeps the program concave.
    """
    need = np.maximum(program.remaining_s / program.round_s, 1.0)
    finishing = need <= program.window_rounds
    when = program.round_index.astype(np.float64) + 0.5
    per_round = np.where(finishing, program.budgets / need, 0.0)
    return read_only(weight * per_round[:, None] * when[None, :])


def shortest_first_budgets(budgets: FloatArray, remaining_s: FloatArray, open_: np.ndarray, round_s: float,
                           exponent: float) -> FloatArray:
    r"""The window's budgets leaning towards the jobs with less running time left, shape (n,):

    .. math:: B_i \left(\frac{\tilde T}{\max(\hat T_i, W)}\right)^{\alpha},

    :math:`\hat T_i` the forecast running time job `i` has left (`remaining_s`), :math:`W` the
    round (no job finishes sooner than the round it runs in), :math:`\tilde T` the median of
    :math:`\max(\hat T_i, W)` over the `open_` jobs (so that the budgets keep their scale) and
    :math:`\alpha` the `exponent`; closed jobs keep theirs. In the market a buyer's share of the
    GPUs grows with its budget: with :math:`\alpha > 0` the shortest jobs get the larger shares and
    finish first, as Smith's rule orders them for the least mean completion time, and the
    logarithms still give every job a share.
    """
    if not exponent or not open_.any():
        return read_only(np.array(budgets, dtype=np.float64))
    left = np.maximum(np.asarray(remaining_s, dtype=np.float64), float(round_s))
    scale = float(np.median(left[open_]))
    return read_only(np.where(open_, budgets * (scale / left) ** exponent, budgets))


def above_floor(program: PlanningProgram, share: float,
                committed: np.ndarray | None = None) -> tuple[PlanningProgram, FloatArray]:
    r"""The program over the schedule above its floors, and the floor, shape (n, T).

    The service floor gives every job at least :math:`\ell_t = \min(\text{share}, h_t)` of each
    round it can run in (`PlanningProgram.runnable`), :math:`h_t` the most the round can give every
    runnable job within `FLOOR_CAPACITY_SHARE` of its capacity, leaving room for its widest gang
    above the floor; a job whose remaining runtime is less than :math:`\ell_t` of each of its
    runnable rounds gets no floor (it needs less than the floor would give it; it can then run at
    most :math:`1 - \ell_t` of the round). The `committed` entries (`commitments`, bool (n, T))
    get a whole round, or what the job has left if less. Writing :math:`y = \ell + z`, the program
    in :math:`z \ge 0` is the same program with the floor's progress in the base, its GPUs out of
    the capacity, its running time out of the remaining runtime and out of the upper bound (a
    committed entry is not runnable above its floor); so every backend, the polish and the
    certificates apply unchanged, and :math:`\ell + z^*` is the optimum over the schedules that
    give every job its floor. The floor's progress differs between scenarios, so with several the
    base is one per scenario, :math:`c_{si} + \sum_t a_{sit} \ell_{it}` (`PlanningProgram.base` of
    shape (S, n)); with one scenario and a base per job it stays per job. One GPU type. A `share`
    of 0 and no commitment is no floor: the program itself and a floor of zeros.
    """
    level, lower = _service_floor(program, share)
    if committed is None or not committed.any():
        if not share:
            return program, read_only(lower)
        committed = np.zeros(lower.shape, dtype=bool)
    need = program.remaining_s / program.round_s
    whole = np.minimum(program.bounds[None, :], need[:, None])
    lower = np.where(committed, whole, lower)
    # A commitment that covers all a job needs finishes it: its base is whole, nothing is left to plan.
    done = np.any(committed & (whole >= need[:, None]), axis=1)
    progress = np.where(committed[None] | done[None, :, None], 0.0, program.progress)
    # Each scenario's progress on the floor, summed per job as one scenario's always was.
    gained = np.stack([(progress_s * lower).sum(axis=1) for progress_s in program.progress])
    base = np.where(done[None, :], 1.0, program.scenario_base + gained)
    if program.base.ndim == 1 and program.shape[0] == 1:
        base = base[0]  # one scenario: the base stays per job
    reduced = replace(program, progress=progress, base=base,
                      capacity=np.maximum(program.capacity - program.gpus @ lower, 0.0),
                      remaining_s=np.where(done, 0.0, np.maximum(
                          program.remaining_s - program.round_s * (program.pace * lower).sum(axis=1), 0.0)),
                      upper=program.bounds - level)
    return reduced, read_only(lower)


def commitments(program: PlanningProgram, share: float, waited: np.ndarray,
                wait_limit: int | None) -> tuple[PlanningProgram, np.ndarray]:
    """The rounds committed whole to keep waits within `wait_limit` (`wait_floor`, in the room the
    service floor of `share` leaves), bool (n, T), and the program that credits them.

    A committed round is credited what the job's first round of running is worth: at a flat pace
    (`vfm.planner.PlanOptions.pace`) a round of running is worth the same whenever it comes, and a
    job forecast to finish in the window's first round if it runs from now, committed a later
    round, still does that work there (the forecast credits it nothing after its forecast end).
    Without a `wait_limit` (None): no commitment, and the program itself.
    """
    committed = np.zeros(program.shape[1:], dtype=bool)
    if wait_limit is None:
        return program, read_only(committed)
    taken = program.gpus @ _service_floor(program, share)[1]
    committed = wait_floor(program, waited, wait_limit, FLOOR_CAPACITY_SHARE * program.capacity - taken)
    if not committed.any():
        return program, read_only(committed)
    first = np.argmax(program.runnable, axis=1)  # each job's first round with progress
    rows = np.arange(program.shape[1])
    next_round = program.progress[:, rows, first]  # (S, n)
    progress = np.where(committed[None] & (program.progress == 0), next_round[:, :, None], program.progress)
    return replace(program, progress=progress), read_only(committed)


def _service_floor(program: PlanningProgram, share: float) -> tuple[FloatArray, FloatArray]:
    """The service floor's level per round, shape (T,), and per entry, shape (n, T) (`above_floor`)."""
    if not share:
        return np.zeros(program.shape[2]), np.zeros(program.shape[1:])
    runnable = program.runnable.astype(np.float64)
    demand = program.gpus @ runnable
    widest = np.where(program.runnable, program.gpus[:, None], 0.0).max(axis=0, initial=0.0)
    room = np.maximum(np.minimum(FLOOR_CAPACITY_SHARE * program.capacity, program.capacity - widest), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        level = np.minimum(share, np.where(demand > 0, room / demand, share))
        need = np.where(runnable.sum(axis=1) > 0,
                        program.remaining_s / program.round_s / runnable.sum(axis=1), 0.0)
    level = np.minimum(level, program.bounds)
    return level, runnable * (need[:, None] >= level[None, :]) * level[None, :]


def wait_floor(program: PlanningProgram, waited: np.ndarray, wait_limit: int, room: FloatArray) -> np.ndarray:
    r"""The entries committed to a whole round so that no job waits more than `wait_limit` rounds
    in a row, bool (n, T).

    A job open and runnable in the window that has waited `waited` rounds since it last ran reaches
    the limit in round :math:`d_i = \max(0, \text{wait\_limit} - \text{waited}_i)` of the window.
    The jobs with :math:`d_i < T`, earliest :math:`d_i` first and then longest wait first, each get
    the latest round at or before :math:`d_i` in which their gang fits the GPUs left (`room`, shape
    (T,): `FLOOR_CAPACITY_SHARE` of the capacity less the service floor's), else the earliest after
    it; a job with at most `SHORT_JOB_ROUNDS` rounds of running left gets the earliest round at or
    before :math:`d_i` in which it fits instead. A round is committed whole: a share of one would be
    served by credit, after the rounds a job owes. A job with no such round gets none. Where the
    load cannot keep every wait within the limit (the gangs of the jobs that can run in the window
    sum to more than `wait_limit` times the room of the window's first round), there are no
    commitments at all: committing what room there is would turn the schedule into a round robin of
    single rounds, each with a restart, and leave the other waits as long.
    """
    n, goods = program.shape[1:]
    committed = np.zeros((n, goods), dtype=bool)
    # Where the gang fits, not only where the forecast credits progress: a job forecast to finish in
    # the window's first round, if it runs from now, still has that work to do in a later one.
    runs_somewhere = np.any(program.runnable, axis=1)
    candidates = program.fits & program.open_jobs[:, None] & runs_somewhere[:, None]
    deadline = np.maximum(wait_limit - np.asarray(waited, dtype=np.int64), 0)
    can_run = candidates.any(axis=1)
    jobs = np.flatnonzero(can_run & (deadline < goods))
    room = np.array(room, dtype=np.float64)
    if program.gpus[can_run].sum() > wait_limit * max(float(room[0]), 0.0):
        return committed  # more waiting than the room can serve within the limit: no round robin
    order = jobs[np.lexsort((-waited[jobs], deadline[jobs]))]
    # A job that needs at most `SHORT_JOB_ROUNDS` more rounds runs as soon as its gang fits: its
    # wait to the deadline would be most of its time in the system, the largest share of an FTF.
    earliest = program.remaining_s <= SHORT_JOB_ROUNDS * program.round_s
    waits.commit_rounds(order, candidates, program.gpus.astype(np.float64), deadline, earliest, room, committed)
    return committed
