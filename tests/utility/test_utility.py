"""vfm.utility: batched utilities, NSWOT and gradients agree across backends and with the market.

JAX compiles once per input shape, so the JAX tests keep their shapes fixed and let hypothesis
vary the values; the NumPy reference test varies the shapes too.
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from vfm import VolatileFisherMarket
from vfm.errors import ValidationError
from vfm.testing.strategies import markets
from vfm.utility import (
    available_backends,
    cumulative_utilities,
    expected_nswot,
    expected_nswot_gradient,
    nswot,
    nswot_gradient,
)

HAS_JAX = "jax" in available_backends()
BACKENDS = ["numpy", pytest.param("jax", marks=pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed"))]
FUNCTIONS = [nswot, nswot_gradient, expected_nswot, expected_nswot_gradient]


def evaluate_all(u, x, b, c, backend):
    """Every public function's output, keyed by name."""
    out = {"cumulative_utilities": cumulative_utilities(u, x, c, backend=backend)}
    out.update({f.__name__: f(u, x, b, c, backend=backend) for f in FUNCTIONS})
    return out


def assert_close(actual, expected, scale=None, rtol=1e-12):
    """Equal infinities, and finite entries within `rtol` of `scale` (default |expected|)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape
    np.testing.assert_array_equal(np.isinf(actual), np.isinf(expected))
    np.testing.assert_array_equal(actual[np.isinf(actual)], expected[np.isinf(expected)])
    finite = np.isfinite(expected)
    bound = np.broadcast_to(rtol * (np.abs(expected) if scale is None else np.asarray(scale)), expected.shape)
    np.testing.assert_array_less(np.abs(actual[finite] - expected[finite]), bound[finite] + 1e-300)


# No subnormal numbers: XLA on CPU flushes them to zero (see the vfm.utility docstring).
ALLOCATION_ENTRIES = st.one_of(st.just(0.0), st.floats(1e-6, 1.0))


def without_subnormals(market):
    """The market's base utility with subnormal entries set to 0."""
    c = market.base_utility
    return np.where(c < 1e-300, 0.0, c)


@st.composite
def batches(draw, market_strategy, n_scenarios=(1, 3), n_allocations=(1, 3), batched=None):
    """(market, utilities, allocation): scenarios perturb the market's utilities; some
    allocations leave a buyer with nothing (so U = 0 and NSWOT = -inf occur)."""
    market = draw(market_strategy)
    shape = market.shape
    S = draw(st.integers(*n_scenarios)) if isinstance(n_scenarios, tuple) else n_scenarios
    A = draw(st.integers(*n_allocations)) if isinstance(n_allocations, tuple) else n_allocations
    factors = draw(arrays(np.float64, (S, *shape), elements=st.floats(0.01, 2.0)))
    u = factors * market.utilities
    x = draw(arrays(np.float64, (A, *shape), elements=ALLOCATION_ENTRIES)) * market.supply / shape[0]
    if draw(st.booleans()):
        x[0, 0] = 0.0
    u_batched, x_batched = (draw(st.booleans()), draw(st.booleans())) if batched is None else batched
    return market, (u if u_batched else u[0]), (x if x_batched else x[0])


# ---------------------------------------------------------------------------------------------
# Shapes and the broadcasting rule
# ---------------------------------------------------------------------------------------------

N, M, T = 3, 2, 4
RNG = np.random.default_rng(20240611)
U4 = RNG.random((5, N, M, T))  # S = 5
X4 = RNG.random((2, N, M, T))  # A = 2
B = np.array([1.0, 2.0, 0.5])
C = np.array([0.0, 0.3, 1.0])


@pytest.mark.parametrize(
    ("u", "x", "batch", "expected_batch"),
    [
        (U4[0], X4[0], (), ()),
        (U4, X4[0], (5,), ()),
        (U4[0], X4, (2,), (2,)),
        (U4, X4, (5, 2), (2,)),
    ],
    ids=["single", "scenarios", "allocations", "both"],
)
def test_output_shapes_follow_the_batch_axes(u, x, batch, expected_batch):
    # The batch bookkeeping is shared by both backends (which always see batched arrays), so
    # NumPy suffices here; test_jax_and_numpy_agree compares the backends on batched input.
    backend = "numpy"
    out = evaluate_all(u, x, B, C, backend)
    assert out["cumulative_utilities"].shape == (*batch, N)
    assert np.shape(out["nswot"]) == batch
    assert out["nswot_gradient"].shape == (*batch, N, M, T)
    assert np.shape(out["expected_nswot"]) == expected_batch
    assert out["expected_nswot_gradient"].shape == x.shape
    for value in out.values():
        assert isinstance(value, np.ndarray | np.float64) and value.dtype == np.float64
    # Each batched entry is the unbatched evaluation of its scenario and allocation.
    full = evaluate_all(U4, X4, B, C, backend)
    s = slice(None) if u.ndim == 4 else 0
    a = slice(None) if x.ndim == 4 else 0
    for name in ("cumulative_utilities", "nswot", "nswot_gradient"):
        assert_close(out[name], full[name][s, a])


# ---------------------------------------------------------------------------------------------
# Values: NumPy against a plain reference and the market; JAX against NumPy
# ---------------------------------------------------------------------------------------------


@given(batches(markets(n_buyers=(1, 5), n_goods=(1, 3), n_periods=(1, 4), extensions={"base_utility"})))
def test_numpy_matches_the_market_entry_by_entry(case):
    market, u, x = case
    b, c = market.budgets, market.base_utility
    out = evaluate_all(u, x, b, c, "numpy")
    us = u.reshape(-1, *market.shape)
    xs = x.reshape(-1, *market.shape)
    utilities = np.empty((len(us), len(xs), market.n_buyers))
    values = np.empty((len(us), len(xs)))
    for s, scenario in enumerate(us):
        # Each scenario is a market of its own (positive factors keep every buyer's anchor).
        scenario_market = VolatileFisherMarket(scenario, b, market.supply, base_utility=c)
        for a, allocation in enumerate(xs):
            utilities[s, a] = scenario_market.utility_of(allocation)
            values[s, a] = scenario_market.nswot(allocation)
    batch = (*u.shape[:-3], *x.shape[:-3])
    assert_close(out["cumulative_utilities"], utilities.reshape(*batch, -1))
    scale = np.abs(np.log(np.where(utilities > 0, utilities, 1.0))) @ b  # no cancellation allowed for
    assert_close(out["nswot"], values.reshape(batch), scale=scale.reshape(batch))
    assert_close(
        out["expected_nswot"], values.mean(axis=0).reshape(x.shape[:-3]), scale=scale.mean(axis=0).reshape(x.shape[:-3])
    )
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # B / U overflows to inf, as in vfm
        gradient = (b / utilities)[..., None, None] * us[:, None]
    gradient = np.where(us[:, None] > 0, gradient, 0.0)
    assert_close(out["nswot_gradient"], gradient.reshape(*batch, *market.shape))
    assert_close(out["expected_nswot_gradient"], gradient.mean(axis=0).reshape(x.shape), rtol=1e-13 * 16)


@given(markets(extensions={"base_utility"}), st.data())
def test_single_allocation_nswot_equals_the_market(market, data):
    x = data.draw(arrays(np.float64, market.shape, elements=ALLOCATION_ENTRIES)) * market.supply
    U = market.utility_of(x)
    assert_close(cumulative_utilities(market.utilities, x, market.base_utility, backend="numpy"), U)
    value = nswot(market.utilities, x, market.budgets, market.base_utility, backend="numpy")
    scale = np.abs(np.log(np.where(U > 0, U, 1.0))) @ market.budgets
    assert_close(value, market.nswot(x), scale=scale)
    assert_close(
        expected_nswot(market.utilities, x, market.budgets, market.base_utility, backend="numpy"),
        market.nswot(x),
        scale=scale,
    )


@given(batches(markets(n_buyers=N, n_goods=M, n_periods=T, extensions={"base_utility"}), 5, 2, batched=(True, True)))
def test_jax_and_numpy_agree(case):
    pytest.importorskip("jax")
    market, u, x = case
    c = without_subnormals(market)
    numpy_out = evaluate_all(u, x, market.budgets, c, "numpy")
    jax_out = evaluate_all(u, x, market.budgets, c, "jax")
    U = numpy_out["cumulative_utilities"]
    scale = np.abs(np.log(np.where(U > 0, U, 1.0))) @ market.budgets  # (S, A)
    for name, expected in numpy_out.items():
        assert isinstance(jax_out[name], np.ndarray)
        if name == "nswot":
            assert_close(jax_out[name], expected, scale=scale)
        elif name == "expected_nswot":
            assert_close(jax_out[name], expected, scale=scale.mean(axis=0))
        else:
            assert_close(jax_out[name], expected, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradient_matches_central_differences(backend):
    u, x = 0.1 + U4, 0.1 + X4  # keep every U_i well away from 0
    gradient = nswot_gradient(u, x, B, C, backend=backend)
    h = 1e-6
    for index in np.ndindex(x.shape[1:]):  # every coordinate, for all allocations at once
        step = np.zeros_like(x)
        step[(slice(None), *index)] = h
        difference = (nswot(u, x + step, B, C, backend=backend) - nswot(u, x - step, B, C, backend=backend)) / (2 * h)
        np.testing.assert_allclose(gradient[(slice(None), slice(None), *index)], difference, rtol=1e-7)
    expected = expected_nswot_gradient(u, x, B, C, backend=backend)
    np.testing.assert_allclose(expected, gradient.mean(axis=0), rtol=1e-14)


def test_gradient_matches_jax_autodiff():
    jax = pytest.importorskip("jax")
    jnp = jax.numpy

    def welfare(allocation, utilities):
        return jnp.dot(B, jnp.log(C + jnp.sum(utilities * allocation, axis=(1, 2))))

    with jax.enable_x64(True):
        autodiff = np.stack([[np.asarray(jax.grad(welfare)(x, u)) for x in X4] for u in U4])
    for backend in ("numpy", "jax"):
        np.testing.assert_allclose(nswot_gradient(U4, X4, B, C, backend=backend), autodiff, rtol=1e-13)


@pytest.mark.parametrize("backend", BACKENDS)
def test_zero_utility_gives_minus_inf_and_infinite_gradient_without_warnings(backend):
    # Buyer 0 (base utility 0) values nothing of good 0 in periods 0-1, and allocation 0 gives it
    # exactly that: U = 0 in every scenario for allocation 0; allocation 1 is unaffected.
    assert C[0] == 0.0
    u, x = U4.copy(), X4.copy()
    u[:, 0, 0, :2] = 0.0
    x[0, 0] = 0.0
    x[0, 0, 0, :2] = 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = evaluate_all(u, x, B, C, backend)
    values, gradient = out["nswot"], out["nswot_gradient"]
    assert np.isneginf(values[:, 0]).all() and np.isfinite(values[:, 1]).all()
    assert np.isneginf(out["expected_nswot"][0]) and np.isfinite(out["expected_nswot"][1])
    valued = np.broadcast_to(u[:, 0] > 0, gradient[:, 0, 0].shape)
    np.testing.assert_array_equal(gradient[:, 0, 0], np.where(valued, np.inf, 0.0))
    np.testing.assert_array_equal(out["expected_nswot_gradient"][0, 0], np.where(valued.any(axis=0), np.inf, 0.0))
    assert np.isfinite(gradient[:, :, 1:]).all() and np.isfinite(gradient[:, 1]).all()
    np.testing.assert_allclose(out["expected_nswot_gradient"][:, 1:], gradient[:, :, 1:].mean(axis=0), rtol=1e-14)


# ---------------------------------------------------------------------------------------------
# Validation at the boundary
# ---------------------------------------------------------------------------------------------


def call(u=U4, x=X4, b=B, c=C, backend="numpy"):
    return nswot(u, x, b, c, backend=backend)


@pytest.mark.parametrize(
    ("arguments", "pattern"),
    [
        ({"u": np.ones((N, M))}, r"utilities must have shape \(n, m, T\) or \(S, n, m, T\).*got \(3, 2\)"),
        ({"u": np.ones((1, 1, N, M, T))}, r"utilities must have shape .*got \(1, 1, 3, 2, 4\)"),
        ({"u": np.ones((0, N, M, T))}, r"utilities must list at least one scenario, buyer, good and period, got none"),
        (
            {"x": np.ones((2, N, M, T + 1))},
            r"allocation must have shape \(3, 2, 4\) or \(A, 3, 2, 4\).*got \(2, 3, 2, 5\)",
        ),
        ({"x": np.ones((N, M))}, r"allocation must have shape .*got \(3, 2\)"),
        ({"x": np.ones((0, N, M, T))}, r"allocation must list at least one allocation, got none"),
        ({"b": np.ones(N + 1)}, r"budgets must have shape \(3\).*got \(4,\)"),
        ({"c": np.ones((N, 1))}, r"base_utility must have shape \(3\).*got \(3, 1\)"),
        ({"u": np.full((N, M, T), "a")}, r"utilities must hold real numbers"),
        ({"x": X4 * 1j}, r"allocation must hold real numbers"),
        ({"x": [[[1.0]], [[1.0, 2.0]]]}, r"allocation must be a numeric array"),
        ({"u": np.where(U4 > 0.5, np.nan, U4)}, r"utilities\[\d, \d, \d, \d\] must be a finite number >= 0, got nan"),
        ({"x": np.where(X4 > 0.5, np.inf, X4)}, r"allocation\[\d, \d, \d, \d\] must be a finite number >= 0, got inf"),
        ({"x": -X4}, r"allocation\[0, 0, 0, 0\] must be a finite number >= 0, got -\d"),
        ({"c": -C - 1}, r"base_utility\[0\] must be a finite number >= 0"),
        ({"b": np.zeros(N)}, r"budgets\[0\] must be a finite number > 0, got 0$"),
        ({"backend": "torch"}, r"backend must be 'auto', 'jax' or 'numpy', got 'torch'"),
    ],
)
def test_bad_inputs_are_rejected_naming_the_argument(arguments, pattern):
    with pytest.raises(ValidationError, match=pattern):
        call(**arguments)


@pytest.mark.parametrize("function", [cumulative_utilities, *FUNCTIONS], ids=lambda f: f.__name__)
def test_every_function_validates(function):
    with pytest.raises(ValidationError, match=r"allocation must have shape"):
        function(U4, X4[..., :2], backend="numpy")


def test_inputs_are_not_modified():
    u, x = U4.copy(), X4.copy()
    evaluate_all(u, x, B, C, "numpy")
    np.testing.assert_array_equal(u, U4)
    np.testing.assert_array_equal(x, X4)


# ---------------------------------------------------------------------------------------------
# Backends
# ---------------------------------------------------------------------------------------------


def test_auto_backend_prefers_jax_when_importable():
    assert available_backends()[-1] == "numpy"
    assert available_backends()[0] == ("jax" if HAS_JAX else "numpy")
    np.testing.assert_allclose(call(backend="auto"), call(backend="numpy"), rtol=1e-12)


def test_jax_backend_leaves_the_global_x64_flag_alone():
    jax = pytest.importorskip("jax")
    before = jax.config.jax_enable_x64
    value = call(U4[0], X4[0], backend="jax")  # unbatched: a 0-d result
    assert jax.config.jax_enable_x64 == before
    assert isinstance(value, np.float64)
    np.testing.assert_allclose(value, call(U4[0], X4[0]), rtol=1e-13)


def test_without_jax_numpy_is_used_and_jax_is_refused():
    """Blocking the import of JAX shows that `vfm.utility` does not import it at import time."""
    script = (
        "import sys; sys.modules['jax'] = None\n"
        "import numpy as np\n"
        "import vfm.utility as U\n"
        "from vfm.errors import ValidationError\n"
        "assert U.available_backends() == ('numpy',)\n"
        "assert U.nswot(np.ones((2, 1, 1)), np.ones((2, 1, 1))) == 0.0\n"
        "try:\n"
        "    U.nswot(np.ones((2, 1, 1)), np.ones((2, 1, 1)), backend='jax')\n"
        "except ValidationError as error:\n"
        "    assert 'needs JAX' in str(error)\n"
        "else:\n"
        "    raise AssertionError('backend=jax accepted without JAX')\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120)
