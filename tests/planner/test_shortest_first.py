"""The window's budgets leaning towards the shortest jobs (`PlanOptions.shortest_first`): the
budgets it writes, what every backend solves with them and what they do to a schedule."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.forecast import JobStates
from vfm.planner import Policy, plan
from vfm.planner.program import shortest_first_budgets


def test_the_budgets_scale_with_the_median_over_the_work_left_to_the_exponent() -> None:
    budgets = np.array([1.0, 2.0, 1.0, 1.0, 3.0])
    left = np.array([100.0, 400.0, 1600.0, 30.0, 5.0])
    open_ = np.array([True, True, True, True, False])
    tilted = shortest_first_budgets(budgets, left, open_, 60.0, 2.0)
    # The open jobs' work left, each at least a round of 60 s: 100, 400, 1600, 60; their median 250.
    expected = budgets * (250.0 / np.array([100.0, 400.0, 1600.0, 60.0, 1.0])) ** 2
    np.testing.assert_allclose(tilted[:4], expected[:4], rtol=1e-15)
    assert tilted[4] == budgets[4]  # a closed job keeps its budget
    assert not tilted.flags.writeable
    # A shorter job never gets a smaller budget per unit of its own budget than a longer one.
    order = np.argsort(np.maximum(left[:4], 60.0))
    assert np.all(np.diff((tilted / budgets)[:4][order]) <= 0)


def test_no_exponent_keeps_the_budgets_as_given() -> None:
    budgets = np.array([1.0, 2.0])
    np.testing.assert_array_equal(shortest_first_budgets(budgets, np.array([10.0, 1e6]), np.ones(2, bool), 1.0, 0.0),
                                  budgets)


def _states(seed: int, n: int = 10) -> tuple[JobStates, list[int]]:
    rng = np.random.default_rng(seed)
    epochs = [int(e) for e in rng.integers(2, 60, n)]
    regimes = [{32: float(rng.uniform(20, 200))} for _ in range(n)]
    return JobStates.from_lists(epochs, regimes), [int(g) for g in rng.choice([1, 2, 4], n)]


@pytest.mark.parametrize("seed", [0, 1])
def test_every_backend_finds_the_same_certified_optimum_with_the_shortest_first(seed: int) -> None:
    states, gpus = _states(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # CVXPY's own warnings
        ipm = plan(states, gpus, 8, rounds=8, shortest_first=2.0, solver="saa-ipm")
        cvxpy = plan(states, gpus, 8, rounds=8, shortest_first=2.0, solver="cvxpy", tol=1e-8)
    for result in (ipm, cvxpy):
        assert result.status == Status.OPTIMAL
        assert result.rounded_objective <= result.bound
    assert ipm.relaxed_objective <= cvxpy.bound + 1e-9 * abs(cvxpy.bound)
    assert cvxpy.relaxed_objective <= ipm.bound + 1e-9 * abs(ipm.bound)
    plain = plan(states, gpus, 8, rounds=8)
    assert not np.array_equal(ipm.program.budgets, plain.program.budgets)


def test_the_job_with_less_left_gets_more_of_the_window() -> None:
    # One GPU, two jobs that both end far beyond the window, one with a quarter of the other's work:
    # with equal budgets the logarithms share the window about equally (the tie-breaking term tips
    # it slightly); leaning to the shortest, the shorter job gets most of it.
    states = JobStates.from_lists([50, 200], [{32: 120.0}, {32: 120.0}])
    even = plan(states, [1, 1], 1, rounds=6)
    short = plan(states, [1, 1], 1, rounds=6, shortest_first=2.0)
    assert even.relaxed[0].sum() == pytest.approx(even.relaxed[1].sum(), rel=0.05)
    assert short.relaxed[0].sum() > 2 * short.relaxed[1].sum()
    assert short.relaxed[1].sum() > 0  # the longer job still gets a share


def test_a_policy_plans_with_the_exponent_it_is_given() -> None:
    assert Policy.shockwave(8, 120.0).options.shortest_first == 0  # measured, not the default (docs/results.md)
    assert Policy.shockwave(8, 120.0, shortest_first=2.0).options.shortest_first == 2.0


@pytest.mark.parametrize("value", [-0.5, 4.5, float("nan")])
def test_an_exponent_out_of_range_is_refused_naming_it(value: float) -> None:
    with pytest.raises(ValidationError, match="shortest_first"):
        plan(*_states(0), 8, rounds=4, shortest_first=value)
