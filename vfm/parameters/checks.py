"""Checking values against constraints at a boundary: one `ValidationError` naming the argument
(and whose it is) and what it must be.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence, Sized
from dataclasses import fields, replace
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from vfm._validation import job_name, shown_value
from vfm.errors import ValidationError
from vfm.parameters.constraints import Constraint, Interval, refusal


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
