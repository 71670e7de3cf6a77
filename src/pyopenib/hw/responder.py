"""The RC responder: incoming packets, PSN checks, receive consumption (RNR NAK on
InfiniBand, TERMINATE on iWARP when no receive is usable), RDMA WRITE/READ targets,
scatter into receive buffers, ACKs.

A mixin of ``Nic``: it uses the NIC's state and never stands alone."""

from __future__ import annotations

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
from .qp import (
    _CONSUMES_RECV,
    ACK_PAYLOAD,
    Access,
    HwQp,
    QpState,
    _trace_id,
)
from .work import (
    RecvWR,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    WrOpcode,
)

__all__ = ["Responder"]

_WRITES = (WrOpcode.RDMA_WRITE, WrOpcode.RDMA_WRITE_WITH_IMM)
_WRITE_IMM = WrOpcode.RDMA_WRITE_WITH_IMM
_SUCCESS = WcStatus.SUCCESS
_RECV = WcOpcode.RECV


class Responder:
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
            if opcode in _WRITES:
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
        if opcode in _WRITES:
            mr = qp.cur_write
            off = pkt.remote_addr - mr.addr
            mr.buffer[off : off + length] = np.frombuffer(payload, dtype=np.uint8)
            if mr.on_remote_write is not None:
                mr.on_remote_write()
        wr = qp.cur_recv
        if opcode in _CONSUMES_RECV:
            qp.cur_recv = None
            status = _SUCCESS
            if opcode != _WRITE_IMM:
                if length > wr.length:
                    self._push_cqe(qp, qp.recv_cq, WorkCompletion(
                        wr.wr_id, WcStatus.LOC_LEN_ERR, WcOpcode.RECV, qp.qpn, length),
                        False)  # fmt: skip
                    self._responder_error(qp, NAK_INVALID, msn, "message longer than receive")
                    return
                if not self._scatter(wr, payload):
                    status = WcStatus.LOC_PROT_ERR
            wc_op = _RECV if opcode != _WRITE_IMM else WcOpcode.RECV_RDMA_WITH_IMM
            wc = WorkCompletion(wr.wr_id, status, wc_op, qp.qpn, length, pkt.imm_data, pkt.src_qpn)
            self._push_cqe(qp, qp.recv_cq, wc, False, dma)
        qp.expected_msn = msn + 1
        ack = Packet(ACK, self.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn,
                     self.header_bytes + ACK_PAYLOAD)  # fmt: skip
        self._ctrl.append(ack)  # ``_send_ctrl`` inlined: one ACK per message
        if not self._tx_busy:
            self._tx_next()
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
