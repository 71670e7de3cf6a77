"""Connection setup of an openib endpoint: QPs sized per receive queue (reference 2.9),
the out-of-band exchange of QP numbers and credit policies (Open MPI's CPC), crossing
requests, and the CTS handshake (the initiator speaks first, as iWARP requires).

A mixin of ``OpenibModule``: it uses the module's state and never stands alone."""

from __future__ import annotations

from collections import deque

from ..config.limits import POLICIES, qp_depths
from ..verbs import QpState, WrOpcode
from .endpoint import CONNECTED, CONNECTING, Endpoint
from .frag import (
    CREDIT_BODY,
    CTL_CTS,
    CTL_LEN,
    CTS,
    HDR_LEN,
    HEADER,
    QP_TX_BATCH_COUNT,
    TAG_IB,
)

__all__ = ["ConnectionSetup"]


class ConnectionSetup:
    """Lazy connection on first send: create QPs, exchange them out of band, move them
    to RTR/RTS, post receives, then the CTS handshake."""

    def _qp_depths(self, q: int, peer_policy: str | None):
        """max_recv_wr / max_send_wr of queue q (config's ``qp_depths``, which the
        up-front device check uses too). ``peer_policy`` None (the initiator does not
        know it yet): room for either."""
        peers = POLICIES if peer_policy is None else (peer_policy,)
        both = [qp_depths(self.queues, self.credits_qp, q, self.policy, p) for p in peers]
        return max(r for r, _ in both), max(s for _, s in both)

    def _create_qps(self, ep: Endpoint, peer_policy: str | None) -> list[int]:
        for q in range(len(self.queues)):
            recv, send = self._qp_depths(q, peer_policy)
            qp = self.pd.create_qp(self.cq, self.cq, send, max(recv, 1), self.qp_inline[q],
                                   self.srqs[q])  # fmt: skip
            qp.modify(QpState.INIT)
            ep.qps[q] = qp
            self._ep_by_qpn[qp.qp_num] = (ep, q)
        if peer_policy is not None:
            ep.peer_policy = peer_policy
        return [qp.qp_num for qp in ep.qps]

    def _ready(self, ep: Endpoint, remote_lid: int, remote_qpns: list[int]) -> None:
        s = self.settings
        ep.remote_lid = remote_lid
        ep.remote_qpns = remote_qpns
        for q, qp in enumerate(ep.qps):
            pp = self.queues[q].kind == "P"
            qp.modify(QpState.RTR, dest_lid=remote_lid, dest_qp_num=remote_qpns[q],
                      min_rnr_timer=s.ib_min_rnr_timer, path_mtu=min(s.mtu, qp.hw.path_mtu))  # fmt: skip
            # Per-peer QPs use rnr_retry 0: software flow control promises an RNR never
            # happens, so one is a bug to expose (Open MPI, commit 0202981e1d).
            qp.modify(QpState.RTS, rnr_retry=0 if pp else s.ib_rnr_retry,
                      retry_cnt=s.ib_retry_count, timeout=s.ib_timeout)  # fmt: skip
        for q, spec in enumerate(self.queues):
            if spec.kind == "P":
                self._post_rr(ep, q)
        ep.receives_posted = True

    def _connect(self, ep: Endpoint) -> None:
        """Initiator side: create QPs, send our QP numbers to the peer out of band."""
        ep.state = CONNECTING
        self._trace("connect_start", ep)
        qpns = self._create_qps(ep, None)
        self._post_cts_buffer(ep)
        self.oob.send(self.rank, ep.peer, "connect_request",
                      (self.context.nic.lid, qpns, self.policy, self.use_eager_rdma))  # fmt: skip

    def oob_receive(self, src: int, kind: str, body) -> None:
        """Out-of-band connection messages (the CPC), delivered by the job's OOB channel."""
        ep = self._endpoint(src)
        if kind == "connect_request":
            lid, qpns, peer_policy, _peer_eager = body
            if ep.state == CONNECTING:
                # crossing requests: the higher rank's request wins (Open MPI's rdmacm
                # lets the side with the larger address initiate)
                if self.rank > src:
                    return
                self._teardown_qps(ep)
            ep.state = CONNECTING
            my_qpns = self._create_qps(ep, peer_policy)
            self._post_cts_buffer(ep)
            self._ready(ep, lid, qpns)
            self.oob.send(self.rank, src, "connect_reply",
                          (self.context.nic.lid, my_qpns, self.policy, self.use_eager_rdma))  # fmt: skip
        elif kind == "connect_reply":
            lid, qpns, peer_policy, _peer_eager = body
            if ep.state != CONNECTING:
                return
            ep.peer_policy = peer_policy
            self._ready(ep, lid, qpns)
            if self._uses_cts:
                # the initiator speaks first (iWARP requires it; harmless on IB)
                self._send_cts(ep)
            else:
                self._connected(ep)
                self.oob.send(self.rank, src, "connect_ready", None)
        elif kind == "connect_ready":
            if ep.state == CONNECTING:
                self._connected(ep)
        self._wake()

    def _teardown_qps(self, ep: Endpoint) -> None:
        """Drop the QPs of a request that lost a crossing: to ERROR, then destroyed.
        They never left INIT (our request was ignored, so no reply moved them on), and
        the only work request on them is the CTS buffer on credits_qp: a QP without it
        is destroyed at once, the credits QP once that buffer's flush completion is
        reaped (``_retired_flushed``), so the buffer comes back to its free list."""
        for q, qp in enumerate(ep.qps):
            if qp is None:
                continue
            self._ep_by_qpn.pop(qp.qp_num, None)
            qp.modify(QpState.ERROR)
            if self._uses_cts and q == self.credits_qp:
                self._retired_qpns[qp.qp_num] = qp
            else:
                qp.destroy()
        ep.qps = [None] * len(self.queues)

    def _retired_flushed(self, qp_num: int) -> None:
        """The flush completion of a retired QP's CTS buffer was reaped: nothing is left
        on the QP, destroy it."""
        self._retired_qpns.pop(qp_num).destroy()

    def _post_cts_buffer(self, ep: Endpoint) -> None:
        if not self._uses_cts:
            return
        frag = self._get_frag(self.credits_qp, CTS)
        frag.ep = ep
        frag.order = self.credits_qp
        self._post_recv_frag(ep, self.credits_qp, frag)

    def _send_cts(self, ep: Endpoint) -> None:
        q = self.credits_qp
        frag = self._get_frag(q, CTS)
        frag.ep = ep
        HEADER.pack_into(frag.buf, 0, TAG_IB, 0, 0)
        CREDIT_BODY.pack_into(frag.buf, HDR_LEN, CTL_CTS, q, 0)
        frag.length = HDR_LEN + CTL_LEN
        ep.cts_sent = True
        ep.wqe_count[q] = QP_TX_BATCH_COUNT  # a signaled post restarts sendi's count
        self._post_send_frag(ep, q, frag, WrOpcode.SEND)
        self._trace("cts_sent", ep, wr_id=frag.trace_id, qpn=ep.qps[q].qp_num)

    def _connected(self, ep: Endpoint) -> None:
        ep.state = CONNECTED
        self._trace("connected", ep)
        lazy, ep.pending_lazy = ep.pending_lazy, deque()
        for frag in lazy:
            self._start_send(ep, frag)
        for q in range(len(self.queues)):
            self._send_credits(ep, q)  # anything owed while the handshake finished
