"""btl — Open MPI's openib BTL on the verbs layer: QPs from receive_queues, endpoints,
fragments, per-peer and SRQ credit flow control, explicit credit messages and their
routing policy (``btl_openib_credits_qp``), eager RDMA, connection setup, fatal errors;
plus a shared-memory BTL (``sm``, Open MPI's vader) for on-node peers and the ``Bml``
that routes each peer to one of them when several processes share a node.

The PML sees only ``BtlModule`` (see ``interface``); jobs are built by
``build_job_btls``."""

from .bml import Bml, openib_module
from .cluster import JobBtls, OobChannel, build_job_btls
from .credits import stall_report
from .interface import BtlModule, MemHandle, RecvCallback, TransportError
from .module import OpenibModule
from .sm import SmModule, SmNode

__all__ = [
    "BtlModule",
    "MemHandle",
    "RecvCallback",
    "TransportError",
    "OpenibModule",
    "SmModule",
    "SmNode",
    "Bml",
    "JobBtls",
    "openib_module",
    "OobChannel",
    "build_job_btls",
    "stall_report",
]
