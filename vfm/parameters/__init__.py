"""The declarative vocabulary of parameter constraints, checked once where a caller's values enter.

An options object or an entry point states each parameter's constraint as data, in one mapping
(as scikit-learn's ``_parameter_constraints``), and `check_parameters` checks them in order, the
first violation raising a `vfm.errors.ValidationError` that names the parameter as the caller
wrote it and says what it must be: ``"reserve must be a number in [0, 1), got 1.5"``, the words
rendered from the same data the check uses (`Interval`, `OneOf`, `Instance`). Inner
code then trusts the types it receives.

>>> check_parameters({"reserve": 0.25, "solver": None},
...                  {"reserve": Interval(Real, 0, 1, closed="left"),
...                   "solver": Optional(Instance(str, "a backend name"))})
>>> check_parameters({"rounds": 2.5}, {"rounds": Interval(Whole, 1, unit="rounds")})
Traceback (most recent call last):
...
vfm.errors.ValidationError: rounds must be a positive whole number of rounds, got 2.5

A container's or a record's constraint (`Each`, `Fixed`, `Fields`, `Keyed`, `Array`) names the
part it refuses by its path from the argument, and `check`'s ``of`` says whose the value is, so
that a table of a record's fields, checked in one loop, names the field as the caller wrote it:

>>> job = Fields({"id": Anything(), "gpus": Interval(Whole, 1, 4)}, "a job object")
>>> check("jobs[3]", {"id": 6, "gpus": 8}, job, of=" (job 6)")
Traceback (most recent call last):
...
vfm.errors.ValidationError: jobs[3].gpus (job 6) must be a positive whole number, at most 4, got 8
"""

from __future__ import annotations

from vfm.parameters.checks import (
    check,
    check_array,
    check_distinct,
    check_length,
    check_names,
    check_nonempty,
    check_parameters,
    updated,
)
from vfm.parameters.constraints import (
    Anything,
    Boolean,
    Constraint,
    Either,
    Equal,
    Function,
    Hashed,
    Instance,
    Interval,
    Known,
    Listed,
    OneOf,
    Optional,
    Real,
    Refusal,
    Satisfies,
    Span,
    Whole,
    refusal,
)
from vfm.parameters.containers import (
    Array,
    Each,
    Fields,
    Fixed,
    Keyed,
    Nested,
    Step,
)

__all__ = [
    "Anything",
    "Array",
    "Boolean",
    "Constraint",
    "Each",
    "Either",
    "Equal",
    "Fields",
    "Fixed",
    "Function",
    "Hashed",
    "Instance",
    "Interval",
    "Keyed",
    "Known",
    "Listed",
    "Nested",
    "OneOf",
    "Optional",
    "Real",
    "Refusal",
    "Satisfies",
    "Span",
    "Step",
    "Whole",
    "check",
    "check_array",
    "check_distinct",
    "check_length",
    "check_names",
    "check_nonempty",
    "check_parameters",
    "refusal",
    "updated",
]
