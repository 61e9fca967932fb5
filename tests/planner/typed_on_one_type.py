"""A `Policy` that takes the path of several GPU types on a cluster of one, for tests that check
the typed program against the plain program's fast path (which `Policy` takes on one type)."""

from __future__ import annotations

from collections.abc import Hashable

from vfm.planner import Policy
from vfm.planner.policy.typed_serving import typed_serving


class TypedOnOneType(Policy):
    """`Policy` on a `ClusterTypes` of one type, its jobs added (with their speeds per type), served
    and re-planned as on several."""

    _typed = True  # shadows `Policy._typed`, which is False on one type: `add_job` takes the typed path

    def next_round(self) -> dict[Hashable, str]:
        placed = self._decide(typed_serving(self.config))
        return {job: self.cluster.types[k] for job, k in placed.items()}
