"""The policy a cluster scheduler drives round by round, and what it remembers.

`Policy` (`vfm.planner.policy.policy`) holds the jobs, re-plans with `vfm.planner.plan` when it
must and serves the standing plan's rounds in between. Its modules, from the bottom up:

- `state`: the plain frozen records of a policy (`JobRecord`, `RoundOptions`, `PolicyConfig`,
  `PolicyState`);
- `job_events`: a job's arrival, record and progress report, checked (and `MAX_ID_DEPTH`, the
  deepest id a policy takes);
- `decision`: how a round is decided (a new plan, the standing plan, or first-fit) and `Decision`,
  what says so;
- `replanning`: what a re-plan reads and carries over;
- `state_view`: the state held for O(1) events, `Policy`'s base;
- `collector`: the cycle collector paused while a decision runs;
- `typed_serving`: serving and re-planning on several GPU types;
- `checkpoint`: the policy's state as versioned JSON, written and read back;
- `policy`: `Policy` itself, and `step` and `decide`, a round as a pure function of the
  configuration and the state.
"""

from vfm.planner.policy.decision import Decision
from vfm.planner.policy.policy import Policy, decide, policy_config, step
from vfm.planner.policy.state import JobRecord, PolicyConfig, PolicyState, RoundOptions

__all__ = ["Decision", "JobRecord", "Policy", "PolicyConfig", "PolicyState", "RoundOptions", "decide",
           "policy_config", "step"]
