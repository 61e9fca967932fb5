"""A policy's job events, checked: a new job's id (`checked_new_id`), a present job's record
(`record_in`) and a record after a progress report (`reported`), each as its
`vfm.errors.ValidationError` naming the job and what is wrong; `vfm.planner.policy.state_view.StateView`
applies them to the policy's state. `ids_of` declares the ids a policy and its checkpoints hold.
"""

from __future__ import annotations

import reprlib
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from vfm._validation import checked_job_id
from vfm.errors import ValidationError
from vfm.forecast.base import batch_sizes as read_batch_sizes
from vfm.parameters import Constraint, Each, Hashed, Interval, Nested, OneOf, Satisfies, Whole, check
from vfm.planner.policy.state import JobRecord, PolicyState

#: The deepest nesting of tuples in an id or a kind (`Policy.add_job` refuses a deeper id).
MAX_ID_DEPTH = 32


def _tuple_entries(value: Any) -> Iterable[Any] | None:
    return value if isinstance(value, tuple) else None


def ids_of(leaf: Constraint, entries: Any = _tuple_entries, tuple_as: str = "a tuple") -> Nested:
    """Ids made of `leaf`s (strings, whole numbers, ...) or of tuples of them (`entries`: a tuple's,
    or a checkpoint's ``{"tuple": [...]}``, as `tuple_as` says), nested at most `MAX_ID_DEPTH` deep:
    what a checkpoint holds."""
    return Nested(leaf, entries, f"{leaf.says}, or {tuple_as} of them, nested at most {MAX_ID_DEPTH} deep "
                                 f"(MAX_ID_DEPTH)", MAX_ID_DEPTH)


#: A job id as a policy keys it (`checked_new_id`): a Python string or int, or a tuple of them.
JOB_ID = ids_of(Satisfies("a job id: a Python string or int (not a bool)",
                          lambda v: isinstance(v, str) or type(v) is int), lambda v: v if type(v) is tuple else None)

#: What `Policy.add_job` asks of an id before reading it (`vfm._validation.checked_job_id` then
#: says which parts it takes): no deeper than a checkpoint holds, so that every id a policy takes a
#: checkpoint can write (checked level by level: an id nested thousands deep costs no recursion),
#: and hashable, so that it can key the policy's jobs.
_NEW_ID: tuple[Constraint, ...] = (
    ids_of(Satisfies("an id", lambda v: not isinstance(v, tuple))),
    Hashed("hashable (a string, a whole number or a tuple of them)"),
)


def with_jobs(state: PolicyState, jobs: dict[Hashable, JobRecord], **changes: Any) -> PolicyState:
    return replace(state, jobs=MappingProxyType(jobs), **changes)


def record_in(jobs: Mapping[Hashable, JobRecord], job_id: Hashable, completed: Any) -> JobRecord:
    """Job `job_id`'s record in `jobs`, or a `ValidationError` saying whether it completed
    (`completed()`: asked only on the way to the error)."""
    try:
        return jobs[job_id]
    except (KeyError, TypeError):
        pass
    why = "has completed all its epochs and left the policy; it takes no more reports" if completed() else \
        "is not in the policy (add it with add_job)"
    raise ValidationError(f"job {shown_id(job_id)} {why}") from None


def shown_id(job_id: Any) -> str:
    """`job_id`'s repr, cut short (`reprlib`) when nested too deep to have one."""
    try:
        return repr(job_id)
    except RecursionError:
        return reprlib.repr(job_id)


def checked_new_id(jobs: Mapping[Hashable, JobRecord], completed: Any, job_id: Hashable) -> Hashable:
    """`job_id` as keyed (`vfm._validation.checked_job_id`), refused when it is already present in
    `jobs` or has completed (`completed`, a container). O(1)."""
    for constraint in _NEW_ID:
        check("job_id", job_id, constraint)
    key = checked_job_id(job_id)
    # Ids stay unique over a policy's life: a completed job's id cannot come back either.
    for taken, why in ((jobs, "is already in the policy; job ids must be unique (remove it first)"),
                       (completed, "has already completed in this policy; job ids must be unique (give the new job "
                                   "another id)")):
        if key in taken:
            raise ValidationError(f"job {job_id!r} {why}")
    return key


def reported(job: JobRecord, job_id: Hashable, batch_sizes: Sequence[float]) -> JobRecord:
    """Job `job_id`'s record after it reports finished epochs, or the `ValidationError`
    `Policy.report_progress` raises; O(its epochs reported and regimes)."""
    of = f" of job {job_id!r}"
    sizes = read_batch_sizes(batch_sizes, f"batch_sizes{of}").tolist()
    left = job.epochs - job.done
    if len(sizes) > left:  # the declarative check words the refusal
        check("the epochs reported in batch_sizes", len(sizes),
              Interval(Whole, 0, left, note=f"the epochs the job has left, of its {job.epochs}"), of=of)
    # A report is a handful of epochs, every round for every job that ran: Python's dict lookups
    # beat NumPy's per-call overhead on arrays that small.
    column = {float(b): k for k, (b, _) in enumerate(job.regimes)}
    columns = [column.get(size, -1) for size in sizes]
    if -1 in columns:
        check("batch_sizes", sizes, Each(OneOf(tuple(column)), "batch sizes of the job's regimes", kinds=(list,)),
              of=of)
    return replace(job, stages=_runs(job.stages, columns))


def _runs(stages: tuple[tuple[int, int], ...], columns: list[int]) -> tuple[tuple[int, int], ...]:
    """`stages` followed by the epochs in regime `columns`, as maximal runs (column, epochs)."""
    runs = list(stages)
    for column in columns:
        if runs and runs[-1][0] == column:
            runs[-1] = (column, runs[-1][1] + 1)
        else:
            runs.append((column, 1))
    return tuple(runs)
