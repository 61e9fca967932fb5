r"""What a forecaster is, and the job state it forecasts from.

A job's throughput *regimes* are the batch sizes it may train at; each regime has a known epoch
duration (from the job's profile). The scheduler sees only finished epochs and the regime each ran
in. `JobStates` holds that knowledge for `n` jobs at once, padded to the largest
regime set `R`:

=====================  ======  =============================================================
field                  shape   meaning
=====================  ======  =============================================================
``total_epochs``       (n,)    :math:`E_i`, epochs the job trains in all
``regime_counts``      (n, R)  :math:`c_{ib}`, finished epochs observed in regime `b`
``regime_durations``   (n, R)  :math:`d_{ib} > 0`, seconds per epoch in regime `b`
``regime_mask``        (n, R)  whether job `i` has a regime `b` (padding is False)
``regime_labels``      (n, R)  the regimes' batch sizes (NaN where padded), for reference
``groups``             n       optional: what kind of job each is (model and adaptation mode)
``last_regime``        (n,)    the regime of the last finished epoch (-1 before the first)
``last_run``           (n,)    epochs in a row the job has run in it so far
``changes``            (n,)    regime changes observed so far
=====================  ======  =============================================================

so the epochs done are :math:`e_i = \sum_b c_{ib}` and the epochs left :math:`E_i - e_i`.

A finished job is a `Trajectory`: its kind and the regime of each epoch in order, what a
`LearningForecaster` learns from. A scheduler plugs in its own forecasting model by implementing
`Forecaster`; `vfm.forecast.DirichletForecaster` is Shockwave's.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, cast, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vfm._validation import (
    FloatArray,
    as_real_array,
    check_shape,
    checked_regime_pairs,
    first_bad,
    job_name,
    read_only,
    real_array,
    reject_masked,
    require_per_job,
)
from vfm.errors import ValidationError
from vfm.parameters import (
    Constraint,
    Hashed,
    Instance,
    Interval,
    Listed,
    OneOf,
    Real,
    Whole,
    check,
    check_array,
    check_length,
    check_nonempty,
    check_parameters,
)

#: What a group (a job's kind) must be: a key of the population's groups.
_GROUP = Hashed("hashable (a string or a tuple, as ('ResNet-18', 'gns'))")

BoolArray = NDArray[np.bool_]
SeedLike = int | np.random.SeedSequence | np.random.Generator | None
#: How a scenario counts a job's progress in a round: only the epochs that end in it (``"whole"``),
#: or the fraction of the running epoch too (``"fluid"``), as the point forecasts do.
ScenarioProgress = Literal["whole", "fluid"]
#: The constraint of every forecaster's ``scenario_progress`` option (`vfm.parameters`).
SCENARIO_PROGRESS = OneOf(("whole", "fluid"))
#: The window arguments every forecaster takes (`check_horizon`), checked in this order.
_HORIZON: dict[str, Constraint] = {
    "rounds": Interval(Whole, 1),
    "scenarios": Interval(Whole, 1),
    "round_s": Interval(Real, 0, closed="neither", unit="seconds"),
}
RegimeSet = Mapping[float, float] | Sequence[tuple[float, float]]


@dataclass(frozen=True, eq=False, init=False)
class JobStates:
    """What a forecaster knows about `n` jobs: epochs, regimes, and the regimes observed so far.

    Construct it from per-job lists with `JobStates.from_lists`, or directly from padded
    arrays (below). Either way it is validated once, here; forecasters trust it.

    Parameters
    ----------
    total_epochs : array_like, shape (n,)
        :math:`E_i`, a positive whole number of epochs per job.
    regime_counts : array_like, shape (n, R)
        :math:`c_{ib} \\ge 0`, whole numbers: finished epochs observed in each regime. Zero where
        the job has no such regime; :math:`e_i = \\sum_b c_{ib} \\le E_i` (a finished job,
        :math:`e_i = E_i`, is allowed and is forecast to need nothing more).
    regime_durations : array_like, shape (n, R)
        :math:`d_{ib} > 0` seconds per epoch where ``regime_mask`` is True; ignored (stored as 0)
        elsewhere.
    regime_mask : array_like of bool, shape (n, R)
        Which regimes each job has; at least one per job.
    regime_labels : array_like, shape (n, R), optional
        The regimes' names as numbers (batch sizes). Default: ``0 .. R-1``. NaN where padded.
    job_ids : sequence of hashable, length n, optional
        Names used in error messages next to the job's index.
    groups : sequence of hashable, length n, optional
        The kind of each job, for forecasters that learn from other jobs of the same kind
        (`vfm.forecast.PopulationForecaster`): for example ``("ResNet-18", "gns")``. None (the
        default) leaves every job's kind unknown; a None entry leaves that job's unknown.
    recent : tuple of three array_like of int, shape (n,) each, optional
        ``(last_regime, last_run, changes)``: the column of the regime the job's last finished
        epoch ran in (-1 before any), how many epochs in a row it has run there, and how many
        times its regime has changed. Default: as if each job ran its regimes in ascending label
        order (batch sizes that only grow, as under GNS), which the counts then determine.
        `JobStates.from_lists` computes them from the epochs in the order given.

    Raises
    ------
    vfm.errors.ValidationError
        Naming the job and the field: a wrong shape, NaN or infinity; total epochs that are not a
        positive whole number; a negative or fractional count; more epochs done than the total;
        epochs observed in a regime the job does not have; a job with no regime; a duration that
        is not positive.

    Examples
    --------
    >>> from vfm.forecast import JobStates
    >>> states = JobStates.from_lists(
    ...     total_epochs=[10, 4],
    ...     regimes=[{32: 60.0, 64: 30.0}, {128: 12.5}],
    ...     observed=[[32, 32, 32, 64], []],
    ... )
    >>> states.regime_counts
    array([[3., 1.],
           [0., 0.]])
    >>> states.remaining_epochs
    array([6., 4.])
    """

    total_epochs: FloatArray
    regime_counts: FloatArray
    regime_durations: FloatArray
    regime_mask: BoolArray
    regime_labels: FloatArray
    job_ids: tuple[Hashable, ...] | None
    groups: tuple[Hashable, ...] | None
    last_regime: NDArray[np.int64]
    last_run: FloatArray
    changes: FloatArray

    def __init__(
        self,
        total_epochs: ArrayLike,
        regime_counts: ArrayLike,
        regime_durations: ArrayLike,
        regime_mask: ArrayLike,
        regime_labels: ArrayLike | None = None,
        job_ids: Sequence[Hashable] | None = None,
        groups: Sequence[Hashable] | None = None,
        recent: tuple[ArrayLike, ArrayLike, ArrayLike] | None = None,
    ) -> None:
        arguments = {"total_epochs": total_epochs, "regime_counts": regime_counts,
                     "regime_durations": regime_durations, "regime_mask": regime_mask, "regime_labels": regime_labels}
        for name, given in (*arguments.items(), *((f"recent[{k}]", v) for k, v in enumerate(recent or ()))):
            reject_masked(given, name)
        total = as_real_array(total_epochs, "total_epochs", (None,))
        n = total.size
        check_nonempty("total_epochs", n, "job")
        for name, listed in (("job_ids", job_ids), ("groups", groups)):
            if isinstance(listed, str | bytes):
                raise ValidationError(f"{name} must be a list with one entry per job, got the string {listed!r}")
        ids = None if job_ids is None else tuple(job_ids)
        kinds = None if groups is None else tuple(groups)
        for name, listed in (("job_ids", ids), ("groups", kinds)):
            if listed is not None:
                check_length(name, listed, n, "job of total_epochs")
        for job, kind in enumerate(kinds or ()):
            if not _GROUP.admits(kind):  # worded only to refuse: this runs for every job of every re-plan
                check(f"groups[{job}] ({job_name(job, ids)})", kind, _GROUP)
        counts = as_real_array(regime_counts, "regime_counts", (n, None))
        n_regimes = counts.shape[1]
        check_nonempty("regime_counts", n_regimes, "regime column")
        raw_mask = np.asarray(regime_mask)
        check("regime_mask's dtype", raw_mask.dtype.name, OneOf(("bool",)))  # a 0/1 mask is not read as one
        check_shape("regime_mask", raw_mask, (n, n_regimes))
        mask = np.array(raw_mask, dtype=np.bool_, copy=True)
        # Padded durations are meaningless: check only the regimes that exist, store 0 elsewhere.
        raw_durations = real_array(regime_durations, "regime_durations")
        check_shape("regime_durations", raw_durations, (n, n_regimes))
        durations = as_real_array(np.where(mask, raw_durations, 0.0), "regime_durations", (n, n_regimes))
        if regime_labels is None:
            labels = np.where(mask, np.arange(n_regimes, dtype=np.float64), np.nan)
        else:
            raw_labels = real_array(regime_labels, "regime_labels")
            check_shape("regime_labels", raw_labels, (n, n_regimes))
            # Only the regimes that exist are checked, as the durations are.
            check_array("regime_labels", np.where(mask, raw_labels, 0.0), Interval(Real), jobs=True, ids=ids)
            labels = np.where(mask, raw_labels, np.nan)

        done = counts.sum(axis=1)
        _check_total_epochs(total, ids)
        require_per_job("regime_mask", mask.sum(axis=1).astype(np.float64), mask.sum(axis=1) == 0,
                        "has no regime: a job needs at least one regime (batch size with its epoch duration)",
                        ids=ids)
        require_per_job("regime_counts", counts, counts < 0, "must be >= 0 (epochs observed cannot be negative)",
                        ids=ids)
        require_per_job("regime_counts", counts, counts != np.round(counts), "must be a whole number of epochs",
                        ids=ids)
        require_per_job("regime_counts", counts, (counts > 0) & ~mask,
                        "counts epochs observed in a regime the job does not have (regime_mask is False)", ids=ids)
        require_per_job("regime_counts", done, done > total,
                        "sums to more epochs done than the job's total_epochs", ids=ids)
        require_per_job("regime_durations", durations, mask & (durations <= 0), "must be > 0 seconds", ids=ids)
        last, run, changes = _recent(recent, counts, labels, done, ids)

        for name, value in (
            ("total_epochs", total), ("regime_counts", counts), ("regime_durations", durations),
            ("regime_mask", mask), ("regime_labels", labels), ("last_regime", last), ("last_run", run),
            ("changes", changes),
        ):
            object.__setattr__(self, name, read_only(value))
        object.__setattr__(self, "job_ids", ids)
        object.__setattr__(self, "groups", kinds)

    @classmethod
    def from_lists(
        cls,
        total_epochs: Sequence[float],
        regimes: Sequence[RegimeSet],
        observed: Sequence[Sequence[float]] | None = None,
        job_ids: Sequence[Hashable] | None = None,
        groups: Sequence[Hashable] | None = None,
    ) -> JobStates:
        """Build the states of `n` jobs from per-job lists.

        Parameters
        ----------
        total_epochs : sequence of int, length n
            Total epochs :math:`E_i` of each job.
        regimes : sequence, length n, of mapping or sequence of pairs
            Each job's regime set: batch size -> seconds per epoch, as ``{32: 60.0, 64: 30.0}`` or
            ``[(32, 60.0), (64, 30.0)]``. Regimes are padded to the largest set, in the order given.
        observed : sequence, length n, of sequences of batch sizes, optional
            The batch size of each finished epoch, in the order they ran (the counts, the last
            regime and the changes are read from it). Default: nothing observed yet.
        job_ids : sequence of hashable, length n, optional
            Names used in error messages.
        groups : sequence of hashable, length n, optional
            The kind of each job (see the class docstring).

        Returns
        -------
        JobStates

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job (index and id) and the field: lists of different lengths, an empty
            regime set, a batch size listed twice, a duration that is not positive, an observed
            batch size that is not in the job's regime set, or more epochs observed than the total
            (plus everything the array constructor checks).
        """
        reject_masked(total_epochs, "total_epochs")
        reject_masked(observed, "observed")
        for name, value in (("total_epochs", total_epochs), ("regimes", regimes), ("observed", observed),
                            ("job_ids", job_ids), ("groups", groups)):
            if value is not None:
                check(name, value, Listed("a list with one entry per job"))
        n = len(total_epochs)
        check_nonempty("total_epochs", n, "job")
        ids = None if job_ids is None else tuple(job_ids)
        seen: Sequence[Sequence[float]] = [()] * n if observed is None else observed
        for name, value in (("regimes", regimes), ("observed", seen), ("job_ids", ids)):
            if value is not None:
                check_length(name, value, n, "job of total_epochs")
        total = as_real_array(total_epochs, "total_epochs", (n,))
        _check_total_epochs(total, ids)  # before comparing the observed epochs with it

        # Unpacking Python lists is per job by nature; everything after it is vectorized.
        pairs = [_regime_pairs(regime_set, job, ids) for job, regime_set in enumerate(regimes)]
        observed_arrays = [batch_sizes(epochs, f"observed[{job}] ({job_name(job, ids)})")
                           for job, epochs in enumerate(seen)]
        n_regimes = max(len(p) for p in pairs)
        labels = np.full((n, n_regimes), np.nan)
        durations = np.zeros((n, n_regimes))
        mask = np.zeros((n, n_regimes), dtype=np.bool_)
        for job, job_pairs in enumerate(pairs):
            labels[job, : len(job_pairs)] = [label for label, _ in job_pairs]
            durations[job, : len(job_pairs)] = [seconds for _, seconds in job_pairs]
            mask[job, : len(job_pairs)] = True

        lengths = np.array([a.size for a in observed_arrays], dtype=np.int64)
        over = lengths > total
        if over.any():
            job = int(np.argmax(over))
            raise ValidationError(
                f"observed[{job}] ({job_name(job, ids)}) lists {lengths[job]} epochs, more epochs done than "
                f"the job's total_epochs ({total[job]:g})"
            )
        flat = np.concatenate(observed_arrays)
        owner = np.repeat(np.arange(n), lengths)
        match = (labels[owner] == flat[:, None]) & mask[owner]
        unknown = ~match.any(axis=1)
        if unknown.any():
            k = int(np.argmax(unknown))
            job = int(owner[k])
            epoch = k - int(lengths[:job].sum())
            known = ", ".join(f"{b:g}" for b in labels[job, mask[job]])
            raise ValidationError(
                f"observed[{job}][{epoch}] ({job_name(job, ids)}) is batch size {flat[k]:g}, which is not in "
                f"the job's regime set {{{known}}}"
            )
        column = np.argmax(match, axis=1)
        counts = np.bincount(owner * n_regimes + column, minlength=n * n_regimes)
        return cls(total, counts.reshape(n, n_regimes), durations, mask, regime_labels=labels, job_ids=ids,
                   groups=groups, recent=_recent_of_sequences(column, owner, lengths))

    @property
    def n_jobs(self) -> int:
        """Number of jobs `n`."""
        return int(self.total_epochs.size)

    @property
    def n_regimes(self) -> int:
        """Width `R` of the padded regime arrays (the largest regime set)."""
        return int(self.regime_counts.shape[1])

    @property
    def epochs_done(self) -> FloatArray:
        """Epochs observed so far, :math:`e_i = \\sum_b c_{ib}`, shape (n,)."""
        return self.regime_counts.sum(axis=1)

    @property
    def remaining_epochs(self) -> FloatArray:
        """Epochs left, :math:`E_i - e_i`, shape (n,)."""
        return self.total_epochs - self.epochs_done

    @property
    def regimes_per_job(self) -> FloatArray:
        """Size of each job's regime set, :math:`|\\mathcal{B}_i|`, shape (n,)."""
        return self.regime_mask.sum(axis=1).astype(np.float64)

    def job_name(self, job: int) -> str:
        """How messages name job `job`: its index, and its id when ids were given."""
        return job_name(job, self.job_ids)


@dataclass(frozen=True, eq=False, init=False)
class Trajectory:
    """A finished job as a reference: its kind and the regime of each of its epochs, in order.

    Parameters
    ----------
    group : hashable
        The job's kind (as `JobStates.groups`), for example ``("ResNet-18", "gns")``.
    batch_sizes : array_like, shape (E,)
        The regime (batch size or other label) of each epoch, in the order they ran.
    regimes : array_like, optional
        The job's regime set; default the distinct values of `batch_sizes`. Give it when the job
        declared regimes it never used, so that ranks line up with jobs that did.

    Raises
    ------
    vfm.errors.ValidationError
        For an empty or non-finite `batch_sizes`, an unhashable `group`, or an epoch whose regime
        is not in `regimes`.
    """

    group: Hashable
    labels: FloatArray  # the regime set, ascending
    ranks: NDArray[np.int64]  # rank of each epoch's regime in `labels`

    def __init__(self, group: Hashable, batch_sizes: ArrayLike, regimes: ArrayLike | None = None) -> None:
        check("group", group, _GROUP)
        reject_masked(batch_sizes, "batch_sizes")
        reject_masked(regimes, "regimes")
        sizes = real_array(batch_sizes, "batch_sizes").ravel()
        check_nonempty("batch_sizes", sizes.size, "epoch's regime")
        check_array("batch_sizes", sizes, Interval(Real, noun="a finite batch size"))
        labels = np.unique(sizes if regimes is None else real_array(regimes, "regimes").ravel())
        ranks = np.searchsorted(labels, sizes)
        if (ranks >= labels.size).any() or (labels[np.minimum(ranks, labels.size - 1)] != sizes).any():
            raise ValidationError(f"batch_sizes has a regime that is not in regimes {labels.tolist()}")
        for name, value in (("labels", labels), ("ranks", ranks.astype(np.int64))):
            object.__setattr__(self, name, read_only(value))
        object.__setattr__(self, "group", group)

    @property
    def epochs(self) -> int:
        """Epochs the job ran, `E`."""
        return int(self.ranks.size)


def _recent(recent: tuple[ArrayLike, ArrayLike, ArrayLike] | None, counts: FloatArray, labels: FloatArray,
            done: FloatArray, ids: tuple[Hashable, ...] | None) -> tuple[NDArray[np.int64], FloatArray, FloatArray]:
    """(last_regime, last_run, changes), checked against the counts, or inferred from them."""
    n = counts.shape[0]
    if recent is None:
        # Ascending label order: the last regime is the largest observed, run through once each.
        seen = counts > 0
        observed_labels = np.where(seen, labels, -np.inf)
        column = np.where(done > 0, np.argmax(observed_labels, axis=1), -1).astype(np.int64)
        run = np.where(done > 0, counts[np.arange(n), np.maximum(column, 0)], 0.0)
        return column, run, np.maximum(seen.sum(axis=1) - 1.0, 0.0)
    check_length("recent", recent, 3, "array of (last_regime, last_run, changes), each of shape (n,)")
    last = as_real_array(recent[0], "recent[0] (last_regime)", (n,))
    run = as_real_array(recent[1], "recent[1] (last_run)", (n,))
    changes = as_real_array(recent[2], "recent[2] (changes)", (n,))
    valid_column = (last == np.round(last)) & (last >= -1) & (last < counts.shape[1])
    require_per_job("recent[0] (last_regime)", last, ~valid_column | ((last == -1) != (done == 0)),
                    "must be the column of a regime the job has observed, and -1 exactly when it has none",
                    ids=ids)
    index = np.maximum(last, 0).astype(np.int64)
    observed = counts[np.arange(n), index]
    require_per_job("recent[0] (last_regime)", last, (done > 0) & (observed == 0),
                    "names a regime with no epochs observed", ids=ids)
    require_per_job("recent[1] (last_run)", run, (run != np.round(run)) | (run < (done > 0)) | (run > observed)
                    | ((done == 0) & (run != 0)),
                    "must be a whole number of epochs, >= 1 once epochs are observed and at most the regime's "
                    "count", ids=ids)
    require_per_job("recent[2] (changes)", changes, (changes != np.round(changes)) | (changes < 0)
                    | (changes > np.maximum(done - 1, 0)), "must be a whole number from 0 to epochs done - 1",
                    ids=ids)
    return last.astype(np.int64), run, changes


def _recent_of_sequences(column: NDArray[np.intp], owner: NDArray[np.intp], lengths: NDArray[np.int64]
                         ) -> tuple[NDArray[np.int64], FloatArray, FloatArray]:
    """(last_regime, last_run, changes) of concatenated per-job epoch sequences (regime columns)."""
    n = lengths.size
    ends = np.cumsum(lengths)
    some = lengths > 0
    last = np.full(n, -1, dtype=np.int64)
    last[some] = column[ends[some] - 1]
    # A change is an epoch whose regime differs from the previous epoch of the same job.
    changed = np.zeros(column.size, dtype=bool)
    changed[1:] = (column[1:] != column[:-1]) & (owner[1:] == owner[:-1])
    changes = np.bincount(owner[changed], minlength=n).astype(np.float64)
    # The last run starts after the job's last change (or at its first epoch).
    start = np.where(changed | np.r_[True, owner[1:] != owner[:-1]], np.arange(column.size), 0)
    run_start = np.maximum.accumulate(start) if column.size else start
    run = np.zeros(n)
    run[some] = ends[some] - run_start[ends[some] - 1]
    return last, run, changes


def _check_total_epochs(total: FloatArray, ids: tuple[Hashable, ...] | None) -> None:
    require_per_job("total_epochs", total, (total <= 0) | (total != np.round(total)),
                    "must be a positive whole number of epochs", ids=ids)


def _regime_pairs(regime_set: RegimeSet, job: int, ids: tuple[Hashable, ...] | None) -> list[tuple[float, float]]:
    """One job's regime set as (batch size, seconds) pairs (`vfm._validation.checked_regime_pairs`)."""
    return list(checked_regime_pairs(regime_set, f"regimes[{job}] ({job_name(job, ids)})", max_seconds=np.inf))


def batch_sizes(value: object, what: str) -> FloatArray:
    """A list of batch sizes, one per epoch, as a flat float array of finite numbers.

    Raises a `ValidationError` starting with `what` (the argument as the caller wrote it) for a
    string or bytes (whose characters numpy would read as digits), a scalar, a mapping, a masked
    array, nested lists, or entries that are not finite real numbers (booleans included).
    """
    reject_masked(value, what)
    listed = cast(ArrayLike, check(what, value, Listed("a list of batch sizes, one number per epoch (as [32, 32])")))
    try:
        sizes = real_array(listed, "its entries")
    except ValidationError as exc:
        raise ValidationError(f"{what} must be a list of batch sizes (real numbers): {exc}") from None
    if sizes.ndim != 1:
        raise ValidationError(f"{what} must be a flat list, one batch size per epoch, got shape {sizes.shape}")
    if (k := first_bad(~np.isfinite(sizes))) is not None:
        raise ValidationError(f"{what}: entry {k} is {sizes[k]}, not a batch size (a finite number)")
    return sizes


def check_states(states: object, where: str) -> None:
    """Raise `ValidationError` unless `states` is a `JobStates` (`where` names the forecaster)."""
    check(f"states given to {where}", states, Instance(JobStates, "a vfm.forecast.JobStates (build one with "
                                                       "JobStates.from_lists)"))


def fluid_epochs_per_round(seconds_per_epoch: FloatArray, remaining: FloatArray, rounds: int,
                           round_s: float) -> FloatArray:
    r"""Epochs per round of jobs progressing fluidly at a fixed rate, shape (..., n, rounds).

    .. math:: F(\tau) = \min(\tau / \mu,\; E - e), \qquad r_t = F((t+1)\,W) - F(t\,W),

    for `seconds_per_epoch` :math:`\mu` of shape (..., n) and `remaining` :math:`E - e` of shape (n,).
    """
    ends = round_s * np.arange(rounds + 1, dtype=np.float64)
    cumulative = np.minimum(ends / seconds_per_epoch[..., None], remaining[:, None])
    return np.diff(cumulative, axis=-1)


def check_horizon(rounds: int, round_s: float, scenarios: int | None = None) -> None:
    """Validate the window arguments every forecaster takes (for implementers of `Forecaster`).

    Raises
    ------
    vfm.errors.ValidationError
        If `rounds` or `scenarios` is not a positive whole number, or `round_s` is not a positive
        finite number of seconds.
    """
    values = {"rounds": rounds, "scenarios": scenarios, "round_s": round_s}
    # A point forecast takes no `scenarios` (None), which is then not checked.
    check_parameters(values, _HORIZON if scenarios is not None else
                     {name: constraint for name, constraint in _HORIZON.items() if name != "scenarios"})


@runtime_checkable
class Forecaster(Protocol):
    """The forecasting model a scheduler plugs into `vfm`.

    A forecaster turns `JobStates` into what the planner needs: point forecasts of each job's
    remaining runtime and of its progress per round (for the deterministic, certainty-equivalent
    solve) and scenarios of that progress (for the sample-average planner).
    Every array is vectorized over jobs. The window starts now: round `t` (0-based) covers
    ``[t * round_s, (t + 1) * round_s)`` seconds of the job's own running time, and "epochs in round
    `t`" assumes the job runs all of rounds ``0 .. t``; a planner scales them by the fraction of a
    round it actually schedules and caps progress at the job's end (a utility cap of 1).

    Implementations must return, for a job with no epochs left, a runtime of 0 and 0 epochs in
    every round, and must never forecast more epochs than a job has left. Call `check_horizon` to
    validate the window arguments.
    """

    def remaining_runtime(self, states: JobStates) -> FloatArray:
        """Forecast seconds of running time each job still needs, shape (n,)."""
        ...

    def epochs_per_round(self, states: JobStates, rounds: int, round_s: float) -> FloatArray:
        """Forecast (point) epochs each job completes in each of the next `rounds` rounds, shape (n, rounds).

        Rows sum to at most the job's remaining epochs.
        """
        ...

    def sample_epochs_per_round(
        self, states: JobStates, rounds: int, round_s: float, scenarios: int, seed: SeedLike = None
    ) -> FloatArray:
        """Scenarios of the epochs each job completes in each round, shape (scenarios, n, rounds).

        Reproducible from `seed`; each scenario's rows sum to at most the job's remaining epochs.
        """
        ...


@runtime_checkable
class LearningForecaster(Forecaster, Protocol):
    """A forecaster that learns from finished jobs (`vfm.forecast.PopulationForecaster` is one).

    `vfm.planner.Policy` hands it each job that completed, as a `Trajectory` of the job's kind
    (`Policy.add_job`'s ``kind``), and plans with what it returns from then on.
    """

    def learned(self, trajectories: Sequence[Trajectory]) -> LearningForecaster:
        """A forecaster that also knows `trajectories`; this one is left as it was."""
        ...
