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

from vfm._validation import FloatArray, random_generator
from vfm.forecast.base import (
    SCENARIO_PROGRESS,
    JobStates,
    ScenarioProgress,
    SeedLike,
    check_horizon,
    check_states,
    fluid_epochs_per_round,
)
from vfm.forecast.renewal import Renewals, simulate_epochs_per_round
from vfm.parameters import Constraint, Interval, OneOf, Optional, Real, check_parameters

Split = Literal["shockwave", "proportional"]

#: `DirichletForecaster`'s options' constraints, checked on construction (`vfm.parameters`).
_CONSTRAINTS: dict[str, Constraint] = {
    "scenario_progress": SCENARIO_PROGRESS,
    "split": OneOf(("shockwave", "proportional")),
    "prior_weight": Optional(Interval(Real, 0, closed="neither")),
}


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
        check_parameters(vars(self), _CONSTRAINTS)

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
          duration (seconds and gigabytes for 16 scenarios of such a job); instead the epochs that fit are
          found by bisection, still exactly: a block's regime counts are drawn at once, and the
          counts of its first half are multivariate hypergeometric given them, so the cost is
          :math:`O(R \log_2 k)` draws per job and round for `k` candidate epochs.

        Python loops run only over rounds, a bounded number of bulk passes per round, and the
        (at most `R`) regimes; everything is vectorized over jobs, scenarios and epochs
        (`python -m benchmarks.plan` times the forecast with each re-plan).

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
        renewals = Renewals(mix, states.regime_durations[jobs], np.rint(states.remaining_epochs).astype(np.int64)[jobs])
        counts = simulate_epochs_per_round(rng, renewals, rounds, float(round_s))
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
