"""A policy's job events, checked: a new job's id (`checked_new_id`, `check_id_depth`), a present
job's record (`record_in`) and a record after a progress report (`reported`), each as its
`vfm.errors.ValidationError` naming the job and what is wrong; `vfm.planner.policy.state_view.StateView`
applies them to the policy's state."""

from __future__ import annotations

import reprlib
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

import numpy as np

from vfm._validation import checked_job_id
from vfm.errors import ValidationError
from vfm.forecast.base import batch_sizes as read_batch_sizes
from vfm.planner.policy.state import JobRecord, PolicyState

#: The deepest nesting of tuples in an id or a kind (`Policy.add_job` refuses a deeper id).
MAX_ID_DEPTH = 32


def with_jobs(state: PolicyState, jobs: dict[Hashable, JobRecord], **changes: Any) -> PolicyState:
    return replace(state, jobs=MappingProxyType(jobs), **changes)


def record_in(jobs: Mapping[Hashable, JobRecord], job_id: Hashable, completed: Any) -> JobRecord:
    """Job `job_id`'s record in `jobs`, or a `ValidationError` saying whether it completed
    (`completed()`: asked only on the way to the error)."""
    try:
        return jobs[job_id]
    except (KeyError, TypeError):
        pass
    if completed():
        raise ValidationError(f"job {job_id!r} has completed all its epochs and left the policy; it takes no "
                              f"more reports") from None
    raise ValidationError(f"job {shown_id(job_id)} is not in the policy (add it with add_job)") from None


def shown_id(job_id: Any) -> str:
    """`job_id`'s repr, cut short (`reprlib`) when nested too deep to have one."""
    try:
        return repr(job_id)
    except RecursionError:
        return reprlib.repr(job_id)


def checked_new_id(jobs: Mapping[Hashable, JobRecord], completed: Any, job_id: Hashable) -> Hashable:
    """`job_id` as keyed (`vfm._validation.checked_job_id`), refused when it is already present in
    `jobs` or has completed (`completed`, a container). O(1)."""
    check_id_depth(job_id)
    try:
        hash(job_id)
    except TypeError:
        raise ValidationError(f"job_id must be hashable (a string, a whole number or a tuple of them), got "
                              f"{type(job_id).__name__} {shown_id(job_id)}") from None
    key = checked_job_id(job_id)
    if key in jobs:
        raise ValidationError(f"job {job_id!r} is already in the policy; job ids must be unique (remove it first)")
    if key in completed:
        raise ValidationError(f"job {job_id!r} has already completed in this policy; job ids must be unique "
                              f"(give the new job another id)")
    return key


def check_id_depth(job_id: Any, what: str = "job_id") -> None:
    """A `ValidationError` naming `what` if `job_id` nests tuples deeper than a checkpoint holds
    (`MAX_ID_DEPTH`): so that every id a policy takes, a checkpoint can write. Iterative, and it
    stops at the limit, so an id nested thousands deep costs no recursion (and no recursion error)."""
    level, depth = [job_id], 0
    while level:
        tuples = [part for part in level if isinstance(part, tuple)]
        if tuples and depth >= MAX_ID_DEPTH:
            raise ValidationError(f"{what} nests tuples more than {MAX_ID_DEPTH} deep (MAX_ID_DEPTH), deeper than a "
                                  f"checkpoint holds, got {reprlib.repr(job_id)}")
        level, depth = [inner for part in tuples for inner in part], depth + 1


def reported(job: JobRecord, job_id: Hashable, batch_sizes: Sequence[float]) -> JobRecord:
    """Job `job_id`'s record after it reports finished epochs, or the `ValidationError`
    `Policy.report_progress` raises; O(its epochs reported and regimes)."""
    sizes = read_batch_sizes(batch_sizes, f"batch_sizes of job {job_id!r}")
    labels = np.array([b for b, _ in job.regimes])
    match = sizes[:, None] == labels
    unknown = ~match.any(axis=1)
    if unknown.any():
        k = int(np.argmax(unknown))
        raise ValidationError(
            f"batch_sizes[{k}] of job {job_id!r} is {sizes[k]:g}, which is not in the job's regimes "
            f"{{{', '.join(f'{b:g}' for b in labels)}}}")
    left = job.epochs - job.done
    if sizes.size > left:
        raise ValidationError(f"batch_sizes of job {job_id!r} reports {sizes.size} epochs, more epochs done than "
                              f"the job has left ({left} of {job.epochs})")
    return replace(job, stages=_runs(job.stages, np.argmax(match, axis=1)))


def _runs(stages: tuple[tuple[int, int], ...], columns: np.ndarray) -> tuple[tuple[int, int], ...]:
    """`stages` followed by the epochs in regime `columns`, as maximal runs (column, epochs)."""
    if not columns.size:
        return stages
    starts = np.flatnonzero(np.r_[True, columns[1:] != columns[:-1]])
    new = list(zip(columns[starts].tolist(), np.diff(np.r_[starts, columns.size]).tolist(), strict=True))
    if stages and stages[-1][0] == new[0][0]:
        return (*stages[:-1], (new[0][0], stages[-1][1] + new[0][1]), *new[1:])
    return (*stages, *new)
