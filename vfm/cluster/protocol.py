"""The scheduler-facing interface every scheduling policy implements.

It is the interface of `vfm.planner.Policy`: a scheduler (here the simulator of
`vfm.cluster.simulator`) tells the policy what happens and asks it, once per round, which jobs
run. A policy sees what a real scheduler sees: each job's gang size, its regimes (batch size ->
seconds per epoch on its gang, from profiling), its total epochs, its kind (model and adaptation
mode), and, as they finish, the batch sizes of its epochs. It never sees a job's future batch sizes.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from vfm.cluster.gpu_types import ClusterTypes


@runtime_checkable
class SchedulingPolicy(Protocol):
    """What the simulator drives (`vfm.planner.Policy` satisfies it as is)."""

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int, *,
                kind: Hashable = None) -> None:
        """A job arrives (at the start of the round in which the scheduler first sees it).

        `kind` is what kind of job it is, ``(model, adaptation)`` in the simulator, or None: a
        scheduler knows what it was asked to train, and a policy may learn from the finished jobs
        of a kind (it may also ignore it)."""

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves without finishing (cancelled)."""

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished in the last round, one batch size per epoch; a job whose
        epochs are all done has completed and leaves the policy."""

    def next_round(self) -> list[Hashable]:
        """The jobs to run in the next round, whole gangs within the cluster's capacity."""


@runtime_checkable
class TypedSchedulingPolicy(Protocol):
    """A policy for a cluster of several GPU types (docs/simulation.md, "GPU types").

    The same conversation as `SchedulingPolicy`, with two differences: a job's regimes are given
    per type, and the answer places each job on a type. The simulator drives a policy through
    this interface when the policy has a `cluster` (which is how it tells the two apart).
    """

    #: The cluster the policy schedules: its GPU count per type.
    cluster: ClusterTypes

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[str, Mapping[float, float]], epochs: int, *,
                kind: Hashable = None) -> None:
        """A job arrives; `regimes` maps each type that can host it (`vfm.cluster.gpu_types.job_types`)
        to its batch size -> seconds per epoch there (`vfm.cluster.gpu_types.type_regimes`)."""

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves without finishing (cancelled)."""

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished in the last round (as `SchedulingPolicy.report_progress`)."""

    def next_round(self) -> Mapping[Hashable, str]:
        """The jobs to run in the next round, each with the type its whole gang runs on: within
        every type's count, and only on types the job was told of."""


@runtime_checkable
class ReportsDiagnostics(Protocol):
    """The optional part of the conversation: a policy that says how it decided each round
    (`vfm.planner.Policy` and `vfm.planner.TypedPolicy` do). The simulator asks it once per
    round, right after `next_round`, and keeps what it says (`Simulation.replans`,
    `Simulation.guards`); a policy without it is simulated the same, with nothing recorded."""

    def diagnostics(self) -> Mapping[str, Any]:
        """How the round `next_round` last returned was decided: ``"guards"``, a mapping of each
        guard's name to the jobs it decided, and ``"replan"``, None or, when the policy re-planned
        for this round, a mapping of the re-plan's ``solver``, ``status`` and ``fairness`` and the
        seconds of each of its stages."""
