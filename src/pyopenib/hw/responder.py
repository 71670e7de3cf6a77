"""The RC responder: incoming requests, PSN checks, receive consumption (RNR NAK on
InfiniBand, TERMINATE on iWARP when no receive is usable), RDMA WRITE/READ targets,
scatter into receive buffers, ACKs.

Works on each QP's ``resp`` state and its receive queue (``rq``, or the SRQ); answers
through the transmit port's control queue."""

from __future__ import annotations

from .memory import Access
from .packet import (
    ACK,
    NAK_ACCESS,
    NAK_INVALID,
    NAK_RNR,
    NAK_SEQ,
    READ_RESP,
    TERMINATE,
    Packet,
)
from .qp import (
    _CONSUMES_RECV,
    ACK_PAYLOAD,
    HwQp,
    QpState,
    trace_id,
)
from .work import (
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
_ERROR = QpState.ERROR
_REMOTE_WRITE = Access.REMOTE_WRITE  # enum members as constants (``qp._SUCCESS`` says why)
_REMOTE_READ = Access.REMOTE_READ
_RECV_IMM = WcOpcode.RECV_RDMA_WITH_IMM


class Responder:
    """The responder half of the NIC's RC transport (every QP's)."""

    __slots__ = ("nic", "sim", "memory", "pcie", "port", "header_bytes", "iwarp", "rx")

    def __init__(self, nic, header_bytes: int, iwarp: bool):
        self.nic = nic
        self.sim = nic.sim
        self.memory = nic.memory
        self.pcie = nic.pcie
        self.port = nic.port
        self.header_bytes = header_bytes
        self.iwarp = iwarp
        """iWARP has no RNR NAK: a SEND with no usable receive is fatal (TERMINATE)."""
        self.rx = nic.model.rx
        """The inbound processing of a request before its data is placed or read (the
        device's ``rx``): transport checks and the key and address translation, on iWARP
        the TCP/MPA/DDP receive path. SENDs, RDMA WRITEs and READ requests all pay it;
        only a SEND's completion (``cqe``) comes on top."""

    def _ctrl_packet(self, qp: HwQp, kind: int, msn: int, reason: str = "") -> Packet:
        wire = self.header_bytes + ACK_PAYLOAD
        pkt = Packet(kind, self.nic.lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, wire)
        pkt.reason = reason
        return pkt

    def rx_data(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state == _ERROR:
            return
        resp = qp.resp
        msn = pkt.msn
        if pkt.psn != resp.expected_psn:
            self._rx_out_of_sequence(qp, pkt)
            return
        resp.seq_nak_sent = False
        opcode = pkt.opcode
        if pkt.first:
            resp.rnr_waiting = False
            if opcode in _CONSUMES_RECV:
                srq = qp.srq
                wr = srq.take() if srq is not None else qp.rq.take()
                if wr is None:
                    self._no_receive(qp, pkt)
                    return
                resp.cur_recv = wr
            if opcode in _WRITES:
                mr = self.memory.target(pkt.rkey, pkt.remote_addr, pkt.msg_len, _REMOTE_WRITE)
                if mr is None:
                    self._responder_error(qp, NAK_ACCESS, msn, "RDMA WRITE: bad rkey/range/access")
                    return
                resp.cur_write = mr
        resp.expected_psn = pkt.psn + 1
        # cut-through: each packet's payload is written to host memory once processed
        # (posted writes, in order), the completion after the last write has landed. The
        # receive was taken on arrival, above: the queue is checked as processing starts.
        sim = self.sim
        now = sim.now
        rx = self.rx
        placed = now + (rx[1] if sim.nominal else sim.duration("nic.rx", rx[0], rx[1], rx[2]))
        end = self.pcie.crossed(pkt.nbytes, False, placed)
        if end < resp.dma_end:
            end = resp.dma_end  # PCIe posted writes land in the order they were issued
        resp.dma_end = end
        if not pkt.last:
            return
        dma = end - now
        payload = pkt.payload
        length = pkt.msg_len
        if opcode in _WRITES:
            mr = resp.cur_write
            off = pkt.remote_addr - mr.addr
            # the host sees the bytes once the DMA write has landed, not on arrival
            self.sim.schedule(dma, self._land_write, mr, off, payload)
        wr = resp.cur_recv
        if opcode in _CONSUMES_RECV:
            resp.cur_recv = None
            status = _SUCCESS
            if opcode != _WRITE_IMM:
                if length > wr.length:
                    wc = WorkCompletion(wr.wr_id, WcStatus.LOC_LEN_ERR, _RECV, qp.qpn, length)
                    self.nic.push_cqe(qp, qp.recv_cq, wc, False)
                    self._responder_error(qp, NAK_INVALID, msn, "message longer than receive")
                    return
                if not self.memory.scatter(wr, payload):
                    status = WcStatus.LOC_PROT_ERR
            wc_op = _RECV if opcode != _WRITE_IMM else _RECV_IMM
            wc = WorkCompletion(wr.wr_id, status, wc_op, qp.qpn, length, pkt.imm_data, pkt.src_qpn)
            self.nic.push_cqe(qp, qp.recv_cq, wc, False, dma)
        resp.expected_msn = msn + 1
        # one ACK per message; nothing below may schedule an event or use the port
        # (``send_ack`` may fold the ACK's serialization on that promise)
        self.port.send_ack(self._ctrl_packet(qp, ACK, msn))
        tr = self.sim.tracer
        if tr is not None:
            tr.emit(
                "hw",
                "recv_msg",
                qp.actor,
                msn=msn,
                op=WrOpcode(opcode).name,
                bytes=length,
                wr_id=trace_id(wr.wr_id) if wr is not None else -1,
            )

    def _rx_out_of_sequence(self, qp: HwQp, pkt: Packet) -> None:
        """A packet that is not the next expected one: a duplicate is re-ACKed (its ACK may
        have been lost); after a gap the first packet draws one sequence-error NAK and the
        rest are dropped until the requester goes back (after an RNR NAK, silently)."""
        resp = qp.resp
        if pkt.psn < resp.expected_psn:
            if pkt.last:
                self.port.send_ctrl(self._ctrl_packet(qp, ACK, pkt.msn))
            return
        if resp.rnr_waiting or resp.seq_nak_sent:
            return
        resp.seq_nak_sent = True
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "seq_nak_sent", qp.actor, psn=pkt.psn, expected=resp.expected_psn)
        self.port.send_ctrl(self._ctrl_packet(qp, NAK_SEQ, resp.expected_msn))

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
                tr.emit("hw", "terminate_sent", qp.actor, msn=pkt.msn, posted=posted, usable=usable)
            self.port.send_ctrl(self._ctrl_packet(qp, TERMINATE, pkt.msn, reason))
            self.nic.to_error(qp, f"TERMINATE sent: {reason}")
            return
        qp.resp.rnr_waiting = True
        if tr is not None:
            tr.emit("hw", "rnr_nak_sent", qp.actor, msn=pkt.msn, posted=posted, usable=usable)
        self.port.send_ctrl(self._ctrl_packet(qp, NAK_RNR, pkt.msn, reason))

    def _responder_error(self, qp: HwQp, kind: int, msn: int, reason: str) -> None:
        self.port.send_ctrl(self._ctrl_packet(qp, kind, msn, reason))
        self.nic.to_error(qp, reason)

    def _land_write(self, mr, off: int, payload: bytes) -> None:
        """An RDMA WRITE's bytes reach host memory (a CPU polling it sees them now)."""
        mr.view[off : off + len(payload)] = payload
        if mr.on_remote_write is not None:
            mr.on_remote_write()

    def rx_read_req(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state == _ERROR:
            return
        resp = qp.resp
        duplicate = pkt.psn < resp.expected_psn  # its response was lost: read again
        if pkt.psn != resp.expected_psn and not duplicate:
            self._rx_out_of_sequence(qp, pkt)
            return
        mr = self.memory.target(pkt.rkey, pkt.remote_addr, pkt.msg_len, _REMOTE_READ)
        if mr is None:
            self._responder_error(qp, NAK_ACCESS, pkt.msn, "RDMA READ: bad rkey/range/access")
            return
        if not duplicate:
            resp.seq_nak_sent = False
            resp.expected_psn = pkt.psn + 1
            resp.expected_msn = pkt.msn + 1
        off = pkt.remote_addr - mr.addr
        data = mr.view[off : off + pkt.msg_len].tobytes()
        # cut-through, as for a send: the first response packet leaves once its bytes
        # are read, the others follow at bus rate
        sim = self.sim
        now = sim.now
        rx = self.rx
        start = now + (rx[1] if sim.nominal else sim.duration("nic.rx", rx[0], rx[1], rx[2]))
        base = self.pcie.stream(len(data), True, start)
        first = min(len(data), qp.path_mtu)
        delay = base + int(first * self.pcie.ps_per_byte) - now
        self.sim.schedule(delay, self._send_read_resp, qp, pkt.msn, data, base)

    def _send_read_resp(self, qp: HwQp, msn: int, data: bytes, base: int) -> None:
        if qp.state == _ERROR:
            return
        mtu = qp.path_mtu
        n = max(1, (len(data) + mtu - 1) // mtu)
        lid = self.nic.lid
        send_ctrl = self.port.send_ctrl
        ps_per_byte = self.pcie.ps_per_byte
        for i in range(n):
            chunk = min(mtu, len(data) - i * mtu) if data else 0
            wire = self.header_bytes + ACK_PAYLOAD + chunk
            pkt = Packet(READ_RESP, lid, qp.dest_lid, qp.qpn, qp.dest_qpn, msn, wire)
            pkt.psn = i
            pkt.first = i == 0
            pkt.last = i == n - 1
            pkt.nbytes = chunk
            if i:
                pkt.ready = base + int((i * mtu + chunk) * ps_per_byte)
            if pkt.last:
                pkt.payload = data
            send_ctrl(pkt)
