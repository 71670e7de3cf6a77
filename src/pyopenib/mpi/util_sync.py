"""``mpi4py.util.sync``: Sequential, Counter, Mutex, Condition, Semaphore over pyopenib's MPI.

The API and semantics are mpi4py 4.1.2's; the implementation is pyopenib's own and simpler.
Every primitive but ``Sequential`` lives in an RMA window on rank 0 of its communicator
(``Win.Allocate``), changed only by atomics (``Fetch_and_op``, ``Compare_and_swap``) under
passive-target locks, so its traffic is osc/rdma's on the simulated fabric:

* ``Counter``: one item at ``root``, ``next()`` is a ``Fetch_and_op(SUM)``;
* ``Mutex``: a ticket lock, two counters at rank 0 (the next ticket, the ticket served):
  first come first served, as mpi4py's MCS queue is, so a process that releases and
  re-acquires at once (its own window is local, its atomics instant) cannot starve a
  remote waiter. The recursion count is the owner's own business and stays local;
* ``Condition``: a wake-up flag per rank and a FIFO of waiters at rank 0, changed only
  while its mutex is held;
* ``Semaphore``: a ``Counter`` guarded by a ``Condition``, as mpi4py's.

A process that waits spins, and each turn of a spin is one progress pass that lets
simulated time move (``RankContext.poll``): the holder, a rank greenlet too, runs meanwhile.
MPI handles are those of the running job's ``mpi4py.MPI`` (this module is shared by jobs).
"""

from __future__ import annotations

import array
import sys

from . import context

__all__ = ["Condition", "Counter", "Mutex", "Semaphore", "Sequential"]

_NEXT, _SERVING = 0, 1  # a mutex window's two counters, at rank 0
_FLAG = 0  # a condition window's slots: every rank's wake-up flag ...
_HEAD, _TAIL = 1, 2  # ... and, at rank 0, the waiters' FIFO: two running counts ...
_QUEUE = 3  # ... and the ring of waiting ranks that follows them


def _mpi():
    return sys.modules["mpi4py.MPI"]


def _spin() -> None:
    """One fruitless turn of a spin: a progress pass that lets simulated time move."""
    context.current().poll()


def _window(items: int, comm, info):
    mpi = _mpi()
    unit = mpi.INT.Get_size()
    return mpi.Win.Allocate(items * unit, unit, mpi.INFO_NULL if info is None else info, comm)


def _ints(*values) -> array.array:
    return array.array("i", values)


def _set_own(window, values) -> None:
    """Initialise this process's part of ``window``; the caller then synchronises."""
    mpi = _mpi()
    rank = window.group_rank
    window.Lock(rank, mpi.LOCK_SHARED)
    window.Accumulate(values, rank, op=mpi.REPLACE)
    window.Unlock(rank)


def _fetch_op(window, rank: int, disp: int, value: int, op) -> int:
    """Atomically apply ``op`` with ``value`` to an int of ``rank``'s window part; the
    previous value."""
    mpi = _mpi()
    prev = _ints(0)
    window.Lock(rank, mpi.LOCK_SHARED)
    window.Fetch_and_op(_ints(value), prev, rank, disp, op)
    window.Unlock(rank)
    _local_turn(window, rank)
    return prev[0]


def _compare_swap(window, rank: int, disp: int, new: int, expected: int) -> int:
    mpi = _mpi()
    prev = _ints(0)
    window.Lock(rank, mpi.LOCK_SHARED)
    window.Compare_and_swap(_ints(new), _ints(expected), prev, rank, disp)
    window.Unlock(rank)
    _local_turn(window, rank)
    return prev[0]


def _local_turn(window, rank: int) -> None:
    """An atomic on the caller's own memory takes no simulated time, so a loop of them
    (rank 0 notifying until every rank waits) would never let the others run: it makes
    one progress pass instead, as the wait in a real MPI's lock would."""
    if rank == window.group_rank:
        _spin()


class Sequential:
    """Sequential execution: ``begin()`` waits for the previous rank's ``end()``."""

    def __init__(self, comm, tag=0):
        self.comm = comm
        self.tag = int(tag)

    def __enter__(self):
        self.begin()
        return self

    def __exit__(self, *exc):
        self.end()

    def begin(self) -> None:
        comm = self.comm
        rank = comm.Get_rank()
        if comm.Get_size() > 1 and rank != 0:
            comm.Recv([bytearray(), 0, _mpi().BYTE], rank - 1, self.tag)

    def end(self) -> None:
        comm = self.comm
        rank, size = comm.Get_rank(), comm.Get_size()
        if size > 1 and rank != size - 1:
            comm.Send([bytearray(), 0, _mpi().BYTE], rank + 1, self.tag)


class Counter:
    """Global counter: ``next(incr)`` returns the value before adding ``incr`` (``step``
    by default), for every process of ``comm`` alike."""

    def __init__(self, start=0, step=1, *, typecode="i", comm=None, info=None, root=0):
        mpi = _mpi()
        comm = mpi.COMM_SELF if comm is None else comm
        datatype = mpi.Datatype.fromcode(typecode)
        self._typechar = datatype.typechar
        unit = datatype.Get_size()
        here = comm.Get_rank() == root
        info = mpi.INFO_NULL if info is None else info
        self._window = mpi.Win.Allocate(unit if here else 0, unit, info, comm)
        self._start = start
        self._step = step
        self._root = root
        self._comm = comm
        if here:
            _set_own(self._window, array.array(self._typechar, [start]))
        comm.Barrier()

    def __iter__(self):
        return self

    def __next__(self):
        return self.next()

    def next(self, incr=None):
        if not self._window:
            raise RuntimeError("counter already freed")
        mpi = _mpi()
        incr = self._step if incr is None else incr
        value = array.array(self._typechar, [incr])
        prev = array.array(self._typechar, [0])
        window, root = self._window, self._root
        window.Lock(root, mpi.LOCK_SHARED)
        window.Fetch_and_op(value, prev, root, 0, mpi.SUM if incr else mpi.NO_OP)
        window.Unlock(root)
        return prev[0]

    def free(self) -> None:
        mpi = _mpi()
        window, self._window, self._comm = self._window, mpi.WIN_NULL, mpi.COMM_NULL
        window.free()


class Mutex:
    """Mutual exclusion among the processes of ``comm`` (see the module docstring)."""

    def __init__(self, *, recursive=False, comm=None, info=None):
        mpi = _mpi()
        comm = mpi.COMM_SELF if comm is None else comm
        self._recursive = bool(recursive)
        self._comm = comm
        here = comm.Get_rank() == 0
        self._window = _window(2 if here else 0, comm, info)
        self._count = 0  # this process's recursion count while it holds the mutex
        if here:
            _set_own(self._window, _ints(0, 0))
        comm.Barrier()

    def _check(self) -> None:
        if not self._window:
            raise RuntimeError("mutex already freed")

    def _acquire(self, blocking=True) -> bool:
        mpi, window = _mpi(), self._window
        if blocking:
            ticket = _fetch_op(window, 0, _NEXT, 1, mpi.SUM)
            while _fetch_op(window, 0, _SERVING, 0, mpi.NO_OP) != ticket:
                _spin()
        else:  # take the ticket being served, if nobody holds it
            serving = _fetch_op(window, 0, _SERVING, 0, mpi.NO_OP)
            if _compare_swap(window, 0, _NEXT, serving + 1, serving) != serving:
                return False
        self._count = 1
        return True

    def _release(self) -> None:
        self._count = 0
        _fetch_op(self._window, 0, _SERVING, 1, _mpi().SUM)

    def _release_save(self) -> int:
        state = self._count
        self._release()
        return state

    def _acquire_restore(self, state: int) -> None:
        self._acquire()
        self._count = state

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    def acquire(self, blocking=True) -> bool:
        self._check()
        if self._count:
            if self._recursive:
                self._count += 1
                return True
            raise RuntimeError("cannot acquire already held mutex")
        return self._acquire(blocking)

    def release(self) -> None:
        self._check()
        if not self._count:
            raise RuntimeError("cannot release unheld mutex")
        if self._recursive and self._count > 1:
            self._count -= 1
            return
        self._release()

    def locked(self) -> bool:
        """Whether this process holds the mutex."""
        self._check()
        return self._count > 0

    def count(self) -> int:
        """The recursion count (0 when this process does not hold the mutex)."""
        self._check()
        return self._count

    def free(self) -> None:
        if self._window and self._count:
            self._release()
        mpi = _mpi()
        window, self._window, self._comm = self._window, mpi.WIN_NULL, mpi.COMM_NULL
        window.free()


class Condition:
    """Condition variable over a ``Mutex`` (its own, recursive by default, unless given)."""

    def __init__(self, mutex=None, *, recursive=True, comm=None, info=None):
        mpi = _mpi()
        if mutex is None:
            comm = mpi.COMM_SELF if comm is None else comm
            self._mutex = Mutex(recursive=recursive, comm=comm, info=info)
            self._own_mutex = True
        else:
            self._mutex = mutex
            self._own_mutex = False
            comm = mutex._comm
        self._comm = comm
        size = comm.Get_size()
        here = comm.Get_rank() == 0
        self._window = _window(_QUEUE + size if here else 1, comm, info)
        _set_own(self._window, _ints(0, 0, 0, *[mpi.PROC_NULL] * size) if here else _ints(0))
        comm.Barrier()

    def _check(self) -> None:
        if not self._window:
            raise RuntimeError("condition already freed")

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    def acquire(self, blocking=True) -> bool:
        self._check()
        return self._mutex.acquire(blocking)

    def release(self) -> None:
        self._check()
        self._mutex.release()

    def locked(self) -> bool:
        self._check()
        return self._mutex.locked()

    def wait(self) -> bool:
        self._check()
        if not self.locked():
            raise RuntimeError("cannot wait on unheld mutex")
        window, me = self._window, self._window.group_rank
        tail = _fetch_op(window, 0, _TAIL, 1, _mpi().SUM)
        _fetch_op(window, 0, _QUEUE + tail % self._comm.Get_size(), me, _mpi().REPLACE)
        state = self._mutex._release_save()
        while _fetch_op(window, me, _FLAG, 0, _mpi().REPLACE) == 0:
            _spin()
        self._mutex._acquire_restore(state)
        return True

    def wait_for(self, predicate):
        result = predicate()
        while not result:
            self.wait()
            result = predicate()
        return result

    def notify(self, n=1) -> int:
        """Wake up to ``n`` waiters, first come first woken; how many were woken."""
        self._check()
        if not self.locked():
            raise RuntimeError("cannot notify on unheld mutex")
        mpi = _mpi()
        window, size = self._window, self._comm.Get_size()
        head = _fetch_op(window, 0, _HEAD, 0, mpi.NO_OP)
        tail = _fetch_op(window, 0, _TAIL, 0, mpi.NO_OP)
        woken = max(0, min(n, tail - head))
        for i in range(head, head + woken):
            rank = _fetch_op(window, 0, _QUEUE + i % size, mpi.PROC_NULL, mpi.REPLACE)
            _fetch_op(window, rank, _FLAG, 1, mpi.REPLACE)
        _fetch_op(window, 0, _HEAD, woken, mpi.SUM)
        return woken

    def notify_all(self) -> int:
        return self.notify((1 << 31) - 1)

    def free(self) -> None:
        if self._own_mutex:
            self._mutex.free()
        elif self._mutex._window and self._mutex.locked():
            self._mutex._release()
        mpi = _mpi()
        window, self._window, self._comm = self._window, mpi.WIN_NULL, mpi.COMM_NULL
        window.free()


class Semaphore:
    """Counting semaphore; ``bounded`` forbids releasing above the initial value."""

    def __init__(self, value=1, *, bounded=True, comm=None, info=None):
        if value < 0:
            raise ValueError("initial value must be non-negative")
        self._bounded = bool(bounded)
        self._counter = Counter(value, comm=comm, info=info)
        self._condvar = Condition(recursive=False, comm=comm, info=info)
        self._comm = self._counter._comm

    def __enter__(self):
        self.acquire()
        return self

    def __exit__(self, *exc):
        self.release()

    def acquire(self, blocking=True) -> bool:
        with self._condvar:
            while self._counter.next(0) == 0:
                if not blocking:
                    return False
                self._condvar.wait()
            self._counter.next(-1)
            return True

    def release(self, n=1) -> None:
        if n < 1:
            raise ValueError("increment must be one or more")
        with self._condvar:
            if self._bounded and self._counter.next(0) + n > self._counter._start:
                raise ValueError("semaphore released too many times")
            self._counter.next(n)
            self._condvar.notify(n)

    def free(self) -> None:
        self._counter.free()
        self._condvar.free()
        self._comm = _mpi().COMM_NULL
