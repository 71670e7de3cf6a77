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

Two parts of a model's state are walked in a form that does not depend on the run: a
class listed in ``VIEWS`` is walked also through a method giving what its skipped
attributes hold without what differs between equal states (the registration cache's
host addresses, as offsets in their owners). A *timed* fingerprint
(``state_fingerprint(..., at)``, for comparing two runs of one timed search at one
instant, ``check/convergence.py``) adds the pending events' times and heap order, writes
a FIFO clamp (``CLAMPS``) at or before ``at`` as one token, and walks trace ids.
"""

from __future__ import annotations

import dis
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
    _PLANS.clear()


def _name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


_ndarray = np.ndarray
_ATOMS = (type(None), bool, int, float, str, bytes, complex)
_PLAIN_ATOMS = frozenset(_ATOMS) - {float}
"""Atoms written as they are (a float is tagged: ``1.0`` and ``1`` are different states)."""

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


_CALLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""Per code object: each ``PRECALL`` offset -> the offset of its ``CALL`` (weak: a
program's code is compiled afresh for each execution)."""


def _resume_point(code, lasti: int) -> int:
    """A suspended frame's position, independent of how warm its code is. CPython 3.11's
    specialising interpreter lets a ``PRECALL`` specialised for a C callable make the call
    itself, skipping its ``CALL``: a frame suspended in that call (a greenlet switch
    inside ``exec`` or ``switch``) reports the ``PRECALL``, where cold code reports the
    ``CALL``. Both resume after the ``CALL``, so the ``PRECALL`` is written as its
    ``CALL`` (the first execution of a search runs cold code, its children warm code)."""
    calls = _CALLS.get(code)
    if calls is None:
        calls = _CALLS[code] = {}
        precall = None
        for ins in dis.get_instructions(code):
            if ins.opname == "PRECALL":
                precall = ins.offset
            elif ins.opname == "CALL" and precall is not None:
                calls[precall] = ins.offset
                precall = None
    return calls.get(lasti, lasti)


class _Walker:
    """One serialisation: ``out`` collects the tokens, ``seen`` numbers shared objects.
    ``at``: the instant of a timed comparison (``timed_fingerprint``): the FIFO clamps
    (``CLAMPS``) at or before it are written as one token, since no later event can be
    held back by them; None writes every clamp as it is."""

    def __init__(self, at: int | None = None):
        self.seen: dict[int, int] = {}
        self.keep: list = []  # keeps walked temporaries alive so their ids stay unique
        self.out: list = []
        self.at = at
        self.arrays: dict = {}
        """Memory regions hashed in this walk (``_array``)."""

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
        cls = obj.__class__
        if cls in _PLAIN_ATOMS:
            self.out.append(obj)
            return
        handler = _HANDLERS.get(cls)
        if handler is None:
            handler = _HANDLERS[cls] = _handler_for(cls)
        handler(self, obj)

    def items(self, values) -> None:
        """Walk each of ``values`` (atoms written at once: most items are)."""
        out = self.out
        walk = self.walk
        for x in values:
            if x.__class__ in _PLAIN_ATOMS:
                out.append(x)
            else:
                walk(x)

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
            self.out.append((code.co_filename, code.co_qualname, _resume_point(code, f.f_lasti)))
            if code.co_filename == _KERNEL_FILE:
                continue
            for name, value in f.f_locals.items():
                if name not in _SKIP_FRAME_LOCALS:
                    self.out.append(name)
                    self.walk(value)

    def instance(self, obj) -> None:
        cls = obj.__class__
        plan = _PLANS.get((cls, self.at is not None))
        if plan is None:
            plan = _PLANS[(cls, self.at is not None)] = _Plan(cls, self.at is not None)
        out = self.out
        out.append(plan.token)
        if plan.constant:
            return
        at = self.at
        clamps = plan.clamps
        walk = self.walk
        for name in plan.slots:
            value = getattr(obj, name, _MISSING)
            if value is _MISSING:
                continue
            out.append(name)
            if value.__class__ in _PLAIN_ATOMS:
                if name in clamps and value <= at:
                    out.append("past")
                else:
                    out.append(value)
            else:
                walk(value)
        d = getattr(obj, "__dict__", None)
        if d is not None:
            skip = plan.skip
            for name, value in d.items():
                if name in skip:
                    continue
                out.append(name)
                if value.__class__ in _PLAIN_ATOMS:
                    if name in clamps and value <= at:
                        out.append("past")
                    else:
                        out.append(value)
                else:
                    walk(value)
        if plan.view is not None:
            out.append("view")
            walk(getattr(obj, plan.view)())


_MISSING = object()


class _Plan:
    """How the instances of one class are walked (plain or timed): computed once."""

    __slots__ = ("token", "constant", "slots", "skip", "clamps", "view")

    def __init__(self, cls, timed: bool):
        declared = _declaration(cls)
        self.token = ("o", cls.__qualname__)
        self.constant = declared is CONSTANT
        skip = {
            name
            for name, why in (declared.items() if not self.constant else ())
            if not (timed and why is TRACE_ID)
        }
        self.skip = frozenset(skip)
        self.slots = tuple(n for n in _slot_names(cls) if n not in skip)
        self.clamps = _clamps(cls) if timed else frozenset()
        self.view = _view(cls)


def _plain_atom(w, obj) -> None:
    w.out.append(obj)


def _float(w, obj) -> None:
    w.out.append(("f", obj))


def _raw_bytes(w, obj) -> None:
    w.out.append(("b", hashlib.blake2b(obj, digest_size=16).digest()))


def _array(w, obj) -> None:
    """A buffer, by value (its aliasing is fixed at set-up). Several objects often hold
    one buffer (a ring, its registration, its owner): within one walk, equal memory has
    equal bytes, so each region is hashed once."""
    interface = obj.__array_interface__
    region = (interface["data"][0], obj.nbytes, interface["strides"], obj.dtype.str, obj.shape)
    token = w.arrays.get(region)
    if token is None:
        data = obj.tobytes() if not obj.flags.c_contiguous else obj.data
        token = ("nd", obj.dtype.str, obj.shape, hashlib.blake2b(data, digest_size=16).digest())
        w.arrays[region] = token
    w.out.append(token)


def _sentinel(w, obj) -> None:  # a bare ``object()``: no state
    w.out.append("object")


def _sequence(w, obj) -> None:
    if not w.ref(obj):
        w.out.append((_SEQUENCES[obj.__class__], len(obj)))
        w.items(obj)


def _mapping(w, obj) -> None:
    if w.ref(obj):
        return
    w.out.append(("d", len(obj)))
    if obj.__class__ is defaultdict:
        w.walk(obj.default_factory)
    out = w.out
    walk = w.walk
    for k, v in obj.items():
        if k.__class__ in _PLAIN_ATOMS:
            out.append(k)
        else:
            walk(k)
        if v.__class__ in _PLAIN_ATOMS:
            out.append(v)
        else:
            walk(v)


def _set(w, obj) -> None:
    if not w.ref(obj):
        items = sorted(obj, key=repr)
        w.out.append(("s", len(items)))
        w.items(items)


def _function(w, obj) -> None:
    if w.ref(obj):
        return
    w.out.append(("fn", obj.__qualname__, obj.__code__.co_filename))
    for cell in obj.__closure__ or ():
        w.walk(cell.cell_contents if _filled(cell) else _EMPTY)
    w.walk(obj.__defaults__)


def _method(w, obj) -> None:
    if not w.ref(obj):
        w.out.append(("m", obj.__func__.__qualname__))
        w.walk(obj.__self__)


def _builtin(w, obj) -> None:
    if not w.ref(obj):
        owner = obj.__self__
        w.out.append(("bm", obj.__qualname__))
        if not isinstance(owner, types.ModuleType):
            w.walk(owner)


def _greenlet(w, obj) -> None:
    if not w.ref(obj):
        w.greenlet(obj)


def _class(w, obj) -> None:
    if not w.ref(obj):
        w.out.append(("t", obj.__module__, obj.__qualname__))


def _module(w, obj) -> None:
    if not w.ref(obj):
        w.out.append(("mod", obj.__name__))


def _frame(w, obj) -> None:
    if not w.ref(obj):
        w.frames(obj)


def _weakref(w, obj) -> None:  # what it still refers to (None once that is gone)
    if not w.ref(obj):
        w.out.append("wr")
        w.walk(obj())


def _instance(w, obj) -> None:
    if not w.ref(obj):
        w.instance(obj)


def _handler_for(cls):
    """How ``walk`` writes an object of class ``cls`` (decided once per class)."""
    if cls in _ATOMS or issubclass(cls, enum.Enum):
        return _float if cls is float else _plain_atom
    if cls in (bytearray, memoryview):
        return _raw_bytes
    if cls is _ndarray:
        return _array
    if cls is object:
        return _sentinel
    if cls in _SEQUENCES:
        return _sequence
    if cls in (dict, defaultdict, OrderedDict):
        return _mapping
    if cls in (set, frozenset):
        return _set
    if cls is types.FunctionType:
        return _function
    if cls is types.MethodType:
        return _method
    if cls is types.BuiltinMethodType or cls is types.BuiltinFunctionType:
        return _builtin
    if cls is greenlet:
        return _greenlet
    if issubclass(cls, type):
        return _class
    if cls is types.ModuleType:
        return _module
    if cls is types.FrameType:
        return _frame
    if cls is weakref.ref:
        return _weakref
    return _instance


_HANDLERS: dict[type, object] = {}
_PLANS: dict[tuple[type, bool], _Plan] = {}


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


_CLAMPS_FOUND: dict[type, frozenset] = {}


def _clamps(cls) -> frozenset:
    found = _CLAMPS_FOUND.get(cls)
    if found is None:
        names = set()
        for klass in cls.__mro__:
            names |= CLAMPS.get(_name(klass), set())
        _CLAMPS_FOUND[cls] = found = frozenset(names)
    return found


_VIEWS_FOUND: dict[type, str | None] = {}


def _view(cls) -> str | None:
    if cls not in _VIEWS_FOUND:
        _VIEWS_FOUND[cls] = next((VIEWS[_name(k)] for k in cls.__mro__ if _name(k) in VIEWS), None)
    return _VIEWS_FOUND[cls]


def _slot_names(cls) -> tuple:
    """The ``__slots__`` of ``cls`` and its bases, base classes first."""
    names = []
    for klass in reversed(cls.__mro__):
        for slot in klass.__dict__.get("__slots__", ()):
            if slot not in ("__dict__", "__weakref__") and slot not in names:
                names.append(slot)
    return tuple(names)


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


def state_fingerprint(sim, channel_of, is_timeout, at: int | None = None) -> tuple[bytes, dict]:
    """The fingerprint of ``sim``'s current state (see the module docstring) and, per
    pending heap sequence number, the event's token (``event_fingerprints``).

    ``at``: a *timed* fingerprint, for comparing two runs of one timed search at the
    instant ``at`` (every event due at or before it has run, none after it): the pending
    events' times are part of it, and the FIFO clamps at or before ``at`` are one token
    (``CLAMPS``). Two states with equal timed fingerprints at one instant have the same
    future under the same answers to the choice points."""
    w = _Walker(at)
    for proc in sim.processes:
        w.out.append(("p", proc.name, proc.triggered))
        w.greenlet(proc.greenlet)
    live = list(sim.pending())
    keys, _ = event_fingerprints(sim, live, channel_of, is_timeout, w)
    if at is None:
        tokens = sorted(keys, key=repr)
    else:
        tokens = sorted(((e[0], repr(k)) for e, k in zip(live, keys, strict=True)))
    timeouts = sorted(
        (e[:2], repr(k)) for e, k in zip(live, keys, strict=True) if is_timeout(e[2], e[3])
    )
    body = (tuple(w.out), tuple(tokens), tuple(k for _, k in timeouts))
    digest = hashlib.blake2b(repr(body).encode(), digest_size=16).digest()
    return digest, {e[1]: k for e, k in zip(live, keys, strict=True)}


_TRACE = "written only for the trace"
_STAT = "a statistic: read by reports, never by the model"
TRACE_ID = (
    "an identity written only into the trace; a timed fingerprint walks it, since a run "
    "that rejoins another takes the rest of its trace from it (``check/convergence.py``)"
)
_SEARCH = "the search's own bookkeeping"
_SAME = "the same in every state of one search"
_ADDRESSES = (
    "host addresses (the allocator's choice, different in another run): the cache's "
    "view walks the owners and each registration's offset in its owner instead"
)
_MEMO = (
    "a memo of answers computed from other state: which questions were asked, and in "
    "what order, differs between equal states"
)
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
        "_watch": _SEARCH,
        "fast_paths": _SAME,
        "seed": _SAME,
        "nominal": _SAME,
        "duration": "bound from the oracle: the same in every state of one search",
    },
    "pyopenib.sim._kernel.Process": {"sim": "the simulator is walked from the roots"},
    "pyopenib.sim._kernel.Timer": {},
    "pyopenib.sim.trace.Tracer": {"events": _TRACE, "layers": _TRACE, "sim": _TRACE},
    "pyopenib.sim.host.HostModel": {},
    "pyopenib.btl.frag.Frag": {"trace_id": TRACE_ID, "_buf": _POOL},
    "pyopenib.btl.frag.FragBuffers": {},
    "pyopenib.hw.nic.Nic": {"_attributes": _MEMO, "_created": _MEMO, "_modified": _MEMO},
    "pyopenib.btl.connect.ConnectionSetup": {"_depths": _MEMO},
    "pyopenib.btl.frag.FragChunk": {"array": _POOL},
    "pyopenib.hw.memory.HwMr": {"buffer": _POOL, "view": _POOL},
    "pyopenib.verbs._objects.MemoryRegion": {"buffer": _POOL},
    "pyopenib.btl.module.OpenibModule": {"traffic": _STAT},
    "pyopenib.btl.rcache.RegistrationCache": {
        "stats": _STAT,
        "_by_owner": _ADDRESSES,
        "_watch": _ADDRESSES,
    },
    "pyopenib.btl.rcache.Registration": {
        "owner_id": _ADDRESSES,
        "start": _ADDRESSES,
        "end": _ADDRESSES,
    },
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
    "pyopenib.hw.qp.HwQp",
    "pyopenib.hw.qp.QpAttributes",
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
    "pyopenib.btl.eager_rdma.EagerRdmaRemote",
    "pyopenib.btl.rcache.RegisteredMemory",
    "pyopenib.btl.rcache._Offset",
)
"""The model's classes whose every attribute can change the future."""

VIEWS: dict[str, str] = {"pyopenib.btl.rcache.RegistrationCache": "owner_offsets"}
"""Classes walked also through a method that gives a part of their state in a form
independent of the run (qualified name -> method name): what their skipped attributes
hold, without what differs between equal states of two runs."""

CLAMPS: dict[str, set[str]] = {
    "pyopenib.hw.qp.SendQueue": {"last_cqe"},
    "pyopenib.hw.qp.ReceiveQueue": {"last_cqe", "last_ready"},
    "pyopenib.hw.qp.WorkQueue": {"last_doorbell", "last_emit"},
    "pyopenib.hw.qp.RequesterState": {"dma_end"},
    "pyopenib.hw.qp.ResponderState": {"dma_end"},
    "pyopenib.hw.pcie.PcieBus": {"to_nic_free", "to_host_free"},
    "pyopenib.hw.packet.Packet": {"ready"},
}
"""FIFO clamps: times the model reads only as ``max(clamp, t)`` or ``clamp <= now`` with
``t >= now`` (an event's time plus a non-negative duration; ``hw/work_queue.py``,
``hw/nic.py``, ``hw/requester.py``, ``hw/responder.py``, ``hw/pcie.py``, ``hw/port.py``). At a
checkpoint ``at`` every later event runs at ``now > at``, so a clamp at or before ``at`` can
no longer hold anything back: its value no longer matters. (The switch ports' clamps are not
here: a cut-through packet's head may be computed before ``now``.)"""

DECLARED.update({name: CONSTANT for name in _CONSTANTS})
DECLARED.update(_MODEL)
DECLARED.update({name: {} for name in _WALKED})
