"""The constraints of single values (numbers, names, types, ranges, alternatives) and the
`Refusal` a constraint reports: what a value must be, as data that renders its own message.
"""

from __future__ import annotations

import math
import reprlib
import types
from collections.abc import Callable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from vfm._validation import beyond_int64, is_real, is_whole, shown_value


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
    """An instance of `kind` (a class or a runtime-checkable protocol) that `holds` (a plan whose
    arrays have its jobs' rows, ...); a violation shows the type's name and `hint`, and a class
    passed where an instance is meant is named as such."""

    kind: type | tuple[type, ...] | types.UnionType
    says: str
    hint: str = ""  # what to do instead, after the type shown
    with_value: bool = False  # show the value after its type's name
    nonempty: bool = False  # an empty one (a mapping, a sequence) is refused too
    holds: Callable[[Any], bool] = _always  # asked of an instance only

    def admits(self, value: Any) -> bool:
        return (not isinstance(value, type) and isinstance(value, self.kind)
                and not (self.nonempty and isinstance(value, Sized) and len(value) == 0) and bool(self.holds(value)))

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

    def refusal(self, value: Any) -> Refusal:
        found = refusal(self.inner, value)
        return found if found.path else Refusal((), self.says, found.shown)


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


# --- Containers and records: constraints that name the part they refuse ---------------------------
# A container's constraint finds the first part it refuses (`refusal`), so that the message names
# that part as the caller wrote it: ``jobs[3].budget (job 6) must be ...``, ``carried[2] of the
# state must be ...``. Each is checked by `admits` alone while the value is admitted.


@dataclass(frozen=True)
class Refusal:
    """Where inside a value its constraint refuses it: `path`, the steps from the value down to the
    part refused, each a ``(before, after)`` pair written around the name so far (``("", "[3]")`` an
    item, ``("", ".budget")`` a field, ``("each key of ", "")`` a mapping's key); `says`, what that
    part must be; `shown`, the part as the message shows it."""

    path: tuple[tuple[str, str], ...]
    says: str
    shown: str

    def under(self, before: str, after: str) -> Refusal:
        """This refusal as the container one step up sees it."""
        return Refusal(((before, after), *self.path), self.says, self.shown)

    def named(self, name: str) -> str:
        """The refused part's name from the whole value's `name`: ``jobs[3].budget``. A field of a
        value named "" is named by itself (a document's top-level fields: ``round_index``)."""
        for before, after in self.path:
            name = before + (after[1:] if not name and after.startswith(".") else name + after)
        return name


def refusal(constraint: Constraint, value: Any) -> Refusal:
    """Why `constraint` refuses `value`: the part a container's constraint refuses inside it (its
    `refusal` method), else the value itself, as `constraint` says and shows it."""
    inside = getattr(constraint, "refusal", None)
    if inside is not None:
        found: Refusal = inside(value)
        return found
    return Refusal((), constraint.says, constraint.shown(value))


def _cut(value: Any) -> str:
    """A container or a deep value as a message shows it: its repr cut short (`reprlib`), so that
    a hostile value of a million entries, or nested thousands deep, makes a short message."""
    return reprlib.repr(value)


@dataclass(frozen=True)
class Satisfies(_ShowsValue):
    """A value for which `holds` is true, as `says` says ("NaN (none yet)"): a rule no other
    constraint states, declared with the field it is about. `show` writes a refused value for the
    message, where the caller's values need their own (a file's cut short); default
    `vfm._validation.shown_value`."""

    says: str
    holds: Callable[[Any], bool]
    show: Callable[[Any], str] | None = None

    def admits(self, value: Any) -> bool:
        return bool(self.holds(value))

    def shown(self, value: Any) -> str:
        return shown_value(value) if self.show is None else self.show(value)


@dataclass(frozen=True)
class Equal:
    """A value equal to `value` (of its very type too, if `same_type`: a version 2.0 is not 2),
    said as `says` ("this policy's 60.0"; default the value's repr); a violation shows the value
    cut short, then `hint` ("the state was made with another configuration")."""

    value: Any
    says: str = ""
    hint: str = ""
    same_type: bool = False

    def __post_init__(self) -> None:
        if not self.says:
            object.__setattr__(self, "says", _cut(self.value))

    def admits(self, value: Any) -> bool:
        if self.same_type and type(value) is not type(self.value):
            return False
        try:
            return bool(value == self.value)
        except (TypeError, ValueError):  # an array compared elementwise has no one truth value
            return False

    def shown(self, value: Any) -> str:
        return _cut(value) + (f": {self.hint}" if self.hint else "")


