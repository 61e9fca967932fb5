"""`PlanningProgram`'s FTF room check against the LP it replaces."""

from dataclasses import replace

import numpy as np
import scipy.optimize
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.planner.strategies import programs
from vfm.planner.program import PlanningProgram


def _largest_margin(program: PlanningProgram) -> float:
    """The largest delta with sum_t y_it >= m_i + delta for every constrained job (-inf: none runs)."""
    floor = program.fairness_floor
    jobs = np.flatnonzero(floor > 0)
    job, period = np.nonzero(program.runnable & (floor > 0)[:, None])
    if not np.isin(jobs, job).all():
        return -np.inf
    rounds = program.shape[2]
    rows = np.zeros((jobs.size + rounds, job.size + 1))
    rows[np.searchsorted(jobs, job), np.arange(job.size)] = -1.0
    rows[np.arange(jobs.size), -1] = 1.0
    rows[jobs.size + period, np.arange(job.size)] = program.gpus[job] / program.capacity[period]
    cost = np.zeros(job.size + 1)
    cost[-1] = -1.0
    result = scipy.optimize.linprog(cost, A_ub=rows, b_ub=np.concatenate([-floor[jobs], np.ones(rounds)]),
                                    bounds=[(0.0, 1.0)] * job.size + [(None, None)], method="highs")
    assert result.status == 0
    return float(-result.fun)


@settings(max_examples=60, deadline=None)
@given(programs(scenarios=1), st.integers(0, 2**32 - 1))
def test_fairness_room_matches_the_largest_margin_of_the_lp(program, seed):
    rng = np.random.default_rng(seed)
    n, rounds = program.shape[1], program.shape[2]
    # Limits that ask each job for 0 to all of its runnable rounds, some jobs unconstrained.
    needed = rng.uniform(0.0, 1.05, n) * program.runnable.sum(axis=1) * program.round_s
    limits = np.where(rng.random(n) < 0.7, program.remaining_s - needed, np.inf)
    program = replace(program, leftover_limit_s=limits)
    if not (program.fairness_floor > 0).any():
        assert program.fairness_room(0.5)
        return
    margin = _largest_margin(program)
    # The flow counts GPU-rounds in integer units; True is exact, False within T units per job.
    resolution = rounds * program.gpus.max() * 4 * (program.capacity.sum() + 1) / np.iinfo(np.int32).max
    for asked in np.linspace(0.0, 1.5, 7) * max(abs(margin), 1e-3) if np.isfinite(margin) else [0.0]:
        if asked <= margin - resolution:
            assert program.fairness_room(asked), (asked, margin)
        if asked > margin + 1e-9:
            assert not program.fairness_room(asked), (asked, margin)
