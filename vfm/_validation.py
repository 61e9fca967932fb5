"""Input checks used at the library's boundary (scikit-learn style: check once, say what to fix)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, TypeGuard, TypeVar

import numpy as np
from numpy.typing import ArrayLike, DTypeLike, NDArray

from vfm.errors import ValidationError

Array = TypeVar("Array", bound=np.ndarray)

FloatArray = NDArray[np.float64]


def real_array(value: ArrayLike, name: str) -> FloatArray:
    """`value` as a float64 array (no copy when it already is one) after checking its dtype.

    Raises
    ------
    ValidationError
        If numpy cannot read it, or it does not hold real numbers (integers, floats): booleans
        are rejected too, since True read as 1 is a mistake wherever a number is meant.
    """
    try:
        raw = np.asarray(value)
    except Exception as exc:  # ragged lists and other objects numpy cannot take
        raise ValidationError(f"{name} must be a numeric array; numpy could not read it ({exc})") from exc
    if raw.dtype == np.bool_:
        raise ValidationError(f"{name} must hold numbers, got booleans (dtype bool): True and False are not "
                              f"read as 1 and 0")
    if raw.dtype == object or not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)):
        raise ValidationError(f"{name} must hold real numbers, got dtype {raw.dtype}")
    return np.asarray(raw, dtype=np.float64)


def as_real_array(
    value: ArrayLike,
    name: str,
    shape: Sequence[int | None],
    *,
    allow_inf: bool = False,
) -> FloatArray:
    """Return `value` as a read-only float64 copy after checking its shape and entries.

    Parameters
    ----------
    value : array_like
        What the caller passed.
    name : str
        The argument's name, used in error messages.
    shape : sequence of int or None
        Expected shape; ``None`` accepts any length along that axis.
    allow_inf : bool
        Whether ``+inf`` is a meaningful value (e.g. "no cap").

    Raises
    ------
    ValidationError
        If the value is not a real numeric array of the expected shape, or holds NaN or
        an infinity that is not allowed.
    """
    raw = real_array(value, name)
    if raw.ndim != len(shape) or any(
        want is not None and got != want for got, want in zip(raw.shape, shape, strict=False)
    ):
        expected = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValidationError(f"{name} must have shape {expected}, got {raw.shape}")
    array = np.array(raw, dtype=np.float64, copy=True)
    if np.isnan(array).any():
        where = tuple(int(i) for i in np.argwhere(np.isnan(array))[0])
        raise ValidationError(f"{name} contains NaN (first at index {where})")
    bad_inf = np.isneginf(array) if allow_inf else np.isinf(array)
    if bad_inf.any():
        where = tuple(int(i) for i in np.argwhere(bad_inf)[0])
        raise ValidationError(f"{name} contains an infinite value {array[where]} at index {where}")
    array.setflags(write=False)
    return array


def require_nonnegative(array: FloatArray, name: str) -> None:
    """Raise if any entry of `array` is negative, naming the first offender."""
    if (array < 0).any():
        where = tuple(int(i) for i in np.argwhere(array < 0)[0])
        raise ValidationError(f"{name} must be >= 0, got {array[where]} at index {where}")


def require_positive(array: FloatArray, name: str) -> None:
    """Raise if any entry of `array` is not strictly positive, naming the first offender."""
    if (array <= 0).any():
        where = tuple(int(i) for i in np.argwhere(array <= 0)[0])
        raise ValidationError(f"{name} must be > 0, got {array[where]} at index {where}")


def job_name(job: int, ids: Sequence[Hashable] | None = None) -> str:
    """How messages name job `job`: its index, and its id when ids were given."""
    return f"job {job}" if ids is None else f"job {job} (id {ids[job]!r})"


def require_per_job(name: str, array: FloatArray, bad: np.ndarray, rule: str,
                    ids: Sequence[Hashable] | None = None) -> None:
    """Raise for the first True of `bad` (shape (n, ...), axis 0 the jobs), naming the field, the
    index, the job and the offending value: ``"epochs[3] (job 3 (id 'a')) must be > 0, got -1"``."""
    if bad.any():
        where = np.argwhere(bad)[0]
        index = ", ".join(str(int(i)) for i in where)
        raise ValidationError(f"{name}[{index}] ({job_name(int(where[0]), ids)}) {rule}, got {array[tuple(where)]:g}")


def first_bad(bad: NDArray[np.bool_]) -> int | None:
    """The index of the first True entry of `bad`, or None."""
    hits = np.flatnonzero(bad)
    return int(hits[0]) if hits.size else None


def is_whole(value: object) -> bool:
    """Whether `value` is an integer (Python or NumPy), not a bool: the type check of every
    "positive whole number" argument, whose range and message the caller states."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def read_only(array: Array) -> Array:
    """`array` as a read-only array that cannot be made writable again; itself if it already is.

    ``setflags(write=False)`` alone can be undone by anyone holding the array (or its base, if
    that owns its data). Here the copy's memory is an immutable `bytes` object, so neither the
    returned array nor any array up its chain of bases can ever be made writable, and no
    caller's edit reaches the object that handed it out. Object arrays (which `bytes` cannot
    hold) are copied and flagged read-only instead.
    """
    if is_read_only(array):
        return array
    if array.dtype.hasobject:
        copy = np.array(array, copy=True)
        copy.setflags(write=False)
        return copy  # type: ignore[return-value]
    held = np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=array.dtype).reshape(array.shape)
    return held  # type: ignore[return-value]


def frozen(value: ArrayLike, dtype: DTypeLike = np.float64) -> NDArray[Any]:
    """`read_only` of `value` as an array of `dtype` (no copy when it already is one)."""
    return read_only(np.asarray(value, dtype=dtype))


def is_read_only(value: object) -> TypeGuard[NDArray[Any]]:
    """Whether `value` is an array made by `read_only`: read-only, its data held by `bytes`."""
    if not isinstance(value, np.ndarray) or value.flags.writeable:
        return False
    base: object = value
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, bytes)


def reject_masked(value: object, name: str) -> None:
    """Raise `ValidationError` if `value` is a numpy masked array.

    numpy reads a masked array as its raw data, masked entries included: taking it would
    silently use values the caller marked as missing.
    """
    if isinstance(value, np.ma.MaskedArray):
        raise ValidationError(f"{name} is a numpy masked array; vfm does not read masks (the masked entries "
                              f"would be used as they are): pass a plain array, e.g. the masked array's "
                              f".compressed() or .filled(value)")


def random_generator(seed: Any, name: str = "seed") -> np.random.Generator:
    """`numpy.random.default_rng(seed)`, or a `ValidationError` naming `name` for what numpy
    cannot seed from (a string, a negative or fractional number, ...)."""
    if isinstance(seed, bool | np.bool_):
        raise ValidationError(f"{name} must be None, a whole number >= 0, a numpy SeedSequence or Generator, "
                              f"got {seed!r}")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{name} must be None, a whole number >= 0, a numpy SeedSequence or Generator, "
                              f"got {seed!r} ({exc})") from None


def is_real(value: object) -> bool:
    """Whether `value` is a real number (Python or NumPy int or float), not a bool."""
    return not isinstance(value, bool | np.bool_) and isinstance(value, int | float | np.integer | np.floating)
