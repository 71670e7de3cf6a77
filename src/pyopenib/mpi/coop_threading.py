"""``threading`` and ``queue`` while a job runs: a rank's threads are simulated, not OS threads.

A real rank is a process whose threads the OS runs; pyopenib's rank is a greenlet of the
simulator's thread, and so is each thread the rank starts. As gevent does, the change is
made under the ``threading`` module, at the ``_thread`` primitives it is written on, so
every class of it (``Thread``, ``Lock``, ``RLock``, ``Condition``, ``Event``,
``Semaphore``, ``Barrier``, ``Timer``) and of ``queue`` works unchanged on top:

* ``_start_new_thread`` in a rank spawns a simulator process of that rank (``Job``'s
  ``start_thread``): the thread starts at the current simulated instant, after what is
  already due then, and runs until it blocks;
* ``Lock`` (``_allocate_lock``) is ``CoopLock``: a contended ``acquire`` in a rank waits
  in simulated time (a timeout is simulated seconds) and ``release`` hands the lock to
  the first waiter, so who gets a lock is FIFO and a run is a function of its inputs and
  seed, as the simulator's runs are;
* ``RLock`` is threading's Python one (``_CRLock`` off: the C one's owner is an OS
  thread, which every rank's threads share), over ``CoopLock`` and ``get_ident``;
* ``get_ident`` is the rank thread's ident (``rank_threads``), ``_set_sentinel`` the
  ``CoopLock`` released when the thread ends (``Thread.join`` waits for it), ``_newname``
  counts each rank's threads from 1 as a process does, ``_time`` (and ``queue``'s clock)
  is simulated time, ``local`` is the Python one (keyed by ``current_thread()``),
  ``queue.SimpleQueue`` the Python one (the C one blocks the OS thread);
* ``enumerate``/``active_count`` are the calling rank's threads, as a process sees its
  own; ``excepthook`` is Python's own (a process starts with it, whatever the host
  installed), and an ``Abort``, a transport failure or the job's end raised in a thread
  is not a thread's error for it to print: it leaves the thread for the runner.

Outside a rank (the host's code, the host's own OS threads, the simulator's loop) each
primitive is the real one; locks made before the job stay real locks. ``Cooperative``
installs all this for the job's duration and puts the real ones back.
"""

from __future__ import annotations

import _thread
import _threading_local
import collections
import queue
import sys
import threading
import time

from ..errors import TransportError
from ..sim import PS_PER_S
from . import rank_threads
from .context import POLL_PS
from .rank_threads import RankThread, RankThreads, running
from .threads import SIMULATED_THREADS

__all__ = ["CoopLock", "Cooperative"]

_SIMULATOR = [None]
"""The ident of the OS thread that runs the job's simulator (``Cooperative`` sets it)."""
_real_allocate_lock = _thread.allocate_lock
_real_get_ident = _thread.get_ident
_real_get_native_id = _thread.get_native_id


class _Waiter:
    __slots__ = ("thread", "timer")

    def __init__(self, thread: RankThread):
        self.thread = thread
        self.timer = None


class CoopLock:
    """A lock whose contended ``acquire`` waits in simulated time when the caller is a
    rank's thread (and blocks the OS thread as a real lock when it is not). The real
    lock underneath holds the state; a release on the simulator's thread with simulated
    waiters leaves it held and passes it to the first of them. A release from another OS
    thread only frees the real lock (it must not touch the event heap): a simulated
    waiter queued before sees it when its timeout expires, and one that finds the lock
    held by such a thread polls for it in simulated time."""

    __slots__ = ("_lock", "_waiters", "_foreign", "__weakref__")

    def __init__(self):
        self._lock = _real_allocate_lock()
        self._waiters: collections.deque | None = None
        self._foreign = False  # held by an OS thread outside the simulation

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(False):
            self._foreign = _real_get_ident() != _SIMULATOR[0]
            return True
        if not blocking:
            if timeout != -1:
                raise ValueError("can't specify a timeout for a non-blocking call")
            return False
        thread = running()
        if thread is None:
            got = self._lock.acquire(True, timeout)
            self._foreign = got and _real_get_ident() != _SIMULATOR[0]
            return got
        if timeout < 0 and timeout != -1:
            raise ValueError("timeout value must be a non-negative number")
        if self._foreign:
            return self._poll(thread, timeout)
        return self._wait(thread, timeout)

    def _poll(self, thread: RankThread, timeout: float) -> bool:
        """Wait for an OS thread's release, which cannot reach the simulator: retry in
        simulated time, as a blocking socket call does (``sockets``)."""
        sim = thread.ctx.sim
        deadline = None if timeout == -1 else sim.now + int(timeout * PS_PER_S)
        while not self._lock.acquire(False):
            if deadline is not None and sim.now >= deadline:
                return False
            sim.sleep(POLL_PS)
        self._foreign = False
        return True

    def _wait(self, thread: RankThread, timeout: float) -> bool:
        waiter = _Waiter(thread)
        if self._waiters is None:
            self._waiters = collections.deque()
        self._waiters.append(waiter)
        sim = thread.ctx.sim
        if timeout != -1:
            waiter.timer = sim.timer(int(timeout * PS_PER_S), self._time_out, waiter)
        holder = thread.holder
        outer = holder.blocked_in
        if outer is None:
            holder.blocked_in = (_wait_label, sys._getframe(2))
        if thread.ctx.threads is not None:
            thread.ctx.threads.yielding(thread)
        try:
            # False: timed out, unless an OS thread released the lock meanwhile
            return sim.suspend() or self._lock.acquire(False)
        except BaseException:  # killed while waiting (the job is over): no handover to it
            if waiter in self._waiters:
                self._waiters.remove(waiter)
            if waiter.timer is not None:
                waiter.timer.cancel()
            raise
        finally:
            holder.blocked_in = outer

    def _time_out(self, waiter: _Waiter) -> None:
        self._waiters.remove(waiter)
        waiter.thread.ctx.sim.resume(waiter.thread.glet, False)

    def release(self) -> None:
        waiters = self._waiters
        if waiters and _real_get_ident() == _SIMULATOR[0]:
            if not self._lock.locked():
                raise RuntimeError("release unlocked lock")
            waiter = waiters.popleft()
            if waiter.timer is not None:
                waiter.timer.cancel()
            waiter.thread.ctx.sim.resume(waiter.thread.glet, True)
        else:  # no simulated waiter, or an OS thread (it must not touch the event heap):
            self._lock.release()  # a simulated waiter with a timeout takes it then

    def locked(self) -> bool:
        return self._lock.locked()

    __enter__ = acquire

    def __exit__(self, *exc) -> None:
        self.release()

    def _at_fork_reinit(self) -> None:
        self._lock = _real_allocate_lock()
        self._waiters = None

    def __repr__(self) -> str:
        state = "locked" if self._lock.locked() else "unlocked"
        return (
            f"<{state} {type(self).__module__}.{type(self).__qualname__} object at {id(self):#x}>"
        )


_STDLIB_WAITS = (threading.__file__, queue.__file__, __file__)


def _wait_label(frame) -> str:
    """What a thread blocked on a lock waits in, for the deadlock report: the outermost
    call of ``threading``/``queue`` it is in (``Thread.join``, ``Queue.get``...)."""
    call = "Lock.acquire"
    while frame is not None and frame.f_code.co_filename in _STDLIB_WAITS:
        module = "queue" if frame.f_code.co_filename == queue.__file__ else "threading"
        call = f"{module}.{frame.f_code.co_qualname}"
        frame = frame.f_back
    return f"{call} (a thread's wait)"


# -- the primitives a rank's ``threading`` runs on ----------------------------------------
def _rank_threads(ctx) -> RankThreads:
    if ctx.threads is None:
        ctx.threads = RankThreads(ctx, rank_threads.main_of(ctx))
    return ctx.threads


def start_new_thread(function, args, kwargs=None):
    thread = running()
    if thread is None:
        return _real_start_new_thread(function, args, *(() if kwargs is None else (kwargs,)))
    ctx = thread.ctx
    threads = _rank_threads(ctx)
    ident = rank_threads.main_ident(ctx.rank) + len(threads.started) + 1
    new = RankThread(ctx, None, ident, getattr(function, "__self__", None))
    threads.add(new)
    ctx.job.start_thread(ctx, new, function, args, kwargs or {})
    return new.ident


def get_ident() -> int:
    thread = running()
    return _real_get_ident() if thread is None else thread.ident


def get_native_id() -> int:
    thread = running()
    return _real_get_native_id() if thread is None else thread.ident


def set_sentinel():
    thread = running()
    if thread is None:
        return _real_set_sentinel()
    thread.sentinel = lock = CoopLock()
    return lock


def newname(name_template: str) -> str:
    thread = running()
    if thread is None:
        return _real_newname(name_template)
    threads = _rank_threads(thread.ctx)
    number = threads.next_name
    threads.next_name += 1
    return name_template % number


def clock() -> float:
    """Simulated seconds in a rank (the clock of threading's and queue's timeouts)."""
    thread = running()
    return time.monotonic() if thread is None else thread.ctx.sim.now / PS_PER_S


def main_thread():
    thread = running()
    return _real_main_thread() if thread is None else rank_threads.main_of(thread.ctx).view


def enumerate_threads() -> list:
    thread = running()
    if thread is None:
        return _real_enumerate()
    threads = thread.ctx.threads
    own = [rank_threads.main_of(thread.ctx).view]
    if threads is not None:  # started and not yet ended (``glet`` None: not yet run)
        own += [t.view for t in threads.started if t.sentinel is not None or t.glet is None]
    return own


def active_count() -> int:
    return len(enumerate_threads())


def shutdown(ctx) -> None:
    """What ``threading._shutdown`` does when a process's main thread ends, for the
    rank's threads: first the hook ``concurrent.futures`` registers there, then a join
    of every non-daemon thread until none is left (a thread may start another)."""
    _stop_pool_workers(ctx)
    while True:
        waiting = [t.view for t in ctx.threads.alive() if t.view is not None]
        waiting = [view for view in waiting if not view.daemon]
        if not waiting:
            return
        for view in waiting:
            view.join()


def _stop_pool_workers(ctx) -> None:
    """``concurrent.futures.thread._python_exit`` for the rank's workers: each one's
    executor is shut down and its queue gets the ``None`` that ends an idle worker (the
    real hook sets a flag of the module, which would stop every rank's executors)."""
    pool = sys.modules.get("concurrent.futures.thread")
    if pool is None:
        return
    alive = {t.view for t in ctx.threads.alive()}
    for worker, work_queue in list(pool._threads_queues.items()):
        if worker in alive:  # a worker's arguments, until it ends: (executor weakref, ...)
            executor = vars(worker)["_args"][0]()
            if executor is not None:
                executor._shutdown = True
            work_queue.put(None)


def _escapes(exc) -> bool:
    """An exception that ends the rank or the job, not just the thread it is raised in."""
    if isinstance(exc, Exception):
        return isinstance(exc, TransportError)
    return not isinstance(exc, SystemExit)


def make_invoke_excepthook():
    invoke = _real_make_invoke_excepthook()

    def invoke_excepthook(thread):
        exc = sys.exc_info()[1]
        if _escapes(exc) and running() is not None:
            raise exc
        invoke(thread)

    return invoke_excepthook


_real_start_new_thread = getattr(threading, "_start_new_thread", None)  # None: 3.13
_real_set_sentinel = getattr(threading, "_set_sentinel", None)
_real_newname = threading._newname
_real_enumerate = threading.enumerate
_real_main_thread = threading.main_thread
_real_make_invoke_excepthook = threading._make_invoke_excepthook

_PATCHES = (
    (threading, "_start_new_thread", start_new_thread),
    (threading, "_allocate_lock", CoopLock),
    (threading, "Lock", CoopLock),
    (threading, "_CRLock", None),
    (threading, "get_ident", get_ident),
    (threading, "get_native_id", get_native_id),
    (threading, "_set_sentinel", set_sentinel),
    (threading, "_newname", newname),
    (threading, "_time", clock),
    (threading, "local", _threading_local.local),
    (threading, "enumerate", enumerate_threads),
    (threading, "main_thread", main_thread),
    (threading, "active_count", active_count),
    (threading, "_make_invoke_excepthook", make_invoke_excepthook),
    (threading, "excepthook", threading.__excepthook__),
    (queue, "time", clock),
    (queue, "SimpleQueue", queue._PySimpleQueue),
)


class Cooperative:
    """For a job's duration: the primitives above in ``threading`` and ``queue``."""

    def __enter__(self):
        if not SIMULATED_THREADS:  # Python 3.13: the job's threads stay OS threads
            self._saved = []
            return self
        patches = list(_PATCHES)
        pool = sys.modules.get("concurrent.futures.thread")
        if pool is not None:  # imported before the job: a real lock ``submit`` holds while
            # ``Thread.start`` waits for the new thread, so another thread's submit would
            # block the simulator's OS thread
            patches.append((pool, "_global_shutdown_lock", CoopLock()))
        _SIMULATOR[0] = _real_get_ident()
        self._saved = [(module, name, getattr(module, name)) for module, name, _ in patches]
        for module, name, value in patches:
            setattr(module, name, value)
        return self

    def __exit__(self, *exc):
        for module, name, value in self._saved:
            setattr(module, name, value)
        rank_threads.forget_job()
        return False
