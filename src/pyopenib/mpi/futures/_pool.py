"""One executor's pool, as mpi4py's ``_core.Pool``: what an ``MPIPoolExecutor`` holds from
its first task (or ``bootup``) until ``shutdown(wait=True)`` returns.

mpi4py's pool is a manager thread, a queue of the tasks not yet handed to it and an
event set once the workers are ready; programs and mpi4py's own tests look at
``executor._pool.thread``, ``.queue`` and ``.event`` and call ``.cancel()`` and
``.join()``. Here no thread may call MPI (``_base``), so the manager's work (get the
workers, hand them the held tasks, collect results, stop them) is done by the rank's
waits, and ``thread`` is that manager: its ``join`` waits for the work to end, in
simulated time, as ``Thread.join`` waits for mpi4py's thread.
"""

from __future__ import annotations

import collections
import threading
import warnings

from . import _core
from ._base import BrokenExecutor, wait_until

__all__ = ["Pool", "use_pkl5"]


class TaskQueue(collections.deque):
    """The tasks submitted before the workers are ready, oldest first (mpi4py's
    ``TaskQueue``: ``pop`` of an empty queue raises ``IndexError``, a ``LookupError``)."""

    put = collections.deque.append
    pop = collections.deque.popleft


class Manager:
    """``Pool.thread``: the pool's manager, whose work the rank's waits do (module
    docstring); alive until the pool has ended."""

    def __init__(self, pool: Pool):
        self._pool = pool

    def is_alive(self) -> bool:
        return not self._pool.ended

    def join(self) -> None:
        """Wait until the pool's tasks ran and its spawned workers stopped."""
        self._pool.join()


class Pool:
    """An executor's tasks and workers: ``queue`` holds the tasks until ``start`` gets
    the workers (at the rank's next wait, or at once for ``bootup``/``num_workers``),
    then they go to the workers as they come; ``event`` is set once the workers are
    ready or failed (the executor is then broken, its held tasks fail with
    ``BrokenExecutor``); ``join`` ends the pool."""

    def __init__(self, executor):
        self.executor = executor
        self.queue = TaskQueue()
        self.event = threading.Event()
        self.thread = Manager(self)
        self.futures: set = set()  # this executor's futures not yet done
        self.workers = None  # _core.Workers or _core.LocalWorker, once started
        self.started = False
        self.ended = False

    def push(self, future, task) -> None:
        self.futures.add(future)
        future.add_done_callback(self.futures.discard)
        if self.workers is not None:
            self.workers.push(future, task)
        elif self.started:  # the workers failed to start
            self._fail(future)
        else:
            self.queue.put((future, task))
            self.start_later()

    def start_later(self) -> None:
        starting = _core.rank_state().starting
        if not self.started and self not in starting:
            starting.append(self)

    def start(self) -> None:
        """Get the workers ready and hand them the held tasks (once)."""
        if self.started:
            return
        self.started = True
        starting = _core.rank_state().starting
        if self in starting:
            starting.remove(self)
        executor = self.executor
        options = executor._options
        try:
            workers, sync = executor._connect()
        except Exception as exc:  # noqa: BLE001 - mpi4py's manager breaks the pool on it
            self._broken(f"{type(exc).__name__}: {exc}")
            return
        self.workers = workers
        if sync:
            use_pkl5(options)
            workers.sync(options)
        broken = workers.broken
        if broken is None and not workers.initialize(options):
            broken = "initializer failed"
        if broken is not None:
            self._broken(broken)
            return
        self.event.set()
        while self.queue:
            workers.push(*self.queue.pop())

    def _broken(self, message: str) -> None:
        self.executor._broken = message
        self.event.set()
        self.cancel(self._fail)

    def _fail(self, future) -> None:
        if future.set_running_or_notify_cancel():
            future.set_exception(BrokenExecutor(self.executor._broken))

    def cancel(self, handler=None) -> None:
        """Cancel this executor's tasks no worker has begun (or give each held one to
        ``handler``, mpi4py's signature)."""
        while self.queue:
            future, _ = self.queue.pop()
            if handler is not None:
                handler(future)
            elif future.cancel():
                future.set_running_or_notify_cancel()
        if self.workers is not None and handler is None:
            self.workers.cancel(self.futures)

    def join(self) -> None:
        """Let the tasks finish; workers spawned for this executor then stop (a shared
        pool's serve on)."""
        if self.ended:
            return
        self.start()
        workers = self.workers
        if workers is not None:
            if workers.owned:
                workers.join()
            else:
                wait_until(lambda: not self.futures, None, "MPIPoolExecutor.shutdown")
        self.ended = True


def use_pkl5(options: dict) -> None:
    """``use_pkl5``, else ``MPI4PY_FUTURES_USE_PKL5`` (a ``RuntimeWarning`` naming an
    unexpected value, which counts as false), into ``options``, as mpi4py reads it when
    it first syncs the workers. Accepted either way: pickles travel whole on this
    intercommunicator, which delivers the same objects."""
    if options.get("use_pkl5") is not None:
        return
    value = _core.os_environ_get("USE_PKL5")
    if value is None:
        return
    if value.lower() in ("false", "no", "off", "n", "0"):
        options["use_pkl5"] = False
    elif value.lower() in ("true", "yes", "on", "y", "1"):
        options["use_pkl5"] = True
    else:
        warnings.warn(
            f"environment variable MPI4PY_FUTURES_USE_PKL5: unexpected value {value!r}",
            RuntimeWarning,
            stacklevel=1,
        )
        options["use_pkl5"] = False
