"""A `Policy` that takes the path of several GPU types on a cluster of one, for tests that check
the typed program against the plain program's fast path (which `Policy` takes on one type)."""

from __future__ import annotations

from vfm.planner import Policy


class TypedOnOneType(Policy):
    """`Policy` on a `ClusterTypes` of one type, served and re-planned as on several."""

    _typed = True  # shadows `Policy._typed`, which is False on one type
