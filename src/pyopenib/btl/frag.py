"""Fragments and the openib header, as on the wire.

``mca_btl_openib_header_t`` is 4 bytes: ``tag:u8, cm_seen:u8, credits:u16``. Control
messages use tag ``MCA_BTL_TAG_IB`` (0x20) and start their payload with a 1-byte type;
an explicit credit message's body is ``type:u8, qpn:u8, rdma_credits:u16``. Header bytes
are counted in the wire size, as in Open MPI.
"""

from __future__ import annotations

import struct

import numpy as np

from ..verbs import Sge

__all__ = ["Frag", "HEADER", "TAG_IB", "CTL_CREDITS", "CTL_CTS", "CREDIT_BODY", "UNSIGNALED"]

HEADER = struct.Struct("<BBH")
CREDIT_BODY = struct.Struct("<BBH")
TAG_IB = 0x20
CTL_CREDITS = 0
CTL_RDMA = 1  # eager-RDMA connect: the ring's rkey and address
CTL_COALESCED = 2
CTL_CTS = 3
HDR_LEN = HEADER.size
CTL_LEN = CREDIT_BODY.size  # an explicit credit message's body

SEND = 0
RECV = 1
CREDIT = 2
CTS = 3
RDMA = 4


QP_TX_BATCH_COUNT = 64
"""``sendi`` asks for a completion once per this many sends on a QP (Open MPI's
``QP_TX_BATCH_COUNT``), or at once when WQEs, SRQ credits or the inline limit run out."""


class Frag:
    """A registered buffer and what it is being used for (Open MPI's frag descriptors).

    ``qp`` is the receive-queue index whose buffers this frag belongs to (its size
    class); ``order`` the QP it is posted on (differs from ``qp`` for credit buffers
    and credit messages under the ``smallest`` policy).
    """

    __slots__ = (
        "kind",
        "buf",
        "mr",
        "qp",
        "order",
        "ep",
        "length",
        "tag",
        "on_complete",
        "high",
        "credit_qp",
        "payload_len",
        "trace_id",
        "eager",
        "unsignaled",
        "unsignaled_srq",
        "_sges",
    )

    def __init__(self, kind: int, buf: np.ndarray, mr, qp: int, trace_id: int = -1):
        self.trace_id = trace_id
        self.eager = False  # written through an eager-RDMA channel
        self.kind = kind
        self.buf = buf
        self.mr = mr
        self.qp = qp
        self.order = qp
        self.ep = None
        self.length = 0
        self.tag = 0
        self.on_complete = None
        self.high = False
        self.credit_qp = qp
        self.payload_len = 0
        self.unsignaled = 0  # unsignaled WQEs before this signaled one (returned with it)
        self.unsignaled_srq = 0  # ... and the SRQ credits they took
        self._sges = None

    def sges(self, length: int) -> tuple[Sge]:
        """The scatter list of the buffer's first ``length`` bytes, kept for the next
        post of the same length: an ``Sge`` is immutable, and building one costs more
        than the rest of a small post."""
        sges = self._sges
        if sges is None or sges[0].length != length:
            mr = self.mr
            sges = self._sges = (Sge(mr.addr, length, mr.lkey),)
        return sges


class _Unsignaled:
    """The ``wr_id`` of every send posted without a completion (``sendi``). Its frag went
    back to the free list when it was posted (the bytes travel inline in the WQE), so the
    work request must not name it: an error or flush completion, which every WR gets,
    would otherwise hand back a frag that is already someone else's. Such a completion
    finds its endpoint and QP through its ``qp_num``."""

    __slots__ = ()
    trace_id = -1

    def __repr__(self) -> str:
        return "UNSIGNALED"


UNSIGNALED = _Unsignaled()
