"""The reproduction command on a 20-job slice of the 120-job workload (docs/simulation.md)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from benchmarks import reproduce

WORKLOAD = "shockwave_120jobs_32gpus"
KEYS = {"makespan_s", "avg_jct_s", "worst_ftf", "unfair_pct", "utilization", "planner_s", "replans", "jobs", "rounds"}


@pytest.fixture(scope="module")
def result():
    """Every policy on the first 20 jobs, in two worker processes (the command's default executor)."""
    with reproduce.futures.ProcessPoolExecutor(2) as executor:
        return reproduce.run(WORKLOAD, tuple(reproduce.POLICIES), executor=executor, jobs=20)


def test_every_policy_reports_the_documented_fields(result):
    assert result["workload"] == "shockwave_120jobs_32gpus[:20]" and result["gpus"] == 32
    assert list(result["policies"]) == list(reproduce.POLICIES)
    for name, row in result["policies"].items():
        assert set(row) >= KEYS, name
        assert set(row["planner_s"]) == {"median", "max"}
        assert len(row["jobs"]) == 20
        for job in row["jobs"]:
            assert set(job) >= {"id", "arrival_s", "finish_s", "jct_s", "ftf_rho"}
            assert job["finish_s"] > job["arrival_s"]
        assert row["makespan_s"] == pytest.approx(max(job["finish_s"] for job in row["jobs"]))
        assert row["rounds"] and all(set(entry) >= {"start_s", "jobs"} for entry in row["rounds"])


def test_the_vfm_policy_reports_its_replans_by_component(result):
    replans = result["policies"]["vfm"]["replans"]
    assert replans["count"] > 0
    assert sum(replans["solvers"].values()) == replans["count"] and set(replans["solvers"]) <= {"saa-ipm", "cvxpy"}
    assert set(replans["median_s"]) == {"forecast", "build", "solve", "rounding", "total"}
    for component, median in replans["median_s"].items():
        assert 0 <= median <= replans["max_s"][component] <= replans["max_s"]["total"], component
    # A baseline does not plan.
    assert result["policies"]["max_min_fairness"]["replans"]["count"] == 0


def test_twenty_jobs_on_32_gpus_all_run_from_arrival(result):
    # Fewer jobs than GPUs: every policy should run every job every round from the round after
    # its arrival, so all of them give each job the same completion time (the isolated-run
    # formula of the simulator: first round start + one restart + isolated time).
    finishes = {name: np.array([job["finish_s"] for job in row["jobs"]]) for name, row in result["policies"].items()}
    reference = finishes["max_min_fairness"]
    for name, finish in finishes.items():
        np.testing.assert_allclose(finish, reference, rtol=1e-12, err_msg=name)


def test_command_writes_its_results_folder(tmp_path, capsys):
    out = tmp_path / "run"
    reproduce.main(["--workload", str(WORKLOAD), "--jobs", "12", "--policies", "vfm,max_min_fairness",
                    "--executor", "thread", "--out", str(out), "--quiet"])
    printed = capsys.readouterr().out
    assert "vfm" in printed and "makespan/vfm" in printed
    assert printed.splitlines()[-1].startswith(f"wrote {out}/")
    table = (out / "table.txt").read_text()
    header = [line for line in table.splitlines() if line.startswith("# ")]
    assert [line.split(":")[0] for line in header] == ["# command", "# machine", "# software", "# date"]
    assert "--jobs 12" in header[0] and "CPUs" in header[1]
    assert table.split("\n", len(header))[-1] in printed
    assert json.loads((out / "results.json").read_text())["provenance"]["command"] == header[0][len("# command: "):]
    document = json.loads((out / "results.json").read_text())
    assert set(document) == {"workload", "gpus", "policies", "provenance"}
    # --mechanics both (the default) adds both under the artifact's mechanics.
    assert set(document["policies"]) == {"vfm", "max_min_fairness", "artifact:vfm", "artifact:max_min_fairness"}
    for name in ("metrics.png", "ftf_cdf.png", "occupancy.png"):
        assert (out / name).stat().st_size > 0


@pytest.mark.parametrize("argv, says", [
    (["--workload", "no_such_workload"], "no workload file 'no_such_workload'"),
    (["--workload", "shockwave_120jobs_32gpus", "--policies", "gavel"], "(unknown policy 'gavel')"),
    (["--workload", "shockwave_120jobs_32gpus", "--bogus"], "unrecognized arguments: --bogus"),
])
def test_bad_input_is_one_line_and_exit_status_2(argv, says, capsys):
    with pytest.raises(SystemExit) as stop:
        reproduce.main([*argv, "--quiet", "--executor", "serial"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m benchmarks.reproduce: error: ") and says in err


def test_published_numbers_are_matched_to_our_names():
    published = reproduce.published_results(WORKLOAD)
    assert published["vfm"]["makespan_s"] == pytest.approx(24197.4)
    assert published["max_sum_throughput"]["paper_name"].startswith("MST")
    assert "static_market" not in published


def test_unknown_policy_is_named():
    with pytest.raises(ValueError, match="gavel"):
        reproduce.run(WORKLOAD, ["gavel"], jobs=3)


def test_dask_local_cluster_executor_gives_the_same_results():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None)
    with cluster, distributed.Client(cluster) as client:
        remote = reproduce.run(WORKLOAD, ["max_min_fairness", "allox"], executor=client.get_executor(), jobs=8)
    local = reproduce.run(WORKLOAD, ["max_min_fairness", "allox"], jobs=8)
    for document in (remote, local):  # wall-clock timings differ between runs
        for row in document["policies"].values():
            del row["planner_s"]
    assert remote == local


def test_mechanics_choose_the_runs():
    asked = ["vfm", "max_sum_throughput", "static_market"]
    assert reproduce.with_artifact_runs(asked, "ours") == asked
    theirs = ["artifact:vfm", "artifact:max_sum_throughput"]  # static_market is ours alone
    assert reproduce.with_artifact_runs(asked, "artifact") == theirs
    assert reproduce.with_artifact_runs(asked, "both") == [*asked, *theirs]


def test_the_vfm_forecaster_is_chosen_by_name_and_runs_on_a_slice():
    from vfm.forecast import PopulationForecaster

    assert isinstance(reproduce.vfm_policy(32, 120.0, forecaster="population").forecaster, PopulationForecaster)
    result = reproduce.run(WORKLOAD, ["vfm"], jobs=12, vfm_options={"forecaster": "population"})
    assert len(result["policies"]["vfm"]["jobs"]) == 12
