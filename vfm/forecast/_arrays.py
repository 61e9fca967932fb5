"""Arrays at the boundary: immutable results, and no masked array taken for its raw data.

`read_only` is how `vfm.forecast.JobStates`, `vfm.planner.Plan`, `vfm.planner.PlanningProgram`
and the policy's state hand out arrays: a copy whose memory is an immutable `bytes` object, so
that neither the array nor anything reached from it (its ``base``) can be made writable again
with ``setflags(write=True)``, and no caller's edit can reach the object that handed it out.
"""

from __future__ import annotations

from typing import Any, TypeVar

import numpy as np

from vfm.errors import ValidationError

Array = TypeVar("Array", bound=np.ndarray)


def is_read_only(array: np.ndarray) -> bool:
    """Whether `array`'s memory is an immutable `bytes` object (what `read_only` returns)."""
    base: Any = array
    while isinstance(base, np.ndarray):
        base = base.base
    return isinstance(base, bytes) and not array.flags.writeable


def read_only(array: Array) -> Array:
    """`array` as a read-only array that cannot be made writable again; itself if it already is.

    A copy (of a writable array, or of one whose memory its owner could still write) backed by
    an immutable `bytes` object: ``setflags(write=True)`` raises on it and on its ``base``.
    Object arrays (which `bytes` cannot hold) are copied and flagged read-only instead.
    """
    if is_read_only(array):
        return array
    if array.dtype.hasobject:
        copy = np.array(array, copy=True)
        copy.setflags(write=False)
        return copy  # type: ignore[return-value]
    frozen = np.frombuffer(np.ascontiguousarray(array).tobytes(), dtype=array.dtype).reshape(array.shape)
    return frozen  # type: ignore[return-value]


def reject_masked(value: object, name: str) -> None:
    """Raise `ValidationError` if `value` is a numpy masked array.

    numpy reads a masked array as its raw data, masked entries included: taking it would
    silently use values the caller marked as missing.
    """
    if isinstance(value, np.ma.MaskedArray):
        raise ValidationError(f"{name} is a numpy masked array; vfm does not read masks (the masked entries "
                              f"would be used as they are): pass a plain array, e.g. the masked array's "
                              f".compressed() or .filled(value)")
