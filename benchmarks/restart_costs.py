"""Per-job restart costs: `vfm` told what each job's restart costs, against `vfm` told nothing.

Run from the repository root, with one BLAS thread::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.restart_costs [--seeds 1] [--jobs 120] [--out [FILE]]

The workloads
    For each seed, a generated workload (`vfm.cluster.generate_workload`: ``--jobs`` jobs on 32
    GPUs, the artifact's gangs and run times, arrivals over about 1.4 hours, as the 120-job trace
    and `benchmarks.robustness`'s generated cases), each job given a restart cost (`Job.restart_s`)
    drawn uniformly, seeded, from 25 to 250 s, with 120-s rounds and with 360-s rounds. On 120-s
    rounds a restart of more than 120 s goes on over the job's next rounds, without progress
    until it ends, and is lost if the job is descheduled before then (`vfm.cluster.simulate`).

What is compared
    The reproduction's `vfm` policy (`benchmarks.reproduce.vfm_policy`, `Policy.shockwave` at the
    round length) simulated on each workload three times: ``told``, the simulator passes each job's
    cost to `add_job` and the policy gives each job the continuity its cost calls for
    (`vfm.planner.shockwave.job_continuity`); ``untold``, a thin wrapper drops it, so the policy
    takes every job at `vfm.planner.shockwave.DEFAULT_RESTART_S` (the same continuity for all);
    ``no-limit``, told, without the wait limit (``wait_limit=None``: no round is committed to a
    wait). The simulator charges the same costs in all three.

Output
    Per round length, costs and run: restarts per job (mean and max, `Simulation.restarts`), the
    share of the starts and restarts that came on a round the plan had committed to a job's wait
    (`vfm.planner.Plan.committed`, read from the policy's standing plan), the GPU-hours lost to
    restarts (the GPU-hours held without work, ``sum(gpus * (held_s - isolated_s))``: each
    restart's time, a lost restart's as far as it went), average JCT, makespan, worst FTF and the
    jobs that waited more than 20 rounds in a row (`vfm.cluster.summarize`), each the mean over the
    seeds (the max of restarts: over all of them). Printed, and with ``--out`` written to
    ``results/restart_costs/restart_costs.txt`` under the current folder (or the file given).
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks._cli import Parser, whole

if TYPE_CHECKING:
    from vfm.cluster import SchedulingPolicy, Workload

#: (round seconds, lowest and highest restart cost drawn, seconds) of each comparison.
CONFIGURATIONS: tuple[tuple[float, float, float], ...] = ((120.0, 25.0, 250.0), (360.0, 25.0, 250.0))
#: GPUs of every workload, and the mean gap between arrivals times the jobs (about 1.4 hours).
GPUS, ARRIVALS_SPAN_S = 32, 5000.0


class Untold:
    """A policy told nothing of restart costs: `add_job` drops ``restart_s`` (the policy then takes
    its default) and everything else goes to the policy it wraps."""

    def __init__(self, inner: SchedulingPolicy) -> None:
        self.inner = inner

    def add_job(self, job_id: Hashable, gpus: int, regimes: Any, epochs: int, *, kind: Hashable = None,
                restart_s: float | None = None) -> None:
        self.inner.add_job(job_id, gpus, regimes, epochs, kind=kind)

    def __getattr__(self, name: str) -> Any:  # next_round, report_progress, remove_job, cluster, diagnostics
        return getattr(self.inner, name)


class CommittedStarts:
    """A `vfm.planner.Policy` whose starts are counted: every job that runs a round after not
    running the round before (its first start included), and those of them whose round the
    standing plan had committed to its wait (`Plan.committed`)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.running: set[Hashable] = set()
        self.starts = 0
        self.committed = 0

    def __getattr__(self, name: str) -> Any:  # add_job, report_progress, remove_job, cluster, diagnostics
        return getattr(self.inner, name)

    def next_round(self) -> Any:
        answer = self.inner.next_round()
        now = set(answer)
        state = self.inner.state
        plan = state.plan
        # The round just served is the standing plan's column since_plan - 1.
        column = state.since_plan - 1
        ids = () if plan is None or plan.committed is None or plan.job_ids is None else plan.job_ids
        rows = {job: row for row, job in enumerate(ids)}
        for job in now - self.running:
            self.starts += 1
            row = rows.get(job)
            self.committed += row is not None and 0 <= column < plan.committed.shape[1] \
                and bool(plan.committed[row, column])
        self.running = now
        return answer


def workload(jobs: int, seed: int, low_s: float, high_s: float) -> Workload:
    """Seed `seed`'s generated workload of `jobs` jobs on `GPUS` GPUs, each job with a restart cost
    drawn uniformly from [`low_s`, `high_s`] (its own stream: the jobs are the same whatever the range)."""
    import numpy as np

    from vfm.cluster import Workload
    from vfm.cluster.generate import WorkloadSpec, generate_workload

    spec = WorkloadSpec(jobs=jobs, gpus=GPUS, interarrival_s=ARRIVALS_SPAN_S / jobs)
    base = generate_workload(spec, np.random.SeedSequence((2026, seed)), name=f"generated-{seed}")
    costs = np.random.default_rng((12345, seed)).uniform(low_s, high_s, base.n_jobs)
    costed = tuple(dataclasses.replace(job, restart_s=float(cost)) for job, cost in zip(base.jobs, costs, strict=True))
    return Workload(name=f"{base.name}-restarts-{low_s:g}-{high_s:g}", gpus=base.gpus, round_s=base.round_s,
                    jobs=costed, throughputs=base.throughputs, cluster=base.cluster)


#: The runs compared: (name, told the costs, with the wait limit).
RUNS: tuple[tuple[str, bool, bool], ...] = (("told", True, True), ("untold", False, True), ("no-limit", True, False))


def run(jobs: int, seed: int, round_s: float, low_s: float, high_s: float, told: bool,
        wait_limit: bool = True) -> dict[str, float]:
    """One simulation of `vfm` on `workload(jobs, seed, low_s, high_s)` at `round_s`, told the costs
    or not, with `Policy.shockwave`'s wait limit or without."""
    import numpy as np

    from benchmarks.reproduce import vfm_policy
    from vfm.cluster import simulate, summarize

    costed = workload(jobs, seed, low_s, high_s)
    options: dict[str, Any] = {} if wait_limit else {"wait_limit": None}
    counted = CommittedStarts(vfm_policy(costed.gpus, round_s, **options))
    simulation = simulate(costed, counted if told else Untold(counted), round_s=round_s)
    summary = summarize(simulation)
    gangs = np.array([job.gpus for job in costed.jobs])
    # One GPU type: a job's held time is its isolated time plus the time it spent restarting.
    assert costed.cluster is None
    lost_gpu_h = float((gangs * (simulation.held_s - simulation.isolated_s)).sum()) / 3600
    return {"restarts_mean": float(simulation.restarts.mean()), "restarts_max": float(simulation.restarts.max()),
            "committed_pct": 100.0 * counted.committed / max(counted.starts, 1),
            "restart_gpu_h": lost_gpu_h, "avg_jct_s": summary["avg_jct_s"], "makespan_s": summary["makespan_s"],
            "worst_ftf": summary["worst_ftf"], "waits_over_20": float(summary["jobs_waiting_over"].get("20", 0))}


def measure(seeds: int, jobs: int) -> list[tuple[tuple[float, float, float], str, dict[str, float]]]:
    """Every configuration, each of `RUNS`: its metrics over `seeds` workloads (means; the max of
    the restarts' max)."""
    rows = []
    for round_s, low_s, high_s in CONFIGURATIONS:
        for name, told, wait_limit in RUNS:
            runs = [run(jobs, seed, round_s, low_s, high_s, told, wait_limit) for seed in range(seeds)]
            merged = {key: statistics.fmean(r[key] for r in runs) for key in runs[0]}
            merged["restarts_max"] = max(r["restarts_max"] for r in runs)
            rows.append(((round_s, low_s, high_s), name, merged))
    return rows


def report(rows: list[tuple[tuple[float, float, float], str, dict[str, float]]], seeds: int, jobs: int) -> str:
    lines = [f"vfm on generated workloads of {jobs} jobs on {GPUS} GPUs, per-job restart costs drawn uniformly; "
             f"means over {seeds} seed(s)",
             f"{'round s':>7} {'costs s':>9} {'policy':>8} {'restarts mean':>13} {'max':>4} {'committed %':>11} "
             f"{'lost GPU-h':>10} {'avg JCT s':>10} {'makespan s':>10} {'worst FTF':>9} {'waits>20':>8}"]
    for (round_s, low_s, high_s), policy, m in rows:
        lines.append(f"{round_s:>7g} {f'{low_s:g}-{high_s:g}':>9} {policy:>8} {m['restarts_mean']:>13.2f} "
                     f"{m['restarts_max']:>4.0f} {m['committed_pct']:>11.1f} {m['restart_gpu_h']:>10.1f} "
                     f"{m['avg_jct_s']:>10.0f} {m['makespan_s']:>10.0f} {m['worst_ftf']:>9.3f} "
                     f"{m['waits_over_20']:>8.1f}")
    return "\n".join(lines) + "\n"


def build_parser() -> Parser:
    parser = Parser("benchmarks.restart_costs", __doc__)
    parser.add_argument("--seeds", default=1, check=whole(1, 50), help="generated workloads per comparison (default 1)")
    parser.add_argument("--jobs", default=120, check=whole(8, 2000), help="jobs per workload (default 120)")
    parser.add_table_output("restart_costs")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        parser.emit(report(measure(args.seeds, args.jobs), args.seeds, args.jobs), args.out)


if __name__ == "__main__":
    main()
