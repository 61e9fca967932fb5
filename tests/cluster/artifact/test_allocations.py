"""The artifact's allocation policies on small inputs."""

from __future__ import annotations

import numpy as np
import pytest

from vfm.cluster.artifact import ALLOCATIONS, AllocationInputs, make_allocator
from vfm.cluster.artifact.allocations import AlloX
from vfm.errors import ValidationError


def inputs(remaining, gpus=None, since=None, capacity=4) -> AllocationInputs:
    m = len(remaining)
    return AllocationInputs(job=np.arange(m), throughput=np.linspace(1.0, 2.0, m),
                            gpus=np.array(gpus or [1] * m), remaining_steps=np.array(remaining),
                            since_arrival_s=np.array(since or [100.0 * (m - i) for i in range(m)]),
                            capacity=capacity)


@pytest.mark.parametrize("name", list(ALLOCATIONS))
def test_every_allocation_fits_the_cluster_and_is_read_only(name: str) -> None:
    answer = make_allocator(name)(inputs([500, 4000, 900, 7000, 300, 100], gpus=[1, 2, 1, 1, 4, 1]))
    gpus = np.array([1, 2, 1, 1, 4, 1])
    assert ((answer.x >= 0) & (answer.x <= 1 + 1e-9)).all()
    if name != "gandiva_fair":  # the artifact's Gandiva-Fair shares time, not GPUs (next test)
        assert float(gpus @ answer.x) <= 4 + 1e-6
    assert not answer.x.flags.writeable
    with pytest.raises(ValueError):
        answer.x[0] = 1.0


def test_gandiva_fair_gives_every_job_the_same_time_whatever_its_gang() -> None:
    answer = make_allocator("gandiva_fair")(inputs([1, 1, 1, 1, 1, 1, 1, 1], gpus=[1, 2, 1, 1, 1, 1, 1, 1]))
    assert answer.x.tolist() == [0.5] * 8 and answer.method == "closed form"


def test_themis_falls_back_to_the_equal_share_on_negative_remaining_work() -> None:
    themis = make_allocator("finish_time_fairness")
    themis(inputs([500, 400, 900]))
    # Job 1's isolated time so far is now positive and its remaining work negative: its ratio is
    # concave in x, which CVXPY rejects.
    answer = themis(inputs([500, -168, 900]))
    assert "not DCP" in answer.status
    np.testing.assert_allclose(answer.x, [1.0, 1.0, 1.0])  # 4 GPUs, 3 one-GPU jobs: 4/3 each, capped


def test_allox_is_first_come_first_served_when_few_jobs_wait() -> None:
    # Five one-GPU jobs, oldest first, on four GPUs: m <= 5 n, so the four oldest get a GPU.
    answer = make_allocator("allox")(inputs([500, 100, 900, 50, 10]))
    assert answer.x.tolist() == [1.0, 1.0, 1.0, 1.0, 0.0]


@pytest.mark.parametrize("alpha", [-0.1, 1.5, float("nan"), "0.2", True])
def test_allox_names_an_alpha_out_of_its_range(alpha) -> None:
    with pytest.raises(ValidationError, match=r"^alpha must be a number in \[0, 1\], got "):
        AlloX(alpha)
