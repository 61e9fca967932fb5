"""The interior-point driver's shared rules (`vfm._numerics.interior_point`)."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfm._numerics.interior_point import INEXACT_FRACTION, INEXACT_RANGE, Method, cg_tolerance, iterate, largest_step
from vfm.equilibrium import Status

positive = st.floats(min_value=1e-30, max_value=1e30, allow_nan=False, allow_infinity=False)


@given(mu=positive, scale=positive)
def test_the_solves_residual_is_a_fraction_of_mu_within_the_range(mu, scale):
    tolerance = cg_tolerance(mu, scale)
    low, high = INEXACT_RANGE
    assert low <= tolerance <= high
    # Inside the range the residual it allows, tolerance * scale, is the fraction of mu.
    if low < tolerance < high:
        assert math.isclose(tolerance * scale, INEXACT_FRACTION * mu, rel_tol=1e-12)


@given(mu=positive, smaller=st.floats(min_value=0.0, max_value=1.0), scale=positive)
def test_a_smaller_mu_never_loosens_the_tolerance(mu, smaller, scale):
    assert cg_tolerance(mu * smaller, scale) <= cg_tolerance(mu, scale)


def test_a_zero_right_hand_side_gets_the_loosest_tolerance():
    # Nothing to solve: any tolerance is met by the preconditioner's zero.
    assert cg_tolerance(1.0, 0.0) == INEXACT_RANGE[1]


def _halving(exhausted=None, floor=0.0):
    """A toy method on numbers: each step halves the distance to `floor`; converged below 1e-3."""
    return Method(name="toy", step=lambda x: floor + (x - floor) / 2, measure=lambda x: x,
                  converged=lambda x, _: "small" if x < 1e-3 else None, describe=lambda x: f"at {x:g}",
                  asked="1e-3", exhausted=exhausted)


def test_an_exhausted_step_ends_the_iterations_with_the_best_point():
    # From 1 the toy's steps creep towards 0.5: 1 -> 0.75 gains enough, 0.75 -> 0.625 does not.
    outcome = iterate(1.0, _halving(exhausted=lambda previous, point: point > 0.8 * previous, floor=0.5), 100)
    assert outcome.status == Status.INACCURATE
    assert outcome.iteration == 2 and outcome.point == 0.625
    assert "no digits left" in outcome.message and "toy" in outcome.message


def test_without_the_exhausted_test_the_same_method_runs_to_its_limit():
    outcome = iterate(1.0, _halving(floor=0.5), 30)
    assert outcome.status == Status.ITERATION_LIMIT and outcome.iteration == 30


def test_a_converged_point_is_reported_before_the_exhausted_test():
    # Every step counts as exhausted, yet the point it reaches converged: optimal, not inaccurate.
    outcome = iterate(1.5e-3, _halving(exhausted=lambda previous, point: True), 10)
    assert outcome.status == Status.OPTIMAL and outcome.point == 7.5e-4 and outcome.iteration == 1


def test_the_largest_step_is_the_first_boundary_over_every_pair_and_inf_without_one():
    rng = np.random.default_rng(0)
    values = [rng.random((5, 3)) + 0.1, rng.random(4) + 0.1, np.array([1.0, 2.0])]
    changes = [rng.standard_normal((5, 3)), rng.standard_normal(4), np.array([-4.0, 0.5])]
    rates = [float(np.max(np.where(c < 0, -c / v, 0.0))) for v, c in zip(values, changes, strict=True)]
    assert largest_step(values, changes) == 1.0 / max(rates)
    assert largest_step([np.ones(3)], [np.ones(3)]) == math.inf
    assert largest_step((), ()) == math.inf
    with pytest.raises(ValueError, match="values"):
        largest_step([np.ones(2)], [])
