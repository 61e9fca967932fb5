"""GPU types as data: `GpuProfiles`, the known GPU types (fastest first), the type a workload's
epoch times are measured on, and the throughput of each profiled job on each type.

A throughput profile is, per throughput set (e.g. ``"tacc"``) and per profiled job key
``"<model> (batch size <b>)|<gang>"``, the training steps per second of the whole gang alone on
``gang`` GPUs of each type; ``None`` where that type cannot run the job. A job's epoch time on a
type is its time on the *profiled* type scaled by the ratio of the two throughputs
(`vfm.cluster.gpu_types`).

The shipped profiles (`GpuProfiles.shipped`) are the Shockwave artifact's
(``vfm/cluster/data/shockwave/gpu_types_throughputs.json``, MIT: see the LICENSE there): V100,
P100 and K80, V100 profiled. A user's GPU type is one more type of a new `GpuProfiles`
(`GpuProfiles.with_type`), passed where the types are used (``ClusterTypes(..., profiles=)``,
the ``profiles=`` argument of `vfm.cluster.gpu_types`): the library is never edited.

This module sits below `vfm.gpu_cluster` (a cluster's GPU counts are of the types of some
profiles) and imports nothing of `vfm.cluster` or `vfm.planner`; it reads the shipped file by
its path only.

Examples
--------
>>> shipped = GpuProfiles.shipped()
>>> shipped.types, shipped.profiled, shipped.throughput_sets
(('v100', 'p100', 'k80'), 'v100', ('tacc', 'wisr'))
>>> mine = shipped.with_type("t4", {"tacc": {"LM (batch size 10)|1": 60.0}}, before="k80")
>>> mine.types, mine.profiled
(('v100', 'p100', 't4', 'k80'), 'v100')
>>> mine.table("tacc", "t4")
{'LM (batch size 10)|1': 60.0}
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from vfm.errors import ValidationError
from vfm.parameters import Instance, Interval, Known, Listed, Optional, Real, check, check_distinct

__all__ = ["THROUGHPUTS_FILE", "GpuProfiles", "Speed", "checked_profiles"]

#: The shipped throughput profiles (the Shockwave artifact's, MIT).
THROUGHPUTS_FILE = Path(__file__).resolve().parent / "cluster" / "data" / "shockwave" / "gpu_types_throughputs.json"

#: Steps per second of a job on a type, or None where the type cannot run it.
Speed = float | None

_Rows = Mapping[str, Mapping[str, Speed]]


class GpuProfiles:
    """GPU types and their throughput profiles: a small frozen value, validated on construction.

    Parameters
    ----------
    types : sequence of str
        The GPU type names in speed order, fastest first (the order in which `ClusterTypes`
        keeps a cluster's types and the typed baselines fill them); distinct, at least one.
    sets : Mapping[str, Mapping[str, Mapping[str, float or None]]]
        Throughput set -> profiled job key (``"<model> (batch size <b>)|<gang>"``) -> type ->
        steps/s of the whole gang on that type, a finite number > 0, or None (or the type left
        out of the row) where the type cannot run the job. At least one set.
    profiled : str, optional
        The type a workload's epoch times (`vfm.cluster.Job.epoch_s`, its regimes) are measured
        on; every other type's times follow from the throughput ratio to it. The first of
        `types` by default.

    Attributes
    ----------
    types : tuple of str
    profiled : str
    throughput_sets : tuple of str
        The names of `sets`, in the order given.

    Raises
    ------
    ValidationError
        Naming the argument (and set, key and type) for a malformed value: repeated or
        non-string types, a row naming a type not in `types`, a throughput that is not a finite
        number > 0 or None, a `profiled` type not in `types`.
    """

    __slots__ = ("_profiled", "_sets", "_types")
    _profiled: str
    _sets: Mapping[str, _Rows]
    _types: tuple[str, ...]

    def __init__(self, types: Sequence[str], sets: Mapping[str, _Rows], profiled: str | None = None) -> None:
        names = _checked_types(types)
        check("sets", sets, Instance(Mapping, "a mapping of at least one throughput set name to its rows (job key "
                                              "-> type -> steps/s)", nonempty=True))
        checked: dict[str, Mapping[str, Mapping[str, Speed]]] = {}
        for set_name, rows in sets.items():
            check("each key of sets", set_name, Instance(str, "a throughput set's name (a string)", with_value=True))
            check(f"sets[{set_name!r}]", rows, Instance(Mapping, "a mapping of job key -> type -> steps/s"))
            checked[set_name] = MappingProxyType({key: _checked_row(f"sets[{set_name!r}][{key!r}]", row, names)
                                                  for key, row in rows.items()})
        chosen = check("profiled", names[0] if profiled is None else profiled, Known(names, "one of types"))
        object.__setattr__(self, "_types", names)
        object.__setattr__(self, "_sets", MappingProxyType(checked))
        object.__setattr__(self, "_profiled", chosen)

    @classmethod
    def shipped(cls) -> GpuProfiles:
        """The shipped profiles (`THROUGHPUTS_FILE`): V100, P100, K80, V100 profiled; read once."""
        return _shipped()

    @classmethod
    def from_dict(cls, raw: Any) -> GpuProfiles:
        """Profiles from the JSON object of a throughput file such as `THROUGHPUTS_FILE`:
        ``{"types": [...], "sets": {...}}`` and optionally ``"profiled"``; other keys (a
        ``"source"``, ``"units"``) are ignored."""
        check("profiles", raw, Instance(Mapping, "a JSON object with 'types' and 'sets'"))
        # A missing 'types' or 'sets' is None, which the constructor refuses naming it.
        return cls(raw.get("types"), raw.get("sets"), raw.get("profiled"))

    @property
    def types(self) -> tuple[str, ...]:
        return self._types

    @property
    def profiled(self) -> str:
        return self._profiled

    @property
    def throughput_sets(self) -> tuple[str, ...]:
        return tuple(self._sets)

    def rows(self, throughput_set: str) -> _Rows:
        """The read-only rows of `throughput_set`: job key -> type -> steps/s (None: cannot run),
        every row naming every type."""
        check("throughput_set", throughput_set, Known(tuple(self._sets), "a throughput set of the profiles"))
        rows: _Rows = self._sets[throughput_set]
        return rows

    def table(self, throughput_set: str, gpu_type: str | None = None) -> dict[str, float]:
        """Steps/s of each job key of `throughput_set` on `gpu_type` (the profiled type by
        default), a new dict; keys the type cannot run are left out."""
        chosen = check("gpu_type", self.profiled if gpu_type is None else gpu_type,
                       Known(self._types, "a GPU type of the profiles"))
        return {key: float(speed) for key, row in self.rows(throughput_set).items()
                if (speed := row[chosen]) is not None}

    def with_type(self, name: str, throughputs: Mapping[str, Mapping[str, Speed]], *,
                  before: str | None = None) -> GpuProfiles:
        """These profiles with one more GPU type: a new value (this one is unchanged).

        Parameters
        ----------
        name : str
            The new type's name, not one of `types`.
        throughputs : Mapping[str, Mapping[str, float or None]]
            Throughput set -> job key -> the new type's steps/s for that job (> 0), or None
            where it cannot run it. Sets and keys must be the profiles' own
            (`throughput_sets`, the keys of `rows`); a key or set left out means the type cannot
            run those jobs (their epoch time there is ``inf``).
        before : str, optional
            The type the new one is just faster than: it goes right ahead of `before` in the
            speed order. By default the new type is the slowest (last).

        Returns
        -------
        GpuProfiles
            `types` with `name` inserted, the same `profiled` type and sets.

        Raises
        ------
        ValidationError
            Naming the argument (and the set and key): a `name` already a type or not a
            non-empty string, an unknown set, key or `before` type, a throughput that is not a
            finite number > 0 or None.
        """
        check("name", name, Instance(str, "a non-empty string (the new GPU type's name)", with_value=True,
                                     nonempty=True))
        if name in self._types:
            raise ValidationError(f"name {name!r} is already a GPU type of these profiles ({', '.join(self._types)})")
        position = len(self._types)
        if before is not None:
            check("before", before, Optional(Known(self._types, "one of the profiles' types")))  # None: slowest
            position = self._types.index(before)
        added = self._checked_throughputs(throughputs)
        types = (*self._types[:position], name, *self._types[position:])
        sets = {set_name: {key: {**row, name: added.get(set_name, {}).get(key)} for key, row in rows.items()}
                for set_name, rows in self._sets.items()}
        return GpuProfiles(types, sets, self.profiled)

    def _checked_throughputs(self, throughputs: Any) -> dict[str, dict[str, Speed]]:
        """`with_type`'s `throughputs`, each set and key known, each speed checked."""
        check("throughputs", throughputs, Instance(Mapping, f"a mapping of throughput sets ({', '.join(self._sets)}) "
                                                            f"to job key -> steps/s"))
        checked: dict[str, dict[str, Speed]] = {}
        for set_name, speeds in throughputs.items():
            check("each key of throughputs", set_name, Known(tuple(self._sets), "a throughput set of the profiles"))
            check(f"throughputs[{set_name!r}]", speeds, Instance(Mapping, "a mapping of job keys to steps/s"))
            unknown = next((key for key in speeds if key not in self._sets[set_name]), None)
            if unknown is not None:
                raise ValidationError(f"throughputs[{set_name!r}]: {unknown!r} is not a job key of the set (keys look "
                                      f"like {next(iter(self._sets[set_name]), '<model> (batch size <b>)|<gang>')!r})")
            checked[set_name] = {key: _checked_speed(f"throughputs[{set_name!r}][{key!r}]", speed)
                                 for key, speed in speeds.items()}
        return checked

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, GpuProfiles):
            return NotImplemented
        return self is other or (self._types == other._types and self._profiled == other._profiled
                                 and self._sets == other._sets)

    def __hash__(self) -> int:
        return hash((self._types, self._profiled))

    def __repr__(self) -> str:
        return f"GpuProfiles(types={self._types!r}, profiled={self._profiled!r}, sets={self.throughput_sets!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        plain = {set_name: {key: dict(row) for key, row in rows.items()} for set_name, rows in self._sets.items()}
        return (GpuProfiles, (self._types, plain, self._profiled))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"GpuProfiles is read-only; cannot set {name!r} (with_type makes a new one)")


@lru_cache(maxsize=1)
def _shipped() -> GpuProfiles:
    with open(THROUGHPUTS_FILE) as handle:
        return GpuProfiles.from_dict(json.load(handle))


def _checked_types(types: Any) -> tuple[str, ...]:
    check("types", types, Listed("a non-empty sequence of GPU type names (fastest first)", kinds=(Sequence,),
                                 nonempty=True))
    for k, name in enumerate(types):
        check(f"types[{k}]", name, Instance(str, "a non-empty string", with_value=True, nonempty=True))
    check_distinct("types", types, "a GPU type")
    return tuple(types)


def _checked_row(where: str, row: Any, types: tuple[str, ...]) -> Mapping[str, Speed]:
    """A row of every type of `types` (None where left out), read-only."""
    check(where, row, Instance(Mapping, "a mapping of GPU types to steps/s", with_value=True))
    for gpu_type in row:
        check(f"each key of {where}", gpu_type, Known(types, "one of types"))
    return MappingProxyType({t: _checked_speed(f"{where}[{t!r}]", row.get(t)) for t in types})


def _checked_speed(where: str, speed: Any) -> Speed:
    if speed is None:
        return None
    return float(check(where, speed, _SPEED))


#: A profiled speed (None: the type cannot run the job).
_SPEED = Interval(Real, 0, closed="neither", unit="steps/s", note="or None where the type cannot run the job")


def checked_profiles(profiles: Any) -> GpuProfiles:
    """`profiles`, or the shipped ones for None; a `ValidationError` naming ``profiles`` for
    anything else."""
    if profiles is None:
        return GpuProfiles.shipped()
    return check("profiles", profiles, Instance(GpuProfiles, "a vfm.cluster.GpuProfiles (e.g. "
                                                "GpuProfiles.shipped().with_type(...)) or None (the shipped ones)",
                                                with_value=True))
