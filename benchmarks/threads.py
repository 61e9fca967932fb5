"""Threads benchmark: the synthetic 10,000-job window's re-plan on several kernel threads.

Run from the repository root::

    python -m benchmarks.threads [--threads 1 2] [--runs 5] [--jobs 10000 --gpus 2560] [--out FILE]

The table goes to ``results/threads/table.txt`` under the current folder unless ``--out`` names
another file (the committed tables: ``--out benchmarks/results/threads/<name>.txt``).

What is measured
    The wall time of one `vfm.planner.plan` call on the synthetic window of `benchmarks.plan`
    (the busiest 900-job window tiled to ``--jobs`` jobs on ``--gpus`` GPUs, by default 10,000
    on 2,560; 100,000 on 25,600 for the largest target), the reproduction's Shockwave
    configuration, S = 1), with its kernels over jobs on each number of threads of ``--threads``
    (`vfm.planner._kernels.kernel_threads`; BLAS on one thread, as every re-plan). One untimed
    warm-up per thread count (it compiles the parallel kernels on a machine's first run), then
    ``--runs`` rounds, each timing every thread count once in turn, so that a change in the
    machine's load falls on all of them alike. Reported: the median per thread count, the
    median of the solve alone (``Plan.timings["solve"]``) and the speed-up of each median over the
    first thread count's. The plans are the same bit for bit on every thread count; the benchmark
    checks it on the relaxed schedules and prices.

Targets
    At least 1.8 times faster on 2 threads than on 1 on a quiet machine of 2 cores or more, and
    at most 300 ms with 16 cores at 10,000 jobs, 2 s at 100,000 (`TARGET_SPEEDUP`,
    `TARGET_SECONDS`). The threads a machine gives
    are at most its CPUs (Numba's ``NUMBA_NUM_THREADS``): a count above them runs on all of them,
    and the table says how many ran. The machine's load average is printed at start and end.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks._cli import OUTPUT_FILE_MADE, RESULTS, Parser, whole

#: The speed-up from 1 to 2 threads, and the seconds with 16 by window size (jobs), aimed at.
TARGET_SPEEDUP, TARGET_SECONDS = 1.8, {10_000: 0.300, 100_000: 2.0}
RUNS = 5
#: The table's file by default (`benchmarks._cli.RESULTS`).
OUT = RESULTS / "threads" / "table.txt"


def time_threads(counts: Sequence[int], runs: int = RUNS, jobs: int = 10_000,
                 gpus_total: int = 2_560) -> list[dict[str, Any]]:
    """Per thread count: the threads in effect, the re-plans' and solves' seconds (`runs` rounds, the
    thread counts in turn within each), on the window of `jobs` jobs and `gpus_total` GPUs."""
    import numpy as np

    from benchmarks.plan import shockwave_options, tiled_window
    from vfm.blas_threads import one_blas_thread
    from vfm.planner._kernels import kernel_threads
    from vfm.planner.plan import plan

    states, gpus, capacity = tiled_window(jobs, gpus_total)
    options = shockwave_options(states, capacity)
    rows: list[dict[str, Any]] = []
    first = None
    for count in counts:  # warm-up, untimed: compiles the parallel kernels on a machine's first run
        with one_blas_thread(), kernel_threads(count) as used:
            result = plan(states, gpus, capacity, seed=0, **options)
        if first is None:
            first = result
        elif not (np.array_equal(first.relaxed, result.relaxed) and np.array_equal(first.prices, result.prices)):
            raise AssertionError(f"the plan on {count} threads differs from the plan on {counts[0]}")
        rows.append({"threads": count, "used": used, "times_s": [], "solve_s": []})
    for _ in range(runs):
        for row in rows:
            with one_blas_thread(), kernel_threads(row["threads"]):
                started = time.perf_counter()
                result = plan(states, gpus, capacity, seed=0, **options)
                row["times_s"].append(time.perf_counter() - started)
            row["solve_s"].append(result.timings["solve"])
    for row in rows:
        row["median_s"] = statistics.median(row["times_s"])
        row["solve_median_s"] = statistics.median(row["solve_s"])
        row["speedup"] = rows[0]["median_s"] / row["median_s"]
        row["solve_speedup"] = rows[0]["solve_median_s"] / row["solve_median_s"]
    return rows


def table(rows: Sequence[dict[str, Any]], jobs: int) -> str:
    """One line per thread count, times in milliseconds, and the targets."""
    lines = [f"{'threads':>8}{'used':>6}{'median ms':>11}{'min ms':>9}{'max ms':>9}{'solve ms':>10}"
          f"{'speed-up':>10}{'solve x':>9}"]
    for row in rows:
        times = row["times_s"]
        lines.append(f"{row['threads']:>8}{row['used']:>6}{row['median_s'] * 1e3:>11.1f}{min(times) * 1e3:>9.1f}"
              f"{max(times) * 1e3:>9.1f}{row['solve_median_s'] * 1e3:>10.1f}{row['speedup']:>10.2f}"
              f"{row['solve_speedup']:>9.2f}")
    by_used = {row["used"]: row for row in rows}
    if 1 in by_used and 2 in by_used:
        ratio = by_used[1]["median_s"] / by_used[2]["median_s"]
        lines.append(f"1 -> 2 threads: {ratio:.2f}x (target >= {TARGET_SPEEDUP}x on a quiet machine)")
    if 16 in by_used and jobs in TARGET_SECONDS:
        seconds = by_used[16]["median_s"]
        lines.append(f"16 threads: {seconds * 1e3:.1f} ms (target <= {TARGET_SECONDS[jobs] * 1e3:.0f} ms)")
    return "\n".join(lines) + "\n"


def threading_layer() -> str:
    """The threading layer Numba started, or "none" (no parallel call ran)."""
    import numba

    try:
        return str(numba.threading_layer())
    except ValueError:
        return "none"


def build_parser() -> Parser:
    parser = Parser("benchmarks.threads", __doc__)
    parser.add_argument("--threads", check=whole(1, 1024), nargs="+", default=[1, 2],
                        help="kernel thread counts to time, the first the reference (default: 1 2)")
    parser.add_argument("--runs", check=whole(1, 1000), default=RUNS, help=f"timed rounds (default {RUNS})")
    parser.add_argument("--jobs", check=whole(1, 1_000_000), default=10_000, help="jobs in the window (default 10000)")
    parser.add_argument("--gpus", check=whole(1, 1_000_000), default=2_560, help="GPUs of the window (default 2560)")
    parser.add_argument("--out", default=OUT, check=OUTPUT_FILE_MADE, help=f"the table's file (default {OUT})")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        load = [round(x, 2) for x in os.getloadavg()]
        print(f"{args.runs} rounds over threads {args.threads} on {os.cpu_count()} CPUs; load average {load}",
              flush=True)
        rows = time_threads(args.threads, args.runs, args.jobs, args.gpus)
        end = [round(x, 2) for x in os.getloadavg()]
        text = (parser.header() + f"# {args.jobs} jobs on {args.gpus} GPUs, {args.runs} rounds; "
                f"load average (1, 5, 15 min) at start {load}, at end {end}; Numba threading layer: "
                f"{threading_layer()}\n" + table(rows, args.jobs))
        parser.publish(text, Path(args.out))


if __name__ == "__main__":
    main()
