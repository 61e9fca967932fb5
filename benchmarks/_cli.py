"""What every command line of ``benchmarks/`` shares: its name in ``--help``, and bad input
reported as one line (``python -m benchmarks.<name>: error: ...``) with exit status 2.

A caller's mistake (a bad option, a missing or malformed workload file, an argument the library
rejects) is not a crash: the command prints what is wrong and exits, as argparse does for
unknown options. Anything else (a bug) still ends in a traceback.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

from vfm.errors import VFMError


class Parser(argparse.ArgumentParser):
    """An argument parser named ``python -m <module>``, whose errors are one line and exit 2.

    `module` is the command's module (``"benchmarks.reproduce"``); the description is the first
    paragraph of `doc`.
    """

    def __init__(self, module: str, doc: str | None) -> None:
        super().__init__(prog=f"python -m {module}", description=(doc or "").split("\n\n")[0].strip())

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    @contextmanager
    def reporting(self) -> Iterator[None]:
        """Run the command's body; a caller's mistake becomes `error`'s one line."""
        try:
            yield
        except (VFMError, OSError, ValueError) as mistake:
            self.error(str(mistake))
