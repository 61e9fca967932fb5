"""The constraints of containers and records (`Each`, `Fixed`, `Fields`, `Keyed`, `Nested`,
`Array`): each names the part it refuses by its path from the argument (``jobs[3].budget``).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from vfm.parameters.constraints import Constraint, Interval, Refusal, _cut, refusal


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


