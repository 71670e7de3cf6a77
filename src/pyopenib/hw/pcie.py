"""The NIC's PCIe link to its host: one bus per direction (host->NIC for send payloads
and READ responses, NIC->host for received data), each shared by every transfer."""

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

    def dma(self, nbytes: int, to_nic: bool) -> int:
        """Delay until ``nbytes`` have crossed PCIe: each direction is one shared bus, so
        concurrent transfers queue for it; then the bus latency. A transfer no larger than
        one PCIe request (``PCIE_REQUEST_BYTES``) slips between the requests of larger
        ones instead of waiting for them to finish, as interleaved DMA requests do; it
        still uses its share of the bandwidth."""
        sim = self.sim
        now = sim.now
        busy = self.to_nic_free if to_nic else self.to_host_free
        start = busy if busy > now else now
        xfer = int(nbytes * self.ps_per_byte)
        end = start + xfer
        if to_nic:
            self.to_nic_free = end
        else:
            self.to_host_free = end
        if nbytes <= PCIE_REQUEST_BYTES:
            end = now + xfer
        pl = self.latency
        return end - now + (pl[1] if sim.nominal else sim.duration("nic.pcie", *pl))
