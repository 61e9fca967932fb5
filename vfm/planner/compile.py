"""``python -m vfm.planner.compile``: compile the planner's kernels into Numba's cache.

Run it where a container image is built (or once on a machine), so that every process started from
it loads the compiled kernels instead of compiling them (`vfm.planner.kernel_loading`)::

    python -m vfm.planner.compile [--serial-only]

Numba keeps the machine code beside the package's modules (or under ``NUMBA_CACHE_DIR``) and reuses
it on a machine with the same CPU; on another CPU the kernels compile again, in the background.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import NoReturn


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2, like every vfm command line
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def main(argv: Sequence[str] | None = None) -> None:
    parser = _Parser(prog="python -m vfm.planner.compile",
                     description="Compile the planner's kernels into Numba's cache, so that later processes on this "
                                 "machine load them instead of compiling them.")
    parser.add_argument("--serial-only", action="store_true",
                        help="leave out the kernels' parallel form (used only with PlanOptions.threads > 1)")
    args = parser.parse_args(argv)
    from vfm.planner.kernel_loading import EVERY_FORM, compile_kernels  # after the arguments: they need no compiler

    started = time.perf_counter()
    forms = replace(EVERY_FORM, threads=not args.serial_only)
    compile_kernels(forms)
    print(f"vfm: the planner's kernels ({'; '.join(forms.pieces())}) loaded in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
