"""btl — Open MPI's openib BTL on the verbs layer: QPs from receive_queues, endpoints,
fragments, per-peer and SRQ credit flow control, explicit credit messages and their
routing policy (``btl_openib_credits_qp``), eager RDMA, connection setup, fatal errors.

The PML sees only ``BtlModule`` (see ``interface``)."""

from .interface import BtlModule, MemHandle, RecvCallback, TransportError

__all__ = ["BtlModule", "MemHandle", "RecvCallback", "TransportError"]
