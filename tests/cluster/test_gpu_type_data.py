"""GPU types as data (vfm.gpu_profiles.GpuProfiles): a user's type added from a script, a cluster
of it, its jobs' epoch times, a simulation on it; the profiled type is the profiles' own."""

import pickle
import re
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from vfm.cluster import (
    ClusterTypes,
    GpuProfiles,
    HeterogeneousMaxMinFairness,
    epoch_seconds_by_type,
    fastest_isolated_s,
    isolated_s_by_type,
    job_types,
    load_workload,
    proportional_isolated_s,
    simulate,
    type_regimes,
    workload_from_dict,
    workload_to_dict,
)
from vfm.cluster.gpu_types import throughput_sets, throughput_table
from vfm.errors import ValidationError

HOW_TO = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "add-a-gpu-type.md"
SHIPPED = GpuProfiles.shipped()
WORKLOAD = load_workload("shockwave_120jobs_32gpus")


def _copy_of(gpu_type: str) -> dict[str, dict[str, float | None]]:
    """The throughputs of a shipped type, per set and key: a new type as fast as it everywhere."""
    return {name: {key: row[gpu_type] for key, row in SHIPPED.rows(name).items()} for name in SHIPPED.throughput_sets}


def test_the_how_to_script_runs_with_no_edit_to_the_library(capsys):
    code = re.search(r"```python\n(.*?)```", HOW_TO.read_text(), re.S)
    assert code is not None
    namespace: dict = {}
    exec(compile(code.group(1), str(HOW_TO), "exec"), namespace)
    assert namespace["profiles"].types == ("v100", "p100", "t4", "k80")
    assert namespace["cluster"].types == ("v100", "t4", "k80")
    assert namespace["report"]["makespan_s"] > 0
    assert "('v100', 'p100', 't4', 'k80') v100" in capsys.readouterr().out
    # The library's own profiles are untouched by the script.
    assert GpuProfiles.shipped().types == ("v100", "p100", "k80")


def test_with_type_is_a_new_value_in_speed_order_and_keeps_the_profiled_type():
    key = "LM (batch size 10)|1"
    mine = SHIPPED.with_type("a100", {"tacc": {key: 500.0}}, before="v100")
    assert mine.types == ("a100", "v100", "p100", "k80") and mine.profiled == "v100"
    assert SHIPPED.types == ("v100", "p100", "k80")  # unchanged
    assert mine.table("tacc", "a100") == {key: 500.0}  # left-out keys: cannot run
    assert mine.rows("wisr")[key]["a100"] is None
    assert mine.rows("tacc")[key]["v100"] == SHIPPED.rows("tacc")[key]["v100"]
    assert SHIPPED.with_type("t4", {}).types[-1] == "t4"  # slowest by default
    assert throughput_table("tacc", "a100", profiles=mine) == {key: 500.0}
    assert throughput_sets(mine) == SHIPPED.throughput_sets


def test_the_ratio_rule_uses_the_users_speeds():
    speeds = {key: row["p100"] / 3 for key, row in SHIPPED.rows("tacc").items() if row["p100"] is not None}
    mine = SHIPPED.with_type("t4", {"tacc": speeds})
    for job in WORKLOAD.jobs[:20]:
        got = epoch_seconds_by_type(job, "tacc", ["v100", "t4"], profiles=mine)
        assert (got[0] == job.epoch_s).all()
        for e, (size, seconds) in enumerate(zip(job.batch_size.tolist(), job.epoch_s.tolist(), strict=True)):
            key = f"{job.training.model} (batch size {int(size)})|{job.gpus}"
            v100 = SHIPPED.rows("tacc").get(key, {}).get("v100")
            want = seconds * v100 / speeds[key] if v100 and speeds.get(key) else np.inf
            assert got[1, e] == want


@pytest.mark.parametrize("copied", ["p100", "k80"])
def test_a_type_as_fast_as_a_shipped_one_gives_the_same_times_and_simulation(copied):
    mine = SHIPPED.with_type("twin", _copy_of(copied), before="k80" if copied == "p100" else None)
    shipped_cluster = ClusterTypes({"v100": 20, copied: 12})
    twin_cluster = ClusterTypes({"v100": 20, "twin": 12}, profiles=mine)
    assert twin_cluster.types == ("v100", "twin")
    renamed = {"v100": "v100", copied: "twin"}
    for job in WORKLOAD.jobs:
        ours, theirs = (job, "tacc", twin_cluster), (job, "tacc", shipped_cluster)
        assert (epoch_seconds_by_type(*ours) == epoch_seconds_by_type(*theirs)).all()
        assert type_regimes(*ours) == {renamed[t]: r for t, r in type_regimes(*theirs).items()}
        assert job_types(*ours) == tuple(renamed[t] for t in job_types(*theirs))
        assert (isolated_s_by_type(*ours) == isolated_s_by_type(*theirs)).all()
        assert fastest_isolated_s(*ours) == fastest_isolated_s(*theirs)
        assert proportional_isolated_s(*ours) == proportional_isolated_s(*theirs)
    head = WORKLOAD.head(15)
    runs = [simulate(replace(head, cluster=c), HeterogeneousMaxMinFairness(c, round_s=head.round_s))
            for c in (twin_cluster, shipped_cluster)]
    assert (runs[0].finish_s == runs[1].finish_s).all()
    assert [r.types for r in runs[0].rounds] == [tuple(renamed[t] for t in r.types) for r in runs[1].rounds]


def test_the_profiled_type_is_the_profiles_own():
    on_p100 = GpuProfiles(SHIPPED.types, {name: SHIPPED.rows(name) for name in SHIPPED.throughput_sets}, "p100")
    assert on_p100.profiled == "p100" and ClusterTypes.single(4, profiles=on_p100).types == ("p100",)
    job = next(j for j in WORKLOAD.jobs if j.training is not None and j.training.model == "LM")
    seconds = epoch_seconds_by_type(job, "tacc", ["v100", "p100"], profiles=on_p100)
    rows = SHIPPED.rows("tacc")
    keys = [f"LM (batch size {int(b)})|{job.gpus}" for b in job.batch_size.tolist()]
    assert (seconds[1] == job.epoch_s).all()
    assert seconds[0].tolist() == [s * rows[k]["p100"] / rows[k]["v100"] for s, k in zip(job.epoch_s.tolist(), keys,
                                                                                          strict=True)]
    assert isolated_s_by_type(job, "tacc", ["p100"], profiles=on_p100)[0] == job.isolated_s


def test_shipped_names_keep_their_order_and_equality():
    plain = ClusterTypes({"k80": 4, "v100": 8})
    explicit = ClusterTypes({"v100": 8, "k80": 4}, profiles=GpuProfiles.shipped())
    assert plain == explicit and hash(plain) == hash(explicit)
    assert repr(explicit) == repr(plain) == "ClusterTypes({'v100': 8, 'k80': 4})"
    mine = SHIPPED.with_type("t4", {})
    other = ClusterTypes({"v100": 8, "k80": 4}, profiles=mine)
    assert other != plain and other.types == plain.types and "profiles=" in repr(other)
    assert pickle.loads(pickle.dumps(other)) == other and pickle.loads(pickle.dumps(plain)) == plain
    # split's ties go to the faster type in the profiles' order (quotas 2.5 and 2.5).
    assert dict(ClusterTypes.split(5, {"t4": 1, "k80": 1}, profiles=mine)) == {"k80": 3, "t4": 2}
    ahead = SHIPPED.with_type("t4", {}, before="k80")
    assert dict(ClusterTypes.split(5, {"k80": 1, "t4": 1}, profiles=ahead)) == {"t4": 3, "k80": 2}


def test_a_workload_file_may_name_the_type_given_the_profiles():
    mine = SHIPPED.with_type("t4", _copy_of("p100"), before="k80")
    cluster = ClusterTypes({"t4": 16, "v100": 16}, profiles=mine)
    raw = workload_to_dict(replace(WORKLOAD.head(5), cluster=cluster))
    assert workload_from_dict(raw, profiles=mine).cluster == cluster
    with pytest.raises(ValidationError, match=r"workload: cluster must be a known GPU type \(v100, p100, "
                                              r"k80\), got 't4'"):
        workload_from_dict(raw)


def test_the_profiles_are_read_only():
    with pytest.raises(AttributeError, match="read-only"):
        SHIPPED._types = ("x",)
    with pytest.raises(TypeError):
        SHIPPED.rows("tacc")["LM (batch size 10)|1"]["v100"] = 1.0  # type: ignore[index]
    table = SHIPPED.table("tacc")
    table.clear()
    assert SHIPPED.table("tacc")
    isolated = isolated_s_by_type(WORKLOAD.jobs[0], "tacc")
    isolated[:] = 0
    assert (isolated_s_by_type(WORKLOAD.jobs[0], "tacc") > 0).all()


KEY = "LM (batch size 10)|1"


@pytest.mark.parametrize(("make", "message"), [
    (lambda: ClusterTypes({"t4": 4}), r"counts must be a known GPU type \(v100, p100, k80\), got 't4' \(a type "
                                      r"of your own: GpuProfiles.shipped\(\).with_type"),
    (lambda: ClusterTypes({"v100": 4}, profiles={"types": []}), r"profiles must be a vfm.cluster.GpuProfiles"),
    (lambda: ClusterTypes.single(4, "t4", SHIPPED.with_type("k40", {})), r"gpu_type must be a known GPU type "
                                                                         r"\(v100, p100, k80, k40\), got 't4'$"),
    (lambda: SHIPPED.with_type("v100", {}), r"name 'v100' is already a GPU type"),
    (lambda: SHIPPED.with_type("", {}), r"name must be a non-empty string"),
    (lambda: SHIPPED.with_type("t4", {}, before="h100"), r"before must be one of the profiles' types"),
    (lambda: SHIPPED.with_type("t4", [1.0]), r"throughputs must be a mapping of throughput sets \(tacc, wisr\)"),
    (lambda: SHIPPED.with_type("t4", {"nope": {}}), r"each key of throughputs must be a throughput set of "
                                                     r"the profiles \(tacc, wisr\), got 'nope'"),
    (lambda: SHIPPED.with_type("t4", {"tacc": {"LM|1": 1.0}}), r"throughputs\['tacc'\]: 'LM\|1' is not a job key"),
    (lambda: SHIPPED.with_type("t4", {"tacc": {KEY: -1.0}}),
     r"throughputs\['tacc'\]\['LM \(batch size 10\)\|1'\] must be a finite number of steps/s > 0 \(or None"),
    (lambda: SHIPPED.with_type("t4", {"tacc": {KEY: float("nan")}}), r"\['LM \(batch size 10\)\|1'\] must be a"),
    (lambda: SHIPPED.with_type("t4", {"tacc": {KEY: True}}), r"\['LM \(batch size 10\)\|1'\] must be a"),
    (lambda: GpuProfiles(["a", "a"], {"s": {}}), r"types lists a GPU type twice: 'a'"),
    (lambda: GpuProfiles("ab", {"s": {}}), r"types must be a non-empty sequence"),
    (lambda: GpuProfiles(["a"], {}), r"sets must be a mapping of at least one throughput set name .*, got dict"),
    (lambda: GpuProfiles(["a"], {"s": {"k": {"b": 1.0}}}), r"each key of sets\['s'\]\['k'\] must be one of types "
                                                            r"\(a\), got 'b'"),
    (lambda: GpuProfiles(["a"], {"s": {"k": {"a": 0.0}}}), r"sets\['s'\]\['k'\]\['a'\] must be a finite number"),
    (lambda: GpuProfiles(["a"], {"s": {}}, profiled="b"), r"profiled must be one of types \(a\), got 'b'"),
    (lambda: GpuProfiles.from_dict([]), r"profiles must be a JSON object with 'types' and 'sets', got list"),
    (lambda: GpuProfiles.from_dict({"types": ["a"]}), r"^sets must be a mapping of at least one .*, got NoneType$"),
    (lambda: GpuProfiles(["a", ""], {"s": {}}), r"^types\[1\] must be a non-empty string, got str ''$"),
    (lambda: SHIPPED.rows("nope"), r"throughput_set must be a throughput set of the profiles "
                                    r"\(tacc, wisr\), got 'nope'"),
    (lambda: SHIPPED.table("tacc", "t4"), r"gpu_type must be a GPU type of the profiles \(v100, p100, k80\), got 't4'"),
    (lambda: epoch_seconds_by_type(WORKLOAD.jobs[0], "tacc", ["t4"]), r"types must be a known GPU type .*, got 't4'"),
    (lambda: epoch_seconds_by_type(WORKLOAD.jobs[0], "tacc", profiles="shipped"),
     r"profiles must be a vfm.cluster.GpuProfiles \(e.g. .*\) or None \(the shipped ones\), got str"),
    (lambda: epoch_seconds_by_type(WORKLOAD.jobs[0], "tacc", ClusterTypes({"v100": 1}, SHIPPED.with_type("t4", {})),
                                   profiles=SHIPPED), r"profiles: .* are not the profiles of the cluster types"),
    (lambda: type_regimes(WORKLOAD.jobs[0], "wisr2", profiles=SHIPPED.with_type("t4", {})),
     r"throughputs \(for job id 0\) must be a throughput set of the profiles \(tacc, wisr\), got 'wisr2'"),
])
def test_bad_input_names_the_argument(make, message):
    with pytest.raises(ValidationError, match=message):
        make()
