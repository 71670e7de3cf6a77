"""Work-queue engines of the NIC: posting (doorbells in order), the send engine of a
``split`` device, the single FIFO of a ``shared`` device (Chelsio T3: a receive entry is
processed only after every send ahead of it has left), payload fetch and packetisation.

A mixin of ``Nic``: it uses the NIC's state and never stands alone."""

from __future__ import annotations

from .packet import (
    DATA,
    READ_REQ,
    Packet,
)
from .qp import (
    SEND_PREFETCH,
    HwQp,
    QpState,
    _flush_wc,
    _Msg,
    _trace_id,
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


class WorkQueueEngine:
    def post_send(self, qp: HwQp, wr: SendWR) -> None:
        qp.sq_outstanding += 1
        if qp.state == QpState.ERROR:
            self._flush_send(qp, wr)
            return
        m = self.model
        sim = self.sim
        now = sim.now
        if sim.nominal:
            when = now + m.host_post[1] + m.pcie_latency[1]
        else:
            when = now + sim.duration("nic.doorbell", *m.host_post)
            when += sim.duration("nic.pcie", *m.pcie_latency)
        if when < qp.last_doorbell:  # doorbells of one QP arrive in order (``_in_order``)
            when = qp.last_doorbell
        qp.last_doorbell = when
        sim.schedule(when - now, self._doorbell_send, qp, wr)

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
        sim = self.sim
        if type(item) is list:  # a receive entry in a shared work queue
            sim.schedule(self._dur("nic.recv_wqe", m.recv_wqe), self._recv_processed, qp, item)
            return
        wr: SendWR = item
        sw = m.send_wqe
        delay = sw[1] if sim.nominal else sim.duration("nic.send_wqe", *sw)
        sg_list = wr.sg_list
        if wr.opcode != _READ and wr.inline_data is None and sg_list:
            delay += self._dma(sg_list[0].length if len(sg_list) == 1 else wr.length, True)
        sim.schedule(delay, self._emit, qp, wr)

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
        if opcode != _READ:
            payload = wr.inline_data if wr.inline_data is not None else self._gather(wr)
            if payload is None:
                self._requester_error(qp, wr, WcStatus.LOC_PROT_ERR, "bad lkey or range")
                return
        msn = qp.next_msn
        qp.next_msn = msn + 1
        msg = _Msg(wr, msn)
        qp.inflight.append(msg)
        hdr = self.header_bytes
        if opcode == _READ:
            pkt = Packet(READ_REQ, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, hdr + 16)
            pkt.psn = qp.next_psn
            qp.next_psn += 1
            pkt.msg_len = wr.length
            pkt.remote_addr = wr.remote_addr
            pkt.rkey = wr.rkey
            msg.packets.append(pkt)
        elif len(payload) <= qp.path_mtu:  # one packet: the common small message
            length = len(payload)
            pkt = Packet(DATA, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn,
                         hdr + length + (16 if opcode in _WRITES else 0))  # fmt: skip
            pkt.psn = qp.next_psn
            qp.next_psn += 1
            pkt.opcode = opcode
            pkt.msg_len = length
            pkt.remote_addr = wr.remote_addr
            pkt.rkey = wr.rkey
            pkt.imm_data = wr.imm_data
            pkt.payload = payload
            msg.packets.append(pkt)
            qp.bytes_sent += length
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
        if self.shared_wq and opcode != _READ:
            qp.leaving.append(msn)
        self._engine_next(qp)

    def _gather(self, wr: SendWR):
        mpt = self.mpt
        sg_list = wr.sg_list
        if len(sg_list) == 1:
            sge = sg_list[0]
            mr = mpt.get(sge.lkey)
            if mr is None or not mr.contains(sge.addr, sge.length):
                return None
            off = sge.addr - mr.addr
            return mr.buffer[off : off + sge.length].tobytes()
        parts = []
        for sge in wr.sg_list:
            mr = mpt.get(sge.lkey)
            if mr is None or not mr.contains(sge.addr, sge.length):
                return None
            off = sge.addr - mr.addr
            parts.append(mr.buffer[off : off + sge.length].tobytes())
        return parts[0] if len(parts) == 1 else b"".join(parts)
