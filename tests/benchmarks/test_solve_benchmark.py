"""Smoke test of benchmarks/solve.py: the 120-job workload, one run, a tiny MILP time limit."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import vfm
from benchmarks import shockwave_milp
from benchmarks.solve import SIZES, main, run, window_for
from vfm.cluster.windows import busiest_window
from vfm.cluster.workload import load_workload
from vfm.jobs import window_market


def test_busiest_window_of_the_120_job_workload() -> None:
    bw = window_for(120)
    market = bw.window.market
    assert market.shape == (bw.jobs.size, 1, 20)
    assert 0 < bw.jobs.size <= 120
    assert (bw.epochs_done >= 0).all() and (bw.epochs_done < bw.epochs).all()
    assert (bw.epochs_per_round > 0).all()
    # The isolated-time activity counts fewer jobs (no slowdown from sharing the cluster).
    assert busiest_window(load_workload(SIZES[120][0]), activity="isolated").jobs.size < bw.jobs.size


def test_milp_matches_brute_force_on_a_tiny_window() -> None:
    rng = np.random.default_rng(3)
    window = window_market([1, 2, 1], [8, 12, 10], [0, 1, 2], rng.uniform(0.5, 5, (3, 3)), capacity=2)
    _, progress, base, fits, capacity, cap, budgets = shockwave_milp.window_arrays(window)
    b = np.array(shockwave_milp.BREAKPOINTS)
    value = np.log(np.where(b > 0, b, shockwave_milp.LOG_ORIGIN))
    best = -np.inf
    for bits in itertools.product([0, 1], repeat=9):
        y = np.array(bits, dtype=float).reshape(3, 3)
        if (window.gpus @ y > capacity).any() or (y > fits).any():
            continue
        best = max(best, float(budgets @ np.interp(np.minimum(cap, base + (progress * y).sum(1)), b, value)))
    relaxation = vfm.solve(window.market).raise_for_status()
    for adjacency in (False, True):
        result = shockwave_milp.solve(window, time_limit=10, adjacency=adjacency)
        assert result.status == "optimal"
        assert result.pwl_objective == pytest.approx(best, abs=1e-6)
        # The relaxation's certified bound holds for every integral schedule.
        assert result.nswot <= relaxation.objective + relaxation.duality_gap + 1e-9


def test_run_on_the_120_job_workload(tmp_path) -> None:
    result = run(sizes=[120], runs=1, milp_limit=0.5, out=tmp_path, verbose=False)
    written = json.loads((tmp_path / "solve.json").read_text())
    size = written["sizes"][0]
    assert size["size"] == 120 and size["jobs"] > 0
    # Every backend a solve of a job window may use unnamed, and no other (the plain-market ones).
    assert list(size["backends"]) == written["meta"]["backends"]
    assert "schur-ipm" in written["meta"]["backends"] and "smoothed-dual" not in written["meta"]["backends"]
    for name in written["meta"]["backends"]:
        record = size["backends"][name]
        assert record["runs"] == 1
        assert record["min_s"] <= record["median_s"] <= record["max_s"]
        assert {"relative_gap", "nswot", "status", "ratio_to_reference"} <= record.keys()
    assert size["milp"]["runs"] == 1
    assert size["milp"]["status"] in {"optimal", "time_limit"}
    assert "slope" in result["targets"]
    pytest.importorskip("matplotlib")
    assert (tmp_path / "solve.png").stat().st_size > 0


def test_cli_rejects_an_unknown_size() -> None:
    with pytest.raises(SystemExit):
        main(["--sizes", "121"])
