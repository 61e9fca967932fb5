r"""Vectorized evaluation of cumulative utilities and NSWOT over scenarios and allocations.

A planner evaluates the same few quantities many times: for every forecast
scenario :math:`s` of the utilities and every candidate allocation :math:`a`, buyer `i`'s
cumulative utility

.. math:: U_{sai} = c_i + \sum_{j,t} u_{sijt}\, x_{aijt},

the Nash social welfare over time (NSWOT) and its gradient with respect to the allocation

.. math::

    F_{sa} = \sum_i B_i \log U_{sai}, \qquad
    \frac{\partial F_{sa}}{\partial x_{aijt}} = \frac{B_i\, u_{sijt}}{U_{sai}},

and the sample-average (SAA) objective of the stochastic planner with its gradient

.. math::

    \bar F_a = \frac1S \sum_s F_{sa}, \qquad
    \frac{\partial \bar F_a}{\partial x_{aijt}} = \frac1S \sum_s \frac{B_i\, u_{sijt}}{U_{sai}} .

With :math:`S = 1` and the posterior-mean utilities this is the certainty-equivalent objective.

Shapes and broadcasting
-----------------------
``utilities`` is either one market, shape ``(n, m, T)``, or a batch of `S` scenarios, shape
``(S, n, m, T)``. ``allocation`` is either one allocation, shape ``(n, m, T)``, or a batch of
`A` allocations, shape ``(A, n, m, T)``. The trailing ``(n, m, T)`` must agree. Every scenario
is paired with every allocation (an outer product over the two batch axes, not NumPy
broadcasting), and a batch axis appears in the result exactly when the corresponding argument
has one:

============================  ======================  =============================
utilities, allocation         `cumulative_utilities`  `nswot`, `expected_nswot`
============================  ======================  =============================
(n, m, T),    (n, m, T)       (n,)                    (),      ()
(S, n, m, T), (n, m, T)       (S, n)                  (S,),    ()
(n, m, T),    (A, n, m, T)    (A, n)                  (A,),    (A,)
(S, n, m, T), (A, n, m, T)    (S, A, n)               (S, A),  (A,)
============================  ======================  =============================

`nswot_gradient` has the shape of `nswot` followed by ``(n, m, T)``; `expected_nswot_gradient`
has the shape of ``allocation``. An unbatched ``utilities`` counts as a single scenario
(:math:`S = 1`) in the expectation. ``budgets`` (`B`, default all ones) and ``base_utility``
(`c`, default zeros) have shape ``(n,)`` and are shared by all scenarios.

Where NSWOT is not finite
-------------------------
All inputs are non-negative, so :math:`U_{sai} \ge 0`. Where some :math:`U_{sai} = 0`, the
NSWOT :math:`F_{sa}` is ``-inf`` (no NaN, no warning). The gradient entry of such a buyer is
the one-sided derivative into the feasible region: ``+inf`` where :math:`u_{sijt} > 0` and
``0`` where :math:`u_{sijt} = 0` (the objective does not depend on that entry). The same rule
holds for every term of the expected gradient, so it is ``+inf`` where any scenario
contributes ``+inf``.

Backends
--------
Every function takes ``backend``:

* ``"numpy"``: fully vectorized NumPy (batched matrix products, no Python loop over buyers,
  scenarios or allocations);
* ``"jax"``: single-market kernels (utilities, NSWOT, gradient, weights :math:`B_i / U_i`)
  mapped with `jax.vmap` over allocations and then scenarios and compiled with `jax.jit`; the
  expected gradient contracts the mapped ``(S, A, n)`` weights with the utilities instead of
  averaging ``(S, A, n, m, T)`` gradients. The compiled functions are cached for the life of
  the process; JAX re-compiles for every new combination of ``(S, A, n, m*T)``, so the first
  call for a shape pays the compile time of every function. It computes in float64
  inside a thread-local ``jax.enable_x64(True)`` scope (``jax.experimental.enable_x64`` on
  older JAX), which leaves the caller's global ``jax_enable_x64`` setting untouched. This
  package imports JAX on first use, not at import time;
* ``"auto"`` (the default): ``"numpy"``. It never starts JAX, which on a GPU preallocates most of
  the device's memory when it starts; ask for ``"jax"`` to use it (and set
  ``XLA_PYTHON_CLIENT_PREALLOCATE=false`` to keep it from taking the memory up front; see
  `vfm.utility.backend.automatic_backend`).

Both backends return NumPy float64 arrays (or a NumPy float64 scalar for 0-d results) and agree
to rounding (about :math:`10^{-15}` relative), with one exception: XLA on CPU flushes subnormal
numbers (magnitude below about :math:`2.2 \times 10^{-308}`) to zero, so where a product
:math:`u x`, a :math:`c_i` or a :math:`U_{sai}` is subnormal the JAX backend sees 0 (and may
return ``-inf`` where NumPy returns a finite value). Quotients :math:`B_i / U_{sai}` that
overflow become ``inf`` in both backends, silently.

Inputs are validated once, here, at the boundary: real numbers of the documented shapes, no
NaN or infinity, :math:`u, c, x \ge 0` and :math:`B > 0`. A violation raises
`vfm.errors.ValidationError` naming the argument.

Modules
-------
`vfm.utility.evaluate` holds the functions; `vfm.utility.inputs` validates their arguments,
`vfm.utility.numpy_kernels` and `vfm.utility.jax_kernels` compute on each backend, and
`vfm.utility.backend` chooses the backend.

Examples
--------
>>> import numpy as np
>>> from vfm.utility import cumulative_utilities, nswot
>>> u = np.array([[[1.0, 2.0]], [[3.0, 0.0]]])         # n=2 buyers, m=1 good, T=2 periods
>>> scenarios = np.stack([u, 2 * u])                     # S=2
>>> x = np.full((2, 1, 2), 0.5)                          # the equal split
>>> cumulative_utilities(scenarios, x, backend="numpy")  # shape (S, n)
array([[1.5, 1.5],
       [3. , 3. ]])
>>> nswot(scenarios, np.stack([x, 2 * x]), backend="numpy").shape  # (S, A)
(2, 2)
"""

from vfm.utility.backend import Backend, available_backends
from vfm.utility.evaluate import (
    cumulative_utilities,
    expected_nswot,
    expected_nswot_gradient,
    nswot,
    nswot_gradient,
)

__all__ = [
    "Backend",
    "available_backends",
    "cumulative_utilities",
    "expected_nswot",
    "expected_nswot_gradient",
    "nswot",
    "nswot_gradient",
]
