"""`vfm.planner.solve.ipm.method`: feasible iterates, a certified gap that really bounds the optimum, agreement
with the CVXPY reference (`vfm.planner.solve.cvxpy_model`), warm starts."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings

from vfm.equilibrium import Status
from vfm.planner import PlanningProgram, _kernels
from vfm.planner.solve.cvxpy_model import solve_saa_cvxpy
from vfm.planner.solve.ipm.blocks import GRAM_CURVATURE as _GRAM_CURVATURE
from vfm.planner.solve.ipm.blocks import BlockFactor as _BlockFactor
from vfm.planner.solve.ipm.blocks import Workspace as _Workspace
from vfm.planner.solve.ipm.method import (
    _PROGRESS,
    _exhausted,
    solve_saa_ipm,
)
from vfm.planner.solve.scaled_program import gap_minimizing_prices

from .strategies import programs


def _feasible(program: PlanningProgram, schedule: np.ndarray) -> np.ndarray:
    """`schedule` clipped to the box and each overfull round scaled down into its capacity.

    CVXPY's interior-point answer may sit up to its 1e-8 tolerance outside the feasible set, where
    the objective can exceed the optimum by about as much; the projected point is feasible, so its
    objective is at most the optimum and the certified bound must hold for it exactly."""
    y = np.clip(schedule, 0.0, 1.0) * program.fits
    load = program.gpus @ y
    return y * np.minimum(1.0, program.capacity / np.maximum(load, 1e-300))[None, :]


def _check_ipm_solution(program: PlanningProgram, solution, tol: float) -> float:
    """What saa-ipm certifies whatever its status: a feasible schedule and a finite gap >= 0; and,
    when it reports `OPTIMAL`, a gap within `tol`. Returns the schedule's objective."""
    assert solution.status in (Status.OPTIMAL, Status.INACCURATE), solution.message
    y = solution.x
    assert np.all((y >= 0) & (y <= 1)) and not y[~program.fits].any()
    assert program.capacity_excess(y) <= 1e-9 * program.capacity.max()
    assert np.all(solution.prices >= 0)
    objective = program.objective(y)
    assert np.isfinite(objective) and np.isfinite(solution.gap) and solution.gap >= 0
    if solution.status == Status.OPTIMAL:
        # tol relative to 1 + |F| in the objective scaled to budgets summing to 1.
        assert solution.gap <= tol * (program.budgets.sum() + abs(objective)) * (1 + 1e-12)
    return objective


def _agreement(program: PlanningProgram) -> None:
    ipm = solve_saa_ipm(program)
    ipm_objective = _check_ipm_solution(program, ipm, tol=1e-8)
    cvx = solve_saa_cvxpy(program)
    assert cvx.status == Status.OPTIMAL, cvx.message
    scale = 1 + abs(ipm_objective)
    # Both solve the same program: the objectives agree within the certified gap plus CVXPY's
    # own (uncertified) accuracy, 1e-7 relative with margin over Clarabel's 1e-8. The gap is
    # small when saa-ipm converged (checked above); it still bounds the optimum when saa-ipm
    # stopped early (Status.INACCURATE).
    assert abs(program.objective(cvx.x) - ipm_objective) <= ipm.gap + 1e-7 * scale
    # The certified gap really bounds the optimum: no feasible schedule (here CVXPY's, made
    # exactly feasible) beats the IPM's objective by more than the gap.
    assert program.objective(_feasible(program, cvx.x)) <= ipm_objective + ipm.gap + 1e-9 * scale


@settings(max_examples=20)
@given(programs(scenarios=1))
def test_agrees_with_cvxpy_one_scenario(program):
    _agreement(program)


@settings(max_examples=20)
@given(programs(scenarios=3))
def test_agrees_with_cvxpy_three_scenarios(program):
    _agreement(program)


@settings(max_examples=20)
@given(programs(scenarios=8))
def test_agrees_with_cvxpy_eight_scenarios(program):
    _agreement(program)


@settings(max_examples=20)
@given(programs(scenarios=1, efficiency=True))
def test_agrees_with_cvxpy_with_the_efficiency_term(program):
    _agreement(program)


@settings(max_examples=10)
@given(programs(scenarios=4, efficiency=True))
def test_agrees_with_cvxpy_with_the_efficiency_term_four_scenarios(program):
    _agreement(program)


@settings(max_examples=25)
@given(programs(scenarios=4))
def test_loose_gap_still_bounds_the_optimum(program):
    # At a loose tolerance the iterate is far from optimal, but its gap still bounds the optimum.
    loose = solve_saa_ipm(program, tol=1e-3)
    objective = _check_ipm_solution(program, loose, tol=1e-3)
    tight = solve_saa_ipm(program, tol=1e-10)
    tight_objective = _check_ipm_solution(program, tight, tol=1e-10)
    assert tight_objective <= objective + loose.gap + 1e-12 * (1 + abs(objective))
    assert objective <= tight_objective + tight.gap + 1e-12 * (1 + abs(objective))


@settings(max_examples=25)
@given(programs(scenarios=2))
def test_warm_start_reaches_the_same_optimum(program):
    cold = solve_saa_ipm(program, tol=1e-6)
    cold_objective = _check_ipm_solution(program, cold, tol=1e-6)
    rng = np.random.default_rng(0)
    for start in (cold.x, np.roll(cold.x, -1, axis=1), rng.random(cold.x.shape)):
        warm = solve_saa_ipm(program, tol=1e-6, warm_start=start)
        warm_objective = _check_ipm_solution(program, warm, tol=1e-6)
        # Each is within its own gap below the optimum.
        assert warm_objective <= cold_objective + cold.gap + 1e-12 * (1 + abs(cold_objective))
        assert cold_objective <= warm_objective + warm.gap + 1e-12 * (1 + abs(cold_objective))


@settings(max_examples=25)
@given(programs(scenarios=3))
def test_invariant_to_the_scale_of_the_budgets(program):
    # saa-ipm normalizes the budgets to sum to 1: scaling them by a power of two (exact in floating
    # point) gives the very same iterates; the gap and prices scale with them.
    base = solve_saa_ipm(program)
    factor = 2.0**20
    scaled = solve_saa_ipm(replace(program, budgets=program.budgets * factor))
    assert scaled.status == base.status and scaled.iterations == base.iterations
    np.testing.assert_array_equal(scaled.x, base.x)
    assert scaled.gap == pytest.approx(factor * base.gap, rel=1e-12)
    np.testing.assert_allclose(scaled.prices, factor * base.prices, rtol=1e-12)


def test_one_job_takes_every_round_it_fits():
    # One job alone: log utility increases in every y_it, so the optimum is y = 1 where it fits.
    program = PlanningProgram(
        progress=np.array([[[0.1, 0.2, 0.0, 0.3]]]), base=np.array([0.2]), budgets=np.array([2.0]),
        gpus=np.array([3.0]), capacity=np.array([4.0, 2.0, 4.0, 8.0]), round_s=60.0, remaining_s=np.array([1e3]),
    )
    solution = solve_saa_ipm(program)
    assert solution.status == Status.OPTIMAL
    np.testing.assert_allclose(solution.x[0], [1.0, 0.0, 0.0, 1.0], atol=1e-5)
    assert program.objective(solution.x) == pytest.approx(2.0 * np.log(0.6), abs=solution.gap + 1e-12)


def test_identical_jobs_get_equal_progress():
    # Two identical 1-GPU jobs on 1 GPU. Each job's utility depends on v_i = a . y_i only, so the
    # concave objective is maximized at v_1 = v_2 = (0.1 + 0.2 + 0.3) / 2 with every round full:
    # utilities 0.1 + 0.3 and 0.1 + 0.15 in the two scenarios, objective log(0.4) + log(0.25).
    progress = np.tile(np.array([0.1, 0.2, 0.3]), (2, 2, 1))  # (S=2, n=2, T=3)
    progress[1] *= 0.5
    program = PlanningProgram(progress=progress, base=np.array([0.1, 0.1]), budgets=np.ones(2), gpus=np.ones(2),
                              capacity=np.ones(3), round_s=120.0, remaining_s=np.full(2, 1e3))
    solution = solve_saa_ipm(program, tol=1e-6)
    assert solution.status == Status.OPTIMAL
    np.testing.assert_allclose(solution.x @ [0.1, 0.2, 0.3], [0.3, 0.3], atol=1e-4)
    assert program.objective(solution.x) == pytest.approx(np.log(0.4) + np.log(0.25),
                                                                 abs=solution.gap + 1e-12)
    assert program.objective(solution.x) <= np.log(0.4) + np.log(0.25)


# --- former library bugs (regression tests) ---------------------------------------------------------------

# Four 1-GPU jobs share one round of one GPU; jobs 1-3 have no progress yet (found by hypothesis).
STALLING = PlanningProgram(
    progress=np.array([[[0.08272061], [0.48009469], [0.62522517], [0.54189544]]]),
    base=np.array([0.77447402, 0.0, 0.0, 0.0]),
    budgets=np.array([0.38036474, 1.33040444, 6.73918171, 6.50717616]),
    gpus=np.ones(4), capacity=np.ones(1), round_s=120.0, remaining_s=np.full(4, 1000.0),
)


# Regression test: saa-ipm used to take full Newton steps (0.99 to the boundary) with no line search;
# here the 3rd step made the dual residual jump from 1.2 to 37 and it stopped at a certified relative
# gap of 0.66 (objective -23.1, optimum -21.86) whatever tol. The merit line search fixed it.
@pytest.mark.parametrize("tol", [1e-3, 1e-5, 1e-8])
def test_converges_on_fresh_jobs_sharing_a_round(tol):
    solution = solve_saa_ipm(STALLING, tol=tol)
    reference = solve_saa_cvxpy(STALLING)
    # Its certificate is honest (the gap bounds the optimum) and within tol.
    objective = STALLING.objective(solution.x)
    assert STALLING.objective(reference.x) <= objective + solution.gap
    assert solution.status == Status.OPTIMAL, solution.message


# Regression test: the default tol=1e-8 used to be missed on this program with a non-unique optimum
# (the Woodbury inverse of the Newton system lost its digits at relative gap 2.2e-7); the regularized
# preconditioner with conjugate gradients on the exact system reaches it.
def test_identical_jobs_reach_the_default_tolerance():
    progress = np.tile(np.array([0.1, 0.2, 0.3]), (2, 2, 1))
    progress[1] *= 0.5
    program = PlanningProgram(progress=progress, base=np.array([0.1, 0.1]), budgets=np.ones(2), gpus=np.ones(2),
                              capacity=np.ones(3), round_s=120.0, remaining_s=np.full(2, 1e3))
    solution = solve_saa_ipm(program)
    assert solution.status == Status.OPTIMAL, solution.message


def test_only_an_inaccurate_step_that_gains_little_counts_as_exhausted():
    before = SimpleNamespace(gap=1e-8, inexact=0.0)
    def after(ratio, inexact):
        return SimpleNamespace(gap=ratio * before.gap, inexact=inexact)
    assert _exhausted(before, after(0.9, 1e-7))  # missed solves, little gained
    assert _exhausted(before, after(1.4, 1e-9))  # missed solves, the gap grew
    assert not _exhausted(before, after(0.9, 0.0))  # accurate solves: a short step is no sign
    assert not _exhausted(before, after(0.5 * _PROGRESS, 1e-7))  # missed solves, but progressing
    # While no iterate meets the FTF rows the gap is infinite: no progress is measured, none stops.
    assert not _exhausted(SimpleNamespace(gap=np.inf, inexact=0.0), SimpleNamespace(gap=np.inf, inexact=1e-7))


def test_the_capacity_gram_in_pieces_is_the_stacked_product_to_its_stated_accuracy():
    # Low-rank blocks I + V V^T of every curvature: sigma^2 from about 3e-5 to 2e7, so that both the
    # difference formula (flat jobs) and the stacked product (curved ones) are used.
    rng = np.random.default_rng(3)
    n, columns, rounds = 200, 2, 20
    scaled = rng.standard_normal((n, columns, rounds)) * np.logspace(-3, 3, n)[:, None, None]
    work = _Workspace(n, columns, rounds)
    assert work.low_rank
    _kernels.low_rank_factor(scaled, work.columns, work.shrink)
    blocks = _BlockFactor(None, work.columns, work.shrink, None)
    x = rng.uniform(0.1, 2.0, (n, rounds))
    stacked = blocks.gram(x, work, stacked=True)
    pieces = blocks.gram(x, work, stacked=False)
    sigma2 = np.einsum("nkt,nkt->nk", work.columns, work.columns).max(axis=1)
    assert 0 < (sigma2 > _GRAM_CURVATURE).sum() < n
    # Per job at most 2 eps T (1 + _GRAM_CURVATURE) of its term, whose entries are at most x_a x_b.
    bound = 2 * np.finfo(float).eps * rounds * (1 + _GRAM_CURVATURE) * np.einsum("na,nb->ab", x, x)
    assert np.all(np.abs(pieces - stacked) <= bound)
    assert np.abs(pieces - stacked).max() > 0  # two computations, not one


@pytest.mark.parametrize("seed", range(4))
def test_gap_minimizing_prices_minimize_each_rounds_gap(seed):
    rng = np.random.default_rng(seed)
    n, rounds = 40, 5
    g = rng.random((n, rounds)) * 0.1 * (rng.random((n, rounds)) > 0.2)
    y = rng.random((n, rounds))
    gradient = rng.normal(size=(n, rounds))
    s_cap = rng.random(rounds) * 0.3

    def gap(t: int, price: float) -> float:
        q = gradient[:, t] + g[:, t] * price
        return s_cap[t] * price + float((np.maximum(q, 0) * y[:, t] + np.maximum(-q, 0) * (1 - y[:, t])).sum())

    prices = gap_minimizing_prices(gradient, g, y, 1 - y, s_cap)
    assert np.all(prices >= 0)
    for t in range(rounds):
        # The gap is piecewise linear in the price, kinked where an entry's q changes sign.
        kinks = -gradient[:, t][g[:, t] > 0] / g[:, t][g[:, t] > 0]
        candidates = np.concatenate([[0.0], kinks[kinks > 0]])
        assert gap(t, prices[t]) <= min(gap(t, c) for c in candidates) + 1e-12


def _tiny_budget_window() -> PlanningProgram:
    """A Shockwave-like window of seven jobs on 3 GPUs whose budgets span five orders of magnitude:
    jobs without progress yet and with tiny budgets have optimal utilities near 1e-6, far below
    the start's, and two jobs have FTF rows (one needs 13 of the 20 rounds on every GPU)."""
    rounds = 20
    pace = np.array([0.0188, 0.0050, 0.0303, 0.0071, 0.0432, 0.0019, 0.0022])
    return PlanningProgram(
        progress=np.repeat(pace[None, :, None], rounds, axis=2),
        base=np.array([0.533, 0.040, 0.0, 0.819, 0.041, 0.0, 0.0]),
        budgets=np.array([6.26, 5132.0, 34593.0, 5.58, 8.04, 0.367, 0.427]),
        gpus=np.array([3.0, 2.0, 2.0, 1.0, 1.0, 3.0, 1.0]), capacity=np.full(rounds, 3.0), round_s=120.0,
        remaining_s=np.array([2985.0, 22958.0, 3966.0, 3069.0, 2663.0, 64299.0, 54846.0]), efficiency=0.0114,
        leftover_limit_s=np.array([1415.0, np.inf, np.inf, 8732.0, 2381.0, 95479.0, 81409.0]), spread=0.1)


def test_converges_where_tiny_budgets_shrink_utilities_by_orders_of_magnitude():
    # The logarithms' own multipliers keep the line search's merit linear in the step while those
    # utilities fall (a primal Newton step on -beta log U overshoots from above): from the start,
    # the solve stopped at max_iter=80 with the FTF rows still violated.
    program = _tiny_budget_window()
    assert program.fairness_floor[0] > 13
    solution = solve_saa_ipm(program, tol=1e-7)
    assert solution.status == Status.OPTIMAL, solution.message
    assert solution.iterations <= 40 and solution.relative_gap <= 1e-7
    assert np.all(solution.x.sum(axis=1) >= program.fairness_floor - 1e-9)  # one GPU type: pace 1
    assert program.capacity_excess(solution.x) <= 1e-9 * program.capacity.max()
    objective = program.objective(solution.x)
    reference = solve_saa_cvxpy(program)
    assert reference.status == Status.OPTIMAL, reference.message
    # `gap` certifies the objective without the tie-breaking term (`spread`): the optimum, which
    # the reference made exactly feasible cannot beat, is within it.
    scale = 1 + abs(objective)
    assert program.objective(_feasible(program, reference.x)) <= objective + solution.gap + 1e-9 * scale
    assert objective >= program.objective(reference.x) - 1e-6 * scale
