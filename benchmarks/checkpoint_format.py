"""Checkpoint format: what writing and reading a policy checkpoint costs at scale, and what a schema
library (msgspec Structs, pydantic models) declaring the same layout would do instead of vfm's
hand-written reader.

Run from the repository root, with one BLAS thread::

    OPENBLAS_NUM_THREADS=1 python -m benchmarks.checkpoint_format [--jobs 100000] [--repeats 3] [--out [FILE]]

What is measured (the median and the range of ``--repeats`` runs, one process)
    - vfm as it ships: `vfm.planner.Policy.checkpoint` of a policy of ``--jobs`` jobs on `CAPACITY`
      GPUs (gangs of 1, 2, 4 and 8 in turn, two regimes, budgets 1 to 3, a kind per job), with a
      standing plan (a window of `ROUNDS` rounds; `ROUNDS_SERVED` rounds served, some epochs
      reported and a few jobs completed between them); `Policy.restore` of its text into a fresh
      policy of the same configuration; and, to show where the time goes, the JSON steps alone
      (the reader's parse, which refuses a repeated key; the writer's ``json.dumps`` on one
      line; with ``indent=1``, which the json module serves by its pure-Python encoder, and plain
      ``json.loads``, for comparison) and the
      time the restore spends in the reader's helpers that a declaration would replace
      (`helper_seconds`) and in its last step, the check of the whole state it built
      (`vfm.planner.policy.checkpoint.state.checked_state`, also what ``restore(policy.state)`` runs);
    - a prototype of the same version-2 layout (one GPU type) declared as msgspec Structs
      (`msgspec_types`: strict, unknown fields forbidden, the fixed ranges of `vfm.limits`
      declared) and as pydantic v2 models (`pydantic_types`, the same, non-finite numbers
      refused): decoding the very text vfm wrote; reading it with a repeated key refused too (as
      vfm's reader does, which neither library can: vfm's parse first, then msgspec's
      ``convert`` of the parsed data, or pydantic's decode of the text again); and encoding it
      back (the round trip must give the same JSON data). Either is skipped, saying so, when the
      library is not installed (neither is a dependency of vfm). From these, an estimate of a
      restore whose fields a prototype reads: vfm's restore less its parse and its replaceable
      helpers, plus the prototype's read with repeated keys refused.

What is shown beside the times
    - the checkpoint's size;
    - refusals: the same small checkpoint (`CASE_JOBS` jobs), damaged one way at a time, read by
      vfm's `restore` and by each prototype: refused (the first line of the message) or accepted;
      what a prototype accepts is what would stay hand-written beside it;
    - lines: the lines of vfm's six checkpoint modules, the lines of the reader's helpers that a
      declaration would replace (`REPLACEABLE`), and the lines of each prototype's declaration.

Output
    The report, the machine and the command; printed, and with ``--out`` written to
    ``results/checkpoint_format/checkpoint_format.txt`` under the current folder (or the file
    given; the committed report is
    ``--out benchmarks/results/checkpoint_format/checkpoint_format.txt``).
"""

import ast
import copy
import inspect
import json
import statistics
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from benchmarks._cli import Parser, whole

if TYPE_CHECKING:
    from vfm.planner import Policy

#: GPUs of the policy (one type).
CAPACITY = 256
#: The planning window: small, so that the standing plan of 10^5 jobs is made in seconds.
ROUNDS = 5
#: Rounds served before the checkpoint (the first and the second re-plan, then one from the plan).
ROUNDS_SERVED = 3
#: The regimes each job is told: batch size -> seconds per epoch.
REGIMES: dict[float, float] = {32: 60.0, 64: 40.0}
#: Jobs of the small checkpoint the refusals are shown on (the messages do not depend on the size).
CASE_JOBS = 200
#: The functions of `vfm.planner.policy.checkpoint.read` a schema library's declaration does the work
#: of: vfm's own declarations of the fields (`vfm.parameters.Fields`, `Each`: by name, required, none
#: unknown, their JSON types and fixed ranges) and the converters of ids and numbers. (Not the check
#: of a dict given directly, `_JsonData`: the declaration's ``config`` is any JSON object, and
#: msgspec's ``convert`` takes a tuple where a list is declared.)
REPLACEABLE = ("_list", "_real", "_id_in", "_pairs", "_numbers", "_window")
#: vfm's checkpoint modules (files in vfm/planner/, without ".py").
MODULES = ("policy/checkpoint/__init__", "policy/checkpoint/layout", "policy/checkpoint/config",
           "policy/checkpoint/write", "policy/checkpoint/read", "policy/checkpoint/state")


def make_policy() -> "Policy":
    """An empty policy of the benchmark's configuration."""
    from vfm.planner import Policy

    return Policy(CAPACITY, rounds=ROUNDS)


def build_policy(jobs: int) -> "Policy":
    """A policy of `jobs` jobs with a standing plan: `ROUNDS_SERVED` rounds served, each job that
    ran reporting an epoch (in the first or the second regime, in turn), and after the first round
    up to three jobs that ran completing (so that the second round re-plans)."""
    policy = make_policy()
    for k in range(jobs):
        policy.add_job(k, 1 << (k % 4), REGIMES, 50 + (k * 7919) % 451, budget=1.0 + k % 3,
                       kind=("model", k % 5))
    sizes = list(REGIMES)
    for served in range(ROUNDS_SERVED):
        running = list(policy.next_round())
        for n, job in enumerate(running):
            if served == 0 and n < 3:
                policy.report_progress(job, [sizes[0]] * policy.epochs_left(job))
            else:
                policy.report_progress(job, [sizes[n % 2]])
    return policy


def seconds_of(action: Callable[[], Any], repeats: int, before: Callable[[], Any] | None = None) -> list[float]:
    """The seconds of `repeats` calls of `action` (each after an untimed `before`, if given)."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return times


def measure_vfm(policy: "Policy", repeats: int) -> tuple[str, dict[str, list[float]]]:
    """The checkpoint text of `policy`, and the seconds of vfm's steps (module docstring)."""
    from vfm.planner.policy.checkpoint.read import _parsed
    from vfm.planner.policy.checkpoint.state import checked_state

    text = policy.checkpoint()
    document = json.loads(text)
    fresh: list[Policy] = []

    def restore() -> None:
        fresh[-1].restore(text)

    times = {
        "checkpoint()": seconds_of(policy.checkpoint, repeats),
        "  of which json.dumps (one line)": seconds_of(lambda: json.dumps(document, allow_nan=False), repeats),
        "  json.dumps(indent=1)": seconds_of(lambda: json.dumps(document, allow_nan=False, indent=1), repeats),
        "restore(text), fresh policy": seconds_of(restore, repeats, before=lambda: fresh.append(make_policy())),
        "  of which the parse (no repeated key)": seconds_of(lambda: _parsed(text), repeats),
        "  of which in the helpers a declaration replaces": helper_seconds(text, repeats),
        "  of which the state's final check (checked_state)": seconds_of(
            lambda: checked_state(policy.config, policy.state, types=None), repeats),
        "  plain json.loads": seconds_of(lambda: json.loads(text), repeats),
    }
    assert fresh[-1].checkpoint() == text, "the restored policy does not write the same checkpoint"
    return text, times


def helper_seconds(text: str, repeats: int) -> list[float]:
    """The seconds `restore(text)` spends in the reader's `REPLACEABLE` helpers (outermost calls
    only), in each of `repeats` restores into a fresh policy: each helper wrapped in a timer for the
    while (its own cost counted in, so the figure is an upper estimate)."""
    from vfm.planner.policy.checkpoint import read as checkpoint_read

    spent, depth = [0.0], [0]

    def timed(function: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if depth[0]:
                return function(*args, **kwargs)
            depth[0] += 1
            started = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                spent[0] += time.perf_counter() - started
                depth[0] -= 1

        return call

    originals = {name: getattr(checkpoint_read, name) for name in REPLACEABLE}
    times = []
    try:
        for name, function in originals.items():
            setattr(checkpoint_read, name, timed(function))
        for _ in range(repeats):
            fresh, spent[0] = make_policy(), 0.0
            fresh.restore(text)
            times.append(spent[0])
    finally:
        for name, function in originals.items():
            setattr(checkpoint_read, name, function)
    return times


# --- the prototypes ----------------------------------------------------------------------------
# The version-2 layout of `vfm.planner.policy.checkpoint` on one GPU type (on several, the plan rows'
# windows are a list per type and a job has speeds: a second declaration, since a msgspec union
# takes one array type only). What each declares: every field by name, its JSON type, and the
# ranges that depend on nothing else (`vfm.limits`); not what depends on the configuration or on
# other fields (see the refusals of the report).


def msgspec_types() -> type:
    """The checkpoint as msgspec Structs (strict, unknown fields forbidden)."""
    from typing import Annotated, Literal

    import msgspec
    from msgspec import Meta, Struct

    from vfm.equilibrium import Status
    from vfm.limits import MAX_BUDGET, MAX_COUNT, MAX_GPUS, MAX_JOB_EPOCHS, MAX_JOB_SECONDS
    from vfm.planner.shockwave import CREDIT_FLOOR, DEFAULT_RESTART_S

    Count = Annotated[int, Meta(ge=0, le=MAX_COUNT)]
    Positive = Annotated[int, Meta(ge=1, le=MAX_COUNT)]
    Share = Annotated[float, Meta(ge=0, le=1)]
    NonNegative = Annotated[float, Meta(ge=0)]

    # Without msgspec installed, mypy sees Struct as Any (and these ignores as unused).
    class Strict(Struct, forbid_unknown_fields=True):  # type: ignore[call-arg, unused-ignore]
        pass

    class TupleId(Strict):
        tuple: "list[Id]"  # resolved from the class: `TupleId.Id` below

    Id = str | int | TupleId
    TupleId.Id = Id  # type: ignore[attr-defined, unused-ignore]

    class Job(Strict):
        id: Id
        gpus: Annotated[int, Meta(ge=1, le=MAX_GPUS)]
        regimes: list[tuple[float, Annotated[float, Meta(gt=0, le=MAX_JOB_SECONDS)]]]
        epochs: Annotated[int, Meta(ge=1, le=MAX_JOB_EPOCHS)]
        budget: Annotated[float, Meta(gt=0, le=MAX_BUDGET)]
        stages: list[tuple[Count, Positive]]
        fair_finish_at_s: NonNegative | None
        kind: Id | None
        restart_s: Annotated[float, Meta(ge=0, le=MAX_JOB_SECONDS)] = DEFAULT_RESTART_S

    class Carried(Strict):
        id: Id
        credit: Annotated[float, Meta(ge=CREDIT_FLOOR)]
        waited: Count
        ran_last: bool

    class Row(Strict):
        gpus: Positive
        base: Share
        weight: NonNegative
        remaining_s: NonNegative
        relaxed: list[Share]
        schedule: list[bool]
        committed: list[bool] | None

    class Program(Strict):
        round_s: NonNegative
        capacity: list[NonNegative]
        efficiency: NonNegative
        spread: NonNegative

    class Plan(Strict):
        since_plan: Count
        fairness: Literal["none", "constraints", "relaxed"]
        status: Status
        solver: str
        message: str
        bound: float | None
        ftf_bound: float | None
        relaxed_objective: float | None
        rounded_objective: float | None
        prices: list[float | None]
        program: Program
        rows: list[Row]

    class Trajectory(Strict):
        kind: Id
        regimes: Annotated[list[float], Meta(min_length=1)]
        stages: list[tuple[Count, Positive]]

    class Checkpoint(Strict):
        format: Literal["vfm.policy-checkpoint"]
        version: Literal[2]
        policy: Literal["Policy"]
        config_sha256: Annotated[str, Meta(pattern="^[0-9a-f]{64}$")]
        config: dict[str, Any]
        round_index: Count
        replans: Count
        stale: bool
        failed_replans: Count
        retry_at: Count
        jobs: list[Job]
        completed: list[Id]
        carried: list[Carried]
        plan: Plan | None
        taught: list[Trajectory]
        finished: list[Trajectory]

    msgspec.json.Decoder(Checkpoint)  # resolves the annotations now: an error here is the declaration's
    return Checkpoint


def pydantic_types() -> type:
    """The checkpoint as pydantic v2 models (strict, unknown fields forbidden, no NaN or infinity)."""
    from typing import Annotated, Literal

    from pydantic import BaseModel, ConfigDict, Field

    from vfm.equilibrium import Status
    from vfm.limits import MAX_BUDGET, MAX_COUNT, MAX_GPUS, MAX_JOB_EPOCHS, MAX_JOB_SECONDS
    from vfm.planner.shockwave import CREDIT_FLOOR, DEFAULT_RESTART_S

    Count = Annotated[int, Field(ge=0, le=MAX_COUNT)]
    Positive = Annotated[int, Field(ge=1, le=MAX_COUNT)]
    Share = Annotated[float, Field(ge=0, le=1)]
    NonNegative = Annotated[float, Field(ge=0)]

    class Strict(BaseModel):
        model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    class TupleId(Strict):
        tuple: "list[Id]"  # resolved by model_rebuild below

    Id = str | int | TupleId
    TupleId.model_rebuild()

    class Job(Strict):
        id: Id
        gpus: Annotated[int, Field(ge=1, le=MAX_GPUS)]
        regimes: list[tuple[float, Annotated[float, Field(gt=0, le=MAX_JOB_SECONDS)]]]
        epochs: Annotated[int, Field(ge=1, le=MAX_JOB_EPOCHS)]
        budget: Annotated[float, Field(gt=0, le=MAX_BUDGET)]
        stages: list[tuple[Count, Positive]]
        fair_finish_at_s: NonNegative | None
        kind: Id | None
        restart_s: Annotated[float, Field(ge=0, le=MAX_JOB_SECONDS)] = DEFAULT_RESTART_S

    class Carried(Strict):
        id: Id
        credit: Annotated[float, Field(ge=CREDIT_FLOOR)]
        waited: Count
        ran_last: bool

    class Row(Strict):
        gpus: Positive
        base: Share
        weight: NonNegative
        remaining_s: NonNegative
        relaxed: list[Share]
        schedule: list[bool]
        committed: list[bool] | None

    class Program(Strict):
        round_s: NonNegative
        capacity: list[NonNegative]
        efficiency: NonNegative
        spread: NonNegative

    class Plan(Strict):
        since_plan: Count
        fairness: Literal["none", "constraints", "relaxed"]
        status: Status
        solver: str
        message: str
        bound: float | None
        ftf_bound: float | None
        relaxed_objective: float | None
        rounded_objective: float | None
        prices: list[float | None]
        program: Program
        rows: list[Row]

    class Trajectory(Strict):
        kind: Id
        regimes: Annotated[list[float], Field(min_length=1)]
        stages: list[tuple[Count, Positive]]

    class Checkpoint(Strict):
        format: Literal["vfm.policy-checkpoint"]
        version: Literal[2]
        policy: Literal["Policy"]
        config_sha256: Annotated[str, Field(pattern="^[0-9a-f]{64}$")]
        config: dict[str, Any]
        round_index: Count
        replans: Count
        stale: bool
        failed_replans: Count
        retry_at: Count
        jobs: list[Job]
        completed: list[Id]
        carried: list[Carried]
        plan: Plan | None
        taught: list[Trajectory]
        finished: list[Trajectory]

    return Checkpoint


class Prototype:
    """A schema library's decoder and encoder of the checkpoint (`name`: the library and its version)."""

    def __init__(self, name: str, decode: Callable[[str], Any], encode: Callable[[Any], bytes | str],
                 refusal: Callable[[Exception], str], declaration: Callable[[], type],
                 unique: tuple[str, Callable[[str], Any]]) -> None:
        self.name, self.decode, self.encode, self.refusal = name, decode, encode, refusal
        #: How the prototype would also refuse a repeated key, as vfm does: (what it does, the reader).
        self.unique = unique
        self.declaration = declaration


def prototypes() -> tuple[list[Prototype], list[str]]:
    """The prototypes whose library is installed, and a line for each that is skipped."""
    from vfm.planner.policy.checkpoint.read import _parsed  # vfm's parse: a repeated key refused

    found, skipped = [], []
    try:
        import msgspec
    except ImportError:
        skipped.append("msgspec: not installed, its prototype skipped (pip install msgspec)")
    else:
        checkpoint = msgspec_types()
        decoder: Any = msgspec.json.Decoder(checkpoint, strict=True)
        encoder = msgspec.json.Encoder()
        found.append(Prototype(f"msgspec {msgspec.__version__}", decoder.decode, encoder.encode,
                               lambda error: str(error), msgspec_types,
                               ("vfm's parse, then msgspec.convert",
                                lambda text: msgspec.convert(_parsed(text), type=checkpoint, strict=True))))
    try:
        import pydantic
    except ImportError:
        skipped.append("pydantic: not installed, its prototype skipped (pip install pydantic)")
    else:
        model: Any = pydantic_types()

        def first_error(error: Exception) -> str:
            if not isinstance(error, pydantic.ValidationError):
                return str(error).splitlines()[0]
            first = error.errors()[0]
            more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
            return f"{'.'.join(map(str, first['loc']))}: {first['msg']}{more}"

        # A strict model_validate of the parsed dict refuses its lists as tuples and its strings as
        # enum values (strict Python input): the text is read twice instead.
        found.append(Prototype(f"pydantic {pydantic.VERSION}", model.model_validate_json,
                               lambda value: value.model_dump_json(), first_error, pydantic_types,
                               ("vfm's parse, then decode", lambda text: (_parsed(text),
                                                                           model.model_validate_json(text)))))
    return found, skipped


def measure_prototype(prototype: Prototype, text: str, repeats: int) -> dict[str, list[float]]:
    """The seconds to decode `text` with `prototype`, to read it refusing a repeated key too (as
    vfm's reader does: no schema library here can), and to encode it back; the round trip must
    give the same JSON data as `text`."""
    decoded = prototype.decode(text)
    encoded = prototype.encode(decoded)
    assert json.loads(encoded) == json.loads(text), f"{prototype.name}: the round trip changed the checkpoint"
    how, read = prototype.unique
    read(text)
    return {f"{prototype.name}: decode (strict)": seconds_of(lambda: prototype.decode(text), repeats),
            f"  {how}": seconds_of(lambda: read(text), repeats),
            f"{prototype.name}: encode": seconds_of(lambda: prototype.encode(decoded), repeats)}


# --- refusals ----------------------------------------------------------------------------------


def _edited(edit: Callable[[dict[str, Any]], None]) -> Callable[[str], str]:
    """A damage to a checkpoint text: `edit` applied to its JSON data."""

    def damage(text: str) -> str:
        document = json.loads(text)
        edit(document)
        return json.dumps(document, indent=1)

    return damage


def _set(path: Sequence[str | int], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(document: dict[str, Any]) -> None:
        inner: Any = document
        for step in path[:-1]:
            inner = inner[step]
        inner[path[-1]] = copy.deepcopy(value)

    return edit


def _jobs_repeated(text: str) -> str:
    """The checkpoint with the key "jobs" repeated at its end, with no job (the last value wins in
    most JSON readers)."""
    return text.rstrip()[:-1].rstrip() + ',\n "jobs": []\n}'


def _rows_short(document: dict[str, Any]) -> None:
    document["plan"]["rows"].pop()


def _config_changed(document: dict[str, Any]) -> None:
    document["config"]["seed"] = 1


def _repeated_id(document: dict[str, Any]) -> None:
    document["jobs"][3]["id"] = document["jobs"][2]["id"]


#: Damages to a checkpoint, each named: one field of job 3 (jobs[3]) at a time, then the document.
CASES: tuple[tuple[str, Callable[[str], str]], ...] = (
    ('jobs[3].budget is the string "2.0"', _edited(_set(["jobs", 3, "budget"], "2.0"))),
    ("jobs[3].budget is 1e7 (above MAX_BUDGET)", _edited(_set(["jobs", 3, "budget"], 1e7))),
    ("jobs[3] has an unknown field 'budgets'", _edited(_set(["jobs", 3, "budgets"], 1.0))),
    ("jobs[3].id is true (a bool)", _edited(_set(["jobs", 3, "id"], True))),
    ('a repeated key: "jobs": [] at the end', _jobs_repeated),
    ("jobs[3].gpus is 512 (wider than the 256 GPUs)", _edited(_set(["jobs", 3, "gpus"], 512))),
    ("jobs[3].stages count 10^6 epochs (more than it has)", _edited(_set(["jobs", 3, "stages"], [[0, 10**6]]))),
    ("jobs[3].id repeats jobs[2].id", _edited(_repeated_id)),
    ("plan.rows has one row fewer than carried", _edited(_rows_short)),
    ("config.seed changed (config_sha256 no longer matches)", _edited(_config_changed)),
    ("version is 1", _edited(_set(["version"], 1))),
)


def _first_line(message: str, width: int = 110) -> str:
    line = message.splitlines()[0] if message else ""
    return line if len(line) <= width else line[: width - 3] + "..."


def refusals(text: str, found: list[Prototype]) -> list[tuple[str, dict[str, str]]]:
    """For each of `CASES` applied to `text`: what vfm's restore and each prototype answer
    ("refused: <the first line of the message>" or "accepted")."""
    from vfm.errors import ValidationError

    answers = []
    for name, damage in CASES:
        damaged = damage(text)
        answer: dict[str, str] = {}
        try:
            make_policy().restore(damaged)
            answer["vfm"] = "accepted"
        except ValidationError as error:
            answer["vfm"] = f"refused: {_first_line(str(error))}"
        for prototype in found:
            try:
                prototype.decode(damaged)
                answer[prototype.name] = "accepted"
            except Exception as error:  # each library's own error class
                answer[prototype.name] = f"refused: {_first_line(prototype.refusal(error))}"
        answers.append((name, answer))
    return answers


# --- lines -------------------------------------------------------------------------------------


def lines(found: list[Prototype]) -> list[tuple[str, int]]:
    """Lines of vfm's checkpoint modules, of the reader's helpers a declaration replaces
    (`REPLACEABLE`), and of each prototype's declaration."""
    import importlib

    counted = []
    for module in MODULES:
        dotted = module.removesuffix("/__init__").replace("/", ".")
        source = inspect.getsource(importlib.import_module(f"vfm.planner.{dotted}"))
        counted.append((f"vfm/planner/{module}.py", len(source.splitlines())))
    reader = ast.parse(inspect.getsource(importlib.import_module("vfm.planner.policy.checkpoint.read")))
    spans = {node.name: node.end_lineno - node.lineno + 1 for node in reader.body
             if isinstance(node, ast.FunctionDef) and node.end_lineno is not None}
    missing = [name for name in REPLACEABLE if name not in spans]
    assert not missing, f"checkpoint/read.py no longer has {missing}: update REPLACEABLE"
    counted.append((f"  of checkpoint/read.py, the helpers a declaration replaces ({len(REPLACEABLE)} functions)",
                    sum(spans[name] for name in REPLACEABLE)))
    for prototype in found:
        counted.append((f"{prototype.name}: the declaration ({prototype.declaration.__name__})",
                        len(inspect.getsource(prototype.declaration).splitlines())))
    return counted


# --- the report --------------------------------------------------------------------------------


def report(jobs: int, size: int, times: dict[str, list[float]], notes: list[str],
           answers: list[tuple[str, dict[str, str]]], counted: list[tuple[str, int]]) -> str:
    rows = [f"policy: {jobs} jobs on {CAPACITY} GPUs (one type), a window of {ROUNDS} rounds, {ROUNDS_SERVED} "
            f"rounds served; checkpoint {size} bytes ({size / 2**20:.1f} MiB)", "",
            f"{'step':<52} {'median s':>9} {'min s':>8} {'max s':>8}"]
    for name, seconds in times.items():
        rows.append(f"{name:<52} {statistics.median(seconds):>9.3f} {min(seconds):>8.3f} {max(seconds):>8.3f}")
    rows += notes
    rows += ["", f"refusals: a checkpoint of {min(jobs, CASE_JOBS)} jobs, damaged one way at a time"]
    for name, answer in answers:
        rows.append(f"{name}")
        rows += [f"  {reader:<16} {said}" for reader, said in answer.items()]
    rows += ["", "lines"]
    rows += [f"{name:<80} {count:>5}" for name, count in counted]
    return "\n".join(rows) + "\n"


def run(jobs: int, repeats: int) -> str:
    """The report (without its header) for a policy of `jobs` jobs, each time the median of `repeats`."""
    policy = build_policy(jobs)
    text, times = measure_vfm(policy, repeats)
    found, skipped = prototypes()
    median = {name: statistics.median(seconds) for name, seconds in times.items()}
    kept = (median["restore(text), fresh policy"] - median["  of which the parse (no repeated key)"]
            - median["  of which in the helpers a declaration replaces"])
    for prototype in found:
        measured = measure_prototype(prototype, text, repeats)
        times.update(measured)
        how, _ = prototype.unique
        skipped.append(f"estimate: restore with {prototype.name} reading the fields, repeated keys refused: "
                       f"{kept + statistics.median(measured[f'  {how}']):.3f} s (restore - the parse - the helpers "
                       f"+ {how})")
    case_text = text if jobs <= CASE_JOBS else build_policy(CASE_JOBS).checkpoint()
    return report(jobs, len(text.encode()), times, skipped, refusals(case_text, found), lines(found))


def build_parser() -> Parser:
    parser = Parser("benchmarks.checkpoint_format", __doc__)
    parser.add_argument("--jobs", default=100_000, check=whole(10, 1_000_000),
                        help="jobs in the policy checkpointed (default 100000)")
    parser.add_argument("--repeats", default=3, check=whole(1, 100), help="runs of each step timed (default 3)")
    parser.add_table_output("checkpoint_format")
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    with parser.reporting():
        parser.emit(run(args.jobs, args.repeats), args.out)


if __name__ == "__main__":
    main()
