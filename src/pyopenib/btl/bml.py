"""Open MPI's BML r2 in miniature: one process's BTLs behind one ``BtlModule``.

ob1 asks the BML, per peer, which BTL reaches it; r2 answers with the BTL of highest
exclusivity that can: vader (sm) for a peer on the same node, openib for the others
(the iWARP openib BTL even declares local peers unreachable, trac #1352). ``Bml`` does
that routing once at start-up and forwards each call to the peer's BTL.

As in ob1, protocol limits are per peer: ``limits(peer)`` gives the eager limit,
rendezvous-eager limit and pipeline fragment of the BTL that reaches ``peer`` (the PML
asks it); the module-wide ``eager_limit``/``max_send_size``/``rndv_eager_limit`` are the
minimum over the BTLs in use, for callers that do not ask per peer.
"""

from __future__ import annotations

import numpy as np

from .interface import BtlLimits, BtlModule
from .module import OpenibModule
from .sm import SmModule

__all__ = ["Bml", "openib_module"]


class Bml(BtlModule):
    """One process's BTLs: ``sm`` for the ranks in ``local_ranks``, ``openib`` for the
    rest of the ``nprocs`` ranks (implements ``BtlModule``)."""

    def __init__(
        self, rank: int, openib: OpenibModule, sm: SmModule, local_ranks: range, nprocs: int
    ):
        self.rank = rank
        self.openib = openib
        self.sm = sm
        self.uses_sm = len(local_ranks) > 1
        self.uses_openib = nprocs > len(local_ranks) or not self.uses_sm
        in_use = [b for b, used in ((sm, self.uses_sm), (openib, self.uses_openib)) if used]
        self.btls = tuple(in_use)
        self.host = openib.host  # one process, one CPU, whichever BTL it drives
        self.eager_limit = min(b.eager_limit for b in in_use)
        self.max_send_size = min(b.max_send_size for b in in_use)
        self.rndv_eager_limit = min(b.rndv_eager_limit for b in in_use)
        routes = [sm if p in local_ranks else openib for p in range(nprocs)]
        self.route = routes
        """``route[peer]``: the BTL that reaches ``peer`` (r2's per-peer BTL array)."""
        self._send = [b.send for b in routes]
        # the sm BTL has no send-immediate path here (its sends never wait anyway)
        self._sendi = [b.sendi for b in routes]
        self._put = [b.put for b in routes]
        self._get = [b.get for b in routes]
        self._sm_users: dict[int, int] = {}  # key -> transfers using its sm registration

    limits_per_peer = True

    def limits(self, peer: int) -> BtlLimits:
        """The limits of the BTL that reaches ``peer``."""
        return self.route[peer].limits(peer)

    def rendezvous_limits(self, peer: int):
        """The rendezvous limits of the BTL that reaches ``peer``."""
        return self.route[peer].rendezvous_limits(peer)

    def register_recv(self, tag: int, callback) -> None:
        for btl in self.btls:
            btl.register_recv(tag, callback)

    def send(self, peer: int, tag: int, payload, on_complete=None, high_priority=False) -> None:
        self._send[peer](peer, tag, payload, on_complete, high_priority)

    def sendi(self, peer: int, tag: int, payload, high_priority=False) -> bool:
        return self._sendi[peer](peer, tag, payload, high_priority)

    def register_memory(self, buffer: np.ndarray):
        """Register with every BTL in use under ONE key: openib's (address and rkey),
        which the node's sm registration table records too. openib's registration cache
        may hand the same key to concurrent transfers of one buffer: the sm entry lives
        while any of them does."""
        if not self.uses_openib:
            return self.sm.register_memory(buffer)
        handle = self.openib.register_memory(buffer)
        if self.uses_sm:
            key = handle.key
            users = self._sm_users.get(key, 0)
            if not users:
                self.sm.register_memory(buffer, key)
            self._sm_users[key] = users + 1
        return handle

    def deregister_memory(self, handle) -> None:
        if not self.uses_openib:
            self.sm.deregister_memory(handle)
            return
        self.openib.deregister_memory(handle)
        if self.uses_sm:
            key = handle.key
            users = self._sm_users.pop(key) - 1
            if users:
                self._sm_users[key] = users
            else:
                self.sm.node.deregister(key)

    def put(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        self._put[peer](peer, local, local_offset, remote_key, remote_offset, length, on_complete)

    def get(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        self._get[peer](peer, local, local_offset, remote_key, remote_offset, length, on_complete)

    def progress(self) -> int:
        handled = self.sm.progress() if self.uses_sm else 0
        if self.uses_openib:
            handled += self.openib.progress()
        return handled

    def wake(self) -> None:
        # with both, the wait is the openib module's (sm's arrivals wake it)
        (self.openib if self.uses_openib else self.sm).wake()

    def wait_for_activity(self) -> None:
        """Block until either BTL has something: an sm arrival or completion wakes the
        openib module's wait exactly as one of its own completions would."""
        if not self.uses_openib:
            self.sm.wait_for_activity()
            return
        if self.uses_sm:
            if self.sm.has_activity():
                return
            self.sm.req_notify(self.openib.wake)
        self.openib.wait_for_activity()


def openib_module(btl) -> OpenibModule | None:
    """The openib module of a rank's BTL (the module itself, or the one its BML routes
    to), or None when the rank reaches its peers through shared memory only: what the
    stall report and the per-QP statistics read."""
    if isinstance(btl, OpenibModule):
        return btl
    if isinstance(btl, Bml) and btl.uses_openib:
        return btl.openib
    return None
