"""The one-type rows' Gram kernel (`vfm.planner._kernels.one_type_rows.typed_gram`) against the plain
per-job algorithm it computes, operation for operation: the same floats, bit for bit."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vfm.planner._kernels import one_type_rows, polish_types


def _job_blocks(p_t, shrink, x, left, right, group, members):
    """One job's scaled Q (S', T) and its rounds' own blocks (R, K, K), job by job and entry by entry."""
    k, goods = p_t.shape
    rounds, width = members.shape
    along, per_round = np.zeros((k, rounds)), np.zeros((rounds, k, k))
    for a in range(goods):
        for p in range(k):
            along[p, group[a]] += p_t[p, a] * left[a]
            for s in range(k):
                per_round[group[a], p, s] += p_t[p, a] * p_t[s, a]
    before, after = np.zeros((rounds, k, k)), np.zeros((rounds, k, k))
    for r in range(1, rounds):
        before[r] = before[r - 1] + per_round[r - 1]
        after[rounds - 1 - r] = after[rounds - r] + per_round[rounds - r]
    q, scaled = np.empty((k, goods)), np.empty((k, goods))
    for p in range(k):
        norm = 0.0
        for a in range(goods):
            norm += p_t[p, a] * p_t[p, a]
        for c in range(goods):
            q[p, c] = p_t[p, c] * x[c] + right[c] * along[p, group[c]]
            scaled[p, c] = 1.0 / math.sqrt(1.0 + norm) * q[p, c]
    blocks = np.zeros((rounds, width, width))
    for r in range(rounds):
        outside = before[r] + after[r]
        hq = np.array([[shrink[p] * q[p, c] if c >= 0 else 0.0 for c in members[r]] for p in range(k)])
        y = np.zeros((width, width))
        for row, a in enumerate(members[r]):
            for m, c in enumerate(members[r]):
                if a >= 0 and c >= 0:
                    value = left[a] * right[c] + (x[c] if a == c else 0.0)
                    for p in range(k):
                        value -= p_t[p, a] * hq[p, m]
                    y[row, m] = value
        for m in range(width):
            for m2 in range(width):
                total = 0.0
                for row in range(width):
                    total += y[row, m] * y[row, m2]
                for p in range(k):
                    for s in range(k):
                        total += hq[p, m] * outside[p, s] * hq[s, m2]
                blocks[r, m, m2] = total
    return scaled, blocks


@pytest.mark.parametrize(("jobs", "columns", "rounds", "types", "seed"), [(70, 2, 4, 3, 0), (9, 3, 5, 2, 1)])
def test_typed_gram_is_the_per_job_algorithm_bit_for_bit(jobs, columns, rounds, types, seed):
    rng = np.random.default_rng(seed)
    goods = rounds * types
    group = np.tile(np.arange(rounds), types)
    members = np.stack([np.flatnonzero(group == r) for r in range(rounds)])
    members[0, -1] = -1  # a round with a good fewer: the padding
    p_t = rng.standard_normal((jobs, columns, goods)) * 10.0 ** rng.uniform(-3, 1, (jobs, columns, goods))
    shrink, x, left, right = rng.random((jobs, columns)), *rng.random((3, jobs, goods))
    scaled, blocks = np.empty_like(p_t), np.zeros((rounds, types, types))
    one_type_rows.typed_gram(p_t, shrink, x, left, right, group, members, scaled, blocks)
    expected = np.zeros_like(blocks)
    for chunk in range(0, jobs, 64):  # the chunks' sums, each in job order, added in chunk order
        partial = np.zeros_like(blocks)
        for i in range(chunk, min(jobs, chunk + 64)):
            job_scaled, job_blocks = _job_blocks(p_t[i], shrink[i], x[i], left[i], right[i], group, members)
            assert np.array_equal(scaled[i], job_scaled)
            partial += job_blocks
        expected += partial
    assert np.array_equal(blocks, expected)


def _fold_arguments(jobs, rounds, types, seed, padded=False):
    rng = np.random.default_rng(seed)
    goods = rounds * types
    group = np.tile(np.arange(rounds), types)
    members = np.stack([np.flatnonzero(group == r) for r in range(rounds)])
    if padded:  # a round with a good fewer: the goods no longer tile the rounds
        group, members = group[:-1], members.copy()
        members[rounds - 1, -1] = -1
        goods -= 1
    sum_weights, add_weights = rng.random((2, jobs, goods))
    round_weights = rng.standard_normal((jobs, rounds))
    return group, members, sum_weights, round_weights, add_weights


def _plain_fold(vector, sum_weights, round_weights, add_weights, group):
    """`add_round_sums` job by job and good by good: each round's sum in the goods' order."""
    out = vector.copy()
    for i in range(vector.shape[0]):
        for j in range(vector.shape[1]):
            sums = np.zeros(round_weights.shape[1])
            for t in range(vector.shape[2]):
                sums[group[t]] += sum_weights[i, t] * vector[i, j, t]
            for t in range(vector.shape[2]):
                out[i, j, t] += add_weights[i, t] * round_weights[i, group[t]] * sums[group[t]]
    return out


@pytest.mark.parametrize("padded", [False, True])
def test_round_sums_tiled_or_by_members_are_the_plain_sums_bit_for_bit(padded):
    group, members, sum_weights, round_weights, add_weights = _fold_arguments(70, 5, 3, 2, padded)
    vector = np.random.default_rng(3).standard_normal((70, 2, group.size))
    expected = _plain_fold(vector, sum_weights, round_weights, add_weights, group)
    for tiled in ([False, True] if not padded else [False]):
        out = vector.copy()
        one_type_rows.add_round_sums(sum_weights, round_weights, add_weights, members, tiled,
                                     vector.reshape(-1, group.size), out.reshape(-1, group.size))
        assert np.array_equal(out, expected)


@pytest.mark.parametrize(("columns", "padded"), [(1, False), (2, False), (3, True)])
def test_the_typed_block_solves_are_the_steps_one_after_the_other_bit_for_bit(columns, padded):
    from vfm.planner._kernels import low_rank

    jobs, rounds, types = 150, 4, 3
    group, members, inverse_diagonal, alpha, active = _fold_arguments(jobs, rounds, types, 5, padded)
    rng = np.random.default_rng(6)
    goods = group.size
    scaled = rng.standard_normal((jobs, columns, goods))
    p_t, shrink = np.empty_like(scaled), np.empty((jobs, columns))
    low_rank.low_rank_factor(scaled, p_t, shrink)
    root, g, vector = rng.random((jobs, goods)) + 0.1, rng.random((jobs, goods)), rng.standard_normal((jobs, goods))
    correction = rng.standard_normal(goods)

    def fold(v, sum_weights, add_weights):
        return _plain_fold(v[:, None, :], sum_weights, alpha, add_weights, group)[:, 0, :]

    def block_solve(v):
        out, loads = np.empty_like(v), np.empty(goods)
        low_rank.inverse_blocks(root, p_t, shrink, fold(v, inverse_diagonal, active), g, out, loads)
        return fold(out, active, inverse_diagonal)

    out, loads = np.empty_like(vector), np.empty(goods)
    tiled = not padded
    one_type_rows.typed_inverse_blocks(root, p_t, shrink, alpha, inverse_diagonal, active, members, tiled, vector,
                                       g, out, loads)
    expected = block_solve(vector)
    assert np.array_equal(out, expected)
    chunked = sum(_in_order(g[c:c + 64] * expected[c:c + 64]) for c in range(0, jobs, 64))
    assert np.array_equal(loads, chunked)
    before = out.copy()
    one_type_rows.typed_subtract_inverse_blocks(root, p_t, shrink, alpha, inverse_diagonal, active, members, tiled,
                                                g, correction, out)
    assert np.array_equal(out, before - block_solve(g * correction[None, :]))


def _in_order(rows):
    """The rows' sum, one row after another."""
    total = np.zeros(rows.shape[1])
    for row in rows:
        total += row
    return total


@pytest.mark.parametrize("scenarios", [1, 2])
def test_a_typed_solve_interpreted_is_the_compiled_one_bit_for_bit(scenarios):
    # The one-type rows' fused kernels (`typed_curvature`, `typed_factor`, the typed block solves) and their
    # interpreted twins, through a whole solve on two GPU types.
    from dataclasses import replace

    from benchmarks.plan import tiled_window
    from vfm._numerics.jit import interpreting
    from vfm.planner.plan import plan
    from vfm.planner.solve.ipm import solve_saa_ipm

    states, gpus, capacity = tiled_window(12, 6)
    program = plan(states, gpus, capacity, scenarios=scenarios, seed=0).program
    rounds = program.capacity.shape[0]
    speed = np.where(np.arange(program.progress.shape[1])[:, None] % 3 == 0, 0.5, 0.8)
    typed = replace(program, progress=np.tile(program.progress, 2), capacity=np.tile(0.5 * program.capacity, 2),
                    good_round=np.tile(np.arange(rounds), 2),
                    speed=np.repeat(np.hstack([np.ones_like(speed), speed]), rounds, axis=1))
    compiled = solve_saa_ipm(typed, tol=1e-8)
    with interpreting():
        interpreted = solve_saa_ipm(typed, tol=1e-8)
    assert str(compiled.status) == str(interpreted.status) == "optimal"
    for name in ("x", "prices", "type_multipliers"):
        assert np.array_equal(getattr(compiled, name), getattr(interpreted, name)), name
    if scenarios == 1:  # and the polish's kernels over the types
        from vfm.planner.solve.polish import polish

        polished = polish(typed, compiled)
        with interpreting():
            polished_interpreted = polish(typed, interpreted)
        assert "polished to residual" in polished.message
        for name in ("x", "prices", "type_multipliers"):
            assert np.array_equal(getattr(polished, name), getattr(polished_interpreted, name)), name


def _polish_slopes(jobs, rounds, types, seed):
    rng = np.random.default_rng(seed)
    goods = rounds * types
    group = np.tile(np.arange(rounds), types)
    free = (rng.random((jobs, goods)) < 0.7).astype(np.float64)
    weighted = rng.random((jobs, goods)) * free
    a_round = np.stack([weighted[:, group == r].sum(axis=1) for r in range(rounds)], axis=1)
    gamma, scale = rng.random(jobs), rng.random(jobs) + 0.5
    g = rng.random((jobs, goods))
    return group, free, weighted, a_round, gamma, scale, g


def test_the_polish_products_over_types_are_their_formulas():
    group, free, weighted, a_round, gamma, scale, g = _polish_slopes(150, 4, 3, 7)
    rng = np.random.default_rng(8)
    mu, prices = rng.standard_normal(a_round.shape), rng.standard_normal(group.size)
    rounds_of_goods = (group[:, None] == np.arange(a_round.shape[1])[None, :]).astype(np.float64)
    out = np.empty(group.size)
    polish_types.polish_cross_times(free, weighted, a_round, gamma, scale, g, group, mu, out)
    along = gamma * (a_round * mu).sum(axis=1)
    expected = (g * scale[:, None] * (free * mu[:, group] - along[:, None] * weighted)).sum(axis=0)
    np.testing.assert_allclose(out, expected, rtol=1e-13, atol=1e-13 * np.abs(expected).max())
    transposed = np.empty(a_round.shape)
    polish_types.polish_cross_transposed_times(free, weighted, a_round, gamma, scale, g, group, prices, transposed)
    gx = g * prices[None, :]
    expected = scale[:, None] * ((gx * free) @ rounds_of_goods
                                 - (gamma * (gx * weighted).sum(axis=1))[:, None] * a_round)
    np.testing.assert_allclose(transposed, expected, rtol=1e-13, atol=1e-13 * np.abs(expected).max())
    # The capacity rows in the jobs' rows' multipliers: the job rows' column twice, then g_t e_t^T M e_r.
    jobs = np.array([3, 0, 149, 64])
    job_cross = rng.standard_normal((group.size, 150))
    present = rng.random((150, 2 + a_round.shape[1])) < 0.5
    cross, cross_present = (np.empty((jobs.size, group.size, present.shape[1])) for _ in range(2))
    polish_types.polish_cross_blocks(jobs, job_cross, free, weighted, a_round, gamma, scale, g, group, present,
                                      cross, cross_present)
    spread = (gamma[jobs, None] * weighted[jobs])[:, :, None] * a_round[jobs, None, :]
    block = (g[jobs] * scale[jobs, None])[:, :, None] * (free[jobs, :, None] * rounds_of_goods[None] - spread)
    expected = np.concatenate([np.repeat(job_cross.T[jobs, :, None], 2, axis=2), block], axis=2)
    assert np.array_equal(cross, expected)
    assert np.array_equal(cross_present, expected * present[jobs, None, :])


def test_the_dense_block_inverses_are_the_inverses_and_see_a_singular_block():
    rng = np.random.default_rng(9)
    blocks = rng.standard_normal((130, 7, 7)) + 3.0 * np.eye(7)[None]
    blocks[5, :, 2] = 0.0  # a zero column and a permutation: pivoting
    blocks[5, 2, 2] = 1.0
    blocks[6] = blocks[6][::-1]
    out = np.empty_like(blocks)
    assert polish_types.inverse_blocks_dense(blocks, out)
    np.testing.assert_allclose(np.matmul(blocks, out), np.broadcast_to(np.eye(7), blocks.shape), atol=1e-12)
    blocks[100, 3] = 0.0
    assert not polish_types.inverse_blocks_dense(blocks, out)


def test_the_polish_blocks_and_row_terms_over_types_are_the_numpy_expressions_bit_for_bit():
    group, _, _, a_round, gamma, scale, g = _polish_slopes(90, 4, 3, 10)
    rng = np.random.default_rng(11)
    rounds = a_round.shape[1]
    in_round = rng.random((90, rounds))
    own, rows = rng.standard_normal(90), rng.standard_normal((90, rounds))
    jobs = np.array([5, 0, 89])
    f, d = rng.standard_normal((3, 2 + rounds)), rng.random((3, 2 + rounds))
    present = rng.random((3, 2 + rounds)) < 0.6
    out = np.empty((3, 2 + rounds, 2 + rounds))
    polish_types.polish_blocks(jobs, own, rows, a_round, gamma, scale, in_round, f, d, present, out)
    slope = np.empty_like(out)
    slope[:, :2, :2] = own[jobs, None, None]
    slope[:, :2, 2:] = rows[jobs, None, :]
    slope[:, 2:, :2] = rows[jobs, :, None]
    own_block = -(gamma[jobs] * scale[jobs])[:, None, None] * a_round[jobs, :, None] * a_round[jobs, None, :]
    own_block[:, np.arange(rounds), np.arange(rounds)] += scale[jobs, None] * in_round[jobs]
    slope[:, 2:, 2:] = own_block
    expected = f[:, :, None] * slope * present[:, None, :]
    expected[:, np.arange(2 + rounds), np.arange(2 + rounds)] += d
    assert np.array_equal(out, expected)
    per_job, per_round = rng.standard_normal(90), rng.standard_normal((90, rounds))
    terms = np.empty_like(g)
    one_type_rows.typed_row_terms(per_job, g, per_round, group, terms)
    expected = per_job[:, None] * g
    expected -= per_round[:, group]
    assert np.array_equal(terms, expected)


def test_the_fused_typed_system_is_the_system_step_by_step():
    # `blocks.typed_low_rank_system` (two passes over the jobs) against `newton._blocks` (the fold, the
    # factor and `TypeFold.gram`'s pieces one after the other), at every iterate of a typed solve.
    from dataclasses import replace

    from benchmarks.plan import tiled_window
    from vfm.planner.plan import plan
    from vfm.planner.solve.ipm import newton
    from vfm.planner.solve.ipm.blocks import typed_low_rank_system
    from vfm.planner.solve.ipm.method import solve_saa_ipm

    states, gpus, capacity = tiled_window(150, 40)
    program = plan(states, gpus, capacity, scenarios=1, seed=0).program
    rounds = program.capacity.shape[0]
    speed = np.where(np.arange(program.progress.shape[1])[:, None] % 3 == 0, 0.5, 0.8)
    typed = replace(program, progress=np.tile(program.progress, 2), capacity=np.tile(0.5 * program.capacity, 2),
                    good_round=np.tile(np.arange(rounds), 2),
                    speed=np.repeat(np.hstack([np.ones_like(speed), speed]), rounds, axis=1))
    seen = []
    factor = newton.NewtonSystem.factor.__func__

    def recording(cls, data, point, mu, work, regularization, stacked=True):
        seen.append((data, point, work, regularization))
        return factor(cls, data, point, mu, work, regularization, stacked)

    newton.NewtonSystem.factor = classmethod(recording)
    try:
        assert str(solve_saa_ipm(typed, tol=1e-8).status) == "optimal"
    finally:
        newton.NewtonSystem.factor = classmethod(factor)
    assert seen and all(data.typed and work.low_rank for data, _, work, _ in seen)
    for data, point, work, regularization in seen:
        row = np.sqrt(point.z_f / point.s_f + point.longest.z_e / point.longest.s_e)
        diagonal, root, blocks, schur, fold = typed_low_rank_system(data, point, row, regularization, work)
        fused = (diagonal.copy(), root.copy(), blocks.columns.copy(), blocks.shrink.copy(), schur, fold.alpha)
        diagonal, root, blocks, schur, fold, _ = newton._blocks(data, point, row, regularization, work, False)
        assert np.array_equal(fused[0], diagonal) and np.array_equal(fused[1], root)
        np.testing.assert_allclose(fused[2], blocks.columns, rtol=1e-9, atol=1e-12 * np.abs(blocks.columns).max())
        np.testing.assert_allclose(fused[3], blocks.shrink, rtol=1e-9)
        np.testing.assert_allclose(fused[4], schur, rtol=1e-9, atol=1e-12 * np.abs(schur).max())
        np.testing.assert_allclose(fused[5], fold.alpha, rtol=1e-12, atol=1e-300)
