"""Forecast accuracy: remaining runtime, progress per round and calibration, per forecaster.

Run from the repository root::

    python -m benchmarks.forecast [--choose] [--scenarios 200] [--out DIR]

Each job of a workload is frozen at 10, 25, 50 and 75 % of its epochs (its first
``floor(p E)`` epochs observed, as a scheduler would have seen them) and forecast from there:

- remaining-runtime error: ``|forecast - truth| / truth``, the truth being the seconds of the
  job's remaining epochs;
- window error: over the next 20 rounds of the workload's round length, with the job running
  throughout, ``mean_t |F_t - G_t| / max(G_T, 1)`` where ``F_t`` is the forecast and ``G_t`` the
  true count of epochs done by the end of round ``t`` (cumulative, so that a whole-epoch truth is
  not compared with a fluid forecast round by round);
- coverage: the share of jobs whose true remaining runtime lies within the 10-90 % quantiles of
  ``--scenarios`` sampled remaining runtimes (a calibrated 80 % band covers 80 %).

Forecasters: ``dirichlet`` (Shockwave's, `vfm.forecast.DirichletForecaster`); ``persist`` (the
job stays in the regime of its last observed epoch, its smallest batch size before any; point
forecasts only, a naive baseline); ``population`` (`vfm.forecast.PopulationForecaster` with, as
references, every job of the *fitting* workloads, never the workload being scored).

Data. Traces: fitted on the Shockwave 120- and 220-job traces, reported on the 460- and 900-job
traces. Generated (`vfm.cluster.generate_workload`, 300 jobs each, the artifact's adaptation
rules): fitted on seeds 0-1, reported on seeds 2-3. ``--choose`` instead scores the fitting
workloads two-fold (120 from 220 and 220 from 120; generated seed 0 from 1 and 1 from 0), the
data the `vfm.forecast.PopulationOptions` defaults were chosen on, and ``--option NAME=VALUE``
overrides an option to compare.

Outputs (printed, and written to ``--out``, default ``results/forecast`` under the current
folder; the committed results are written only with ``--out benchmarks/results/forecast``):
``table.txt`` (median and p90 of each error, coverage, per workload, forecaster and progress
point; and a cold-start curve: the population forecaster on the 900-job trace at 25 % as it learns
from the first 0, 10, 30, 100 and 340 jobs of the fitting traces) and ``results.json``.

Coverage is given twice: the plain 10-90 % quantile band of the samples, and the randomized-PIT
band (the truth's probability integral transform, drawn uniformly within an atom of the sampled
distribution, lies in [0.1, 0.9]). A forecast that is exactly right for a job puts all its samples
on the truth: the plain band then covers it always, the PIT band 80 % of the time, which is what
a calibrated 80 % band must do when the forecast distribution has atoms.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING, Any

from benchmarks._cli import OUTPUT_FOLDER, RESULTS, Check, Parser, whole

if TYPE_CHECKING:
    import numpy as np

    from vfm.cluster import Workload
    from vfm.forecast import JobStates, PopulationOptions, Trajectory

PROGRESS = (0.10, 0.25, 0.50, 0.75)
ROUNDS = 20
TRACES_FIT = ("shockwave_120jobs_32gpus", "shockwave_220jobs_64gpus")
TRACES_REPORT = ("shockwave_460jobs_128gpus", "shockwave_900jobs_256gpus")
#: The generated workloads' size (`vfm.cluster.WorkloadSpec`).
GENERATED_JOBS, GENERATED_GPUS = 300, 64
GENERATED_FIT = (0, 1)
GENERATED_REPORT = (2, 3)


@cache
def workload(name: str) -> Workload:
    """A shipped trace by name, or ``generated-<seed>``."""
    from vfm.cluster import WorkloadSpec, generate_workload, load_workload

    if name.startswith("generated-"):
        spec = WorkloadSpec(jobs=GENERATED_JOBS, gpus=GENERATED_GPUS)
        return generate_workload(spec, seed=int(name.split("-")[1]), name=name)
    return load_workload(name)


def kind(job: Any) -> tuple[str, str] | None:
    return None if job.training is None else (job.training.model, job.training.adaptation)


def trajectories(names: Sequence[str]) -> list[Trajectory]:
    """Every job of the named workloads, as a finished job the population forecaster learns from."""
    from vfm.forecast import Trajectory

    return [Trajectory(kind(job), job.batch_size, regimes=list(job.regimes)) for name in names
            for job in workload(name).jobs]


@dataclass(frozen=True)
class Frozen:
    """The jobs of a workload at one progress point, and what happened next."""

    states: JobStates
    remaining_s: np.ndarray  # (n,) true remaining runtime
    cumulative: np.ndarray  # (n, ROUNDS + 1) true epochs done by each round's end


@cache
def frozen(name: str, fraction: float) -> Frozen:
    import numpy as np

    from vfm.forecast import JobStates

    jobs = workload(name).jobs
    round_s = workload(name).round_s
    done = [int(np.floor(fraction * job.epochs)) for job in jobs]
    states = JobStates.from_lists([job.epochs for job in jobs], [job.regimes for job in jobs],
                                  [job.batch_size[:e].tolist() for job, e in zip(jobs, done, strict=True)],
                                  job_ids=[job.id for job in jobs], groups=[kind(job) for job in jobs])
    remaining = np.array([job.epoch_s[e:].sum() for job, e in zip(jobs, done, strict=True)])
    ends = round_s * np.arange(ROUNDS + 1)
    cumulative = np.array([np.searchsorted(np.cumsum(job.epoch_s[e:]), ends * (1 + 1e-12), side="right")
                           for job, e in zip(jobs, done, strict=True)], dtype=np.float64)
    return Frozen(states, remaining, cumulative)


class Persist:
    """The naive baseline: a job stays in the regime of its last observed epoch (its smallest
    batch size before any), at that regime's epoch duration. Point forecasts only."""

    def remaining_runtime(self, states: JobStates) -> np.ndarray:
        return states.remaining_epochs * self._seconds_per_epoch(states)

    def epochs_per_round(self, states: JobStates, rounds: int, round_s: float) -> np.ndarray:
        import numpy as np

        ends = round_s * np.arange(rounds + 1)
        cumulative = np.minimum(ends / self._seconds_per_epoch(states)[:, None], states.remaining_epochs[:, None])
        return np.diff(cumulative, axis=1)

    @staticmethod
    def _seconds_per_epoch(states: JobStates) -> np.ndarray:
        import numpy as np

        smallest = np.argmin(np.where(states.regime_mask, states.regime_labels, np.inf), axis=1)
        column = np.where(states.last_regime >= 0, states.last_regime, smallest)
        return states.regime_durations[np.arange(states.n_jobs), column]


def score(forecaster: Any, case: Frozen, round_s: float, scenarios: int, seed: int) -> dict[str, Any]:
    """Errors (per job) and coverage (None without scenarios) of one forecaster on one frozen workload."""
    import numpy as np

    runtime = forecaster.remaining_runtime(case.states)
    done = np.cumsum(forecaster.epochs_per_round(case.states, ROUNDS, round_s), axis=1)
    done = np.concatenate([np.zeros((case.states.n_jobs, 1)), done], axis=1)
    coverage = None
    if hasattr(forecaster, "sample_remaining_runtime"):
        coverage = band_coverage(forecaster.sample_remaining_runtime(case.states, scenarios, seed=seed),
                                 case.remaining_s, np.random.default_rng(seed))
    runtime_error = np.abs(runtime - case.remaining_s) / case.remaining_s
    window_error = np.abs(done - case.cumulative).mean(axis=1) / np.maximum(case.cumulative[:, -1], 1.0)
    return {"runtime": runtime_error, "window": window_error, "coverage": coverage}


def band_coverage(samples: np.ndarray, truth: np.ndarray, rng: np.random.Generator) -> dict[str, float]:
    """Coverage of `truth` (n,) by the 10-90 % band of `samples` (S, n): the plain quantile band,
    and the randomized-PIT band, which is what a nominal 80 % means when the forecast has atoms."""
    import numpy as np

    slack = 1e-9 * truth
    low, high = np.quantile(samples, [0.1, 0.9], axis=0)
    below = (samples < truth - slack).mean(axis=0)
    at_most = (samples <= truth + slack).mean(axis=0)
    pit = below + rng.random(truth.size) * (at_most - below)
    return {"quantile": float(np.mean((low - slack <= truth) & (truth <= high + slack))),
            "pit": float(np.mean((0.1 <= pit) & (pit <= 0.9)))}


def forecasters(fit: Sequence[str], options: PopulationOptions) -> dict[str, Any]:
    from vfm.forecast import DirichletForecaster, PopulationForecaster

    return {"dirichlet": DirichletForecaster(), "persist": Persist(),
            "population": PopulationForecaster(options=options).learned(trajectories(fit))}


def plan(choose: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(workload scored, workloads its references come from)."""
    if choose:
        generated = [f"generated-{s}" for s in GENERATED_FIT]
        return [(TRACES_FIT[0], TRACES_FIT[1:]), (TRACES_FIT[1], TRACES_FIT[:1]),
                (generated[0], (generated[1],)), (generated[1], (generated[0],))]
    generated_fit = tuple(f"generated-{s}" for s in GENERATED_FIT)
    return [(name, TRACES_FIT) for name in TRACES_REPORT] + [
        (f"generated-{s}", generated_fit) for s in GENERATED_REPORT] + [
        (f"generated-{s}", TRACES_FIT) for s in GENERATED_REPORT[:1]]


#: Finished jobs the cold-start rows learn from: the first k of the fitting traces, in file order.
LEARNING_CURVE = (0, 10, 30, 100, 340)


def learning_curve(options: PopulationOptions, scenarios: int, seed: int) -> list[dict[str, Any]]:
    """The population forecaster on the 900-job trace at 25 % progress, from k finished jobs."""
    import numpy as np

    from vfm.forecast import PopulationForecaster

    name = TRACES_REPORT[-1]
    references = trajectories(TRACES_FIT)
    case = frozen(name, 0.25)
    rows = []
    for k in LEARNING_CURVE:
        forecaster = PopulationForecaster(options=options).learned(references[:k])
        result = score(forecaster, case, workload(name).round_s, scenarios, seed)
        rows.append({"references": k, **{f"runtime_{stat}": float(np.quantile(result["runtime"], q))
                                         for stat, q in (("median", 0.5), ("p90", 0.9))},
                     "coverage": result["coverage"]})
    return rows


def run(choose: bool = False, options: PopulationOptions | None = None, scenarios: int = 200,
        seed: int = 0) -> dict[str, Any]:
    import numpy as np

    from vfm.forecast import PopulationOptions

    options = options or PopulationOptions()
    rows: list[dict[str, Any]] = []
    for name, fit in plan(choose):
        round_s = workload(name).round_s
        scored = {row["forecaster"] for row in rows if row["workload"] == name}
        for label, forecaster in forecasters(fit, options).items():
            if label in scored and label != "population":  # the same forecast, whatever the fit
                continue
            for fraction in PROGRESS:
                result = score(forecaster, frozen(name, fraction), round_s, scenarios, seed)
                rows.append({
                    "workload": name, "fitted_on": list(fit), "forecaster": label, "progress": fraction,
                    **{f"{metric}_{stat}": float(np.quantile(result[metric], q))
                       for metric in ("runtime", "window") for stat, q in (("median", 0.5), ("p90", 0.9))},
                    "coverage": result["coverage"]})
    curve = [] if choose else learning_curve(options, scenarios, seed)
    return {"choose": choose, "options": options.__dict__, "scenarios": scenarios, "rows": rows,
            "learning_curve": curve}


def format_table(result: dict[str, Any]) -> str:
    lines = [f"{'workload':<27} {'fitted on':<20} {'forecaster':<11} {'at':>4}  "
             f"{'runtime err med/p90':>20}  {'window err med/p90':>19}  {'80% band covers q/PIT':>22}"]
    for row in result["rows"]:
        fit = "+".join(n.replace("shockwave_", "").split("jobs")[0] if n.startswith("shockwave") else n
                       for n in row["fitted_on"]) if row["forecaster"] == "population" else "-"
        coverage = "-" if row["coverage"] is None else (
            f"{row['coverage']['quantile']:.1%} / {row['coverage']['pit']:.1%}")
        lines.append(f"{row['workload']:<27} {fit:<20} {row['forecaster']:<11} {row['progress']:>4.0%}  "
                     f"{row['runtime_median']:>9.3f} / {row['runtime_p90']:<8.3f}  "
                     f"{row['window_median']:>8.3f} / {row['window_p90']:<8.3f}  {coverage:>22}")
    if result["learning_curve"]:
        lines.append(f"\ncold start: population on {TRACES_REPORT[-1]} at 25 %, learning from the first k jobs of "
                     f"the 120- and 220-job traces")
        for row in result["learning_curve"]:
            lines.append(f"  k = {row['references']:>3}: runtime err median {row['runtime_median']:.3f}, "
                         f"p90 {row['runtime_p90']:.3f}; band covers {row['coverage']['quantile']:.1%} "
                         f"(PIT {row['coverage']['pit']:.1%})")
    lines.append(f"population options: {result['options']}; {result['scenarios']} sampled runtimes per job")
    return "\n".join(lines)


def _option(text: str) -> tuple[str, str, float]:
    """``--option`` NAME=VALUE: the text, the name and the number."""
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise ValueError(text)
    return text, name, float(value)


#: One ``--option``; whether `vfm.forecast.PopulationOptions` has the field is checked once the
#: library is loaded.
OPTION = Check("NAME=VALUE with a finite number VALUE", _option, lambda option: math.isfinite(option[2]))


def build_parser() -> Parser:
    parser = Parser("benchmarks.forecast", __doc__)
    parser.add_argument("--choose", action="store_true", help="score the fitting workloads two-fold instead")
    parser.add_argument("--option", action="append", default=[], metavar="NAME=VALUE", check=OPTION,
                        help="override a PopulationOptions field, e.g. prior_weight=1; repeat it for more")
    parser.add_argument("--scenarios", check=whole(1, 100_000), default=200,
                        help="sampled runtimes per job for the band (default 200)")
    parser.add_argument("--out", check=OUTPUT_FOLDER, default=RESULTS / "forecast",
                        help="folder for table.txt and results.json (default results/forecast)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    from vfm.forecast import PopulationOptions  # the library loads once the arguments are checked

    with parser.reporting():
        for text, name, _ in args.option:
            if name not in PopulationOptions.__dataclass_fields__:
                raise ValueError(f"--option {text!r}: no PopulationOptions field {name!r}")
        options = replace(PopulationOptions(), **{name: value for _, name, value in args.option})
        result = run(args.choose, options, args.scenarios)
        table = format_table(result)
        print(table)
        if not args.choose:
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / "table.txt").write_text(parser.header() + table + "\n")
            (args.out / "results.json").write_text(json.dumps(result, indent=1))
            print(f"wrote {args.out}/: table.txt, results.json")


if __name__ == "__main__":
    main()
