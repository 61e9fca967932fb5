"""Which of a run of i.i.d. epochs end within a time budget, drawn exactly by bisection over regime counts.

Where a renewal process (`vfm.forecast.renewal`) could end many thousands of epochs in what is left
of a round (epoch durations far apart, as 1e-5 s and 0.1 s), drawing them one by one costs time and
memory in proportion to their number. `fit_by_bisection` draws the same outcome from a few
multinomial and multivariate hypergeometric draws per cell instead.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vfm._validation import FloatArray

__all__ = ["fit_by_bisection"]

# Blocks stay under numpy's hypergeometric limit (1e9).
_BISECTION_BLOCK = 1 << 29


def fit_by_bisection(
    rng: np.random.Generator,
    mix: FloatArray,
    durations: FloatArray,
    time_left: FloatArray,
    left: NDArray[np.int64],
    chain: FloatArray,
    closing: NDArray[np.intp],
) -> tuple[NDArray[np.int64], FloatArray, FloatArray]:
    """The epochs of each cell that end within ``time_left[k]``: (how many, their seconds, the
    duration of the first that does not fit, NaN if all ``left[k]`` fit), drawn exactly.

    Blocks of up to `_BISECTION_BLOCK` i.i.d. epochs are drawn as regime counts (a multinomial);
    a block that fits is taken whole; in the first block that does not, the epochs that fit are a
    prefix, found by bisection: given a block's counts, the counts of its first half are
    multivariate hypergeometric (the epochs are exchangeable), so each halving costs one draw per
    regime. The cost is O(R log2 block) draws per cell, whatever the number of epochs that fit;
    the epochs after the first that does not fit are never used (the next round draws afresh).

    ``mix`` and ``durations`` (cells, R) are each cell's regime probabilities and epoch durations;
    ``chain`` (R, cells) and ``closing`` (cells,) give the same probabilities as a chain of
    binomials (`_multinomial_counts`).
    """
    cells = mix.shape[0]
    index = np.arange(cells)
    fitted = np.zeros(cells, dtype=np.int64)
    seconds = np.zeros(cells)
    carry = np.full(cells, np.nan)
    todo = index[left > 0]
    while todo.size:
        size = np.minimum(left[todo] - fitted[todo], _BISECTION_BLOCK)
        counts = _multinomial_counts(rng, size, chain[:, todo], closing[todo])
        total = (counts * durations[todo]).sum(axis=1)
        whole = seconds[todo] + total <= time_left[todo]
        fitted[todo[whole]] += size[whole]
        seconds[todo[whole]] += total[whole]
        split = ~whole
        # Bisect the blocks that overshoot: invariant, the block's epochs before `lo` fit, and its
        # end does not.
        cell, counts, size = todo[split], counts[split], size[split]
        while cell.size:
            half = size // 2
            first = _hypergeometric_counts(rng, counts, half)
            first_s = (first * durations[cell]).sum(axis=1)
            fits = seconds[cell] + first_s <= time_left[cell]
            fitted[cell[fits]] += half[fits]
            seconds[cell[fits]] += first_s[fits]
            counts = np.where(fits[:, None], counts - first, first)
            size = np.where(fits, size - half, half)
            last = size == 1
            # One epoch left in the block: the first that does not fit.
            carry[cell[last]] = (counts[last] * durations[cell[last]]).sum(axis=1)
            cell, counts, size = cell[~last], counts[~last], size[~last]
        todo = todo[whole & (fitted[todo] < left[todo])]
    return fitted, seconds, carry


def _multinomial_counts(rng: np.random.Generator, epochs: NDArray[np.int64], chain: FloatArray,
                        closing: NDArray[np.intp]) -> NDArray[np.int64]:
    """Regime counts of ``epochs[k]`` i.i.d. epochs of cell `k`, shape (cells, R), drawn as a chain
    of binomials (``chain[b, k]``: regime b's share of the epochs not placed yet; the closing
    regime ``closing[k]`` takes the rest)."""
    counts = np.zeros((epochs.size, chain.shape[0]), dtype=np.int64)
    left = epochs.astype(np.int64).copy()
    for b in range(chain.shape[0]):
        taken = rng.binomial(left, chain[b])
        counts[:, b] = taken
        left -= taken
    counts[np.arange(epochs.size), closing] += left
    return counts


def _hypergeometric_counts(rng: np.random.Generator, counts: NDArray[np.int64],
                           sample: NDArray[np.int64]) -> NDArray[np.int64]:
    """Regime counts of the first ``sample[k]`` of a random order of the epochs ``counts[k]``
    (multivariate hypergeometric, as a chain of hypergeometric draws), shape of `counts`."""
    first = np.zeros_like(counts)
    need = sample.astype(np.int64).copy()
    rest = counts.sum(axis=1)
    for b in range(counts.shape[1] - 1):
        rest -= counts[:, b]
        first[:, b] = rng.hypergeometric(counts[:, b], rest, need)
        need -= first[:, b]
    first[:, -1] = need
    return first
