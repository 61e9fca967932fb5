"""Wide plain markets: the smoothed dual (NumPy, and JAX where installed) against schur-ipm.

Generated static markets (n buyers x m goods, linear utilities uniform in [0, 1), about half set
to 0, budgets uniform in [1, 2); seed 0 unless ``--seed``). For each shape and backend:

- ``seconds``: the median wall time of ``vfm.solve(market, backend)`` over the repeats, the
  polish to the exact equilibrium included;
- ``outcome``: ``exact`` where the polish verified the exact equilibrium, else the status;
- ``alone``: the backend without the polish (``polish=False``, one run): its seconds, the
  backend's own share of them (``backend s``: the rest builds the program and certifies the
  answer), and the relative duality gap of its point (`vfm.duality`, budgets summing to 1).

schur-ipm runs only up to ``--ipm-max-pairs`` buyer x good pairs. The JAX backend runs on JAX's
default device (a GPU where JAX has one); its first solve of a shape compiles, so it gets one
unmeasured solve first.

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.wide_market --shapes 1000x400 10000x400 \\
        --out benchmarks/results/wide_market/table.txt
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks._cli import OUTPUT_FILE_MADE, RESULTS, Check, Parser, seed, whole

if TYPE_CHECKING:
    import vfm

#: The most buyers and goods of a shape (the committed tables go to 100000x400).
MAX_BUYERS, MAX_GOODS = 10_000_000, 100_000
SHAPE = Check(f"shapes written NxM (e.g. 1000x400), N from 1 to {MAX_BUYERS}, M from 1 to {MAX_GOODS}",
              lambda text: tuple(int(v) for v in text.lower().split("x")),
              lambda shape: len(shape) == 2 and 1 <= shape[0] <= MAX_BUYERS and 1 <= shape[1] <= MAX_GOODS)
BACKENDS = ("smoothed-dual", "jax-smoothed-dual", "schur-ipm")
BACKEND = Check(f"backends among {', '.join(BACKENDS)}", str, lambda name: name in BACKENDS)
#: The table's file by default (`benchmarks._cli.RESULTS`).
OUT = RESULTS / "wide_market" / "table.txt"


def generated(n: int, m: int, seed: int = 0) -> vfm.VolatileFisherMarket:
    """The benchmark's market of `n` buyers and `m` goods (module docstring)."""
    import numpy as np

    import vfm

    rng = np.random.default_rng(seed)
    utilities = rng.random((n, m))
    utilities[rng.random((n, m)) < 0.5] = 0.0
    return vfm.VolatileFisherMarket.static(utilities, rng.uniform(1.0, 2.0, n))


def row(market: vfm.VolatileFisherMarket, solver: str, repeats: int) -> list[str]:
    """One table row's cells after the shape (module docstring)."""
    import vfm
    from vfm.duality import duality_gap

    if solver.startswith("jax"):
        vfm.solve(market, solver)  # compiles for this shape
    seconds, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = vfm.solve(market, solver)
        seconds.append(time.perf_counter() - started)
    assert result is not None
    outcome = "exact" if "polished to the exact equilibrium" in result.message else str(result.status)
    started = time.perf_counter()
    alone = vfm.solve(market, solver, polish=False)
    alone_s = time.perf_counter() - started
    gap = duality_gap(market, alone.allocation, alone.prices).total / market.budgets.sum()
    return [solver, f"{statistics.median(seconds):.2f}", outcome, f"{alone_s:.2f}", f"{alone.solve_time:.2f}",
            f"{gap:.1e}"]


def rows(shapes: Sequence[tuple[int, int]], solvers: Sequence[str], repeats: int, seed: int,
         ipm_max_pairs: int) -> list[list[str]]:
    import vfm

    table = []
    installed = vfm.available_solvers()
    for n, m in shapes:
        market = generated(n, m, seed)
        for solver in solvers:
            if solver not in installed:
                table.append([f"{n}x{m}", solver, "-", "not installed", "-", "-", "-"])
            elif solver == "schur-ipm" and n * m > ipm_max_pairs:
                table.append([f"{n}x{m}", solver, "-", f"skipped: n*m > --ipm-max-pairs {ipm_max_pairs}",
                              "-", "-", "-"])
            else:
                table.append([f"{n}x{m}", *row(market, solver, repeats)])
            print("  ".join(table[-1]), flush=True)
    return table


def device() -> str:
    """JAX's default device, where JAX is installed."""
    try:
        import jax
    except ImportError:
        return "JAX not installed"
    return f"JAX {jax.__version__} on {jax.devices()[0].device_kind}"


def build_parser() -> Parser:
    parser = Parser("benchmarks.wide_market", __doc__)
    parser.add_argument("--shapes", nargs="+", default=["1000x400", "10000x400"], check=SHAPE,
                        help="market shapes, buyers x goods (default 1000x400 10000x400)")
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), check=BACKEND,
                        help=f"backends to time (default all: {' '.join(BACKENDS)})")
    parser.add_argument("--repeats", default="3", check=whole(1, 1000), help="solves per cell (median reported)")
    parser.add_argument("--seed", default="0", check=seed(), help="seed of the generated markets")
    parser.add_argument("--ipm-max-pairs", default="1000000", check=whole(1, MAX_BUYERS * MAX_GOODS),
                        help="run schur-ipm only on markets with at most this many buyer x good pairs")
    parser.add_argument("--out", default=OUT, check=OUTPUT_FILE_MADE, help=f"the table's file (default {OUT})")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        table = rows(args.shapes, args.backends, args.repeats, args.seed, args.ipm_max_pairs)
        heads = ["shape", "backend", "seconds", "outcome", "alone s", "backend s", "alone gap"]
        widths = [max(len(str(r[k])) for r in [heads, *table]) for k in range(len(heads))]
        lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip()
                 for r in [heads, *table]]
        text = parser.header() + f"# {device()}\n" + "\n".join(lines) + "\n"
        parser.publish(text, Path(args.out))


if __name__ == "__main__":
    main()
