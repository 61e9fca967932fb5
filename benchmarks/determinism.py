"""Does the `vfm` policy serve the same jobs whichever backend and tolerance plan its windows?

For each variant (a planning backend or tolerance other than the reference, `saa-ipm` at the
default tolerance), two measures on one workload::

    python -m benchmarks.determinism --workload shockwave_120jobs_32gpus \
        [--variants cvxpy,tol=1e-9] [--no-polish] [--jobs N] [--json OUT]

The default variants are `cvxpy` and the tolerance the reference does not use: 1e-9 with the
polish (where `saa-ipm` stops at 1e-7 by default, `PlanOptions.tol`), 1e-7 without it (1e-9).

``--no-polish`` runs the reference and every variant without `PlanOptions.polish` (which by
default takes each backend's schedule to the window program's exact optimum,
`vfm.planner.solve.polish`): each backend's own schedule.

- **decisions**: in every round of the reference run, the jobs a copy of the reference policy
  with the variant's options would serve from the same state, except that between re-plans the
  copy serves from the plan it made itself (not the reference's plan, which would make every
  round without a re-plan agree by construction). This is the policy's own determinism: one
  round's answer for one state.
- **runs**: the variant's own whole run. The simulation feeds each round into the next re-plan,
  so one tie broken differently changes every later state; this reports the rounds before the
  first difference, the jobs whose finish times are equal and the relative differences of
  makespan, average JCT and worst FTF (the issue's bound: 0.5 %).
"""

from __future__ import annotations

import json
import time
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks._cli import OUTPUT_FILE, Check, Parser, whole
from benchmarks.reproduce import MAX_JOBS, load, vfm_policy

if TYPE_CHECKING:
    from vfm.planner import Policy

#: Metrics whose relative difference between two whole runs is reported.
METRICS = ("makespan_s", "avg_jct_s", "worst_ftf")
#: The issue's bound on those differences when exact ties make identical runs impossible.
METRIC_BOUND = 5e-3
#: ... and on the share of rounds (of decisions) that serve the same jobs.
ROUNDS_BOUND = 0.99
#: The variants by default, with the polish and without it (module docstring).
DEFAULT_VARIANTS = {"polished": ("cvxpy", "tol=1e-9"), "unpolished": ("cvxpy", "tol=1e-7")}


def parse_variant(text: str) -> dict[str, Any]:
    """``"cvxpy"`` -> ``{"solver": "cvxpy"}``; ``"tol=1e-7"`` -> ``{"tol": 1e-7}``; both joined by ``+``."""
    options: dict[str, Any] = {}
    for part in text.split("+"):
        if part.startswith("tol="):
            options["tol"] = float(part[4:])
        elif part in ("saa-ipm", "cvxpy"):
            options["solver"] = part
        else:
            raise ValueError(f"variant {text!r}: expected a backend (saa-ipm, cvxpy) or tol=<number>, joined by +")
    return options


def _variants_hold(variants: list[dict[str, Any]]) -> bool:
    return bool(variants) and all(0 < variant.get("tol", 1) < 1 for variant in variants)


#: ``--variants``: each a backend, a tolerance in (0, 1), or both joined by ``+``.
VARIANTS = Check("comma-separated variants: a backend (saa-ipm, cvxpy), tol=<number in (0, 1)>, or both joined by +",
                 lambda text: [parse_variant(part.strip()) for part in text.split(",") if part.strip()],
                 _variants_hold)


class _Shadowed:
    """The reference policy, asked in every round what a copy with other options would serve."""

    def __init__(self, policy: Policy, options: Mapping[str, Any]) -> None:
        self.policy, self.options = policy, dict(options)
        self.decisions: list[tuple[frozenset[Hashable], frozenset[Hashable]]] = []
        self.replanned: list[bool] = []  # whether the reference re-planned in that round
        # (the reference's plan, the copy's plan made from the same state in the same round)
        self._plans: tuple[Any, Any] | None = None

    def add_job(self, *args: Any, **kwargs: Any) -> None:
        self.policy.add_job(*args, **kwargs)

    def report_progress(self, *args: Any, **kwargs: Any) -> None:
        self.policy.report_progress(*args, **kwargs)

    def remove_job(self, job_id: Hashable) -> None:
        self.policy.remove_job(job_id)

    def diagnostics(self) -> Mapping[str, Any]:
        return self.policy.diagnostics()

    def next_round(self) -> list[Hashable]:
        # The same state stepped under the other options (the step is pure, so nothing is copied),
        # except that between re-plans the copy serves from its own last plan, not the reference's.
        from vfm.planner.policy import step

        config, state = self.policy.config, self.policy.state
        if self._plans is not None and self._plans[0] is state.plan:
            state = replace(state, plan=self._plans[1])
        shadow_state, shadow = step(replace(config, options=config.options.updated(**self.options)), state)
        replans = self.policy.state.replans
        served = list(self.policy.next_round())  # a cluster of one type: the job ids
        self._plans = (self.policy.state.plan, shadow_state.plan)
        self.decisions.append((frozenset(served), frozenset(shadow)))
        self.replanned.append(self.policy.state.replans != replans)
        return served


def _policy(workload: Any, options: Mapping[str, Any]) -> Policy:
    return vfm_policy(workload.gpus, workload.round_s, **options)


def compare(workload_path: str | Path, variant: Mapping[str, Any], jobs: int | None = None,
            common: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Decisions and whole runs of `variant` against the reference (module docstring), both with
    the options `common` too. The shadowed run is the reference run itself (the copies answer but
    do not act)."""
    from vfm.cluster import simulate, summarize

    workload = load(workload_path, jobs)
    common = dict(common or {})
    shadowed = _Shadowed(_policy(workload, common), {**common, **variant})
    started = time.perf_counter()
    reference = summarize(simulate(workload, shadowed))
    same = sum(a == b for a, b in shadowed.decisions)
    run = summarize(simulate(workload, _policy(workload, {**common, **variant})))
    ref_rounds = [frozenset(r["jobs"]) for r in reference["rounds"]]
    var_rounds = [frozenset(r["jobs"]) for r in run["rounds"]]
    parted = next((k for k, (a, b) in enumerate(zip(ref_rounds, var_rounds, strict=False)) if a != b),
                  min(len(ref_rounds), len(var_rounds)))
    finish = {job["id"]: job["finish_s"] for job in reference["jobs"]}
    equal_finish = sum(job["finish_s"] == finish[job["id"]] for job in run["jobs"])
    return {
        "variant": variant,
        "decisions": {"rounds": len(shadowed.decisions), "same": same, "replanned": sum(shadowed.replanned),
                      "differ_at": [k for k, (a, b) in enumerate(shadowed.decisions) if a != b]},
        "runs": {"rounds": [len(ref_rounds), len(var_rounds)], "same_until": parted,
                 "same_rounds": sum(a == b for a, b in zip(ref_rounds, var_rounds, strict=False)),
                 "equal_finish": equal_finish, "jobs": len(run["jobs"]),
                 "relative": {m: abs(run[m] - reference[m]) / abs(reference[m]) for m in METRICS},
                 "unfair_pct": [reference["unfair_pct"], run["unfair_pct"]]},
        "seconds": time.perf_counter() - started,
    }


def print_comparison(name: str, result: Mapping[str, Any]) -> None:
    decisions, runs = result["decisions"], result["runs"]
    variant = "+".join(f"tol={v:g}" if k == "tol" else str(v) for k, v in result["variant"].items())
    share = decisions["same"] / max(decisions["rounds"], 1)
    worst = max(runs["relative"].values())
    print(f"{name} {variant}: decisions {decisions['same']}/{decisions['rounds']} the same ({100 * share:.1f} %, "
          f"{'meets' if share >= ROUNDS_BOUND else 'misses'} {100 * ROUNDS_BOUND:g} %; {decisions['replanned']} "
          f"re-planned); whole runs the same for "
          f"{runs['same_until']} of {runs['rounds'][0]} rounds, {runs['equal_finish']}/{runs['jobs']} finish times "
          f"equal; " + ", ".join(f"{m} {100 * v:.2f} %" for m, v in runs["relative"].items())
          + f" apart ({'within' if worst <= METRIC_BOUND else 'beyond'} {100 * METRIC_BOUND:g} %); unfair "
          f"{runs['unfair_pct'][0]:.2f} / {runs['unfair_pct'][1]:.2f} %; {result['seconds']:.0f} s")


def build_parser() -> Parser:
    parser = Parser("benchmarks.determinism", __doc__)
    parser.add_argument("--workload", required=True,
                        help="a workload JSON file, or a shipped one's name (e.g. shockwave_120jobs_32gpus)")
    parser.add_argument("--variants", check=VARIANTS,
                        help="comma-separated: a backend (cvxpy), tol=<number>, or both joined by + (default "
                             f"{','.join(DEFAULT_VARIANTS['polished'])}; with --no-polish "
                             f"{','.join(DEFAULT_VARIANTS['unpolished'])})")
    parser.add_argument("--no-polish", action="store_true",
                        help="plan with each backend's own schedule, unpolished (reference and variants)")
    parser.add_argument("--jobs", check=whole(1, MAX_JOBS), help="only the workload's first JOBS jobs (a slice)")
    parser.add_argument("--json", check=OUTPUT_FILE, help="write the comparisons to this file (in an existing folder)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        variants = args.variants if args.variants is not None else [
            parse_variant(text) for text in DEFAULT_VARIANTS["unpolished" if args.no_polish else "polished"]]
        name = Path(args.workload).stem
        results = []
        for variant in variants:
            result = compare(args.workload, variant, args.jobs, {"polish": False} if args.no_polish else None)
            print_comparison(name + (" unpolished" if args.no_polish else ""), result)
            results.append(result)
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
