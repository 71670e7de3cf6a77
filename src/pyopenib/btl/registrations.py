"""What one BTL module has pinned: registrations made and released, and the high-water mark.

Open MPI's ob1 registers a rendezvous buffer for the RDMA and releases it when the transfer
is over (without ``mpi_leave_pinned``); the eager-RDMA rings stay registered for the
connection's life. A registration that is never released is pinned memory lost until the
process ends, so ``--stats`` shows these counts and the leak benchmark bounds them.
"""

from __future__ import annotations

__all__ = ["RegistrationCounts"]


class RegistrationCounts:
    """Counters of ``ibv_reg_mr``/``ibv_dereg_mr`` calls and of the bytes pinned now."""

    __slots__ = ("registered", "deregistered", "pinned_bytes", "peak_pinned_bytes")

    def __init__(self) -> None:
        self.registered = 0
        self.deregistered = 0
        self.pinned_bytes = 0
        self.peak_pinned_bytes = 0

    @property
    def live(self) -> int:
        """Registrations held now."""
        return self.registered - self.deregistered

    def record_register(self, nbytes: int) -> None:
        self.registered += 1
        self.pinned_bytes += nbytes
        if self.pinned_bytes > self.peak_pinned_bytes:
            self.peak_pinned_bytes = self.pinned_bytes

    def record_deregister(self, nbytes: int) -> None:
        self.deregistered += 1
        self.pinned_bytes -= nbytes
