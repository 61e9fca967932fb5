r"""A forecaster that knows every job's future: the yardstick for forecasts and stochastic planning.

A scheduler never has it. An evaluation does: `OracleForecaster` is given the true duration of
every epoch of every job (a workload's ``epoch_s``, noise and all) and forecasts exactly what will
happen if a job runs without interruption from now on. Planning with it measures what a perfect
forecast is worth, so that a forecaster or a planner over uncertainty can be judged by how much of
the gap between the Dirichlet model and the oracle it closes (``python -m benchmarks.uncertainty``).

Model
-----
Job `i` with :math:`e_i` epochs done runs epochs :math:`e_i, e_i + 1, \dots` back to back, epoch
`k` lasting :math:`d_{ik}` seconds, so with :math:`S_{ik} = \sum_{k' < k} d_{ik'}` its epochs done
by running time :math:`\tau` are, counting the running epoch's fraction,

.. math:: F_i(\tau) = \min\!\Big(k + \frac{\tau' - S_{ik}}{d_{ik}},\; E_i\Big) - e_i,
          \qquad \tau' = S_{ie_i} + \tau,\quad S_{ik} \le \tau' < S_{i,k+1},

and round `t` gets :math:`F_i((t+1)W) - F_i(tW)`. The remaining runtime is
:math:`\sum_{k \ge e_i} d_{ik}`. Progress inside the running epoch is not known to a policy (it
reports finished epochs only), so the oracle too starts the window at a fresh epoch.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vfm._validation import FloatArray, check_shape, real_array
from vfm.errors import ValidationError
from vfm.forecast.base import (
    SCENARIO_PROGRESS,
    JobStates,
    ScenarioProgress,
    SeedLike,
    check_horizon,
    check_states,
)
from vfm.parameters import Instance, Interval, Real, check, check_array, check_nonempty, check_parameters

#: An epoch's duration.
_SECONDS = Interval(Real, 0, closed="neither", unit="seconds")
#: What the oracle reads each job's future by.
_IDS = Instance(tuple, "the jobs' ids, by which OracleForecaster finds each job's future "
                       "(JobStates.from_lists(..., job_ids=...))")


@dataclass(frozen=True, eq=False)
class OracleForecaster:
    r"""Exact forecasts from each job's true epoch durations (module docstring); implements `Forecaster`.

    Parameters
    ----------
    epoch_s : mapping of job id to array_like
        For every job the forecaster will see (by `JobStates.job_ids`), the duration of each of
        its epochs in seconds, in order: positive and finite, as many as the job's total epochs.
    scenario_progress : {"fluid", "whole"}
        What `sample_epochs_per_round` returns: every scenario is the truth, fluid (default, as
        the other forecasters) or in whole epochs ending in each round.

    Examples
    --------
    A job of four epochs (60, 60, 30, 30 s) that has run one: 120 s left, and in 60 s rounds
    it completes one epoch, then two:

    >>> from vfm.forecast import JobStates, OracleForecaster
    >>> oracle = OracleForecaster({"a": [60.0, 60.0, 30.0, 30.0]})
    >>> states = JobStates.from_lists([4], [{32: 60.0, 64: 30.0}], [[32]], job_ids=["a"])
    >>> oracle.remaining_runtime(states)
    array([120.])
    >>> oracle.epochs_per_round(states, rounds=3, round_s=60.0)
    array([[1., 2., 0.]])
    """

    epoch_s: Mapping[Hashable, ArrayLike]
    scenario_progress: ScenarioProgress = "fluid"
    _row: dict[Hashable, int] = field(init=False, repr=False, compare=False)
    _start: NDArray[np.int64] = field(init=False, repr=False, compare=False)
    _ends: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        check_parameters({"scenario_progress": self.scenario_progress}, {"scenario_progress": SCENARIO_PROGRESS})
        # `epoch_s` is parsed, job by job, into the arrays the forecasts read, naming the entry at fault.
        check("epoch_s", self.epoch_s, Instance(Mapping, "a non-empty mapping of each job id to its epochs' durations",
                                                nonempty=True))
        sequences = []
        for job, seconds in self.epoch_s.items():
            name = f"epoch_s[{job!r}]"
            values = real_array(seconds, name)
            check_shape(name, values, (None,), ", one duration per epoch")
            check_nonempty(name, values.size, "epoch")
            check_array(name, values, _SECONDS)
            sequences.append(values)
        lengths = np.array([s.size for s in sequences], dtype=np.int64)
        # All jobs' epochs on one line: epoch k of row r ends at _ends[_start[r] + k].
        ends = np.cumsum(np.concatenate(sequences))
        ends.setflags(write=False)
        object.__setattr__(self, "_row", {job: row for row, job in enumerate(self.epoch_s)})
        object.__setattr__(self, "_start", np.concatenate(([0], np.cumsum(lengths)))[:-1])
        object.__setattr__(self, "_ends", ends)

    def remaining_runtime(self, states: JobStates) -> FloatArray:
        """Exact remaining runtime, shape (n,) seconds."""
        _, now, last = self._span(states)
        return self._ends[last] - now

    def epochs_per_round(self, states: JobStates, rounds: int, round_s: float) -> FloatArray:
        """Exact fluid epochs per round if the job runs all of them, shape (n, rounds)."""
        check_horizon(rounds, round_s)
        return np.diff(self._done(states, rounds, float(round_s)), axis=1)

    def sample_epochs_per_round(
        self, states: JobStates, rounds: int, round_s: float, scenarios: int, seed: SeedLike = None
    ) -> FloatArray:
        """The truth in every scenario, shape (scenarios, n, rounds); `seed` is unused."""
        check_horizon(rounds, round_s, scenarios)
        done = self._done(states, rounds, float(round_s))
        if self.scenario_progress == "whole":
            done = np.floor(done + 1e-9)
        return np.broadcast_to(np.diff(done, axis=1), (scenarios, *done.shape[:1], rounds)).copy()

    def _span(self, states: JobStates) -> tuple[NDArray[np.int64], FloatArray, NDArray[np.int64]]:
        """Each job's line index of its first unfinished epoch, its position on the line
        (seconds), and the line index of its last epoch."""
        rows = self._rows(states)
        first = self._start[rows] + states.epochs_done.astype(np.int64)
        now = np.where(first > 0, self._ends[np.maximum(first - 1, 0)], 0.0)
        return first, now, self._start[rows] + states.total_epochs.astype(np.int64) - 1

    def _done(self, states: JobStates, rounds: int, round_s: float) -> FloatArray:
        """Epochs done by each round's end, from the window's start, shape (n, rounds + 1)."""
        first, now, last = self._span(states)
        clock = now[:, None] + round_s * np.arange(rounds + 1)
        ended = np.searchsorted(self._ends, clock, side="right")  # line index of the running epoch
        running = np.minimum(ended, last[:, None])
        begun = np.where(running > 0, self._ends[np.maximum(running - 1, 0)], 0.0)
        fraction = (clock - begun) / (self._ends[running] - begun)
        position = np.minimum(ended + np.minimum(fraction, 1.0), last[:, None] + 1.0)
        return np.maximum(position - first[:, None], 0.0)

    def _rows(self, states: JobStates) -> NDArray[np.int64]:
        check_states(states, "OracleForecaster")
        ids = cast(tuple[Hashable, ...], check("states.job_ids", states.job_ids, _IDS))
        rows = np.array([self._row.get(job, -1) for job in ids], dtype=np.int64)
        if (missing := np.flatnonzero(rows < 0)).size:
            raise ValidationError(f"OracleForecaster has no epoch_s for {states.job_name(int(missing[0]))}")
        lengths = np.diff(np.append(self._start, self._ends.size))[rows]
        if (wrong := np.flatnonzero(lengths != states.total_epochs)).size:
            job = int(wrong[0])
            raise ValidationError(f"epoch_s for {states.job_name(job)} lists {lengths[job]} epochs, but the job has "
                                  f"{states.total_epochs[job]:g}")
        return rows

