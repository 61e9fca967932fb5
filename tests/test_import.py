"""`import vfm` is light: NumPy and SciPy only; everything else loads when first used."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Packages that load only with the feature that needs them.
HEAVY = ("cvxpy", "clarabel", "numba", "llvmlite", "jax", "matplotlib", "threadpoolctl")


def _loaded_after(code: str) -> set[str]:
    """The top-level packages loaded by a fresh interpreter after `code`."""
    script = f"{code}\nimport sys, json\nprint(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}})))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_import_vfm_loads_no_solver_compiler_or_accelerator_package():
    assert not _loaded_after("import vfm") & set(HEAVY)


def test_the_planner_loads_neither_cvxpy_nor_jax():
    assert not _loaded_after("from vfm.planner import Policy") & {"cvxpy", "jax", "matplotlib"}


@pytest.mark.parametrize("name", ["check", "cluster", "planner", "solve", "solve_per_period", "available_solvers"])
def test_each_lazy_name_loads_on_first_use(name):
    import vfm

    assert getattr(vfm, name) is not None
    assert name in dir(vfm)


def test_an_unknown_attribute_is_an_attribute_error():
    import vfm

    with pytest.raises(AttributeError, match="no_such_name"):
        vfm.no_such_name  # noqa: B018
