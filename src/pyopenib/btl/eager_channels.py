"""The openib BTL's use of eager-RDMA rings (reference 4): opening a ring for a frequent
peer, writing high-priority small fragments into the peer's ring with tokens, returning
freed slots as eager-RDMA credits, polling the local rings.

A mixin of ``OpenibModule``: it uses the module's state and never stands alone."""

from __future__ import annotations

import numpy as np

from ..verbs import WrOpcode
from .eager_rdma import (
    CONNECT_BODY,
    FOOTER,
    FOOTER_LEN,
    RDMA_CREDITS_FLAG,
    EagerRdmaLocal,
)
from .endpoint import CONNECTED, Endpoint
from .frag import (
    CTL_RDMA,
    HDR_LEN,
    HEADER,
    SEND,
    TAG_IB,
    Frag,
)

__all__ = ["EagerRdmaChannels"]

_RDMA_WRITE = WrOpcode.RDMA_WRITE


class EagerRdmaChannels:
    """Eager-RDMA channels of one module (rings in ``eager_rdma``)."""

    def _take_eager_credits(self, ep: Endpoint, cap: int = 0x7FFF) -> int:
        """Eager-RDMA credits owed to the peer, flagged for a header (0 if none). Ring
        fragments carry the QP index in bits 11-14, so they cap the count at 0x7FF."""
        local = ep.eager_local
        if local is None or not local.credits:
            return 0
        c = min(local.credits, cap)
        local.credits -= c
        return c | RDMA_CREDITS_FLAG

    def _post_eager(self, ep: Endpoint, frag: Frag, sendi: bool = False) -> None:
        """Write the fragment into the peer's eager-RDMA ring (2.4 step 3): the header
        carries eager-RDMA credits (never PP credits) and the QP index in bits 11-14."""
        q = frag.qp
        frag.eager = True
        credits = self._take_eager_credits(ep, 0x7FF) | (q << 11)
        HEADER.pack_into(frag.buf, 0, frag.tag, self._take_cm_seen(ep, q), credits)
        FOOTER.pack_into(frag.buf, frag.length, (frag.length << 8) | 0xFF)
        total = frag.length + FOOTER_LEN
        remote = ep.eager_remote
        ep.eager_frags_sent += 1
        self.eager_sent[q] += 1
        self.frags_sent[q] += 1
        self.bytes_sent[q] += total
        self._post_frag(ep, q, frag, total, sendi, _RDMA_WRITE,
                        remote.next_slot_addr(total), remote.rkey)  # fmt: skip

    def _count_for_eager_rdma(self, ep: Endpoint) -> None:
        """Open an eager-RDMA ring for a peer after eager_rdma_threshold small fragments
        (at most max_eager_rdma rings per module; both devices must allow it)."""
        if (ep.eager_local is not None or not self.use_eager_rdma
                or len(self._eager_eps) >= self.max_eager_rdma):  # fmt: skip
            return
        ep.eager_recv_count += 1
        if ep.eager_recv_count != self.eager_threshold:
            return
        ring = np.zeros(self.eager_num * self.eager_slot, dtype=np.uint8)
        memory = self.register_memory(ring)
        memory.mr.hw.on_remote_write = self._wake
        ep.eager_local = EagerRdmaLocal(memory, self.eager_num, self.eager_slot)
        self._eager_eps.append(ep)
        q = self.credits_qp
        frag = self._get_frag(q, SEND)
        frag.tag = TAG_IB
        frag.high = True
        frag.ep = ep
        CONNECT_BODY.pack_into(frag.buf, HDR_LEN, CTL_RDMA, memory.mr.rkey, memory.mr.addr)
        frag.length = HDR_LEN + CONNECT_BODY.size
        self._trace("eager_rdma_offer", ep, slots=self.eager_num)
        if ep.state != CONNECTED:
            ep.pending_lazy.append(frag)
        elif not self._queue_behind_pending(ep, frag):
            self._start_send(ep, frag)

    def _poll_eager(self) -> int:
        """Poll every eager-RDMA ring's head slot (Open MPI does this first in progress)."""
        n = 0
        for ep in self._eager_eps:
            local = ep.eager_local
            if not local.pending():  # the usual answer: the head slot's flag, no call chain
                continue
            while True:
                data = local.poll()
                if data is None:
                    break
                n += 1
                self._incoming(ep, 0, data, len(data), None)
        return n
