"""The NIC model: work-queue engines, the transmit arbiter and the RC transport.

``Nic`` holds the adapter's state (resources, PCIe, completions, errors); its behaviour
is split by concept into mixins: ``work_queue`` (posting, engines), ``port`` (transmit
arbiter), ``responder`` and ``requester`` (the two halves of RC); ``qp`` has the state
records and constants they share.

What a device model decides here (all from ``DeviceModel`` data, no vendor subclasses):

* **Work-queue architecture.** ``split``: a QP's send WRs are processed by a send engine
  and its receive WRs become usable ``recv_usable`` after ``post_recv``, independently.
  ``shared`` (Chelsio T3): send and receive WRs of a QP sit in ONE FIFO processed in
  order, and a receive entry is processed only once every send ahead of it has left the
  wire, so a receive posted behind queued sends becomes usable only after those sends
  have left. This is the property that makes the credit race fatal on T3. The engine may
  fetch the next send's payload while the previous send transmits (``SEND_PREFETCH``),
  which is how the T3 streams near link rate.
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
* **Timing.** Doorbell (host_post + PCIe), per-WQE processing, DMA at PCIe rate,
  serialization at link rate with per-packet round-robin arbitration between QPs,
  completion write. Every duration goes through ``sim.duration`` (a choice point).
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .packet import (
    Packet,
)
from .port import TransmitPort
from .qp import (
    HEADER_BYTES,
    PCIE_REQUEST_BYTES,
    HwMr,
    HwQp,
    HwSrq,
    QpState,
    _flush_wc,
    _trace_id,
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


class Nic(WorkQueueEngine, TransmitPort, Responder, Requester):
    """One RDMA NIC (one port) attached to a fabric.

    Several processes of a host share it, each through its own verbs context: QP numbers,
    memory keys and addresses are the NIC's (unique on the host), the transmit arbiter is
    shared, and an asynchronous event goes to the handler of the context that created the
    QP or SRQ it concerns (ibverbs' affiliated events). A packet addressed to the NIC's
    own LID is looped back inside the adapter, never reaching the switch.
    """

    def __init__(self, sim, model, fabric, name: str):
        self.sim = sim
        self.model = model
        self.fabric = fabric
        self.name = name
        self.header_bytes = HEADER_BYTES["iwarp" if model.transport == "iwarp" else "ib"]
        self.iwarp = model.transport == "iwarp"
        self.shared_wq = model.work_queue == "shared"
        self.lid = fabric.attach(self)
        self.mpt: dict[int, HwMr] = {}
        self.qps: dict[int, HwQp] = {}
        self._next_key = 0x100
        self._next_addr = 0x10000000
        self._next_qpn = 0x40
        self._next_srq = 1
        self._ps_per_byte = model.ps_per_byte
        self._pcie_ps_per_byte = model.pcie_ps_per_byte
        self._pcie_to_nic = 0  # when each PCIe direction is free again (ps)
        self._pcie_to_host = 0
        # transmit arbiter: control packets first, then round-robin over QPs
        self._ctrl: deque[Packet] = deque()
        self._active: deque[HwQp] = deque()
        self._tx_busy = False
        self.bytes_transmitted = 0

    # -- resources -----------------------------------------------------------------------
    def register_mr(self, buffer: np.ndarray, access: int) -> HwMr:
        key = self._next_key
        self._next_key += 1
        addr = self._next_addr
        self._next_addr += (buffer.nbytes + 4095) // 4096 * 4096 + 4096
        mr = HwMr(buffer, addr, key, access)
        self.mpt[key] = mr
        return mr

    def deregister_mr(self, mr: HwMr) -> None:
        self.mpt.pop(mr.lkey, None)

    def create_qp(self, send_cq, recv_cq, srq, max_send_wr: int, async_handler=None) -> HwQp:
        qpn = self._next_qpn
        self._next_qpn += 1
        qp = HwQp(self, qpn, send_cq, recv_cq, srq, max_send_wr, async_handler)
        self.qps[qpn] = qp
        return qp

    def destroy_qp(self, qp: HwQp) -> None:
        """Forget ``qp``: packets addressed to its number are dropped from now on, as for
        any QP number the NIC does not know."""
        del self.qps[qp.qpn]

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

    def _dma(self, nbytes: int, to_nic: bool) -> int:
        """Delay until ``nbytes`` have crossed PCIe: each direction is one shared bus
        (reads host->NIC for sends and READ responses, writes NIC->host for receives), so
        concurrent transfers queue for it; then the bus latency. A transfer no larger than
        one PCIe request (``PCIE_REQUEST_BYTES``) slips between the requests of larger
        ones instead of waiting for them to finish, as interleaved DMA requests do; it
        still uses its share of the bandwidth."""
        now = self.sim.now
        busy = self._pcie_to_nic if to_nic else self._pcie_to_host
        start = busy if busy > now else now
        xfer = int(nbytes * self._pcie_ps_per_byte)
        end = start + xfer
        if to_nic:
            self._pcie_to_nic = end
        else:
            self._pcie_to_host = end
        if nbytes <= PCIE_REQUEST_BYTES:
            end = now + xfer
        pl = self.model.pcie_latency
        sim = self.sim
        return end - now + (pl[1] if sim.nominal else sim.duration("nic.pcie", *pl))

    def _dur(self, label: str, interval) -> int:
        return self.sim.duration(label, interval[0], interval[1], interval[2])

    # -- errors and completions ----------------------------------------------------------
    def _requester_error(self, qp: HwQp, wr: SendWR, status: WcStatus, reason: str) -> None:
        """Complete ``wr`` with ``status`` (always, signaled or not), then flush the rest."""
        for i, msg in enumerate(qp.inflight):
            if msg.wr is wr:
                del qp.inflight[i]
                break
        qp.sq_outstanding -= 1
        wc = WorkCompletion(wr.wr_id, status, wc_opcode_of(wr.opcode), qp.qpn, 0, vendor_err=1)
        self._push_cqe(qp, qp.send_cq, wc, True)
        tr = self.sim.tracer
        if tr is not None:
            tr.emit(
                "hw",
                "wc_error",
                qp.actor,
                wr_id=_trace_id(wr.wr_id),
                status=status.name,
                reason=reason,
            )
        self._to_error(qp, None)

    def _to_error(self, qp: HwQp, async_reason: str | None) -> None:
        """QP to ERROR: every outstanding WR completes with WR_FLUSH_ERR."""
        if qp.state == QpState.ERROR:
            return
        qp.state = QpState.ERROR
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "qp_error", qp.actor, reason=async_reason or "error completion")
        qp.tx.clear()
        qp.paused = False
        flushed_sends = [msg.wr for msg in qp.inflight]
        qp.inflight.clear()
        for item in qp.work:
            if type(item) is not list:
                flushed_sends.append(item)
        qp.work.clear()
        qp.leaving.clear()
        for wr in flushed_sends:
            self._flush_send(qp, wr)
        while qp.rq:
            wr = qp.rq.popleft()[0]
            self._push_cqe(qp, qp.recv_cq, _flush_wc(qp, wr, WcOpcode.RECV), False)
        if qp.cur_recv is not None:
            self._push_cqe(qp, qp.recv_cq, _flush_wc(qp, qp.cur_recv, WcOpcode.RECV), False)
            qp.cur_recv = None
        if async_reason is not None:
            self.raise_async(qp.async_handler, AsyncEventType.QP_FATAL, qp.qpn, async_reason)

    def _flush_send(self, qp: HwQp, wr: SendWR) -> None:
        qp.sq_outstanding -= 1
        self._push_cqe(qp, qp.send_cq, _flush_wc(qp, wr, wc_opcode_of(wr.opcode)), True)

    def _push_cqe(self, qp: HwQp, cq, wc: WorkCompletion, send_side: bool, extra: int = 0):
        """Write a CQE after the completion-write latency, in order per QP and side."""
        sim = self.sim
        now = sim.now
        c = self.model.cqe
        when = now + extra + (c[1] if sim.nominal else sim.duration("nic.cqe", *c))
        if send_side:
            if when < qp.last_send_cqe:
                when = qp.last_send_cqe
            qp.last_send_cqe = when
        else:
            if when < qp.last_recv_cqe:
                when = qp.last_recv_cqe
            qp.last_recv_cqe = when
        sim.schedule(when - now, cq.push, wc)
