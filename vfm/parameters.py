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
"""

from __future__ import annotations

import math
import types
from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass, fields, replace
from typing import Any, Literal, Protocol, TypeVar

import numpy as np
from numpy.typing import NDArray

from vfm._validation import beyond_int64, is_real, is_whole, job_name, shown_value
from vfm.errors import ValidationError

__all__ = [
    "Anything",
    "Boolean",
    "Constraint",
    "Either",
    "Function",
    "Hashed",
    "Instance",
    "Interval",
    "Known",
    "Listed",
    "OneOf",
    "Optional",
    "Real",
    "Span",
    "Whole",
    "check",
    "check_array",
    "check_distinct",
    "check_length",
    "check_names",
    "check_nonempty",
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
        shown = [repr(value) for value in self.values]
        return " or ".join(shown) if len(shown) < 3 else f"{', '.join(shown[:-1])} or {shown[-1]}"

    def admits(self, value: Any) -> bool:
        # Same type as well as equal: an array compared with a string would broadcast.
        return any(type(value) is type(known) and value == known for known in self.values)


@dataclass(frozen=True)
class Known(_ShowsValue):
    """One of the names `names` (strings: GPU types, throughput sets, ...); says `what` and lists
    them, as "a GPU type of the cluster (v100, k80)"; a violation shows the value and `hint`."""

    names: Sequence[str]
    what: str
    hint: str = ""  # where other names come from, after the value shown

    @property
    def says(self) -> str:
        return f"{self.what} ({', '.join(self.names)})"

    def admits(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.names

    def shown(self, value: Any) -> str:
        return shown_value(value) + (f" {self.hint}" if self.hint else "")


@dataclass(frozen=True)
class Hashed:
    """A value Python can hash (a key of a dict: a string, a number, a tuple of them); a
    violation shows the type's name. ``isinstance(v, Hashable)`` is not enough: a tuple holding
    a list claims to be hashable, and hashing it raises."""

    says: str = "hashable"

    def admits(self, value: Any) -> bool:
        try:
            hash(value)
        except TypeError:
            return False
        return True

    def shown(self, value: Any) -> str:
        return type(value).__name__


@dataclass(frozen=True)
class Listed:
    """A list-like argument, one entry per item: an instance of `kinds` (a sequence or a NumPy
    array) that is not a string, bytes or a mapping, each of which iterates too but is never meant
    as a list of entries; non-empty if `nonempty`. A violation shows the type and the value."""

    says: str
    kinds: tuple[type, ...] = (Sequence, np.ndarray)
    nonempty: bool = False

    def admits(self, value: Any) -> bool:
        return (isinstance(value, self.kinds) and not isinstance(value, str | bytes | Mapping)
                and not (self.nonempty and isinstance(value, Sized) and len(value) == 0))

    def shown(self, value: Any) -> str:
        return f"{type(value).__name__} {shown_value(value)}"


@dataclass(frozen=True)
class Instance:
    """An instance of `kind` (a class or a runtime-checkable protocol); a violation shows the type's
    name and `hint`, and a class passed where an instance is meant is named as such."""

    kind: type | tuple[type, ...] | types.UnionType
    says: str
    hint: str = ""  # what to do instead, after the type shown
    with_value: bool = False  # show the value after its type's name
    nonempty: bool = False  # an empty one (a mapping, a sequence) is refused too

    def admits(self, value: Any) -> bool:
        return (not isinstance(value, type) and isinstance(value, self.kind)
                and not (self.nonempty and isinstance(value, Sized) and len(value) == 0))

    def shown(self, value: Any) -> str:
        if isinstance(value, type):
            return f"the class {value.__name__}; pass an instance, as {value.__name__}()"
        shown = type(value).__name__ + (f" {shown_value(value)}" if self.with_value else "")
        return shown + (f"; {self.hint}" if self.hint else "")


@dataclass(frozen=True)
class Function:
    """A function or other callable object; a violation shows the type's name."""

    says: str

    def admits(self, value: Any) -> bool:
        return callable(value) and not isinstance(value, type)

    def shown(self, value: Any) -> str:
        return type(value).__name__


Ends = Literal["both", "left", "right", "neither"]


def _bound(value: float) -> str:
    """A bound as a message writes it: a whole number below a million in full, else as ``:g``."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e6 else f"{value:g}"


@dataclass(frozen=True)
class Interval(_ShowsValue):
    """A number of `kind` (`Real` or `Whole`, with their type rules) between `low` and `high`
    (None: unbounded on that side), the ends included as `closed` says ("both", "left", "right",
    "neither"), that renders its own message from the same data it checks:
    ``Interval(Real, 0, 1, closed="left")`` says "a number in [0, 1)",
    ``Interval(Whole, 1, unit="rounds")`` "a positive whole number of rounds",
    ``Interval(Real, 0, closed="neither")`` "a finite number > 0". `unit` names what is counted,
    `noun` replaces "a number" ("a relative gap"), `note` names the bound's constant or meaning,
    after the range in brackets; `finite=False` also admits +inf where there is no `high`."""

    kind: type[Real] | type[Whole]
    low: float | None = None
    high: float | None = None
    closed: Ends = "both"
    unit: str = ""
    finite: bool = True
    noun: str = ""
    note: str = ""

    @property
    def says(self) -> str:
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        positive = self.kind is Whole and left and self.low == 1
        noun = self.noun or ("a positive whole number" if positive else "a whole number" if self.kind is Whole
                             else "a finite number" if self.finite and self.high is None else "a number")
        text = noun + (f" of {self.unit}" if self.unit else "")
        if positive and self.high is not None:
            text += f", at most {_bound(self.high)}" if right else f", below {_bound(self.high)}"
        elif self.low is not None and self.high is not None:
            text += f" in {'[' if left else '('}{_bound(self.low)}, {_bound(self.high)}{']' if right else ')'}"
        elif self.low is not None and not positive:
            text += f" {'>=' if left else '>'} {_bound(self.low)}"
        elif self.high is not None:
            text += f" {'<=' if right else '<'} {_bound(self.high)}"
        if self.kind is Real and not self.finite:
            text += ", or inf"
        return text + (f" ({self.note})" if self.note else "")

    def admits(self, value: Any) -> bool:
        if self.kind is Whole:
            if not is_whole(value) or beyond_int64(value):
                return False
        elif not is_real(value) or math.isnan(value) or (math.isinf(value) and (self.finite or value < 0)):
            return False
        left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
        above = self.low is None or (value >= self.low if left else value > self.low)
        below = self.high is None or (value <= self.high if right else value < self.high)
        return bool(above and below)

    def admits_each(self, array: NDArray[Any]) -> NDArray[np.bool_]:
        """Which entries of the numeric array `array` the interval admits (`admits`, entry by entry;
        a whole number is one whose value is, as a float array's may be)."""
        values = np.asarray(array, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(values) | ((values == np.inf) & (self.kind is Real) & (not self.finite))
            if self.kind is Whole:
                ok &= values == np.round(values)
            left, right = self.closed in ("both", "left"), self.closed in ("both", "right")
            if self.low is not None:
                ok &= values >= self.low if left else values > self.low
            if self.high is not None:
                ok &= values <= self.high if right else values < self.high
        return ok


@dataclass(frozen=True)
class Span(_ShowsValue):
    """A ``(low, high)`` pair (a tuple or a list) of values `bound` admits, ``low <= high``; says
    so from `bound`: "a (low, high) pair with low <= high, each a number of seconds in (0, 5]"."""

    bound: Constraint

    @property
    def says(self) -> str:
        return f"a (low, high) pair with low <= high, each {self.bound.says}"

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


Value = TypeVar("Value")


def check(name: str, value: Value, constraint: Constraint) -> Value:
    """`value`, after checking it against `constraint` as `check_parameters` does one parameter:
    ``check("stale", stale, Boolean())``."""
    check_parameters({name: value}, {name: constraint})
    return value


def check_array(name: str, array: NDArray[Any], interval: Interval, *, jobs: bool = False,
                ids: Sequence[Hashable] | None = None, of: str = "") -> None:
    """Every entry of the numeric array `array` admitted by `interval`, checked at once; the first
    refused raises a `vfm.errors.ValidationError` naming its index, and with `jobs` the job of
    axis 0 (with its id from `ids`), then `of` (" of the state": whose array it is):
    ``"capacity[1, 3] must be a finite number of GPUs >= 0, got -1"``,
    ``"epochs[2] (job 2 (id 'a')) must be a positive whole number, got 0.5"``.
    An array not of numbers (booleans, objects) is refused as a whole."""
    if array.dtype.kind not in "fiu":
        raise ValidationError(f"{name} must hold numbers, got dtype {array.dtype}")
    bad = ~interval.admits_each(array)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        at = f"[{', '.join(map(str, where))}]" if where else ""
        job = f" ({job_name(where[0], ids)})" if jobs and where else ""
        raise ValidationError(f"{name}{at}{job}{of} must be {interval.says}, got {array[where]:g}")


def check_nonempty(name: str, count: int, what: str) -> None:
    """`count` (how many `what` the argument lists) is at least 1; else a
    `vfm.errors.ValidationError`: ``"total_epochs must list at least one job, got none"``."""
    if count < 1:
        raise ValidationError(f"{name} must list at least one {what}, got none")


def check_length(name: str, values: Sized, n: int, each: str) -> None:
    """`values` has `n` entries, one per `each` (the jobs of total_epochs, ...); else a
    `vfm.errors.ValidationError`: ``"job_ids must have 2 entries, one per job of total_epochs, got 3"``."""
    if len(values) != n:
        raise ValidationError(f"{name} must have {n} entries, one per {each}, got {len(values)}")


def check_distinct(name: str, values: Sequence[Any], what: str, hint: str = "") -> None:
    """No value of `values` equal to an earlier one; else a `vfm.errors.ValidationError` naming
    the first repeated, as ``"types lists a GPU type twice: 'v100'"`` (`what`: "a GPU type"), then
    `hint`. Values that cannot be compared (numpy arrays) are left to the checks of the values
    themselves."""
    for k, value in enumerate(values):
        try:
            repeated = value in values[:k]
        except (TypeError, ValueError):  # "the truth value of an array ... is ambiguous"
            continue
        if repeated:
            raise ValidationError(f"{name} lists {what} twice: {shown_value(value)}" + (f" ({hint})" if hint else ""))


Options = TypeVar("Options")


def updated(options: Options, what: str, **overrides: Any) -> Options:
    """A copy of the frozen dataclass `options` with `overrides`, validated as its constructor
    validates; a name that is not a field raises a `vfm.errors.ValidationError` saying it is not
    a `what` and listing the fields."""
    names = [f.name for f in fields(options)]  # type: ignore[arg-type]
    check_names(overrides, names, f"a {what}", f"the options are {', '.join(names)}")
    return replace(options, **overrides) if overrides else options  # type: ignore[type-var]


def check_names(given: Iterable[str], known: Collection[str], what: str, listing: str) -> None:
    """Every name of `given` (keyword arguments) is one of `known`; else a
    `vfm.errors.ValidationError` naming those that are not, as ``"horizon is not <what>; <listing>"``."""
    unknown = sorted(set(given) - set(known))
    if unknown:
        raise ValidationError(f"{', '.join(unknown)} is not {what}; {listing}")
