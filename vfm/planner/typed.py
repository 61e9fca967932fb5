r"""Planning windows on a cluster of several GPU types: goods (type, round).

`vfm.planner.plan` with ``JobTerms.speed`` plans a window whose goods are "GPUs of type `k` in round
`t`".
The forecaster forecasts each job on one type (its *reference*: the type its regimes, epochs per
round and remaining running time are on); on type `k` the job runs at speed :math:`p_{ik}` of
that, so a full round there earns :math:`p_{ik}` times the forecast progress of the round and
counts :math:`p_{ik} W` seconds of its running time. This is the ratio rule of
`vfm.cluster.gpu_types` applied to the job's current regime (a regime's speed ratio between types
is the throughput ratio). The program (`PlanningProgram`, docstring "GPU types") holds a job to
one type per round; the rounding (`vfm.planner.rounding.round_placement`) places whole gangs on
one type each.

Goods are ordered type-major: good :math:`k T + t` is type `k` in round `t`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from vfm._validation import FloatArray, as_real_array, require_per_job
from vfm.errors import ValidationError
from vfm.parameters import Interval, Real, check_array
from vfm.planner.program import PlanningProgram


@dataclass(frozen=True)
class TypeWindow:
    """A window's GPU types: each job's speed on each type and each type's GPUs per round.

    Attributes
    ----------
    pace : ndarray, shape (n, K)
        Job `i`'s speed on type `k` relative to its reference type, in [0, 1] (0: cannot host).
    capacity : ndarray, shape (K, T)
        GPUs of each type in each round.
    """

    pace: FloatArray
    capacity: FloatArray

    @classmethod
    def of(cls, speed: ArrayLike, capacity: ArrayLike, n: int, rounds: int,
           ids: Sequence[Hashable] | None = None) -> TypeWindow:
        """`plan`'s ``JobTerms.speed`` and ``capacity`` for `n` jobs and `rounds` rounds, validated (a
        `ValidationError` naming the job and type)."""
        pace = checked_speed(speed, n, ids)
        return cls(pace, checked_type_capacity(capacity, pace.shape[1], rounds))

    @property
    def types(self) -> int:
        return int(self.pace.shape[1])

    def hosts(self, gpus: FloatArray) -> np.ndarray:
        """`hosting` on this window, shape (n, K, T)."""
        return hosting(gpus, self.capacity, self.pace)

    def effective_capacity(self, fits: np.ndarray) -> FloatArray:
        """The cluster's GPUs per round in units of the jobs' reference types, shape (T,): each
        type's GPUs times the median speed there of the jobs that fit some round (`fits`, (n, T)),
        what the finish-time-fairness bound's equal share and earliest-deadline check count
        (an approximation: the median job's view of a slower type)."""
        present = fits.any(axis=1)
        typical = np.median(self.pace[present], axis=0) if present.any() else np.ones(self.types)
        return typical @ self.capacity

    def program(self, program: PlanningProgram) -> PlanningProgram:
        """`program` (one good per round, on each job's reference type, shape (S, n, T); its
        `capacity` ignored) over the types: shape (S, n, K T), goods type-major, progress
        :math:`a_{sit} p_{ik}` on good (k, t), `good_round` and `speed` set."""
        scenarios, n, rounds = program.shape
        progress = (program.progress[:, :, None, :] * self.pace[None, :, :, None]).reshape(
            scenarios, n, self.types * rounds)
        return PlanningProgram(
            progress=progress, base=program.base, budgets=program.budgets, gpus=program.gpus,
            capacity=self.capacity.reshape(-1), round_s=program.round_s, remaining_s=program.remaining_s,
            efficiency=program.efficiency, leftover_limit_s=program.leftover_limit_s, spread=program.spread,
            upper=None if program.upper is None else np.tile(program.upper, self.types),
            good_round=np.tile(np.arange(rounds), self.types), speed=np.repeat(self.pace, rounds, axis=1),
            time_cost=None if program.time_cost is None else np.tile(program.time_cost, self.types),
        )

    def schedule(self, placement: np.ndarray) -> np.ndarray:
        """The (n, K T) boolean schedule over goods of a placement (n, T) (type index, -1: none)."""
        n, rounds = placement.shape
        return (placement[:, None, :] == np.arange(self.types)[None, :, None]).reshape(n, self.types * rounds)


def hosting(gpus: FloatArray, capacity: FloatArray, pace: FloatArray) -> np.ndarray:
    """Whether type `k` can host job `i` in round `t`: its gang fits the type's GPUs then and its
    speed there is > 0; shape (n, K, T) from `gpus` (n,), `capacity` (K, T), `pace` (n, K)."""
    fits: np.ndarray = gpus[:, None, None] <= capacity[None, :, :]
    return fits & (pace > 0)[:, :, None]


def checked_speed(speed: ArrayLike, n: int, ids: Sequence[Hashable] | None) -> FloatArray:
    """`plan`'s ``JobTerms.speed`` as a float array of shape (n, K), each entry in [0, 1], or a
    `ValidationError` naming the job and type."""
    array = np.asarray(speed)
    if array.ndim != 2 or array.shape[0] != n or array.shape[1] < 1:
        raise ValidationError(f"speed must have shape (n, K) = ({n}, number of GPU types), got shape {array.shape}")
    pace = as_real_array(array, "speed", (n, array.shape[1]))
    require_per_job("speed", pace, (pace < 0) | (pace > 1),
                    "must be in [0, 1]: the job's speed on the type relative to the type its forecast is on "
                    "(0: the type cannot host it)", ids=ids)
    return pace


def checked_type_capacity(capacity: ArrayLike, types: int, rounds: int) -> FloatArray:
    """`plan`'s ``capacity`` on a cluster of `types` GPU types: shape (K,) or (K, rounds), GPUs >= 0;
    returned as (K, rounds)."""
    array = np.asarray(capacity)
    if array.ndim == 1:
        array = np.broadcast_to(array[:, None], (array.shape[0], rounds))
    supply = as_real_array(array, "capacity", (types, rounds))
    check_array("capacity", supply, Interval(Real, 0, unit="GPUs"))
    return supply
