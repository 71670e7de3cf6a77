"""Which object an event belongs to, and which state it may touch: the explorer's
dependence relation.

Two same-instant events *commute* when neither touches state the other touches; the
explorer then needs only one of their orders (``check/search.py``). The relation must
over-approximate what the code really shares, or the reduction would miss executions, so
it is coarse where the model has hidden shared state:

* a NIC callback touches its **host**: a NIC's QPs share the PCIe bus reservations, the
  transmit arbiter and the completion queues, so two QPs of one NIC are dependent;
* a rank's process step touches its **host** too (it posts to and polls its own NIC); the
  rank's host is read from the trace's ``placement`` event (``sim/schema.py``), and a
  process whose host is not known touches everything;
* a packet handed to the switch (the transmit port's callback) also touches the
  destination switch **port**: two
  NICs sending to one NIC queue on its switch port;
* a completion-queue write touches its NIC's host; anything not recognised (a timeout
  event, an out-of-band message) touches everything (``ANY``).

Events of *different* hosts then commute unless they meet on a switch port: a rank's poll
and the far NIC's engine, the two NICs' engines of a two-rank job.

The finer identity of an event (which QP) is its *object*: events of one object keep
their program order at an instant; events of different objects may be reordered.
"""

from __future__ import annotations

from greenlet import greenlet

from ..hw.nic import Nic
from ..hw.port import TransmitPort
from ..hw.qp import HwQp
from ..hw.requester import Requester
from ..hw.responder import Responder
from ..hw.work_queue import WorkQueueEngine
from ..sim.schema import identities
from ..sim.ties import receiver_of
from ..verbs import CompletionQueue

__all__ = ["ANY", "Footprints", "event_object"]

ANY = ("any",)
"""The footprint element that conflicts with every other."""

_NIC_PARTS = (Nic, WorkQueueEngine, TransmitPort, Requester, Responder)
"""The NIC and the parts it is composed of (each knows its ``nic``)."""


def event_object(fn, args):
    """The object an event belongs to: the QP for a NIC callback about one QP, else the
    receiver (``sim.ties.receiver_of``)."""
    obj = receiver_of(fn, args)
    if obj.__class__ in _NIC_PARTS and args and args[0].__class__ is HwQp:
        return args[0]
    return obj


def _host_of_nic(nic) -> tuple[str, str]:
    return ("host", nic.name.partition("/")[0])


class Footprints:
    """Computes the footprint (a set of state names) of each step of one run."""

    def __init__(self):
        self.rank_hosts: dict[str, str] = {}
        """rank name -> host, from the trace's ``placement`` events."""
        self.process_names: dict[int, str] = {}

    def learn(self, sim, events) -> set:
        """What the trace events emitted by one step touch (and the placements they
        announce), coarsened to hosts and ports."""
        touched = set()
        for ev in events:
            if ev[2] == "placement":
                self.rank_hosts[ev[3]] = dict(ev[4]).get("host", "")
            for kind, name in identities(ev):
                if kind == "host" or kind == "port":
                    touched.add((kind, name))
                elif kind == "rank":
                    host = self.rank_hosts.get(name)
                    touched.add(("host", host) if host else ANY)
                elif kind == "unknown":
                    touched.add(ANY)
        return touched

    def static(self, sim, obj, fn, args) -> set:
        """What an event may touch, from its object and callback alone."""
        cls = obj.__class__
        if cls is HwQp:
            fp = {_host_of_nic(obj.nic)}
        elif cls is Nic:
            fp = {_host_of_nic(obj)}
        elif cls in _NIC_PARTS:
            fp = {_host_of_nic(obj.nic)}
        elif cls is greenlet:
            name = self._process_name(sim, obj)
            host = self.rank_hosts.get(name) if name else None
            return {("host", host)} if host else {ANY}
        elif cls is CompletionQueue:
            fp = {_host_of_nic(obj.context.nic)}
        else:
            return {ANY}
        if cls is TransmitPort and args and args[0] is not None:  # a packet leaves the port
            fp.add(("port", str(args[0].dst_lid)))
        return fp

    def _process_name(self, sim, g) -> str | None:
        key = id(g)
        name = self.process_names.get(key)
        if name is None:
            for proc in sim.processes:
                self.process_names[id(proc.greenlet)] = proc.name
            name = self.process_names.get(key)
        return name
