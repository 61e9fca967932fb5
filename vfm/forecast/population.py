r"""A forecaster that learns from the jobs that finished: a semi-Markov model per kind of job.

Jobs of one model and adaptation mode change regime at similar points of their training, and a
scheduler sees many of them finish. `PopulationForecaster` forecasts a running job from the
finished jobs of its kind (its *references*) and falls back to Shockwave's Dirichlet model where
it has none.

Model
-----
A job's epochs run in *stages*: maximal runs of one regime, :math:`(r_1, \ell_1), (r_2, \ell_2),
\dots` with :math:`r_s` the rank of the stage's regime in the job's regime set (regimes are
matched by rank, not batch size, so a reference that ran ``{16, 32}`` informs a job with
``{64, 128}``; a regime is any label, so pruning, which changes speed at a fixed batch size, is one
too) and :math:`\ell_s` its length in epochs. How a stage's length scales with the job's total
epochs `E` is learned per kind, regime count, stage count and stage: a least-squares fit
:math:`\log \ell_s = a_s + \beta_s \log E` over the references, :math:`\beta_s` clipped to
[0, 1] (0: the stage lasts a fixed number of epochs, as GNS's batch-size doublings; 1: a fixed
share of training, as Accordion's first critical regime in the Shockwave traces; 1 where the
references cannot tell). A reference `j` stretched to job `i` has stages
:math:`L_{js} = \ell_{js} (E_i / E_j)^{\beta_s}`.

A running job `i` in stage `c` (its observed regime changes), in regime `r`, `a` epochs into the
stage, with prefix counts :math:`p_{ir'}` (its counts before the stage), is a semi-Markov
process: it is matched with the references of its kind and regime count whose stage `c` runs
regime `r`, weighted by how well they explain what has been seen,

.. math::

    w_{ij} = \exp\!\Big(-\frac{\sum_{r'} |p_{ir'} - P_{jr'}| + (a - L_{jc})^+}{h\, \max(e_i, 1)}\Big)
             \;\exp\!\Big(-\frac{|\log(E_i / E_j)|}{h_E}\Big)\;\lambda^{[\text{regime sets differ}]},

with :math:`P_{jr'}` the reference's stretched epochs in regime :math:`r'` before stage `c`
(the second term is the survival condition: the stage has lasted `a` epochs). The reference
forecasts the rest: :math:`(L_{jc} - a)^+` more epochs in the current stage, then its later stages,
the longest of them taking up the difference to the :math:`E_i - e_i` epochs left (the current
stage when none is left, so a job past every reference's last change stays where it is).

Point forecasts mix the references' forecasts :math:`f_j`, weighted by :math:`w_{ij}`, with the
Dirichlet forecaster's :math:`f_D`, which takes the share :math:`w_0 / (n_{eff} + w_0)`, with
:math:`n_{eff} = (\sum_j w_{ij})^2 / \sum_j w_{ij}^2` the references' effective number and
:math:`w_0` `PopulationOptions.prior_weight`. With no
reference the forecast *is* the Dirichlet forecast (a scheduler that starts cold loses nothing);
as jobs of the kind finish, the references outweigh it. A scenario is a Dirichlet scenario with
the prior's share, and otherwise follows one reference drawn with probability proportional to
:math:`w_{ij}`.

This is empirical Bayes in nonparametric form: the prior over a kind's trajectories is the
empirical distribution of the finished ones, and the weights condition it on the observed prefix.
The options' defaults were chosen on the Shockwave 120- and 220-job traces and on two generated
workloads (two-fold), and are reported on others (``python -m benchmarks.forecast``).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace

import numpy as np
import scipy.sparse as sp
from numpy.typing import NDArray

from vfm._validation import FloatArray, random_generator
from vfm.forecast.base import (
    SCENARIO_PROGRESS,
    JobStates,
    ScenarioProgress,
    SeedLike,
    Trajectory,
    check_horizon,
    check_states,
)
from vfm.forecast.dirichlet import DirichletForecaster
from vfm.parameters import Constraint, Instance, Interval, Real, check, check_parameters

IntArray = NDArray[np.intp]


@dataclass(frozen=True)
class PopulationOptions:
    r"""How references are weighed (module docstring).

    The defaults were chosen on the 120- and 220-job Shockwave traces and two generated
    workloads, each scored from the other (``python -m benchmarks.forecast --choose``), and are
    reported on other workloads.

    Attributes
    ----------
    prefix_bandwidth : float
        :math:`h`: how far a reference's epochs per regime before the current stage, plus the
        epochs by which the job has outlived the reference's current stage, may differ from the
        job's (as a share of the epochs done) and still count :math:`1/e` as much.
    size_bandwidth : float
        :math:`h_E`: the same for the log ratio of total epochs.
    other_regimes : float
        :math:`\lambda \in [0, 1]`: weight factor of a reference whose regime set differs.
    prior_weight : float
        :math:`w_0 > 0`: the Dirichlet forecast's weight against the references' effective
        number :math:`n_{eff} = (\sum_j w_{ij})^2 / \sum_j w_{ij}^2`; its share of the mixture is
        :math:`w_0 / (n_{eff} + w_0)`.
    spread : float
        :math:`\sigma \ge 0`: log-normal spread of a sampled remaining runtime around its
        reference's when the reference still expects a regime change (a reference is one job;
        the band needs the job-to-job noise in the timing it cannot show).
    """

    prefix_bandwidth: float = 0.05
    size_bandwidth: float = 0.25
    other_regimes: float = 0.1
    prior_weight: float = 0.05
    spread: float = 0.05

    def __post_init__(self) -> None:
        check_parameters(vars(self), _OPTIONS_CONSTRAINTS)


_POSITIVE = Interval(Real, 0, closed="neither")
#: `PopulationOptions`' constraints, checked on construction (`vfm.parameters`).
_OPTIONS_CONSTRAINTS: dict[str, Constraint] = {
    "prefix_bandwidth": _POSITIVE,
    "size_bandwidth": _POSITIVE,
    "prior_weight": _POSITIVE,
    "other_regimes": Interval(Real, 0, 1),
    "spread": Interval(Real, 0),
}


@dataclass(frozen=True, eq=False)
class Population:
    """The references as arrays (read-only): `K` finished jobs, up to `S` stages each, regimes padded to `W`.

    ``stage_rank[j, s]`` is the rank (in the job's regime set) of stage `s`'s regime, -1 past the
    job's ``stages[j]``; ``stage_length[j, s]`` its epochs; ``exponent[j, s]`` the fitted
    :math:`\\beta_s` of the job's cohort (kind, regime count and stage count).
    """

    kinds: tuple[Hashable, ...] = ()  # distinct groups; a reference's kind is kinds[code]
    code: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    labels: FloatArray = field(default_factory=lambda: np.zeros((0, 1)))
    width: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    epochs: FloatArray = field(default_factory=lambda: np.zeros(0))
    stages: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    stage_rank: NDArray[np.int64] = field(default_factory=lambda: np.zeros((0, 1), dtype=np.int64))
    stage_length: FloatArray = field(default_factory=lambda: np.zeros((0, 1)))
    exponent: FloatArray = field(default_factory=lambda: np.zeros((0, 1)))

    def __post_init__(self) -> None:
        for name in ("code", "labels", "width", "epochs", "stages", "stage_rank", "stage_length", "exponent"):
            getattr(self, name).setflags(write=False)

    @property
    def size(self) -> int:
        """Number of references `K`."""
        return int(self.epochs.size)

    def extended(self, trajectories: Sequence[Trajectory]) -> Population:
        """These references and `trajectories` (appended); the exponents are refitted over all."""
        if not trajectories:
            return self
        kinds = list(self.kinds)
        index = {kind: k for k, kind in enumerate(kinds)}
        for t in trajectories:
            if t.group not in index:
                index[t.group] = len(kinds)
                kinds.append(t.group)
        runs = [_stages(t) for t in trajectories]  # per finished job, O(its epochs)
        width = max(self.labels.shape[1], max(t.labels.size for t in trajectories))
        depth = max(self.stage_rank.shape[1], max(ranks.size for ranks, _ in runs))
        labels = np.full((len(trajectories), width), np.nan)
        ranks = np.full((len(trajectories), depth), -1, dtype=np.int64)
        lengths = np.zeros((len(trajectories), depth))
        for row, (t, (rank, length)) in enumerate(zip(trajectories, runs, strict=True)):
            labels[row, : t.labels.size] = t.labels
            ranks[row, : rank.size], lengths[row, : length.size] = rank, length
        code = np.concatenate([self.code, [index[t.group] for t in trajectories]]).astype(np.int64)
        width_of = np.concatenate([self.width, [t.labels.size for t in trajectories]]).astype(np.int64)
        epochs = np.concatenate([self.epochs, [t.epochs for t in trajectories]]).astype(np.float64)
        stages = np.concatenate([self.stages, [rank.size for rank, _ in runs]]).astype(np.int64)
        stage_length = np.concatenate([_pad_width(self.stage_length, depth), lengths])
        return Population(
            kinds=tuple(kinds), code=code,
            labels=np.concatenate([_pad_width(self.labels, width, np.nan), labels]), width=width_of,
            epochs=epochs, stages=stages,
            stage_rank=np.concatenate([_pad_width(self.stage_rank, depth, -1), ranks]),
            stage_length=stage_length,
            exponent=_exponents(np.stack([code, width_of, stages], axis=1), epochs, stage_length, stages),
        )


def _stages(trajectory: Trajectory) -> tuple[NDArray[np.int64], FloatArray]:
    """A job's stages: the rank and the length of each maximal run of one regime."""
    starts = np.flatnonzero(np.r_[True, trajectory.ranks[1:] != trajectory.ranks[:-1]])
    return trajectory.ranks[starts].astype(np.int64), np.diff(np.r_[starts, trajectory.epochs]).astype(np.float64)


def _exponents(cohort: NDArray[np.int64], epochs: FloatArray, length: FloatArray,
               stages: NDArray[np.int64]) -> FloatArray:
    r""":math:`\beta_s` of each reference's stages, shape (K, S): the least-squares slope of
    :math:`\log \ell_s` on :math:`\log E`, clipped to [0, 1], over the reference's cohort (kind,
    regime count, stage count); where the cohort has fewer than 3 references or no spread in `E`,
    over the kind's stage `s` of every cohort; where that cannot tell either, 1."""
    depth = length.shape[1]
    present = np.arange(depth) < stages[:, None]
    x = np.broadcast_to(np.log(epochs)[:, None], length.shape)
    y = np.log(np.where(present, length, 1.0))
    slope = np.ones(length.shape)
    fitted = np.zeros(length.shape, dtype=bool)
    for key in (cohort, cohort[:, :1]):  # the cohort first, then the kind alone
        _, member = np.unique(key, axis=0, return_inverse=True)
        cell = member.ravel()[:, None] * depth + np.arange(depth)
        cells = int(cell.max(initial=-1)) + 1

        def total(values: FloatArray, cell: NDArray[np.int64] = cell, cells: int = cells) -> FloatArray:
            return np.bincount(cell[present], weights=values[present], minlength=cells).astype(np.float64)

        count, sx, sy, sxx, sxy = total(np.ones(length.shape)), total(x), total(y), total(x * x), total(x * y)
        spread = count * sxx - sx * sx
        ok = (count >= 3) & (spread > 1e-6 * np.maximum(count * count, 1.0))
        fit = np.clip((count * sxy - sx * sy) / np.where(ok, spread, 1.0), 0.0, 1.0)
        use = ~fitted & ok[cell]
        slope[use] = fit[cell][use]
        fitted |= ok[cell]
    return slope


@dataclass(frozen=True)
class _Match:
    """Candidate (job, reference) pairs of a `JobStates`, sorted by job, and what each forecasts."""

    job: IntArray  # (P,)
    weight: FloatArray  # (P,) w_ij
    stage_epochs: FloatArray  # (P, S) epochs left in each of the reference's stages, stretched to the job
    seconds_per_epoch: FloatArray  # (P, S) the job's epoch duration in each stage's regime
    total_weight: FloatArray  # (n,) sum_j w_ij
    square_weight: FloatArray  # (n,) sum_j w_ij^2

    @property
    def runtime(self) -> FloatArray:
        """Each pair's forecast remaining runtime, shape (P,)."""
        return (self.stage_epochs * self.seconds_per_epoch).sum(axis=1)

    def cumulative(self, rounds: int, round_s: float, left: FloatArray) -> FloatArray:
        """Each pair's forecast (fluid) epochs done by each round's end, shape (P, rounds + 1)."""
        seconds = np.cumsum(self.stage_epochs * self.seconds_per_epoch, axis=1)
        epochs = np.cumsum(self.stage_epochs, axis=1)
        ends = round_s * np.arange(1, rounds + 1)
        # The first stage not finished by each round's end, and how far into it the job gets.
        stage = np.minimum((seconds[:, :, None] <= ends).sum(axis=1), seconds.shape[1] - 1)
        before_s = np.take_along_axis(np.pad(seconds, ((0, 0), (1, 0))), stage, axis=1)
        before_e = np.take_along_axis(np.pad(epochs, ((0, 0), (1, 0))), stage, axis=1)
        rate = np.take_along_axis(self.seconds_per_epoch, stage, axis=1)
        done = np.minimum(before_e + (ends - before_s) / rate, left[self.job, None])
        return np.pad(np.maximum(done, 0.0), ((0, 0), (1, 0)))


#: `PopulationForecaster`'s fields' constraints, checked on construction (`vfm.parameters`).
_FORECASTER_CONSTRAINTS: dict[str, Constraint] = {
    "scenario_progress": SCENARIO_PROGRESS,
    "population": Instance(Population, "a vfm.forecast.Population"),
    "options": Instance(PopulationOptions, "a vfm.forecast.PopulationOptions"),
    "prior": Instance(DirichletForecaster, "a vfm.forecast.DirichletForecaster"),
}


@dataclass(frozen=True)
class PopulationForecaster:
    r"""Forecasts a job from the finished jobs of its kind (module docstring); implements `Forecaster`.

    Parameters
    ----------
    population : Population, optional
        The references; default none (the forecasts are then the Dirichlet forecaster's). Add
        finished jobs with `learned`.
    options : PopulationOptions, optional
    prior : DirichletForecaster, optional
        The fallback and the prior of the mixture; default Shockwave's.
    scenario_progress : {"fluid", "whole"}
        What `sample_epochs_per_round` counts: fluid progress along the drawn reference's stages
        (default) or whole epochs ending in each round; a scenario of the prior counts the same way.

    Examples
    --------
    Finished jobs of a kind that trained their first 10 epochs at batch size 32 teach the forecaster
    what a new job of the kind will do; the Dirichlet prior alone spreads the epochs evenly:

    >>> from vfm.forecast import JobStates, PopulationForecaster, Trajectory
    >>> finished = [Trajectory("lm", [32] * 10 + [64] * e) for e in (20, 40, 80)]
    >>> forecaster = PopulationForecaster().learned(finished)
    >>> new = JobStates.from_lists([60], [{32: 60.0, 64: 30.0}], [[32] * 4], groups=["lm"])
    >>> forecaster.remaining_runtime(new).round(1)  # truth 1860 s: 6 more epochs at 60 s, 50 at 30 s
    array([1876.])
    >>> PopulationForecaster().remaining_runtime(new).round(1)  # no references: the Dirichlet forecast
    array([2516.2])
    """

    population: Population = field(default_factory=Population)
    options: PopulationOptions = field(default_factory=PopulationOptions)
    prior: DirichletForecaster = field(default_factory=DirichletForecaster)
    scenario_progress: ScenarioProgress = "fluid"

    def __post_init__(self) -> None:
        check_parameters(vars(self), _FORECASTER_CONSTRAINTS)

    def learned(self, trajectories: Sequence[Trajectory]) -> PopulationForecaster:
        """This forecaster with `trajectories` (finished jobs) added to its references."""
        check("trajectories", trajectories, Instance(Sequence | np.ndarray, "a list of vfm.forecast.Trajectory",
                                                     hint="wrap one trajectory in a list"))
        for k, t in enumerate(trajectories):
            check(f"trajectories[{k}]", t, Instance(Trajectory, "a vfm.forecast.Trajectory"))
        return replace(self, population=self.population.extended(list(trajectories)))

    def remaining_runtime(self, states: JobStates) -> FloatArray:
        """Forecast remaining runtime, shape (n,) seconds: the references' and the prior's, mixed by weight."""
        match = self._match(states)
        return self._mixed(match, match.runtime[:, None], self.prior.remaining_runtime(states)[:, None])[:, 0]

    def epochs_per_round(self, states: JobStates, rounds: int, round_s: float) -> FloatArray:
        """Forecast (fluid) epochs per round if the job runs all of them, shape (n, rounds), mixed by weight."""
        check_horizon(rounds, round_s)
        match = self._match(states)
        prior = np.cumsum(self.prior.epochs_per_round(states, rounds, round_s), axis=1)
        mixed = self._mixed(match, match.cumulative(rounds, float(round_s), states.remaining_epochs)[:, 1:], prior)
        return np.diff(mixed, axis=1, prepend=0.0)

    def sample_epochs_per_round(
        self, states: JobStates, rounds: int, round_s: float, scenarios: int, seed: SeedLike = None
    ) -> FloatArray:
        """Scenarios of epochs per round, shape (scenarios, n, rounds): each job follows one
        reference drawn by weight, or a Dirichlet scenario with the prior's share; whole epochs
        or fluid progress as `scenario_progress` says."""
        check_horizon(rounds, round_s, scenarios)
        rng = random_generator(seed)
        match = self._match(states)
        pair = self._draw(match, rng, scenarios)
        prior = replace(self.prior, scenario_progress=self.scenario_progress)
        fallback = prior.sample_epochs_per_round(states, rounds, round_s, scenarios, seed=rng)
        if not match.job.size:
            return fallback
        done = match.cumulative(rounds, float(round_s), states.remaining_epochs)
        if self.scenario_progress == "whole":
            done = np.floor(done + 1e-9)
        return np.where((pair >= 0)[:, :, None], np.diff(done, axis=1)[np.maximum(pair, 0)], fallback)

    def sample_remaining_runtime(self, states: JobStates, scenarios: int, seed: SeedLike = None) -> FloatArray:
        r"""Scenarios of each job's remaining runtime, shape (scenarios, n) seconds (for bands and
        calibration): a drawn reference's forecast times a log-normal factor of spread
        :math:`\sigma`, or a Dirichlet scenario with the prior's share."""
        check_horizon(1, 1.0, scenarios)
        rng = random_generator(seed)
        match = self._match(states)
        pair = self._draw(match, rng, scenarios)
        fallback = self.prior.sample_remaining_runtime(states, scenarios, seed=rng)
        if not match.job.size:
            return fallback
        # Only a forecast that still expects a regime change is uncertain in its timing.
        changing = (match.stage_epochs > 0).sum(axis=1) >= 2
        chosen = np.maximum(pair, 0)
        noise = np.exp(self.options.spread * changing[chosen] * rng.standard_normal(pair.shape))
        return np.where(pair >= 0, match.runtime[chosen] * noise, fallback)

    def _mixed(self, match: _Match, per_pair: FloatArray, prior: FloatArray) -> FloatArray:
        """Per job, the weighted mixture of a per-pair forecast (P, k) and the prior's (n, k)."""
        n = prior.shape[0]
        weights = sp.csr_matrix((match.weight, (match.job, np.arange(match.job.size))), shape=(n, match.job.size))
        share = self._prior_share(match)[:, None]
        mean = (weights @ per_pair) / np.where(match.total_weight > 0, match.total_weight, 1.0)[:, None]
        return (1.0 - share) * mean + share * prior

    def _prior_share(self, match: _Match) -> FloatArray:
        """The prior's share of each job's mixture, :math:`w_0 / (n_{eff} + w_0)`, shape (n,)."""
        effective = match.total_weight ** 2 / np.where(match.square_weight > 0, match.square_weight, 1.0)
        return self.options.prior_weight / (effective + self.options.prior_weight)

    def _draw(self, match: _Match, rng: np.random.Generator, scenarios: int) -> NDArray[np.int64]:
        """A pair per scenario and job, -1 for the prior, shape (S, n), drawn by weight."""
        n = match.total_weight.size
        share = self._prior_share(match)
        start = np.searchsorted(match.job, np.arange(n))
        stop = np.searchsorted(match.job, np.arange(n), side="right")
        # Each job's weights normalized to sum to 1, so that job k's cumulative runs from k to
        # k + 1: a global sum of the raw weights would lose a job whose weights are below the
        # rounding of the jobs' before it (and draw a pair of another job).
        total = np.where(match.total_weight > 0, match.total_weight, 1.0)
        cumulative = np.concatenate([[0.0], np.cumsum(match.weight / total[match.job])])
        uniform = rng.random((scenarios, n))
        # Below `share`: the prior; above, a reference, by its weight.
        point = (uniform - share) / np.where(share < 1.0, 1.0 - share, 1.0)
        index = np.searchsorted(cumulative, cumulative[start] + np.maximum(point, 0.0), side="right") - 1
        index = np.clip(index, start, np.maximum(stop - 1, start))
        return np.where((point >= 0) & (stop > start) & (match.total_weight > 0), index, -1).astype(np.int64)

    def _match(self, states: JobStates) -> _Match:
        check_states(states, "PopulationForecaster")
        refs, options, n = self.population, self.options, states.n_jobs
        width = max(states.n_regimes, refs.labels.shape[1])
        labels = _pad_width(states.regime_labels, width, np.nan)
        order = np.argsort(np.where(np.isnan(labels), np.inf, labels), axis=1, kind="stable")
        rank_of = np.argsort(order, axis=1)  # column -> rank in the job's regime set
        labels = np.take_along_axis(labels, order, axis=1)
        durations = np.take_along_axis(_pad_width(states.regime_durations, width), order, axis=1)
        counts = np.take_along_axis(_pad_width(states.regime_counts, width), order, axis=1)
        started = states.last_regime >= 0
        current = np.where(started, rank_of[np.arange(n), np.maximum(states.last_regime, 0)], 0)
        prefix = counts - np.where(np.arange(width) == current[:, None], states.last_run[:, None], 0.0)
        stage = states.changes.astype(np.int64)

        job, reference = _candidates(states, refs, width)
        depth = refs.stage_rank.shape[1]
        in_reach = stage[job] < refs.stages[reference]
        at = np.minimum(stage[job], depth - 1)
        same_regime = ~started[job] | (refs.stage_rank[reference, at] == current[job])
        keep = in_reach & same_regime
        job, reference, at = job[keep], reference[keep], at[keep]

        stretch = (states.total_epochs[job] / refs.epochs[reference])[:, None] ** refs.exponent[reference]
        length = refs.stage_length[reference] * stretch  # (P, S) stages stretched to the job
        ranks = refs.stage_rank[reference]
        before = np.arange(depth) < at[:, None]
        seen = np.zeros((job.size, width))
        np.add.at(seen, (np.repeat(np.arange(job.size), depth)[before.ravel()], ranks[before]), length[before])
        in_stage = length[np.arange(job.size), at]
        run = states.last_run[job]
        mismatch = np.abs(prefix[job] - seen).sum(axis=1) + np.maximum(run - in_stage, 0.0)
        weight = (np.exp(-mismatch / (options.prefix_bandwidth * np.maximum(states.epochs_done[job], 1.0)))
                  * np.exp(-np.abs(np.log(states.total_epochs[job] / refs.epochs[reference]))
                           / options.size_bandwidth)
                  * np.where(_same_labels(labels[job], refs.labels[reference], width), 1.0, options.other_regimes))

        # What is left: the rest of the current stage, then the later ones; the reference's longest
        # stage from the current one on absorbs the difference to the epochs left (a job that
        # outlasts a short final stage keeps to the long stage before it).
        later = (np.arange(depth) >= at[:, None]) & (np.arange(depth) < refs.stages[reference][:, None])
        rest = np.where(later, length, 0.0)
        rest[np.arange(job.size), at] = np.maximum(in_stage - run, 0.0)
        left = states.remaining_epochs[job]
        longest = np.argmax(np.where(later, length, -1.0), axis=1)
        rest[np.arange(job.size), longest] = np.maximum(
            rest[np.arange(job.size), longest] + left - rest.sum(axis=1), 0.0)
        rest = np.diff(np.minimum(np.cumsum(rest, axis=1), left[:, None]), axis=1, prepend=0.0)
        seconds = np.take_along_axis(durations[job], np.maximum(ranks, 0), axis=1)
        seconds = np.where(ranks >= 0, seconds, durations[job, :1])  # padding: any positive duration
        return _Match(job, weight, rest, seconds, np.bincount(job, weights=weight, minlength=n).astype(np.float64),
                      np.bincount(job, weights=weight**2, minlength=n).astype(np.float64))


def _candidates(states: JobStates, refs: Population, width: int) -> tuple[IntArray, IntArray]:
    """(job, reference) pairs of the same kind and regime count, sorted by job."""
    n = states.n_jobs
    index = {kind: k for k, kind in enumerate(refs.kinds)}
    kind = np.array([index.get(g, -1) for g in (states.groups or (None,) * n)], dtype=np.int64)
    job_key = np.where(kind >= 0, kind * (width + 1) + states.regimes_per_job.astype(np.int64), -1)
    ref_key = refs.code * (width + 1) + refs.width
    by_key = np.argsort(ref_key, kind="stable")
    lo = np.searchsorted(ref_key[by_key], job_key, side="left")
    hi = np.where(job_key >= 0, np.searchsorted(ref_key[by_key], job_key, side="right"), lo)
    sizes = hi - lo
    job = np.repeat(np.arange(n), sizes)
    return job, by_key[np.repeat(lo - np.cumsum(sizes) + sizes, sizes) + np.arange(sizes.sum())]


def _same_labels(a: FloatArray, b: FloatArray, width: int) -> NDArray[np.bool_]:
    """Whether two padded, sorted label rows are the same regime set, per row."""
    b = _pad_width(b, width, np.nan)
    return ((a == b) | (np.isnan(a) & np.isnan(b))).all(axis=1)


def _pad_width(values: np.ndarray, width: int, fill: float = 0.0) -> np.ndarray:
    """`values` with axis 1 padded to `width` columns."""
    pad = width - values.shape[1]
    if pad <= 0:
        return values
    widths = [(0, 0)] * values.ndim
    widths[1] = (0, pad)
    return np.pad(values, widths, constant_values=fill)
