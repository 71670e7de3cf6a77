"""``mpi4py.util.pool``: ``multiprocessing.pool``'s interface over ``mpi4py.futures``.

``Pool`` runs tasks on an ``MPIPoolExecutor`` (the job's other ranks: ``futures``),
``ThreadPool`` on a ``ThreadPoolExecutor``; a subclass may name any executor with
mpi4py's ``map``/``starmap`` as ``Executor``. ``AsyncResult.wait`` on an MPI future waits
in simulated time (the future's own ``exception``), never on a thread event: only the
simulator's thread runs MPI (``threads``).
"""

from __future__ import annotations

import operator
import os
import warnings

from . import futures as _futures

__all__ = ["ApplyResult", "AsyncResult", "MapResult", "Pool", "ThreadPool"]


class Pool:
    """A pool of workers with ``multiprocessing.pool.Pool``'s methods (``maxtasksperchild``
    and ``context`` are not supported: a ``UserWarning`` if given)."""

    Executor = _futures.MPIPoolExecutor

    def __init__(self, processes=None, initializer=None, initargs=(), **kwargs):
        if processes is not None and processes < 1:
            raise ValueError("number of processes must be at least 1")
        if initializer is not None and not callable(initializer):
            raise TypeError("initializer must be a callable")
        for name in ("maxtasksperchild", "context"):
            if kwargs.pop(name, None) is not None:
                warnings.warn(f"argument {name!r} is not supported", stacklevel=2)
        self.executor = self.Executor(
            processes, initializer=initializer, initargs=initargs, **kwargs
        )
        self._collector = None  # the thread pool that builds map_async's lists

    def apply(self, func, args=(), kwds=None):
        return self.executor.submit(func, *args, **(kwds or {})).result()

    def apply_async(self, func, args=(), kwds=None, callback=None, error_callback=None):
        future = self.executor.submit(func, *args, **(kwds or {}))
        return ApplyResult(future, callback, error_callback)

    def map(self, func, iterable, chunksize=None):
        iterable, chunksize = self._chunksize(iterable, chunksize)
        return list(self.imap(func, iterable, chunksize=chunksize))

    def map_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        iterable, chunksize = self._chunksize(iterable, chunksize)
        return self._collect(self.imap(func, iterable, chunksize), callback, error_callback)

    def imap(self, func, iterable, chunksize=1):
        return self.executor.map(func, iterable, chunksize=chunksize)

    def imap_unordered(self, func, iterable, chunksize=1):
        return self.executor.map(func, iterable, chunksize=chunksize, unordered=True)

    def starmap(self, func, iterable, chunksize=None):
        iterable, chunksize = self._chunksize(iterable, chunksize)
        return list(self.istarmap(func, iterable, chunksize=chunksize))

    def starmap_async(self, func, iterable, chunksize=None, callback=None, error_callback=None):
        iterable, chunksize = self._chunksize(iterable, chunksize)
        return self._collect(self.istarmap(func, iterable, chunksize), callback, error_callback)

    def istarmap(self, func, iterable, chunksize=1):
        return self.executor.starmap(func, iterable, chunksize=chunksize)

    def istarmap_unordered(self, func, iterable, chunksize=1):
        return self.executor.starmap(func, iterable, chunksize=chunksize, unordered=True)

    def close(self) -> None:
        self.executor.shutdown(wait=False)

    def terminate(self) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)

    def join(self) -> None:
        self.executor.shutdown(wait=True)
        if self._collector is not None:
            self._collector.shutdown(wait=True)
            self._collector = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _chunksize(self, iterable, chunksize):
        """mpi4py's default: about four chunks per worker."""
        if chunksize is None:
            chunksize = 1
            workers = getattr(self.executor, "_max_workers", 0)
            if workers > 0:
                tasks = operator.length_hint(iterable)
                if tasks == 0:
                    iterable = list(iterable)
                    tasks = len(iterable)
                if tasks > 0:
                    quot, rem = divmod(tasks, workers * 4)
                    chunksize = quot + bool(rem)
        return iterable, chunksize

    def _collect(self, results, callback, error_callback):
        """A ``MapResult`` for the list of ``results``: built by a thread for a thread
        pool, lazily by the waiting rank for an MPI pool (its results need the rank)."""
        if isinstance(self.executor, _futures.MPIPoolExecutor):
            future = _futures.Future()
            future._gather = results
            return MapResult(future, callback, error_callback)
        if self._collector is None:
            cpus = getattr(os, "process_cpu_count", os.cpu_count)() or 1
            self._collector = _futures.ThreadPoolExecutor(min(4, cpus))
        return MapResult(self._collector.submit(list, results), callback, error_callback)


class ThreadPool(Pool):
    """A ``Pool`` of threads (Python only: an MPI call in a task is refused)."""

    Executor = _futures.ThreadPoolExecutor


class AsyncResult:
    """The result of an ``*_async`` call; callbacks run once it is ready."""

    def __init__(self, future, callback=None, error_callback=None):
        self.future = future
        self._callbacks = (callback, error_callback)
        self._called = False
        future.add_done_callback(self._on_done)

    def _on_done(self, future) -> None:
        if self._called:
            return
        self._called = True
        callback, error_callback = self._callbacks
        try:
            exc = future.exception()
        except _futures.CancelledError:
            exc = TimeoutError()
        if exc is not None:
            if error_callback is not None:
                error_callback(exc)
        elif callback is not None:
            callback(future.result())

    def get(self, timeout=None):
        self.wait(timeout)
        if not self.ready():
            raise TimeoutError
        try:
            return self.future.result()
        except _futures.CancelledError:
            raise TimeoutError from None

    def wait(self, timeout=None) -> None:
        future = self.future
        gather = getattr(future, "_gather", None)
        if gather is not None and not future.done():
            future._gather = None
            try:
                future.set_result(list(gather))
            except BaseException as exc:  # noqa: BLE001 - the map's failure is its result's
                future.set_exception(exc)
            return
        try:
            future.exception(timeout)
        except (_futures.TimeoutError, _futures.CancelledError):
            pass

    def ready(self) -> bool:
        return self.future.done()

    def successful(self) -> bool:
        if not self.ready():
            raise ValueError(f"{self!r} not ready")
        try:
            return self.future.exception() is None
        except _futures.CancelledError:
            return False


class ApplyResult(AsyncResult):
    """The result of ``apply_async``."""


class MapResult(AsyncResult):
    """The result of ``map_async``/``starmap_async``."""
