"""How long a `vfm.planner.Policy` round takes under a deadline the re-plans cannot meet.

::

    python -m benchmarks.deadline [--rounds 30] [--out [FILE]]

Two configurations, each far past what its deadline lets a re-plan finish: 10,000 jobs on 256
GPUs of one type with ``deadline_s=0.01``, and 5,000 jobs on three GPU types (86 each) with
finish-time fairness and ``deadline_s=0.3``. Jobs have gangs of 1, 2, 4 and 8 GPUs in turn; every
round the first 50 running jobs report an epoch and one job arrives, so a re-plan is always due.
Prints, per configuration, the seconds of every round: the median, the 90th percentile and the
largest, apart for the rounds that tried a re-plan (`vfm.planner.Decision`'s reason) and those
that did not (served from the standing plan or first-fit while the policy waits to try again),
and how many rounds ended within the deadline plus 50 ms plus the fallback's own time (the
median round that waits, served by it alone); with ``--out``, to
``results/deadline/deadline.txt`` (or FILE), under the machine and the command.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks._cli import Parser, whole

#: A round that tries a re-plan ends within the deadline plus this (seconds), the target.
SLACK_S = 0.05


@dataclass(frozen=True)
class Setup:
    """One configuration: `jobs` on `types` GPU types (`gpus` each), a deadline, fairness or not."""

    name: str
    jobs: int
    types: int
    gpus: int
    deadline_s: float
    fairness: bool


SETUPS = (Setup("one type, 10,000 jobs", 10_000, 1, 256, 0.01, False),
          Setup("three types, 5,000 jobs, fairness", 5_000, 3, 86, 0.3, True))
TYPE_NAMES = ("v100", "p100", "k80")


def _regimes(setup: Setup, k: int) -> Any:
    """Job `k`'s regimes: on several types, slower on each later type."""
    base = {32: 60.0 + k % 7, 64: 40.0}
    if setup.types == 1:
        return base
    return {name: {b: s * (1 + i) for b, s in base.items()} for i, name in enumerate(TYPE_NAMES[:setup.types])}


def run(setup: Setup, rounds: int) -> dict[str, Any]:
    """The round times of `setup` over `rounds` rounds, split by whether the round tried a re-plan."""
    from vfm.cluster import ClusterTypes
    from vfm.planner import Policy

    capacity: Any = setup.gpus if setup.types == 1 else ClusterTypes(
        dict.fromkeys(TYPE_NAMES[:setup.types], setup.gpus))
    policy = Policy(capacity, deadline_s=setup.deadline_s, fairness=setup.fairness)
    for k in range(setup.jobs):
        policy.add_job(k, min(1 << (k % 4), setup.gpus), _regimes(setup, k), 50 + (k * 7919) % 451)
    tried: list[float] = []
    waited: list[float] = []
    for r in range(rounds):
        started = time.perf_counter()
        running = policy.next_round()
        took = time.perf_counter() - started
        decision = policy.last_decision
        assert decision is not None
        (waited if "is tried in round" in decision.reason else tried).append(took)
        for job in list(running)[:50]:
            policy.report_progress(job, [32.0])
        policy.add_job(setup.jobs + r, 1, _regimes(setup, r), 100)
    # A round that waits is served by the fallback alone: its median is the fallback's own time.
    fallback_s = float(np.median(waited)) if waited else 0.0
    every = tried + waited
    return {"tried": tried, "waited": waited, "fallback_s": fallback_s, "rounds": len(every),
            "within": sum(t <= setup.deadline_s + SLACK_S + fallback_s for t in every)}


def _line(what: str, times: list[float]) -> str:
    if not times:
        return f"  {what:<28} none"
    ms = np.array(times) * 1e3
    return (f"  {what:<28} {len(ms):3d} rounds   median {np.median(ms):7.1f} ms   p90 {np.percentile(ms, 90):7.1f} ms"
            f"   max {ms.max():7.1f} ms")


def report(rounds: int) -> str:
    """Every configuration's round times (`run`), as the table the command prints."""
    lines = []
    for setup in SETUPS:
        gc.collect()  # the last configuration's objects are not this one's to collect
        result = run(setup, rounds)
        lines += [f"{setup.name}: deadline {setup.deadline_s * 1e3:g} ms",
                  _line("rounds that tried a re-plan", result["tried"]),
                  _line("rounds waiting to try again", result["waited"]),
                  f"  within the deadline + {SLACK_S * 1e3:g} ms + the fallback's own time "
                  f"({result['fallback_s'] * 1e3:.1f} ms, the median round that waits): "
                  f"{result['within']} of {result['rounds']} rounds"]
    return "\n".join(lines) + "\n"


def build_parser() -> Parser:
    parser = Parser("benchmarks.deadline", __doc__)
    parser.add_argument("--rounds", check=whole(1, 10_000), default=30, help="rounds per configuration (default 30)")
    parser.add_table_output("deadline")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        parser.emit(report(args.rounds), args.out)


if __name__ == "__main__":
    main()
