"""Connection setup of an openib endpoint (Open MPI's CPC): QPs sized per receive queue
(reference 2.9), the out-of-band exchange of QP numbers, crossing requests, and the CTS
handshake (the initiator speaks first, as iWARP requires).

``ConnectionSetup`` is a part of ``OpenibModule``: it owns the endpoints' wire-up and
the QPs it retires. The peer's credits policy is known before any QP exists: every
process publishes its settings on the job's out-of-band channel before wire-up (Open
MPI's modex), so both sides size their QPs for the policies in force."""

from __future__ import annotations

from ..config.limits import qp_depths
from ..verbs import QpState, WrOpcode
from .endpoint import Endpoint, EndpointState
from .frag import CREDIT_BODY, CTL_CTS, CTL_LEN, CTS, HDR_LEN, HEADER, TAG_IB

__all__ = ["ConnectionSetup"]

_CLOSED, _CONNECTING, _CONNECTED = (
    EndpointState.CLOSED,
    EndpointState.CONNECTING,
    EndpointState.CONNECTED,
)


class ConnectionSetup:
    """Lazy connection on first send: create QPs, exchange them out of band, move them
    to RTR/RTS, post receives, then the CTS handshake.

    ``uses_cts``: the CTS handshake (Open MPI's rdmacm CPC) needs a P queue to carry it;
    all-SRQ configurations connect with a three-way out-of-band exchange instead (udcm).
    ``retired`` holds the QPs of requests that lost a crossing until their flush
    completes."""

    def __init__(self, module, settings, lid: int):
        self.module = module
        self.settings = settings
        self.queues = settings.receive_queues
        self.lid = lid
        self.credits_qp_index: int = settings.credits_qp_index
        self.uses_cts = self.queues[self.credits_qp_index].kind == "P"
        self.retired: dict = {}  # qp_num -> a lost crossing's QP awaiting its flush
        self._depths: dict[tuple[int, str], tuple[int, int]] = {}
        """(queue, the peer's policy) -> ``qp_depths``: the same few answers for every
        endpoint, asked four times a connection."""

    def _create_qps(self, ep: Endpoint) -> list[int]:
        module = self.module
        policy = module.credits.policy
        depths = self._depths
        for qs in ep.qps:
            q = qs.index
            known = depths.get((q, ep.peer_policy))
            if known is None:
                known = depths[q, ep.peer_policy] = qp_depths(
                    self.queues, self.credits_qp_index, q, policy, ep.peer_policy
                )
            recv, send = known
            qp = module.pd.create_qp(
                module.cq, module.cq, send, max(recv, 1), module.qp_inline[q], module.srq_of(q)
            )
            qp.modify(QpState.INIT)
            qs.qp = qp
            module.own_qp(qp, ep, q)
        return [qs.qp.qp_num for qs in ep.qps]

    def _ready(self, ep: Endpoint, remote_lid: int, remote_qpns: list[int]) -> None:
        s = self.settings
        ep.remote_lid = remote_lid
        # the port's active MTU, as Open MPI takes it (ibv_query_port), capped by btl_openib_mtu
        path_mtu = min(s.mtu, self.module.device.active_mtu)
        for qs, remote_qpn in zip(ep.qps, remote_qpns, strict=True):
            qp = qs.qp
            qp.modify(
                QpState.RTR,
                dest_lid=remote_lid,
                dest_qp_num=remote_qpn,
                min_rnr_timer=s.ib_min_rnr_timer,
                path_mtu=path_mtu,
            )
            qp.modify(
                QpState.RTS,
                rnr_retry=qs.rnr_retry(s),
                retry_cnt=s.ib_retry_count,
                timeout=s.ib_timeout,
            )
        credits = self.module.credits
        for q in credits.per_peer_queues:
            credits.post_rr(ep, ep.qps[q])
        ep.receives_posted = True

    def connect(self, ep: Endpoint) -> None:
        """Initiator side: create QPs, send our QP numbers to the peer out of band."""
        module = self.module
        ep.state = _CONNECTING
        module.trace("connect_start", ep)
        qpns = self._create_qps(ep)
        self._post_cts_buffer(ep)
        module.oob.send(module.rank, ep.peer, "connect_request", (self.lid, qpns))

    def oob_receive(self, src: int, kind: str, body) -> None:
        """Out-of-band connection messages (the CPC), delivered by the job's OOB channel."""
        module = self.module
        ep = module.endpoint(src)
        if kind == "connect_request":
            lid, qpns = body
            if ep.state == _CONNECTING:
                # crossing requests: the higher rank's request wins (Open MPI's rdmacm
                # lets the side with the larger address initiate)
                if module.rank > src:
                    return
                self._teardown_qps(ep)
            ep.state = _CONNECTING
            my_qpns = self._create_qps(ep)
            self._post_cts_buffer(ep)
            self._ready(ep, lid, qpns)
            module.oob.send(module.rank, src, "connect_reply", (self.lid, my_qpns))
        elif kind == "connect_reply":
            lid, qpns = body
            if ep.state != _CONNECTING:
                return
            self._ready(ep, lid, qpns)
            if self.uses_cts:
                # the initiator speaks first (iWARP requires it; harmless on IB)
                self.send_cts(ep)
            else:
                self.connected(ep)
                module.oob.send(module.rank, src, "connect_ready", None)
        elif kind == "connect_ready":
            if ep.state == _CONNECTING:
                self.connected(ep)
        module.wake()

    def _teardown_qps(self, ep: Endpoint) -> None:
        """Drop the QPs of a request that lost a crossing: to ERROR, then destroyed.
        They never left INIT (our request was ignored, so no reply moved them on), and
        the only work request on them is the CTS buffer on credits_qp: a QP without it
        is destroyed at once, the credits QP once that buffer's flush completion is
        reaped (``retired_flushed``), so the buffer comes back to its free list."""
        for qs in ep.qps:
            qp = qs.qp
            if qp is None:
                continue
            self.module.disown_qp(qp)
            qp.modify(QpState.ERROR)
            if self.uses_cts and qs.index == self.credits_qp_index:
                self.retired[qp.qp_num] = qp
            else:
                qp.destroy()
            qs.qp = None

    def is_retired(self, qp_num: int) -> bool:
        return qp_num in self.retired

    def retired_flushed(self, qp_num: int) -> None:
        """The flush completion of a retired QP's CTS buffer was reaped: nothing is left
        on the QP, destroy it."""
        self.retired.pop(qp_num).destroy()

    def _post_cts_buffer(self, ep: Endpoint) -> None:
        if not self.uses_cts:
            return
        module = self.module
        frag = module.get_frag(self.credits_qp_index, CTS)
        module.post_recv_frag(ep, self.credits_qp_index, frag)

    def send_cts(self, ep: Endpoint) -> None:
        module = self.module
        q = self.credits_qp_index
        qs = ep.qps[q]
        frag = module.get_frag(q, CTS)
        HEADER.pack_into(frag.buf, 0, TAG_IB, 0, 0)
        CREDIT_BODY.pack_into(frag.buf, HDR_LEN, CTL_CTS, q, 0)
        frag.length = HDR_LEN + CTL_LEN
        ep.cts_sent = True
        qs.reset_signal_count()  # a signaled post restarts sendi's count
        module.post_control(ep, qs, frag, frag.length, WrOpcode.SEND)
        module.trace("cts_sent", ep, wr_id=frag.trace_id, qpn=qs.qp.qp_num)

    def cts_received(self, ep: Endpoint) -> None:
        ep.cts_received = True
        self.module.trace("cts_received", ep)
        if not ep.cts_sent:
            self.send_cts(ep)
        if ep.state != _CONNECTED:
            self.connected(ep)

    def connected(self, ep: Endpoint) -> None:
        module = self.module
        ep.state = _CONNECTED
        module.trace("connected", ep)
        credits = module.credits
        for frag in ep.take_pending_lazy():
            credits.start_send(ep, frag)
        for q in range(len(self.queues)):
            credits.send_credits(ep, q)  # anything owed while the handshake finished
