"""The scheduling layer: workloads, the round-based simulator, the policy protocol, the metrics
and the baselines.

- `vfm.cluster.workload`: the validated workload format (`load_workload`, `Workload`, `Job`;
  `workload_to_dict` writes it) and its arrays view (`WorkloadArrays`); the Shockwave artifact's
  four traces ship with the package.
- `vfm.cluster.gpu_types`: GPU types as goods: a cluster's GPUs by type (`ClusterTypes`, a
  workload's optional ``cluster``) and each job's epoch times per type by the throughput ratio of
  the shipped profiles (`epoch_seconds_by_type`, `fastest_isolated_s`; what a scheduler is told,
  `type_regimes`, and the types that can host a job, `job_types`).
- `vfm.cluster.generate`: seeded workload generation (`generate_workload`, Shockwave-style, with
  optionally uncertain adaptation, `Uncertainty`) and resampling of traces onto other loads,
  clusters and gang mixes (`resample_workload`).
- `vfm.cluster.protocol`: `SchedulingPolicy`, the interface a scheduler drives (every policy
  here implements it, `vfm.planner.Policy` included), on one GPU type or several;
  `ClusterAware`, the optional `cluster` of a policy that places each job on a type, and
  `ReportsDiagnostics`, the optional method by which a policy says how it decided a round.
- `vfm.cluster.simulator`: `simulate` runs a policy on a workload round by round.
- `vfm.cluster.metrics`: makespan, JCT, finish-time fairness, utilization; `summarize`.
- `vfm.cluster.baselines`: the baselines (`BASELINES`), each one round policy composed with a
  round mechanism: the paper's and the static market on one GPU type, and Gavel's
  heterogeneity-aware ones (`HeterogeneousMaxMinFairness`, ...) on one type or several.
- `vfm.cluster.windows`: planning windows built from a workload (benchmark and test instances).
- `vfm.cluster.artifact`: the Shockwave artifact's simulator mechanics and its baselines as it
  runs them, which reproduce the paper's published baseline numbers.

The vfm policy itself is `vfm.planner.Policy`; `vfm.planner.Policy.shockwave` is the configuration
the reproduction runs.

Examples
--------
The first 12 jobs of the 120-job Shockwave trace under Gavel's max-min fairness and under the vfm
policy:

>>> from vfm.cluster import BASELINES, load_workload, simulate, summarize
>>> from vfm.planner import Policy
>>> workload = load_workload("shockwave_120jobs_32gpus").head(12)
>>> max_min = BASELINES["max_min_fairness"]
>>> baseline = summarize(simulate(workload, max_min(workload.gpus, workload.round_s, 0)))
>>> ours = summarize(simulate(workload, Policy.shockwave(workload.gpus, workload.round_s)))
>>> ours["makespan_s"] <= baseline["makespan_s"]
True
"""

from vfm.cluster import metrics
from vfm.cluster.baselines import (
    BASELINES,
    HeterogeneousFinishTimeFairness,
    HeterogeneousMaxMinFairness,
    HeterogeneousMaxSumThroughput,
    HeterogeneousMinTotalDuration,
    HeterogeneousStaticMarket,
)
from vfm.cluster.generate import Uncertainty, WorkloadSpec, generate_workload, resample_workload
from vfm.cluster.gpu_types import (
    GPU_TYPES,
    PROFILED_TYPE,
    ClusterTypes,
    GpuProfiles,
    epoch_seconds_by_type,
    fastest_isolated_s,
    isolated_s_by_type,
    job_types,
    proportional_isolated_s,
    type_regimes,
)
from vfm.cluster.metrics import summarize
from vfm.cluster.protocol import ClusterAware, ReportsDiagnostics, SchedulingPolicy
from vfm.cluster.simulator import Round, Simulation, simulate
from vfm.cluster.workload import Job, Workload, WorkloadArrays, load_workload, workload_from_dict, workload_to_dict

__all__ = [
    "BASELINES",
    "GPU_TYPES",
    "PROFILED_TYPE",
    "ClusterAware",
    "ClusterTypes",
    "GpuProfiles",
    "HeterogeneousFinishTimeFairness",
    "HeterogeneousMaxMinFairness",
    "HeterogeneousMaxSumThroughput",
    "HeterogeneousMinTotalDuration",
    "HeterogeneousStaticMarket",
    "Job",
    "ReportsDiagnostics",
    "Round",
    "SchedulingPolicy",
    "Simulation",
    "Uncertainty",
    "Workload",
    "WorkloadArrays",
    "WorkloadSpec",
    "epoch_seconds_by_type",
    "fastest_isolated_s",
    "generate_workload",
    "isolated_s_by_type",
    "job_types",
    "load_workload",
    "metrics",
    "proportional_isolated_s",
    "resample_workload",
    "simulate",
    "summarize",
    "type_regimes",
    "workload_from_dict",
    "workload_to_dict",
]
