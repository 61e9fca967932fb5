"""`vfm.planner.plan`: feasible whole-gang schedules, the relaxation against `vfm.solve`, the bound,
finish-time fairness, the efficiency term, validation and reproducibility."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import assume, given, reject, settings
from hypothesis import strategies as st

import vfm
from vfm.equilibrium import Status
from vfm.errors import UnknownSolverError, UnsupportedMarketError, ValidationError
from vfm.forecast import DirichletForecaster, JobStates
from vfm.jobs import window_market
from vfm.planner import JobTerms, plan
from vfm.planner.plan import OWED_PROGRESS_SHARE, owed_rounds
from vfm.planner.shockwave import FAIRNESS_MARGIN

from .strategies import FORECASTER, JobSet, job_sets

SOLVERS = ("saa-ipm", "cvxpy")
# Accuracy asked of saa-ipm by `plan` (its `tol` default): a certified gap of TOL * (sum B + |F|).
TOL = 1e-5


def _plan(case: JobSet, fair_finish_s=None, **kwargs):
    """`plan` on a random job set."""
    return plan(case.states, case.gpus, case.capacity, **case.kwargs(fair_finish_s=fair_finish_s), **kwargs)


def _certified(result) -> bool:
    """Whether `result.bound` is certified: an optimal solve, or saa-ipm stopped early, whose gap still
    bounds the optimum.

    Clarabel ends 'optimal_inaccurate' on rare random windows (about 1 in 400 in the deep profile);
    Plan documents that only `Status.OPTIMAL` certifies the bound, so those examples are left out."""
    if result.solver == "cvxpy" and result.status == Status.INACCURATE:
        reject()
    return result.status == Status.OPTIMAL or (result.solver == "saa-ipm" and result.status == Status.INACCURATE)


# --- 1. every round within capacity, whole gangs, only where the gang fits, never finished jobs ---------


@given(job_sets(), st.sampled_from([None, *SOLVERS]))
def test_schedule_is_whole_gangs_within_capacity(case, solver):
    result = _plan(case, solver=solver)
    schedule = result.schedule
    n = case.states.n_jobs
    # Boolean: a job runs the whole round on all its GPUs or not at all.
    assert schedule.dtype == np.bool_ and schedule.shape == (n, case.rounds)
    for t in range(case.rounds):
        assert case.gpus @ schedule[:, t] <= case.capacity[t], (t, schedule.astype(int))
    too_wide = case.gpus[:, None] > case.capacity[None, :]
    assert not schedule[too_wide].any()
    finished = case.states.remaining_epochs == 0
    assert not schedule[finished].any()
    if result.solver != "cvxpy":  # test_cvxpy_relaxation_gives_finished_jobs_no_time
        assert not result.relaxed[finished].any()
    for t in range(case.rounds):
        assert result.jobs_in_round(t) == [int(i) for i in np.flatnonzero(schedule[:, t])]
    # The relaxation is a schedule too: in the box, zero where the gang does not fit.
    assert np.all((result.relaxed >= 0) & (result.relaxed <= 1))
    assert not result.relaxed[too_wide].any()
    assert np.all(case.gpus @ result.relaxed <= case.capacity * (1 + 1e-7))


# --- 2. S = 1 without options: the relaxation is `vfm.solve` on the window market ------------------------


def _agreement_tolerance(reference: vfm.Equilibrium) -> float:
    r"""How far `plan(...).relaxed_objective` may be from `vfm.solve`'s objective (same program).

    Let :math:`F^*` be the optimum and :math:`W = \sum_i B_i`.

    * saa-ipm stops when its certified gap, in the objective scaled to budgets summing to 1, is
      at most ``TOL * (1 + |F / W|)``; unscaled that is ``TOL * (W + |F|)``. Its iterate is
      strictly feasible, so :math:`F^* - TOL\,(W + |F|) \le F_{ipm} \le F^*`.
    * cvxpy (Clarabel, relative tolerance 1e-8) is within about 1e-8 (1 + |F^*|): far inside.
    * The reference is within its own certified duality gap `g` of :math:`F^*` (below and, as it
      may be infeasible by its 1e-8 accuracy, a hair above), and `g` is about 1e-8 relative.

    So every backend is within ``TOL * (W + |F|) + |g|`` of the reference; a backend solving a
    different program (another forecast, budgets, the market's scaling) misses by far more.
    """
    return TOL * (reference.market.budgets.sum() + abs(reference.objective)) + abs(reference.duality_gap)


def _on_fitting_rounds(forecast: np.ndarray, gpus: np.ndarray, capacity: np.ndarray) -> np.ndarray:
    """What plan documents for a forecast of shape (n, T): a job's k-th round whose capacity fits
    its gang gets the forecast's round k, the others 0 (written per job, as the rule reads)."""
    moved = np.zeros_like(forecast)
    for job in range(forecast.shape[0]):
        rounds = np.flatnonzero(gpus[job] <= capacity)
        moved[job, rounds] = forecast[job, :rounds.size]
    return moved


def test_forecast_moves_onto_the_rounds_a_gang_fits():
    # Job 0 (4 GPUs) fits rounds 1 and 3 only; job 1 (1 GPU) fits every round.
    states = JobStates.from_lists([10, 10], [{32: 100.0}, {32: 100.0}])
    capacity = np.array([1.0, 4.0, 2.0, 4.0])
    forecast = DirichletForecaster().epochs_per_round(states, 4, 120.0)
    result = plan(states, [4, 1], capacity, rounds=4, solver="cvxpy")
    expected = _on_fitting_rounds(forecast, np.array([4, 1]), capacity) / 10.0
    np.testing.assert_allclose(result.program.progress[0], expected)
    np.testing.assert_allclose(result.program.progress[0, 0], [0.0, forecast[0, 0] / 10, 0.0, forecast[0, 1] / 10])


def _window_reference(case: JobSet) -> vfm.Equilibrium:
    states = case.states
    forecast = DirichletForecaster().epochs_per_round(states, case.rounds, case.round_s)
    window = window_market(
        case.gpus,
        epochs=states.total_epochs,
        epochs_done=states.epochs_done,
        epochs_per_round=_on_fitting_rounds(forecast, case.gpus, case.capacity),
        capacity=case.capacity,
        budgets=case.budgets,
    )
    reference = vfm.solve(window.market)
    assert reference.status == Status.OPTIMAL, reference.message
    return reference


@settings(max_examples=12)
@given(job_sets(scenarios=(1,), finished=False))
def test_relaxation_equals_vfm_solve_on_the_window_market(case):
    reference = _window_reference(case)
    tolerance = _agreement_tolerance(reference)
    for solver in SOLVERS:
        result = _plan(case, solver=solver, spread=0.0)  # the program itself, no tie-breaking term
        # Clarabel sometimes stops "optimal_inaccurate" on these windows (seen on one example when
        # the whole suite runs, never alone); `plan` then falls back to the next backend and says so.
        fell_back = solver == "cvxpy" and "optimal_inaccurate" in result.message
        assert (result.solver == solver or fell_back) and result.fairness == "none", result.message
        assert _certified(result), result.message
        # If saa-ipm stopped short of its tolerance (a known bug), its own certified gap still holds.
        allowed = max(tolerance, result.bound - result.relaxed_objective + abs(reference.duality_gap))
        assert abs(result.relaxed_objective - reference.objective) <= allowed, (solver, result.relaxed_objective,
                                                                                 reference.objective)


def shockwave_120() -> tuple[JobStates, np.ndarray, float, float]:
    """The busiest moment of the Shockwave 120-job workload (`vfm.cluster.windows.busiest_states`)."""
    from vfm.cluster.windows import busiest_states
    from vfm.cluster.workload import load_workload

    workload = load_workload("shockwave_120jobs_32gpus")
    states, gpus, capacity = busiest_states(workload)
    return states, gpus, float(capacity), float(workload.round_s)


def test_relaxation_equals_vfm_solve_on_the_shockwave_120_job_window():
    states, gpus, capacity, round_s = shockwave_120()
    assert states.n_jobs > 100
    case = JobSet(states=states, gpus=gpus, capacity=np.full(20, capacity), rounds=20, round_s=round_s,
                  scenarios=1, seed=0, budgets=np.ones(states.n_jobs))
    reference = _window_reference(case)
    tolerance = _agreement_tolerance(reference)
    for solver in SOLVERS:
        result = plan(states, gpus, capacity, rounds=20, round_s=round_s, solver=solver, spread=0.0)
        # Without the tie-breaking term the window is degenerate and saa-ipm stops at a certified
        # 8e-9 of the 1e-9 asked; plan keeps that (NEAR_TOLERANCE) and says so in the status.
        assert result.status == Status.OPTIMAL or (
            result.status == Status.INACCURATE and result.solver == "saa-ipm"), result.message
        assert abs(result.relaxed_objective - reference.objective) <= tolerance, solver
        # The tie-breaking term costs a little objective, and the bound still holds.
        tied = plan(states, gpus, capacity, rounds=20, round_s=round_s, solver=solver)
        assert tied.relaxed_objective <= reference.objective + tolerance <= tied.bound + 2 * tolerance
        assert result.rounded_objective <= result.bound + 1e-7 * (1 + abs(result.bound))


# --- 3. the rounded objective never beats the bound -----------------------------------------------------


def _bound_tolerance(result) -> float:
    # Every backend adds a certified gap: the bound holds exactly, up to evaluating the objective
    # in floating point.
    return 1e-9 * (1 + abs(result.bound))


@given(job_sets(), st.sampled_from([None, *SOLVERS]), st.sampled_from([0.0, 0.0, 1e-3]))
def test_rounded_objective_is_never_above_the_bound(case, solver, efficiency):
    result = _plan(case, solver=solver, efficiency=efficiency)
    assert _certified(result), result.message
    tolerance = _bound_tolerance(result)
    assert np.isfinite(result.bound)
    assert result.relaxed_objective <= result.bound + tolerance
    assert result.rounded_objective <= result.bound + tolerance
    assert result.rounding_gap >= -np.expm1(tolerance / result.program.budgets.sum())
    assert result.rounding_gap <= 1.0


# --- 5. finish-time fairness and the efficiency term ----------------------------------------------------


def _share_and_remaining(case: JobSet) -> tuple[float, np.ndarray]:
    return min(1.0, float(case.capacity.mean()) / case.states.n_jobs), FORECASTER.remaining_runtime(case.states)


@settings(max_examples=25)
@given(job_sets())
def test_generous_fair_finish_targets_are_held_as_constraints(case):
    targets = np.full(case.states.n_jobs, 1e9)
    result = _plan(case, fair_finish_s=targets)
    assert result.fairness == "constraints"
    # saa-ipm first (the fastest backend that holds FTF constraints); cvxpy only as its fallback.
    assert result.solver == "saa-ipm" or "(after saa-ipm:" in result.message, result.message
    assert _certified(result), result.message
    np.testing.assert_array_equal(result.program.budgets, case.budgets)
    limit = result.program.leftover_limit_s
    leftover = result.program.remaining_s - case.round_s * result.relaxed.sum(axis=1)
    assert np.all(leftover <= limit + 1e-6 * (1 + np.abs(limit) + result.program.remaining_s))


@settings(max_examples=30)
@given(job_sets(), st.floats(0.3, 3.0))
def test_saa_ipm_holds_fairness_constraints_like_cvxpy(case, slack):
    # Targets around each job's equal-share finish estimate: some sets feasible, some relaxed.
    share, remaining = _share_and_remaining(case)
    targets = np.maximum(remaining / share * slack, 1.0)
    ipm = _plan(case, fair_finish_s=targets, solver="saa-ipm")
    reference = _plan(case, fair_finish_s=targets, solver="cvxpy")
    assert _certified(ipm), ipm.message
    assert _certified(reference), reference.message
    # saa-ipm relaxes constraints that only the boundary of the box meets (it needs an interior
    # point); there cvxpy may still hold them. Elsewhere both solve the same program.
    assume(ipm.fairness == reference.fairness)
    limit = ipm.program.leftover_limit_s
    if ipm.fairness == "constraints":
        leftover = ipm.program.remaining_s - case.round_s * ipm.relaxed.sum(axis=1)
        assert np.all(leftover <= limit + 1e-6 * (1 + np.abs(limit) + ipm.program.remaining_s))
    # Both within their accuracy of the same optimum: saa-ipm's certified gap, Clarabel's 1e-7.
    tolerance = (ipm.bound - ipm.relaxed_objective) + 1e-7 * (1 + abs(reference.relaxed_objective))
    assert ipm.bound >= reference.relaxed_objective - tolerance
    assert abs(ipm.relaxed_objective - reference.relaxed_objective) <= tolerance


def test_fair_finish_constraint_binds_and_holds():
    # Three long jobs on 2 GPUs for 5 rounds. Job 0's target forces it at least 4.5 rounds; without
    # it the relaxation gives it about 3 (checked), so the constraint is active.
    states = JobStates.from_lists([40, 30, 20], [{32: 60.0, 64: 30.0}, {8: 50.0}, {16: 100.0}],
                                  [[32] * 3, [8], [16]])
    gpus, capacity, rounds, round_s = [1, 2, 1], 2, 5, 120.0
    free = plan(states, gpus, capacity, rounds=rounds, solver="cvxpy")
    assert free.relaxed[0].sum() < 4
    share = min(1.0, capacity / 3)
    remaining = FORECASTER.remaining_runtime(states)
    limit = remaining[0] - 4.5 * round_s  # job 0 must run 4.5 rounds
    target = limit / share + rounds * round_s  # rho_max = 1
    result = plan(states, gpus, capacity, rounds=rounds, round_s=round_s,
                  terms=JobTerms(fair_finish_s=[target, 1e9, 1e9]))
    assert result.fairness == "constraints" and result.status == Status.OPTIMAL
    np.testing.assert_allclose(result.program.leftover_limit_s[0], share * (target - rounds * round_s))
    assert result.relaxed[0].sum() >= 4.5 - 1e-6
    leftover = result.program.remaining_s - round_s * result.relaxed.sum(axis=1)
    limit_s = result.program.leftover_limit_s
    assert np.all(leftover <= limit_s + 1e-6 * (1 + np.abs(limit_s) + result.program.remaining_s))
    assert result.schedule[0].sum() >= 4  # owed round(4.5...) rounds, served first: the latest job


@settings(max_examples=25)
@given(job_sets(), st.data())
def test_impossible_fair_finish_targets_become_priorities(case, data):
    share, remaining = _share_and_remaining(case)
    finished = case.states.remaining_epochs == 0
    # A job that needs more running time than the window holds cannot meet a target of 1 ms:
    # T_i - W sum_t y_it >= T_i - T W > 0 > share (rho FT - T W).
    hopeless = ~finished & (remaining > case.rounds * case.round_s)
    tiny = np.array(data.draw(st.lists(st.booleans(), min_size=case.states.n_jobs, max_size=case.states.n_jobs)))
    assume((tiny & hopeless).any())
    targets = np.where(tiny, 1e-3, 1e9)
    rho_max, exponent = 1.0, 2.0
    result = _plan(case, fair_finish_s=targets, rho_max=rho_max, priority_exponent=exponent)
    assert _certified(result), result.message
    # Only the jobs that cannot meet their own targets lose their constraints. The others keep
    # theirs at a common bound: rho_max unless the tiny targets they can meet (finish within the
    # window) over-subscribe it. If the solver still finds them infeasible, all are dropped.
    assume(result.fairness == "constraints")
    assert result.ftf_bound >= rho_max
    # A tiny target asks a job to finish within the window at rho_max: it loses its constraint if
    # its forecast time left exceeds the rounds it can progress in. At the common bound (raised when
    # the tiny targets over-subscribe the cluster) its limit may leave it some time; it loses its
    # constraint too if it would still need all of its rounds but the margin that keeps a
    # constraint's interior nonempty.
    program = result.program
    runnable = program.runnable.sum(axis=1)

    def rounds_needed(bound: float) -> np.ndarray:
        limit = np.maximum(share * (bound * targets - case.rounds * case.round_s), 0.0)
        return np.maximum(remaining - limit, 0.0) / case.round_s

    at_bound = rounds_needed(result.ftf_bound)
    without_room = (at_bound > 0) & (at_bound > (runnable - FAIRNESS_MARGIN) * (1 + 1e-9))
    cannot = tiny & ~finished & ((rounds_needed(rho_max) > runnable + 1e-9) | without_room)
    np.testing.assert_array_equal(~np.isfinite(program.leftover_limit_s[~finished]), cannot[~finished])
    lateness = np.where(finished, 0.0, remaining / share / targets)
    late = cannot & (lateness > rho_max)
    priority = program.budgets / case.budgets
    np.testing.assert_array_equal(priority[~late], 1.0)
    # The late jobs' weights: lateness ** exponent, divided by one common factor when the weights
    # would span over 1e4 (each at least 1, so a late job's may be 1): the ratios among the late
    # jobs are kept unless one hits that floor.
    exact = lateness[late] ** exponent
    factor = max(1.0, exact.max() / 1e4)
    np.testing.assert_allclose(priority[late], np.maximum(exact / factor, 1.0), rtol=1e-9)


def _gpu_rounds_needed(result, rounds_s: float) -> float:
    limit = result.program.leftover_limit_s
    need = np.maximum(result.program.remaining_s - limit, 0.0) / rounds_s
    return float(result.program.gpus @ np.where(np.isfinite(limit), need, 0.0))


@pytest.mark.parametrize("reserve", [0.0, 0.25])
def test_oversubscribed_equal_shares_hold_the_tightest_bound(reserve):
    # Two 2-GPU gangs on 2 GPUs: the equal share (1 each) asks 4 GPUs per round. At rho_max both
    # must run every round; the plan holds both at the smallest common bound that fits instead.
    states = JobStates.from_lists([50, 50], [{32: 60.0}, {32: 40.0}])
    rounds, round_s = 6, 120.0
    remaining = FORECASTER.remaining_runtime(states)
    targets = remaining  # equal-share finish (share 1): each job alone from now
    result = plan(states, [2, 2], 2, rounds=rounds, round_s=round_s, terms=JobTerms(fair_finish_s=targets),
                  reserve=reserve)
    assert result.fairness == "constraints" and result.status == Status.OPTIMAL, result.message
    assert result.ftf_bound > 1.0
    # The bisection's bound: the GPU-rounds needed fill the window less the reserve and the 1 %
    # margin of a relaxed bound (to the bisection's 1e-6).
    np.testing.assert_allclose(_gpu_rounds_needed(result, round_s), 0.99 * (1 - reserve) * 2 * rounds, rtol=1e-5)
    np.testing.assert_allclose(result.program.leftover_limit_s,
                               np.maximum(result.ftf_bound * targets - rounds * round_s, 0.0))
    leftover = result.program.remaining_s - round_s * result.relaxed.sum(axis=1)
    limit = result.program.leftover_limit_s
    assert np.all(leftover <= limit + 1e-6 * (1 + limit + result.program.remaining_s))


@pytest.mark.parametrize("solver", ["saa-ipm", "cvxpy"])
def test_a_constraint_only_the_boundary_meets_becomes_a_priority(solver):
    # A job with exactly the window's running time left and a target inside the window must run
    # every round: feasible, but only on the boundary of the box, where an interior point has no
    # interior and backends resolve it differently. Every backend gets the same program: that job
    # is weighted by its priority instead, and the other job keeps its constraint.
    rounds, round_s = 4, 120.0
    states = JobStates.from_lists([rounds, 8], [{32: round_s}, {32: 60.0}])
    result = plan(states, [1, 1], 1, rounds=rounds, round_s=round_s, terms=JobTerms(fair_finish_s=[10.0, 1e9]),
                  solver=solver)
    assert result.fairness == "constraints" and result.ftf_bound == 1.0
    assert not np.isfinite(result.program.leftover_limit_s[0]) and result.program.budgets[0] > 1
    assert np.isfinite(result.program.leftover_limit_s[1]) and result.program.budgets[1] == 1
    assert result.status == Status.OPTIMAL, result.message


@pytest.mark.parametrize("scenarios", [1, 4])
def test_efficiency_term_is_solved_by_saa_ipm_as_by_cvxpy(scenarios):
    states = JobStates.from_lists([10, 12, 8], [{32: 60.0}, {8: 30.0, 16: 20.0}, {64: 90.0}], [[32], [], [64, 64]])
    kappa = 0.01 * 480 / 3
    # kappa such that k = kappa * (3 jobs' budgets) / (4 rounds * 120 s) = 0.01 per second of leftover.
    result = plan(states, [1, 1, 2], 2, rounds=4, scenarios=scenarios, seed=0, efficiency=kappa)
    assert result.solver == "saa-ipm" and result.status == Status.OPTIMAL
    assert result.program.efficiency == pytest.approx(0.01, rel=1e-12)
    reference = plan(states, [1, 1, 2], 2, rounds=4, scenarios=scenarios, seed=0, efficiency=kappa, solver="cvxpy")
    # CVXPY's optimum lies between saa-ipm's objective and its certified bound, to Clarabel's
    # accuracy: on this program with 4 scenarios its objective moves by 1e-7 (relative) when the
    # data move by rounding alone (the flat and the calendar pace give the same scenarios to 1e-16).
    tolerance = 2e-7 * (1 + abs(result.bound))
    assert result.relaxed_objective - tolerance <= reference.relaxed_objective <= result.bound + tolerance
    plain = plan(states, [1, 1, 2], 2, rounds=4, scenarios=scenarios, seed=0)
    assert plain.solver == "saa-ipm"
    # The efficiency term only lowers the objective: -k max_i S_i with S_i >= 0.
    assert result.bound <= plain.bound + 1e-7 * (1 + abs(plain.bound))


def test_solvers_that_cannot_solve_the_program_raise():
    states = JobStates.from_lists([10, 12], [{32: 60.0}, {8: 30.0}])
    with pytest.raises(UnknownSolverError, match="market"):
        plan(states, [1, 1], 1, rounds=3, solver="market")
    with pytest.raises(UnknownSolverError, match="gurobi"):
        plan(states, [1, 1], 1, rounds=3, solver="gurobi")
    assert issubclass(UnsupportedMarketError, ValueError)


# --- 6. malformed inputs name the job and the field -----------------------------------------------------


def test_validation_error_is_a_value_error():
    assert issubclass(vfm.errors.ValidationError, ValueError)


REGIMES = {32: 60.0, 64: 30.0}


@pytest.mark.parametrize(("build", "pattern"), [
    (lambda: JobStates.from_lists([10, -3], [REGIMES, REGIMES], job_ids=["ok", "neg"]),
     r"total_epochs\[1\] \(job 1 \(id 'neg'\)\) must be a positive whole number"),
    (lambda: JobStates.from_lists([10, 2.5], [REGIMES, REGIMES], job_ids=["ok", "half"]),
     r"total_epochs\[1\] \(job 1 \(id 'half'\)\)"),
    (lambda: JobStates.from_lists([2, 10], [REGIMES, REGIMES], [[32, 32, 64], []], job_ids=["over", "ok"]),
     r"observed\[0\] \(job 0 \(id 'over'\)\) lists 3 epochs, more epochs done"),
    (lambda: JobStates([2], [[2, 1]], [[60.0, 30.0]], np.ones((1, 2), dtype=bool), job_ids=["over"]),
     r"regime_counts\[0\] \(job 0 \(id 'over'\)\) sums to more epochs"),
    (lambda: JobStates.from_lists([10, 10], [REGIMES, REGIMES], [[], [32, 128]], job_ids=["ok", "odd"]),
     r"observed\[1\]\[1\] \(job 1 \(id 'odd'\)\) is batch size 128, which is not in"),
])
def test_malformed_job_states_name_the_job_and_field(build, pattern):
    with pytest.raises(ValueError, match=pattern) as raised:
        build()
    assert isinstance(raised.value, ValidationError)


STATES = JobStates.from_lists([10, 10, 10], [REGIMES, REGIMES, REGIMES], job_ids=["a", "b", "c"])


@pytest.mark.parametrize(("kwargs", "field", "job", "rule"), [
    ({"gpus": [0, 1, 1]}, "gpus[0]", "a", "positive whole number"),
    ({"gpus": [1, 1.5, 1]}, "gpus[1]", "b", "positive whole number"),
    ({"gpus": [1, 8, 1]}, "gpus[1]", "b", "wider"),
    ({"gpus": [1, 1, 1], "terms": JobTerms(budgets=[1.0, 1.0, -2.0])}, "budgets[2]", "c", "> 0"),
    ({"gpus": [1, 1, 1], "terms": JobTerms(fair_finish_s=[100.0, 0.0, 100.0])}, "fair_finish_s[1]", "b", "> 0"),
])
def test_malformed_plan_arguments_name_the_job_and_field(kwargs, field, job, rule):
    with pytest.raises(ValueError, match=re.escape(field)) as raised:
        plan(STATES, capacity=4, rounds=3, **kwargs)
    message = str(raised.value)
    assert isinstance(raised.value, ValidationError)
    assert f"id {job!r}" in message and rule in message, message


def test_a_job_term_given_as_an_option_is_pointed_to_job_terms():
    with pytest.raises(ValidationError, match=r"^budgets is a field of vfm.planner.JobTerms, not a planning option: "
                                              r"pass terms=JobTerms\(budgets=...\)$"):
        plan(STATES, [1, 1, 1], 4, rounds=3, budgets=[1.0, 1.0, 1.0])
    with pytest.raises(ValidationError, match=r"^terms must be a vfm.planner.JobTerms or None, got dict$"):
        plan(STATES, [1, 1, 1], 4, rounds=3, terms={"budgets": [1.0, 1.0, 1.0]})


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"capacity": [4, -1, 4]}, "capacity[1]"),
    ({"rounds": 0}, "rounds"),
    ({"round_s": -5.0}, "round_s"),
    ({"scenarios": 0}, "scenarios"),
    ({"rho_max": 0.0}, "rho_max"),
    ({"efficiency": -1.0}, "efficiency"),
    ({"reserve": 1.0}, "reserve"),
    ({"reserve": -0.1}, "reserve"),
    ({"budgets": [1.0, 1.0]}, "budgets"),
])
def test_malformed_window_arguments_are_named(kwargs, name):
    arguments = {"capacity": 4, "rounds": 3} | kwargs
    with pytest.raises(ValidationError, match=re.escape(name)):
        plan(STATES, [1, 1, 1], **arguments)


# --- 7. reproducibility ---------------------------------------------------------------------------------


def test_same_seed_same_schedule_with_scenarios():
    states = JobStates.from_lists(
        [30, 25, 40, 12, 18],
        [{32: 60.0, 64: 25.0, 128: 10.0}, {8: 45.0, 16: 90.0}, {32: 30.0, 64: 75.0}, {16: 40.0}, REGIMES],
        [[32, 64], [], [32] * 5 + [64], [16, 16], [64]],
    )
    gpus, capacity = [1, 2, 1, 2, 1], [3, 4, 2, 4]
    first = plan(states, gpus, capacity, rounds=4, scenarios=4, seed=123)
    again = plan(states, gpus, capacity, rounds=4, scenarios=4, seed=123)
    np.testing.assert_array_equal(first.schedule, again.schedule)
    np.testing.assert_array_equal(first.relaxed, again.relaxed)
    np.testing.assert_array_equal(first.program.progress, again.program.progress)
    generator = plan(states, gpus, capacity, rounds=4, scenarios=4, seed=np.random.default_rng(123))
    np.testing.assert_array_equal(first.program.progress, generator.program.progress)
    other = plan(states, gpus, capacity, rounds=4, scenarios=4, seed=124)
    assert not np.array_equal(first.program.progress, other.program.progress)  # the seed matters


# --- former library bugs (regression tests) ---------------------------------------------------------------


@pytest.mark.parametrize("solver", [None, "cvxpy"])
def test_finished_jobs_are_kept_in_place(solver):
    states = JobStates.from_lists([2, 3], [{32: 30.0}, {8: 10.0}], [[32, 32], [8]], job_ids=["done", "busy"])
    result = plan(states, [1, 1], 1, rounds=3, solver=solver)
    assert not result.schedule[0].any()
    reference = plan(states, [1, 1], 1, rounds=3, solver="saa-ipm")
    assert result.relaxed_objective == pytest.approx(reference.relaxed_objective, rel=1e-5, abs=1e-5)


def test_fresh_job_that_fits_only_later_rounds_is_planned():
    states = JobStates.from_lists([1, 5], [{32: 30.0}, {8: 100.0}])
    result = plan(states, [4, 1], [1, 4], rounds=2)
    assert result.schedule[0, 1]


@pytest.mark.parametrize("solver", ["saa-ipm", "cvxpy"])
def test_fresh_job_that_fits_only_later_rounds_with_scenarios(solver):
    # Job x: one epoch of 30 s or 200 s; 4 GPUs only in round 1. Seed 0 draws both cases.
    states = JobStates.from_lists([1, 3], [{32: 30.0, 64: 200.0}, {8: 50.0}], job_ids=["x", "y"])
    epochs = FORECASTER.sample_epochs_per_round(states, 2, 120.0, 4, seed=0)
    assert (epochs[:, 0, 1] == 0).any() and (epochs[:, 0, 1] > 0).any()
    result = plan(states, [4, 1], [1, 4], rounds=2, scenarios=4, seed=0, solver=solver)
    assert result.status == Status.OPTIMAL, result.message
    assert np.isfinite(result.bound) and 0 <= result.rounding_gap <= 1


def test_prioritized_job_with_efficiency_is_solved():
    states = JobStates.from_lists([40, 30, 20], [{32: 60.0, 64: 30.0}, {8: 50.0}, {16: 100.0}],
                                  [[32] * 3, [8], [16]])
    share = min(1.0, 2 / 3)
    target = FORECASTER.remaining_runtime(states)[0] / share / 10.0  # lateness 10
    result = plan(states, [1, 2, 1], 2, rounds=5, terms=JobTerms(fair_finish_s=[target, 1e9, 1e9]), efficiency=0.01)
    assert result.fairness == "constraints" and result.solver == "saa-ipm"
    assert not np.isfinite(result.program.leftover_limit_s[0]) and result.program.budgets[0] > 1
    assert result.status == Status.OPTIMAL, result.message
    assert result.rounded_objective <= result.bound + 1e-7 * (1 + abs(result.bound))


def test_rounding_keeps_fresh_jobs_planned_time_finite():
    states = JobStates.from_lists([22, 6], [{32: 124.0}, {32: 102.0}])
    result = plan(states, [1, 4], 4, rounds=3, solver="saa-ipm")
    assert result.relaxed[1].sum() > 2  # the relaxation plans it 2.25 rounds
    assert np.isfinite(result.rounded_objective)


def test_cvxpy_relaxation_gives_finished_jobs_no_time():
    states = JobStates.from_lists([1, 4], [{8: 1.0}, {8: 30.0}], [[8], []])
    result = plan(states, [1, 1], 2, rounds=2, round_s=60.0, solver="cvxpy")
    assert result.status == Status.OPTIMAL
    np.testing.assert_array_equal(result.relaxed[0], 0.0)


def test_saa_ipm_does_not_raise_on_a_degenerate_window():
    one = {8: 1.0}
    states = JobStates.from_lists(
        [1, 1, 1, 2, 3, 1, 1, 1, 1, 1],
        [one, one, one, {8: 1.0, 16: 1.0, 32: 1.0}, {8: 1.0, 16: 239.0, 32: 1.0}, one, {8: 356.0}, one, one, one],
        [[], [], [], [8, 8], [], [], [], [], [], []],
    )
    budgets = [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.5, 1.0, 1.0, 0.5]
    result = plan(states, [1] * 10, 1, rounds=4, round_s=60.0, terms=JobTerms(budgets=budgets), solver="saa-ipm")
    assert result.status in (Status.OPTIMAL, Status.INACCURATE)


def test_cvxpy_bound_with_efficiency_is_accurate():
    # Found by hypothesis (deep profile) in test_rounded_objective_is_never_above_the_bound.
    states = JobStates.from_lists(
        [50, 1, 6, 36, 45],
        [{128: 75.98754184, 32: 582.02378386, 256: 327.33296951}, {8: 120.0}, {8: 547.94677284},
         {128: 557.66920289, 8: 425.74053079, 32: 573.63099361}, {128: 1.0}],
        [[128] * 12 + [32] * 11 + [256] * 11, [8], [8, 8], [128] * 3 + [8] * 2 + [32], [128] * 12],
    )
    budgets = [3.94315652, 5.64480096, 5.44396952, 0.5, 6.2871907]
    result = plan(states, [4, 3, 1, 1, 1], [13, 7, 1, 11, 14], rounds=5, round_s=300.0, terms=JobTerms(budgets=budgets),
                  efficiency=0.001, solver="cvxpy")
    assert result.status == Status.OPTIMAL
    # Certified from Clarabel's multipliers: exact up to evaluating the objective (its optimum,
    # without a certificate, was off by more than its 1e-8 tolerance here).
    assert result.rounded_objective <= result.bound + 1e-9 * (1 + abs(result.bound))


@settings(max_examples=20)
@given(job_sets(), st.sampled_from([0.0, 1e-3]))
def test_cvxpy_certifies_the_same_bound_as_saa_ipm(case, efficiency):
    fast, reference = (_plan(case, solver=solver, efficiency=efficiency) for solver in SOLVERS)
    assume(fast.status == reference.status == Status.OPTIMAL and fast.fairness == reference.fairness)
    scale = 1 + abs(fast.bound)
    optimum = max(fast.relaxed_objective, reference.relaxed_objective)
    # Each bound is above both optima (certified); the two differ as the backends' schedules do
    # (the tie-breaking term's certificate is evaluated at each one).
    for result in (fast, reference):
        assert optimum <= result.bound + 1e-9 * scale
    assert reference.bound == pytest.approx(fast.bound, rel=1e-4, abs=1e-4)


def test_a_certified_gap_from_no_multipliers_still_bounds_the_optimum():
    from vfm.planner.solve.ipm import certified_gap

    states = JobStates.from_lists([50, 6, 36], [{128: 76.0, 32: 582.0}, {8: 548.0}, {128: 558.0, 8: 426.0}],
                                  [[128] * 12, [8, 8], [8] * 2])
    result = plan(states, [2, 1, 1], 3, rounds=4, round_s=300.0, efficiency=1e-3, solver="saa-ipm")
    assert result.status == Status.OPTIMAL
    zeros = np.zeros(states.n_jobs)
    for schedule in (result.relaxed, np.zeros_like(result.relaxed), np.full_like(result.relaxed, 0.5)):
        loose = result.program.objective(schedule) + certified_gap(result.program, schedule, zeros, zeros)
        assert loose >= result.relaxed_objective - 1e-9 * (1 + abs(loose))


@settings(max_examples=3, deadline=None)
@given(job_sets())
def test_a_certified_gap_near_the_tolerance_is_kept_and_one_far_from_it_falls_back(case):
    import vfm.planner.solve.backends as backends
    from vfm.planner.plan import NEAR_TOLERANCE
    from vfm.solvers import Solution

    def stopped_short(factor):
        def solve(program, tol, warm_start=None):
            return Solution(np.full(program.shape[1:], 0.5), np.zeros(program.shape[2]), Status.INACCURATE,
                            "saa-ipm stopped short", 9, 0.0, tol, gap=1.0, relative_gap=factor * tol)
        return solve

    original = backends.solve_saa_ipm
    try:
        backends.solve_saa_ipm = stopped_short(0.5 * NEAR_TOLERANCE)
        near = _plan(case, polish=False)  # the stub returns no multipliers to polish from
        backends.solve_saa_ipm = stopped_short(2 * NEAR_TOLERANCE)
        far = _plan(case, polish=False)
    finally:
        backends.solve_saa_ipm = original
    assert (near.solver, near.status, near.message) == ("saa-ipm", Status.INACCURATE, "saa-ipm stopped short")
    assert far.solver == "cvxpy" and "(after saa-ipm: saa-ipm stopped short)" in far.message, far.message


# --- issue 15: a plug-in forecaster's output is checked where the planner consumes it -----------


class _Malformed:
    """A forecaster whose every method returns a sound forecast except the one spoiled by `fault`."""

    def __init__(self, fault: str) -> None:
        self.fault = fault

    def remaining_runtime(self, states):
        runtime = np.full(states.n_jobs, 100.0)
        if self.fault == "runtime":
            runtime[1] = -1.0
        if self.fault == "runtime nan":
            runtime[1] = np.nan
        return runtime

    def epochs_per_round(self, states, rounds, round_s):
        epochs = np.ones((states.n_jobs, rounds))
        if self.fault == "nan":
            epochs[1, 2] = np.nan
        elif self.fault == "negative":
            epochs[1, 0] = -1.0
        elif self.fault == "too many":
            epochs[1] = 5.0
        elif self.fault == "shape":
            epochs = epochs[:, :-1]
        elif self.fault == "masked":
            epochs = np.ma.masked_array(epochs)
        elif self.fault == "text":
            epochs = "many"
        return epochs

    def sample_epochs_per_round(self, states, rounds, round_s, scenarios, seed=None):
        epochs = np.ones((scenarios, states.n_jobs, rounds))
        if self.fault == "scenario too many":
            epochs[2, 1] = 5.0
        return epochs


@pytest.mark.parametrize(("fault", "message"), [
    ("nan", r"^_Malformed.epochs_per_round returned NaN \(nan epochs\) for job 1 \(id 'b'\) in round 2"),
    ("negative", r"^_Malformed.epochs_per_round returned a negative value \(-1 epochs\) for job 1 \(id 'b'\) in "
                 r"round 0"),
    ("too many", r"^_Malformed.epochs_per_round forecasts 20 epochs over the window for job 1 \(id 'b'\), more than "
                 r"the 10 it has left"),
    ("scenario too many", r"^_Malformed.sample_epochs_per_round forecasts 20 epochs over the window for job 1 "
                          r"\(id 'b'\) in scenario 2, more than the 10 it has left"),
    ("shape", r"^_Malformed.epochs_per_round returned shape \(2, 3\); the planner needs shape \(2, 4\)"),
    ("masked", r"^_Malformed.epochs_per_round returned a numpy masked array"),
    ("text", r"^_Malformed.epochs_per_round must return a numeric array of shape \(2, 4\), got str"),
    ("runtime", r"^_Malformed.remaining_runtime returned a negative value \(-1 seconds\) for job 1 \(id 'b'\)"),
    ("runtime nan", r"^_Malformed.remaining_runtime returned NaN \(nan seconds\) for job 1 \(id 'b'\)"),
])
def test_a_malformed_forecast_names_the_forecaster_the_method_and_the_job(fault, message):
    # Was: "utilities contains NaN at index (0, 0, 0, 0)", or accepted silently.
    states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}], job_ids=["a", "b"])
    with pytest.raises(ValidationError, match=message):
        plan(states, [1, 1], 1, rounds=4, scenarios=4, seed=0, forecaster=_Malformed(fault))


def test_a_forecast_within_a_relative_1e_9_of_the_epochs_left_is_accepted():
    states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}], job_ids=["a", "b"])

    class Fluid(_Malformed):
        def epochs_per_round(self, states, rounds, round_s):
            return np.full((states.n_jobs, rounds), 2.5 * (1 + 5e-10))  # 10 epochs plus float noise

    # At the calendar pace, where the planner consumes the per-round forecast.
    assert plan(states, [1, 1], 1, rounds=4, forecaster=Fluid(""), pace="forecast").schedule.shape == (2, 4)


@pytest.mark.parametrize("argument", ["gpus", "budgets", "fair_finish_s"])
def test_plan_rejects_a_masked_array_instead_of_reading_its_raw_data(argument):
    states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}])
    values = {"gpus": [1, 1], "budgets": [1.0, 1.0], "fair_finish_s": [600.0, 600.0]}
    values[argument] = np.ma.masked_array(values[argument], mask=[False, True])
    gpus = values.pop("gpus")
    with pytest.raises(ValidationError, match=rf"^{argument} is a numpy masked array"):
        plan(states, gpus, 2, rounds=3, terms=JobTerms(**values))


def test_a_plan_pickles_and_comes_back_read_only():
    import pickle

    states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}])
    result = pickle.loads(pickle.dumps(plan(states, [1, 1], 1, rounds=3)))
    for array in (result.schedule, result.relaxed, result.program.progress):
        with pytest.raises(ValueError):
            array.setflags(write=True)


@pytest.mark.parametrize(
    ("overrides", "pattern"),
    [
        ({"gpus": [True, True]}, r"gpus must hold numbers, got booleans"),
        ({"capacity": True}, r"capacity must hold numbers, got booleans"),
        ({"seed": "x", "scenarios": 2}, r"seed must be None, a whole number >= 0, a numpy SeedSequence or Generator"),
        ({"seed": -1, "scenarios": 2}, r"seed must be None, a whole number >= 0"),
    ],
)
def test_booleans_and_bad_seeds_are_rejected_by_name(overrides, pattern):
    states = JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}])
    arguments = {"gpus": [1, 1], "capacity": 2, "rounds": 3, **overrides}
    with pytest.raises(ValidationError, match=pattern):
        vfm.planner.plan(states, **arguments)


def test_owed_rounds_with_one_scenario_are_every_round_with_progress():
    progress = np.array([[[0.5, 0.5, 0.1, 0.0]]])
    np.testing.assert_array_equal(owed_rounds(progress), [[True, True, True, False]])


def test_owed_rounds_with_scenarios_skip_rounds_most_scenarios_have_the_job_finished():
    # Expected progress 0.5, 0.5, 0.2, 0.25 against a best of 0.5: the last two rounds are below half
    # of it although one scenario credits progress there.
    progress = np.array([[[0.5, 0.5, 0.0, 0.0]], [[0.5, 0.5, 0.4, 0.5]]])
    np.testing.assert_array_equal(owed_rounds(progress), [[True, True, False, True]])
    assert OWED_PROGRESS_SHARE == 0.5
    # A job with no progress in any round owes none.
    np.testing.assert_array_equal(owed_rounds(np.zeros((2, 1, 3))), [[False, False, False]])


def test_several_scenarios_round_the_busiest_120_job_moment_within_one_percent():
    # Chosen at the 900-job busiest moment (OWED_PROGRESS_SHARE); at 120 jobs, S = 16: 0.65 %
    # (1.54 % serving owed rounds wherever some scenario credits progress).
    from benchmarks.plan import busiest_states

    states, gpus, capacity = busiest_states("shockwave_120jobs_32gpus")
    result = plan(states, gpus, capacity, scenarios=16, seed=0)
    assert result.rounding_gap <= 0.01
