"""``MPIPoolExecutor``, ``MPICommExecutor``, ``ThreadPoolExecutor``, ``get_comm_workers``.

An ``MPIPoolExecutor`` gets its workers when it first needs them (``bootup``, ``submit``,
``num_workers``): the shared pool under ``python -m mpi4py.futures`` at rank 0, else
workers it spawns, as mpi4py 4.1's does. ``MPICommExecutor(comm, root)`` splits ``comm``:
the root gets an executor, the others serve tasks inside ``__enter__`` and get ``None``.
Waits run in simulated time (``_base``).
"""

from __future__ import annotations

import concurrent.futures as _cf
import itertools
import os

from . import _core
from ._base import BrokenExecutor, Executor, Future, as_completed
from ._pool import Pool

__all__ = [
    "MPICommExecutor",
    "MPIPoolExecutor",
    "ProcessPoolExecutor",
    "ThreadPoolExecutor",
    "get_comm_workers",
]

_SPAWN_OPTIONS = ("python_exe", "python_args", "mpi_info")


def _chunks(iterable, chunksize):
    it = iter(iterable)
    while chunk := tuple(itertools.islice(it, chunksize)):
        yield chunk


def _run_chunk(fn, chunk):
    return [fn(*args) for args in chunk]


class _MapMixin:
    """mpi4py's ``map(fn, *iterables, timeout, chunksize, buffersize, unordered)`` and
    ``starmap``, over ``submit`` and the executor's ``_as_completed``."""

    def map(self, fn, *iterables, timeout=None, chunksize=1, buffersize=None, unordered=False):
        return self.starmap(
            fn, zip(*iterables, strict=False), timeout, chunksize, buffersize, unordered
        )

    def starmap(self, fn, iterable, timeout=None, chunksize=1, buffersize=None, unordered=False):
        if chunksize < 1:
            raise ValueError("chunksize must be >= 1.")
        if buffersize is not None:
            if not isinstance(buffersize, int):
                raise TypeError("buffersize must be an integer or None")
            if buffersize < 1:
                raise ValueError("buffersize must be None or > 0")
            if unordered:
                raise ValueError("buffersize must be None if unordered")
        chunks = _chunks(iterable, chunksize)
        pending = list(itertools.islice(chunks, buffersize)) if buffersize else list(chunks)
        futures = [self.submit(_run_chunk, fn, chunk) for chunk in pending]
        return self._results(futures, chunks if buffersize else None, fn, timeout, unordered)

    def _results(self, futures, more, fn, timeout, unordered):
        try:
            if unordered:
                for f in self._as_completed(list(futures), timeout):
                    yield from f.result(0)
                return
            while futures:
                f = futures.pop(0)
                if more is not None and (chunk := next(more, None)) is not None:
                    futures.append(self.submit(_run_chunk, fn, chunk))
                yield from f.result(timeout)
        finally:
            for f in futures:
                f.cancel()


class MPIPoolExecutor(_MapMixin, Executor):
    """An executor whose tasks run on MPI worker processes (see the module docstring).

    Its workers are got and made ready (spawned, sent the program to import, their
    initializer run) at the rank's next wait after the first ``submit``, or at once by
    ``bootup()``/``num_workers``, as mpi4py's manager thread does it after ``submit``
    returns: a task submitted meanwhile waits, and fails with ``BrokenExecutor`` if the
    initializer fails; a ``submit`` after that raises it.

    Keyword options as mpi4py's: ``python_exe``, ``python_args``, ``mpi_info`` (the
    spawn), ``globals``, ``main``, ``path`` (what workers import first), ``use_pkl5``
    (accepted: pickles go whole either way). ``wdir``/``env`` change a worker's working
    directory or environment, which pyopenib's ranks share with the whole job (one
    interpreter): refused by name unless they change nothing."""

    Future = Future
    _as_completed = staticmethod(as_completed)

    def __init__(self, max_workers=None, initializer=None, initargs=(), **kwargs):
        if max_workers is not None:
            max_workers = int(max_workers)
            if max_workers <= 0:
                raise ValueError("max_workers must be greater than 0")
            kwargs["max_workers"] = max_workers
        if initializer is not None:
            if not callable(initializer):
                raise TypeError("initializer must be a callable")
            kwargs["initializer"] = initializer
            kwargs["initargs"] = tuple(initargs)
        _check_shared_state(kwargs)
        self._options = kwargs
        self._shutdown = False
        self._broken: str | None = None
        self._pool: Pool | None = None  # from the first task or bootup to shutdown(wait)
        self._released = False

    def _connect(self):
        """The workers and whether they must import the program first: the shared pool
        at rank 0 under ``python -m mpi4py.futures``, else spawned ones."""
        shared = _core.shared_pool()
        if shared is not None:
            return shared.workers, True
        options = {k: self._options[k] for k in _SPAWN_OPTIONS if k in self._options}
        comm = _core.client_spawn(max_workers=self._options.get("max_workers"), **options)
        return _core.Workers(comm, owned=True), True

    def _release_unused(self) -> None:
        """Shut down before any task: workers this executor was given must stop too."""

    def _get_pool(self) -> Pool:
        if self._pool is None:
            self._pool = Pool(self)
            self._released = True  # the pool's join stops the workers
        return self._pool

    @property
    def _max_workers(self) -> int:
        return self.num_workers

    @property
    def num_workers(self) -> int:
        """How many worker processes serve this executor."""
        if self._broken or self._shutdown:
            return 0
        pool = self._get_pool()
        pool.start()
        return 0 if self._broken else pool.workers.size

    def bootup(self, wait=True):
        """Get the workers now (``wait``) or at the rank's next wait."""
        if self._shutdown:
            raise RuntimeError("cannot bootup after shutdown")
        pool = self._get_pool()
        if wait:
            pool.start()
        else:
            pool.start_later()
        return self

    def submit(self, fn, /, *args, **kwargs):
        if self._broken:
            raise BrokenExecutor(self._broken)
        if self._shutdown:
            raise RuntimeError("cannot submit after shutdown")
        future = self.Future()
        self._get_pool().push(future, (fn, args, kwargs))
        return future

    def shutdown(self, wait=True, *, cancel_futures=False):
        """No more tasks; with ``wait``, return once the submitted ones ran and spawned
        workers stopped (without it, they finish while the rank next waits, or when the
        rank exits)."""
        self._shutdown = True
        pool = self._pool
        if pool is None:
            if wait and not self._released:
                self._released = True  # nothing was submitted: no workers to get
                self._release_unused()
            return
        if cancel_futures:
            pool.cancel()
        if wait:
            pool.join()
            self._pool = None


def _check_shared_state(options: dict) -> None:
    """``wdir`` and ``env`` would change state every rank of the job shares."""
    wdir = options.get("wdir")
    if wdir is not None and os.path.realpath(wdir) != os.path.realpath(os.getcwd()):
        raise ValueError(
            f"MPIPoolExecutor(wdir={wdir!r}): pyopenib's workers share the job's working "
            f"directory {os.getcwd()!r} (the ranks are one interpreter)"
        )
    env = options.get("env")
    if env and any(os.environ.get(k) != str(v) for k, v in dict(env).items()):
        raise ValueError(
            f"MPIPoolExecutor(env={env!r}): pyopenib's workers share the job's environment "
            "(the ranks are one interpreter)"
        )


class _CommExecutor(MPIPoolExecutor):
    """The root's executor of an ``MPICommExecutor``: over the split communicator. Its
    workers run the program already, so they import nothing first (mpi4py's
    ``sync=False``)."""

    def __init__(self, pool, **options):
        super().__init__(**options)
        self._given = pool

    def _connect(self):
        return self._given, False

    def _release_unused(self) -> None:
        self._given.join()


class MPICommExecutor:
    """Context manager: an executor at ``root`` of ``comm``, ``None`` at the workers
    (which serve before their ``with`` body runs)."""

    def __init__(self, comm=None, root=0, **kwargs):
        mpi = _core._mpi()
        if comm is None:
            comm = mpi.COMM_WORLD
        if comm.Is_inter():
            raise ValueError("expecting an intracommunicator")
        if root < 0 or root >= comm.Get_size():
            raise ValueError("expecting root in range(comm.size)")
        self._comm = comm
        self._root = root
        self._options = kwargs
        self._executor = None

    def __enter__(self):
        if self._executor is not None:
            raise RuntimeError("__enter__")
        comm, root = self._comm, self._root
        if _core.shared_pool() is not None:  # under python -m mpi4py.futures, at rank 0
            executor = MPIPoolExecutor(**self._options)  # its pool starts at a wait
        elif comm.Get_size() == 1:
            executor = _CommExecutor(_core.LocalWorker(), **self._options)
        else:
            inter, intra = _core.comm_split(comm, root)
            if comm.Get_rank() != root:
                _core.serve(inter, intra)
                intra.Free()
                return None
            executor = _CommExecutor(_core.Workers(inter, owned=True), **self._options)
        self._executor = executor
        return executor

    def __exit__(self, *exc):
        executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
            return False
        return True


class ThreadPoolExecutor(_MapMixin, _cf.ThreadPoolExecutor):
    """``concurrent.futures.ThreadPoolExecutor`` with mpi4py's ``map``/``starmap``. Its
    threads run Python only (an MPI call there is refused: ``threads``)."""

    _as_completed = staticmethod(_cf.as_completed)

    @property
    def num_workers(self) -> int:
        """How many threads run the tasks."""
        return self._max_workers

    def bootup(self, wait=True):
        """mpi4py's eager start: the threads start as tasks come, so nothing to do."""
        if self._shutdown:
            raise RuntimeError("cannot bootup after shutdown")
        return self


class ProcessPoolExecutor(MPIPoolExecutor):
    """mpi4py's process pool: an ``MPIPoolExecutor`` that always spawns its workers,
    even under ``python -m mpi4py.futures``."""

    def _connect(self):
        options = {k: self._options[k] for k in _SPAWN_OPTIONS if k in self._options}
        comm = _core.client_spawn(max_workers=self._options.get("max_workers"), **options)
        return _core.Workers(comm, owned=True), True


def get_comm_workers():
    """In a task running on a worker: the intracommunicator of all workers."""
    return _core.get_comm_server()
