"""The declarative parameter constraints (`vfm.parameters`): each admits what it says and names
the parameter and the value it refuses."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pytest

from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, Forecaster
from vfm.parameters import (
    Anything,
    Array,
    Boolean,
    Each,
    Either,
    Equal,
    Fields,
    Fixed,
    Function,
    Hashed,
    Instance,
    Interval,
    Keyed,
    Known,
    Listed,
    Nested,
    OneOf,
    Optional,
    Real,
    Satisfies,
    Span,
    Step,
    Whole,
    check,
    check_array,
    check_distinct,
    check_length,
    check_nonempty,
    check_parameters,
)

FRACTION = Interval(Real, 0, 1, closed="left")


@pytest.mark.parametrize(("constraint", "good", "bad"), [
    (FRACTION, [0, 0.5, np.float32(0.25), np.int64(0)], [1, -0.1, math.nan, math.inf, True, "0.5", None]),
    (Real("a number > 0", lambda v: v > 0, finite=False), [1e-9, math.inf, 1e300, 2**63 - 1],
     [0, math.nan, -math.inf, False, 10**400, 10**30, 2**63]),
    # An integer beyond int64 NumPy cannot compute with; the same number as a float is read.
    (Real("a number >= 0", lambda v: v >= 0), [0, 1e30, np.uint64(2**63 - 1)],
     [10**30, 10**400, -(10**400), np.uint64(2**63)]),
    (Span(Interval(Real, 0, closed="neither")),
     [(1, 2), [1.5, 1.5], (np.float64(1), 3)], [(2, 1), (0, 1), (1, 2, 3), (1,), "12", {1: 2}, (1, math.nan), None]),
    (Whole("a whole number >= 1", lambda v: v >= 1), [1, np.int64(7), 2**63 - 1, np.uint64(2**63 - 1)],
     [0, 3.0, 2.5, True, "3", math.inf, 2**63, 10**30, 10**400, np.uint64(2**64 - 1)]),
    (Interval(Whole, 1), [1, np.int64(7), 2**63 - 1, np.uint64(2**63 - 1)],
     [0, 3.0, 2.5, True, "3", math.inf, 2**63, 10**30, 10**400, np.uint64(2**64 - 1)]),
    (Interval(Whole, -1, 3, closed="left"), [-1, 0, 2], [-2, 3, 1.0]),
    (Interval(Real, 0, closed="neither", finite=False), [1e-9, math.inf, 1e300, 2**63 - 1],
     [0, math.nan, -math.inf, False, 10**400, 10**30, 2**63]),
    (Interval(Real, None, 1, closed="neither"), [-1e300, 0, 0.999], [1, math.inf, -math.inf, math.nan]),
    (Boolean(), [True, False, np.bool_(True)], [0, 1, "yes", None]),
    (OneOf(("credit", "window")), ["credit", "window"], ["Credit", 1, None, np.array(["credit"])]),
    (Instance(Forecaster, "a vfm.forecast.Forecaster"), [DirichletForecaster()], [DirichletForecaster, 3]),
    (Optional(FRACTION), [None, 0.5], [1.5, "x"]),
    (Anything(), [None, object(), math.nan], []),
    (Function("a callable"), [print, len, lambda: None, DirichletForecaster().remaining_runtime], [3, None, int]),
    (Each(Whole("a count"), "a tuple of counts"), [(), (1, 2)], [[1], (1, 2.5), "ab", {1: 2}, None]),
    (Each(Whole("a count"), "counts", kinds=(list,), length=2), [[1, 2]], [[1], [1, 2, 3], (1, 2)]),
    (Each(Real("a number"), "a list", kinds=(list,), nonempty=True, step=Step(lambda a, b: a < b, "above")),
     [[1], [1, 2.5]], [[], [2, 1], [1, 1]]),
    (Fixed((Whole("a column"), Real("seconds")), "a pair"), [(0, 1.5), [2, 3]], [(0,), (0, 1, 2), (1.5, 0), "ab"]),
    (Fields({"a": Whole("a count"), "b": Anything()}, optional=("b",)), [{"a": 1}, {"a": 1, "b": None}],
     [{"b": 1}, {"a": 1.5}, {"a": 1, "c": 2}, [("a", 1)], None]),
    (Keyed(Known(("v100",), "a type"), Real("seconds"), "a mapping", nonempty=True), [{"v100": 1.0}],
     [{}, {"k80": 1.0}, {"v100": "1"}, [("v100", 1.0)]]),
    (Nested(Satisfies("a name", lambda v: isinstance(v, str)), lambda v: v if isinstance(v, tuple) else None,
            "an id", 2), ["a", ("a", ("b",)), ()], [1, ("a", 1), ((("a",),),)]),
    (Array((2,), kinds="iu", each=Interval(Whole, 0)), [np.array([0, 3])], [np.array([0, -1]), np.array([0.0, 1.0]),
                                                                             np.array([1]), [0, 1]]),
    (Array(dtype=np.float64), [np.zeros((2, 3))], [np.zeros(2, dtype=np.float32), 0.0]),
    (Equal(60.0), [60.0, 60], [59.0, "60", None, np.array([60.0, 60.0])]),
    (Equal(2, same_type=True), [2], [2.0, True, np.int64(2)]),
])
def test_each_constraint_admits_what_it_says_and_nothing_else(constraint, good, bad):
    assert all(constraint.admits(value) for value in good)
    assert not any(constraint.admits(value) for value in bad)


@pytest.mark.parametrize(("constraint", "says"), [
    (Interval(Real, 0, 1, closed="left"), "a number in [0, 1)"),
    (Interval(Real, 0, 1, closed="neither", noun="a relative gap"), "a relative gap in (0, 1)"),
    (Interval(Real, 0, closed="neither", unit="seconds"), "a finite number of seconds > 0"),
    (Interval(Real, 0, unit="seconds", finite=False), "a number of seconds >= 0, or inf"),
    (Interval(Real, None, 5, closed="left"), "a number < 5"),
    (Interval(Real, 0, 1e12, closed="right", note="MAX_JOB_SECONDS"), "a number in (0, 1e+12] (MAX_JOB_SECONDS)"),
    (Interval(Whole, 1, unit="rounds"), "a positive whole number of rounds"),
    (Interval(Whole, 1, 10**6, unit="GPUs"), "a positive whole number of GPUs, at most 1e+06"),
    (Interval(Whole, 0), "a whole number >= 0"),
    (Interval(Whole, -1, 4, closed="left"), "a whole number in [-1, 4)"),
    (Span(Interval(Whole, 1)), "a (low, high) pair with low <= high, each a positive whole number"),
])
def test_an_interval_says_the_range_it_checks(constraint, says):
    # The words come from the same bounds the check uses: one cannot drift from the other.
    assert constraint.says == says


def test_the_first_violation_in_order_is_named_with_the_value_as_written():
    constraints = {"reserve": FRACTION, "rounds": Interval(Whole, 1, unit="rounds")}
    check_parameters({"reserve": 0.5, "rounds": 3}, constraints)
    with pytest.raises(ValidationError, match=r"^reserve must be a number in \[0, 1\), got 1.5$"):
        check_parameters({"reserve": 1.5, "rounds": 0}, constraints)
    with pytest.raises(ValidationError, match=r"^rounds must be a positive whole number of rounds, got 2.5$"):
        check_parameters({"reserve": 0.5, "rounds": 2.5}, constraints)
    with pytest.raises(ValidationError, match=r"^reserve must be a number in \[0, 1\) or None, got 'x'$"):
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
    seconds = Span(Interval(Real, 0, closed="neither", unit="seconds"))
    check_parameters({"duration_s": (1.0, 2.0)}, {"duration_s": seconds})
    with pytest.raises(ValidationError, match=r"^duration_s must be a \(low, high\) pair with low <= high, each a "
                                              r"finite number of seconds > 0, got \(2.0, 1.0\)$"):
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
    seconds = Span(Interval(Real, 0, closed="neither", unit="seconds"))
    with pytest.raises(ValidationError, match=r"^duration_s must be a \(low, high\) pair.*, got a tuple holding an "
                                              r"integer too large to show$"):
        check_parameters({"duration_s": (1, 10**5000)}, {"duration_s": seconds})


def test_a_known_name_lists_the_names_and_a_hashed_value_is_one_python_can_hash():
    types = Known(("v100", "k80"), "a GPU type of the cluster", "(add it to the profiles)")
    assert types.admits("k80") and not types.admits("a100") and not types.admits(3)
    with pytest.raises(ValidationError, match=r"^gpu_type must be a GPU type of the cluster \(v100, k80\), got "
                                              r"'a100' \(add it to the profiles\)$"):
        check("gpu_type", "a100", types)
    assert Hashed().admits(("a", 1)) and not Hashed().admits(("a", [1])) and not Hashed().admits({})
    with pytest.raises(ValidationError, match=r"^kind must be hashable, got list$"):
        check("kind", [1], Hashed())


def test_a_non_empty_instance_refuses_an_empty_one_and_shows_the_value():
    regimes = Instance(Mapping, "a non-empty mapping", with_value=True, nonempty=True)
    assert regimes.admits({1: 2.0}) and not regimes.admits({}) and not regimes.admits([(1, 2.0)])
    with pytest.raises(ValidationError, match=r"^regimes must be a non-empty mapping, got dict \{\}$"):
        check("regimes", {}, regimes)


def test_an_array_check_names_the_first_entry_out_of_its_interval_and_its_job():
    check_array("capacity", np.array([0.0, 2.0]), Interval(Real, 0, unit="GPUs"))
    with pytest.raises(ValidationError, match=r"^capacity\[1, 0\] must be a finite number of GPUs >= 0, got -1$"):
        check_array("capacity", np.array([[1.0, 2.0], [-1.0, np.nan]]), Interval(Real, 0, unit="GPUs"))
    with pytest.raises(ValidationError, match=r"^epochs\[1\] \(job 1 \(id 'b'\)\) of the window must be a positive "
                                              r"whole number, got 0.5$"):
        check_array("epochs", np.array([1.0, 0.5]), Interval(Whole, 1), jobs=True, ids=["a", "b"], of=" of the window")
    with pytest.raises(ValidationError, match=r"^flags must hold numbers, got dtype bool$"):
        check_array("flags", np.array([True]), Interval(Real))
    # NaN and infinities are refused as the scalar form refuses them; inf only where finite=False admits it.
    with pytest.raises(ValidationError, match=r"got nan$"):
        check_array("x", np.array([np.nan]), Interval(Real, 0, finite=False))
    check_array("x", np.array([np.inf]), Interval(Real, 0, finite=False))


def test_the_collection_checks_name_the_argument_and_what_is_wrong():
    check_distinct("types", ["a", "b"], "a GPU type")
    with pytest.raises(ValidationError, match=r"^types lists a GPU type twice: 'a' \(one each\)$"):
        check_distinct("types", ["a", "b", "a"], "a GPU type", "one each")
    check_distinct("mix", [np.array([1, 2]), np.array([1, 2])], "a value")  # not comparable: left to the values' checks
    with pytest.raises(ValidationError, match=r"^job_ids must have 2 entries, one per job, got 3$"):
        check_length("job_ids", ["a", "b", "c"], 2, "job")
    with pytest.raises(ValidationError, match=r"^total_epochs must list at least one job, got none$"):
        check_nonempty("total_epochs", 0, "job")


def test_a_listed_argument_is_a_sequence_or_array_never_a_string_or_mapping():
    per_job = Listed("a list with one entry per job")
    assert all(per_job.admits(v) for v in ([1, 2], (1,), np.array([1.0]), []))
    assert not any(per_job.admits(v) for v in ("ab", b"ab", {1: 2}, 3, None, {1, 2}))
    assert not Listed("names", kinds=(Sequence,)).admits(np.array(["a"]))
    assert not Listed("names", nonempty=True).admits([])
    with pytest.raises(ValidationError, match=r"^job_ids must be a list with one entry per job, got str 'ab'$"):
        check("job_ids", "ab", per_job)


def test_a_container_names_the_part_it_refuses_by_its_path_then_whose_it_is():
    runs = Each(Fixed((Interval(Whole, 0, 2, closed="left", noun="a column"), Interval(Whole, 1)), "a run"),
                "runs", kinds=(tuple, list), step=Step(lambda a, b: a[0] != b[0], "a run of another column"))
    with pytest.raises(ValidationError, match=r"^stages\[1\]\[0\] of job 'a' must be a column in \[0, 2\), got 5$"):
        check("stages", [(0, 1), (5, 1)], runs, of=" of job 'a'")
    with pytest.raises(ValidationError, match=r"^stages\[1\] of job 'a' must be a run of another column, "
                                              r"got \(0, 2\)$"):
        check("stages", [(0, 1), (0, 2)], runs, of=" of job 'a'")
    with pytest.raises(ValidationError, match=r"^stages of job 'a' must be runs, got str$"):
        check("stages", "01", runs, of=" of job 'a'")
    ids = Each(Whole("an id"), "a tuple of ids", length=2)
    with pytest.raises(ValidationError, match=r"^carried must be a tuple of ids \(2 entries\), "
                                              r"got tuple of 1 entries$"):
        check("carried", (1,), ids)
    with pytest.raises(ValidationError, match=r"^plan\[0\] must be an id, got 1.5$"):
        check("plan", (1.5, 2), Optional(ids))  # a path inside names the part, not the whole's words


def test_a_record_names_its_fields_by_path_and_a_missing_or_unknown_one_too():
    job = Fields({"id": Anything(), "gpus": Interval(Whole, 1, 4)}, "a job object")
    check("jobs[3]", {"id": 6, "gpus": 2}, job)
    with pytest.raises(ValidationError, match=r"^jobs\[3\]\.gpus \(job 6\) must be a positive whole number, at most "
                                              r"4, got 8$"):
        check("jobs[3]", {"id": 6, "gpus": 8}, job, of=" (job 6)")
    with pytest.raises(ValidationError, match=r"^jobs\[3\]\.gpu must be left out: a job object has the fields id, gpus "
                                              r"only, got 2$"):
        check("jobs[3]", {"id": 6, "gpus": 2, "gpu": 2}, job)
    with pytest.raises(ValidationError, match=r"^jobs\[3\]\.gpus must be given: a job object has the fields id, gpus, "
                                              r"got nothing$"):
        check("jobs[3]", {"id": 6}, job)
    with pytest.raises(ValidationError, match=r"^round_index must be a whole number >= 0, got -1$"):
        check("", {"round_index": -1}, Fields({"round_index": Interval(Whole, 0)}))  # a document's own fields
    regimes = Keyed(Known(("v100", "k80"), "a GPU type"), Keyed(Real("a number"), Interval(Real, 0, closed="neither"),
                                                                 "a mapping"), "a mapping of GPU types")
    with pytest.raises(ValidationError, match=r"^each key of regimes of job 'a' must be a GPU type \(v100, k80\), "
                                              r"got 'p100'$"):
        check("regimes", {"p100": {32: 1.0}}, regimes, of=" of job 'a'")
    with pytest.raises(ValidationError, match=r"^regimes\['v100'\]\[32\] of job 'a' must be a finite number > 0, "
                                              r"got -1.0$"):
        check("regimes", {"v100": {32: -1.0}}, regimes, of=" of job 'a'")


def test_an_array_constraint_says_its_shape_and_names_the_first_entry_it_refuses():
    credit = Array((3,), kinds="fiu", each=Interval(Real, 0, 2, unit="rounds"))
    assert credit.says == "an array of numbers of shape (3,), each a number of rounds in [0, 2]"
    with pytest.raises(ValidationError, match=r"^credit\[1\] of the state must be a number of rounds in \[0, 2\], "
                                              r"got nan$"):
        check("credit", np.array([0.0, np.nan, 1.0]), credit, of=" of the state")
    with pytest.raises(ValidationError, match=r"^credit must be an array of numbers of shape \(3,\), .*, got an array "
                                              r"of dtype float64 and shape \(2,\)$"):
        check("credit", np.zeros(2), credit)


def test_a_nested_value_thousands_deep_is_refused_without_recursion_and_shown_short():
    deep: object = "a"
    for _ in range(10_000):
        deep = (deep,)
    ids = Nested(Satisfies("a name", lambda v: isinstance(v, str)), lambda v: v if isinstance(v, tuple) else None,
                 "a name, or a tuple of them nested at most 32 deep", 32)
    with pytest.raises(ValidationError, match=r"^job_id must be a name, or a tuple of them nested at most 32 deep, "
                                              r"got \(\(\(\("):
        check("job_id", deep, ids)


def test_an_equal_value_is_refused_saying_what_it_must_equal_and_why():
    with pytest.raises(ValidationError, match=r"^round_s must be this policy's 60.0, got 30.0: another configuration$"):
        check("round_s", 30.0, Equal(60.0, says="this policy's 60.0", hint="another configuration"))


def test_distinct_values_are_found_by_hashing_where_they_can_be_and_by_comparing_where_not():
    values = [*range(100_000), 5]  # one by one this would take minutes
    with pytest.raises(ValidationError, match=r"^ids lists an id twice: 5$"):
        check_distinct("ids", values, "an id")
    with pytest.raises(ValidationError, match=r"^rows lists a row twice: \[1\]$"):
        check_distinct("rows", [[1], [2], [1]], "a row")  # unhashable: compared
    with pytest.raises(ValidationError, match=r"^ids lists an id twice: True$"):
        check_distinct("ids", [1.0, True], "an id")  # equal, so a repeat, either way
