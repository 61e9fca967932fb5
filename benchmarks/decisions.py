"""Decision latency: every `Policy.next_round` of many random small clusters, timed.

Run from the repository root, with one BLAS thread::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.decisions [--cases 100] [--seed 0] [--max-jobs 10] \
        [--replay SEED,...] [--out [FILE]]

What is measured
    The wall time (`time.perf_counter`) of every `vfm.planner.Policy.next_round` call: the round
    a scheduler waits for, whether it re-plans (`vfm.planner.plan`: forecast, solve, polish,
    rounding) or serves the standing plan. Target: no decision over `TARGET_S` (50 ms) on a
    window of at most 10 jobs.

Cases
    Case `k` of ``--seed S`` draws everything from the seed ``S + k`` (its case seed, printed with
    the slowest decisions; ``--replay`` runs only the cases named, to time them again alone): a
    cluster of 1 to 16 GPUs; a `Policy` with random ``fairness`` or, one case in four,
    `Policy.shockwave`; 1 to ``--max-jobs`` jobs, each with a gang of at most the capacity, 1 to
    4 regimes (batch size -> seconds per epoch, log-uniform in 1 .. 1000 s), 1 to 500 epochs and
    a budget in 0.1 .. 10. The jobs arrive over the case's rounds (the first in round 0; an
    arrival waits while ``--max-jobs`` jobs are present), one in ten is removed some rounds
    after it arrives, and every job that ran reports the epochs it finished in the round: it runs
    its regimes in order of batch size, each for a random share of its epochs, a partial epoch
    carried to its next round. A job whose epochs are done completes. A case runs 10 to 60 rounds.

Runs
    One untimed warm-up case first (the compiled kernels and the first calls' overheads; the seed
    after the last case's). Other processes on the machine inflate the times: the load average is printed at
    start and end; replay the slow cases (``--replay``) on a quiet machine to tell real slowness
    from load.

Output
    The number of decisions and re-plans, the median, p99 and max seconds, the count over
    `TARGET_S`, and how many of those are still over it timed again (the best of `RETIMES`
    timings of the same decision from the same state after the run: a decision slow only because
    the machine was busy is fast again); for the `SLOWEST` slowest decisions the case seed, the
    round, the jobs present, their time again, how the round was decided
    (`Policy.last_decision`) and, for a re-plan, where its time went (`Plan.timings`), its status
    and message (`Plan.message`); the machine and the command.
    The cycle collections (Python's garbage collector, any generation) that started inside a
    decision, counted with `gc.callbacks`: `vfm.planner.Policy` pauses the collector while it
    decides (`vfm.planner.policy.collector`), so the count is 0 unless that breaks.
    Printed, and with ``--out`` written to ``results/decisions/decisions.txt`` under the current
    folder (or the file given; the committed report is written only with
    ``--out benchmarks/results/decisions.txt``).
"""

from __future__ import annotations

import gc
import os
import platform
import statistics
import sys
import time
import warnings
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from benchmarks._cli import OUTPUT_FILE_MADE, RESULTS, SEED_MAX, Check, Parser, seed, whole

if TYPE_CHECKING:
    import numpy as np

    from vfm.planner import Policy

#: The report file of a bare ``--out`` (`benchmarks._cli.RESULTS`).
OUT = RESULTS / "decisions" / "decisions.txt"
#: The longest a decision may take.
TARGET_S = 0.050
#: How many of the slowest decisions are detailed, and timed again (best of RETIMES).
SLOWEST, RETIMES = 5, 3
MAX_CAPACITY = 16
BATCH_SIZES = (16, 32, 64, 128, 256, 512)
ROUNDS = (10, 60)
#: Shares of the cases and jobs: shockwave-configured policies, removed jobs.
SHOCKWAVE_SHARE, REMOVED_SHARE = 0.25, 0.1


@dataclass(frozen=True)
class Job:
    """One job of a case: when it arrives, what it is, the batch size of each of its epochs."""

    arrival: int
    gpus: int
    regimes: dict[float, float]
    path: tuple[float, ...]  # batch size per epoch, in the order they run
    budget: float
    removed_after: int | None  # rounds after its arrival at which it is removed; None: never


@dataclass(frozen=True)
class Case:
    seed: int
    capacity: int
    shockwave: bool
    fairness: bool
    rounds: int
    jobs: tuple[Job, ...]

    def policy(self) -> Policy:
        from vfm.planner import Policy

        if self.shockwave:
            return Policy.shockwave(self.capacity)
        return Policy(self.capacity, fairness=self.fairness)


@dataclass(frozen=True)
class Timed:
    """One decision: its case, round, jobs present, seconds, and how it was decided."""

    seed: int
    round: int
    jobs: int
    seconds: float
    decision: Any
    plan: dict[str, Any] = field(default_factory=dict)
    collections: int = 0  # cycle collections (any generation) that started inside the decision


class CollectionCount:
    """Counts Python's cycle collections as they start (a `gc.callbacks` entry while installed)."""

    def __init__(self) -> None:
        self.started = 0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self.started += 1

    def __enter__(self) -> CollectionCount:
        gc.callbacks.append(self)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self)


def random_job(rng: np.random.Generator, capacity: int, rounds: int) -> Job:
    """A job of a cluster of `capacity` GPUs arriving within `rounds` rounds (module docstring)."""
    import numpy as np

    count = int(rng.integers(1, 5))
    sizes = np.sort(rng.choice(BATCH_SIZES, size=count, replace=False)).astype(float)
    seconds = np.exp(rng.uniform(0.0, np.log(1000.0), size=count))
    epochs = int(rng.integers(1, 501))
    # Its regimes in order of batch size, each for a share of its epochs (some shares 0).
    cuts = np.sort(rng.integers(0, epochs + 1, size=count - 1))
    lengths = np.diff(np.concatenate([[0], cuts, [epochs]]))
    path = tuple(float(b) for b in np.repeat(sizes, lengths))
    removed = int(rng.integers(1, 30)) if rng.random() < REMOVED_SHARE else None
    return Job(arrival=int(rng.integers(0, rounds)), gpus=int(rng.integers(1, capacity + 1)),
               regimes=dict(zip(sizes.tolist(), seconds.tolist(), strict=True)), path=path,
               budget=float(rng.uniform(0.1, 10.0)), removed_after=removed)


def random_case(seed: int, max_jobs: int) -> Case:
    """Case `seed` (module docstring)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    capacity = int(rng.integers(1, MAX_CAPACITY + 1))
    rounds = int(rng.integers(ROUNDS[0], ROUNDS[1] + 1))
    jobs = sorted((random_job(rng, capacity, rounds) for _ in range(int(rng.integers(1, max_jobs + 1)))),
                  key=lambda job: job.arrival)
    jobs[0] = replace(jobs[0], arrival=0)  # the case starts with a job
    return Case(seed, capacity, bool(rng.random() < SHOCKWAVE_SHARE), bool(rng.random() < 0.5), rounds, tuple(jobs))


class _Run:
    """A case being driven: the policy, the jobs present, each job's epochs done and carried seconds."""

    def __init__(self, case: Case, max_jobs: int) -> None:
        self.case, self.max_jobs = case, max_jobs
        self.policy = case.policy()
        self.waiting = list(range(len(case.jobs)))  # not yet arrived, in arrival order
        self.present: dict[Hashable, int] = {}  # job id -> round it arrived
        self.done = [0] * len(case.jobs)
        self.carry = [0.0] * len(case.jobs)

    def arrive_and_leave(self, round_index: int) -> None:
        """Arrivals due by now (while fewer than `max_jobs` are present) and removals due now."""
        for job_id, arrived in list(self.present.items()):
            after = self.case.jobs[cast(int, job_id)].removed_after
            if after is not None and round_index - arrived >= after:
                self.policy.remove_job(job_id)
                del self.present[job_id]
        while self.waiting and self.case.jobs[self.waiting[0]].arrival <= round_index \
                and len(self.present) < self.max_jobs:
            k = self.waiting.pop(0)
            job = self.case.jobs[k]
            self.policy.add_job(k, job.gpus, job.regimes, len(job.path), job.budget)
            self.present[k] = round_index

    def report(self, running: Sequence[Hashable], round_s: float) -> None:
        """Each job that ran reports the epochs it finished in the round; finished jobs leave."""
        for job_id in running:
            k = cast(int, job_id)
            job, seconds = self.case.jobs[k], self.carry[k] + round_s
            epochs: list[float] = []
            while self.done[k] + len(epochs) < len(job.path):
                cost = job.regimes[job.path[self.done[k] + len(epochs)]]
                if cost > seconds:
                    break
                seconds -= cost
                epochs.append(job.path[self.done[k] + len(epochs)])
            self.carry[k] = seconds
            if epochs:
                self.policy.report_progress(job_id, epochs)
                self.done[k] += len(epochs)
            if self.done[k] == len(job.path):
                del self.present[job_id]


def run_case(case: Case, max_jobs: int) -> list[Timed]:
    """Drive `case` round by round; every decision timed, and the cycle collections inside it counted."""
    run, timed = _Run(case, max_jobs), []
    with CollectionCount() as collections:
        for round_index in range(case.rounds):
            run.arrive_and_leave(round_index)
            replans = run.policy.replans
            before = collections.started
            started = time.perf_counter()
            answer = run.policy.next_round()
            seconds = time.perf_counter() - started
            inside = collections.started - before
            made = run.policy.last_plan if run.policy.replans != replans else None
            details = {} if made is None else {"timings": dict(made.timings), "status": str(made.status),
                                               "message": made.message, "fairness": made.fairness}
            timed.append(Timed(case.seed, round_index, len(run.present), seconds, run.policy.last_decision, details,
                               inside))
            run.report(list(answer), run.policy.options.round_s)
    return timed


def retimed(seed: int, round_index: int, max_jobs: int, repeats: int = RETIMES) -> float:
    """The best of `repeats` timings of case `seed`'s decision in round `round_index`, each from the
    same state (`vfm.planner.policy.decide`, a pure step): what the decision costs without the
    moments the machine was busy elsewhere."""
    from vfm.planner.policy import decide

    run = _Run(random_case(seed, max_jobs), max_jobs)
    for past in range(round_index):
        run.arrive_and_leave(past)
        run.report(list(run.policy.next_round()), run.policy.options.round_s)
    run.arrive_and_leave(round_index)
    config, state = run.policy.config, run.policy.state
    best = float("inf")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(repeats):
            started = time.perf_counter()
            decide(config, state)
            best = min(best, time.perf_counter() - started)
    return best


def _again_line(timed: Sequence[Timed], again: Mapping[tuple[int, int], float]) -> str:
    """What the decisions over the target took when timed again: those still over it are slow in
    themselves, the others were slow because the machine was busy."""
    over = [t for t in timed if t.seconds > TARGET_S]
    if not over:
        return f"timed again: none to time (no decision over {_ms(TARGET_S)})"
    if not all((t.seed, t.round) in again for t in over):
        return "timed again: not all the decisions over the target"
    still = sorted((t.seed, t.round) for t in over if again[t.seed, t.round] > TARGET_S)
    worst = max(again[t.seed, t.round] for t in over)
    return (f"timed again (best of {RETIMES}, same state): {len(still)} of {len(over)} still over {_ms(TARGET_S)}, "
            f"max {_ms(worst)}" + (f"; (case seed, round): {still}" if still else ""))


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def summary(timed: Sequence[Timed], seeds: Sequence[int], max_jobs: int, load: Sequence[Sequence[float]],
            command: str, again: Mapping[tuple[int, int], float] | None = None) -> str:
    """The report (module docstring, "Output"); `again`: (case seed, round) -> seconds of the slowest
    decisions timed again (`retimed`)."""
    import numpy as np

    again = again or {}
    times = np.array([t.seconds for t in timed])
    over = int((times > TARGET_S).sum())
    replans = sum(bool(t.plan) for t in timed)
    lines = [
        f"decisions: {len(timed)} ({replans} re-plans) over {len(seeds)} cases (seeds {min(seeds)}..{max(seeds)}), "
        f"at most {max_jobs} jobs present",
        f"median {_ms(statistics.median(times))}, p99 {_ms(float(np.quantile(times, 0.99)))}, max {_ms(times.max())}; "
        f"over {_ms(TARGET_S)}: {over} ({'target met' if over == 0 else 'target missed'})",
        _again_line(timed, again),
        f"cycle collections that started inside a decision: {sum(t.collections for t in timed)}",
        f"the {SLOWEST} slowest:",
    ]
    for t in sorted(timed, key=lambda t: -t.seconds)[:SLOWEST]:
        decision = t.decision
        alone = f" (again, best of {RETIMES}: {_ms(again[t.seed, t.round])})" if (t.seed, t.round) in again else ""
        lines.append(f"  {_ms(t.seconds)}{alone}: case seed {t.seed}, round {t.round}, {t.jobs} jobs; "
                     f"{decision.source}: {decision.reason}")
        if t.plan:
            split = ", ".join(f"{key} {_ms(value)}" for key, value in t.plan["timings"].items())
            lines.append(f"    re-plan: {split}; {t.plan['status']}, fairness {t.plan['fairness']}; "
                         f"{t.plan['message']}")
    threads = {k: v for k, v in os.environ.items() if k.endswith("_NUM_THREADS")}
    lines += [
        f"machine: {platform.machine()} {_cpu_model()}, {os.cpu_count()} CPUs; Python {platform.python_version()}, "
        f"numpy {np.__version__}; thread settings {threads or 'default'}",
        f"load average (1, 5, 15 min): start {list(load[0])}, end {list(load[1])}",
        f"command: {command}",
    ]
    if threads.get("OPENBLAS_NUM_THREADS") != "1":
        lines.append("note: OPENBLAS_NUM_THREADS is not 1: BLAS threads compete for the cores")
    return "\n".join(lines)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), "")
    except OSError:
        return platform.processor()


def run(seeds: Sequence[int], max_jobs: int, warm_up: int | None = None) -> list[Timed]:
    """Every decision of the cases `seeds`, after the untimed case `warm_up` (None: none)."""
    with warnings.catch_warnings():
        # A fallback backend's warnings (CVXPY's "may be inaccurate") would bury the report; the
        # plans' messages say which backend answered and how well.
        warnings.simplefilter("ignore")
        if warm_up is not None:
            run_case(random_case(warm_up, max_jobs), max_jobs)
        return [t for seed in seeds for t in run_case(random_case(seed, max_jobs), max_jobs)]


#: The most cases of a run (the committed report runs 1000).
MAX_CASES = 100_000
#: Case seeds to replay (``--replay``): at most `MAX_CASES` of them, each from 0 to `SEED_MAX`.
SEEDS = Check(f"comma-separated case seeds from 0 to {SEED_MAX}, at most {MAX_CASES} of them",
              lambda text: [int(part) for part in text.split(",") if part.strip()],
              lambda seeds: 0 < len(seeds) <= MAX_CASES and all(0 <= seed <= SEED_MAX for seed in seeds))


def build_parser() -> Parser:
    parser = Parser("benchmarks.decisions", __doc__)
    parser.add_argument("--cases", check=whole(1, MAX_CASES), default=100, help="random cases (default 100)")
    parser.add_argument("--seed", check=seed(), default=0, help="case k uses the seed SEED + k (default 0)")
    parser.add_argument("--max-jobs", check=whole(1, 1000), default=10,
                        help="the most jobs present at once (default 10)")
    parser.add_argument("--replay", check=SEEDS,
                        help="comma-separated case seeds: run only these (slow cases, timed alone)")
    parser.add_argument("--out", check=OUTPUT_FILE_MADE, nargs="?", const=OUT,
                        help=f"also write the report to this file (without a file: {OUT})")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        seeds = args.replay if args.replay is not None else list(range(args.seed, args.seed + args.cases))
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
        command = " ".join(["python -m benchmarks.decisions", *(sys.argv[1:] if argv is None else argv)])
        load_start = tuple(round(x, 2) for x in os.getloadavg())
        timed = run(seeds, args.max_jobs, warm_up=max(seeds) + 1)
        load_end = tuple(round(x, 2) for x in os.getloadavg())
        slow = sorted(timed, key=lambda t: -t.seconds)
        slow = slow[:max(SLOWEST, sum(t.seconds > TARGET_S for t in slow))]
        again = {(t.seed, t.round): retimed(t.seed, t.round, args.max_jobs) for t in slow}
        report = summary(timed, seeds, args.max_jobs, (load_start, load_end), command, again)
        print(report)
        if args.out is not None:
            args.out.write_text(parser.header() + report + "\n")
            print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
