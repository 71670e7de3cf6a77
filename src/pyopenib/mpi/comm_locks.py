"""mpi4py's communicator locks (``MPI._comm_lock``/``_comm_lock_table``): one
``threading.Lock`` per (communicator, key), created on first use, so that the threads of
a rank that share a communicator do not interleave the messages of one object (pkl5
takes the "send"/"recv" locks; the object collectives ``bcast``, ``gather``, ``scatter``,
``allgather``, ``alltoall``, ``neighbor_allgather`` and ``neighbor_alltoall`` hold the
lock named after themselves while their messages move, as mpi4py's ``PyMPI_Lock``)."""

from __future__ import annotations

import threading
import weakref

__all__ = ["NAMES", "comm_lock", "comm_lock_table"]

_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def comm_lock_table(comm) -> dict:
    """Return the lock table of ``comm``'s communicator (every object naming it shares it)."""
    st = comm._st()
    table = _TABLES.get(st)
    if table is None:
        table = _TABLES[st] = {}
    return table


def comm_lock(comm, key=None) -> threading.Lock:
    """Return the lock named ``key`` of ``comm``'s communicator (made on first use)."""
    table = comm_lock_table(comm)
    lock = table.get(key)
    if lock is None:
        lock = table[key] = threading.Lock()
    return lock


NAMES = {"_comm_lock": comm_lock, "_comm_lock_table": comm_lock_table}
