"""The scheduler-facing policy: re-planning triggers, capacity every round, completion, validation."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vfm.errors import ValidationError
from vfm.planner import PlanOptions, Policy
from vfm.planner.policy.replanning import warm_start

REGIMES = {32: 50.0, 64: 30.0}


def _run(policy: Policy, rounds: int, batch: int = 32) -> list[list[object]]:
    """A toy scheduler: each running job finishes the whole epochs that fit in a round."""
    served = []
    for _ in range(rounds):
        running = policy.next_round()
        served.append(running)
        for job in running:
            epochs = int(policy.options.round_s // policy.regimes(job)[batch])
            policy.report_progress(job, [batch] * min(epochs, policy.epochs_left(job)))
    return served


def test_replans_on_arrival_completion_and_every_k_rounds():
    policy = Policy(capacity=4, rounds=10, replan_every=3)
    for k in range(3):
        policy.add_job(f"job{k}", gpus=2, regimes=REGIMES, epochs=200)
    _run(policy, 1)
    assert policy.replans == 1
    _run(policy, 2)
    assert policy.replans == 1  # rounds 2 and 3 come from the standing plan
    _run(policy, 1)
    assert policy.replans == 2  # K = 3 rounds served
    policy.add_job("late", gpus=1, regimes=REGIMES, epochs=2)
    _run(policy, 1)
    assert policy.replans == 3  # arrival
    if "late" not in policy.completed:  # it needs 2 epochs of 50 s: one round, if it ran
        _run(policy, 1)
        assert policy.replans == 3
    assert "late" in policy.completed and "late" not in policy.jobs
    replans = policy.replans
    _run(policy, 1)
    assert policy.replans == replans + 1  # completion


def test_by_default_a_policy_replans_every_8_rounds_or_every_windows_rounds_if_fewer():
    from vfm.planner import RoundOptions
    from vfm.planner.policy.state import REPLAN_EVERY

    assert RoundOptions().replan_every is None and REPLAN_EVERY == 8
    assert [Policy(4, rounds=rounds).replan_every for rounds in (20, 8, 6, 1)] == [8, 8, 6, 1]
    assert Policy.shockwave(8).replan_every == 8 and Policy.shockwave(8, rounds=6).replan_every == 6
    # The interval in force is what the policy does: with a window of 6 rounds, a re-plan every 6.
    policy = Policy(capacity=4, rounds=6)
    for k in range(3):
        policy.add_job(f"job{k}", gpus=2, regimes=REGIMES, epochs=500)
    replans = []
    for _ in range(13):
        _run(policy, 1)
        replans.append(policy.replans)
    assert replans == [1] * 6 + [2] * 6 + [3]


@pytest.mark.parametrize("rounds", [6, 1])
def test_a_replan_every_longer_than_the_window_is_refused_naming_it(rounds):
    from vfm.planner import RoundOptions

    message = (rf"^replan_every must be a positive whole number of rounds, at most {rounds} \(rounds, the window a "
               rf"plan covers: .*\), got {rounds + 2}$")
    with pytest.raises(ValidationError, match=message):
        Policy(4, rounds=rounds, replan_every=rounds + 2)
    with pytest.raises(ValidationError, match=message):
        Policy(4, PlanOptions(rounds=rounds), round_options=RoundOptions(replan_every=rounds + 2))
    with pytest.raises(ValidationError, match=message):
        Policy.shockwave(4, rounds=rounds, replan_every=rounds + 2)
    assert Policy(4, rounds=rounds, replan_every=rounds).replan_every == rounds  # the window itself is accepted


def test_every_round_fits_the_capacity_with_whole_gangs_and_jobs_complete():
    rng = np.random.default_rng(3)
    policy = Policy(capacity=8, rounds=6, round_s=120.0, scenarios=4, seed=1)
    gpus = {}
    for k in range(7):
        gpus[k] = int(rng.choice([1, 2, 4]))
        policy.add_job(k, gpus=gpus[k], regimes=REGIMES, epochs=int(rng.integers(3, 30)))
    for _ in range(200):
        running = policy.next_round()
        assert sum(gpus[j] for j in running) <= 8
        assert len(set(running)) == len(running)
        for job in running:
            epochs = int(120.0 // REGIMES[32])
            policy.report_progress(job, [32] * min(epochs, policy.epochs_left(job)))
        if not policy.jobs:
            break
    assert sorted(policy.completed) == list(range(7))


def test_work_conserving_when_jobs_are_waiting():
    policy = Policy(capacity=4, rounds=5)
    for k in range(6):
        policy.add_job(k, gpus=1, regimes=REGIMES, epochs=100)
    for running in _run(policy, 5):
        assert len(running) == 4  # six 1-GPU jobs with work left: no GPU idles


def test_fairness_targets_plan_with_constraints_or_relaxation():
    policy = Policy(capacity=2, rounds=5, fairness=True)
    for k in range(4):
        policy.add_job(k, gpus=1, regimes=REGIMES, epochs=40)
    _run(policy, 2)
    plan = policy.last_plan
    assert plan is not None and plan.fairness in ("constraints", "relaxed")
    assert plan.solver == "saa-ipm"


def test_remove_job_and_bad_inputs_name_the_job():
    policy = Policy(capacity=4)
    policy.add_job("a", gpus=2, regimes=REGIMES, epochs=10)
    with pytest.raises(ValidationError, match="'a' is already"):
        policy.add_job("a", gpus=2, regimes=REGIMES, epochs=10)
    with pytest.raises(ValueError, match=r"gpus of job 'b'.*positive whole number"):
        policy.add_job("b", gpus=0, regimes=REGIMES, epochs=10)
    with pytest.raises(ValueError, match=r"gpus of job 'c' must be .*, at most 4 \(the cluster's GPUs\), got 5"):
        policy.add_job("c", gpus=5, regimes=REGIMES, epochs=10)
    with pytest.raises(ValueError, match=r"^epochs of job 'd' must be a positive whole number, at most 1e\+09 "
                                         r"\(MAX_JOB_EPOCHS\), got -3$"):
        policy.add_job("d", gpus=1, regimes=REGIMES, epochs=-3)
    with pytest.raises(ValueError, match=r"batch_sizes\[1\] of job 'a' must be 32\.0 or 64\.0, got 128\.0$"):
        policy.report_progress("a", [32, 128])
    with pytest.raises(ValueError, match=r"the epochs reported in batch_sizes of job 'a' must be a whole number in "
                       r"\[0, 10\] \(the epochs the job has left, of its 10\), got 11$"):
        policy.report_progress("a", [32] * 11)
    with pytest.raises(ValueError, match=r"batch_sizes of job 'a' must be a list of batch sizes"):
        policy.report_progress("a", ["x"])
    assert policy.epochs_left("a") == 10  # a rejected report changes nothing
    with pytest.raises(ValueError, match="'zzz' is not in the policy"):
        policy.report_progress("zzz", [32])
    policy.remove_job("a")
    assert policy.jobs == [] and policy.next_round() == []


@pytest.mark.parametrize("execution", ["credit", "window"])
def test_identical_jobs_share_a_gpu_evenly(execution):
    # Three identical long jobs on one GPU: every plan gives each a third of every round, so over
    # six rounds each runs twice (credit: a third a round, made up when not served; window: the
    # plan's rounded schedule). Without continuity: each job then runs every third round.
    policy = Policy(capacity=1, rounds=6, replan_every=6, execution=execution, continuity=0.0)
    for k in range(3):
        policy.add_job(k, gpus=1, regimes={32: 1000.0}, epochs=50)
    served = _run(policy, 6)
    assert policy.replans == 1
    counts = np.bincount([job for running in served for job in running], minlength=3)
    np.testing.assert_array_equal(counts, [2, 2, 2])


def test_credit_carries_across_replans():
    # Two 1-GPU jobs on one GPU, re-planned every round: the plan gives each half of every round,
    # and the credit alternates them; without it, each fresh plan would serve the same job.
    policy = Policy(capacity=1, rounds=4, replan_every=1, continuity=0.0)
    policy.add_job("a", gpus=1, regimes={32: 1000.0}, epochs=50)
    policy.add_job("b", gpus=1, regimes={32: 1000.0}, epochs=50)
    served = _run(policy, 6)
    assert policy.replans == 6
    assert sorted(job for running in served for job in running) == ["a"] * 3 + ["b"] * 3


@pytest.mark.parametrize(("continuity", "stretch"), [(0.0, 1), (1.0, 3), (2.0, 5)])
def test_continuity_serves_longer_stretches_with_the_same_shares(continuity, stretch):
    # Two identical jobs planned half of every round each on one GPU. Without continuity they
    # alternate. With continuity c the running job's claim is its credit plus c: it keeps the GPU
    # until the waiting job is owed more, so they swap every 2c + 1 rounds, and over 24 rounds
    # their counts differ by less than one stretch.
    policy = Policy(capacity=1, rounds=4, replan_every=1, continuity=continuity)
    policy.add_job("a", gpus=1, regimes={32: 1000.0}, epochs=50)
    policy.add_job("b", gpus=1, regimes={32: 1000.0}, epochs=50)
    served = [running[0] for running in _run(policy, 24)]
    runs = [len(list(group)) for _, group in itertools.groupby(served)]
    assert set(runs[1:-1]) == {stretch}, served
    assert abs(served.count("a") - served.count("b")) < stretch or stretch == 1


def test_unknown_execution_is_named():
    with pytest.raises(ValidationError, match="execution"):
        Policy(capacity=1, execution="greedy")  # type: ignore[arg-type]


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"efficiency": -1.0}, "efficiency"),
    ({"rho_max": 0.0}, "rho_max"),
    ({"priority_exponent": float("nan")}, "priority_exponent"),
    ({"reserve": 1.0}, "reserve"),
    ({"rounds": 0}, "rounds"),
    ({"round_s": float("nan")}, "round_s"),
    ({"scenarios": 0}, "scenarios"),
    ({"solver": "bogus"}, "solver"),
    ({"forecaster": object()}, "forecaster"),
    ({"fairness": "yes"}, "fairness"),
    ({"seed": -1}, "seed"),
    ({"replan_every": 0}, "replan_every"),
])
def test_bad_planning_options_fail_on_construction(kwargs, name):
    # Checked where the policy is built, not at its first re-plan rounds later.
    with pytest.raises(ValidationError, match=name):
        Policy(capacity=4, **kwargs)


def test_a_job_one_epoch_from_its_end_is_not_starved():
    # Three 1-GPU jobs with hours of work and one with a single 1 s epoch left, on 1 GPU. Its
    # finish-time-fairness target makes the plan give the nearly finished job about 1/120 of a
    # round; counted in the rounds it can use, that is all it needs, so it runs in the first
    # rounds instead of after its credit builds up (1/120 a round).
    policy = Policy(capacity=1, rounds=20, fairness=True)
    for k in range(3):
        policy.add_job(f"long{k}", gpus=1, regimes={32: 60.0}, epochs=500)
    policy.add_job("almost", gpus=1, regimes={32: 1.0}, epochs=1000)
    policy.report_progress("almost", [32] * 999)
    served = _run(policy, 2)
    assert "almost" in policy.completed and ["almost"] in served


def test_the_shockwave_configuration_is_the_reproductions():
    policy = Policy.shockwave(256, round_s=120.0, seed=3)
    assert policy.fairness and policy.execution == "credit" and policy.replan_every == 8 and policy.seed == 3
    options = policy.options
    assert (options.rounds, options.round_s, options.rho_max) == (20, 120.0, 1.0)
    assert (options.efficiency, options.reserve, options.priority_exponent) == (1.0, 0.3, 15.0)
    assert (policy.config.max_wait, policy.config.continuity) == (80, 2.0)
    # One configuration for every cluster; overrides win.
    assert Policy.shockwave(40).options == Policy.shockwave(2048).options.updated(round_s=120.0)
    assert Policy.shockwave(64, efficiency=0.0).options.efficiency == 0.0


def test_the_state_is_frozen_and_a_restored_policy_continues_identically():
    import pickle

    policy = Policy.shockwave(4, rounds=6)
    for k, gpus in enumerate([1, 2, 1, 1, 4]):
        policy.add_job(k, gpus=gpus, regimes=REGIMES, epochs=30 + 7 * k)
    _run(policy, 3)
    checkpoint = pickle.dumps(policy.state)
    ahead = _run(policy, 12)
    restored = Policy.shockwave(4, rounds=6)
    restored.restore(pickle.loads(checkpoint))
    assert _run(restored, 12) == ahead and restored.completed == policy.completed
    state = policy.state
    with pytest.raises(AttributeError):
        state.round_index = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        state.jobs["new"] = state.jobs[next(iter(state.jobs))]  # type: ignore[index]
    with pytest.raises(ValidationError, match="state must be a PolicyState"):
        restored.restore({"jobs": {}})  # type: ignore[arg-type]


def test_the_step_is_pure_and_the_plan_it_hands_out_read_only():
    from vfm.planner.policy import step

    policy = Policy(capacity=2, rounds=4)
    for k in range(4):
        policy.add_job(k, gpus=1, regimes=REGIMES, epochs=20)
    before = policy.state
    first, served = step(policy.config, before)
    again, served_again = step(policy.config, before)
    assert served == served_again and policy.state is before and first.round_index == 1
    assert first.plan is not None and np.array_equal(first.plan.schedule, again.plan.schedule)
    policy.next_round()
    plan_ = policy.last_plan
    assert plan_ is not None
    for array in (plan_.schedule, plan_.relaxed, plan_.prices, policy.state.credit):
        with pytest.raises(ValueError, match="read-only"):
            array[...] = 0


def test_the_policy_records_the_order_of_regimes_and_teaches_completed_jobs():
    from vfm.forecast import PopulationForecaster

    policy = Policy(capacity=2, rounds=4, forecaster=PopulationForecaster())
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=6, kind="lm")
    policy.add_job("b", gpus=1, regimes=REGIMES, epochs=6)  # kind unknown: never taught
    policy.report_progress("a", [32, 32, 64])
    policy.report_progress("a", [64, 32])
    record = policy.state.jobs["a"]
    assert record.stages == ((0, 2), (1, 2), (0, 1)) and record.recent == (0, 1, 2)
    policy.next_round()  # the states the re-plan forecast from carry the order, not only counts
    assert policy.forecaster.population.size == 0
    policy.report_progress("a", [64])
    policy.report_progress("b", [32] * 6)
    assert [t.group for t in policy.state.finished] == ["lm"]
    np.testing.assert_array_equal(policy.state.finished[0].ranks, [0, 0, 1, 1, 0, 1])
    policy.add_job("c", gpus=1, regimes={16: 80.0, 48: 20.0}, epochs=12, kind="lm")
    policy.next_round()  # the re-plan teaches what completed, once
    taught = policy.forecaster
    assert isinstance(taught, PopulationForecaster) and taught.population.size == 1
    assert policy.state.finished == ()
    policy.next_round()
    assert policy.forecaster is taught


def test_a_forecaster_that_does_not_learn_is_left_as_configured():
    policy = Policy(capacity=1, rounds=4)
    configured = policy.forecaster
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=1, kind="lm")
    policy.report_progress("a", [32])
    policy.add_job("b", gpus=1, regimes=REGIMES, epochs=3, kind="lm")
    policy.next_round()
    assert policy.forecaster is configured and policy.state.finished == ()


def test_an_unhashable_kind_is_named():
    policy = Policy(capacity=2)
    with pytest.raises(ValidationError, match=r"kind of job 'a' must be hashable.*got list"):
        policy.add_job("a", gpus=1, regimes=REGIMES, epochs=4, kind=["lm"])
    assert policy.jobs == []


# --- issue 15: results immutable, events checked --------------------------------------------------


def _assert_frozen(array: np.ndarray) -> None:
    """Writing raises, and so does making it (or what it views) writable again."""
    assert not array.flags.writeable
    with pytest.raises(ValueError):
        array.setflags(write=True)
    base = array.base
    while isinstance(base, np.ndarray):
        with pytest.raises(ValueError):
            base.setflags(write=True)
        base = base.base


def test_a_plan_and_the_policy_state_hand_out_arrays_no_caller_can_write():
    policy = Policy(capacity=2, rounds=4)
    for job, gpus in (("a", 1), ("b", 1), ("c", 2)):
        policy.add_job(job, gpus=gpus, regimes=REGIMES, epochs=100)
    first = policy.next_round()
    plan = policy.last_plan
    assert plan is not None
    program = plan.program
    for array in (plan.schedule, plan.relaxed, plan.prices, program.progress, program.base, program.budgets,
                  program.gpus, program.capacity, program.remaining_s, program.fits, program.runnable,
                  program.bounds, policy.state.credit, policy.state.waited, policy.state.ran_last):
        _assert_frozen(array)
    with pytest.raises(ValueError):
        plan.schedule[:] = True  # was: every job in every round, the policy's next round over capacity
    with pytest.raises(TypeError):
        plan.timings["total"] = 0.0  # type: ignore[index]
    # The policy is unaffected: the next rounds fit the cluster.
    assert sum({"a": 1, "b": 1, "c": 2}[job] for job in first) <= 2
    for _ in range(3):
        assert sum({"a": 1, "b": 1, "c": 2}[job] for job in policy.next_round()) <= 2


def test_a_job_id_is_unique_over_the_policys_life():
    policy = Policy(capacity=2, rounds=4)
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=2)
    policy.report_progress("a", [32, 32])
    with pytest.raises(ValidationError, match=r"^job 'a' has already completed in this policy; job ids must be"):
        policy.add_job("a", gpus=1, regimes=REGIMES, epochs=2)
    assert policy.completed == ["a"]  # was ['a', 'a'] after the second run
    with pytest.raises(ValidationError, match="job 'a' has completed all its epochs"):
        policy.report_progress("a", [32])
    with pytest.raises(ValidationError, match=r"^job_id must be hashable"):
        policy.add_job(["b"], gpus=1, regimes=REGIMES, epochs=2)  # type: ignore[arg-type]
    policy.add_job("b", gpus=1, regimes=REGIMES, epochs=2)
    policy.remove_job("b")
    policy.add_job("b", gpus=1, regimes=REGIMES, epochs=2)  # a removed job's id may come back
    assert policy.jobs == ["b"]


@pytest.mark.parametrize(("batch_sizes", "message"), [
    ("32", r"must be a list of batch sizes, one number per epoch \(as \[32, 32\]\), got str '32'"),
    (b"32", "got bytes"),
    (32, "got int 32"),
    ({32: 1}, "got dict"),
    ([[32]], r"must be a flat list, one batch size per epoch, got shape \(1, 1\)"),
    ([float("nan")], r"batch_sizes of job 'a': entry 0 is nan, not a batch size"),
    ([32, None], "must be a list of batch sizes \\(real numbers\\)"),
    ([True], "must be a list of batch sizes \\(real numbers\\)"),
    (np.ma.masked_array([32, 64], mask=[False, True]), "is a numpy masked array"),
])
def test_report_progress_rejects_what_is_not_a_list_of_batch_sizes(batch_sizes, message):
    policy = Policy(capacity=2, rounds=4)
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=10)
    with pytest.raises(ValidationError, match=message):
        policy.report_progress("a", batch_sizes)
    assert policy.epochs_done("a") == 0 and policy.epochs_left("a") == 10  # nothing counted
    policy.report_progress("a", np.array([32, 64]))
    assert policy.epochs_done("a") == 2


def test_a_batch_size_outside_the_jobs_regimes_is_refused_by_name_and_nothing_is_counted():
    policy = Policy(capacity=2, rounds=4)
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=10)
    with pytest.raises(ValidationError, match=r"^batch_sizes\[1\] of job 'a' must be 32.0 or 64.0, got 48.0$"):
        policy.report_progress("a", [32, 48, 64])
    assert policy.epochs_done("a") == 0
    policy.report_progress("a", [32.0, 64, 64])  # an int and a float of the same size are one regime
    assert policy.epochs_done("a") == 3


def test_each_report_counts_new_epochs_and_epochs_done_tells_a_retry():
    policy = Policy(capacity=2, rounds=4)
    policy.add_job("a", gpus=1, regimes=REGIMES, epochs=10)
    policy.report_progress("a", [32, 32])
    policy.report_progress("a", [32, 32])  # the same epochs twice count twice: documented
    assert (policy.epochs_done("a"), policy.epochs_left("a")) == (4, 6)
    with pytest.raises(ValidationError, match=r"the epochs reported in batch_sizes of job 'a' must be "
                                              r".*\[0, 6\].*, got 7$"):
        policy.report_progress("a", [32] * 7)
    with pytest.raises(ValidationError, match="'zzz' is not in the policy"):
        policy.epochs_done("zzz")


@pytest.mark.parametrize(("arguments", "message"), [
    ({"epochs": 0}, r"^epochs of job 'x' must be a positive whole number, at most 1e\+09 \(MAX_JOB_EPOCHS\), got 0$"),
    ({"epochs": 2.5}, "^epochs of job 'x' must be a positive whole number"),
    ({"epochs": "3"}, "^epochs of job 'x' must be a positive whole number"),
    ({"epochs": float("nan")}, "^epochs of job 'x' must be a positive whole number"),
    ({"epochs": True}, "^epochs of job 'x' must be a positive whole number"),
    ({"budget": "1"}, r"^budget of job 'x' must be a number in \(0, 1e\+06\]"),
    ({"budget": float("nan")}, r"^budget of job 'x' must be a number in \(0, 1e\+06\]"),
    ({"regimes": {}}, "^regimes of job 'x' is empty"),
    ({"regimes": {32: -1.0}}, "^regimes of job 'x' gives batch size 32 an epoch duration of -1 s"),
])
def test_add_job_names_the_job_and_the_argument_as_the_caller_wrote_them(arguments, message):
    policy = Policy(capacity=2)
    with pytest.raises(ValidationError, match=message):
        policy.add_job("x", **{"gpus": 1, "regimes": REGIMES, "epochs": 10, **arguments})
    assert policy.jobs == []


def test_the_constructor_names_a_bad_options_object_or_a_forecaster_class():
    from vfm.forecast import DirichletForecaster

    with pytest.raises(ValidationError, match=r"^options must be a vfm.planner.PlanOptions or None"):
        Policy(2, {"rounds": 3})  # type: ignore[arg-type]  # was AttributeError
    with pytest.raises(ValidationError, match=r"^forecaster must be a vfm.forecast.Forecaster or None, got the class "
                                              r"DirichletForecaster; pass an instance"):
        Policy(2, forecaster=DirichletForecaster)  # type: ignore[arg-type]  # was TypeError at the first round


def test_diagnostics_report_the_replan_of_the_round_that_made_it_and_the_rounds_guards():
    policy = Policy(capacity=4, rounds=10, replan_every=3)
    assert policy.diagnostics() == {"guards": {}, "replan": None}
    for k in range(3):
        policy.add_job(f"job{k}", gpus=2, regimes=REGIMES, epochs=200)
    reports = []
    for _ in range(4):
        policy.next_round()
        reports.append(policy.diagnostics())
    made = policy.last_plan
    assert [report["replan"] is not None for report in reports] == [True, False, False, True]
    assert reports[3]["replan"]["solver"] == made.solver and reports[3]["replan"]["status"] == str(made.status)
    assert set(reports[3]["replan"]) >= {"fairness", *made.timings}
    assert all(report["guards"] == dict(policy.last_decision.guards) for report in reports[3:])


def test_round_options_are_one_frozen_object_or_its_fields_as_keywords():
    from vfm.planner import RoundOptions

    by_object = Policy(4, PlanOptions(rounds=6),
                       round_options=RoundOptions(replan_every=3, execution="window", max_wait=None))
    by_keywords = Policy(4, rounds=6, replan_every=3, execution="window", max_wait=None)
    assert by_object.config == by_keywords.config
    assert Policy(4, round_options=RoundOptions(fairness=True), rounds=5).config.fairness
    with pytest.raises(ValidationError, match=r"^replan_every must be a positive whole number of rounds or None, "
                                              r"got 0$"):
        RoundOptions(replan_every=0)
    with pytest.raises(ValidationError, match=r"^round_options must be a vfm.planner.RoundOptions or None, got dict"):
        Policy(4, round_options={"replan_every": 3})  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=r"^horizon is not an argument of the policy; .* fields of RoundOptions "
                                              r"\(replan_every, fairness"):
        Policy(4, horizon=10)


def test_a_replan_after_an_arrival_starts_from_the_jobs_carried_over():
    policy = Policy(capacity=4, rounds=6, replan_every=3)
    for k in range(3):
        policy.add_job(f"job{k}", gpus=2, regimes=REGIMES, epochs=200)
    _run(policy, 1)
    policy.add_job("late", gpus=1, regimes=REGIMES, epochs=50)
    state, last = policy.state, policy.state.plan
    ids = ("job1", "late", "job0", "job2")
    start = warm_start(state, ids, 6)
    # Each carried job's row is its last row moved by the one round served; the new job starts at 0.
    moved = np.minimum(np.arange(6) + 1, 5)
    for row, job in enumerate(ids):
        expected = np.zeros(6) if job == "late" else last.relaxed[last.job_ids.index(job), moved]
        np.testing.assert_array_equal(start[row], expected)
    assert warm_start(state, ("someone", "else"), 6) is None  # nothing carried over: a cold start
