"""Hardware state of queue pairs and SRQs, and the constants of the RC transport model
(header sizes, RNR and ACK timer encodings).

A QP's hardware context is grouped by the rules that govern it, one state object per part
of the NIC that moves it: ``sq`` (send-queue accounting, verbs' *send queue full*),
``rq`` (posted receives and when each becomes usable), ``wq`` (what the work-queue engine
processes), ``tx`` (packets ready for the transmit port), ``req`` (the RC requester: MSNs,
PSNs, messages in flight, the transport timer) and ``resp`` (the RC responder: expected
PSN, the message being received). The ``HwQp`` itself holds its number, state and
peer, and (``QpAttributes``, shared between QPs) what ``ibv_create_qp`` and
``ibv_modify_qp`` set.
The parts that act on them are in ``nic`` (``work_queue``, ``port``, ``requester``,
``responder``)."""

from __future__ import annotations

from collections import deque
from enum import IntEnum
from operator import attrgetter
from typing import Protocol

from .packet import (
    Packet,
)
from .work import (
    AsyncEventType,
    RecvWR,
    SendWR,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    WrOpcode,
)

__all__ = [
    "HwQp",
    "QpAttributes",
    "HwSrq",
    "QpState",
    "EMPTY",
    "HEADER_BYTES",
    "header_kind",
    "rnr_timer_ps",
    "ack_timeout_ps",
    "SendQueue",
    "ReceiveQueue",
    "WorkQueue",
    "TransmitQueue",
    "RequesterState",
    "ResponderState",
    "TracedWrId",
    "trace_id",
    "flush_wc",
]

HEADER_BYTES = {"ib": 26, "roce": 62, "iwarp": 78}
"""Per-packet wire overhead. IB: LRH 8 + BTH 12 + ICRC 4 + VCRC 2. RoCE v2: MAC 14 +
FCS 4 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4. iWARP over Ethernet: MAC 14 + FCS 4 + IPv4 20
+ TCP 20 + MPA 2+4 (len, CRC) + DDP/RDMAP 14. (Ethernet's preamble and inter-frame gap,
20 more, are left out of both, as in the calibration of the iWARP models.)"""


def header_kind(transport: str, link_layer: str) -> str:
    """The ``HEADER_BYTES`` key of a device: iWARP, RoCE (IB transport on Ethernet), IB."""
    if transport == "iwarp":
        return "iwarp"
    return "roce" if link_layer == "ethernet" else "ib"


ACK_PAYLOAD = 4  # AETH

SEND_PREFETCH = 1
"""Sends a ``shared`` work-queue engine may have fetched beyond the one on the wire.
Without any, each WR's DMA read (~44 us for 64 KiB on the T3's PCIe-x8 gen1) would
alternate with its transmission (~52 us) and cap send_bw near half the link rate; the
T3 reached ~1.1 GB/s of 1.25, so its engine overlaps them. One is enough to hide the DMA
behind the wire and keeps the receive-ordering property intact (a receive entry still
waits for every earlier send to leave). An assumption about the RDMA engine, not a
documented figure (see docs/devices.md, Transport model)."""

# the rows of IBTA table 45, as printed there
_RNR_TIMER_MS = (
    655.36,
    0.01,
    0.02,
    0.03,
    0.04,
    0.06,
    0.08,
    0.12,
    0.16,
    0.24,
    0.32,
    0.48,
    0.64,
    0.96,
    1.28,
    1.92,
    2.56,
    3.84,
    5.12,
    7.68,
    10.24,
    15.36,
    20.48,
    30.72,
    40.96,
    61.44,
    81.92,
    122.88,
    163.84,
    245.76,
    327.68,
    491.52,
)


def rnr_timer_ps(code: int) -> int:
    """The IB min_rnr_timer encoding (IBTA table 45) in picoseconds."""
    return int(round(_RNR_TIMER_MS[code] * 1e9))


def ack_timeout_ps(code: int) -> int:
    """IB's Local ACK Timeout, 4.096 us x 2^``timeout`` in picoseconds (0: infinite)."""
    return 4_096_000 << code if code else 0


class QpState(IntEnum):
    RESET = 0
    INIT = 1
    RTR = 2
    RTS = 3
    SQD = 4
    SQE = 5
    ERROR = 6


_CONSUMES_RECV = (WrOpcode.SEND, WrOpcode.SEND_WITH_IMM, WrOpcode.RDMA_WRITE_WITH_IMM)
_SUCCESS = WcStatus.SUCCESS
"""A member read off its enum class costs ~15x a global's read on CPython 3.11 (the
metaclass defines ``__getattr__``, which takes every class attribute lookup off the
interpreter's fast path): per-message code reads module constants."""


class _Msg:
    """A requester-side message in flight (sent, not yet acknowledged)."""

    __slots__ = ("wr", "msn", "packets", "acked", "rnr_count", "status", "read_data")

    def __init__(self, wr: SendWR, msn: int):
        self.wr = wr
        self.msn = msn
        self.packets: list[Packet] = []
        self.acked = False
        self.rnr_count = 0
        self.status = _SUCCESS
        self.read_data = None


class _LazyDeques:
    """A state object whose deques are created on first use: ``_DEQUES`` names slots
    left unset by ``__init__``; the first read of one (Python calls ``__getattr__`` only
    when the slot is empty) puts an empty deque there, and every later read is a plain
    slot read. An empty deque costs 760 bytes, and most QPs of a large job never queue
    anything on most of their queues (issue 13)."""

    __slots__ = ()
    _DEQUES: frozenset = frozenset()

    def __getattr__(self, name: str):
        if name not in self._DEQUES:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        value = deque()
        setattr(self, name, value)
        return value


class SendQueue:
    """The send queue's accounting: WRs posted and not yet completed (verbs refuses a
    post beyond ``max_send_wr``), unsignaled WRs retired since the last signaled one
    (their slots come back with its completion, as on real HCAs), and when the last send
    CQE is written (send completions of a QP appear in order)."""

    __slots__ = ("outstanding", "unsignaled", "last_cqe")

    def __init__(self):
        self.outstanding = 0
        self.unsignaled = 0
        self.last_cqe = 0


class ReceiveQueue(_LazyDeques):
    """Posted receives, in order, each ``[RecvWR, usable]``: a receive becomes usable
    some time after ``post_recv`` (``recv_usable``, or after the sends ahead of it on a
    shared work queue), in posting order; a SEND consumes the oldest one only if usable.
    ``last_cqe``: when the last receive CQE is written (in order, like the send side).
    ``entries`` is created on first use (a QP on an SRQ never posts its own)."""

    __slots__ = ("entries", "last_ready", "last_cqe")
    _DEQUES = frozenset(("entries",))

    def __init__(self):
        self.last_ready = 0
        self.last_cqe = 0

    def __len__(self) -> int:
        return len(self.entries)

    def take(self) -> RecvWR | None:
        """The oldest receive, if it is usable (else None: the responder cannot place a
        SEND)."""
        entries = self.entries
        if entries and entries[0][1]:
            return entries.popleft()[0]
        return None

    def backlog(self) -> tuple[int, int]:
        """(posted receives, of which usable)."""
        entries = self.entries
        return len(entries), sum(1 for e in entries if e[1])


class HwSrq(ReceiveQueue):
    """A shared receive queue: the receive queue of every QP attached to it, its entries
    usable ``recv_usable`` after posting, with the limit event (``IBV_EVENT_SRQ_LIMIT_
    REACHED``) once fewer than ``limit`` remain while armed. (``last_cqe`` stays unused:
    receive completions are ordered per QP, in the QP's own ``rq``.)"""

    __slots__ = ("nic", "max_wr", "limit", "armed", "srq_num", "async_handler")

    def __init__(self, nic, max_wr: int, srq_num: int, async_handler=None):
        super().__init__()
        self.nic = nic
        self.async_handler = async_handler
        self.max_wr = max_wr
        self.limit = 0
        self.armed = False
        self.srq_num = srq_num

    def post(self, wr: RecvWR) -> None:
        entry = [wr, False]
        self.entries.append(entry)
        sim = self.nic.sim
        when = sim.now + sim.duration("nic.recv_usable", *self.nic.model.recv_usable)
        if when < self.last_ready:
            when = self.last_ready  # receives become usable in posting order
        self.last_ready = when
        sim.schedule(when - sim.now, _mark_usable, entry)

    def take(self) -> RecvWR | None:
        wr = ReceiveQueue.take(self)
        if wr is not None and self.armed and len(self.entries) < self.limit:
            self.armed = False
            # ibverbs names the SRQ in the event; the model carries its number in qp_num
            self.nic.raise_async(
                self.async_handler, AsyncEventType.SRQ_LIMIT_REACHED, self.srq_num, "limit reached"
            )
        return wr

    def arm(self, limit: int) -> None:
        self.limit = limit
        self.armed = limit > 0


NEVER_LEAVING: deque = deque(maxlen=0)
"""The ``leaving`` list of every QP on a ``split`` device: always empty (the port reads it
after each send; only a ``shared`` engine appends), one for all instead of an empty deque
per QP."""

EMPTY: tuple = ()
"""What a QP's ``wq.fifo``, ``tx.packets`` and ``req.inflight`` hold while nothing is in
them: the one empty tuple, which every reader sees as an empty queue (falsy, ``len`` 0,
nothing to iterate). The part that queues the first element puts a real queue in the
slot, and the part that takes the last one out puts ``EMPTY`` back, so a QP holds a queue
only while something is queued on it. An empty deque costs 760 bytes even empty, and a
1024-rank alltoall has a million QPs that each carry one message (issue 13)."""


def _mark_usable(entry) -> None:
    entry[1] = True


class WorkQueue(_LazyDeques):
    """What the work-queue engine processes: ``fifo`` is the send engine's queue on a
    ``split`` device, the single FIFO of sends and receive entries on a ``shared`` one
    (``EMPTY`` while nothing waits); ``leaving`` the MSNs of sends fetched but not yet
    fully on the wire (shared: a receive entry waits for them, created on first use; a
    ``split`` engine has no receive entry to hold back, so it never records a leaving
    send and shares ``NEVER_LEAVING``); ``last_doorbell`` keeps one QP's doorbells in
    ringing order, ``last_emit`` its sends' cutting into packets in posting order."""

    __slots__ = ("fifo", "busy", "leaving", "last_doorbell", "last_emit")
    _DEQUES = frozenset(("leaving",))

    def __init__(self, shared: bool = True):
        self.fifo = EMPTY
        self.busy = False
        self.last_doorbell = 0
        self.last_emit = 0  # split: when the last send is cut (sends are cut in order)
        if not shared:
            self.leaving = NEVER_LEAVING

    def queued_sends(self) -> int:
        """Sends the engine has not started yet (receive entries are lists)."""
        return sum(1 for item in self.fifo if type(item) is not list)


class TransmitQueue:
    """A QP's packets ready for the transmit port, which serves QPs round-robin per packet
    (``packets``, of ``Packet``: ``EMPTY`` while none is queued); ``paused`` between an RNR
    NAK and the retransmission (the port skips the QP)."""

    __slots__ = ("packets", "in_arbiter", "paused")

    def __init__(self):
        self.packets = EMPTY
        self.in_arbiter = False
        self.paused = False


class RequesterState:
    """The RC requester of one QP: message and packet sequence numbers, the messages sent
    and not yet acknowledged (``inflight``, of ``_Msg`` in MSN order: a list while any is,
    ``EMPTY`` while none is; a list, not a deque, because a message lives from its cut to
    its ACK and a one-element list is 88 bytes to a deque's 760), the
    transport timer (one per QP, re-armed lazily: see ``Requester.rto_start``), the READ
    response being received, and the RNR NAKs and retransmissions it has seen (what a
    driver's debug counters show)."""

    __slots__ = (
        "next_msn",
        "next_psn",
        "inflight",
        "rto_idle",
        "rto_armed",
        "rto_base",
        "retries",
        "resp_msn",
        "resp_next",
        "rnr_naks_received",
        "retransmissions",
        "dma_end",
    )

    def __init__(self):
        self.inflight = EMPTY
        self.dma_end = 0
        """When the last READ response write to host memory lands (absolute ps)."""
        self.next_msn = 0
        self.next_psn = 0
        self.rto_idle = True  # nothing transmitted is waiting for an acknowledgement
        self.rto_armed = False
        self.rto_base = 0  # when the timer (re)started: first transmission or progress
        self.retries = 0  # consecutive retries without progress, against ``retry_cnt``
        self.resp_msn = -1  # the READ response being received, and its next packet
        self.resp_next = 0
        self.rnr_naks_received = 0
        self.retransmissions = 0


class ResponderState:
    """The RC responder of one QP: the next message and packet expected, the receive and
    the WRITE target of the message being received, whether it has NAKed the current gap
    (one sequence NAK per gap, as IB responders do) or is waiting out its own RNR NAK."""

    __slots__ = (
        "expected_msn",
        "expected_psn",
        "seq_nak_sent",
        "cur_recv",
        "cur_write",
        "rnr_waiting",
        "dma_end",
    )

    def __init__(self):
        self.dma_end = 0
        """When the QP's last receive DMA write lands (absolute ps): posted writes are
        ordered, so no later packet's bytes, and no completion, land before it."""
        self.expected_msn = 0
        self.expected_psn = 0
        self.seq_nak_sent = False
        self.cur_recv: RecvWR | None = None
        self.cur_write = None
        self.rnr_waiting = False


class QpAttributes:
    """What ``ibv_create_qp`` and ``ibv_modify_qp`` set on an RC QP, but for its peer's
    address: the CQs, the SRQ, the queue depths and the inline limit, the owning
    context's event handler, the path MTU and the retry and timer settings.

    A value, shared: QPs with equal attributes hold one instance (the NIC interns them:
    ``Nic.create_qp``, ``Nic.modify_attributes``). A job of 1024 ranks has four million
    QPs and a handful of distinct attribute sets, so twelve slots a QP would be ~100 MB
    (issue 13). A modify makes
    (or finds) another instance; none is ever changed in place."""

    __slots__ = (
        "send_cq",
        "recv_cq",
        "srq",
        "max_send_wr",
        "max_recv_wr",
        "max_inline",
        "async_handler",
        "path_mtu",
        "rnr_retry",
        "min_rnr_timer",
        "retry_cnt",
        "timeout",
    )

    MODIFIABLE = ("path_mtu", "rnr_retry", "min_rnr_timer", "retry_cnt", "timeout")
    """The attributes ``ibv_modify_qp`` may change (the rest are fixed at creation)."""

    def __init__(
        self,
        send_cq,
        recv_cq,
        srq,
        max_send_wr: int,
        max_recv_wr: int,
        max_inline: int,
        async_handler,
        path_mtu: int,
        rnr_retry: int = 7,
        min_rnr_timer: int = 12,
        retry_cnt: int = 7,
        timeout: int = 20,
    ):
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.srq = srq
        self.max_send_wr = max_send_wr
        self.max_recv_wr = max_recv_wr
        self.max_inline = max_inline
        self.async_handler = async_handler
        self.path_mtu = path_mtu
        self.rnr_retry = rnr_retry
        self.min_rnr_timer = min_rnr_timer
        self.retry_cnt = retry_cnt
        self.timeout = timeout

    def key(self) -> tuple:
        """The attributes as one hashable value (objects by identity): what interning
        compares."""
        return tuple(map(self.__getattribute__, self.__slots__))

    def modified(self, changes: dict) -> QpAttributes:
        """A new value with ``changes`` (names of ``MODIFIABLE``) applied."""
        values = dict(zip(self.__slots__, self.key(), strict=True))
        values.update(changes)
        return QpAttributes(**values)


def _attribute(name: str) -> property:
    """A read of one of the QP's shared ``QpAttributes`` (a C getter: these are read on
    every packet and completion)."""
    return property(attrgetter("attrs." + name), doc=f"``QpAttributes.{name}``.")


class HwQp:
    """An RC queue pair's hardware context: its number, state and peer, the attributes
    ``ibv_create_qp`` and ``ibv_modify_qp`` set (``attrs``, a value shared with every QP
    of equal attributes; read through the properties below), and the state of each part
    of the NIC that works on it (see the module docstring). ``user``: what the verbs
    layer keeps with the QP (its ``QueuePair``), opaque here.

    Each part's state object (``_PARTS``) and the trace name ``actor`` are made on first
    use: a connection creates a QP per receive queue, and in most jobs most of them never
    carry a message (an 8-byte alltoall uses one of four). A QP's first read of a part
    goes through ``__getattr__``; every later one is a plain slot read (issue 13)."""

    __slots__ = (
        "nic",
        "qpn",
        "user",
        "attrs",
        "state",
        "dest_lid",
        "dest_qpn",
        "sq",
        "rq",
        "wq",
        "tx",
        "req",
        "resp",
        "actor",
    )

    send_cq = _attribute("send_cq")
    recv_cq = _attribute("recv_cq")
    srq = _attribute("srq")
    max_send_wr = _attribute("max_send_wr")
    max_recv_wr = _attribute("max_recv_wr")
    max_inline = _attribute("max_inline")
    async_handler = _attribute("async_handler")
    path_mtu = _attribute("path_mtu")
    rnr_retry = _attribute("rnr_retry")
    min_rnr_timer = _attribute("min_rnr_timer")
    retry_cnt = _attribute("retry_cnt")
    timeout = _attribute("timeout")

    def __init__(self, nic, qpn: int, attrs: QpAttributes, user=None):
        self.nic = nic
        self.qpn = qpn
        self.user = user
        self.attrs = attrs
        self.state = QpState.RESET
        self.dest_lid = 0
        self.dest_qpn = 0

    def __getattr__(self, name: str):
        part = _PARTS.get(name)
        if part is WorkQueue:
            value = WorkQueue(self.nic.engine.shared)  # the engine says what it records
        elif part is not None:
            value = part()
        elif name == "actor":  # the QP as trace events name it
            value = f"{self.nic.name}/qp{self.qpn}"
        else:
            raise AttributeError(f"'HwQp' object has no attribute {name!r}")
        setattr(self, name, value)
        return value

    def recv_backlog(self) -> tuple[int, int]:
        """(posted receives, of which usable) — what a race report wants to show."""
        return self.srq.backlog() if self.srq is not None else self.rq.backlog()

    def queued_sends(self) -> int:
        """Sends posted and not yet started by the work-queue engine."""
        return self.wq.queued_sends()


_PARTS = {
    "sq": SendQueue,
    "rq": ReceiveQueue,
    "wq": WorkQueue,
    "tx": TransmitQueue,
    "req": RequesterState,
    "resp": ResponderState,
}
"""``HwQp``'s per-part state objects, by slot, made when the part first looks."""


class TracedWrId(Protocol):
    """What a ``wr_id`` that is not an int declares: a deterministic number for traces
    (ibverbs' wr_id is an opaque u64; here it may be the poster's own object, which the
    NIC never inspects beyond this)."""

    trace_id: int


def trace_id(wr_id: int | TracedWrId) -> int:
    """A wr_id as a trace value: ints as they are, objects by their ``trace_id``; never
    by ``repr`` (addresses differ between runs)."""
    return wr_id if type(wr_id) is int else wr_id.trace_id


def flush_wc(qp: HwQp, wr, opcode: WcOpcode) -> WorkCompletion:
    """The WR_FLUSH_ERR completion of ``wr`` on a QP in ERROR."""
    return WorkCompletion(wr.wr_id, WcStatus.WR_FLUSH_ERR, opcode, qp.qpn, 0)
