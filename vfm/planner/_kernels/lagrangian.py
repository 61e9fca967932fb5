r"""The Lagrangian minimizer of `vfm.planner.solve.polish`, compiled: every job's minimizer of its part of
the Lagrangian at given prices and row multipliers, and the row multipliers that match a target
progress.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from vfm.planner._kernels import jit


@jit.inlined
def _breakpoints(a: float, c: float, sigma: float, budget: float, upper: float) -> tuple[float, float]:
    """Where an entry of the Lagrangian minimizer leaves its upper bound and where it reaches 0, as
    utilities U (inf: never, for any U > 0)."""
    top = c + sigma * upper
    return (budget * a / top if top > 0 else np.inf), (budget * a / c if c > 0 else np.inf)


@jit.inlined
def _minimize_job(a: np.ndarray, c: np.ndarray, s: float, b: float, base: float, upper: np.ndarray,
                  active: np.ndarray, points: np.ndarray, weighted: np.ndarray, y: np.ndarray,
                  free: np.ndarray) -> float:
    """One job's `lagrangian_minimizer` (its rows `a`, `c`, `active`, `y`, `free`, of length T, and
    scratch `points` (2T,) and `weighted` (T,)): writes `y` and `free`, returns U."""
    rounds = a.shape[0]
    inverse_s = 1.0 / s
    m = 0
    for t in range(rounds):
        weighted[t] = b * a[t]
        if active[t]:
            for point in _breakpoints(a[t], c[t], s, b, upper[t]):
                if 0 < point < np.inf:
                    points[m] = point
                    m += 1
    ordered = points[:m]
    ordered.sort()
    low, high = 0, m
    while low < high:  # the last breakpoint where the root's function is >= 0
        middle = (low + high) // 2
        at = ordered[middle]
        inverse_at = 1.0 / at
        total = base - at
        for t in range(rounds):
            if active[t]:
                total += a[t] * min(max((weighted[t] * inverse_at - c[t]) * inverse_s, 0.0), upper[t])
        if total >= 0:
            low = middle + 1
        else:
            high = middle
    left = ordered[low - 1] if low > 0 else 0.0
    right = ordered[low] if low < m else np.inf
    k0, k1 = base, 0.0
    for t in range(rounds):
        to_upper, to_zero = _breakpoints(a[t], c[t], s, b, upper[t])
        at_upper = active[t] and to_upper >= right
        free[t] = active[t] and not at_upper and to_zero > left
        y[t] = upper[t] if at_upper else 0.0
        if at_upper:
            k0 += a[t] * upper[t]
        elif free[t]:
            k0 -= a[t] * c[t] * inverse_s
            k1 += weighted[t] * a[t] * inverse_s
    root = np.sqrt(k0 * k0 + 4.0 * k1)
    u = (k0 + root) / 2.0 if k0 >= 0 else 2.0 * k1 / (root - k0)
    inverse_u = 1.0 / u
    for t in range(rounds):
        if free[t]:
            y[t] = min(max((weighted[t] * inverse_u - c[t]) * inverse_s, 0.0), upper[t])
    return u


@jit.over_jobs
def lagrangian_minimizer(a: np.ndarray, c: np.ndarray, sigma: np.ndarray, budgets: np.ndarray, base: np.ndarray,
                         upper: np.ndarray, active: np.ndarray, y: np.ndarray, utility: np.ndarray,
                         free: np.ndarray) -> None:
    r"""For every job, the minimizer of its part of the Lagrangian (`vfm.planner.solve.polish`):
    :math:`y_t = \operatorname{clip}((\beta a_t / U - c_t) / \sigma, 0, u_t)` with :math:`U` the
    root of :math:`b + a^\top y(U) - U`, `upper` (n, T) each entry's bound :math:`u_t` (inf: none).
    Writes `y` (n, T), `utility` (n,) and `free` (n, T): the entries strictly inside the box.

    The root's function is decreasing and, between two of the job's 2T breakpoints, reads
    :math:`K_0 + K_1 / U - U`: a bisection over the sorted breakpoints finds the piece and the
    quadratic's root gives U (written to avoid cancellation for either sign of :math:`K_0`).
    """
    n, rounds = a.shape
    for chunk in prange(jit.chunks(n)):
        points = np.empty(2 * rounds)
        weighted = np.empty(rounds)  # budgets a_t: the entries' numerators
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            utility[i] = _minimize_job(a[i], c[i], sigma[i], budgets[i], base[i], upper[i], active[i], points,
                                       weighted, y[i], free[i])


@jit.inlined
def _progress_at(w: float, a: np.ndarray, cost: np.ndarray, pace: np.ndarray, s: float, b: float, base: float,
                 upper: np.ndarray, active: np.ndarray, points: np.ndarray, weighted: np.ndarray, c: np.ndarray,
                 y: np.ndarray, free: np.ndarray) -> float:
    """One job's progress :math:`p^\top y` in its Lagrangian minimizer at row multiplier `w`."""
    for t in range(c.shape[0]):
        c[t] = cost[t] - w * pace[t]
    _minimize_job(a, c, s, b, base, upper, active, points, weighted, y, free)
    total = 0.0
    for t in range(c.shape[0]):
        total += pace[t] * y[t]
    return total


@jit.over_jobs
def matched_rows(a: np.ndarray, cost: np.ndarray, pace: np.ndarray, sigma: np.ndarray, budgets: np.ndarray,
                 base: np.ndarray, upper: np.ndarray, active: np.ndarray, low: np.ndarray, high: np.ndarray,
                 target: np.ndarray, steps: int, out: np.ndarray) -> None:
    r"""For every job, the row multiplier :math:`w \in` [`low`, `high`] at which its Lagrangian
    minimizer (`lagrangian_minimizer` with :math:`c = \text{cost} - w\,p`, `pace` :math:`p`) has
    progress :math:`p^\top y` equal to `target`, written to `out` (NaN where the target is outside
    the progress at the bracket's ends). The progress does not decrease in w: regula falsi with the
    Illinois rule (the end that stays has its value halved), at most `steps` evaluations, until
    the bracket is 1e-14 of w or the progress within 1e-14 of the target."""
    n, rounds = a.shape
    for chunk in prange(jit.chunks(n)):
        points, weighted, c, y = np.empty(2 * rounds), np.empty(rounds), np.empty(rounds), np.empty(rounds)
        free = np.empty(rounds, dtype=np.bool_)
        for i in range(chunk * jit.CHUNK, min(n, (chunk + 1) * jit.CHUNK)):
            s, b, z = sigma[i], budgets[i], base[i]
            left, right = low[i], high[i]
            f_left = _progress_at(left, a[i], cost[i], pace[i], s, b, z, upper[i], active[i], points, weighted, c,
                                  y, free) - target[i]
            f_right = _progress_at(right, a[i], cost[i], pace[i], s, b, z, upper[i], active[i], points, weighted, c,
                                   y, free) - target[i]
            if not (f_left <= 0.0 <= f_right):
                out[i] = np.nan
                continue
            kept = 0  # which end stayed at the last step: -1 left, 1 right
            w = left if f_left == 0.0 else right
            for _ in range(steps):
                if f_left == 0.0 or f_right == 0.0 or right - left <= 1e-14 * right:
                    break
                w = (left * f_right - right * f_left) / (f_right - f_left)
                if not left < w < right:
                    w = 0.5 * (left + right)
                f = _progress_at(w, a[i], cost[i], pace[i], s, b, z, upper[i], active[i], points, weighted, c, y,
                                 free) - target[i]
                if abs(f) <= 1e-14 * (1.0 + abs(target[i])):
                    break
                if f < 0.0:
                    left, f_left = w, f
                    if kept == -1:
                        f_right *= 0.5
                    kept = -1
                else:
                    right, f_right = w, f
                    if kept == 1:
                        f_left *= 0.5
                    kept = 1
            out[i] = w
