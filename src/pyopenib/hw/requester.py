"""The RC requester: ACKs and in-order retirement of messages, READ responses, RNR NAK
retries, the transport timer and go-back-N retransmission, sequence NAKs, TERMINATE.

Works on each QP's ``req`` state (and its ``sq`` accounting as messages retire); puts
retransmissions back in the QP's ``tx`` queue for the port."""

from __future__ import annotations

from collections import deque

from .packet import NAK_ACCESS, Packet
from .qp import (
    EMPTY,
    HwQp,
    QpState,
    _Msg,
    ack_timeout_ps,
    rnr_timer_ps,
)
from .work import (
    _WC_OF_WR,
    SendFlags,
    WcStatus,
    WorkCompletion,
    WrOpcode,
)

__all__ = ["Requester"]

_SIGNALED = SendFlags.SIGNALED
_SUCCESS = WcStatus.SUCCESS
_READ = WrOpcode.RDMA_READ
_RTS = QpState.RTS
_ERROR = QpState.ERROR


class Requester:
    """The requester half of the NIC's RC transport (every QP's)."""

    __slots__ = ("nic", "sim", "fabric", "memory", "pcie", "port", "rx")

    def __init__(self, nic):
        self.nic = nic
        self.sim = nic.sim
        self.fabric = nic.fabric
        self.memory = nic.memory
        self.pcie = nic.pcie
        self.port = nic.port
        self.rx = nic.model.rx
        """The NIC's inbound processing of an answer (ACK, READ response) before its
        effect reaches host memory: the same receive path a request takes at the
        responder (``Responder.rx``), so a send's completion comes ``rx`` + ``cqe``
        after its ACK arrives."""

    def _processing(self) -> int:
        rx = self.rx
        sim = self.sim
        return rx[1] if sim.nominal else sim.duration("nic.rx", rx[0], rx[1], rx[2])

    def rx_read_resp(self, qp: HwQp, pkt: Packet) -> None:
        req = qp.req
        if pkt.psn != 0 and (pkt.msn != req.resp_msn or pkt.psn != req.resp_next):
            return  # a gap inside the response: the transport timer re-issues the READ
        req.resp_msn = pkt.msn
        req.resp_next = pkt.psn + 1
        # each response packet is written to host memory once processed (cut-through)
        now = self.sim.now
        end = self.pcie.crossed(pkt.nbytes, False, now + self._processing())
        if end < req.dma_end:
            end = req.dma_end  # posted writes land in order
        req.dma_end = end
        if not pkt.last:
            return
        msg = self.inflight(qp, pkt.msn)
        if msg is None:
            return
        wr = msg.wr
        # a READ's response is scattered into the local SGEs like a receive
        if not self.memory.scatter(wr, pkt.payload):
            self.nic.fail_send(qp, wr, WcStatus.LOC_PROT_ERR, "RDMA READ: bad local SGE")
            return
        msg.acked = True
        self._retire(qp, end - now)

    def inflight(self, qp: HwQp, msn: int) -> _Msg | None:
        """The unacknowledged message ``msn`` of ``qp`` (None: already retired)."""
        for msg in qp.req.inflight:
            if msg.msn == msn:
                return msg
        return None

    def rx_ack(self, qp: HwQp, msn: int) -> None:
        for msg in qp.req.inflight:
            if msg.msn > msn:
                break
            if msg.wr.opcode != _READ:
                msg.acked = True
        self._retire(qp, None)

    def rx_error_nak(self, qp: HwQp, pkt: Packet) -> None:
        """NAK_ACCESS / NAK_INVALID: the NAKed WR completes in error, the QP fails."""
        status = WcStatus.REM_ACCESS_ERR if pkt.kind == NAK_ACCESS else WcStatus.REM_INV_REQ_ERR
        msg = self.inflight(qp, pkt.msn)
        if msg is not None:
            self.nic.fail_send(qp, msg.wr, status, pkt.reason)

    def _retire(self, qp: HwQp, extra_delay: int | None) -> None:
        """Complete acknowledged messages in order (signaled ones produce a CQE, and
        return the send-queue slots of the unsignaled ones before them). ``extra_delay``:
        from now until the answer's effect is in host memory (a READ response's data);
        None for an ACK, whose processing is drawn when a completion is written."""
        req = qp.req
        inflight = req.inflight
        if inflight and inflight[0].acked:
            req.rto_base = self.sim.now  # forward progress restarts the transport timer
            req.retries = 0
        sq = qp.sq
        while inflight and inflight[0].acked:
            msg = inflight.pop(0)
            wr = msg.wr
            sq.unsignaled += 1
            if wr.send_flags & _SIGNALED:
                sq.outstanding -= sq.unsignaled
                sq.unsignaled = 0
                sg_list = wr.sg_list
                length = sg_list[0].length if len(sg_list) == 1 else wr.length
                wc = WorkCompletion(wr.wr_id, _SUCCESS, _WC_OF_WR[wr.opcode], qp.qpn, length)
                if extra_delay is None:
                    extra_delay = self._processing()
                self.nic.push_cqe(qp, qp.send_cq, wc, True, extra_delay)
        if not inflight:
            req.rto_idle = True
            req.inflight = EMPTY  # the QP holds no list while nothing is in flight

    def rx_rnr_nak(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state != _RTS:
            return
        msg = self.inflight(qp, pkt.msn)
        if msg is None:
            return
        qp.req.rnr_naks_received += 1
        msg.rnr_count += 1
        tr = self.sim.tracer
        if tr is not None:
            tr.emit(
                "hw",
                "rnr_nak_received",
                qp.actor,
                msn=pkt.msn,
                attempt=msg.rnr_count,
                rnr_retry=qp.rnr_retry,
            )
        if qp.rnr_retry != 7 and msg.rnr_count > qp.rnr_retry:
            self.nic.fail_send(qp, msg.wr, WcStatus.RNR_RETRY_EXC_ERR, pkt.reason)
            return
        # go back to the NAKed message after the peer's RNR timer
        qp.tx.paused = True
        qp.tx.packets = EMPTY
        delay = rnr_timer_ps(qp.min_rnr_timer)
        self.sim.schedule(delay, self._rnr_resume, qp, pkt.msn)

    def _rnr_resume(self, qp: HwQp, msn: int) -> None:
        if qp.state == _ERROR:
            return
        qp.tx.paused = False
        qp.req.rto_base = self.sim.now
        self._go_back(qp, msn)

    def _go_back(self, qp: HwQp, msn: int) -> None:
        """Retransmit every unacknowledged message from ``msn`` on (IB go-back-N)."""
        packets = deque()
        for msg in qp.req.inflight:
            if msg.msn >= msn:
                packets.extend(msg.packets)
        qp.tx.packets = packets if packets else EMPTY
        self.port.activate(qp)

    def rto_start(self, qp: HwQp) -> None:
        """A packet left while nothing was outstanding: the transport timer starts. One
        timer event per QP at a time; ACKs only move ``rto_base`` (no cancel, no re-arm).
        On a lossless fabric no packet can go missing, so no timer is armed at all: a
        lossless run has exactly the events (and the final clock) it would have without
        the retransmission machinery. A lossy run may end with one idle expiry."""
        req = qp.req
        req.rto_idle = False
        req.rto_base = self.sim.now
        if not req.rto_armed and qp.timeout and self.fabric.lossy:
            req.rto_armed = True
            self.sim.schedule(ack_timeout_ps(qp.timeout), self._rto_expired, qp)

    def _rto_expired(self, qp: HwQp) -> None:
        req = qp.req
        req.rto_armed = False
        if qp.state != _RTS or req.rto_idle or not qp.timeout:
            return
        if not req.inflight:  # a stale retransmission left after the last ACK
            req.rto_idle = True
            return
        sim = self.sim
        period = ack_timeout_ps(qp.timeout)
        if qp.tx.paused:  # waiting out an RNR NAK: the responder did answer
            req.rto_base = sim.now
        deadline = req.rto_base + period
        if sim.now < deadline:  # progress since the timer was armed: wait the rest
            req.rto_armed = True
            sim.schedule(deadline - sim.now, self._rto_expired, qp)
            return
        msg = req.inflight[0]
        self._retry(qp, msg, "timeout", f"no acknowledgement within {period / 1e6:g} us")
        if qp.state == _RTS:
            req.rto_armed = True
            sim.schedule(period, self._rto_expired, qp)

    def _retry(self, qp: HwQp, msg: _Msg, cause: str, reason: str) -> None:
        """Go back to ``msg`` once more, or fail it when ``retry_cnt`` retries are spent."""
        req = qp.req
        req.retries += 1
        tr = self.sim.tracer
        if req.retries > qp.retry_cnt:
            reason = (
                f"transport retry counter exceeded on {qp.actor}: msn {msg.msn} "
                f"unacknowledged after {qp.retry_cnt} retries ({reason})"
            )
            self.nic.fail_send(qp, msg.wr, WcStatus.RETRY_EXC_ERR, reason)
            return
        req.retransmissions += 1
        if tr is not None:
            tr.emit(
                "hw",
                "retransmit",
                qp.actor,
                msn=msg.msn,
                cause=cause,
                attempt=req.retries,
                retry_cnt=qp.retry_cnt,
            )
        req.rto_base = self.sim.now
        req.resp_msn = -1
        self._go_back(qp, msg.msn)

    def rx_seq_nak(self, qp: HwQp, pkt: Packet) -> None:
        """The responder expects message ``pkt.msn``: everything before it arrived (a
        READ still needs its response), go back to the oldest unacknowledged message."""
        if qp.state != _RTS or qp.tx.paused:
            return
        inflight = qp.req.inflight
        for msg in inflight:
            if msg.msn >= pkt.msn:
                break
            if msg.wr.opcode != _READ:
                msg.acked = True
        self._retire(qp, None)
        if inflight:
            self._retry(qp, inflight[0], "sequence NAK", "PSN sequence error")

    def rx_terminate(self, qp: HwQp, pkt: Packet) -> None:
        if qp.state == _ERROR:
            return
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("hw", "terminate_received", qp.actor, msn=pkt.msn)
        self.nic.to_error(qp, f"TERMINATE received from peer: {pkt.reason}")
