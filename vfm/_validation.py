"""Input checks used at the library's boundary (scikit-learn style: check once, say what to fix)."""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
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
    if raw.dtype == object:
        _refuse_wide_integers(raw, name)
    if raw.dtype == object or not (np.issubdtype(raw.dtype, np.integer) or np.issubdtype(raw.dtype, np.floating)):
        raise ValidationError(f"{name} must hold real numbers, got dtype {raw.dtype}")
    return np.asarray(raw, dtype=np.float64)


def _refuse_wide_integers(raw: np.ndarray, name: str) -> None:
    """Name the first integer beyond int64 in the object array `raw`: NumPy holds such a number as
    an object, and "dtype object" alone would not tell the caller which entry to fix."""
    for index, item in np.ndenumerate(raw):
        if beyond_int64(item):
            at = f"[{', '.join(map(str, index))}]" if index else ""
            raise ValidationError(f"{name}{at} must be a real number vfm can read, got {shown_value(item)}")


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
    check_shape(name, raw, shape)
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


def check_shape(name: str, value: Any, shape: Sequence[int | None], why: str = "") -> None:
    """Raise unless `value` (an array, or what ``np.shape`` reads) has shape `shape` (``None``:
    any length along that axis): ``"budgets must have shape (3){why}, got (4,)"``."""
    got = np.shape(value)
    if len(got) != len(shape) or any(want is not None and g != want for g, want in zip(got, shape, strict=False)):
        expected = "(" + ", ".join("any" if s is None else str(s) for s in shape) + ")"
        raise ValidationError(f"{name} must have shape {expected}{why}, got {got}")


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
    if not bad.any():  # the usual case, and several times cheaper than the search
        return None
    return int(np.flatnonzero(bad)[0])


#: The integers vfm reads as numbers: int64's range. NumPy reads a Python int outside it as an
#: object (``np.isfinite(10**30)`` raises) or not at all (``float(10**400)`` overflows), so one
#: rule at the boundary keeps every later step on NumPy's numbers; a count this large is a mistake,
#: and a real number this large can be given as a float (``1e30``), whose own bounds then apply.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def is_whole(value: object) -> bool:
    """Whether `value` is an integer (Python or NumPy), not a bool: the type check of every
    "positive whole number" argument, whose range and message the caller states (a range past
    int64 too: `vfm.parameters.Whole` refuses one, as NumPy cannot hold it)."""
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def beyond_int64(value: object) -> bool:
    """Whether `value` is an integer outside int64's range (``10**30``, ``-(10**400)``), which vfm
    does not read as a number (`INT64_MAX`)."""
    return is_whole(value) and not INT64_MIN <= int(value) <= INT64_MAX  # type: ignore[call-overload]


def shown_value(value: object) -> str:
    """`value` as a message shows it: its repr, an integer beyond int64 marked as such, and one
    too long to write (past 4300 digits Python refuses) by its size."""
    note = " (beyond int64: vfm reads integers from -2**63 to 2**63 - 1)" if beyond_int64(value) else ""
    try:
        return repr(value) + note
    except ValueError:  # an integer, or a container holding one, too long to write
        if note:
            magnitude = round(math.log10(abs(int(value))))  # type: ignore[call-overload]
            return f"an integer of about {'-' if int(value) < 0 else ''}10**{magnitude}{note}"  # type: ignore[call-overload]
        return f"a {type(value).__name__} holding an integer too large to show"


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
    """Whether `value` is a real number NumPy reads as one: a float (Python or NumPy) or an
    integer within int64 (`beyond_int64`), not a bool. So ``np.isfinite(value)`` and ``float(value)``
    work on every value it admits."""
    if is_whole(value):
        return not beyond_int64(value)
    return not isinstance(value, bool | np.bool_) and isinstance(value, float | np.floating)


def finite_float(value: Any) -> float | None:
    """`value` as a finite float when it is a real number (`is_real`), else None: a bool, a string,
    NaN, an infinity, and an integer beyond int64 (``10**30``, ``10**400``) are None."""
    if not is_real(value):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def checked_job_id(job_id: Any) -> Hashable:
    """`job_id` as a policy keys it: a string, a whole number (Python or NumPy, not a bool; a NumPy
    integer becomes the equal Python int) or a tuple of them (nested tuples too).

    Raises
    ------
    ValidationError
        Naming the id and what is wrong with it: a float (NaN is not equal to itself, and 1.0 would
        be the same key as 1), a bool (True would be the same key as 1), any other type.
    """
    if isinstance(job_id, str):
        return job_id
    if is_whole(job_id):  # a key, not a quantity: any size (a UUID's int is 128 bits)
        return int(job_id)
    if isinstance(job_id, tuple):
        try:
            return tuple(checked_job_id(part) for part in job_id)
        except ValidationError:
            pass
    kind = type(job_id).__name__
    raise ValidationError(f"job_id must be a string, a whole number (not a bool) or a tuple of them, got {kind} "
                          f"{job_id!r}" + (" (NaN is not equal to itself: it could never be found again)"
                                           if isinstance(job_id, float | np.floating) and job_id != job_id else ""))


def checked_regime_pairs(regimes: Any, what: str, *, max_seconds: float) -> tuple[tuple[float, float], ...]:
    """A regime set (batch size -> seconds per epoch, as a mapping or (batch size, seconds) pairs)
    as a tuple of float pairs in the order given, each entry a real number (not a bool, not a
    string): batch sizes finite and distinct, seconds finite, > 0 and at most `max_seconds`.

    Raises a `ValidationError` starting with `what` (the argument as the caller wrote it).
    """
    example = "as {32: 60.0} or [(32, 60.0)]"
    try:
        items = list(regimes.items()) if isinstance(regimes, Mapping) else [tuple(p) for p in regimes]
    except TypeError:
        raise ValidationError(f"{what} must map batch sizes to epoch durations in seconds, {example}, got "
                              f"{type(regimes).__name__} {regimes!r}") from None
    if isinstance(regimes, str | bytes) or any(len(item) != 2 for item in items):
        raise ValidationError(f"{what} must map batch sizes to epoch durations in seconds, {example}, got "
                              f"{regimes!r}")
    if not items:
        raise ValidationError(f"{what} is empty: a job needs at least one regime (batch size with its epoch duration)")
    for label, seconds in items:
        for name, value in (("batch size", label), ("epoch duration", seconds)):
            if not is_real(value):
                raise ValidationError(f"{what} must map batch sizes to epoch durations in seconds (real numbers, not "
                                      f"bools or strings), {example}; got {name} {shown_value(value)} of type "
                                      f"{type(value).__name__}")
    pairs = tuple((float(label), float(seconds)) for label, seconds in items)
    labels = [label for label, _ in pairs]
    if len(set(labels)) != len(labels):
        raise ValidationError(f"{what} lists a batch size twice: {labels}")
    for label, seconds in pairs:
        if not np.isfinite(label):
            raise ValidationError(f"{what} has a batch size that is not finite")
        if not (np.isfinite(seconds) and seconds > 0):
            raise ValidationError(f"{what} gives batch size {label:g} an epoch duration of {seconds:g} s; "
                                  f"regime_durations must be > 0 seconds")
        if seconds > max_seconds:
            raise ValidationError(f"{what} gives batch size {label:g} an epoch duration of {seconds:g} s, more than "
                                  f"the {max_seconds:g} s a job may run in all")
    return pairs
