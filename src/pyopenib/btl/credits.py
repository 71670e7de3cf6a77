"""Credit flow control of the openib BTL (reference 2.2-2.8, 3): the send path's order of
checks (WQE, eager-RDMA token, credit), pending lists and their draining, re-posting of
receive buffers (``post_rr`` / ``post_srr``, SRQ resizing), and explicit credit messages
with their routing policy (``btl_openib_credits_qp``: ``smallest`` or ``own``).

A mixin of ``OpenibModule``: it uses the module's state and never stands alone."""

from __future__ import annotations

from ..verbs import RecvWR, SendFlags, SendWR, Sge, WrOpcode
from .eager_rdma import (
    FOOTER,
    FOOTER_LEN,
)
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

__all__ = ["CreditFlow", "stall_report"]

_SEND = WrOpcode.SEND
_INLINE = SendFlags.INLINE
_SIGNALED = SendFlags.SIGNALED
_SIGNALED_INLINE = SendFlags.SIGNALED | SendFlags.INLINE


def stall_report(btls) -> list[str]:
    """Each rank's ``describe_stall``, in rank order, for a job that stopped with every
    rank blocked: where the BTL's fragments wait and why no credit moves (ranks that
    reach their peers only through shared memory have nothing to say)."""
    from .bml import openib_module

    lines = []
    for btl in btls:
        module = openib_module(btl)
        if module is not None:
            lines.extend(module.describe_stall())
    return lines


class CreditFlow:
    """Per-peer and SRQ credits, pending lists and explicit credit messages."""

    def describe_stall(self) -> list[str]:
        """This module's share of a hang, in the credit protocol's terms: fragments
        waiting for a connection, a WQE or a credit, and credits owed to a peer that no
        fragment carries, with the rule that holds them back (``rd_credits < rd_win``:
        no credit message is due; ``cm_sent`` at the cap ``rd_rsv - 1``: no reserved
        buffer left at the peer). Nothing listed: the BTL has nothing left to send, and
        the ranks wait for each other above it."""
        lines = []
        me = f"rank {self.rank}"
        for peer in sorted(self.endpoints):
            ep = self.endpoints[peer]
            if ep.pending_lazy:
                lines.append(
                    f"{me} -> rank {peer}: {len(ep.pending_lazy)} fragment(s) wait "
                    f"for the connection ({ep.state})"
                )
            for q, spec in enumerate(self.queues):
                where = f"{me} -> rank {peer} qp {q}"
                wqe = len(ep.no_wqe_pending[q][0]) + len(ep.no_wqe_pending[q][1])
                if wqe:
                    lines.append(
                        f"{where}: {wqe} fragment(s) wait for a send WQE (sd_wqe {ep.sd_wqe[q]})"
                    )
                if spec.kind != "P":
                    srq = len(self.srq_pending[q][0]) + len(self.srq_pending[q][1])
                    if srq:
                        lines.append(
                            f"{me} qp {q}: {srq} fragment(s) wait for an SRQ send "
                            f"credit (sd_credits {self.srq_sd_credits[q]})"
                        )
                    continue
                waiting = len(ep.no_credits_pending[q][0]) + len(ep.no_credits_pending[q][1])
                if waiting:
                    lines.append(
                        f"{where}: {waiting} fragment(s) wait for a credit "
                        f"(sd_credits {ep.sd_credits[q]})"
                    )
                owed = ep.rd_credits[q]
                if owed <= 0 or not ep.receives_posted:
                    continue
                cap = spec.rd_rsv - 1
                if owed < spec.rd_win:
                    why = f"< rd_win {spec.rd_win}: no credit message is due"
                elif ep.credit_lock[q]:
                    why = f">= rd_win {spec.rd_win}: a credit message is in flight"
                else:
                    why = f">= rd_win {spec.rd_win}, but no credit message can go"
                lines.append(
                    f"{me} owes rank {peer} {owed} credits on qp {q} {why}; "
                    f"cm cap rd_rsv-1 = {cap}, cm_sent {ep.cm_sent[q]}"
                )
        return lines

    def _cm_order(self, ep: Endpoint, q: int) -> int:
        """Where the peer sends its credit messages for q (so where I reserve buffers)."""
        return q if ep.peer_policy == "own" else self.credits_qp

    def _credit_order(self, q: int) -> int:
        """Where I send my credit messages for q: my own policy."""
        return q if self.policy == "own" else self.credits_qp

    def _queue_behind_pending(self, ep: Endpoint, frag: Frag) -> bool:
        """Keep each QP's order: queue a new fragment behind fragments of its queue and
        priority already waiting for a WQE or a credit. (Open MPI lets a new fragment
        pass queued ones when a credit is free at that instant; see compatibility.md.)"""
        q = frag.qp
        p = 0 if frag.high else 1
        if ep.no_wqe_pending[q][p]:
            ep.no_wqe_pending[q][p].append(frag)
            return True
        waiting = (
            ep.no_credits_pending[q][p] if self.queues[q].kind == "P" else self.srq_pending[q][p]
        )
        if waiting:
            waiting.append(frag)
            if self.queues[q].kind == "P":
                self._send_credits(ep, q)
            return True
        return False

    def _start_send(self, ep: Endpoint, frag: Frag) -> None:
        q = frag.qp
        p = 0 if frag.high else 1
        ep.sd_wqe[q] -= 1
        if ep.sd_wqe[q] < 0:
            ep.sd_wqe[q] += 1
            ep.no_wqe_pending[q][p].append(frag)
            return
        remote = ep.eager_remote
        if (remote is not None and frag.high and remote.tokens > 0
                and frag.payload_len <= self.eager_limit):  # fmt: skip
            remote.tokens -= 1
            self._post_eager(ep, frag)
            return
        if not self._acquire_credit(ep, q, frag, p):
            ep.sd_wqe[q] += 1
            return
        self._post_data(ep, frag)

    def _acquire_credit(self, ep: Endpoint, q: int, frag: Frag, p: int) -> bool:
        if self.queues[q].kind == "P":
            ep.sd_credits[q] -= 1
            if ep.sd_credits[q] < 0:
                ep.sd_credits[q] += 1
                ep.no_credits_pending[q][p].append(frag)
                self._send_credits(ep, q)  # the acknowledgement rule may apply now
                return False
            return True
        self.srq_sd_credits[q] -= 1
        if self.srq_sd_credits[q] < 0:
            self.srq_sd_credits[q] += 1
            self.srq_pending[q][p].append(frag)
            return False
        return True

    def _send_flags(self, ep: Endpoint, q: int, frame: int, sendi: bool) -> int:
        """IBV_SEND_INLINE when the frame fits QP q's inline size; IBV_SEND_SIGNALED
        always for ``send``, and for ``sendi`` when Open MPI's ``qp_need_signal`` says so:
        no WQE left (the last one must come back), a frame too big for inline, no SRQ
        credit left, or every QP_TX_BATCH_COUNT-th send. Every signaled post restarts
        the count (Open MPI's ``qp_reset_signal_count``)."""
        inline = frame <= self.qp_inline[q]
        if (
            sendi
            and inline
            and ep.sd_wqe[q] > 0
            and (self.queues[q].kind == "P" or self.srq_sd_credits[q] > 0)
        ):
            ep.wqe_count[q] -= 1
            if ep.wqe_count[q] > 0:
                return _INLINE
        ep.wqe_count[q] = QP_TX_BATCH_COUNT
        return _SIGNALED_INLINE if inline else _SIGNALED

    def _carry_unsignaled(self, ep: Endpoint, q: int, frag: Frag) -> None:
        """A signaled WR on QP q carries the WQEs (and SRQ credits) of the unsignaled
        sends posted on q before it: its completion gives them back (Open MPI's
        ``qp_inflight_wqe_to_frag``)."""
        frag.unsignaled = ep.sd_wqe_inflight[q]
        frag.unsignaled_srq = ep.srq_credits_inflight[q]
        ep.sd_wqe_inflight[q] = ep.srq_credits_inflight[q] = 0

    def _give_back_unsignaled(self, ep: Endpoint, q: int, frag: Frag, own_srq: bool) -> int:
        """At a signaled completion on QP q: the WQEs its frag carried come back, and on
        an SRQ queue the SRQ credits they took (plus the frag's own when ``own_srq``),
        draining the SRQ pending list. Returns the WQEs given back."""
        n = frag.unsignaled
        credits = frag.unsignaled_srq + own_srq
        frag.unsignaled = frag.unsignaled_srq = 0
        ep.sd_wqe[q] += n
        if credits and self.queues[q].kind == "S":
            self.srq_sd_credits[q] += credits
            self._progress_srq_pending(q)
        return n

    def _post_data(self, ep: Endpoint, frag: Frag, sendi: bool = False) -> None:
        """Fill the header (piggybacked credits, cm_seen) and post the SEND (2.4 step 5).
        Eager-RDMA credits take the header when any are owed; else the PP credits of q."""
        q = frag.qp
        credits = self._take_eager_credits(ep)
        if self.queues[q].kind == "P":
            ep.data_sent[q] += 1
        if not credits and self.queues[q].kind == "P":
            credits = ep.rd_credits[q]
            ep.rd_credits[q] = 0
            if credits:
                ep.piggybacked[q] += credits
                ep.credits_sent[q] += credits
        cm_seen = self._take_cm_seen(ep, q)
        HEADER.pack_into(frag.buf, 0, frag.tag, cm_seen, credits)
        self.frags_sent[q] += 1
        self.bytes_sent[q] += frag.length
        self._post_frag(ep, q, frag, frag.length, sendi, _SEND)

    def _take_cm_seen(self, ep: Endpoint, q: int) -> int:
        c = ep.cm_return[q]
        if c <= 0:
            return 0
        if c > 255:
            ep.cm_return[q] = c - 255
            return 255
        ep.cm_return[q] = 0
        return c

    def _post_rr(self, ep: Endpoint, q: int) -> None:
        """Re-post receive buffers of q (2.2): data buffers once rd_posted <= rd_low, and
        the credit-message reserve where the peer sends q's credit messages."""
        spec = self.queues[q]
        if ep.rd_posted[q] <= spec.rd_low:
            n = spec.rd_num - ep.rd_posted[q]
            for _ in range(n):
                self._post_recv_frag(ep, q, self._get_frag(q, RECV))
            ep.rd_posted[q] += n
            ep.rd_credits[q] += n
            if n:
                self._trace("post_rr", ep, qp=q, posted=n, rd_credits=ep.rd_credits[q])
        if ep.cm_received[q] >= (spec.rd_rsv >> 2):
            m = ep.cm_received[q]
            order = self._cm_order(ep, q)
            for _ in range(m):
                self._post_recv_frag(ep, order, self._get_frag(order, RECV))
            ep.cm_return[q] += m
            ep.cm_received[q] -= m

    def _post_srr(self, q: int) -> None:
        """Re-post the SRQ of queue q up to rd_curr_num once at most rd_low_local remain;
        after a post, arm the SRQ limit if a resize is pending (reference 3)."""
        if self.srq_rd_posted[q] > self.srq_rd_low_local[q]:
            return
        srq = self.srqs[q]
        n = self.srq_rd_curr_num[q] - self.srq_rd_posted[q]
        for _ in range(n):
            frag = self._get_frag(q, RECV)
            srq.post_recv(RecvWR(frag, (Sge(frag.mr.addr, frag.buf.nbytes, frag.mr.lkey),)))
        self.srq_rd_posted[q] += n
        if self.srq_limit_flag[q]:
            self.srq_limit_flag[q] = False
            srq.modify(srq_limit=self.queues[q].srq_limit)

    def _srq_limit_reached(self, q: int) -> None:
        spec = self.queues[q]
        self.srq_rd_curr_num[q] *= 2
        if self.srq_rd_curr_num[q] >= spec.rd_num:
            self.srq_rd_curr_num[q] = spec.rd_num
            self.srq_rd_low_local[q] = spec.rd_low
        else:
            self.srq_rd_low_local[q] *= 2
            self.srq_limit_flag[q] = True
        self._trace("srq_resize", None, qp=q, rd_curr_num=self.srq_rd_curr_num[q])
        self._post_srr(q)

    def _send_credits(self, ep: Endpoint, q: int) -> None:
        """2.7: explicit credits when rd_win PP credits or more than the eager ring's
        rd_win eager-RDMA credits are owed and no fragment carried them."""
        if not ep.receives_posted:
            return  # rd_credits still counts from -rd_num (Open MPI's posted-recvs guard)
        due = False
        ack_only = False
        spec = self.queues[q]
        if spec.kind == "P":
            due = ep.rd_credits[q] >= spec.rd_win
            if not due and self._peer_reserve_exhausted(ep, q):
                due = ack_only = True
        else:
            q = self.credits_qp
        local = ep.eager_local
        if local is not None and local.credits > local.rd_win:
            due = True
            ack_only = False
        if due and not ep.credit_lock[q]:
            ep.credit_lock[q] = True
            self._send_credit_msg(ep, q, ack_only)

    def _peer_reserve_exhausted(self, ep: Endpoint, q: int) -> bool:
        """Our rule, not Open MPI's: the peer has used every reserved buffer we posted
        for its credit messages on q (it can send no more until cm_seen comes back), and
        our own fragments for q wait for credits, so none will carry cm_seen. Without an
        explicit acknowledgement a peer that spent its credit messages on eager-RDMA
        credits alone can never send the per-peer credits it owes us: both wait forever
        (found by the hypothesis workloads; docs/compatibility.md)."""
        spec = self.queues[q]
        used = ep.cm_return[q] + ep.cm_received[q]
        if ep.cm_return[q] <= 0 or used < max(1, spec.rd_rsv - 1):
            return False
        pending = ep.no_credits_pending[q]
        return bool(pending[0] or pending[1])

    def _send_credit_msg(self, ep: Endpoint, q: int, ack_only: bool = False) -> None:
        spec = self.queues[q]
        remote = ep.eager_remote
        by_rdma = remote is not None and remote.tokens > 0
        if by_rdma:
            remote.tokens -= 1  # a ring slot instead of a reserved receive buffer
        elif spec.kind == "P":
            # Open MPI keeps one reserved buffer spare (at most rd_rsv - 1 outstanding);
            # our acknowledgement-only message may use it, so two peers that both wait
            # for cm_seen can still acknowledge each other (docs/compatibility.md).
            cap = spec.rd_rsv if ack_only else spec.rd_rsv - 1
            ep.cm_sent[q] += 1
            ep.cm_msgs_sent[q] += 1
            if ep.cm_sent[q] > cap:
                # no reserved buffer left at the peer: give up until a cm_seen comes back
                ep.cm_sent[q] -= 1
                ep.cm_msgs_sent[q] -= 1
                ep.credit_lock[q] = False
                self._trace("credit_msg_deferred", ep, qp=q, cm_sent=ep.cm_sent[q])
                return
        order = self._credit_order(q)
        ep.wqe_count[q] = QP_TX_BATCH_COUNT  # Open MPI restarts the credited queue's count
        frag = ep.credit_frag[q]
        if frag is None:
            frag = self._get_frag(order, CREDIT)
            frag.credit_qp = q
            ep.credit_frag[q] = frag
        credits = 0
        if spec.kind == "P":
            credits = ep.rd_credits[q]
            ep.rd_credits[q] = 0
            ep.credits_sent[q] += credits
        local = ep.eager_local
        rdma_credits = 0
        if local is not None:
            rdma_credits, local.credits = local.credits, 0
        cm_seen = self._take_cm_seen(ep, q)
        HEADER.pack_into(frag.buf, 0, TAG_IB, cm_seen, credits)
        CREDIT_BODY.pack_into(frag.buf, HDR_LEN, CTL_CREDITS, q, rdma_credits)
        frag.length = HDR_LEN + CTL_LEN
        ep.credit_msgs_sent[q] += 1
        self.credit_msgs_on[order] += 1
        self._trace("credit_msg", ep, qp=q, on_qp=order, credits=credits, cm_seen=cm_seen,
                    rdma_credits=rdma_credits, by_rdma=by_rdma, wr_id=frag.trace_id,
                    qpn=ep.qps[order].qp_num)  # fmt: skip
        if by_rdma:
            FOOTER.pack_into(frag.buf, frag.length, (frag.length << 8) | 0xFF)
            total = frag.length + FOOTER_LEN
            frag.order = order
            frag.ep = ep
            flags = _SIGNALED_INLINE if total <= self.qp_inline[order] else _SIGNALED
            self._carry_unsignaled(ep, order, frag)
            wr = SendWR(frag, WrOpcode.RDMA_WRITE, (Sge(frag.mr.addr, total, frag.mr.lkey),),
                        flags, remote_addr=remote.next_slot_addr(total),
                        rkey=remote.rkey)  # fmt: skip
            ep.qps[order].post_send(wr)
        else:
            self._post_send_frag(ep, order, frag, WrOpcode.SEND)

    def _credit_frag_done(self, ep: Endpoint, frag: Frag) -> None:
        q = frag.credit_qp
        local = ep.eager_local
        if (self.queues[q].kind == "P" and ep.rd_credits[q] >= self.queues[q].rd_win) or (
            local is not None and local.credits > local.rd_win
        ):
            self._send_credit_msg(ep, q)
            return
        ep.credit_lock[q] = False
        self._send_credits(ep, q)

    def _progress_wqe_pending(self, ep: Endpoint, q: int) -> None:
        """2.5: a WQE came back on q: fragments waiting for one (high priority first),
        then pending RDMA puts/gets (they use the last queue)."""
        for p in (0, 1):
            pending = ep.no_wqe_pending[q][p]
            while pending and ep.sd_wqe[q] > 0:
                self._start_send(ep, pending.popleft())
        if q == len(self.queues) - 1:
            rdma = ep.pending_rdma
            while rdma and ep.sd_wqe[q] > 0:
                ep.sd_wqe[q] -= 1
                self._post_rdma(ep, q, rdma.popleft())

    def _progress_no_credits_pending(self, ep: Endpoint) -> None:
        """2.5: retry each waiting fragment once while a PP credit or an eager-RDMA token
        is available (high priority first); failures go back to the tail."""
        remote = ep.eager_remote
        for q, spec in enumerate(self.queues):
            for p in (0, 1):
                pending = ep.no_credits_pending[q][p]
                if not pending:
                    continue
                for _ in range(len(pending)):
                    tokens = remote.tokens if remote is not None else 0
                    if spec.kind == "P" and ep.sd_credits[q] <= 0 and tokens <= 0:
                        break
                    self._start_send(ep, pending.popleft())

    def _progress_srq_pending(self, q: int) -> None:
        for p in (0, 1):
            pending = self.srq_pending[q][p]
            while pending and self.srq_sd_credits[q] > 0:
                frag = pending.popleft()
                self._start_send(frag.ep, frag)
