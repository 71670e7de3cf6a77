"""Independent simulations side by side: inline, in local worker processes, or on a Dask
cluster (``dask[distributed]``, the optional extra).

``Workers.map`` returns results in input order whatever ran them, and every task is a
deterministic simulation that reads no environment, so a tool built on it (``bench``
sweeps, ``check`` explorations) prints the same with any executor. Tasks and their
arguments must be picklable: module-level functions and plain objects.

Ctrl-C: worker processes ignore SIGINT (the terminal sends it to the whole process group),
so only the parent sees it; leaving the ``with`` block by any exception terminates the
workers at once instead of waiting for their tasks, so an interrupted ``check --jobs 2``
or ``bench`` exits promptly and leaves no process behind.
"""

from __future__ import annotations

import multiprocessing
import signal

from .errors import PyopenibError, register_topics

__all__ = ["Workers"]

register_topics(
    {
        "workers-dask-missing": (
            "--dask needs dask.distributed, which is not installed ({reason}); install the "
            "optional extra: pip install 'pyopenib[dask]'"
        ),
        "workers-dask-connect": "--dask {address}: cannot reach the Dask scheduler ({reason})",
        "workers-bad-jobs": "--jobs {jobs}: the number of workers must be at least 1",
    }
)


class Workers:
    """``with Workers(jobs, dask) as w: w.map(fn, items)``. ``jobs=1`` runs inline;
    ``dask`` is a scheduler address, or ``"local"`` for a local cluster of ``jobs``
    single-threaded worker processes. The local pool starts at the first ``map`` with
    more than one task and lives as long as the ``with`` block, so an exploration that
    maps batch after batch starts its processes once, and one that never maps a batch
    (check's searches forking their executions, ``check/forking.py``) stays a
    single-threaded process: a started pool runs threads, and fork needs none."""

    def __init__(self, jobs: int = 2, dask: str | None = None):
        if jobs < 1:
            raise PyopenibError("workers-bad-jobs", jobs=jobs)
        self.jobs = jobs
        self.dask = dask
        self._pool = None
        self._client = None
        self._cluster = None

    @property
    def where(self) -> str:
        """Where the tasks run, for a tool's header line."""
        if self.dask is not None:
            return f"Dask ({self.dask})"
        return "inline" if self.jobs == 1 else f"{self.jobs} processes"

    def __enter__(self) -> Workers:
        if self.dask is not None:
            self._connect_dask()
        return self

    def _start_pool(self) -> None:
        """Fork the workers with SIGINT blocked, so that none can receive a Ctrl-C before
        it ignores SIGINT (a worker dying of KeyboardInterrupt while starting left
        ``terminate`` waiting for it); a Ctrl-C meanwhile waits and is raised here, once
        the pool exists and can be stopped."""
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self._pool = multiprocessing.Pool(self.jobs, initializer=_ignore_sigint)
        finally:
            try:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            except BaseException:
                self.__exit__(KeyboardInterrupt, None, None)
                raise

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._pool is not None:
            if exc_type is None:
                self._pool.close()
            else:
                self._pool.terminate()  # SIGTERM now: a task may run for minutes
            self._pool.join()
        if self._client is not None:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def map(self, fn, items) -> list:
        items = list(items)
        if self._client is not None:
            return self._client.gather(self._client.map(fn, items, pure=False))
        if self.jobs == 1 or len(items) <= 1:
            return [fn(item) for item in items]
        if self._pool is None:
            self._start_pool()
        return self._pool.map(fn, items, chunksize=1)

    def _connect_dask(self) -> None:
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError as exc:
            raise PyopenibError("workers-dask-missing", reason=str(exc)) from None
        try:
            if self.dask == "local":
                self._cluster = LocalCluster(
                    n_workers=self.jobs,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                )
                self._client = Client(self._cluster)
            else:
                self._client = Client(self.dask, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise PyopenibError(
                "workers-dask-connect", address=self.dask, reason=str(exc)
            ) from None


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (it terminates the pool).
    The worker was forked with SIGINT blocked; ignored from now on, it may be unblocked."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
