"""The NIC model: work-queue engines, the transmit arbiter and the RC transport.

``Nic`` composes the adapter from parts, each a class with declared state that owns its
rules: ``memory`` (the MPT: registration, gather, scatter), ``pcie`` (the host bus),
``engine`` (``work_queue``: posting, doorbells, the engines, packetisation), ``port``
(the transmit arbiter), ``requester`` and ``responder`` (the two halves of RC). The
``Nic`` itself keeps what spans them: the QP and SRQ tables, the receive dispatch, the
completion writes and a QP's transition to ERROR (which empties every part's queues).
``qp`` has the per-QP state objects the parts work on, and the constants they share.

What a device model decides here (all from ``DeviceModel`` data, no vendor subclasses):

* **Work-queue architecture.** ``split``: a QP's send WRs are processed by a send engine
  and its receive WRs become usable ``recv_usable`` after ``post_recv``, independently.
  ``shared`` (Chelsio T3): send and receive WRs of a QP sit in ONE FIFO processed in
  order, and a receive entry is processed only once every send ahead of it has left the
  wire, so a receive posted behind queued sends becomes usable only after those sends
  have left. This is the property that makes the credit race fatal on T3. The engine may
  fetch the next send's payload while the previous send transmits (``SEND_PREFETCH``),
  which is how the T3 streams near link rate. ``firmware`` (IBM eHCA): the HCA's
  firmware works through each QP's doorbells in order, sends and receive posts alike,
  so a receive posted behind queued sends becomes usable once those sends have been
  processed (fetched and cut into packets), not once they have left: the same race,
  with a smaller hole.
* **Transport.** RC: reliable, in order per QP; a SEND consumes the oldest posted
  receive, which must be *usable*. When it is not: InfiniBand answers RNR NAK and the
  requester retries after ``min_rnr_timer`` up to ``rnr_retry`` times (7 = forever), then
  completes with RNR_RETRY_EXC_ERR; iWARP has no RNR: the responder sends TERMINATE and
  both QPs go to ERROR, outstanding WRs flushed.
* **Retransmission.** Packets can be lost (``Fabric.set_loss``). The requester keeps one
  transport timer per QP (IB's Local ACK Timeout, 4.096 us x 2^``timeout``; 0 = never):
  when the oldest unacknowledged message sees no progress for that long, it goes back and
  retransmits every unacknowledged message, at most ``retry_cnt`` times in a row, then
  completes the WR with RETRY_EXC_ERR and the QP goes to ERROR. A responder that sees a
  PSN gap answers one sequence-error NAK (the requester goes back at once, counted as a
  retry too) and drops what follows until the missing packet comes; duplicates are
  re-ACKed (a duplicate READ request is executed again). iWARP rides on TCP, which
  retransmits the same way; the model uses the same two knobs for it.
* **Timing.** Doorbell (host_post + PCIe), per-WQE processing, DMA at PCIe rate (a read
  is a round trip, a write is posted), serialization at link rate with per-packet
  round-robin arbitration between QPs, completion write. Cut-through, not
  store-and-forward: a message's first packet leaves once its bytes are read, later
  packets as theirs are (``Packet.ready``), and the receiver writes each packet to host
  memory as it arrives. Every duration goes through ``sim.duration`` (a choice point).
"""

from __future__ import annotations

import numpy as np

from .memory import HwMr, MemoryTable
from .packet import ACK, DATA, NAK_RNR, NAK_SEQ, READ_REQ, READ_RESP, TERMINATE, Packet
from .pcie import PcieBus
from .port import TransmitPort
from .qp import (
    EMPTY,
    HEADER_BYTES,
    HwQp,
    HwSrq,
    QpAttributes,
    QpState,
    flush_wc,
    header_kind,
    trace_id,
)
from .requester import Requester
from .responder import Responder
from .work import (
    AsyncEvent,
    AsyncEventType,
    SendWR,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    wc_opcode_of,
)
from .work_queue import WorkQueueEngine

__all__ = ["Nic"]

_RTR = QpState.RTR
FIRST_QPN = 0x40
"""The number of a NIC's first QP (lower numbers are reserved, as QP0 and QP1 are)."""
_ERROR = QpState.ERROR


class Nic:
    """One RDMA NIC (one port) attached to a fabric.

    Several processes of a host share it, each through its own verbs context: QP numbers,
    memory keys and addresses are the NIC's (unique on the host), the transmit arbiter is
    shared, and an asynchronous event goes to the handler of the context that created the
    QP or SRQ it concerns (ibverbs' affiliated events). A packet addressed to the NIC's
    own LID is looped back inside the adapter, never reaching the switch.
    """

    __slots__ = (
        "sim",
        "model",
        "fabric",
        "name",
        "lid",
        "_qps",
        "_attributes",
        "_created",
        "_modified",
        "memory",
        "pcie",
        "port",
        "engine",
        "requester",
        "responder",
        "post_send",
        "post_recv",
        "_next_qpn",
        "_next_srq",
        "_next_cqn",
    )

    def __init__(self, sim, model, fabric, name: str):
        self.sim = sim
        self.model = model
        self.fabric = fabric
        self.name = name
        self.lid = fabric.attach(self)
        self._qps: list[HwQp | None] = []
        """QP ``FIRST_QPN + i`` at index i, ``None`` once destroyed (numbers are never
        reused): a table, as the adapter's QP context table is; a job of 1024 ranks has
        four million QPs, and a dict entry and an int key are ~80 bytes each."""
        self._attributes: dict[tuple, QpAttributes] = {}
        """Every distinct ``QpAttributes`` of this NIC's QPs, by value (see there), and
        the ways to them: by creation arguments, and by (attributes, modify's changes).
        A connection's QPs are created and modified alike, so each is one lookup."""
        self._created: dict[tuple, QpAttributes] = {}
        self._modified: dict[tuple, QpAttributes] = {}
        self._next_qpn = FIRST_QPN
        self._next_srq = 1
        self._next_cqn = 0
        iwarp = model.transport == "iwarp"
        header_bytes = HEADER_BYTES[header_kind(model.transport, model.link_layer)]
        self.memory = MemoryTable()
        self.pcie = PcieBus(sim, model)
        self.port = TransmitPort(self)
        self.engine = WorkQueueEngine(self, header_bytes, model.work_queue)
        self.requester = Requester(self)
        self.responder = Responder(self, header_bytes, iwarp)
        self.port.engine = self.engine
        self.port.requester = self.requester
        self.post_send = self.engine.post_send
        """``ibv_post_send``'s doorbell: the engine takes the WR from here."""
        self.post_recv = self.engine.post_recv

    # -- resources -----------------------------------------------------------------------
    def register_mr(self, buffer: np.ndarray, access: int) -> HwMr:
        return self.memory.register(buffer, access)

    def deregister_mr(self, mr: HwMr) -> None:
        self.memory.deregister(mr)

    def create_qp(
        self,
        send_cq,
        recv_cq,
        srq: HwSrq | None,
        max_send_wr: int,
        max_recv_wr: int,
        max_inline: int,
        async_handler=None,
        user=None,
    ) -> HwQp:
        """A new QP in RESET; ``user``: what its creator keeps with it."""
        created = (send_cq, recv_cq, srq, max_send_wr, max_recv_wr, max_inline, async_handler)
        attrs = self._created.get(created)
        if attrs is None:
            attrs = self._created[created] = self._interned(
                QpAttributes(*created, self.model.mtu_max)
            )
        qpn = self._next_qpn
        self._next_qpn += 1
        qp = HwQp(self, qpn, attrs, user)
        self._qps.append(qp)
        return qp

    def modify_attributes(self, qp: HwQp, changes: tuple) -> None:
        """Apply ``ibv_modify_qp``'s ``changes`` ((name, value) pairs of
        ``QpAttributes.MODIFIABLE``) to ``qp``'s attributes."""
        step = (qp.attrs, changes)
        attrs = self._modified.get(step)
        if attrs is None:
            attrs = self._modified[step] = self._interned(qp.attrs.modified(dict(changes)))
        qp.attrs = attrs

    def _interned(self, attrs: QpAttributes) -> QpAttributes:
        """The one instance of ``attrs``'s value on this NIC (it, the first time)."""
        return self._attributes.setdefault(attrs.key(), attrs)

    def qp(self, qpn: int) -> HwQp | None:
        """The live QP numbered ``qpn``; None for a number the NIC does not know."""
        i = qpn - FIRST_QPN
        if 0 <= i < len(self._qps):
            return self._qps[i]
        return None

    def live_qps(self) -> list[HwQp]:
        """Every QP not destroyed, by number."""
        return [qp for qp in self._qps if qp is not None]

    def alloc_cqn(self) -> int:
        """A number for a new completion queue, unique on this NIC (the CQN a device
        assigns): what names a CQ in a footprint (``check/footprint.py``)."""
        cqn = self._next_cqn
        self._next_cqn += 1
        return cqn

    def destroy_qp(self, qp: HwQp) -> None:
        """Forget ``qp``: packets addressed to its number are dropped from now on, as for
        any QP number the NIC does not know."""
        self._qps[qp.qpn - FIRST_QPN] = None

    def create_srq(self, max_wr: int, async_handler=None) -> HwSrq:
        srq = HwSrq(self, max_wr, self._next_srq, async_handler)
        self._next_srq += 1
        return srq

    def raise_async(self, handler, event_type: AsyncEventType, qp_num: int, reason: str) -> None:
        """An affiliated asynchronous event, delivered to ``handler``: the context owning
        the QP, SRQ or CQ (``None``: an object no context owns, nobody hears it)."""
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "async", self.name, event=event_type.name, qp=qp_num, reason=reason)
        if handler is not None:
            handler(AsyncEvent(event_type, self.sim.now, qp_num, reason))

    # -- the receive side of the port ----------------------------------------------------
    def receive_packet(self, pkt: Packet) -> None:
        """A packet off the link (or looped back): the responder takes requests, the
        requester the answers to its own."""
        qps = self._qps
        i = pkt.dst_qpn - FIRST_QPN  # ``qp``, inlined: every packet comes here
        qp = qps[i] if 0 <= i < len(qps) else None
        if qp is None or qp.state < _RTR:
            return  # no such QP (or not ready): dropped, as a real HCA does
        kind = pkt.kind
        if kind == DATA:
            self.responder.rx_data(qp, pkt)
        elif kind == ACK:
            self.requester.rx_ack(qp, pkt.msn)
        elif kind == READ_RESP:
            self.requester.rx_read_resp(qp, pkt)
        elif kind == READ_REQ:
            self.responder.rx_read_req(qp, pkt)
        elif kind == NAK_RNR:
            self.requester.rx_rnr_nak(qp, pkt)
        elif kind == NAK_SEQ:
            self.requester.rx_seq_nak(qp, pkt)
        elif kind == TERMINATE:
            self.requester.rx_terminate(qp, pkt)
        else:  # NAK_ACCESS / NAK_INVALID
            self.requester.rx_error_nak(qp, pkt)

    # -- errors and completions ----------------------------------------------------------
    def fail_send(self, qp: HwQp, wr: SendWR, status: WcStatus, reason: str) -> None:
        """Complete ``wr`` with ``status`` (always, signaled or not), then flush the rest."""
        inflight = qp.req.inflight
        for i, msg in enumerate(inflight):
            if msg.wr is wr:
                del inflight[i]
                if not inflight:
                    qp.req.inflight = EMPTY
                break
        qp.sq.outstanding -= 1
        wc = WorkCompletion(wr.wr_id, status, wc_opcode_of(wr.opcode), qp.qpn, 0, vendor_err=1)
        self.push_cqe(qp, qp.send_cq, wc, True)
        tr = self.sim.tracer
        if tr is not None:
            tr.emit(
                "hw",
                "wc_error",
                qp.actor,
                wr_id=trace_id(wr.wr_id),
                status=status.name,
                reason=reason,
            )
        self.to_error(qp, None)

    def to_error(self, qp: HwQp, async_reason: str | None) -> None:
        """QP to ERROR: every outstanding WR completes with WR_FLUSH_ERR, in every part's
        queue (in flight, not yet started, posted receives); with ``async_reason`` the
        owner also hears QP_FATAL (a transport failure, not ``modify_qp(ERROR)``)."""
        if qp.state == _ERROR:
            return
        qp.state = _ERROR
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "qp_error", qp.actor, reason=async_reason or "error completion")
        qp.tx.packets = EMPTY
        qp.tx.paused = False
        flushed_sends = [msg.wr for msg in qp.req.inflight]
        qp.req.inflight = EMPTY
        wq = qp.wq
        for item in wq.fifo:
            if type(item) is not list:
                flushed_sends.append(item)
        wq.fifo = EMPTY
        wq.leaving.clear()
        for wr in flushed_sends:
            self.flush_send(qp, wr)
        entries = qp.rq.entries
        while entries:
            wr = entries.popleft()[0]
            self.push_cqe(qp, qp.recv_cq, flush_wc(qp, wr, WcOpcode.RECV), False)
        resp = qp.resp
        if resp.cur_recv is not None:
            self.push_cqe(qp, qp.recv_cq, flush_wc(qp, resp.cur_recv, WcOpcode.RECV), False)
            resp.cur_recv = None
        if async_reason is not None:
            self.raise_async(qp.async_handler, AsyncEventType.QP_FATAL, qp.qpn, async_reason)

    def flush_send(self, qp: HwQp, wr: SendWR) -> None:
        """``wr`` completes with WR_FLUSH_ERR (the QP is in ERROR)."""
        qp.sq.outstanding -= 1
        self.push_cqe(qp, qp.send_cq, flush_wc(qp, wr, wc_opcode_of(wr.opcode)), True)

    def push_cqe(self, qp: HwQp, cq, wc: WorkCompletion, send_side: bool, extra: int = 0):
        """Write a CQE after the completion-write latency, in order per QP and side."""
        sim = self.sim
        now = sim.now
        c = self.model.cqe
        when = now + extra + (c[1] if sim.nominal else sim.duration("nic.cqe", *c))
        side = qp.sq if send_side else qp.rq
        if when < side.last_cqe:
            when = side.last_cqe
        side.last_cqe = when
        sim.schedule(when - now, cq.push, wc)
