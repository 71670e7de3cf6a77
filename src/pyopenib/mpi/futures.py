"""``mpi4py.futures`` on the job's fixed ranks: MPIPoolExecutor, MPICommExecutor, get_comm_workers.

No ``Spawn``: the workers are the other ranks of the communicator, as with ``mpiexec -n N
python -m mpi4py.futures prog.py``. ``MPICommExecutor(comm, root)`` is mpi4py's: the root
gets an executor, the others serve tasks inside ``__enter__`` and get ``None``.
``MPIPoolExecutor()`` serves ``COMM_WORLD`` from rank 0; on any other rank it serves and
then ends the rank (``SystemExit(0)``), since under ``-m mpi4py.futures`` a worker never
runs the program. A program whose code before the executor has effects (prints) shows them
on every rank here, once on the root under mpirun.

Why the root's waits are this module's: only the simulator's thread may call MPI
(``threads``), so there is no manager thread as in mpi4py. Tasks go out when submitted
and results come in while the root waits on one of this module's calls: ``Future.result``
and ``exception``, ``wait``, ``as_completed``, ``Executor.map`` and ``shutdown``. Each
of those waits in simulated time; ``concurrent.futures.wait``/``as_completed`` on these
futures would block the thread, and the job with it. A root alone (size 1) runs its tasks
itself, one at a time, when it waits.
"""

from __future__ import annotations

import concurrent.futures as _cf
import itertools
import sys
from concurrent.futures import (
    ALL_COMPLETED,
    FIRST_COMPLETED,
    FIRST_EXCEPTION,
    BrokenExecutor,
    CancelledError,
    Executor,
    InvalidStateError,
    TimeoutError,  # noqa: A004 - mpi4py re-exports it under this name
)

from . import context

__all__ = [
    "ALL_COMPLETED",
    "FIRST_COMPLETED",
    "FIRST_EXCEPTION",
    "BrokenExecutor",
    "CancelledError",
    "Executor",
    "Future",
    "InvalidStateError",
    "MPICommExecutor",
    "MPIPoolExecutor",
    "ThreadPoolExecutor",
    "TimeoutError",
    "as_completed",
    "get_comm_workers",
    "wait",
]

_TASK, _RESULT = 1, 2  # tags on the executor's own communicator (a Dup)
_PS_PER_S = 1_000_000_000_000


def _mpi():
    return sys.modules["mpi4py.MPI"]


def _wait_until(done, timeout, call) -> bool:
    """Wait in simulated time until ``done()``; False if ``timeout`` simulated seconds
    passed first."""
    ctx = context.current()
    if timeout is None:
        ctx.wait_for(done, call)
        return True
    deadline = ctx.sim.now + int(timeout * _PS_PER_S)
    while not done():
        if ctx.sim.now >= deadline:
            return False
        ctx.poll()
    return True


class Future(_cf.Future):
    """A task's future whose waits drive its executor (see the module docstring)."""

    def __init__(self, executor):
        super().__init__()
        self._executor = executor

    def _done_now(self) -> bool:
        self._executor._pump(run_here=True)
        return self.done()

    def _done_yet(self) -> bool:
        self._executor._pump()
        return self.done()

    def _wait(self, timeout) -> None:
        # A wait with a timeout never starts a task here: it could not stop it in time.
        done = self._done_now if timeout is None else self._done_yet
        if not _wait_until(done, timeout, "MPIPoolExecutor future"):
            raise TimeoutError

    def result(self, timeout=None):
        if not self.done():
            self._wait(timeout)
        return super().result(0)

    def exception(self, timeout=None):
        if not self.done():  # a done callback asks too: it must not run the next task
            self._wait(timeout)
        return super().exception(0)


def wait(fs, timeout=None, return_when=ALL_COMPLETED):
    """``concurrent.futures.wait`` for any futures, this module's waiting in simulated time."""
    fs = set(fs)

    def done():
        for f in fs:
            if isinstance(f, Future):
                f._executor._pump(run_here=timeout is None)
        finished = [f for f in fs if f.done()]
        if return_when == FIRST_COMPLETED:
            return bool(finished)
        if return_when == FIRST_EXCEPTION and any(
            not f.cancelled() and f.exception(0) is not None for f in finished
        ):
            return True
        return len(finished) == len(fs)

    _wait_until(done, timeout, "futures.wait")
    finished = {f for f in fs if f.done()}
    return _cf._base.DoneAndNotDoneFutures(finished, fs - finished)


def as_completed(fs, timeout=None):
    """Yield futures as they finish (ties in submission order), waiting in simulated time."""
    pending = list(dict.fromkeys(fs))
    while pending:
        done, _ = wait(pending, timeout, FIRST_COMPLETED)
        if not done:
            raise TimeoutError(f"{len(pending)} (of {len(pending)}) futures unfinished")
        for f in [f for f in pending if f in done]:
            pending.remove(f)
            yield f


def _chunks(iterable, chunksize):
    it = iter(iterable)
    while chunk := list(itertools.islice(it, chunksize)):
        yield chunk


def _run_chunk(fn, chunk):
    return [fn(*args) for args in chunk]


class _MapMixin:
    """mpi4py's ``map(fn, *iterables, timeout, chunksize, unordered)`` and ``starmap``,
    over ``submit`` and the executor's ``_as_completed``."""

    def map(self, fn, *iterables, timeout=None, chunksize=1, unordered=False):
        return self.starmap(fn, zip(*iterables, strict=False), timeout, chunksize, unordered)

    def starmap(self, fn, iterable, timeout=None, chunksize=1, unordered=False):
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1.")
        futures = [self.submit(_run_chunk, fn, chunk) for chunk in _chunks(iterable, chunksize)]
        order = self._as_completed(futures, timeout) if unordered else futures

        def results():
            try:
                for f in order:
                    yield from f.result(timeout)
            finally:
                for f in futures:
                    f.cancel()

        return results()


class ThreadPoolExecutor(_MapMixin, _cf.ThreadPoolExecutor):
    """``concurrent.futures.ThreadPoolExecutor`` with mpi4py's ``map``/``starmap``. Its
    threads run Python only (an MPI call there is refused: ``threads``)."""

    _as_completed = staticmethod(_cf.as_completed)


_WORKERS: dict = {}
"""Each serving rank's communicator of workers (``get_comm_workers``), by rank context."""


def get_comm_workers():
    """In a task running on a worker: the intracommunicator of all workers."""
    comm = _WORKERS.get(context.current())
    return _mpi().COMM_NULL if comm is None else comm


class _Pool(_MapMixin, Executor):
    """The root's side: tasks out to idle workers, results back (see the module docstring)."""

    _as_completed = staticmethod(as_completed)

    def _start(self, comm, max_workers, initializer, initargs):
        self._comm = comm
        workers = [r for r in range(comm.Get_size()) if r != comm.Get_rank()]
        self._workers = workers[:max_workers] if max_workers else workers
        self._idle = list(self._workers)
        self._queue: list = []  # (future, fn, args, kwargs) not yet sent
        self._running: dict = {}  # worker rank -> (future, receive request)
        self._shutdown = False
        if initializer is not None and not self._workers:
            initializer(*initargs)

    def submit(self, fn, /, *args, **kwargs):
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        future = Future(self)
        self._queue.append((future, fn, args, kwargs))
        self._pump()
        return future

    def _pump(self, run_here: bool = False) -> None:
        """Collect finished results, send queued tasks to idle workers; with no workers
        and ``run_here`` (a wait without timeout), run the queued tasks here."""
        for worker, (future, req) in list(self._running.items()):
            done, reply = req.test()
            if done:
                del self._running[worker]
                self._idle.append(worker)
                ok, value = reply
                if not future.cancelled():
                    (future.set_result if ok else future.set_exception)(value)
        while self._queue and (self._idle or (run_here and not self._workers)):
            future, fn, args, kwargs = self._queue.pop(0)
            if not future.set_running_or_notify_cancel():
                continue
            if not self._workers:
                _run_task(future, fn, args, kwargs)
                continue
            worker = self._idle.pop(0)
            self._comm.send((fn, args, kwargs), dest=worker, tag=_TASK)
            self._running[worker] = (future, self._comm.irecv(source=worker, tag=_RESULT))

    def shutdown(self, wait=True, *, cancel_futures=False):
        if cancel_futures:
            for future, *_ in self._queue:
                future.cancel()
        self._shutdown = True
        if wait and self._comm is not None:
            _wait_until(self._idle_now, None, "MPIPoolExecutor.shutdown")
            comm, self._comm = self._comm, None
            for rank in range(comm.Get_size()):
                if rank != comm.Get_rank():
                    comm.send(None, dest=rank, tag=_TASK)
            comm.Free()

    def _idle_now(self) -> bool:
        self._pump(run_here=True)
        return not self._queue and not self._running

    @property
    def _max_workers(self) -> int:
        return max(1, len(self._workers))


def _run_task(future, fn, args, kwargs) -> None:
    """Run a task at a root without workers, which serves it as mpi4py's size-1 pool does
    (``get_comm_workers()`` is ``COMM_SELF`` meanwhile)."""
    ctx = context.current()
    _WORKERS[ctx] = _mpi().COMM_SELF
    try:
        value = fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - the task's failure is its future's
        del _WORKERS[ctx]
        future.set_exception(exc)
    else:
        del _WORKERS[ctx]
        future.set_result(value)


def _serve(comm, root, initializer, initargs, workers_comm) -> None:
    """A worker's loop: run tasks from ``root`` until it sends ``None``."""
    ctx = context.current()
    _WORKERS[ctx] = workers_comm
    try:
        if initializer is not None:
            initializer(*initargs)
        while (task := comm.recv(source=root, tag=_TASK)) is not None:
            fn, args, kwargs = task
            try:
                reply = (True, fn(*args, **kwargs))
            except BaseException as exc:  # noqa: BLE001 - returned to the root
                reply = (False, exc)
            comm.send(reply, dest=root, tag=_RESULT)
    finally:
        del _WORKERS[ctx]
        workers_comm.Free()
        comm.Free()


def _split(comm, root):
    """Collective over ``comm``: the executor's own communicator (a Dup) and, at a worker,
    the workers' intracommunicator (``COMM_NULL`` at the root)."""
    if comm.Is_inter():
        raise ValueError("expecting an intracommunicator")
    if not 0 <= root < comm.Get_size():
        raise ValueError("expecting root in range(comm.size)")
    own = comm.Dup()
    rank = own.Get_rank()
    return own, own.Split(_mpi().UNDEFINED if rank == root else 0, rank)


class MPIPoolExecutor(_Pool):
    """The pool of ``COMM_WORLD``'s ranks but 0: an executor on rank 0; on a worker rank
    the constructor serves, then ends the rank (see the module docstring)."""

    def __init__(self, max_workers=None, initializer=None, initargs=(), **kwargs):
        if max_workers is not None and max_workers < 1:
            raise ValueError("max_workers must be greater than 0")
        own, workers_comm = _split(_mpi().COMM_WORLD, 0)
        if own.Get_rank() != 0:
            _serve(own, 0, initializer, initargs, workers_comm)
            raise SystemExit(0)
        self._start(own, max_workers, initializer, initargs)


class MPICommExecutor:
    """Context manager: an executor at ``root`` of ``comm``, ``None`` at the workers
    (which serve before their ``with`` body runs)."""

    def __init__(self, comm=None, root=0, **kwargs):
        self._comm = _mpi().COMM_WORLD if comm is None else comm
        if self._comm.Is_inter():
            raise ValueError("expecting an intracommunicator")
        if not 0 <= root < self._comm.Get_size():
            raise ValueError("expecting root in range(comm.size)")
        self._root = root
        self._options = kwargs
        self._executor = None

    def __enter__(self):
        if self._executor is not None:
            raise RuntimeError("__enter__")
        opts = self._options
        own, workers_comm = _split(self._comm, self._root)
        init, initargs = opts.get("initializer"), opts.get("initargs", ())
        if own.Get_rank() != self._root:
            _serve(own, self._root, init, initargs, workers_comm)
            return None
        self._executor = _Pool()
        self._executor._start(own, opts.get("max_workers"), init, initargs)
        return self._executor

    def __exit__(self, *exc):
        if self._executor is not None:
            self._executor.shutdown(wait=True)
        self._executor = None
        return False
