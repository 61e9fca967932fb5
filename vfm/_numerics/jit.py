"""vfm's compiled kernels, and the interpreted tier that serves while they compile.

Every Numba kernel of vfm is compiled with `SETTINGS` (``cache=True``: compiled once per machine,
then loaded from the cache). A kernel called from Python is a `Kernel`: its compiled form, or, in a
thread inside `interpreting`, the same Python function run by the interpreter with every kernel it
calls replaced by its own interpreted twin (`twin`). Both run the same IEEE-754 operations in the
same order (no fast-math, NumPy's error model), so a kernel returns the same floats either way;
only the time differs (a small window's kernels run interpreted in about a tenth of a second, where
compiling them takes tens of seconds). The planner uses the tier while a fresh process compiles
its kernels in the background (`vfm.planner.kernel_loading`).

Helpers called only from other kernels (`inlined`) stay plain Numba functions: a kernel's
interpreted twin calls their twins.
"""

from __future__ import annotations

import functools
import math
import threading
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numba
import numpy as np
from numba.core.dispatcher import Dispatcher

#: No fast-math: reassociating the short sums changed the last digits enough that, at the end of
#: some 900-job solves, the Newton systems' conjugate gradients no longer converged (the solve
#: stopped at a relative gap of 1.1e-9 instead of 1e-9); it would also part the compiled floats
#: from the interpreted ones. NumPy's error model: a division by zero gives inf or NaN as in NumPy
#: (the solvers guard against them) instead of raising, which also lets loops with divisions vectorize.
SETTINGS: dict[str, Any] = {"cache": True, "nogil": True, "error_model": "numpy"}

#: A helper called from kernels only. Not inlined at Numba's level (``inline="always"`` doubled
#: the compilation time); LLVM inlines the small ones where it pays.
inlined = numba.njit(**SETTINGS)

_local = threading.local()  # `interpreting`: whether the calling thread runs kernels interpreted


@contextmanager
def interpreting() -> Iterator[None]:
    """Within the scope, the calling thread runs every `Kernel` interpreted (other threads are not affected)."""
    before = getattr(_local, "interpreting", False)
    _local.interpreting = True
    try:
        with np.errstate(all="ignore"):  # as compiled code under NumPy's error model: inf and NaN, no warnings
            yield
    finally:
        _local.interpreting = before


def is_interpreting() -> bool:
    """Whether the calling thread is inside `interpreting`."""
    return bool(getattr(_local, "interpreting", False))


class Kernel:
    """A kernel called from Python: `compiled(*args)`, or inside `interpreting` the interpreted twin
    of `function` (`twin`)."""

    def __init__(self, function: Callable[..., Any], compiled: Callable[..., Any]) -> None:
        functools.update_wrapper(self, function)
        self.function = function
        self.compiled = compiled

    def __call__(self, *args: Any) -> Any:
        if getattr(_local, "interpreting", False):
            return self.interpreted(*args)
        return self.compiled(*args)

    @functools.cached_property
    def interpreted(self) -> Callable[..., Any]:
        return twin(self.function)


def kernel(function: Callable[..., Any]) -> Kernel:
    """`function` compiled with `SETTINGS` (at its first call, or loaded from the cache), as a `Kernel`."""
    return Kernel(function, numba.njit(**SETTINGS)(function))


_twins: dict[Callable[..., Any], Callable[..., Any]] = {}
_twins_lock = threading.RLock()


def twin(function: Callable[..., Any]) -> Callable[..., Any]:
    """`function` for the interpreter: the same code over a copy of its module's names in which every
    Numba function, `Kernel` and vfm module it refers to is replaced by its interpreted twin
    (``numba.prange`` runs as ``range`` in the interpreter)."""
    with _twins_lock:
        return _twin(function)


def _twin(function: Callable[..., Any]) -> Callable[..., Any]:
    if function in _twins:
        return _twins[function]
    names = dict(function.__globals__)
    copy = types.FunctionType(function.__code__, names, function.__name__, function.__defaults__,
                              function.__closure__)
    _twins[function] = copy  # before the names: kernels that refer to each other end
    for name in _global_names(function.__code__):
        if name in names:
            names[name] = _interpreted(names[name])
    return copy


def _global_names(code: types.CodeType) -> set[str]:
    """The names `code` and the functions defined in it look up (a superset of its globals)."""
    found = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found |= _global_names(constant)
    return found


def _interpreted(value: Any) -> Any:
    if value is np:
        return _NUMPY_TWIN
    if isinstance(value, Kernel):
        return _twin(value.function)
    if isinstance(value, Dispatcher):
        return _twin(value.py_func)
    if isinstance(value, types.ModuleType) and value.__name__.startswith("vfm."):
        return _ModuleTwin(value)
    return value


class _ModuleTwin:
    """A vfm module as an interpreted kernel sees it: its kernels as their twins, the rest as they are."""

    def __init__(self, module: types.ModuleType) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Any:
        with _twins_lock:
            value = _interpreted(getattr(self._module, name))
        setattr(self, name, value)
        return value


def _log(x: Any) -> Any:
    """`numpy.log` as compiled code computes it: the C library's ``log`` on a scalar (NumPy's own
    vectorized logarithm may differ from it in the last bit), NumPy's on an array."""
    if isinstance(x, np.ndarray):
        return np.log(x)
    if x > 0:
        return math.log(x)
    return -math.inf if x == 0 else math.nan


class _NumpyTwin:
    """NumPy as an interpreted kernel sees it: the functions whose compiled form calls the C library
    call it here too (`_log`); everything else is NumPy's."""

    log = staticmethod(_log)

    def __getattr__(self, name: str) -> Any:
        return getattr(np, name)


_NUMPY_TWIN = _NumpyTwin()
