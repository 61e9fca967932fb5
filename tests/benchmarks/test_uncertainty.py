"""The uncertainty benchmark's runs and command line (the full run is `python -m benchmarks.uncertainty`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import uncertainty


def test_the_oracle_is_told_the_true_epochs_of_an_uncertain_workload():
    workload = uncertainty.workload("uncertain-0")
    noisy = [job for job in workload.jobs if not np.array_equal(job.epoch_s, [job.regimes[b] for b in job.batch_size])]
    assert len(noisy) == workload.n_jobs  # every job's true epoch times differ from what it is told
    assert any(set(job.regimes) - set(job.batch_size.tolist()) for job in workload.jobs)  # hidden regimes
    oracle = uncertainty.PLANNERS["oracle"][0](workload)
    job = workload.jobs[0]
    assert np.array_equal(oracle.epoch_s[job.id], job.epoch_s)


def test_runs_every_planner_on_a_slice_and_writes_the_table(tmp_path, capsys):
    uncertainty.main(["--workloads", "uncertain-1", "--jobs", "12", "--planners", "ce,saa-whole,saa,oracle",
                      "--scenarios", "2", "--workers", "1", "--out", str(tmp_path)])
    results = json.loads((tmp_path / "results.json").read_text())["results"]["uncertain-1"]
    assert set(results) == {"ce", "saa-whole", "saa", "oracle"}
    for row in results.values():
        assert 0 < row["worst_ftf"] < 10 and 0 < row["utilization"] <= 1 and row["makespan_s"] > 0
        assert set(row["solvers"]) == {"saa-ipm"}
    lines = (tmp_path / "table.txt").read_text().splitlines()
    assert len(lines) == 4 + 5 and lines[0].startswith("# command: python -m benchmarks.uncertainty --workloads")
    assert "wrote" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["--planners", "ce,median"], "unknown planner 'median'"),
    (["--workloads", "uncertain-x"], "the seed after 'uncertain-' must be a whole number"),
    (["--workloads", "no_such_trace"], "no_such_trace"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        uncertainty.main([*argv, "--out", str(tmp_path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
