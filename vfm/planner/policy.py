"""The scheduler-facing policy: one object a cluster scheduler drives round by round.

It holds the jobs and what has been observed of them, and re-plans with `vfm.planner.plan` only
when it must: when a job arrives, when a job completes or is removed, and every `replan_every`
rounds (default 8); in between it serves the next round of the standing plan. It depends on no
simulator: a scheduler calls `add_job`, `report_progress` and `remove_job` as things happen and
`next_round` once per round.

Examples
--------
A toy scheduler loop: two jobs on 2 GPUs; each round, every running job finishes the epochs that
fit in the round at its current batch size.

>>> from vfm.planner import Policy
>>> policy = Policy(capacity=2, rounds=6, round_s=120.0)
>>> policy.add_job("resnet", gpus=1, regimes={64: 60.0, 128: 40.0}, epochs=12)
>>> policy.add_job("bert", gpus=2, regimes={32: 120.0}, epochs=3)
>>> batch = {"resnet": 64, "bert": 32}
>>> for round_index in range(12):
...     for job in policy.next_round():
...         epochs = int(120.0 // policy.regimes(job)[batch[job]])
...         policy.report_progress(job, [batch[job]] * min(epochs, policy.epochs_left(job)))
>>> policy.jobs, policy.completed
([], ['resnet', 'bert'])
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from vfm._validation import is_whole
from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, Forecaster, JobStates
from vfm.jobs import equal_share
from vfm.planner import shockwave
from vfm.planner.options import PlanOptions
from vfm.planner.plan import Plan, plan
from vfm.planner.saa_ipm import load_kernels
from vfm.planner.shockwave import SHOCKWAVE_EFFICIENCY, SHOCKWAVE_PRIORITY_EXPONENT, SHOCKWAVE_RESERVE


@dataclass
class _Job:
    gpus: int
    regimes: dict[float, float]
    epochs: int
    budget: float
    # Epochs observed per regime, in the order of `regimes` (only the counts matter to the
    # forecasts; keeping them, not the list of epochs, makes a report O(its epochs)).
    counts: np.ndarray
    fair_finish_at_s: float | None = None  # absolute time (policy clock)

    @property
    def labels(self) -> np.ndarray:
        return np.fromiter(self.regimes, dtype=np.float64, count=len(self.regimes))

    @property
    def done(self) -> int:
        return int(self.counts.sum())


class Policy:
    """A receding-horizon planner a scheduler drives round by round (module docstring).

    Parameters
    ----------
    capacity : int
        GPUs in the cluster.
    options : vfm.planner.PlanOptions, optional
        How each re-plan plans (window, Shockwave options, backend; default: `PlanOptions`'s
        defaults). Keyword overrides of its fields are accepted too
        (``Policy(8, rounds=10)`` is ``Policy(8, PlanOptions(rounds=10))``).
    replan_every : int
        `K`: re-plan at least every `K` rounds (default 8), besides arrivals and completions.
    forecaster : vfm.forecast.Forecaster, optional
        Default: `vfm.forecast.DirichletForecaster()`.
    seed : int
        Scenarios of the `k`-th re-plan are drawn from ``(seed, k)``: reproducible runs.
    fairness : bool
        Keep Shockwave's finish-time-fairness targets (momentum averages of each job's
        equal-share finish-time estimate) and plan with them (default False).
    execution : {"credit", "window"}
        How a round is served from the standing plan. ``"window"``: the plan's own rounded
        schedule for that round. ``"credit"`` (default): the relaxation's fractions for that
        round plus each job's credit (fractions planned minus rounds received, carried across
        re-plans), jobs with the most first, whole gangs first-fit, then idle GPUs to the other
        jobs with the longest forecast time left; the rounding error of one round is made up in
        the next instead of being lost at every re-plan (as Gavel does with its allocations).
    """

    def __init__(
        self,
        capacity: int,
        options: PlanOptions | None = None,
        *,
        replan_every: int = 8,
        forecaster: Forecaster | None = None,
        seed: int = 0,
        fairness: bool = False,
        execution: Literal["credit", "window"] = "credit",
        **overrides: Any,
    ) -> None:
        if not is_whole(capacity) or capacity < 1:
            raise ValidationError(f"capacity must be a positive whole number of GPUs, got {capacity!r}")
        if not is_whole(replan_every) or replan_every < 1:
            raise ValidationError(f"replan_every must be a positive whole number of rounds, got {replan_every!r}")
        if forecaster is not None and not isinstance(forecaster, Forecaster):
            raise ValidationError(f"forecaster must implement vfm.forecast.Forecaster (remaining_runtime, "
                                  f"epochs_per_round, sample_epochs_per_round), got {type(forecaster).__name__}")
        if not isinstance(fairness, bool | np.bool_):
            raise ValidationError(f"fairness must be True or False, got {fairness!r}")
        if not is_whole(seed) or seed < 0:
            raise ValidationError(f"seed must be a non-negative whole number, got {seed!r}")
        self.options = (PlanOptions() if options is None else options).updated(**overrides)
        self.capacity = int(capacity)
        self.replan_every = min(int(replan_every), self.options.rounds)
        self.forecaster = DirichletForecaster() if forecaster is None else forecaster
        self.seed = int(seed)
        self.fairness = bool(fairness)
        self._jobs: dict[Hashable, _Job] = {}
        self._completed: list[Hashable] = []
        self._plan: Plan | None = None
        self._plan_jobs: tuple[Hashable, ...] = ()
        self._since_plan = 0
        self._stale = True
        self._replans = 0
        if execution not in ("credit", "window"):
            raise ValidationError(f"execution must be 'credit' or 'window', got {execution!r}")
        self.execution = execution
        self._credit: dict[Hashable, float] = {}  # between re-plans: in `_plan_credit`
        self._plan_credit = np.zeros(0)
        self.round_index = 0
        if self.options.solver in (None, "saa-ipm"):
            load_kernels()  # here, not in the first re-plan: a scheduler's re-plans stay predictable

    @classmethod
    def shockwave(cls, capacity: int, round_s: float = 120.0, **overrides: Any) -> Policy:
        """The policy configured as Shockwave: what the reproduction of the paper runs.

        A window of 20 rounds of `round_s` seconds, re-planned on arrivals, completions and every
        8 rounds; finish-time-fairness targets with :math:`\\rho_{\\max} = 1` and the priority
        relaxation (exponent from `SHOCKWAVE_PRIORITY_EXPONENT`); the efficiency term
        :math:`-k \\max_i S_i` with `SHOCKWAVE_EFFICIENCY`; `SHOCKWAVE_RESERVE` of each window's
        GPU-rounds left to it; credit execution; the certainty-equivalent forecast (S = 1).

        Parameters
        ----------
        capacity : int
            GPUs in the cluster.
        round_s : float
            Seconds per round.
        **overrides
            Any other `Policy` argument or `vfm.planner.PlanOptions` field (``seed``,
            ``scenarios``, ``efficiency``, ``reserve``, ``execution``, ``solver``, ``tol``, ...),
            replacing the configuration's value.

        Examples
        --------
        >>> policy = Policy.shockwave(32)
        >>> policy.fairness, policy.options.efficiency, policy.options.priority_exponent
        (True, 0.05, 12.0)
        """
        exponent = SHOCKWAVE_PRIORITY_EXPONENT[min(SHOCKWAVE_PRIORITY_EXPONENT, key=lambda gpus: abs(gpus - capacity))]
        configuration: dict[str, Any] = {
            "rounds": 20, "round_s": round_s, "replan_every": 8, "fairness": True, "rho_max": 1.0,
            "priority_exponent": exponent, "efficiency": SHOCKWAVE_EFFICIENCY, "reserve": SHOCKWAVE_RESERVE,
            "execution": "credit"}
        return cls(capacity, **{**configuration, **overrides})

    # --- what the scheduler tells the policy ---------------------------------------------------

    def add_job(self, job_id: Hashable, gpus: int, regimes: Mapping[float, float], epochs: int,
                budget: float = 1.0) -> None:
        """A job arrives: its gang size, its regimes (batch size -> seconds per epoch), its total epochs.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job: an id already present, a gang size that is not a positive whole
            number or is wider than the cluster, a malformed regime set or epoch count, a
            budget that is not positive.
        """
        if job_id in self._jobs:
            raise ValidationError(f"job {job_id!r} is already in the policy; remove it first")
        if not is_whole(gpus) or gpus < 1:
            raise ValidationError(f"gpus of job {job_id!r} must be a positive whole number of GPUs, got {gpus!r}")
        if gpus > self.capacity:
            raise ValidationError(f"gpus of job {job_id!r} ({gpus}) is wider than the cluster ({self.capacity} GPUs)")
        if not (np.isfinite(budget) and budget > 0):
            raise ValidationError(f"budget of job {job_id!r} must be > 0, got {budget!r}")
        # The state constructor checks epochs and regimes and names the job in its messages.
        JobStates.from_lists([epochs], [regimes], [[]], job_ids=[job_id])
        regime_set = {float(b): float(d) for b, d in dict(regimes).items()}
        self._jobs[job_id] = _Job(int(gpus), regime_set, int(epochs), float(budget), np.zeros(len(regime_set)))
        self._stale = True

    def remove_job(self, job_id: Hashable) -> None:
        """A job leaves (cancelled, or finished by the scheduler's own account)."""
        self._job(job_id)
        del self._jobs[job_id]
        self._stale = True

    def report_progress(self, job_id: Hashable, batch_sizes: Sequence[float]) -> None:
        """Epochs the job finished since the last report, one batch size (its regime) per epoch.

        A job whose epochs are all done completes: it leaves the policy and is listed in
        `completed`, and the next round re-plans.

        Raises
        ------
        vfm.errors.ValidationError
            Naming the job: an unknown id, a batch size not in its regimes, more epochs than it has.
        """
        job = self._job(job_id)
        try:
            sizes = np.asarray(batch_sizes, dtype=np.float64).ravel()
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"batch_sizes of job {job_id!r} must be a list of batch sizes (numbers) ({exc})") \
                from None
        labels = job.labels
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
        job.counts = job.counts + match.sum(axis=0)
        if job.done == job.epochs:
            del self._jobs[job_id]
            self._completed.append(job_id)
            self._stale = True

    # --- what the policy tells the scheduler ---------------------------------------------------

    def next_round(self) -> list[Hashable]:
        """The jobs to run in the next round (each on its whole gang), re-planning if due."""
        if not self._jobs:
            self.round_index += 1
            return []
        if self._stale or self._plan is None or self._since_plan >= self.replan_every:
            self._replan()
        assert self._plan is not None
        if self.execution == "window":
            running = self._plan.jobs_in_round(self._since_plan)
        else:
            running = self._serve_with_credit()
        self._since_plan += 1
        self.round_index += 1
        return running

    @property
    def jobs(self) -> list[Hashable]:
        """The jobs in the policy, in arrival order."""
        return list(self._jobs)

    @property
    def completed(self) -> list[Hashable]:
        """The jobs that completed all their epochs, in completion order."""
        return list(self._completed)

    @property
    def last_plan(self) -> Plan | None:
        """The standing plan (None before the first round)."""
        return self._plan

    @property
    def replans(self) -> int:
        """How many times the policy has re-planned."""
        return self._replans

    def regimes(self, job_id: Hashable) -> dict[float, float]:
        """Job `job_id`'s regimes (batch size -> seconds per epoch)."""
        return dict(self._job(job_id).regimes)

    def epochs_left(self, job_id: Hashable) -> int:
        """Epochs job `job_id` has not finished yet."""
        job = self._job(job_id)
        return job.epochs - job.done

    # --- internals -------------------------------------------------------------------------------

    def _job(self, job_id: Hashable) -> _Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise ValidationError(f"job {job_id!r} is not in the policy (add it with add_job)") from None

    def _replan(self) -> None:
        ids = tuple(self._jobs)
        jobs = [self._jobs[i] for i in ids]
        states = _states(jobs, ids)
        gpus = np.array([j.gpus for j in jobs])
        targets = self._fair_finish_s(states, jobs) if self.fairness else None
        warm = None
        if self._plan is not None and ids == self._plan_jobs and self._since_plan < self.options.rounds:
            # Same jobs: the old relaxation, moved forward by the rounds served since.
            rounds = self.options.rounds
            keep = np.minimum(np.arange(rounds) + self._since_plan, rounds - 1)
            warm = self._plan.relaxed[:, keep]
        self._plan = plan(
            states, gpus, self.capacity, self.options, forecaster=self.forecaster,
            seed=np.random.SeedSequence((self.seed, self._replans)), budgets=[j.budget for j in jobs],
            fair_finish_s=targets, warm_start=warm,
        )
        if self._plan_jobs:  # carry the credit of the jobs still present into the new plan's order
            self._credit = dict(zip(self._plan_jobs, self._plan_credit.tolist(), strict=True))
        self._plan_credit = np.array([self._credit.get(job, 0.0) for job in ids])
        self._plan_jobs = ids
        self._since_plan = 0
        self._stale = False
        self._replans += 1

    def _serve_with_credit(self) -> list[Hashable]:
        """One round of the standing plan by carried credit (`execution="credit"`)."""
        plan_ = self._plan
        assert plan_ is not None and plan_.job_ids is not None
        ran, self._plan_credit = shockwave.serve_with_credit(
            plan_.program, plan_.relaxed[:, self._since_plan], self._plan_credit, float(self.capacity))
        return [plan_.job_ids[i] for i in np.flatnonzero(ran)]

    def _fair_finish_s(self, states: JobStates, jobs: list[_Job]) -> np.ndarray:
        """FT* of each job, seconds from now: momentum averages of equal-share finish estimates."""
        now = self.round_index * self.options.round_s
        share = equal_share(len(jobs), self.capacity)
        estimate = now + np.asarray(self.forecaster.remaining_runtime(states)) / share
        previous = np.array([np.nan if job.fair_finish_at_s is None else job.fair_finish_at_s for job in jobs])
        for job, at in zip(jobs, shockwave.updated_targets(previous, estimate).tolist(), strict=True):
            job.fair_finish_at_s = at
        # A target already passed cannot be met: it counts as due in one second, which makes the
        # constraints infeasible (the planner falls back to the priority relaxation) and keeps the
        # projected ratios finite and ordered by the time the jobs have left.
        left = np.array([job.fair_finish_at_s for job in jobs]) - now
        return np.maximum(left, 1.0)


def _states(jobs: list[_Job], ids: tuple[Hashable, ...]) -> JobStates:
    """The jobs' states, regimes padded to the largest set (each job was validated on arrival)."""
    n, width = len(jobs), max(len(job.regimes) for job in jobs)
    labels, durations = np.full((n, width), np.nan), np.zeros((n, width))
    mask, counts = np.zeros((n, width), dtype=np.bool_), np.zeros((n, width))
    for row, job in enumerate(jobs):  # per job by nature: a dict of jobs
        k = len(job.regimes)
        labels[row, :k], durations[row, :k] = job.labels, list(job.regimes.values())
        mask[row, :k], counts[row, :k] = True, job.counts
    return JobStates(np.array([job.epochs for job in jobs], dtype=np.float64), counts, durations, mask,
                     regime_labels=labels, job_ids=ids)
