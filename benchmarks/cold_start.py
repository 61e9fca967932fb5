"""Cold start: what a scheduler in a fresh container pays before its first decision.

Run from the repository root, with one BLAS thread::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.cold_start [--repeats 3] [--jobs 10] [--out [FILE]]

What is measured, each in fresh Python processes (the median and the range of ``--repeats``)
    - ``import vfm``: the seconds of the import alone (`time.perf_counter` around it, in the child),
      and the heavy packages it loaded (none of cvxpy, clarabel, numba, jax is expected);
    - the first decision with an empty compilation cache: from before ``import vfm`` to the return of
      the first `vfm.planner.Policy.next_round` of `Policy.shockwave` on 32 GPUs with ``--jobs``
      jobs, in a process whose ``NUMBA_CACHE_DIR`` is a new empty folder (nothing compiled yet);
    - the same with a warm cache: ``NUMBA_CACHE_DIR`` a folder that ``python -m vfm.planner.compile``
      filled beforehand (as when a container image is built).

Output
    The table, the machine and the command; printed, and with ``--out`` written to
    ``results/cold_start/cold_start.txt`` under the current folder (or the file given; the
    committed report is written only with ``--out benchmarks/results/cold_start.txt``).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from benchmarks._cli import Parser, whole

#: Packages that `import vfm` must not load: each loads when the feature that needs it is first used.
HEAVY = ("cvxpy", "clarabel", "numba", "jax", "llvmlite", "matplotlib")

_IMPORT = """
import sys, time, json
start = time.perf_counter()
import vfm
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "loaded": sorted(m for m in HEAVY if m in sys.modules)}))
"""

_FIRST_DECISION = """
import time, json
start = time.perf_counter()
from vfm.planner import Policy
policy = Policy.shockwave(32)
for job in range(JOBS):
    policy.add_job(job, gpus=1 + job % 4, regimes={32: 30.0 + 7 * job, 64: 20.0 + 5 * job}, epochs=50 + 10 * job)
running = policy.next_round()
seconds = time.perf_counter() - start
assert running, "the first decision ran no job"
print(json.dumps({"seconds": seconds, "status": str(policy.last_plan.status)}))
"""


def _run(arguments: list[str], env: dict[str, str]) -> str:
    """Run Python with `arguments` in a fresh interpreter with `env`; what it printed."""
    done = subprocess.run([sys.executable, *arguments], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"the child process failed:\n{done.stderr}")
    return done.stdout


def _child(code: str, env: dict[str, str]) -> dict:
    """Run `code` in a fresh interpreter with `env`; the JSON line it printed last."""
    return json.loads(_run(["-c", code], env).strip().splitlines()[-1])


def _environment(cache: str) -> dict[str, str]:
    return {**os.environ, "NUMBA_CACHE_DIR": cache, "PYTHONDONTWRITEBYTECODE": "1"}


def measure(repeats: int, jobs: int) -> tuple[dict[str, list[float]], set[str]]:
    """Seconds of each measurement over `repeats` fresh processes each, and the heavy packages
    `import vfm` loaded."""
    times: dict[str, list[float]] = {"import vfm": [], "first decision, empty cache": [],
                                     "first decision, warm cache": []}
    loaded: set[str] = set()
    decision = _FIRST_DECISION.replace("JOBS", str(jobs))
    with tempfile.TemporaryDirectory() as warm:
        _run(["-m", "vfm.planner.compile"], _environment(warm))
        for _ in range(repeats):
            with tempfile.TemporaryDirectory() as empty:
                imported = _child(_IMPORT.replace("HEAVY", repr(HEAVY)), _environment(empty))
                times["import vfm"].append(imported["seconds"])
                loaded.update(imported["loaded"])
                times["first decision, empty cache"].append(_child(decision, _environment(empty))["seconds"])
            times["first decision, warm cache"].append(_child(decision, _environment(warm))["seconds"])
    return times, loaded


def report(times: dict[str, list[float]], loaded: set[str]) -> str:
    rows = [f"{'measurement':<30} {'median s':>9} {'min s':>7} {'max s':>7}"]
    for name, seconds in times.items():
        rows.append(f"{name:<30} {statistics.median(seconds):>9.2f} {min(seconds):>7.2f} {max(seconds):>7.2f}")
    rows.append(f"heavy packages loaded by import vfm: {', '.join(sorted(loaded)) or 'none'}")
    return "\n".join(rows) + "\n"


def build_parser() -> Parser:
    parser = Parser("benchmarks.cold_start", __doc__)
    parser.add_argument("--repeats", default=3, check=whole(1, 100), help="fresh processes per measurement (default 3)")
    parser.add_argument("--jobs", default=10, check=whole(1, 1000),
                        help="jobs added before the first decision (default 10)")
    parser.add_table_output("cold_start")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        parser.emit(report(*measure(args.repeats, args.jobs)), args.out)


if __name__ == "__main__":
    main()
