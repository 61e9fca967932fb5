"""Forecasting dynamic adaptation.

A scheduler never changes how a job adapts (its batch-size schedule); it observes finished epochs
and forecasts the rest. `JobStates` holds what is known about `n` jobs, `Forecaster` is the
interface the planner consumes (implement it to plug in another model), and
`DirichletForecaster` is Shockwave's Bayesian model, with point forecasts (posterior mean) and
posterior predictive scenarios; `PopulationForecaster` learns from the finished jobs of each kind
(`Trajectory`) and falls back to the Dirichlet model where it has none; a `LearningForecaster`
such as it is taught by `vfm.planner.Policy` as jobs complete.
"""

from vfm.forecast.base import (
    Forecaster,
    JobStates,
    LearningForecaster,
    ScenarioProgress,
    SeedLike,
    Trajectory,
    check_horizon,
)
from vfm.forecast.dirichlet import DirichletForecaster
from vfm.forecast.oracle import OracleForecaster
from vfm.forecast.population import Population, PopulationForecaster, PopulationOptions

__all__ = ["DirichletForecaster", "Forecaster", "JobStates", "LearningForecaster", "OracleForecaster", "Population",
           "PopulationForecaster", "PopulationOptions", "ScenarioProgress", "SeedLike", "Trajectory", "check_horizon"]
