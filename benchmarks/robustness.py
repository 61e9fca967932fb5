"""Robustness: the vfm policy against the baselines on generated workloads it was not tuned on.

Run from the repository root::

    python -m benchmarks.robustness [--half report|choose|both] [--cases NAME,...]
        [--policies vfm,max_min_fairness,...] [--vfm NAME=VALUE ...]
        [--executor process|thread|serial|dask] [--workers 2] [--out DIR]

Workloads
    Fifteen scenarios (`SCENARIOS`) span contention from 2 to 10 jobs per GPU, gang mixes from
    all single-GPU to wide (1/2/4/8 GPUs drawn 35/35/20/10 %), arrivals from a burst to a steady
    stream over 16 hours, and clusters of 12 to 256 GPUs; eleven are generated
    (`vfm.cluster.generate_workload`), four resample the shipped Shockwave traces
    (`vfm.cluster.resample_workload`). Three stress what the first twelve do not: two wide-gang,
    few-GPU clusters (``gang8``: 8-GPU gangs are 70 % of the jobs, 4/2/1 GPUs 10 % each) of 72
    jobs on 12 GPUs and 96 on 16, where at most one or two 8-GPU gangs run at once; and a
    trace-like mix of many short and few long jobs (``shortlong``, `DURATION_MIXES`: 85 % run
    6 to 30 minutes, 15 % 5 to 15 hours, `WorkloadSpec.duration_mix`), 96 jobs on 32 GPUs. All
    three arrive over the shipped traces' span. Names read ``[r<source jobs>-]g<GPUs>-c<jobs per
    GPU>-<gang mix>-<arrivals>[-<run-time mix>]``. Each scenario is drawn twice with different seeds: the
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

Outputs (printed, and written to ``--out``, default ``results/robustness`` under the current folder;
the committed results are written only with ``--out benchmarks/results/robustness``)
    ``table.txt``: per workload, every policy's makespan, average JCT, worst FTF, unfair share,
    longest wait (``wait``: rounds a job with work left went without running), jobs that waited
    more than 20 rounds in a row (``>20``), for the vfm policy how many times its ``max_wait``
    guard decided a round (``fired``: `vfm.cluster.Simulation.guards`), and each target the vfm
    policy misses there, by how much; per half, how many workloads meet all the targets and each one, a win matrix (vfm
    against each baseline: workloads where it is better / equal within 0.1 % / worse, per
    metric), the longest wait of any job under the vfm policy against its guaranteed bound, and
    the guard's firings. ``results.json``: the same numbers (``waits_over_20``,
    ``max_wait_fired``). ``robustness.png``: the vfm policy's average JCT, worst FTF and makespan
    relative to its targets' references on every workload.

Targets (judged on the report half; `target_checks`)
    On every workload, against every baseline that ran there:

    - ``worst_ftf``, ``unfair_pct``: the vfm policy's no worse than the best of Gavel, Themis,
      AlloX and Gandiva-Fair (`FAIR`), with the tolerance of the win matrix's "equal"
      (`_compare`): 0.1 % of that best worst FTF, 0.1 points of unfair share;
    - ``avg_jct``: its average JCT at most 2 % (`JCT_SLACK`) above the best of Gavel, Themis and
      Gandiva-Fair (`JCT_PEERS`);
    - ``avg_jct_allox``: at most 10 % (`ALLOX_JCT_SLACK`) above AlloX's;
    - ``makespan_ossp``: its makespan at most 2 % (`OSSP_MAKESPAN_SLACK`) above OSSP's.
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
from typing import TYPE_CHECKING, Any

from benchmarks import _plots
from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Check, Parser, choice_list, whole
from benchmarks._executors import SerialExecutor, make_executor
from benchmarks.reproduce import EXECUTOR_HELP, EXECUTORS, MAX_WORKERS, POLICIES, vfm_policy

if TYPE_CHECKING:
    from vfm.cluster import SchedulingPolicy, Workload
    from vfm.cluster.generate import WorkloadSpec

#: Gang mixes of the scenarios (None: the artifact's own mix).
GANG_MIXES: dict[str, dict[int, float] | None] = {
    "single": {1: 1.0}, "artifact": None, "wide": {1: 0.35, 2: 0.35, 4: 0.2, 8: 0.1},
    "gang8": {8: 0.7, 4: 0.1, 2: 0.1, 1: 0.1}}
#: Run-time mixes of the scenarios (`WorkloadSpec.duration_mix`; None: the artifact's 0.2 h to 5 h).
DURATION_MIXES: dict[str, dict[tuple[float, float], float] | None] = {
    "artifact": None, "shortlong": {(360.0, 1800.0): 0.85, (18000.0, 54000.0): 0.15}}


@dataclass(frozen=True)
class Scenario:
    """A kind of workload: `jobs` on `gpus`, arrivals `interarrival_s` apart on average (0: a
    burst), gangs from `GANG_MIXES[gangs]`, run times from `DURATION_MIXES[durations]`; generated,
    or resampled from the shipped `source` (whose jobs keep their own lengths)."""

    name: str
    jobs: int
    gpus: int
    interarrival_s: float
    gangs: str
    source: str | None = None
    durations: str = "artifact"

    def spec(self) -> WorkloadSpec:
        from vfm.cluster.generate import WorkloadSpec

        return WorkloadSpec(jobs=self.jobs, gpus=self.gpus, interarrival_s=self.interarrival_s,
                            gang_mix=GANG_MIXES[self.gangs], duration_mix=DURATION_MIXES[self.durations])


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
    # Appended, so that the scenarios above keep their seeds (their index in SCENARIOS).
    Scenario("g12-c6-gang8-trace", 72, 12, _TRACE_SPAN_S / 72, "gang8"),
    Scenario("g16-c6-gang8-trace", 96, 16, _TRACE_SPAN_S / 96, "gang8"),
    Scenario("g32-c3-artifact-trace-shortlong", 96, 32, _TRACE_SPAN_S / 96, "artifact", durations="shortlong"),
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
    import numpy as np

    from vfm.cluster.generate import generate_workload, resample_workload

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
    import numpy as np

    from vfm.cluster import simulate
    from vfm.cluster.metrics import headline, longest_wait_rounds, present_rounds
    from vfm.planner import Policy
    from vfm.planner.shockwave import wait_bound

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
    out["waits_over_20"] = int((waits > 20).sum())
    if isinstance(scheduler, Policy) and scheduler.config.max_wait is not None:
        # The guarantee, per job, with the largest demand of the run (docs/planning.md, "No starvation").
        gangs = np.array([job.gpus for job in workload.jobs])
        present = present_rounds(simulation)
        demand = float((present @ gangs).max())
        bound = np.asarray(wait_bound(scheduler.config.max_wait, workload.gpus, gangs, demand))
        out["wait_bound_rounds"] = int(bound[np.argmax(waits)])
        out["waits_within_bound"] = bool(np.all(waits <= bound))
        # How many times its no-starvation guard decided a round (`vfm.planner.Decision.guards`).
        out["max_wait_fired"] = simulation.guards.get("max_wait", 0)
        # Every guard's job-rounds, and the job-rounds of the run (each job in each round it was
        # present with work left), to judge "a net that fires rarely" by its share.
        out["guards"] = {name: int(count) for name, count in simulation.guards.items()}
        out["job_rounds"] = int(present.sum())
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


#: The fair baselines: vfm's worst FTF and unfair share are held to the best of them.
FAIR = ("max_min_fairness", "finish_time_fairness", "allox", "gandiva_fair")
#: The baselines vfm's average JCT is held within `JCT_SLACK` of the best of.
JCT_PEERS = ("max_min_fairness", "finish_time_fairness", "gandiva_fair")
JCT_SLACK = 0.02
#: vfm's average JCT within this of AlloX's (a JCT-first policy, not a fair one).
ALLOX_JCT_SLACK = 0.10
#: vfm's makespan within this of OSSP's (``min_total_duration``).
OSSP_MAKESPAN_SLACK = 0.02
#: The targets, in the order the table reports them (`target_checks`).
TARGETS = ("worst_ftf", "unfair_pct", "avg_jct", "avg_jct_allox", "makespan_ossp")


def _best(policies: Mapping[str, Mapping[str, float]], names: Sequence[str], metric: str) -> tuple[str, float] | None:
    """The policy of `names` (those present) with the lowest `metric`, and its value; None if none is present."""
    present = [name for name in names if name in policies]
    if not present:
        return None
    best = min(present, key=lambda name: policies[name][metric])
    return best, policies[best][metric]


def target_checks(policies: Mapping[str, Mapping[str, float]]) -> dict[str, str | None]:
    """Each target (`TARGETS`) that applies on one workload (its baselines ran there): None if the
    vfm policy meets it, else a short text of by how much it misses it. The module docstring's
    "Targets" gives them and their tolerances."""
    vfm = policies["vfm"]
    checks: dict[str, str | None] = {}
    for metric in ("worst_ftf", "unfair_pct"):
        best = _best(policies, FAIR, metric)
        if best is not None:
            name, value = best
            over = vfm[metric] - value
            by = f"+{over:.2f} pts" if metric == "unfair_pct" else f"+{100 * over / value:.1f}%"
            checks[metric] = None if _compare(vfm[metric], value, metric) >= 0 else (
                f"{metric} {vfm[metric]:.3g} > {SHORT[name]}'s {value:.3g} ({by})")
    for target, names, slack in (("avg_jct", JCT_PEERS, JCT_SLACK), ("avg_jct_allox", ("allox",), ALLOX_JCT_SLACK),
                                 ("makespan_ossp", ("min_total_duration",), OSSP_MAKESPAN_SLACK)):
        metric = "makespan_s" if target == "makespan_ossp" else "avg_jct_s"
        best = _best(policies, names, metric)
        if best is not None:
            name, value = best
            ratio = vfm[metric] / value - 1
            checks[target] = None if vfm[metric] <= (1 + slack) * value else (
                f"{metric.removesuffix('_s')} +{100 * ratio:.1f}% vs {SHORT[name]} > {100 * slack:g}%")
    return checks


def target_misses(policies: Mapping[str, Mapping[str, float]]) -> list[str]:
    """The targets the vfm policy misses on one workload (empty: all met), each as a short text
    of by how much (`target_checks`)."""
    return [miss for miss in target_checks(policies).values() if miss is not None]


def _compare(ours: float, theirs: float, metric: str) -> int:
    """1 if `ours` is better (lower) than `theirs`, -1 if worse, 0 within 0.1 % (0.1 points of unfair share)."""
    slack = 0.1 if metric == "unfair_pct" else 1e-3 * abs(theirs)
    return 1 if ours < theirs - slack else -1 if ours > theirs + slack else 0


def guard_shares(cases: Mapping[str, Any]) -> dict[str, tuple[float, str]]:
    """For each guard of vfm's execution, the largest share (percent) of a workload's job-rounds it
    decided among `cases`, and that workload; empty for results without the counts."""
    largest: dict[str, tuple[float, str]] = {}
    for case, entry in cases.items():
        vfm = entry["policies"]["vfm"]
        if not vfm.get("job_rounds"):
            continue
        for name, count in vfm.get("guards", {}).items():
            pct = 100.0 * count / vfm["job_rounds"]
            if name not in largest or pct > largest[name][0]:
                largest[name] = (pct, case)
    return largest


def format_table(result: Mapping[str, Any]) -> str:
    """Per-workload tables, then per half the win matrix and the longest wait."""
    lines = []
    cases = result["cases"]
    for case, entry in cases.items():
        w = entry["workload"]
        lines.append(f"{case}: {w['jobs']} jobs / {w['gpus']} GPUs ({w['contention']:.1f} per GPU), gangs "
                     f"{w['gangs']}, mean gap {w['interarrival_s']:.0f} s"
                     + (f", run times {w['durations']}" if w.get("durations", "artifact") != "artifact" else "")
                     + (f", resampled from {w['source']}" if w["source"] else ", generated"))
        lines.append(f"  {'policy':<8}{'makespan s':>12}{'avg JCT s':>12}{'worst FTF':>10}{'unfair %':>9}"
                     f"{'wait':>6}{'>20':>5}{'fired':>7}{'sim s':>7}")
        for name, m in entry["policies"].items():
            fired = m.get("max_wait_fired")
            lines.append(f"  {SHORT.get(name, name):<8}{m['makespan_s']:>12,.0f}{m['avg_jct_s']:>12,.0f}"
                         f"{m['worst_ftf']:>10.3f}{m['unfair_pct']:>9.2f}{m['longest_wait_rounds']:>6d}"
                         f"{m.get('waits_over_20', '-')!s:>5}{'-' if fired is None else fired!s:>7}"
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
        checks = [target_checks(e["policies"]) for e in in_half.values()]
        per_target = [f"{t} {sum(c[t] is None for c in checks if t in c)}/{sum(t in c for c in checks)}"
                      for t in TARGETS if any(t in c for c in checks)]
        lines.append("  workloads meeting each target: " + ", ".join(per_target))
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
        fired = [e["policies"]["vfm"].get("max_wait_fired") for e in in_half.values()]
        over = sum(e["policies"]["vfm"].get("waits_over_20", 0) for e in in_half.values())
        lines.append(f"  vfm's max_wait guard decided {sum(f or 0 for f in fired)} job-rounds in all "
                     f"(on {sum(bool(f) for f in fired)} of {len(fired)} workloads); jobs that waited more than "
                     f"20 rounds in a row: {over}")
        shares = guard_shares(in_half)
        if shares:
            lines.append("  largest share of a workload's job-rounds each guard decided: " + ", ".join(
                f"{name} {pct:.2f} % ({case})" for name, (pct, case) in shares.items()))
        lines.append("")
    return "\n".join(lines)


def plot(result: Mapping[str, Any], path: Path) -> Path:
    """The vfm policy's metrics against its targets' references, per workload: average JCT over the
    best of Gavel, Themis and Gandiva-Fair; worst FTF over the best fair baseline; makespan over OSSP's."""
    import numpy as np
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    cases = {c: e["policies"] for c, e in result["cases"].items() if "vfm" in e["policies"]}
    panels = (("avg_jct_s", JCT_PEERS, 1 + JCT_SLACK, "Average JCT", "best of Gavel, Themis, Gandiva"),
              ("worst_ftf", FAIR, 1.0, r"Worst FTF $\rho$", "best fair baseline"),
              ("makespan_s", ("min_total_duration",), 1 + OSSP_MAKESPAN_SLACK, "Makespan", "OSSP"))
    figure, axes, _ = _plots.grid(len(panels), size=(_plots.PAGE[0], max(_plots.PAGE[1], 0.2 * len(cases) + 1.5)))
    labels = list(cases)
    rows = np.arange(len(labels))
    halves = {"report": "tab:blue", "choose": "tab:gray"}
    colours = [halves["report" if c.endswith("@report") else "choose"] for c in labels]
    for axis, (metric, names, target, heading, against) in zip(axes, panels, strict=True):
        ratio = []
        for p in cases.values():
            best = _best(p, names, metric)
            ratio.append(np.nan if best is None else p["vfm"][metric] / best[1])
        axis.barh(rows, ratio, color=colours)
        axis.axvline(1.0, color="black", linewidth=0.8)
        if target != 1.0:
            axis.axvline(target, color=_plots.VFM_COLOUR, linewidth=0.9, linestyle="--")
        axis.set_title(heading, fontsize=10)
        axis.set_xlabel(f"vfm ÷ {against}\n(lower is better)", fontsize=8)
        axis.set_yticks(rows, labels if axis is axes[0] else [], fontsize=6)
        axis.invert_yaxis()
        axis.grid(axis="x", alpha=0.3)
        axis.set_axisbelow(True)
    legend = [Patch(color=halves["report"], label="report half (judged)"),
              Patch(color=halves["choose"], label="choose half (vfm's constants chosen here)"),
              Line2D([], [], color="black", linewidth=0.8, label="equal to the reference"),
              Line2D([], [], color=_plots.VFM_COLOUR, linestyle="--", label="the target's tolerance")]
    figure.legend(handles=legend, loc="lower center", ncol=4, fontsize=8, frameon=False, bbox_to_anchor=(0.5, -0.03))
    figure.suptitle(f"vfm against the baselines on {len(labels)} generated and resampled workloads: "
                    "average JCT, worst FTF and makespan relative to each target's reference", fontsize=10)
    figure.tight_layout(rect=(0, 0.03, 1, 1))
    return _plots.save(figure, path)


def _option(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(f"--vfm takes NAME=VALUE, got {text!r}")
    try:
        return name, json.loads(value)
    except json.JSONDecodeError:
        return name, value


#: One ``--vfm`` option, NAME=VALUE (the value read as JSON where it is, else as text); whether the
#: policy takes it is checked once the library is loaded (`_check_vfm_options`).
VFM_OPTION = Check("NAME=VALUE", lambda text: (text, *_option(text)), lambda option: True)


def _check_vfm_options(options: Mapping[str, Any], texts: Sequence[str]) -> None:
    """Build a vfm policy with `options`, so that a bad one is named before any run (in a worker, it
    would fail after the progress bar)."""
    from vfm.errors import VFMError

    try:
        vfm_policy(1, 120.0, **options)
    except (VFMError, TypeError, ValueError) as mistake:
        raise ValueError(f"--vfm {' '.join(texts)}: {mistake}") from None


def build_parser() -> Parser:
    parser = Parser("benchmarks.robustness", __doc__)
    parser.add_argument("--half", default="both", choices=("choose", "report", "both"),
                        help="which draw of every scenario runs: the one the vfm policy's constants were chosen on "
                             "(choose), the one they are judged on (report), or both (default)")
    parser.add_argument("--cases", check=choice_list(case_names(), "case"),
                        help="comma-separated case names <scenario>@<half> (default: the half's)")
    parser.add_argument("--policies", default=",".join(("vfm", *BASELINE_NAMES)),
                        check=choice_list(tuple(POLICIES), "policy"),
                        help=f"comma-separated policy names (default {','.join(('vfm', *BASELINE_NAMES))})")
    parser.add_argument("--vfm", action="append", default=[], metavar="NAME=VALUE", check=VFM_OPTION,
                        help="override an option of the vfm policy (Policy.shockwave), e.g. efficiency=0.1; "
                             "repeat it for more")
    parser.add_argument("--executor", default="process", choices=EXECUTORS, help=EXECUTOR_HELP)
    parser.add_argument("--workers", check=whole(1, MAX_WORKERS), default=2, help="parallel runs (default 2)")
    parser.add_argument("--out", check=OUTPUT_FOLDER, default=RESULTS / "robustness",
                        help="folder for table.txt, results.json and robustness.png (default results/robustness)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        cases = args.cases or case_names(args.half)
        options = {name: value for _, name, value in args.vfm}
        _check_vfm_options(options, [text for text, _, _ in args.vfm])
        policies = args.policies
        with ExitStack() as stack:
            executor = make_executor(args.executor, args.workers, stack)
            result = run(cases, policies, executor=executor, vfm_options=options, progress=not args.quiet)
        table = format_table(result)
        print(table)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "table.txt").write_text(parser.header() + table + "\n")
        (args.out / "results.json").write_text(json.dumps({**result, "provenance": parser.provenance()}, indent=1))
        png = plot(result, args.out / "robustness.png")
        print(f"wrote {args.out}/: table.txt, results.json, {png.name}")


if __name__ == "__main__":
    main()
