"""The workload format: a cluster, its round length and its jobs, validated once.

A workload file is a JSON object::

    {"name": "...", "gpus": 32, "round_s": 120.0,
     "jobs": [{"id": 0, "arrival_s": 0.0, "gpus": 1, "epochs": 30,
               "phases": [{"epochs": 10, "batch_size": 32, "epoch_s": 51.2}, ...],
               "profile": [{"batch_size": 32, "epoch_s": 51.2}, ...]}, ...]}

An optional ``"cluster": {"v100": 86, "p100": 85, "k80": 85}`` gives the cluster's GPUs by type
(`vfm.cluster.gpu_types.ClusterTypes`; they must sum to ``gpus``); without it the cluster is
``gpus`` V100s, as the jobs' epoch times are (docs/simulation.md, "GPU types").

A job's ``phases`` are what it truly runs: its batch size and seconds of each epoch, as runs of
equal epochs. Its optional ``profile`` is what a scheduler is told on arrival: the nominal seconds
per epoch of every batch size the job may run (`Job.regimes`). Without a profile, a batch size has
one epoch duration across the job's phases and the profile is read off them; with one, the phases
may give a batch size other (noisy) durations and need not use every batch size the profile
lists, but every batch size they use must be listed.

A job's optional ``"restart_s"`` (seconds, >= 0) is what it loses each time it starts or restarts:
the checkpoint and restore of its model (`Job.restart_s`). `vfm.cluster.simulate` charges it, in
place of its own ``restart_s``, and tells the policy; without it the simulator's applies.

Your own data about a job or the workload (where a job comes from, its duration in the source
trace, a team) goes in ``"annotations"``, a JSON object of anything, per job and at the top level:
vfm keeps it (`Job.annotations`, `Workload.annotations`), never reads it, and `workload_to_dict`
writes it back. Otherwise a file may hold only these fields (and the descriptive ones the shipped
files carry: ``source``; a job's ``dataset``, ``job_type``, ``static_duration_s``; a phase's
``mem_mib``, ``util_pct``): a misspelled field is refused, naming the closest known one, not
ignored. Times and counts are bounded (`vfm._validation`: a job runs at most
``MAX_JOB_SECONDS`` = 1e12 s alone, a cluster has at most ``MAX_GPUS`` GPUs) so that every time
derived from them stays finite.

`load_workload` reads a path or the name of a shipped workload (the Shockwave artifact's four
traces, ``vfm/cluster/data/shockwave``, MIT: see the LICENSE there), checks every field at this
boundary (`workload_from_dict`, of `vfm.cluster.workload.reader`, checks a decoded file) and
returns a `Workload` of read-only `Job` records (`vfm.cluster.workload.model`);
`Workload.arrays` is the same workload as padded numpy arrays, for computations over all jobs at
once. `workload_to_dict` writes a workload in this format.

The package: `vfm.cluster.workload.model`, the records (`Workload`, `Job`, `Training`,
`WorkloadArrays`); `vfm.cluster.workload.reader`, the checks of a decoded file
(`workload_from_dict`); `vfm.cluster.workload.files`, the files (`load_workload`,
`workload_to_dict`, the shipped traces).

Examples
--------
>>> workload = load_workload("shockwave_120jobs_32gpus")
>>> workload.gpus, workload.round_s, workload.n_jobs
(32, 120.0, 120)
>>> arrays = workload.arrays()
>>> arrays.epochs_after(arrays.isolated_s[:, None])[:2, 0].tolist() == arrays.epochs[:2].tolist()
True
"""

from vfm.cluster.workload.files import SHIPPED, epoch_records, load_workload, shipped_workloads, workload_to_dict
from vfm.cluster.workload.model import Job, Training, Workload, WorkloadArrays, derived_profile
from vfm.cluster.workload.reader import workload_from_dict

__all__ = ["SHIPPED", "Job", "Training", "Workload", "WorkloadArrays", "derived_profile", "epoch_records",
           "load_workload", "shipped_workloads", "workload_from_dict", "workload_to_dict"]
