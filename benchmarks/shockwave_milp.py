r"""Shockwave's own window program: binary rounds and a piecewise-linear log, as a MILP (HiGHS).

The reference point `benchmarks/solve.py` sets beside `vfm`'s exact conic relaxation. It is the
program of the Shockwave artifact (uw-mad-dash/shockwave, ``scheduler/shockwave.py``,
``dynamic_eisenberg_gale_scheduling``; MIT), restated for a `vfm.jobs.JobWindow` and solved with
HiGHS through `scipy.optimize.milp` instead of Gurobi:

* **Binary rounds.** :math:`y_{it} \in \{0, 1\}`: job `i` runs all of round `t` or none of it
  (0 where it does not fit), and :math:`\sum_i w_i y_{it} \le G_t`.
* **Piecewise-linear log.** Breakpoints :math:`b = (0, 0.2, 0.4, 0.6, 0.8, 1)` of normalized
  progress, with :math:`\log 0` replaced by :math:`\log 10^{-6}` (the artifact's
  ``log_approximation_bases`` and ``logapx_origin={0.0: 1e-6}``). Job `i`'s progress is a
  convex combination :math:`U_i = \sum_k \lambda_{ik} b_k`, :math:`\sum_k \lambda_{ik} = 1`,
  :math:`\lambda \ge 0`, valued :math:`\sum_k \lambda_{ik} \log b_k`; so :math:`U_i \le 1`.
* **Progress.** :math:`U_i \le c_i + \sum_t (r_{it} / E_i) y_{it}`: planned progress may not
  exceed what the scheduled rounds deliver (the artifact's ``planned_runtime <= rounds x
  round_duration``). The forecast :math:`r_{it}` is the window's own, the one `vfm` solves
  with, so both programs describe the same market (the artifact uses one interpolated epoch
  duration per job for all rounds).
* **Objective.** :math:`\max \sum_i B_i \sum_k \lambda_{ik} \log b_k`, the NSWOT with the
  piecewise-linear log. Left out, because `vfm`'s NSWOT has no counterpart for them: the
  makespan term :math:`-k \max_i S_i`, the finish-time-fairness constraints and their
  relaxation, and the artifact's division of the objective by :math:`n T` (a scale, which
  changes neither the solution nor the relative MIP gap).
* **Solver settings.** Relative MIP gap 1e-3 (the artifact's ``solver_rel_gap``) and a time
  limit (15 s in the artifact, with 24 Gurobi threads; HiGHS through SciPy here, which uses
  its own thread default and exposes no thread option).

The artifact adds, per job, six binaries that allow at most two adjacent nonzero
:math:`\lambda_{ik}` (an SOS2 by hand). Since the breakpoint values are concave in `b` and
the program maximizes, the optimal :math:`\lambda` already sits on adjacent breakpoints (the
best convex combination of points of a concave function at a given abscissa is the chord of
its neighbours), so these binaries change neither the optimal value nor the schedules that
attain it. They are off by default here (``adjacency=False``) and on with ``adjacency=True``
for a faithful copy of the artifact's model size.

Quality is measured on the schedule, with the exact log: :math:`U_i = \min(\bar U_i,\; c_i +
\sum_t (r_{it}/E_i) y_{it})` (rounds past a job's last epoch are wasted, not counted twice) and
NSWOT :math:`= \sum_i B_i \log U_i`, which is :math:`-\infty` if the schedule leaves a job with no
progress at all (the piecewise-linear log charges such a job only :math:`\log 10^{-6}`). `vfm`'s
relaxation NSWOT is an upper bound on this number for every integral schedule.

Run from the repository root, to solve it once on a size of `benchmarks.solve` (its busiest
window) and print how it ended (`benchmarks.solve` runs it beside every backend)::

    python -m benchmarks.shockwave_milp [--size 120] [--rounds 20] [--time-limit 15] [--adjacency]
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from benchmarks._cli import Check, Parser, number, whole
from benchmarks._sizes import SIZES, window_for

if TYPE_CHECKING:
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint

    from vfm.jobs import JobWindow

#: The artifact's ``log_approximation_bases`` and the value standing in for log 0.
BREAKPOINTS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
LOG_ORIGIN = 1e-6
#: The artifact's ``solver_rel_gap``.
MIP_REL_GAP = 1e-3

#: The longest time limit a command line takes (s): a day.
DAY_S = 86_400.0

_STATUS = {0: "optimal", 1: "time_limit", 2: "infeasible", 3: "unbounded", 4: "error"}


@dataclass(frozen=True)
class MilpResult:
    """How the MILP ended and what its schedule is worth.

    Attributes
    ----------
    status : str
        ``"optimal"`` (within the MIP gap), ``"time_limit"`` (stopped at a limit, best
        schedule found so far), ``"infeasible"``, ``"unbounded"`` or ``"error"``.
    message : str
        HiGHS's message, through SciPy.
    schedule : ndarray of {0, 1}, shape (n, T), or None if no schedule was found
    mip_gap : float
        Relative gap between the schedule's piecewise-linear objective and HiGHS's bound on it.
    pwl_objective, pwl_bound : float
        That objective (NSWOT with the piecewise-linear log) and HiGHS's upper bound on it.
    nswot : float
        The schedule's NSWOT with the exact log (-inf if a job gets no progress at all).
    utilities : ndarray, shape (n,)
        The schedule's progress :math:`U_i` (capped at the utility cap).
    starved : int
        Jobs whose progress is 0 under the schedule.
    build_s, solve_s : float
        Seconds to assemble the sparse model and inside `scipy.optimize.milp`.
    n_binaries, n_variables, n_constraints : int
    """

    status: str
    message: str
    schedule: np.ndarray | None
    mip_gap: float
    pwl_objective: float
    pwl_bound: float
    nswot: float
    utilities: np.ndarray
    starved: int
    build_s: float
    solve_s: float
    n_binaries: int
    n_variables: int
    n_constraints: int

    @property
    def wall_s(self) -> float:
        return self.build_s + self.solve_s


@dataclass(frozen=True)
class MilpModel:
    """The assembled MILP in `scipy.optimize.milp` form; variables are (y, lambda[, z])."""

    c: np.ndarray
    integrality: np.ndarray
    bounds: Bounds
    constraints: LinearConstraint
    n_jobs: int
    n_rounds: int


def window_arrays(window: JobWindow) -> tuple[np.ndarray, ...]:
    """(w, progress per full round r/E, base c, may-run mask, capacity G_t, cap, budgets) of a window."""
    market = window.market
    w = window.gpus
    progress = market.utilities[:, 0, :] * w[:, None]  # r[i,t] / E_i
    fits = market.caps[:, 0, :] > 0
    return w, progress, market.base_utility, fits, market.supply[0], market.utility_cap, market.budgets


def build(window: JobWindow, breakpoints: tuple[float, ...] = BREAKPOINTS, origin: float = LOG_ORIGIN,
          adjacency: bool = False) -> MilpModel:
    """Assemble Shockwave's MILP for `window` as sparse matrices (no loop over jobs)."""
    import numpy as np
    import scipy.sparse as sp
    from scipy.optimize import Bounds, LinearConstraint

    w, progress, base, fits, capacity, _, budgets = window_arrays(window)
    n, rounds = progress.shape
    b = np.asarray(breakpoints, dtype=float)
    k = b.size
    value = np.log(np.where(b > 0, b, origin))
    ny, nl = n * rounds, n * k
    jobs = np.arange(n)
    y_index = (jobs[:, None] * rounds + np.arange(rounds)[None, :])  # (n, T)
    l_index = ny + jobs[:, None] * k + np.arange(k)[None, :]  # (n, K)
    n_var = ny + nl + (nl if adjacency else 0)

    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []

    def block(r: np.ndarray, c: np.ndarray, v: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> None:
        offset = sum(x.size for x in lower)
        rows.append(np.ravel(r) + offset)
        cols.append(np.ravel(c))
        vals.append(np.ravel(v).astype(float))
        lower.append(lo)
        upper.append(hi)

    # Capacity: sum_i w_i y_it <= G_t.
    block(np.broadcast_to(np.arange(rounds)[None, :], (n, rounds)), y_index,
          np.broadcast_to(w[:, None], (n, rounds)), np.full(rounds, -np.inf), capacity)
    # Progress: sum_k b_k lambda_ik - sum_t (r_it / E_i) y_it <= c_i.
    block(np.concatenate([np.repeat(jobs, k), np.repeat(jobs, rounds)]),
          np.concatenate([l_index.ravel(), y_index.ravel()]),
          np.concatenate([np.tile(b, n), -progress.ravel()]), np.full(n, -np.inf), base)
    # Convexity: sum_k lambda_ik = 1.
    block(np.repeat(jobs, k), l_index, np.ones(nl), np.ones(n), np.ones(n))
    if adjacency:
        z_index = l_index + nl
        # lambda_ik <= z_ik.
        block(np.concatenate([np.arange(nl), np.arange(nl)]), np.concatenate([l_index.ravel(), z_index.ravel()]),
              np.concatenate([np.ones(nl), -np.ones(nl)]), np.full(nl, -np.inf), np.zeros(nl))
        # sum_k z_ik <= 2.
        block(np.repeat(jobs, k), z_index, np.ones(nl), np.full(n, -np.inf), np.full(n, 2.0))
        # z_ia + z_ib <= 1 for b >= a + 2: only adjacent breakpoints together.
        first, second = np.triu_indices(k, 2)
        pairs = first.size
        pair_rows = np.arange(n * pairs).reshape(n, pairs)
        block(np.concatenate([pair_rows, pair_rows], axis=1),
              np.concatenate([z_index[:, first], z_index[:, second]], axis=1),
              np.ones((n, 2 * pairs)), np.full(n * pairs, -np.inf), np.ones(n * pairs))

    matrix = sp.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(sum(x.size for x in lower), n_var),
    )
    objective = np.zeros(n_var)
    objective[ny:ny + nl] = -(budgets[:, None] * value[None, :]).ravel()
    integrality = np.zeros(n_var, dtype=np.uint8)
    integrality[:ny] = 1
    upper_bound = np.ones(n_var)
    upper_bound[:ny] = fits.ravel().astype(float)
    if adjacency:
        integrality[ny + nl:] = 1
    return MilpModel(
        c=objective,
        integrality=integrality,
        bounds=Bounds(np.zeros(n_var), upper_bound),
        constraints=LinearConstraint(matrix, np.concatenate(lower), np.concatenate(upper)),
        n_jobs=n,
        n_rounds=rounds,
    )


def schedule_value(window: JobWindow, schedule: np.ndarray) -> tuple[float, np.ndarray]:
    """Exact NSWOT and progress of a 0/1 schedule (n, T); rounds past a job's end are wasted."""
    import numpy as np

    _, progress, base, _, _, cap, budgets = window_arrays(window)
    utilities = np.minimum(cap, base + (progress * schedule).sum(axis=1))
    with np.errstate(divide="ignore"):
        return float(budgets @ np.log(utilities)), utilities


def solve(window: JobWindow, time_limit: float = 15.0, mip_rel_gap: float = MIP_REL_GAP,
          adjacency: bool = False) -> MilpResult:
    """Build and solve Shockwave's MILP for `window` with HiGHS; see the module docstring."""
    import numpy as np
    from scipy.optimize import milp

    started = time.perf_counter()
    model = build(window, adjacency=adjacency)
    built = time.perf_counter()
    result = milp(
        model.c,
        integrality=model.integrality,
        bounds=model.bounds,
        constraints=model.constraints,
        options={"time_limit": float(time_limit), "mip_rel_gap": float(mip_rel_gap), "disp": False},
    )
    solved = time.perf_counter()
    n, rounds = model.n_jobs, model.n_rounds
    status = _STATUS.get(int(result.status), "error")
    dual_bound = getattr(result, "mip_dual_bound", None)
    gap = getattr(result, "mip_gap", None)
    if result.x is None:
        schedule = None
        nswot, utilities = float("nan"), np.full(n, np.nan)
        pwl = float("nan")
    else:
        schedule = np.round(result.x[: n * rounds]).reshape(n, rounds)
        nswot, utilities = schedule_value(window, schedule)
        pwl = -float(result.fun)
    matrix = model.constraints.A
    return MilpResult(
        status=status,
        message=str(result.message),
        schedule=schedule,
        mip_gap=float("nan") if gap is None else float(gap),
        pwl_objective=pwl,
        pwl_bound=float("nan") if dual_bound is None else -float(dual_bound),
        nswot=nswot,
        utilities=utilities,
        starved=int((utilities <= 0).sum()),
        build_s=built - started,
        solve_s=solved - built,
        n_binaries=int(model.integrality.sum()),
        n_variables=int(model.c.size),
        n_constraints=int(matrix.shape[0]),
    )


def build_parser() -> Parser:
    parser = Parser("benchmarks.shockwave_milp", __doc__)
    sizes = ", ".join(str(s) for s in SIZES)
    parser.add_argument("--size", default=120, check=Check(f"one of {sizes}", int, lambda size: size in SIZES),
                        help=f"the workload, by size: one of {sizes} (default 120)")
    parser.add_argument("--rounds", check=whole(1, 1000), default=20, help="rounds in the window (default 20)")
    parser.add_argument("--time-limit", check=number(0, DAY_S, open_low=True, open_high=False), default=15.0,
                        help="HiGHS time limit in seconds (default 15, the artifact's)")
    parser.add_argument("--adjacency", action="store_true",
                        help="add the artifact's adjacency binaries (same optimum, the artifact's model size)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        window = window_for(args.size, args.rounds).window
        result = solve(window, args.time_limit, adjacency=args.adjacency)
        print(f"size {args.size}: {result.n_binaries} binaries, {result.n_variables} variables, "
              f"{result.n_constraints} constraints; built in {result.build_s:.2f} s, solved in {result.solve_s:.2f} s")
        print(f"status {result.status} ({result.message}); MIP gap {result.mip_gap:.2e}; piecewise-linear "
              f"objective {result.pwl_objective:.6f} (bound {result.pwl_bound:.6f}); exact NSWOT {result.nswot:.6f}, "
              f"{result.starved} jobs with no progress")


if __name__ == "__main__":
    main()
