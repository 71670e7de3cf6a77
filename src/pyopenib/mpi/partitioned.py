"""Partitioned point-to-point (MPI 4.0 ``Psend_init``/``Precv_init``, ``Pready``,
``Parrived``) over the PML.

Open MPI 4.1 has no partitioned communication (mpi4py raises ``NotImplementedError``
there); this follows the MPI 4.0 semantics with one PML message per partition, as Open
MPI 5's part/persist component does: ``Pready(i)`` sends partition ``i`` at once, led by
its index, and the receive side posts one receive per partition at ``Start``, so the
partitions may be readied in any order. The messages travel on the communicator's own
partitioned context (a negative context id no other traffic uses), so they can never
match a user's receive or probe. Each side's buffer holds ``partitions`` equal parts.
"""

from __future__ import annotations

import struct

import numpy as np

from .context import current
from .error_classes import ERROR_CLASSES, Exception
from .request import Operation
from .status import empty_fields

__all__ = ["partitioned_recv", "partitioned_send"]

ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]
ERR_REQUEST = ERROR_CLASSES["ERR_REQUEST"][0]
_INDEX = struct.Struct("<i")
_U8 = np.uint8


def _part_ctx(st) -> int:
    """The partitioned context of a communicator: negative, one per context id."""
    return -1 - st.ctx


def _split(msg, partitions: int) -> int:
    if partitions < 1:
        raise Exception(ERR_ARG)
    nbytes = len(msg.data)
    if nbytes % partitions:
        raise ValueError(f"message: cannot split {msg.count} items into {partitions} partitions")
    return nbytes // partitions


class _Partitioned(Operation):
    """What both sides share: inactive until ``Start``, complete when every partition
    has moved."""

    __slots__ = ("st", "msg", "partitions", "part_bytes", "peer", "tag", "started", "label")
    persistent = True
    partitioned = True

    def __init__(self, st, msg, partitions, peer, tag, label):
        self.st = st
        self.msg = msg
        self.partitions = partitions
        self.part_bytes = _split(msg, partitions)
        self.peer = peer
        self.tag = tag
        self.started = False
        self.label = label

    def inactive(self) -> bool:
        return not self.started

    def _check_partition(self, i: int) -> None:
        if not self.started or not 0 <= i < self.partitions:
            raise Exception(ERR_ARG if self.started else ERR_REQUEST)


class _PartitionedSend(_Partitioned):
    __slots__ = ("sends", "readied")

    def __init__(self, st, msg, partitions, dest, tag, label):
        super().__init__(st, msg, partitions, dest, tag, label)
        self.sends = []
        self.readied = set()

    def begin(self) -> None:
        if self.started:
            raise Exception(ERR_REQUEST)
        self.started = True
        self.sends = []
        self.readied = set()
        self.msg.packed()

    def pready(self, indices) -> None:
        indices = list(indices)
        for i in indices:
            self._check_partition(i)
            if i in self.readied:
                raise Exception(ERR_ARG)
        if self.peer < 0:  # PROC_NULL
            self.readied.update(indices)
            return
        st = self.st
        rc = st.rc
        step = self.part_bytes
        for i in indices:
            self.readied.add(i)
            data = b"".join((_INDEX.pack(i), self.msg.data[i * step : (i + 1) * step]))
            preq = rc.pml.isend(
                data, st.ranks[self.peer], _part_ctx(st), st.rank, self.tag, False, self.label
            )
            self.sends.append(preq)

    def parrived(self, i: int) -> bool:
        raise Exception(ERR_REQUEST)  # a send request has no arrivals

    def ready(self) -> bool:
        if not self.started:
            return True
        return len(self.readied) == self.partitions and all(p.complete for p in self.sends)

    def peek(self) -> tuple:
        return empty_fields()

    def take(self):
        self.started = False
        return empty_fields(), None


class _PartitionedRecv(_Partitioned):
    __slots__ = ("recvs", "arrived", "source_seen")

    def __init__(self, st, msg, partitions, source, tag, label):
        super().__init__(st, msg, partitions, source, tag, label)
        self.recvs = []
        self.arrived = set()
        self.source_seen = None

    def begin(self) -> None:
        if self.started:
            raise Exception(ERR_REQUEST)
        self.started = True
        self.arrived = set()
        self.source_seen = None
        if self.peer == -2:  # PROC_NULL
            self.recvs = []
            self.arrived = set(range(self.partitions))
            return
        st = self.st
        pml = st.rc.pml
        ctx = _part_ctx(st)
        self.recvs = [
            pml.irecv(None, ctx, self.peer, self.tag, self.label) for _ in range(self.partitions)
        ]

    def _collect(self) -> None:
        """Copy the partitions whose messages arrived into place."""
        step = self.part_bytes
        data = self.msg.data
        pending = []
        for preq in self.recvs:
            if not preq.complete:
                pending.append(preq)
                continue
            payload = preq.data
            (i,) = _INDEX.unpack_from(payload)
            data[i * step : (i + 1) * step] = np.frombuffer(payload, _U8)[_INDEX.size :]
            self.arrived.add(i)
            self.source_seen = (preq.source, preq.tag)
        self.recvs = pending

    def pready(self, indices) -> None:
        raise Exception(ERR_REQUEST)  # a receive request has nothing to ready

    def parrived(self, i: int) -> bool:
        self._check_partition(i)
        self._collect()
        if i not in self.arrived:
            current().poll()
            self._collect()
        return i in self.arrived

    def ready(self) -> bool:
        if not self.started:
            return True
        self._collect()
        return len(self.arrived) == self.partitions

    def peek(self) -> tuple:
        if self.peer == -2:
            return (-2, -1, 0, 0, False)
        source, tag = self.source_seen if self.source_seen else (self.peer, self.tag)
        return (source, tag, 0, len(self.msg.data), False)

    def take(self):
        fields = self.peek()
        self.started = False
        self.msg.finish(len(self.msg.data))
        return fields, None


def partitioned_send(comm, st, msg, partitions, dest, tag) -> _PartitionedSend:
    label = f"MPI_Psend_init(partitions={partitions}, dest={dest}, tag={tag})"
    return _PartitionedSend(st, msg, partitions, dest, tag, label)


def partitioned_recv(comm, st, msg, partitions, source, tag) -> _PartitionedRecv:
    label = f"MPI_Precv_init(partitions={partitions}, source={source}, tag={tag})"
    return _PartitionedRecv(st, msg, partitions, source, tag, label)
