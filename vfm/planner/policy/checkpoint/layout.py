"""The layout of a policy checkpoint: the format's name and version, and the fields of each object.

`vfm.planner.policy.checkpoint` describes what each field holds; the writer (`vfm.planner.policy.checkpoint.write`)
and the reader (`vfm.planner.policy.checkpoint.read`) both follow these names, so that what one writes the
other reads back field by field.
"""

#: The format's name (the ``format`` field).
FORMAT = "vfm.policy-checkpoint"
#: The format's version: a checkpoint of another version is refused, naming both.
VERSION = 2

#: The fields of the checkpoint's top-level object.
TOP_FIELDS = ("format", "version", "policy", "config_sha256", "config", "round_index", "replans", "stale",
              "failed_replans", "retry_at", "jobs", "completed", "carried", "plan", "taught", "finished")
#: The fields of a job's object (and ``speeds`` on several GPU types; ``restart_s`` may be absent,
#: in a checkpoint written before jobs had restart costs: the default cost).
JOB_FIELDS = ("id", "gpus", "regimes", "epochs", "budget", "stages", "fair_finish_at_s", "kind", "restart_s")
#: The fields of what a job carries into the next plan (also the `PolicyState` arrays that hold them).
CARRIED_FIELDS = ("credit", "waited", "ran_last")
#: The fields of the standing plan's object.
PLAN_FIELDS = ("since_plan", "fairness", "status", "solver", "message", "bound", "ftf_bound", "relaxed_objective",
               "rounded_objective", "prices", "program", "rows")
#: The fields of the standing plan's program (what of it is stored: the rest is in each row).
PROGRAM_FIELDS = ("round_s", "capacity", "efficiency", "spread")
#: The fields of one job's row of the standing plan (``placement`` and ``pace`` on several GPU types).
PLAN_ROW_FIELDS = ("gpus", "base", "weight", "remaining_s", "relaxed", "schedule", "committed")
#: The fields of a plan row on several GPU types only.
TYPED_ROW_FIELDS = ("placement", "pace")
#: The fields of a completed job's trajectory.
TRAJECTORY_FIELDS = ("kind", "regimes", "stages")
