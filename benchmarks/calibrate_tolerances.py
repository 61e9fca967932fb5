"""Measure each residual of `vfm.check` in units of its tolerance base, per solver.

Feasibility and objective-level residuals are divided by the solver's accuracy and point-level
ones by its square root; the largest ratio over random markets is what `FEASIBILITY_FACTOR` (1,
market clearing and feasibility), `OBJECTIVE_FACTOR` (100) and `SOLUTION_FACTOR` (10) must cover.
The interior point's own answer is measured (``polish=False``: a polished plain market is exact
and says nothing about the tolerances). Run from the repository root::

    python -m benchmarks.calibrate_tolerances [--markets 60] [--seed 1]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from benchmarks._cli import Parser, seed, whole

if TYPE_CHECKING:
    import numpy as np

    import vfm

OBJECTIVE_LEVEL = {"market_clearing", "price_complementarity", "duality_gap", "buyer_optimality", "feasibility"}


def random_market(rng: np.random.Generator, kind: int) -> vfm.VolatileFisherMarket:
    """Plain (kind 0), capped (1), with base utility (2) or with utility caps (3)."""
    import numpy as np

    import vfm

    n, m, periods = int(rng.integers(2, 30)), int(rng.integers(1, 4)), int(rng.integers(1, 6))
    spread = rng.choice([0, 1, 3])
    shape = (n, m, periods)
    utilities = 10.0 ** rng.uniform(-spread, spread, shape) * (rng.random(shape) < 0.7)
    utilities[:, 0, 0] += utilities[:, 0, 0] == 0
    extensions: dict[str, np.ndarray] = {}
    if kind == 1:
        extensions["caps"] = np.where(rng.random(shape) < 0.5, rng.uniform(0.01, 1, shape), np.inf)
    if kind == 2:
        extensions["base_utility"] = rng.uniform(0, 5, n) * (rng.random(n) < 0.5)
    if kind == 3:
        extensions["base_utility"] = rng.uniform(0, 1, n)
        extensions["utility_cap"] = extensions["base_utility"] + rng.uniform(0.01, 3, n)
    budgets = np.ones(n) if kind % 2 else rng.uniform(0.1, 10, n)
    return vfm.VolatileFisherMarket(utilities, budgets, rng.uniform(0.5, 3, (m, periods)), **extensions)


def build_parser() -> Parser:
    parser = Parser("benchmarks.calibrate_tolerances", __doc__)
    parser.add_argument("--markets", check=whole(1, 100_000), default=60,
                        help="random markets per solver (default 60)")
    parser.add_argument("--seed", check=seed(), default=1, help="seed of the markets (default 1)")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    import numpy as np  # the library loads once the arguments are checked

    import vfm
    from vfm import check

    with parser.reporting():
        print("ratio of each residual to its tolerance base (accuracy, or its square root)")
        print(f"{'solver':<9} {'residual':<22} {'market':<6} {'max':>9} {'p90':>9} {'median':>9}")
        for solver in vfm.available_solvers():
            rng = np.random.default_rng(args.seed)
            ratios: dict[tuple[str, str], list[float]] = {}
            failures = 0
            for trial in range(args.markets):
                market = random_market(rng, trial % 4)
                result = vfm.solve(market, solver, polish=False)
                if not result.success:
                    failures += 1
                    continue
                residuals = [*check.certify(result), check.pareto_optimality(result)]
                if market.is_plain:  # EF and PR (budget-weighted) are theorems only there
                    residuals += [check.envy_freeness(result), check.proportionality(result)]
                for residual in residuals:
                    base = result.accuracy if residual.name in OBJECTIVE_LEVEL else np.sqrt(result.accuracy)
                    key = (residual.name, "plain" if market.is_plain else "ext")
                    ratios.setdefault(key, []).append(residual.value / base)
            for (name, kind), values in sorted(ratios.items()):
                v = np.array(values)
                print(f"{solver:<9} {name:<22} {kind:<6} {v.max():9.3g} {np.quantile(v, 0.9):9.3g} {np.median(v):9.3g}")
            print(f"{solver:<9} not certified: {failures} of {args.markets} markets")


if __name__ == "__main__":
    main()
