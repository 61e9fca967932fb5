r"""A window's progress per round from a forecast: the forecaster's calendar epochs or a flat pace.

`vfm.planner.plan` credits a job, for each round it runs, the epochs this module forecasts for that
round (`window_epochs`), moved onto the rounds its gang fits (`in_fitting_rounds`). With
``PlanOptions.pace="flat"`` (the default) that is the job's remaining work spread evenly over its
forecast remaining runtime (`flat_pace`): what a round is worth then depends on how many rounds the
job runs, not on when (docs/planning.md, "Progress that does not depend on the calendar"). The
program's progress and base are those epochs as shares of each job's work (`utility_terms`).
"""

from __future__ import annotations

import numpy as np

from vfm._validation import FloatArray
from vfm.forecast import Forecaster, JobStates, SeedLike
from vfm.planner.inputs import checked_forecast
from vfm.planner.options import PlanOptions


def window_epochs(model: Forecaster, states: JobStates, options: PlanOptions, remaining_s: FloatArray,
                  fits: np.ndarray, seed: SeedLike = None) -> FloatArray:
    """Each job's epochs in each round of the window if it runs, shape (S, n, T): the point forecast
    (S = 1) or `options.scenarios` scenarios, at the forecaster's calendar pace or flat
    (`options.pace`), on the rounds the job fits (`fits`, (n, T)).

    The forecaster's per-round forecasts are asked for only where they are used: at the calendar
    pace, and with scenarios (whose pace is relative to the point forecast's)."""
    n, rounds, round_s = states.n_jobs, options.rounds, float(options.round_s)
    left = states.remaining_epochs
    flat = flat_pace(remaining_s, left, rounds, round_s) if options.pace == "flat" else None
    if flat is not None and options.scenarios == 1:
        return in_fitting_rounds(flat, fits)[None]
    forecast = checked_forecast(model, "epochs_per_round", model.epochs_per_round(states, rounds, round_s),
                                states, (n, rounds))
    point = in_fitting_rounds(forecast if flat is None else flat, fits)
    if options.scenarios == 1:
        return point[None]
    samples = checked_forecast(
        model, "sample_epochs_per_round",
        model.sample_epochs_per_round(states, rounds, round_s, options.scenarios, seed), states,
        (options.scenarios, n, rounds))
    if options.pace == "flat":  # each scenario at its own pace, flat
        samples = flat_pace(remaining_s, left, rounds, round_s, scale=scenario_pace(samples, forecast, left))
    epochs = in_fitting_rounds(samples, fits)
    # A job with nothing done that completes no whole epoch in a scenario would have log utility
    # -inf under every schedule; such a scenario credits it the point forecast.
    stalled = (states.epochs_done == 0)[None, :] & (epochs.sum(axis=2) == 0)
    return np.where(stalled[:, :, None], point[None], epochs)


def flat_pace(remaining_s: FloatArray, epochs_left: FloatArray, rounds: int, round_s: float,
              scale: FloatArray | None = None) -> FloatArray:
    r"""Epochs per round at a constant pace, shape (n, T): each job's `epochs_left` spread evenly
    over its forecast `remaining_s`.

    .. math:: F_i(\tau) = \min\!\big(\tau\, L_i / \hat T_i,\; L_i\big), \qquad
              r_{it} = F_i((t+1) W) - F_i(t W),

    with :math:`L_i` the epochs left and :math:`W` = `round_s`: every round the job runs gets the
    same share of its remaining work, until the rounds add up to the work left. A job whose speed
    rises with its progress (batch-size scaling) completes fewer epochs than this early and more
    late; the pace is the chord of its progress over its remaining runtime, the concave envelope
    of that curve (docs/planning.md, "Progress that does not depend on the calendar"). A job with no
    runtime left gets its epochs left in the first round. `scale` (shape (..., n)) multiplies the
    pace, for scenarios (shape (..., n, T) then).
    """
    left = np.maximum(np.asarray(epochs_left, dtype=np.float64), 0.0)
    ends = np.arange(rounds + 1, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        rate = np.where(remaining_s > 0, left * round_s / remaining_s, np.inf)
        if scale is not None:
            rate = rate * scale
        done = np.minimum(np.where(ends > 0, rate[..., None] * ends, 0.0), left[:, None])
    return np.diff(done, axis=-1)


def scenario_pace(samples: FloatArray, forecast: FloatArray, epochs_left: FloatArray) -> FloatArray:
    """Each scenario's pace relative to the forecaster's point forecast, shape (S, n), from
    scenarios (S, n, T) and the point forecast (n, T): their paces over the window (`_window_pace`);
    1 where the point forecast makes no progress."""
    with np.errstate(divide="ignore", invalid="ignore"):
        point = _window_pace(forecast[None], epochs_left)
        return np.where(point > 0, _window_pace(samples, epochs_left) / point, 1.0)


def _window_pace(epochs: FloatArray, epochs_left: FloatArray) -> FloatArray:
    """Epochs per round of running of forecasts of shape (S, n, T), shape (S, n): the epochs over
    the window divided by the rounds with progress, the last counted as the fraction of the job's
    fullest round it fills when the forecast finishes the job in the window."""
    total = epochs.sum(axis=2)
    running = (epochs > 0).sum(axis=2).astype(np.float64)
    last = np.take_along_axis(epochs, np.maximum(running.astype(np.int64) - 1, 0)[:, :, None], axis=2)[:, :, 0]
    fullest = epochs.max(axis=2)
    finished = total >= epochs_left[None, :] * (1 - 1e-12)
    with np.errstate(divide="ignore", invalid="ignore"):
        running = np.where(finished & (fullest > 0), running - 1 + last / fullest, running)
        return np.where(running > 0, total / running, 0.0)


def in_fitting_rounds(epochs: FloatArray, fits: np.ndarray) -> FloatArray:
    """Move a forecast of shape (..., n, T) onto the rounds each job's gang fits.

    A forecaster's round `k` assumes the job ran in rounds 1 .. k-1 (its regimes advance with
    its epochs, not with the clock). A job runs only where its gang fits, so its `k`-th fitting
    round gets the forecast's round `k`, and the other rounds 0; with a constant capacity this is
    the forecast itself. Without it a short job whose gang fits only late rounds would be
    forecast as finished before it could start.
    """
    order = np.maximum(np.cumsum(fits, axis=1) - 1, 0)
    moved = np.take_along_axis(epochs, np.broadcast_to(order, epochs.shape), axis=-1)
    return np.where(fits, moved, 0.0)


#: With ``PlanOptions.utility="completion"``, the utility of a job the window does nothing for: a
#: thousandth of its remaining work (chosen on the robustness suite's choose half among 1e-2, 1e-3
#: and 1e-5; benchmarks/results/robustness).
COMPLETION_BASE = 1e-3


def utility_terms(states: JobStates, epochs: FloatArray, finished: np.ndarray,
                  utility: str) -> tuple[FloatArray, FloatArray]:
    """The program's progress per round, shape (S, n, T), and base, shape (n,), from the epochs
    forecast per round: shares of each job's total work, the base its work done (``"progress"``),
    or shares of its remaining work, the base `COMPLETION_BASE` (``"completion"``; 1 for a
    finished job, which the program leaves out)."""
    if utility == "progress":
        return epochs / states.total_epochs[None, :, None], states.epochs_done / states.total_epochs
    left = np.where(finished, 1.0, states.total_epochs - states.epochs_done)
    return epochs / left[None, :, None], np.where(finished, 1.0, COMPLETION_BASE)
