"""Loading the planner's compiled kernels: ahead, or in the background while the first plans run
them interpreted.

Numba compiles the planner's kernels (`vfm.planner._kernels`) once per machine and caches the
machine code; a process that finds the cache loads them in well under a second, one that does not
compiles them, which takes tens of seconds on a small machine. A scheduler must not wait that long
for its first decision, so:

- `vfm.planner.Policy` starts loading (or compiling) the kernels its plans use when it is built, on
  a background thread (`load_in_background`), and returns at once;
- until they are loaded, `vfm.planner.plan` runs a window of at most `INTERPRETED_ENTRIES` entries
  (scenarios x jobs x rounds x GPU types) on the kernels' interpreted twins (`vfm._numerics.jit`): the same
  floats, about a tenth of a second for ten jobs; a larger window waits for the compiled kernels;
- `compile_kernels` (``python -m vfm.planner.compile``) compiles every form ahead, for a container
  image built once and started many times.

A process that forks while the loader compiles waits for the piece being compiled (at most tens
of seconds, on a machine's first use): a child forked in the middle of a compilation would inherit
Numba's compiler lock held by a thread that does not exist in it, and hang at its first kernel.

The kernels come in forms (`Forms`): the base (one scenario, one GPU type, one thread: the solve,
the polish and the wait limit's commitments), the dense factor of several scenarios, the one-type
rows of several GPU types, and each of those on several threads. A policy loads the forms its
configuration uses, no more.
"""

from __future__ import annotations

import atexit
import os
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace

import numpy as np

from vfm._numerics.jit import interpreting
from vfm.planner._kernels import kernel_threads, waits
from vfm.planner._kernels.jit import CHUNK
from vfm.planner.program import PlanningProgram
from vfm.planner.rounding import round_schedule
from vfm.planner.solve.ipm.method import solve_saa_ipm
from vfm.planner.solve.polish import polish

#: The largest window (scenarios x jobs x rounds x GPU types) that a plan runs interpreted while the
#: kernels load: an interpreted plan takes about a millisecond per entry on a small machine, so at
#: most about a second, where compiling the kernels takes tens of seconds. A larger window waits.
INTERPRETED_ENTRIES = 1_000


@dataclass(frozen=True)
class Forms:
    """Which forms of the kernels a policy's plans use, beyond the base (one scenario, one GPU type,
    one thread), which every policy loads."""

    scenarios: bool = False
    """Several scenarios (the dense block factor)."""
    types: bool = False
    """Several GPU types (the one-type rows)."""
    threads: bool = False
    """More than one kernel thread (the parallel form of each)."""

    @classmethod
    def used_by(cls, scenarios: int, types: int, threads: int) -> Forms:
        """The forms of plans over `scenarios` scenarios and `types` GPU types on `threads` kernel threads."""
        return cls(scenarios=scenarios > 1, types=types > 1, threads=threads > 1)

    def pieces(self) -> tuple[str, ...]:
        """The pieces to load, in the order they are loaded, each a warm-up solve (`_load`): one
        scenario or several, on one GPU type or two, on one thread or two."""
        scenarios = ("one scenario", *(["scenarios"] if self.scenarios else []))
        solves = (*scenarios, *(f"{each}, types" for each in scenarios if self.types))
        return (*solves, *(f"{each}, threads" for each in solves)) if self.threads else solves


#: Every form: what `compile_kernels` compiles by default.
EVERY_FORM = Forms(scenarios=True, types=True, threads=True)


class _Loader:
    """The kernels' loading state, shared by every thread: the pieces loaded, those asked for, and the
    one background thread that loads them in order."""

    def __init__(self, load_piece: Callable[[str], None] | None = None) -> None:
        self.load_piece = load_piece or _load
        self.changed = threading.Condition()
        # Held while a piece loads, and by a thread that forks (`before_fork`): a child process must
        # not start while the loader holds Numba's compiler lock, which no thread of the child
        # would ever release.
        self.gate = threading.Lock()
        self.loaded: set[str] = set()
        self.wanted: list[str] = []
        self.failed: BaseException | None = None
        self.worker: threading.Thread | None = None
        self.stopping = False
        _LOADERS.add(self)

    def ask(self, pieces: Sequence[str]) -> None:
        """Load `pieces` on the background thread (started if none runs); returns at once."""
        with self.changed:
            self.wanted += [piece for piece in pieces if piece not in self.wanted]
            if self.worker is None and not self.stopping and self._next() is not None:
                _keep_numba_off_the_streams()
                self.worker = threading.Thread(target=self._work, name="vfm-kernel-loader", daemon=True)
                self.worker.start()

    def ready(self, pieces: Sequence[str]) -> bool:
        with self.changed:
            return all(piece in self.loaded for piece in pieces)

    def wait(self, pieces: Sequence[str], timeout_s: float | None = None) -> bool:
        """Until `pieces` are loaded, or the background thread stopped short of them (the calling
        thread's kernels then compile as they are called), or `timeout_s` seconds passed (None:
        no limit); whether it was not the timeout."""
        with self.changed:
            return self.changed.wait_for(
                lambda: self.worker is None or all(piece in self.loaded for piece in pieces), timeout_s)

    def load(self, pieces: Sequence[str]) -> None:
        """Load `pieces` on the calling thread."""
        for piece in pieces:
            if not self.ready([piece]):
                self._load_one(piece)

    def _load_one(self, piece: str) -> None:
        with self.gate:
            self.load_piece(piece)
        with self.changed:
            self.loaded.add(piece)
            self.changed.notify_all()

    def _next(self) -> str | None:
        return next((piece for piece in self.wanted if piece not in self.loaded), None)

    def _work(self) -> None:
        while True:
            with self.changed:
                piece = None if self.stopping or self.failed is not None else self._next()
                if piece is None:
                    self.worker = None
                    self.changed.notify_all()
                    return
            try:
                self._load_one(piece)
            except BaseException as error:  # the plans then compile what they call, and see the error there
                with self.changed:
                    self.failed = error

    def stop(self) -> None:
        """Load nothing more (at exit: the piece being compiled finishes or is dropped with the process)."""
        with self.changed:
            self.stopping = True

    def after_fork_in_child(self) -> None:
        """The child has the parent's loaded kernels and no loader thread: it starts its own if asked."""
        self.changed, self.gate, self.worker = threading.Condition(), threading.Lock(), None


def _keep_numba_off_the_streams() -> None:
    """Make Numba format its error messages without replacing ``sys.stdout`` and ``sys.stderr``.

    Where colorama is installed, Numba wraps both streams in colorama's for each message it formats
    and puts back the ones it found (`numba.core.errors.ColorShell`), and its type inference formats
    messages for the overloads it tries on every compilation. From the loader's thread that swap
    races with the caller's threads: a ``contextlib.redirect_stdout`` (or pytest's capture) entered
    meanwhile is undone when Numba puts back the stream it saw first, and the caller's output goes
    elsewhere. The message is built in a buffer and needs no stream, so the swap is dropped; only the
    ANSI-to-Windows-console conversion of a colored message would need it, and the loader prints none."""
    from numba.core import errors

    if hasattr(errors, "ColorShell"):  # absent where Numba highlights nothing (no colorama)
        errors.ColorShell = nullcontext


_LOADERS: weakref.WeakSet[_Loader] = weakref.WeakSet()
_forking: list[_Loader] = []  # the loaders whose gates a fork in progress holds


def _before_fork() -> None:
    """Wait for every loader's piece in progress, and let none start another until the fork is done."""
    _forking[:] = list(_LOADERS)
    for loader in _forking:
        loader.gate.acquire()


def _after_fork_in_parent() -> None:
    for loader in _forking:
        loader.gate.release()
    _forking.clear()


def _after_fork_in_child() -> None:
    for loader in _forking:
        loader.after_fork_in_child()
    _forking.clear()


os.register_at_fork(before=_before_fork, after_in_parent=_after_fork_in_parent, after_in_child=_after_fork_in_child)


def load_in_background(forms: Forms = Forms()) -> None:
    """Load the kernels of `forms` on a background thread (compiling those not yet cached); returns at once."""
    _LOADER.ask(forms.pieces())


def compile_kernels(forms: Forms = EVERY_FORM) -> None:
    """Load the kernels of `forms` now, on the calling thread, compiling and caching those not yet
    cached: what ``python -m vfm.planner.compile`` does, for an image built once and run many times."""
    _LOADER.load(forms.pieces())


@contextmanager
def serving(forms: Forms, entries: int, deadline: float | None = None) -> Iterator[str]:
    """The scope of one plan over a window of `entries` entries that uses `forms`: compiled kernels
    where they are loaded; else interpreted if the window has at most `INTERPRETED_ENTRIES`
    entries (their loading goes on in the background); else the compiled kernels once loaded, or
    ``"loading"`` if they are not by `deadline` (a `time.perf_counter` instant; the plan then has
    no time to solve). Yields the tier, ``"compiled"``, ``"interpreted"`` or ``"loading"``."""
    pieces = forms.pieces()
    if _LOADER.ready(pieces):
        yield "compiled"
        return
    _LOADER.ask(pieces)
    if entries <= INTERPRETED_ENTRIES:
        with interpreting():
            yield "interpreted"
        return
    timeout_s = None if deadline is None else max(deadline - time.perf_counter(), 0.0)
    yield "compiled" if _LOADER.wait(pieces, timeout_s) else "loading"


def _load(piece: str) -> None:
    """Load one piece (`Forms.pieces`) by running the kernels it compiles on a small program with FTF
    rows and the efficiency term; on one scenario also the polish (its own kernels over GPU types) and,
    on one type, the wait limit's commitments."""
    threads = piece.endswith("threads")
    jobs = CHUNK + 1 if threads else 2  # the parallel form runs only over more jobs than a chunk
    program = _warm_up_program(1 if piece.startswith("one scenario") else 5, jobs)
    with kernel_threads(2 if threads else 1):
        if "types" in piece:
            typed = _two_types(program)
            solution = solve_saa_ipm(typed, tol=1e-6)
            if piece.startswith("one scenario"):
                assert solution.x is not None
                polish(typed, replace(solution, x=0.9 * np.asarray(solution.x)))
            return
        solution = solve_saa_ipm(program, tol=1e-6)
        if piece.startswith("one scenario"):
            waits.commit_rounds(np.zeros(1, dtype=np.int64), np.ones((1, 1), dtype=bool), np.ones(1),
                                np.zeros(1, dtype=np.int64), np.zeros(1, dtype=bool), np.ones(1),
                                np.zeros((1, 1), dtype=bool))
            assert solution.x is not None
            # The Lagrangian minimizer, and the start's match (a schedule the multipliers do not give).
            polish(program, replace(solution, x=0.9 * np.asarray(solution.x)))
            # The rounding's walk (one compiled form for one GPU type and several).
            round_schedule(np.asarray(solution.x)[:1], np.ones(1), np.ones(program.shape[2]), np.ones(1), 1.0)


def _warm_up_program(scenarios: int, jobs: int) -> PlanningProgram:
    """`_load`'s program: `jobs` jobs over 4 rounds with FTF rows and the efficiency term; with several
    scenarios a base per scenario, as above a floor (`vfm.planner.program.above_floor`). The solvers
    hand the kernels the same arrays whatever the base's shape (`vfm.planner.solve.scaled_program`),
    so either compiles what both call."""
    rounds = 4
    return PlanningProgram(
        progress=np.linspace(0.05, 0.3, scenarios * jobs * rounds).reshape(scenarios, jobs, rounds),
        base=np.linspace(0.1, 0.2, jobs) if scenarios == 1 else np.linspace(0.1, 0.2, scenarios * jobs).reshape(
            scenarios, jobs),
        budgets=np.ones(jobs), gpus=np.resize([1.0, 2.0], jobs),
        capacity=np.full(rounds, float(jobs)), round_s=60.0, remaining_s=np.resize([300.0, 200.0], jobs),
        efficiency=0.01, leftover_limit_s=np.full(jobs, 1e4), spread=0.01)


def _two_types(program: PlanningProgram) -> PlanningProgram:
    """`program` on two GPU types, the second slower for some jobs."""
    jobs, rounds = program.progress.shape[1:]
    return replace(program, progress=np.tile(program.progress, 2), capacity=np.tile(program.capacity, 2),
                   good_round=np.tile(np.arange(rounds), 2),
                   speed=np.repeat(np.resize(np.array([[1.0, 0.5], [1.0, 0.8]]), (jobs, 2)), rounds, axis=1))


# Last: a loader loads with `_load` unless told otherwise.
_LOADER = _Loader()
atexit.register(_LOADER.stop)
