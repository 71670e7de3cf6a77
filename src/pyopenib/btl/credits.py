"""Credit flow control of the openib BTL (reference 2.2-2.8, 3): the one admission path of
a send (WQE, eager-RDMA token, credit), the pending lists and their draining, re-posting
of receive buffers (``post_rr`` / ``post_srr``, SRQ resizing), and explicit credit
messages with their routing policy (``btl_openib_credits_qp``: ``smallest`` or ``own``).

``CreditFlow`` is a part of ``OpenibModule``: it owns the rules; the counters they move
are the per-QP states' (``btl/endpoint.py``) and the SRQs' (``btl/srq.py``)."""

from __future__ import annotations

from enum import IntEnum

from ..config import CreditsPolicy
from ..verbs import RecvWR, Sge, WrOpcode
from .eager_rdma import FOOTER, FOOTER_LEN
from .endpoint import Endpoint
from .frag import (
    CREDIT,
    CREDIT_BODY,
    CTL_CREDITS,
    CTL_LEN,
    HDR_LEN,
    HEADER,
    QP_TX_BATCH_COUNT,
    RECV,
    TAG_IB,
    Frag,
)
from .srq import SharedRq

__all__ = ["Admission", "CreditFlow"]

_SEND = WrOpcode.SEND
_RDMA_WRITE = WrOpcode.RDMA_WRITE


class Admission(IntEnum):
    """What a fragment's send may do now (Open MPI's order of checks in ``btl_send``)."""

    WAIT_WQE = 0
    """No send WQE free on its QP, or fragments of its priority already wait for one."""
    WAIT_CREDIT = 1
    """No credit (per-peer or SRQ), or fragments of its priority already wait for one."""
    BY_RING = 2
    """Go now through the peer's eager-RDMA ring (a token, no credit)."""
    BY_CREDIT = 3
    """Go now as a SEND on its QP, taking a credit."""


_WAIT_WQE, _WAIT_CREDIT, _BY_RING, _BY_CREDIT = Admission  # bound once: the hot path compares


class CreditFlow:
    """Per-peer and SRQ credits, pending lists and explicit credit messages of one module.

    ``policy`` is this process's credits policy (where *I* send credit messages);
    ``credits_qp`` the QP that carries them under ``smallest``; ``srqs`` the module-wide
    state of each S queue (None for P queues)."""

    def __init__(self, module, settings, srqs: list[SharedRq | None]):
        self.module = module
        self.queues = settings.receive_queues
        self.policy: CreditsPolicy = settings.credits_policy
        self.credits_qp_index: int = settings.credits_qp_index
        self.eager_limit: int = settings.eager_limit
        self.srqs = srqs
        self.per_peer_queues = tuple(i for i, q in enumerate(self.queues) if q.kind == "P")
        self.rdma_qp = len(self.queues) - 1  # Open MPI's rdma_qp: the last queue

    # -- where credit messages travel ----------------------------------------------------
    def cm_order(self, ep: Endpoint, q: int) -> int:
        """Where the peer sends its credit messages for q (so where I reserve buffers)."""
        return q if ep.peer_policy == CreditsPolicy.OWN else self.credits_qp_index

    def credit_order(self, q: int) -> int:
        """Where I send my credit messages for q: my own policy."""
        return q if self.policy == CreditsPolicy.OWN else self.credits_qp_index

    # -- admission: the one path of send and sendi ---------------------------------------
    def admit(self, ep: Endpoint, qs, high: bool, n: int, behind: bool) -> Admission:
        """Decide, changing nothing, what a fragment of ``n`` payload bytes for QP state
        ``qs`` may do. ``behind``: a new fragment keeps its QP's order, so it waits behind
        fragments of its priority already waiting (Open MPI lets a new fragment pass
        queued ones when a credit is free at that instant; see compatibility.md); a
        fragment leaving a pending list does not look behind itself."""
        p = 0 if high else 1
        if behind:
            if qs.no_wqe_pending[p]:
                return _WAIT_WQE
            if qs.no_credits_pending[p]:
                return _WAIT_CREDIT
        if qs.sd_wqe <= 0:
            return _WAIT_WQE
        remote = ep.eager_remote
        if high and remote is not None and remote.tokens > 0 and n <= self.eager_limit:
            return _BY_RING
        if qs.has_credit():
            return _BY_CREDIT
        return _WAIT_CREDIT

    def go(self, ep: Endpoint, qs, frag: Frag, verdict: Admission, sendi: bool) -> None:
        """Take what an admitted fragment needs (a WQE, then a token or a credit) and post
        it (2.4 steps 3 and 5)."""
        qs.sd_wqe -= 1  # acquire_wqe, known to succeed: admission found one free
        if verdict is _BY_RING:
            ep.eager_remote.tokens -= 1
            self.module.eager.post_eager(ep, frag, sendi)
        else:
            qs.acquire_credit()
            self.post_data(ep, qs, frag, sendi)

    def start_send(self, ep: Endpoint, frag: Frag, behind: bool = False) -> None:
        """Send a fragment on a connected endpoint, or queue it where its admission says."""
        qs = ep.qps[frag.qp]
        verdict = self.admit(ep, qs, frag.high, frag.payload_len, behind)
        if verdict is _BY_CREDIT or verdict is _BY_RING:
            self.go(ep, qs, frag, verdict, False)
        elif verdict is _WAIT_WQE:
            qs.wait_for_wqe(frag)
        else:
            qs.wait_for_credit(frag)
            if qs.per_peer:
                self.credits_due(ep, qs)  # the acknowledgement rule may apply now

    # -- posting a data fragment ---------------------------------------------------------
    def send_flags(self, qs, frame: int, sendi: bool) -> int:
        """IBV_SEND_INLINE when the frame fits the QP's inline size; IBV_SEND_SIGNALED
        always for ``send``, and for ``sendi`` when Open MPI's ``qp_need_signal`` says so:
        no WQE left (the last one must come back), a frame too big for inline, no SRQ
        credit left, or every QP_TX_BATCH_COUNT-th send. Every signaled post restarts
        the count (Open MPI's ``qp_reset_signal_count``)."""
        module = self.module
        inline = frame <= module.qp_inline[qs.index]
        if sendi and inline and qs.sd_wqe > 0 and not qs.signal_for_credits():
            qs.wqe_count -= 1
            if qs.wqe_count > 0:
                return module.INLINE
        qs.wqe_count = QP_TX_BATCH_COUNT  # qp_reset_signal_count
        return module.SIGNALED_INLINE if inline else module.SIGNALED

    def post_data(self, ep: Endpoint, qs, frag: Frag, sendi: bool = False) -> None:
        """Fill the header (piggybacked credits, cm_seen) and post the SEND (2.4 step 5).
        Eager-RDMA credits take the header when any are owed; else the PP credits of q."""
        q = qs.index
        module = self.module
        credits = qs.data_posted(module.eager.take_credits(ep))
        HEADER.pack_into(frag.buf, 0, frag.tag, qs.take_cm_seen(), credits)
        traffic = module.traffic[q]
        traffic.frags += 1
        traffic.bytes += frag.length
        module.post_frag(ep, qs, frag, frag.length, sendi, _SEND)

    # -- completions give back -----------------------------------------------------------
    def give_back_unsignaled(self, qs, frag: Frag, own_srq: bool) -> int:
        """At a signaled completion on the QP: the WQEs its frag carried come back, and on
        an SRQ queue the SRQ credits they took (plus the frag's own when ``own_srq``),
        draining the SRQ pending list. Returns the WQEs given back."""
        n = frag.unsignaled
        credits = frag.unsignaled_srq + own_srq
        frag.unsignaled = frag.unsignaled_srq = 0
        qs.put_wqe(n)
        if credits and qs.return_srq_credits(credits):
            self.progress_srq_pending(qs.srq)
        return n

    # -- draining the pending lists (2.5) ------------------------------------------------
    def progress_wqe_pending(self, ep: Endpoint, qs) -> None:
        """A WQE came back on the QP: fragments waiting for one (high priority first),
        then pending RDMA puts/gets (they use the last queue)."""
        for pending in qs.no_wqe_pending:
            while pending and qs.sd_wqe > 0:
                self.start_send(ep, pending.popleft())
        if qs.index == self.rdma_qp:
            rdma = ep.pending_rdma
            while rdma and qs.acquire_wqe():
                self.module.post_rdma(ep, qs, rdma.popleft())

    def progress_no_credits_pending(self, ep: Endpoint) -> None:
        """Retry each fragment waiting for a per-peer credit once while a credit or an
        eager-RDMA token is available (high priority first); failures go back to the
        tail."""
        remote = ep.eager_remote
        for q in self.per_peer_queues:
            qs = ep.qps[q]
            for pending in qs.no_credits_pending:
                if not pending:
                    continue
                for _ in range(len(pending)):
                    tokens = remote.tokens if remote is not None else 0
                    if qs.sd_credits <= 0 and tokens <= 0:
                        break
                    self.start_send(ep, pending.popleft())

    def progress_srq_pending(self, srq: SharedRq) -> None:
        for pending in srq.pending:
            while pending and srq.sd_credits > 0:
                frag = pending.popleft()
                self.start_send(frag.ep, frag)

    # -- receive buffers (2.2, 3) --------------------------------------------------------
    def post_rr(self, ep: Endpoint, qs) -> None:
        """Re-post receive buffers of a P queue (2.2): data buffers once rd_posted <=
        rd_low, and the credit-message reserve where the peer sends its credit messages."""
        module = self.module
        q = qs.index
        n = qs.buffers_to_repost()
        if n:
            host = module.host
            # the host finishes what it was doing, then builds the n receive WRs: the
            # re-post reaches the NIC only after that time (the race's lever)
            host.spend(host.post_recv * n)
            for _ in range(n):
                module.post_recv_frag(ep, q, module.get_frag(q, RECV))
            qs.reposted(n)
            module.trace("post_rr", ep, qp=q, posted=n, rd_credits=qs.rd_credits)
        m = qs.reserve_to_repost()
        if m:
            order = self.cm_order(ep, q)
            for _ in range(m):
                module.post_recv_frag(ep, order, module.get_frag(order, RECV))
            qs.reserve_reposted(m)

    def post_srr(self, srq: SharedRq, at_start: bool = False) -> None:
        """Re-post the SRQ up to rd_curr_num once at most rd_low_local remain; after a
        post, arm the SRQ limit if a resize is pending (reference 3).

        ``at_start``: the module's first posts, its own process's MPI_Init work. Their
        cost is owed to that process's clock, never slept by whoever builds the module:
        a parent's ``MPI_Comm_spawn`` builds its children's modules, and sleeping there
        would let a second spawn start in the middle of the first."""
        if not srq.repost_due():
            return
        n = srq.rd_curr_num - srq.rd_posted
        module = self.module
        host = module.host
        if at_start:
            host.charge(host.post_recv * n)
        else:
            host.spend(host.post_recv * n)
        q = srq.index
        verbs_srq = srq.srq
        for _ in range(n):
            frag = module.get_frag(q, RECV)
            verbs_srq.post_recv(RecvWR(frag, (Sge(frag.mr.addr, frag.capacity, frag.mr.lkey),)))
        srq.reposted(n)

    def srq_limit_reached(self, srq: SharedRq) -> None:
        srq.limit_reached()
        self.module.trace("srq_resize", None, qp=srq.index, rd_curr_num=srq.rd_curr_num)
        self.post_srr(srq)

    # -- explicit credit messages (2.7) --------------------------------------------------
    def send_credits(self, ep: Endpoint, q: int) -> None:
        """Explicit credits when rd_win PP credits or more than the eager ring's rd_win
        eager-RDMA credits are owed and no fragment carried them. An S queue's credits
        come back with completions: only eager-RDMA credits can be due, on credits_qp."""
        self.credits_due(ep, ep.qps[q])

    def credits_due(self, ep: Endpoint, qs) -> None:
        """``send_credits`` for QP state ``qs``."""
        if not ep.receives_posted:
            return  # rd_credits still counts from -rd_num (Open MPI's posted-recvs guard)
        due = qs.credit_message_due()
        ack_only = False
        if not due and qs.peer_reserve_exhausted():
            due = ack_only = True
        qs = qs.carrier
        local = ep.eager_local
        if local is not None and local.credits > local.rd_win:
            due = True
            ack_only = False
        if due and not qs.credit_lock:
            qs.credit_lock = True
            self.send_credit_msg(ep, qs, ack_only)

    def send_credit_msg(self, ep: Endpoint, qs, ack_only: bool = False) -> None:
        module = self.module
        q = qs.index
        remote = ep.eager_remote
        by_rdma = remote is not None and remote.tokens > 0
        if by_rdma:
            remote.tokens -= 1  # a ring slot instead of a reserved receive buffer
        elif not qs.reserve_credit_message(ack_only):
            # no reserved buffer left at the peer: give up until a cm_seen comes back
            qs.credit_lock = False
            module.trace("credit_msg_deferred", ep, qp=q, cm_sent=qs.cm_sent)
            return
        order = self.credit_order(q)
        host = module.host
        host.owed += host.btl_send  # the credit frag's descriptor work
        qs.reset_signal_count()  # Open MPI restarts the credited queue's count
        frag = qs.credit_frag
        if frag is None:
            frag = module.get_frag(order, CREDIT)
            frag.credit_qp = q
            qs.credit_frag = frag
        credits = qs.take_credits_owed()
        local = ep.eager_local
        rdma_credits = 0
        if local is not None:
            rdma_credits, local.credits = local.credits, 0
        cm_seen = qs.take_cm_seen()
        HEADER.pack_into(frag.buf, 0, TAG_IB, cm_seen, credits)
        CREDIT_BODY.pack_into(frag.buf, HDR_LEN, CTL_CREDITS, q, rdma_credits)
        frag.length = HDR_LEN + CTL_LEN
        qs.credit_msgs_sent += 1
        module.traffic[order].credit_msgs += 1
        on = ep.qps[order]
        module.trace(
            "credit_msg",
            ep,
            qp=q,
            on_qp=order,
            credits=credits,
            cm_seen=cm_seen,
            rdma_credits=rdma_credits,
            by_rdma=by_rdma,
            wr_id=frag.trace_id,
            qpn=on.qp.qp_num,
        )
        if by_rdma:
            FOOTER.pack_into(frag.buf, frag.length, (frag.length << 8) | 0xFF)
            total = frag.length + FOOTER_LEN
            module.post_control(
                ep, on, frag, total, _RDMA_WRITE, remote.next_slot_addr(total), remote.rkey
            )
        else:
            module.post_control(ep, on, frag, frag.length, _SEND)

    def credit_frag_done(self, ep: Endpoint, frag: Frag) -> None:
        """A credit message's send completion: another one at once if enough is owed
        again, else release the lock and let the usual rule decide."""
        qs = ep.qps[frag.credit_qp]
        local = ep.eager_local
        if qs.credit_message_due() or (local is not None and local.credits > local.rd_win):
            self.send_credit_msg(ep, qs)
            return
        qs.credit_lock = False
        self.send_credits(ep, qs.index)

    # -- a hang, explained ---------------------------------------------------------------
    def describe_stall(self, rank: int, endpoints: dict) -> list[str]:
        """This module's share of a hang, in the credit protocol's terms: fragments
        waiting for a connection, a WQE or a credit, and credits owed to a peer that no
        fragment carries, with the rule that holds them back (``rd_credits < rd_win``:
        no credit message is due; ``cm_sent`` at the cap ``rd_rsv - 1``: no reserved
        buffer left at the peer). Nothing listed: the BTL has nothing left to send, and
        the ranks wait for each other above it."""
        lines = []
        me = f"rank {rank}"
        for peer in sorted(endpoints):
            ep = endpoints[peer]
            if ep.pending_lazy:
                lines.append(
                    f"{me} -> rank {peer}: {len(ep.pending_lazy)} fragment(s) wait "
                    f"for the connection ({ep.state})"
                )
            for qs in ep.qps:
                lines.extend(qs.stall_lines(me, peer, ep.receives_posted))
        return lines

    def check(self, rank: int, endpoints: dict) -> None:
        """Every credit invariant of the module between progress calls
        (``InvariantViolation``): the SRQs' module-wide credits, then each endpoint's."""
        for srq in self.srqs:
            if srq is not None:
                held = sum(ep.qps[srq.index].srq_credits_inflight for ep in endpoints.values())
                srq.check(rank, held)
        for ep in endpoints.values():
            ep.check()
