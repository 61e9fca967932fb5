"""The Numba compilation settings every planner kernel is compiled with (`vfm.planner._kernels`).

Numba compiles each kernel once per machine (``cache=True`` keeps the machine code beside its
module); the kernels take float64 C-contiguous arrays, which is what their callers pass.
"""

from __future__ import annotations

import numba

#: No fast-math: reassociating the short sums changed the last digits enough that, at the end of
#: some 900-job solves, the Newton systems' conjugate gradients no longer converged (the solve
#: stopped at a relative gap of 1.1e-9 instead of 1e-9). NumPy's error model: a division by zero
#: gives inf or NaN as in NumPy (the solver guards against them) instead of raising, which also
#: lets loops with divisions vectorize.
compiled = numba.njit(cache=True, nogil=True, error_model="numpy")
#: Helpers called from the kernels: inlined, so that their loops see the caller's arrays.
inlined = numba.njit(cache=True, nogil=True, error_model="numpy", inline="always")
