"""The Shockwave artifact's simulator mechanics and its baselines, to check ours against.

The paper's baseline numbers come from the artifact's own simulator (uw-mad-dash/shockwave,
MIT), whose mechanics differ from `vfm.cluster.simulator`'s in ways that move the results by
several percent: work counted in training steps with the batch size changing online, rounds
that end when their last job does, a restart charged only to long rounds, and Gavel's round
mechanism with allocations recomputed at most every 1000 s. `simulate` implements those
mechanics and the artifact's six baselines (`ALLOCATIONS`), so that each baseline can be run
both ways; docs/baselines.md ("Artifact mechanics") states every rule and compares the
numbers with the published ones.

>>> from vfm.cluster import load_workload
>>> from vfm.cluster.artifact import simulate
>>> from vfm.cluster.metrics import summarize
>>> report = summarize(simulate(load_workload("shockwave_120jobs_32gpus").head(10), "max_min_fairness"))
>>> report["makespan_s"] > 0
True
"""

from vfm.cluster.artifact.allocations import ALLOCATIONS, AllocationInputs, Allocator, make_allocator
from vfm.cluster.artifact.mechanics import ArtifactOptions, simulate, throughput_table

__all__ = ["ALLOCATIONS", "AllocationInputs", "Allocator", "ArtifactOptions", "make_allocator", "simulate",
           "throughput_table"]
