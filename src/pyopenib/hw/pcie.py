"""The NIC's PCIe link to its host: one bus per direction (host->NIC for send payloads
and READ responses, NIC->host for received data), each shared by every transfer.

A transfer is a stream, not a block: the NIC issues read requests of at most
``PCIE_REQUEST_BYTES`` back to back, and their completions arrive at the bus's rate one
round trip (twice the bus latency) after the first request, so the first bytes of a long transfer are in the
NIC long before the last ones (``stream``). That is what lets a pipelined (cut-through)
NIC put a message's first packet on the wire while its later packets are still being
read, and write a received packet to host memory while the next one is still on the
wire."""

from __future__ import annotations

__all__ = ["PCIE_REQUEST_BYTES", "PcieBus"]

PCIE_REQUEST_BYTES = 512
"""PCIe max read request size of the era's chipsets (512 B is the common default): the
granularity at which DMA transfers of different work requests interleave."""


class PcieBus:
    """When each direction is free again, and what a DMA transfer costs."""

    __slots__ = ("sim", "ps_per_byte", "latency", "to_nic_free", "to_host_free")

    def __init__(self, sim, model):
        self.sim = sim
        self.ps_per_byte = model.pcie_ps_per_byte
        self.latency = model.pcie_latency
        self.to_nic_free = 0  # ps
        self.to_host_free = 0

    def stream(self, nbytes: int, to_nic: bool, at: int) -> int:
        """Reserve the bus for ``nbytes`` issued at absolute time ``at`` (>= now); return
        the absolute time ``base`` such that the first ``k`` bytes have crossed at
        ``base + k * ps_per_byte``. Each direction is one shared bus, so concurrent
        transfers queue for it; then the bus latency, twice for a read (its round trip). A transfer no larger than one PCIe
        request (``PCIE_REQUEST_BYTES``) slips between the requests of larger ones
        instead of waiting for them to finish, as interleaved DMA requests do; it still
        uses its share of the bandwidth."""
        busy = self.to_nic_free if to_nic else self.to_host_free
        start = busy if busy > at else at
        end = start + int(nbytes * self.ps_per_byte)
        if to_nic:
            self.to_nic_free = end
        else:
            self.to_host_free = end
        if nbytes <= PCIE_REQUEST_BYTES:
            start = at
        sim = self.sim
        pl = self.latency
        latency = pl[1] if sim.nominal else sim.duration("nic.pcie", *pl)
        # a read (host -> NIC) is a round trip: the request crosses the bus, then the
        # completion with the data comes back; a write (NIC -> host) is posted, one way
        return start + (2 * latency if to_nic else latency)

    def crossed(self, nbytes: int, to_nic: bool, at: int) -> int:
        """The absolute time all ``nbytes`` of a transfer issued at ``at`` have crossed."""
        return self.stream(nbytes, to_nic, at) + int(nbytes * self.ps_per_byte)
