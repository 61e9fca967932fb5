r"""Planning with recourse: the first round shared by every scenario, the later rounds per scenario.

The sample-average program (`vfm.planner.program`) commits one schedule to every scenario. But
only the window's first round is executed before the planner sees more epochs and plans again;
the later rounds can wait and see. The two-stage program with recourse decides round 0 here and
now (:math:`y_{i0}`, shared: non-anticipativity) and rounds :math:`1 .. T-1` per scenario
(:math:`y^s_{it}`):

.. math::

    \max\; \sum_i \frac{B_i}{S} \sum_s \log\Big(c_i + a_{si0}\, y_{i0} + \sum_{t \ge 1} a_{sit}\, y^s_{it}\Big)
    \;-\; k \max\!\big(0, \max_i \bar S_i\big)

subject to :math:`\sum_i w_i y_{i0} \le G_0`, :math:`\sum_i w_i y^s_{it} \le G_t` for every
scenario and later round, the box, and the FTF rows :math:`\bar S_i \le b_i`, where
:math:`\bar S_i = \hat T_i - W\,(y_{i0} + \frac1S \sum_s \sum_{t \ge 1} y^s_{it})` is the time
left after the window in expectation over the scenarios. (Two approximations of the SAA's terms,
stated: the FTF rows and the efficiency term hold for the expected running time, not in every
scenario; with one scenario, or with schedules equal across scenarios, both are exact.)

Every schedule of the sample-average program is one of this program (:math:`y^s = y`), so its
optimum is at least the SAA's: recourse can only value the window more. It is the Bellman
recursion of docs/planning.md truncated after one stage: the scenarios' futures are known once
round 0 is chosen (a relaxation of the information structure, as in every two-stage model).

Lifting
    The program is a `PlanningProgram` of :math:`T' = 1 + S (T - 1)` rounds, solved as is by every
    planning backend: round 0 is :math:`v_i = S\, y_{i0} \le S` (capacity :math:`S G_0`, progress
    :math:`a_{si0} / S` in every scenario), round :math:`1 + s (T-1) + (t-1)` is
    :math:`y^s_{it}` (progress :math:`a_{sit}` in scenario `s`, 0 in the others); the time left
    :math:`S \hat T_i`, the FTF limits :math:`S b_i`, the efficiency weight :math:`k / S` and the
    tie-breaking weight :math:`\delta / S`. A job's running time in the lifted program,
    :math:`v_i + \sum_s \sum_t y^s_{it}`, is then `S` times its expected running time, so the FTF
    and efficiency rows keep the all-ones form the structured interior point is built for, and
    the capacity rows stay one per (lifted) round.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from vfm._validation import FloatArray
from vfm.planner.program import PlanningProgram
from vfm.solvers.base import Solution


def lifted(program: PlanningProgram) -> PlanningProgram:
    """The recourse program of `program` (S scenarios, T rounds) as a program of 1 + S (T - 1) rounds.

    Examples
    --------
    >>> import numpy as np
    >>> from vfm.planner import PlanningProgram
    >>> saa = PlanningProgram(progress=np.full((2, 1, 3), 0.1), base=np.zeros(1), weights=np.ones(1),
    ...                       gpus=np.ones(1), capacity=np.full(3, 2.0), round_s=60.0, remaining_s=np.full(1, 600.0))
    >>> two_stage = lifted(saa)
    >>> two_stage.shape, two_stage.bounds.tolist(), two_stage.capacity.tolist()
    ((2, 1, 5), [2.0, 1.0, 1.0, 1.0, 1.0], [4.0, 2.0, 2.0, 2.0, 2.0])
    >>> two_stage.progress[:, 0].round(2).tolist()
    [[0.05, 0.1, 0.1, 0.0, 0.0], [0.05, 0.0, 0.0, 0.1, 0.1]]
    """
    scenarios, n, rounds = program.shape
    later = rounds - 1
    progress = np.zeros((scenarios, n, 1 + scenarios * later))
    # A round-0 share the job cannot take (its gang does not fit) stays out of the lifted program too.
    progress[:, :, 0] = np.where(program.fits[:, 0], program.progress[:, :, 0], 0.0) / scenarios
    for s in range(scenarios):  # S slices of (n, T - 1), one per scenario
        progress[s, :, 1 + s * later: 1 + (s + 1) * later] = program.progress[s, :, 1:]
    limit = program.leftover_limit_s
    return replace(
        program,
        progress=progress,
        capacity=np.concatenate([[scenarios * program.capacity[0]], np.tile(program.capacity[1:], scenarios)]),
        remaining_s=scenarios * program.remaining_s,
        efficiency=program.efficiency / scenarios,
        leftover_limit_s=None if limit is None else scenarios * limit,
        spread=program.spread / scenarios,
        upper=np.concatenate([[float(scenarios)], np.ones(scenarios * later)]),
    )


def lifted_schedule(schedule: FloatArray, scenarios: int) -> FloatArray:
    """A schedule of shape (n, T) as the lifted program's (n, 1 + S (T - 1)): the same in every scenario."""
    return np.concatenate([scenarios * schedule[:, :1], np.tile(schedule[:, 1:], scenarios)], axis=1)


def scenario_schedules(lifted_x: FloatArray, scenarios: int) -> FloatArray:
    """The lifted program's solution as one schedule per scenario, shape (S, n, T): round 0 shared."""
    n = lifted_x.shape[0]
    later = lifted_x[:, 1:].reshape(n, scenarios, -1).transpose(1, 0, 2)
    first = np.broadcast_to(lifted_x[None, :, :1] / scenarios, (scenarios, n, 1))
    return np.concatenate([first, later], axis=2)


def projected(program: PlanningProgram, two_stage: PlanningProgram, solution: Solution) -> Solution:
    """The lifted program's `solution` in the terms of `program` (the sample-average one).

    `x`: round 0 as decided, later rounds the scenarios' mean (within the capacity, by convexity,
    and with the same expected running time, so the FTF rows still hold). `prices`: what one more
    GPU in a round is worth, summed over the scenarios' rows of that round. `gap`: the lifted
    optimum's certified bound minus the SAA objective of `x`; the lifted optimum is at least the
    SAA's, so ``program.objective(x) + gap`` still bounds every schedule of `program`. The row
    multipliers are the lifted program's, of other rows: dropped.
    """
    if solution.x is None:
        return solution
    scenarios, _, rounds = program.shape
    x = scenario_schedules(solution.x, scenarios).mean(axis=0)
    prices = None
    if solution.prices is not None:
        # Per lifted GPU; a real GPU of round 0 is S lifted ones.
        later = solution.prices[1:].reshape(scenarios, rounds - 1).sum(axis=0)
        prices = np.concatenate([[scenarios * solution.prices[0]], later])
    gap = solution.gap
    if np.isfinite(gap):
        gap = max(two_stage.objective(solution.x) + gap - program.objective(x), 0.0)
    return replace(solution, x=x, prices=prices, gap=gap, ftf_multipliers=None, efficiency_multipliers=None)
