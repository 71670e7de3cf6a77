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
    EMPTY,
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
        "wake_at",
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
        self.wake_at = 0
        """When the port wakes for a packet that was not ready (0: no wake-up pending)."""
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

    def send_ack(self, pkt: Packet) -> None:
        """``send_ctrl`` for the ACK that ends ``Responder.rx_data``, folding its
        serialization into its departure where that is exact: the port is idle with
        nothing else to send, the ACK leaves the NIC (no loopback) on a lossless fabric,
        and the kernel says its end of serialization (``_done``) would be the very next
        event (``Simulator.fold``). Then no event runs before that instant, and the
        caller only traces after this call, so nothing can queue behind the ACK, no other
        NIC's packet can reach the switch's output queues first, and ``_done`` would find
        the port with nothing to do: the ACK goes to the switch now as having left at that
        instant (``Fabric.transmit``'s ``left``), and the port stays idle. The same
        switch grants, arrival time and order of every later event; the heap entry is
        gone (``events_folded``). A loss draw would trace: no fold on a lossy fabric.
        ``check``'s footprints (``check/footprint.py``) describe the unfolded events,
        which is what a search runs: its oracles are not ``plain``, so nothing folds."""
        nic = self.nic
        if not (self.busy or self.ctrl or self.active or self.fabric.lossy):
            if pkt.dst_lid != nic.lid:
                left = self.sim.now + int(pkt.wire_bytes * self.ps_per_byte)
                if self.sim.fold(left):
                    self.fabric.transmit(pkt, nic.lid, left)
                    return
        self.send_ctrl(pkt)

    def _next(self) -> None:
        """Start serializing the next packet whose payload is ready: the oldest control
        packet, else the next QP in round-robin order whose head packet is. A QP whose
        head packet is still being read from host memory (cut-through) is passed over,
        keeping its place; when nothing is ready the port wakes at the earliest ready
        time."""
        now = self.sim.now
        qp = None
        pkt = None
        ctrl = self.ctrl
        wake = 0
        if ctrl:
            head = ctrl[0]
            if head.ready <= now:
                pkt = ctrl.popleft()
            else:
                wake = head.ready  # control packets stay in order (READ responses)
        if pkt is None:
            active = self.active
            for _ in range(len(active)):
                candidate = active.popleft()
                tx = candidate.tx
                if not tx.packets or tx.paused:
                    tx.in_arbiter = False
                    continue
                ready = tx.packets[0].ready
                if ready <= now:
                    qp = candidate
                    break
                active.append(candidate)  # not ready yet: keeps its turn for later
                if wake == 0 or ready < wake:
                    wake = ready
            if qp is None:
                self.busy = False
                if wake and (self.wake_at == 0 or wake < self.wake_at):
                    self.wake_at = wake
                    self.sim.schedule(wake - now, self._wake)
                return
            packets = tx.packets
            pkt = packets.popleft()
            if packets:
                active.append(qp)
            else:
                tx.in_arbiter = False
                tx.packets = EMPTY  # the QP holds no queue while nothing waits
        self.busy = True
        self.sim.schedule(int(pkt.wire_bytes * self.ps_per_byte), self._done, pkt, qp)

    def _wake(self) -> None:
        """A packet passed over for not being ready is ready now (unless an earlier
        wake-up replaced this one, or the port is already serializing)."""
        if self.wake_at == self.sim.now:
            self.wake_at = 0
            if not self.busy:
                self._next()

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
