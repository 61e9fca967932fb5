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

#: A round's answer: the job ids to run (each on the cluster's one type), or each job id with the
#: GPU type its whole gang runs on.
Answer = Sequence[Hashable] | Mapping[Hashable, str]


@runtime_checkable
class SchedulingPolicy(Protocol):
    """What the simulator drives (`vfm.planner.Policy` satisfies it as is), on one GPU type or several.

    A policy that is also `ClusterAware` (it has a `cluster`) is told each job's regimes on every
    type that can host it and places each job of its answer on a type; any other policy is told
    each job's regimes on the profiled type (`vfm.cluster.PROFILED_TYPE`) and runs on a cluster of
    that one type. On a cluster of one type, an answer may be a list of job ids: the shorthand for
    each of them on that type.
    """

    # `regimes` is typed Any: its form depends on whether the policy is `ClusterAware` (a policy
    # that takes one form only still implements the protocol).
    def add_job(self, job_id: Hashable, gpus: int, regimes: Any, epochs: int, *,
                kind: Hashable = None, restart_s: float | None = None) -> None:
        """A job arrives (at the start of the round in which the scheduler first sees it).

        `regimes`: batch size -> seconds per epoch on its gang; for a `ClusterAware` policy, each
        type that can host the job (`vfm.cluster.gpu_types.job_types`) -> its regimes there
        (`vfm.cluster.gpu_types.type_regimes`). `kind` is what kind of job it is,
        ``(model, adaptation)`` in the simulator, or None: a scheduler knows what it was asked to
        train, and a policy may learn from the finished jobs of a kind (it may also ignore it).
        `restart_s` is the seconds the job loses each time it starts or restarts (checkpoint and
        restore; the simulator passes the workload's `Job.restart_s`, else its own `restart_s`),
        or None: unknown. A policy may weigh it against the restarts its schedule causes, or
        ignore it; every implementation must accept it."""

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves without finishing (cancelled)."""

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished in the last round, one batch size per epoch; a job whose
        epochs are all done has completed and leaves the policy."""

    def next_round(self) -> Answer:
        """The jobs to run in the next round, whole gangs within each type's count: a mapping of
        each to its GPU type (only types the job was told of), or, on a cluster of one type, a
        list of their ids."""


@runtime_checkable
class ClusterAware(Protocol):
    """The optional part of the conversation that makes it typed: a policy built for a cluster's
    GPU types (`vfm.planner.Policy` always is; docs/simulation.md, "GPU types"). The simulator
    checks that it is the workload's cluster, tells the policy each job's regimes per type, and
    accepts its answer's types."""

    #: The cluster the policy schedules: its GPU count per type.
    cluster: ClusterTypes


@runtime_checkable
class ReportsDiagnostics(Protocol):
    """The optional part of the conversation: a policy that says how it decided each round
    (`vfm.planner.Policy` does). The simulator asks it once per
    round, right after `next_round`, and keeps what it says (`Simulation.replans`,
    `Simulation.guards`); a policy without it is simulated the same, with nothing recorded."""

    def diagnostics(self) -> Mapping[str, Any]:
        """How the round `next_round` last returned was decided: ``"guards"``, a mapping of each
        guard's name to the jobs it decided, and ``"replan"``, None or, when the policy re-planned
        for this round, a mapping of the re-plan's ``solver``, ``status`` and ``fairness`` and the
        seconds of each of its stages."""
