"""Planning over uncertainty, judged in the simulator: certainty equivalent, sample average, oracle.

Run from the repository root::

    python -m benchmarks.uncertainty [--workloads NAME,...] [--planners NAME,...] [--scenarios 8]
                                     [--workers 2] [--jobs N] [--out DIR]

Each planner is the reproduction's vfm policy (`benchmarks.reproduce.vfm_policy`: Shockwave's
program on vfm's interior point, credit execution) with one change:

- ``ce``: the certainty-equivalent planner (one scenario: the Dirichlet forecaster's point forecast);
- ``saa-whole``: the sample average over ``--scenarios`` Dirichlet scenarios counting whole epochs;
- ``saa``: the same over fluid scenarios (`vfm.forecast.DirichletForecaster` ``scenario_progress``);
- ``population``: the certainty-equivalent planner on `vfm.forecast.PopulationForecaster`, which
  learns each kind of job's adaptation from the jobs that finished;
- ``oracle``: the certainty-equivalent planner told each job's true epoch times
  (`vfm.forecast.OracleForecaster`): what a perfect forecast is worth;
- ``oracle-calendar``: ``oracle`` with ``pace="forecast"``, the forecast's epochs per round as
  they come in the calendar (`vfm.planner.PlanOptions.pace`), for comparison.

After the table it prints the value of information: for each workload whether planning with the
oracle is no worse than with the population forecaster, and that no worse than ``ce``, on every
metric (worst FTF within 0.02, unfair share within 0.5 points, average JCT and makespan within 1 %).

Workloads: the Shockwave traces by name; ``uncertain-<seed>``: `spec(True)` (120 jobs on 32
GPUs, the artifact's adaptation rules with change points jittered per job, noisy epoch times and
profiles that list batch sizes a job may never reach: `vfm.cluster.generate.Uncertainty`);
``generated-<seed>``: the same without the uncertainty. The default planner was chosen on the
120-job trace and ``uncertain-0``/``uncertain-1`` and is reported on the others (docs/results.md).

Prints one row per workload and planner (makespan, mean JCT, worst FTF ratio, unfair share,
utilization, median and max seconds of a re-plan) and writes ``table.txt`` and ``results.json`` to
``--out`` (default ``results/uncertainty`` under the current folder; the committed results are written
only with ``--out benchmarks/results/uncertainty``), one file per workload as it completes, so
that a long run can be read while it goes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent import futures
from contextlib import ExitStack
from functools import cache
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Parser, choice_list, whole
from benchmarks._executors import make_executor
from benchmarks.reproduce import MAX_JOBS, MAX_SCENARIOS, MAX_WORKERS, vfm_policy

if TYPE_CHECKING:
    from vfm.cluster import Workload
    from vfm.cluster.generate import WorkloadSpec
    from vfm.forecast import Forecaster, ScenarioProgress


def spec(uncertain: bool) -> WorkloadSpec:
    """The generated workloads: the 120-job trace's size and load, adaptation made uncertain
    (``uncertain-<seed>``) or not (``generated-<seed>``)."""
    from vfm.cluster.generate import Uncertainty, WorkloadSpec

    if uncertain:
        return WorkloadSpec(jobs=120, gpus=32, uncertainty=Uncertainty(change_jitter=0.3, epoch_noise=0.2,
                                                                       hidden_regimes=True))
    return WorkloadSpec(jobs=120, gpus=32)

CHOSEN_ON = ("shockwave_120jobs_32gpus", "uncertain-0", "uncertain-1")
REPORTED_ON = ("shockwave_220jobs_64gpus", "shockwave_460jobs_128gpus", "shockwave_900jobs_256gpus",
               "uncertain-2", "uncertain-3", "generated-2")
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_pct", "utilization")


def _dirichlet(progress: ScenarioProgress) -> Callable[[Workload], Forecaster]:
    def make(workload: Workload) -> Forecaster:
        from vfm.forecast import DirichletForecaster

        return DirichletForecaster(scenario_progress=progress)

    return make


def _oracle(workload: Workload) -> Forecaster:
    from vfm.forecast import OracleForecaster

    return OracleForecaster({job.id: job.epoch_s for job in workload.jobs})


def _population(workload: Workload) -> Forecaster:
    from vfm.forecast import PopulationForecaster

    return PopulationForecaster()


#: planner name -> (forecaster for a workload, scenarios? (else 1), other policy options)
PLANNERS: dict[str, tuple[Callable[[Workload], Forecaster], bool, dict[str, Any]]] = {
    "ce": (_dirichlet("fluid"), False, {}),
    "saa-whole": (_dirichlet("whole"), True, {}),
    "saa": (_dirichlet("fluid"), True, {}),
    "population": (_population, False, {}),
    "oracle": (_oracle, False, {}),
    "oracle-calendar": (_oracle, False, {"pace": "forecast"}),
}
#: The value of information (module docstring): each planner no worse than the next, metric by
#: metric, within these tolerances (absolute for worst FTF and unfair share, relative otherwise).
INFORMATION_ORDER = ("oracle", "population", "ce")
INFORMATION_TOLERANCE = {"worst_ftf": ("abs", 0.02), "unfair_pct": ("abs", 0.5), "avg_jct_s": ("rel", 0.01),
                         "makespan_s": ("rel", 0.01)}


def information_pays(results: dict[str, dict[str, Any]]) -> list[str]:
    """One line per pair of `INFORMATION_ORDER` planners present in `results` (one workload's):
    whether the better-informed is no worse on every metric of `INFORMATION_TOLERANCE`, and by
    how much it misses where it is worse."""
    lines = []
    for better, worse in pairwise(INFORMATION_ORDER):
        if better not in results or worse not in results:
            continue
        misses = []
        for metric, (kind, tolerance) in INFORMATION_TOLERANCE.items():
            a, b = results[better][metric], results[worse][metric]
            excess = a - b if kind == "abs" else a / b - 1.0
            if excess > tolerance:
                misses.append(f"{metric} {a:.4g} vs {b:.4g}")
        lines.append(f"{better} <= {worse}: " + ("yes" if not misses else "no (" + "; ".join(misses) + ")"))
    return lines


@cache
def workload(name: str) -> Workload:
    """A shipped trace by name, ``uncertain-<seed>`` or ``generated-<seed>``."""
    from vfm.cluster import load_workload
    from vfm.cluster.generate import generate_workload

    for prefix, uncertain in (("uncertain-", True), ("generated-", False)):
        if name.startswith(prefix):
            seed = name.removeprefix(prefix)
            if not seed.isdigit():
                raise ValueError(f"workload {name!r}: the seed after {prefix!r} must be a whole number")
            return generate_workload(spec(uncertain), seed=int(seed), name=name)
    return load_workload(name)


def run_one(name: str, planner: str, scenarios: int, jobs: int | None = None) -> dict[str, Any]:
    """Simulate one planner on one workload (its first `jobs` jobs if given); the headline metrics
    and re-plan times (plain values)."""
    from vfm.cluster import simulate, summarize

    job_set = workload(name) if jobs is None else workload(name).head(jobs)
    forecaster, sampled, options = PLANNERS[planner]
    # The sampled planners keep the reproduction's wait limit, as ``ce``: its commitments are planned
    # over the scenarios (a base per scenario above them, `vfm.planner.program.above_floor`).
    policy = vfm_policy(job_set.gpus, job_set.round_s, 0, forecaster=forecaster(job_set),
                        scenarios=scenarios if sampled else 1, **options)
    summary = summarize(simulate(job_set, policy))
    replans = summary["replans"]
    return {**{key: summary[key] for key in METRICS}, "replans": replans["count"],
            "longest_wait_rounds": summary["longest_wait_rounds"], "guards": summary["guards"],
            "replan_s": {"median": replans["median_s"].get("total", float("nan")),
                         "max": replans["max_s"].get("total", float("nan"))},
            "solvers": replans["solvers"], "statuses": replans["statuses"]}


def format_rows(name: str, results: dict[str, dict[str, Any]]) -> list[str]:
    rows = []
    for planner, r in results.items():
        rows.append(f"{name:<28} {planner:<15} {r['makespan_s']:>9.0f} {r['avg_jct_s']:>8.0f} {r['worst_ftf']:>6.3f} "
                    f"{r['unfair_pct']:>7.2f} {r['utilization']:>6.3f} {r['replan_s']['median']:>8.3f} "
                    f"{r['replan_s']['max']:>7.2f} {r['longest_wait_rounds']:>5d} {r['guards']['max_wait']:>5d}")
    return rows


HEADER = (f"{'workload':<28} {'planner':<15} {'makespan':>9} {'JCT':>8} {'FTF':>6} {'unfair%':>7} {'util':>6} "
          f"{'replan s':>8} {'max':>7} {'wait':>5} {'guard':>5}")


def build_parser() -> Parser:
    parser = Parser("benchmarks.uncertainty", __doc__)
    parser.add_argument("--workloads", default=",".join(CHOSEN_ON + REPORTED_ON),
                        help="comma-separated: shipped trace names, uncertain-<seed>, generated-<seed>")
    parser.add_argument("--planners", default=",".join(PLANNERS), check=choice_list(tuple(PLANNERS), "planner"),
                        help=f"comma-separated of {', '.join(PLANNERS)}")
    parser.add_argument("--scenarios", check=whole(1, MAX_SCENARIOS), default=8,
                        help="S of the sampled planners (default 8)")
    parser.add_argument("--workers", check=whole(1, MAX_WORKERS), default=2, help="parallel simulations (default 2)")
    parser.add_argument("--jobs", check=whole(1, MAX_JOBS),
                        help="simulate only each workload's first JOBS jobs (a slice)")
    parser.add_argument("--out", check=OUTPUT_FOLDER, default=RESULTS / "uncertainty",
                        help="folder for table.txt and results.json (default results/uncertainty)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        names = [n.strip() for n in args.workloads.split(",") if n.strip()]
        planners = args.planners
        for name in names:
            workload(name)  # a bad name fails here, before any simulation
        args.out.mkdir(parents=True, exist_ok=True)
        results: dict[str, dict[str, dict[str, Any]]] = {name: {} for name in names}
        print(HEADER, flush=True)
        with ExitStack() as stack:
            executor = make_executor("process", args.workers, stack)
            tasks = {executor.submit(run_one, name, planner, args.scenarios, args.jobs): (name, planner)
                     for name in names for planner in planners}
            for task in futures.as_completed(tasks):
                name, planner = tasks[task]
                results[name][planner] = task.result()
                print(format_rows(name, {planner: results[name][planner]})[0], flush=True)
                (args.out / "results.json").write_text(json.dumps({"scenarios": args.scenarios, "results": results,
                                                                   "provenance": parser.provenance()}, indent=1))
        table = "\n".join([HEADER, *(row for name in names for row in format_rows(
            name, {p: results[name][p] for p in planners}))])
        verdicts = [f"{name}: {line}" for name in names for line in information_pays(results[name])]
        if verdicts:
            table += "\n\nvalue of information (worst FTF +0.02, unfair +0.5 points, avg JCT and makespan +1 %):\n"
            table += "\n".join(verdicts)
            print("\n".join(verdicts))
        (args.out / "table.txt").write_text(parser.header() + table + "\n")
        print(f"wrote {args.out}/: table.txt, results.json")


if __name__ == "__main__":
    main()
