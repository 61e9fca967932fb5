r"""NSWOT through Clarabel directly: the exponential-cone program assembled as sparse matrices.

Clarabel solves

.. math::

    \min_x \tfrac12 x^\top P x + q^\top x \quad\text{s.t.}\quad A x + s = b,\; s \in \mathcal K.

The scaled program (`vfm.program`) becomes, with variables :math:`x = (z, \tau)`, `z` the
`nnz` scaled entries and :math:`\tau` one per buyer, :math:`P = 0`,
:math:`q = (0, -\hat B)` and these rows of :math:`(A, b)`, in this order:

=============  =====================================  ==========================  ===========
block          row                                    count                       cone
=============  =====================================  ==========================  ===========
supply         :math:`\sum_{e \in k} z_e + s = 1`     `K` (traded good-periods)   nonnegative
sign           :math:`-z_e + s = 0`                   `nnz`                       nonnegative
caps           :math:`z_e + s = \hat d_e`             entries with a finite cap   nonnegative
utility caps   :math:`\hat u_i \cdot z + s =`         buyers with a finite        nonnegative
               :math:`\hat{\bar U}_i - \hat c_i`      utility cap
log            :math:`s = (\tau_i, 1, \hat U_i(z))`   `3 n`                       `n` exp
=============  =====================================  ==========================  ===========

Clarabel's exponential cone is :math:`K_{exp} = \operatorname{cl}\{(x, y, z) : y > 0,\; y
e^{x/y} \le z\}` (its ``ExponentialConeT``, the same convention as CVXPY's ``ExpCone``), so
:math:`(\tau_i, 1, \hat U_i) \in K_{exp}` is :math:`\tau_i \le \log \hat U_i`; the log rows are
:math:`-\tau_i + s = 0`, :math:`0 + s = 1` and :math:`-\hat u_i \cdot z + s = \hat c_i`. This is
the program `CvxpyConicBackend` hands Clarabel after CVXPY's canonicalization, without it.

The duals :math:`y \ge 0` of the supply rows satisfy :math:`q + A^\top y = 0` with the supply
rows entering with :math:`+1`, so they are the scaled prices with the sign `ScaledProgram.prices`
expects (nonnegative).

Which rows exist depends only on the market's structure (which entries are active, which caps
and utility caps are finite), never on its numbers. `ScaledProgram` drops the caps that cannot
bind (:math:`\hat d_e \ge 1`, or a utility cap above all the buyer can reach), and which those
are moves with the numbers: on the 900-job Shockwave window, a re-plan with forecasts moved by
10 % changes which jobs can finish inside the window (355 -> 359). Here such a cap keeps its row
with a bound it cannot reach, 2 for :math:`z_e` (which is at most 1) and 1 above the buyer's
reachable utility, so its slack is at least 1: inactive, hence not degenerate, which is why the
program drops it in the first place. A re-plan then changes only the numbers of
:math:`(q, A, b)`, so the backend keeps the last Clarabel solver and updates its data in place
(``DefaultSolver.update``), skipping the KKT assembly, equilibration and symbolic
factorization. See `ClarabelDirectBackend`.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from vfm.equilibrium import Status
from vfm.errors import ValidationError
from vfm.program import ScaledProgram
from vfm.solvers.base import COMMON_OPTIONS, Capabilities, OptionKind, Solution, check_options

try:
    import clarabel
except ImportError:  # pragma: no cover - clarabel is a dependency; the backend reports it missing
    clarabel = None

# Clarabel status names (``str(solution.status)``) -> vfm status and what it means.
_STATUS: dict[str, tuple[Status, str]] = {
    "Solved": (Status.OPTIMAL, "converged to the requested accuracy"),
    "AlmostSolved": (Status.INACCURATE, "stopped close to optimal but short of the requested accuracy"),
    "MaxIterations": (Status.ITERATION_LIMIT, "stopped at its iteration limit before converging"),
    "MaxTime": (Status.ITERATION_LIMIT, "stopped at its time limit before converging"),
    "PrimalInfeasible": (
        Status.INFEASIBLE, "reported the program infeasible (numerical trouble: vfm checks feasibility first)"
    ),
    "AlmostPrimalInfeasible": (Status.INFEASIBLE, "reported the program infeasible, inaccurately"),
    "DualInfeasible": (Status.UNBOUNDED, "reported the program unbounded (numerical trouble: NSWOT is bounded)"),
    "AlmostDualInfeasible": (Status.UNBOUNDED, "reported the program unbounded, inaccurately"),
}
# Statuses whose iterate is a usable point (the last iterate, for the limits: vfm.solve reports
# it with the limit status and does not certify it), as CVXPY's SOLUTION_PRESENT.
_HAS_POINT = frozenset({"Solved", "AlmostSolved", "MaxIterations", "MaxTime"})

#: Clarabel's settings (``clarabel.DefaultSettings``) that `vfm` checks, by kind; every other
#: setting is passed on for Clarabel to check (shared with Clarabel through CVXPY).
CLARABEL_SETTINGS: tuple[tuple[str, OptionKind], ...] = (
    ("tol_gap_rel", "tolerance"), ("tol_gap_abs", "tolerance"), ("tol_feas", "tolerance"),
    ("tol_infeas_abs", "tolerance"), ("tol_infeas_rel", "tolerance"), ("tol_ktratio", "tolerance"),
    ("max_iter", "count"), ("time_limit", "seconds"), ("verbose", "flag"),
    *((name, "any") for name in (
        "chordal_decomposition_compact", "chordal_decomposition_complete_dual", "chordal_decomposition_enable",
        "chordal_decomposition_merge_method", "direct_kkt_solver", "direct_solve_method",
        "dynamic_regularization_delta", "dynamic_regularization_enable", "dynamic_regularization_eps",
        "equilibrate_enable", "equilibrate_max_iter", "equilibrate_max_scaling", "equilibrate_min_scaling",
        "input_sparse_dropzeros", "iterative_refinement_abstol", "iterative_refinement_enable",
        "iterative_refinement_max_iter", "iterative_refinement_reltol", "iterative_refinement_stop_ratio",
        "linesearch_backtrack_step", "max_step_fraction", "max_threads", "min_switch_step_length",
        "min_terminate_step_length", "pardiso_iparm", "pardiso_verbose", "presolve_enable",
        "reduced_tol_feas", "reduced_tol_gap_abs", "reduced_tol_gap_rel", "reduced_tol_infeas_abs",
        "reduced_tol_infeas_rel", "reduced_tol_ktratio", "static_regularization_constant",
        "static_regularization_enable", "static_regularization_proportional",
    )),
)
#: Clarabel's names for `tol`: its gap (relative and absolute: the scaled objective is of order
#: one) and feasibility tolerances.
CLARABEL_TOL = ("tol_gap_rel", "tol_gap_abs", "tol_feas")
# Clarabel's own default is verbose; vfm backends are quiet unless asked.
_DEFAULT_OPTIONS: dict[str, Any] = {"verbose": False}


def _is_rust_panic(exc: BaseException) -> bool:
    """Whether `exc` is pyo3's PanicException (a BaseException) raised by a panic inside Clarabel."""
    return type(exc).__name__ == "PanicException"


@dataclass(frozen=True, eq=False)
class _Layout:
    """The part of the conic data a re-plan keeps: sizes, sparsity pattern of `A`, cones.

    Attributes
    ----------
    n_buyers, n_entries, n_supply : int
        `n`, `nnz` and `K` (traded good-periods).
    supply_row, buyer : ndarray of int, shape (nnz,)
        The program's; with `capped` and `utility_capped` they fix the pattern (the cache key).
    capped : ndarray of int, shape (n_capped,)
        Entries with a finite cap: each has a cap row.
    utility_capped : ndarray of int, shape (n_utility_capped,)
        Buyers with a finite utility cap: each has a utility-cap row.
    in_utility_capped : ndarray of int, shape (n_utility_capped_entries,)
        Entries whose buyer is in `utility_capped`.
    order : ndarray of int, shape (nnz(A),)
        Permutation from the COO order in which `values` builds `A` to CSC order.
    indices, indptr : ndarray of int
        CSC structure of `A`.
    n_rows, n_nonneg : int
        Rows of `A`; the first `n_nonneg` are the nonnegative cone, then `n` exponential cones.
    """

    n_buyers: int
    n_entries: int
    n_supply: int
    supply_row: np.ndarray
    buyer: np.ndarray
    capped: np.ndarray
    utility_capped: np.ndarray
    in_utility_capped: np.ndarray
    order: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    n_rows: int
    n_nonneg: int

    @staticmethod
    def pattern(program: ScaledProgram) -> tuple[np.ndarray, np.ndarray]:
        """`capped` and `utility_capped` of `program`: which cap and utility-cap rows exist.

        Finite in the market, not bindable in the program (module docstring): the rows must not
        depend on the numbers.
        """
        return np.flatnonzero(np.isfinite(program.upper)), np.flatnonzero(np.isfinite(program.market.utility_cap))

    @classmethod
    def of(cls, program: ScaledProgram) -> _Layout:
        n, nnz, n_supply = program.market.n_buyers, program.n_entries, int(program.traded.size)
        capped, utility_capped = cls.pattern(program)
        rank = np.full(n, -1)
        rank[utility_capped] = np.arange(utility_capped.size)
        in_utility_capped = np.flatnonzero(rank[program.buyer] >= 0)
        # Row offsets of the blocks (module docstring).
        sign = n_supply
        caps = sign + nnz
        utility_caps = caps + capped.size
        log = utility_caps + utility_capped.size
        entries = np.arange(nnz)
        buyers = np.arange(n)
        rows = np.concatenate([
            program.supply_row,
            sign + entries,
            caps + np.arange(capped.size),
            utility_caps + rank[program.buyer[in_utility_capped]],
            log + 3 * buyers,  # -tau_i
            log + 3 * program.buyer + 2,  # -u_e z_e in U_i's row
        ])
        cols = np.concatenate([entries, entries, capped, in_utility_capped, nnz + buyers, entries])
        # No (row, column) pair repeats, so sorting by (column, row) gives CSC order directly.
        order = np.lexsort((rows, cols))
        indptr = np.zeros(nnz + n + 1, dtype=np.int64)
        np.cumsum(np.bincount(cols, minlength=nnz + n), out=indptr[1:])
        return cls(
            n_buyers=n,
            n_entries=nnz,
            n_supply=n_supply,
            supply_row=program.supply_row,
            buyer=program.buyer,
            capped=capped,
            utility_capped=utility_capped,
            in_utility_capped=in_utility_capped,
            order=order,
            indices=rows[order].astype(np.int64),
            indptr=indptr,
            n_rows=log + 3 * n,
            n_nonneg=log,
        )

    def matches(self, program: ScaledProgram) -> bool:
        """Whether `program` has this layout (so its data can replace the cached solver's)."""
        if (program.market.n_buyers, program.n_entries, int(program.traded.size)) != (
            self.n_buyers, self.n_entries, self.n_supply
        ):
            return False
        capped, utility_capped = self.pattern(program)
        return (
            np.array_equal(program.supply_row, self.supply_row)
            and np.array_equal(program.buyer, self.buyer)
            and np.array_equal(capped, self.capped)
            and np.array_equal(utility_capped, self.utility_capped)
        )

    def values(self, program: ScaledProgram) -> np.ndarray:
        """Nonzeros of `A` in CSC order, shape (nnz(A),)."""
        nnz, n = self.n_entries, self.n_buyers
        coo = np.concatenate([
            np.ones(nnz),
            -np.ones(nnz),
            np.ones(self.capped.size),
            program.utility[self.in_utility_capped],
            -np.ones(n),
            -program.utility,
        ])
        return coo[self.order]

    def matrix(self, values: np.ndarray) -> sp.csc_matrix:
        """`A`, shape (n_rows, nnz + n), from its CSC nonzeros."""
        return sp.csc_matrix(
            (values, self.indices, self.indptr), shape=(self.n_rows, self.n_entries + self.n_buyers)
        )

    def rhs(self, program: ScaledProgram) -> np.ndarray:
        r"""`b`, shape (n_rows,).

        A cap the program leaves out (it cannot bind) gets a bound with slack at least 1 at every
        feasible point: 2 for an entry (at most 1 by its supply row), and the buyer's reachable
        utility above its base, :math:`\sum_e \hat u_e \min(1, \hat d_e)`, plus 1.
        """
        b = np.zeros(self.n_rows)
        b[: self.n_supply] = 1.0
        caps = self.n_supply + self.n_entries
        utility_caps = caps + self.capped.size
        upper = program.upper[self.capped]
        b[caps:utility_caps] = np.where(upper < 1.0, upper, 2.0)
        reach = np.bincount(
            program.buyer, weights=program.utility * np.minimum(program.upper, 1.0), minlength=self.n_buyers
        )[self.utility_capped]
        cap = program.utility_cap[self.utility_capped]
        b[utility_caps : self.n_nonneg] = np.where(
            np.isfinite(cap), cap - program.base[self.utility_capped], reach + 1.0
        )
        b[self.n_nonneg + 1 :: 3] = 1.0
        b[self.n_nonneg + 2 :: 3] = program.base
        return b

    def cost(self, program: ScaledProgram) -> np.ndarray:
        """`q`, shape (nnz + n,): minimize :math:`-\\hat B \\cdot \\tau`."""
        return np.concatenate([np.zeros(self.n_entries), -program.weights])

    def cones(self) -> list[Any]:
        return [clarabel.NonnegativeConeT(self.n_nonneg)] + [clarabel.ExponentialConeT()] * self.n_buyers


@dataclass
class _Cached:
    """The one cached solver: its layout and the options it was built with."""

    layout: _Layout
    options: tuple[tuple[str, str], ...]
    solver: Any


@dataclass(frozen=True)
class CacheStats:
    """How `ClarabelDirectBackend.solve` obtained its solver since creation or `clear_cache`.

    Attributes
    ----------
    builds : int
        Solves that built a new Clarabel solver (setup: equilibration, KKT assembly, symbolic
        factorization).
    updates : int
        Solves that reused the cached solver, replacing only the numbers of (q, A, b).
    """

    builds: int
    updates: int


class ClarabelDirectBackend:
    """Clarabel on the exponential-cone NSWOT program, assembled without CVXPY (module docstring).

    Options of `solve` are Clarabel settings (``DefaultSettings`` attributes, e.g. ``max_iter``,
    ``tol_gap_rel``, ``tol_feas``, ``time_limit``, ``verbose``), with Clarabel's defaults except
    ``verbose=False``, and ``tol``, which sets ``tol_gap_rel``, ``tol_gap_abs`` and ``tol_feas``
    at once (a setting named explicitly wins). The reported accuracy is
    ``max(tol_gap_rel, tol_feas)`` in force (``1e-8`` by default).

    Notes
    -----
    **Hidden state.** The backend keeps the Clarabel solver of its last solve (one entry, so
    memory is bounded by one problem's factorization). The next solve reuses it, updating ``q``,
    ``A``'s nonzeros and ``b`` in place, if and only if the program has the same layout (number of buyers, entries
    and traded good-periods, and identical ``buyer`` and ``supply_row`` arrays, set of entries
    with a finite cap and set of buyers with a finite utility cap, compared by value), the
    options are the same, and Clarabel allows data updates (it does not when its presolve has
    removed rows). Otherwise it builds a new solver and replaces the cached one. The cached
    data never leaks into a result: every solve passes all of (q, A, b). A lock serializes
    solves on one backend instance. `cache_stats` counts builds and updates; `clear_cache`
    drops the solver.

    Examples
    --------
    >>> import vfm
    >>> from vfm.program import ScaledProgram
    >>> backend = ClarabelDirectBackend()
    >>> program = ScaledProgram.from_market(vfm.VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    >>> solution = backend.solve(program)
    >>> solution.status
    <Status.OPTIMAL: 'optimal'>
    >>> program.prices(solution.prices).round(3)  # duals: accurate to ~sqrt(tolerance)
    array([[1.],
           [1.]])
    >>> _ = backend.solve(program)  # same layout: the cached solver is updated and re-solved
    >>> backend.cache_stats
    CacheStats(builds=1, updates=1)
    """

    name = "clarabel-direct"
    capabilities = Capabilities(options=tuple({**dict(COMMON_OPTIONS), **dict(CLARABEL_SETTINGS)}.items()))

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cached: _Cached | None = None
        self._builds = 0
        self._updates = 0

    def __repr__(self) -> str:
        return f"ClarabelDirectBackend(cached={self._cached is not None}, {self.cache_stats})"

    def prepare(self) -> None:
        pass  # nothing to load ahead of the first solve

    def is_installed(self) -> bool:
        return clarabel is not None

    @property
    def cache_stats(self) -> CacheStats:
        """Solver builds and in-place updates since creation or the last `clear_cache`."""
        return CacheStats(self._builds, self._updates)

    def clear_cache(self) -> None:
        """Drop the cached solver (and its factorization) and reset `cache_stats`."""
        with self._lock:
            self._cached = None
            self._builds = self._updates = 0

    @staticmethod
    def settings(options: dict[str, Any]) -> Any:
        """Clarabel ``DefaultSettings`` with `options` applied over Clarabel's defaults.

        Raises
        ------
        vfm.errors.ValidationError
            If an option is not a Clarabel setting or has the wrong type.
        """
        settings = clarabel.DefaultSettings()
        tol = {name: options["tol"] for name in CLARABEL_TOL} if "tol" in options else {}
        own = {key: value for key, value in options.items() if key != "tol"}
        for key, value in {**_DEFAULT_OPTIONS, **tol, **own}.items():
            try:
                setattr(settings, key, value)
            except AttributeError as exc:
                raise ValidationError(
                    f"{key!r} is not a Clarabel setting; see clarabel.DefaultSettings for the options"
                ) from exc
            except TypeError as exc:
                raise ValidationError(
                    f"Clarabel setting {key!r} has the wrong type ({type(value).__name__}): {exc}"
                ) from exc
        return settings

    def solve(self, program: ScaledProgram, **options: Any) -> Solution:
        """Solve `program`; a solver failure is reported in the status, never raised.

        Parameters
        ----------
        program : ScaledProgram
        **options
            Clarabel settings (class docstring).

        Returns
        -------
        Solution
            `x` of shape (nnz,) and `prices` of shape (K,), or None where Clarabel
            produced no usable point.

        Raises
        ------
        vfm.errors.ValidationError
            An option it does not declare, or a value not of its kind (`check_options`), or of a
            type Clarabel refuses (a caller error, not a solver failure; a value Clarabel rejects,
            such as an unknown ``direct_solve_method``, is reported as `Status.ERROR` with
            Clarabel's message).
        """
        check_options(self, options)
        settings = self.settings(options)
        accuracy = max(float(settings.tol_gap_rel), float(settings.tol_feas))
        key = tuple(sorted((name, repr(value)) for name, value in options.items()))
        started = time.perf_counter()
        with self._lock:
            try:
                solver, layout = self._solver(program, settings, key)
                solution = solver.solve()
                # Clarabel's own solve_time counts the setup of the solver's first build on every
                # later solve of an updated solver, so time setup (or update) and solve here.
                elapsed = time.perf_counter() - started
            except BaseException as exc:
                if not (isinstance(exc, Exception) or _is_rust_panic(exc)):
                    raise
                # The solver may be half-updated: never reuse it.
                self._cached = None
                return Solution(
                    None, None, Status.ERROR, f"Clarabel failed: {type(exc).__name__}: {exc}", -1,
                    time.perf_counter() - started, accuracy,
                )
        name = str(solution.status)
        status, meaning = _STATUS.get(name, (Status.ERROR, "ended without a solution"))
        message = f"Clarabel {meaning} (status '{name}' after {solution.iterations} iterations)"
        z = np.asarray(solution.x, dtype=np.float64)[: layout.n_entries]
        prices = np.asarray(solution.z, dtype=np.float64)[: layout.n_supply]
        has_point = name in _HAS_POINT and bool(np.isfinite(z).all() and np.isfinite(prices).all())
        if name in _HAS_POINT and not has_point:
            message += "; its point is not finite"
        return Solution(
            x=z if has_point else None,
            prices=prices if has_point else None,
            status=status if has_point or status not in (Status.OPTIMAL, Status.INACCURATE) else Status.ERROR,
            message=message,
            iterations=int(solution.iterations),
            solve_time=elapsed,
            accuracy=accuracy,
        )

    def _solver(self, program: ScaledProgram, settings: Any, key: tuple[tuple[str, str], ...]) -> tuple[Any, _Layout]:
        """The cached solver with `program`'s data if the layout and options match, else a new one.

        Called with the lock held.
        """
        cached = self._cached
        if (
            cached is not None
            and cached.options == key
            and cached.layout.matches(program)
            and cached.solver.is_data_update_allowed()
        ):
            layout = cached.layout
            try:
                # Whole vectors: a re-plan changes most numbers, and partial updates would need
                # the index arrays passed as well.
                cached.solver.update(q=layout.cost(program), A=layout.values(program), b=layout.rhs(program))
            except Exception:
                pass  # Clarabel refused the update (a pattern it sees differently): build afresh
            else:
                self._updates += 1
                return cached.solver, layout
        # Drop the old solver before building the new one, so two factorizations never coexist.
        self._cached = cached = None
        layout = _Layout.of(program)
        n_vars = layout.n_entries + layout.n_buyers
        solver = clarabel.DefaultSolver(
            sp.csc_matrix((n_vars, n_vars)),
            layout.cost(program),
            layout.matrix(layout.values(program)),
            layout.rhs(program),
            layout.cones(),
            settings,
        )
        self._builds += 1
        self._cached = _Cached(layout, key, solver)
        return solver, layout
