"""Plan benchmark: full re-plans of the receding-horizon planner at each workload's busiest moment.

Run from the repository root::

    python -m benchmarks.plan [--sizes 120,460,900] [--runs 5] [--out results/plan] [--synthetic] [--types]

What is measured
    The wall time of one call of `vfm.planner.plan` (``vfm.planner.plan.plan``) with the default
    forecaster (`vfm.forecast.DirichletForecaster`), the default window (20 rounds of 120 s) and
    the default solver, i.e. one complete re-plan: the forecast (the point forecast, and for
    ``S > 1`` ``S`` posterior predictive scenarios), the exact solve of the expected-NSWOT
    relaxation, and the rounding to whole gangs. It is timed with `time.perf_counter` around the
    call, for ``S = 16`` and ``S = 1`` on each size. The call's own split of that time
    (``Plan.timings``: forecast / build / solve / rounding / total) is reported as medians over
    the runs.

Sizes and job states
    A size names a Shockwave workload of ``benchmarks/data/shockwave``: 120 / 460 / 900 jobs on
    32 / 128 / 256 GPUs. The job states are those of the workload's busiest moment
    (`vfm.cluster.windows.busiest_states`; nothing is simulated): each job active then has done
    the whole epochs it would have finished at its equal share of the cluster (at most its total
    minus one), and its observed regimes are the batch sizes of its phase profile for those
    epochs. The windows hold 118 / 436 / 874 jobs (the ``jobs`` column). Building the states
    (`busiest_states`) is setup and is not timed.

Runs
    Per size and ``S``: one untimed warm-up call (imports, first-call overheads; seed ``runs``),
    then ``--runs`` timed calls with ``seed = 0 .. runs - 1`` (the scenarios differ between runs;
    ``S = 1`` ignores the seed). Reported: median / min / max seconds, the median of each timing
    component, the rounding gap (`Plan.rounding_gap`: the relative loss of the rounded schedule's
    budget-weighted geometric-mean progress against the relaxation's certified bound; median and
    max over the runs), the solver the default picked and the statuses seen.

Targets (printed as met / missed, at 900 jobs on 256 GPUs)
    ``S = 16``: median <= 150 ms; ``S = 1``: median <= 60 ms;
    rounding gap <= 0.01 (median over the runs, for each ``S``).

The Shockwave configuration at 900 jobs (column ``config``)
    The rows above plan with `plan`'s defaults (``config`` ``default``: no finish-time constraints,
    no efficiency term). At 900 jobs the ``S = 16`` re-plan is also timed in the full Shockwave
    configuration (``config`` ``shockwave``, the options of the synthetic window below), and printed
    against the same 150 ms limit: it is the re-plan a policy with ``scenarios=16`` would make at the
    window's start (no job has waited yet, so the wait limit commits no round).

Three GPU types (``--types``)
    At 900 jobs the ``S = 1`` re-plan is also timed on the same 256 GPUs in equal thirds of V100,
    P100 and K80 (``config`` ``3 types``; `vfm.planner.plan` with ``speed``, each job's speed on a
    type the ratio of its mean epoch time over its regimes there and on V100, by the artifact's
    throughput profiles), against the target of at most twice the one-type ``S = 1`` median of the
    same run.

The synthetic window (``--synthetic``)
    The busiest 900-job window tiled to 10,000 jobs on 2,560 GPUs, planned in the full Shockwave
    configuration of the reproduction's `vfm` policy (`vfm.planner.Policy.shockwave`: finish-time
    targets, here each job's equal-share finish from now, with rho_max = 1 and the priority
    exponent 5 of 256 GPUs, efficiency term k = 0.05, reserve 0.3), S = 1: one untimed warm-up and
    ``--runs`` timed re-plans, target median <= 1 s. Written as one more row of ``plan.json``
    (``size`` 10000).

Outputs
    A table on stdout and ``OUT/plan.json`` in the folder ``--out`` (default ``results/plan`` under
    the current folder; the committed results are written only with ``--out benchmarks/results``):
    a JSON list with one object per size and ``S``, with
    keys ``workload``, ``jobs``, ``gpus``, ``scenarios``, ``runs``, ``median_s``, ``min_s``,
    ``max_s``, ``times_s``, ``components_s``, ``rounding_gap``, ``rounding_gap_max``, ``solver``, ``config``,
    ``statuses``, ``messages`` (of runs not certified optimal) and ``size`` (non-finite numbers
    are written as null). The machine's load average is printed at start and end: other
    processes running at the same time inflate the times.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Parser, size_list, whole
from benchmarks.solve import _jsonable

if TYPE_CHECKING:
    import numpy as np

    from vfm.cluster import ClusterTypes
    from vfm.forecast import JobStates

#: The default results folder (`benchmarks._cli.RESULTS`).
OUT = RESULTS / "plan"
#: size -> workload file (its GPUs are in the file: 32 / 128 / 256).
SIZES: dict[int, str] = {
    120: "shockwave_120jobs_32gpus",
    460: "shockwave_460jobs_128gpus",
    900: "shockwave_900jobs_256gpus",
}
SCENARIOS: tuple[int, ...] = (16, 1)
COMPONENTS: tuple[str, ...] = ("forecast", "build", "solve", "rounding", "total")

TARGET_SIZE = 900
#: S -> median seconds of a full re-plan at TARGET_SIZE.
TARGET_SECONDS: dict[int, float] = {16: 0.150, 1: 0.060}
TARGET_ROUNDING_GAP = 0.01
MIN_RUNS = 5
#: A three-type re-plan at TARGET_SIZE may take at most this many times the one-type one.
TYPED_FACTOR = 2.0
#: The synthetic window (module docstring): jobs, GPUs, and its target median seconds.
SYNTHETIC_JOBS, SYNTHETIC_GPUS, TARGET_SYNTHETIC_SECONDS = 10_000, 2_560, 1.0


def busiest_states(name: str) -> tuple[JobStates, np.ndarray, int]:
    """Job states, gang sizes and capacity (GPUs) at the busiest moment of workload `name`."""
    from vfm.cluster import windows
    from vfm.cluster.workload import load_workload

    return windows.busiest_states(load_workload(name))


def tiled_window(jobs: int = SYNTHETIC_JOBS, gpus: int = SYNTHETIC_GPUS,
                 name: str = SIZES[900]) -> tuple[JobStates, np.ndarray, int]:
    """The busiest window of workload `name` repeated to `jobs` jobs, on `gpus` GPUs."""
    import numpy as np

    from vfm.forecast import JobStates

    states, widths, _ = busiest_states(name)
    index = np.resize(np.arange(states.n_jobs), jobs)
    tiled = JobStates(states.total_epochs[index], states.regime_counts[index], states.regime_durations[index],
                      states.regime_mask[index], states.regime_labels[index])
    return tiled, widths[index], gpus


def typed_window(name: str = SIZES[900]) -> tuple[JobStates, np.ndarray, ClusterTypes, np.ndarray]:
    """Workload `name`'s busiest window on its GPUs in equal thirds of V100, P100 and K80: the
    states, gangs, cluster and each job's speed per type (module docstring, "Three GPU types")."""
    import numpy as np

    from vfm.cluster import ClusterTypes, type_regimes, windows
    from vfm.cluster.workload import load_workload

    workload = load_workload(name)
    states, gpus, capacity = windows.busiest_states(workload)
    cluster = ClusterTypes.split(capacity, {"v100": 1.0, "p100": 1.0, "k80": 1.0})
    by_id = {job.id: job for job in workload.jobs}
    speed = np.zeros((states.n_jobs, len(cluster)))
    for row, job_id in enumerate(states.job_ids or ()):  # setup, per job: its profile per type
        regimes = type_regimes(by_id[job_id], workload.throughputs or "tacc", cluster)
        mean = {t: float(np.mean(list(r.values()))) for t, r in regimes.items()}
        speed[row] = [min(1.0, mean["v100"] / mean[t]) if t in mean and "v100" in mean else 0.0
                      for t in cluster.types]
    return states, gpus, cluster, speed


def shockwave_options(states: JobStates, capacity: int, scenarios: int = 1) -> dict[str, Any]:
    """`plan` arguments of the reproduction's `vfm` policy (`Policy.shockwave`'s planning options
    on `capacity` GPUs), with each job's equal-share finish from now as its finish-time target,
    over `scenarios` scenarios."""
    import numpy as np

    from vfm.forecast import DirichletForecaster
    from vfm.jobs import equal_share
    from vfm.planner import JobTerms, Policy

    share = equal_share(states.n_jobs, capacity)
    targets = np.maximum(np.asarray(DirichletForecaster().remaining_runtime(states)) / share, 1.0)
    options = Policy.shockwave(capacity).options
    if scenarios > 1:
        options = dataclasses.replace(options, scenarios=scenarios)
    return {"options": options, "terms": JobTerms(fair_finish_s=targets)}


def time_plans(states: JobStates, gpus: np.ndarray, capacity: int | np.ndarray, scenarios: int, runs: int,
               **options: Any) -> dict[str, Any]:
    """One untimed warm-up `plan` call, then `runs` timed ones; their times, split and rounding gaps."""
    from vfm.planner.plan import plan

    plan(states, gpus, capacity, scenarios=scenarios, seed=runs, **options)  # warm-up, untimed, a seed not timed below
    seconds: list[float] = []
    components: dict[str, list[float]] = {key: [] for key in COMPONENTS}
    gaps: list[float] = []
    statuses: set[str] = set()
    solvers: set[str] = set()
    messages: list[str] = []
    for run_index in range(runs):
        started = time.perf_counter()
        result = plan(states, gpus, capacity, scenarios=scenarios, seed=run_index, **options)
        seconds.append(time.perf_counter() - started)
        for key in COMPONENTS:
            components[key].append(float(result.timings.get(key, math.nan)))
        gaps.append(result.rounding_gap)
        statuses.add(str(result.status))
        solvers.add(result.solver)
        if str(result.status) != "optimal":
            messages.append(result.message)
    return {
        "runs": runs,
        "median_s": statistics.median(seconds),
        "min_s": min(seconds),
        "max_s": max(seconds),
        "times_s": seconds,
        "components_s": {key: statistics.median(values) for key, values in components.items()},
        "rounding_gap": statistics.median(gaps),
        "rounding_gap_max": max(gaps),
        "solver": ",".join(sorted(solvers)),
        "statuses": sorted(statuses),
        "messages": sorted(set(messages)),
    }


def evaluate_targets(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The targets at TARGET_SIZE, each with whether it is met (absent when that size was not run)."""
    targets: list[dict[str, Any]] = []
    one_type = {row["scenarios"]: row["median_s"] for row in rows
                if row["size"] == TARGET_SIZE and row["config"] == "default"}
    for row in rows:
        if row["config"] == "3 types" and 1 in one_type:
            limit = TYPED_FACTOR * one_type[1]
            targets.append({"what": "3 types S=1 median", "value": row["median_s"], "limit": limit, "unit": "s",
                            "met": row["median_s"] <= limit})
            continue
        if row["size"] == SYNTHETIC_JOBS:
            targets.append({"what": f"{SYNTHETIC_JOBS} jobs S=1 median", "value": row["median_s"],
                            "limit": TARGET_SYNTHETIC_SECONDS, "unit": "s",
                            "met": row["median_s"] <= TARGET_SYNTHETIC_SECONDS})
        if row["size"] != TARGET_SIZE:
            continue
        if row["config"] != "default":
            targets.append({"what": f"S={row['scenarios']} {row['config']} median", "value": row["median_s"],
                            "limit": TARGET_SECONDS[16], "unit": "s", "met": row["median_s"] <= TARGET_SECONDS[16]})
            continue
        if row["scenarios"] in TARGET_SECONDS:
            limit = TARGET_SECONDS[row["scenarios"]]
            targets.append({"what": f"S={row['scenarios']} median", "value": row["median_s"], "limit": limit,
                            "unit": "s", "met": row["median_s"] <= limit})
        gap = row["rounding_gap"]
        targets.append({"what": f"S={row['scenarios']} rounding gap", "value": gap, "limit": TARGET_ROUNDING_GAP,
                        "unit": "", "met": gap is not None and gap <= TARGET_ROUNDING_GAP})
    return targets


def _ms(seconds: float | None) -> str:
    return f"{'n/a':>9}" if seconds is None or not math.isfinite(seconds) else f"{seconds * 1e3:9.1f}"


def table_text(rows: Sequence[dict[str, Any]]) -> str:
    """One line per size and S, times in milliseconds, then the solvers' notes."""
    lines = [f"{'workload':<29}{'config':>10}{'jobs':>6}{'GPUs':>5}{'S':>4}{'runs':>5}{'median ms':>10}{'min ms':>10}"
             f"{'max ms':>10} |{'forecast':>9}{'build':>9}{'solve':>9}{'rounding':>9} |{'gap med':>9}{'gap max':>9}  "
             f"{'solver':<8} status"]
    for row in rows:
        c = row["components_s"]
        lines.append(f"{row['workload']:<29}{row['config']:>10}{row['jobs']:>6}{row['gpus']:>5}{row['scenarios']:>4}"
                     f"{row['runs']:>5}{_ms(row['median_s']):>10}{_ms(row['min_s']):>10}{_ms(row['max_s']):>10} |"
                     f"{_ms(c['forecast'])}{_ms(c['build'])}{_ms(c['solve'])}{_ms(c['rounding'])} |"
                     f"{row['rounding_gap']:>9.4f}{row['rounding_gap_max']:>9.4f}  {row['solver']:<8} "
                     f"{','.join(row['statuses'])}")
    lines += [f"  note: {row['workload']} S={row['scenarios']}: {message}"
              for row in rows for message in row["messages"]]
    return "\n".join(lines) + "\n"


def targets_text(targets: Sequence[dict[str, Any]]) -> str:
    """Each target at 900 jobs with its value, its limit and whether it is met."""
    if not targets:
        return f"Targets at {TARGET_SIZE} jobs: not measured (size {TARGET_SIZE} not run).\n"
    lines = [f"Targets at {TARGET_SIZE} jobs / 256 GPUs (and the synthetic window, if run):"]
    for target in targets:
        value, limit = target["value"], target["limit"]
        if target["unit"] == "s":
            shown, bound = f"{value * 1e3:.1f} ms", f"{limit * 1e3:.0f} ms"
            miss = f"missed by {(value - limit) * 1e3:.1f} ms ({value / limit:.2f}x the limit)"
        else:
            shown, bound = f"{value:.4f}", f"{limit:g}"
            miss = f"missed by {value - limit:.4f}"
        lines.append(f"  {target['what']:<26} {shown:>10} <= {bound:<7} {'met' if target['met'] else miss}")
    return "\n".join(lines) + "\n"


def run(sizes: Sequence[int] = tuple(SIZES), runs: int = MIN_RUNS, out: Path | None = OUT,
        scenarios: Sequence[int] = SCENARIOS, verbose: bool = True, synthetic: bool = False,
        types: bool = False, header: str = "") -> list[dict[str, Any]]:
    """Time the re-plans (and the synthetic window's if `synthetic`, the three-type one's if
    `types`); print the table and targets if `verbose`; write ``out / "plan.json"`` and the table
    and targets under `header` (the command and the machine) to ``out / "plan.txt"``.

    Returns the rows as written to the JSON (``size`` is the workload's name size, ``jobs`` the
    jobs in its window).
    """
    import numpy as np

    from vfm.planner import JobTerms

    if runs < 1:
        raise ValueError(f"runs must be >= 1, got {runs}")
    unknown = sorted(set(sizes) - set(SIZES))
    if unknown:
        raise ValueError(f"sizes {unknown} are not among {sorted(SIZES)}")
    load_start = [round(x, 2) for x in os.getloadavg()]
    if verbose:
        threads = {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")}
        print(f"{runs} timed re-plans per size and S (after one untimed warm-up); load average {load_start} "
              f"on {os.cpu_count()} CPUs; thread settings {threads or 'default'}", flush=True)
        if runs < MIN_RUNS:
            print(f"note: fewer than {MIN_RUNS} runs: a smoke run, not a benchmark result", flush=True)
    rows: list[dict[str, Any]] = []
    for size in sorted(sizes):
        states, gpus, capacity = busiest_states(SIZES[size])
        for count in scenarios:
            record = time_plans(states, gpus, capacity, count, runs)
            row = {"workload": SIZES[size], "config": "default", "size": size, "jobs": states.n_jobs,
                   "gpus": capacity, "scenarios": count, **record}
            rows.append(row)
            if verbose:
                print(f"  {SIZES[size]} S={count}: median {row['median_s'] * 1e3:.1f} ms", flush=True)
        if size == TARGET_SIZE:
            record = time_plans(states, gpus, capacity, 16, runs, **shockwave_options(states, capacity, 16))
            rows.append({"workload": SIZES[size], "config": "shockwave", "size": size, "jobs": states.n_jobs,
                         "gpus": capacity, "scenarios": 16, **record})
            if verbose:
                print(f"  {SIZES[size]} S=16 shockwave: median {record['median_s'] * 1e3:.1f} ms", flush=True)
    if types:
        states, gpus, cluster, speed = typed_window()
        record = time_plans(states, gpus, cluster.counts.astype(np.float64), 1, runs, terms=JobTerms(speed=speed))
        rows.append({"workload": SIZES[TARGET_SIZE], "config": "3 types", "size": TARGET_SIZE,
                     "jobs": states.n_jobs, "gpus": cluster.total, "scenarios": 1, **record})
        if verbose:
            print(f"  {SIZES[TARGET_SIZE]} S=1 on 3 types: median {record['median_s'] * 1e3:.1f} ms", flush=True)
    if synthetic:
        states, gpus, capacity = tiled_window()
        record = time_plans(states, gpus, capacity, 1, runs, **shockwave_options(states, capacity))
        row = {"workload": f"synthetic_{SYNTHETIC_JOBS}jobs_{SYNTHETIC_GPUS}gpus", "config": "shockwave",
               "size": SYNTHETIC_JOBS,
               "jobs": states.n_jobs, "gpus": capacity, "scenarios": 1, **record}
        rows.append(row)
        if verbose:
            print(f"  {row['workload']} S=1: median {row['median_s'] * 1e3:.1f} ms", flush=True)
    load_end = [round(x, 2) for x in os.getloadavg()]
    report = (f"{table_text(rows)}\n{targets_text(evaluate_targets(rows))}\nLoad average (1, 5, 15 min): start "
              f"{load_start}, end {load_end} on {os.cpu_count()} CPUs.\n")
    if verbose:
        print("\n" + report, end="")
    written = _jsonable(rows)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "plan.json", "w") as handle:
            json.dump(written, handle, indent=1, allow_nan=False)
            handle.write("\n")
        (out / "plan.txt").write_text(header + report)
        if verbose:
            print(f"wrote {out / 'plan.json'} and {out / 'plan.txt'}")
    result: list[dict[str, Any]] = written
    return result


def build_parser() -> Parser:
    parser = Parser("benchmarks.plan", __doc__)
    parser.add_argument("--sizes", check=size_list(SIZES), default=",".join(str(s) for s in SIZES),
                        help="comma-separated subset of " + ",".join(str(s) for s in SIZES))
    parser.add_argument("--runs", check=whole(1, 1000), default=MIN_RUNS,
                        help=f"timed re-plans per size and S (default {MIN_RUNS}; fewer is only a smoke run)")
    parser.add_argument("--out", check=OUTPUT_FOLDER, default=OUT,
                        help=f"directory for plan.json and plan.txt (default {OUT})")
    parser.add_argument("--synthetic", action="store_true",
                        help=f"also the synthetic window ({SYNTHETIC_JOBS} jobs, {SYNTHETIC_GPUS} GPUs)")
    parser.add_argument("--types", action="store_true",
                        help="also the 900-job S=1 re-plan on three GPU types")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        run(args.sizes, runs=args.runs, out=args.out, synthetic=args.synthetic, types=args.types,
            header=parser.header())


if __name__ == "__main__":
    main()
