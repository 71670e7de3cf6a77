"""Buffered sends: ``MPI.Attach_buffer``/``Detach_buffer`` and the space a ``Bsend`` takes.

As Open MPI's ob1 + pml/base bsend: a buffered send whose payload fits the eager limit
leaves by the send-inline path and needs no attached space (Open MPI 4.1 accepts such a
``Bsend`` with no buffer attached at all); a larger one is copied into the attached
buffer, taking its size plus ``BSEND_OVERHEAD`` until the transfer underneath completes,
and fails with ``MPI_ERR_BUFFER`` when the space is not there. ``Detach_buffer`` waits for
every buffered transfer, then hands the buffer back. One attached buffer per rank.
"""

from __future__ import annotations

import weakref

from . import pack
from .context import current
from .error_classes import ERROR_CLASSES, Exception

__all__ = ["BSEND_OVERHEAD", "Attach_buffer", "Detach_buffer", "pool"]

BSEND_OVERHEAD = 128
"""Open MPI 4.1's ``MPI_BSEND_OVERHEAD``."""

ERR_BUFFER = ERROR_CLASSES["ERR_BUFFER"][0]
ERR_UNKNOWN = ERROR_CLASSES["ERR_UNKNOWN"][0]


class BsendPool:
    """One rank's attached buffer: its size and the transfers holding part of it."""

    __slots__ = ("buffer", "size", "pending", "__weakref__")

    def __init__(self):
        self.buffer = None
        self.size = 0
        self.pending: list = []  # (PML request, bytes held), oldest first

    def _reclaim(self) -> None:
        self.pending = [(p, n) for p, n in self.pending if not p.complete]

    def used(self) -> int:
        self._reclaim()
        return sum(n for _, n in self.pending)

    def reserve(self, nbytes: int) -> None:
        """Take room for an ``nbytes`` message, or raise ``MPI_ERR_BUFFER``."""
        if self.buffer is None or self.used() + nbytes + BSEND_OVERHEAD > self.size:
            raise Exception(ERR_BUFFER)

    def hold(self, preq, nbytes: int) -> None:
        if not preq.complete:
            self.pending.append((preq, nbytes + BSEND_OVERHEAD))

    def attach(self, buf) -> None:
        if self.buffer is not None:
            raise Exception(ERR_UNKNOWN)  # Open MPI 4.1: a second attach is ERR_UNKNOWN
        size = len(pack.raw_bytes(buf, True))  # any buffer mpi4py takes (DLPack, CAI)
        self.buffer, self.size = buf, size  # only once the buffer is known to be writable

    def detach(self):
        if self.buffer is None:
            raise Exception(ERR_UNKNOWN)
        ctx = current()
        for preq, _ in list(self.pending):
            ctx.wait_request(preq, "MPI_Buffer_detach (waiting for buffered sends)")
        self.pending = []
        buf, self.buffer, self.size = self.buffer, None, 0
        return buf


_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def pool(ctx=None) -> BsendPool:
    """The calling rank's pool (created empty on first use)."""
    ctx = current() if ctx is None else ctx
    p = _POOLS.get(ctx)
    if p is None:
        p = _POOLS[ctx] = BsendPool()
    return p


def Attach_buffer(buf) -> None:
    """Attach a user buffer for buffered sends (``Bsend``)."""
    pool().attach(buf)


def Detach_buffer():
    """Detach the buffered-send buffer, once the messages in it are delivered."""
    return pool().detach()
