"""The NIC's memory translation: registered regions (the MPT, keyed by lkey = rkey) and
the two data movements through them, gathering a send's payload from its SGEs and
scattering a received payload into a receive's SGEs. A key the table does not know, or an
SGE outside its region, is a protection error for the caller to report."""

from __future__ import annotations

from enum import IntEnum

import numpy as np

from .work import RecvWR, SendWR

__all__ = ["Access", "HwMr", "MemoryTable"]


class Access(IntEnum):
    LOCAL_WRITE = 1
    REMOTE_WRITE = 2
    REMOTE_READ = 4
    REMOTE_ATOMIC = 8


class HwMr:
    """A memory region as the NIC's translation table sees it."""

    __slots__ = ("buffer", "view", "addr", "length", "lkey", "rkey", "access", "on_remote_write")

    def __init__(self, buffer: np.ndarray, addr: int, key: int, access: int):
        self.on_remote_write = None
        """Called after an RDMA WRITE lands: stands for a host CPU polling that memory
        (Open MPI's eager-RDMA rings), so a blocked rank wakes without a completion."""
        self.buffer = buffer
        self.view = memoryview(buffer)
        """The region's bytes as a memoryview (a registered buffer is 1-d ``uint8``): the
        DMA engine's reads and writes slice it, ~10x cheaper for a small message than a
        numpy slice's ``tobytes`` or a ``frombuffer`` assignment, and the same bytes."""
        self.addr = addr
        self.length = buffer.nbytes
        self.lkey = key
        self.rkey = key
        self.access = access

    def contains(self, addr: int, length: int) -> bool:
        return self.addr <= addr and addr + length <= self.addr + self.length


class MemoryTable:
    """The regions registered with one NIC. Keys and virtual addresses are the NIC's own,
    unique on the host whichever process registered the region; each region starts on a
    fresh page after a guard page, so an off-by-one address never lands in a neighbour."""

    __slots__ = ("mpt", "_next_key", "_next_addr")

    def __init__(self):
        self.mpt: dict[int, HwMr] = {}
        self._next_key = 0x100
        self._next_addr = 0x10000000

    def register(self, buffer: np.ndarray, access: int) -> HwMr:
        key = self._next_key
        self._next_key += 1
        addr = self._next_addr
        self._next_addr += (buffer.nbytes + 4095) // 4096 * 4096 + 4096
        mr = HwMr(buffer, addr, key, access)
        self.mpt[key] = mr
        return mr

    def deregister(self, mr: HwMr) -> None:
        self.mpt.pop(mr.lkey, None)

    def target(self, rkey: int, addr: int, length: int, access: Access) -> HwMr | None:
        """The region an incoming RDMA WRITE or READ may touch, or None (unknown rkey,
        range outside it, or ``access`` not granted): the responder answers NAK_ACCESS."""
        mr = self.mpt.get(rkey)
        if mr is None or not mr.access & access:
            return None
        start = mr.addr  # ``mr.contains``, inlined: every RDMA WRITE packet asks
        if addr < start or addr + length > start + mr.length:
            return None
        return mr

    def gather(self, wr: SendWR) -> bytes | None:
        """The payload of a send: its SGEs' bytes in order (None: an SGE outside its MR)."""
        mpt = self.mpt
        sg_list = wr.sg_list
        if len(sg_list) == 1:
            sge = sg_list[0]
            mr = mpt.get(sge.lkey)
            if mr is None:
                return None
            off = sge.addr - mr.addr  # ``mr.contains``, inlined: every send gathers
            end = off + sge.length
            if off < 0 or end > mr.length:
                return None
            return mr.view[off:end].tobytes()
        parts = []
        for sge in wr.sg_list:
            mr = mpt.get(sge.lkey)
            if mr is None or not mr.contains(sge.addr, sge.length):
                return None
            off = sge.addr - mr.addr
            parts.append(mr.view[off : off + sge.length].tobytes())
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def scatter(self, wr: RecvWR, payload: bytes) -> bool:
        """Write ``payload`` into ``wr``'s SGEs in order (False: an SGE outside its MR)."""
        pos = 0
        mpt = self.mpt
        view = memoryview(payload)
        for sge in wr.sg_list:
            if pos >= len(payload):
                break
            mr = mpt.get(sge.lkey)
            if mr is None or not mr.contains(sge.addr, sge.length):
                return False
            n = min(sge.length, len(payload) - pos)
            off = sge.addr - mr.addr
            mr.view[off : off + n] = view[pos : pos + n]
            pos += n
        return True
