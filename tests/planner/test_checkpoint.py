"""Checkpoints of `Policy`, on one GPU type and on several: round trips, and what `restore` refuses."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vfm.cluster import ClusterTypes
from vfm.errors import ValidationError
from vfm.forecast import PopulationForecaster
from vfm.planner import Policy
from vfm.planner.policy import PolicyState
from vfm.planner.policy.checkpoint import config as checkpoints

REGIMES: dict[float, float] = {32: 50.0, 64: 30.0}
TYPES = ClusterTypes({"v100": 2, "k80": 2})


def _run(policy: Policy, rounds: int) -> list[list[Any]]:
    """A toy scheduler: each running job finishes the whole epochs that fit in a round at batch 32."""
    served = []
    for _ in range(rounds):
        running = policy.next_round()
        served.append(running)
        for job in running:
            epochs = int(policy.options.round_s // policy.regimes(job)[32])
            policy.report_progress(job, [32] * min(epochs, policy.epochs_left(job)))
    return served


def _run_typed(policy: Policy, rounds: int) -> list[dict[Any, str]]:
    """Each running job finishes one epoch per round."""
    served = []
    for _ in range(rounds):
        running = policy.next_round()
        served.append(running)
        for job in running:
            policy.report_progress(job, [32])
    return served


def _loaded(capacity: int = 4, fairness: bool = True, rounds: int = 3) -> Policy:
    factory = Policy.shockwave if fairness else Policy
    policy = factory(capacity, rounds=6)
    for k, gpus in enumerate([1, 2, 1, 1, min(4, capacity)]):
        policy.add_job(k, gpus=gpus, regimes=REGIMES, epochs=30 + 7 * k, kind="lm")
    _run(policy, rounds)
    return policy


def _typed() -> Policy:
    policy = Policy.shockwave(TYPES, rounds=4)
    for k, gpus in enumerate([1, 2, 1, 2]):
        policy.add_job(("job", k), gpus, {"v100": {32: 60.0, 64: 40.0}, "k80": {32: 150.0 + 20 * k, 64: 90.0}},
                       epochs=12 + k)
    _run_typed(policy, 3)
    return policy


# --- round trips -------------------------------------------------------------------------------------


@pytest.mark.parametrize("fairness", [False, True])
def test_a_restored_policy_continues_as_the_original_restored_from_its_own_checkpoint(fairness: bool) -> None:
    policy = _loaded(fairness=fairness)
    text = policy.checkpoint()
    restored = (Policy.shockwave if fairness else Policy)(4, rounds=6)
    restored.restore(text)
    assert restored.checkpoint() == text  # the format round-trips exactly
    policy.restore(text)  # both re-plan at their next round, from the same checkpoint
    assert _run(restored, 15) == _run(policy, 15)
    assert restored.completed == policy.completed and restored.replans == policy.replans


def _with_restart_costs() -> Policy:
    """`_loaded`'s policy with three jobs of their own restart costs (job 5 ten times the default)."""
    policy = Policy(4, rounds=6)
    for k, (gpus, restart_s) in enumerate([(1, None), (2, 5.0), (1, None), (1, 0.0), (2, 200.0), (1, 200.0)]):
        policy.add_job(k, gpus=gpus, regimes=REGIMES, epochs=30 + 7 * k, kind="lm", restart_s=restart_s)
    _run(policy, 3)
    return policy


def test_a_jobs_restart_cost_survives_a_checkpoint_round_trip() -> None:
    policy = _with_restart_costs()
    text = policy.checkpoint()
    costs = [20.0, 5.0, 20.0, 0.0, 200.0, 200.0]
    assert [job["restart_s"] for job in json.loads(text)["jobs"]] == costs
    restored = Policy(4, rounds=6)
    restored.restore(text)
    assert [restored.state.jobs[k].restart_s for k in range(6)] == costs
    assert restored.checkpoint() == text
    policy.restore(text)  # both re-plan at their next round, from the same checkpoint
    assert _run(restored, 15) == _run(policy, 15)


def test_a_checkpoint_without_restart_costs_restores_every_job_at_the_default() -> None:
    # A checkpoint written before jobs had restart costs holds no restart_s: each job restores at
    # DEFAULT_RESTART_S, and the policy continues as one whose jobs were never told a cost.
    from vfm.planner.shockwave import DEFAULT_RESTART_S

    policy = _loaded(fairness=True)
    document = json.loads(policy.checkpoint())
    for job in document["jobs"]:
        del job["restart_s"]
    restored = Policy.shockwave(4, rounds=6)
    restored.restore(json.dumps(document))
    assert {record.restart_s for record in restored.state.jobs.values()} == {DEFAULT_RESTART_S}
    assert restored.checkpoint() == policy.checkpoint()
    policy.restore(restored.checkpoint())
    assert _run(restored, 15) == _run(policy, 15)


def test_a_checkpoint_restores_on_another_number_of_threads_and_continues_the_same() -> None:
    # The threads decide how fast a plan is found, not which: not part of the configuration.
    policy = _loaded(fairness=True)
    text = policy.checkpoint()
    restored = Policy.shockwave(4, rounds=6, threads=2)
    restored.restore(text)
    assert "threads" not in json.dumps(json.loads(text))
    policy.restore(text)  # both re-plan at their next round, from the same checkpoint
    assert _run(restored, 15) == _run(policy, 15)


def test_a_checkpoint_taken_when_a_replan_is_due_continues_exactly_as_the_original() -> None:
    policy = _loaded(fairness=True)
    policy.add_job("late", gpus=2, regimes=REGIMES, epochs=40)  # the next round re-plans anyway
    restored = Policy.shockwave(4, rounds=6)
    restored.restore(policy.checkpoint())
    assert _run(restored, 15) == _run(policy, 15)
    assert restored.state.round_index == policy.state.round_index


def test_a_restore_keeps_the_standing_plan_and_what_each_job_carries() -> None:
    policy = _loaded(fairness=False)
    state = policy.state
    restored = Policy(4, rounds=6)
    restored.restore(policy.checkpoint())
    plan, kept = state.plan, restored.state.plan
    assert plan is not None and kept is not None and kept.job_ids == plan.job_ids
    assert restored.state.since_plan == state.since_plan and restored.state.stale == state.stale
    since = state.since_plan  # the rounds served before are not stored
    np.testing.assert_array_equal(kept.relaxed[:, since:], plan.relaxed[:, since:])
    np.testing.assert_array_equal(kept.schedule[:, since:], plan.schedule[:, since:])
    for name in ("gpus", "base", "remaining_s"):
        np.testing.assert_array_equal(getattr(kept.program, name), getattr(plan.program, name))
    assert restored.state.carried == state.carried
    for name in ("credit", "waited", "ran_last"):
        np.testing.assert_array_equal(getattr(restored.state, name), getattr(state, name))
    restored.next_round()
    policy.next_round()
    assert restored.last_decision is not None and policy.last_decision is not None
    assert restored.last_decision.reason == policy.last_decision.reason


def test_a_state_without_a_plan_carries_its_jobs_into_the_next_plan() -> None:
    state = _loaded(fairness=False).state
    assert state.plan is not None and state.carried == state.plan.job_ids
    policy = Policy(4, rounds=6)
    policy.restore(replace(state, plan=None, since_plan=0, stale=True))  # as a restored checkpoint leaves it
    assert policy.last_plan is None and policy.state.carried == state.carried
    policy.next_round()
    assert policy.last_decision is not None and policy.last_decision.replanned
    assert policy.last_plan is not None and policy.state.carried == policy.last_plan.job_ids


def test_a_restored_typed_policy_keeps_its_standing_plan_and_placement() -> None:
    policy = _typed()
    state = policy.state
    restored = Policy.shockwave(TYPES, rounds=4)
    restored.restore(policy.checkpoint())
    plan, kept = state.plan, restored.last_plan
    assert plan is not None and kept is not None and kept.placement is not None and plan.placement is not None
    np.testing.assert_array_equal(kept.placement[:, state.since_plan:], plan.placement[:, state.since_plan:])
    np.testing.assert_array_equal(kept.program.pace, plan.program.pace)
    assert restored.state.gpu_types == TYPES.types
    assert _run_typed(restored, 6) == _run_typed(policy, 6)


def test_a_typed_policy_checkpoints_and_restores() -> None:
    policy = _typed()
    text = policy.checkpoint()
    restored = Policy.shockwave(TYPES, rounds=4)
    restored.restore(json.loads(text))  # the parsed dict is accepted too
    assert restored.checkpoint() == text
    policy.restore(text)
    assert _run_typed(restored, 10) == _run_typed(policy, 10)
    assert isinstance(policy.state, PolicyState)


def test_a_learning_forecaster_is_restored_with_what_it_learned() -> None:
    policy = Policy(4, rounds=4, forecaster=PopulationForecaster())
    for k in range(6):
        policy.add_job(k, gpus=1, regimes=REGIMES, epochs=4 + 3 * k, kind=("lm", "gns"))
    _run(policy, 6)
    for k in range(6, 9):  # arrivals forecast from the completed jobs
        policy.add_job(k, gpus=1, regimes=REGIMES, epochs=20, kind=("lm", "gns"))
    _run(policy, 1)
    learned = policy.forecaster
    assert isinstance(learned, PopulationForecaster) and learned.population.size >= 2
    restored = Policy(4, rounds=4, forecaster=PopulationForecaster())
    restored.restore(policy.checkpoint())
    assert checkpoints._plain(restored.forecaster) == checkpoints._plain(learned)
    policy.restore(policy.checkpoint())
    assert _run(restored, 12) == _run(policy, 12)


def test_tuple_and_integer_ids_and_kinds_read_back_as_they_were() -> None:
    policy = Policy(4, rounds=3)
    ids = ["a", 7, ("a", 7), ((1, "b"), 2)]
    for job in ids:
        policy.add_job(job, gpus=1, regimes=REGIMES, epochs=9, kind=("m", 1, None) if job == 7 else None)
    _run(policy, 2)
    restored = Policy(4, rounds=3)
    restored.restore(policy.checkpoint())
    assert restored.jobs == policy.jobs and restored.completed == policy.completed
    assert restored.state.jobs[7].kind == ("m", 1, None)


def test_an_id_or_kind_the_format_cannot_hold_is_refused_at_checkpoint_time_naming_the_job() -> None:
    policy = Policy(4, rounds=3)
    policy.add_job("odd", gpus=1, regimes=REGIMES, epochs=9, kind=1.5)
    with pytest.raises(ValidationError, match=r"the kind of job 'odd' must be None, a string or a whole number .*, "
                                              r"got 1\.5$"):
        policy.checkpoint()
    policy = Policy(4, rounds=3)
    policy.add_job("bool", gpus=1, regimes=REGIMES, epochs=9, kind=True)
    with pytest.raises(ValidationError, match=r"the kind of job 'bool' must be .*, got True$"):
        policy.checkpoint()


# --- what restore refuses ----------------------------------------------------------------------------


_PWNED: list[str] = []


def _pwn(message: str) -> PolicyState:
    _PWNED.append(message)
    return PolicyState()


class _Payload:
    def __reduce__(self) -> tuple[Any, ...]:
        return (_pwn, ("the blob ran code",))


def test_a_pickled_blob_is_never_loaded_and_checkpoints_never_use_pickle(monkeypatch: pytest.MonkeyPatch) -> None:
    blob = pickle.dumps(_Payload())
    policy = _loaded()
    before = policy.state
    with pytest.raises(ValidationError, match=r"pickle is never loaded|not JSON"):
        policy.restore(blob)
    assert _PWNED == [] and policy.state is before

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a checkpoint must not use pickle")

    for name in ("loads", "load", "dumps", "dump", "Unpickler", "Pickler"):
        monkeypatch.setattr(pickle, name, refuse)
    text = policy.checkpoint()
    restored = Policy.shockwave(4, rounds=6)
    restored.restore(text)
    restored.restore(text.encode())
    assert restored.jobs == policy.jobs


def test_a_state_from_an_older_field_order_is_refused_at_restore_naming_the_field() -> None:
    state = _loaded().state
    # As a positional pickle of a version without `completed` rebuilt it: every field one off.
    values = [getattr(state, name) for name in ("jobs", "plan", "credit", "waited", "ran_last", "since_plan",
                                                 "stale", "replans", "round_index", "forecaster", "finished")]
    shifted = PolicyState(*values)
    policy = Policy.shockwave(4, rounds=6)
    before = policy.state
    with pytest.raises(ValidationError, match="completed of the state must be a tuple"):
        policy.restore(shifted)
    assert policy.state is before


@pytest.mark.parametrize(("change", "message"), [
    (lambda s: {"credit": np.where(np.arange(s.credit.size) == 0, np.nan, s.credit)},
     r"credit\[0\] of the state must be a number of rounds in"),
    (lambda s: {"since_plan": -3}, "since_plan of the state must be a whole number >= 0"),
    (lambda s: {"credit": s.credit[:-1]}, r"waited of the state must be an array .* of shape \(\d+,\)"),
    (lambda s: {"waited": s.waited - 5}, r"waited\[0\] of the state must be a whole number of rounds in"),
    (lambda s: {"round_index": -1}, "round_index of the state"),
    (lambda s: {"replans": -2}, "replans of the state"),
    (lambda s: {"completed": (*s.completed, s.completed[0] if s.completed else 0)},
     r"completed of the state \(after its jobs\) lists a job twice"),
    (lambda s: {"stale": False, "plan": replace(s.plan, job_ids=tuple(reversed(s.plan.job_ids)))}, "not stale"),
    (lambda s: {"carried": tuple(reversed(s.carried))}, "carried of the state must be its plan's job ids"),
    (lambda s: {"carried": s.carried[:-1]},
     r"carried of the state must be a tuple of job ids, one per entry of credit, .*\(\d+ entries\), got tuple of "),
    (lambda s: {"carried": list(s.carried)}, "carried of the state must be a tuple of job ids, got list"),
    (lambda s: {"carried": (*s.carried[:-1], s.carried[0])}, "carried of the state lists a job twice"),
    (lambda s: {"carried": (*s.carried[:-1], 1.5)}, r"carried\[\d+\] of the state must be a job id: a Python string "
     r"or int .*, got 1\.5"),
    (lambda s: {"plan": None, "since_plan": 2}, r"since_plan of the state must be .*\(the state has no plan to "
     r"serve rounds from\), got 2"),
])
def test_a_damaged_state_is_refused_naming_the_field(change: Any, message: str) -> None:
    state = _loaded(fairness=True).state
    damaged = replace(state, **change(state))
    policy = Policy.shockwave(4, rounds=6)
    before = policy.state
    with pytest.raises(ValidationError, match=message):
        policy.restore(damaged)
    assert policy.state is before


def test_a_damaged_checkpoint_is_refused_naming_the_field_and_the_job() -> None:
    document = json.loads(_loaded().checkpoint())
    policy = Policy.shockwave(4, rounds=6)
    cases = [
        (("carried", 0, "credit"), float("nan"), r"carried\[0\]\.credit \(job 0\) must be"),
        (("carried", 1, "waited"), -1, r"carried\[1\]\.waited \(job 1\) must be"),
        (("plan", "rows", 1, "relaxed"), [0.5], r"plan\.rows\[1\]\.relaxed \(job 1\) must be"),
        (("plan", "since_plan"), 9, r"plan\.since_plan must be a whole number in"),
        (("jobs", 1, "gpus"), 0, r"jobs\[1\]\.gpus \(job 1\) must be"),
        (("jobs", 1, "budget"), float("inf"), "budget of job 1 must be a number in"),
        (("jobs", 1, "restart_s"), -1.0, r"restart_s of job 1 must be a number of seconds in \[0, 1e\+12\]"),
        (("jobs", 1, "restart_s"), "20", r"restart_s of job 1 must be a number of seconds"),
        (("jobs", 0, "epochs"), 1, r"epochs done \(stages\) of job 0 must be a whole number in \[0, 1\) "
                                   r"\(fewer than its 1 epochs"),
        (("jobs", 1, "stages"), [[5, 1]], r"stages\[0\]\[0\] of job 1 must be a column in \[0, 2\), got 5"),
        (("jobs", 2, "regimes"), [[32, -1.0]], r"regimes of job 2"),
        (("jobs", 2, "id"), 1, "jobs lists a job id twice: 1"),
        (("jobs", 2, "id"), True, r"jobs\[2\].id must be"),
        (("round_index",), -4, "round_index must be"),
        (("version",), 1, r"version of the checkpoint must be 2 \(this vfm reads version 2 only; "
                          r"version 1, an earlier vfm's.*got 1$"),
        (("format",), "other", "format of the checkpoint must be 'vfm.policy-checkpoint', got 'other'"),
    ]
    before = policy.state
    for path, value, message in cases:
        damaged = copy.deepcopy(document)
        _set(damaged, path, value)
        with pytest.raises(ValidationError, match=message):
            policy.restore(damaged)
        assert policy.state is before


def test_nan_in_checkpoint_text_is_refused() -> None:
    text = _loaded().checkpoint().replace('"budget": 1.0', '"budget": NaN', 1)
    with pytest.raises(ValidationError, match=r"not JSON .*NaN"):
        Policy.shockwave(4, rounds=6).restore(text)


def test_a_checkpoint_on_several_types_and_one_on_one_type_are_refused_by_each_other() -> None:
    typed = _typed()
    policy = Policy.shockwave(TYPES.total, rounds=4)
    with pytest.raises(ValidationError, match=r"speeds of job .* must be None \(this policy's cluster has one GPU "
                                              r"type\)"):
        policy.restore(typed.state)
    with pytest.raises(ValidationError, match=r"config of the checkpoint differs from this policy's: .*cluster"):
        policy.restore(typed.checkpoint())
    plain = Policy(TYPES.total, rounds=4)
    plain.add_job("a", 1, REGIMES, 9)
    with pytest.raises(ValidationError, match=r"config of the checkpoint differs from this policy's: .*cluster"):
        Policy.shockwave(TYPES, rounds=4).restore(plain.checkpoint())
    restored = Policy.shockwave(TYPES, rounds=4)
    restored.restore(typed.state)  # a state holds each job's speeds per type, checked in full
    assert restored.checkpoint() == typed.checkpoint()
    bare = typed.state
    first = next(iter(bare.jobs))
    without = dataclasses.replace(bare, jobs={**bare.jobs, first: dataclasses.replace(bare.jobs[first], speeds=None)})
    with pytest.raises(ValidationError, match=r"speeds of job .* must be a float64 array of shape \(2, 3\) .*, got "
                                              r"NoneType"):
        Policy.shockwave(TYPES, rounds=4).restore(without)
    with pytest.raises(ValidationError, match=r"cluster\.k80=2 in the checkpoint, 1 in this policy"):
        Policy.shockwave(ClusterTypes({"v100": 2, "k80": 1}), rounds=4).restore(typed.checkpoint())
    document = json.loads(typed.checkpoint())
    document["policy"] = "Scheduler"
    with pytest.raises(ValidationError, match="policy of the checkpoint must be 'Policy', got 'Scheduler'"):
        _typed().restore(document)


def test_a_state_or_checkpoint_of_another_configuration_is_refused_naming_what_differs() -> None:
    wide = Policy.shockwave(16, rounds=6)
    for k, gpus in enumerate([1, 8, 4, 2]):
        wide.add_job(k, gpus=gpus, regimes=REGIMES, epochs=40)
    _run(wide, 2)
    for narrow in (Policy(4, rounds=6), Policy(16, rounds=6)):
        before = narrow.state
        with pytest.raises(ValidationError, match=r"wider than this policy's cluster|another configuration"):
            narrow.restore(wide.state)
        assert narrow.state is before
    with pytest.raises(ValidationError, match=r"capacity=16 in the checkpoint, 4 in this policy; .*fairness=True in "
                                              r"the checkpoint, False in this policy"):
        Policy(4, rounds=6).restore(wide.checkpoint())
    with pytest.raises(ValidationError, match="fairness=True in the checkpoint, False in this policy"):
        Policy(16, rounds=6).restore(wide.checkpoint())
    with pytest.raises(ValidationError, match=r"config_sha256 .* altered"):
        altered = json.loads(wide.checkpoint())
        altered["config"]["seed"] = 5
        Policy.shockwave(16, rounds=6).restore(altered)


def test_a_shrinking_cluster_restores_only_when_asked_and_only_the_gangs_that_fit() -> None:
    policy = _loaded(capacity=4, fairness=False)
    text = policy.checkpoint()
    small = Policy(2, rounds=6)
    with pytest.raises(ValidationError, match=r"capacity=4 in the checkpoint, 2 in this policy \(for a cluster "
                                              r"that changed size: restore\(\.\.\., allow_resize=True\)\)"):
        small.restore(text)
    with pytest.raises(ValidationError, match=r"jobs 4 \(4 GPUs\) have gangs wider than this policy's 2 GPUs"):
        small.restore(text, allow_resize=True)
    assert small.jobs == []
    # Remove the wide job in a policy of the old capacity, then restore the rest.
    old = Policy(4, rounds=6)
    old.restore(text)
    old.remove_job(4)
    small.restore(old.checkpoint(), allow_resize=True)
    assert small.jobs == [0, 1, 2, 3]
    for running in _run(small, 10):
        assert sum(small.state.jobs[j].gpus if j in small.state.jobs else 1 for j in running) <= 2
    with pytest.raises(ValidationError, match=r"allow_resize must be False for a PolicyState: it applies to a "
                                              r"checkpoint"):
        small.restore(policy.state, allow_resize=True)


def test_what_is_not_a_checkpoint_is_refused() -> None:
    policy = Policy(2)
    values: list[Any] = [{"jobs": {}}, 3, None, [1]]
    for value in values:
        with pytest.raises(ValidationError, match="state must be a PolicyState"):
            policy.restore(value)
    with pytest.raises(ValidationError, match="not JSON"):
        policy.restore("{")


# --- a hostile checkpoint --------------------------------------------------------------------------


_DOCUMENT = json.loads(_loaded(capacity=4, fairness=True, rounds=2).checkpoint())


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        found += _paths(inner, (*prefix, key))
    return found


def _set(document: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


_PATHS = [p for p in _paths(_DOCUMENT) if p[0] != "config"] + [("config",), ("config", "capacity")]
_VALUES = st.sampled_from([float("nan"), float("inf"), -1, -(10**30), 10**30, 1e308, 0, 0.5, "x", None, True, [],
                           {}, [1], {"tuple": [1]}, [[0, 1]], [[32, 50.0]]])


@given(path=st.sampled_from(_PATHS), action=st.sampled_from(["delete", "replace", "grow", "shrink"]),
       value=_VALUES, as_text=st.booleans())
def test_a_mutated_checkpoint_is_refused_or_restores_a_working_policy(path: tuple[Any, ...], action: str,
                                                                     value: Any, as_text: bool) -> None:
    document = copy.deepcopy(_DOCUMENT)
    parent: Any = document
    for key in path[:-1]:
        parent = parent[key]
    target = parent[path[-1]]
    if action == "delete":
        del parent[path[-1]]
    elif action == "grow" and isinstance(target, list):
        target.append(copy.deepcopy(target[-1]) if target else value)
    elif action == "shrink" and isinstance(target, list) and target:
        target.pop()
    else:
        parent[path[-1]] = value
    policy = Policy.shockwave(4, rounds=6)
    before = policy.state
    try:
        policy.restore(json.dumps(document) if as_text else document)
    except ValidationError as error:
        assert str(error) and policy.state is before
        return
    for _ in range(2):
        running = policy.next_round()
        assert len(set(running)) == len(running) and set(running) <= set(policy.jobs)
        assert sum(policy.state.jobs[job].gpus for job in running) <= policy.capacity
