"""The client and server of ``mpi4py.futures``: where workers come from, and what travels.

Workers and the client meet on an intercommunicator whose remote group, seen from the
client, is the workers (mpi4py's design):

* ``MPIPoolExecutor`` in a plain program spawns them: ``COMM_SELF.Spawn(sys.executable,
  ["-m", "mpi4py.futures.server"], max_workers)``; the children serve their parent
  (``server_main``) and ``get_comm_workers()`` is their ``COMM_WORLD``;
* under ``python -m mpi4py.futures prog.py`` (``SharedPoolCtx``) rank 0 of ``COMM_WORLD``
  runs the program and the other ranks serve it: ``comm_split`` makes the
  intercommunicator, ``get_comm_workers()`` is the workers' own intracommunicator;
* ``MPICommExecutor(comm, root)`` splits ``comm`` the same way for the ``with`` body.

The protocol, on the intercommunicator: the client sends ``(kind, payload)`` with tag
``_TASK`` to one worker and that worker answers ``(ok, value, traceback)`` with tag
``_RESULT``; ``None`` stops a worker. Kinds: ``"sync"`` (first, to every worker: the
client's ``__main__`` to import as ``__worker__``, as mpi4py does, so tasks pickled by
reference to the program's functions resolve), ``"init"`` (an executor's initializer,
to every worker) and ``"task"``. A task's failure comes back as its exception with a
``RemoteTraceback`` holding the worker's traceback as its ``__cause__``.

Module state is per rank (``_RankState``): the ranks share this module, as every rank
would import mpi4py from the same site-packages, but each rank is its own process.
"""

from __future__ import annotations

import collections
import os
import pickle
import runpy
import sys
import threading
import traceback
import types
import warnings
import weakref

from .. import context

__all__ = [
    "MAIN_RUN_NAME",
    "LocalWorker",
    "RemoteTraceback",
    "SharedPoolCtx",
    "Workers",
    "client_spawn",
    "comm_split",
    "get_comm_server",
    "os_environ_get",
    "pump_all",
    "serialized",
    "serve",
    "server_main",
    "setup_mpi_threads",
    "shared_pool",
    "threads_working",
]

_TASK, _RESULT = 1, 2
MAIN_RUN_NAME = "__worker__"
"""The name a worker imports the client's ``__main__`` under (mpi4py's), so its
``if __name__ == "__main__":`` block does not run there."""


def _mpi():
    return sys.modules["mpi4py.MPI"]


class RemoteTraceback(Exception):
    """A worker's traceback, the ``__cause__`` of a failed task's exception (mpi4py's)."""

    def __init__(self, tb: str):
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


def serialized(function):
    """``function`` holding ``serialized.lock`` while it runs, once the lock is set
    (mpi4py's: below ``THREAD_MULTIPLE`` its manager threads' MPI calls hold it).
    pyopenib's pools take it nowhere: they have no manager thread, the rank's own waits
    make their MPI calls (``_base``)."""
    if serialized.lock is None:
        return function

    def wrapper(*args, **kwargs):
        with serialized.lock:
            return function(*args, **kwargs)

    return wrapper


serialized.lock = None


def setup_mpi_threads() -> None:
    """mpi4py's check of the rank's thread level before a pool starts its manager
    thread: ``serialized`` gets its lock below ``THREAD_MULTIPLE``, and below
    ``THREAD_SERIALIZED`` a ``RuntimeWarning`` says the level is too low. pyopenib's
    pools start no thread, so only a program calls it."""
    mpi = _mpi()
    state = rank_state()
    if state.thread_level is None:
        state.thread_level = mpi.Query_thread()
        if state.thread_level < mpi.THREAD_MULTIPLE and serialized.lock is None:
            serialized.lock = threading.Lock()
    if state.thread_level < mpi.THREAD_SERIALIZED:
        warnings.warn(
            "the level of thread support in MPI should be at least MPI_THREAD_SERIALIZED",
            RuntimeWarning,
            stacklevel=2,
        )


class _RankState:
    """One rank's futures state: its live client ends (pumped by every wait), the
    executors to start at its next wait, the workers' communicator while it serves
    (``get_comm_workers``), its shared pool, its thread level once checked."""

    __slots__ = ("clients", "comm_server", "shared", "starting", "thread_level")

    def __init__(self):
        self.clients: list = []
        self.starting: list = []  # executors' pools whose workers are got at the next wait
        self.comm_server = None
        self.shared: SharedPoolCtx | None = None
        self.thread_level = None  # what setup_mpi_threads found


_RANKS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def rank_state() -> _RankState:
    ctx = context.current()
    state = _RANKS.get(ctx)
    if state is None:
        state = _RANKS[ctx] = _RankState()
        ctx.at_exit.append(_join_clients)
    return state


def _join_clients() -> None:
    """At the rank's exit: finish every executor's queued tasks and stop its workers,
    as mpi4py's ``atexit`` join of its manager threads does."""
    state = _RANKS.get(context.current())
    while state is not None and state.starting:
        state.starting[0].start()
    while state is not None and state.clients:
        state.clients[-1].join()


def pump_all() -> None:
    """Collect the results that came in and send queued tasks to idle workers, for every
    live client end of the calling rank (see ``_base``).

    One ``Testsome`` over every running task's receive, so a result that arrives while
    the test progresses is seen by that same test; then the sends, and again if any was
    sent, since a send that waits lets results in: the caller's wait may then sleep
    until the next arrival without missing one that already came."""
    state = _RANKS.get(context.current())
    if state is None:
        return
    while state.starting:
        state.starting[0].start()
    while True:
        running = [(end, w) for end in state.clients for w in end.running]
        if running:
            reqs = [end.running[w][1] for end, w in running]
            indices, replies = _mpi().Request.testsome(reqs)
            for i, reply in zip(indices or (), replies or (), strict=True):
                end, worker = running[i]
                end.finish(worker, reply)
        if not any([end.dispatch() for end in list(state.clients)]):
            return


def threads_working() -> bool:
    """Whether a task of the calling rank runs in one of its threads (``LocalWorker``):
    its end is no message, so a wait for it polls rather than sleeping until the PML
    has something."""
    state = _RANKS.get(context.current())
    return state is not None and any(
        isinstance(end, LocalWorker) and end.active is not None for end in state.clients
    )


def get_comm_server():
    """The workers' intracommunicator, in a task on a worker (``get_comm_workers``)."""
    comm = rank_state().comm_server
    if comm is None:
        raise RuntimeError("communicator is not accessible")
    return comm


def _cancelled(queue, futures) -> collections.deque:
    """``queue`` without the tasks of ``futures``, which are cancelled and notified (so a
    ``wait`` counts them done, as mpi4py's ``Pool.cancel`` leaves them)."""
    kept = collections.deque()
    for future, task in queue:
        if future in futures and future.cancel():
            future.set_running_or_notify_cancel()
        else:
            kept.append((future, task))
    return kept


def _failure(exc: BaseException):
    return (False, exc, "".join(traceback.format_exception(exc)))


def _pack(reply) -> bytes:
    """A worker's reply as bytes, so the client unpickles each reply by itself (one that
    fails to load fails its own future, not the client's wait); a reply that does not
    pickle becomes its pickling error."""
    try:
        return pickle.dumps(reply, pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # noqa: BLE001 - the client gets the failure instead
        return pickle.dumps(_failure(exc), pickle.HIGHEST_PROTOCOL)


def _unpack(data: bytes):
    try:
        return pickle.loads(data)
    except Exception as exc:  # noqa: BLE001 - the reply's failure is its future's
        return _failure(exc)


def _settle(future, data: bytes) -> None:
    if future.cancelled():
        return
    _settle_reply(future, _unpack(data))


def _settle_reply(future, reply) -> None:
    if future.cancelled():
        return
    ok, value, tb = reply
    if ok:
        future.set_result(value)
    else:
        value.__cause__ = RemoteTraceback(tb)
        future.set_exception(value)


class Workers:
    """The client's end of a set of workers (the remote group of ``comm``): tasks queued
    by any executor on it go to idle workers in order; results come back as each one's
    receive completes. ``owned``: stopped (and the communicator disconnected) at
    ``join``; a shared pool's outlives its executors."""

    def __init__(self, comm, owned: bool):
        self.comm = comm
        self.size = comm.Get_remote_size()
        self.owned = owned
        self.idle = collections.deque(range(self.size))
        self.queue: collections.deque = collections.deque()  # (future, task)
        self.running: dict = {}  # worker -> (future, receive request)
        self.synced = False
        self.broken: str | None = None
        rank_state().clients.append(self)

    def push(self, future, task) -> None:
        self.queue.append((future, task))
        self.dispatch()

    def finish(self, worker: int, reply) -> None:
        future, _ = self.running.pop(worker)
        self.idle.append(worker)
        _settle(future, reply)

    def dispatch(self) -> bool:
        """Send queued tasks to idle workers; whether any was sent."""
        sent = False
        while self.queue and self.idle:
            future, task = self.queue.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            worker = self.idle.popleft()
            sent = True
            try:
                self.comm.send(("task", task), dest=worker, tag=_TASK)
            except BaseException as exc:  # noqa: BLE001 - an unpicklable task fails its future
                self.idle.appendleft(worker)
                future.set_exception(exc)
                continue
            self.running[worker] = (future, self.comm.irecv(source=worker, tag=_RESULT))
        return sent

    def busy(self) -> bool:
        return bool(self.queue or self.running)

    def everywhere(self, kind: str, payload) -> list:
        """Send ``(kind, payload)`` to every worker once all are idle; their replies."""
        from ._base import wait_until

        wait_until(lambda: not self.running, None, "mpi4py.futures (workers busy)")
        for worker in range(self.size):
            self.comm.send((kind, payload), dest=worker, tag=_TASK)
        return [_unpack(self.comm.recv(source=w, tag=_RESULT)) for w in range(self.size)]

    def sync(self, options: dict) -> None:
        """The first message to the workers: what to import and where (``_sync``)."""
        if not self.synced:
            self.synced = True
            replies = self.everywhere("sync", _sync_data(options))
            failed = [r for r in replies if not r[0]]
            if failed:
                self.broken = f"worker start-up failed: {failed[0][1]!r}"

    def initialize(self, options: dict) -> bool:
        initializer = options.get("initializer")
        if initializer is None:
            return True
        task = (initializer, options.get("initargs", ()), options.get("initkwargs", {}))
        return all(ok for ok, _, _ in self.everywhere("init", task))

    def cancel(self, futures) -> None:
        self.queue = _cancelled(self.queue, futures)

    def join(self) -> None:
        """Finish what is queued; an owned end then stops its workers."""
        from ._base import wait_until

        wait_until(lambda: not self.busy(), None, "mpi4py.futures (join)")
        if self in rank_state().clients:
            rank_state().clients.remove(self)
        if self.owned:
            for worker in range(self.size):
                self.comm.send(None, dest=worker, tag=_TASK)
            self.comm.Disconnect()


class LocalWorker:
    """A root with no other rank (the shared pool of ``python -m mpi4py.futures`` on one
    rank, ``MPICommExecutor`` on a communicator of one): its tasks run one at a time in
    a thread of the rank, as mpi4py's single-worker ``ThreadPool`` runs them in its
    manager thread. The thread is the rank's (a simulated one, ``coop_threading``), so a
    task that sleeps or waits lets the rank's own timed waits expire meanwhile;
    ``get_comm_workers()`` is ``COMM_SELF`` while a task runs."""

    size = 1
    broken = None

    def __init__(self, owned: bool = True):
        self.owned = owned  # False: the shared pool's, which outlives its executors
        self.queue: collections.deque = collections.deque()
        self.running: dict = {}  # never anything: no receive to test, a thread runs it
        self.active = None  # the future whose task the thread runs
        rank_state().clients.append(self)

    def push(self, future, task) -> None:
        self.queue.append((future, task))
        self.dispatch()

    def dispatch(self) -> bool:
        """Start the next queued task in a thread unless one runs; whether one started."""
        while self.active is None and self.queue:
            future, task = self.queue.popleft()
            if future.set_running_or_notify_cancel():
                self.active = future
                name = f"mpi4py.futures LocalWorker ({getattr(task[0], '__name__', 'task')})"
                threading.Thread(target=self._run, args=(future, task), name=name).start()
                return True
        return False

    def _run(self, future, task) -> None:
        state = rank_state()
        state.comm_server = _mpi().COMM_SELF
        try:
            reply = _call(*task)
        finally:
            state.comm_server = None
        self.active = None
        _settle_reply(future, reply)
        self.dispatch()

    def busy(self) -> bool:
        return bool(self.queue) or self.active is not None

    def sync(self, options: dict) -> None:
        pass

    def initialize(self, options: dict) -> bool:
        initializer = options.get("initializer")
        if initializer is None:
            return True
        ok, _, _ = _call(initializer, options.get("initargs", ()), options.get("initkwargs", {}))
        return ok

    def cancel(self, futures) -> None:
        self.queue = _cancelled(self.queue, futures)

    def join(self) -> None:
        from ._base import wait_until

        wait_until(lambda: not self.busy(), None, "mpi4py.futures (join)")
        if self in rank_state().clients:
            rank_state().clients.remove(self)


# -- the worker's side ----------------------------------------------------------------
def _call(fn, args, kwargs):
    try:
        return (True, fn(*args, **kwargs), None)
    except BaseException as exc:  # noqa: BLE001 - the task's failure goes back to the client
        return _failure(exc)


def _sync_data(options: dict) -> dict:
    """What a worker needs before its first task: the client's ``__main__`` (unless
    ``main=False``), ``globals`` and ``path`` (mpi4py's ``_sync_get_data``). The client's
    ``__main__`` is also its ``__worker__``, so a worker's result whose class the program
    defines (pickled as ``__worker__.Name``) loads here."""
    data = {key: options[key] for key in ("globals", "path") if key in options}
    main = sys.modules["__main__"]
    if MAIN_RUN_NAME not in sys.modules:  # results pickled by reference to it load here
        context.current().modules.keep_private(MAIN_RUN_NAME)
        sys.modules[MAIN_RUN_NAME] = main
    if options.get("main", True):
        spec = getattr(main, "__spec__", None)
        data["mod_name"] = getattr(spec, "name", None)
        data["mod_path"] = getattr(main, "__file__", None)
    return data


def _sync(data: dict) -> None:
    """Run the client's main module here as ``__worker__`` and make it this rank's
    ``__main__`` (mpi4py's ``import_main``)."""
    for directory in data.get("path", ()):
        if directory not in sys.path:
            sys.path.append(directory)
    name, path = data.get("mod_name"), data.get("mod_path")
    module = types.ModuleType(MAIN_RUN_NAME)
    module.__dict__.update(data.get("globals") or {})
    if name is None and (path is None or not os.path.isfile(path)):
        return
    context.current().modules.keep_private(MAIN_RUN_NAME)
    sys.modules["__main__"] = sys.modules[MAIN_RUN_NAME] = module
    if name is not None:
        module.__dict__.update(runpy.run_module(name, run_name=MAIN_RUN_NAME))
        return
    directory = os.path.realpath(os.path.dirname(path))
    if directory not in sys.path:
        sys.path.append(directory)
    with open(path, encoding="utf-8") as f:
        code = compile(f.read(), path, "exec")
    module.__file__ = path
    exec(code, module.__dict__)


def serve(comm, workers_comm) -> None:
    """A worker's loop: run what the client (remote rank 0 of ``comm``) sends until it
    sends ``None``, with ``get_comm_workers()`` being ``workers_comm``."""
    state = rank_state()
    state.comm_server = workers_comm
    try:
        while True:
            try:
                message = comm.recv(source=0, tag=_TASK)
            except Exception as exc:  # noqa: BLE001 - a task that does not unpickle here
                comm.send(_pack(_failure(exc)), 0, _RESULT)
                continue
            if message is None:
                break
            kind, payload = message
            reply = _call(_sync, (payload,), {}) if kind == "sync" else _call(*payload)
            comm.send(_pack(reply), dest=0, tag=_RESULT)
    finally:
        state.comm_server = None
    comm.Disconnect()


def comm_split(comm, root):
    """Collective over ``comm``: the intercommunicator between ``root`` and the others
    and, at the others, their intracommunicator (mpi4py's ``comm_split``; both
    ``COMM_NULL`` on a communicator of one)."""
    mpi = _mpi()
    if comm.Get_size() == 1:
        return mpi.COMM_NULL, mpi.COMM_NULL
    rank = comm.Get_rank()
    intracomm = comm.Split(0 if rank == root else 1, key=0)
    remote_leader = (0 if root else 1) if rank == root else root
    intercomm = intracomm.Create_intercomm(0, comm, remote_leader, tag=0)
    if rank == root:
        intracomm.Free()
        intracomm = mpi.COMM_NULL
    return intercomm, intracomm


# -- spawned workers --------------------------------------------------------------------
def os_environ_get(name: str, default=None):
    """``MPI4PY_FUTURES_<name>``, else the deprecated ``MPI4PY_<name>`` (with mpi4py's
    ``DeprecationWarning``), else ``default``."""
    varname = f"MPI4PY_FUTURES_{name}"
    if varname not in os.environ:
        oldname = f"MPI4PY_{name}"
        if oldname in os.environ:
            warnings.warn(
                f"environment variable {oldname} is deprecated, use {varname}",
                DeprecationWarning,
                stacklevel=1,
            )
            return os.environ[oldname]
    return os.environ.get(varname, default)


def _max_workers() -> int:
    """``MPI4PY_FUTURES_MAX_WORKERS``, else the universe's room beyond ``COMM_WORLD``
    (at least one), as mpi4py's ``get_max_workers``."""
    value = os_environ_get("MAX_WORKERS")
    if value is not None:
        return int(value)
    world = _mpi().COMM_WORLD
    universe = world.Get_attr(_mpi().UNIVERSE_SIZE)
    if universe is not None:
        return max(universe - world.Get_size(), 1)
    return 1


def client_spawn(python_exe=None, python_args=None, max_workers=None, mpi_info=None):
    """Spawn the workers (``mpi4py.futures.server``): the intercommunicator to them."""
    mpi = _mpi()
    if max_workers is None:
        max_workers = _max_workers()
    if mpi_info is None:
        mpi_info = {"soft": f"1:{max_workers}"}
    args = [*(python_args or ()), "-m", "mpi4py.futures.server"]
    info = mpi.Info.Create()
    info.update(mpi_info)
    try:
        return mpi.COMM_SELF.Spawn(python_exe or sys.executable, args, max_workers, info)
    finally:
        info.Free()


def server_main() -> None:
    """A spawned worker's program: serve the parent, the children's ``COMM_WORLD`` being
    the workers' communicator. Without a parent there is no client to serve: mpi4py
    would wait for one as a named service (``--service``), which pyopenib's run cannot
    provide, so it says so."""
    mpi = _mpi()
    parent = mpi.Comm.Get_parent()
    if parent == mpi.COMM_NULL:
        raise SystemExit(
            "mpi4py.futures.server: no parent to serve (pyopenib starts workers only "
            "through MPIPoolExecutor's Spawn or python -m mpi4py.futures)"
        )
    serve(parent, mpi.COMM_WORLD)


# -- python -m mpi4py.futures ---------------------------------------------------------------
def __getattr__(name: str):
    """``_core.SharedPool``, mpi4py's per-process global: here the calling rank's."""
    if name == "SharedPool":
        return shared_pool()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def shared_pool():
    """The rank's shared pool (``python -m mpi4py.futures``), at its root; else None."""
    state = _RANKS.get(context.current())
    return None if state is None else state.shared


class SharedPoolCtx:
    """``python -m mpi4py.futures``: rank 0 of ``COMM_WORLD`` gets the context (and runs
    the program); the others serve it in ``__exit__``. Every ``MPIPoolExecutor`` the
    program makes at rank 0 uses these workers; they stop when the program ends."""

    def __init__(self):
        self.comm = None
        self.intracomm = None
        self.workers: Workers | LocalWorker | None = None
        self.on_root = False

    def __enter__(self):
        world = _mpi().COMM_WORLD
        self.on_root = world.Get_rank() == 0
        self.comm, self.intracomm = comm_split(world, 0)
        if self.on_root:
            alone = self.comm == _mpi().COMM_NULL
            self.workers = LocalWorker(owned=False) if alone else Workers(self.comm, owned=False)
            rank_state().shared = self
            return self
        return None

    def __exit__(self, *exc):
        if self.on_root:
            rank_state().shared = None
            self.workers.join()
            if isinstance(self.workers, Workers):
                for worker in range(self.workers.size):
                    self.comm.send(None, dest=worker, tag=_TASK)
                self.comm.Disconnect()
        elif self.comm != _mpi().COMM_NULL:
            serve(self.comm, self.intracomm)
            self.intracomm.Free()
        return False
