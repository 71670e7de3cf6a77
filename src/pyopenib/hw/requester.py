"""The RC requester: ACKs and in-order retirement of messages, READ responses, RNR NAK
retries, the transport timer and go-back-N retransmission, sequence NAKs, TERMINATE.

A mixin of ``Nic``: it uses the NIC's state and never stands alone."""

from __future__ import annotations

from .packet import (
    Packet,
)
from .qp import (
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


class Requester:
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
            if msg.wr.opcode != _READ:
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
            if wr.send_flags & _SIGNALED:
                qp.sq_outstanding -= qp._unsignaled_pending
                qp._unsignaled_pending = 0
                sg_list = wr.sg_list
                wc = WorkCompletion(wr.wr_id, _SUCCESS, _WC_OF_WR[wr.opcode], qp.qpn,
                                    sg_list[0].length if len(sg_list) == 1 else wr.length)  # fmt: skip
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
