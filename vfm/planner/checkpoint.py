"""Checkpoints of a policy: a versioned plain-data format (JSON), and what restoring one checks.

`vfm.planner.Policy.checkpoint` writes the policy as JSON text; `restore` reads it back into a
policy built with the same configuration. Nothing here ever unpickles: a checkpoint is data, read
field by field by name and checked before the policy takes it, so a checkpoint from an untrusted
or damaged file can at worst be refused.

Format (``"format": "vfm.policy-checkpoint"``, ``"version": 1``), one JSON object:

``policy``
    ``"Policy"``: the kind of object that made it and restores it.
``config``, ``config_sha256``
    The policy's configuration in readable form (`configuration`: capacity, the plan options,
    ``replan_every``, seed, fairness, execution, ``max_wait``, continuity, the deadline, the
    forecaster's class and plain parameters, and on several GPU types the cluster's types and counts) and
    the SHA-256 of its canonical JSON (`fingerprint`). A restore into a policy of another
    configuration is refused, naming the fields that differ.
``round_index``, ``replans``
    Rounds served and re-plans made (the policy clock, and the seed of the next re-plan).
``jobs``
    The jobs present, in arrival order, each an object: ``id``, ``gpus``, ``regimes`` (pairs
    [batch size, seconds per epoch], on the job's reference type on several GPU types), ``epochs``,
    ``budget``, ``stages`` (the epochs observed as runs [column in regimes, epochs]),
    ``fair_finish_at_s`` (null: none yet), ``kind``, ``carried`` and, on several GPU types, ``speeds``
    (the job's speed on each type at each regime and at their mean, K rows of R + 1).
``completed``
    The ids of the jobs that completed, in completion order (ids stay unique over a policy's life).
``taught``, ``finished``
    Completed jobs as trajectories (``kind``, ``regimes`` ascending, ``stages`` as runs [rank in
    regimes, epochs]): those already taught to the forecaster, and those not taught yet.

The standing plan is not stored. ``carried`` holds, for each job of the standing plan, what it
carries into the next one: its credit (rounds owed), the rounds it has waited, whether it ran in
the last round (null for a job that arrived since). A restored state has no plan (`last_plan` is
None): it holds these in `vfm.planner.state.PolicyState.carried` and its arrays, and the policy
re-plans at its next round, from them. A learning forecaster is stored as the trajectories it was
taught, and taught them again on restore: `vfm.forecast.PopulationForecaster`'s references are
exactly its trajectories; another forecaster that has learned something is refused at checkpoint
time (it has no plain-data form to store).

Job ids and kinds are strings, whole numbers (not bools) or tuples of them (nested too); a kind may
also be None. In JSON a string is a string, a whole number a number, and a tuple an object
``{"tuple": [...]}``, so every id reads back as exactly the id it was.

`dumps` (`vfm.planner.checkpoint_write`) writes a checkpoint, `restored`
(`vfm.planner.checkpoint_read`) reads one, and `checked_state` (`vfm.planner.checkpoint_state`)
checks a state in full, whether read from a checkpoint or given directly; `configuration` and
`fingerprint` (`vfm.planner.checkpoint_config`) give the configuration as plain data.
"""

from vfm.planner.checkpoint_config import configuration, fingerprint
from vfm.planner.checkpoint_layout import FORMAT, MAX_ID_DEPTH, VERSION
from vfm.planner.checkpoint_read import restored
from vfm.planner.checkpoint_state import checked_state
from vfm.planner.checkpoint_write import dumps

__all__ = ["FORMAT", "MAX_ID_DEPTH", "VERSION", "checked_state", "configuration", "dumps", "fingerprint", "restored"]
