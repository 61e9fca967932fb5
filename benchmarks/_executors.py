"""The executors the benchmarks run their tasks through: any `concurrent.futures.Executor`.

``make_executor`` builds the ones the command lines offer: ``serial`` (each task when it is
submitted, for debugging and profiling), ``thread``, ``process`` (a local process pool) and
``dask`` (a `distributed.LocalCluster` with one single-threaded worker process per worker, whose
``Client.get_executor()`` is a `concurrent.futures.Executor`; on a real cluster pass
``Client("scheduler-address").get_executor()`` to the benchmark's ``run`` instead).
"""

from __future__ import annotations

import concurrent.futures as futures
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any


def make_executor(kind: str, workers: int, stack: ExitStack) -> futures.Executor:
    if kind == "serial":
        return stack.enter_context(SerialExecutor())
    if kind == "thread":
        return stack.enter_context(futures.ThreadPoolExecutor(workers))
    if kind == "process":
        return stack.enter_context(futures.ProcessPoolExecutor(workers))
    if kind == "dask":
        from distributed import Client, LocalCluster

        cluster = stack.enter_context(LocalCluster(n_workers=workers, threads_per_worker=1, processes=True))
        client = stack.enter_context(Client(cluster))
        return client.get_executor()
    raise ValueError(f"executor must be one of serial, thread, process, dask; got {kind!r}")


class SerialExecutor(futures.Executor):
    """Runs each task when it is submitted (for debugging and profiling)."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> futures.Future[Any]:
        future: futures.Future[Any] = futures.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as error:  # handed to the caller through the future, as a pool does
            future.set_exception(error)
        return future
