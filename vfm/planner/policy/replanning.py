"""A policy's re-plan (`replan`, on one GPU type and on several) and what it reads and carries: the
jobs' states and the forecaster taught the jobs that completed, the finish-time targets, the warm
start from the last plan, and the state after the new plan (the credit, waits and last round of the
jobs still present carried into its order)."""

from __future__ import annotations

import time
from collections.abc import Hashable
from typing import Any

import numpy as np

from vfm._validation import FloatArray, read_only
from vfm.forecast import Forecaster, JobStates, LearningForecaster
from vfm.jobs import equal_share
from vfm.planner import shockwave
from vfm.planner.inputs import Inputs, checked_cluster, checked_forecast
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan, plan_checked
from vfm.planner.policy.decision import within_deadline
from vfm.planner.policy.job_events import with_jobs
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState


def replan(config: PolicyConfig, state: PolicyState, options: PlanOptions | None = None, *,
           over_types: bool = False) -> PolicyState:
    """The state with a new plan of the jobs present (`options`: default the configured ones);
    `over_types`: over the GPU types of `config.cluster`, each job at its speed on each type at its
    current regime."""
    begun = time.perf_counter()
    options = config.options if options is None else options
    within_deadline(options, begun, len(state.jobs))  # the jobs' states take time before the next look
    ids = tuple(state.jobs)
    jobs = [state.jobs[i] for i in ids]
    forecaster = taught_forecaster(config, state)
    states = job_states(jobs, ids)
    cluster = config.cluster if over_types else None
    speed = None if cluster is None else _speed_now(jobs)
    within_deadline(options, begun)  # the targets' work is not started past the deadline
    targets = None
    if config.fairness:
        # On GPU types the reference of finish-time fairness is each job at its pace on a
        # proportional slice of the cluster (`vfm.cluster.proportional_isolated_s`).
        slowdown = None if cluster is None or speed is None else 1.0 / (speed @ (cluster.counts / cluster.total))
        jobs, targets = fair_finish(config, forecaster, state.round_index, states, jobs, slowdown=slowdown)
    waited = (np.zeros(len(ids), dtype=np.int64) if options.wait_limit is None
              else carried(state.waited, carried_rows(state, ids), 0).astype(np.int64))
    options = within_deadline(options, begun)
    capacity = config.capacity if cluster is None else cluster.counts.astype(np.float64)
    # Every job was checked as it arrived (`Policy.add_job`, a restored checkpoint): the plan takes
    # the jobs' terms as they are (`plan_checked`); only the window over the cluster is built here.
    width, supply, window = checked_cluster(states, np.array([job.gpus for job in jobs]), capacity, speed, options)
    budgets = np.array([job.budget for job in jobs], dtype=np.float64)
    inputs = Inputs(options, width, supply, window, budgets, targets, waited, warm_start(state, ids, options.rounds))
    new_plan = plan_checked(states, inputs, forecaster, np.random.SeedSequence((config.seed, state.replans)))
    return replanned(state, ids, jobs, new_plan, forecaster)


def _speed_now(jobs: list[JobRecord]) -> FloatArray:
    """Each job's speed on each type at its current regime relative to its reference, shape (n, K)."""
    rows = []
    for job in jobs:
        assert job.speeds is not None  # every record on several types has them (`Policy.add_job`, the checks)
        rows.append(job.speeds[:, job.recent[0]])  # column -1 (no regime observed yet): the regimes' mean
    return np.stack(rows)


def taught_forecaster(config: PolicyConfig, state: PolicyState) -> Forecaster:
    """The forecaster the next re-plan uses: the configured one, taught the jobs that completed."""
    forecaster = config.forecaster if state.forecaster is None else state.forecaster
    if state.finished and isinstance(forecaster, LearningForecaster):
        forecaster = forecaster.learned(state.finished)
    return forecaster


def carried_rows(state: PolicyState, ids: tuple[Hashable, ...]) -> np.ndarray:
    """Each job of `ids`'s row in the arrays `state` carries (`PolicyState.carried`): -1 for a job
    the last plan did not hold."""
    row = {job: k for k, job in enumerate(state.carried)}
    return np.array([row.get(job, -1) for job in ids], dtype=np.int64)


def carried(values: np.ndarray, rows: np.ndarray, new: Any) -> np.ndarray:
    """`values` (aligned to `PolicyState.carried`) taken at `rows` (`carried_rows`), `new` where -1."""
    return read_only(np.where(rows >= 0, values[np.maximum(rows, 0)] if values.size else new, new))


def warm_start(state: PolicyState, ids: tuple[Hashable, ...], rounds: int) -> FloatArray | None:
    """The last plan's relaxation moved forward by the rounds served since, each job of `ids` on
    its row of the last plan (0 for a job it did not hold), when it is not older than its window
    and holds at least one of them (else None); with GPU types each type's rounds are moved (the
    columns are type-major goods). A re-plan after an arrival or a completion starts from the
    jobs carried over: most of the window is where the last plan left it."""
    last = state.plan
    if last is None or last.job_ids is None or state.since_plan >= rounds:
        return None
    rows = carried_rows(state, ids)  # the last plan's jobs are the ones `state` carries
    if not (rows >= 0).any():
        return None
    keep = np.minimum(np.arange(rounds) + state.since_plan, rounds - 1)
    n = len(last.job_ids)
    relaxed = last.relaxed.reshape(n, -1, rounds)[:, :, keep].reshape(n, -1)
    return np.where((rows >= 0)[:, None], relaxed[np.maximum(rows, 0)], 0.0)


def replanned(state: PolicyState, ids: tuple[Hashable, ...], jobs: list[JobRecord], new_plan: Plan,
               forecaster: Forecaster) -> PolicyState:
    """The state after a re-plan: the new plan, and the credit, waits and last round of the jobs
    still present (`PolicyState.carried`) carried into its order (`ids`)."""
    rows = carried_rows(state, ids)
    return with_jobs(state, dict(zip(ids, jobs, strict=True)), plan=new_plan,
                      credit=carried(state.credit, rows, 0.0), waited=carried(state.waited, rows, 0),
                      ran_last=carried(state.ran_last, rows, False), since_plan=0, stale=False,
                      replans=state.replans + 1, forecaster=forecaster, finished=(), carried=ids)


def fair_finish(config: PolicyConfig, forecaster: Forecaster, round_index: int, states: JobStates,
                 jobs: list[JobRecord], slowdown: FloatArray | None = None) -> tuple[list[JobRecord], FloatArray]:
    """The jobs with their updated finish-time targets, and FT* of each in seconds from now.

    `slowdown` (n,): how much longer than the forecast's remaining time each job takes at its
    fair pace (on GPU types: on a proportional slice of the cluster, `vfm.planner.policy.typed_serving`);
    default 1."""
    now = round_index * config.options.round_s
    share = equal_share(len(jobs), config.capacity)
    remaining = checked_forecast(forecaster, "remaining_runtime", forecaster.remaining_runtime(states), states,
                                 (states.n_jobs,))
    estimate = now + (remaining if slowdown is None else remaining * slowdown) / share
    targets = shockwave.updated_targets(np.array([job.fair_finish_at_s for job in jobs]), estimate)
    jobs = [_with_target(job, at) for job, at in zip(jobs, targets.tolist(), strict=True)]
    # A target already passed cannot be met: it counts as due in one second, which makes the
    # constraints infeasible (the planner falls back to the priority relaxation) and keeps the
    # projected ratios finite and ordered by the time the jobs have left.
    return jobs, np.maximum(targets - now, 1.0)


def _with_target(job: JobRecord, at_s: float) -> JobRecord:
    """`job` with the finish-time target `at_s`: its fields copied as they are, a fifth of what
    `dataclasses.replace` costs (which checks them again), for every job of every re-plan."""
    record = object.__new__(JobRecord)
    record.__dict__.update(job.__dict__, fair_finish_at_s=at_s)
    return record


def job_states(jobs: list[JobRecord], ids: tuple[Hashable, ...]) -> JobStates:
    """The jobs' states, regimes padded to the largest set (each job was validated on arrival)."""
    recent = np.array([job.recent for job in jobs], dtype=np.int64).T
    sizes = np.array([len(job.regimes) for job in jobs])
    n, width = len(jobs), int(sizes.max())
    mask = np.arange(width)[None, :] < sizes[:, None]
    # Every job's regimes and stages flattened in job order: one pass over the jobs, not one
    # array per job (whose per-job overhead grows with every job in the window).
    regimes = np.array([regime for job in jobs for regime in job.regimes], dtype=np.float64).reshape(-1, 2)
    labels, durations = np.full((n, width), np.nan), np.zeros((n, width))
    labels[mask], durations[mask] = regimes[:, 0], regimes[:, 1]
    stages = np.array([(row * width + column, length) for row, job in enumerate(jobs) for column, length in job.stages],
                      dtype=np.int64).reshape(-1, 2)
    counts = np.bincount(stages[:, 0], weights=stages[:, 1], minlength=n * width).reshape(n, width)
    return JobStates(np.array([job.epochs for job in jobs], dtype=np.float64), counts, durations, mask,
                     regime_labels=labels, job_ids=ids, groups=[job.kind for job in jobs], recent=tuple(recent))
