r"""One Newton system's per-job work in low-rank form, compiled as one pass over the jobs: the bounds'
curvature, the Hessian's columns and their scaling, the blocks' low-rank factors, the capacity Gram
matrix's terms and the efficiency border's loads (`vfm.planner.solve.ipm.newton.NewtonSystem.factor`
on one GPU type, its Gram matrix in pieces).

The same per-job operations as `entries.bounds_curvature`, `entries.scaled_columns`,
`low_rank.low_rank_factor`, `low_rank.curved_jobs`, `low_rank.gram_pieces` and
`low_rank.row_free_loads` called one after the other, in the same order, so the same floats; a job's
numbers stay in the core's caches between the steps instead of six passes over the (n, S', T)
arrays, and one call instead of six.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit
from vfm.planner._kernels.entries import job_columns, job_diagonal
from vfm.planner._kernels.low_rank import _block_times_diagonal, _job_root, _largest_square, _root_times


@jit.over_jobs
def low_rank_system(active: np.ndarray, y: np.ndarray, s_hi: np.ndarray, z_lo: np.ndarray, z_hi: np.ndarray,
                    spread: np.ndarray, progress: np.ndarray, weights: np.ndarray, u: np.ndarray, row: np.ndarray,
                    pace: np.ndarray, regularization: float, g: np.ndarray, limit: float, diagonal: np.ndarray,
                    curvature: np.ndarray, root: np.ndarray, scaled: np.ndarray, columns: np.ndarray,
                    shrink: np.ndarray, curved: np.ndarray, rows: np.ndarray, gram_diagonal: np.ndarray,
                    row_free: np.ndarray) -> None:
    r"""For every job, in one pass: `diagonal` := `entries.bounds_curvature`'s; `curvature`, `root`,
    `scaled` := `entries.scaled_columns`' with the rows' column `row[i]` times `pace` (`row` (n,), the
    square root of the FTF and efficiency rows' curvature); `columns`, `shrink` :=
    `low_rank.low_rank_factor`'s; `curved[i]` := `low_rank.curved_jobs`' flag at `limit`; `rows`,
    `gram_diagonal` := `low_rank.gram_pieces`' for :math:`x = g \circ` `root` (the curved jobs' rows
    0, their blocks `curved_blocks`'s); and, unless `row_free` is empty, `row_free[i]` :=
    `low_rank.row_free_loads`' :math:`a_i` for the rows' coefficients `pace`."""
    n, scenarios, rounds = progress.shape
    k = curvature.shape[1]
    extra = k > scenarios
    partial = np.zeros((jit.chunks(n), rounds))
    for chunk in prange(jit.chunks(n)):
        gram = np.empty((k, k))
        rotation = np.empty((k, k))
        squared = np.empty(k)
        own_gram = np.empty((scenarios, scenarios))
        own_rotation = np.empty((scenarios, scenarios))
        own_column = np.empty((scenarios, rounds))
        own_shrink = np.empty(scenarios)
        along = np.empty(scenarios)
        x = np.empty(rounds)
        sums = partial[chunk]
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            job_diagonal(active[i], y[i], s_hi[i], z_lo[i], z_hi[i], spread[i], diagonal[i])
            job_columns(progress[i], weights[i], u[i], diagonal[i], regularization, curvature[i], root[i])
            if extra:
                for t in range(rounds):
                    curvature[i, scenarios, t] = row[i] * pace[i, t]
            for s in range(k):
                for t in range(rounds):
                    scaled[i, s, t] = curvature[i, s, t] * root[i, t]
            column = columns[i]
            _job_root(scaled[i], gram, rotation, column, shrink[i])
            curved[i] = not _largest_square(column, squared) <= limit
            if curved[i]:
                rows[i] = 0.0
            else:
                for p in range(k):
                    weight = 1.0 / np.sqrt(1.0 + squared[p])
                    for t in range(rounds):
                        rows[i, p, t] = weight * column[p, t] * (g[i, t] * root[i, t])
                for t in range(rounds):
                    scale = g[i, t] * root[i, t]
                    sums[t] += scale * scale
            if row_free.shape[0]:
                for t in range(rounds):
                    x[t] = root[i, t] * pace[i, t]
                _job_root(scaled[i, :scenarios], own_gram, own_rotation, own_column, own_shrink)
                _root_times(own_column, own_shrink, x, along, 1)
                total = 0.0
                for t in range(rounds):
                    total += x[t] * x[t]
                row_free[i] = total
    jit.add_chunks(partial, gram_diagonal)


@jit.compiled
def curved_blocks(columns: np.ndarray, shrink: np.ndarray, g: np.ndarray, root: np.ndarray, curved: np.ndarray,
                  weighted: np.ndarray) -> int:
    r"""The curved jobs' blocks of `low_rank.gram_pieces`: the next of `weighted` (m, T, T), in job
    order, := :math:`F_i \operatorname{diag}(g_i \circ \text{root}_i)` for each job `curved`; returns
    how many."""
    n, rounds = g.shape
    x = np.empty(rounds)
    m = 0
    for i in range(n):
        if curved[i]:
            for t in range(rounds):
                x[t] = g[i, t] * root[i, t]
            _block_times_diagonal(columns[i], shrink[i], x, weighted[m])
            m += 1
    return m
