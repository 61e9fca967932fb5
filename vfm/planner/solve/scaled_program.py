r"""The window program in the solvers' terms, and the certified gap of a schedule from it.

`ScaledProgram` is a `PlanningProgram` as the interior point (`vfm.planner.solve.ipm.method`) and the
polish (`vfm.planner.solve.polish`) both read it: budgets scaled to sum to 1, entries where a job does
not fit or makes no progress zeroed, the FTF, efficiency and one-type rows as vectors
(`scale_program` builds it). Beside it, what depends on the program and a schedule alone, not on an
interior point's iterations: the objective and its gradient (`objective`), the rows' terms in the
Lagrangian's gradient (`row_terms`), the capacity prices that minimize the certified gap
(`gap_minimizing_prices`) and the certified gap itself (`scaled_certified_gap`; the bound of
`vfm.planner.solve.ipm.method`'s module docstring, Stopping, whose iterations assemble the same terms with
`gap_from_terms`).

Both solvers import this module; it imports neither, so the kernels' loader
(`vfm.planner.kernel_loading`), which runs the interior point and the polish, sits above both and both above this.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property

import numpy as np

from vfm._validation import FloatArray
from vfm.planner import _kernels
from vfm.planner._kernels import one_type_rows
from vfm.planner.program import PlanningProgram

#: An FTF row violated by more than this (relative to 1 + m_i rounds) leaves the point uncertified.
FTF_TOLERANCE = 1e-9


@dataclass(frozen=True)
class ScaledProgram:
    """The program in the solver's terms (budgets scaled to sum to 1, inactive entries zeroed)."""

    active: np.ndarray  # (n, T) bool: the job fits the round and progresses in it in some scenario
    progress: FloatArray  # (n, S, T), 0 off `active`
    base: FloatArray  # (n, S) c_si, each job's base in each scenario (`PlanningProgram.scenario_base`, by job)
    budgets: FloatArray  # (n,) budgets / (sum of budgets * S)
    g: FloatArray  # (n, T) w_i / G_t on `active`, 0 elsewhere
    upper: FloatArray  # (T,) u_t: the box is 0 <= y_it <= u_t
    floor: FloatArray  # (n,) m_i: the FTF constraint sum_t y_it >= m_i (0 where there is none)
    constrained: np.ndarray  # (n,) bool: job i has an FTF constraint that can bind (m_i > 0)
    kappa: float  # weight of the longest leftover zeta in the scaled objective (0: no efficiency term)
    leftover: FloatArray  # (n,) r_i = T_i / W: the efficiency row sum_t y_it + zeta >= r_i; 0 off `efficient`
    efficient: np.ndarray  # (n,) bool: job i has an efficiency row (kappa > 0 and r_i > 0)
    zeta_max: float  # an upper bound on the optimal zeta (the largest r_i), for the certified gap
    spread: FloatArray  # (n,) delta m_i / sum B: F has the tie-breaking term sum_i spread_i |y_i|^2 / 2
    zeros: FloatArray  # (n, T) zeros (never written): absent multipliers, the predictor's absent second-order terms
    pace: FloatArray  # (n, T) p_it, the running time of a round of good t on `active` (1 on one GPU type), 0 elsewhere
    good_round: np.ndarray  # (T,) the round of each good (``arange(T)`` on one GPU type)
    rounds_of_goods: FloatArray  # (T, R) 0/1: good t is in round r
    shared: np.ndarray  # (n, R) bool: job i has a one-type row in round r (several active goods there)
    round_upper: FloatArray  # (R,) u_r: the one-type rows read sum_{t in r} y_it <= u_r
    members: np.ndarray  # (R, K) the goods of each round (K the most of a round), padded with -1
    cost: FloatArray | None = None  # (n, T) c / sum B on `active`, 0 elsewhere: F has the term sum c y (None: none)

    @cached_property  # read several times a Newton step: computed once per program
    def typed(self) -> bool:
        """Whether the program has one-type-per-round rows (GPU types with several goods per round)."""
        return bool(self.shared.any())

    @cached_property  # read by every Newton step over GPU types: computed once per program
    def active_weights(self) -> FloatArray:
        """`active` as floats, shape (n, T): 1 on the active entries, 0 elsewhere."""
        return self.active.astype(np.float64)

    @cached_property  # read by every Newton step over GPU types: computed once per program
    def round_blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Where each round's own (K, K) block lies in a (T, T) matrix over the goods: the rounds, the
        blocks' rows and columns, and the goods they stand for (two goods of one round, `members`)."""
        members = self.members
        r, row, column = np.nonzero((members >= 0)[:, :, None] & (members >= 0)[:, None, :])
        return r, row, column, members[r, row], members[r, column]

    @cached_property  # read by the one-type rows' kernels: computed once per program
    def tiled(self) -> bool:
        """Whether the goods are whole blocks of the rounds in order, good k R + r the k-th of round r (how
        `vfm.planner.typed` lays out the types): the one-type rows' kernels then sum each round over
        contiguous runs of goods (`vfm.planner._kernels.one_type_rows`)."""
        rounds, width = self.members.shape
        return self.good_round.size == rounds * width and \
            bool(np.array_equal(self.good_round, np.tile(np.arange(rounds), width)))

    @cached_property  # read by every Lagrangian minimizer of the polish: computed once per program
    def minimizer_upper(self) -> FloatArray:
        """Each entry's upper bound in the polish's Lagrangian minimizer (`vfm.planner.solve.polish`), shape
        (n, T): the box's, but none (inf) on a round with a one-type row. There the row implies the
        box (a round's goods share its bound, `PlanningProgram.round_bounds`), and with both a job at
        the bound on one good would leave the row's multiplier undetermined (any one below the
        bound's own gives the same schedule): the Newton steps stalled at a residual of 1e-4 on such
        windows."""
        upper = np.broadcast_to(self.upper, self.g.shape)
        return np.ascontiguousarray(np.where(self.shared[:, self.good_round], np.inf, upper) if self.typed else upper)


def scale_program(program: PlanningProgram) -> tuple[ScaledProgram, float]:
    """The program in the solver's terms, and the scale of its objective (the budgets' sum)."""
    n_scenarios, n, rounds = program.shape
    active = program.fits & (program.progress > 0).any(axis=0)
    scale = float(program.budgets.sum())
    floor = program.fairness_floor
    constrained = floor > 0
    leftover = np.where(program.open_jobs, program.remaining_s / program.round_s, 0.0)
    efficient = (leftover > 0) & (program.efficiency > 0)
    rounds_of_goods = np.zeros((rounds, program.window_rounds))  # dense at once: a sparse one costs more to build
    rounds_of_goods[np.arange(rounds), program.round_index] = 1.0
    data = ScaledProgram(
        active=active,
        progress=np.where(active[None], program.progress, 0.0).transpose(1, 0, 2).copy(),
        # By job, as `progress`, a fresh C-ordered array whatever the program's base: the kernels
        # are compiled for one kind of array (a read-only one would be another signature).
        base=np.array(program.scenario_base.T, order="C"),
        budgets=program.budgets / (scale * n_scenarios),
        # A good without GPUs (a GPU type absent in a round) is active for no job.
        g=np.where(active, program.gpus[:, None] / np.where(program.capacity > 0, program.capacity, 1.0)[None, :], 0.0),
        upper=program.bounds,
        floor=floor,
        constrained=constrained,
        # Running time in rounds: the term k max_i S_i is (k W / sum B) zeta in the scaled objective.
        kappa=float(program.efficiency * program.round_s / scale) if efficient.any() else 0.0,
        leftover=np.where(efficient, leftover, 0.0),
        efficient=efficient,
        zeta_max=float(leftover.max(initial=0.0)) + 1.0,
        spread=program.spread * program.spread_weights / scale,
        zeros=np.zeros((n, rounds)),
        pace=np.where(active, program.pace, 0.0),
        good_round=program.round_index,
        rounds_of_goods=rounds_of_goods,
        # A row only where the job has two goods or more in the round (else its box bound is the row).
        shared=active.astype(np.float64) @ rounds_of_goods >= 2,
        round_upper=program.round_bounds,
        members=_members(program.round_index),
        cost=None if program.time_cost is None else np.where(active, program.time_cost, 0.0) / scale,
    )
    return data, scale


def _members(good_round: np.ndarray) -> np.ndarray:
    """The goods of each round, shape (R, K) with K the most goods of a round, padded with -1."""
    order = np.argsort(good_round, kind="stable")
    counts = np.bincount(good_round)
    position = np.arange(good_round.size) - np.repeat(np.cumsum(counts) - counts, counts)
    members = np.full((counts.size, int(counts.max())), -1)
    members[good_round[order], position] = order
    return members


def scaled_certified_gap(data: ScaledProgram, x: FloatArray, ftf_multipliers: FloatArray,
                         efficiency_multipliers: FloatArray, type_multipliers: FloatArray | None = None) -> float:
    """`vfm.planner.solve.ipm.method.certified_gap` in the solver's terms (the objective scaled to budgets
    summing to 1), with the one-type rows' multipliers `type_multipliers` (n, R) (None: 0, a valid but
    looser bound)."""
    plain = replace(data, spread=np.zeros_like(data.spread))
    y = np.where(data.active, np.clip(x, 0.0, data.upper[None, :]), 0.0)
    running = (y * data.pace).sum(axis=1)
    z_f = np.where(data.constrained, np.maximum(ftf_multipliers, 0.0), 0.0)
    z_e = np.where(data.efficient, np.maximum(efficiency_multipliers, 0.0), 0.0)
    zeta = max(0.0, float(np.max(np.where(data.efficient, data.leftover - running, 0.0), initial=0.0)))
    s_e = np.where(data.efficient, running + zeta - data.leftover, 1.0)
    s_hi, s_cap = np.where(data.active, data.upper[None, :] - y, 1.0), 1.0 - (data.g * y).sum(axis=0)
    # The slacks as y has them (possibly negative: the identity behind the bound holds for any y).
    s_f = np.where(data.constrained, running - data.floor, 1.0)
    z_o = np.zeros(data.shared.shape) if type_multipliers is None else \
        np.where(data.shared, np.maximum(type_multipliers, 0.0), 0.0)
    s_o = np.where(data.shared, data.round_upper[None, :] - y @ data.rounds_of_goods, 1.0)
    _, gradient, _ = objective(plain, y)
    prices = gap_minimizing_prices(gradient - row_terms(data, z_f + z_e, z_o), data.g, y, s_hi, s_cap)
    n, scenarios, rounds = plain.progress.shape
    # The kernel sums the rows' running time again, in its own order: the FTF residual as the iterations have it.
    u, paced = np.empty((n, scenarios)), np.empty(n)
    with np.errstate(divide="ignore", invalid="ignore"):
        # The bound multipliers chosen optimally: zero multipliers in, the box's part of the gap out.
        *_, bounds_gap, _ = _kernels.evaluate_entries(
            plain.progress, plain.base, plain.budgets, plain.spread, plain.active, plain.g, y, s_hi, plain.zeros,
            plain.zeros, prices, with_cost(plain, row_terms(plain, z_f + z_e, z_o)), plain.pace, u, False, u,
            np.empty((n, rounds)), np.empty((n, rounds)), paced)
        type_complementarity = float(np.vdot(s_o, z_o)) if plain.typed else 0.0
        ftf_residual = np.where(plain.constrained, paced - plain.floor - s_f, 0.0)
        return gap_from_terms(plain, bounds_gap, type_complementarity, (s_cap, prices), (s_f, ftf_residual, z_f),
                              (zeta, s_e, z_e))


def gap_from_terms(data: ScaledProgram, bounds_gap: float, type_complementarity: float,
                   capacity: tuple[FloatArray, FloatArray], ftf: tuple[FloatArray, FloatArray, FloatArray],
                   efficiency: tuple[float, FloatArray, FloatArray]) -> float:
    r"""The certified gap (`vfm.planner.solve.ipm.method`'s module docstring, Stopping) from its terms: the box's
    part `bounds_gap` (`vfm.planner._kernels.evaluate_entries`), the one-type rows' complementarity,
    the capacity rows' slacks and prices `capacity`, the FTF rows' slacks, residuals
    :math:`\sum_t p_{it} y_{it} - m_i - s^f_i` and multipliers `ftf`, and :math:`\zeta` with the
    efficiency rows' slacks and multipliers `efficiency`. Inf where `y` violates an FTF row by more
    than `FTF_TOLERANCE`: then it is a lower bound on the optimum, but no certificate for `y`."""
    (s_cap, prices), (s_f, ftf_residual, z_f), (zeta, s_e, z_e) = capacity, ftf, efficiency
    gap = float(s_cap @ prices + (s_f + ftf_residual) @ z_f + s_e @ z_e) + bounds_gap + type_complementarity
    if not (ftf_residual >= -FTF_TOLERANCE * (1.0 + data.floor)).all():
        gap = np.inf  # y violates an FTF row: a lower bound on the optimum, but no certificate for y
    if data.kappa:
        # zeta* lies in [0, zeta_max]: the Lagrangian's linear term in zeta is at least this much below.
        reduced_zeta = data.kappa - float(z_e.sum())  # the gradient of the Lagrangian in zeta, before z_zeta
        gap += max(reduced_zeta * zeta, -reduced_zeta * (data.zeta_max - zeta))
    return gap


def row_terms(data: ScaledProgram, per_job: FloatArray, per_round: FloatArray | None) -> FloatArray:
    r"""The rows' terms in the gradient of the Lagrangian on each entry, shape (n, T):
    :math:`r_i p_{it} - o_{i, r(t)}` from `per_job` :math:`r` (n,) (the FTF and efficiency rows,
    :math:`\ge` rows in :math:`\sum_t p_{it} y_{it}`) and `per_round` :math:`o` (n, R) (the one-type
    rows, :math:`\le` rows in :math:`\sum_{t \in r} y_{it}`; not read without them, may be None),
    subtracted from the gradient."""
    if data.typed:
        assert per_round is not None
        terms = np.empty_like(data.pace)
        one_type_rows.typed_row_terms(np.ascontiguousarray(per_job), data.pace, np.ascontiguousarray(per_round),
                                      data.good_round, terms)
        return terms
    return per_job[:, None] * data.pace


def with_cost(data: ScaledProgram, rows: FloatArray) -> FloatArray:
    """`rows` (the rows' terms, `row_terms`, or zeros) less the objective's time cost: what the
    kernels subtract from F's spread-and-logarithm gradient to read the Lagrangian's (`cost` is F's
    linear term, so it adds to the gradient)."""
    return rows if data.cost is None else rows - data.cost


def cost_value(data: ScaledProgram, y: FloatArray) -> float:
    """F's linear term :math:`\\sum c y` at `y` (0 without a time cost)."""
    return 0.0 if data.cost is None else float(np.vdot(data.cost, y))


def gap_minimizing_prices(gradient: FloatArray, g: FloatArray, y: FloatArray, s_hi: FloatArray,
                          s_cap: FloatArray) -> FloatArray:
    r"""The prices :math:`\lambda \ge 0` that minimize the certified gap at `y` (`vfm.planner.solve.ipm.method`'s
    module docstring, Stopping).

    The gap is convex and piecewise linear in each :math:`\lambda_t` separately, with breakpoints at
    the jobs' marginal values per unit of capacity :math:`-\partial_t F_i / g_{it}`; its slope in
    :math:`\lambda_t` is :math:`s_{c,t} + \sum_{\text{below}} g y - \sum_{\text{above}} g (1 - y)`,
    so the minimizer is the breakpoint where that slope turns nonnegative (a weighted quantile).
    """
    # Rounds by jobs: each round's sort and sums run along contiguous memory (a quarter less time than
    # down the strided (n, T) columns at 100,000 jobs; the same prices but for rounding in the sums).
    value = np.where(g > 0, -gradient / np.where(g > 0, g, 1.0), -1.0).T.copy()  # -1: entries without capacity use
    order = np.argsort(value, axis=1)
    breakpoints = np.take_along_axis(value, order, axis=1)
    below = np.cumsum(np.take_along_axis((g * y).T, order, axis=1), axis=1)
    above_weights = np.take_along_axis(np.where(g > 0, g * s_hi, 0.0).T, order, axis=1)
    above = above_weights.sum(axis=1)[:, None] - np.cumsum(above_weights, axis=1)
    slope = s_cap[:, None] + below - above  # just above each breakpoint, nondecreasing along the row
    first = np.argmax(slope >= 0, axis=1)  # exists: the last slope is s_cap + sum g y > 0
    prices = np.maximum(breakpoints[np.arange(g.shape[1]), first], 0.0)
    # Slope at lambda = 0 already nonnegative: 0 is the minimizer.
    return np.where(s_cap - above_weights.sum(axis=1) >= 0, 0.0, prices)


def objective(data: ScaledProgram, y: FloatArray) -> tuple[FloatArray, FloatArray, float]:
    """Utilities (n, S), gradient of F (n, T; 0 off `active`) and F at `y`."""
    n, scenarios, rounds = data.progress.shape
    u, gradient = np.empty((n, scenarios)), np.empty((n, rounds))
    # With no prices, row multipliers or bound multipliers, the dual residual is the gradient.
    value, *_ = _kernels.evaluate_entries(data.progress, data.base, data.budgets, data.spread, data.active, data.g, y,
                                         y, data.zeros, data.zeros, np.zeros(rounds), with_cost(data, data.zeros),
                                         data.pace, u, False, u, np.empty((n, rounds)), gradient, np.empty(n))
    return u, gradient, value + cost_value(data, y)
