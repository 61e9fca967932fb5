"""A restore is invisible: a policy restored from its checkpoint at any round decides exactly as the
one that never stopped, for the same events (arrivals, progress, completions, removals), on one
GPU type and on several."""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from vfm.cluster import ClusterTypes
from vfm.forecast import PopulationForecaster
from vfm.planner import Policy

TYPES = ClusterTypes({"v100": 2, "k80": 3})


def _one_type(fairness: bool, execution: str) -> Callable[[], Policy]:
    if fairness:
        return lambda: Policy.shockwave(4, rounds=6, execution=execution)
    return lambda: Policy(4, rounds=6, execution=execution, replan_every=3)


def _several_types(fairness: bool, execution: str) -> Callable[[], Policy]:
    if fairness:
        return lambda: Policy.shockwave(TYPES, rounds=5, execution=execution)
    return lambda: Policy(TYPES, rounds=5, execution=execution, replan_every=4)


def _regimes(typed: bool, rng: random.Random) -> dict[Any, Any]:
    fast = {32: rng.choice([30.0, 45.0, 60.0]), 64: rng.choice([20.0, 35.0])}
    if not typed:
        return fast
    slow = {b: s * rng.choice([1.5, 2.5]) for b, s in fast.items()}
    return rng.choice([{"v100": fast, "k80": slow}, {"v100": fast}, {"k80": slow}])


def _events(policy: Policy, rng: random.Random, round_index: int, placed: Any, typed: bool) -> None:
    """The same events for the same `rng` state: progress of the jobs that ran, then maybe an
    arrival and a removal."""
    for job in sorted(placed, key=repr):
        left = policy.epochs_left(job)
        batch = rng.choice(sorted(policy.regimes(job)))
        policy.report_progress(job, [batch] * min(left, rng.randint(0, 3)))
    if rng.random() < 0.35:
        gpus = rng.choice([1, 1, 2] if typed else [1, 1, 2, 3])
        policy.add_job(("job", round_index), gpus, _regimes(typed, rng), epochs=rng.randint(3, 14),
                       budget=rng.choice([1.0, 2.0]), kind=rng.choice([None, "lm"]))
    if policy.jobs and rng.random() < 0.08:
        policy.remove_job(rng.choice(policy.jobs))


def _decisions(make: Callable[[], Policy], typed: bool, seed: int, rounds: int,
               restore_at: set[int]) -> list[Hashable]:
    rng = random.Random(seed)
    policy = make()
    for k in range(3):
        policy.add_job(("start", k), 1 + k % 2, _regimes(typed, rng), epochs=rng.randint(4, 12), kind="lm")
    decided = []
    for round_index in range(rounds):
        if round_index in restore_at:
            text = policy.checkpoint()
            policy = make()
            policy.restore(text)
        placed = policy.next_round()
        decided.append(placed)
        _events(policy, rng, round_index, placed, typed)
    return decided


# Twelve event streams by default; the deep profile explores a hundred.
@settings(max_examples=12 if settings.default.derandomize else 100, deadline=None)
@given(seed=st.integers(0, 2**16), fairness=st.booleans(), execution=st.sampled_from(["credit", "window"]),
       typed=st.booleans(), restore_at=st.sets(st.integers(1, 24), min_size=1, max_size=3))
def test_a_policy_restored_at_any_round_decides_as_the_one_that_never_stopped(
        seed: int, fairness: bool, execution: str, typed: bool, restore_at: set[int]) -> None:
    make = (_several_types if typed else _one_type)(fairness, execution)
    assert _decisions(make, typed, seed, 25, restore_at) == _decisions(make, typed, seed, 25, set())


def test_a_policy_restored_every_few_rounds_decides_as_the_one_that_never_stopped() -> None:
    for typed in (False, True):
        make = (_several_types if typed else _one_type)(True, "credit")
        for seed in range(3):
            restore_at = set(range(2, 40, 5))
            assert _decisions(make, typed, seed, 40, restore_at) == _decisions(make, typed, seed, 40, set())


def test_a_policy_restored_with_its_whole_window_served_decides_as_the_one_that_never_stopped() -> None:
    # A window of 3 rounds, re-planned every 3: restored every round, some with no round of the plan left.
    def short() -> Policy:
        return Policy(4, rounds=3, wait_limit=2)

    restore_at = set(range(1, 20))
    for seed in range(2):
        assert _decisions(short, False, seed, 20, restore_at) == _decisions(short, False, seed, 20, set())


def test_a_policy_with_a_learning_forecaster_restored_decides_as_the_one_that_never_stopped() -> None:
    def learning() -> Policy:
        return Policy(4, rounds=4, forecaster=PopulationForecaster())

    restore_at = set(range(1, 30, 3))
    for seed in range(2):
        assert _decisions(learning, False, seed, 30, restore_at) == _decisions(learning, False, seed, 30, set())


def test_a_policy_planning_over_scenarios_restored_decides_as_the_one_that_never_stopped() -> None:
    # Several scenarios with the wait limit (each scenario its own base above the commitments).
    def sampled() -> Policy:
        return Policy.shockwave(4, rounds=6, scenarios=3, wait_limit=3)

    restore_at = set(range(2, 30, 4))
    for seed in range(2):
        assert _decisions(sampled, False, seed, 30, restore_at) == _decisions(sampled, False, seed, 30, set())
