"""The declarative vocabulary of parameter constraints, checked once where a caller's values enter.

An options object or an entry point states each parameter's constraint as data, in one mapping
(as scikit-learn's ``_parameter_constraints``), and `check_parameters` checks them in order, the
first violation raising a `vfm.errors.ValidationError` that names the parameter as the caller
wrote it and says what it must be: ``"reserve must be a fraction in [0, 1), got 1.5"``. Inner
code then trusts the types it receives.

>>> check_parameters({"reserve": 0.25, "solver": None},
...                  {"reserve": Real("a fraction in [0, 1)", lambda v: 0 <= v < 1),
...                   "solver": Optional(Instance(str, "a backend name"))})
>>> check_parameters({"rounds": 2.5}, {"rounds": Whole("a positive whole number of rounds", lambda v: v >= 1)})
Traceback (most recent call last):
...
vfm.errors.ValidationError: rounds must be a positive whole number of rounds, got 2.5
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any, Protocol, TypeVar

import numpy as np

from vfm._validation import beyond_int64, is_real, is_whole, shown_value
from vfm.errors import ValidationError

__all__ = [
    "Anything",
    "Boolean",
    "Constraint",
    "Either",
    "Function",
    "Instance",
    "Interval",
    "OneOf",
    "Optional",
    "Real",
    "Whole",
    "check_parameters",
    "updated",
]


class Constraint(Protocol):
    """What a parameter's value must be: `says` completes "<name> must be ...", `admits` decides."""

    @property
    def says(self) -> str: ...

    def admits(self, value: Any) -> bool: ...

    def shown(self, value: Any) -> str: ...


def _always(value: Any) -> bool:
    return True


class _ShowsValue:
    """A constraint whose violation shows the value as the caller wrote it (an integer beyond
    int64 marked as such: `vfm._validation.shown_value`)."""

    def shown(self, value: Any) -> str:
        return shown_value(value)


@dataclass(frozen=True)
class Real(_ShowsValue):
    """A real number (a float, or an integer within int64; numpy's included; not a bool, not NaN)
    that `holds`; finite unless `finite` is False (a time limit may be infinite). An integer beyond
    int64 (``10**30``) is refused whatever `holds` says (`vfm._validation.is_real`): NumPy cannot
    compute with it, and the same number as a float is checked against the bounds instead."""

    says: str
    holds: Callable[[Any], bool] = _always
    finite: bool = True

    def admits(self, value: Any) -> bool:
        if not is_real(value) or math.isnan(value) or (self.finite and math.isinf(value)):
            return False
        return bool(self.holds(value))


@dataclass(frozen=True)
class Whole(_ShowsValue):
    """An integer (Python's or numpy's; not a bool, not a float) within int64 that `holds`: a count
    beyond int64 (``10**30``) is refused whatever `holds` says (`vfm._validation.beyond_int64`),
    since every count ends up in a NumPy array."""

    says: str
    holds: Callable[[Any], bool] = _always

    def admits(self, value: Any) -> bool:
        return is_whole(value) and not beyond_int64(value) and bool(self.holds(value))


@dataclass(frozen=True)
class Anything(_ShowsValue):
    """Any value: a parameter the callee checks itself."""

    says: str = "anything"

    def admits(self, value: Any) -> bool:
        return True


@dataclass(frozen=True)
class Boolean(_ShowsValue):
    """True or False (numpy's too): a 0 or 1 meant as a flag is a mistake worth naming."""

    says: str = "True or False"

    def admits(self, value: Any) -> bool:
        return isinstance(value, bool | np.bool_)


@dataclass(frozen=True)
class OneOf(_ShowsValue):
    """One of a few values (of the same type, and equal)."""

    values: tuple[Any, ...]

    @property
    def says(self) -> str:
        return " or ".join(repr(value) for value in self.values)

    def admits(self, value: Any) -> bool:
        # Same type as well as equal: an array compared with a string would broadcast.
        return any(type(value) is type(known) and value == known for known in self.values)


@dataclass(frozen=True)
class Instance:
    """An instance of `kind` (a class or a runtime-checkable protocol); a violation shows the type's
    name and `hint`, and a class passed where an instance is meant is named as such."""

    kind: type | tuple[type, ...]
    says: str
    hint: str = ""  # what to do instead, after the type shown

    def admits(self, value: Any) -> bool:
        return not isinstance(value, type) and isinstance(value, self.kind)

    def shown(self, value: Any) -> str:
        if isinstance(value, type):
            return f"the class {value.__name__}; pass an instance, as {value.__name__}()"
        return type(value).__name__ + (f"; {self.hint}" if self.hint else "")


@dataclass(frozen=True)
class Function:
    """A function or other callable object; a violation shows the type's name."""

    says: str

    def admits(self, value: Any) -> bool:
        return callable(value) and not isinstance(value, type)

    def shown(self, value: Any) -> str:
        return type(value).__name__


@dataclass(frozen=True)
class Interval(_ShowsValue):
    """A ``(low, high)`` pair (a tuple or a list) of values `bound` admits, ``low <= high``; `says`
    states the whole, as "(low, high) seconds with 0 < low <= high <= 1e+12"."""

    says: str
    bound: Constraint

    def admits(self, value: Any) -> bool:
        return (isinstance(value, tuple | list) and len(value) == 2
                and all(self.bound.admits(v) for v in value) and bool(value[0] <= value[1]))


@dataclass(frozen=True)
class Optional:
    """`inner`, or None."""

    inner: Constraint

    @property
    def says(self) -> str:
        return f"{self.inner.says} or None"

    def admits(self, value: Any) -> bool:
        return value is None or self.inner.admits(value)

    def shown(self, value: Any) -> str:
        return self.inner.shown(value)


@dataclass(frozen=True)
class Either:
    """`first` or `second` (say, a count or an object that holds one); a violation is shown as
    `first` shows it."""

    first: Constraint
    second: Constraint

    @property
    def says(self) -> str:
        return f"{self.first.says} or {self.second.says}"

    def admits(self, value: Any) -> bool:
        return self.first.admits(value) or self.second.admits(value)

    def shown(self, value: Any) -> str:
        return self.first.shown(value)


def check_parameters(values: Mapping[str, Any], constraints: Mapping[str, Constraint]) -> None:
    """Check each of `values` against its constraint, in the order of `constraints` (module
    docstring); the first violation raises a `vfm.errors.ValidationError` naming it."""
    for name, constraint in constraints.items():
        value = values[name]
        if not constraint.admits(value):
            raise ValidationError(f"{name} must be {constraint.says}, got {constraint.shown(value)}")


Options = TypeVar("Options")


def updated(options: Options, what: str, **overrides: Any) -> Options:
    """A copy of the frozen dataclass `options` with `overrides`, validated as its constructor
    validates; a name that is not a field raises a `vfm.errors.ValidationError` saying it is not
    a `what` and listing the fields."""
    names = [f.name for f in fields(options)]  # type: ignore[arg-type]
    unknown = sorted(set(overrides) - set(names))
    if unknown:
        raise ValidationError(f"{', '.join(unknown)} is not a {what}; the options are {', '.join(names)}")
    return replace(options, **overrides) if overrides else options  # type: ignore[type-var]
