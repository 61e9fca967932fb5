r"""Shockwave's Bayesian forecast of dynamic adaptation: a Dirichlet posterior over regimes.

Model
-----
Job `i` trains :math:`E` epochs, each in one of its regimes :math:`b \in \mathcal{B}`
(batch sizes, :math:`R = |\mathcal{B}|`), at :math:`d_b` seconds per epoch. The regime
proportions :math:`p \in \Delta^{R-1}` are unknown, with the prior and posterior

.. math::

    p \sim \mathrm{Dir}(\alpha^0),\quad \alpha^0_b = \frac{w}{R}
    \qquad\Longrightarrow\qquad
    p \mid c \sim \mathrm{Dir}(\alpha),\quad \alpha_b = \frac{w}{R} + c_b,

where :math:`c_b` counts the finished epochs observed in regime `b`,
:math:`e = \sum_b c_b`, and the prior weight is :math:`w = E` (Shockwave's choice, the
default; see `DirichletForecaster`). The posterior mean is

.. math::

    m_b = \frac{\alpha_b}{w + e}
        = \frac{w}{w + e}\,\frac{1}{R} + \frac{e}{w + e}\,\frac{c_b}{e},

a convex combination of the uniform prior mean and the observed frequencies, with weight
:math:`e / (w + e)` on the data. (With :math:`w = E` and :math:`e \le E`, the data never get
more than half the weight.)

**Where the remaining epochs go.** Shockwave reads :math:`E p` as the job's whole regime
composition, "rescaled so the total count stays E", and removes what has been observed: regime
`b` still owes :math:`E p_b - c_b` epochs. These quotas sum to :math:`E - e` exactly; a regime
observed more often than its share gets a negative quota, which is clipped to 0 and the rest
rescaled so the counts again total :math:`E - e`. The *remaining mix* is

.. math::

    q_b(p) = \frac{\max(E p_b - c_b,\, 0)}{\sum_{b'} \max(E p_{b'} - c_{b'},\, 0)}
    \qquad (\texttt{split="shockwave"}),

or, for the textbook exchangeable model in which every future epoch is a fresh draw from
:math:`p`, simply :math:`q(p) = p` (``split="proportional"``). Point forecasts use the posterior
mean, :math:`\bar q = q(m)`; scenarios use :math:`q(p^s)` for posterior draws :math:`p^s`.

**What Shockwave's code does, and where vfm departs from it.** Followed from
``uw-mad-dash/shockwave``, ``scheduler/JobMetaData.py`` (commit
``e07dd205c52afe9981a4f092051c1d0f844ebf3d``): ``metadata_bs_schedule`` (prior
:math:`E/|\text{modes}|` per batch size), ``get_bs_epoch_duration_map`` (a regime's duration is
the mean profiled duration of its epochs), and ``dirichlet_posterior_remaining_runtime``
(posterior :math:`\alpha`; "rebased" counts :math:`E\,\alpha_b / \sum\alpha = E m_b`; minus one
per observed epoch; weighted by the durations; times
``remaining / max(int(S + 1), remaining)`` with :math:`S` the sum of the rebased counts and
``remaining`` :math:`= E - p`). Shockwave uses this estimate for its makespan term, its
finish-time-fairness targets and its work-conserving fill (``scheduler/shockwave.py``).
Differences:

1. Shockwave counts the batch sizes of epochs ``0 .. progress`` as observed, the one in progress
   included, so its estimate at ``progress = p`` equals `DirichletForecaster.remaining_runtime`
   on the state that has observed those :math:`p + 1` epochs, whenever no quota is exhausted
   (:math:`E m_b \ge c_b` for all `b`), where its final rescale is exactly 1. vfm's states hold
   finished epochs only.
2. When a quota is exhausted, Shockwave subtracts an observed epoch only while the rebased count
   is still :math:`\ge 1` (leaving a fractional remainder), and its final factor
   :math:`(E - p) / \lfloor S + 1 \rfloor \le 1` only approximately restores the count; vfm
   clips at 0 and rescales to exactly :math:`E - e` epochs, so the forecast counts as many epochs
   as the job has left.
3. Shockwave's planner (``scheduler/shockwave.py``, ``interpolate_epoch_duration``) prices an
   epoch in the window at the mean duration of the epochs run so far; vfm uses the posterior
   expected duration :math:`\sum_b \bar q_b d_b`, so that the forecast progress finishes exactly at
   the forecast remaining runtime.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from vfm._validation import FloatArray, random_generator
from vfm.errors import ValidationError
from vfm.forecast.base import (
    JobStates,
    ScenarioProgress,
    SeedLike,
    check_horizon,
    check_scenario_progress,
    check_states,
    fluid_epochs_per_round,
)

Split = Literal["shockwave", "proportional"]

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
# drawn one by one (`_fit_by_bisection`); blocks stay under numpy's hypergeometric limit (1e9).
_MAX_RAGGED = 4096
_BISECTION_BLOCK = 1 << 29
# Cells that can fit at most this many epochs per round on average draw the whole window's epochs
# at once (cheaper than stepping round by round).
_FEW_PER_ROUND = 12


@dataclass(frozen=True)
class DirichletForecaster:
    r"""Shockwave's Dirichlet forecaster of regimes, remaining runtime and per-round progress.

    Implements `vfm.forecast.Forecaster`; the model, the posterior and the remaining mix
    :math:`q` are in the module docstring (`vfm.forecast.dirichlet`).

    Parameters
    ----------
    split : {"shockwave", "proportional"}
        How the remaining epochs are split across regimes: Shockwave's quotas
        :math:`E p_b - c_b` (default), or in proportion to :math:`p`.
    prior_weight : float, optional
        Total prior concentration :math:`w > 0`, spread evenly over a job's regimes. Default
        (None): the job's total epochs :math:`E`, as Shockwave does.
    scenario_progress : {"fluid", "whole"}
        What `sample_epochs_per_round` counts: fluid progress at the expected epoch duration of
        each scenario's regime mix, as the point forecast does at the posterior mean (default:
        the planner's input), or the whole epochs that end in each round of a simulated run (the
        exact posterior predictive count, which makes the sample-average planner starve
        long-epoch jobs: docs/planning.md, "Scenarios: whole epochs or fluid progress").

    Examples
    --------
    A 10-epoch job at batch size 32 (60 s per epoch) or 64 (30 s) that has run 3 epochs at 32
    and 1 at 64. Posterior :math:`\alpha = (5 + 3, 5 + 1)`, mean :math:`(4/7, 3/7)`; the quotas
    :math:`10 \cdot 4/7 - 3 = 19/7` and :math:`10 \cdot 3/7 - 1 = 23/7` sum to the 6 epochs
    left, so the remaining runtime is :math:`(19 \cdot 60 + 23 \cdot 30)/7 = 1830/7` s:

    >>> from vfm.forecast import DirichletForecaster, JobStates
    >>> states = JobStates.from_lists([10], [{32: 60.0, 64: 30.0}], [[32, 32, 32, 64]])
    >>> forecaster = DirichletForecaster()
    >>> forecaster.posterior_mean(states)
    array([[0.57142857, 0.42857143]])
    >>> forecaster.remaining_runtime(states)
    array([261.42857143])
    >>> forecaster.epochs_per_round(states, rounds=3, round_s=120.0).round(3)
    array([[2.754, 2.754, 0.492]])
    >>> forecaster.sample_epochs_per_round(states, 3, 120.0, scenarios=2, seed=0).shape
    (2, 1, 3)
    >>> whole = DirichletForecaster(scenario_progress="whole")
    >>> bool((whole.sample_epochs_per_round(states, 3, 120.0, scenarios=2, seed=0) % 1 == 0).all())
    True
    """

    split: Split = "shockwave"
    prior_weight: float | None = None
    scenario_progress: ScenarioProgress = "fluid"

    def __post_init__(self) -> None:
        check_scenario_progress(self.scenario_progress)
        if self.split not in ("shockwave", "proportional"):
            raise ValidationError(f"split must be 'shockwave' or 'proportional', got {self.split!r}")
        if self.prior_weight is not None and (
            isinstance(self.prior_weight, bool)
            or not isinstance(self.prior_weight, int | float | np.integer | np.floating)
            or not (np.isfinite(self.prior_weight) and self.prior_weight > 0)
        ):
            raise ValidationError(f"prior_weight must be a positive, finite number, got {self.prior_weight!r}")

    def posterior(self, states: JobStates) -> FloatArray:
        r"""Dirichlet posterior concentrations :math:`\alpha_b = w / R + c_b`, shape (n, R); 0 where padded."""
        check_states(states, "DirichletForecaster")
        weight = states.total_epochs if self.prior_weight is None else np.full(states.n_jobs, self.prior_weight)
        prior = weight / states.regimes_per_job
        return np.where(states.regime_mask, prior[:, None] + states.regime_counts, 0.0)

    def posterior_mean(self, states: JobStates) -> FloatArray:
        r"""Posterior mean regime probabilities :math:`m_b = \alpha_b / \sum_{b'} \alpha_{b'}`, shape (n, R)."""
        alpha = self.posterior(states)
        return alpha / alpha.sum(axis=1, keepdims=True)

    def remaining_mix(self, states: JobStates) -> FloatArray:
        r"""Forecast share of the remaining epochs in each regime, :math:`\bar q = q(m)`, shape (n, R).

        Rows sum to 1 (also for a finished job, where the mix is irrelevant).
        """
        return self._mix(self.posterior_mean(states), states)

    def remaining_runtime(self, states: JobStates) -> FloatArray:
        r"""Posterior-mean remaining runtime, shape (n,) seconds.

        .. math:: \hat T = (E - e) \sum_b \bar q_b\, d_b ,

        the remaining epochs split across regimes by :math:`\bar q` times each regime's epoch
        duration. With ``split="shockwave"`` and no exhausted quota this is
        :math:`\sum_b (E m_b - c_b)\, d_b`, Shockwave's estimate (module docstring, items 1-2).
        """
        check_states(states, "DirichletForecaster.remaining_runtime")
        return states.remaining_epochs * self.expected_epoch_duration(states)

    def expected_epoch_duration(self, states: JobStates) -> FloatArray:
        r"""Expected seconds per remaining epoch, :math:`\bar\mu = \sum_b \bar q_b d_b`, shape (n,)."""
        return (self.remaining_mix(states) * states.regime_durations).sum(axis=1)

    def epochs_per_round(self, states: JobStates, rounds: int, round_s: float) -> FloatArray:
        r"""Expected epochs each job completes in each of the next rounds if it runs all of them, shape (n, T).

        A fluid forecast at the posterior-mean rate: by time :math:`\tau` the job has completed

        .. math:: F(\tau) = \min\!\left(\frac{\tau}{\bar\mu},\; E - e\right),
                  \qquad r_t = F((t+1)\,W) - F(t\,W),

        with :math:`W` = `round_s` and :math:`\bar\mu = \sum_b \bar q_b d_b` the expected epoch
        duration. So every round gets :math:`W / \bar\mu` epochs until the cumulative forecast
        reaches the remaining epochs; the round in which it does gets the fraction left, later
        rounds 0, and the rounds add up to the job finishing exactly at `remaining_runtime`.

        The choice :math:`1/\bar\mu` (not the mean throughput :math:`\sum_b \bar q_b / d_b`) is the
        long-run epoch rate of the model (renewal theorem: epochs per second tend to
        :math:`1/E[d]`). Approximations, all of which `sample_epochs_per_round` avoids: epochs
        are fluid (a fraction of an epoch counts as progress; the whole-epoch count by time
        :math:`\tau` is within :math:`[-1, d_{\max}/\bar\mu - 1]` of :math:`\tau/\mu` in
        expectation, by Wald's identity); the regime probabilities are fixed at their posterior
        mean (by Jensen, :math:`E[\tau/\mu(p)] \ge \tau/\mu(m)`, so this slightly
        under-forecasts when the posterior is wide); the order of the regimes is ignored; and the
        window starts with a fresh epoch (progress inside the running epoch is not tracked).

        Parameters
        ----------
        states : JobStates
        rounds : int
            Number of rounds `T` in the window.
        round_s : float
            Round length `W` in seconds.

        Returns
        -------
        ndarray, shape (n, rounds)
            :math:`r_{it} \ge 0`, summing over `t` to at most :math:`E_i - e_i`.
        """
        check_states(states, "DirichletForecaster.epochs_per_round")
        check_horizon(rounds, round_s)
        return fluid_epochs_per_round(self.expected_epoch_duration(states), states.remaining_epochs, rounds,
                                      float(round_s))

    def sample_epochs_per_round(
        self,
        states: JobStates,
        rounds: int,
        round_s: float,
        scenarios: int,
        seed: SeedLike = None,
    ) -> FloatArray:
        r"""Posterior predictive scenarios of the epochs each job completes per round, shape (S, n, T).

        With ``scenario_progress="whole"``, for each scenario `s` and job `i`, independently: draw regime probabilities
        :math:`p^s \sim \mathrm{Dir}(\alpha)` from the posterior, then the regime of each future
        epoch i.i.d. from the remaining mix :math:`q(p^s)`; run the epochs back to back from the
        start of the window, at their regimes' durations; count the epochs that end in each round
        (an epoch ending exactly at a round's end counts in that round), stopping after the job's
        :math:`E - e` remaining epochs. Each entry is a whole number of epochs, as the planner's
        scenario :math:`r_{sit}` if the job runs all of rounds :math:`0..t`.

        The simulation is exact (it has the distribution just described) but draws epochs one at a
        time only where that is cheap, so its cost stays near a few random draws per job, scenario
        and round even for jobs that run hundreds of short epochs per round:

        - a draw whose mix allows one epoch duration only is deterministic:
          :math:`\min(\lfloor \tau / d \rfloor, E - e)` epochs by time :math:`\tau`;
        - a draw that can fit only a few epochs per round (at most 12 on average over the window,
          judged at the shortest duration) draws the regime of every epoch that could end in the
          window at once and bins their end times by round;
        - otherwise the window is stepped round by round. Within a round, the next
          :math:`k = \lfloor (\text{time left}) / d_{\max} \rfloor` epochs end before the
          round's end whatever their regimes, so only their total duration matters: their regime
          counts are drawn at once, :math:`\sim \mathrm{Multinomial}(k, q(p^s))` (as a chain of
          binomials). The last few epochs of the round are drawn one by one, and the first that
          does not fit is carried over as the next round's first epoch;
        - when more than 4096 epochs could still end in the round after that (durations far
          apart, as 1e-5 s and 0.1 s, where the bulk draws leave most of the round), drawing them
          one by one would cost time and memory in proportion to the round over the shortest
          duration (34 s and 2 GB for 16 scenarios of such a job); instead the epochs that fit are
          found by bisection, still exactly: a block's regime counts are drawn at once, and the
          counts of its first half are multivariate hypergeometric given them, so the cost is
          :math:`O(R \log_2 k)` draws per job and round for `k` candidate epochs (0.1 s).

        Python loops run only over rounds, a bounded number of bulk passes per round, and the
        (at most `R`) regimes; everything is vectorized over jobs, scenarios and epochs. On the
        Shockwave 900-job trace (16 scenarios, 20 rounds of 120 s) a call took about 50 ms with
        every job at its first epoch and under 40 ms at random progress (2-core machine).

        With ``scenario_progress="fluid"`` (the default) a scenario keeps only the posterior draw: the job
        progresses at :math:`1/\mu^s` epochs per second, :math:`\mu^s = \sum_b q_b(p^s) d_b`,
        as in `epochs_per_round` (fractions of an epoch count). Whole epochs make a round
        in which a long epoch does not end worth nothing to the job in that scenario, so a
        planner averaging such scenarios undervalues short allotments to jobs whose epochs
        outlast a round; the fluid scenarios keep the uncertainty about the regime mix without
        that artefact (docs/planning.md, "Scenarios: whole epochs or fluid progress").

        Parameters
        ----------
        states : JobStates
        rounds : int
            Number of rounds `T`.
        round_s : float
            Round length in seconds.
        scenarios : int
            Number of scenarios `S`.
        seed : int, numpy.random.SeedSequence or numpy.random.Generator, optional
            Passed to `numpy.random.default_rng`: the same integer gives the same scenarios.

        Returns
        -------
        ndarray, shape (scenarios, n, rounds)
            Whole numbers :math:`\ge 0` (fractions with ``scenario_progress="fluid"``); over `t`
            they sum to at most :math:`E_i - e_i`.
        """
        check_states(states, "DirichletForecaster.sample_epochs_per_round")
        check_horizon(rounds, round_s, scenarios)
        rng = random_generator(seed)
        n, n_regimes = states.n_jobs, states.n_regimes
        if self.scenario_progress == "fluid":
            seconds = (self._sample_mix(states, rng, scenarios) * states.regime_durations).sum(axis=2)
            return fluid_epochs_per_round(seconds, states.remaining_epochs, rounds, float(round_s))
        mix = self._sample_mix(states, rng, scenarios).reshape(scenarios * n, n_regimes)
        jobs = np.tile(np.arange(n), scenarios)
        counts = _simulate(
            rng,
            mix,
            states.regime_durations[jobs],
            np.rint(states.remaining_epochs).astype(np.int64)[jobs],
            rounds,
            float(round_s),
        )
        return counts.reshape(scenarios, n, rounds)

    def sample_remaining_runtime(self, states: JobStates, scenarios: int, seed: SeedLike = None) -> FloatArray:
        r"""Posterior predictive scenarios of each job's remaining runtime, shape (scenarios, n) seconds.

        Per scenario and job: :math:`p^s \sim \mathrm{Dir}(\alpha)`, the remaining epochs' regime
        counts :math:`\sim \mathrm{Multinomial}(E - e, q(p^s))`, and the runtime
        :math:`\sum_b n_b d_b`. Its 10 and 90 % quantiles are the forecast's 80 % band.
        """
        check_states(states, "DirichletForecaster.sample_remaining_runtime")
        check_horizon(1, 1.0, scenarios)
        rng = random_generator(seed)
        mix = self._sample_mix(states, rng, scenarios)
        counts = rng.multinomial(np.rint(states.remaining_epochs).astype(np.int64), mix)
        return (counts * states.regime_durations).sum(axis=2)

    def _sample_mix(self, states: JobStates, rng: np.random.Generator, scenarios: int) -> FloatArray:
        """Remaining mixes :math:`q(p^s)` of posterior draws :math:`p^s`, shape (scenarios, n, R)."""
        alpha = self.posterior(states)
        # Dirichlet draws as normalized gammas; padded regimes get shape 1 and are then zeroed.
        gammas = rng.standard_gamma(np.broadcast_to(np.where(states.regime_mask, alpha, 1.0),
                                                    (scenarios, states.n_jobs, states.n_regimes)))
        gammas = np.where(states.regime_mask, gammas, 0.0)
        total = gammas.sum(axis=2, keepdims=True)
        # A tiny prior weight can underflow every gamma of a draw; fall back to the posterior mean.
        draws = np.where(total > 0, gammas / np.where(total > 0, total, 1.0), self.posterior_mean(states))
        return self._mix(draws, states)

    def _mix(self, probabilities: FloatArray, states: JobStates) -> FloatArray:
        """The remaining mix q(p) for probabilities of shape (..., n, R)."""
        if self.split == "proportional":
            return probabilities
        quota = np.maximum(states.total_epochs[:, None] * probabilities - states.regime_counts, 0.0)
        owed = quota.sum(axis=-1, keepdims=True)
        # Quotas sum to at least E - e > 0 while epochs remain; a finished job may owe nothing.
        return np.where(owed > 0, quota / np.where(owed > 0, owed, 1.0), probabilities)


def _simulate(
    rng: np.random.Generator,
    mix: FloatArray,
    durations: FloatArray,
    remaining: NDArray[np.int64],
    rounds: int,
    round_s: float,
) -> FloatArray:
    """Epochs completed per round by independent renewal processes, shape (m, rounds).

    Cell `k` runs up to ``remaining[k]`` epochs back to back from time 0, each in regime `b` with
    probability ``mix[k, b]`` and lasting ``durations[k, b]`` seconds; round `t` ends at
    ``(t + 1) * round_s``. Three exact methods, by cost: a closed form when only one duration is
    possible; all the window's epochs at once when a cell can fit only a few per round; round by
    round, with bulk draws, otherwise.
    """
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
        counts[few] = _simulate_window(rng, mix[few], durations[few], reachable[few], rounds, round_s)
    if many.size:
        counts[many] = _simulate_rounds(rng, mix[many], durations[many], remaining[many], rounds, round_s)
    return counts


def _simulate_window(
    rng: np.random.Generator,
    mix: FloatArray,
    durations: FloatArray,
    epochs: NDArray[np.int64],
    rounds: int,
    round_s: float,
) -> FloatArray:
    """`_simulate` for cells that fit few epochs: draw all ``epochs[k]`` that could end in the window."""
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


def _simulate_rounds(
    rng: np.random.Generator,
    mix: FloatArray,
    durations: FloatArray,
    remaining: NDArray[np.int64],
    rounds: int,
    round_s: float,
) -> FloatArray:
    """`_simulate` round by round, for cells that fit many epochs per round."""
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
            fitted, seconds, carry = _fit_by_bisection(rng, mix[wide], durations[wide], end - now[wide],
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


def _fit_by_bisection(
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
    """Regime counts of ``epochs[k]`` i.i.d. epochs of cell `k`, shape (cells, R): the binomial
    chain of `_bulk_seconds` (``chain[b, k]``: regime b's share of the epochs not placed yet; the
    closing regime ``closing[k]`` takes the rest)."""
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
