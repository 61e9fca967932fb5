r"""The planner's compiled layer: Numba kernels of `vfm.planner.solve.ipm.method`'s iterations, of
`vfm.planner.solve.polish`'s Lagrangian minimizer, of the wait limit's commitments
(`vfm.planner.program.wait_floor`) and of the rounding's walk (`vfm.planner.rounding`).

Each step of an interior-point iteration over hundreds of jobs is one loop over the jobs with a
block's few numbers in registers, not a chain of whole-array NumPy passes (one call and one
temporary array each). The kernels are pure functions of their inputs, except that results are
written to ``out`` arrays the caller owns (the solver reuses its buffers across iterations). By
what they compute:

- `vfm.planner._kernels.low_rank`: the Newton blocks' low-rank factor and its block solves;
- `vfm.planner._kernels.dense`: the dense (Cholesky) factor and its block solves;
- `vfm.planner._kernels.one_type_rows`: the one-type-per-round rows over GPU types;
- `vfm.planner._kernels.polish_types`: the polish's products and block inverses over GPU types;
- `vfm.planner._kernels.system`: one Newton system's per-job steps in low-rank form, in one pass;
- `vfm.planner._kernels.entries`: a point's evaluation and the Newton system's entry-wise passes;
- `vfm.planner._kernels.lagrangian`: the Lagrangian minimizer and the matched row multipliers;
- `vfm.planner._kernels.waits`: the wait limit's committed rounds;
- `vfm.planner._kernels.placement`: the rounding's walk over the window's rounds;
- `vfm.planner._kernels.jit`: the compilation settings they share;
- `vfm.planner._kernels.threads`: the threads they run on.

The kernels over jobs run on several threads within `kernel_threads` (`jit.over_jobs`), chunk by
chunk, with the same results bit for bit on any number of threads.
"""

from vfm.planner._kernels.dense import dense_factor, dense_inverse_blocks, dense_subtract_inverse_blocks
from vfm.planner._kernels.entries import (
    bounds_curvature,
    box_residual,
    evaluate_entries,
    hessian_times,
    log_steps,
    moved_entries,
    newton_back,
    newton_rhs,
    row_steps,
    scaled_columns,
)
from vfm.planner._kernels.lagrangian import lagrangian_minimizer, matched_rows
from vfm.planner._kernels.low_rank import (
    curved_jobs,
    gram_pieces,
    inverse_blocks,
    low_rank_factor,
    row_free_loads,
    subtract_inverse_blocks,
    times_diagonal,
)
from vfm.planner._kernels.one_type_rows import add_group_outer, add_round_sums, typed_gram
from vfm.planner._kernels.system import curved_blocks, low_rank_system
from vfm.planner._kernels.threads import kernel_threads

__all__ = [
    "add_group_outer",
    "add_round_sums",
    "bounds_curvature",
    "box_residual",
    "curved_blocks",
    "curved_jobs",
    "dense_factor",
    "dense_inverse_blocks",
    "dense_subtract_inverse_blocks",
    "evaluate_entries",
    "gram_pieces",
    "hessian_times",
    "inverse_blocks",
    "kernel_threads",
    "lagrangian_minimizer",
    "log_steps",
    "low_rank_factor",
    "low_rank_system",
    "matched_rows",
    "moved_entries",
    "newton_back",
    "newton_rhs",
    "row_free_loads",
    "row_steps",
    "scaled_columns",
    "subtract_inverse_blocks",
    "times_diagonal",
    "typed_gram",
]
