"""What a workload to generate or resample is: `WorkloadSpec` (its jobs, cluster, arrivals, round
length and the mixes of gang sizes, adaptation modes and run times) and `Uncertainty` (how
uncertain generated jobs' adaptation is), each validated on construction, naming the field.

`vfm.cluster.generate` draws workloads to a spec (`generate_workload`, `resample_workload`); its
module docstring gives the model each field sets. A mix is given as weights, normalized to
probabilities (`WorkloadSpec.gang_weights`, `WorkloadSpec.adaptation_weights`,
`WorkloadSpec.duration_weights`).

Examples
--------
>>> spec = WorkloadSpec(jobs=10, gpus=8, gang_mix={1: 3, 2: 1})
>>> spec.gang_weights
((1, 0.75), (2, 0.25))
>>> WorkloadSpec(jobs=10, gpus=8, gang_mix={16: 1})
Traceback (most recent call last):
    ...
vfm.errors.ValidationError: gang_mix's gang size must be a positive whole number, at most 8 (the cluster's GPUs), got 16
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from vfm._validation import shown_value
from vfm.cluster.gpu_types import throughput_sets
from vfm.cluster.workload.model import ADAPTATIONS
from vfm.errors import ValidationError
from vfm.limits import MAX_GPUS, MAX_JOB_SECONDS, MAX_WORKLOAD_EPOCHS
from vfm.parameters import (
    Boolean,
    Constraint,
    Either,
    Instance,
    Interval,
    Listed,
    OneOf,
    Optional,
    Real,
    Span,
    Whole,
    check,
    check_distinct,
    check_length,
    check_parameters,
)

__all__ = ["MAX_CHANGE_JITTER", "MAX_EPOCH_NOISE", "Uncertainty", "WorkloadSpec"]

# The artifact's gang mix (``--scale-factor-mix`` of its trace generator).
_ARTIFACT_GANG_MIX = ((1, 0.6), (2, 0.3), (4, 0.09), (8, 0.01))
# Upper bounds of `Uncertainty`: past them its draws are no longer a perturbation (a jitter of 10
# already moves a change by factors of e^10 at one standard deviation, and a coefficient of
# variation of 100 makes one epoch in a thousand some 10^4 times its nominal length), and far
# past them exp() overflows.
MAX_CHANGE_JITTER = 10.0
MAX_EPOCH_NOISE = 100.0
# How far a mix's weights may sum from 1 after normalizing before it is refused (rounding of a
# sum of many terms is far below; only a weight numpy cannot divide lands outside).
_MIX_TOLERANCE = 1e-9
#: A mix (`gang_mix`, `adaptation_mix`, `duration_mix`): values to weights, as a mapping or as
#: (value, weight) pairs, each weight finite and >= 0 (not all 0: `_mix`).
_MIX = Either(Instance(Mapping, "a non-empty mapping of values to weights", with_value=True, nonempty=True),
              Listed("a list of (value, weight) pairs", kinds=(Sequence,), nonempty=True))
_PAIR = Instance(tuple, "a (value, weight) pair", with_value=True)
_WEIGHT = Interval(Real, 0)

#: `Uncertainty`'s fields' constraints, checked on construction (`vfm.parameters`).
_UNCERTAINTY_CONSTRAINTS: dict[str, Constraint] = {
    "change_jitter": Interval(Real, 0, MAX_CHANGE_JITTER),
    "epoch_noise": Interval(Real, 0, MAX_EPOCH_NOISE),
    "hidden_regimes": Boolean(),
}

#: A run time range: `WorkloadSpec.duration_s`, and each range of `WorkloadSpec.duration_mix`.
_DURATION_RANGE = Span(Interval(Real, 0, MAX_JOB_SECONDS, closed="right", unit="seconds", note="MAX_JOB_SECONDS"))


@dataclass(frozen=True)
class Uncertainty:
    """How uncertain generated jobs' adaptation is (frozen; validated on construction, naming the
    field). Every option off by default, so ``Uncertainty()`` changes nothing;
    `vfm.cluster.generate` gives the model.

    Parameters
    ----------
    change_jitter : float
        Standard deviation (0 to `MAX_CHANGE_JITTER`) of the log of each job's stretch of its
        batch-size schedule: a change at nominal epoch ``e`` moves to ``round(e * f)``,
        ``log f ~ N(0, change_jitter**2)``.
    epoch_noise : float
        Coefficient of variation (0 to `MAX_EPOCH_NOISE`) of each epoch's true duration around
        its nominal one (independent log-normal factors of mean 1).
    hidden_regimes : bool
        Whether the told profile lists every batch size the job's adaptation mode could reach on
        its gang, not only those it runs.
    """

    change_jitter: float = 0.0
    epoch_noise: float = 0.0
    hidden_regimes: bool = False

    def __post_init__(self) -> None:
        check_parameters(vars(self), _UNCERTAINTY_CONSTRAINTS)
        # Stored as Python's types: numpy's would print differently and compare the same.
        object.__setattr__(self, "change_jitter", float(self.change_jitter))
        object.__setattr__(self, "epoch_noise", float(self.epoch_noise))
        object.__setattr__(self, "hidden_regimes", bool(self.hidden_regimes))


#: `WorkloadSpec`'s fields' constraints, checked on construction (`vfm.parameters`), before the
#: mixes are normalized; `throughputs` is checked against the shipped sets (`_spec_constraints`),
#: and the gang sizes against `gpus`.
_SPEC_CONSTRAINTS: dict[str, Constraint] = {
    "jobs": Interval(Whole, 1, MAX_WORKLOAD_EPOCHS, note="MAX_WORKLOAD_EPOCHS: a job has an epoch at least"),
    "gpus": Interval(Whole, 1, MAX_GPUS, note="MAX_GPUS"),
    "interarrival_s": Interval(Real, 0, MAX_JOB_SECONDS, unit="seconds"),
    "round_s": Interval(Real, 0, MAX_JOB_SECONDS, closed="right", unit="seconds"),
    "duration_s": _DURATION_RANGE,
    "uncertainty": Optional(Instance(Uncertainty, "an Uncertainty")),
}
#: The modes of `WorkloadSpec.adaptation_mix`.
_MODE = OneOf(ADAPTATIONS)


@dataclass(frozen=True)
class WorkloadSpec:
    """What to generate (frozen; validated on construction, naming the field).

    Every bound below is one a workload file states too (`vfm.cluster.workload`), so that what
    is generated loads; a setting past one fails here, before any job is drawn.

    Parameters
    ----------
    jobs : int
        Number of jobs, 1 to `vfm.limits.MAX_WORKLOAD_EPOCHS` (each job has an epoch at least).
        `generate_workload` also refuses, before expanding any epoch, jobs whose drawn run times
        add up to more epochs than a workload may have.
    gpus : int
        GPUs in the cluster, 1 to ``vfm.limits.MAX_GPUS`` (1e6). Contention is
        ``jobs / gpus`` jobs per GPU over the trace.
    interarrival_s : float
        Mean gap between arrivals of the Poisson process (default 40 s, the 120-job trace's),
        0 to ``MAX_JOB_SECONDS`` (1e12 s); 0 makes every job arrive at t = 0.
    gang_mix : mapping of int to float
        Gang size -> probability weight. Weights are finite and >= 0, not all 0, and are
        normalized: ``{1: 3, 2: 1}`` is 0.75 / 0.25 (a mix that sums to 1 is used as it is). A
        gang size given twice is an error. Default (None): the artifact's 0.6 / 0.3 / 0.09 / 0.01
        for 1 / 2 / 4 / 8 GPUs, without the gangs wider than the cluster. A gang given wider
        than the cluster is an error.
    adaptation_mix : mapping of str to float
        ``"static"``, ``"gns"``, ``"accordion"`` -> weight, normalized as `gang_mix`'s; default the
        shipped traces' 0 / 0.5 / 0.5. Generated jobs only: a resampled job keeps its own adaptation.
    duration_s : tuple of float
        ``(low, high)`` of the log-uniform static run time, ``0 < low <= high <= MAX_JOB_SECONDS``
        (1e12 s); default 0.2 h to 5 h, the shipped traces' range. Generated jobs only.
    duration_mix : mapping of (float, float) to float, optional
        Run-time ranges -> weight, normalized as `gang_mix`'s: each job draws a range from the mix
        and its static run time log-uniform over that range, each range ``(low, high)`` bounded as
        `duration_s` is; ``{(360, 1800): 0.85, (18000, 54000): 0.15}`` draws 85 % jobs of 6 to 30
        minutes and 15 % of 5 to 15 hours. None (default): every job's run time from `duration_s`,
        which the mix then replaces (a seed draws exactly what it drew before the field existed).
        Generated jobs only.
    round_s : float
        Round length of the workload (default 120 s), > 0 and at most ``MAX_JOB_SECONDS``.
    throughputs : str
        Throughput set of the shipped profiles (``"tacc"``, default, or ``"wisr"``).
    uncertainty : Uncertainty, optional
        Uncertain adaptation of generated jobs (`vfm.cluster.generate`); None (default) and
        ``Uncertainty()`` generate the same. Generated jobs only: a resampled job keeps its own
        epochs and profile.
    """

    jobs: int
    gpus: int
    interarrival_s: float = 40.0
    gang_mix: Mapping[int, float] | tuple[tuple[int, float], ...] | None = None
    adaptation_mix: Mapping[str, float] | tuple[tuple[str, float], ...] = (
        ("static", 0.0), ("gns", 0.5), ("accordion", 0.5))
    duration_s: tuple[float, float] = (720.0, 18000.0)
    round_s: float = 120.0
    throughputs: str = "tacc"
    uncertainty: Uncertainty | None = None
    duration_mix: Mapping[tuple[float, float], float] | tuple[tuple[tuple[float, float], float], ...] | None = None

    def __post_init__(self) -> None:
        check_parameters(vars(self), _spec_constraints())
        object.__setattr__(self, "duration_s", (float(self.duration_s[0]), float(self.duration_s[1])))
        gang_mix = self.gang_mix if self.gang_mix is not None else tuple(
            (g, w) for g, w in _ARTIFACT_GANG_MIX if g <= self.gpus)
        object.__setattr__(self, "gang_mix", _mix("gang_mix", gang_mix))
        object.__setattr__(self, "adaptation_mix", _mix("adaptation_mix", self.adaptation_mix))
        # Cross-field: a gang is at most the cluster (`gpus`, checked above), so its constraint is
        # built here.
        gang = Interval(Whole, 1, self.gpus, note="the cluster's GPUs")
        for size, _ in self.gang_weights:
            check_parameters({"gang_mix's gang size": size}, {"gang_mix's gang size": gang})
        for mode, _ in self.adaptation_weights:
            check_parameters({"adaptation_mix's mode": mode}, {"adaptation_mix's mode": _MODE})
        if self.duration_mix is not None:
            ranges = _mix("duration_mix", self.duration_mix)
            for low_high, _ in ranges:
                check_parameters({"duration_mix's range": low_high}, {"duration_mix's range": _DURATION_RANGE})
            ranges = tuple(((float(low), float(high)), p) for (low, high), p in ranges)
            # Given as a tuple and as a list, a range is the same range: only now comparable.
            check_distinct("duration_mix", [r for r, _ in ranges], "a range", "give each range one weight")
            object.__setattr__(self, "duration_mix", ranges)

    @property
    def gang_weights(self) -> tuple[tuple[int, float], ...]:
        """`gang_mix` as ``((gang, probability), ...)``, probabilities summing to 1."""
        return cast(tuple[tuple[int, float], ...], self.gang_mix)

    @property
    def duration_weights(self) -> tuple[tuple[tuple[float, float], float], ...] | None:
        """`duration_mix` as ``(((low, high), probability), ...)``, probabilities summing to 1;
        None without one."""
        return cast(tuple[tuple[tuple[float, float], float], ...] | None, self.duration_mix)

    @property
    def adaptation_weights(self) -> tuple[tuple[str, float], ...]:
        """`adaptation_mix` as ``((mode, probability), ...)``, probabilities summing to 1."""
        return cast(tuple[tuple[str, float], ...], self.adaptation_mix)


def _spec_constraints() -> dict[str, Constraint]:
    """`_SPEC_CONSTRAINTS` and `throughputs`, one of the shipped sets (read when a spec is built,
    not when this module is imported)."""
    return {**_SPEC_CONSTRAINTS, "throughputs": OneOf(throughput_sets())}


def _mix(name: str, mix: Any) -> tuple[tuple[Any, float], ...]:
    """A mix as ``((value, probability), ...)``, weights normalized to probabilities summing to 1."""
    check(name, mix, _MIX)
    pairs = tuple(mix.items()) if isinstance(mix, Mapping) else tuple(mix)
    for k, pair in enumerate(pairs):
        check(f"{name}[{k}]", pair, _PAIR)
        check_length(f"{name}[{k}]", pair, 2, "part (value, weight)")
    values = [value for value, _ in pairs]
    check_distinct(name, values, "a value", "give each value one weight")
    for value, weight in pairs:
        check(f"{name}'s weight for {shown_value(value)}", weight, _WEIGHT)
    scaled = [float(weight) for _, weight in pairs]
    if max(scaled) <= 0:
        raise ValidationError(f"{name}'s weights must be finite numbers >= 0, not all 0, got all 0")
    total = sum(scaled)
    if not sys.float_info.min < total < math.inf:
        # Weights near 1e308 sum to inf, and subnormal ones lose their digits: scale by the largest.
        largest = max(scaled)
        scaled = [w / largest for w in scaled]
        total = sum(scaled)
    probabilities = [w / total for w in scaled]
    if abs(math.fsum(probabilities) - 1) > _MIX_TOLERANCE:
        raise ValidationError(f"{name}'s weights {shown_value([w for _, w in pairs])} do not normalize to "
                              f"probabilities summing to 1")
    return tuple((value, p) for value, p in zip(values, probabilities, strict=True))


