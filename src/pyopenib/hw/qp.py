"""Hardware state of queue pairs, SRQs and memory regions, and the constants of the NIC
model (header sizes, RNR and ACK timer encodings). The engines that act on them are in
``nic`` and its parts (``work_queue``, ``port``, ``requester``, ``responder``)."""

from __future__ import annotations

from collections import deque
from enum import IntEnum

import numpy as np

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
    "HwSrq",
    "HwMr",
    "QpState",
    "Access",
    "HEADER_BYTES",
    "rnr_timer_ps",
    "ack_timeout_ps",
]

PCIE_REQUEST_BYTES = 512
"""PCIe max read request size of the era's chipsets (512 B is the common default): the
granularity at which DMA transfers of different work requests interleave."""

HEADER_BYTES = {"ib": 26, "iwarp": 78}
"""Per-packet wire overhead. IB: LRH 8 + BTH 12 + ICRC 4 + VCRC 2. iWARP over Ethernet:
MAC 14 + FCS 4 + IPv4 20 + TCP 20 + MPA 2+4 (len, CRC) + DDP/RDMAP 14."""
ACK_PAYLOAD = 4  # AETH

SEND_PREFETCH = 1
"""Sends a ``shared`` work-queue engine may have fetched beyond the one on the wire.
Without any, each WR's DMA read (~44 us for 64 KiB on the T3's PCIe-x8 gen1) would
alternate with its transmission (~52 us) and cap send_bw near half the link rate; the
T3 reached ~1.1 GB/s of 1.25, so its engine overlaps them. One is enough to hide the DMA
behind the wire and keeps the receive-ordering property intact (a receive entry still
waits for every earlier send to leave). An assumption about the RDMA engine, not a
documented figure (see docs/devices.md, Transport model)."""

_RNR_TIMER_MS = (
    655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96,
    1.28, 1.92, 2.56, 3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92,
    122.88, 163.84, 245.76, 327.68, 491.52,
)  # fmt: skip


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


class Access(IntEnum):
    LOCAL_WRITE = 1
    REMOTE_WRITE = 2
    REMOTE_READ = 4
    REMOTE_ATOMIC = 8


_CONSUMES_RECV = (WrOpcode.SEND, WrOpcode.SEND_WITH_IMM, WrOpcode.RDMA_WRITE_WITH_IMM)


class HwMr:
    """A memory region as the NIC's translation table sees it."""

    __slots__ = ("buffer", "addr", "length", "lkey", "rkey", "access", "on_remote_write")

    def __init__(self, buffer: np.ndarray, addr: int, key: int, access: int):
        self.on_remote_write = None
        """Called after an RDMA WRITE lands: stands for a host CPU polling that memory
        (Open MPI's eager-RDMA rings), so a blocked rank wakes without a completion."""
        self.buffer = buffer
        self.addr = addr
        self.length = buffer.nbytes
        self.lkey = key
        self.rkey = key
        self.access = access

    def contains(self, addr: int, length: int) -> bool:
        return self.addr <= addr and addr + length <= self.addr + self.length


class _Msg:
    """A requester-side message in flight (sent, not yet acknowledged)."""

    __slots__ = ("wr", "msn", "packets", "acked", "rnr_count", "status", "read_data")

    def __init__(self, wr: SendWR, msn: int):
        self.wr = wr
        self.msn = msn
        self.packets: list[Packet] = []
        self.acked = False
        self.rnr_count = 0
        self.status = WcStatus.SUCCESS
        self.read_data = None


class HwSrq:
    """A shared receive queue: receives usable ``recv_usable`` after posting, limit event."""

    __slots__ = ("nic", "max_wr", "entries", "limit", "armed", "srq_num", "last_ready",
                 "async_handler")  # fmt: skip

    def __init__(self, nic, max_wr: int, srq_num: int, async_handler=None):
        self.nic = nic
        self.async_handler = async_handler
        self.max_wr = max_wr
        self.entries: deque = deque()  # [RecvWR, usable]
        self.limit = 0
        self.armed = False
        self.srq_num = srq_num
        self.last_ready = 0

    def post(self, wr: RecvWR) -> None:
        entry = [wr, False]
        self.entries.append(entry)
        sim = self.nic.sim
        when = sim.now + sim.duration("nic.recv_usable", *self.nic.model.recv_usable)
        if when < self.last_ready:
            when = self.last_ready  # receives become usable in posting order
        self.last_ready = when
        sim.schedule(when - sim.now, _mark_usable, entry)

    def take(self):
        entries = self.entries
        if not entries or not entries[0][1]:
            return None
        wr = entries.popleft()[0]
        if self.armed and len(entries) < self.limit:
            self.armed = False
            # ibverbs names the SRQ in the event; the model carries its number in qp_num
            self.nic.raise_async(self.async_handler, AsyncEventType.SRQ_LIMIT_REACHED,
                                 self.srq_num, "limit reached")  # fmt: skip
        return wr

    def arm(self, limit: int) -> None:
        self.limit = limit
        self.armed = limit > 0


def _mark_usable(entry) -> None:
    entry[1] = True


class HwQp:
    """An RC queue pair's hardware context: requester and responder state."""

    def __init__(self, nic, qpn: int, send_cq, recv_cq, srq: HwSrq | None, max_send_wr: int,
                 async_handler=None):  # fmt: skip
        self.nic = nic
        self.qpn = qpn
        self.async_handler = async_handler  # the owning context's (affiliated events)
        self.send_cq = send_cq
        self.recv_cq = recv_cq
        self.srq = srq
        self.max_send_wr = max_send_wr
        self.state = QpState.RESET
        self.dest_lid = 0
        self.dest_qpn = 0
        self.path_mtu = nic.model.mtu_max
        self.rnr_retry = 7
        self.min_rnr_timer = 12
        self.retry_cnt = 7
        self.timeout = 20
        # requester
        self.next_msn = 0
        self.next_psn = 0
        self.inflight: deque[_Msg] = deque()
        self.tx: deque[Packet] = deque()
        self.in_arbiter = False
        self.paused = False  # between an RNR NAK and the retransmission
        self.sq_outstanding = 0
        self._unsignaled_pending = 0
        # transport timer: one per QP, re-armed lazily (see ``Nic._rto_expired``)
        self.rto_idle = True  # nothing transmitted is waiting for an acknowledgement
        self.rto_armed = False
        self.rto_base = 0  # when the timer (re)started: first transmission or progress
        self.retries = 0  # consecutive retries without progress, against ``retry_cnt``
        self.resp_msn = -1  # the READ response being received, and its next packet
        self.resp_next = 0
        # work queues (``work`` is the single FIFO of a shared device, ``sq`` the send
        # engine's queue of a split device)
        self.work: deque = deque()
        self.engine_busy = False
        self.leaving: deque[int] = deque()  # shared: msns fetched, not yet fully on the wire
        self.rq: deque = deque()  # [RecvWR, usable]
        # responder
        self.expected_msn = 0
        self.expected_psn = 0
        self.seq_nak_sent = False  # one sequence-error NAK per gap, as IB responders do
        self.cur_recv: RecvWR | None = None
        self.cur_write = None
        self.rnr_waiting = False
        self.last_send_cqe = 0
        self.last_recv_cqe = 0
        self.last_doorbell = 0
        self.last_rq_ready = 0
        # statistics
        self.rnr_naks_sent = 0
        self.rnr_naks_received = 0
        self.bytes_sent = 0
        self.messages_sent = 0
        self.retransmissions = 0

    @property
    def actor(self) -> str:
        return f"{self.nic.name}/qp{self.qpn}"

    def recv_backlog(self) -> tuple[int, int]:
        """(posted receives, of which usable) — what a race report wants to show."""
        src = self.srq.entries if self.srq is not None else self.rq
        return len(src), sum(1 for e in src if e[1])


def _trace_id(wr_id) -> int:
    """A wr_id as a trace value: ints as they are; objects by their ``trace_id`` (a
    deterministic number), never by ``repr`` (addresses differ between runs)."""
    return wr_id if type(wr_id) is int else getattr(wr_id, "trace_id", -1)


def _flush_wc(qp: HwQp, wr, opcode: WcOpcode) -> WorkCompletion:
    return WorkCompletion(wr.wr_id, WcStatus.WR_FLUSH_ERR, opcode, qp.qpn, 0)
