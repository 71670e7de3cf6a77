"""hw — simulated RDMA hardware: device models (data), NICs with their work-queue
engines and RC transport, links and one switch. What the verbs objects run on."""

from .device_model import (
    DeviceModel,
    Interval,
    find_device_by_ids,
    get_device_model,
    load_device_models,
)
from .memory import Access
from .nic import Nic
from .packet import Packet
from .qp import HEADER_BYTES, QpState, rnr_timer_ps
from .wire import Fabric
from .work import (
    AsyncEvent,
    AsyncEventType,
    RecvWR,
    SendFlags,
    SendWR,
    Sge,
    WcOpcode,
    WcStatus,
    WorkCompletion,
    WrOpcode,
)

__all__ = [
    "DeviceModel",
    "Interval",
    "load_device_models",
    "get_device_model",
    "find_device_by_ids",
    "Nic",
    "Fabric",
    "Packet",
    "QpState",
    "Access",
    "HEADER_BYTES",
    "rnr_timer_ps",
    "AsyncEvent",
    "AsyncEventType",
    "RecvWR",
    "SendFlags",
    "SendWR",
    "Sge",
    "WcOpcode",
    "WcStatus",
    "WorkCompletion",
    "WrOpcode",
]
