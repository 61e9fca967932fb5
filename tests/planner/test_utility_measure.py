"""What a job's utility measures in the window program (`PlanOptions.utility`): with
``"completion"`` a job one round from its end is served before a job that has just begun, and the
program stays the same program (its data change, not its form)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from vfm.cluster import ClusterTypes
from vfm.forecast import JobStates
from vfm.planner import PlanOptions, Policy, plan
from vfm.planner.pace import COMPLETION_BASE

from .strategies import JobSet, job_sets

#: One regime: an epoch takes a 120-second round.
ROUND = {32: 120.0}


def _nearly_done_and_new() -> JobStates:
    """Two 1-GPU jobs of 100 one-round epochs: one with 99 done, one with none."""
    return JobStates.from_lists([100, 100], [ROUND, ROUND], [[32] * 99, []], job_ids=["nearly-done", "new"])


@pytest.mark.parametrize("solver", ["saa-ipm", "cvxpy"])
def test_with_completion_a_job_one_round_from_its_end_runs_first(solver):
    states = _nearly_done_and_new()
    result = plan(states, np.array([1, 1]), 1, rounds=10, round_s=120.0, utility="completion", solver=solver)
    # One GPU: the round served now goes to the job it finishes.
    assert result.schedule[:, 0].tolist() == [True, False]
    assert result.schedule[1, 1:].all()  # and the new job runs every round after it


@given(job_sets())
def test_completion_measures_shares_of_the_remaining_work(case: JobSet):
    progress = plan(case.states, case.gpus, case.capacity, **case.kwargs(), solver="saa-ipm")
    completion = plan(case.states, case.gpus, case.capacity, **case.kwargs(), solver="saa-ipm", utility="completion")
    left = case.states.total_epochs - case.states.epochs_done
    open_ = left > 0
    # The same forecast, rescaled from shares of the total work to shares of the remaining work.
    np.testing.assert_allclose(
        completion.program.progress[:, open_] * left[open_, None],
        progress.program.progress[:, open_] * case.states.total_epochs[open_, None], rtol=1e-12, atol=0)
    assert np.all(completion.program.base[open_] == COMPLETION_BASE)
    assert np.all(completion.program.base[~open_] == 1.0)
    # Every round within capacity, whole gangs.
    assert np.all(case.gpus @ completion.schedule <= case.capacity)


def test_the_shockwave_policy_on_one_type_plans_with_completion_and_the_plain_planner_with_progress():
    assert PlanOptions().utility == "progress" and PlanOptions().completion_time == 0
    policy = Policy.shockwave(8, 120.0)
    assert policy.options.utility == "completion" and policy.options.completion_time > 0
    assert policy.options.wait_limit is not None
    typed = Policy.shockwave(ClusterTypes({"v100": 4, "k80": 4}), 120.0)
    assert typed.options.utility == "progress" and typed.options.completion_time == 0
    paper = Policy.shockwave(8, 120.0, utility="progress", completion_time=0)
    assert paper.options.utility == "progress" and paper.options.completion_time == 0
