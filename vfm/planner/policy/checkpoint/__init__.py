"""Checkpoints of a policy: a versioned plain-data format (JSON), and what restoring one checks.

`vfm.planner.Policy.checkpoint` writes the policy as JSON text; `restore` reads it back into a
policy built with the same configuration. Nothing here ever unpickles: a checkpoint is data, read
field by field by name and checked before the policy takes it, so a checkpoint from an untrusted
or damaged file can at worst be refused.

Format (``"format": "vfm.policy-checkpoint"``, ``"version": 2``), one JSON object, no key repeated
in any object (a repeated key is refused, naming it: JSON readers disagree on which value wins):

``policy``
    ``"Policy"``: the kind of object that made it and restores it.
``config``, ``config_sha256``
    The policy's configuration in readable form (`configuration`: capacity, the plan options,
    ``replan_every``, seed, fairness, execution, ``max_wait``, continuity, the deadline, the
    forecaster's class and plain parameters, and on several GPU types the cluster's types and
    counts and ``gpu_types``, the types in the cluster's order) and the SHA-256 of its canonical
    JSON (`fingerprint`). A restore into a policy of another configuration is refused, naming the
    fields that differ.
``round_index``, ``replans``, ``stale``, ``failed_replans``, ``retry_at``
    Rounds served, re-plans made (the policy clock, and the seed of the next re-plan), whether
    a job arrived or left since the standing plan (the next round re-plans), the re-plans that
    failed in a row and the round from which re-plans are tried again after them.
``jobs``
    The jobs present, in arrival order, each an object: ``id``, ``gpus``, ``regimes`` (pairs
    [batch size, seconds per epoch], on the job's reference type on several GPU types), ``epochs``,
    ``budget``, ``stages`` (the epochs observed as runs [column in regimes, epochs]),
    ``fair_finish_at_s`` (null: none yet), ``kind``, ``restart_s`` (seconds it loses per start or
    restart; absent, as in a checkpoint written before jobs had restart costs: the default
    `vfm.planner.shockwave.DEFAULT_RESTART_S`) and, on several GPU types, ``speeds`` (an object of
    each GPU type's name to the job's speed there at each regime and at their mean).
``completed``
    The ids of the jobs that completed, in completion order (ids stay unique over a policy's life).
``carried``
    What each job of the standing plan carries into the next one, in the plan's order
    (`vfm.planner.policy.state.PolicyState.carried`), jobs that left since included: objects ``id``,
    ``credit`` (rounds owed), ``waited`` (rounds without running), ``ran_last``.
``plan``
    The standing plan (null before the first re-plan): ``since_plan`` (rounds served from it),
    ``fairness``, ``status``, ``solver``, ``message``, ``bound``, ``ftf_bound``,
    ``relaxed_objective``, ``rounded_objective`` (null: NaN), ``prices``, ``program``
    (``round_s``, ``capacity`` per column, ``efficiency``, ``spread``) and ``rows``, one per job of
    ``carried``: ``gpus``, ``base`` (share of its epochs done), ``weight``, ``remaining_s``, and the
    rounds of the window left (from ``since_plan``): ``relaxed``, ``schedule``, ``committed``
    (null without commitments); on several GPU types ``relaxed``, ``schedule`` and ``committed``
    hold one list per type in ``gpu_types`` order, with ``placement`` (the type index of each
    round, -1: not running) and ``pace`` (the job's speed on each type).
``taught``, ``finished``
    Completed jobs as trajectories (``kind``, ``regimes`` ascending, ``stages`` as runs [rank in
    regimes, epochs]): those already taught to the forecaster, and those not taught yet.

A restore is invisible: the checkpoint holds everything the next decisions read (the standing
plan's rounds left, what each job carries, the counters that seed the next re-plan, the
forecaster's lessons), so a restored policy serves, re-plans and decides exactly as the one that
never stopped, for the same events. A restored plan holds what serving and the next re-plan's warm
start read; the rounds already served read 0 and its program's scenario progress zeros (never
read again). A restore with ``allow_resize`` checks the plan and drops it (it was made for another
capacity): that policy re-plans at its next round. A learning forecaster is stored as the
trajectories it was taught, and taught them again on restore: `vfm.forecast.PopulationForecaster`'s
references are exactly its trajectories; another forecaster that has learned something is refused
at checkpoint time (it has no plain-data form to store).

GPU types in another order: the cluster's type order decides which column of each job's speeds
and of the plan is which type, and breaks ties (the reference type, the fallback's first fit), so
it is part of the configuration (``gpu_types``). A restore into a cluster of the same types in
another order (as `vfm.cluster.GpuProfiles.with_type` with ``before=`` in one process and without
in the other gives) is refused with a `vfm.errors.ValidationError` naming both orders, rather than
remapped: a remapped policy would break its ties differently and so would not decide as the one
that never stopped. Build the policy's `vfm.cluster.ClusterTypes` with the checkpoint's profiles.
A `PolicyState` names its order too (``gpu_types``), checked the same way.

Job ids and kinds are strings, whole numbers (not bools) or tuples of them, nested at most
`MAX_ID_DEPTH` deep; a kind may also be None. In JSON a string is a string, a whole number a
number, and a tuple an object ``{"tuple": [...]}``, so every id reads back as exactly the id it
was. `vfm.planner.Policy.add_job` refuses an id the format cannot hold, so every policy can be
checkpointed. A checkpoint given as a dict must hold JSON's types only (a NumPy value or a tuple is
refused, naming the field as ``jobs[1].budget``). A checkpoint of an earlier version (1, which held
no plan) is refused, naming its version.

The package's modules, one step of the format each: `layout` (the format's name, version and the
fields of each object), `write` (`dumps` writes a checkpoint), `read` (`restored` reads one),
`state` (`checked_state` checks a state in full, whether read from a checkpoint or given directly)
and `config` (`configuration` and `fingerprint` give the configuration as plain data). They stand
on the policy's records (`vfm.planner.policy.state`) and its job-id rules
(`vfm.planner.policy.job_events`, where `MAX_ID_DEPTH` is defined), below the policy that writes
and restores them (`vfm.planner.Policy`).
"""

from vfm.planner.policy.checkpoint.config import configuration, fingerprint
from vfm.planner.policy.checkpoint.layout import FORMAT, VERSION
from vfm.planner.policy.checkpoint.read import restored
from vfm.planner.policy.checkpoint.state import checked_state
from vfm.planner.policy.checkpoint.write import dumps
from vfm.planner.policy.job_events import MAX_ID_DEPTH

__all__ = ["FORMAT", "MAX_ID_DEPTH", "VERSION", "checked_state", "configuration", "dumps", "fingerprint", "restored"]
