"""`vfm.blas_threads`: the library's work on one BLAS thread, the caller's setting restored."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import vfm
from vfm.blas_threads import blas_threads, one_blas_thread


@pytest.fixture
def two_threads():
    """The caller's BLAS at 2 threads for the test (the suite may run with OPENBLAS_NUM_THREADS=1)."""
    with threadpool_limits(limits=2, user_api="blas"):
        if blas_threads() != 2:
            pytest.skip("this BLAS cannot run 2 threads here")
        yield


def test_inside_one_thread_and_the_callers_setting_restored(two_threads):
    with one_blas_thread():
        assert blas_threads() == 1
        with one_blas_thread():  # nested: still one, and the outer exit restores
            assert blas_threads() == 1
        assert blas_threads() == 1
    assert blas_threads() == 2


def test_a_solve_runs_on_one_thread_and_restores(two_threads, monkeypatch):
    from vfm.nswot import entry as nswot

    seen = []
    real = nswot._attempt

    def watching(*args, **kwargs):
        seen.append(blas_threads())
        return real(*args, **kwargs)

    monkeypatch.setattr(nswot, "_attempt", watching)
    result = vfm.solve(vfm.VolatileFisherMarket.static([[2.0, 1.0], [1.0, 2.0]]))
    assert result.status == vfm.Status.OPTIMAL and seen == [1]
    assert blas_threads() == 2


def test_concurrent_calls_never_leave_the_process_on_one_thread(two_threads):
    # Four threads entering and leaving at once: whatever the interleaving, the last to leave
    # restores the caller's setting (a limiter restored early or twice would leave 1 or 2 wrongly).
    barrier = threading.Barrier(4)
    done = []

    def work(k: int) -> None:
        barrier.wait()
        for _ in range(20):
            with one_blas_thread():
                np.linalg.cholesky(np.eye(8) * (k + 1))
                done.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(done) == 80
    assert blas_threads() == 2
    with one_blas_thread():  # and the next call from this thread still limits
        assert blas_threads() == 1


def test_an_exception_inside_restores(two_threads):
    with pytest.raises(RuntimeError), one_blas_thread():
        raise RuntimeError("inside")
    assert blas_threads() == 2
