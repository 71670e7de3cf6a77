"""The registration cache of one openib module: Open MPI 4.1's ``rcache/grdma``.

Open MPI's openib BTL registers memory through its device's rcache (``grdma``): a
registration covers an address range, is reference counted by the transfers using it,
and is found again when a later transfer's range lies inside it (a *hit*; otherwise a
*miss* and a new ``ibv_reg_mr``). What happens when the last user releases it depends
on ``mpi_leave_pinned``: off, it is deregistered at once; on, it stays pinned on a
least-recently-used list of unused registrations, so that the next transfer from the
same buffer skips the registration. An unused registration leaves the list when the
device refuses a new registration (grdma evicts LRU-first and retries: *evicted*) or
when its memory is freed (the memory hooks invalidate it; it is deregistered before the
next registration, grdma's ``gc_lifo``).

What "freed" means here. Our memory is Python objects: a numpy array (or what a
buffer's ``.base``/``.obj`` chain ends at, its *owner*). A registration in use keeps its
owner alive, as the transfer does; an unused cached registration holds the owner only by
a weak reference, so when the program drops its last reference the owner dies, the
weak-reference callback plays the memory hook and the registration is invalidated. The
MR itself is made over the owner's memory through a raw-address alias (it must not keep
the owner alive, or nothing would ever be freed). An owner that cannot be weakly
referenced (``bytes``, ``bytearray``: a pickled message) cannot be watched, so its
registrations are never kept unused: they are released at once, as with leave_pinned
off — they are born and freed with each message anyway.

Ranges are compared only within one owner (address arithmetic inside one live object),
so hits and misses do not depend on where the allocator put unrelated memory: the same
program gives the same counts on every run. Registrations carry no simulated cost yet
(issue 14's host model); the cache changes how many ``ibv_reg_mr`` calls are made and how
many bytes stay pinned, and, with a registration cost, will change time.
"""

from __future__ import annotations

import ctypes
import weakref
from collections import OrderedDict
from functools import partial

import numpy as np

from .registrations import RegistrationCounts

__all__ = ["CacheStats", "RegisteredMemory", "Registration", "RegistrationCache"]

_RKEY_BITS = 24


class Registration:
    """One ``ibv_reg_mr`` of bytes ``[start, end)`` of one owner's memory, shared by
    ``ref_count`` transfers (grdma's ``mca_rcache_base_registration_t``)."""

    __slots__ = ("serial", "mr", "owner_id", "start", "end", "ref_count", "keep", "invalid")

    def __init__(self, serial: int, mr, owner_id: int | None, start: int, end: int, keep):
        self.serial = serial
        self.mr = mr
        self.owner_id = owner_id
        """``id()`` of the watched owner; None for a registration nobody can find again."""
        self.start = start
        self.end = end
        self.ref_count = 1
        self.keep = keep
        """The owner, held strongly while the registration is in use (None when unused)."""
        self.invalid = False

    @property
    def nbytes(self) -> int:
        return self.end - self.start


class _Offset:
    """The part of a registration one transfer uses: the MR's keys, the address of the
    transfer's first byte (a hit may start inside a larger registration)."""

    __slots__ = ("addr", "lkey", "rkey", "buffer")

    def __init__(self, mr, delta: int, buffer: np.ndarray):
        self.addr = mr.addr + delta
        self.lkey = mr.lkey
        self.rkey = mr.rkey
        self.buffer = buffer


class RegisteredMemory:
    """A registration as the PML sees it for one transfer. ``key`` packs the address of
    the buffer's first byte and the rkey — the two facts Open MPI's PML ships to the
    peer for RDMA; ``mr`` gives ``addr``/``lkey`` for the local side."""

    __slots__ = ("buffer", "key", "mr", "registration")

    def __init__(self, buffer: np.ndarray, registration: Registration, delta: int):
        mr = registration.mr
        self.buffer = buffer
        self.registration = registration
        self.mr = mr if delta == 0 else _Offset(mr, delta, buffer)
        self.key = ((mr.addr + delta) << _RKEY_BITS) | mr.rkey


class CacheStats:
    """grdma's counters (``rcache_grdma_print_stats``): ``hits`` found a registration
    covering the range, ``misses`` registered anew, ``evicted`` unused registrations
    deregistered to make room, ``invalidated`` deregistered because their memory was
    freed."""

    __slots__ = ("hits", "misses", "evicted", "invalidated")

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0
        self.evicted = 0
        self.invalidated = 0


def memory_owner(buffer: np.ndarray):
    """The object that owns ``buffer``'s memory: the end of its ``.base`` (numpy) and
    ``.obj`` (memoryview) chain."""
    obj = buffer
    while True:
        if isinstance(obj, np.ndarray) and obj.base is not None:
            obj = obj.base
        elif isinstance(obj, memoryview) and obj.obj is not None:
            obj = obj.obj
        else:
            return obj


def _address(buffer: np.ndarray) -> int:
    return buffer.__array_interface__["data"][0]


def _alias(address: int, nbytes: int) -> np.ndarray:
    """The same bytes as a uint8 array that does not keep their owner alive."""
    return np.ctypeslib.as_array((ctypes.c_ubyte * nbytes).from_address(address))


class RegistrationCache:
    """Registrations of one protection domain, found by owner and byte range.

    ``leave_pinned`` (the resolved ``mpi_leave_pinned``/``mpi_leave_pinned_pipeline``):
    keep unused registrations on the LRU list. Without it a registration is still found
    by a concurrent transfer of the same memory (grdma always inserts into its tree) but
    is deregistered when its last user releases it.

    ``limit_bytes``: the registered-memory budget (Open MPI's ``mem_reg_max``: 7/8 of
    what the device can register, shared by the node's processes); a registration that
    would exceed it first evicts unused registrations, oldest first. None (today) = no
    limit: the host model that will supply it is issue 14. In-use registrations cannot
    be evicted; where Open MPI would then refuse the registration and fall back to copy
    protocols, pyopenib registers anyway (it has no copy fallback).
    """

    def __init__(
        self,
        pd,
        access: int,
        counts: RegistrationCounts,
        leave_pinned: bool,
        limit_bytes: int | None = None,
    ):
        self.pd = pd
        self.access = access
        self.counts = counts
        self.leave_pinned = leave_pinned
        self.limit_bytes = limit_bytes
        self.stats = CacheStats()
        self._serial = 0
        self._by_owner: dict[int, list[Registration]] = {}
        self._watch: dict[int, weakref.ref] = {}
        self._lru: OrderedDict[int, Registration] = OrderedDict()
        self._stale: list[Registration] = []
        self._busy = False

    # -- what --stats shows -------------------------------------------------------------
    @property
    def unused(self) -> int:
        """Registrations kept pinned with no user (the LRU list)."""
        return len(self._lru)

    @property
    def tree_size(self) -> int:
        """Registrations a later transfer can find (grdma's VMA tree): in use or unused."""
        return sum(len(regs) for regs in self._by_owner.values())

    def owner_offsets(self) -> list:
        """What the cache's lookups depend on, without host addresses: per watched owner
        (in the order first registered), the owner and, for each of its registrations,
        the registration, the offset of its first byte in the owner and its length. Host
        addresses differ between two runs of one program (the allocator's choice) while
        every lookup compares ranges inside one owner, so two caches with equal views
        answer every later lookup alike: a model checker compares the states of two runs
        by this view (``check/fingerprint.py``)."""
        view = []
        for owner_id, regs in self._by_owner.items():
            owner = self._watch[owner_id]()  # alive: its death removes the entry at once
            base = _address(
                owner if isinstance(owner, np.ndarray) else np.frombuffer(owner, np.uint8)
            )
            view.append((owner, [(reg, reg.start - base, reg.nbytes) for reg in regs]))
        return view

    # -- register / release -------------------------------------------------------------
    def register(self, buffer: np.ndarray) -> RegisteredMemory:
        """A registration covering ``buffer`` (found or new), with one more user."""
        self._busy = True
        try:
            self._collect()
            start = _address(buffer)
            end = start + buffer.nbytes
            owner = memory_owner(buffer)
            owner_id = id(owner)
            for reg in self._by_owner.get(owner_id, ()):
                if not reg.invalid and reg.start <= start and end <= reg.end:
                    self.stats.hits += 1
                    if reg.ref_count == 0:
                        del self._lru[reg.serial]
                        reg.keep = owner
                    reg.ref_count += 1
                    return RegisteredMemory(buffer, reg, start - reg.start)
            self.stats.misses += 1
            return RegisteredMemory(buffer, self._new(buffer, owner, start, end), 0)
        finally:
            self._busy = False
            self._collect()

    def release(self, handle: RegisteredMemory) -> None:
        """One user fewer; the last one deregisters it, or (leave_pinned, memory that can
        be watched) puts it on the LRU list."""
        reg = handle.registration
        reg.ref_count -= 1
        if reg.ref_count > 0:
            return
        if not (self.leave_pinned and reg.owner_id is not None and not reg.invalid):
            self._deregister(reg)
            return
        self._lru[reg.serial] = reg
        # last: if the program already dropped the memory, this runs its invalidation
        reg.keep = None

    def _new(self, buffer: np.ndarray, owner, start: int, end: int) -> Registration:
        n = end - start
        self._make_room(n)
        self._serial += 1
        ref = self._watch.get(id(owner))
        if ref is None and n:
            try:
                ref = weakref.ref(owner, partial(self._freed, id(owner)))
            except TypeError:
                pass  # bytes, bytearray: the program's free cannot be seen
        if ref is None:
            reg = Registration(
                self._serial, self.pd.reg_mr(buffer, self.access), None, start, end, owner
            )
        else:
            owner_id = id(owner)
            mr = self.pd.reg_mr(_alias(start, n), self.access)
            reg = Registration(self._serial, mr, owner_id, start, end, owner)
            self._watch[owner_id] = ref
            self._by_owner.setdefault(owner_id, []).append(reg)
        self.counts.record_register(n)
        return reg

    def _make_room(self, nbytes: int) -> None:
        limit = self.limit_bytes
        if limit is None:
            return
        while self._lru and self.counts.pinned_bytes + nbytes > limit:
            _, reg = self._lru.popitem(last=False)
            self.stats.evicted += 1
            self._deregister(reg)

    def _deregister(self, reg: Registration) -> None:
        regs = self._by_owner.get(reg.owner_id)
        if regs is not None:
            regs.remove(reg)
            if not regs:
                del self._by_owner[reg.owner_id]
                del self._watch[reg.owner_id]
        reg.mr.dereg()
        self.counts.record_deregister(reg.nbytes)
        # last, unlinked: the owner may die here, with nothing left to invalidate
        reg.keep = None

    # -- invalidation (the memory hooks) --------------------------------------------------
    def _freed(self, owner_id: int, ref: weakref.ref) -> None:
        """The owner's memory was freed: every registration of it is stale (all unused —
        a user keeps the owner alive) and is deregistered now, or after the cache
        operation this interrupted."""
        if self._watch.get(owner_id) is not ref:
            return
        del self._watch[owner_id]
        for reg in self._by_owner.pop(owner_id):
            reg.invalid = True
            reg.owner_id = None
            self._lru.pop(reg.serial, None)
            self._stale.append(reg)
        if not self._busy:
            self._collect()

    def _collect(self) -> None:
        """Deregister the registrations whose memory was freed (grdma's
        ``do_unregistration_gc``)."""
        while self._stale:
            reg = self._stale.pop()
            self.stats.invalidated += 1
            self._deregister(reg)
