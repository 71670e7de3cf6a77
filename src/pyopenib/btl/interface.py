"""What the PML may rely on from a BTL module (one module per MPI process).

This mirrors Open MPI's ``mca_btl_base_module_t`` at the level ob1 uses it, in Python
terms. The PML knows nothing about QPs, credits or devices: only "this BTL can send up to
``eager_limit`` bytes in one active message and do RDMA put/get on registered memory".

Threading model (MPI semantics, no background thread): nothing happens for a process
unless its own rank greenlet calls ``progress()``. A rank that has nothing to do but wait
calls ``wait_for_activity()``, which blocks the greenlet in simulated time until one of
the process's completion queues has an entry (like ``ibv_get_cq_event``) and returns;
then it calls ``progress()`` again. ``wake()`` ends that wait early: another thread of
the process (``MPI_THREAD_MULTIPLE``) queued work only a progress pass handles.

Callbacks (receive callbacks and ``on_complete``) run inside ``progress()`` on the rank's
own greenlet; they must not block.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import NamedTuple, Protocol

import numpy as np

from ..errors import TransportError
from ..sim.host import FREE_HOST, HostModel

__all__ = [
    "BtlLimits",
    "BtlModule",
    "MemHandle",
    "RecvCallback",
    "RendezvousLimits",
    "TransportError",
]

RecvCallback = Callable[[int, memoryview], None]
"""``callback(peer_rank, payload)``; the payload view is valid only during the call."""


class BtlLimits(NamedTuple):
    """What a BTL can carry to one peer (the part of UCX's ``iface_attr`` ob1 reads)."""

    eager_limit: int
    """Largest PML payload (bytes, PML header included) sent as one active message."""
    rndv_eager_limit: int
    """Bytes carried by the first fragment of a rendezvous (RTS)."""
    max_send_size: int
    """Largest fragment for pipelined sends."""


class RendezvousLimits(NamedTuple):
    """What ob1 reads to choose how the rest of a rendezvous travels over a BTL that
    must register memory for RDMA: Open MPI's ``opal_leave_pinned``, the module's
    ``btl_min_rdma_pipeline_size`` / ``btl_rdma_pipeline_send_length`` /
    ``btl_rdma_pipeline_frag_size``, and ob1's two pipeline depths (ob1's variables,
    carried here because the job's settings reach the PML through its BTL)."""

    leave_pinned: bool
    """Registrations are left pinned: every rendezvous registers and goes by RDMA."""
    min_rdma_pipeline_size: int
    """Without leave_pinned, larger messages take the RDMA pipeline."""
    rdma_pipeline_send_length: int
    """Bytes at the end of a pipelined message sent by copy in/out."""
    rdma_pipeline_frag_size: int
    """Largest RDMA-pipeline piece (0 = no limit)."""
    send_pipeline_depth: int
    """Copy-in/out fragments in flight per request when the ACK says NORDMA."""
    recv_pipeline_depth: int
    """RDMA-pipeline pieces a receiver has asked for at once."""


class MemHandle(Protocol):
    """Registered memory: ``buffer`` is the numpy uint8 array; ``key`` goes to the peer."""

    buffer: np.ndarray
    key: int


class BtlModule(ABC):
    """The BTL interface (``mca_btl_base_module_t``). Every BTL declares its limits and
    its send-immediate path; the PML reads them and never probes for either."""

    rank: int
    eager_limit: int
    """Largest PML payload (bytes, PML header included) sent as one active message."""
    max_send_size: int
    """Largest fragment for pipelined sends."""
    rndv_eager_limit: int
    """Bytes carried by the first fragment of a rendezvous (RTS)."""
    limits_per_peer: bool = False
    """True when ``limits(peer)`` differs between peers (a BML routing peers to BTLs
    with different limits); False: every peer gets the three numbers above, and the PML
    may use them without asking per peer."""
    host: HostModel = FREE_HOST
    """The process's host model (``sim.host``): what the software path costs on its CPU.
    The BTL charges its own work (completions, re-posts, descriptors) and the PML its
    matching, copies and calls on the same one; a BTL that models no host costs nothing."""

    def limits(self, peer: int) -> BtlLimits:
        """The limits of the BTL that reaches ``peer``, as ob1 uses them per peer."""
        return BtlLimits(self.eager_limit, self.rndv_eager_limit, self.max_send_size)

    def rendezvous_limits(self, peer: int) -> RendezvousLimits | None:
        """How ob1 may move a rendezvous to ``peer``; None for a BTL whose RDMA needs no
        registration (vader's single-copy): ob1 then always uses RDMA for the rest."""
        return None

    @abstractmethod
    def register_recv(self, tag: int, callback: RecvCallback) -> None:
        """Deliver active messages sent with ``tag`` (0 <= tag < 0x20) to ``callback``."""

    @abstractmethod
    def send(
        self,
        peer: int,
        tag: int,
        payload,
        on_complete: Callable[[], None] | None = None,
        high_priority: bool = False,
    ) -> None:
        """Send ``payload`` (bytes-like, len <= eager_limit / max_send_size) to ``peer``.

        The bytes are copied before ``send`` returns (the caller may reuse its buffer).
        Messages between two processes with the same size class arrive in order;
        messages of different sizes may overtake each other (different QPs) — the PML
        reorders by its own sequence numbers, as ob1 does. ``on_complete`` runs when
        the local send completion is reaped.
        """

    def sendi(self, peer: int, tag: int, payload, high_priority: bool = False) -> bool:
        """Open MPI's ``btl_sendi``: send at once with no completion callback, or refuse
        (False) without queuing anything, and the caller uses ``send``. A BTL without a
        send-immediate path always refuses."""
        return False

    @abstractmethod
    def register_memory(self, buffer: np.ndarray) -> MemHandle: ...

    @abstractmethod
    def deregister_memory(self, handle: MemHandle) -> None:
        """Release a registration (``ibv_dereg_mr``): the memory is no longer pinned and no
        peer may target it. The PML releases each rendezvous registration when its transfer
        is over, as ob1 does without ``mpi_leave_pinned``."""

    @abstractmethod
    def put(
        self,
        peer: int,
        local: MemHandle,
        local_offset: int,
        remote_key: int,
        remote_offset: int,
        length: int,
        on_complete: Callable[[], None],
    ) -> None:
        """RDMA write ``length`` bytes from local memory into the peer's registered memory."""

    @abstractmethod
    def get(
        self,
        peer: int,
        local: MemHandle,
        local_offset: int,
        remote_key: int,
        remote_offset: int,
        length: int,
        on_complete: Callable[[], None],
    ) -> None:
        """RDMA read ``length`` bytes of the peer's registered memory into local memory."""

    @abstractmethod
    def progress(self) -> int:
        """Poll completions, run callbacks; returns how many events were handled."""

    @abstractmethod
    def wait_for_activity(self) -> None:
        """Block the calling rank greenlet until a completion is pending (see module doc)."""

    @abstractmethod
    def wake(self) -> None:
        """Return the greenlet blocked in ``wait_for_activity`` from it (through the event
        heap, at the current instant); nothing when none is blocked."""
