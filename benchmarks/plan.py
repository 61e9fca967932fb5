"""Full re-plans of the planner: forecast + S scenarios + exact relaxation + rounding.

At the busiest moment of each Shockwave workload (see benchmarks/workloads.py), the job states are
the epochs each active job would have finished with an equal share, with the batch sizes of its
phase profile as the observed regimes. One untimed call, then `--runs` timed calls of
`vfm.planner.plan` (default solver) per size and S; prints medians and writes
`benchmarks/results/plan.json`, a list of rows with jobs, gpus, scenarios, median_s, max_s and
rounding_gap (median over runs).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.workloads import busiest_moment, epochs_after, job_table, load
from vfm.forecast import JobStates
from vfm.planner import plan

OUT = Path(__file__).resolve().parent / "results"
SIZES = {120: "shockwave_120jobs_32gpus", 460: "shockwave_460jobs_128gpus", 900: "shockwave_900jobs_256gpus"}
TARGETS_900 = {16: 0.250, 1: 0.060}


def busiest_states(name: str) -> tuple[JobStates, np.ndarray, int]:
    """Job states, gang sizes and capacity at the busiest moment of workload `name`."""
    workload = load(name)
    table = job_table(workload)
    _, active, elapsed = busiest_moment(table)
    jobs = [workload["jobs"][i] for i in np.flatnonzero(active)]
    done = np.floor(epochs_after(table, elapsed[:, None])[:, 0] + 1e-9)[active]
    done = np.clip(done, 0, table.epochs[active] - 1).astype(int)
    observed = [[phase["batch_size"] for phase in job["phases"] for _ in range(phase["epochs"])][:d]
                for job, d in zip(jobs, done, strict=True)]
    states = JobStates.from_lists(
        [job["epochs"] for job in jobs],
        [{phase["batch_size"]: phase["epoch_s"] for phase in job["phases"]} for job in jobs],
        observed,
        job_ids=[job["id"] for job in jobs],
    )
    return states, np.array([job["gpus"] for job in jobs]), int(workload["gpus"])


def run(sizes: Sequence[int] = tuple(SIZES), scenarios: Sequence[int] = (16, 1), runs: int = 5,
        out: Path | None = OUT) -> list[dict[str, Any]]:
    rows = []
    for size in sizes:
        states, gpus, capacity = busiest_states(SIZES[size])
        for count in scenarios:
            plan(states, gpus, capacity, scenarios=count, seed=0)  # warm-up, untimed
            seconds, gaps, statuses, solver = [], [], set(), ""
            for index in range(runs):
                started = time.perf_counter()
                result = plan(states, gpus, capacity, scenarios=count, seed=index + 1)
                seconds.append(time.perf_counter() - started)
                gaps.append(result.rounding_gap)
                statuses.add(result.status.value)
                solver = result.solver
            row = {"workload": SIZES[size], "jobs": states.n_jobs, "gpus": capacity, "scenarios": count,
                   "median_s": float(np.median(seconds)), "min_s": float(min(seconds)), "max_s": float(max(seconds)),
                   "rounding_gap": float(np.median(gaps)), "rounding_gap_max": float(max(gaps)),
                   "solver": solver, "statuses": sorted(statuses), "runs": runs}
            rows.append(row)
            print(f"{row['jobs']:5d} jobs {capacity:4d} GPUs  S={count:2d}  median {1e3 * row['median_s']:8.1f} ms  "
                  f"(min {1e3 * row['min_s']:.1f}, max {1e3 * row['max_s']:.1f})  rounding gap "
                  f"{row['rounding_gap']:.4f} (max {row['rounding_gap_max']:.4f})  {solver} {row['statuses']}")
    for row in rows:
        if row["gpus"] == 256 and row["scenarios"] in TARGETS_900:
            target = TARGETS_900[row["scenarios"]]
            verdict = "met" if row["median_s"] <= target else f"missed by {row['median_s'] / target:.1f}x"
            print(f"target 900/256 S={row['scenarios']}: median <= {1e3 * target:.0f} ms: {verdict}; "
                  f"rounding gap <= 0.01: {'met' if row['rounding_gap'] <= 0.01 else 'missed'}")
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        with open(out / "plan.json", "w") as handle:
            json.dump(rows, handle, indent=1, allow_nan=False)
            handle.write("\n")
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="120,460,900", help="comma-separated subset of 120,460,900")
    parser.add_argument("--runs", type=int, default=5, help="timed re-plans per size and S (median, min, max)")
    parser.add_argument("--out", type=Path, default=OUT, help="directory for plan.json")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not sizes or set(sizes) - set(SIZES) or args.runs < 1:
        parser.error("--sizes must be a non-empty subset of 120,460,900 and --runs >= 1")
    run(sizes, runs=args.runs, out=args.out)


if __name__ == "__main__":
    main()
