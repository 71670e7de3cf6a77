"""Fragments and the openib header, as on the wire.

``mca_btl_openib_header_t`` is 4 bytes: ``tag:u8, cm_seen:u8, credits:u16``. Control
messages use tag ``MCA_BTL_TAG_IB`` (0x20) and start their payload with a 1-byte type;
an explicit credit message's body is ``type:u8, qpn:u8, rdma_credits:u16``. Header bytes
are counted in the wire size, as in Open MPI.
"""

from __future__ import annotations

import mmap
import struct

import numpy as np

from ..verbs import Sge

__all__ = [
    "Frag",
    "FragBuffers",
    "HEADER",
    "TAG_IB",
    "CTL_CREDITS",
    "CTL_CTS",
    "CREDIT_BODY",
    "UNSIGNALED",
]

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
        "_buf",
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

    def __init__(self, kind: int, buf: np.ndarray | None, mr, qp: int, trace_id: int = -1):
        """``buf`` None: a buffer of a chunk, ``mr`` its ``FragSlice``; its view is made
        on first read (``buf``)."""
        self.trace_id = trace_id
        self.eager = False  # written through an eager-RDMA channel
        self.kind = kind
        self._buf = buf
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

    @property
    def buf(self) -> np.ndarray:
        """The buffer's bytes, viewed on first read: a receive buffer posted at start-up
        that no message lands in never needs its view (112 bytes; the default SRQs post
        832 a rank)."""
        buf = self._buf
        if buf is None:
            buf = self._buf = self.mr.view()
        return buf

    @property
    def capacity(self) -> int:
        """The buffer's size in bytes, without viewing it (what a receive post names)."""
        buf = self._buf
        return self.mr.chunk.size if buf is None else buf.nbytes

    def sges(self, length: int) -> tuple[Sge]:
        """The scatter list of the buffer's first ``length`` bytes, kept for the next
        post of the same length: an ``Sge`` is immutable, and building one costs more
        than the rest of a small post."""
        sges = self._sges
        if sges is None or sges[0].length != length:
            mr = self.mr
            sges = self._sges = (Sge(mr.addr, length, mr.lkey),)
        return sges


CHUNK_BYTES = 4 << 20
"""Bytes of buffer memory one chunk of a ``FragBuffers`` maps at a time (at least one
buffer). Big enough that a 4096-rank job maps few regions per process (the kernel's
``vm.max_map_count`` is 65,530), small enough that a rank sending little maps little."""


class FragChunk:
    """One registered chunk of a size class: its bytes, its registration, the size of
    each buffer carved from it."""

    __slots__ = ("array", "mr", "size")

    def __init__(self, array: np.ndarray, mr, size: int):
        self.array = array
        self.mr = mr
        self.size = size


class FragSlice:
    """A fragment buffer's place in its chunk's registration: the SGE address of its
    first byte, and the chunk, whose lkey it shares (what ``ibv_sge`` needs; Open MPI's
    free-list items share their chunk's registration the same way)."""

    __slots__ = ("chunk", "addr")

    def __init__(self, chunk: FragChunk, addr: int):
        self.chunk = chunk
        self.addr = addr

    @property
    def lkey(self) -> int:
        return self.chunk.mr.lkey

    def view(self) -> np.ndarray:
        """The buffer's bytes in its chunk."""
        chunk = self.chunk
        start = self.addr - chunk.mr.addr
        return chunk.array[start : start + chunk.size]


class FragBuffers:
    """The buffers of one size class (one receive queue), carved from registered chunks
    as Open MPI's free lists grow (``ompi_free_list_grow``: one allocation and one
    registration for many fragments).

    A chunk is an anonymous memory map with transparent huge pages refused, so a buffer
    costs resident memory only once something is written into it: a posted receive
    buffer nobody has sent to, or the unused tail of a 64 KiB buffer, costs address space
    only. One ``np.empty`` per buffer cost a page each (the allocator writes a header in
    front of every block): ~2.8 MB per process for the default SRQs' 832 buffers, before
    any message (issue 13)."""

    __slots__ = ("size", "per_chunk", "_pd", "_access", "_chunk", "_next")

    def __init__(self, pd, size: int, access: int):
        self.size = size
        self.per_chunk = max(1, CHUNK_BYTES // size)
        self._pd = pd
        self._access = access
        self._chunk: FragChunk | None = None
        self._next = self.per_chunk

    def take(self) -> FragSlice:
        """A new buffer: where it lies in the current chunk's registration (mapping the
        next chunk when this one is used up)."""
        if self._next == self.per_chunk:
            # private, not mmap's default MAP_SHARED: a forked execution (check's prefix
            # sharing) must not write into its parent's buffers
            area = mmap.mmap(-1, self.size * self.per_chunk, flags=mmap.MAP_PRIVATE)
            area.madvise(mmap.MADV_NOHUGEPAGE)  # else a write may fault in 2 MiB
            array = np.frombuffer(area, dtype=np.uint8)
            self._chunk = FragChunk(array, self._pd.reg_mr(array, self._access), self.size)
            self._next = 0
        offset = self._next * self.size
        self._next += 1
        chunk = self._chunk
        return FragSlice(chunk, chunk.mr.addr + offset)


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
