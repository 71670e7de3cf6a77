"""A test-only BTL: simulated-time loopback implementing ``pyopenib.btl.BtlModule``.

Not a model of any device: fixed latency plus bandwidth, no credits, no failures. It exists
so the PML and the job runner can be tested before (and independently of) the openib BTL.
Two size classes travel on different "queues" with different latencies, so a large message
sent before a small one can arrive after it: the PML's sequence-number reordering is
exercised the way openib's per-size QPs exercise it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pyopenib.btl import BtlModule
from pyopenib.sim import PS_PER_NS, Simulator

SMALL_CLASS_MAX = 256
"""Payloads up to this many bytes use the fast class (like openib's smallest QP)."""


@dataclass
class _Handle:
    buffer: np.ndarray
    key: int


class LoopbackFabric:
    """Shared state of one job: the modules and the registered memory of every rank."""

    def __init__(
        self,
        sim: Simulator,
        nprocs: int,
        *,
        eager_limit: int = 4096,
        max_send_size: int = 16384,
        rndv_eager_limit: int = 4096,
        small_latency_ps: int = 1000 * PS_PER_NS,
        large_latency_ps: int = 3000 * PS_PER_NS,
        ps_per_byte: int = 100,
    ):
        self.sim = sim
        self.latency = (small_latency_ps, large_latency_ps)
        self.ps_per_byte = ps_per_byte
        self.memory: dict[int, np.ndarray] = {}
        self._next_key = 1
        self._last_arrival: dict[tuple[int, int, int], int] = {}
        self.modules = [
            LoopbackBtl(self, r, eager_limit, max_send_size, rndv_eager_limit)
            for r in range(nprocs)
        ]

    def register(self, buffer: np.ndarray) -> _Handle:
        key = self._next_key
        self._next_key += 1
        self.memory[key] = buffer
        return _Handle(buffer, key)

    def arrival(self, src: int, dst: int, nbytes: int) -> tuple[int, int]:
        """(local completion delay, arrival delay) of a message; in order per class."""
        cls = 0 if nbytes <= SMALL_CLASS_MAX else 1
        now = self.sim.now
        wire = nbytes * self.ps_per_byte
        at = now + self.latency[cls] + wire
        key = (src, dst, cls)
        at = max(at, self._last_arrival.get(key, 0))
        self._last_arrival[key] = at
        return wire, at - now


class LoopbackBtl(BtlModule):
    """One rank's module; completions queue up until the rank calls ``progress``."""

    def __init__(self, fabric, rank, eager_limit, max_send_size, rndv_eager_limit):
        self.fabric = fabric
        self.sim = fabric.sim
        self.rank = rank
        self.eager_limit = eager_limit
        self.max_send_size = max_send_size
        self.rndv_eager_limit = rndv_eager_limit
        self._callbacks: dict[int, object] = {}
        self._cq: list = []
        self._waiter = None

    def register_recv(self, tag, callback):
        self._callbacks[tag] = callback

    def _complete(self, fn, *args):
        self._cq.append((fn, args))
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.succeed()

    def send(self, peer, tag, payload, on_complete=None, high_priority=False):
        data = bytes(payload)
        if len(data) > max(self.eager_limit, self.max_send_size):
            raise ValueError(f"loopback send of {len(data)} bytes exceeds the limits")
        local, remote = self.fabric.arrival(self.rank, peer, len(data))
        dst = self.fabric.modules[peer]
        self.sim.schedule(remote, dst._complete, dst._deliver, self.rank, tag, data)
        if on_complete is not None:
            self.sim.schedule(local, self._complete, on_complete)

    def _deliver(self, src, tag, data):
        self._callbacks[tag](src, memoryview(data))

    def register_memory(self, buffer):
        return self.fabric.register(buffer)

    def deregister_memory(self, handle):
        del self.fabric.memory[handle.key]

    def put(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        _, delay = self.fabric.arrival(self.rank, peer, length)
        data = local.buffer[local_offset : local_offset + length].copy()

        def land():
            self.fabric.memory[remote_key][remote_offset : remote_offset + length] = data
            self._complete(on_complete)

        self.sim.schedule(delay, land)

    def get(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        _, delay = self.fabric.arrival(peer, self.rank, length)

        def land():
            src = self.fabric.memory[remote_key][remote_offset : remote_offset + length]
            local.buffer[local_offset : local_offset + length] = src
            self._complete(on_complete)

        self.sim.schedule(2 * delay, land)

    def progress(self):
        cq, self._cq = self._cq, []
        for fn, args in cq:
            fn(*args)
        return len(cq)

    def wake(self):
        waiter, self._waiter = self._waiter, None
        if waiter is not None:
            waiter.succeed()

    def wait_for_activity(self):
        if self._cq:
            return
        self._waiter = self.sim.event()
        self.sim.wait(self._waiter)


def make_loopback_btls(sim: Simulator, nprocs: int, **options) -> list[LoopbackBtl]:
    """The ``make_btls`` factory the job runner takes."""
    return LoopbackFabric(sim, nprocs, **options).modules
