"""How `vfm.planner.Policy` scales with the jobs it holds: arrivals, the first round, memory.

::

    python -m benchmarks.policy_scale --jobs 100000 [--capacity 256] [--rounds R] [--no-round] [--profile N]

Adds `--jobs` jobs (gangs 1, 2, 4 and 8 in turn, two regimes each, 50 to 500 epochs) to one
policy with the default options on `--capacity` GPUs, then serves the first round, which plans
every job. Prints the seconds to add them, the seconds of the first `next_round` (and how the
round was decided), the seconds of one `report_progress` of one epoch for every job after it, the
peak resident memory of the process, the bytes per job the policy holds
(traced by `tracemalloc` while adding up to `TRACED` jobs to another policy: tracing slows the
adds, so the timed ones are not traced), the machine and the command. ``--profile N`` prints the
N most costly functions of the first round (cProfile, cumulative time). The planner's compiled
kernels are loaded before anything is timed (`vfm.planner.compile_kernels`).
"""

from __future__ import annotations

import cProfile
import os
import platform
import pstats
import resource
import sys
import time
import tracemalloc
from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmarks._cli import Parser, whole

if TYPE_CHECKING:
    from vfm.planner import Policy

#: The regimes each job is told: batch size -> seconds per epoch.
REGIMES: dict[float, float] = {32: 60.0, 64: 40.0}
#: At most this many jobs are added under `tracemalloc` to count the bytes per job.
TRACED = 20_000


def add_jobs(policy: Policy, jobs: int) -> None:
    """`jobs` arrivals: gangs of 1, 2, 4 and 8 GPUs in turn (at most the capacity), 50 to 500 epochs."""
    for k in range(jobs):
        policy.add_job(k, min(1 << (k % 4), policy.capacity), REGIMES, 50 + (k * 7919) % 451)


def peak_rss_bytes() -> int:
    """The process's peak resident memory (``ru_maxrss``: kilobytes on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def build_parser() -> Parser:
    parser = Parser("benchmarks.policy_scale", __doc__)
    parser.add_argument("--jobs", check=whole(1, 1_000_000), required=True, help="jobs added to the policy")
    parser.add_argument("--capacity", check=whole(1, 1_000_000), default=256, help="GPUs (default 256)")
    parser.add_argument("--rounds", check=whole(1, 1000), default=None,
                        help="the planning window (default: PlanOptions')")
    parser.add_argument("--no-round", action="store_true", help="only add the jobs")
    parser.add_argument("--profile", check=whole(1, 1000), default=None, metavar="N",
                        help="print the N most costly functions of the first round")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    from vfm.planner import Policy, compile_kernels  # the library loads once the arguments are checked
    from vfm.planner.kernel_loading import Forms

    with parser.reporting():
        # The kernels a policy uses, loaded (or compiled) before anything is timed or traced: a
        # policy otherwise loads them on a background thread, whose allocations and time would be
        # counted as the adds' and the first round's.
        compile_kernels(Forms.used_by(1, 1, 1))
        options = {} if args.rounds is None else {"rounds": args.rounds}
        traced = min(args.jobs, TRACED)
        sample = Policy(args.capacity, **options)
        tracemalloc.start()
        before = tracemalloc.get_traced_memory()[0]
        add_jobs(sample, traced)
        held = tracemalloc.get_traced_memory()[0] - before
        tracemalloc.stop()
        del sample
        policy = Policy(args.capacity, **options)
        started = time.perf_counter()
        add_jobs(policy, args.jobs)
        add_s = time.perf_counter() - started
        print(f"jobs: {args.jobs} on {args.capacity} GPUs")
        print(f"add: {add_s:.3f} s ({add_s / args.jobs * 1e6:.1f} us per job)")
        print(f"bytes per job: {held / traced:.0f} (tracemalloc over {traced} jobs: the policy's records)")
        if not args.no_round:
            profiler = cProfile.Profile() if args.profile else None
            started = time.perf_counter()
            if profiler is not None:
                profiler.enable()
            running = policy.next_round()
            if profiler is not None:
                profiler.disable()
            round_s = time.perf_counter() - started
            decision = policy.last_decision
            assert decision is not None
            print(f"first next_round: {round_s:.3f} s, {len(running)} jobs run ({decision.source}: {decision.reason})")
            if policy.last_plan is not None:
                print(f"its plan: {policy.last_plan.solver}, {policy.last_plan.status}: {policy.last_plan.message}")
            if profiler is not None:
                pstats.Stats(profiler, stream=sys.stdout).sort_stats("cumulative").print_stats(args.profile)
        started = time.perf_counter()
        for k in range(args.jobs):
            policy.report_progress(k, [32])
        report_s = time.perf_counter() - started
        print(f"report_progress: {report_s:.3f} s ({report_s / args.jobs * 1e6:.1f} us per report of one epoch, "
              f"every job)")
        print(f"peak RSS: {peak_rss_bytes() / 2**20:.0f} MiB")
        print(f"machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or 'unknown'}, "
              f"Python {platform.python_version()} on {platform.system()}")
        print(f"command: python -m benchmarks.policy_scale {' '.join(sys.argv[1:] if argv is None else argv)}")


if __name__ == "__main__":
    main()
