"""The population forecaster: cold start, learning, exactness on a known structure, scenarios, errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, JobStates, PopulationForecaster, PopulationOptions, Trajectory

REGIMES = {16.0: 90.0, 32.0: 50.0, 64.0: 30.0, 128.0: 20.0}


def gns_like(epochs: int) -> list[float]:
    """Doubles at epochs 10 and 30 whatever the length, then a last epoch at the largest size."""
    return [16.0] * 10 + [32.0] * 20 + [64.0] * (epochs - 31) + [128.0]


def accordion_like(epochs: int) -> list[float]:
    """A critical regime over the first 30 % of training, then the large batch size."""
    head = round(0.3 * epochs)
    return [16.0] * head + [128.0] * (epochs - head)


def truth(sequence: list[float], done: int) -> float:
    return float(sum(REGIMES[b] for b in sequence[done:]))


def states_at(sequences: list[list[float]], done: list[int], group: str | None) -> JobStates:
    return JobStates.from_lists([len(s) for s in sequences], [REGIMES] * len(sequences),
                                [s[:d] for s, d in zip(sequences, done, strict=True)],
                                groups=[group] * len(sequences))


EXACT = PopulationOptions(prior_weight=1e-12)


@pytest.mark.parametrize("shape, lengths", [(gns_like, (60, 120, 240, 500)), (accordion_like, (50, 100, 200, 400))])
def test_a_known_structure_is_forecast_exactly(shape, lengths):
    # Stages of fixed length (GNS) and of a fixed share (Accordion) are both learned from the lengths.
    references = [Trajectory("kind", shape(e), regimes=list(REGIMES)) for e in lengths]
    forecaster = PopulationForecaster(options=EXACT).learned(references)
    sequences = [shape(e) for e in (80, 300, 300, 300, 300)]
    done = [5, 15, 60, 200, 299]
    got = forecaster.remaining_runtime(states_at(sequences, done, "kind"))
    want = np.array([truth(s, d) for s, d in zip(sequences, done, strict=True)])
    # One epoch of rounding in where a stretched share-of-training stage ends (round(0.3 E)).
    np.testing.assert_allclose(got, want, rtol=0, atol=max(REGIMES.values()) - min(REGIMES.values()))
    dirichlet = DirichletForecaster().remaining_runtime(states_at(sequences, done, "kind"))
    assert np.abs(got - want).max() < 0.25 * np.abs(dirichlet - want).max()


def test_progress_per_round_follows_the_references():
    forecaster = PopulationForecaster(options=EXACT, scenario_progress="whole").learned(
        [Trajectory("kind", gns_like(e)) for e in (60, 120, 240)])
    sequence = gns_like(100)
    states = states_at([sequence], [8], "kind")
    rounds, round_s = 40, 100.0
    got = np.cumsum(forecaster.epochs_per_round(states, rounds, round_s)[0])
    ends = np.cumsum([REGIMES[b] for b in sequence[8:]])
    true_done = np.searchsorted(ends, round_s * np.arange(1, rounds + 1), side="right")
    # Fluid against whole epochs: within one epoch at every round's end.
    assert np.abs(got - true_done).max() <= 1.0
    assert got[-1] == pytest.approx(states.remaining_epochs[0])
    whole = forecaster.sample_epochs_per_round(states, rounds, round_s, scenarios=3, seed=1)
    np.testing.assert_array_equal(np.cumsum(whole[:, 0], axis=1), np.broadcast_to(true_done, (3, rounds)))
    # Fluid scenarios follow the same references without rounding down to whole epochs: with the
    # prior's share negligible, each is the point forecast (the references agree on this job).
    fluid = replace(forecaster, scenario_progress="fluid").sample_epochs_per_round(states, rounds, round_s, 3, seed=1)
    np.testing.assert_allclose(fluid[:, 0], np.broadcast_to(np.diff(got, prepend=0.0), (3, rounds)), atol=1e-9)
    assert (fluid != np.round(fluid)).any()


def test_cold_start_is_the_dirichlet_forecast():
    sequences = [gns_like(80), accordion_like(50)]
    states = states_at(sequences, [12, 20], "kind")
    cold, dirichlet = PopulationForecaster(), DirichletForecaster()
    np.testing.assert_array_equal(cold.remaining_runtime(states), dirichlet.remaining_runtime(states))
    np.testing.assert_allclose(cold.epochs_per_round(states, 6, 120.0), dirichlet.epochs_per_round(states, 6, 120.0))
    # A job of a kind never seen, or of unknown kind, is forecast by the prior too.
    learned = cold.learned([Trajectory("other", gns_like(80))])
    for group in ("kind", None):
        np.testing.assert_array_equal(learned.remaining_runtime(states_at(sequences, [12, 20], group)),
                                      dirichlet.remaining_runtime(states))


def test_the_prior_keeps_a_share_that_shrinks_with_the_references():
    sequence = accordion_like(100)
    states = states_at([sequence], [10], "kind")
    want, prior = truth(sequence, 10), DirichletForecaster().remaining_runtime(states)[0]
    errors = []
    for k in (1, 4, 16):
        forecaster = PopulationForecaster(options=PopulationOptions(prior_weight=0.5)).learned(
            [Trajectory("kind", accordion_like(100), regimes=list(REGIMES))] * k)
        errors.append(abs(forecaster.remaining_runtime(states)[0] - want))
    # With k identical references the prior's share is w0 / (k + w0).
    np.testing.assert_allclose(errors, [abs(prior - want) * 0.5 / (k + 0.5) for k in (1, 4, 16)], rtol=1e-9)


def test_scenarios_are_whole_bounded_and_reproducible():
    forecaster = PopulationForecaster(scenario_progress="whole").learned(
        [Trajectory("kind", gns_like(e)) for e in (60, 90, 150)])
    sequences = [gns_like(70), gns_like(200), accordion_like(40)]
    states = states_at(sequences, [0, 35, 39], "kind")
    samples = forecaster.sample_epochs_per_round(states, 10, 120.0, scenarios=8, seed=3)
    assert samples.shape == (8, 3, 10)
    assert np.all(samples == np.round(samples)) and np.all(samples >= 0)
    assert np.all(samples.sum(axis=2) <= states.remaining_epochs)
    np.testing.assert_array_equal(samples, forecaster.sample_epochs_per_round(states, 10, 120.0, 8, seed=3))
    runtimes = forecaster.sample_remaining_runtime(states, scenarios=50, seed=3)
    assert runtimes.shape == (50, 3) and np.all(runtimes > 0)


def test_dirichlet_runtime_scenarios_average_to_the_point_forecast():
    # With the proportional split the remaining mix is linear in p, so the mean is the point forecast.
    forecaster = DirichletForecaster(split="proportional")
    states = JobStates.from_lists([40], [REGIMES], [[16.0] * 5 + [32.0] * 3])
    samples = forecaster.sample_remaining_runtime(states, scenarios=4000, seed=0)[:, 0]
    standard_error = samples.std() / np.sqrt(samples.size)
    assert abs(samples.mean() - forecaster.remaining_runtime(states)[0]) < 5 * standard_error


def test_population_arrays_are_read_only():
    population = PopulationForecaster().learned([Trajectory("kind", gns_like(60))]).population
    with pytest.raises(ValueError):
        population.stage_length[0, 0] = 1.0


@pytest.mark.parametrize("make, message", [
    (lambda: Trajectory(["unhashable"], [1.0]), "group must be hashable"),
    (lambda: Trajectory("kind", []), "batch_sizes must list at least one epoch.s regime"),
    (lambda: Trajectory("kind", [16.0, np.nan]), r"batch_sizes\[1\] must be a finite batch size, got nan"),
    (lambda: Trajectory("kind", [16.0, 32.0], regimes=[16.0]), "not in regimes"),
    (lambda: PopulationOptions(prior_weight=0), "prior_weight must be a finite number > 0"),
    (lambda: PopulationOptions(other_regimes=2), "other_regimes must be a number in"),
    (lambda: PopulationOptions(spread=-1), "spread must be"),
    (lambda: PopulationOptions(size_bandwidth=np.inf), "size_bandwidth must be"),
    (lambda: PopulationOptions(prefix_bandwidth=10**400), "^prefix_bandwidth must be a finite number > 0, got 1"),
    (lambda: PopulationOptions(spread="0.1"), r"^spread must be a finite number >= 0, got '0.1'$"),
    (lambda: PopulationForecaster(options={"spread": 0.1}),
     r"^options must be a vfm.forecast.PopulationOptions, got dict$"),
    (lambda: PopulationForecaster(prior=DirichletForecaster),
     r"^prior must be a vfm.forecast.DirichletForecaster, got the class DirichletForecaster; pass an instance"),
    (lambda: PopulationForecaster(population=[]), r"^population must be a vfm.forecast.Population, got list$"),
    (lambda: PopulationForecaster().learned(["not a trajectory"]), r"trajectories\[0\] must be"),
    (lambda: PopulationForecaster(scenario_progress="partial"), "scenario_progress must be 'whole' or 'fluid'"),
])
def test_bad_input_is_named(make, message):
    with pytest.raises(ValidationError, match=message):
        make()


def test_states_record_the_last_regime_and_the_changes():
    states = JobStates.from_lists([10, 6, 3], [REGIMES] * 3, [[16, 16, 32, 16, 16], [], [64]])
    np.testing.assert_array_equal(states.last_regime, [0, -1, 2])
    np.testing.assert_array_equal(states.last_run, [2, 0, 1])
    np.testing.assert_array_equal(states.changes, [2, 0, 0])
    # From counts alone the regimes are taken to have run in ascending order.
    again = JobStates(states.total_epochs, states.regime_counts, states.regime_durations, states.regime_mask,
                      regime_labels=states.regime_labels)
    np.testing.assert_array_equal(again.last_regime, [1, -1, 2])
    np.testing.assert_array_equal(again.changes, [1, 0, 0])


@pytest.mark.parametrize("recent, message", [
    (([1, -1], [1, 0], [0, 0]), r"recent\[0\] \(last_regime\)"),  # job 0 observed nothing in regime 1
    (([0, 0], [1, 0], [0, 0]), r"recent\[0\] \(last_regime\)"),  # job 1 has no epochs: must be -1
    (([0, -1], [3, 0], [0, 0]), r"recent\[1\] \(last_run\)"),  # more than the regime's count
    (([0, -1], [2, 0], [2, 0]), r"recent\[2\] \(changes\)"),  # more changes than epochs - 1
    (([0, -1], [2, 0]), r"recent must have 3 entries, one per array of \(last_regime, last_run, changes\)"),
])
def test_bad_recent_history_is_named(recent, message):
    with pytest.raises(ValidationError, match=message):
        JobStates([5, 4], [[2, 0], [0, 0]], [[60.0, 30.0], [60.0, 30.0]], np.ones((2, 2), dtype=bool),
                  recent=recent)


def test_groups_must_match_the_jobs():
    with pytest.raises(ValidationError, match="groups must have 2 entries, one per job of total_epochs"):
        JobStates.from_lists([3, 4], [REGIMES] * 2, groups=["a"])
    with pytest.raises(ValidationError, match=r"groups\[1\] .* must be hashable"):
        JobStates.from_lists([3, 4], [REGIMES] * 2, groups=["a", ["b"]])


def test_a_job_whose_references_weigh_almost_nothing_draws_its_own_references():
    # Job 1's weights (1e-16) are below the rounding of job 0's cumulative weight (20): drawn by a
    # global running sum, they were lost and job 1 followed a reference of job 2.
    from vfm.forecast.population import _Match

    weight = np.array([10.0, 10.0, 1e-16, 2e-16, 5.0])
    job = np.array([0, 0, 1, 1, 2])
    match = _Match(job=job, weight=weight, stage_epochs=np.zeros((5, 1)), seconds_per_epoch=np.ones((5, 1)),
                   total_weight=np.bincount(job, weight), square_weight=np.bincount(job, weight**2))
    forecaster = PopulationForecaster(options=PopulationOptions(prior_weight=1e-12))
    pair = forecaster._draw(match, np.random.default_rng(0), 2000)
    assert np.isin(pair[:, 1], [2, 3]).all()
    assert abs((pair[:, 1] == 3).mean() - 2 / 3) < 0.05  # by weight: 2e-16 of 3e-16 (4.7 standard errors)
    assert np.isin(pair[:, 0], [0, 1]).all() and (pair[:, 2] == 4).all()


@pytest.mark.parametrize(
    ("call", "pattern"),
    [
        (lambda: PopulationForecaster(options=3), r"options must be a vfm.forecast.PopulationOptions, got int"),
        (lambda: PopulationForecaster(population=[1, 2]), r"population must be a vfm.forecast.Population, got list"),
        (lambda: PopulationForecaster(prior="dirichlet"), r"prior must be a vfm.forecast.DirichletForecaster, got str"),
        (lambda: PopulationForecaster().learned(Trajectory("a", [32])),
         r"trajectories must be a list of vfm.forecast.Trajectory, got Trajectory; wrap one trajectory in a list"),
        (lambda: PopulationForecaster().remaining_runtime("states"),
         r"states given to PopulationForecaster must be a vfm.forecast.JobStates .*got str"),
        (lambda: PopulationForecaster().sample_remaining_runtime(
            JobStates.from_lists([10], [{32: 60.0}]), 2, seed="x"), r"seed must be None, a whole number >= 0"),
    ],
)
def test_malformed_forecaster_parts_are_rejected_by_name(call, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call()
