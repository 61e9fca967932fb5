"""What every command line of ``benchmarks/`` shares: its name in ``--help``, and bad input
reported as one line (``python -m benchmarks.<name>: error: ...``) with exit status 2.

A caller's mistake (a bad option, a missing or malformed workload file, an argument the library
rejects) is not a crash: the command prints what is wrong and exits, as argparse does for
unknown options. Anything else (a bug) still ends in a traceback.

Each option's rule is declared with it (``parser.add_argument("--repeats", check=whole(1))``):
`Parser.parse_args` converts and checks every such value, defaults included, before the command
does any work, and names the option as it is spelled on the command line
(``--repeats must be a whole number >= 1, got 0``).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import shlex
import sys
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NoReturn

#: Where a command writes by default: ``results/<command>`` under the current folder (ignored by git),
#: never the committed ``benchmarks/results/``, which is written only when ``--out`` names it.
RESULTS = Path("results")


@dataclass(frozen=True)
class Check:
    """A rule on one option: `convert` turns the text into a value (ValueError if it cannot),
    `holds` says whether the value is allowed; `rule` completes "<flag> must be ...".

    `why`, if given, explains a failure of `holds` (e.g. which folder cannot be written)."""

    rule: str
    convert: Callable[[str], Any]
    holds: Callable[[Any], bool]
    why: Callable[[Any], str] | None = None
    #: The largest value allowed, for a bounded count (`whole`).
    high: int | None = None


#: The largest seed: NumPy's legacy seeds and most other generators take 32 bits.
SEED_MAX = 2**32 - 1


def whole(low: int = 1, high: int | None = None) -> Check:
    """A whole number >= `low` and, if `high` is given, <= `high`: every count a command takes has
    one, so that a slip of the keyboard (``--rounds 100000``) is refused, not run for hours."""
    if high is None:
        return Check(f"a whole number >= {low}", int, lambda value: value >= low)
    return Check(f"a whole number from {low} to {high}", int, lambda value: low <= value <= high, high=high)


def seed() -> Check:
    """A seed: a whole number from 0 to `SEED_MAX`."""
    return whole(0, SEED_MAX)


def number(low: float = 0.0, high: float = math.inf, *, open_low: bool = False, open_high: bool = True) -> Check:
    """A finite number in the interval from `low` to `high` (ends closed unless `open_*`)."""
    if high == math.inf:
        rule = f"a number {'>' if open_low else '>='} {low:g}"
    else:
        rule = f"a number in {'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"

    def holds(value: float) -> bool:
        above = value > low if open_low else value >= low
        below = value < high if open_high else value <= high
        return math.isfinite(value) and above and below

    return Check(rule, float, holds)


def whole_or_none(low: int, high: int) -> Check:
    """A whole number from `low` to `high`, or ``none`` (None)."""
    return Check(f"a whole number from {low} to {high} or none",
                 lambda text: None if text.strip().lower() == "none" else int(text),
                 lambda value: value is None or low <= value <= high, high=high)


def _nearest_existing(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _can_write_in(path: Path, *, folders: bool) -> bool:
    """Whether a file (or, with `folders`, a folder) can be made in the folder `path`: tried, by
    making a temporary one there and removing it. Permission bits do not tell (a superuser
    passes `os.access` everywhere, and /proc says writable but takes no new entries)."""
    if not path.is_dir():
        return False
    try:
        if folders:
            os.rmdir(tempfile.mkdtemp(prefix=".probe-", dir=path))
        else:
            with tempfile.TemporaryFile(prefix=".probe-", dir=path):
                pass
    except OSError:
        return False
    return True


def _folder_problem(path: Path) -> str:
    """Why the folder `path` cannot be made or written ("" if it can): an existing folder must
    take new files; otherwise the nearest folder above it that exists (where `mkdir(parents=True)`
    would start) must take new folders."""
    if path.exists():
        return "" if _can_write_in(path, folders=False) else f"{path} is not a folder you can write"
    above = _nearest_existing(path)
    return "" if _can_write_in(above, folders=True) else f"{above} is not a folder you can write"


def _file_problem(path: Path) -> str:
    """Why the file `path` cannot be written ("" if it can): not a folder, in an existing writable folder."""
    if path.is_dir():
        return f"{path} is a folder; name a file"
    folder = path.absolute().parent
    if not folder.exists():
        return f"there is no folder {folder}"
    if not _can_write_in(folder, folders=False):
        return f"{folder} is not a folder you can write"
    if path.exists():
        try:
            with open(path, "r+b"):  # neither made nor emptied: only opened as it will be
                pass
        except OSError:
            return f"{path} cannot be written"
    return ""


def _made_file_problem(path: Path) -> str:
    """Why the file `path` cannot be written, its folder made if missing ("" if it can)."""
    folder = path.absolute().parent
    return _file_problem(path) if folder.exists() else _folder_problem(folder)


#: An output folder, made if missing (with its parents).
OUTPUT_FOLDER = Check("a folder you can write", Path, lambda path: not _folder_problem(path), _folder_problem)
#: An output file in an existing folder.
OUTPUT_FILE = Check("a file in a folder you can write", Path, lambda path: not _file_problem(path), _file_problem)
#: An output file whose folder is made if missing.
OUTPUT_FILE_MADE = Check("a file you can write", Path,
                         lambda path: not _made_file_problem(path), _made_file_problem)


def _listed(rule: str, item: Callable[[str], Any], known: Collection[Any], what: str,
            show: Callable[[Any], str]) -> Check:
    """Comma-separated items, each converted by `item` and one of `known`; an unknown one is named
    (as `show` writes it) after `what`."""

    def convert(text: str) -> list[Any]:
        items = [item(part.strip()) for part in text.split(",") if part.strip()]
        if not items:
            raise ValueError(text)
        return items

    def unknown(items: list[Any]) -> str:
        return f"unknown {what} {', '.join(show(value) for value in items if value not in known)}"

    return Check(rule, convert, lambda items: all(value in known for value in items), unknown)


def choice_list(known: Sequence[str], what: str) -> Check:
    """Comma-separated names, each one of `known` (a policy name, a mix ...)."""
    return _listed(f"comma-separated names from {', '.join(known)}", str, known, what, repr)


def size_list(known: Collection[int]) -> Check:
    """Comma-separated sizes, each one of `known` (the sizes a benchmark has workloads for)."""
    return _listed(f"comma-separated sizes from {','.join(str(size) for size in known)}", int, known, "size", str)


def machine() -> str:
    """The machine in one line: system, CPUs and their model, and the BLAS threads asked for."""
    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), "")
    except OSError:
        model = platform.processor()
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    return (f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs"
            f"{f' ({model})' if model else ''}, OPENBLAS_NUM_THREADS={threads}")


class Parser(argparse.ArgumentParser):
    """An argument parser named ``python -m <module>``, whose errors are one line and exit 2.

    `module` is the command's module (``"benchmarks.reproduce"``); the description is the first
    paragraph of `doc`. `add_argument` takes a `Check` as ``check=`` (module docstring).
    """

    def __init__(self, module: str, doc: str | None) -> None:
        super().__init__(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0].strip())
        self._checks: list[tuple[argparse.Action, Check]] = []

    def add_argument(self, *args: Any, check: Check | None = None, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if check is not None:
            # The check converts the text itself, so that a value that is not even a number gets its message too.
            assert "type" not in kwargs, "a checked option is converted by its check"
            self._checks.append((action, check))
        return action

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        self.argv = list(sys.argv[1:] if args is None else args)
        parsed, extras = super().parse_known_args(args, namespace)
        for action, check in self._checks:
            value = getattr(parsed, action.dest, None)
            if value is not None:
                flag = action.option_strings[0] if action.option_strings else action.dest
                setattr(parsed, action.dest, self.checked(flag, check, value))
        return parsed, extras

    def checked(self, flag: str, check: Check, value: Any) -> Any:
        """`value` of option `flag` converted and checked (each item of a list of them), or `error`'s
        one line; for a value the command derives itself (a default that depends on other options)."""
        if isinstance(value, list):
            return [self.checked(flag, check, item) for item in value]
        try:
            converted = check.convert(value) if isinstance(value, str) else value
        except ValueError:
            self.error(f"{flag} must be {check.rule}, got {value}")
        if not check.holds(converted):
            reason = check.why(converted) if check.why is not None else ""
            self.error(f"{flag} must be {check.rule}, got {value}" + (f" ({reason})" if reason else ""))
        return converted

    def provenance(self) -> dict[str, str]:
        """The command as run and the machine it ran on: written beside every result, so that a
        number in a results file says where it comes from."""
        import numpy  # here: the parser itself is light

        return {"command": " ".join([self.prog, *map(shlex.quote, getattr(self, "argv", []))]),
                "machine": machine(), "software": f"Python {platform.python_version()}, NumPy {numpy.__version__}",
                "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")}

    def header(self) -> str:
        """`provenance` as the comment lines that open a results table."""
        return "".join(f"# {key}: {value}\n" for key, value in self.provenance().items())

    def add_table_output(self, name: str) -> None:
        """``--out [FILE]``: also write the table to FILE; without one, to ``results/NAME/NAME.txt``."""
        default = RESULTS / name / f"{name}.txt"
        self.add_argument("--out", nargs="?", const=default, check=OUTPUT_FILE_MADE,
                          help=f"also write the table to this file (without a file: {default})")

    def emit(self, table: str, out: str | Path | None) -> None:
        """The results table `table` under `header`: printed, and written to `out` when given."""
        text = self.header() + table
        if out is None:
            print(text, end="")
        else:
            self.publish(text, Path(out))

    @staticmethod
    def publish(text: str, out: Path) -> None:
        """Print a results table `text` and write it to `out`, its folder made if missing."""
        print(text, end="")
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    @contextmanager
    def reporting(self) -> Iterator[None]:
        """Run the command's body; a caller's mistake becomes `error`'s one line."""
        from vfm.errors import VFMError  # here: the parser itself loads no part of the library

        try:
            yield
        except (VFMError, OSError, ValueError) as mistake:
            self.error(str(mistake))
