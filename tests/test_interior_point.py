"""The interior-point driver's shared rules (`vfm._interior_point`)."""

import math

from hypothesis import given
from hypothesis import strategies as st

from vfm._interior_point import INEXACT_FRACTION, INEXACT_RANGE, cg_tolerance

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
