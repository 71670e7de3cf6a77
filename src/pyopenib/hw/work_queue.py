"""Work-queue engines of the NIC: posting (doorbells in order), the send engine of a
``split`` device, the single FIFO of a ``shared`` device (Chelsio T3: a receive entry is
processed only after every send ahead of it has left) or of a ``firmware`` device (IBM
eHCA: after every send ahead of it has been processed), payload fetch and packetisation.

Works on each QP's ``sq``, ``rq`` and ``wq`` state and hands packets to the transmit port
(``TransmitPort.activate``); the requester's MSN/PSN counters advance as messages are cut."""

from __future__ import annotations

from collections import deque

from .packet import (
    DATA,
    READ_REQ,
    Packet,
)
from .qp import (
    EMPTY,
    SEND_PREFETCH,
    HwQp,
    QpState,
    _Msg,
    flush_wc,
    trace_id,
)
from .work import (
    RecvWR,
    SendWR,
    WcOpcode,
    WcStatus,
    WrOpcode,
)

__all__ = ["WorkQueueEngine"]

_READ = WrOpcode.RDMA_READ
_WRITES = (WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM)
_ERROR = QpState.ERROR


class WorkQueueEngine:
    """The NIC's work-queue engines (one per QP, sharing the NIC's PCIe and port)."""

    __slots__ = (
        "nic",
        "sim",
        "model",
        "memory",
        "pcie",
        "port",
        "header_bytes",
        "shared",
        "in_order_recv",
    )

    def __init__(self, nic, header_bytes: int, work_queue: str):
        self.nic = nic
        self.sim = nic.sim
        self.model = nic.model
        self.memory = nic.memory
        self.pcie = nic.pcie
        self.port = nic.port
        self.header_bytes = header_bytes
        self.shared = work_queue == "shared"
        """``shared`` work queue (Chelsio T3): sends and receive entries in one FIFO, a
        receive entry processed once every send ahead of it has left the wire."""
        self.in_order_recv = work_queue != "split"
        """Receive posts go through the QP's FIFO behind its sends: ``shared``, and
        ``firmware`` (IBM eHCA: the HCA's firmware works through a QP's doorbells in
        order, so a receive post is processed once the sends rung before it have been
        processed, i.e. fetched and cut into packets, not once they have left)."""

    def _dur(self, label: str, interval) -> int:
        return self.sim.duration(label, interval[0], interval[1], interval[2])

    def post_send(self, qp: HwQp, wr: SendWR) -> None:
        qp.sq.outstanding += 1
        if qp.state == _ERROR:
            self.nic.flush_send(qp, wr)
            return
        m = self.model
        sim = self.sim
        now = sim.now
        if sim.nominal:
            when = now + m.host_post[1] + m.pcie_latency[1]
        else:
            when = now + sim.duration("nic.doorbell", *m.host_post)
            when += sim.duration("nic.pcie", *m.pcie_latency)
        wq = qp.wq
        if when < wq.last_doorbell:  # doorbells of one QP arrive in order (``_in_order``)
            when = wq.last_doorbell
        wq.last_doorbell = when
        sim.schedule(when - now, self._doorbell_send, qp, wr)

    def post_recv(self, qp: HwQp, wr: RecvWR) -> None:
        entry = [wr, False]
        if qp.state == _ERROR:
            self.nic.push_cqe(qp, qp.recv_cq, flush_wc(qp, wr, WcOpcode.RECV), False)
            return
        rq = qp.rq
        rq.entries.append(entry)
        m = self.model
        if self.in_order_recv:
            delay = self._dur("nic.doorbell", m.host_post) + self._dur("nic.pcie", m.pcie_latency)
            self.sim.schedule(self._in_order(qp, delay), self._doorbell_recv, qp, entry)
        else:
            delay = self._dur("nic.recv_usable", m.recv_usable)
            when = self.sim.now + delay
            if when < rq.last_ready:
                when = rq.last_ready
            rq.last_ready = when
            self.sim.schedule(when - self.sim.now, self._recv_usable_split, qp, entry)

    def _in_order(self, qp: HwQp, delay: int) -> int:
        """Doorbells of one QP reach the NIC in the order they were rung (PCIe posted
        writes are ordered), whatever durations the oracle picked."""
        wq = qp.wq
        when = self.sim.now + delay
        if when < wq.last_doorbell:
            when = wq.last_doorbell
        wq.last_doorbell = when
        return when - self.sim.now

    def _recv_usable_split(self, qp: HwQp, entry) -> None:
        entry[1] = True
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "recv_usable", qp.actor, wr_id=trace_id(entry[0].wr_id))

    def _doorbell_send(self, qp: HwQp, wr: SendWR) -> None:
        if qp.state == _ERROR:
            return  # already flushed by the error transition
        wq = qp.wq
        fifo = wq.fifo
        if fifo is EMPTY:  # an idle QP holds no queue
            if not wq.busy and not (self.shared and wq.leaving):
                # ``next`` would queue the WR, take it straight back and start it
                wq.busy = True
                self._start(qp, wr)
                return
            fifo = wq.fifo = deque()
        fifo.append(wr)
        if not wq.busy:
            self.next(qp)

    def _doorbell_recv(self, qp: HwQp, entry) -> None:
        if qp.state == _ERROR:
            return
        wq = qp.wq
        fifo = wq.fifo
        if fifo is EMPTY:
            fifo = wq.fifo = deque()
        fifo.append(entry)
        if not wq.busy:
            self.next(qp)

    def next(self, qp: HwQp) -> None:
        """Start the next WR of the QP's queue (send engine, or the shared FIFO); the
        port calls it again when a send has left and a receive entry may be waiting."""
        wq = qp.wq
        work = wq.fifo
        if not work or qp.state == _ERROR:
            wq.busy = False
            return
        if self.shared and wq.leaving:
            # a receive waits until every earlier send has left; a send may be fetched
            # while at most SEND_PREFETCH others wait to leave (the port restarts us)
            if type(work[0]) is list or len(wq.leaving) > SEND_PREFETCH:
                wq.busy = False
                return
        wq.busy = True
        item = work.popleft()
        if not work:
            wq.fifo = EMPTY  # the QP holds no queue while nothing waits (``EMPTY``)
        if type(item) is list:  # a receive entry in a shared work queue
            m = self.model
            self.sim.schedule(self._dur("nic.recv_wqe", m.recv_wqe), self._recv_processed, qp, item)
            return
        self._start(qp, item)

    def _start(self, qp: HwQp, wr: SendWR) -> None:
        """The engine (now busy) starts ``wr``: the WQE fetch, the payload read, and the
        emission of its first packet; a ``split`` engine takes the next WR after the WQE."""
        m = self.model
        sim = self.sim
        wq = qp.wq
        sw = m.send_wqe
        wqe = delay = sw[1] if sim.nominal else sim.duration("nic.send_wqe", *sw)
        sg_list = wr.sg_list
        base = 0  # inline data and READ requests need no payload read
        now = sim.now
        if wr.opcode != _READ and wr.inline_data is None and sg_list:
            # cut-through: the payload is read after the WQE, and the message is cut into
            # packets once its first packet's bytes are in; the others follow at bus rate
            length = sg_list[0].length if len(sg_list) == 1 else wr.length
            base = self.pcie.stream(length, True, now + wqe)
            first = length if length < qp.path_mtu else qp.path_mtu
            delay = base + int(first * self.pcie.ps_per_byte) - now
        if self.in_order_recv:
            # shared / firmware: the engine works through the FIFO one WR at a time, so a
            # receive entry behind this send waits for it (``_emit`` starts the next)
            sim.schedule(delay, self._emit, qp, wr, base)
            return
        # split: the send engine takes the next WR once this WQE is processed, while this
        # one's payload read is in flight (DMA reads overlap); messages are still cut in
        # posting order
        when = now + delay
        if when < wq.last_emit:
            when = wq.last_emit
        wq.last_emit = when
        sim.schedule(when - now, self._emit, qp, wr, base)
        sim.schedule(wqe, self.next, qp)

    def _recv_processed(self, qp: HwQp, entry) -> None:
        entry[1] = True
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "recv_usable", qp.actor, wr_id=trace_id(entry[0].wr_id))
        self.next(qp)

    def _emit(self, qp: HwQp, wr: SendWR, base: int) -> None:
        """The engine has the first packet's data: cut the WR into packets and queue them
        for transmit, each ``ready`` when its payload has crossed PCIe (``base``: the
        payload stream's start, see ``PcieBus.stream``; 0 when nothing was read)."""
        if qp.state == _ERROR:
            return
        opcode = wr.opcode
        payload = b""
        if opcode != _READ:
            payload = wr.inline_data if wr.inline_data is not None else self.memory.gather(wr)
            if payload is None:
                self.nic.fail_send(qp, wr, WcStatus.LOC_PROT_ERR, "bad lkey or range")
                return
        req = qp.req
        msn = req.next_msn
        req.next_msn = msn + 1
        msg = _Msg(wr, msn)
        inflight = req.inflight
        if inflight is EMPTY:
            inflight = req.inflight = []
        inflight.append(msg)
        hdr = self.header_bytes
        lid = self.nic.lid
        if opcode == _READ:
            pkt = Packet(READ_REQ, lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, hdr + 16)
            pkt.psn = req.next_psn
            req.next_psn += 1
            pkt.msg_len = wr.length
            pkt.remote_addr = wr.remote_addr
            pkt.rkey = wr.rkey
            msg.packets.append(pkt)
        elif len(payload) <= qp.path_mtu:  # one packet: the common small message
            length = len(payload)
            wire = hdr + length + (16 if opcode in _WRITES else 0)
            pkt = Packet(DATA, lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, wire)
            pkt.psn = req.next_psn
            req.next_psn += 1
            pkt.opcode = opcode
            pkt.msg_len = length
            pkt.remote_addr = wr.remote_addr
            pkt.rkey = wr.rkey
            pkt.imm_data = wr.imm_data
            pkt.payload = payload
            pkt.nbytes = length
            msg.packets.append(pkt)
        else:
            length = len(payload)
            mtu = qp.path_mtu
            ps_per_byte = self.pcie.ps_per_byte
            npkts = max(1, (length + mtu - 1) // mtu)
            psn = req.next_psn
            req.next_psn = psn + npkts
            for i in range(npkts):
                chunk = min(mtu, length - i * mtu) if length else 0
                extra = 16 if i == 0 and opcode in _WRITES else 0
                pkt = Packet(DATA, lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, hdr + chunk + extra)
                pkt.psn = psn + i
                pkt.first = i == 0
                pkt.last = i == npkts - 1
                pkt.opcode = opcode
                pkt.msg_len = length
                pkt.remote_addr = wr.remote_addr
                pkt.rkey = wr.rkey
                pkt.imm_data = wr.imm_data
                pkt.nbytes = chunk
                if base:
                    pkt.ready = base + int((i * mtu + chunk) * ps_per_byte)
                msg.packets.append(pkt)
            msg.packets[-1].payload = payload
        tr = self.sim.tracer
        if tr is not None:
            tr.emit(
                "hw",
                "send_emit",
                qp.actor,
                wr_id=trace_id(wr.wr_id),
                op=opcode.name,
                msn=msn,
                bytes=msg.packets[-1].msg_len,
                packets=len(msg.packets),
            )
        tx = qp.tx
        if not tx.paused:
            packets = tx.packets
            if packets is EMPTY:
                packets = tx.packets = deque()
            packets.extend(msg.packets)
            self.port.activate(qp)
        if self.shared and opcode != _READ:
            qp.wq.leaving.append(msn)
        if self.in_order_recv:
            self.next(qp)
