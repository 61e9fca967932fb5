"""Forecasting dynamic adaptation.

A scheduler never changes how a job adapts (its batch-size schedule); it observes finished epochs
and forecasts the rest. `JobStates` holds what is known about `n` jobs, `Forecaster` is the
interface the planner consumes (implement it to plug in another model), and
`DirichletForecaster` is Shockwave's Bayesian model, with point forecasts (posterior mean) and
posterior predictive scenarios.
"""

from vfm.forecast.base import Forecaster, JobStates, SeedLike, check_horizon
from vfm.forecast.dirichlet import DirichletForecaster

__all__ = ["DirichletForecaster", "Forecaster", "JobStates", "SeedLike", "check_horizon"]
