"""The openib module's eager-RDMA channels (reference 4): opening a ring for a frequent
peer, writing high-priority small fragments into the peer's ring with tokens, returning
freed slots as eager-RDMA credits, polling the local rings.

``EagerRdmaChannels`` is a part of ``OpenibModule``; the rings themselves are
``btl/eager_rdma.py``'s."""

from __future__ import annotations

import numpy as np

from ..verbs import SendFlags, SendWR, WrOpcode
from .eager_rdma import (
    CONNECT_BODY,
    FLAG_WRITTEN,
    FOOTER,
    FOOTER_LEN,
    RDMA_CREDITS_FLAG,
    EagerRdmaLocal,
    slot_size,
)
from .endpoint import Endpoint
from .frag import CTL_RDMA, HDR_LEN, HEADER, SEND, TAG_IB, UNSIGNALED, Frag

__all__ = ["EagerRdmaChannels"]

_RDMA_WRITE = WrOpcode.RDMA_WRITE
_INLINE = SendFlags.INLINE
_pack_header = HEADER.pack_into
_pack_footer = FOOTER.pack_into


class EagerRdmaChannels:
    """The eager-RDMA rings of one module: at most ``max_rings`` local rings, each opened
    for a peer after ``threshold`` small fragments from it; ``endpoints`` the endpoints
    with a local ring, polled in the order they were opened."""

    def __init__(self, module, settings, header_len: int):
        self.module = module
        self.enabled: bool = settings.use_eager_rdma
        self.threshold: int = settings.eager_rdma_threshold
        self.max_rings: int = settings.max_eager_rdma
        self.num: int = settings.eager_rdma_num  # the MCA value plus one, as in Open MPI
        self.slot: int = slot_size(settings.eager_limit, header_len)
        self.eager_limit: int = settings.eager_limit
        self.endpoints: list[Endpoint] = []

    def take_credits(self, ep: Endpoint, cap: int = 0x7FFF) -> int:
        """Eager-RDMA credits owed to the peer, flagged for a header (0 if none). Ring
        fragments carry the QP index in bits 11-14, so they cap the count at 0x7FF."""
        local = ep.eager_local
        if local is None or not local.credits:
            return 0
        c = min(local.credits, cap)
        local.credits -= c
        return c | RDMA_CREDITS_FLAG

    def post_eager(self, ep: Endpoint, frag: Frag, sendi: bool = False) -> None:
        """Write the fragment into the peer's eager-RDMA ring (2.4 step 3): the header
        carries eager-RDMA credits (never PP credits) and the QP index in bits 11-14."""
        module = self.module
        q = frag.qp
        qs = ep.qps[q]
        frag.eager = True
        credits = self.take_credits(ep, 0x7FF) | (q << 11)
        HEADER.pack_into(frag.buf, 0, frag.tag, qs.take_cm_seen(), credits)
        FOOTER.pack_into(frag.buf, frag.length, (frag.length << 8) | 0xFF)
        total = frag.length + FOOTER_LEN
        remote = ep.eager_remote
        ep.eager_frags_sent += 1
        traffic = module.traffic[q]
        traffic.eager += 1
        traffic.frags += 1
        traffic.bytes += total
        module.post_frag(
            ep, qs, frag, total, sendi, _RDMA_WRITE, remote.next_slot_addr(total), remote.rkey
        )

    def sendi(self, ep: Endpoint, qs, tag: int, payload, n: int) -> bool:
        """``sendi``'s common case in one piece: a high-priority fragment that admission
        sends through the peer's ring (``CreditFlow.admit``'s BY_RING) and
        ``CreditFlow.send_flags`` posts unsignaled and inline — every eager MPI message
        between frequent peers but one in ``QP_TX_BATCH_COUNT``. It makes exactly the
        changes ``admit`` -> ``go`` -> ``post_eager`` -> ``post_frag`` make on that path
        (the frag taken from the free list goes back to it as the post returns, so it is
        used in place), without their calls and without a frag leaving the free list.
        Anything else — no token, fragments waiting, no free frag, the send that must
        signal — returns False having changed nothing, and ``sendi`` takes the composed
        path, which decides the same way."""
        remote = ep.eager_remote
        if remote is None or remote.tokens <= 0 or n > self.eager_limit:
            return False
        # admission's checks (behind=True), then send_flags' for an unsignaled post: a
        # WQE left after this one, the frame inline, no SRQ credit shortage, and the
        # batch count not running out on this send
        if qs.sd_wqe <= 1 or qs.wqe_count <= 1 or qs.no_wqe_pending[0] or qs.no_credits_pending[0]:
            return False
        module = self.module
        q = qs.index
        total = HDR_LEN + n + FOOTER_LEN
        if total > module.qp_inline[q] or (not qs.per_peer and qs.signal_for_credits()):
            return False
        free = module._free[q]
        if not free:
            return False
        frag = free[-1]  # get_frag's pop and _return_frag's append, which cancel out
        frag.kind = SEND
        frag.order = q
        frag.tag = tag
        frag.payload_len = n
        frag.high = True
        length = HDR_LEN + n
        frag.length = length
        buf = frag.buf
        if n:
            memoryview(buf)[HDR_LEN:length] = payload
        local = ep.eager_local
        credits = q << 11
        if local is not None and local.credits:  # take_credits(ep, 0x7FF)
            c = min(local.credits, 0x7FF)
            local.credits -= c
            credits |= c | RDMA_CREDITS_FLAG
        _pack_header(buf, 0, tag, qs.take_cm_seen(), credits)
        _pack_footer(buf, length, (length << 8) | 0xFF)
        qs.sd_wqe -= 1
        remote.tokens -= 1
        qs.wqe_count -= 1
        qs.sd_wqe_inflight += 1  # posted_unsignaled: a ring write takes no SRQ credit
        ep.eager_frags_sent += 1
        traffic = module.traffic[q]
        traffic.eager += 1
        traffic.frags += 1
        traffic.bytes += total
        traffic.unsignaled += 1
        head = remote.head + 1  # next_slot_addr
        remote.head = head % remote.num
        addr = remote.addr + head * remote.slot - total
        qs.qp.post_send(
            SendWR(UNSIGNALED, _RDMA_WRITE, frag.sges(total), _INLINE, 0, addr, remote.rkey)
        )
        return True

    def count(self, ep: Endpoint) -> None:
        """Open an eager-RDMA ring for a peer after ``threshold`` small fragments (at most
        ``max_rings`` per module; both devices must allow it) and offer it to the peer."""
        if ep.eager_local is not None or not self.enabled or len(self.endpoints) >= self.max_rings:
            return
        ep.eager_recv_count += 1
        if ep.eager_recv_count != self.threshold:
            return
        module = self.module
        ring = np.zeros(self.num * self.slot, dtype=np.uint8)
        memory = module.register_memory(ring)
        memory.mr.watch_remote_writes(module.wake)
        ep.eager_local = EagerRdmaLocal(memory, self.num, self.slot)
        self.endpoints.append(ep)
        q = module.credits.credits_qp_index
        frag = module.get_frag(q, SEND)
        frag.tag = TAG_IB
        frag.high = True
        frag.ep = ep
        CONNECT_BODY.pack_into(frag.buf, HDR_LEN, CTL_RDMA, memory.mr.rkey, memory.mr.addr)
        frag.length = HDR_LEN + CONNECT_BODY.size
        module.trace("eager_rdma_offer", ep, slots=self.num)
        module.submit(ep, frag)

    def any_pending(self) -> bool:
        """A fragment waits in one of the local rings."""
        for ep in self.endpoints:
            local = ep.eager_local
            if local.view[(local.head + 1) * local.slot - FOOTER_LEN] == FLAG_WRITTEN:
                return True  # ``local.pending()``, inlined: a blocked rank asks each time
        return False

    def poll(self) -> int:
        """Poll every eager-RDMA ring's head slot (Open MPI does this first in progress)."""
        n = 0
        incoming = self.module.incoming
        for ep in self.endpoints:
            local = ep.eager_local
            if local.view[(local.head + 1) * local.slot - FOOTER_LEN] != FLAG_WRITTEN:
                continue  # the usual answer (``local.pending()``, inlined)
            while True:
                data = local.poll()
                if data is None:
                    break
                n += 1
                incoming(ep, 0, data, len(data), None)
        return n
