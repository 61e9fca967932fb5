"""Robustness: the vfm policy against the baselines on generated workloads it was not tuned on.

Run from the repository root::

    python -m benchmarks.robustness [--half report|choose|both] [--cases NAME,...]
        [--policies vfm,max_min_fairness,...] [--vfm NAME=VALUE ...]
        [--executor process|thread|serial|dask] [--workers 2] [--out DIR]

Workloads
    Twelve scenarios (`SCENARIOS`) span contention from 2 to 10 jobs per GPU, gang mixes from
    all single-GPU to wide (1/2/4/8 GPUs drawn 35/35/20/10 %), arrivals from a burst to a steady
    stream over 16 hours, and clusters of 32 to 256 GPUs; eight are generated
    (`vfm.cluster.generate_workload`), four resample the shipped Shockwave traces
    (`vfm.cluster.resample_workload`). Each scenario is drawn twice with different seeds: the
    first draw belongs to the ``choose`` half, on which the vfm policy's constants were chosen;
    the second to the ``report`` half, on which they are judged. Every workload runs in
    `vfm.cluster.simulate` (our mechanics, restarts 20 s).

Policies
    ``vfm`` (`vfm.planner.Policy.shockwave` on the interior point, with ``--vfm`` overrides of its
    options, e.g. ``--vfm efficiency=0.1``) and the baselines Gavel (``max_min_fairness``),
    Themis (``finish_time_fairness``), ``allox``, ``gandiva_fair`` and OSSP
    (``min_total_duration``).

Parallelism
    Each (workload, policy) pair is one task of a `concurrent.futures.Executor`
    (`benchmarks._executors`): a local process pool by default; pass a Dask
    ``Client(...).get_executor()`` to `run` to spread the sweep over a cluster.

Outputs (printed, and written to ``--out``, default ``benchmarks/results/robustness``)
    ``table.txt``: per workload, every policy's makespan, average JCT, worst FTF, unfair share
    and longest wait (rounds a job with work left went without running), and the targets the
    vfm policy misses there; per half, a win matrix (vfm against each baseline: workloads where
    it is better / equal within 0.1 % / worse, per metric) and the longest wait of any job under
    the vfm policy against its guaranteed bound. ``results.json``: the same numbers.
    ``robustness.png``: the vfm policy's metrics relative to the better of Gavel and Themis on
    every workload.

Targets (the report half)
    The vfm policy's makespan, worst FTF and unfair share no worse than Gavel's and Themis's;
    its average JCT within 5 % of the better of theirs; its makespan within 5 % of OSSP's.
"""

from __future__ import annotations

import concurrent.futures as futures
import json
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._cli import Parser
from benchmarks._executors import SerialExecutor, make_executor
from benchmarks.reproduce import POLICIES, vfm_policy
from vfm.cluster import SchedulingPolicy, Workload, simulate
from vfm.cluster.generate import WorkloadSpec, generate_workload, resample_workload
from vfm.cluster.metrics import headline, longest_wait_rounds, present_rounds
from vfm.planner import Policy
from vfm.planner.shockwave import wait_bound

#: Gang mixes of the scenarios (None: the artifact's own mix).
GANG_MIXES: dict[str, dict[int, float] | None] = {
    "single": {1: 1.0}, "artifact": None, "wide": {1: 0.35, 2: 0.35, 4: 0.2, 8: 0.1}}


@dataclass(frozen=True)
class Scenario:
    """A kind of workload: `jobs` on `gpus`, arrivals `interarrival_s` apart on average (0: a
    burst), gangs from `GANG_MIXES[gangs]`; generated, or resampled from the shipped `source`."""

    name: str
    jobs: int
    gpus: int
    interarrival_s: float
    gangs: str
    source: str | None = None

    def spec(self) -> WorkloadSpec:
        return WorkloadSpec(jobs=self.jobs, gpus=self.gpus, interarrival_s=self.interarrival_s,
                            gang_mix=GANG_MIXES[self.gangs])


#: Arrivals over about 1.4 hours, as in the shipped traces.
_TRACE_SPAN_S = 5000.0
SCENARIOS: tuple[Scenario, ...] = (
    Scenario("g32-c2-artifact-trace", 64, 32, _TRACE_SPAN_S / 64, "artifact"),
    Scenario("g32-c6-artifact-burst", 192, 32, 0.0, "artifact"),
    Scenario("g32-c10-single-12h", 320, 32, 12 * 3600 / 320, "single"),
    Scenario("g64-c4-wide-trace", 256, 64, _TRACE_SPAN_S / 256, "wide"),
    Scenario("g64-c10-artifact-8h", 640, 64, 8 * 3600 / 640, "artifact"),
    Scenario("g128-c3-single-burst", 384, 128, 0.0, "single"),
    Scenario("g128-c6-wide-6h", 768, 128, 6 * 3600 / 768, "wide"),
    Scenario("g256-c2-artifact-trace", 512, 256, _TRACE_SPAN_S / 512, "artifact"),
    Scenario("r900-g256-c3.5-wide-trace", 896, 256, _TRACE_SPAN_S / 896, "wide", "shockwave_900jobs_256gpus"),
    Scenario("r120-g32-c8-artifact-4h", 256, 32, 4 * 3600 / 256, "artifact", "shockwave_120jobs_32gpus"),
    Scenario("r460-g128-c2-single-burst", 256, 128, 0.0, "single", "shockwave_460jobs_128gpus"),
    Scenario("r220-g64-c6-wide-16h", 384, 64, 16 * 3600 / 384, "wide", "shockwave_220jobs_64gpus"),
)
HALVES = ("choose", "report")
BASELINE_NAMES = ("max_min_fairness", "finish_time_fairness", "allox", "gandiva_fair", "min_total_duration")
SHORT = {"vfm": "vfm", "max_min_fairness": "Gavel", "finish_time_fairness": "Themis", "allox": "AlloX",
         "gandiva_fair": "Gandiva", "min_total_duration": "OSSP"}
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_pct")


def case_names(half: str = "both") -> list[str]:
    """``<scenario>@<half>`` for the scenarios in `half` (``choose``, ``report`` or ``both``)."""
    halves = HALVES if half == "both" else (half,)
    return [f"{s.name}@{h}" for h in halves for s in SCENARIOS]


@lru_cache(maxsize=4)
def case_workload(case: str) -> Workload:
    """The workload of a case ``<scenario>@<half>``: the scenario drawn with its half's seed."""
    name, _, half = case.partition("@")
    scenario = next((s for s in SCENARIOS if s.name == name), None)
    if scenario is None or half not in HALVES:
        raise ValueError(f"unknown case {case!r}; the cases are {', '.join(case_names())}")
    seed = np.random.SeedSequence((SCENARIOS.index(scenario), HALVES.index(half)))
    if scenario.source is None:
        return generate_workload(scenario.spec(), seed, name=case)
    return resample_workload(scenario.source, scenario.spec(), seed, name=case)


def run_case(case: str, policy: str, vfm_options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Simulate `policy` on `case`'s workload: its headline metrics, longest wait and seconds.

    A module-level function of plain arguments, so that any executor can ship it to a worker.
    """
    workload = case_workload(case)
    tic = time.perf_counter()
    scheduler: SchedulingPolicy
    if policy == "vfm":
        scheduler = vfm_policy(workload.gpus, workload.round_s, **dict(vfm_options or {}))
    else:
        scheduler = POLICIES[policy](workload.gpus, workload.round_s, 0)
    simulation = simulate(workload, scheduler)
    out: dict[str, Any] = headline(simulation.arrival_s, simulation.jct_s, simulation.isolated_s, simulation.gpus,
                                   busy_gpu_s=simulation.busy_gpu_s)
    waits = longest_wait_rounds(simulation)
    out["longest_wait_rounds"] = int(waits.max())
    if isinstance(scheduler, Policy) and scheduler.config.max_wait is not None:
        # The guarantee, per job, with the largest demand of the run (docs/planning.md, "No starvation").
        gangs = np.array([job.gpus for job in workload.jobs])
        demand = float((present_rounds(simulation) @ gangs).max())
        bound = np.asarray(wait_bound(scheduler.config.max_wait, workload.gpus, gangs, demand))
        out["wait_bound_rounds"] = int(bound[np.argmax(waits)])
        out["waits_within_bound"] = bool(np.all(waits <= bound))
    out["seconds"] = time.perf_counter() - tic
    return out


def describe(case: str) -> dict[str, Any]:
    """What a case's workload is: its scenario's parameters and contention."""
    name = case.partition("@")[0]
    scenario = next(s for s in SCENARIOS if s.name == name)
    return {**asdict(scenario), "contention": scenario.jobs / scenario.gpus}


def run(cases: Sequence[str], policies: Sequence[str] = ("vfm", *BASELINE_NAMES), *,
        executor: futures.Executor | None = None, vfm_options: Mapping[str, Any] | None = None,
        progress: bool = False) -> dict[str, Any]:
    """Every policy on every case through `executor` (default serial); the JSON document."""
    unknown = [p for p in policies if p not in POLICIES]
    if unknown:
        raise ValueError(f"unknown policies {unknown}; choose from {', '.join(POLICIES)}")
    unknown_cases = sorted(set(cases) - set(case_names()))
    if unknown_cases:
        raise ValueError(f"unknown cases {unknown_cases}; the cases are {', '.join(case_names())}")
    with ExitStack() as stack:
        pool = executor if executor is not None else stack.enter_context(SerialExecutor())
        # Cases in order, so that a process worker reuses the cached workload of its last task.
        pending = {pool.submit(run_case, case, policy, dict(vfm_options or {})): (case, policy)
                   for case in cases for policy in policies}
        bar = None
        if progress:
            from tqdm import tqdm

            bar = stack.enter_context(tqdm(total=len(pending), desc="robustness", unit="run", file=sys.stderr))
        results: dict[str, dict[str, Any]] = {case: {} for case in cases}
        for future in futures.as_completed(pending):
            case, policy = pending[future]
            results[case][policy] = future.result()
            if bar is not None:
                bar.update()
    return {"vfm_options": dict(vfm_options or {}),
            "cases": {case: {"workload": describe(case), "policies": {p: results[case][p] for p in policies}}
                      for case in cases}}


def target_misses(policies: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The targets the vfm policy misses on one workload (empty: all met), each as a short text."""
    vfm = policies["vfm"]
    misses = []
    fair = [name for name in ("max_min_fairness", "finish_time_fairness") if name in policies]
    for metric in ("makespan_s", "worst_ftf", "unfair_pct"):
        worse = [SHORT[name] for name in fair if vfm[metric] > policies[name][metric]]
        if worse:
            misses.append(f"{metric} > {'/'.join(worse)}")
    if fair:
        best = min(policies[name]["avg_jct_s"] for name in fair)
        if vfm["avg_jct_s"] > 1.05 * best:
            misses.append(f"avg_jct +{100 * (vfm['avg_jct_s'] / best - 1):.1f}% > 5%")
    if "min_total_duration" in policies:
        ossp = policies["min_total_duration"]["makespan_s"]
        if vfm["makespan_s"] > 1.05 * ossp:
            misses.append(f"makespan +{100 * (vfm['makespan_s'] / ossp - 1):.1f}% vs OSSP > 5%")
    return misses


def _compare(ours: float, theirs: float, metric: str) -> int:
    """1 if `ours` is better (lower) than `theirs`, -1 if worse, 0 within 0.1 % (0.1 points of unfair share)."""
    slack = 0.1 if metric == "unfair_pct" else 1e-3 * abs(theirs)
    return 1 if ours < theirs - slack else -1 if ours > theirs + slack else 0


def format_table(result: Mapping[str, Any]) -> str:
    """Per-workload tables, then per half the win matrix and the longest wait."""
    lines = []
    cases = result["cases"]
    for case, entry in cases.items():
        w = entry["workload"]
        lines.append(f"{case}: {w['jobs']} jobs / {w['gpus']} GPUs ({w['contention']:.1f} per GPU), gangs "
                     f"{w['gangs']}, mean gap {w['interarrival_s']:.0f} s"
                     + (f", resampled from {w['source']}" if w["source"] else ", generated"))
        lines.append(f"  {'policy':<8}{'makespan s':>12}{'avg JCT s':>12}{'worst FTF':>10}{'unfair %':>9}"
                     f"{'wait':>6}{'sim s':>7}")
        for name, m in entry["policies"].items():
            lines.append(f"  {SHORT.get(name, name):<8}{m['makespan_s']:>12,.0f}{m['avg_jct_s']:>12,.0f}"
                         f"{m['worst_ftf']:>10.3f}{m['unfair_pct']:>9.2f}{m['longest_wait_rounds']:>6d}"
                         f"{m['seconds']:>7.1f}")
        if "vfm" in entry["policies"]:
            misses = target_misses(entry["policies"])
            lines.append("  targets: " + ("all met" if not misses else "MISSED " + "; ".join(misses)))
        lines.append("")
    for half in HALVES:
        in_half = {c: e for c, e in cases.items() if c.endswith("@" + half) and "vfm" in e["policies"]}
        if not in_half:
            continue
        met = sum(not target_misses(e["policies"]) for e in in_half.values())
        lines.append(f"{half} half: targets met on {met} of {len(in_half)} workloads")
        lines.append("  win matrix, vfm against each (workloads better / equal / worse):")
        lines.append(f"  {'':<8}" + "".join(f"{m:>16}" for m in METRICS))
        others = [p for p in next(iter(in_half.values()))["policies"] if p != "vfm"]
        for name in others:
            cells = []
            for metric in METRICS:
                outcomes = [_compare(e["policies"]["vfm"][metric], e["policies"][name][metric], metric)
                            for e in in_half.values()]
                cells.append(f"{outcomes.count(1)} / {outcomes.count(0)} / {outcomes.count(-1)}")
            lines.append(f"  {SHORT.get(name, name):<8}" + "".join(f"{c:>16}" for c in cells))
        waits = {c: e["policies"]["vfm"]["longest_wait_rounds"] for c, e in in_half.items()}
        worst = max(waits, key=waits.__getitem__)
        vfm = in_half[worst]["policies"]["vfm"]
        held = [e["policies"]["vfm"].get("waits_within_bound") for e in in_half.values()]
        lines.append(f"  longest wait under vfm: {waits[worst]} rounds ({worst}; its guaranteed bound there "
                     f"{vfm.get('wait_bound_rounds', 'none')}); every job within its bound in "
                     f"{sum(h is True for h in held)} of {len(held)} runs")
        lines.append("")
    return "\n".join(lines)


def plot(result: Mapping[str, Any], path: Path) -> Path:
    """The vfm policy's metrics divided by the better of Gavel's and Themis's, per workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases = {c: e["policies"] for c, e in result["cases"].items()
             if {"vfm", "max_min_fairness", "finish_time_fairness"} <= set(e["policies"])}
    figure, axes = plt.subplots(1, 3, figsize=(13, 0.3 * len(cases) + 2), sharey=True)
    labels = list(cases)
    rows = np.arange(len(labels))
    for axis, metric in zip(axes, ("makespan_s", "avg_jct_s", "worst_ftf"), strict=True):
        best = np.array([min(p["max_min_fairness"][metric], p["finish_time_fairness"][metric])
                         for p in cases.values()])
        ratio = np.array([p["vfm"][metric] for p in cases.values()]) / best
        colours = ["tab:blue" if c.endswith("@report") else "tab:gray" for c in labels]
        axis.barh(rows, ratio, color=colours)
        axis.axvline(1.0, color="black", linewidth=0.8)
        if metric == "avg_jct_s":
            axis.axvline(1.05, color="tab:red", linewidth=0.8, linestyle="--")
        axis.set_xlabel(f"vfm {metric} / best of Gavel, Themis")
    axes[0].set_yticks(rows, labels, fontsize=7)
    axes[0].invert_yaxis()
    figure.suptitle("vfm relative to the better fair baseline (blue: report half, grey: choose half; lower is better)",
                    fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def _option(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep:
        raise ValueError(f"--vfm takes NAME=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


def main(argv: Sequence[str] | None = None) -> None:
    parser = Parser("benchmarks.robustness", __doc__)
    parser.add_argument("--half", default="both", choices=("choose", "report", "both"))
    parser.add_argument("--cases", help="comma-separated case names <scenario>@<half> (default: the half's)")
    parser.add_argument("--policies", default=",".join(("vfm", *BASELINE_NAMES)))
    parser.add_argument("--vfm", action="append", default=[], metavar="NAME=VALUE",
                        help="override an option of the vfm policy (Policy.shockwave), e.g. efficiency=0.1")
    parser.add_argument("--executor", default="process", choices=("process", "thread", "serial", "dask"))
    parser.add_argument("--workers", type=int, default=2, help="parallel runs (default 2: this machine's cores)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/robustness"))
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    args = parser.parse_args(argv)
    with parser.reporting():
        cases = [c.strip() for c in args.cases.split(",")] if args.cases else case_names(args.half)
        options = dict(_option(text) for text in args.vfm)
        policies = [p.strip() for p in args.policies.split(",") if p.strip()]
        with ExitStack() as stack:
            executor = make_executor(args.executor, args.workers, stack)
            result = run(cases, policies, executor=executor, vfm_options=options, progress=not args.quiet)
        table = format_table(result)
        print(table)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.txt").write_text(table + "\n")
        (args.out / "results.json").write_text(json.dumps(result, indent=1))
        png = plot(result, args.out / "robustness.png")
        print(f"wrote {args.out}/: table.txt, results.json, {png.name}")


if __name__ == "__main__":
    main()
