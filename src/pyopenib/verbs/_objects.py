"""Verbs objects: device context, PD, MR, CQ, RC QP, SRQ — libibverbs semantics.

The checks ibverbs makes at the API boundary live here (queue depths → ENOMEM, QP state
machine transitions → EINVAL, inline size, access flags); what happens on the wire and
inside the NIC lives in ``hw``. A posting error is an exception carrying the errno
ibverbs would return; nothing fails silently.
"""

from __future__ import annotations

import errno
from collections import deque
from dataclasses import dataclass
from operator import attrgetter

import numpy as np

from ..hw import AsyncEvent, AsyncEventType, Nic, QpState, RecvWR, SendFlags, SendWR, WorkCompletion
from ..hw.memory import HwMr
from ..hw.qp import HwQp, HwSrq, QpAttributes

__all__ = [
    "VerbsError",
    "Context",
    "ProtectionDomain",
    "MemoryRegion",
    "CompletionQueue",
    "QueuePair",
    "SharedReceiveQueue",
    "DeviceAttr",
    "QpAttr",
    "QpCounters",
]


class VerbsError(OSError):
    """An ibverbs call failed with ``errno`` (ENOMEM for a full queue, EINVAL, ...)."""

    def __init__(self, err: int, what: str):
        super().__init__(err, f"{what}: {errno.errorcode.get(err, err)}")
        self.what = what


@dataclass(frozen=True, slots=True)
class DeviceAttr:
    """The ``ibv_device_attr`` / port fields the BTL needs."""

    vendor_id: int
    vendor_part_id: int
    max_qp_wr: int
    max_srq_wr: int
    max_cqe: int
    max_inline: int
    srq: bool
    transport: str
    link_layer: str
    active_mtu: int
    lid: int
    model_name: str
    """The device model's marketing name (``ibv_devinfo``'s board description)."""
    host_poll: tuple[int, int, int]
    """What one polled completion costs the host (min, mode, max picoseconds): the
    simulated price of ``ibv_poll_cq`` with this device's driver."""


@dataclass(frozen=True, slots=True)
class QpAttr:
    """The ``ibv_query_qp`` attributes the BTL reads (``ibv_qp_attr`` / ``ibv_qp_init_attr``)."""

    qp_num: int
    state: QpState
    path_mtu: int
    max_send_wr: int
    max_recv_wr: int
    max_inline: int


@dataclass(frozen=True, slots=True)
class QpCounters:
    """What the simulated NIC can say about a QP that real verbs keeps in port counters
    and driver debug files: receive-not-ready NAKs, retransmissions, and the QP's work
    queues right now (receives posted, of which usable; sends not yet executed)."""

    rnr_naks_received: int
    retransmissions: int
    recv_posted: int
    recv_usable: int
    sends_queued: int


class Context:
    """An opened device (``ibv_open_device``); async events collected as ibverbs does.

    Every process of a host opens its own context on the host's one NIC. An event about a
    QP, SRQ or CQ reaches only the context that created it (``ibv_get_async_event`` of
    that context), never a neighbour process's."""

    def __init__(self, nic: Nic):
        self.nic = nic
        self.sim = nic.sim
        self.model = nic.model
        self.async_events: deque[AsyncEvent] = deque()
        self.on_async = None
        self.async_handler = self._async
        """What the NIC calls with an event about one of this context's objects: bound
        once, not once per QP (a bound method is 64 bytes, and a large job has millions
        of QPs)."""

    @property
    def name(self) -> str:
        return self.nic.name

    def query_device(self) -> DeviceAttr:
        m = self.model
        return DeviceAttr(
            vendor_id=m.vendor_id[0],
            vendor_part_id=m.vendor_part_ids[0],
            max_qp_wr=m.max_qp_wr,
            max_srq_wr=m.max_srq_wr,
            max_cqe=m.max_cq_entries,
            max_inline=m.max_inline,
            srq=m.srq,
            transport=m.transport,
            link_layer=m.link_layer,
            active_mtu=m.mtu_max,
            lid=self.nic.lid,
            model_name=m.name,
            host_poll=tuple(m.host_poll),
        )

    def _async(self, event: AsyncEvent) -> None:
        self.async_events.append(event)
        if self.on_async is not None:
            self.on_async(event)

    def alloc_pd(self) -> ProtectionDomain:
        return ProtectionDomain(self)

    def find_qp(self, qp_num: int) -> QueuePair | None:
        """The live QP numbered ``qp_num`` that this context created (what a provider's
        QP table answers a completion's ``qp_num`` with, as mlx4's ``mlx4_find_qp``);
        None for a destroyed or unknown number, or a neighbour process's QP."""
        hw = self.nic.qp(qp_num)
        qp = None if hw is None else hw.user
        return qp if qp is not None and qp.pd.context is self else None

    def create_cq(self, cqe: int) -> CompletionQueue:
        if cqe < 1 or cqe > self.model.max_cq_entries:
            raise VerbsError(errno.EINVAL, f"create_cq({cqe}) on {self.name}")
        return CompletionQueue(self, cqe)


class ProtectionDomain:
    def __init__(self, context: Context):
        self.context = context

    def reg_mr(self, buffer: np.ndarray, access: int) -> MemoryRegion:
        if buffer.dtype != np.uint8 or buffer.ndim != 1:
            raise VerbsError(errno.EINVAL, "reg_mr needs a 1-d uint8 array")
        return MemoryRegion(self, self.context.nic.register_mr(buffer, access))

    def create_qp(self, send_cq, recv_cq, max_send_wr, max_recv_wr, max_inline=0, srq=None):
        return QueuePair(self, send_cq, recv_cq, max_send_wr, max_recv_wr, max_inline, srq)

    def create_srq(self, max_wr: int, srq_limit: int = 0) -> SharedReceiveQueue:
        ctx = self.context
        if not ctx.model.srq:
            raise VerbsError(errno.ENOSYS, f"create_srq on {ctx.name} (device has no SRQ)")
        if max_wr < 1 or max_wr > ctx.model.max_srq_wr:
            raise VerbsError(errno.EINVAL, f"create_srq(max_wr={max_wr}) on {ctx.name}")
        return SharedReceiveQueue(self, max_wr, srq_limit)


class MemoryRegion:
    """``ibv_mr``: ``addr``/``length`` of the registered buffer, ``lkey``/``rkey``."""

    __slots__ = ("pd", "hw", "buffer", "addr", "length", "lkey", "rkey")

    def __init__(self, pd: ProtectionDomain, hw: HwMr):
        self.pd = pd
        self.hw = hw
        self.buffer = hw.buffer
        self.addr = hw.addr
        self.length = hw.length
        self.lkey = hw.lkey
        self.rkey = hw.rkey

    def dereg(self) -> None:
        self.pd.context.nic.deregister_mr(self.hw)

    def watch_remote_writes(self, callback) -> None:
        """Call ``callback()`` after every remote write into the region lands. A process
        that polls the memory (an eager-RDMA ring) would see the write at its next poll;
        this lets a process that sleeps instead of spinning wake up for it."""
        self.hw.on_remote_write = callback


class CompletionQueue:
    """A bounded CQ. An overrun is a CQ_ERR async event and the entry is lost, as on
    hardware — reported, never silent."""

    def __init__(self, context: Context, cqe: int):
        self.context = context
        self.cqn = context.nic.alloc_cqn()
        self.capacity = cqe
        self.entries: deque[WorkCompletion] = deque()
        self.overruns = 0
        self._notify: list = []

    def push(self, wc: WorkCompletion) -> None:
        if len(self.entries) >= self.capacity:
            self.overruns += 1
            ctx = self.context
            ctx.nic.raise_async(ctx.async_handler, AsyncEventType.CQ_ERR, wc.qp_num, "CQ overrun")
            return
        self.entries.append(wc)
        if self._notify:
            callbacks, self._notify = self._notify, []
            for cb in callbacks:
                cb()

    def poll(self, num_entries: int) -> list[WorkCompletion]:
        entries = self.entries
        if not entries:
            return []
        if len(entries) == 1 and num_entries > 0:
            return [entries.popleft()]
        n = min(num_entries, len(entries))
        return [entries.popleft() for _ in range(n)]

    @property
    def name(self) -> str:
        """``<host>/<device>/cq<N>``: stable in every run of one program."""
        return f"{self.context.nic.name}/cq{self.cqn}"

    def req_notify(self, callback) -> None:
        """Call ``callback()`` once, at the next completion (``ibv_req_notify_cq``)."""
        self._notify.append(callback)

    def __len__(self) -> int:
        return len(self.entries)


_TRANSITIONS = {
    QpState.RESET: (QpState.INIT, QpState.RESET, QpState.ERROR),
    QpState.INIT: (QpState.INIT, QpState.RTR, QpState.RESET, QpState.ERROR),
    QpState.RTR: (QpState.RTS, QpState.RESET, QpState.ERROR),
    QpState.RTS: (QpState.RTS, QpState.RESET, QpState.ERROR, QpState.SQD),
    QpState.SQD: (QpState.RTS, QpState.RESET, QpState.ERROR),
    QpState.SQE: (QpState.RTS, QpState.RESET, QpState.ERROR),
    QpState.ERROR: (QpState.RESET, QpState.ERROR),
}


_INLINE = SendFlags.INLINE
_RTR, _ERROR = QpState.RTR, QpState.ERROR
_MODIFIABLE = frozenset(QpAttributes.MODIFIABLE)
_CAN_SEND = frozenset((QpState.RTS, QpState.ERROR, QpState.SQD))


class QueuePair:
    """An RC queue pair (``ibv_qp``). Slotted, and what the hardware context holds
    (the CQs, the depths, the inline limit: ``HwQp.attrs``) is read from there, not kept
    twice: a connection has one per receive queue, and a 1024-rank job has four million
    of them. ``qp_context``: the creator's own pointer (``ibv_qp.qp_context``; the BTL
    keeps its per-QP state there)."""

    __slots__ = ("pd", "srq", "hw", "destroyed", "qp_context")

    def __init__(self, pd, send_cq, recv_cq, max_send_wr, max_recv_wr, max_inline, srq):
        ctx = pd.context
        model = ctx.model
        if max_send_wr > model.max_qp_wr or max_recv_wr > model.max_qp_wr:
            raise VerbsError(errno.EINVAL, f"create_qp: depth above max_qp_wr {model.max_qp_wr}")
        if max_inline > model.max_inline:
            raise VerbsError(
                errno.EINVAL, f"create_qp: max_inline {max_inline} > {model.max_inline}"
            )
        self.pd = pd
        self.srq = srq
        self.hw: HwQp = ctx.nic.create_qp(
            send_cq,
            recv_cq,
            srq.hw if srq else None,
            max_send_wr,
            max_recv_wr,
            max_inline,
            ctx.async_handler,
            self,
        )
        self.destroyed = False
        self.qp_context = None

    @property
    def context(self) -> Context:
        return self.pd.context

    # what the hardware context holds, read from there
    send_cq = property(attrgetter("hw.send_cq"))
    recv_cq = property(attrgetter("hw.recv_cq"))
    max_send_wr = property(attrgetter("hw.max_send_wr"))
    max_recv_wr = property(attrgetter("hw.max_recv_wr"))
    max_inline = property(attrgetter("hw.max_inline"))

    @property
    def qp_num(self) -> int:
        return self.hw.qpn

    @property
    def state(self) -> QpState:
        return self.hw.state

    def query_qp(self) -> QpAttr:
        """``ibv_query_qp``: the QP's current attributes."""
        hw = self.hw
        return QpAttr(
            hw.qpn, hw.state, hw.path_mtu, self.max_send_wr, self.max_recv_wr, self.max_inline
        )

    def query_counters(self) -> QpCounters:
        """The QP's diagnostics (``QpCounters``), for statistics and failure reports."""
        hw = self.hw
        posted, usable = hw.recv_backlog()
        req = hw.req
        return QpCounters(
            req.rnr_naks_received, req.retransmissions, posted, usable, hw.queued_sends()
        )

    def destroy(self) -> None:
        """``ibv_destroy_qp``: the NIC forgets the QP (a packet for its number finds no
        QP) and the QP takes no more verbs. Like the real call it does not wait for
        anything: a caller destroys a QP once the completions of its work requests are
        reaped (drivers clean a destroyed QP's entries out of the CQ)."""
        self._check_alive("destroy_qp")
        self.context.nic.destroy_qp(self.hw)
        self.destroyed = True

    def _check_alive(self, verb: str) -> None:
        if self.destroyed:
            raise VerbsError(errno.EINVAL, f"{verb} on destroyed QP {self.hw.qpn}")

    def modify(self, state: QpState, **attrs) -> None:
        """``ibv_modify_qp``. RTR needs ``dest_lid`` and ``dest_qp_num``; RTS takes
        ``rnr_retry``, ``retry_cnt``, ``timeout``; RTR takes ``min_rnr_timer``, ``path_mtu``."""
        self._check_alive("modify_qp")
        hw = self.hw
        if state not in _TRANSITIONS[hw.state]:
            raise VerbsError(errno.EINVAL, f"modify_qp {hw.state.name} -> {state.name}")
        if state == _RTR:
            if "dest_lid" not in attrs or "dest_qp_num" not in attrs:
                raise VerbsError(errno.EINVAL, "modify_qp to RTR needs dest_lid and dest_qp_num")
        if attrs:
            # all or nothing, as ibv_modify_qp: a bad attribute leaves the QP unchanged
            changes = []
            dest_qpn = dest_lid = None
            for name, value in attrs.items():
                if name == "dest_qp_num":
                    dest_qpn = value
                elif name == "dest_lid":
                    dest_lid = value
                elif name in _MODIFIABLE:
                    changes.append((name, value))
                else:
                    raise VerbsError(errno.EINVAL, f"modify_qp: unknown attribute {name}")
            if dest_qpn is not None:
                hw.dest_qpn = dest_qpn
            if dest_lid is not None:
                hw.dest_lid = dest_lid
            if changes:
                hw.nic.modify_attributes(hw, tuple(changes))
        if state == _ERROR:
            hw.nic.to_error(hw, None)
        else:
            hw.state = state

    def post_send(self, wr: SendWR) -> None:
        hw = self.hw
        if self.destroyed:  # ``_check_alive``, inlined: every message posts here
            raise VerbsError(errno.EINVAL, f"post_send on destroyed QP {hw.qpn}")
        if hw.state not in _CAN_SEND:
            raise VerbsError(errno.EINVAL, f"post_send on QP {hw.qpn} in state {hw.state.name}")
        if hw.sq.outstanding >= hw.max_send_wr:
            raise VerbsError(errno.ENOMEM, f"post_send on QP {hw.qpn}: send queue full")
        if wr.send_flags & _INLINE:
            sg = wr.sg_list
            length = sg[0].length if len(sg) == 1 else wr.length
            if length > hw.max_inline:
                raise VerbsError(errno.EINVAL, f"post_send: inline {length} > {hw.max_inline}")
            data = hw.nic.memory.gather(wr)
            if data is None:
                raise VerbsError(errno.EINVAL, "post_send: inline SGE outside its MR")
            wr.inline_data = data
        hw.nic.post_send(hw, wr)

    def post_recv(self, wr: RecvWR) -> None:
        self._check_alive("post_recv")
        hw = self.hw
        if self.srq is not None:
            raise VerbsError(errno.EINVAL, f"post_recv on QP {hw.qpn} attached to an SRQ")
        if hw.state == QpState.RESET:
            raise VerbsError(errno.EINVAL, f"post_recv on QP {hw.qpn} in state RESET")
        if len(hw.rq) >= hw.max_recv_wr:
            raise VerbsError(errno.ENOMEM, f"post_recv on QP {hw.qpn}: receive queue full")
        hw.nic.post_recv(hw, wr)


class SharedReceiveQueue:
    def __init__(self, pd: ProtectionDomain, max_wr: int, srq_limit: int):
        self.pd = pd
        self.max_wr = max_wr
        self.hw: HwSrq = pd.context.nic.create_srq(max_wr, pd.context.async_handler)
        if srq_limit:
            self.hw.arm(srq_limit)

    @property
    def srq_num(self) -> int:
        """The SRQ's number, as async events (``SRQ_LIMIT_REACHED``) name it."""
        return self.hw.srq_num

    def post_recv(self, wr: RecvWR) -> None:
        if len(self.hw.entries) >= self.max_wr:
            raise VerbsError(errno.ENOMEM, "post_srq_recv: SRQ full")
        self.hw.post(wr)

    def modify(self, max_wr: int | None = None, srq_limit: int | None = None) -> None:
        """``ibv_modify_srq``: resize and/or arm the limit (one SRQ_LIMIT_REACHED event)."""
        if max_wr is not None:
            if max_wr > self.pd.context.model.max_srq_wr or max_wr < len(self.hw.entries):
                raise VerbsError(errno.EINVAL, f"modify_srq(max_wr={max_wr})")
            self.max_wr = max_wr
        if srq_limit is not None:
            self.hw.arm(srq_limit)

    def __len__(self) -> int:
        return len(self.hw.entries)
