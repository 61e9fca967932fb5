"""Smoke test of benchmarks/plan.py: the 120-job workload, one run per S (no timing assertions)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from benchmarks.plan import SIZES, busiest_states, main, tiled_window

REQUIRED = {"config", "jobs", "gpus", "scenarios", "median_s", "max_s", "rounding_gap"}


def test_busiest_states_of_the_120_job_workload() -> None:
    states, gpus, capacity = busiest_states(SIZES[120])
    assert capacity == 32
    assert 0 < states.n_jobs <= 120
    assert gpus.shape == (states.n_jobs,)
    assert (gpus >= 1).all() and (gpus <= capacity).all()
    # Every active job has epochs left (at most its total minus one done).
    assert (states.remaining_epochs >= 1).all()


def test_main_on_the_120_job_workload(tmp_path, capsys) -> None:
    main(["--sizes", "120", "--runs", "1", "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "plan.json").read_text())
    assert isinstance(rows, list)
    assert sorted(row["scenarios"] for row in rows) == [1, 16]
    for row in rows:
        assert REQUIRED <= row.keys()
        assert row["jobs"] > 0 and row["gpus"] == 32
        assert row["scenarios"] in {1, 16}
        assert row["runs"] == 1
        assert 0 < row["min_s"] <= row["median_s"] <= row["max_s"]
        assert all(math.isfinite(v) and v >= 0 for v in row["components_s"].values())
        assert 0 <= row["rounding_gap"] <= row["rounding_gap_max"] < 1
        assert row["statuses"] == ["optimal"]
        assert row["solver"]
    report = (tmp_path / "plan.txt").read_text()
    assert report.startswith("# command: python -m benchmarks.plan --sizes 120 --runs 1") and "\n# machine: " in report
    assert "median ms" in report and "Targets at 900 jobs: not measured" in report
    assert report.split("\n", 4)[4] in capsys.readouterr().out  # printed as written, below the header


def test_main_rejects_unknown_sizes(tmp_path) -> None:
    with pytest.raises(SystemExit):
        main(["--sizes", "121", "--out", str(tmp_path)])
    assert not (tmp_path / "plan.json").exists()


def test_tiled_window_repeats_the_busiest_window() -> None:
    states, gpus, capacity = tiled_window(jobs=2000, gpus=512)
    original, widths, _ = busiest_states(SIZES[900])
    assert states.n_jobs == 2000 and capacity == 512 and gpus.shape == (2000,)
    index = np.arange(2000) % original.n_jobs
    np.testing.assert_array_equal(states.total_epochs, original.total_epochs[index])
    np.testing.assert_array_equal(states.epochs_done, original.epochs_done[index])
    np.testing.assert_array_equal(gpus, widths[index])


def test_the_typed_window_gives_each_job_a_hosting_type_and_the_target_compares_with_one_type() -> None:
    from benchmarks.plan import evaluate_targets, typed_window

    states, gpus, cluster, speed = typed_window()
    assert dict(cluster) == {"v100": 86, "p100": 85, "k80": 85}
    assert speed.shape == (states.n_jobs, 3) and (speed[:, 0] == 1.0).all()
    assert ((speed > 0) & (gpus[:, None] <= cluster.counts[None, :])).any(axis=1).all()
    assert ((speed >= 0) & (speed <= 1)).all()
    rows = [{"size": 900, "config": "default", "scenarios": 1, "median_s": 0.05, "rounding_gap": 0.0},
            {"size": 900, "config": "3 types", "scenarios": 1, "median_s": 0.3}]
    typed = [t for t in evaluate_targets(rows) if t["what"] == "3 types S=1 median"]
    assert typed == [{"what": "3 types S=1 median", "value": 0.3, "limit": 0.1, "unit": "s", "met": False}]
