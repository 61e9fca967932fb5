"""Hypothesis strategies and helpers shared by the planner tests: random job sets and programs."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from vfm.forecast import DirichletForecaster, JobStates
from vfm.planner import JobTerms, PlanningProgram

FORECASTER = DirichletForecaster()
BATCH_SIZES = (8, 16, 32, 64, 128, 256)


@dataclass(frozen=True)
class JobSet:
    """One random planning problem: job states, gangs, capacity and the window arguments."""

    states: JobStates
    gpus: np.ndarray  # (n,) int
    capacity: np.ndarray  # (rounds,)
    rounds: int
    round_s: float
    scenarios: int
    seed: int
    budgets: np.ndarray  # (n,)

    def kwargs(self, **terms: object) -> dict[str, object]:
        """The keyword arguments of `vfm.planner.plan` after `states`, `gpus` and `capacity`, with
        `terms` (fields of `vfm.planner.JobTerms`) beside the budgets."""
        return {"rounds": self.rounds, "round_s": self.round_s, "scenarios": self.scenarios, "seed": self.seed,
                "terms": JobTerms(budgets=self.budgets, **terms)}


@st.composite
def job_sets(draw: st.DrawFn, max_jobs: int = 12, max_rounds: int = 6, scenarios: tuple[int, ...] = (1, 4),
             finished: bool = True, varying_capacity: bool = True) -> JobSet:
    """1 - `max_jobs` jobs with gangs of 1-8 GPUs on 1-16 GPUs per round (constant or varying per
    round; every gang fits the largest round), 1-`max_rounds` rounds, 1-3 regimes per job, random
    observed epochs (all of them, a finished job, if `finished`), `scenarios` drawn from the tuple."""
    n = draw(st.integers(1, max_jobs))
    rounds = draw(st.integers(1, max_rounds))
    if varying_capacity and draw(st.booleans()):
        capacity = draw(st.lists(st.integers(1, 16), min_size=rounds, max_size=rounds))
    else:
        capacity = [draw(st.integers(1, 16))] * rounds
    widest = min(8, max(capacity))
    gpus = draw(st.lists(st.integers(1, widest), min_size=n, max_size=n))
    totals, regimes, observed = [], [], []
    for _ in range(n):
        total = draw(st.integers(1, 50))
        labels = draw(st.lists(st.sampled_from(BATCH_SIZES), min_size=1, max_size=3, unique=True))
        durations = draw(st.lists(st.floats(1.0, 600.0, allow_nan=False), min_size=len(labels),
                                  max_size=len(labels)))
        done = draw(st.integers(0, total if finished else total - 1))
        totals.append(total)
        regimes.append(dict(zip(labels, durations, strict=True)))
        observed.append(draw(st.lists(st.sampled_from(labels), min_size=done, max_size=done)))
    budgets = draw(st.lists(st.floats(0.1, 10.0, allow_nan=False), min_size=n, max_size=n))
    return JobSet(
        states=JobStates.from_lists(totals, regimes, observed),
        gpus=np.array(gpus),
        capacity=np.array(capacity, dtype=np.float64),
        rounds=rounds,
        round_s=draw(st.sampled_from([60.0, 120.0, 300.0])),
        scenarios=draw(st.sampled_from(scenarios)),
        seed=draw(st.integers(0, 2**32 - 1)),
        budgets=np.array(budgets),
    )


@st.composite
def programs(draw: st.DrawFn, scenarios: int, max_jobs: int = 8, max_rounds: int = 6,
             efficiency: bool = False) -> PlanningProgram:
    """A `PlanningProgram` without FTF constraints with `scenarios` scenarios: plain, or with an
    efficiency term :math:`k` from 1e-4 to 1 per second if `efficiency`.

    Every job's utility stays in (0, 1] on the whole box: a job with no progress yet (base 0)
    progresses in every scenario in some round it fits, and base plus all its progress is at
    most 1 (what a forecaster guarantees)."""
    n = draw(st.integers(1, max_jobs))
    rounds = draw(st.integers(1, max_rounds))
    capacity = np.array(draw(st.lists(st.integers(1, 16), min_size=rounds, max_size=rounds)), dtype=np.float64)
    gpus = np.array(draw(st.lists(st.integers(1, int(min(8, capacity.max()))), min_size=n, max_size=n)),
                    dtype=np.float64)
    fits = gpus[:, None] <= capacity[None, :]
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    base = np.where(rng.random(n) < 0.4, 0.0, rng.uniform(0.01, 0.95, n))
    # Shares of the remaining progress per round, some exactly 0, summing to at most 1 per scenario.
    shares = rng.random((scenarios, n, rounds)) * (rng.random((scenarios, n, rounds)) < 0.8)
    first_fit = np.argmax(fits, axis=1)
    shares[:, np.arange(n), first_fit] += 0.05  # every job progresses in a round it fits
    shares /= shares.sum(axis=2, keepdims=True) * rng.uniform(1.0, 3.0, (scenarios, n, 1))
    progress = (1.0 - base)[None, :, None] * shares
    budgets = rng.uniform(0.1, 10.0, n)
    return PlanningProgram(
        progress=progress * fits[None],
        base=base,
        budgets=budgets,
        gpus=gpus,
        capacity=capacity,
        round_s=120.0,
        remaining_s=rng.uniform(0.0, 3000.0, n),
        efficiency=float(10.0 ** rng.uniform(-4.0, 0.0)) if efficiency else 0.0,
    )
