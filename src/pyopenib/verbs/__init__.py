"""verbs — libibverbs semantics on the simulated hardware: device context, PD, MR, CQ,
RC QP (RESET/INIT/RTR/RTS/ERROR), SRQ, work requests and completions. The API the BTL
programs against; it knows nothing about credits."""

from ..hw import (
    Access,
    AsyncEvent,
    AsyncEventType,
    QpState,
    RecvWR,
    SendFlags,
    SendWR,
    Sge,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    WrOpcode,
)
from ._objects import (
    CompletionQueue,
    Context,
    DeviceAttr,
    MemoryRegion,
    ProtectionDomain,
    QpAttr,
    QpCounters,
    QueuePair,
    SharedReceiveQueue,
    VerbsError,
)
from .fabric import attach_device, find_device, open_devices

__all__ = [
    "Access",
    "AsyncEvent",
    "AsyncEventType",
    "CompletionQueue",
    "Context",
    "DeviceAttr",
    "MemoryRegion",
    "ProtectionDomain",
    "QpAttr",
    "QpCounters",
    "QpState",
    "QueuePair",
    "RecvWR",
    "SendFlags",
    "SendWR",
    "Sge",
    "SharedReceiveQueue",
    "VerbsError",
    "WcOpcode",
    "WcStatus",
    "WorkCompletion",
    "WrOpcode",
    "attach_device",
    "find_device",
    "open_devices",
]
