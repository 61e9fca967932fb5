"""Reproduction of Shockwave's results: every policy through the simulator on one workload.

Run from the repository root::

    python -m benchmarks.reproduce --workload shockwave_120jobs_32gpus \\
        [--policies vfm,max_min_fairness,finish_time_fairness] [--out DIR]

``--workload`` is a workload file or the name of a shipped one (`vfm.cluster.load_workload`).
Policies (``--policies``, comma-separated; default all): ``vfm`` (this library's planner,
configured as Shockwave: `vfm.planner.Policy.shockwave`), ``static_market`` (the
per-round Fisher market), and the baselines of `vfm.cluster.baselines` (``max_min_fairness``,
``finish_time_fairness``, ``gandiva_fair``, ``allox``, ``max_sum_throughput``,
``min_total_duration``).

Mechanics (``--mechanics``, default ``both``)
    Every policy runs in our simulator (`vfm.cluster.simulator`). With ``both`` or ``artifact``,
    each baseline the Shockwave artifact has also runs under the artifact's own mechanics and
    Gavel round mechanism (`vfm.cluster.artifact`), and the vfm policy under those mechanics
    choosing every round itself, as the rows ``artifact:<name>``: those are the numbers to hold
    against the published ones.

Parallelism
    Each policy is one task, run through a `concurrent.futures.Executor`: a local process pool
    by default (``--executor process``, ``--workers``), or ``thread`` / ``serial``, or ``dask``:
    a `distributed.LocalCluster` with one single-threaded worker process per ``--workers``, whose
    ``Client.get_executor()`` is a `concurrent.futures.Executor`. To sweep on a real cluster, call
    `run` with ``executor=Client("scheduler-address").get_executor()``: nothing else changes (the
    workers need this repository importable and the workload file readable).

Outputs
    A progress bar (policies done, on stderr; ``--quiet`` turns it off) and a table like the
    paper's (absolute values, ratios to the ``vfm`` policy, and the Shockwave artifact's
    published numbers for the shipped 120-job workload), printed and written with the rest to the
    results folder ``--out`` (default ``results/<workload name>``), whose name the command
    prints last:

    - ``table.txt``: the table as printed;
    - ``results.json``: ``{"workload": name, "gpus": G, "policies": {name: {"makespan_s",
      "avg_jct_s", "worst_ftf", "unfair_pct", "utilization", "planner_s": {"median", "max"},
      "replans", "guards" (vfm only), "longest_wait_rounds", "jobs_waiting_over",
      "jobs": [...], "rounds": [...]}}}``; the table's ``wait`` is the longest run of rounds a
      job waited, ``guard`` how often the vfm policy's ``max_wait`` guard decided a round;
    - ``metrics.png``: makespan, average JCT and worst FTF of each policy divided by the vfm
      policy's (lower is better), unfair share and utilization as they are, the published
      values marked on their bars (on the ratio panels divided by the artifact's own Shockwave
      number, on the others as published);
    - ``ftf_cdf.png``: the CDF of each policy's FTF rho; ``occupancy.png``: GPUs held over time.
      In both, vfm's runs and the three other runs best by the figure's measure (worst FTF,
      utilization) are drawn in colour and named in the legend, the rest thin and grey.
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import sys
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import _plots
from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Parser, choice_list, number, seed, whole, whole_or_none
from benchmarks._executors import SerialExecutor, make_executor

if TYPE_CHECKING:
    from vfm.cluster import SchedulingPolicy, Workload
    from vfm.forecast import Forecaster
    from vfm.planner import Policy

#: The vfm policy's planning backend in the reproduction: vfm's interior point. The planner
#: chooses among optimal schedules by a stated rule, so `cvxpy` gives the same schedules up to
#: rare rounding ties (docs/planning.md, "Choosing among optimal schedules").
VFM_SOLVER = "saa-ipm"
#: The vfm policy's forecasters by name (``forecaster=<name>`` in its options), each the name of
#: its class in `vfm.forecast`; each starts cold.
FORECASTERS = {"dirichlet": "DirichletForecaster", "population": "PopulationForecaster"}
#: `Policy.shockwave`'s defaults on one GPU type (`vfm.planner.shockwave`: ``SHOCKWAVE_EFFICIENCY``,
#: ``SHOCKWAVE_RESERVE``, ``WAIT_LIMIT``, ``SHOCKWAVE_UTILITY``, ``SHOCKWAVE_COMPLETION_TIME``), the
#: defaults of ``--vfm-efficiency``, ``--vfm-reserve``, ``--vfm-wait-limit``, ``--vfm-utility`` and
#: ``--vfm-completion-time``; written out here so that the command line reads them without loading
#: the planner (a test holds them to the library's).
SHOCKWAVE_EFFICIENCY, SHOCKWAVE_RESERVE, WAIT_LIMIT = 1.0, 0.3, 20
SHOCKWAVE_UTILITY, SHOCKWAVE_COMPLETION_TIME = "completion", 0.3
#: The most jobs a run takes (``--jobs``; the largest shipped workload has 900), workers, and
#: scenarios of the vfm policy's planner.
MAX_JOBS, MAX_WORKERS, MAX_SCENARIOS = 100_000, 256, 1000


def forecaster(name: str) -> Forecaster:
    """A cold forecaster by its name in `FORECASTERS`."""
    import vfm.forecast

    factory: Callable[[], Forecaster] = getattr(vfm.forecast, FORECASTERS[name])
    return factory()


def vfm_policy(capacity: int, round_s: float, seed: int = 0, **options: Any) -> Policy:
    """The reproduction's vfm policy: `Policy.shockwave` on `VFM_SOLVER`, `options` overriding
    (``forecaster`` by its name in `FORECASTERS`), with the planner's kernels it uses compiled (or
    loaded from Numba's cache) before it is returned, so that no timed decision compiles them."""
    from vfm.planner import Policy, compile_kernels
    from vfm.planner.kernel_loading import Forms

    if isinstance(options.get("forecaster"), str):
        options = {**options, "forecaster": forecaster(options["forecaster"])}
    policy = Policy.shockwave(capacity, round_s, seed=seed, **{"solver": VFM_SOLVER, **options})
    cluster = policy.config.cluster
    compile_kernels(Forms.used_by(policy.config.options.scenarios, 1 if cluster is None else len(cluster.types), 1))
    return policy


def baseline(name: str, capacity: int, round_s: float, seed: int = 0) -> SchedulingPolicy:
    """The library's baseline `name` (`vfm.cluster.BASELINES`) on `capacity` GPUs."""
    from vfm.cluster import BASELINES

    return BASELINES[name](capacity, round_s, seed)


#: The library's baselines (`vfm.cluster.BASELINES`), in its order, as the command line spells them
#: (a test holds them to the library's registry).
BASELINE_NAMES = ("static_market", "max_min_fairness", "finish_time_fairness", "gandiva_fair", "allox",
                  "max_sum_throughput", "min_total_duration")
#: name -> factory(capacity, round_s, seed) of a `SchedulingPolicy`.
POLICIES: dict[str, Callable[[int, float, int], SchedulingPolicy]] = {
    "vfm": vfm_policy, **{name: partial(baseline, name) for name in BASELINE_NAMES}}
#: Our policy names -> the keys of the artifact's canonical results.
PUBLISHED_NAMES = {"vfm": "shockwave", "max_sum_throughput": "max_sum_throughput_perf"}
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_pct", "utilization")
#: Policies also run under the artifact's mechanics (`vfm.cluster.artifact`), as "artifact:<name>": the
#: baselines the artifact has (computed as it computes them; those whose published name is in
#: ``artifact.ALLOCATIONS``, a test checks) and the vfm policy (driving every round).
ARTIFACT = "artifact:"
ARTIFACT_RUNS = ["vfm", "max_min_fairness", "finish_time_fairness", "gandiva_fair", "allox", "max_sum_throughput",
                 "min_total_duration"]


def with_artifact_runs(policies: Sequence[str], mechanics: str) -> list[str]:
    """`policies` under our mechanics, the artifact's ("artifact:<name>" for each baseline the
    artifact has), or both (``mechanics``: ``ours``, ``artifact``, ``both``)."""
    ours = [name for name in policies if not name.startswith(ARTIFACT)]
    theirs = [ARTIFACT + name for name in ours if name in ARTIFACT_RUNS]
    return {"ours": ours, "artifact": theirs, "both": ours + theirs}[mechanics]


def load(workload_path: str | Path, jobs: int | None = None) -> Workload:
    """The workload file, or its first `jobs` jobs (a slice keeps the cluster and the round)."""
    from vfm.cluster import load_workload

    workload = load_workload(workload_path)
    return workload if jobs is None else workload.head(jobs)


def run_policy(workload_path: str, name: str, seed: int = 0, jobs: int | None = None,
               vfm_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Simulate policy `name` on the workload (its first `jobs` jobs if given); the summary dict.

    `vfm_options` go to `vfm_policy` (``scenarios``, ``efficiency``, ``reserve``, ``execution``, ``solver``,
    ``forecaster``).
    A module-level function of plain arguments, so that any executor can ship it to a worker.
    """
    from vfm.cluster import artifact, simulate, summarize

    workload = load(workload_path, jobs)
    if name.startswith(ARTIFACT):
        base = name.removeprefix(ARTIFACT)
        if base == "vfm":
            driven = vfm_policy(workload.gpus, workload.round_s, seed, **(vfm_options or {}))
            return summarize(artifact.simulate(workload, driven))
        return summarize(artifact.simulate(workload, PUBLISHED_NAMES.get(base, base)))
    if name == "vfm":
        policy: SchedulingPolicy = vfm_policy(workload.gpus, workload.round_s, seed, **(vfm_options or {}))
    else:
        policy = POLICIES[name](workload.gpus, workload.round_s, seed)
    return summarize(simulate(workload, policy))


def run(workload_path: str | Path, policies: Sequence[str] = tuple(POLICIES), *,
        executor: futures.Executor | None = None, seed: int = 0, jobs: int | None = None,
        progress: bool = False, vfm_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Run `policies` on the workload through `executor` (default: serial); the JSON document."""
    unknown = [name for name in policies if name not in POLICIES
               and name.removeprefix(ARTIFACT) not in ARTIFACT_RUNS]
    if unknown:
        raise ValueError(f"unknown policies {unknown}; choose from {', '.join(POLICIES)} "
                         f"(and artifact:<name> for {', '.join(ARTIFACT_RUNS)})")
    workload = load(workload_path, jobs)
    with ExitStack() as stack:
        pool = executor if executor is not None else stack.enter_context(SerialExecutor())
        pending = {pool.submit(run_policy, str(workload_path), name, seed, jobs, vfm_options): name
                   for name in policies}
        bar = None
        if progress:
            from tqdm import tqdm

            bar = stack.enter_context(tqdm(total=len(pending), desc=f"{workload.name}", unit="policy",
                                           file=sys.stderr))
        results: dict[str, dict[str, Any]] = {}
        for future in futures.as_completed(pending):
            results[pending[future]] = future.result()
            if bar is not None:
                bar.set_postfix_str(pending[future])
                bar.update()
    return {"workload": workload.name, "gpus": workload.gpus,
            "policies": {name: results[name] for name in policies}}


#: The executors of ``--executor`` (`benchmarks._executors.make_executor`), and its help.
EXECUTORS = ("process", "thread", "serial", "dask")
EXECUTOR_HELP = ("how the tasks run: a local process pool (process, default), threads, one after another in this "
                 "process (serial, for debugging and profiling), or a Dask LocalCluster of --workers processes (dask)")


def published_results(workload_path: str | Path) -> dict[str, dict[str, Any]]:
    """The artifact's published metrics for this workload, by our policy names ({} if none)."""
    from vfm.cluster.workload import SHIPPED

    canonical = SHIPPED / f"canonical_results_{Path(workload_path).stem.removeprefix('shockwave_')}.json"
    if not canonical.exists():
        return {}
    published = json.loads(canonical.read_text())["policies"]
    names = {PUBLISHED_NAMES.get(name, name): name for name in POLICIES}
    ours = {names[key]: value for key, value in published.items() if key in names}
    return {**ours, **{ARTIFACT + name: ours[name] for name in ARTIFACT_RUNS if name in ours}}


def format_table(result: dict[str, Any], published: dict[str, dict[str, Any]] | None = None) -> str:
    """The paper's table: metrics per policy, ratios to ``vfm``, and the published numbers.

    ``decision med/max ms`` times every ``next_round()`` call (re-plan or not); the re-plans alone
    are timed on each policy's ``re-plans:`` line below the table."""
    lines: list[str] = []
    add = lines.append
    policies = result["policies"]
    reference = policies.get("vfm")
    add(f"{result['workload']}: {result['gpus']} GPUs")
    header = (f"{'policy':29s} {'makespan s':>11s} {'avg JCT s':>10s} {'worst FTF':>9s} {'unfair %':>8s} "
              f"{'util':>6s} {'decision med/max ms':>19s} {'wait':>5s} {'guard':>5s}")
    if reference is not None:
        header += f" {'makespan/vfm':>12s} {'FTF/vfm':>8s}"
    if published:
        header += f" | {'published makespan':>18s} {'avg JCT':>8s} {'worst FTF':>9s} {'unfair %':>8s}"
    add(header)
    for name, row in policies.items():
        planner = row["planner_s"]
        line = (f"{name:29s} {row['makespan_s']:11.1f} {row['avg_jct_s']:10.1f} {row['worst_ftf']:9.3f} "
                f"{row['unfair_pct']:8.2f} {row['utilization']:6.3f} "
                f"{1e3 * planner['median']:10.1f}/{1e3 * planner['max']:<8.1f} "
                f"{row.get('longest_wait_rounds', -1):5d} {row.get('guards', {}).get('max_wait', '-'):>5}")
        if reference is not None:
            line += (f" {row['makespan_s'] / reference['makespan_s']:12.3f}"
                     f" {row['worst_ftf'] / reference['worst_ftf']:8.3f}")
        if published and name in published:
            paper = published[name]
            line += (f" | {paper['makespan_s']:18.1f} {paper['avg_jct_s']:8.1f} {paper['worst_ftf']:9.3f} "
                     f"{paper['unfair_pct']:8.2f}")
        add(line)
    for name, row in policies.items():
        replans = row.get("replans", {})
        if replans.get("count"):
            median, largest = replans["median_s"], replans["max_s"]
            parts = ", ".join(f"{key} {1e3 * median[key]:.1f}/{1e3 * largest[key]:.1f}" for key in median)
            backends = ", ".join(f"{solver} x{count}" for solver, count in replans["solvers"].items())
            add(f"{name} re-plans: {replans['count']} ({backends}); median/max ms: {parts}")
        if row.get("guards"):
            fairness = ", ".join(f"{mode} x{count}" for mode, count in replans.get("fairness", {}).items())
            fired = ", ".join(f"{guard} {count}" for guard, count in row["guards"].items())
            add(f"{name} FTF targets by re-plan: {fairness}; job-rounds each guard decided: {fired}")
    return "\n".join(lines) + "\n"


#: The metrics plot: (key, title, unit, divided by vfm's, higher is better).
PLOTTED = (("makespan_s", "Makespan", "s", True, False),
           ("avg_jct_s", "Average JCT", "s", True, False),
           ("worst_ftf", r"Worst FTF $\rho$", "", True, False),
           ("unfair_pct", r"Unfair jobs ($\rho$ > 1.05)", "%", False, False),
           ("utilization", "Utilization", "fraction of GPU time", False, True))
#: The mark of a published value on its bar.
PUBLISHED_TICK: dict[str, Any] = {"color": "black", "marker": "_", "markersize": 9, "markeredgewidth": 2,
                                  "linestyle": ""}
#: The bars' colours by mechanics; vfm's bars are `_plots.VFM_COLOUR` (lighter under the artifact's).
BAR_COLOURS = {"ours": "#4c72b0", "artifact": "#e1a45c"}


def plot(result: dict[str, Any], directory: Path, workload: Workload,
         published: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """metrics.png, ftf_cdf.png and occupancy.png in `directory` (module docstring); the paths written."""
    directory.mkdir(parents=True, exist_ok=True)
    policies = result["policies"]
    names = _plots.vfm_first(list(policies))
    jobs = len(next(iter(policies.values()))["jobs"]) if policies else 0
    title = _plots.title_of(result["workload"], jobs, result["gpus"])
    return [_plot_metrics(result, names, published or {}, title, directory / "metrics.png"),
            _plot_ftf(policies, names, title, directory / "ftf_cdf.png"),
            _plot_occupancy(result, names, workload, title, directory / "occupancy.png")]


def _plot_metrics(result: dict[str, Any], names: list[str], published: dict[str, dict[str, Any]], title: str,
                  path: Path) -> Path:
    """One panel per metric: a group of bars per policy (vfm first), one bar per mechanics, the
    published value as a tick on its bar."""
    from matplotlib.artist import Artist
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    policies = result["policies"]
    bases = list(dict.fromkeys(name.removeprefix(ARTIFACT) for name in names))
    shown = [m for m in ("ours", "artifact") if any(n.startswith(ARTIFACT) == (m == "artifact") for n in names)]
    width = 0.8 / len(shown)
    figure, axes, spare = _plots.grid(len(PLOTTED))
    for axis, (key, heading, unit, relative, higher) in zip(axes, PLOTTED, strict=True):
        ours = policies.get("vfm", {}).get(key) if relative else 1.0
        if not ours:
            ours, relative = 1.0, False
        paper_ours = published.get("vfm", {}).get(key) if relative else 1.0
        ticked = False
        for j, mechanics in enumerate(shown):
            for x, base in enumerate(bases):
                name = ARTIFACT + base if mechanics == "artifact" else base
                if name not in policies:
                    continue
                at = x + (j - (len(shown) - 1) / 2) * width
                vfm = base == "vfm"
                axis.bar(at, policies[name][key] / ours, width, color=_plots.VFM_COLOUR if vfm else
                         BAR_COLOURS[mechanics], alpha=0.55 if vfm and mechanics == "artifact" else 1.0,
                         edgecolor="black", linewidth=1.2 if vfm else 0.3)
                # Once per policy: on its artifact bar where it has one (those are the numbers to compare).
                marked = name.startswith(ARTIFACT) or ARTIFACT + name not in policies
                if paper_ours and marked and key in published.get(name, {}):
                    axis.plot(at, published[name][key] / paper_ours, **PUBLISHED_TICK)
                    ticked = True
        scale = f"÷ vfm's ({f'{ours:,.0f} {unit}' if unit == 's' else f'{ours:.3g}'})" if relative else unit
        axis.set_title(heading, fontsize=10)
        axis.set_ylabel(f"{scale}\n{'higher' if higher else 'lower'} is better", fontsize=8)
        axis.set_xticks(range(len(bases)), bases, rotation=60, ha="right", fontsize=7)
        axis.tick_params(axis="y", labelsize=7)
        axis.grid(axis="y", alpha=0.3)
        axis.set_axisbelow(True)
        if ticked and relative:  # a ratio panel: its ticks are ratios too, to the artifact's own Shockwave
            axis.set_title(heading, fontsize=10, pad=14)
            axis.text(0.5, 1.01, "published ticks ÷ the artifact's Shockwave", transform=axis.transAxes,
                      ha="center", va="bottom", fontsize=7)
    legend: list[Artist] = [Patch(facecolor=_plots.VFM_COLOUR, edgecolor="black", label=f"vfm, {_plots.MECHANICS[m]}",
                                  alpha=0.55 if m == "artifact" else 1.0) for m in shown]
    legend += [Patch(color=BAR_COLOURS[m], label=f"baselines, {_plots.MECHANICS[m]}") for m in shown]
    if published:
        legend.append(Line2D([], [], **PUBLISHED_TICK, label="published (Shockwave artifact),\non the policy's bar"))
    (spare[0] if spare else figure).legend(handles=legend, loc="center", fontsize=8, frameon=False)
    figure.suptitle(f"{title}: makespan, average JCT, worst FTF, unfair share, utilization", fontsize=11)
    figure.tight_layout()
    return _plots.save(figure, path)


def _label(name: str) -> str:
    """A series' name in a legend: a run under the artifact's mechanics says so."""
    base = name.removeprefix(ARTIFACT)
    return f"{base} ({_plots.MECHANICS['artifact']})" if name.startswith(ARTIFACT) else base


def _legend(axis: Any, names: list[str], picked: list[str], measure: str) -> None:
    """The legend of a crowded figure: the runs picked out (`_plots.highlighted`), the grey rest
    as one entry, and the reference lines."""
    handles, labels = axis.get_legend_handles_labels()
    shown = [(handle, label) for handle, label in zip(handles, labels, strict=True) if not label.startswith("_")]
    if len(picked) < len(names):
        shown.insert(len(picked), (_plots.other_handle(len(names) - len(picked)), ""))
    _plots.legend_right(axis, handles=[handle for handle, _ in shown],
                        title=f"vfm and the {_plots.HIGHLIGHTED} best others\nby {measure}", title_fontsize=7)


def _plot_ftf(policies: dict[str, Any], names: list[str], title: str, path: Path) -> Path:
    """Each policy's CDF of FTF rho with the equal-share and unfairness lines: vfm's runs and the
    three other runs with the lowest worst FTF in colour, the rest grey."""
    import numpy as np

    plt = _plots.pyplot()
    figure, axis = plt.subplots(figsize=_plots.PAGE)
    look, picked = _plots.highlighted(names, lambda name: policies[name]["worst_ftf"])
    for name in sorted(names, key=lambda name: name in picked):  # the grey ones first, under the rest
        rho = np.sort([job["ftf_rho"] for job in policies[name]["jobs"]])
        axis.step(rho, np.arange(1, rho.size + 1) / rho.size, where="post",
                  label=_label(name) if name in picked else "_other", **look[name])
    _plots.fairness_lines(axis)
    axis.set_title(f"{title}: finish-time fairness of every job (further left is fairer)", fontsize=11)
    axis.set_xlabel(r"FTF $\rho$ (JCT ÷ JCT at an equal share of the cluster)")
    axis.set_ylabel("fraction of jobs")
    axis.grid(alpha=0.3)
    _legend(axis, names, picked, "worst FTF")
    return _plots.save(figure, path)


def _plot_occupancy(result: dict[str, Any], names: list[str], workload: Workload, title: str, path: Path) -> Path:
    """GPUs each policy holds round by round, against the cluster's size: vfm's runs and the three
    other runs with the highest utilization in colour, the rest grey."""
    plt = _plots.pyplot()
    figure, axis = plt.subplots(figsize=_plots.PAGE)
    look, picked = _plots.highlighted(names, lambda name: -result["policies"][name]["utilization"])
    gpus = {job.id: job.gpus for job in workload.jobs}
    for name in sorted(names, key=lambda name: name in picked):  # the grey ones first, under the rest
        rounds = result["policies"][name]["rounds"]
        held = [sum(gpus[job] for job in entry["jobs"]) for entry in rounds]
        axis.step([entry["start_s"] / 3600 for entry in rounds], held, where="post",
                  label=_label(name) if name in picked else "_other",
                  **{**look[name], "linewidth": 0.6 * look[name]["linewidth"] if name in picked else 0.5})
    axis.axhline(result["gpus"], color="black", linewidth=0.8, linestyle=":", label=f"cluster ({result['gpus']} GPUs)")
    axis.set_title(f"{title}: GPUs held over time", fontsize=11)
    axis.set_xlabel("time (h)")
    axis.set_ylabel("GPUs held")
    axis.grid(alpha=0.3)
    _legend(axis, names, picked, "utilization")
    return _plots.save(figure, path)


def build_parser() -> Parser:
    parser = Parser("benchmarks.reproduce", __doc__)
    parser.add_argument("--workload", required=True,
                        help="a workload JSON file, or a shipped one's name (e.g. shockwave_120jobs_32gpus)")
    parser.add_argument("--policies", default=",".join(POLICIES),
                        check=choice_list((*POLICIES, *(ARTIFACT + name for name in ARTIFACT_RUNS)), "policy"),
                        help="comma-separated policy names (default all)")
    parser.add_argument("--mechanics", default="both", choices=("ours", "artifact", "both"),
                        help="run the baselines under our simulator's mechanics, the Shockwave artifact's "
                             "(vfm.cluster.artifact; rows artifact:<name>), or both (default)")
    parser.add_argument("--out", check=OUTPUT_FOLDER,
                        help="the results folder: table.txt, results.json and the plots (default results/<workload>)")
    parser.add_argument("--executor", default="process", choices=EXECUTORS, help=EXECUTOR_HELP)
    parser.add_argument("--workers", check=whole(1, MAX_WORKERS), default=2,
                        help="parallel policies (default 2)")
    parser.add_argument("--jobs", check=whole(1, MAX_JOBS),
                        help="simulate only the workload's first JOBS jobs (a slice)")
    parser.add_argument("--seed", check=seed(), default=0, help="seed of the policies (default 0)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--vfm-scenarios", check=whole(1, MAX_SCENARIOS), default=1,
                        help="S of the vfm policy's planner (default 1)")
    parser.add_argument("--vfm-efficiency", check=number(0), default=SHOCKWAVE_EFFICIENCY,
                        help=f"k of the vfm policy's efficiency term, per second of leftover "
                             f"(default {SHOCKWAVE_EFFICIENCY})")
    parser.add_argument("--vfm-reserve", check=number(0, 1), default=SHOCKWAVE_RESERVE,
                        help=f"share of GPU-rounds the vfm policy's FTF constraints leave free "
                             f"(default {SHOCKWAVE_RESERVE})")
    parser.add_argument("--vfm-execution", default="credit", choices=("credit", "window"),
                        help="how the vfm policy serves rounds from a plan (default credit)")
    parser.add_argument("--vfm-solver", default=VFM_SOLVER, choices=("saa-ipm", "cvxpy"),
                        help=f"the vfm policy's planning backend (default {VFM_SOLVER})")
    parser.add_argument("--vfm-no-polish", action="store_true",
                        help="plan with the backend's own schedule, not polished to the exact optimum")
    parser.add_argument("--vfm-service-floor", check=number(0, 0.5, open_high=False), default=0.0,
                        help="share of every round each job gets at least in the vfm policy's plans "
                             "(PlanOptions.service_floor; default 0)")
    parser.add_argument("--vfm-wait-limit", check=whole_or_none(1, 10_000), default=WAIT_LIMIT,
                        help="rounds a job may wait in a row in the vfm policy's plans, or 'none' "
                             f"(PlanOptions.wait_limit; default {WAIT_LIMIT})")
    parser.add_argument("--vfm-utility", default=SHOCKWAVE_UTILITY, choices=("progress", "completion"),
                        help="what a job's utility in the vfm policy's window measures (PlanOptions.utility; "
                             f"default {SHOCKWAVE_UTILITY})")
    parser.add_argument("--vfm-completion-time", check=number(0, 1e6, open_high=False),
                        default=SHOCKWAVE_COMPLETION_TIME,
                        help="the weight of the mean busy time of the jobs that can finish in the vfm policy's "
                             f"window (PlanOptions.completion_time; default {SHOCKWAVE_COMPLETION_TIME})")
    parser.add_argument("--vfm-shortest-first", check=number(0, 4, open_high=False), default=0.0,
                        help="how strongly the vfm policy's window budgets favour the jobs with less running time "
                             "left (PlanOptions.shortest_first; default 0: the budgets as given)")
    parser.add_argument("--vfm-forecaster", default="dirichlet", choices=tuple(FORECASTERS),
                        help="the vfm policy's forecaster, learning online from the jobs that complete if it can "
                             "(default dirichlet)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.out is None:  # the default folder, named after the workload once it is read: where it would go
        parser.checked("--out", OUTPUT_FOLDER, RESULTS / Path(args.workload).stem)
    from vfm.planner import PlanOptions  # the library loads once the arguments are checked

    with parser.reporting():
        # A bad floor or limit is named here, before any run.
        PlanOptions(service_floor=args.vfm_service_floor, wait_limit=args.vfm_wait_limit,
                    scenarios=args.vfm_scenarios)
        names = with_artifact_runs(args.policies, args.mechanics)
        # The default folder is named after the workload (loading it also names a bad file before any run).
        out = parser.checked("--out", OUTPUT_FOLDER, args.out or RESULTS / load(args.workload, args.jobs).name)
        with ExitStack() as stack:
            executor = make_executor(args.executor, args.workers, stack)
            result = run(args.workload, names, executor=executor, seed=args.seed, jobs=args.jobs,
                         progress=not args.quiet,
                         vfm_options={"scenarios": args.vfm_scenarios, "efficiency": args.vfm_efficiency,
                                      "reserve": args.vfm_reserve, "execution": args.vfm_execution,
                                      "solver": args.vfm_solver, "forecaster": args.vfm_forecaster,
                                      "polish": not args.vfm_no_polish,
                                      "service_floor": args.vfm_service_floor,
                                      "wait_limit": args.vfm_wait_limit, "utility": args.vfm_utility,
                                      "completion_time": args.vfm_completion_time,
                                      "shortest_first": args.vfm_shortest_first})
            published = published_results(args.workload) if args.jobs is None else {}
        table = format_table(result, published)
        print(table, end="")
        out.mkdir(parents=True, exist_ok=True)
        (out / "table.txt").write_text(parser.header() + table)
        (out / "results.json").write_text(json.dumps({**result, "provenance": parser.provenance()}, indent=1))
        written = plot(result, out, load(args.workload, args.jobs), published)
        print(f"wrote {out}/: table.txt, results.json, {', '.join(path.name for path in written)}")

if __name__ == "__main__":
    main()
