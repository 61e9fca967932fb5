"""Warm-started against cold re-plans of consecutive job windows (schur-ipm).

A scheduler re-plans every round; the window moves by one round and the jobs progress. This
replays that on a Shockwave workload with every job present (`vfm.cluster.windows.fresh_window`'s jobs),
forecasts that drift from round to round (a seeded random walk around the prior mean, so the
windows differ as they would under volatile throughput), and the job progress of the previous
plan's first round. Each re-plan is solved cold and warm-started from the previous solution
shifted by one round (`vfm.jobs.shift_rounds`). Run from the repository root::

    python -m benchmarks.warm_start [--workload shockwave_900jobs_256gpus] [--replans 8]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from benchmarks._cli import Parser, seed, whole


def build_parser() -> Parser:
    parser = Parser("benchmarks.warm_start", __doc__)
    parser.add_argument("--workload", default="shockwave_900jobs_256gpus",
                        help="a workload JSON file, or a shipped one's name (default shockwave_900jobs_256gpus)")
    parser.add_argument("--replans", check=whole(1, 1000), default=8, help="warm-started re-plans (default 8)")
    parser.add_argument("--rounds", check=whole(1, 1000), default=20, help="rounds in each window (default 20)")
    parser.add_argument("--seed", check=seed(), default=0, help="seed of the forecast drift (default 0)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    import numpy as np  # the library loads once the arguments are checked

    import vfm
    from vfm.cluster.windows import prior_mean_epoch_s
    from vfm.cluster.workload import load_workload
    from vfm.jobs import shift_rounds, window_market

    with parser.reporting():
        workload = load_workload(args.workload)
        jobs = workload.jobs
        rounds = args.rounds
        rng = np.random.default_rng(args.seed)
        mean_rate = np.array([workload.round_s / prior_mean_epoch_s(job) for job in jobs])
        drift = np.exp(0.03 * rng.standard_normal((len(jobs), rounds + args.replans)).cumsum(axis=1))
        rate = mean_rate[:, None] * drift
        epochs = np.array([job.epochs for job in jobs], dtype=float)
        gpus = np.array([job.gpus for job in jobs], dtype=float)
        done = np.zeros(len(jobs))

        rows = []
        previous = None
        for replan in range(args.replans + 1):
            window = window_market(gpus, epochs, done, rate[:, replan : replan + rounds], workload.gpus)
            started = time.perf_counter()
            cold = vfm.solve(window.market, "schur-ipm")
            cold_s = time.perf_counter() - started
            if previous is not None:
                started = time.perf_counter()
                warm = vfm.solve(window.market, "schur-ipm", warm_start=shift_rounds(previous))
                warm_s = time.perf_counter() - started
                rows.append((cold.iterations, warm.iterations, cold_s, warm_s, cold.relative_gap, warm.relative_gap,
                             warm.success))
            previous = cold
            # The first planned round runs; progress is capped just short of completion.
            progress = window.schedule(cold)[:, 0] * rate[:, replan]
            done = np.minimum(done + np.clip(progress, 0.0, None), epochs * (1 - 1e-9))

        print(f"{args.workload}: {len(jobs)} jobs, {workload.gpus} GPUs, {rounds} rounds, {len(rows)} re-plans")
        print(f"{'re-plan':>7} {'cold it':>8} {'warm it':>8} {'cold s':>8} {'warm s':>8} {'cold gap':>9} "
              f"{'warm gap':>9}")
        for k, (ci, wi, cs, ws, cg, wg, _) in enumerate(rows, start=1):
            print(f"{k:>7} {ci:>8} {wi:>8} {cs:>8.3f} {ws:>8.3f} {cg:>9.1e} {wg:>9.1e}")
        cold_it, warm_it = (statistics.median(r[i] for r in rows) for i in (0, 1))
        cold_s, warm_s = (statistics.median(r[i] for r in rows) for i in (2, 3))
        print(f"median: cold {cold_it:.0f} iterations / {cold_s * 1e3:.1f} ms, warm {warm_it:.0f} iterations / "
              f"{warm_s * 1e3:.1f} ms (warm/cold time {warm_s / cold_s:.2f}); "
              f"all warm solves certified: {all(r[6] for r in rows)}")


if __name__ == "__main__":
    main()
