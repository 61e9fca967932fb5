"""Which backend evaluates `vfm.utility`'s functions: NumPy, or JAX where it can be imported.

``backend="auto"`` is NumPy: it never starts JAX (`automatic_backend`), so that it never takes an
accelerator's memory; ``backend="jax"`` asks for JAX. JAX is imported on first use
(`jax_module`), never at import time, so that vfm works without it.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
from typing import Any, Literal

from vfm.errors import ValidationError
from vfm.parameters import OneOf, check

__all__ = ["BACKENDS", "Backend", "automatic_backend", "available_backends", "jax_installed", "jax_module",
           "resolve_backend", "x64_scope"]

#: The values of a ``backend`` argument.
Backend = Literal["auto", "jax", "numpy"]
BACKENDS = ("auto", "jax", "numpy")


@functools.cache
def jax_module() -> Any:
    """Import JAX once; return the module, or None if it cannot be imported."""
    try:
        return importlib.import_module("jax")
    except Exception:  # ImportError, or a broken install failing at import time
        return None


def jax_installed() -> bool:
    """Whether JAX is installed, without importing it (a registry that lists the backends must
    not pay for JAX's import, nor load it into a process that never asks for it)."""
    return importlib.util.find_spec("jax") is not None


def available_backends() -> tuple[str, ...]:
    """The backends usable in this environment.

    Returns
    -------
    tuple of str
        ``("jax", "numpy")`` when JAX can be imported, else ``("numpy",)``. ``backend="auto"``
        picks NumPy (`automatic_backend`). Calling this imports JAX if it is installed (importing
        it starts no device and takes no accelerator memory).

    Examples
    --------
    >>> from vfm.utility import available_backends
    >>> "numpy" in available_backends()
    True
    """
    return ("jax", "numpy") if jax_module() is not None else ("numpy",)


def automatic_backend() -> str:
    """NumPy, whatever is installed: ``backend="auto"`` never starts JAX.

    On a GPU, JAX preallocates 75 % of the device's memory when it first starts a device (even to
    ask which devices there are), and a scheduler process beside training jobs must not take it;
    on a CPU, at the planner's sizes (16 scenarios x 4 allocations x 900 jobs x 20 rounds) the
    jitted JAX kernels measured no faster per call than NumPy on this project's 2-core machine,
    and every new shape costs a compilation. So JAX runs
    only when asked (``backend="jax"``): where it pays (many scenarios and allocations of a large
    market on a GPU), a caller that asks for it sets ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` (or
    ``XLA_PYTHON_CLIENT_MEM_FRACTION``) to keep JAX from taking the memory up front.
    """
    return "numpy"


def resolve_backend(backend: object) -> str:
    """The backend `backend` names, with "auto" chosen; a `ValidationError` if unknown or unavailable."""
    check("backend", backend, OneOf(tuple(BACKENDS)))
    if backend == "auto":
        return automatic_backend()
    if backend == "jax" and jax_module() is None:
        raise ValidationError(
            "backend='jax' needs JAX, which cannot be imported here: pip install 'vfm[jax]', "
            "or pass backend='numpy' (or 'auto')"
        )
    return str(backend)


def x64_scope(jax: Any) -> Any:
    """A context manager that enables float64 in JAX for the current thread only (the caller's
    global ``jax_enable_x64`` setting is left alone)."""
    if hasattr(jax, "enable_x64"):
        return jax.enable_x64(True)
    # JAX before jax.enable_x64 became a context manager.
    return importlib.import_module("jax.experimental").enable_x64(True)
