"""The Shockwave workloads on clusters of several GPU types: vfm against Gavel's heterogeneity-aware max-min.

Run from the repository root::

    python -m benchmarks.heterogeneous [--workloads NAME,...] [--mixes NAME,...] [--policies NAME,...]
                                       [--workers 2] [--jobs N] [--out DIR]

Each workload keeps its jobs and GPU count and gets a cluster of V100, P100 and K80 GPUs
(`vfm.cluster.ClusterTypes.split` of its GPUs by the mix's shares): ``thirds`` (equal thirds)
and ``v100-heavy`` (half V100, a quarter each of P100 and K80). The jobs' epoch times on each
type come from the artifact's throughput profiles by the ratio rule
(`vfm.cluster.gpu_types`); finish-time fairness compares each job's time with its time alone on
a proportional slice of the cluster (`vfm.cluster.proportional_isolated_s`).

Workloads: the traces by name, or ``generated-<seed>`` (`GENERATED_JOBS` jobs on `GENERATED_GPUS` GPUs, as
workloads the typed configuration's efficiency weight was chosen on with ``--efficiency``).

Policies: ``vfm`` (`vfm.planner.Policy.shockwave`: goods (type, round), the reproduction's
configuration (20-round window, finish-time targets, priority relaxation, reserve, credit
execution) with the efficiency weight chosen for types, `TYPED_SHOCKWAVE_EFFICIENCY`; its
re-plans solved by `saa-ipm`), ``vfm-plain``
(`vfm.planner.Policy`: the plain NSWOT program, credit execution), ``gavel``
(`vfm.cluster.baselines.HeterogeneousMaxMinFairness`) and ``static_market``
(`vfm.cluster.baselines.HeterogeneousStaticMarket`: the one-round Fisher market over the
types, equal budgets, through Gavel's round mechanism; the VFM without forecasts or a window).
Only with ``--policies``, not in the default run: Gavel's other heterogeneity-aware policies
through the same round mechanism, ``gavel-ftf``
(`vfm.cluster.baselines.HeterogeneousFinishTimeFairness`), ``gavel-throughput``
(`~vfm.cluster.baselines.HeterogeneousMaxSumThroughput`) and ``gavel-makespan``
(`~vfm.cluster.baselines.HeterogeneousMinTotalDuration`), e.g.
``--policies gavel,gavel-ftf,gavel-throughput,gavel-makespan``.

Prints one row per workload, mix and policy (makespan, mean JCT, worst FTF ratio, unfair share,
utilization, median and max seconds of a ``next_round`` call) and, per workload and mix, the
targets (vfm at least 1.2x better makespan and 1.5x better worst FTF than gavel,
unfair share no higher); writes ``table.txt``, ``results.json`` (with each run's sorted FTF
ratios) and, per workload, ``<workload>_metrics.png`` and ``<workload>_ftf_cdf.png`` to ``--out``
(default ``results/heterogeneous`` under the current folder; the committed results are written only with
``--out benchmarks/results/heterogeneous``).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from concurrent import futures
from contextlib import ExitStack
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks import _plots
from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Parser, choice_list, number, whole
from benchmarks._executors import make_executor
from benchmarks.reproduce import MAX_JOBS, MAX_WORKERS

if TYPE_CHECKING:
    from vfm.cluster import ClusterTypes, Workload
    from vfm.cluster.protocol import SchedulingPolicy

#: Mix name -> shares of the cluster's GPUs by type.
MIXES: dict[str, dict[str, float]] = {
    "thirds": {"v100": 1.0, "p100": 1.0, "k80": 1.0},
    "v100-heavy": {"v100": 2.0, "p100": 1.0, "k80": 1.0},
}
WORKLOADS = ("shockwave_120jobs_32gpus", "shockwave_220jobs_64gpus")
#: The generated workloads ``generated-<seed>``: the 120-job trace's size and load
#: (`vfm.cluster.generate.WorkloadSpec`).
GENERATED_JOBS, GENERATED_GPUS = 120, 32
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf", "unfair_pct", "utilization")


def make_policy(name: str, cluster: ClusterTypes, round_s: float) -> SchedulingPolicy:
    """Policy `name` of `POLICIES` on `cluster`."""
    from vfm.cluster import baselines
    from vfm.planner import Policy

    if name == "vfm":
        return Policy.shockwave(cluster, round_s)
    if name == "vfm-plain":
        return Policy(cluster, rounds=20, round_s=round_s)
    baseline = {"gavel": baselines.HeterogeneousMaxMinFairness, "static_market": baselines.HeterogeneousStaticMarket,
                "gavel-ftf": baselines.HeterogeneousFinishTimeFairness,
                "gavel-throughput": baselines.HeterogeneousMaxSumThroughput,
                "gavel-makespan": baselines.HeterogeneousMinTotalDuration}[name]
    return baseline(cluster, round_s)


#: Policy name -> factory(cluster, round_s). Gavel's other heterogeneity-aware policies (gavel-ftf,
#: gavel-throughput, gavel-makespan) run only when --policies names them (not in the default run).
POLICIES: dict[str, Callable[[ClusterTypes, float], SchedulingPolicy]] = {
    name: partial(make_policy, name)
    for name in ("vfm", "vfm-plain", "gavel", "static_market", "gavel-ftf", "gavel-throughput", "gavel-makespan")}
#: The policies run when --policies is not given.
DEFAULT_POLICIES = ("vfm", "vfm-plain", "gavel", "static_market")


def workload(name: str) -> Workload:
    """A shipped trace by name, or ``generated-<seed>``: `GENERATED` (what the typed configuration
    was chosen on)."""
    from vfm.cluster import load_workload
    from vfm.cluster.generate import WorkloadSpec, generate_workload

    if name.startswith("generated-"):
        seed = name.removeprefix("generated-")
        if not seed.isdigit():
            raise ValueError(f"workload {name!r}: the seed after 'generated-' must be a whole number")
        return generate_workload(WorkloadSpec(jobs=GENERATED_JOBS, gpus=GENERATED_GPUS), seed=int(seed), name=name)
    return load_workload(name)


def mixed(name: str, mix: str, jobs: int | None = None) -> Workload:
    """Workload `name` (its first `jobs` jobs if given) on its GPUs split by `mix`."""
    from vfm.cluster import ClusterTypes

    chosen = workload(name) if jobs is None else workload(name).head(jobs)
    return dataclasses.replace(chosen, cluster=ClusterTypes.split(chosen.gpus, MIXES[mix]))


def run_one(name: str, mix: str, policy: str, jobs: int | None = None,
            efficiency: float | None = None) -> dict[str, Any]:
    """Simulate one policy on one workload and mix (``vfm`` with `efficiency` as its kappa if given);
    the headline metrics and decision times."""
    from vfm.cluster import simulate, summarize
    from vfm.planner import Policy

    job_set = mixed(name, mix, jobs)
    assert job_set.cluster is not None
    policy_object = (Policy.shockwave(job_set.cluster, job_set.round_s, efficiency=efficiency)
                     if policy == "vfm" and efficiency is not None
                     else POLICIES[policy](job_set.cluster, job_set.round_s))
    sim = simulate(job_set, policy_object)
    summary = summarize(sim)
    times = sim.planner_s[sim.planner_busy]
    return {**{key: summary[key] for key in METRICS}, "cluster": dict(job_set.cluster),
            "decision_s": {"median": float(_median(times)), "max": float(times.max(initial=0.0))},
            "longest_wait_rounds": summary["longest_wait_rounds"], "guards": summary["guards"],
            "ftf_rho": sorted(job["ftf_rho"] for job in summary["jobs"])}


def _median(values: Any) -> float:
    import numpy as np

    return float(np.median(values)) if len(values) else float("nan")


def targets(results: dict[str, dict[str, Any]]) -> str:
    """Issue 16's targets for one workload and mix: gavel / vfm makespan and worst FTF, unfair shares."""
    if "vfm" not in results or "gavel" not in results:
        return ""
    ours, theirs = results["vfm"], results["gavel"]
    makespan = theirs["makespan_s"] / ours["makespan_s"]
    ftf = theirs["worst_ftf"] / ours["worst_ftf"]
    fair = ours["unfair_pct"] <= theirs["unfair_pct"]
    return (f"makespan {makespan:.2f}x ({'met' if makespan >= 1.2 else 'missed'}, >= 1.2x); worst FTF {ftf:.2f}x "
            f"({'met' if ftf >= 1.5 else 'missed'}, >= 1.5x); unfair {ours['unfair_pct']:.2f} vs "
            f"{theirs['unfair_pct']:.2f} % ({'met' if fair else 'missed'}, no higher)")


#: The metrics plotted: key, title, higher is better.
PLOTTED = (("makespan_s", "Makespan (s)", False), ("worst_ftf", r"Worst FTF $\rho$", False),
           ("unfair_pct", r"Unfair jobs ($\rho$ > 1.05, %)", False), ("utilization", "Utilization", True))


def plot(results: dict[str, dict[str, dict[str, Any]]], directory: Path) -> list[Path]:
    """Per workload, ``<workload>_metrics.png`` (each metric by mix and policy, as the homogeneous
    reproduction's ``metrics.png``) and ``<workload>_ftf_cdf.png`` (each policy's FTF CDF, one
    panel per mix), in `directory`; the paths written."""
    written = []
    names = dict.fromkeys(key.split("/")[0] for key in results)
    for name in names:
        mixes = [key.split("/")[1] for key in results if key.split("/")[0] == name]
        # In `POLICIES`' order whatever order the runs finished in: the same colour for a policy everywhere.
        policies = [p for p in POLICIES if any(p in results[f"{name}/{mix}"] for mix in mixes)]
        runs = [results[f"{name}/{mix}"][p] for mix in mixes for p in policies if p in results[f"{name}/{mix}"]]
        title = _plots.title_of(name, len(runs[0]["ftf_rho"]), sum(runs[0]["cluster"].values())) if runs else name
        written.append(_plot_metrics(results, name, mixes, policies, title, directory / f"{name}_metrics.png"))
        written.append(_plot_ftf(results, name, mixes, policies, title, directory / f"{name}_ftf_cdf.png"))
    return written


def _plot_metrics(results: dict[str, dict[str, dict[str, Any]]], name: str, mixes: list[str], policies: list[str],
                  title: str, path: Path) -> Path:
    """A 2 x 2 grid, one metric each: bars by mix, one per policy (vfm first and outlined)."""
    import numpy as np

    look = _plots.styles(policies)
    figure, axes, _ = _plots.grid(len(PLOTTED), columns=2)
    width = 0.8 / len(policies)
    for axis, (key, heading, higher) in zip(axes, PLOTTED, strict=True):
        for j, policy in enumerate(policies):
            values = [results[f"{name}/{mix}"].get(policy, {}).get(key, np.nan) for mix in mixes]
            axis.bar(np.arange(len(mixes)) + (j - (len(policies) - 1) / 2) * width, values, width, label=policy,
                     color=look[policy]["color"], edgecolor="black", linewidth=1.2 if policy == "vfm" else 0.3)
        axis.set_xticks(np.arange(len(mixes)), [f"{mix} mix" for mix in mixes])
        axis.set_title(heading, fontsize=10)
        axis.set_ylabel(f"{'higher' if higher else 'lower'} is better", fontsize=8)
        axis.grid(axis="y", alpha=0.3)
        axis.set_axisbelow(True)
    _plots.legend_right(axes[1], title="policy")
    figure.suptitle(f"{title} on mixed V100/P100/K80 clusters: makespan, worst FTF, unfair share, utilization",
                    fontsize=11)
    figure.tight_layout()
    return _plots.save(figure, path)


def _plot_ftf(results: dict[str, dict[str, dict[str, Any]]], name: str, mixes: list[str], policies: list[str],
              title: str, path: Path) -> Path:
    """One panel per mix: each policy's CDF of FTF rho, with the equal-share and unfairness lines."""
    import numpy as np

    look = _plots.styles(policies)
    figure, axes, _ = _plots.grid(len(mixes), columns=len(mixes), size=(_plots.PAGE[0], 4.5))
    for axis, mix in zip(axes, mixes, strict=True):
        for policy in policies:
            if policy in results[f"{name}/{mix}"]:
                rho = np.asarray(results[f"{name}/{mix}"][policy]["ftf_rho"])
                axis.step(rho, np.arange(1, rho.size + 1) / rho.size, where="post", label=policy, **look[policy])
        _plots.fairness_lines(axis)
        axis.set_title(f"{mix} mix", fontsize=10)
        axis.set_xlabel(r"FTF $\rho$ (JCT ÷ time on a proportional slice)")
        axis.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of jobs")
    _plots.legend_right(axes[-1])
    figure.suptitle(f"{title} on mixed clusters: finish-time fairness of every job (further left is fairer)",
                    fontsize=11)
    figure.tight_layout()
    return _plots.save(figure, path)


HEADER = (f"{'workload':<26} {'mix':<11} {'policy':<13} {'makespan':>9} {'JCT':>8} {'FTF':>6} {'unfair%':>7} "
          f"{'util':>6} {'decide s':>8} {'max':>7} {'wait':>5}  guards (max_wait/continuity/credit_floor)")


def format_row(name: str, mix: str, policy: str, r: dict[str, Any]) -> str:
    from vfm.planner.shockwave import GUARDS

    return (f"{name:<26} {mix:<11} {policy:<13} {r['makespan_s']:>9.0f} {r['avg_jct_s']:>8.0f} {r['worst_ftf']:>6.3f} "
            f"{r['unfair_pct']:>7.2f} {r['utilization']:>6.3f} {r['decision_s']['median']:>8.3f} "
            f"{r['decision_s']['max']:>7.2f} {r['longest_wait_rounds']:>5d}  "
            + ("/".join(str(r["guards"].get(g, 0)) for g in GUARDS) if r["guards"] else "-"))


def build_parser() -> Parser:
    parser = Parser("benchmarks.heterogeneous", __doc__)
    parser.add_argument("--workloads", default=",".join(WORKLOADS),
                        help="comma-separated shipped trace names or generated-<seed>")
    parser.add_argument("--mixes", default=",".join(MIXES), check=choice_list(tuple(MIXES), "mix"),
                        help=f"comma-separated of {', '.join(MIXES)}")
    parser.add_argument("--policies", default=",".join(DEFAULT_POLICIES), check=choice_list(tuple(POLICIES), "policy"),
                        help=f"comma-separated of {', '.join(POLICIES)} (default {','.join(DEFAULT_POLICIES)})")
    parser.add_argument("--workers", check=whole(1, MAX_WORKERS), default=2, help="parallel simulations (default 2)")
    parser.add_argument("--jobs", check=whole(1, MAX_JOBS),
                        help="simulate only each workload's first JOBS jobs (a slice)")
    parser.add_argument("--efficiency", check=number(0),
                        help="kappa of the vfm policy (default: Policy.shockwave's)")
    parser.add_argument("--out", check=OUTPUT_FOLDER, default=RESULTS / "heterogeneous",
                        help="folder for the table, results.json and the plots (default results/heterogeneous)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        names = [n.strip() for n in args.workloads.split(",") if n.strip()]
        mixes, policies = args.mixes, args.policies
        for name in names:
            mixed(name, mixes[0], args.jobs)  # a bad name fails here, before any simulation
        args.out.mkdir(parents=True, exist_ok=True)
        results: dict[str, dict[str, dict[str, Any]]] = {f"{n}/{m}": {} for n in names for m in mixes}
        print(HEADER, flush=True)
        with ExitStack() as stack:
            executor = make_executor("process", args.workers, stack)
            tasks = {executor.submit(run_one, name, mix, policy, args.jobs, args.efficiency): (name, mix, policy)
                     for name in names for mix in mixes for policy in policies}
            for task in futures.as_completed(tasks):
                name, mix, policy = tasks[task]
                results[f"{name}/{mix}"][policy] = task.result()
                print(format_row(name, mix, policy, results[f"{name}/{mix}"][policy]), flush=True)
                (args.out / "results.json").write_text(json.dumps(
                    {"jobs": args.jobs, "efficiency": args.efficiency, "results": results}, indent=1))
        lines = [HEADER]
        for name in names:
            for mix in mixes:
                done = results[f"{name}/{mix}"]
                lines += [format_row(name, mix, p, done[p]) for p in policies]
                if verdict := targets(done):
                    lines.append(f"  {name} {mix}: {verdict}")
        (args.out / "table.txt").write_text(parser.header() + "\n".join(lines) + "\n")
        print("\n".join(lines[1:]))
        written = plot(results, args.out)
        print(f"wrote {args.out}/: table.txt, results.json, {', '.join(path.name for path in written)}")


if __name__ == "__main__":
    main()
