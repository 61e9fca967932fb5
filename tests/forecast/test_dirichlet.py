"""Shockwave's Dirichlet forecaster: worked examples, posterior behaviour, point forecasts, scenarios."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, Forecaster, JobStates, check_horizon

SHOCKWAVE = DirichletForecaster()
#: The exact posterior predictive scenarios: whole epochs per round.
WHOLE = DirichletForecaster(scenario_progress="whole")
TWO_REGIMES = {32: 60.0, 64: 30.0}


def shockwave_estimate(total: int, modes: dict[int, float], schedule: list[int], progress: int) -> float:
    """Shockwave's remaining-runtime estimate restated from its description, exact in fractions.

    uw-mad-dash/shockwave scheduler/JobMetaData.py, ``dirichlet_posterior_remaining_runtime``:
    prior total/|modes| per batch size; +1 per batch size of epochs 0..progress (the epoch in
    progress included); rebase to total * alpha / sum(alpha); subtract 1 per observed epoch while
    the rebased count is >= 1; weight by the mean epoch durations; scale by
    remaining / max(int(sum + 1), remaining) with remaining = total - progress.
    """
    seen = schedule[: progress + 1]
    alpha = {b: Fraction(total, len(modes)) + seen.count(b) for b in modes}
    rebased = {b: total * a / sum(alpha.values()) for b, a in alpha.items()}
    for b in seen:
        if rebased[b] >= 1:
            rebased[b] -= 1
    remaining = total - progress
    inflated = max(int(sum(rebased.values()) + 1), remaining)
    runtime = sum(rebased[b] * Fraction(modes[b]) for b in modes)
    return float(runtime * remaining / inflated)


# --- (a) worked examples, derived by hand from the Dirichlet model (docs/planning.md) ---------------


def test_worked_example_three_epochs_at_32_one_at_64():
    # E = 10, prior 5 + 5. Posterior (8, 6), mean (4/7, 3/7). Quotas 10*4/7 - 3 = 19/7 and
    # 10*3/7 - 1 = 23/7 sum to the 6 epochs left. Runtime (19*60 + 23*30)/7 = 1830/7 s.
    states = JobStates.from_lists([10], [TWO_REGIMES], [[32, 32, 32, 64]])
    np.testing.assert_allclose(SHOCKWAVE.posterior(states), [[8, 6]])
    np.testing.assert_allclose(SHOCKWAVE.posterior_mean(states), [[4 / 7, 3 / 7]])
    np.testing.assert_allclose(SHOCKWAVE.remaining_mix(states), [[19 / 42, 23 / 42]])
    np.testing.assert_allclose(SHOCKWAVE.remaining_runtime(states), [1830 / 7])
    # Shockwave at progress 3 has seen the batch sizes of epochs 0..3: the same four epochs.
    assert shockwave_estimate(10, TWO_REGIMES, [32, 32, 32, 64] + [64] * 6, progress=3) == pytest.approx(1830 / 7)


def test_worked_example_nothing_observed_is_the_prior_mean_duration():
    # E = 12 over three regimes: 4 epochs each, 4 * (10 + 20 + 30) = 240 s.
    states = JobStates.from_lists([12], [{8: 10.0, 16: 20.0, 32: 30.0}])
    np.testing.assert_allclose(SHOCKWAVE.remaining_runtime(states), [240.0])


def test_worked_example_shockwave_progress_zero_has_seen_one_epoch():
    # Shockwave at progress 0 counts the first epoch's batch size (8): posterior (5, 4, 4), rebased
    # 12/13 * (5, 4, 4), minus 1 at 8: (47, 48, 48)/13, summing to the 11 epochs after it.
    # Runtime (47*10 + 48*20 + 48*30)/13 = 2870/13 s: vfm's estimate once that epoch is observed.
    modes = {8: 10.0, 16: 20.0, 32: 30.0}
    states = JobStates.from_lists([12], [modes], [[8]])
    np.testing.assert_allclose(SHOCKWAVE.remaining_runtime(states), [2870 / 13])
    assert shockwave_estimate(12, modes, [8, 16, 32] * 4, progress=0) == pytest.approx(2870 / 13)


def test_worked_example_exhausted_quota_is_clipped_and_rescaled():
    # E = 10, 8 epochs observed at 32. Posterior (13, 5), E*m = (65/9, 25/9). Regime 32 has used more
    # than its quota (65/9 - 8 < 0): clipped to 0, so the 2 epochs left are both at 64: 60 s.
    states = JobStates.from_lists([10], [TWO_REGIMES], [[32] * 8])
    np.testing.assert_allclose(SHOCKWAVE.remaining_mix(states), [[0.0, 1.0]])
    np.testing.assert_allclose(SHOCKWAVE.remaining_runtime(states), [60.0])
    # Shockwave (progress 7, 8 seen) keeps a fractional 2/9 at 32 and rescales by 3/4 instead:
    # (2/9*60 + 25/9*30) * 3/4 = 72.5 s. This is the documented departure (module docstring, item 2).
    assert shockwave_estimate(10, TWO_REGIMES, [32] * 8 + [64] * 2, progress=7) == pytest.approx(72.5)


def test_proportional_split_spreads_the_remaining_epochs_by_the_posterior_mean():
    # Same job as the first example: 6 epochs left at (4/7, 3/7): 6 * (4/7*60 + 3/7*30) = 1980/7 s.
    states = JobStates.from_lists([10], [TWO_REGIMES], [[32, 32, 32, 64]])
    np.testing.assert_allclose(DirichletForecaster(split="proportional").remaining_runtime(states), [1980 / 7])


@st.composite
def schedules(draw):
    n_modes = draw(st.integers(1, 4))
    modes = {8 * 2**k: float(draw(st.integers(1, 500))) for k in range(n_modes)}
    total = draw(st.integers(n_modes, 60))
    schedule = draw(st.lists(st.sampled_from(sorted(modes)), min_size=total, max_size=total))
    progress = draw(st.integers(0, total - 1))
    return total, modes, schedule, progress


@given(schedules())
def test_equals_shockwave_whenever_no_quota_is_exhausted(case):
    total, modes, schedule, progress = case
    seen = schedule[: progress + 1]
    states = JobStates.from_lists([total], [modes], [seen])
    mean = SHOCKWAVE.posterior_mean(states)[0]
    counts = states.regime_counts[0]
    assume(np.all(total * mean >= counts))
    assert SHOCKWAVE.remaining_runtime(states)[0] == pytest.approx(
        shockwave_estimate(total, modes, schedule, progress), rel=1e-12
    )


def test_vectorized_over_jobs_with_padding_and_finished_jobs():
    states = JobStates.from_lists(
        [10, 12, 3],
        [TWO_REGIMES, {8: 10.0, 16: 20.0, 32: 30.0}, {1: 5.0}],
        [[32, 32, 32, 64], [], [1, 1, 1]],
    )
    np.testing.assert_allclose(SHOCKWAVE.remaining_runtime(states), [1830 / 7, 240.0, 0.0])
    assert not SHOCKWAVE.epochs_per_round(states, 4, 120.0)[2].any()
    assert not WHOLE.sample_epochs_per_round(states, 4, 120.0, 3, seed=0)[:, 2].any()


# --- the posterior mean and the observed frequencies ------------------------------------------------


@given(
    st.lists(st.integers(0, 30), min_size=1, max_size=5).filter(lambda c: sum(c) > 0),
    st.integers(0, 200),
    st.sampled_from([None, 0.5, 3.0, 40.0]),
)
def test_posterior_mean_moves_to_the_observed_frequencies(counts, extra, weight):
    """m = lambda * uniform + (1 - lambda) * f with lambda = w / (w + e): the gap to f shrinks as w/(w+e)."""
    regimes = {8 * (k + 1): 10.0 + k for k in range(len(counts))}
    frequencies = np.array(counts) / sum(counts)
    uniform = np.full(len(counts), 1 / len(counts))
    forecaster = DirichletForecaster(prior_weight=weight)
    gaps = []
    for scale in (1, 2, 4):  # observe the same mix again and again
        e = scale * sum(counts)
        total = e + extra
        observed = [b for b, c in zip(regimes, counts, strict=True) for _ in range(scale * c)]
        mean = forecaster.posterior_mean(JobStates.from_lists([total], [regimes], [observed]))[0]
        w = total if weight is None else weight
        np.testing.assert_allclose(mean, w / (w + e) * uniform + e / (w + e) * frequencies, atol=1e-12)
        gaps.append(np.abs(mean - frequencies).max())
        assert gaps[-1] <= w / (w + e) + 1e-12
    assert gaps[0] >= gaps[1] - 1e-12 >= gaps[2] - 2e-12
    if weight is not None:
        # A fixed prior weight is forgotten: with many epochs the mean is the observed frequencies.
        many = 10_000 * sum(counts)
        observed = [b for b, c in zip(regimes, counts, strict=True) for _ in range(10_000 * c)]
        mean = forecaster.posterior_mean(JobStates.from_lists([many], [regimes], [observed]))[0]
        assert np.abs(mean - frequencies).max() <= weight / (weight + many) + 1e-12


def test_shockwave_prior_keeps_half_the_weight_at_the_end():
    # w = E: after all E epochs are observed (all at 32), m = (1/2 * 1/2 + 1/2 * 1, 1/2 * 1/2).
    states = JobStates.from_lists([8], [TWO_REGIMES], [[32] * 8])
    np.testing.assert_allclose(SHOCKWAVE.posterior_mean(states), [[0.75, 0.25]])


# --- (b) point forecast per round ---------------------------------------------------------------------


@st.composite
def job_states(draw, max_jobs=6):
    n = draw(st.integers(1, max_jobs))
    totals, regime_sets, observed = [], [], []
    for _ in range(n):
        n_regimes = draw(st.integers(1, 4))
        regimes = {16 * (k + 1): draw(st.floats(1.0, 400.0)) for k in range(n_regimes)}
        total = draw(st.integers(1, 300))
        done = draw(st.integers(0, total))
        observed.append(draw(st.lists(st.sampled_from(sorted(regimes)), min_size=done, max_size=done)))
        totals.append(total)
        regime_sets.append(regimes)
    return JobStates.from_lists(totals, regime_sets, observed)


@given(job_states(), st.integers(1, 30), st.floats(10.0, 600.0), st.sampled_from(["shockwave", "proportional"]))
def test_epochs_per_round_never_exceed_the_remaining_epochs(states, rounds, round_s, split):
    forecaster = DirichletForecaster(split=split)
    rate = forecaster.epochs_per_round(states, rounds, round_s)
    assert rate.shape == (states.n_jobs, rounds)
    assert (rate >= 0).all()
    assert (rate.sum(axis=1) <= states.remaining_epochs * (1 + 1e-12)).all()
    # Full rounds at 1/mean duration until the job is done; then the fraction, then nothing.
    full = round_s / forecaster.expected_epoch_duration(states)
    np.testing.assert_allclose(rate.sum(axis=1), np.minimum(rounds * full, states.remaining_epochs), rtol=1e-12)
    assert (rate <= full[:, None] * (1 + 1e-12)).all()
    assert (np.diff(rate, axis=1) <= 1e-9).all()


@given(job_states(), st.sampled_from(["shockwave", "proportional"]))
def test_long_enough_window_forecasts_every_remaining_epoch(states, split):
    forecaster = DirichletForecaster(split=split)
    runtime = forecaster.remaining_runtime(states)
    rounds = int(np.ceil(runtime.max() / 120.0)) + 1
    rate = forecaster.epochs_per_round(states, rounds, 120.0)
    np.testing.assert_allclose(rate.sum(axis=1), states.remaining_epochs, rtol=1e-12)
    # The fluid trajectory ends exactly at the forecast remaining runtime.
    finished_in = np.argmax(np.cumsum(rate, axis=1) >= states.remaining_epochs[:, None] * (1 - 1e-12), axis=1)
    live = states.remaining_epochs > 0
    np.testing.assert_array_equal(finished_in[live], np.ceil(runtime[live] / 120.0 - 1e-9)[:] - 1)


# --- (c) scenarios ------------------------------------------------------------------------------------


def mixed_states():
    return JobStates.from_lists(
        [40, 300, 2000, 9, 50],
        [TWO_REGIMES, {8: 2.0, 16: 3.5, 32: 1.5}, {256: 0.9, 512: 0.97, 1024: 0.85}, {4: 50.0}, {1: 7.0, 2: 9.0}],
        [[32] * 5 + [64] * 2, [8] * 10 + [32] * 4, [], [4, 4], [2] * 49],
        job_ids=["lm", "resnet", "recommendation", "single", "almost-done"],
    )


@given(job_states(), st.integers(1, 25), st.sampled_from([30.0, 120.0]), st.integers(0, 2**32 - 1),
       st.sampled_from(["shockwave", "proportional"]))
def test_scenarios_are_whole_nonnegative_and_within_the_remaining_epochs(states, rounds, round_s, seed, split):
    forecaster = DirichletForecaster(split=split, scenario_progress="whole")
    sample = forecaster.sample_epochs_per_round(states, rounds, round_s, 4, seed=seed)
    assert sample.shape == (4, states.n_jobs, rounds)
    assert (sample >= 0).all() and (sample == np.round(sample)).all()
    assert (sample.sum(axis=2) <= states.remaining_epochs).all()
    # No epoch is shorter than the job's shortest regime.
    shortest = np.where(states.regime_mask, states.regime_durations, np.inf).min(axis=1)
    assert (np.cumsum(sample, axis=2) <= np.floor(round_s * np.arange(1, rounds + 1) / shortest[:, None]) + 1e-9).all()


def test_scenarios_are_reproducible_from_the_seed():
    states = mixed_states()
    first = WHOLE.sample_epochs_per_round(states, 20, 120.0, 8, seed=7)
    np.testing.assert_array_equal(first, WHOLE.sample_epochs_per_round(states, 20, 120.0, 8, seed=7))
    generator = WHOLE.sample_epochs_per_round(states, 20, 120.0, 8, seed=np.random.default_rng(7))
    np.testing.assert_array_equal(first, generator)
    assert not np.array_equal(first, WHOLE.sample_epochs_per_round(states, 20, 120.0, 8, seed=8))


def test_single_regime_jobs_are_deterministic():
    # 30 s epochs end exactly on 120 s round ends and count there: 4 per round until the 10 left run out.
    states = JobStates.from_lists([12, 100], [{64: 30.0}, {64: 50.0}], [[64, 64], []])
    sample = WHOLE.sample_epochs_per_round(states, 4, 120.0, 3, seed=0)
    np.testing.assert_array_equal(sample[:, 0], np.tile([4, 4, 2, 0], (3, 1)))
    np.testing.assert_array_equal(sample[:, 1], np.tile([2, 2, 3, 2], (3, 1)))  # ends at 100, 200, 250, 350, ...


def test_long_window_completes_every_remaining_epoch_in_every_scenario():
    states = mixed_states()
    longest = states.regime_durations.max(axis=1)
    rounds = int(np.ceil((states.remaining_epochs * longest).max() / 120.0))
    sample = WHOLE.sample_epochs_per_round(states, rounds, 120.0, 5, seed=1)
    np.testing.assert_array_equal(sample.sum(axis=2), np.tile(states.remaining_epochs, (5, 1)))


def renewal_cdf(durations: list[int], remaining: int, ends: list[int]) -> np.ndarray:
    """Exact P(C(tau) <= k) for i.i.d. epochs of equally likely integer durations, C capped at `remaining`.

    C(tau) >= k iff the first k epochs end by tau, so P(C >= k) = P(S_k <= tau); S_k's law is the
    k-fold convolution of the duration law.
    """
    horizon = max(ends)
    step = np.zeros(max(durations) + 1)
    step[durations] = 1 / len(durations)
    law = np.zeros(horizon + 1)
    law[0] = 1.0
    at_least = np.zeros((len(ends), remaining + 2))
    at_least[:, 0] = 1.0
    for k in range(1, remaining + 1):
        law = np.convolve(law, step)[: horizon + 1]
        at_least[:, k] = [law[: end + 1].sum() for end in ends]
    return 1 - at_least[:, 1:]  # P(C <= k) = 1 - P(C >= k + 1), k = 0..remaining


@pytest.mark.parametrize(
    ("regimes", "total", "rounds", "round_s"),
    [
        ({1: 3.0, 2: 5.0}, 100, 4, 10.0),  # few epochs per round: the whole window at once
        ({1: 1.0, 2: 2.0, 3: 3.0}, 1000, 3, 60.0),  # many: round by round with multinomial bulks
        ({1: 1.0, 2: 2.0, 3: 3.0}, 70, 3, 60.0),  # ... and the job runs out inside the window
        ({1: 20.0, 2: 21.0}, 1000, 3, 400.0),  # bulks of 19 that end just before the round's end
    ],
)
def test_scenarios_have_the_exact_renewal_distribution(regimes, total, rounds, round_s):
    # A huge prior weight pins p at the uniform prior mean (sd ~ 1e-6), so epochs are i.i.d. uniform
    # over the regimes and the cumulative count at each round's end has the law `renewal_cdf`.
    jobs, scenarios = 100, 400
    states = JobStates.from_lists([total] * jobs, [regimes] * jobs)
    sample = DirichletForecaster(prior_weight=1e12, scenario_progress="whole").sample_epochs_per_round(
        states, rounds, round_s, scenarios, seed=11
    )
    cumulative = np.cumsum(sample, axis=2).reshape(-1, rounds)
    ends = [round(round_s * (t + 1)) for t in range(rounds)]
    exact = renewal_cdf([round(d) for d in regimes.values()], total, ends)
    # DKW: P(sup |F_N - F| > eps) <= 2 exp(-2 N eps^2); eps for a 1e-6 chance per round end.
    eps = np.sqrt(np.log(2 / 1e-6) / (2 * cumulative.shape[0]))
    for t in range(rounds):
        empirical = (cumulative[:, t][:, None] <= np.arange(total + 1)[None, :]).mean(axis=0)
        assert np.abs(empirical - exact[t]).max() <= eps


@pytest.mark.parametrize(
    ("split", "observed"),
    [("proportional", [[32] * 30 + [64] * 10, [8] * 20 + [16] * 5 + [32] * 40]),
     ("shockwave", [[32] * 10 + [64] * 10, [8] * 10 + [16] * 10 + [32] * 10])],
)
def test_scenario_mean_approaches_the_point_forecast(split, observed):
    """Mean of (c) vs (b), cumulatively, within a bound derived from Wald's identity and Jensen.

    Given p, epochs are i.i.d. with mean mu_p in [d_min, d_max]; with N(tau) the epochs ended by
    tau, N + 1 is a stopping time and Wald gives E[S_{N+1}] = mu_p (E[N] + 1) with
    tau < S_{N+1} <= tau + d_max, so tau/mu_p - 1 < E[N | p] <= (tau + d_max)/mu_p - 1. Where
    q(p) is linear in p (always for "proportional"; for "shockwave" while no quota is exhausted,
    here ~10 posterior sd away), E[mu_p] = mu_bar and 0 <= E[1/mu_p] - 1/mu_bar <= Var(mu_p)/(d_min
    mu_bar^2). The window is short enough that no job runs out. So E[C] - tau/mu_bar lies in
    [-1, d_max/mu_bar - 1 + (tau + d_max) Var(mu_p)/(d_min mu_bar^2)], and the scenario mean is
    within 5 standard errors of E[C].
    """
    states = JobStates.from_lists([400, 1000], [TWO_REGIMES, {8: 4.0, 16: 2.5, 32: 1.5}], observed)
    forecaster = DirichletForecaster(split=split, scenario_progress="whole")
    rounds, round_s, scenarios = 6, 120.0, 4000
    point = np.cumsum(forecaster.epochs_per_round(states, rounds, round_s), axis=1)
    sample = np.cumsum(forecaster.sample_epochs_per_round(states, rounds, round_s, scenarios, seed=3), axis=2)
    shortest = np.where(states.regime_mask, states.regime_durations, np.inf).min(axis=1)
    assert (rounds * round_s / shortest < states.remaining_epochs).all()  # nobody runs out

    alpha = forecaster.posterior(states)
    mean = forecaster.posterior_mean(states)
    d = states.regime_durations
    # mu_p = sum_b q_b(p) d_b = const + sum_b g_b p_b, with g = d (proportional) or E d / (E - e).
    g = d if split == "proportional" else d * (states.total_epochs / states.remaining_epochs)[:, None]
    variance = ((mean * g**2).sum(axis=1) - (mean * g).sum(axis=1) ** 2) / (alpha.sum(axis=1) + 1)
    mu = forecaster.expected_epoch_duration(states)
    longest = states.regime_durations.max(axis=1)
    tau = round_s * np.arange(1, rounds + 1)
    upper = longest[:, None] / mu[:, None] - 1 + (tau + longest[:, None]) * (variance / (shortest * mu**2))[:, None]
    error = 5 * sample.std(axis=0) / np.sqrt(scenarios)
    gap = sample.mean(axis=0) - point
    assert (gap >= -1 - error).all()
    assert (gap <= upper + error).all()


def test_fluid_scenarios_progress_at_each_draws_expected_epoch_duration():
    # Fluid scenario s is the point forecast with the posterior mean replaced by the draw p^s.
    states = mixed_states()
    forecaster = DirichletForecaster(scenario_progress="fluid")
    sample = forecaster.sample_epochs_per_round(states, 20, 120.0, 6, seed=4)
    mix = forecaster._sample_mix(states, np.random.default_rng(4), 6)
    seconds = (mix * states.regime_durations).sum(axis=2)
    ends = 120.0 * np.arange(21)
    expected = np.diff(np.minimum(ends / seconds[:, :, None], states.remaining_epochs[:, None]), axis=2)
    np.testing.assert_allclose(sample, expected, rtol=1e-12)
    # Fractions of an epoch count, and no job is forecast more than it has left.
    assert (sample != np.round(sample)).any()
    assert (sample.sum(axis=2) <= states.remaining_epochs + 1e-9).all()
    # Single-regime jobs have no uncertainty: every scenario is the point forecast.
    point = forecaster.epochs_per_round(states, 20, 120.0)
    np.testing.assert_allclose(sample[:, 3], np.tile(point[3], (6, 1)), rtol=1e-12)


def test_fluid_scenarios_value_a_round_in_which_a_long_epoch_does_not_end():
    # A 300 s epoch never ends inside the first 120 s round: worth 0 whole epochs, 0.4 fluid.
    states = JobStates.from_lists([10], [{32: 300.0}])
    whole = WHOLE.sample_epochs_per_round(states, 3, 120.0, 2, seed=0)
    fluid = SHOCKWAVE.sample_epochs_per_round(states, 3, 120.0, 2, seed=0)  # fluid is the default
    np.testing.assert_array_equal(whole[0, 0], [0, 0, 1])
    np.testing.assert_allclose(fluid[0, 0], [0.4, 0.4, 0.4])


# --- the interface and validation --------------------------------------------------------------------


def test_dirichlet_forecaster_implements_the_interface():
    assert isinstance(SHOCKWAVE, Forecaster)

    class Constant:
        def remaining_runtime(self, states):
            return states.remaining_epochs * 10.0

        def epochs_per_round(self, states, rounds, round_s):
            check_horizon(rounds, round_s)
            return np.zeros((states.n_jobs, rounds))

        def sample_epochs_per_round(self, states, rounds, round_s, scenarios, seed=None):
            return np.zeros((scenarios, states.n_jobs, rounds))

    assert isinstance(Constant(), Forecaster)


def lists(**overrides):
    job = {
        "total_epochs": [10, 20],
        "regimes": [TWO_REGIMES, {128: 12.5, 256: 8.0}],
        "observed": [[32, 64], [128]],
        "job_ids": ["lm", "resnet"],
    }
    return JobStates.from_lists(**{**job, **overrides})


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"total_epochs": [10, -3], "observed": [[32], []]},
         r"total_epochs\[1\] \(job 1 \(id 'resnet'\)\) must be a positive whole number of epochs, got -3"),
        ({"total_epochs": [2, 20], "observed": [[32, 64, 64], []]},
         r"observed\[0\] \(job 0 \(id 'lm'\)\) lists 3 epochs, more epochs done than the job's total_epochs \(2\)"),
        ({"observed": [[32, 48], []]},
         r"observed\[0\]\[1\] \(job 0 \(id 'lm'\)\) is batch size 48, which is not in the job's regime set \{32, 64\}"),
        ({"regimes": [TWO_REGIMES, {128: 0.0}]},
         r"regimes\[1\] \(job 1 \(id 'resnet'\)\) gives batch size 128 an epoch duration of 0 s; "
         r"regime_durations must be > 0"),
        ({"regimes": [{32: -60.0, 64: 30.0}, {128: 1.0}]},
         r"regimes\[0\] \(job 0 \(id 'lm'\)\) gives batch size 32 an epoch duration of -60 s"),
        ({"regimes": [TWO_REGIMES, {}]}, r"regimes\[1\] \(job 1 \(id 'resnet'\)\) is empty"),
        ({"regimes": [[(32, 1.0), (32, 2.0)], {128: 1.0}]},
         r"regimes\[0\] \(job 0 \(id 'lm'\)\) lists a batch size twice"),
        ({"observed": [["x"], []]}, r"observed\[0\] \(job 0 \(id 'lm'\)\) must be a list of batch sizes"),
        ({"observed": [[32]]}, r"observed must have 2 entries, one per job of total_epochs, got 1"),
        ({"total_epochs": []}, r"total_epochs must list at least one job"),
    ],
)
def test_malformed_lists_are_rejected_naming_job_and_field(overrides, pattern):
    with pytest.raises(ValidationError, match=pattern):
        lists(**overrides)


ARRAYS = {
    "total_epochs": [10, 20],
    "regime_counts": [[1, 1], [1, 0]],
    "regime_durations": [[60.0, 30.0], [12.5, 0.0]],
    "regime_mask": [[True, True], [True, False]],
}


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"total_epochs": [10, 2.5]},
         r"total_epochs\[1\] \(job 1\) must be a positive whole number of epochs, got 2.5"),
        ({"regime_counts": [[1, -1], [1, 0]]},
         r"regime_counts\[0, 1\] \(job 0\) must be >= 0 \(epochs observed cannot be negative\), got -1"),
        ({"regime_counts": [[1, 1], [21, 0]]},
         r"regime_counts\[1\] \(job 1\) sums to more epochs done than the job's total_epochs, got 21"),
        ({"regime_counts": [[1, 1], [1, 2]]},
         r"regime_counts\[1, 1\] \(job 1\) counts epochs observed in a regime the job does not have"),
        ({"regime_counts": [[0.5, 1], [1, 0]]}, r"regime_counts\[0, 0\] \(job 0\) must be a whole number"),
        ({"regime_durations": [[60.0, -30.0], [12.5, 0.0]]},
         r"regime_durations\[0, 1\] \(job 0\) must be > 0 seconds, got -30"),
        ({"regime_mask": [[True, True], [False, False]], "regime_counts": [[1, 1], [0, 0]]},
         r"regime_mask\[1\] \(job 1\) has no regime"),
        ({"regime_mask": [[1, 1], [1, 0]]}, r"regime_mask's dtype must be 'bool', got 'int64'"),
        ({"regime_mask": [[True, True]]}, r"regime_mask must have shape \(2, 2\), got \(1, 2\)"),
        ({"regime_durations": [[60.0, np.nan], [12.5, 0.0]]}, r"regime_durations contains NaN"),
    ],
)
def test_malformed_arrays_are_rejected_naming_job_and_field(overrides, pattern):
    with pytest.raises(ValidationError, match=pattern):
        JobStates(**{**ARRAYS, **overrides})


def test_array_constructor_matches_from_lists_and_is_read_only():
    states = JobStates(**ARRAYS)
    np.testing.assert_array_equal(states.epochs_done, [2, 1])
    np.testing.assert_array_equal(states.regime_durations, [[60.0, 30.0], [12.5, 0.0]])
    with pytest.raises(ValueError, match="read-only"):
        states.regime_counts[0, 0] = 5
    same = JobStates.from_lists([10, 20], [{0: 60.0, 1: 30.0}, {0: 12.5}], [[0, 1], [0]])
    np.testing.assert_allclose(SHOCKWAVE.remaining_runtime(states), SHOCKWAVE.remaining_runtime(same))


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda s: SHOCKWAVE.epochs_per_round(s, 0, 120.0), r"rounds must be a positive whole number, got 0"),
        (lambda s: SHOCKWAVE.epochs_per_round(s, 2.0, 120.0), r"rounds must be a positive whole number"),
        (lambda s: SHOCKWAVE.epochs_per_round(s, 3, -1.0), r"round_s must be a finite number of seconds > 0"),
        (lambda s: WHOLE.sample_epochs_per_round(s, 3, np.inf, 2), r"round_s must be a finite number of seconds > 0"),
        (lambda s: WHOLE.sample_epochs_per_round(s, 3, 120.0, 0), r"scenarios must be a positive whole number"),
        (lambda s: DirichletForecaster(split="median"), r"split must be 'shockwave' or 'proportional'"),
        (lambda s: DirichletForecaster(prior_weight=0.0), r"prior_weight must be a finite number > 0"),
        (lambda s: DirichletForecaster(scenario_progress="epochs"), r"scenario_progress must be 'whole' or 'fluid'"),
        (lambda s: DirichletForecaster(prior_weight=10**400),
         r"^prior_weight must be a finite number > 0 or None, got 1000"),  # an int past a float
        (lambda s: DirichletForecaster(prior_weight=True), r"^prior_weight must be a finite number > 0 or None"),
        (lambda s: SHOCKWAVE.epochs_per_round(s, 3, 10**400), r"^round_s must be a finite number of seconds > 0"),
        (lambda s: WHOLE.sample_epochs_per_round(s, 3, 120.0, True), r"^scenarios must be a positive whole number"),
    ],
)
def test_bad_window_and_forecaster_arguments_are_rejected(call, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call(lists())


# --- issue 15: arrays read-only for good, masked arrays rejected, skewed durations bounded ------


def test_job_states_hand_out_arrays_that_cannot_be_made_writable_again():
    states = JobStates.from_lists([10, 4], [TWO_REGIMES, {128: 12.5}], [[32, 64], []])
    for name in ("total_epochs", "regime_counts", "regime_durations", "regime_mask", "regime_labels",
                 "last_regime", "last_run", "changes"):
        array = getattr(states, name)
        with pytest.raises(ValueError):
            array.setflags(write=True)  # was allowed: the states' own memory
        with pytest.raises(ValueError):
            array.base.setflags(write=True)


@pytest.mark.parametrize("argument", ["total_epochs", "regime_counts", "regime_durations", "regime_mask",
                                      "regime_labels"])
def test_job_states_reject_a_masked_array_instead_of_ignoring_its_mask(argument):
    values = {"total_epochs": np.array([10.0, 4.0]), "regime_counts": np.array([[1.0, 0.0], [0.0, 0.0]]),
              "regime_durations": np.array([[60.0, 30.0], [12.5, 1.0]]),
              "regime_mask": np.array([[True, True], [True, False]]),
              "regime_labels": np.array([[32.0, 64.0], [128.0, np.nan]])}
    values[argument] = np.ma.masked_array(values[argument])
    with pytest.raises(ValidationError, match=rf"^{argument} is a numpy masked array"):
        JobStates(**values)
    with pytest.raises(ValidationError, match=r"^observed\[0\] \(job 0\) is a numpy masked array"):
        JobStates.from_lists([10], [TWO_REGIMES], [np.ma.masked_array([32, 64], mask=[False, True])])


def test_whole_scenarios_with_durations_far_apart_stay_cheap():
    # 1e-5 s and 0.1 s epochs: 1.2e7 candidate epochs per round were drawn one by one (34 s, 2 GB
    # for these 16 scenarios); the bisection draws O(R log k) counts per round.
    import time

    states = JobStates.from_lists([10**8], [{32: 1e-5, 64: 0.1}], [[32, 64]])
    started = time.perf_counter()
    counts = WHOLE.sample_epochs_per_round(states, 20, 120.0, 16, seed=0)
    assert time.perf_counter() - started < 2.0
    assert (counts % 1 == 0).all() and (counts >= 0).all()
    # About half the epochs at 0.1 s: some 2400 per round of 120 s.
    assert 2200 < counts.mean() < 2600


def test_the_bisection_draws_the_same_distribution_as_epochs_drawn_one_by_one(monkeypatch):
    import vfm.forecast.renewal as dirichlet

    states = JobStates.from_lists([5000], [{32: 0.01, 64: 0.5, 128: 0.2}], [[32, 64, 128]])
    forecaster = DirichletForecaster(scenario_progress="whole", prior_weight=1e6)  # regimes drawn ~ 1/3 each
    one_by_one = forecaster.sample_epochs_per_round(states, 3, 10.0, 4000, seed=1)[:, 0]
    monkeypatch.setattr(dirichlet, "_MAX_RAGGED", 0)  # every round's last pass by bisection
    bisected = forecaster.sample_epochs_per_round(states, 3, 10.0, 4000, seed=2)[:, 0]
    # Means within 4 standard errors (each ~0.09 epochs) and variances within 10 %, round by round.
    assert np.abs(one_by_one.mean(axis=0) - bisected.mean(axis=0)).max() < 4 * np.sqrt(2 * 31 / 4000)
    np.testing.assert_allclose(bisected.var(axis=0), one_by_one.var(axis=0), rtol=0.1)


# --- issue 15: strings, scalars and booleans where lists of numbers go; states and seeds ---------


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: JobStates.from_lists([10], [{32: 60.0}], ["32"]),
         r"observed\[0\] \(job 0\) must be a list of batch sizes, one number per epoch .* got str '32'"),
        (lambda: JobStates.from_lists([10], [{32: 60.0}], [32]), r"observed\[0\] \(job 0\) must be a list"),
        (lambda: JobStates.from_lists([10], [{32: 60.0}], [[[32]]]),
         r"observed\[0\] \(job 0\) must be a flat list"),
        (lambda: JobStates.from_lists([10], [{32: 60.0}], [[True]]),
         r"observed\[0\] \(job 0\) must be a list of batch sizes \(real numbers\): its entries must hold numbers"),
        (lambda: JobStates.from_lists(10, [{32: 60.0}]), r"total_epochs must be a list with one entry .* got int"),
        (lambda: JobStates.from_lists([True], [{32: 60.0}]), r"total_epochs must hold numbers, got booleans"),
        (lambda: JobStates.from_lists([10], {32: 60.0}), r"regimes must be a list with one entry per job, got dict"),
        (lambda: JobStates.from_lists([10, 10], [{32: 60.0}] * 2, job_ids="ab"),
         r"job_ids must be a list with one entry per job, got str 'ab'"),
        (lambda: JobStates([10, 10], [[0], [0]], [[60.0], [60.0]], [[True], [True]], job_ids="ab"),
         r"job_ids must be a list with one entry per job, got the string 'ab'"),
        (lambda: SHOCKWAVE.remaining_runtime(None),
         r"states given to DirichletForecaster.remaining_runtime must be a vfm.forecast.JobStates"),
        (lambda: SHOCKWAVE.epochs_per_round("states", 3, 120.0),
         r"states given to DirichletForecaster.epochs_per_round must be a vfm.forecast.JobStates .*got str"),
        (lambda: SHOCKWAVE.posterior_mean([1]),
         r"states given to DirichletForecaster must be a vfm.forecast.JobStates"),
        (lambda: SHOCKWAVE.sample_epochs_per_round(lists(), 3, 120.0, 2, seed="x"),
         r"seed must be None, a whole number >= 0, a numpy SeedSequence or Generator, got 'x'"),
        (lambda: SHOCKWAVE.sample_remaining_runtime(lists(), 2, seed=-1), r"seed must be None, a whole number >= 0"),
        (lambda: SHOCKWAVE.sample_remaining_runtime(lists(), 2, seed=True), r"seed must be None, a whole number >= 0"),
    ],
)
def test_malformed_lists_states_and_seeds_are_rejected_by_name(call, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call()
