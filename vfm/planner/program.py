r"""The expected-NSWOT program of a planning window (SPEC sections 3 and 5).

Job `i` runs a fraction :math:`y_{it} \in [0, 1]` of round `t` on its :math:`w_i` GPUs. In
forecast scenario `s` it then reaches the normalized progress

.. math:: U_{si}(y) = c_i + \sum_t a_{sit}\, y_{it}, \qquad
          c_i = \frac{e_i}{E_i},\quad a_{sit} = \frac{r_{sit}}{E_i},

and the planner solves the sample average approximation (SAA) of expected NSWOT

.. math::

    \max_{y}\; \sum_i \frac{B_i}{S} \sum_s \log U_{si}(y) \;-\; k \max\!\big(0, \max_i S_i(y)\big)
    \quad\text{s.t.}\quad \sum_i w_i y_{it} \le G_t,\;\; 0 \le y \le 1,\;\;
    S_i(y) \le b_i \ (\text{FTF}),

with :math:`S_i(y) = \hat T_i - W \sum_t y_{it}` the forecast running time left after the
window (:math:`W` seconds per round). A job whose gang does not fit a round's capacity has
:math:`y_{it} = 0` there. The utility cap :math:`U \le 1` of SPEC section 3 is implied: a
forecaster never forecasts more epochs than a job has left, so
:math:`U_{si}(y) \le 1` on the whole box.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from vfm import utility
from vfm._validation import FloatArray


@dataclass(frozen=True, eq=False)
class PlanningProgram:
    r"""The data of one window's expected-NSWOT program (module docstring).

    Attributes
    ----------
    progress : ndarray, shape (S, n, T)
        :math:`a_{sit} = r_{sit} / E_i`, normalized progress of a full round in each scenario.
    base : ndarray, shape (n,)
        :math:`c_i = e_i / E_i`.
    weights : ndarray, shape (n,)
        :math:`B_i` times the priority weight of the FTF relaxation (1 without it).
    gpus : ndarray, shape (n,)
        Gang sizes :math:`w_i`.
    capacity : ndarray, shape (T,)
        :math:`G_t`.
    round_s : float
        :math:`W`.
    remaining_s : ndarray, shape (n,)
        Forecast remaining running time :math:`\hat T_i` (seconds).
    efficiency : float
        :math:`k \ge 0` (0: no efficiency term).
    leftover_limit_s : ndarray, shape (n,), or None
        :math:`b_i`, the FTF bound on :math:`S_i` (None: no FTF constraints).
    """

    progress: FloatArray
    base: FloatArray
    weights: FloatArray
    gpus: FloatArray
    capacity: FloatArray
    round_s: float
    remaining_s: FloatArray
    efficiency: float = 0.0
    leftover_limit_s: FloatArray | None = None

    @property
    def shape(self) -> tuple[int, int, int]:
        """(S, n, T)."""
        s, n, t = self.progress.shape
        return s, n, t

    @cached_property
    def fits(self) -> np.ndarray:
        """Whether job `i` can run in round `t`: its gang fits the round's capacity and it has
        epochs left (:math:`c_i < 1`), shape (n, T) bool."""
        return (self.gpus[:, None] <= self.capacity[None, :]) & (self.base < 1.0)[:, None]

    @cached_property
    def runnable(self) -> np.ndarray:
        """`fits` and some scenario forecasts progress there, shape (n, T) bool: the entries the
        solvers optimize (the others are fixed at 0). Elsewhere running earns nothing, and it does
        not count as running time in `leftover_s` either."""
        return self.fits & (self.progress > 0).any(axis=0)

    def leftover_s(self, schedule: FloatArray) -> FloatArray:
        r""":math:`S_i = \max(0, \hat T_i - W \sum_t y_{it})` for `schedule` of shape (n, T),
        counting only `runnable` entries: a round in which the forecast gives the job no progress
        does not shorten the time it has left."""
        return np.maximum(self.remaining_s - self.round_s * (schedule * self.runnable).sum(axis=1), 0.0)

    def objective(self, schedule: FloatArray) -> float:
        """The program's objective at `schedule` (fractional or integral), shape (n, T)."""
        x = np.asarray(schedule, dtype=np.float64)
        value = float(utility.expected_nswot(
            self.progress[:, :, None, :], x[:, None, :], budgets=self.weights, base_utility=self.base,
            backend="numpy",
        ))
        if self.efficiency:
            value -= self.efficiency * float(self.leftover_s(x).max())
        return value

    def capacity_excess(self, schedule: FloatArray) -> float:
        """Largest GPUs over capacity in any round (<= 0 when the schedule fits)."""
        return float((self.gpus @ np.asarray(schedule, dtype=np.float64) - self.capacity).max())
