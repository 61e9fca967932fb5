"""The forecast benchmark's scoring and command line (the full run is `python -m benchmarks.forecast`)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import forecast
from vfm.forecast import PopulationOptions


def test_an_exact_forecast_is_covered_always_by_the_quantile_band_and_80_percent_by_the_pit_band():
    truth = np.linspace(100.0, 200.0, 2000)
    coverage = forecast.band_coverage(np.broadcast_to(truth, (50, truth.size)), truth, np.random.default_rng(0))
    assert coverage["quantile"] == 1.0
    assert coverage["pit"] == pytest.approx(0.8, abs=0.03)  # 2000 Bernoulli(0.8): 3.4 standard errors


def test_a_forecast_that_misses_is_not_covered():
    truth = np.full(100, 100.0)
    samples = np.random.default_rng(1).normal(200.0, 1.0, (50, 100))
    assert forecast.band_coverage(samples, truth, np.random.default_rng(0)) == {"quantile": 0.0, "pit": 0.0}


def test_scores_a_frozen_trace_with_every_forecaster():
    case = forecast.frozen("shockwave_120jobs_32gpus", 0.5)
    assert case.states.groups is not None and case.cumulative.shape == (120, forecast.ROUNDS + 1)
    for name, forecaster in forecast.forecasters(["shockwave_220jobs_64gpus"], PopulationOptions()).items():
        result = forecast.score(forecaster, case, 120.0, scenarios=20, seed=0)
        assert result["runtime"].shape == (120,) and np.isfinite(result["runtime"]).all(), name


def test_a_bad_option_is_one_line_and_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_:
        forecast.main(["--option", "bandwidth=1"])
    assert exit_.value.code == 2
    assert "no PopulationOptions field 'bandwidth'" in capsys.readouterr().err
