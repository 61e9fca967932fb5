"""The book a round-based baseline keeps of its jobs: present jobs as table rows, arrivals, the clock.

Every baseline of `vfm.cluster.baselines` keeps the same book (`vfm.cluster.baselines.rounds.RoundPolicy`),
on one GPU type or several, whatever it ranks the jobs by:

- `RowTable`: one row per present job in numpy columns, so that a round is computed over
  arrays, not by a Python loop over jobs; a row is removed by moving the last row into the hole.
- `RoundBook`: the jobs' life in the policy over a `RowTable`: admission in arrival order (column
  ``seq``, the final tie-breaker of every ranking), cancellation, completion, and the policy
  clock (rounds x `round_s`, since `next_round` is called exactly once per round). It records
  whether the job set changed since the last round, which Gavel's round mechanism resets on.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np

from vfm._validation import read_only
from vfm.errors import ValidationError
from vfm.gpu_cluster import ClusterTypes

__all__ = ["RoundBook", "RoundState", "RowTable"]


class RowTable:
    """Present jobs as rows of numpy columns, each of shape ``(n, *shape)``, plus one object per row
    (``regimes``); a row is removed by moving the last row into its place.

    Parameters
    ----------
    columns : mapping of str to (dtype, shape)
        Each column's dtype and the shape of one row's entry (``()`` for a scalar per job).
    """

    def __init__(self, columns: Mapping[str, tuple[Any, tuple[int, ...]]]) -> None:
        self.n = 0
        self._cap = 16
        self.ids: list[Hashable] = []
        self.row: dict[Hashable, int] = {}
        self.regimes: list[Any] = []
        self._cols: dict[str, np.ndarray] = {name: np.zeros((self._cap, *shape), dtype=dtype)
                                             for name, (dtype, shape) in columns.items()}

    def col(self, name: str) -> np.ndarray:
        """A writable view of column `name` over the present rows."""
        return self._cols[name][: self.n]

    @property
    def names(self) -> tuple[str, ...]:
        """The columns' names."""
        return tuple(self._cols)

    def append(self, job_id: Hashable, regimes: Any, values: Mapping[str, Any]) -> int:
        """Append a row (columns not in `values` are 0); return its index."""
        if self.n == self._cap:
            self._cap *= 2
            for name, arr in self._cols.items():
                grown = np.zeros((self._cap, *arr.shape[1:]), dtype=arr.dtype)
                grown[: self.n] = arr[: self.n]
                self._cols[name] = grown
        i = self.n
        self.n += 1
        for name, arr in self._cols.items():
            arr[i] = values.get(name, 0)
        self.ids.append(job_id)
        self.regimes.append(regimes)
        self.row[job_id] = i
        return i

    def remove(self, job_id: Hashable) -> None:
        """Delete a row by moving the last row into its place."""
        i = self.row.pop(job_id)
        last = self.n - 1
        if i != last:
            for arr in self._cols.values():
                arr[i] = arr[last]
            moved = self.ids[last]
            self.ids[i] = moved
            self.regimes[i] = self.regimes[last]
            self.row[moved] = i
        self.ids.pop()
        self.regimes.pop()
        self.n = last


@dataclass(frozen=True)
class RoundState:
    """The book as a round sees it, frozen (`RoundBook.snapshot`): every column over the present
    rows (read-only copies, shapes as in the table), the ids in row order, the cluster, the policy
    clock and the round length, and whether the job set changed since the last round. A round
    mechanism decides from it alone, as a pure function."""

    columns: Mapping[str, np.ndarray]
    ids: tuple[Hashable, ...]
    cluster: ClusterTypes
    clock_s: float
    round_s: float
    changed: bool

    @property
    def n(self) -> int:
        return len(self.ids)

    @property
    def capacity(self) -> int:
        """All the cluster's GPUs."""
        return self.cluster.total

    @property
    def counts(self) -> np.ndarray:
        """The GPUs of each type, in the cluster's order (a new array)."""
        return np.array(self.cluster.counts, dtype=np.int64)

    def col(self, name: str) -> np.ndarray:
        """Column `name` over the present rows (read-only)."""
        return self.columns[name]


class RoundBook:
    """The jobs a round-based policy holds, over a `RowTable` with an int column ``seq``.

    `vfm.cluster.baselines.rounds.RoundPolicy` checks a job's fields and admits it with `admit`,
    reports finished epochs through `row_of` and `complete`, and closes each round with
    `close_round`; `remove_job` is a cancellation.

    Parameters
    ----------
    table : RowTable
        The present jobs' table (empty).
    round_s : float
        Seconds per round, already checked (> 0, finite).
    seed : int
        Kept, so that every policy is built alike; the baselines draw no random numbers.

    Attributes
    ----------
    round_s : float
    seed : int
    round_index : int
        Rounds decided so far.
    """

    def __init__(self, table: RowTable, round_s: float, seed: int) -> None:
        self.round_s = float(round_s)
        self.seed = seed
        self.round_index = 0
        self._table = table
        self._seq = 0
        self._changed = True  # the job set changed since the last round
        self._completed: list[Hashable] = []

    @property
    def table(self) -> RowTable:
        """The present jobs, one row each."""
        return self._table

    @property
    def clock_s(self) -> float:
        """Start time of the next round: rounds decided so far x `round_s`."""
        return self.round_index * self.round_s

    @property
    def jobs(self) -> list[Hashable]:
        """The present jobs (row order, not arrival order)."""
        return list(self._table.ids)

    @property
    def completed(self) -> list[Hashable]:
        """Jobs that finished all their epochs, in completion order."""
        return list(self._completed)

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves without finishing (cancelled)."""
        self.row_of(job_id)
        self._table.remove(job_id)
        self.job_set_changed()

    def refuse_present(self, job_id: Hashable) -> None:
        """Raise `vfm.errors.ValidationError` if `job_id` is already present."""
        if job_id in self._table.row:
            raise ValidationError(f"job {job_id!r} is already in the policy; remove it first")

    def row_of(self, job_id: Hashable) -> int:
        """The row of a present job; `vfm.errors.ValidationError` for any other."""
        if job_id not in self._table.row:
            raise ValidationError(f"job {job_id!r} is not in the policy")
        return self._table.row[job_id]

    def admit(self, job_id: Hashable, regimes: Any, values: Mapping[str, Any]) -> int:
        """Append an arriving job's row (its ``seq`` the arrival order); return the row."""
        row = self._table.append(job_id, regimes, {**values, "seq": self._seq})
        self._seq += 1
        self.job_set_changed()
        return row

    def complete(self, job_id: Hashable) -> None:
        """A job finished all its epochs: it leaves and is recorded as completed."""
        self._table.remove(job_id)
        self._completed.append(job_id)
        self.job_set_changed()

    def job_set_changed(self) -> None:
        """Record an arrival, completion or cancellation (subclasses extend what it invalidates)."""
        self._changed = True

    def snapshot(self, cluster: ClusterTypes) -> RoundState:
        """The book as the next round on `cluster` sees it, frozen (copies: nothing computed from it
        changes the book)."""
        t = self._table
        columns = {name: read_only(t.col(name).copy()) for name in t.names}
        return RoundState(MappingProxyType(columns), tuple(t.ids), cluster, self.clock_s, self.round_s, self._changed)

    def close_round(self) -> None:
        """The next round is decided: the clock advances, the job set counts as unchanged."""
        self._changed = False
        self.round_index += 1
