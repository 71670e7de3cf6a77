"""Which object an event belongs to, and which state it may touch: the explorer's
dependence relation.

Two events are *dependent* when their footprints meet; independent events commute, and the
explorer needs only one of their orders (``check/search.py``). A footprint must
over-approximate the state the callback really reads or writes, or the reduction would
miss executions. The relation here is per work queue, not per host: it names the pieces of
state the NIC model keeps and which callbacks reach them (``hw/``):

* ``("qp", Q)`` — one QP's NIC-side state: its work-queue FIFO and engine (``wq``), the
  requester's MSN/PSN counters and in-flight messages, the responder, its transmit queue
  and completion ordering (``last_cqe``). Every NIC callback about Q touches it.
* ``("usable", Q)`` — the *usable* marks of Q's posted receives: written when T3's single
  work queue reaches a receive (``_recv_processed``) or a split device makes it usable
  (``_recv_usable_split``), read by an arriving message. This is the race of the seed.
* ``("pcie", NIC)`` — the host-to-NIC DMA bus (``PcieBus.to_nic_free``): a send's payload
  fetch. Only a callback that can start a send touches it: a send doorbell, or an engine
  step of a QP with sends outstanding (a send enters the FIFO only through its doorbell,
  which is counted in ``sq.outstanding`` from the post on).
* ``("port", NIC)`` — the NIC's transmit arbiter and its link (``TransmitPort``): packets
  queued by ``_emit``, control packets (ACK, NAK, TERMINATE) queued by an arriving packet.
* ``("switch", LID)`` — the switch output port towards LID: a packet handed to the fabric.
* ``("host", H)`` — the host's software side: the rank's process and BTL module, its
  memory and the receive queues it posts to. A rank's step, an out-of-band connection
  message, a CQE write that wakes a waiting rank, an arriving packet the host must see
  (its QP not yet in RTS, or on a shared receive queue) and an RDMA WRITE's bytes landing
  in memory (a rank may be polling them) touch it. A rank whose host is not yet known
  (before its ``placement`` trace event) touches everything.
* ``("cq", C)`` and ``("cqs", H)`` — one completion queue, and all of host H's. A CQE
  write touches its CQ and ``("cqs", H)``; every event that touches ``("host", H)`` also
  touches ``("cqs", H)``, so statically a CQE write depends on exactly what it did when
  the host's CQs were one piece of state. The untimed search learns more: a rank's step
  there carries ``("cq", C)`` for the CQs it really polled or armed
  (``check/cq_access.py``) instead of ``("cqs", H)``, so a CQE write commutes with the
  steps that never looked at its CQ.
* ``ANY`` — anything not recognised (a timeout event, a bare function): conflicts with all.

Two facts make this relation sound beyond the per-object state:

* **Error transitions are left out.** ``to_error`` (a TERMINATE, retries exhausted) touches
  everything of a QP, but it happens only in an execution that has already failed, and an
  event that commutes with the failing one on the rest of the state cannot make that
  failure disappear: both orders fail.
* **A work request's buffer belongs to the NIC from post to completion** (the verbs rule
  the BTL keeps), so the payload gather of ``_emit`` commutes with the host's steps.

What two events of one NIC share beyond these (nothing else: the memory translation table
is written only at registration, by the host) is named above. Events of different hosts
meet only on a switch port. The finer identity of an event (which QP) is its *object*:
events of one object keep their program order at an instant.
"""

from __future__ import annotations

from greenlet import greenlet

from ..btl.module import OpenibModule
from ..hw.nic import Nic
from ..hw.packet import READ_REQ
from ..hw.port import TransmitPort
from ..hw.qp import HwQp, QpState, ack_timeout_ps
from ..hw.requester import Requester
from ..hw.responder import Responder
from ..hw.work import SendWR
from ..hw.work_queue import WorkQueueEngine
from ..sim.ties import callback_of, receiver_of
from ..verbs import CompletionQueue

__all__ = ["ANY", "Footprints", "event_object", "host_projection", "ordered_channel"]

ANY = ("any",)
"""The footprint element that conflicts with every other."""

_RTS = QpState.RTS

_NIC_PARTS = (Nic, WorkQueueEngine, TransmitPort, Requester, Responder)
"""The NIC and the parts it is composed of (each knows its ``nic``)."""


def event_object(fn, args):
    """The object an event belongs to: the QP for a NIC callback about one QP, else the
    receiver (``sim.ties.receiver_of``)."""
    obj = receiver_of(fn, args)
    if obj.__class__ in _NIC_PARTS and args and args[0].__class__ is HwQp:
        return args[0]
    return obj


_ORDERED = {
    "_doorbell_send": "doorbell",
    "_doorbell_recv": "doorbell",
    "_recv_usable_split": "recv_path",
    "_emit": "emit",
}
"""Work-queue engine callbacks whose order per QP the timed models keep, by channel."""


def ordered_channel(fn, args):
    """The channel whose order the *timed* models keep whatever the durations, for an
    event of one, or None: a QP's doorbells (``last_doorbell`` clamps each behind the one
    rung before it), a split device's receive path (``last_ready``) and every device's
    cutting of sends into packets (``last_emit`` on a split device; on a shared one the
    engine starts the next WR only after the cut). Same-instant members keep their QP's
    program order (``sim/ties.py``). A moved member pushes the later members it passes
    (``check/causal.py``), so these clamps need no clock of their own. And a NIC's
    arrivals from the switch: its output link is FIFO (``last_out``); a loopback packet
    turned around inside the adapter is not on it."""
    inner = callback_of(fn)
    name = inner.__name__
    owner = getattr(inner, "__self__", None)
    kind = _ORDERED.get(name)
    if kind is not None and owner.__class__ is WorkQueueEngine:
        return (kind, args[0].actor)
    if name == "receive_packet" and owner.__class__ is Nic and args[0].src_lid != owner.lid:
        return ("arrival", owner.name)  # the link from the switch (``last_out``)
    return None


def _qp_clocks(qp: HwQp) -> tuple:
    """The clocks a QP's NIC-side state carries that NIC steps write, each compared with
    a time computed from ``now`` and then ``max``-ed (clamps): completion order per side,
    DMA-write order of the responder and of READ responses. (``last_doorbell``,
    ``last_ready`` and ``last_emit`` are the ``ordered_channel`` clamps.)"""
    return (qp.sq.last_cqe, qp.rq.last_cqe, qp.resp.dma_end, qp.req.dma_end)


def _port_times(port: TransmitPort) -> tuple:
    """The instants the transmit arbiter compares with ``now`` to choose what it sends
    next (a *decision*, not a ``max``): its wake-up and the readiness of the control
    queue's head and of each QP's head packet."""
    times = [port.wake_at] if port.wake_at else []
    if port.ctrl:
        times.append(port.ctrl[0].ready)
    for qp in port.active:
        packets = qp.tx.packets
        if packets:
            times.append(packets[0].ready)
    return tuple(times)


def host_projection(fp) -> set:
    """The footprint coarsened to hosts (and switch ports): what a duration's cut points
    are judged by (``check/search.py``). A duration moves its event *and everything it
    causes* (a packet's arrival, the far side's answer), so the events it can usefully be
    ordered against are those of its host, not only of its queue."""
    out = set()
    for element in fp:
        kind = element[0]
        if kind == "host" or kind == "switch" or element is ANY:
            out.add(element)
        else:  # ("qp"|"usable", "<host>/<device>/qpN") or ("port"|"pcie", "<host>/<device>")
            out.add(("host", element[1].partition("/")[0]))
    return out


def _host_software(host: str) -> set:
    """What an event of host ``host``'s software may touch: the host, and its CQs."""
    return {("host", host), ("cqs", host)}


def _host_of(nic) -> str:
    return nic.name.partition("/")[0]


def _cqe_write(cq: CompletionQueue) -> set:
    """What ``CompletionQueue.push`` touches: its CQ; and the host's software when it
    runs a notification callback (the waiting rank's wake-up) or overruns the CQ (an
    asynchronous event reaches the host)."""
    host = _host_of(cq.context.nic)
    fp = {("cq", cq.name), ("cqs", host)}
    if cq._notify or len(cq.entries) >= cq.capacity:
        fp |= _host_software(host)
    return fp


def _may_start_send(qp: HwQp) -> bool:
    """Whether an engine step of ``qp`` may fetch a send's payload over PCIe: only when a
    send is outstanding (posted and not completed; its doorbell may be on its way)."""
    return qp.sq.outstanding > 0 or any(type(w) is SendWR for w in qp.wq.fifo)


def _engine_step(name: str, qp: HwQp) -> set:
    """What a ``WorkQueueEngine`` callback about ``qp`` touches."""
    nic = qp.nic.name
    if name == "_recv_usable_split":
        return {("usable", qp.actor)}
    fp = {("qp", qp.actor)}
    if name == "_recv_processed":
        fp.add(("usable", qp.actor))
    elif name == "_emit":
        fp.add(("port", nic))
    if name == "_doorbell_send" or _may_start_send(qp):
        fp.add(("pcie", nic))
    return fp


def _arrival(nic, pkt) -> set:
    """What ``Nic.receive_packet(pkt)`` touches: the destination QP, its receives, the
    port for the answer; and the host while the QP is not yet ready to send (the host
    is moving it through INIT, RTR, RTS: the packet is dropped or not by that) or takes
    its receives from a shared receive queue (whose limit event reaches the host).

    Once the QP is in RTS an arrival commutes with every step of its host's software:
    it consumes the first *usable* receive entry, which a post (appending an entry not
    yet usable) leaves in place; the payload lands in a buffer the NIC owns until the
    completion (the verbs rule, as for the payload gather); the completion and an RDMA
    WRITE's bytes are separate events (a CQE write, ``_land_write``), which do touch the
    host; and the send completions an acknowledgement retires only decrement the count a
    post increments. Error transitions are left out as everywhere (module docstring)."""
    qp = nic.qp(pkt.dst_qpn)
    fp = {("port", nic.name)}
    if qp is None or qp.state != _RTS or qp.srq is not None:
        fp |= _host_software(_host_of(nic))
    if qp is not None:
        fp.add(("qp", qp.actor))
        fp.add(("usable", qp.actor))
    if pkt.kind == READ_REQ:
        fp.add(("pcie", nic.name))
    return fp


class Footprints:
    """Computes the footprint (a set of state names) of each step of one run."""

    def __init__(self):
        self.rank_hosts: dict[str, str] = {}
        """rank name -> host, from the trace's ``placement`` events."""
        self.process_names: dict[int, str] = {}
        self._holders: dict = {}
        """footprint element -> the model object whose clocks it names (``clocks``)."""

    ADDITIVE = frozenset(
        {
            "nic.doorbell",
            "nic.recv_wqe",
            "nic.send_wqe",
            "nic.recv_usable",
            "nic.cqe",
            "nic.rx",
            "wire.link",
            "wire.switch",
        }
    )
    """Durations the device models only *add* to the times of the step that draws them
    (what it schedules after the draw, the clocks it writes): a value ``delta`` away moves
    those by at most ``delta``, which ``check/causal.py`` needs. Not ``nic.pcie`` (a read's
    round trip counts it twice), ``host.poll`` (once per completion polled) or ``sm.*``
    (host clocks this module does not name): those keep every value."""

    FIRST_ONLY = frozenset({"nic.doorbell"})
    """Durations a host's post draws for the one event it schedules (the doorbell): the
    rank's later schedules in the same step do not depend on them."""

    @staticmethod
    def channel(fn, args):
        """The ordered channel of an event (``ordered_channel``)."""
        return ordered_channel(fn, args)

    def clocks(self, fp) -> dict:
        """The current values of the clocks the state in ``fp`` carries, by key: times
        the models compare with a time computed from ``now`` and ``max`` (what a move in
        time propagates through, ``check/causal.py``)."""
        out = {}
        holders = self._holders
        for element in fp:
            kind = element[0]
            holder = holders.get("fabric" if kind == "switch" else element)
            if holder is None:
                continue
            if kind == "qp":
                for k, value in enumerate(_qp_clocks(holder)):
                    out[(element, k)] = value
            elif kind == "pcie":
                out[(element, 0)] = holder.to_nic_free
                out[(element, 1)] = holder.to_host_free
            elif kind == "port":
                for k, value in enumerate(holder.fabric.port_clocks(holder.lid)):
                    out[(element, k)] = value
            elif kind == "switch":
                for k, value in enumerate(holder.port_clocks(element[1])):
                    out[(element, k)] = value
        return out

    def decision_times(self, fp) -> tuple:
        """The instants the state in ``fp`` compares with ``now`` to *choose* what happens
        (the transmit arbiter's, ``_port_times``; an armed transport timer's deadline,
        which decides between waiting and retransmitting): a move that carries one of
        them across ``now``, or ``now`` across one, may change behaviour, not only times."""
        out = ()
        holders = self._holders
        for element in fp:
            kind = element[0]
            if kind == "port":
                holder = holders.get(element)
                if holder is not None:
                    out += _port_times(holder.port)
            elif kind == "qp":
                qp = holders.get(element)
                if qp is not None and qp.req.rto_armed:
                    out += (qp.req.rto_base + ack_timeout_ps(qp.timeout),)
        return out

    def known_nics(self) -> list:
        """Every NIC on the fabric of the NICs met so far (none before the first NIC
        event)."""
        fabric = self._holders.get("fabric")
        return fabric.nics() if fabric is not None else []

    def _register(self, qp: HwQp | None, nic) -> None:
        holders = self._holders
        if qp is not None:
            holders.setdefault(("qp", qp.actor), qp)
        if nic is not None and ("pcie", nic.name) not in holders:
            holders[("pcie", nic.name)] = nic.pcie
            holders[("port", nic.name)] = nic
            holders["fabric"] = nic.fabric

    def learn(self, sim, events) -> set:
        """Learn where ranks run from the trace events one step emitted. The static
        footprint of a step already covers what it touched, so nothing is added."""
        for ev in events:
            if ev[2] == "placement":
                self.rank_hosts[ev[3]] = dict(ev[4]).get("host", "")
        return set()

    def static(self, sim, obj, fn, args) -> set:
        """What an event may touch, from its callback, its arguments and the state of
        the objects they name (see the module docstring)."""
        cls = obj.__class__
        if cls is HwQp:
            self._register(obj, obj.nic)
            inner = callback_of(fn)
            owner = getattr(inner, "__self__", None)
            if owner.__class__ is WorkQueueEngine:
                return _engine_step(inner.__name__, obj)
            if owner.__class__ is TransmitPort:
                return self._port_step(obj.nic, args)
            # requester / responder timers (retransmission, RNR, READ responses)
            return {
                ("qp", obj.actor),
                ("port", obj.nic.name),
                ("pcie", obj.nic.name),
            } | _host_software(_host_of(obj.nic))
        if cls is Nic:
            if fn.__name__ == "receive_packet":
                self._register(obj.qp(args[0].dst_qpn), obj)
                return _arrival(obj, args[0])
            return {ANY}
        if cls is TransmitPort:
            self._register(args[1] if len(args) > 1 else None, obj.nic)
            return self._port_step(obj.nic, args)
        if cls is Responder and fn.__name__ == "_land_write":
            return _host_software(_host_of(obj.nic))  # an RDMA WRITE's bytes reach memory
        if cls is CompletionQueue:
            return _cqe_write(obj)
        if cls is OpenibModule:  # an out-of-band connection message
            return _host_software(obj.hostname)
        if cls is greenlet:
            name = self._process_name(sim, obj)
            host = self._host_of_rank(sim, name) if name else None
            return _host_software(host) if host else {ANY}
        return {ANY}

    @staticmethod
    def _port_step(nic, args) -> set:
        """``TransmitPort._done(pkt, qp)``: the arbiter, the switch port towards the
        packet's destination and, for a QP's packet, that QP's departure bookkeeping
        (T3 restarts its work queue there)."""
        fp = {("port", nic.name)}
        pkt = args[0] if args else None
        if pkt is None:
            return fp
        if pkt.dst_lid != nic.lid:
            fp.add(("switch", pkt.dst_lid))
        qp = args[1] if len(args) > 1 else None
        if qp is not None:
            fp.add(("qp", qp.actor))
            if _may_start_send(qp):
                fp.add(("pcie", nic.name))
        return fp

    def _host_of_rank(self, sim, name: str) -> str | None:
        """The rank's host; a module announces it (``placement``) when it is built, before
        any step ran, so the trace is read for it the first time it is needed."""
        host = self.rank_hosts.get(name)
        if host is None and sim.tracer is not None:
            self.learn(sim, sim.tracer.events)
            host = self.rank_hosts.setdefault(name, "")
        return host or None

    def _process_name(self, sim, g) -> str | None:
        key = id(g)
        name = self.process_names.get(key)
        if name is None:
            for proc in sim.processes:
                self.process_names[id(proc.greenlet)] = proc.name
            name = self.process_names.get(key)
        return name
