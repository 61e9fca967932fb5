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

import functools
import itertools
import math
import reprlib
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
    constraint states, declared with the field it is about."""

    says: str
    holds: Callable[[Any], bool]

    def admits(self, value: Any) -> bool:
        return bool(self.holds(value))


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


@dataclass(frozen=True)
class Step:
    """How each item of an `Each` stands to the one before it: `holds(before, item)`, `says` what
    the item must then be ("a run of another column than the run before it")."""

    holds: Callable[[Any, Any], bool]
    says: str


def _listing(value: Any, kinds: tuple[type, ...]) -> bool:
    """`value` is an instance of `kinds` meant as a list of entries (not a string, bytes or mapping)."""
    return isinstance(value, kinds) and not isinstance(value, str | bytes | Mapping)


@dataclass(frozen=True)
class Each:
    """A sequence of `kinds` (tuples by default) whose every item `item` admits, each standing to the
    one before it as `step` says if set; `length` items if set, at least one if `nonempty`. `what`
    says what it is ("a tuple of job ids"); a refused item is named by its index
    (``carried[2] of the state must be a job id ...``)."""

    item: Constraint
    what: str
    kinds: tuple[type, ...] = (tuple,)
    length: int | None = None
    nonempty: bool = False
    step: Step | None = None

    @property
    def says(self) -> str:
        if self.length is not None:
            return f"{self.what} ({self.length} entries)"
        return self.what + (", at least one" if self.nonempty else "")

    def _sized(self, value: Any) -> bool:
        if not _listing(value, self.kinds):
            return False
        return len(value) == self.length if self.length is not None else not (self.nonempty and len(value) == 0)

    def admits(self, value: Any) -> bool:
        if not self._sized(value) or not all(map(self.item.admits, value)):
            return False
        step = self.step
        return step is None or all(step.holds(before, item) for before, item in itertools.pairwise(value))

    def shown(self, value: Any) -> str:
        return type(value).__name__ + (f" of {len(value)} entries" if _listing(value, self.kinds) else "")

    def refusal(self, value: Any) -> Refusal:
        if self._sized(value):
            before = None
            for k, item in enumerate(value):
                if not self.item.admits(item):
                    return refusal(self.item, item).under("", f"[{k}]")
                if k and self.step is not None and not self.step.holds(before, item):
                    return Refusal((("", f"[{k}]"),), self.step.says, self.item.shown(item))
                before = item
        return Refusal((), self.says, self.shown(value))


@dataclass(frozen=True)
class Fixed:
    """A sequence of `kinds` with one entry per constraint of `items`, entry k admitted by
    ``items[k]``: a pair ``[batch size, seconds]``, a run ``[column, epochs]``; `says` what it is.
    A refused entry is named by its index."""

    items: tuple[Constraint, ...]
    says: str
    kinds: tuple[type, ...] = (tuple, list)

    def admits(self, value: Any) -> bool:
        return (_listing(value, self.kinds) and len(value) == len(self.items)
                and all(c.admits(v) for c, v in zip(self.items, value, strict=True)))

    def shown(self, value: Any) -> str:
        return _cut(value)

    def refusal(self, value: Any) -> Refusal:
        if _listing(value, self.kinds) and len(value) == len(self.items):
            for k, (constraint, entry) in enumerate(zip(self.items, value, strict=True)):
                if not constraint.admits(entry):
                    return refusal(constraint, entry).under("", f"[{k}]")
        return Refusal((), self.says, self.shown(value))


@dataclass(frozen=True)
class Fields:
    """A record of named fields: a mapping with exactly the keys of `fields` (those of `optional`
    may be missing), each value admitted by its field's constraint; declared once as a table, as a
    checkpoint's objects are, and checked in one loop. `what` says what it is ("a job object"),
    `member` what a key is called ("field": named as ``jobs[3].budget``; else as ``regimes['v100']``).
    A refused, unknown or missing field is named by its path: ``jobs[3].budgets (job 6) must be
    left out: ...``."""

    fields: Mapping[Any, Constraint]
    what: str = "an object"
    optional: tuple[Any, ...] = ()
    member: str = "field"

    @property
    def says(self) -> str:
        return f"{self.what} with the {self._listing}"

    @functools.cached_property
    def _listing(self) -> str:
        names = ", ".join(f"{name} (optional)" if name in self.optional else str(name) for name in self.fields)
        return f"{self.member}{'s' if len(self.fields) > 1 else ''} {names}"

    @functools.cached_property
    def _names(self) -> frozenset[Any]:
        return frozenset(self.fields)

    @functools.cached_property
    def _required(self) -> frozenset[Any]:
        return self._names - frozenset(self.optional)

    def admits(self, value: Any) -> bool:
        if not isinstance(value, Mapping):
            return False
        keys = value.keys()
        if not (keys == self._names if not self.optional else self._required <= keys <= self._names):
            return False
        return all(constraint.admits(value[name]) for name, constraint in self.fields.items() if name in keys)

    def shown(self, value: Any) -> str:
        return type(value).__name__

    def _step(self, name: Any) -> tuple[str, str]:
        return ("", f".{name}") if self.member == "field" else ("", f"[{name!r}]")

    def refusal(self, value: Any) -> Refusal:
        if not isinstance(value, Mapping):
            return Refusal((), self.says, self.shown(value))
        for key in value:
            if key not in self._names:
                return Refusal((self._step(key),), f"left out: {self.what} has the {self._listing} only",
                               _cut(value[key]))
        for name, constraint in self.fields.items():
            if name not in value:
                if name in self._required:
                    return Refusal((self._step(name),), f"given: {self.what} has the {self._listing}", "nothing")
            elif not constraint.admits(value[name]):
                return refusal(constraint, value[name]).under(*self._step(name))
        return Refusal((), self.says, self.shown(value))


@dataclass(frozen=True)
class Keyed:
    """A mapping whose keys `keys` admits and whose values `values` admits, at least one entry if
    `nonempty`; `what` says what it is. A refused key is named as one (``each key of regimes of job
    'a' must be ...``), a refused value by its key (``regimes['v100'] of job 'a' must be ...``)."""

    keys: Constraint
    values: Constraint
    what: str
    nonempty: bool = False

    @property
    def says(self) -> str:
        return self.what

    def admits(self, value: Any) -> bool:
        if not isinstance(value, Mapping) or (self.nonempty and not value):
            return False
        keys, values = self.keys.admits, self.values.admits
        return all(keys(key) and values(item) for key, item in value.items())

    def shown(self, value: Any) -> str:
        return f"{type(value).__name__} {_cut(value)}"

    def refusal(self, value: Any) -> Refusal:
        if isinstance(value, Mapping) and (value or not self.nonempty):
            for key, item in value.items():
                if not self.keys.admits(key):
                    return refusal(self.keys, key).under("each key of ", "")
                if not self.values.admits(item):
                    return refusal(self.values, item).under("", f"[{key!r}]")
        return Refusal((), self.says, self.shown(value))


@dataclass(frozen=True)
class Nested:
    """A `leaf`, or a container whose entries (`inner(value)`; None: the value is no container) are
    each `Nested` in turn, at most `depth` containers deep: a job id is a string, a whole number or
    a tuple of them. Checked level by level, so that a value nested thousands deep costs no
    recursion (and no recursion error); shown cut short."""

    leaf: Constraint
    inner: Callable[[Any], Iterable[Any] | None]
    says: str
    depth: int

    def admits(self, value: Any) -> bool:
        if self.leaf.admits(value):  # most values are leaves: no level to build
            return True
        level: list[Any] = [value]
        for depth in itertools.count():
            deeper: list[Any] = []
            for part in level:
                if self.leaf.admits(part):
                    continue
                entries = self.inner(part)
                if entries is None or depth >= self.depth:
                    return False
                deeper.extend(entries)
            if not deeper:
                return True
            level = deeper
        return False  # pragma: no cover - the loop returns

    def shown(self, value: Any) -> str:
        return _cut(value)


#: The words for an array's dtype kinds (`Array.kinds`).
_KIND_WORDS = {"f": "floats", "iu": "whole numbers", "b": "booleans", "fiu": "numbers"}


@dataclass(frozen=True)
class Array:
    """A NumPy array of `shape` (None: any length on that axis; no shape: any), of dtype `dtype` if
    set, else of one of the dtype `kinds` ("f", "iu", "b", "fiu"; "": any), each entry admitted by
    `each` if set (checked at once, as `check_array`); `note` says what its axes are. A refused
    entry is named by its index (``credit[3] of the state must be ...``)."""

    shape: tuple[int | None, ...] | None = None
    kinds: str = ""
    dtype: Any = None
    each: Interval | None = None
    note: str = ""

    @property
    def says(self) -> str:
        if self.dtype is not None:
            text = f"a {np.dtype(self.dtype).name} array"
        else:
            text = f"an array of {_KIND_WORDS[self.kinds]}" if self.kinds in _KIND_WORDS else "an array"
        if self.shape is not None:
            text += " of shape (" + ", ".join("any" if n is None else str(n) for n in self.shape) + \
                    ("," if len(self.shape) == 1 else "") + ")"
        text += f" ({self.note})" if self.note else ""
        return text + (f", each {self.each.says}" if self.each is not None else "")

    def _formed(self, value: Any) -> bool:
        if not isinstance(value, np.ndarray):
            return False
        if self.dtype is not None:
            if value.dtype != self.dtype:
                return False
        elif self.kinds and value.dtype.kind not in self.kinds:
            return False
        return self.shape is None or (value.ndim == len(self.shape) and all(
            n is None or n == size for n, size in zip(self.shape, value.shape, strict=True)))

    def admits(self, value: Any) -> bool:
        return self._formed(value) and (self.each is None or bool(self.each.admits_each(value).all()))

    def shown(self, value: Any) -> str:
        if isinstance(value, np.ndarray):
            return f"an array of dtype {value.dtype} and shape {value.shape}"
        return type(value).__name__

    def refusal(self, value: Any) -> Refusal:
        if self._formed(value) and self.each is not None:
            bad = ~self.each.admits_each(value)
            if bad.any():
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                return Refusal((("", f"[{', '.join(map(str, where))}]"),), self.each.says, f"{value[where]:g}")
        return Refusal((), self.says, self.shown(value))


def check_parameters(values: Mapping[str, Any], constraints: Mapping[str, Constraint], *, of: str = "") -> None:
    """Check each of `values` against its constraint, in the order of `constraints` (module
    docstring); the first violation raises a `vfm.errors.ValidationError` naming it, or the part of
    it a container's constraint refuses (`refusal`), then `of` (whose the values are: " of the
    state", " (job 6)")."""
    for name, constraint in constraints.items():
        value = values[name]
        if not constraint.admits(value):
            found = refusal(constraint, value)
            raise ValidationError(f"{found.named(name)}{of} must be {found.says}, got {found.shown}")


Value = TypeVar("Value")


def check(name: str, value: Value, constraint: Constraint, *, of: str = "") -> Value:
    """`value`, after checking it against `constraint` as `check_parameters` does one parameter:
    ``check("stale", stale, Boolean())``."""
    check_parameters({name: value}, {name: constraint}, of=of)
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
    themselves. O(n) when every value is hashable (a restore's job ids), else O(n**2)."""
    hashed = _hashed_repeats(values)
    repeated = hashed if hashed is not None else _compared_repeats(values)
    if repeated:
        raise ValidationError(f"{name} lists {what} twice: {shown_value(repeated[0])}" + (f" ({hint})" if hint else ""))


def _hashed_repeats(values: Sequence[Any]) -> list[Any] | None:
    """The first value of `values` equal to an earlier one (a list of it, or none), found by hashing;
    None if a value cannot be hashed. Equal values hash alike, so it is the one `_compared_repeats`
    finds."""
    seen: set[Any] = set()
    try:
        for value in values:
            if value in seen:
                return [value]
            seen.add(value)
    except TypeError:  # unhashable: compared one by one instead
        return None
    return []


def _compared_repeats(values: Sequence[Any]) -> list[Any]:
    """The first value of `values` equal to an earlier one (a list of it, or none), compared one by one."""
    for k, value in enumerate(values):
        try:
            repeated = value in values[:k]
        except (TypeError, ValueError):  # "the truth value of an array ... is ambiguous"
            continue
        if repeated:
            return [value]
    return []


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
