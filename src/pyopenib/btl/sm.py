"""The shared-memory BTL for processes of one node, after Open MPI's vader (``btl/sm``
in Open MPI 5): what carries on-node traffic, so the openib BTL never sees a local peer.

Open MPI selects ``self,vader,openib`` by default and vader wins every on-node peer (it
has the higher exclusivity); on iWARP the openib BTL even marks local peers unreachable
(trac #1352), so on-node traffic *must* take shared memory there. pyopenib does the same
on every transport: on-node peers always use this BTL (see docs/run.md).

What is modelled, per node (``SmNode``):

* **Mailboxes.** One FIFO per ordered pair of local processes. ``send`` copies the
  payload at once (the caller may reuse its buffer) and the message becomes visible in
  the receiver's mailbox after the copy and ``SM_LATENCY_PS``; messages of one pair
  arrive in send order whatever the durations. Receive callbacks run from the
  receiver's own ``progress()``, as vader's fast-box and FIFO polling does.
* **Single-copy RDMA.** ``put``/``get`` copy between registered numpy buffers of two
  local processes (what CMA/XPMEM give vader), with the same delay model; the bytes
  land when the operation completes.
* **The copying core.** A process copies one thing at a time: each copy starts when
  its previous one has ended and takes ``bytes * SM_PS_PER_BYTE``, so a stream from
  one process runs at the modelled memory-copy rate.

Not modelled: fast-box/FIFO capacity (mailboxes are unbounded, so a sender never
waits for the receiver), cache and NUMA effects, the receiver's copy-out (free, as all
computation between MPI calls is), and contention for memory bandwidth between pairs.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .interface import BtlModule

__all__ = [
    "SM_EAGER_LIMIT",
    "SM_LATENCY_PS",
    "SM_MAX_SEND_SIZE",
    "SM_PS_PER_BYTE",
    "SM_RNDV_EAGER_LIMIT",
    "SmMemory",
    "SmModule",
    "SmNode",
]

SM_LATENCY_PS = (300_000, 400_000, 500_000)
"""(lo, nominal, hi) picoseconds from a message's copy being done to the receiver seeing
it in its mailbox, the per-message software cost included. A GUESS approximating vader's
published small-message latency between two cores of a 2010s Xeon node (OSU latency
0.2-0.5 us intra-socket); not measured for any machine pyopenib models."""

SM_PS_PER_BYTE = 150
"""Picoseconds to copy one byte between two processes' memory (about 6.7 GB/s): a GUESS
approximating a single-stream memcpy (5-10 GB/s) on the same nodes, the rate vader's
large-message bandwidth levels off at with CMA/XPMEM single copy."""

SM_EAGER_LIMIT = 4 * 1024
"""Open MPI's vader/sm ``btl_eager_limit`` default (bytes, PML header included)."""

SM_RNDV_EAGER_LIMIT = 32 * 1024
"""Open MPI's vader/sm ``btl_rndv_eager_limit`` default."""

SM_MAX_SEND_SIZE = 32 * 1024
"""Open MPI's vader/sm ``btl_max_send_size`` default."""


class SmMemory:
    """Memory registered with the sm BTL: ``buffer`` and the ``key`` a local peer uses
    to reach it (the node's registration table maps keys to buffers)."""

    __slots__ = ("buffer", "key")

    def __init__(self, buffer: np.ndarray, key: int):
        self.buffer = buffer
        self.key = key


class SmNode:
    """One node's shared-memory segment: the sm modules of its processes, the mailbox
    order of every pair, and the registration table every local process can map."""

    def __init__(self, name: str):
        self.name = name
        self.modules: dict[int, SmModule] = {}
        self.memory: dict[int, np.ndarray] = {}
        self.mailbox_tail: dict[tuple[int, int], int] = {}
        """(sender, receiver) -> when the last message of that mailbox becomes visible."""
        self._next_key = 1

    def register(self, buffer: np.ndarray, key: int | None) -> int:
        """Record ``buffer`` under ``key`` (a key another BTL issued) or a new key."""
        if key is None:
            key = self._next_key
            self._next_key += 1
        self.memory[key] = buffer
        return key

    def deregister(self, key: int) -> None:
        del self.memory[key]


class SmModule(BtlModule):
    """One process's sm BTL module (implements ``BtlModule`` for its node's peers)."""

    eager_limit = SM_EAGER_LIMIT
    max_send_size = SM_MAX_SEND_SIZE
    rndv_eager_limit = SM_RNDV_EAGER_LIMIT

    def __init__(self, rank: int, sim, node: SmNode):
        self.rank = rank
        self.sim = sim
        self.node = node
        node.modules[rank] = self
        self._callbacks: dict[int, object] = {}
        self._inbox: deque = deque()  # (sender, tag, bytes) visible, not yet delivered
        self._completions: deque = deque()  # on_complete callbacks due
        self._busy_until = 0  # when this process's core finishes its current copy
        self._notify = None
        self.messages_sent = 0
        self.bytes_copied = 0

    # -- BtlModule surface ----------------------------------------------------------------
    def register_recv(self, tag: int, callback) -> None:
        self._callbacks[tag] = callback

    def send(self, peer: int, tag: int, payload, on_complete=None, high_priority=False) -> None:
        dst = self._peer(peer)
        data = bytes(payload)
        n = len(data)
        if n > max(self.eager_limit, self.max_send_size):
            raise ValueError(f"sm fragment of {n} bytes exceeds max_send_size {self.max_send_size}")
        copied = self._copy(n)
        sim = self.sim
        visible = copied + sim.duration("sm.latency", *SM_LATENCY_PS)
        tails = self.node.mailbox_tail
        pair = (self.rank, peer)
        tail = tails.get(pair, 0) - sim.now
        if visible < tail:
            visible = tail  # a mailbox is a FIFO
        tails[pair] = sim.now + visible
        sim.schedule(visible, dst._arrive, self.rank, tag, data)
        if on_complete is not None:
            sim.schedule(copied, self._complete, on_complete)
        self.messages_sent += 1
        tr = sim.tracer
        if tr is not None:
            tr.emit("btl", "sm_send", f"rank{self.rank}->{peer}", tag=tag, bytes=n)

    def register_memory(self, buffer: np.ndarray, key: int | None = None) -> SmMemory:
        """Register ``buffer`` on the node; ``key``: reuse another BTL's key for it (the
        BML hands the PML one key both BTLs resolve)."""
        return SmMemory(buffer, self.node.register(buffer, key))

    def deregister_memory(self, handle) -> None:
        self.node.deregister(handle.key)

    def put(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        target = self._remote(peer, remote_key)
        self._rdma(
            "sm_put", peer, target, remote_offset, local.buffer, local_offset, length, on_complete
        )

    def get(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        source = self._remote(peer, remote_key)
        self._rdma(
            "sm_get", peer, local.buffer, local_offset, source, remote_offset, length, on_complete
        )

    def progress(self) -> int:
        """Deliver every message visible in this process's mailboxes, run due completions."""
        handled = 0
        inbox = self._inbox
        callbacks = self._callbacks
        while inbox:
            src, tag, data = inbox.popleft()
            callbacks[tag](src, memoryview(data))
            handled += 1
        done = self._completions
        while done:
            done.popleft()()
            handled += 1
        return handled

    def has_activity(self) -> bool:
        """Whether ``progress()`` has something to do now."""
        return bool(self._inbox or self._completions)

    def req_notify(self, callback) -> None:
        """Call ``callback()`` once, at the next arrival or completion (one waiter: a
        process waits on one thing at a time; a later call replaces an earlier one)."""
        self._notify = callback

    def wake(self) -> None:
        self._signal()

    def wait_for_activity(self) -> None:
        if self.has_activity():
            return
        ev = self.sim.event()
        self.req_notify(lambda: ev.succeed(None))
        self.sim.wait(ev)

    # -- the model ------------------------------------------------------------------------
    def _peer(self, peer: int) -> SmModule:
        dst = self.node.modules.get(peer)
        if dst is None or peer == self.rank:
            raise ValueError(f"rank {peer} is not a peer on {self.node.name} for the sm BTL")
        return dst

    def _remote(self, peer: int, key: int) -> np.ndarray:
        self._peer(peer)
        buf = self.node.memory.get(key)
        if buf is None:
            raise ValueError(f"sm: key {key:#x} is not registered on {self.node.name}")
        return buf

    def _copy(self, nbytes: int) -> int:
        """Reserve this process's core for copying ``nbytes``; returns the delay (from
        now) at which the copy is done."""
        now = self.sim.now
        start = self._busy_until if self._busy_until > now else now
        end = start + int(nbytes * SM_PS_PER_BYTE)
        self._busy_until = end
        self.bytes_copied += nbytes
        return end - now

    def _rdma(self, kind, peer, dst, dst_off, src, src_off, length, on_complete) -> None:
        if dst_off + length > len(dst) or src_off + length > len(src):
            raise ValueError(f"{kind}: {length} bytes outside a registered buffer")
        sim = self.sim
        delay = self._copy(length) + sim.duration("sm.latency", *SM_LATENCY_PS)
        sim.schedule(delay, self._rdma_done, dst, dst_off, src, src_off, length, on_complete)
        tr = sim.tracer
        if tr is not None:
            tr.emit("btl", kind, f"rank{self.rank}->{peer}", bytes=length)

    def _rdma_done(self, dst, dst_off, src, src_off, length, on_complete) -> None:
        dst[dst_off : dst_off + length] = src[src_off : src_off + length]
        self._complete(on_complete)

    def _arrive(self, src: int, tag: int, data: bytes) -> None:
        self._inbox.append((src, tag, data))
        self._signal()

    def _complete(self, on_complete) -> None:
        self._completions.append(on_complete)
        self._signal()

    def _signal(self) -> None:
        cb = self._notify
        if cb is not None:
            self._notify = None
            cb()
