"""Workload files: `load_workload` reads one (a path, or the name of a shipped trace in `SHIPPED`),
`workload_to_dict` writes one, `epoch_records` writes a job's per-epoch arrays as its ``phases``;
the format is `vfm.cluster.workload`'s docstring."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from vfm.cluster.workload.model import (
    FloatArray,
    Job,
    Training,
    Workload,
    WorkloadArrays,
    derived_profile,
)
from vfm.cluster.workload.reader import workload_from_dict
from vfm.errors import ValidationError
from vfm.gpu_profiles import GpuProfiles, checked_profiles
from vfm.parameters import Instance, check

__all__ = ["SHIPPED", "Job", "Training", "Workload", "WorkloadArrays", "derived_profile", "epoch_records",
           "load_workload", "shipped_workloads", "workload_from_dict", "workload_to_dict"]

#: The shipped workloads (and the artifact's published results), loadable by name.
SHIPPED = Path(__file__).resolve().parent.parent / "data" / "shockwave"


def epoch_records(batch_size: FloatArray, epoch_s: FloatArray,
                  profile: FloatArray | None = None) -> dict[str, list[dict[str, float]]]:
    """A job's per-epoch arrays as the file format's ``phases`` (runs of equal epochs), and its
    told `profile` (rows ``(batch_size, epoch_s)``) as ``profile`` when given and not the one
    the arrays imply (`derived_profile`), so that a file holds a profile only where it says more.
    """
    batch, seconds = np.asarray(batch_size, dtype=float), np.asarray(epoch_s, dtype=float)
    start = np.flatnonzero(np.r_[True, (batch[1:] != batch[:-1]) | (seconds[1:] != seconds[:-1])])
    lengths = np.diff(np.r_[start, batch.size])
    # Through lists, not numpy scalars: with noisy epochs every epoch is a phase.
    records: dict[str, list[dict[str, float]]] = {"phases": [
        {"epochs": n, "batch_size": b, "epoch_s": s}
        for n, b, s in zip(lengths.tolist(), batch[start].tolist(), seconds[start].tolist(), strict=True)]}
    if profile is not None:
        told = tuple((b, s) for b, s in np.asarray(profile, dtype=float).tolist())
        if told != derived_profile(batch, seconds):
            records["profile"] = [{"batch_size": b, "epoch_s": s} for b, s in told]
    return records


def workload_to_dict(workload: Workload) -> dict[str, Any]:
    """`workload` as a workload file's JSON object; `workload_from_dict` reads it back to the same
    jobs, per-epoch arrays, profiles, restart costs and annotations (``json.dumps`` writes it; floats
    round-trip exactly). A job's ``restart_s`` is written where it states one, ``annotations`` where
    there are some, the workload's and each job's.

    Examples
    --------
    >>> workload = workload_from_dict({"gpus": 1, "round_s": 60.0, "annotations": {"source": "my trace"},
    ...     "jobs": [{"id": "a", "arrival_s": 0.0, "gpus": 1, "epochs": 1, "annotations": {"trace_s": 75.5},
    ...               "phases": [{"epochs": 1, "batch_size": 32, "epoch_s": 60.0}]}]})
    >>> raw = workload_to_dict(workload)
    >>> raw["annotations"], raw["jobs"][0]["annotations"]
    ({'source': 'my trace'}, {'trace_s': 75.5})
    """
    jobs = []
    for job in workload.jobs:
        record: dict[str, Any] = {"id": job.id, "arrival_s": job.arrival_s, "gpus": job.gpus, "epochs": job.epochs}
        if job.training is not None:
            record |= {"model": job.training.model, "adaptation": job.training.adaptation,
                       "total_steps": job.training.total_steps, "samples_per_epoch": job.training.samples_per_epoch}
        record |= epoch_records(job.batch_size, job.epoch_s, np.array(job.profile))
        if job.restart_s is not None:
            record["restart_s"] = job.restart_s
        if job.annotations:
            record["annotations"] = _json_data(job.annotations)
        jobs.append(record)
    raw: dict[str, Any] = {"name": workload.name, "gpus": workload.gpus, "round_s": workload.round_s}
    if workload.throughputs is not None:
        raw["throughputs"] = workload.throughputs
    if workload.cluster is not None:
        raw["cluster"] = dict(workload.cluster)
    if workload.annotations:
        raw["annotations"] = _json_data(workload.annotations)
    return raw | {"jobs": jobs}


def _json_data(value: Any) -> Any:
    """`value` with every mapping a dict and every tuple a list (what ``json.dumps`` writes), copied."""
    if isinstance(value, Mapping):
        return {key: _json_data(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_data(item) for item in value]
    return value


def shipped_workloads() -> list[str]:
    """The names of the shipped workloads (`load_workload` takes them)."""
    return sorted(path.stem for path in SHIPPED.glob("shockwave_*.json"))


def load_workload(path_or_name: str | Path, *, profiles: GpuProfiles | None = None) -> Workload:
    """Read and check a workload file.

    Parameters
    ----------
    path_or_name : str or Path
        A path to a JSON file, or the name of a shipped workload in `SHIPPED`
        (e.g. ``"shockwave_120jobs_32gpus"``, with or without ``.json``).
    profiles : vfm.cluster.GpuProfiles, optional
        The GPU types the file's ``"cluster"`` may name, with their throughputs (default: the
        shipped ones; `vfm.cluster.GpuProfiles.with_type` adds a type of your own).

    Returns
    -------
    Workload
        Jobs in file order; each job's per-epoch arrays expanded from its phases.

    Raises
    ------
    ValidationError
        One line starting with the file's path (or, for `profiles` that are not a
        `GpuProfiles`, naming ``profiles``). For bytes that are not UTF-8, text that is not
        JSON (or nests too deeply for Python's parser); and for a malformed workload, naming the
        job (index and id), the field and what is wrong: an unknown field (with the closest known
        one), a missing field, a non-numeric, non-finite or non-whole value, an integer beyond
        int64 (``10**30``: vfm reads no integer past int64 as a number; written as a float,
        ``1e30``, it is read and bounded) or past Python's 4300-digit limit, negative arrival,
        gpus < 1 or wider than the cluster, epochs < 1, phases' epochs not summing to
        ``epochs``, a non-positive epoch_s or batch_size, one batch size with two epoch
        durations (without a profile), a stated ``isolated_s`` that is not the sum of the epoch
        durations, a repeated id; a ``profile`` that is not a non-empty list of objects, repeats
        a batch size or does not list a batch size the phases run; ``annotations`` that are not a JSON object; a
        ``restart_s`` that is not a number of seconds in [0, ``MAX_JOB_SECONDS``]; more than
        `MAX_WORKLOAD_EPOCHS` epochs in all; an arrival more than 2^53 rounds away; a
        ``cluster`` that does not map known GPU types to positive whole counts or does not sum
        to ``gpus``; a bound of `vfm._validation` passed (``MAX_GPUS`` GPUs;
        ``MAX_JOB_SECONDS`` for ``round_s``, an ``epoch_s``, a job's time alone and its epochs
        at its profile's slowest epoch; 2^53 for a batch size, ``total_steps`` and
        ``samples_per_epoch``).
    FileNotFoundError
        If there is no such file or shipped workload.
    OSError
        If the file cannot be read.
    """
    check("path_or_name", path_or_name, Instance(str | Path, "a path (str or Path) or a shipped workload's name",
                                                 with_value=True))
    if profiles is not None:  # checked whether or not the file gives a cluster to read them for
        checked_profiles(profiles)
    path = Path(path_or_name)
    if not path.exists() and path.parent == Path("."):
        path = SHIPPED / (path.name if path.suffix == ".json" else f"{path.name}.json")
    if not path.is_file():
        raise FileNotFoundError(f"no workload file {str(path_or_name)!r}, and no shipped workload of that name "
                                f"(shipped: {', '.join(shipped_workloads())})")
    raw, unreadable = _decoded(path)
    try:
        workload = workload_from_dict(raw, default_name=path.stem, profiles=profiles)
    except ValidationError as exc:
        raise ValidationError(f"{path}: {exc}") from None
    if unreadable is not None:  # in the file's annotations, which are kept as they are
        raise ValidationError(f"{path} holds a number Python cannot read: {unreadable}")
    return workload


class _UnreadableInteger:
    """An integer of a JSON text past Python's limit on the digits `int` reads (4300 by default,
    ``sys.get_int_max_str_digits``), kept as its size so that the workload's checks name the job
    and the field that hold it (`_decoded`)."""

    def __init__(self, digits: str) -> None:
        self.digits = digits.lstrip("-")

    def __repr__(self) -> str:
        return f"a number Python cannot read ({len(self.digits)} digits)"  # short: messages cut a value's repr at 60


def _integer(digits: str) -> int | _UnreadableInteger:
    try:
        return int(digits)
    except ValueError:
        return _UnreadableInteger(digits)


def _decoded(path: Path) -> tuple[Any, str | None]:
    """The JSON value in the file at `path`, or a one-line ValidationError naming the file; and
    what is wrong with an integer in it past Python's limit on digits (None when there is none),
    which the value then holds as an `_UnreadableInteger` for the checks to name where it stands."""
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")  # JSON's encoding (RFC 8259), whatever the locale's
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path} is not UTF-8 text (JSON's encoding): byte {data[exc.start]:#04x} at offset "
                              f"{exc.start}; save the file as UTF-8") from None
    unreadable = None
    for parse_int in (int, _integer):  # the second pass only for an integer `int` cannot read
        try:
            return json.loads(text, parse_int=parse_int), unreadable
        except json.JSONDecodeError as exc:
            raise ValidationError(f"{path} is not valid JSON: {exc}") from None
        except RecursionError:
            raise ValidationError(f"{path} nests JSON arrays or objects too deeply for Python's parser; a "
                                  f"workload file nests them five deep") from None
        except ValueError as exc:  # an integer past Python's 4300-digit limit for int()
            unreadable = str(exc).split(";")[0]
    raise AssertionError("unreachable: the second pass reads every integer")
