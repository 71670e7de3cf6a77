"""The NIC's transmit port: control packets (ACK/NAK/TERMINATE/READ responses) first,
then round-robin per packet between QPs with packets ready, serialization at link rate.

A mixin of ``Nic``: it uses the NIC's state and never stands alone."""

from __future__ import annotations

from .packet import (
    Packet,
)
from .qp import (
    HwQp,
)

__all__ = ["TransmitPort"]


class TransmitPort:
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
        wire_bytes = pkt.wire_bytes
        self.bytes_transmitted += wire_bytes
        self.sim.schedule(int(wire_bytes * self._ps_per_byte), self._tx_done, pkt, qp)

    def _tx_done(self, pkt: Packet, qp: HwQp | None) -> None:
        if pkt.dst_lid == self.lid:
            # loopback (two processes of one host, or a QP connected to its own NIC): the
            # adapter turns the packet around inside after its engine, DMA and port
            # serialization; it never reaches the link or the switch and is never lost.
            # That the turnaround adds nothing beyond those costs is an assumption.
            self.sim.schedule(0, self.receive_packet, pkt)
        else:
            self.fabric.transmit(pkt, self.lid)
        if qp is not None:  # else a control packet (ACK, NAK, READ response, TERMINATE)
            if qp.rto_idle:
                self._rto_start(qp)
            if pkt.last:
                tr = self.sim.tracer
                if tr is not None:
                    tr.emit("hw", "send_left", qp.actor, msn=pkt.msn)
                leaving = qp.leaving
                if leaving and leaving[0] == pkt.msn:  # its first departure, not a retransmission
                    leaving.popleft()
                    if not qp.engine_busy:
                        self._engine_next(qp)
        if self._ctrl or self._active:
            self._tx_next()
        else:
            self._tx_busy = False  # nothing waits: the port idles (``_tx_next`` would say so)
