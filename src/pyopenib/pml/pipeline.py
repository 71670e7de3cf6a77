"""ob1's rendezvous protocols without leave_pinned: which one a message takes after its
RTS, and the two schedules that move its rest without registering it whole.

Open MPI 4.1 (``pml_ob1_sendreq.c``, ``pml_ob1_recvreq.c``, ``pml_ob1_rdma.c``) chooses
per message, from ``opal_leave_pinned`` and the BTL's ``btl_min_rdma_pipeline_size``:

* **RDMA** (the rest in one registration per side, ``FLAG_PIN``): with leave_pinned
  always; without it when the message is at most min_rdma_pipeline_size, because
  ``mca_pml_ob1_rdma_btls`` then still registers the buffer (and releases it after).
  The receiver registers its own buffer by the same rule; pyopenib's ob1 ACKs with the
  key and the sender RDMA-writes (``Pml._on_ack``).
* **RDMA pipeline + copy in/out** (a larger message, not registered by the sender):
  ``mca_pml_ob1_recv_request_ack`` starts copy in/out at ``total -
  rdma_pipeline_send_length`` and covers the bytes between the RTS and there by the RDMA
  pipeline: the receiver registers its buffer piece by piece (``rdma_pipeline_frag_size``,
  at most ``recv_pipeline_depth`` pieces asked for at once), asks for each with a PUT,
  the sender registers the same piece of its buffer, writes it, releases it and sends
  PUT_FIN, the receiver releases its piece. The copy-in/out tail leaves unthrottled;
  with a send length of 0 there is none, no ACK, and the pipeline moves everything.
* **Copy in/out** (everything after the RTS): when the receiver cannot register (its
  buffer too big for the rule above while the sender pinned, or no pipeline applies):
  the ACK carries ``FLAG_NORDMA`` and the sender keeps at most ``send_pipeline_depth``
  fragments in flight (``req_throttle_sends``), sending the next as one completes.

Copy-in/out fragments are FRAGs of up to ``max_send_size`` (header included) sent at
normal priority, so on the openib BTL they take the queue their size selects (the
largest, on the T3's two per-peer queues); registrations go through the BTL's
registration cache, which keeps them only under leave_pinned or its pipeline variant.

Non-contiguous datatypes: the MPI layer packs them whole before the PML, so here they
travel as contiguous data would (Open MPI sends them by copy in/out, the convertor
packing each fragment).
"""

from __future__ import annotations

from functools import partial

import numpy as np

from ..btl.interface import RendezvousLimits
from .header import (
    BTL_TAG_PML,
    FRAG,
    FRAG_HDR,
    PUT,
    PUT_FIN,
    PUT_FIN_HDR,
    PUT_HDR,
)

__all__ = ["CopyInOut", "RdmaPipeline", "RendezvousPaths", "copy_offset", "sender_pins"]

_FRAG_LEN = FRAG_HDR.size


def sender_pins(limits: RendezvousLimits | None, nbytes: int) -> bool:
    """Whether ob1 registers a side's buffer of ``nbytes`` for RDMA
    (``mca_pml_ob1_rdma_btls``): always when the BTL needs no registration (None) or
    registrations are left pinned; otherwise only up to min_rdma_pipeline_size."""
    return limits is None or limits.leave_pinned or nbytes <= limits.min_rdma_pipeline_size


def copy_offset(limits: RendezvousLimits, total: int, first: int) -> int:
    """Where copy in/out starts when the two buffers are not both registered
    (``mca_pml_ob1_recv_request_ack``'s ``req_send_offset``): for a message larger than
    min_rdma_pipeline_size, ``rdma_pipeline_send_length`` before its end (not before the
    RTS's end), the RDMA pipeline covering the bytes before it; else ``first``: all by
    copy in/out. ``total``: no copy in/out at all, the pipeline moves everything."""
    if total > limits.min_rdma_pipeline_size:
        return max(first, total - limits.rdma_pipeline_send_length)
    return first


class CopyInOut:
    """A sender's copy-in/out range of one request (ob1's send range): bytes
    ``[offset, end)`` still to send, fragments in flight, and the throttle (None when the
    ACK did not say NORDMA)."""

    __slots__ = ("offset", "end", "in_flight", "depth")

    def __init__(self, offset: int, end: int, depth: int | None):
        self.offset = offset
        self.end = end
        self.in_flight = 0
        self.depth = depth


class RdmaPipeline:
    """A receiver's RDMA-pipeline schedule of one request: bytes ``[offset, end)`` not yet
    asked for, and the pieces asked for (offset -> registration, length) until their
    PUT_FIN."""

    __slots__ = ("peer", "send_id", "offset", "end", "pieces")

    def __init__(self, peer: int, send_id: int, offset: int, end: int):
        self.peer = peer
        self.send_id = send_id
        self.offset = offset
        self.end = end
        self.pieces: dict[int, tuple[object, int]] = {}


class RendezvousPaths:
    """The copy-in/out and RDMA-pipeline halves of one process's ob1 (sender and
    receiver). The PML hands a request over after its ACK (sender) or after sending
    its ACK (receiver); the request completes through ``pml.complete_send`` /
    ``pml.complete_recv`` once every byte is delivered."""

    def __init__(self, pml, live: dict):
        self._pml = pml
        self._live = live  # the PML's incomplete requests by id
        self.btl = pml.btl
        self._host = pml.btl.host

    # -- sender -------------------------------------------------------------------------
    def start_copy(self, req, offset: int, nordma: bool, limits: RendezvousLimits) -> None:
        """The ACK said: send ``[offset, end)`` by copy in/out (throttled if ``nordma``)."""
        depth = limits.send_pipeline_depth if nordma else None
        req.copy = CopyInOut(offset, len(req.data), depth)
        self._schedule_copy(req)

    def _schedule_copy(self, req) -> None:
        """``mca_pml_ob1_send_request_schedule_once``: FRAGs of up to max_send_size while
        the range lasts and the throttle allows."""
        copy = req.copy
        step = self._pml.frag_size(req.peer) - _FRAG_LEN
        host = self._host
        data = req.data
        while copy.offset < copy.end and (copy.depth is None or copy.in_flight < copy.depth):
            off = copy.offset
            n = min(step, copy.end - off)
            host.owed += host.btl_send + host.copy(n)  # the descriptor and the copy in
            msg = b"".join((FRAG_HDR.pack(FRAG, req.recv_id, off), data[off : off + n]))
            copy.offset = off + n
            copy.in_flight += 1
            self.btl.send(req.peer, BTL_TAG_PML, msg, partial(self._frag_sent, req, n), False)

    def _frag_sent(self, req, n: int) -> None:
        req.copy.in_flight -= 1
        self._delivered(req, n)
        if not req.complete:
            self._schedule_copy(req)

    def on_put(self, req, recv_id: int, key: int, offset: int, n: int) -> None:
        """The receiver asks for the piece at ``offset``: register the same piece here,
        RDMA-write it (``mca_pml_ob1_send_request_put``)."""
        req.recv_id = recv_id
        handle = self.btl.register_memory(req.data[offset : offset + n])
        self._host.owed += self._host.btl_send  # the RDMA write's descriptor
        done = partial(self._put_done, req, handle, offset, n)
        self.btl.put(req.peer, handle, 0, key, 0, n, done)

    def _put_done(self, req, handle, offset: int, n: int) -> None:
        self.btl.deregister_memory(handle)
        self._host.owed += self._host.btl_send  # the PUT_FIN's descriptor
        self._pml.send_control(req.peer, PUT_FIN_HDR.pack(PUT_FIN, req.recv_id, offset))
        self._delivered(req, n)

    def _delivered(self, req, n: int) -> None:
        req.pending -= n
        if req.pending == 0:
            self._pml.complete_send(req)

    # -- receiver -----------------------------------------------------------------------
    def start_pipeline(
        self, req, peer: int, send_id: int, first: int, copy_from: int, limits: RendezvousLimits
    ) -> None:
        """After the ACK (none when ``copy_from`` is the end): ask for ``[first,
        copy_from)`` by the RDMA pipeline."""
        if copy_from > first:
            req.pipeline = RdmaPipeline(peer, send_id, first, copy_from)
            self._schedule_puts(req, limits)

    def _schedule_puts(self, req, limits: RendezvousLimits) -> None:
        """``mca_pml_ob1_recv_request_schedule_once``: register the next piece, PUT."""
        pipe = req.pipeline
        piece = limits.rdma_pipeline_frag_size or pipe.end
        host = self._host
        while pipe.offset < pipe.end and len(pipe.pieces) < limits.recv_pipeline_depth:
            off = pipe.offset
            n = min(piece, pipe.end - off)
            handle = self.btl.register_memory(req._target[off : off + n])
            pipe.pieces[off] = (handle, n)
            pipe.offset = off + n
            host.owed += host.btl_send  # the PUT's descriptor
            hdr = PUT_HDR.pack(PUT, pipe.send_id, req.id, handle.key, off, n)
            self._pml.send_control(pipe.peer, hdr)

    def on_put_fin(self, req, offset: int) -> None:
        """The piece at ``offset`` is written: release it, ask for the next."""
        pipe = req.pipeline
        handle, n = pipe.pieces.pop(offset)
        self.btl.deregister_memory(handle)
        self._received(req, n)
        if not req.complete:
            self._schedule_puts(req, self._pml.rendezvous_limits(pipe.peer))

    def on_frag(self, req, offset: int, payload) -> None:
        """A copy-in/out fragment: copy it out of the BTL's buffer into place."""
        n = len(payload)
        self._host.owed += self._host.copy(n)
        req._target[offset : offset + n] = np.frombuffer(payload, np.uint8)
        self._received(req, n)

    def _received(self, req, n: int) -> None:
        req.pending -= n
        if req.pending == 0:
            req.pipeline = None
            self._pml.complete_recv(req)

    def on_message(self, kind: int, view) -> None:
        """Dispatch a FRAG, PUT or PUT_FIN to its request."""
        live = self._live
        if kind == FRAG:
            _, recv_id, offset = FRAG_HDR.unpack_from(view)
            self.on_frag(live[recv_id], offset, view[_FRAG_LEN:])
        elif kind == PUT:
            _, send_id, recv_id, key, offset, n = PUT_HDR.unpack_from(view)
            self.on_put(live[send_id], recv_id, key, offset, n)
        else:
            _, recv_id, offset = PUT_FIN_HDR.unpack_from(view)
            self.on_put_fin(live[recv_id], offset)
