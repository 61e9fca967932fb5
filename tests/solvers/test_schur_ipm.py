"""The structure-exploiting interior-point backend agrees with Clarabel and certifies."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

import vfm
from vfm import Status, check
from vfm.cluster.windows import fresh_window
from vfm.cluster.workload import load_workload
from vfm.errors import ValidationError
from vfm.program import ScaledProgram
from vfm.solvers.schur_ipm import SchurIPMBackend
from vfm.testing.strategies import EXTENSIONS, markets


@given(markets(extensions=EXTENSIONS))
def test_agrees_with_clarabel_and_certifies(market):
    reference = vfm.solve(market, "clarabel")
    result = vfm.solve(market, "schur-ipm")
    assert result.success, result.message
    check.kkt(result).assert_holds()
    # The issue's agreement criterion: NSWOT to 1e-6 relative (to the budget total, the scale
    # of NSWOT's duality gap, or to |NSWOT| when that is larger).
    scale = max(float(market.budgets.sum()), abs(reference.objective))
    assert abs(result.objective - reference.objective) <= 1e-6 * scale


@given(markets(budgets="equal"))
def test_plain_markets_meet_the_equilibrium_conditions(market):
    result = vfm.solve(market, "schur-ipm")
    assert result.success, result.message
    check.equilibrium_conditions(result).assert_holds()
    check.properties(result).assert_holds()


def test_job_window_reaches_the_issue_accuracy():
    window = fresh_window(load_workload("shockwave_120jobs_32gpus"))
    result = vfm.solve(window.market, "schur-ipm")
    assert result.success, result.message
    assert result.relative_gap <= 1e-6
    reference = vfm.solve(window.market, "clarabel")
    assert result.objective == pytest.approx(reference.objective, abs=1e-6 * window.market.budgets.sum())


def test_an_iteration_limit_is_a_status_and_a_bad_option_an_error_naming_it():
    program = ScaledProgram.from_market(vfm.VolatileFisherMarket(np.random.default_rng(1).uniform(0.1, 1, (30, 2, 4))))
    stopped = SchurIPMBackend().solve(program, max_iter=2)
    assert stopped.status is Status.ITERATION_LIMIT and stopped.x is not None
    with pytest.raises(ValidationError, match=r"^tolerance is not an option of solver='schur-ipm'; it takes: "):
        SchurIPMBackend().solve(program, tolerance=1e-3)
    with pytest.raises(ValidationError, match=r"^option max_iter=0 of solver='schur-ipm' must be"):
        SchurIPMBackend().solve(program, max_iter=0)


@pytest.mark.parametrize("shape", [(2, 1, 1), (2, 2, 3)])
def test_a_buyer_already_at_its_utility_cap_gets_nothing(shape):
    """Its headroom is 0: before, every scaling of its rows was 0 / 0 and the solve ended in NaN."""
    market = vfm.VolatileFisherMarket(np.ones(shape), base_utility=[0.5, 0.0], utility_cap=[0.5, 10.0])
    solution = SchurIPMBackend().solve(ScaledProgram.from_market(market))
    assert solution.status is Status.OPTIMAL and np.isfinite(solution.x).all(), solution.message
    result = vfm.solve(market, "schur-ipm")
    assert result.success, result.message
    np.testing.assert_array_equal(result.allocation[0], 0.0)
    np.testing.assert_allclose(result.allocation[1], 1.0, atol=1e-6)
    check.kkt(result).assert_holds()
