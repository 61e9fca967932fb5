"""The declarative parameter constraints (`vfm.parameters`): each admits what it says and names
the parameter and the value it refuses."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, Forecaster
from vfm.parameters import (
    Anything,
    Boolean,
    Either,
    Function,
    Instance,
    Interval,
    OneOf,
    Optional,
    Real,
    Whole,
    check_parameters,
)

FRACTION = Real("a fraction in [0, 1)", lambda v: 0 <= v < 1)


@pytest.mark.parametrize(("constraint", "good", "bad"), [
    (FRACTION, [0, 0.5, np.float32(0.25), np.int64(0)], [1, -0.1, math.nan, math.inf, True, "0.5", None]),
    (Real("a number > 0", lambda v: v > 0, finite=False), [1e-9, math.inf, 1e300, 2**63 - 1],
     [0, math.nan, -math.inf, False, 10**400, 10**30, 2**63]),
    # An integer beyond int64 NumPy cannot compute with; the same number as a float is read.
    (Real("a number >= 0", lambda v: v >= 0), [0, 1e30, np.uint64(2**63 - 1)],
     [10**30, 10**400, -(10**400), np.uint64(2**63)]),
    (Interval("(low, high) with 0 < low <= high", Real("a number > 0", lambda v: v > 0)),
     [(1, 2), [1.5, 1.5], (np.float64(1), 3)], [(2, 1), (0, 1), (1, 2, 3), (1,), "12", {1: 2}, (1, math.nan), None]),
    (Whole("a whole number >= 1", lambda v: v >= 1), [1, np.int64(7), 2**63 - 1, np.uint64(2**63 - 1)],
     [0, 3.0, 2.5, True, "3", math.inf, 2**63, 10**30, 10**400, np.uint64(2**64 - 1)]),
    (Boolean(), [True, False, np.bool_(True)], [0, 1, "yes", None]),
    (OneOf(("credit", "window")), ["credit", "window"], ["Credit", 1, None, np.array(["credit"])]),
    (Instance(Forecaster, "a vfm.forecast.Forecaster"), [DirichletForecaster()], [DirichletForecaster, 3]),
    (Optional(FRACTION), [None, 0.5], [1.5, "x"]),
    (Anything(), [None, object(), math.nan], []),
    (Function("a callable"), [print, len, lambda: None, DirichletForecaster().remaining_runtime], [3, None, int]),
])
def test_each_constraint_admits_what_it_says_and_nothing_else(constraint, good, bad):
    assert all(constraint.admits(value) for value in good)
    assert not any(constraint.admits(value) for value in bad)


def test_the_first_violation_in_order_is_named_with_the_value_as_written():
    constraints = {"reserve": FRACTION, "rounds": Whole("a positive whole number of rounds", lambda v: v >= 1)}
    check_parameters({"reserve": 0.5, "rounds": 3}, constraints)
    with pytest.raises(ValidationError, match=r"^reserve must be a fraction in \[0, 1\), got 1.5$"):
        check_parameters({"reserve": 1.5, "rounds": 0}, constraints)
    with pytest.raises(ValidationError, match=r"^rounds must be a positive whole number of rounds, got 2.5$"):
        check_parameters({"reserve": 0.5, "rounds": 2.5}, constraints)
    with pytest.raises(ValidationError, match=r"^reserve must be a fraction in \[0, 1\) or None, got 'x'$"):
        check_parameters({"reserve": "x"}, {"reserve": Optional(FRACTION)})


def test_an_instance_constraint_names_a_class_passed_for_an_instance_and_gives_its_hint():
    forecaster = Instance(Forecaster, "a vfm.forecast.Forecaster", "it has remaining_runtime")
    with pytest.raises(ValidationError, match=r"got the class DirichletForecaster; pass an instance, as "
                                              r"DirichletForecaster\(\)$"):
        check_parameters({"forecaster": DirichletForecaster}, {"forecaster": forecaster})
    with pytest.raises(ValidationError, match=r"^forecaster must be a vfm.forecast.Forecaster, got int; it has "
                                              r"remaining_runtime$"):
        check_parameters({"forecaster": 3}, {"forecaster": forecaster})


def test_an_interval_is_named_with_what_it_says_and_the_pair_as_written():
    seconds = Interval("(low, high) seconds with 0 < low <= high", Real("seconds > 0", lambda v: v > 0))
    check_parameters({"duration_s": (1.0, 2.0)}, {"duration_s": seconds})
    with pytest.raises(ValidationError, match=r"^duration_s must be \(low, high\) seconds with 0 < low <= high, "
                                              r"got \(2.0, 1.0\)$"):
        check_parameters({"duration_s": (2.0, 1.0)}, {"duration_s": seconds})


def test_an_int_too_large_for_a_float_is_refused_not_raised_on():
    with pytest.raises(ValidationError, match=r"^efficiency must be a finite number >= 0, got 1000+ \(beyond int64"):
        check_parameters({"efficiency": 10**400}, {"efficiency": Real("a finite number >= 0", lambda v: v >= 0)})


@pytest.mark.parametrize("value", [10**30, -(10**30), 10**400, 10**5000, 2**63],
                         ids=["1e30", "-1e30", "1e400", "1e5000", "2**63"])
@pytest.mark.parametrize("constraint", [Real("a number", finite=False), Whole("a whole number"),
                                        Optional(Whole("a whole number")),
                                        Either(Whole("a count"), Instance(str, "a name"))])
def test_an_integer_beyond_int64_is_refused_by_every_numeric_constraint_and_named_as_such(constraint, value):
    # Whatever the constraint's own bounds: NumPy holds such an int as an object (np.isfinite
    # raises) or not at all, and past 4300 digits Python will not even write it.
    # Shown as written, or by its size past the 4300 digits Python will write.
    with pytest.raises(ValidationError, match=r"^count must be .*, got (-?\d+|an integer of about 10\*\*5000) "
                                              r"\(beyond int64: vfm reads integers from -2\*\*63 to 2\*\*63 - 1\)$"):
        check_parameters({"count": value}, {"count": constraint})


def test_an_interval_holding_an_integer_too_long_to_write_is_refused_naming_it():
    seconds = Interval("(low, high) seconds", Real("seconds > 0", lambda v: v > 0))
    with pytest.raises(ValidationError, match=r"^duration_s must be \(low, high\) seconds, got a tuple holding an "
                                              r"integer too large to show$"):
        check_parameters({"duration_s": (1, 10**5000)}, {"duration_s": seconds})
