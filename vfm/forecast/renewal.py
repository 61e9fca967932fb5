"""Whole epochs per round of independent renewal processes, simulated exactly and cheaply.

A renewal process here is one job in one scenario: it runs its remaining epochs back to back from
the start of a window of rounds, each epoch in a regime drawn i.i.d. from a mix and lasting that
regime's duration. `simulate_epochs_per_round` counts the epochs that end in each round, for many
such processes (`Renewals`) at once; `vfm.forecast.DirichletForecaster.sample_epochs_per_round`
describes the methods and their cost.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numpy.typing import NDArray

from vfm._validation import FloatArray
from vfm.forecast.bisection import fit_by_bisection

__all__ = ["Renewals", "simulate_epochs_per_round"]

# Simulation constants (see `DirichletForecaster.sample_epochs_per_round`). An epoch "fits" a round
# when it ends within a relative 1e-9 of the round's end, so that an epoch ending exactly on the
# boundary (as in integer-second profiles) counts despite rounding in the running sums.
_SLACK = 1e-9
# Epochs certain to finish in a round are drawn together (one multinomial) only when there are at
# least this many; fewer are cheaper to draw one by one. Bulk draws repeat at most this many times
# per round (each leaves at most a fraction 1 - d_min/d_max of the time), then one ragged pass
# draws the last epochs one at a time.
_MIN_BULK = 16
_MAX_BULK_PASSES = 4
# Past this many candidate epochs in a round's last pass (durations far apart, as 1e-5 s and
# 0.1 s), the epochs that fit are found by bisection over multinomial counts instead of being
# drawn one by one (`vfm.forecast.bisection.fit_by_bisection`).
_MAX_RAGGED = 4096
# Cells that can fit at most this many epochs per round on average draw the whole window's epochs
# at once (cheaper than stepping round by round).
_FEW_PER_ROUND = 12


class Renewals(NamedTuple):
    """Independent renewal processes, one per cell: cell `k` runs up to ``epochs[k]`` epochs back to
    back from time 0, each in regime `b` with probability ``mix[k, b]`` and lasting
    ``durations[k, b]`` seconds."""

    mix: FloatArray  # (cells, R)
    durations: FloatArray  # (cells, R)
    epochs: NDArray[np.int64]  # (cells,)


def simulate_epochs_per_round(rng: np.random.Generator, renewals: Renewals, rounds: int, round_s: float) -> FloatArray:
    """Epochs completed per round by the renewal processes, shape (cells, rounds).

    Round `t` ends at ``(t + 1) * round_s``. Three exact methods, by cost: a closed form when only
    one duration is possible; all the window's epochs at once when a cell can fit only a few per
    round; round by round, with bulk draws, otherwise.
    """
    mix, durations, remaining = renewals
    cells, n_regimes = mix.shape
    mix = mix.copy()
    # Regimes with the same duration are one regime as far as time goes: merge them (fewer draws).
    for b in range(1, n_regimes):
        for a in range(b):
            same = (durations[:, a] == durations[:, b]) & (mix[:, a] > 0) & (mix[:, b] > 0)
            mix[same, a] += mix[same, b]
            mix[same, b] = 0.0
    support = mix > 0
    shortest = np.where(support, durations, np.inf).min(axis=1)
    ends = round_s * np.arange(1, rounds + 1) * (1 + _SLACK)
    counts = np.zeros((cells, rounds))

    fixed = support.sum(axis=1) == 1
    cumulative = np.minimum(np.floor(ends[None, :] / shortest[fixed, None]), remaining[fixed, None])
    counts[fixed] = np.diff(cumulative, axis=1, prepend=0.0)

    # At most this many epochs can end inside the window, whatever their regimes.
    reachable = np.minimum(np.floor(ends[-1] / shortest), remaining).astype(np.int64)
    few = np.flatnonzero(~fixed & (reachable <= _FEW_PER_ROUND * rounds))
    many = np.flatnonzero(~fixed & (reachable > _FEW_PER_ROUND * rounds))
    if few.size:
        counts[few] = _simulate_window(rng, Renewals(mix[few], durations[few], reachable[few]), rounds, round_s)
    if many.size:
        counts[many] = _simulate_rounds(rng, Renewals(mix[many], durations[many], remaining[many]), rounds, round_s)
    return counts


def _simulate_window(rng: np.random.Generator, renewals: Renewals, rounds: int, round_s: float) -> FloatArray:
    """`simulate_epochs_per_round` for cells that fit few epochs: draw all ``epochs[k]`` that could end in the
    window."""
    mix, durations, epochs = renewals
    cells = mix.shape[0]
    starts = np.cumsum(epochs) - epochs
    cell = np.repeat(np.arange(cells), epochs)
    length = _draw_durations(rng, mix, durations, np.arange(cells), epochs)
    elapsed = np.cumsum(length)
    # Restart the running sum at each cell's first epoch (cells without epochs have none to restart).
    before = np.zeros(cells)
    some = epochs > 0
    before[some] = elapsed[starts[some]] - length[starts[some]]
    elapsed -= np.repeat(before, epochs)
    # Round of each epoch's end; an end within _SLACK of a boundary belongs to the round it closes.
    round_index = np.ceil(elapsed / (round_s * (1 + _SLACK))).astype(np.int64) - 1
    # Ends past the window land in an extra column per cell, dropped below.
    bins = cell * (rounds + 1) + np.minimum(round_index, rounds)
    counts = np.bincount(bins, minlength=cells * (rounds + 1)).reshape(cells, rounds + 1)
    return counts[:, :rounds].astype(np.float64)


def _draw_durations(
    rng: np.random.Generator,
    mix: FloatArray,
    durations: FloatArray,
    cells: NDArray[np.intp],
    epochs: NDArray[np.int64],
) -> FloatArray:
    """Durations of ``epochs[k]`` i.i.d. epochs of each cell ``cells[k]``, concatenated in cell order."""
    n_regimes = mix.shape[1]
    support = mix[cells] > 0
    last = n_regimes - 1 - np.argmax(support[:, ::-1], axis=1)
    # Inverse CDF, one regime at a time (R is small); the last supported regime closes the
    # cumulative sum, so rounding in it can never select a regime outside the support.
    cumulative = np.cumsum(mix[cells], axis=1)
    uniform = rng.random(int(epochs.sum()))
    # Flat index cell * R + regime into the durations (a 1-D take is cheaper than a 2-D gather).
    index = np.repeat(cells * n_regimes, epochs)
    for b in range(int(last.max(initial=0))):
        index += uniform >= np.repeat(np.where(b < last, cumulative[:, b], np.inf), epochs)
    return durations.ravel().take(index)


def _simulate_rounds(rng: np.random.Generator, renewals: Renewals, rounds: int, round_s: float) -> FloatArray:
    """`simulate_epochs_per_round` round by round, for cells that fit many epochs per round."""
    mix, durations, remaining = renewals
    cells, n_regimes = mix.shape
    support = mix > 0
    shortest = np.where(support, durations, np.inf).min(axis=1)
    longest = np.where(support, durations, 0.0).max(axis=1)
    # Multinomial draws as a chain of binomials, the same for every round: each regime but the
    # likeliest takes Binomial(left, its share of the probability not yet placed), and the
    # likeliest takes what is left (binomials of small probability are the cheapest to draw).
    likeliest = np.argmax(mix, axis=1)
    others = np.where(np.arange(n_regimes) == likeliest[:, None], 0.0, mix)
    unplaced = mix[np.arange(cells), likeliest][:, None] + others[:, ::-1].cumsum(axis=1)[:, ::-1]
    chain = np.clip(others / np.maximum(unplaced, 1e-300), 0.0, 1.0).T.copy()
    closing_seconds = durations[np.arange(cells), likeliest]
    seconds_by_regime = durations.T.copy()

    now = np.zeros(cells)  # end of the last completed epoch
    done = np.zeros(cells, dtype=np.int64)
    carried = np.full(cells, np.nan)  # duration of an epoch drawn but not finished by the last round's end
    cumulative = np.zeros((cells, rounds + 1))
    for t in range(rounds):
        end = (t + 1) * round_s * (1 + _SLACK)
        finishes = carried <= end - now  # NaN (nothing carried) compares False
        now[finishes] += carried[finishes]
        done[finishes] += 1
        carried[finishes] = np.nan

        for _ in range(_MAX_BULK_PASSES):
            open_ = np.isnan(carried) & (done < remaining)
            certain = np.minimum(np.floor((end - now) / longest), remaining - done)
            bulk = np.flatnonzero(open_ & (certain >= _MIN_BULK))
            if bulk.size == 0:
                break
            k = certain[bulk].astype(np.int64)
            now[bulk] += _bulk_seconds(rng, k, bulk, chain, seconds_by_regime, closing_seconds)
            done[bulk] += k

        open_ = np.isnan(carried) & (done < remaining)
        # Up to floor(time left / shortest) more epochs can fit; one more surely cannot.
        reach = np.minimum(np.floor((end - now) / shortest) + 1, remaining - done)
        wide = np.flatnonzero(open_ & (reach > _MAX_RAGGED))
        if wide.size:
            # Too many to draw one by one (durations far apart): find the epochs that fit by bisection.
            fitted, seconds, carry = fit_by_bisection(rng, mix[wide], durations[wide], end - now[wide],
                                                      remaining[wide] - done[wide], chain[:, wide], likeliest[wide])
            now[wide] += seconds
            done[wide] += fitted
            carried[wide] = carry
        active = np.flatnonzero(open_ & (reach <= _MAX_RAGGED))
        if active.size:
            draws = reach[active].astype(np.int64)
            starts = np.cumsum(draws) - draws
            length = _draw_durations(rng, mix, durations, active, draws)
            elapsed = np.cumsum(length)
            elapsed -= np.repeat(elapsed[starts] - length[starts], draws)  # restart the sum per cell
            # Ends increase within a cell, so the epochs that fit are a prefix: count them.
            fitted = np.add.reduceat((np.repeat(now[active], draws) + elapsed <= end).astype(np.int64), starts)
            now[active] += np.where(fitted > 0, elapsed[starts + np.maximum(fitted - 1, 0)], 0.0)
            done[active] += fitted
            stopped = fitted < draws
            carried[active[stopped]] = length[(starts + fitted)[stopped]]
        cumulative[:, t + 1] = done
    return np.diff(cumulative, axis=1)


def _bulk_seconds(
    rng: np.random.Generator,
    epochs: NDArray[np.int64],
    cells: NDArray[np.intp],
    chain: FloatArray,
    seconds_by_regime: FloatArray,
    closing_seconds: FloatArray,
) -> FloatArray:
    """Total seconds of ``epochs[k]`` i.i.d. epochs of cell ``cells[k]``: multinomial regime counts times durations.

    ``chain[b, c]`` is regime `b`'s binomial share of the epochs cell `c` has not placed yet (0 for
    the closing regime, which takes all that is left and lasts ``closing_seconds[c]``);
    ``seconds_by_regime[b, c]`` is regime `b`'s epoch duration.
    """
    seconds = epochs * closing_seconds[cells]
    left = epochs.copy()
    for b in range(chain.shape[0]):  # R, the largest regime set: small and bounded
        share = chain[b, cells]
        draw = np.flatnonzero((share > 0) & (left > 0))
        if draw.size:
            taken = rng.binomial(left[draw], share[draw])
            # Each epoch moved to regime b trades the closing regime's duration for b's.
            seconds[draw] += taken * (seconds_by_regime[b, cells[draw]] - closing_seconds[cells[draw]])
            left[draw] -= taken
    return seconds
