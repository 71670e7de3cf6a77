"""Eager RDMA channels (Open MPI's ``btl_openib_eager_rdma.h``): a ring of slots in the
receiver's memory that a frequent peer RDMA-writes small fragments into, bypassing
receive buffers and per-peer credits.

A slot holds a fragment right-aligned, followed by a 4-byte footer ``size:24 | flag:8``
(flag 0xFF = written). The receiver polls the footer of its head slot. The sender owns
``tokens`` (free slots it may write, ``num - 1`` initially: one slot is kept free);
the receiver returns freed slots as eager-RDMA credits (bit 15 of the header's credits,
or an explicit credit message once more than ``rd_win = max(1, num >> 2)`` are owed).
"""

from __future__ import annotations

import struct

import numpy as np

__all__ = ["EagerRdmaLocal", "EagerRdmaRemote", "FOOTER", "RDMA_CREDITS_FLAG", "slot_size"]

FOOTER = struct.Struct("<I")
FOOTER_LEN = FOOTER.size
FLAG_WRITTEN = 0xFF
RDMA_CREDITS_FLAG = 0x8000
CONNECT_BODY = struct.Struct("<BxxxIQ")  # type, rkey, address of the ring


def slot_size(eager_limit: int, header_len: int, alignment: int = 64) -> int:
    raw = header_len + eager_limit + FOOTER_LEN
    return (raw + alignment - 1) // alignment * alignment


class EagerRdmaLocal:
    """The receiving side of a channel: the registered ring and the credits owed."""

    __slots__ = ("memory", "buf", "view", "num", "slot", "head", "credits", "rd_win")

    def __init__(self, memory, num: int, slot: int):
        self.memory = memory
        self.buf: np.ndarray = memory.buffer
        self.view = memoryview(self.buf)
        self.num = num
        self.slot = slot
        self.head = 0
        self.credits = 0
        self.rd_win = max(1, num >> 2)

    def pending(self) -> bool:
        return self.view[(self.head + 1) * self.slot - FOOTER_LEN] == FLAG_WRITTEN

    def poll(self):
        """The fragment in the head slot as a memoryview, or None; consumes the slot."""
        view = self.view
        end = (self.head + 1) * self.slot
        if view[end - FOOTER_LEN] != FLAG_WRITTEN:
            return None
        (footer,) = FOOTER.unpack_from(view, end - FOOTER_LEN)
        length = footer >> 8
        FOOTER.pack_into(view, end - FOOTER_LEN, 0)
        self.head = (self.head + 1) % self.num
        start = end - FOOTER_LEN - length
        return view[start : start + length]


class EagerRdmaRemote:
    """The sending side: where the peer's ring is and how many slots may be written."""

    __slots__ = ("addr", "rkey", "num", "slot", "head", "tokens")

    def __init__(self, addr: int, rkey: int, num: int, slot: int):
        self.addr = addr
        self.rkey = rkey
        self.num = num
        self.slot = slot
        self.head = 0
        self.tokens = num - 1

    def next_slot_addr(self, total_len: int) -> int:
        """Address at which a ``total_len``-byte write ends exactly at the head slot's end."""
        end = self.addr + (self.head + 1) * self.slot
        self.head = (self.head + 1) % self.num
        return end - total_len
