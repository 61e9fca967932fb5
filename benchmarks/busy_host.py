"""A window solve on a busy host, with the caller's default environment.

::

    python -m benchmarks.busy_host [--workload shockwave_900jobs_256gpus] [--runs 7] [--busy N] [--out DIR]

A scheduler's host is rarely idle, and its operators rarely set ``OPENBLAS_NUM_THREADS``. This
solves the busiest 20-round window of `--workload` (`vfm.cluster.windows.busiest_window`, 874 jobs
for the 900-job trace) with `vfm.solve`, `--runs` times on the quiet machine and `--runs` times
while `--busy` other processes spin on the cores (default: one per core), and prints the median
seconds of each and their ratio. Each is measured twice in the same run: as the library runs
(its work on one BLAS thread, `vfm.blas_threads`) and with that control switched off (the BLAS
library's own default threads), to show what the control buys. Run it with the environment
you want to measure: do not set ``OPENBLAS_NUM_THREADS`` for the default case.

Writes ``table.txt`` under `--out` (default ``results/busy_host`` under the current folder; the
committed one with ``--out benchmarks/results/busy_host``), headed by the command, the machine
and the date.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Parser, whole

if TYPE_CHECKING:
    from vfm.market import VolatileFisherMarket

#: The results folder by default (`benchmarks._cli.RESULTS`).
OUT = RESULTS / "busy_host"


def _spin(stop: Any) -> None:
    """Keep one core busy until `stop` is set (pure Python: no BLAS of its own)."""
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


@contextlib.contextmanager
def busy(processes: int) -> Iterator[None]:
    """`processes` other processes spinning while the block runs."""
    stop = multiprocessing.Event()
    workers = [multiprocessing.Process(target=_spin, args=(stop,), daemon=True) for _ in range(processes)]
    for worker in workers:
        worker.start()
    time.sleep(0.5)  # let them be scheduled before the first timing
    try:
        yield
    finally:
        stop.set()
        for worker in workers:
            worker.join()


@contextlib.contextmanager
def without_blas_control() -> Iterator[None]:
    """The library's BLAS control switched off, for the comparison only."""
    from vfm.nswot import entry as nswot

    real = nswot.one_blas_thread
    nswot.one_blas_thread = contextlib.nullcontext  # type: ignore[assignment]
    try:
        yield
    finally:
        nswot.one_blas_thread = real


def median_s(solve: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        solve()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(market: VolatileFisherMarket, runs: int, processes: int) -> dict[str, float]:
    """Median seconds of `vfm.solve(market)`: quiet and busy, with and without the control."""
    import vfm

    def solve() -> object:
        return vfm.solve(market)

    solve()  # first-call costs (compilation, imports) out of the timings
    out = {"quiet": median_s(solve, runs)}
    with without_blas_control():
        out["quiet, BLAS default"] = median_s(solve, runs)
    with busy(processes):
        out["busy"] = median_s(solve, runs)
        with without_blas_control():
            out["busy, BLAS default"] = median_s(solve, runs)
    return out


def build_parser() -> Parser:
    parser = Parser("benchmarks.busy_host", __doc__)
    parser.add_argument("--workload", default="shockwave_900jobs_256gpus", help="workload whose busiest window "
                        "is solved (default shockwave_900jobs_256gpus)")
    parser.add_argument("--runs", check=whole(1, 1000), default=7, help="timed solves per case (default 7)")
    parser.add_argument("--busy", check=whole(1, 1024), default=os.cpu_count() or 1,
                        help="processes spinning during the busy timings (default: one per core)")
    parser.add_argument("--out", check=OUTPUT_FOLDER, default=OUT, help=f"folder for table.txt (default {OUT})")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    from vfm import blas_threads  # the library loads once the arguments are checked
    from vfm.cluster.windows import busiest_window
    from vfm.cluster.workload import load_workload

    with parser.reporting():
        window = busiest_window(load_workload(args.workload)).window
        times = measure(window.market, args.runs, args.busy)
    market = window.market
    lines = [parser.header().rstrip("\n"), f"window: {market.n_buyers} jobs x {market.n_periods} rounds of "
             f"{args.workload}; BLAS threads by default here: {blas_threads.blas_threads()}; "
             f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', '(unset)')}; busy processes: {args.busy}",
             f"{'case':22s} {'median s':>9s}"]
    lines += [f"{case:22s} {seconds:9.3f}" for case, seconds in times.items()]
    lines += [f"busy / quiet, as the library runs:   {times['busy'] / times['quiet']:.2f}",
              f"busy / quiet, BLAS default threads:  {times['busy, BLAS default'] / times['quiet, BLAS default']:.2f}",
              f"busy: BLAS default / library:        {times['busy, BLAS default'] / times['busy']:.2f}"]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "table.txt").write_text(text)


if __name__ == "__main__":
    main()
