"""The backend registry: what is installed, what is chosen, and what a backend refuses."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import vfm
from vfm import VolatileFisherMarket
from vfm.errors import UnknownSolverError, UnsupportedMarketError
from vfm.solvers import Capabilities, CvxpyConicBackend, registry


def test_clarabel_is_installed_and_the_default():
    assert vfm.available_solvers()[0] == "clarabel"
    assert registry.select(VolatileFisherMarket.static([[1.0]])).name == "clarabel"


def test_backend_declares_what_it_lacks():
    capped = VolatileFisherMarket.static([[1.0, 1.0]], caps=[[0.5, np.inf]], base_utility=[1.0])
    limited = Capabilities(caps=False, base_utility=False, several_goods_per_period=False)
    assert limited.unsupported(capped) == ["caps", "base_utility", "several_goods_per_period"]
    assert Capabilities().unsupported(capped) == []


@pytest.fixture
def limited_backend():
    clarabel = registry._REGISTRY["clarabel"]
    backend = dataclasses.replace(clarabel, name="limited", capabilities=Capabilities(caps=False))
    saved = dict(registry._REGISTRY)
    registry.register(backend, preferred=True)
    yield backend
    registry._REGISTRY.clear()
    registry._REGISTRY.update(saved)


def test_default_skips_a_backend_that_cannot_handle_the_market(limited_backend):
    plain = VolatileFisherMarket.static([[1.0]])
    capped = VolatileFisherMarket.static([[1.0]], caps=[[0.5]])
    assert registry.select(plain).name == "limited"
    assert registry.select(capped).name == "clarabel"
    with pytest.raises(UnsupportedMarketError, match="solver='limited' does not support caps"):
        vfm.solve(capped, "limited")


def test_known_but_missing_solver_is_reported():
    missing = CvxpyConicBackend("nowhere", "NOT_A_CVXPY_SOLVER")
    saved = dict(registry._REGISTRY)
    registry.register(missing)
    try:
        assert "nowhere" not in vfm.available_solvers()
        with pytest.raises(UnknownSolverError, match="known but not installed"):
            vfm.solve(VolatileFisherMarket.static([[1.0]]), "nowhere")
    finally:
        registry._REGISTRY.clear()
        registry._REGISTRY.update(saved)
