"""`python -m benchmarks.deadline`: rounds split by whether they tried a re-plan, the table's lines."""

from __future__ import annotations

from benchmarks import deadline


def test_a_round_after_a_failed_re_plan_waits_to_try_again_and_every_round_is_counted():
    setup = deadline.Setup("tiny", 40, 2, 4, 1e-6, True)  # a microsecond: every re-plan fails
    result = deadline.run(setup, 6)
    assert result["rounds"] == 6 == len(result["tried"]) + len(result["waited"])
    # Tried in rounds 0, 2 and 6 (after 1 and 2 failures the policy waits 2 and 4 rounds): 0 and 2 here.
    assert len(result["tried"]) == 2 and len(result["waited"]) == 4


def test_the_table_names_each_configuration_and_the_target(monkeypatch):
    monkeypatch.setattr(deadline, "SETUPS", (deadline.Setup("tiny", 12, 1, 4, 1e-6, False),))
    text = deadline.report(3)
    assert "tiny: deadline 0.001 ms" in text and "rounds that tried a re-plan" in text
    assert "within the deadline + 50 ms + the fallback's own time" in text and "of 3 rounds" in text
