"""btl — Open MPI's openib BTL on the verbs layer: QPs from receive_queues, endpoints,
fragments, per-peer and SRQ credit flow control, explicit credit messages and their
routing policy (``btl_openib_credits_qp``), connection setup, fatal errors.

The PML sees only ``BtlModule`` (see ``interface``); jobs are built by
``build_job_btls``."""

from .cluster import OobChannel, build_job_btls
from .interface import BtlModule, MemHandle, RecvCallback, TransportError
from .module import OpenibModule

__all__ = [
    "BtlModule",
    "MemHandle",
    "RecvCallback",
    "TransportError",
    "OpenibModule",
    "OobChannel",
    "build_job_btls",
]
