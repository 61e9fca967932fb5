"""`PlanOptions`: validated once, when built, naming the option."""

import re

import pytest

from vfm.errors import UnknownSolverError, ValidationError
from vfm.planner import PlanOptions, Policy


@pytest.mark.parametrize(("option", "value"), [
    ("rounds", 0), ("rounds", 2.5), ("round_s", 0.0), ("round_s", float("inf")), ("scenarios", 0),
    ("efficiency", -1e-3), ("efficiency", float("nan")), ("rho_max", 0.0), ("priority_exponent", -1.0),
    ("reserve", 1.0), ("reserve", -0.1), ("tol", 0.0), ("spread", -0.1), ("spread", "0.1"), ("tol", True),
    ("pace", "calendar"), ("pace", None),
    # Past the bounds the arithmetic needs (`round_s`'s and `MAX_WEIGHT`'s docstrings), and
    # integers beyond int64, which NumPy cannot compute with.
    ("round_s", 1.7e308), ("round_s", 1e12 * 1.01), ("round_s", 10**30), ("round_s", 10**400),
    ("efficiency", 1e308), ("efficiency", 1.01e6), ("spread", 1e308), ("spread", 1.01e6),
    ("rounds", 10**30), ("scenarios", 10**30), ("wait_limit", 10**30), ("threads", 10**30), ("threads", 10**400),
    ("rho_max", 10**400), ("time_limit_s", 10**30),
])
def test_a_bad_option_fails_when_the_options_are_built(option, value):
    with pytest.raises(ValidationError, match=rf"^{option} must be"):
        PlanOptions(**{option: value})
    # The same check, not a second one, guards the overrides of plan and Policy.
    with pytest.raises(ValidationError, match=rf"^{option} must be"):
        PlanOptions().updated(**{option: value})
    with pytest.raises(ValidationError, match=rf"^{option} must be"):
        Policy(4, **{option: value})


def test_an_unknown_backend_or_option_is_named():
    with pytest.raises(UnknownSolverError, match="'gurobi'"):
        PlanOptions(solver="gurobi")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=re.escape("horizon is not a planning option")):
        PlanOptions().updated(horizon=10)
    with pytest.raises(ValidationError, match=re.escape("horizon is not an argument of the policy")):
        Policy(4, horizon=10)


def test_options_are_frozen_and_overrides_make_a_copy():
    options = PlanOptions(rounds=10)
    with pytest.raises(AttributeError):
        options.rounds = 5  # type: ignore[misc]
    changed = options.updated(efficiency=0.05)
    assert (changed.rounds, changed.efficiency, options.efficiency) == (10, 0.05, 0.0)
    assert options.updated() is options
    assert Policy(4, options, replan_every=2).options is options


@pytest.mark.parametrize("tol", [float("nan"), -1e-9, 0.0, 1.0, 5.0, "1e-9", None])
def test_a_tolerance_that_is_no_relative_gap_is_rejected_by_the_options_and_by_every_backend(tol):
    import numpy as np

    from vfm.planner.program import PlanningProgram
    from vfm.planner.solve.backends import SaaCvxpyBackend, SaaIpmBackend
    from vfm.planner.solve.ipm import solve_saa_ipm

    if tol is not None:  # None is the options' default (`PlanOptions.backend_tol`), not the backends'
        with pytest.raises(ValidationError, match=r"^tol must be a relative gap in \(0, 1\) or None"):
            PlanOptions(tol=tol)
    program = PlanningProgram(progress=np.full((1, 1, 2), 0.1), base=np.zeros(1), budgets=np.ones(1),
                              gpus=np.ones(1), capacity=np.ones(2), round_s=1.0, remaining_s=np.ones(1))
    with pytest.raises(ValidationError, match=r"^tol must be a relative gap in \(0, 1\)"):
        solve_saa_ipm(program, tol=tol)  # was: NaN or negative ran to the iteration limit
    for backend in (SaaIpmBackend(), SaaCvxpyBackend()):  # the registry's check of their declared options
        with pytest.raises(ValidationError, match=rf"^option tol=.* of solver='{backend.name}' must be a number in "
                                                  r"\(0, 1\)"):
            backend.solve(program, tol=tol)
    with pytest.raises(ValidationError, match=r"^max_iter must be a positive whole number"):
        solve_saa_ipm(program, max_iter=0)


def test_a_policy_at_the_longest_round_keeps_re_planning_on_finite_times():
    # At round_s = 1.7e308 the clock (rounds served times round_s) overflowed within a few rounds
    # and every re-plan failed on "fair_finish_s contains NaN"; at the bound it stays finite.
    policy = Policy(4, rounds=4, replan_every=1, fairness=True, round_s=1e12)
    policy.add_job("a", 1, {32: 60.0}, 100)
    policy.add_job("b", 2, {32: 30.0}, 200)
    for _ in range(8):
        policy.next_round()
        assert policy.last_decision.replanned, policy.last_decision
