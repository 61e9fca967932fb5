"""The per-period baseline: never better than the joint solve, and it respects cumulative caps."""

from __future__ import annotations

import numpy as np
from hypothesis import given

import vfm
from vfm import VolatileFisherMarket, check
from vfm.testing.strategies import EXTENSIONS, markets


@given(markets(n_periods=(2, 4), extensions=EXTENSIONS))
def test_joint_nswot_is_never_below_the_per_period_baseline(market):
    joint = vfm.solve(market)
    baseline = vfm.solve_per_period(market)
    assert joint.success and baseline.success
    tolerance = check.objective_tolerance(joint) * market.budgets.sum()
    assert joint.objective >= baseline.objective - tolerance
    # The baseline's own allocation is feasible for the joint program.
    assert check.feasibility(baseline, tol=1e-6).holds


def test_utility_cap_is_cumulative_across_periods():
    # Buyer 0 may gain 1.3 in all; alone in period 0 it takes 1, so only 0.3 is left for period 1.
    market = VolatileFisherMarket(np.array([[[1.0, 1.0]], [[0.0, 1.0]]]), utility_cap=[1.3, np.inf])
    result = vfm.solve_per_period(market)
    np.testing.assert_allclose(result.allocation[0, 0], [1.0, 0.3], atol=1e-6)
    np.testing.assert_allclose(result.allocation[1, 0], [0.0, 0.7], atol=1e-6)
    assert result.solver == f"per-period:{vfm.available_solvers()[0]}"


def test_buyers_without_value_sit_out_a_period():
    market = VolatileFisherMarket(np.array([[[1.0, 0.0]], [[1.0, 1.0]]]))
    result = vfm.solve_per_period(market)
    np.testing.assert_allclose(result.allocation[:, 0, 1], [0.0, 1.0], atol=1e-6)
    np.testing.assert_allclose(result.allocation[:, 0, 0], [0.5, 0.5], atol=1e-6)
    assert "2 of 2 periods" in result.message
