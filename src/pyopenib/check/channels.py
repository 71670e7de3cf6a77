"""The FIFO channels of the hardware model: what ``--timing untimed`` schedules.

Untimed mode (``sim/untimed.py``) runs the head of any channel next; inside a channel the
events keep the order the model issued them in. A channel is therefore exactly one ordering
rule the hardware keeps whatever its speeds, and two events belong to one channel only
when the hardware orders them:

* ``("doorbell", Q)`` — a QP's doorbells (send and receive posts) reach the NIC in ring
  order: PCIe posted writes are ordered (``last_doorbell``).
* ``("engine", Q)`` — the QP's work-queue engine: T3's single SQ/RQ FIFO (a receive entry
  waits behind the sends rung before it), or a split device's send engine. One step at
  a time, each started by the previous one.
* ``("emit", Q)`` — cutting a send into packets once its payload is fetched, in posting
  order (``last_emit``): on a split device it overlaps the engine's next WQE; on T3 the
  engine waits for it (one of the two is pending at a time).
* ``("recv_path", Q)`` — a split device's receive path: posted receives become usable in
  order (``last_ready``), independently of the send engine.
* ``("responder", Q)`` — READ responses of a QP, in order.
* ``("arrival", NIC)`` — the NIC's link: packets arrive in the order the switch port
  sent them (so in order per RC QP).
* ``("port", NIC)`` — the transmit port: one packet serialised at a time.
* ``("to_host", NIC)`` — the NIC's DMA writes into host memory: an RDMA WRITE's payload
  landing and every completion (CQE) write. PCIe posted writes of one device are
  ordered, so a CQE is never visible before the payload of a WRITE the NIC issued before
  it (the IB rule a rendezvous FIN or an eager-RDMA footer relies on).
* a rank's greenlet — its next step (program order); any other object — its own events.

Timeouts (the requester's RNR back-off, withdrawable timers) are no channel's head while
anything else can happen: they fire only at quiescence (``is_timeout``).
"""

from __future__ import annotations

from greenlet import greenlet

from ..hw.nic import Nic
from ..hw.port import TransmitPort
from ..hw.qp import HwQp
from ..hw.requester import Requester
from ..hw.responder import Responder
from ..hw.work_queue import WorkQueueEngine
from ..sim import Timer
from ..sim.ties import callback_of, receiver_of
from ..verbs import CompletionQueue

__all__ = ["channel_of", "channel_name", "is_timeout"]

_ENGINE_GROUPS = {
    "_doorbell_send": "doorbell",
    "_doorbell_recv": "doorbell",
    "_recv_usable_split": "recv_path",
    "_emit": "emit",
}
"""Work-queue engine callbacks by channel; the rest (``next``, ``_recv_processed``) are
the engine's own steps."""

_TIMEOUTS = frozenset({"_rnr_resume", "_rto_expired"})
"""Requester callbacks that are timeouts (plain ``schedule`` calls, not ``Timer``)."""


def is_timeout(fn, args) -> bool:
    """Whether a pending event is a timeout: fires only when nothing else is pending."""
    if fn.__class__ is Timer:
        return True
    inner = callback_of(fn)
    return getattr(inner, "__self__", None).__class__ is Requester and inner.__name__ in _TIMEOUTS


def channel_of(fn, args):
    """The channel a pending event belongs to (see the module docstring): a hashable key."""
    inner = callback_of(fn)
    owner = getattr(inner, "__self__", None)
    cls = owner.__class__
    if cls is WorkQueueEngine:
        return (_ENGINE_GROUPS.get(inner.__name__, "engine"), args[0])
    if cls is TransmitPort:
        return ("port", owner)
    if cls is Nic and inner.__name__ == "receive_packet":
        return ("arrival", owner)
    if cls is Responder:
        if inner.__name__ == "_land_write":
            return ("to_host", owner.nic)
        return ("responder", args[0] if args and args[0].__class__ is HwQp else owner)
    if cls is CompletionQueue:
        return ("to_host", owner.context.nic)
    if cls is Requester and args and args[0].__class__ is HwQp:
        return ("requester", args[0])
    return receiver_of(fn, args)


def channel_name(channel) -> str:
    """A readable name for a channel (counterexamples, tests)."""
    if type(channel) is not tuple:
        return _object_name(channel)
    return f"{channel[0]} {_object_name(channel[1])}"


def _object_name(obj) -> str:
    cls = obj.__class__
    if cls is HwQp:
        return obj.actor
    if cls is Nic:
        return obj.name
    if cls in (TransmitPort, Responder, Requester, WorkQueueEngine):
        return obj.nic.name
    if cls is greenlet:
        return "rank step"
    return cls.__name__
