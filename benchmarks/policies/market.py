"""The two market policies of the reproduction: `vfm` (this library's planner) and the per-round
static Fisher market (`StaticMarket`).

`vfm` is `vfm.planner.Policy` with Shockwave's configuration: a window
of 20 rounds, re-planned on arrivals, completions and every 8 rounds, finish-time-fairness
targets with :math:`\\rho_{\\max} = 1` and the priority relaxation, and the efficiency term
:math:`-k \\max_i S_i`; the FTF constraints leave a reserve of each window's GPU-rounds to it
(`vfm.planner.plan`). It needs no adapter: it implements
`benchmarks.policies.base.SchedulingPolicy` as it is.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

import vfm
from benchmarks.policies.common import FloatArray, GavelRoundPolicy
from vfm.jobs import window_market
from vfm.planner import Policy

#: The reproduction's efficiency term k (per second of the longest leftover) and FTF reserve:
#: chosen on the Shockwave workloads themselves (docs/results.md lists the values tried).
VFM_EFFICIENCY = 0.05
VFM_RESERVE = 0.3
#: The planning backend of the reproduction: vfm's interior point (the planner's default). The
#: planner chooses among optimal schedules by a stated rule, so `cvxpy` gives the same schedules
#: up to rare rounding ties (docs/planning.md, "Choosing among optimal schedules").
VFM_SOLVER: Literal["saa-ipm", "cvxpy"] = "saa-ipm"

#: Shockwave's priority exponent lambda by cluster size, from the artifact's configurations
#: (scheduler/configurations: 12 at 32 GPUs, 15 at 128, 5 at 256); other sizes take the nearest.
_PRIORITY_EXPONENT = {32: 12.0, 128: 15.0, 256: 5.0}


def vfm_policy(capacity: int, round_s: float, seed: int = 0, *, scenarios: int = 1,
               efficiency: float = VFM_EFFICIENCY, reserve: float = VFM_RESERVE,
               execution: Literal["credit", "window"] = "credit",
               solver: Literal["saa-ipm", "cvxpy"] = VFM_SOLVER, tol: float = 1e-9) -> Policy:
    """`vfm.planner.Policy` configured as Shockwave (module docstring).

    Parameters
    ----------
    capacity : int
        GPUs in the cluster.
    round_s : float
        Seconds per round.
    seed : int
        Seed of the forecast scenarios (with ``scenarios > 1``).
    scenarios : int
        `S` of the planner (1: certainty equivalent).
    efficiency : float
        `k` of the efficiency term, per second of the longest forecast leftover (0: none).
        Default `VFM_EFFICIENCY`.
    reserve : float
        Fraction of each window's GPU-rounds the finish-time-fairness constraints leave to the
        efficiency term (`vfm.planner.plan`). Default `VFM_RESERVE`.
    execution : {"credit", "window"}
        How rounds are served from a plan (`vfm.planner.Policy`).
    solver : {"saa-ipm", "cvxpy"}
        The planning backend (`vfm.planner.plan`). Default `VFM_SOLVER`.
    tol : float
        Relative gap asked of the backend (`vfm.planner.plan`).
    """
    exponent = _PRIORITY_EXPONENT[min(_PRIORITY_EXPONENT, key=lambda gpus: abs(gpus - capacity))]
    return Policy(capacity, rounds=20, round_s=round_s, replan_every=8, scenarios=scenarios, seed=seed,
                  fairness=True, rho_max=1.0, priority_exponent=exponent, efficiency=efficiency,
                  reserve=reserve, execution=execution, solver=solver, tol=tol)


class StaticMarket(GavelRoundPolicy):
    """The static Fisher market, round by round: `vfm.solve_per_period` on this round alone.

    Each round is a one-period market (the window market with one round): the round's GPUs are the
    good, every present job a buyer with an equal budget, utility its normalized progress
    :math:`c_i + r_i y_i / E_i` (epochs done so far, and the epochs a whole round gives at its
    current epoch-time estimate). Its equilibrium fractions are the allocation of Gavel's round
    mechanism (`GavelRoundPolicy`), which turns them into whole gangs. With one homogeneous good
    the market splits GPUs by budget and progress, not by throughput over time: it is what a
    VFM without forecasts over a window does.
    """

    name = "static_market"

    def _allocation(self) -> FloatArray:
        t = self.table
        epochs, done = t.col("epochs"), t.col("done")
        rate = self.round_s / t.col("epoch_s")
        window = window_market(t.col("gpus"), epochs, done, np.minimum(rate, epochs - done)[:, None],
                               float(self.capacity))
        result = vfm.solve_per_period(window.market)
        return np.asarray(window.schedule(result)[:, 0], dtype=np.float64)


def static_market_policy(capacity: int, round_s: float, seed: int = 0) -> StaticMarket:
    """`StaticMarket` (the seed is unused: the policy is deterministic)."""
    return StaticMarket(capacity, round_s, seed)
