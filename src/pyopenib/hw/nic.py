"""The NIC model: work-queue engines, the transmit arbiter and the RC transport.

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
from enum import IntEnum

import numpy as np

from .packet import (
    ACK,
    DATA,
    NAK_ACCESS,
    NAK_INVALID,
    NAK_RNR,
    NAK_SEQ,
    READ_REQ,
    READ_RESP,
    TERMINATE,
    Packet,
)
from .work import (
    AsyncEvent,
    AsyncEventType,
    RecvWR,
    SendFlags,
    SendWR,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    WrOpcode,
    wc_opcode_of,
)

__all__ = ["Nic", "HwQp", "HwSrq", "HwMr", "QpState", "Access", "HEADER_BYTES", "rnr_timer_ps"]

PCIE_REQUEST_BYTES = 512
"""PCIe max read request size of the era's chipsets (512 B is the common default): the
granularity at which DMA transfers of different work requests interleave."""

HEADER_BYTES = {"ib": 26, "iwarp": 78}
"""Per-packet wire overhead. IB: LRH 8 + BTH 12 + ICRC 4 + VCRC 2. iWARP over Ethernet:
MAC 14 + FCS 4 + IPv4 20 + TCP 20 + MPA 2+4 (len, CRC) + DDP/RDMAP 14."""
ACK_PAYLOAD = 4  # AETH

SEND_PREFETCH = 1
"""Sends a ``shared`` work-queue engine may have fetched beyond the one on the wire.
Without any, each WR's DMA read (~44 us for 64 KiB on the T3's PCIe-x8 gen1) would
alternate with its transmission (~52 us) and cap send_bw near half the link rate; the
T3 reached ~1.1 GB/s of 1.25, so its engine overlaps them. One is enough to hide the DMA
behind the wire and keeps the receive-ordering property intact (a receive entry still
waits for every earlier send to leave). An assumption about the RDMA engine, not a
documented figure (see docs/devices.md, Transport model)."""

_RNR_TIMER_MS = (
    655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96,
    1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92,
    122.88, 163.84, 245.76, 327.68, 491.52,
)  # fmt: skip


def rnr_timer_ps(code: int) -> int:
    """The IB min_rnr_timer encoding (IBTA table 45) in picoseconds."""
    return int(round(_RNR_TIMER_MS[code] * 1e9))


def ack_timeout_ps(code: int) -> int:
    """IB's Local ACK Timeout, 4.096 us x 2^``timeout`` in picoseconds (0: infinite)."""
    return 4_096_000 << code if code else 0


class QpState(IntEnum):
    RESET = 0
    INIT = 1
    RTR = 2
    RTS = 3
    SQD = 4
    SQE = 5
    ERROR = 6


class Access(IntEnum):
    LOCAL_WRITE = 1
    REMOTE_WRITE = 2
    REMOTE_READ = 4
    REMOTE_ATOMIC = 8


_CONSUMES_RECV = (WrOpcode.SEND, WrOpcode.SEND_WITH_IMM, WrOpcode.RDMA_WRITE_WITH_IMM)


class HwMr:
    """A memory region as the NIC's translation table sees it."""

    __slots__ = ("buffer", "addr", "length", "lkey", "rkey", "access", "on_remote_write")

    def __init__(self, buffer: np.ndarray, addr: int, key: int, access: int):
        self.on_remote_write = None
        """Called after an RDMA WRITE lands: stands for a host CPU polling that memory
        (Open MPI's eager-RDMA rings), so a blocked rank wakes without a completion."""
        self.buffer = buffer
        self.addr = addr
        self.length = buffer.nbytes
        self.lkey = key
        self.rkey = key
        self.access = access

    def contains(self, addr: int, length: int) -> bool:
        return self.addr <= addr and addr + length <= self.addr + self.length


class _Msg:
    """A requester-side message in flight (sent, not yet acknowledged)."""

    __slots__ = ("wr", "msn", "packets", "acked", "rnr_count", "status", "read_data")

    def __init__(self, wr: SendWR, msn: int):
        self.wr = wr
        self.msn = msn
        self.packets: list[Packet] = []
        self.acked = False
        self.rnr_count = 0
        self.status = WcStatus.SUCCESS
        self.read_data = None


class HwSrq:
    """A shared receive queue: receives usable ``recv_usable`` after posting, limit event."""

    __slots__ = ("nic", "max_wr", "entries", "limit", "armed", "srq_num", "last_ready",
                 "async_handler")  # fmt: skip

    def __init__(self, nic, max_wr: int, srq_num: int, async_handler=None):
        self.nic = nic
        self.async_handler = async_handler
        self.max_wr = max_wr
        self.entries: deque = deque()  # [RecvWR, usable]
        self.limit = 0
        self.armed = False
        self.srq_num = srq_num
        self.last_ready = 0

    def post(self, wr: RecvWR) -> None:
        entry = [wr, False]
        self.entries.append(entry)
        sim = self.nic.sim
        when = sim.now + sim.duration("nic.recv_usable", *self.nic.model.recv_usable)
        if when < self.last_ready:
            when = self.last_ready  # receives become usable in posting order
        self.last_ready = when
        sim.schedule(when - sim.now, _mark_usable, entry)

    def take(self):
        entries = self.entries
        if not entries or not entries[0][1]:
            return None
        wr = entries.popleft()[0]
        if self.armed and len(entries) < self.limit:
            self.armed = False
            # ibverbs names the SRQ in the event; the model carries its number in qp_num
            self.nic.raise_async(self.async_handler, AsyncEventType.SRQ_LIMIT_REACHED,
                                 self.srq_num, "limit reached")  # fmt: skip
        return wr

    def arm(self, limit: int) -> None:
        self.limit = limit
        self.armed = limit > 0


def _mark_usable(entry) -> None:
    entry[1] = True


class HwQp:
    """An RC queue pair's hardware context: requester and responder state."""

    def __init__(self, nic, qpn: int, send_cq, recv_cq, srq: HwSrq | None, max_send_wr: int,
                 async_handler=None):  # fmt: skip
        self.nic = nic
        self.qpn = qpn
        self.async_handler = async_handler  # the owning context's (affiliated events)
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.srq = srq
        self.max_send_wr = max_send_wr
        self.state = QpState.RESET
        self.dest_lid = 0
        self.dest_qpn = 0
        self.path_mtu = nic.model.mtu_max
        self.rnr_retry = 7
        self.min_rnr_timer = 12
        self.retry_cnt = 7
        self.timeout = 20
        # requester
        self.next_msn = 0
        self.next_psn = 0
        self.inflight: deque[_Msg] = deque()
        self.tx: deque[Packet] = deque()
        self.in_arbiter = False
        self.paused = False  # between an RNR NAK and the retransmission
        self.sq_outstanding = 0
        self._unsignaled_pending = 0
        # transport timer: one per QP, re-armed lazily (see ``Nic._rto_expired``)
        self.rto_idle = True  # nothing transmitted is waiting for an acknowledgement
        self.rto_armed = False
        self.rto_base = 0  # when the timer (re)started: first transmission or progress
        self.retries = 0  # consecutive retries without progress, against ``retry_cnt``
        self.resp_msn = -1  # the READ response being received, and its next packet
        self.resp_next = 0
        # work queues (``work`` is the single FIFO of a shared device, ``sq`` the send
        # engine's queue of a split device)
        self.work: deque = deque()
        self.engine_busy = False
        self.leaving: deque[int] = deque()  # shared: msns fetched, not yet fully on the wire
        self.rq: deque = deque()  # [RecvWR, usable]
        # responder
        self.expected_msn = 0
        self.expected_psn = 0
        self.seq_nak_sent = False  # one sequence-error NAK per gap, as IB responders do
        self.cur_recv: RecvWR | None = None
        self.cur_write = None
        self.rnr_waiting = False
        self.last_send_cqe = 0
        self.last_recv_cqe = 0
        self.last_doorbell = 0
        self.last_rq_ready = 0
        # statistics
        self.rnr_naks_sent = 0
        self.rnr_naks_received = 0
        self.bytes_sent = 0
        self.messages_sent = 0
        self.retransmissions = 0

    @property
    def actor(self) -> str:
        return f"{self.nic.name}/qp{self.qpn}"

    def recv_backlog(self) -> tuple[int, int]:
        """(posted receives, of which usable) — what a race report wants to show."""
        src = self.srq.entries if self.srq is not None else self.rq
        return len(src), sum(1 for e in src if e[1])


class Nic:
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
        self.qps.pop(qp.qpn, None)

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
        return end - now + self._dur("nic.pcie", self.model.pcie_latency)

    def _dur(self, label: str, interval) -> int:
        return self.sim.duration(label, interval[0], interval[1], interval[2])

    # -- posting (called by verbs after its checks) --------------------------------------
    def post_send(self, qp: HwQp, wr: SendWR) -> None:
        qp.sq_outstanding += 1
        if qp.state == QpState.ERROR:
            self._flush_send(qp, wr)
            return
        m = self.model
        delay = self._dur("nic.doorbell", m.host_post) + self._dur("nic.pcie", m.pcie_latency)
        self.sim.schedule(self._in_order(qp, delay), self._doorbell_send, qp, wr)

    def post_recv(self, qp: HwQp, wr: RecvWR) -> None:
        entry = [wr, False]
        if qp.state == QpState.ERROR:
            self._push_cqe(qp, qp.recv_cq, _flush_wc(qp, wr, WcOpcode.RECV), False)
            return
        qp.rq.append(entry)
        m = self.model
        if self.shared_wq:
            delay = self._dur("nic.doorbell", m.host_post) + self._dur("nic.pcie", m.pcie_latency)
            self.sim.schedule(self._in_order(qp, delay), self._doorbell_recv, qp, entry)
        else:
            delay = self._dur("nic.recv_usable", m.recv_usable)
            when = self.sim.now + delay
            if when < qp.last_rq_ready:
                when = qp.last_rq_ready
            qp.last_rq_ready = when
            self.sim.schedule(when - self.sim.now, self._recv_usable_split, qp, entry)

    def _in_order(self, qp: HwQp, delay: int) -> int:
        """Doorbells of one QP reach the NIC in the order they were rung (PCIe posted
        writes are ordered), whatever durations the oracle picked."""
        when = self.sim.now + delay
        if when < qp.last_doorbell:
            when = qp.last_doorbell
        qp.last_doorbell = when
        return when - self.sim.now

    def _recv_usable_split(self, qp: HwQp, entry) -> None:
        entry[1] = True
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "recv_usable", qp.actor, wr_id=_trace_id(entry[0].wr_id))

    def _doorbell_send(self, qp: HwQp, wr: SendWR) -> None:
        if qp.state == QpState.ERROR:
            return  # already flushed by the error transition
        qp.work.append(wr)
        if not qp.engine_busy:
            self._engine_next(qp)

    def _doorbell_recv(self, qp: HwQp, entry) -> None:
        if qp.state == QpState.ERROR:
            return
        qp.work.append(entry)
        if not qp.engine_busy:
            self._engine_next(qp)

    # -- the work-queue engine -----------------------------------------------------------
    def _engine_next(self, qp: HwQp) -> None:
        """Start the next WR of the QP's queue (send engine, or the shared FIFO)."""
        work = qp.work
        if not work or qp.state == QpState.ERROR:
            qp.engine_busy = False
            return
        if self.shared_wq and qp.leaving:
            # a receive waits until every earlier send has left; a send may be fetched
            # while at most SEND_PREFETCH others wait to leave (``_tx_done`` restarts us)
            if type(work[0]) is list or len(qp.leaving) > SEND_PREFETCH:
                qp.engine_busy = False
                return
        qp.engine_busy = True
        item = work.popleft()
        m = self.model
        if type(item) is list:  # a receive entry in a shared work queue
            self.sim.schedule(self._dur("nic.recv_wqe", m.recv_wqe), self._recv_processed, qp, item)
            return
        wr: SendWR = item
        delay = self._dur("nic.send_wqe", m.send_wqe)
        if wr.opcode != WrOpcode.RDMA_READ and wr.inline_data is None and wr.sg_list:
            delay += self._dma(wr.length, True)
        self.sim.schedule(delay, self._emit, qp, wr)

    def _recv_processed(self, qp: HwQp, entry) -> None:
        entry[1] = True
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "recv_usable", qp.actor, wr_id=_trace_id(entry[0].wr_id))
        self._engine_next(qp)

    def _emit(self, qp: HwQp, wr: SendWR) -> None:
        """The engine has the WR's data: cut it into packets and queue them for transmit."""
        if qp.state == QpState.ERROR:
            return
        opcode = wr.opcode
        payload = b""
        if opcode != WrOpcode.RDMA_READ:
            payload = wr.inline_data if wr.inline_data is not None else self._gather(wr)
            if payload is None:
                self._requester_error(qp, wr, WcStatus.LOC_PROT_ERR, "bad lkey or range")
                return
        msn = qp.next_msn
        qp.next_msn = msn + 1
        msg = _Msg(wr, msn)
        qp.inflight.append(msg)
        hdr = self.header_bytes
        if opcode == WrOpcode.RDMA_READ:
            pkt = Packet(READ_REQ, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, hdr + 16)
            pkt.psn = qp.next_psn
            qp.next_psn += 1
            pkt.msg_len = wr.length
            pkt.remote_addr = wr.remote_addr
            pkt.rkey = wr.rkey
            msg.packets.append(pkt)
        else:
            length = len(payload)
            mtu = qp.path_mtu
            npkts = max(1, (length + mtu - 1) // mtu)
            psn = qp.next_psn
            qp.next_psn = psn + npkts
            for i in range(npkts):
                chunk = min(mtu, length - i * mtu) if length else 0
                extra = (
                    16
                    if i == 0 and opcode in (WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM)
                    else 0
                )
                pkt = Packet(
                    DATA, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, hdr + chunk + extra
                )
                pkt.psn = psn + i
                pkt.first = i == 0
                pkt.last = i == npkts - 1
                pkt.opcode = opcode
                pkt.msg_len = length
                pkt.remote_addr = wr.remote_addr
                pkt.rkey = wr.rkey
                pkt.imm_data = wr.imm_data
                msg.packets.append(pkt)
            msg.packets[-1].payload = payload
            qp.bytes_sent += length
        qp.messages_sent += 1
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "send_emit", qp.actor, wr_id=_trace_id(wr.wr_id), op=opcode.name, msn=msn,
                    bytes=msg.packets[-1].msg_len, packets=len(msg.packets))  # fmt: skip
        if not qp.paused:
            qp.tx.extend(msg.packets)
            self._activate(qp)
        if self.shared_wq and opcode != WrOpcode.RDMA_READ:
            qp.leaving.append(msn)
        self._engine_next(qp)

    def _gather(self, wr: SendWR):
        parts = []
        mpt = self.mpt
        for sge in wr.sg_list:
            mr = mpt.get(sge.lkey)
            if mr is None or not mr.contains(sge.addr, sge.length):
                return None
            off = sge.addr - mr.addr
            parts.append(mr.buffer[off : off + sge.length].tobytes())
        return parts[0] if len(parts) == 1 else b"".join(parts)

    # -- the transmit arbiter ------------------------------------------------------------
    def _activate(self, qp: HwQp) -> None:
        if not qp.in_arbiter and qp.tx:
            qp.in_arbiter = True
            self._active.append(qp)
        if not self._tx_busy:
            self._tx_next()

    def _send_ctrl(self, pkt: Packet) -> None:
        self._ctrl.append(pkt)
        if not self._tx_busy:
            self._tx_next()

    def _tx_next(self) -> None:
        qp = None
        if self._ctrl:
            pkt = self._ctrl.popleft()
        else:
            active = self._active
            while active:
                qp = active.popleft()
                if qp.tx and not qp.paused:
                    break
                qp.in_arbiter = False
                qp = None
            if qp is None:
                self._tx_busy = False
                return
            pkt = qp.tx.popleft()
            if qp.tx:
                active.append(qp)
            else:
                qp.in_arbiter = False
        self._tx_busy = True
        ser = int(pkt.wire_bytes * self._ps_per_byte)
        self.bytes_transmitted += pkt.wire_bytes
        self.sim.schedule(ser, self._tx_done, pkt, qp)

    def _tx_done(self, pkt: Packet, qp: HwQp | None) -> None:
        if pkt.dst_lid == self.lid:
            # loopback (two processes of one host, or a QP connected to its own NIC): the
            # adapter turns the packet around inside after its engine, DMA and port
            # serialization; it never reaches the link or the switch and is never lost.
            # That the turnaround adds nothing beyond those costs is an assumption.
            self.sim.schedule(0, self.receive_packet, pkt)
        else:
            self.fabric.transmit(pkt, self.lid)
        if qp is not None and qp.rto_idle:
            self._rto_start(qp)
        if qp is not None and pkt.last:
            tr = self.sim.tracer
            if tr is not None:
                tr.emit("hw", "send_left", qp.actor, msn=pkt.msn)
            leaving = qp.leaving
            if leaving and leaving[0] == pkt.msn:  # its first departure, not a retransmission
                leaving.popleft()
                if not qp.engine_busy:
                    self._engine_next(qp)
        self._tx_next()

    # -- receiving -----------------------------------------------------------------------
    def receive_packet(self, pkt: Packet) -> None:
        qp = self.qps.get(pkt.dst_qpn)
        if qp is None or qp.state < QpState.RTR:
            return  # no such QP (or not ready): dropped, as a real HCA does
        kind = pkt.kind
        if kind == DATA:
            self._rx_data(qp, pkt)
        elif kind == ACK:
            self._rx_ack(qp, pkt.msn)
        elif kind == READ_RESP:
            self._rx_read_resp(qp, pkt)
        elif kind == READ_REQ:
            self._rx_read_req(qp, pkt)
        elif kind == NAK_RNR:
            self._rx_rnr_nak(qp, pkt)
        elif kind == NAK_SEQ:
            self._rx_seq_nak(qp, pkt)
        elif kind == TERMINATE:
            self._rx_terminate(qp, pkt)
        else:  # NAK_ACCESS / NAK_INVALID
            status = WcStatus.REM_ACCESS_ERR if kind == NAK_ACCESS else WcStatus.REM_INV_REQ_ERR
            msg = self._inflight(qp, pkt.msn)
            if msg is not None:
                self._requester_error(qp, msg.wr, status, pkt.reason)

    def _ctrl_packet(self, qp: HwQp, kind: int, msn: int, reason: str = "") -> Packet:
        pkt = Packet(kind, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn,
                     self.header_bytes + ACK_PAYLOAD)  # fmt: skip
        pkt.reason = reason
        return pkt

    def _rx_data(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state == QpState.ERROR:
            return
        msn = pkt.msn
        if pkt.psn != qp.expected_psn:
            self._rx_out_of_sequence(qp, pkt)
            return
        qp.seq_nak_sent = False
        opcode = pkt.opcode
        if pkt.first:
            qp.rnr_waiting = False
            if opcode in _CONSUMES_RECV:
                wr = self._take_recv(qp)
                if wr is None:
                    self._no_receive(qp, pkt)
                    return
                qp.cur_recv = wr
            if opcode in (WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM):
                mr = self.mpt.get(pkt.rkey)
                if (
                    mr is None
                    or not mr.access & Access.REMOTE_WRITE
                    or not mr.contains(pkt.remote_addr, pkt.msg_len)
                ):
                    self._responder_error(qp, NAK_ACCESS, msn, "RDMA WRITE: bad rkey/range/access")
                    return
                qp.cur_write = mr
        qp.expected_psn = pkt.psn + 1
        if not pkt.last:
            return
        payload = pkt.payload
        length = pkt.msg_len
        dma = self._dma(length, False)
        if opcode in (WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM):
            mr = qp.cur_write
            off = pkt.remote_addr - mr.addr
            mr.buffer[off : off + length] = np.frombuffer(payload, dtype=np.uint8)
            if mr.on_remote_write is not None:
                mr.on_remote_write()
        wr = qp.cur_recv
        if opcode in _CONSUMES_RECV:
            qp.cur_recv = None
            status = WcStatus.SUCCESS
            if opcode != WrOpcode.RDMA_WRITE_WITH_IMM:
                if length > wr.length:
                    self._push_cqe(qp, qp.recv_cq, WorkCompletion(
                        wr.wr_id, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, qp.qpn, length),
                        False)  # fmt: skip
                    self._responder_error(qp, NAK_INVALID, msn, "message longer than receive")
                    return
                if not self._scatter(wr, payload):
                    status = WcStatus.LOC_PROT_ERR
            wc_op = (
                WcOpcode.RECV
                if opcode != WrOpcode.RDMA_WRITE_WITH_IMM
                else WcOpcode.RECV_RDMA_WITH_IMM
            )
            wc = WorkCompletion(wr.wr_id, status, wc_op, qp.qpn, length, pkt.imm_data, pkt.src_qpn)
            self._push_cqe(qp, qp.recv_cq, wc, False, dma)
        qp.expected_msn = msn + 1
        self._send_ctrl(self._ctrl_packet(qp, ACK, msn))
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "recv_msg", qp.actor, msn=msn, op=WrOpcode(opcode).name, bytes=length,
                    wr_id=_trace_id(wr.wr_id) if wr is not None else -1)  # fmt: skip

    def _rx_out_of_sequence(self, qp: HwQp, pkt: Packet) -> None:
        """A packet that is not the next expected one: a duplicate is re-ACKed (its ACK may
        have been lost); after a gap the first packet draws one sequence-error NAK and the
        rest are dropped until the requester goes back (after an RNR NAK, silently)."""
        if pkt.psn < qp.expected_psn:
            if pkt.last:
                self._send_ctrl(self._ctrl_packet(qp, ACK, pkt.msn))
            return
        if qp.rnr_waiting or qp.seq_nak_sent:
            return
        qp.seq_nak_sent = True
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "seq_nak_sent", qp.actor, psn=pkt.psn, expected=qp.expected_psn)
        self._send_ctrl(self._ctrl_packet(qp, NAK_SEQ, qp.expected_msn))

    def _take_recv(self, qp: HwQp):
        if qp.srq is not None:
            return qp.srq.take()
        rq = qp.rq
        if rq and rq[0][1]:
            return rq.popleft()[0]
        return None

    def _no_receive(self, qp: HwQp, pkt: Packet) -> None:
        """A SEND found no usable receive: RNR NAK on InfiniBand, TERMINATE on iWARP."""
        posted, usable = qp.recv_backlog()
        reason = (
            f"{WrOpcode(pkt.opcode).name} of {pkt.msg_len} bytes (msn {pkt.msn}) arrived on "
            f"{qp.actor} with no usable receive buffer ({posted} posted, {usable} usable: "
            f"{posted - usable} still queued in the NIC)"
        )
        tr = self.sim.tracer
        if self.iwarp:
            if tr is not None:
                tr.emit("hw", "terminate_sent", qp.actor, msn=pkt.msn, posted=posted,
                        usable=usable)  # fmt: skip
            self._send_ctrl(self._ctrl_packet(qp, TERMINATE, pkt.msn, reason))
            self._to_error(qp, f"TERMINATE sent: {reason}")
            return
        qp.rnr_naks_sent += 1
        qp.rnr_waiting = True
        if tr is not None:
            tr.emit("hw", "rnr_nak_sent", qp.actor, msn=pkt.msn, posted=posted, usable=usable)
        self._send_ctrl(self._ctrl_packet(qp, NAK_RNR, pkt.msn, reason))

    def _responder_error(self, qp: HwQp, kind: int, msn: int, reason: str) -> None:
        self._send_ctrl(self._ctrl_packet(qp, kind, msn, reason))
        self._to_error(qp, reason)

    def _scatter(self, wr: RecvWR, payload: bytes) -> bool:
        pos = 0
        mpt = self.mpt
        view = np.frombuffer(payload, dtype=np.uint8) if payload else None
        for sge in wr.sg_list:
            if pos >= len(payload):
                break
            mr = mpt.get(sge.lkey)
            if mr is None or not mr.contains(sge.addr, sge.length):
                return False
            n = min(sge.length, len(payload) - pos)
            off = sge.addr - mr.addr
            mr.buffer[off : off + n] = view[pos : pos + n]
            pos += n
        return True

    def _rx_read_req(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state == QpState.ERROR:
            return
        duplicate = pkt.psn < qp.expected_psn  # its response was lost: read again
        if pkt.psn != qp.expected_psn and not duplicate:
            self._rx_out_of_sequence(qp, pkt)
            return
        mr = self.mpt.get(pkt.rkey)
        if (
            mr is None
            or not mr.access & Access.REMOTE_READ
            or not mr.contains(pkt.remote_addr, pkt.msg_len)
        ):
            self._responder_error(qp, NAK_ACCESS, pkt.msn, "RDMA READ: bad rkey/range/access")
            return
        if not duplicate:
            qp.seq_nak_sent = False
            qp.expected_psn = pkt.psn + 1
            qp.expected_msn = pkt.msn + 1
        off = pkt.remote_addr - mr.addr
        data = mr.buffer[off : off + pkt.msg_len].tobytes()
        self.sim.schedule(self._dma(len(data), True), self._send_read_resp, qp, pkt.msn, data)

    def _send_read_resp(self, qp: HwQp, msn: int, data: bytes) -> None:
        if qp.state == QpState.ERROR:
            return
        mtu = qp.path_mtu
        n = max(1, (len(data) + mtu - 1) // mtu)
        for i in range(n):
            chunk = min(mtu, len(data) - i * mtu) if data else 0
            pkt = Packet(READ_RESP, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn,
                         self.header_bytes + ACK_PAYLOAD + chunk)  # fmt: skip
            pkt.psn = i
            pkt.first = i == 0
            pkt.last = i == n - 1
            if pkt.last:
                pkt.payload = data
            self._ctrl.append(pkt)
        if not self._tx_busy:
            self._tx_next()

    def _rx_read_resp(self, qp: HwQp, pkt: Packet) -> None:
        if pkt.psn != 0 and (pkt.msn != qp.resp_msn or pkt.psn != qp.resp_next):
            return  # a gap inside the response: the transport timer re-issues the READ
        qp.resp_msn = pkt.msn
        qp.resp_next = pkt.psn + 1
        if not pkt.last:
            return
        msg = self._inflight(qp, pkt.msn)
        if msg is None:
            return
        wr = msg.wr
        # a READ's response is scattered into the local SGEs like a receive
        if not self._scatter(wr, pkt.payload):
            self._requester_error(qp, wr, WcStatus.LOC_PROT_ERR, "RDMA READ: bad local SGE")
            return
        msg.acked = True
        self._retire(qp, self._dma(len(pkt.payload), False))

    def _inflight(self, qp: HwQp, msn: int):
        for msg in qp.inflight:
            if msg.msn == msn:
                return msg
        return None

    def _rx_ack(self, qp: HwQp, msn: int) -> None:
        for msg in qp.inflight:
            if msg.msn > msn:
                break
            if msg.wr.opcode != WrOpcode.RDMA_READ:
                msg.acked = True
        self._retire(qp, 0)

    def _retire(self, qp: HwQp, extra_delay: int) -> None:
        """Complete acknowledged messages in order (signaled ones produce a CQE)."""
        inflight = qp.inflight
        if inflight and inflight[0].acked:
            qp.rto_base = self.sim.now  # forward progress restarts the transport timer
            qp.retries = 0
        while inflight and inflight[0].acked:
            msg = inflight.popleft()
            wr = msg.wr
            qp._unsignaled_pending += 1
            if wr.send_flags & SendFlags.SIGNALED:
                qp.sq_outstanding -= qp._unsignaled_pending
                qp._unsignaled_pending = 0
                wc = WorkCompletion(wr.wr_id, WcStatus.SUCCESS, wc_opcode_of(wr.opcode), qp.qpn,
                                    wr.length)  # fmt: skip
                self._push_cqe(qp, qp.send_cq, wc, True, extra_delay)
        if not inflight:
            qp.rto_idle = True

    def _rx_rnr_nak(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state != QpState.RTS:
            return
        msg = self._inflight(qp, pkt.msn)
        if msg is None:
            return
        qp.rnr_naks_received += 1
        msg.rnr_count += 1
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "rnr_nak_received", qp.actor, msn=pkt.msn, attempt=msg.rnr_count,
                    rnr_retry=qp.rnr_retry)  # fmt: skip
        if qp.rnr_retry != 7 and msg.rnr_count > qp.rnr_retry:
            self._requester_error(qp, msg.wr, WcStatus.RNR_RETRY_EXC_ERR, pkt.reason)
            return
        # go back to the NAKed message after the peer's RNR timer
        qp.paused = True
        qp.tx.clear()
        delay = rnr_timer_ps(qp.min_rnr_timer)
        self.sim.schedule(delay, self._rnr_resume, qp, pkt.msn)

    def _rnr_resume(self, qp: HwQp, msn: int) -> None:
        if qp.state == QpState.ERROR:
            return
        qp.paused = False
        qp.rto_base = self.sim.now
        self._go_back(qp, msn)

    def _go_back(self, qp: HwQp, msn: int) -> None:
        """Retransmit every unacknowledged message from ``msn`` on (IB go-back-N)."""
        qp.tx.clear()
        for msg in qp.inflight:
            if msg.msn >= msn:
                qp.tx.extend(msg.packets)
        self._activate(qp)

    # -- the transport timer and sequence errors -----------------------------------------
    def _rto_start(self, qp: HwQp) -> None:
        """A packet left while nothing was outstanding: the transport timer starts. One
        timer event per QP at a time; ACKs only move ``rto_base`` (no cancel, no re-arm).
        On a lossless fabric no packet can go missing, so no timer is armed at all: a
        lossless run has exactly the events (and the final clock) it would have without
        the retransmission machinery. A lossy run may end with one idle expiry."""
        qp.rto_idle = False
        qp.rto_base = self.sim.now
        if not qp.rto_armed and qp.timeout and self.fabric.lossy:
            qp.rto_armed = True
            self.sim.schedule(ack_timeout_ps(qp.timeout), self._rto_expired, qp)

    def _rto_expired(self, qp: HwQp) -> None:
        qp.rto_armed = False
        if qp.state != QpState.RTS or qp.rto_idle or not qp.timeout:
            return
        if not qp.inflight:  # a stale retransmission left after the last ACK
            qp.rto_idle = True
            return
        sim = self.sim
        period = ack_timeout_ps(qp.timeout)
        if qp.paused:  # waiting out an RNR NAK: the responder did answer
            qp.rto_base = sim.now
        deadline = qp.rto_base + period
        if sim.now < deadline:  # progress since the timer was armed: wait the rest
            qp.rto_armed = True
            sim.schedule(deadline - sim.now, self._rto_expired, qp)
            return
        msg = qp.inflight[0]
        self._retry(qp, msg, "timeout", f"no acknowledgement within {period / 1e6:g} us")
        if qp.state == QpState.RTS:
            qp.rto_armed = True
            sim.schedule(period, self._rto_expired, qp)

    def _retry(self, qp: HwQp, msg: _Msg, cause: str, reason: str) -> None:
        """Go back to ``msg`` once more, or fail it when ``retry_cnt`` retries are spent."""
        qp.retries += 1
        tr = self.sim.tracer
        if qp.retries > qp.retry_cnt:
            reason = (f"transport retry counter exceeded on {qp.actor}: msn {msg.msn} "
                      f"unacknowledged after {qp.retry_cnt} retries ({reason})")  # fmt: skip
            self._requester_error(qp, msg.wr, WcStatus.RETRY_EXC_ERR, reason)
            return
        qp.retransmissions += 1
        if tr is not None:
            tr.emit("hw", "retransmit", qp.actor, msn=msg.msn, cause=cause, attempt=qp.retries,
                    retry_cnt=qp.retry_cnt)  # fmt: skip
        qp.rto_base = self.sim.now
        qp.resp_msn = -1
        self._go_back(qp, msg.msn)

    def _rx_seq_nak(self, qp: HwQp, pkt: Packet) -> None:
        """The responder expects message ``pkt.msn``: everything before it arrived (a
        READ still needs its response), go back to the oldest unacknowledged message."""
        if qp.state != QpState.RTS or qp.paused:
            return
        for msg in qp.inflight:
            if msg.msn >= pkt.msn:
                break
            if msg.wr.opcode != WrOpcode.RDMA_READ:
                msg.acked = True
        self._retire(qp, 0)
        if qp.inflight:
            self._retry(qp, qp.inflight[0], "sequence NAK", "PSN sequence error")

    def _rx_terminate(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state == QpState.ERROR:
            return
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "terminate_received", qp.actor, msn=pkt.msn)
        self._to_error(qp, f"TERMINATE received from peer: {pkt.reason}")

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
        when = self.sim.now + extra + self._dur("nic.cqe", self.model.cqe)
        if send_side:
            if when < qp.last_send_cqe:
                when = qp.last_send_cqe
            qp.last_send_cqe = when
        else:
            if when < qp.last_recv_cqe:
                when = qp.last_recv_cqe
            qp.last_recv_cqe = when
        self.sim.schedule(when - self.sim.now, cq.push, wc)


def _trace_id(wr_id) -> int:
    """A wr_id as a trace value: ints as they are; objects by their ``trace_id`` (a
    deterministic number), never by ``repr`` (addresses differ between runs)."""
    return wr_id if type(wr_id) is int else getattr(wr_id, "trace_id", -1)


def _flush_wc(qp: HwQp, wr, opcode: WcOpcode) -> WorkCompletion:
    return WorkCompletion(wr.wr_id, WcStatus.WR_FLUSH_ERR, opcode, qp.qpn, 0)
