"""Demo: the 900-job / 256-GPU Shockwave workload as one 20-round market, solved and certified.

Run from the repository root::

    python -m benchmarks.demo [--workload shockwave_900jobs_256gpus] [--rounds 20] [--repeats 3]
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence

from benchmarks._cli import Parser, whole


def build_parser() -> Parser:
    parser = Parser("benchmarks.demo", __doc__)
    parser.add_argument("--workload", default="shockwave_900jobs_256gpus",
                        help="a workload JSON file, or a shipped one's name (default shockwave_900jobs_256gpus)")
    parser.add_argument("--rounds", check=whole(1, 1000), default=20, help="rounds in the market (default 20)")
    parser.add_argument("--repeats", check=whole(1, 1000), default=3,
                        help="solves to time (median is printed; default 3)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    import numpy as np  # the library loads once the arguments are checked

    import vfm
    from vfm.cluster.windows import fresh_window
    from vfm.cluster.workload import load_workload

    with parser.reporting():
        workload = load_workload(args.workload)
        window = fresh_window(workload, args.rounds)
        market = window.market
        print(f"workload {workload.name}: {market!r}, {workload.gpus} GPUs, rounds of {workload.round_s} s")
        print(f"installed solvers: {', '.join(vfm.available_solvers())}")

        times = []
        for _ in range(args.repeats):
            started = time.perf_counter()
            result = vfm.solve(market)
            times.append(time.perf_counter() - started)
        result.raise_for_status()
        print(f"\nvfm.solve ({result.solver}): median {statistics.median(times):.3f} s over {args.repeats} runs "
              f"(min {min(times):.3f}, max {max(times):.3f}); {result.iterations} iterations; status {result.status}")
        print(f"NSWOT {result.objective:.6f}, relative duality gap {result.relative_gap:.2e}")

        y = window.schedule(result)
        print(f"planned GPU-rounds: {float((window.gpus[:, None] * y).sum()):.1f} of {workload.gpus * args.rounds}; "
              f"jobs that run at all: {int((y.sum(axis=1) > 1e-6).sum())} of {y.shape[0]}")
        print(f"round prices (first 5): {np.round(result.prices[0, :5], 6)}")

        print("\nKKT certificate (residual, tolerance from the solver's accuracy):")
        print(vfm.check.kkt(result))
        print(vfm.check.pareto_optimality(result))

        baseline = vfm.solve_per_period(market)
        slack = vfm.check.objective_tolerance(result) * float(market.budgets.sum())
        print(f"\nper-period baseline: NSWOT {baseline.objective:.6f}; joint minus per-period "
              f"{result.objective - baseline.objective:.3e} (never below -{slack:.1e}, the certificate's tolerance).")
        print("With forecasts that are the same in every round there is nothing to gain from planning over time;")
        print("tests/test_check.py shows a volatile market where the per-period solution is Pareto-dominated.")


if __name__ == "__main__":
    main()
