"""The allocation policies of the Shockwave artifact's baselines, as it computes them.

Each takes `AllocationInputs` (what the artifact's scheduler hands its policy when it
recomputes: every active job's throughput at its current batch size, its remaining steps, the
seconds since its arrival and its gang) and returns the time fraction ``x`` of each job, shape
(m,). The artifact's scheduler (`vfm.cluster.artifact.simulate`) turns ``x`` into rounds.

The linear programs are the artifact's own (``scheduler/policies/*.py`` of
uw-mad-dash/shockwave, MIT), written with the same CVXPY expressions and solved with ECOS, the
solver the published runs used: where an LP has many optimal points (max-min fairness below
full load, OSSP's feasibility problems, ties in MST) the baseline *is* the point ECOS returns,
so a closed form would be a different policy. Themis used Gurobi, which is proprietary; it runs
here on ECOS (docs/baselines.md gives the difference this makes).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linear_sum_assignment

from vfm.errors import UnknownSolverError
from vfm.parameters import Interval, Known, Real, check, check_parameters

if TYPE_CHECKING:
    import cvxpy as cp

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["ALLOCATIONS", "Allocation", "AllocationInputs", "Allocator", "make_allocator"]


@dataclass(frozen=True)
class AllocationInputs:
    """What a policy sees when the artifact's scheduler recomputes, per active job (m,).

    Jobs are in the order of their ids, as the artifact sorts them.
    """

    job: IntArray  # workload rows
    throughput: FloatArray  # steps/s of the gang at the current batch size
    gpus: IntArray
    remaining_steps: IntArray  # may be negative (see docs/baselines.md, job 35)
    since_arrival_s: FloatArray
    capacity: int


@dataclass(frozen=True)
class Allocation:
    """A policy's answer: each job's time fraction ``x`` (m,), read-only, and how it was found:
    ``method`` (``"ECOS"``, ``"linear_sum_assignment"`` or ``"closed form"``) and ``status``
    (CVXPY's status of the solve whose point is used; ``"exact"`` for the other methods)."""

    x: FloatArray
    method: str
    status: str

    def __post_init__(self) -> None:
        self.x.setflags(write=False)


#: An allocation policy.
Allocator = Callable[[AllocationInputs], Allocation]


@functools.cache
def _require_ecos() -> None:
    import cvxpy as cp  # in each function that builds or solves: CVXPY loads with the first allocation

    # Once per process: asking CVXPY for its installed solvers costs a fraction of an LP.
    if "ECOS" not in cp.installed_solvers():
        raise UnknownSolverError("the artifact's baselines solve their LPs with ECOS, as the published runs did; "
                                 "install it with `pip install ecos`")


def _solve(problem: cp.Problem) -> str:
    """Solve with ECOS and return CVXPY's status. The artifact uses whatever point the solver
    returns (``optimal_inaccurate`` included), so this does too and reports the status."""
    import cvxpy as cp
    _require_ecos()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Solution may be inaccurate": the status says so
        try:
            problem.solve(solver=cp.ECOS)
        except cp.error.SolverError:
            return "solver_error"
    return str(problem.status)


def _base_constraints(x: cp.Variable, gangs: FloatArray, capacity: int) -> list[Any]:
    import cvxpy as cp
    # policy.py get_base_constraints, one worker type.
    return [x >= 0, cp.sum(cp.multiply(gangs, x), axis=0) <= [capacity], cp.sum(x, axis=1) <= 1]


def _column(values: NDArray[Any]) -> FloatArray:
    return np.asarray(values, dtype=float).reshape(-1, 1)


def _answer(x: cp.Variable, status: str) -> Allocation:
    if x.value is None:  # nothing to clip: no job gets time (the artifact would fail here)
        return Allocation(np.zeros(x.shape[0]), "ECOS", status)
    return Allocation(np.asarray(x.value).clip(min=0.0).clip(max=1.0)[:, 0], "ECOS", status)


def max_min_fairness(inputs: AllocationInputs) -> Allocation:
    """Gavel's max-min fairness (``MaxMinFairnessPolicy``): maximize ``min_j gpus_j x_j``.

    The artifact sets every throughput to 1 and every weight to 1 (one GPU type).
    """
    import cvxpy as cp
    m = len(inputs.job)
    gangs = _column(inputs.gpus)
    x = cp.Variable((m, 1))
    objective = cp.Maximize(cp.min(cp.sum(cp.multiply(gangs, x), axis=1)))
    problem = cp.Problem(objective, _base_constraints(x, gangs, inputs.capacity))
    return _answer(x, _solve(problem))


def max_sum_throughput(inputs: AllocationInputs) -> Allocation:
    """Maximize total steps/s ``sum_j throughput_j x_j`` (``ThroughputSumWithPerf``)."""
    import cvxpy as cp
    m = len(inputs.job)
    gangs = _column(inputs.gpus)
    throughputs = _column(inputs.throughput)
    x = cp.Variable((m, 1))
    objective = cp.Maximize(cp.sum(cp.sum(cp.multiply(throughputs / np.ones((1, 1)), x), axis=1)))
    problem = cp.Problem(objective, _base_constraints(x, gangs, inputs.capacity))
    return _answer(x, _solve(problem))


def min_total_duration(inputs: AllocationInputs) -> Allocation:
    """OSSP (``MinTotalDurationPolicy``): the point ECOS returns for the feasibility problem
    ``throughput_j x_j >= remaining_j / T`` at the smallest T a 5 % bisection over [100, 1e6]
    finds feasible (then over ten times that range, until one is)."""
    import cvxpy as cp
    m = len(inputs.job)
    gangs = _column(inputs.gpus)
    throughputs = _column(inputs.throughput)
    remaining = np.asarray(inputs.remaining_steps)

    def attempt(horizon: float) -> tuple[str, cp.Variable]:
        x = cp.Variable((m, 1))
        constraints = _base_constraints(x, gangs, inputs.capacity)
        constraints.append(cp.sum(cp.multiply(throughputs, x), axis=1) >= remaining / horizon)
        return _solve(cp.Problem(cp.Maximize(1), constraints)), x

    low, high, last_high = 100.0, 1e6, 1e6
    feasible = None
    while feasible is None:
        while 1.05 * low < high:
            horizon = (low + high) / 2.0
            status, x = attempt(horizon)
            if status == "optimal":
                feasible, high = x, horizon
            else:
                low = horizon
        high, low = last_high * 10.0, last_high
        last_high *= 10
    return _answer(feasible, "optimal")


def gandiva_fair(inputs: AllocationInputs) -> Allocation:
    """Gandiva-Fair as the artifact has it (``GandivProportionalPolicy``): every job the same
    time fraction ``min(1, capacity / m)``, whatever its gang."""
    m = len(inputs.job)
    share = inputs.capacity / m
    return Allocation(np.full(m, share / max(share, 1.0)), "closed form", "exact")


class FinishTimeFairness:
    """Themis (``FinishTimeFairnessPolicyWithPerf``): minimize the largest finish-time ratio.

    For job j, ``rho_j(x) = (since_arrival_j + remaining_j / (throughput_j x_j)) /
    (isolated_so_far_j + remaining_j / isolated_throughput_j)``, where the isolated throughput is
    the throughput at the equal share ``min(1, capacity / (m gpus_j))`` and ``isolated_so_far``
    accumulates, between calls, the steps done divided by the previous call's isolated
    throughput. The policy remembers those between calls, as the artifact's object does.
    """

    def __init__(self) -> None:
        self._isolated_so_far: dict[int, float] = {}
        self._previous_remaining: dict[int, float] = {}
        self._previous_isolated: dict[int, float] = {}

    def __call__(self, inputs: AllocationInputs) -> Allocation:
        import cvxpy as cp
        m = len(inputs.job)
        gangs = _column(inputs.gpus)
        throughputs = _column(inputs.throughput)
        share = inputs.capacity / m / gangs
        equal_share = share / np.maximum(share.sum(axis=1), 1.0)[:, None]
        isolated = throughputs * equal_share  # (m, 1), kept 2-D as the artifact's expressions are
        x = cp.Variable((m, 1))
        ratios = []
        for i, job in enumerate(inputs.job.tolist()):
            so_far = self._isolated_so_far.setdefault(job, 0)
            if job in self._previous_remaining:
                so_far += (self._previous_remaining[job] - inputs.remaining_steps[i]) / self._previous_isolated[job]
                self._isolated_so_far[job] = so_far
            rate = cp.sum(cp.multiply(throughputs[i], x[i]))
            expected_isolated = so_far + inputs.remaining_steps[i] / isolated[i]
            expected = inputs.since_arrival_s[i] + inputs.remaining_steps[i] * cp.inv_pos(rate)
            ratios.append(expected / expected_isolated)
        objective = cp.Minimize(ratios[0] if m == 1 else cp.maximum(*ratios))
        try:
            status = _solve(cp.Problem(objective, _base_constraints(x, gangs, inputs.capacity)))
        except cp.error.DCPError:
            # A job with negative remaining steps (see vfm.cluster.artifact) makes its ratio
            # concave; the artifact catches this and uses the equal share, remembering nothing.
            return Allocation(np.asarray(equal_share[:, 0]), "closed form",
                              "not DCP (negative remaining steps): equal share used")
        self._previous_remaining = dict(zip(inputs.job.tolist(), inputs.remaining_steps.tolist(), strict=True))
        self._previous_isolated = dict(zip(inputs.job.tolist(), isolated[:, 0].tolist(), strict=True))
        if x.value is None:  # the artifact falls back to the equal share
            return Allocation(np.asarray(equal_share[:, 0]), "closed form", f"ECOS {status}: equal share used")
        return _answer(x, status)


#: `AlloX`'s `alpha`: the share of the waiting jobs it matches (`vfm.parameters`).
_ALPHA = Interval(Real, 0, 1)


class AlloX:
    """AlloX as the artifact runs it (``AlloXPolicy(alpha=0.2)``).

    One-GPU jobs once given a whole GPU keep it; the other jobs, oldest first, are cut to the
    ``max(int(alpha m), n)`` oldest (n: GPUs not held) and matched to (GPU, queue position)
    slots by `scipy.optimize.linear_sum_assignment` on ``position * remaining_s +
    since_arrival_s``; each GPU's front job gets ``x = 1 / gpus``. Every other job keeps its
    previous ``x`` (0 for new jobs), as in the artifact.
    """

    def __init__(self, alpha: float = 0.2) -> None:
        check_parameters({"alpha": alpha}, {"alpha": _ALPHA})
        self.alpha = alpha
        self._previous: dict[int, float] = {}

    def __call__(self, inputs: AllocationInputs) -> Allocation:
        jobs = inputs.job.tolist()
        held = [job for job in jobs if self._previous.get(job) == 1.0]
        waiting = [i for i, job in enumerate(jobs) if self._previous.get(job) != 1.0]
        free = inputs.capacity - len(held)
        order = sorted(waiting, key=lambda i: -inputs.since_arrival_s[i])
        order = order[: max(int(self.alpha * len(waiting)), free)]
        x = np.array([self._previous.get(job, 0.0) for job in jobs])
        if order and free > 0:
            rows = np.array(order)
            base = (inputs.remaining_steps[rows] / np.where(inputs.throughput[rows] == 0.0, 1e-10,
                                                            inputs.throughput[rows]))[:, None]
            positions = np.arange(1, len(rows) + 1)
            cost = (np.repeat(positions, free)[None, :] * base) + inputs.since_arrival_s[rows][:, None]
            matched, slots = linear_sum_assignment(cost)
            queues: dict[int, list[tuple[int, int]]] = {gpu: [] for gpu in range(free)}
            for row, slot in zip(matched.tolist(), slots.tolist(), strict=True):
                queues[slot % free].append((int(rows[row]), slot // free))
            for queue in queues.values():
                if queue:
                    # The artifact sorts a GPU's queue by (queue length - 1 - position).
                    front = min(queue, key=lambda entry: len(queue) - 1 - entry[1])[0]
                    x[front] = 1.0 / inputs.gpus[front]
        self._previous = dict(zip(jobs, x.tolist(), strict=True))
        return Allocation(x, "linear_sum_assignment", "exact")


def _stateless(policy: Allocator) -> Callable[[], Allocator]:
    return lambda: policy


#: The artifact's baselines by their names there: each entry makes a fresh allocator.
ALLOCATIONS: dict[str, Callable[[], Allocator]] = {
    "max_min_fairness": _stateless(max_min_fairness),
    "finish_time_fairness": FinishTimeFairness,
    "min_total_duration": _stateless(min_total_duration),
    "max_sum_throughput_perf": _stateless(max_sum_throughput),
    "allox": AlloX,
    "gandiva_fair": _stateless(gandiva_fair),
}


#: What an artifact baseline's name must be (`make_allocator`, `vfm.cluster.artifact.simulate`).
BASELINE_NAME = Known(tuple(ALLOCATIONS), "an artifact baseline of ALLOCATIONS")


def make_allocator(name: str) -> Allocator:
    """A fresh allocator for one of `ALLOCATIONS`' names."""
    return ALLOCATIONS[check("name", name, BASELINE_NAME)]()

