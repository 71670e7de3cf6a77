"""Work requests, work completions and their codes — the records a NIC consumes and
produces. They live here (not in ``verbs/``) because the hardware creates completions;
``verbs`` re-exports them as the API the BTL programs against.

Names and values follow libibverbs (``enum ibv_wc_status``, ``enum ibv_wr_opcode``,
``enum ibv_wc_opcode``) so a trace reads like an ibverbs program's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum

__all__ = [
    "WcStatus",
    "WrOpcode",
    "WcOpcode",
    "SendFlags",
    "Sge",
    "SendWR",
    "RecvWR",
    "WorkCompletion",
    "AsyncEventType",
    "AsyncEvent",
]


class WcStatus(IntEnum):
    SUCCESS = 0
    LOC_LEN_ERR = 1
    LOC_QP_OP_ERR = 2
    LOC_EEC_OP_ERR = 3
    LOC_PROT_ERR = 4
    WR_FLUSH_ERR = 5
    MW_BIND_ERR = 6
    BAD_RESP_ERR = 7
    LOC_ACCESS_ERR = 8
    REM_INV_REQ_ERR = 9
    REM_ACCESS_ERR = 10
    REM_OP_ERR = 11
    RETRY_EXC_ERR = 12
    RNR_RETRY_EXC_ERR = 13
    LOC_RDD_VIOL_ERR = 14
    REM_INV_RD_REQ_ERR = 15
    REM_ABORT_ERR = 16
    INV_EECN_ERR = 17
    INV_EEC_STATE_ERR = 18
    FATAL_ERR = 19
    RESP_TIMEOUT_ERR = 20
    GENERAL_ERR = 21


class WrOpcode(IntEnum):
    RDMA_WRITE = 0
    RDMA_WRITE_WITH_IMM = 1
    SEND = 2
    SEND_WITH_IMM = 3
    RDMA_READ = 4


class WcOpcode(IntEnum):
    SEND = 0
    RDMA_WRITE = 1
    RDMA_READ = 2
    RECV = 128
    RECV_RDMA_WITH_IMM = 129


_WC_OF_WR = {
    WrOpcode.SEND: WcOpcode.SEND,
    WrOpcode.SEND_WITH_IMM: WcOpcode.SEND,
    WrOpcode.RDMA_WRITE: WcOpcode.RDMA_WRITE,
    WrOpcode.RDMA_WRITE_WITH_IMM: WcOpcode.RDMA_WRITE,
    WrOpcode.RDMA_READ: WcOpcode.RDMA_READ,
}


def wc_opcode_of(opcode: WrOpcode) -> WcOpcode:
    return _WC_OF_WR[opcode]


class SendFlags(IntEnum):
    NONE = 0
    FENCE = 1
    SIGNALED = 2
    SOLICITED = 4
    INLINE = 8


@dataclass(slots=True, frozen=True)
class Sge:
    """A scatter/gather element: ``length`` bytes at virtual ``addr`` of the MR ``lkey``."""

    addr: int
    length: int
    lkey: int


@dataclass(slots=True)
class SendWR:
    wr_id: int
    opcode: WrOpcode
    sg_list: tuple[Sge, ...] = ()
    send_flags: int = SendFlags.SIGNALED
    imm_data: int = 0
    remote_addr: int = 0
    rkey: int = 0
    inline_data: bytes | None = field(default=None, repr=False)
    """Filled by ``post_send`` for INLINE sends: the bytes copied at post time."""

    @property
    def length(self) -> int:
        return sum(s.length for s in self.sg_list)


@dataclass(slots=True)
class RecvWR:
    wr_id: int
    sg_list: tuple[Sge, ...] = ()

    @property
    def length(self) -> int:
        return sum(s.length for s in self.sg_list)


@dataclass(slots=True)
class WorkCompletion:
    wr_id: int
    status: WcStatus
    opcode: WcOpcode
    qp_num: int
    byte_len: int = 0
    imm_data: int = 0
    src_qp: int = 0
    vendor_err: int = 0


class AsyncEventType(IntEnum):
    """The subset of ``enum ibv_event_type`` a NIC model raises."""

    CQ_ERR = 0
    QP_FATAL = 1
    QP_REQ_ERR = 2
    QP_ACCESS_ERR = 3
    COMM_EST = 4
    SQ_DRAINED = 5
    PATH_MIG = 6
    PATH_MIG_ERR = 7
    DEVICE_FATAL = 8
    PORT_ACTIVE = 9
    PORT_ERR = 10
    LID_CHANGE = 11
    PKEY_CHANGE = 12
    SM_CHANGE = 13
    SRQ_ERR = 14
    SRQ_LIMIT_REACHED = 15
    QP_LAST_WQE_REACHED = 16


@dataclass(slots=True, frozen=True)
class AsyncEvent:
    """An asynchronous event with the NIC model's reason (e.g. why a QP went fatal)."""

    event_type: AsyncEventType
    time_ps: int
    qp_num: int = 0
    reason: str = ""
