"""Where the planner takes things in: `vfm.planner.plan`'s arguments and a forecaster's answers,
each checked once and refused with a `vfm.errors.ValidationError` naming the argument and the job.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, as_real_array, check_shape, reject_masked, require_per_job
from vfm.errors import ValidationError
from vfm.forecast import Forecaster, JobStates
from vfm.limits import MAX_BUDGET_SUM
from vfm.parameters import Instance, Interval, Optional, Real, check, check_array
from vfm.planner import typed
from vfm.planner.options import PlanOptions


def checked_cluster(states: JobStates, gpus: ArrayLike, capacity: ArrayLike, speed: ArrayLike | None,
                    options: PlanOptions) -> tuple[FloatArray, FloatArray, typed.TypeWindow | None]:
    """The gangs (n,), the GPUs each round can hold (T,) and, with GPU types (`speed`), the
    window over types: every gang a whole number of GPUs that fits some round."""
    n, rounds = states.n_jobs, options.rounds
    width = as_real_array(gpus, "gpus", (n,))
    window = None
    if speed is None:
        raw_capacity = np.asarray(capacity)
        supply = as_real_array(np.broadcast_to(raw_capacity, (rounds,)) if raw_capacity.ndim == 0 else raw_capacity,
                               "capacity", (rounds,))
        check_array("capacity", supply, Interval(Real, 0, unit="GPUs"))
    else:
        window = typed.TypeWindow.of(speed, capacity, n, rounds, states.job_ids)
        supply = window.capacity.max(axis=0)  # the widest gang each round can hold
    require_per_job("gpus", width, (width < 1) | (width != np.round(width)),
                    "must be a positive whole number of GPUs", ids=states.job_ids)
    require_per_job("gpus", width, width > supply.max(),
                    f"is wider than the cluster ({supply.max():g} GPUs), so the job can never run", ids=states.job_ids)
    return width, supply, window


def checked_budgets(states: JobStates, budgets: ArrayLike | None) -> FloatArray:
    """The budgets (n,), each > 0 and summing to at most `vfm.limits.MAX_BUDGET_SUM` (default: 1 each)."""
    checked = np.ones(states.n_jobs) if budgets is None else as_real_array(budgets, "budgets", (states.n_jobs,))
    require_per_job("budgets", checked, checked <= 0, "must be > 0", ids=states.job_ids)
    with np.errstate(over="ignore"):
        total = float(checked.sum())
    if not total <= MAX_BUDGET_SUM:
        raise ValidationError(f"budgets must sum to at most {MAX_BUDGET_SUM:g}, got a sum of {total:g} (largest "
                              f"{checked.max():g}): the objective weighs logs of up to about 1e3 by budgets times "
                              f"priority weights of up to 1e4; scale them down, only their ratios matter")
    return checked


def checked_waits(waited: ArrayLike, states: JobStates) -> np.ndarray:
    """`waited` as whole numbers of rounds >= 0, shape (n,), one per job."""
    array = as_real_array(waited, "waited", (states.n_jobs,))
    require_per_job("waited", array, (array < 0) | (array != np.round(array)),
                    "must be a whole number of rounds >= 0", ids=states.job_ids)
    return array.astype(np.int64)


def checked_warm_start(warm_start: Any, n: int, rounds: int, types: int | None) -> FloatArray:
    """`warm_start` as a float array of shape (n, T) (or (n, K T) over `types`), finite, in [0, 1].

    Raises
    ------
    vfm.errors.ValidationError
        Naming ``warm_start``, the expected shape and the first bad entry.
    """
    shape = (n, rounds if types is None else types * rounds)
    what = "(n, rounds)" if types is None else "(n, types * rounds)"
    try:  # an ndarray as it is: a masked one is refused by `as_real_array` below
        raw = warm_start if isinstance(warm_start, np.ndarray) else np.asarray(warm_start)
    except ValueError as exc:  # a ragged list
        raise ValidationError(f"warm_start must be a numeric array; numpy could not read it ({exc})") from exc
    check_shape("warm_start", raw, shape, f", {what} (a previous Plan.relaxed shifted to this window)")
    array = as_real_array(raw, "warm_start", shape)
    check_array("warm_start", array, Interval(Real, 0, 1, noun="a fraction of a round"))
    return array


#: A forecast's epochs over the window may exceed the epochs a job has left by this relative
#: amount (fluid forecasts are sums of floats); more is an error of the forecaster.
FORECAST_RTOL = 1e-9


def checked_forecast(model: Forecaster, method: str, value: Any, states: JobStates,
                     shape: tuple[int, ...]) -> FloatArray:
    """A forecaster's answer as a float array, checked where the planner consumes it.

    `method` is the `vfm.forecast.Forecaster` method that returned `value`: ``remaining_runtime``
    (seconds, shape (n,)), ``epochs_per_round`` (shape (n, T)) or ``sample_epochs_per_round``
    (shape (S, n, T)). Every entry must be a finite number >= 0, and a job's epochs over the
    window (in each scenario) at most the epochs it has left, within a relative `FORECAST_RTOL`.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the forecaster's class, the method, the job (`JobStates.job_name`) and what is
        wrong: a masked or non-numeric array, the wrong shape, NaN, an infinity, a negative
        entry, more epochs than the job has left.
    """
    who = f"{type(model).__name__}.{method}"
    if isinstance(value, np.ma.MaskedArray):
        raise ValidationError(f"{who} returned a numpy masked array; return a plain array of shape {shape}")
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{who} must return a numeric array of shape {shape}, got {type(value).__name__} "
                              f"({exc})") from None
    if array.shape != shape:
        raise ValidationError(f"{who} returned shape {array.shape}; the planner needs shape {shape} "
                              f"({'(n,) for n jobs' if len(shape) == 1 else 'jobs and rounds as asked'})")
    unit = "seconds" if method == "remaining_runtime" else "epochs"
    # Jobs on the last axis but one for the per-round forecasts, the only axis for the runtime.
    jobs_axis = array.ndim - 1 if array.ndim == 1 else array.ndim - 2
    for bad, what in ((np.isnan(array), "NaN"), (np.isinf(array), "an infinite value"),
                      (array < 0, "a negative value")):
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            job = where[jobs_axis]
            detail = "" if array.ndim == 1 else f" in round {where[-1]}" + (
                f" of scenario {where[0]}" if array.ndim == 3 else "")
            raise ValidationError(f"{who} returned {what} ({array[where]:g} {unit}) for {states.job_name(job)}"
                                  f"{detail}; a forecast must be a finite number of {unit} >= 0")
    if method != "remaining_runtime":
        total = array.sum(axis=-1)  # (n,) or (S, n)
        left = states.remaining_epochs
        over = total > left * (1.0 + FORECAST_RTOL)
        if over.any():
            where = tuple(int(i) for i in np.argwhere(over)[0])
            job = where[-1]
            scenario = f" in scenario {where[0]}" if array.ndim == 3 else ""
            raise ValidationError(f"{who} forecasts {total[where]:g} epochs over the window for "
                                  f"{states.job_name(job)}{scenario}, more than the {left[job]:g} it has left; a "
                                  f"forecaster must never forecast more epochs than a job has left")
    return array


@dataclass(frozen=True, eq=False)
class JobTerms:
    r"""What a scheduler tells `vfm.planner.plan` about each job besides its epochs (the
    `vfm.forecast.JobStates`) and its gang; every field optional, each array with one entry (row)
    per job, checked by `plan` and refused naming the field and the job.

    Attributes
    ----------
    budgets : array_like, shape (n,), optional
        :math:`B_i > 0`. Default: equal.
    fair_finish_s : array_like, shape (n,), optional
        Finish-time-fairness targets :math:`FT^*_i`: seconds from now by which job `i` would
        finish with an equal share. Adds the constraints
        :math:`TW + S_i / \min(1, G/N) \le \theta\, FT^*_i` with :math:`\theta = \rho_{\max}`
        when they fit (see the reserve below). A job that cannot meet its own even running in
        every round gets no constraint; its log utility is weighted by
        :math:`\hat\rho_i^{\lambda}`, :math:`\hat\rho_i = (\hat T_i / \min(1, G/N)) / FT^*_i`.
        If the constraints are still infeasible, all are dropped and every job projected past
        :math:`\rho_{\max}` is weighted so (Shockwave's relaxation). The rounding serves the
        largest :math:`\hat\rho_i` first. :math:`\theta` is the smallest bound
        :math:`\ge \rho_{\max}` at which the GPU-rounds the constrained jobs need,
        :math:`w_i \max(0, \hat T_i - b_i(\theta)) / W` each, fit in
        :math:`1 - \text{reserve}` of the cluster's, round by round as earliest-deadline-first
        would serve them (docs/planning.md): when equal shares over-subscribe the cluster (gangs
        wider than one GPU), every job keeps the same, looser, guarantee instead of none, and
        the reserve is left to the objective (the efficiency term).
    waited : array_like of int, shape (n,), optional
        Rounds each job has waited in a row since it last ran (or arrived); with
        `PlanOptions.wait_limit`, the plan commits a whole round to every job whose wait would pass
        the limit within the window (`Plan.committed`). Default: none has waited.
    speed : array_like, shape (n, K), optional
        A cluster of `K` GPU types (`vfm.planner.typed`): job `i`'s speed on type `k` relative to
        the type its forecast is on, in [0, 1] (0: the type cannot host it). `plan`'s `capacity`
        then gives the GPUs of each type, shape (K,) or (K, rounds); the program's goods are (type,
        round), `Plan.relaxed`, `schedule` and `prices` have K T columns (type-major) and
        `Plan.placement` says on which type each job runs in each round. Default: one type.
    """

    budgets: ArrayLike | None = None
    fair_finish_s: ArrayLike | None = None
    waited: ArrayLike | None = None
    speed: ArrayLike | None = None


@dataclass(frozen=True, eq=False)
class Arguments:
    """`vfm.planner.plan`'s array arguments as given, each field named as its argument."""

    gpus: ArrayLike
    capacity: ArrayLike
    terms: JobTerms | None
    warm_start: FloatArray | None


@dataclass(frozen=True, eq=False)
class Inputs:
    """`vfm.planner.plan`'s arguments checked: the options with their overrides; the gangs (n,), the
    GPUs each round can hold (T,) and the window over GPU types (`checked_cluster`); the budgets, the
    finish-time targets, the waits and the warm start."""

    options: PlanOptions
    width: FloatArray
    supply: FloatArray
    window: typed.TypeWindow | None
    budgets: FloatArray
    targets: FloatArray | None
    waits: np.ndarray
    warm_start: FloatArray | None


def checked_inputs(states: JobStates, forecaster: Forecaster | None, options: PlanOptions | None,
                   overrides: Mapping[str, Any], arguments: Arguments) -> Inputs:
    """`vfm.planner.plan`'s arguments checked, in the order of its parameters after the options."""
    check("options", options, Optional(Instance(PlanOptions, "a vfm.planner.PlanOptions")))
    misplaced = sorted(set(overrides) & {f.name for f in fields(JobTerms)})
    if misplaced:
        raise ValidationError(f"{', '.join(misplaced)} is a field of vfm.planner.JobTerms, not a planning option: "
                              f"pass terms=JobTerms({misplaced[0]}=...)")
    opts = (PlanOptions() if options is None else options).updated(**overrides)
    check("states", states, Instance(JobStates, "a vfm.forecast.JobStates"))
    check("forecaster", forecaster, Optional(Instance(
        Forecaster, "an object implementing vfm.forecast.Forecaster (remaining_runtime, epochs_per_round, "
                    "sample_epochs_per_round)")))
    check("terms", arguments.terms, Optional(Instance(JobTerms, "a vfm.planner.JobTerms")))
    terms = JobTerms() if arguments.terms is None else arguments.terms
    n = states.n_jobs
    given = {"gpus": arguments.gpus, "capacity": arguments.capacity, "warm_start": arguments.warm_start, **vars(terms)}
    for name, value in given.items():
        reject_masked(value, name)
    width, supply, window = checked_cluster(states, arguments.gpus, arguments.capacity, terms.speed, opts)
    opts.check_over_types(window is not None)
    budgets = checked_budgets(states, terms.budgets)
    targets = None if terms.fair_finish_s is None else as_real_array(terms.fair_finish_s, "fair_finish_s", (n,))
    if targets is not None:
        require_per_job("fair_finish_s", targets, targets <= 0, "must be > 0 seconds", ids=states.job_ids)
    waits = np.zeros(n, dtype=np.int64) if terms.waited is None else checked_waits(terms.waited, states)
    warm_start = arguments.warm_start
    if warm_start is not None:
        warm_start = checked_warm_start(warm_start, n, opts.rounds, None if window is None else window.types)
    return Inputs(opts, width, supply, window, budgets, targets, waits, warm_start)
