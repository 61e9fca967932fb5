"""The numerical machinery that vfm's market solvers and its planner share.

- `vfm._numerics.jit`: the compiled kernels (Numba, cached per machine) and the interpreted tier
  that serves while they compile;
- `vfm._numerics.linalg`: the linear algebra of the interior-point solvers (preconditioned
  conjugate gradients, Cholesky and LU factorizations);
- `vfm._numerics.interior_point`: the interior-point driver that `vfm.solvers.schur_ipm` (markets)
  and the planner's interior-point backend (planning programs) share.

Each is imported as its module, so that a caller loads only what it uses (Numba with the kernels).
"""
