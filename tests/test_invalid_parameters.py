"""Every public parameter of every public entry point refuses invalid values with one
`vfm.errors.ValidationError` that names it (in the spirit of scikit-learn's
``generate_invalid_param_val``).

The values are derived from the declared constraints (`vfm.parameters`) wherever a parameter has
one: the fields of `PlanOptions` and `RoundOptions`, `Policy`'s own arguments, the forecast
horizon and each solver backend's declared options. A field added to one of them is fed invalid
values here without anyone listing it; a field added without a declared constraint fails
`test_every_option_field_declares_its_constraint`. Entry points without a declaration (`add_job`,
`plan`'s arrays, `vfm.solve`'s market and warm start, `ClusterTypes`, `GpuProfiles`) are listed
by hand.

Two kinds of invalid value are fed. Those every numeric constraint must refuse whatever its range
(`always_invalid`): NaN, an integer beyond int64 (``10**30``, ``10**400``), a bool, a string, a
list. And range probes (`probes`: negative, zero, infinite, huge floats), fed only where the
constraint itself refuses them, so that the entry point is checked to refuse exactly what it
declares.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import re
from dataclasses import fields
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vfm
from vfm.cluster import (
    ClusterTypes,
    GpuProfiles,
    Uncertainty,
    WorkloadSpec,
    generate_workload,
    load_workload,
    resample_workload,
    workload_from_dict,
    workload_spec,
)
from vfm.errors import ValidationError
from vfm.forecast import DirichletForecaster, JobStates
from vfm.forecast.base import _HORIZON
from vfm.parameters import (
    Anything,
    Boolean,
    Constraint,
    Either,
    Function,
    Hashed,
    Instance,
    Interval,
    Known,
    OneOf,
    Optional,
    Real,
    Span,
    Whole,
    check_parameters,
)
from vfm.planner import JobTerms, PlanOptions, Policy, RoundOptions, plan
from vfm.planner import options as plan_options
from vfm.planner.policy import policy as policy_module
from vfm.planner.policy import state as policy_state
from vfm.solvers import base as solver_base
from vfm.solvers import registry

HUGE_INTS = (10**30, -(10**30), 10**400, 2**63)
NON_FINITE = (math.nan, math.inf, -math.inf)


def always_invalid(constraint: Constraint) -> list[Any]:
    """Values `constraint` must refuse whatever its declared range."""
    if isinstance(constraint, Optional):
        return always_invalid(constraint.inner)
    if isinstance(constraint, Either):
        both = [v for v in always_invalid(constraint.first) if not constraint.second.admits(v)]
        return both + [v for v in always_invalid(constraint.second) if not constraint.first.admits(v)]
    if isinstance(constraint, Real) or (isinstance(constraint, Interval) and constraint.kind is Real):
        return [math.nan, *HUGE_INTS, True, "1", [1.0], *([] if not constraint.finite else [math.inf, -math.inf])]
    if isinstance(constraint, Whole) or isinstance(constraint, Interval):
        return [math.nan, math.inf, 2.5, 3.0, *HUGE_INTS, True, "3", [1]]
    if isinstance(constraint, Boolean):
        return [1, 0, "True", math.nan]
    if isinstance(constraint, OneOf):
        return ["no such choice", 1, math.nan]
    if isinstance(constraint, Instance | Function):
        return [3, "a string", object()]
    if isinstance(constraint, Known):
        return ["no such name", 3, None, math.nan, ("a",)]
    if isinstance(constraint, Hashed):
        return [[1], {"a": 1}, ([1],)]
    raise AssertionError(f"no invalid values known for {constraint!r}: teach always_invalid its kind")


def probes(constraint: Constraint) -> list[Any]:
    """Range probes, each fed only where `constraint` refuses it."""
    values = [-1, 0, -0.5, 1e-300, 0.5, 1.0, 1.5, 1e6 * 1.01, 1e13, 1e308, -1e308, math.inf, -math.inf, 2**62]
    return [v for v in values if not constraint.admits(v)]


def invalid(constraint: Constraint) -> list[Any]:
    if isinstance(constraint, Span):
        return _span_invalid(constraint)
    found = always_invalid(constraint)
    assert found and not any(constraint.admits(v) for v in found), constraint
    return found + [v for v in probes(constraint) if v not in found]


def _id(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**63:
        return f"int~1e{round(math.log10(abs(value)))}"
    try:
        return repr(value)[:20]
    except ValueError:  # holds an integer past Python's 4300 digits
        return f"{type(value).__name__}-holding-a-huge-int"


def cases(constraints: dict[str, Constraint], skip: tuple[str, ...] = ()) -> list[Any]:
    return [pytest.param(name, value, id=f"{name}={_id(value)}")
            for name, constraint in constraints.items() if name not in skip for value in invalid(constraint)]


def names_it(name: str) -> str:
    """A message that starts with the parameter's name, as the caller wrote it."""
    return rf"^{re.escape(name)}\b"


PLAN_CONSTRAINTS = {**_HORIZON, **plan_options._CONSTRAINTS}
# Checked by their own rule rather than a constraint: a backend must be an installed planning one.
PLAN_CHECKED_OTHERWISE = {"solver"}


def test_every_option_field_declares_its_constraint():
    # The next option added is covered here as soon as it declares its constraint.
    assert {f.name for f in fields(PlanOptions)} == set(PLAN_CONSTRAINTS) | PLAN_CHECKED_OTHERWISE
    assert {f.name for f in fields(RoundOptions)} == set(policy_state._ROUND_CONSTRAINTS)


@pytest.mark.parametrize(("name", "value"), cases(PLAN_CONSTRAINTS))
def test_a_planning_option_refuses_an_invalid_value_naming_it_everywhere_it_is_taken(name, value):
    with pytest.raises(ValidationError, match=names_it(name)):
        PlanOptions(**{name: value})
    with pytest.raises(ValidationError, match=names_it(name)):
        Policy(4, **{name: value})
    with pytest.raises(ValidationError, match=names_it(name)):
        plan(_states(), [1, 1], 2, **{name: value})


@pytest.mark.parametrize(("name", "value"), cases(policy_state._ROUND_CONSTRAINTS))
def test_a_round_option_refuses_an_invalid_value_naming_it(name, value):
    with pytest.raises(ValidationError, match=names_it(name)):
        RoundOptions(**{name: value})
    with pytest.raises(ValidationError, match=names_it(name)):
        Policy(4, **{name: value})


@pytest.mark.parametrize(("name", "value"), cases(policy_module._CONSTRAINTS))
def test_a_policy_argument_refuses_an_invalid_value_naming_it(name, value):
    arguments: dict[str, Any] = {"capacity": 4, name: value}
    with pytest.raises(ValidationError, match=names_it(name)):
        Policy(**arguments)


# --- add_job: no declared constraints; each field and the job named --------------------------

NUMBER_JUNK = [math.nan, math.inf, -math.inf, *HUGE_INTS, 10**5000, True, "1", None, [1]]
ADD_JOB_CASES = [
    *[("gpus", v) for v in [*NUMBER_JUNK, 0, -1, 2.5, 5]],
    *[("epochs", v) for v in [*NUMBER_JUNK, 0, -1, 2.5]],
    *[("budget", v) for v in [*NUMBER_JUNK, 0, -1.0, 1e300]],
    *[("regimes", {32: v}) for v in [*NUMBER_JUNK, 0, -60.0]],
    *[("regimes", {v: 60.0}) for v in [math.nan, math.inf, 10**30, 10**400, True, None]],
]


@pytest.mark.parametrize(("name", "value"), [pytest.param(n, v, id=f"{n}={_id(v)}") for n, v in ADD_JOB_CASES])
def test_add_job_refuses_an_invalid_value_naming_the_field_and_the_job(name, value):
    policy = Policy(4)
    arguments: dict[str, Any] = {"job_id": "j7", "gpus": 1, "regimes": {32: 60.0}, "epochs": 10, name: value}
    with pytest.raises(ValidationError) as raised:
        policy.add_job(**arguments)
    assert name in str(raised.value) and "'j7'" in str(raised.value), raised.value
    assert policy.jobs == []


# --- plan's arrays and terms -----------------------------------------------------------------

def _states() -> JobStates:
    return JobStates.from_lists([10, 10], [{32: 60.0}, {32: 30.0}])


ENTRY_JUNK = [math.nan, math.inf, -math.inf, 10**30, 10**400, "1"]
PLAN_CASES = [
    *[("gpus", [1, v]) for v in [*ENTRY_JUNK, 0, -1, 2.5, 3]],
    *[("capacity", v) for v in [*ENTRY_JUNK, -1, [2, 2]]],
    *[("budgets", [1, v]) for v in [*ENTRY_JUNK, 0, -1]],
    *[("fair_finish_s", [60.0, v]) for v in [*ENTRY_JUNK, 0, -1]],
    *[("waited", [0, v]) for v in [*ENTRY_JUNK, -1, 0.5]],
    *[("warm_start", v) for v in [np.zeros(25), [[0.1] * 4, [0.1] * 3], np.full((2, 4), np.nan),
                                  np.full((2, 4), np.inf), [[10**30] * 4] * 2, [[10**400] * 4] * 2,
                                  np.full((2, 4), 1.5), "abc", 5]],
]


@pytest.mark.parametrize(("name", "value"), [pytest.param(n, v, id=f"{n}={_id(v)}") for n, v in PLAN_CASES])
def test_plan_refuses_an_invalid_argument_naming_it(name, value):
    arguments: dict[str, Any] = {"gpus": [1, 1], "capacity": 2, "warm_start": None}
    terms: dict[str, Any] = {}
    if name in {f.name for f in fields(JobTerms)}:
        terms[name] = value
    else:
        arguments[name] = value
    with pytest.raises(ValidationError, match=names_it(name)):
        plan(_states(), rounds=4, terms=JobTerms(**terms), **arguments)


# --- vfm.solve: the market, and every backend's declared options ----------------------------

def _market() -> vfm.VolatileFisherMarket:
    return vfm.VolatileFisherMarket(np.full((3, 2, 4), 0.5), np.ones(3), np.ones((2, 4)))


MARKET_CASES = [
    *[("utilities", [[v, 1.0]]) for v in ENTRY_JUNK],
    *[("budgets", [1.0, v]) for v in [*ENTRY_JUNK, 0, -1]],
    *[("supply", [1.0, v]) for v in [*ENTRY_JUNK, -1]],
]


@pytest.mark.parametrize(("name", "value"), [pytest.param(n, v, id=f"{n}={_id(v)}") for n, v in MARKET_CASES])
def test_a_market_refuses_an_invalid_array_naming_it(name, value):
    arguments: dict[str, Any] = {"utilities": [[1.0, 1.0], [1.0, 1.0]], "budgets": [1.0, 1.0],
                                 "supply": [1.0, 1.0], name: value}
    with pytest.raises(ValidationError, match=names_it(name)):
        vfm.VolatileFisherMarket.static(**arguments)


def _declared_options() -> list[Any]:
    found = []
    for solver in registry.available_solvers("market"):
        kinds = registry._REGISTRY[solver].capabilities.option_kinds() or {}
        for option, kind in kinds.items():
            found += [pytest.param(solver, option, value, id=f"{solver}-{option}={_id(value)}")
                      for value in (invalid(solver_base._KINDS[kind]) if kind != "any" else [])]
    return found


@pytest.mark.parametrize(("solver", "option", "value"), _declared_options())
def test_a_solver_option_refuses_an_invalid_value_naming_it_before_any_solve(solver, option, value):
    with pytest.raises(ValidationError, match=rf"\b{re.escape(option)}="):
        vfm.solve(_market(), solver=solver, **{option: value})


WARM_STARTS = [np.zeros(25), (np.zeros(25), np.zeros(8)), (np.zeros((3, 2, 4)), np.zeros(25)),
               (np.full((3, 2, 4), np.nan), np.ones((2, 4))), (np.zeros((3, 2, 4)), np.full((2, 4), np.inf)),
               (np.zeros((3, 2, 4)), np.ones((2, 4)), 1), "abc", 5, ([[1]], "x"),
               (np.full((3, 2, 4), 10**30).tolist(), np.ones((2, 4)))]


@pytest.mark.parametrize("warm_start", WARM_STARTS, ids=range(len(WARM_STARTS)))
def test_solve_refuses_a_malformed_warm_start_naming_it(warm_start):
    # Not a backend failure with NumPy's "cannot reshape array of size 25": the caller's error.
    with pytest.raises(ValidationError, match=r"^warm_start\b"):
        vfm.solve(_market(), solver="schur-ipm", warm_start=warm_start)


def test_solve_takes_a_well_formed_warm_start():
    market = _market()
    first = vfm.solve(market, solver="schur-ipm")
    again = vfm.solve(market, solver="schur-ipm", warm_start=(first.allocation, first.prices))
    assert again.success


# --- ClusterTypes and GpuProfiles ------------------------------------------------------------

COUNT_JUNK = [*NUMBER_JUNK, 0, -1, 2.5, 10**6 + 1]


@pytest.mark.parametrize("count", COUNT_JUNK, ids=map(_id, COUNT_JUNK))
def test_cluster_counts_refuse_an_invalid_count_naming_it(count):
    with pytest.raises(ValidationError, match=r"^counts\b"):
        ClusterTypes({"v100": count})
    with pytest.raises(ValidationError, match=r"^gpus\b"):
        ClusterTypes.single(count)
    with pytest.raises(ValidationError, match=r"^gpus\b"):
        ClusterTypes.split(count, {"v100": 1})


def test_a_cluster_of_more_gpus_than_max_gpus_is_refused_not_wrapped():
    # Counts of 2**62 each summed to past int64 and wrapped to a negative total.
    with pytest.raises(ValidationError, match=r"^counts\['v100'\] must be a positive whole number of GPUs, at most"):
        ClusterTypes({"v100": 2**62, "p100": 2**62, "k80": 2**62})
    with pytest.raises(ValidationError, match=r"^counts must give at most 1e\+06 GPUs in all \(MAX_GPUS\)"):
        ClusterTypes({"v100": 10**6, "k80": 1})


@pytest.mark.parametrize("share", [*NUMBER_JUNK, -1.0], ids=map(_id, [*NUMBER_JUNK, -1.0]))
def test_cluster_shares_refuse_an_invalid_share_naming_it(share):
    with pytest.raises(ValidationError, match=r"^shares\["):
        ClusterTypes.split(8, {"v100": share, "k80": 1})


SPEED_JUNK = [math.nan, math.inf, -math.inf, *HUGE_INTS, True, "1", 0, -1.0]


@pytest.mark.parametrize("speed", SPEED_JUNK, ids=map(_id, SPEED_JUNK))
def test_gpu_profiles_refuse_an_invalid_speed_naming_it(speed):
    shipped = GpuProfiles.shipped()
    set_name = shipped.throughput_sets[0]
    key = next(iter(shipped.rows(set_name)))
    with pytest.raises(ValidationError, match=r"^throughputs\["):
        shipped.with_type("t4", {set_name: {key: speed}})
    with pytest.raises(ValidationError, match=r"^sets\["):
        GpuProfiles(["a"], {"s": {"job|1": {"a": speed}}})


@pytest.mark.parametrize(("name", "value"), [("types", "v100"), ("types", []), ("types", [1]), ("profiled", "x"),
                                             ("sets", {}), ("sets", 3)])
def test_gpu_profiles_refuse_an_invalid_argument_naming_it(name, value):
    arguments: dict[str, Any] = {"types": ["a"], "sets": {"s": {"job|1": {"a": 1.0}}}, "profiled": None, name: value}
    with pytest.raises(ValidationError, match=names_it(name)):
        GpuProfiles(**arguments)


def test_the_constraint_kinds_used_are_all_known_here():
    # An entry point whose constraint is of a kind `always_invalid` does not know fails here, not silently.
    for constraints in (PLAN_CONSTRAINTS, policy_state._ROUND_CONSTRAINTS, policy_module._CONSTRAINTS,
                        solver_base._KINDS):
        for constraint in constraints.values():
            if not isinstance(constraint, Anything):
                assert invalid(constraint)


@pytest.mark.parametrize("constraint", [Known(("v100", "k80"), "a GPU type"), Hashed()], ids=["Known", "Hashed"])
def test_the_name_and_key_kinds_refuse_their_invalid_values_naming_the_argument(constraint):
    for value in always_invalid(constraint):
        assert not constraint.admits(value)
        with pytest.raises(ValidationError, match=names_it("arg")):
            check_parameters({"arg": value}, {"arg": constraint})


def test_a_forecaster_and_seed_refuse_huge_integers():
    with pytest.raises(ValidationError, match=r"^seed\b"):
        Policy(4, forecaster=DirichletForecaster(), seed=10**30)


# --- Workload readers: the generator's settings, by their declared constraints ----------------

def _span_invalid(constraint: Span) -> list[Any]:
    """A (low, high) pair is refused for any bound its `bound` refuses, in either place, and for a
    pair that is not one (a string, one number, three, high below low)."""
    good = next(v for v in (1.0, 0.5, 1e-3) if constraint.bound.admits(v))
    bad = [v for v in invalid(constraint.bound)
           if not isinstance(v, list)]  # a list inside the pair is its own case below
    return [*[(v, good) for v in bad], *[(good, v) for v in bad], "ab", (good,), (good, good, good), 5, None,
            (good * 2, good) if constraint.bound.admits(good * 2) else ("a", "b")]


SPEC_CONSTRAINTS = workload_spec._spec_constraints()
# Checked by their own rules: each mix's weights and values (below).
SPEC_CHECKED_OTHERWISE = {"gang_mix", "adaptation_mix", "duration_mix"}
SPEC_DEFAULTS: dict[str, Any] = {"jobs": 4, "gpus": 8}


def test_every_workload_setting_declares_its_constraint():
    assert {f.name for f in fields(WorkloadSpec)} == set(SPEC_CONSTRAINTS) | SPEC_CHECKED_OTHERWISE
    assert {f.name for f in fields(Uncertainty)} == set(workload_spec._UNCERTAINTY_CONSTRAINTS)


@pytest.mark.parametrize(("name", "value"), cases(SPEC_CONSTRAINTS))
def test_a_workload_spec_refuses_an_invalid_setting_naming_it(name, value):
    with pytest.raises(ValidationError, match=names_it(name)):
        WorkloadSpec(**{**SPEC_DEFAULTS, name: value})


@pytest.mark.parametrize(("name", "value"), cases(workload_spec._UNCERTAINTY_CONSTRAINTS))
def test_uncertainty_refuses_an_invalid_setting_naming_it(name, value):
    with pytest.raises(ValidationError, match=names_it(name)):
        Uncertainty(**{name: value})


WEIGHT_JUNK = [*NUMBER_JUNK, -1.0, -(10**30)]
MIX_CASES = [
    *[("gang_mix", {1: v}) for v in WEIGHT_JUNK],
    *[("gang_mix", ((v, 1.0),)) for v in [*COUNT_JUNK, 9]],
    *[("gang_mix", v) for v in [{}, {1: 0.0}, "1", 5, ((1, 1.0), (1, 2.0)), ((1, 1.0, 2.0),),
                                ((np.array([1, 2]), 1.0), (np.array([1, 2]), 1.0))]],
    *[("adaptation_mix", {"gns": v}) for v in WEIGHT_JUNK],
    *[("adaptation_mix", ((v, 1.0),)) for v in [1, math.nan, 10**400, True, "nope", ["gns"]]],
    *[("duration_mix", {(360.0, 1800.0): v}) for v in WEIGHT_JUNK],
    *[("duration_mix", (((v, 1800.0), 1.0),)) for v in [math.nan, math.inf, 10**30, 10**400, 10**5000, True, "1",
                                                    0, -1.0, 1e13]],
    *[("duration_mix", v) for v in [{}, 5, (((1.0, 2.0), 1.0), ([1, 2], 1.0))]],
]


@pytest.mark.parametrize(("name", "value"), [pytest.param(n, v, id=f"{n}={_id(v)}") for n, v in MIX_CASES])
def test_a_workload_mix_refuses_an_invalid_weight_or_value_naming_it(name, value):
    with pytest.raises(ValidationError, match=names_it(name)) as raised:
        WorkloadSpec(**{**SPEC_DEFAULTS, name: value})
    assert "\n" not in str(raised.value)


SEED_JUNK = [*NUMBER_JUNK, -1, 2.5, 3.0]


@pytest.mark.parametrize("seed", SEED_JUNK, ids=map(_id, SEED_JUNK))
def test_a_workload_seed_refuses_an_invalid_value_naming_it(seed):
    spec = WorkloadSpec(jobs=4, gpus=8)
    with pytest.raises(ValidationError, match=r"^seed\b"):
        generate_workload(spec, seed=seed)
    with pytest.raises(ValidationError, match=r"^seed\b"):
        resample_workload("shockwave_120jobs_32gpus", spec, seed=seed)


NAME_JUNK = [math.nan, 10**30, 10**5000, True, 3, ["a"]]


@pytest.mark.parametrize("value", NAME_JUNK, ids=map(_id, NAME_JUNK))
def test_a_workload_reader_refuses_a_name_or_path_that_is_not_one_naming_it(value):
    spec = WorkloadSpec(jobs=4, gpus=8)
    with pytest.raises(ValidationError, match=r"^name\b"):
        generate_workload(spec, name=value)
    with pytest.raises(ValidationError, match=r"^name\b"):
        resample_workload("shockwave_120jobs_32gpus", spec, name=value)
    with pytest.raises(ValidationError, match=r"^path_or_name\b"):
        load_workload(value)
    with pytest.raises(ValidationError, match=r"^source\b"):
        resample_workload(value, spec)
    with pytest.raises(ValidationError, match=r"^default_name\b"):
        workload_from_dict(_workload_file(), default_name=value)


PROFILES_JUNK = [math.nan, 10**30, True, "tacc", {"v100": 1.0}, GpuProfiles]


@pytest.mark.parametrize("profiles", PROFILES_JUNK, ids=map(_id, PROFILES_JUNK))
def test_a_workload_reader_refuses_profiles_that_are_not_gpu_profiles(profiles, tmp_path):
    # Refused whether or not the file names a cluster the profiles would be read for.
    path = tmp_path / "w.json"
    path.write_text(json.dumps(_workload_file()))
    with pytest.raises(ValidationError, match=r"^profiles must be"):
        load_workload(path, profiles=profiles)
    with pytest.raises(ValidationError, match=r"^profiles must be"):
        workload_from_dict(_workload_file(), profiles=profiles)


@pytest.mark.parametrize("jobs", COUNT_JUNK[:-1], ids=map(_id, COUNT_JUNK[:-1]))
def test_the_head_of_a_workload_refuses_an_invalid_count_naming_it(jobs):
    with pytest.raises(ValidationError, match=r"^jobs\b"):
        load_workload("shockwave_120jobs_32gpus").head(jobs)


# --- Workload readers: every number of a workload file, in the file and decoded -------------

def _workload_file(cluster: bool = False) -> dict[str, Any]:
    """A valid workload file using every numeric field (a cluster by type when asked)."""
    raw: dict[str, Any] = {
        "gpus": 4, "round_s": 60.0, "jobs": [
            {"id": "j7", "arrival_s": 0.0, "gpus": 2, "epochs": 3, "isolated_s": 30.0, "model": "ResNet-18",
             "adaptation": "static", "total_steps": 3000, "samples_per_epoch": 50000,
             "phases": [{"epochs": 3, "batch_size": 32, "epoch_s": 10.0}],
             "profile": [{"batch_size": 32, "epoch_s": 10.0}]}]}
    return raw | ({"cluster": {"v100": 2, "k80": 2}} if cluster else {})


# JSON text for each invalid number: what `json` writes for NaN and the infinities, literals past
# a float and past int64, one past Python's 4300-digit limit for int(), and non-numbers.
LITERAL_JUNK = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1" + "0" * 30, "-1" + "0" * 30,
                "1" + "0" * 400, str(2**63), "9" * 5000, "true", "false", '"1"', "null", "[1]", "{}"]
# (where in the file, the field as a message names it, what names the record, range probes)
FILE_FIELDS: list[tuple[tuple[Any, ...], str, str, list[str]]] = [
    (("gpus",), "gpus", "workload", ["0", "-1", "2.5", "1e7"]),
    (("round_s",), "round_s", "workload", ["0", "-1.0", "1e13"]),
    (("jobs", 0, "arrival_s"), "arrival_s", "job 0 (id 'j7')", ["-1", "-0.5", "1e300"]),
    (("jobs", 0, "gpus"), "gpus", "job 0 (id 'j7')", ["0", "-1", "2.5", "5"]),
    (("jobs", 0, "epochs"), "epochs", "job 0 (id 'j7')", ["0", "-1", "2.5", "4"]),
    (("jobs", 0, "isolated_s"), "isolated_s", "job 0 (id 'j7')", ["0", "-30.0", "31.0"]),
    (("jobs", 0, "total_steps"), "total_steps", "job 0 (id 'j7')", ["0", "-1", "2.5", "1e16"]),
    (("jobs", 0, "samples_per_epoch"), "samples_per_epoch", "job 0 (id 'j7')", ["0", "-1", "2.5", "1e16"]),
    (("jobs", 0, "phases", 0, "epochs"), "epochs", "phase 0", ["-1", "2.5"]),
    (("jobs", 0, "phases", 0, "batch_size"), "batch_size", "phase 0", ["0", "-32", "1e16"]),
    (("jobs", 0, "phases", 0, "epoch_s"), "epoch_s", "phase 0", ["0", "-10.0", "1e13"]),
    (("jobs", 0, "profile", 0, "batch_size"), "batch_size", "profile entry 0", ["0", "-32"]),
    (("jobs", 0, "profile", 0, "epoch_s"), "epoch_s", "profile entry 0", ["0", "-10.0", "1e13"]),
    (("cluster", "v100"), "cluster", "v100", ["0", "-1", "2.5", "3"]),
]


def _file_text(where: tuple[Any, ...], literal: str) -> str:
    raw = _workload_file(cluster=where[0] == "cluster")
    target = raw
    for key in where[:-1]:
        target = target[key]
    target[where[-1]] = "@@"
    return json.dumps(raw).replace('"@@"', literal)


FILE_CASES = [pytest.param(where, field, record, literal, id=f"{'.'.join(map(str, where))}={literal[:12]}")
              for where, field, record, probes_of in FILE_FIELDS for literal in [*LITERAL_JUNK, *probes_of]]


@pytest.mark.parametrize(("where", "field", "record", "literal"), FILE_CASES)
def test_a_workload_file_refuses_an_invalid_number_naming_the_file_job_and_field(where, field, record, literal,
                                                                                 tmp_path):
    path = tmp_path / "w.json"
    path.write_text(_file_text(where, literal))
    with pytest.raises(ValidationError) as raised:
        load_workload(path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"{path}: "), message
    assert record in message and re.search(rf"\b{field}\b", message), message
    if where[0] == "jobs":
        assert "job 0 (id 'j7')" in message, message


@pytest.mark.parametrize(("where", "field", "record", "literal"),
                         [case for case in FILE_CASES if case.values[3] != "9" * 5000])
def test_a_decoded_workload_refuses_an_invalid_number_naming_the_job_and_field(where, field, record, literal):
    raw = json.loads(_file_text(where, literal))
    with pytest.raises(ValidationError) as raised:
        workload_from_dict(raw)
    message = str(raised.value)
    assert "\n" not in message and record in message and re.search(rf"\b{field}\b", message), message


def test_the_workload_file_the_cases_edit_loads(tmp_path):
    for cluster in (False, True):
        path = tmp_path / "w.json"
        path.write_text(json.dumps(_workload_file(cluster)))
        assert load_workload(path).jobs[0].id == "j7"


@pytest.mark.parametrize("value", [10**30, -(10**30), 2**63], ids=_id)
def test_an_integer_beyond_int64_in_a_workload_is_refused_as_such_wherever_it_stands(value):
    # The same rule in every field and on both of the reader's paths (the bulk read of a
    # well-formed list of phases, and the record-by-record one): not read as a float.
    for where, field, record, _ in FILE_FIELDS:
        if where[0] == "cluster":  # a count: refused as more than MAX_GPUS, or by ClusterTypes, as beyond int64
            continue
        raw = json.loads(_file_text(where, str(value)))
        with pytest.raises(ValidationError, match="beyond int64") as raised:
            workload_from_dict(raw)
        assert record in str(raised.value) and field in str(raised.value), raised.value


def test_an_integer_python_cannot_read_in_a_workload_s_annotations_is_still_refused(tmp_path):
    # Annotations are kept as they are: no stand-in for the number may stay in them.
    raw = _workload_file() | {"annotations": {"trace": "@@"}}
    path = tmp_path / "w.json"
    path.write_text(json.dumps(raw).replace('"@@"', "9" * 5000))
    with pytest.raises(ValidationError, match=rf"^{re.escape(str(path))} holds a number Python cannot read"):
        load_workload(path)


# --- vfm's own command lines ------------------------------------------------------------------
# (The benchmarks' command lines have theirs in tests/benchmarks/test_cli.py.)

VFM_ROOT = Path(vfm.__file__).resolve().parent
#: Every ``python -m vfm...`` command line: a module added with a ``__main__`` block fails
#: `test_every_command_line_of_vfm_is_known_here` until it is listed, and so fed the values below.
VFM_COMMANDS = ("vfm.planner.compile",)
CLI_NUMBER_JUNK = ["nan", "NaN", "inf", "-inf", "1e400", "-1e400", str(10**30), str(10**400), "9" * 5000, "-1",
                   "0", "2.5", "1e308", "abc", ""]


def test_every_command_line_of_vfm_is_known_here():
    found = {".".join(path.relative_to(VFM_ROOT.parent).with_suffix("").parts) for path in VFM_ROOT.rglob("*.py")
             if path.name == "__main__.py" or 'if __name__ == "__main__":' in path.read_text(encoding="utf-8")}
    assert found == set(VFM_COMMANDS)


class _Built(Exception):
    pass


def _parser_of(command: str, monkeypatch: pytest.MonkeyPatch) -> argparse.ArgumentParser:
    """The parser `command`'s `main` builds, caught as it starts to parse (so that nothing runs)."""
    built: list[argparse.ArgumentParser] = []

    def catch(self: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> Any:
        built.append(self)
        raise _Built

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_known_args", catch)
        with pytest.raises(_Built):
            importlib.import_module(command).main([])
    return built[0]


def _bad_command_lines(command: str, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, list[str]]]:
    """(what the one line must name, the command line) for each invalid number `command` may be given:
    as the value of each option that takes one, after each that takes none, and as a stray argument."""
    lines: list[tuple[str, list[str]]] = []
    for action in _parser_of(command, monkeypatch)._actions:
        if not action.option_strings or "-h" in action.option_strings:
            continue
        flag = action.option_strings[-1]
        takes_value = action.nargs != 0
        for junk in CLI_NUMBER_JUNK:
            if takes_value and (action.type is None or action.type is str):
                continue  # a text option: any string is one
            lines.append((flag, [f"{flag}={junk}"]))
    lines += [("unrecognized arguments", [junk]) for junk in CLI_NUMBER_JUNK if junk and not junk.startswith("-")]
    return lines


@pytest.mark.parametrize("command", VFM_COMMANDS)
def test_a_command_line_refuses_an_invalid_number_in_one_line_before_any_work(command, monkeypatch, capsys):
    lines = _bad_command_lines(command, monkeypatch)
    assert lines
    started: list[str] = []
    module = importlib.import_module(command)
    monkeypatch.setattr("vfm.planner.kernel_loading.compile_kernels", lambda *a, **k: started.append("compiled"))
    for names, argv in lines:
        with pytest.raises(SystemExit) as exited:
            module.main(argv)
        out, err = capsys.readouterr()
        assert exited.value.code == 2, (argv, err)
        assert err.count("\n") == 1 and err.startswith(f"python -m {command}: error: ") and names in err, (argv, err)
        assert out == "" and started == [], argv
