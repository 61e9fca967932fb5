"""The metrics, as pure functions of per-job arrays, and `summarize`.

Every function takes arrays over the n jobs of one run, in any consistent order:

| metric | definition |
|---|---|
| JCT | completion time minus arrival time |
| makespan | max over jobs of arrival + JCT (measured from time 0 of the trace) |
| FTF rho | ``JCT / (isolated_s * max(1, N_jobs / G))`` |
| worst FTF | max rho |
| unfair fraction | share of jobs with rho > 1.05 (reported in percent, ``unfair_pct``) |
| utilization | busy GPU-seconds / (G * makespan): the mean over GPUs of busy time / makespan |
| average JCT | mean JCT |

``N_jobs`` is the number of jobs in the *workload* (not those present at some moment), as in the
Shockwave artifact's published results (``canonical_results_120jobs_32gpus.json``). On a cluster
of several GPU types, ``isolated_s`` is the job's time alone on a proportional slice of the
cluster, every type in proportion to its GPUs (`vfm.cluster.Simulation.isolated_s`,
`vfm.cluster.gpu_types.proportional_isolated_s`), and ``G`` all the cluster's GPUs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vfm._validation import check_shape
from vfm.jobs import equal_share
from vfm.parameters import Interval, Real, check, check_array, check_length, check_nonempty, check_parameters

if TYPE_CHECKING:
    from vfm.cluster.simulator import Simulation

FloatArray = NDArray[np.float64]

#: A job is treated unfairly when its FTF rho exceeds this.
UNFAIR_RHO = 1.05

__all__ = [
    "UNFAIR_RHO",
    "avg_jct_s",
    "ftf_rho",
    "headline",
    "jct_s",
    "longest_wait_rounds",
    "makespan_s",
    "present_rounds",
    "summarize",
    "unfair_pct",
    "utilization",
    "waits_reaching",
    "worst_ftf",
]


def _vector(value: ArrayLike, name: str) -> FloatArray:
    """`value` as a per-job array: one finite number per job, at least one job."""
    array = np.asarray(value, dtype=float)
    check_shape(name, array, (None,), ", one entry per job")
    check_nonempty(name, array.size, "job")
    check_array(name, array, Interval(Real, note="an unfinished job has no JCT"))
    return array


def jct_s(arrival_s: ArrayLike, finish_s: ArrayLike) -> FloatArray:
    """Job completion times ``finish_s - arrival_s``, shape (n,)."""
    arrival, finish = _vector(arrival_s, "arrival_s"), _vector(finish_s, "finish_s")
    check_length("finish_s", finish, arrival.size, "job of arrival_s")
    return finish - arrival


def makespan_s(arrival_s: ArrayLike, jct: ArrayLike) -> float:
    """``max(arrival_s + jct)``: when the last job finished, from time 0 of the trace."""
    arrival, jct_ = _vector(arrival_s, "arrival_s"), _vector(jct, "jct_s")
    check_length("jct_s", jct_, arrival.size, "job of arrival_s")
    return float((arrival + jct_).max())


def avg_jct_s(jct: ArrayLike) -> float:
    """Mean job completion time."""
    return float(_vector(jct, "jct_s").mean())


def ftf_rho(jct: ArrayLike, isolated_s: ArrayLike, gpus: int, n_jobs: int | None = None) -> FloatArray:
    """Finish-time fairness ``jct / (isolated_s * max(1, n_jobs / gpus))``, shape (n,).

    Parameters
    ----------
    jct, isolated_s : array_like, shape (n,)
    gpus : int
        GPUs in the cluster (G).
    n_jobs : int, optional
        Jobs in the workload (N); default n, the length of the arrays.
    """
    jct_, isolated = _vector(jct, "jct_s"), _vector(isolated_s, "isolated_s")
    check_length("isolated_s", isolated, jct_.size, "job of jct_s")
    check_array("isolated_s", isolated, Interval(Real, 0, closed="neither"))
    check("gpus", gpus, Interval(Real, 1))
    n = jct_.size if n_jobs is None else n_jobs
    return jct_ / (isolated / equal_share(n, gpus))


def worst_ftf(rho: ArrayLike) -> float:
    """The largest FTF rho."""
    return float(_vector(rho, "ftf_rho").max())


def unfair_pct(rho: ArrayLike, threshold: float = UNFAIR_RHO) -> float:
    """Percentage (0-100) of jobs with ``rho > threshold``."""
    return float(100.0 * (_vector(rho, "ftf_rho") > threshold).mean())


def utilization(busy_gpu_s: float, gpus: int, makespan: float) -> float:
    """``busy_gpu_s / (gpus * makespan)``: the mean over GPUs of the busy share of the makespan."""
    check_parameters({"gpus": gpus, "makespan": makespan},
                     {"gpus": Interval(Real, 1), "makespan": Interval(Real, 0, closed="neither", finite=False)})
    return float(busy_gpu_s / (gpus * makespan))


def present_rounds(simulation: Simulation) -> NDArray[np.bool_]:
    """Whether each job was present with work left in each round, shape (R, n): the round starts
    at or after its arrival and before its finish."""
    start = np.array([r.start_s for r in simulation.rounds])
    present: NDArray[np.bool_] = (start[:, None] >= simulation.arrival_s) & (start[:, None] < simulation.finish_s)
    return present


#: A wait that a scheduler's users notice: 20 rounds (40 minutes of 120 s rounds), one planning
#: window of the Shockwave configuration. `summarize` counts the jobs that waited longer.
LONG_WAIT_ROUNDS = 20


def _waiting_runs(simulation: Simulation) -> NDArray[np.int64]:
    """Per round and job, shape (rounds, n): the consecutive rounds the job has been present with
    work left without running, up to and including this round (0 where it ran or was absent)."""
    sim = simulation
    present = present_rounds(sim)
    index_of = {job_id: j for j, job_id in enumerate(sim.job_id.tolist())}
    ran = np.zeros(present.shape, dtype=bool)
    held = [[index_of[i] for i in r.jobs] for r in sim.rounds]  # per round: ids to rows
    ran[np.repeat(np.arange(len(held)), [len(h) for h in held]), np.concatenate([[], *held]).astype(np.int64)] = True
    waiting = (present & ~ran).astype(np.int64)
    # Length of the current run of waiting rounds: the count so far minus the count at the last
    # round that broke it.
    count = np.cumsum(waiting, axis=0)
    run: NDArray[np.int64] = count - np.maximum.accumulate(np.where(waiting == 0, count, 0), axis=0)
    return run


def longest_wait_rounds(simulation: Simulation) -> NDArray[np.int64]:
    """Each job's longest run of consecutive rounds in which it was present with work left and
    did not run, shape (n,): the rounds from its arrival to its first round, or between two of
    its rounds (presence as in `present_rounds`)."""
    longest: NDArray[np.int64] = _waiting_runs(simulation).max(axis=0, initial=0)
    return longest


def waits_reaching(simulation: Simulation, rounds: int) -> int:
    """How many times a job's run of consecutive waiting rounds (as in `longest_wait_rounds`)
    reached `rounds`: with a policy's ``max_wait`` = `rounds`, how often its no-starvation guard
    decided a round (a job that has waited ``max_wait`` rounds is served before every other)."""
    return int((_waiting_runs(simulation) == rounds).sum())


def headline(arrival_s: ArrayLike, jct: ArrayLike, isolated_s: ArrayLike, gpus: int, *,
             n_jobs: int | None = None, busy_gpu_s: float | None = None) -> dict[str, float]:
    """The headline metrics of one run: makespan_s, avg_jct_s, worst_ftf, unfair_pct and, when
    `busy_gpu_s` is given, utilization. Arrays have shape (n,); `n_jobs` defaults to n."""
    rho = ftf_rho(jct, isolated_s, gpus, n_jobs)
    makespan = makespan_s(arrival_s, jct)
    out = {"makespan_s": makespan, "avg_jct_s": avg_jct_s(jct), "worst_ftf": worst_ftf(rho),
           "unfair_pct": unfair_pct(rho)}
    if busy_gpu_s is not None:
        out["utilization"] = utilization(busy_gpu_s, gpus, makespan)
    return out


def summarize(simulation: Simulation) -> dict[str, Any]:
    """Everything a benchmark reports about one run, as plain JSON-ready Python values.

    Returns
    -------
    dict
        ``makespan_s, avg_jct_s, worst_ftf, unfair_pct, utilization`` (floats);
        ``planner_s``: ``{"median", "max"}`` seconds of the ``next_round()`` calls made while
        jobs were present; ``replans``: `replan_summary` of the policy's re-plans;
        ``guards``: `Simulation.guards` (job-rounds each guard of the policy's execution
        decided); ``longest_wait_rounds``: the largest of `longest_wait_rounds`; ``jobs_waiting_over``:
        ``{"20": jobs whose longest wait exceeds LONG_WAIT_ROUNDS}``; ``jobs``:
        one ``{id, arrival_s, finish_s, jct_s, ftf_rho}`` per job (workload order); ``rounds``:
        one ``{start_s, jobs}`` per round (ids holding GPUs).
    """
    sim = simulation
    jct = jct_s(sim.arrival_s, sim.finish_s)
    rho = ftf_rho(jct, sim.isolated_s, sim.gpus, sim.n_jobs)
    out: dict[str, Any] = headline(sim.arrival_s, jct, sim.isolated_s, sim.gpus, n_jobs=sim.n_jobs,
                                   busy_gpu_s=sim.busy_gpu_s)
    timed = sim.planner_s[sim.planner_busy]
    out["planner_s"] = {"median": float(np.median(timed)) if timed.size else float("nan"),
                        "max": float(timed.max()) if timed.size else float("nan")}
    out["replans"] = replan_summary(sim.replans)
    out["guards"] = dict(sim.guards)
    waits = longest_wait_rounds(sim)
    out["longest_wait_rounds"] = int(waits.max(initial=0))
    out["jobs_waiting_over"] = {str(LONG_WAIT_ROUNDS): int((waits > LONG_WAIT_ROUNDS).sum())}
    out["jobs"] = [
        {"id": job_id, "arrival_s": a, "finish_s": f, "jct_s": j, "ftf_rho": r}
        for job_id, a, f, j, r in zip(sim.job_id.tolist(), sim.arrival_s.tolist(), sim.finish_s.tolist(),
                                      jct.tolist(), rho.tolist(), strict=True)
    ]
    out["rounds"] = [{"start_s": r.start_s, "jobs": [_plain(i) for i in r.jobs]} for r in sim.rounds]
    return out


#: The components of a re-plan's time (`vfm.planner.Plan.timings`).
REPLAN_COMPONENTS = ("forecast", "build", "solve", "rounding", "total")


def replan_summary(replans: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """``{"count", "solvers": {name: count}, "statuses": {status: count}, "fairness": {Plan.fairness:
    count}, "median_s": {component: s},
    "max_s": {component: s}}`` over a simulation's re-plans (`Simulation.replans`); count 0 and
    empty maps for a policy that does not plan."""
    summary: dict[str, Any] = {"count": len(replans), "solvers": {}, "statuses": {}, "fairness": {}, "median_s": {},
                               "max_s": {}}
    for key, field in (("solvers", "solver"), ("statuses", "status"), ("fairness", "fairness")):
        for replan in replans:
            if field in replan:
                summary[key][replan[field]] = summary[key].get(replan[field], 0) + 1
    for component in REPLAN_COMPONENTS:
        values = np.array([replan.get(component, np.nan) for replan in replans], dtype=np.float64)
        if values.size and np.isfinite(values).any():
            summary["median_s"][component] = float(np.nanmedian(values))
            summary["max_s"][component] = float(np.nanmax(values))
    return summary


def _plain(value: Any) -> Any:
    """A numpy scalar as the Python scalar JSON can take; anything else unchanged."""
    return value.item() if isinstance(value, np.generic) else value
