"""Re-plan speed: the window programs a reproduction's vfm policy solves, solved and polished again.

Run from the repository root, with one BLAS thread::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.replan_speed [--workload shockwave_900jobs_256gpus] \
        [--every 10] [--repeats 3] [--threads 1] [--programs FILE] [--digests FILE] [--against FILE] \
        [--out [FILE]]

Programs
    The first run simulates the reproduction's vfm policy on ``--workload``
    (`benchmarks.reproduce.run_policy`) and keeps every ``--every``-th program its re-plans hand
    the ``saa-ipm`` backend, with the tolerance and warm start it was given, in a pickle
    (``--programs``, default under the system's temporary folder): later runs, and runs of other
    versions of the library, time the same programs without simulating again.

What is measured
    For each program, ``--repeats`` times (the fastest kept): `solve_saa_ipm` at its tolerance and
    warm start, then `vfm.planner.solve.polish.polish` of its answer, as `vfm.planner.plan` does
    (wall time, `time.perf_counter`). Reported over the programs: the median and the largest
    total (solve plus polish), interior-point time, iterations, time per iteration, polish time
    and polish Newton steps; the slowest programs by total with their jobs and statuses.

Same answers
    A digest (SHA-256) of every program's answer, bit for bit: the interior point's schedule,
    prices and row multipliers, and the polished schedule and multipliers. Printed as one digest
    over all programs, and with ``--digests`` written per program (JSON), to compare two versions
    or thread counts: ``--against`` reads such a file and says on how many programs the answers are
    the same bit for bit, naming those that differ.

Output
    The table with the machine and the command, printed and, with ``--out``, written to
    ``results/replan_speed/replan_speed.txt`` under the current folder (or the file given).
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import re
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._cli import OUTPUT_FILE_MADE, Check, Parser, whole

if TYPE_CHECKING:
    from vfm._validation import FloatArray
    from vfm.planner import PlanningProgram
    from vfm.solvers.base import Solution

WORKLOAD = "shockwave_900jobs_256gpus"
#: How many of the slowest programs the table details.
SLOWEST = 5
#: A file to read (``--against``).
INPUT_FILE = Check("an existing file", Path, lambda path: path.is_file())


@dataclass(frozen=True)
class Captured:
    """One program a re-plan handed the interior point, with what it was asked."""

    replan: int  # the backend call's index in the run (a re-plan solving twice calls it twice)
    program: PlanningProgram
    tol: float
    warm_start: FloatArray | None


@dataclass(frozen=True)
class Timed:
    """One program solved and polished: the fastest of the repeats."""

    captured: Captured
    solve_s: float
    polish_s: float
    iterations: int
    polish_steps: int
    status: str
    digest: str

    @property
    def total_s(self) -> float:
        return self.solve_s + self.polish_s


def default_programs(workload: str, every: int) -> Path:
    """Where the captured programs of `workload` are kept by default."""
    return Path(tempfile.gettempdir()) / "vfm-replan-programs" / f"{Path(workload).stem}-every{every}.pkl"


def capture(workload: str, every: int) -> list[Captured]:
    """Every `every`-th program the reproduction's vfm policy hands ``saa-ipm`` on `workload`."""
    from unittest import mock

    from benchmarks.reproduce import run_policy
    from vfm.planner.solve import backends

    captured: list[Captured] = []
    solve = backends.solve_saa_ipm
    calls = 0

    def recording(program: PlanningProgram, **options: Any) -> Solution:
        nonlocal calls
        if calls % every == 0:
            captured.append(Captured(calls, program, float(options["tol"]), options.get("warm_start")))
        calls += 1
        return solve(program, **options)

    with mock.patch.object(backends, "solve_saa_ipm", recording):
        run_policy(workload, "vfm")
    return captured


def load_programs(path: Path, workload: str, every: int) -> list[Captured]:
    """The programs in `path`, captured there first if it does not exist."""
    if path.exists():
        with open(path, "rb") as file:
            programs: list[Captured] = pickle.load(file)
        return programs
    programs = capture(workload, every)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as file:
        pickle.dump(programs, file)
    return programs


def digest(*arrays: Any) -> str:
    """SHA-256 of `arrays` (None as a marker), bit for bit."""
    import numpy as np

    hasher = hashlib.sha256()
    for array in arrays:
        hasher.update(b"none" if array is None else np.ascontiguousarray(array, dtype=np.float64).tobytes())
    return hasher.hexdigest()


def time_one(captured: Captured, repeats: int, threads: int) -> Timed:
    """`captured` solved and polished `repeats` times: the fastest solve and polish."""
    from vfm.planner.solve.ipm import solve_saa_ipm
    from vfm.planner.solve.polish import polish

    best_solve = best_polish = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        solution = solve_saa_ipm(captured.program, tol=captured.tol, warm_start=captured.warm_start, threads=threads)
        solved = time.perf_counter()
        polished = polish(captured.program, solution)
        best_solve, best_polish = min(best_solve, solved - started), min(best_polish, time.perf_counter() - solved)
    steps = re.search(r"polished to residual \S+ in (\d+) Newton steps", polished.message)
    return Timed(captured, best_solve, best_polish, solution.iterations, int(steps.group(1)) if steps else -1,
                 solution.status.name,
                 digest(solution.x, solution.prices, solution.ftf_multipliers, solution.efficiency_multipliers,
                        polished.x, polished.prices, polished.ftf_multipliers, polished.efficiency_multipliers))


def table(rows: Sequence[Timed], load: tuple[list[float], list[float]]) -> str:
    """The report: medians and maxima over the programs, the slowest programs, the digest."""
    def line(name: str, values: Sequence[float], unit: str, scale: float = 1.0) -> str:
        return (f"{name:<22} median {statistics.median(values) * scale:8.2f} {unit:<3} "
                f"max {max(values) * scale:8.2f} {unit}")

    per_iteration = [row.solve_s / max(row.iterations, 1) for row in rows]
    lines = [
        f"# {len(rows)} programs; load average (1, 5, 15 min) at start {load[0]}, at end {load[1]}",
        line("solve + polish", [row.total_s for row in rows], "ms", 1e3),
        line("interior point", [row.solve_s for row in rows], "ms", 1e3),
        line("iterations", [float(row.iterations) for row in rows], ""),
        line("per iteration", per_iteration, "ms", 1e3),
        line("polish", [row.polish_s for row in rows], "ms", 1e3),
        line("polish steps", [float(row.polish_steps) for row in rows], ""),
        f"statuses: {dict(sorted(_count(row.status for row in rows).items()))}",
        "slowest (call, jobs, total ms, solve ms, iterations, polish ms, polish steps):",
    ]
    for row in sorted(rows, key=lambda row: -row.total_s)[:SLOWEST]:
        lines.append(f"  {row.captured.replan:5d} {row.captured.program.shape[1]:5d} {row.total_s * 1e3:8.2f} "
                     f"{row.solve_s * 1e3:8.2f} {row.iterations:4d} {row.polish_s * 1e3:8.2f} {row.polish_steps:4d}")
    lines.append(f"digest of every answer: {digest_all(rows)}")
    return "\n".join(lines) + "\n"


def compared(rows: Sequence[Timed], path: Path) -> str:
    """How many of `rows`' answers are the same bit for bit as the digests in `path`, and which differ."""
    before = json.loads(path.read_text())
    differ = [row.captured.replan for row in rows if before.get(str(row.captured.replan)) != row.digest]
    return (f"same answers bit for bit as {path}: {len(rows) - len(differ)} of {len(rows)} programs"
            + (f"; differ: {differ}" if differ else "") + "\n")


def digest_all(rows: Sequence[Timed]) -> str:
    return hashlib.sha256("".join(row.digest for row in rows).encode()).hexdigest()[:16]


def _count(values: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return counts


def build_parser() -> Parser:
    parser = Parser("benchmarks.replan_speed", __doc__)
    parser.add_argument("--workload", default=WORKLOAD, help=f"the reproduction's workload (default {WORKLOAD})")
    parser.add_argument("--every", check=whole(1, 10_000), default=10,
                        help="keep every N-th program of the run (default 10)")
    parser.add_argument("--repeats", check=whole(1, 100), default=3, help="timings per program (default 3)")
    parser.add_argument("--threads", check=whole(1, 1024), default=1, help="kernel threads (default 1)")
    parser.add_argument("--programs", check=OUTPUT_FILE_MADE,
                        help="the captured programs' pickle (default: under the temporary folder)")
    parser.add_argument("--digests", check=OUTPUT_FILE_MADE, help="write each program's answer digest (JSON)")
    parser.add_argument("--against", check=INPUT_FILE,
                        help="compare every answer with the digests in this file (written by --digests)")
    parser.add_table_output("replan_speed")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        from vfm.planner import compile_kernels
        from vfm.planner.kernel_loading import Forms

        compile_kernels(Forms.used_by(1, 1, args.threads))
        path = Path(args.programs) if args.programs else default_programs(args.workload, args.every)
        programs = load_programs(path, args.workload, args.every)
        time_one(programs[0], 1, args.threads)  # warm-up: first calls' overheads
        load = [round(x, 2) for x in os.getloadavg()]
        rows = [time_one(captured, args.repeats, args.threads) for captured in programs]
        end = [round(x, 2) for x in os.getloadavg()]
        if args.digests:
            Path(args.digests).write_text(json.dumps({row.captured.replan: row.digest for row in rows}, indent=1))
        text = table(rows, (load, end)) + ("" if args.against is None else compared(rows, Path(args.against)))
        parser.emit(f"# programs: {path}\n" + text, args.out)


if __name__ == "__main__":
    main()
