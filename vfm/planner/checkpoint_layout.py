"""The layout of a policy checkpoint: the format's name and version, and the fields of each object.

`vfm.planner.checkpoint` describes what each field holds; the writer (`vfm.planner.checkpoint_write`)
and the reader (`vfm.planner.checkpoint_read`) both follow these names, so that what one writes the
other reads back field by field.
"""

#: The format's name (the ``format`` field).
FORMAT = "vfm.policy-checkpoint"
#: The format's version: a checkpoint of another version is refused, naming both.
VERSION = 1
#: The deepest nesting of tuples in an id or a kind.
MAX_ID_DEPTH = 32

#: The fields of the checkpoint's top-level object.
TOP_FIELDS = ("format", "version", "policy", "config_sha256", "config", "round_index", "replans", "jobs", "completed",
              "taught", "finished")
#: The fields of a job's object.
JOB_FIELDS = ("id", "gpus", "regimes", "epochs", "budget", "stages", "fair_finish_at_s", "kind", "carried")
#: The fields of what a job carries into the next plan (also the `PolicyState` arrays that hold them).
CARRIED_FIELDS = ("credit", "waited", "ran_last")
#: The fields of a completed job's trajectory.
TRAJECTORY_FIELDS = ("kind", "regimes", "stages")
