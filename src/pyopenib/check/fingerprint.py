"""State fingerprints: what of a simulation state can change its future, and nothing else.

The stateful untimed search (``check/untimed.py``) prunes a state it has met before. Two
states may be merged only if every continuation of one is a continuation of the other, so
a fingerprint must cover everything that affects the future and may leave out only what
cannot. It is a canonical serialisation of the object graph reachable from the state's
roots, in a fixed walk order:

1. each rank's process: the frames of its suspended greenlet, innermost last — each
   frame's code, its position (``f_lasti``) and its local variables. A deterministic
   program's local state *is* its frames, so this is the program position of a scenario
   (its counters) and of a user's program alike;
2. the pending events, channel by channel (``check/channels.py``), each channel's events
   in issue order: ``(channel, callback, arguments)``. Across channels the untimed
   scheduler may run any head, so their relative issue order is left out; inside a
   channel it is the FIFO rule and stays. An event's *time* is left out: the untimed
   scheduler runs any enabled head whatever its time (the times only sort the offered
   heads, which changes which alternative is tried first, never the set), except that
   timeouts fire earliest first at quiescence — so the timeouts' relative order is kept.

Every object met is either a value (numbers, strings, bytes, containers, functions and
their closures, bound methods, greenlets), or an instance of a class *declared* in
``DECLARED``: the declaration names the attributes left out, each with the reason it
cannot change the future (statistics, the trace, the search's own oracle, configuration
that is the same in every state of one search). Every other attribute is walked. An
instance of an undeclared class is an error (``Undeclared``), never skipped: a model
object added later with state of its own must say what of it matters before a stateful
search may trust a match. Shared objects are serialised once and referred to by their
first-visit number afterwards, so equal fingerprints mean isomorphic reachable graphs.
"""

from __future__ import annotations

import enum
import hashlib
import types
import weakref
from collections import OrderedDict, defaultdict, deque

import numpy as np
from greenlet import greenlet

from ..sim import Simulator
from .cq_access import RecordedEntries, RecordedNotify

__all__ = ["DECLARED", "Undeclared", "declare", "state_fingerprint", "event_fingerprints"]


class Undeclared(Exception):  # noqa: N818 - the name says what is wrong
    """A model object with state and no fingerprint declaration."""


DECLARED: dict[str, dict[str, str]] = {}
"""Qualified class name (``module.QualName``: the model's private classes are named, not
imported) -> the attributes the fingerprint leaves out, each with its reason. A class
mapped to ``CONSTANT`` is configuration: the same in every state of one search (built
from the command's settings, never written after set-up), so only its class is kept."""

CONSTANT = {"*": "configuration: built once per execution from the command's settings"}


def declare(cls: type | str, skip: dict[str, str] | None = None) -> None:
    """Declare ``cls`` (a class or its qualified name): every attribute is walked except
    those of ``skip`` (name -> why it cannot change the future)."""
    DECLARED[cls if isinstance(cls, str) else _name(cls)] = dict(skip or {})
    _FOUND.clear()


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


_ndarray = np.ndarray
_ATOMS = (type(None), bool, int, float, str, bytes, complex)

_SEQUENCES = {
    list: "list",
    tuple: "tuple",
    deque: "deque",
    RecordedEntries: "deque",  # a CQ's entries while the untimed search records access
    RecordedNotify: "list",
}
"""Sequences walked item by item, by the name their kind is hashed under."""
_SKIP_FRAME_LOCALS = frozenset({"__builtins__"})
_KERNEL_FILE = Simulator.sleep.__code__.co_filename
"""Frames of the kernel (``sim/_kernel.py``: its blocking calls, ``sleep``, ``suspend``,
``wait`` and the like): their locals (the raw heap, the wake-up's time and issue number)
are dead once the process resumes, which returns at once."""


class _Walker:
    """One serialisation: ``out`` collects the tokens, ``seen`` numbers shared objects."""

    def __init__(self):
        self.seen: dict[int, int] = {}
        self.keep: list = []  # keeps walked temporaries alive so their ids stay unique
        self.out: list = []

    def ref(self, obj) -> bool:
        """Emit a back-reference when ``obj`` was walked already; else number it."""
        key = id(obj)
        n = self.seen.get(key)
        if n is not None:
            self.out.append(("@", n))
            return True
        self.out.append(("#", len(self.seen)))  # the number, so any order of tokens decodes
        self.seen[key] = len(self.seen)
        self.keep.append(obj)
        return False

    def walk(self, obj) -> None:
        out = self.out
        cls = obj.__class__
        if cls in _ATOMS or isinstance(obj, enum.Enum):
            out.append(obj if cls is not float else ("f", obj))
            return
        if cls in (bytearray, memoryview):
            out.append(("b", hashlib.blake2b(obj, digest_size=16).digest()))
            return
        if cls is _ndarray:  # a buffer: by value (its aliasing is fixed at set-up)
            data = obj.tobytes() if not obj.flags.c_contiguous else obj.data
            out.append(
                ("nd", obj.dtype.str, obj.shape, hashlib.blake2b(data, digest_size=16).digest())
            )
            return
        if cls is object:  # a sentinel: no state
            out.append("object")
            return
        if self.ref(obj):
            return
        if cls in _SEQUENCES:
            out.append((_SEQUENCES[cls], len(obj)))
            for x in obj:
                self.walk(x)
        elif cls in (dict, defaultdict, OrderedDict):
            out.append(("d", len(obj)))
            if cls is defaultdict:
                self.walk(obj.default_factory)
            for k, v in obj.items():
                self.walk(k)
                self.walk(v)
        elif cls in (set, frozenset):
            items = sorted(obj, key=repr)
            out.append(("s", len(items)))
            for x in items:
                self.walk(x)
        elif cls is types.FunctionType:
            out.append(("fn", obj.__qualname__, obj.__code__.co_filename))
            for cell in obj.__closure__ or ():
                self.walk(cell.cell_contents if _filled(cell) else _EMPTY)
            self.walk(obj.__defaults__)
        elif cls is types.MethodType:
            out.append(("m", obj.__func__.__qualname__))
            self.walk(obj.__self__)
        elif cls is types.BuiltinMethodType or cls is types.BuiltinFunctionType:
            owner = obj.__self__
            out.append(("bm", obj.__qualname__))
            if not isinstance(owner, types.ModuleType):
                self.walk(owner)
        elif cls is greenlet:
            self.greenlet(obj)
        elif isinstance(obj, type):
            out.append(("t", obj.__module__, obj.__qualname__))
        elif cls is types.ModuleType:
            out.append(("mod", obj.__name__))
        elif cls is types.FrameType:
            self.frames(obj)
        elif cls is weakref.ref:  # what it still refers to (None once that is gone)
            out.append("wr")
            self.walk(obj())
        else:
            self.instance(obj, cls)

    def greenlet(self, g) -> None:
        """A process: its suspended frames (not started or finished: its flag only)."""
        frame = g.gr_frame
        self.out.append(("g", bool(g), frame is None))
        if frame is not None:
            self.frames(frame)

    def frames(self, frame) -> None:
        stack = []
        while frame is not None:
            stack.append(frame)
            frame = frame.f_back
        self.out.append(("fr", len(stack)))
        for f in reversed(stack):
            code = f.f_code
            self.out.append((code.co_filename, code.co_qualname, f.f_lasti))
            if code.co_filename == _KERNEL_FILE:
                continue
            for name, value in f.f_locals.items():
                if name not in _SKIP_FRAME_LOCALS:
                    self.out.append(name)
                    self.walk(value)

    def instance(self, obj, cls) -> None:
        skip = _declaration(cls)
        self.out.append(("o", cls.__qualname__))
        if skip is CONSTANT:
            return
        for name, value in _fields(obj, cls):
            if name not in skip:
                self.out.append(name)
                self.walk(value)


class _Empty:
    """The contents of a closure cell not yet assigned."""


_EMPTY = _Empty()


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - the access is the test
    except ValueError:
        return False
    return True


_FOUND: dict[type, dict] = {}


def _declaration(cls):
    found = _FOUND.get(cls)
    if found is not None:
        return found
    for klass in cls.__mro__:
        skip = DECLARED.get(_name(klass))
        if skip is not None:
            _FOUND[cls] = skip
            return skip
    raise Undeclared(
        f"{cls.__module__}.{cls.__qualname__} carries state but has no fingerprint "
        "declaration (pyopenib.check.fingerprint.DECLARED): say which of its attributes "
        "can change the future before a stateful search may match its states"
    )


_SLOTS: dict[type, tuple] = {}


def _fields(obj, cls):
    """``(name, value)`` of every attribute of ``obj``: its ``__dict__`` and its slots."""
    slots = _SLOTS.get(cls)
    if slots is None:
        names = []
        for klass in reversed(cls.__mro__):
            for s in klass.__dict__.get("__slots__", ()):
                if s not in ("__dict__", "__weakref__") and s not in names:
                    names.append(s)
        _SLOTS[cls] = slots = tuple(names)
    for name in slots:
        if hasattr(obj, name):
            yield name, getattr(obj, name)
    d = getattr(obj, "__dict__", None)
    if d is not None:
        yield from d.items()


def event_fingerprints(sim, entries, channel_of, is_timeout, walker=None):
    """Per pending entry a token identifying it inside its state whatever the path: its
    channel's serialisation, its place in that channel, and its own serialisation.
    Channels are walked in the order of their keys' objects as the walk so far numbered
    them (the ranks' frames reach every QP and NIC first), not in heap order, so the
    numbering of objects first met in an event does not depend on the path. Returns
    ``(keys, walker)``; ``keys[i]`` belongs to ``entries[i]``."""
    w = walker or _Walker()
    by_channel: dict = {}
    for entry in entries:
        by_channel.setdefault(channel_of(entry[2], entry[3]), []).append(entry)
    order = sorted(by_channel, key=lambda c: _channel_order(c, w.seen))
    keyed = {}
    for channel in order:
        start = len(w.out)
        w.walk(channel)
        chan = tuple(w.out[start:])
        del w.out[start:]
        for pos, entry in enumerate(sorted(by_channel[channel], key=lambda e: e[1])):
            w.walk(entry[2])
            w.walk(entry[3])
            keyed[entry[1]] = (chan, pos, tuple(w.out[start:]))
            del w.out[start:]
    del is_timeout
    return [keyed[e[1]] for e in entries], w


def _channel_order(channel, seen) -> str:
    """A channel's sort key: its parts, objects by their walk number."""
    parts = channel if type(channel) is tuple else (channel,)
    return repr(
        tuple(
            p if p.__class__ in _ATOMS else ("@", seen.get(id(p), -1), p.__class__.__name__)
            for p in parts
        )
    )


def state_fingerprint(sim, channel_of, is_timeout) -> tuple[bytes, dict]:
    """The fingerprint of ``sim``'s current state (see the module docstring) and, per
    pending heap sequence number, the event's token (``event_fingerprints``)."""
    w = _Walker()
    for proc in sim.processes:
        w.out.append(("p", proc.name, proc.triggered))
        w.greenlet(proc.greenlet)
    live = list(sim.pending())
    keys, _ = event_fingerprints(sim, live, channel_of, is_timeout, w)
    tokens = sorted(keys, key=repr)
    timeouts = sorted(
        (e[:2], repr(k)) for e, k in zip(live, keys, strict=True) if is_timeout(e[2], e[3])
    )
    body = (tuple(w.out), tuple(tokens), tuple(k for _, k in timeouts))
    digest = hashlib.blake2b(repr(body).encode(), digest_size=16).digest()
    return digest, {e[1]: k for e, k in zip(live, keys, strict=True)}


_TRACE = "written only for the trace"
_STAT = "a statistic: read by reports, never by the model"
_SEARCH = "the search's own bookkeeping"
_SAME = "the same in every state of one search"
_POOL = (
    "a registered pool's bytes: a payload in it is a function of the program state that "
    "wrote it (walked), and what a receiver reads is checked at delivery"
)

_CONSTANTS = (
    "pyopenib.hw.device_model.DeviceModel",
    "pyopenib.hw.device_model.Interval",
    "pyopenib.config.hosts.HostType",
    "pyopenib.config.effective.EffectiveSettings",
    "pyopenib.config.receive_queues.QueueSpec",
    "pyopenib.btl.interface.RendezvousLimits",
    "pyopenib.verbs._objects.DeviceAttr",
)
"""Configuration objects: built from the command's settings, never written after."""

_MODEL = {
    "pyopenib.sim._kernel.Simulator": {
        "now": "each event runs at its own time, set just before it runs",
        "_heap": "walked as the pending events, channel by channel",
        "_seq": "issue numbers: only their order inside a channel matters (kept there)",
        "_processes": "walked first, as the ranks' frames",
        "_loop": "the scheduler's own greenlet",
        "_oracle": _SEARCH,
        "ties": _SEARCH,
        "tracer": _TRACE,
        "events_run": _STAT,
        "timers_withdrawn": _STAT,
        "sleeps_folded": _STAT,
        "events_folded": _STAT,
        "_fold_until": "folded sleeps are off under a tie control",
        "fast_paths": _SAME,
        "seed": _SAME,
        "nominal": _SAME,
        "duration": "bound from the oracle: the same in every state of one search",
    },
    "pyopenib.sim._kernel.Process": {"sim": "the simulator is walked from the roots"},
    "pyopenib.sim._kernel.Timer": {},
    "pyopenib.sim.trace.Tracer": {"events": _TRACE, "layers": _TRACE, "sim": _TRACE},
    "pyopenib.sim.host.HostModel": {},
    "pyopenib.btl.frag.Frag": {"trace_id": _TRACE, "buf": _POOL},
    "pyopenib.btl.frag.FragBuffers": {"_chunk": _POOL},
    "pyopenib.hw.memory.HwMr": {"buffer": _POOL, "view": _POOL},
    "pyopenib.verbs._objects.MemoryRegion": {"buffer": _POOL},
    "pyopenib.btl.module.OpenibModule": {"traffic": _STAT},
    "pyopenib.btl.rcache.RegistrationCache": {"stats": _STAT},
    "pyopenib.btl.registrations.RegistrationCounts": {"peak_pinned_bytes": _STAT},
    "pyopenib.hw.wire.Fabric": {"packets_forwarded": _STAT, "packets_lost": _STAT},
    "pyopenib.hw.wire._SwitchPort": {"bytes_out": _STAT},
    "pyopenib.btl.endpoint.PerPeerQp": {"piggybacked": _STAT, "credit_msgs_sent": _STAT},
    "pyopenib.btl.credit_audit.CreditAudit": {
        "changed": "False between events (the check after each clears it): it only "
        "spares the check's work"
    },
    "pyopenib.apps.scenarios._Checker": {"delivered": _STAT},
    "pyopenib.btl.eager_rdma.EagerRdmaLocal": {"view": "the bytes of ``buf``, walked there"},
}
"""The model's classes with attributes left out (the reason with each)."""

_WALKED = (
    "pyopenib.btl.module.QpTraffic",
    "pyopenib.verbs._objects.CompletionQueue",
    "pyopenib.verbs._objects.Context",
    "pyopenib.verbs._objects.ProtectionDomain",
    "pyopenib.verbs._objects.QueuePair",
    "pyopenib.hw.nic.Nic",
    "pyopenib.hw.qp.HwQp",
    "pyopenib.hw.qp.SendQueue",
    "pyopenib.hw.qp.ReceiveQueue",
    "pyopenib.hw.qp.WorkQueue",
    "pyopenib.hw.qp.TransmitQueue",
    "pyopenib.hw.qp.RequesterState",
    "pyopenib.hw.qp.ResponderState",
    "pyopenib.hw.qp._Msg",
    "pyopenib.hw.work.RecvWR",
    "pyopenib.hw.work.SendWR",
    "pyopenib.hw.work.Sge",
    "pyopenib.hw.work.WorkCompletion",
    "pyopenib.hw.packet.Packet",
    "pyopenib.btl.frag.FragSlice",
    "pyopenib.hw.memory.MemoryTable",
    "pyopenib.hw.pcie.PcieBus",
    "pyopenib.hw.port.TransmitPort",
    "pyopenib.hw.work_queue.WorkQueueEngine",
    "pyopenib.hw.requester.Requester",
    "pyopenib.hw.responder.Responder",
    "pyopenib.btl.endpoint.Endpoint",
    "pyopenib.btl.cluster.OobChannel",
    "pyopenib.btl.credits.CreditFlow",
    "pyopenib.btl.eager_channels.EagerRdmaChannels",
    "pyopenib.btl.connect.ConnectionSetup",
    "pyopenib.btl.eager_rdma.EagerRdmaRemote",
    "pyopenib.btl.rcache.RegisteredMemory",
    "pyopenib.btl.rcache.Registration",
    "pyopenib.btl.rcache._Offset",
)
"""The model's classes whose every attribute can change the future."""

DECLARED.update({name: CONSTANT for name in _CONSTANTS})
DECLARED.update(_MODEL)
DECLARED.update({name: {} for name in _WALKED})
