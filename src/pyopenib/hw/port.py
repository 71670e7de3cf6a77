"""The NIC's transmit port: control packets (ACK/NAK/TERMINATE/READ responses) first,
then round-robin per packet between QPs with packets ready, serialization at link rate.

Works on each QP's ``tx`` queue; tells the requester when a packet leaves an idle QP
(its transport timer starts) and the work-queue engine when a send has fully left (a
shared work queue may process the receive entry behind it)."""

from __future__ import annotations

from collections import deque

from .packet import (
    Packet,
)
from .qp import (
    HwQp,
)

__all__ = ["TransmitPort"]


class TransmitPort:
    """One port's transmit arbiter, shared by every QP of the NIC."""

    __slots__ = (
        "nic",
        "sim",
        "fabric",
        "ps_per_byte",
        "ctrl",
        "active",
        "busy",
        "engine",
        "requester",
    )

    def __init__(self, nic):
        self.nic = nic
        self.sim = nic.sim
        self.fabric = nic.fabric
        self.ps_per_byte = nic.model.ps_per_byte
        self.ctrl: deque[Packet] = deque()
        """Control packets, served before any QP's data."""
        self.active: deque[HwQp] = deque()
        """QPs with packets ready, in round-robin order."""
        self.busy = False
        self.engine = None  # the NIC's WorkQueueEngine and Requester, wired by ``Nic``
        self.requester = None

    def activate(self, qp: HwQp) -> None:
        """``qp`` has packets in its ``tx`` queue: join the round robin."""
        tx = qp.tx
        if not tx.in_arbiter and tx.packets:
            tx.in_arbiter = True
            self.active.append(qp)
        if not self.busy:
            self._next()

    def send_ctrl(self, pkt: Packet) -> None:
        self.ctrl.append(pkt)
        if not self.busy:
            self._next()

    def _next(self) -> None:
        qp = None
        if self.ctrl:
            pkt = self.ctrl.popleft()
        else:
            active = self.active
            while active:
                qp = active.popleft()
                tx = qp.tx
                if tx.packets and not tx.paused:
                    break
                tx.in_arbiter = False
                qp = None
            if qp is None:
                self.busy = False
                return
            packets = tx.packets
            pkt = packets.popleft()
            if packets:
                active.append(qp)
            else:
                tx.in_arbiter = False
        self.busy = True
        self.sim.schedule(int(pkt.wire_bytes * self.ps_per_byte), self._done, pkt, qp)

    def _done(self, pkt: Packet, qp: HwQp | None) -> None:
        nic = self.nic
        if pkt.dst_lid == nic.lid:
            # loopback (two processes of one host, or a QP connected to its own NIC): the
            # adapter turns the packet around inside after its engine, DMA and port
            # serialization; it never reaches the link or the switch and is never lost.
            # That the turnaround adds nothing beyond those costs is an assumption.
            self.sim.schedule(0, nic.receive_packet, pkt)
        else:
            self.fabric.transmit(pkt, nic.lid)
        if qp is not None:  # else a control packet (ACK, NAK, READ response, TERMINATE)
            if qp.req.rto_idle:
                self.requester.rto_start(qp)
            if pkt.last:
                tr = self.sim.tracer
                if tr is not None:
                    tr.emit("hw", "send_left", qp.actor, msn=pkt.msn)
                wq = qp.wq
                leaving = wq.leaving
                if leaving and leaving[0] == pkt.msn:  # its first departure, not a retransmission
                    leaving.popleft()
                    if not wq.busy:
                        self.engine.next(qp)
        if self.ctrl or self.active:
            self._next()
        else:
            self.busy = False  # nothing waits: the port idles (``_next`` would say so)
