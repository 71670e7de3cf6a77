"""The openib BTL module of one process: per-peer and SRQ credit flow control, explicit
credit messages and their routing policy, connection setup, progress and fatal errors.

The protocol follows Open MPI's ``btl_openib*.c`` (see docs/scenario.md and the reference):
``_post_rr`` (re-posting at rd_low), ``_acquire`` (the order of WQE/credit checks),
``_handle_incoming`` (credit and cm_seen accounting on receive), ``_send_credits`` /
``_send_credit_msg`` (explicit credits at rd_win, at most rd_rsv-1 unacknowledged).

The one change: ``credits_policy``. With ``smallest`` (Open MPI), explicit credit messages
of every P queue travel on ``credits_qp`` (the first P queue) and the buffers reserved
for them are posted there; with ``own`` both follow the queue the credits belong to.
The policy is the RECEIVER's (it sends the credits for the RQ it owns); a sender posts
its credit-message reserve where its peer will send, learnt at connection time.
"""

from __future__ import annotations

from collections import deque

import numpy as np
from greenlet import getcurrent

from ..verbs import Access, QpState, RecvWR, SendFlags, SendWR, Sge, WcOpcode, WcStatus, WrOpcode
from .eager_rdma import (
    CONNECT_BODY,
    FOOTER,
    FOOTER_LEN,
    RDMA_CREDITS_FLAG,
    EagerRdmaLocal,
    EagerRdmaRemote,
    slot_size,
)
from .endpoint import CLOSED, CONNECTED, CONNECTING, FAILED, Endpoint
from .frag import (
    CREDIT,
    CREDIT_BODY,
    CTL_CREDITS,
    CTL_CTS,
    CTL_RDMA,
    CTS,
    HDR_LEN,
    HEADER,
    RDMA,
    RECV,
    SEND,
    TAG_IB,
    Frag,
)
from .interface import TransportError
from .report import failure_report

__all__ = ["OpenibModule", "RegisteredMemory"]

_ACCESS_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
_CTL_LEN = CREDIT_BODY.size


_RKEY_BITS = 24


class RegisteredMemory:
    """A registration as the PML sees it. ``key`` packs the region's address and rkey —
    the two facts Open MPI's PML ships to the peer for RDMA."""

    __slots__ = ("buffer", "key", "mr")

    def __init__(self, mr):
        self.mr = mr
        self.buffer = mr.buffer
        self.key = (mr.addr << _RKEY_BITS) | mr.rkey


class OpenibModule:
    """One process's openib BTL module on one device (implements ``BtlModule``)."""

    def __init__(self, rank: int, context, settings, oob, hostname: str, check_invariants=False):
        self.rank = rank
        self.context = context
        self.sim = context.sim
        self.settings = settings
        self.oob = oob
        self.hostname = hostname
        self.queues = settings.receive_queues
        self.policy = settings.credits_policy
        self.credits_qp = settings.credits_qp
        self.eager_limit = settings.eager_limit
        self.max_send_size = settings.max_send_size
        self.rndv_eager_limit = settings.rndv_eager_limit
        self.check_invariants = check_invariants
        self.iwarp = context.model.transport == "iwarp"
        self.pd = context.alloc_pd()
        depth = min(settings.cq_size, context.model.max_cq_entries)
        self.cq = context.create_cq(depth)
        self.endpoints: dict[int, Endpoint] = {}
        self._ep_by_qpn: dict[int, tuple[Endpoint, int]] = {}
        self._callbacks: dict[int, object] = {}
        self._free: list[list[Frag]] = [[] for _ in self.queues]
        self._buf_size = [
            HDR_LEN + max(q.size, CONNECT_BODY.size) + FOOTER_LEN for q in self.queues
        ]
        self._fatal: TransportError | None = None
        self._retired_qpns: set[int] = set()
        self._frag_count = 0
        self._activity = None
        # eager RDMA (reference 4): rings for frequent peers, at most max_eager_rdma
        self.use_eager_rdma = settings.use_eager_rdma
        self.eager_threshold = settings.eager_rdma_threshold
        self.max_eager_rdma = settings.max_eager_rdma
        self.eager_num = settings.eager_rdma_num + 1  # Open MPI adds one internally
        self.eager_slot = slot_size(self.eager_limit, HDR_LEN)
        self._eager_eps: list[Endpoint] = []
        # SRQ state (module-wide, per S queue index)
        self.srqs: list = [None] * len(self.queues)
        self.srq_sd_credits = [q.sd_max for q in self.queues]
        self.srq_rd_posted = [0] * len(self.queues)
        self.srq_pending = [(deque(), deque()) for _ in self.queues]
        # SRQ resizing (btl_openib_enable_srq_resize): start with rd_init buffers and
        # double on every SRQ-limit event until rd_num, as Open MPI does (reference 3).
        resize = settings.enable_srq_resize
        self.srq_rd_curr_num = [max(q.rd_init, 1) if resize else q.rd_num for q in self.queues]
        self.srq_rd_low_local = [
            (q.rd_init - q.rd_init // 4) if resize else q.rd_low for q in self.queues
        ]
        self.srq_limit_flag = [resize and q.kind == "S" and q.srq_limit > 0 for q in self.queues]
        self._srq_index: dict[int, int] = {}
        for i, q in enumerate(self.queues):
            if q.kind == "S":
                self.srqs[i] = self.pd.create_srq(q.rd_num + q.sd_max)
                self._srq_index[self.srqs[i].hw.srq_num] = i
        # CTS handshake (Open MPI's rdmacm CPC) needs a P queue to carry it; all-SRQ
        # configurations connect with a three-way out-of-band exchange instead (udcm).
        self._uses_cts = self.queues[self.credits_qp].kind == "P"
        context.on_async = self._on_async
        self.host_poll = context.model.host_poll
        # statistics
        self.frags_sent = [0] * len(self.queues)
        self.bytes_sent = [0] * len(self.queues)
        self.credit_msgs_on = [0] * len(self.queues)
        for i, q in enumerate(self.queues):
            if q.kind == "S":
                self._post_srr(i)

    # -- public BtlModule surface ---------------------------------------------------------
    def register_recv(self, tag: int, callback) -> None:
        if not 0 <= tag < TAG_IB:
            raise ValueError(f"BTL tag {tag} outside 0..{TAG_IB - 1}")
        self._callbacks[tag] = callback

    def send(self, peer: int, tag: int, payload, on_complete=None, high_priority=False) -> None:
        self._raise_if_failed()
        n = len(payload)
        q = self._order_for(n)
        frag = self._get_frag(q, SEND)
        frag.tag = tag
        frag.payload_len = n
        frag.length = HDR_LEN + n
        frag.on_complete = on_complete
        frag.high = high_priority
        if n:
            memoryview(frag.buf)[HDR_LEN : HDR_LEN + n] = payload
        ep = self._endpoint(peer)
        frag.ep = ep
        if ep.state != CONNECTED:
            ep.pending_lazy.append(frag)
            if ep.state == CLOSED:
                self._connect(ep)
            return
        if self._queue_behind_pending(ep, frag):
            return
        self._start_send(ep, frag)

    def register_memory(self, buffer: np.ndarray) -> RegisteredMemory:
        return RegisteredMemory(self.pd.reg_mr(buffer, _ACCESS_ALL))

    def put(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        self._rdma(WrOpcode.RDMA_WRITE, peer, local, local_offset, remote_key, remote_offset,
                   length, on_complete)  # fmt: skip

    def get(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        self._rdma(WrOpcode.RDMA_READ, peer, local, local_offset, remote_key, remote_offset,
                   length, on_complete)  # fmt: skip

    def progress(self) -> int:
        """Poll the CQ and handle every completion; raises ``TransportError`` if fatal."""
        if self._fatal is not None:
            raise self._fatal
        handled = self._poll_eager() if self._eager_eps else 0
        if not handled and not self.cq.entries:
            return 0
        wcs = self.cq.poll(256)
        if wcs:
            if getcurrent() is not self.sim._loop:
                hp = self.host_poll
                self.sim.sleep(self.sim.duration("host.poll", hp[0], hp[1], hp[2]) * len(wcs))
            for wc in wcs:
                self._handle_wc(wc)
            handled += len(wcs)
        if self.check_invariants:
            self.assert_invariants()
        if self._fatal is not None:
            raise self._fatal
        return handled

    def wait_for_activity(self) -> None:
        self._raise_if_failed()
        if self.cq.entries:
            return
        for ep in self._eager_eps:
            if ep.eager_local.pending():
                return
        ev = self.sim.event()
        self._activity = ev
        self.cq.req_notify(self._wake)
        self.sim.wait(ev)

    def _wake(self) -> None:
        ev, self._activity = self._activity, None
        if ev is not None and not ev.triggered:
            ev.succeed(None)

    # -- queue selection and buffers ------------------------------------------------------
    def _order_for(self, nbytes: int) -> int:
        for i, q in enumerate(self.queues):
            if q.size >= nbytes:
                return i
        raise ValueError(
            f"fragment of {nbytes} bytes exceeds the largest receive queue "
            f"({self.queues[-1].size} bytes)"
        )

    def _get_frag(self, q: int, kind: int) -> Frag:
        free = self._free[q]
        if free:
            frag = free.pop()
            frag.kind = kind
            frag.order = q
            return frag
        # np.empty: pages of a buffer nobody has written yet stay unallocated (a P queue
        # of 256 x 64 KiB buffers per peer costs address space, not memory)
        buf = np.empty(self._buf_size[q], dtype=np.uint8)
        mr = self.pd.reg_mr(buf, Access.LOCAL_WRITE)
        self._frag_count += 1
        return Frag(kind, buf, mr, q, self._frag_count)

    def _return_frag(self, frag: Frag) -> None:
        frag.on_complete = None
        frag.eager = False
        frag.ep = None
        self._free[frag.qp].append(frag)

    def _endpoint(self, peer: int) -> Endpoint:
        ep = self.endpoints.get(peer)
        if ep is None:
            if peer == self.rank or peer < 0:
                raise ValueError(f"invalid peer {peer}")
            ep = Endpoint(self, peer, self.queues)
            self.endpoints[peer] = ep
        return ep

    def _cm_order(self, ep: Endpoint, q: int) -> int:
        """Where the peer sends its credit messages for q (so where I reserve buffers)."""
        return q if ep.peer_policy == "own" else self.credits_qp

    def _credit_order(self, q: int) -> int:
        """Where I send my credit messages for q: my own policy."""
        return q if self.policy == "own" else self.credits_qp

    # -- connection setup (lazy, on first send) -------------------------------------------
    def _qp_depths(self, q: int, peer_policy: str | None):
        """max_recv_wr / max_send_wr of queue q, as Open MPI's CPCs size them (2.9).
        ``peer_policy`` None (the initiator does not know it yet): room for either."""
        if peer_policy is None:
            own, smallest = self._qp_depths(q, "own"), self._qp_depths(q, "smallest")
            return max(own[0], smallest[0]), max(own[1], smallest[1])
        spec = self.queues[q]
        pp = [i for i, s in enumerate(self.queues) if s.kind == "P"]
        if spec.kind != "P":
            extra_send = len(pp) if self.policy != "own" and q == self.credits_qp else 0
            return 0, spec.sd_max + extra_send + 1
        recv = spec.rd_num
        if peer_policy == "own":
            recv += spec.rd_rsv
        elif q == self.credits_qp:
            recv += sum(self.queues[i].rd_rsv for i in pp)
        if q == self.credits_qp:
            recv += 1  # the CTS buffer
        if self.policy == "own":
            extra_send = 1
        else:
            extra_send = len(pp) if q == self.credits_qp else 0
        return recv, spec.rd_num + extra_send + 1

    def _create_qps(self, ep: Endpoint, peer_policy: str | None) -> list[int]:
        for q in range(len(self.queues)):
            recv, send = self._qp_depths(q, peer_policy)
            qp = self.pd.create_qp(self.cq, self.cq, send, max(recv, 1), 0, self.srqs[q])
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
        """Drop the QPs of a request that lost a crossing; their flushes are expected."""
        for qp in ep.qps:
            if qp is not None:
                self._ep_by_qpn.pop(qp.qp_num, None)
                self._retired_qpns.add(qp.qp_num)
                qp.modify(QpState.ERROR)
        ep.qps = [None] * len(self.queues)

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
        frag.length = HDR_LEN + _CTL_LEN
        ep.cts_sent = True
        self._post_send_frag(ep, q, frag, WrOpcode.SEND)
        self._trace("cts_sent", ep)

    def _connected(self, ep: Endpoint) -> None:
        ep.state = CONNECTED
        self._trace("connected", ep)
        lazy, ep.pending_lazy = ep.pending_lazy, deque()
        for frag in lazy:
            self._start_send(ep, frag)
        for q in range(len(self.queues)):
            self._send_credits(ep, q)  # anything owed while the handshake finished

    # -- sending --------------------------------------------------------------------------
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

    def _take_eager_credits(self, ep: Endpoint, cap: int = 0x7FFF) -> int:
        """Eager-RDMA credits owed to the peer, flagged for a header (0 if none). Ring
        fragments carry the QP index in bits 11-14, so they cap the count at 0x7FF."""
        local = ep.eager_local
        if local is None or not local.credits:
            return 0
        c = min(local.credits, cap)
        local.credits -= c
        return c | RDMA_CREDITS_FLAG

    def _post_eager(self, ep: Endpoint, frag: Frag) -> None:
        """Write the fragment into the peer's eager-RDMA ring (2.4 step 3): the header
        carries eager-RDMA credits (never PP credits) and the QP index in bits 11-14."""
        q = frag.qp
        frag.eager = True
        credits = self._take_eager_credits(ep, 0x7FF) | (q << 11)
        HEADER.pack_into(frag.buf, 0, frag.tag, self._take_cm_seen(ep, q), credits)
        FOOTER.pack_into(frag.buf, frag.length, (frag.length << 8) | 0xFF)
        total = frag.length + FOOTER_LEN
        remote = ep.eager_remote
        wr = SendWR(frag, WrOpcode.RDMA_WRITE, (Sge(frag.mr.addr, total, frag.mr.lkey),),
                    SendFlags.SIGNALED, remote_addr=remote.next_slot_addr(total),
                    rkey=remote.rkey)  # fmt: skip
        frag.order = q
        ep.eager_frags_sent += 1
        self.frags_sent[q] += 1
        self.bytes_sent[q] += total
        ep.qps[q].post_send(wr)

    def _post_data(self, ep: Endpoint, frag: Frag) -> None:
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
        self._post_send_frag(ep, q, frag, WrOpcode.SEND)

    def _take_cm_seen(self, ep: Endpoint, q: int) -> int:
        c = ep.cm_return[q]
        if c <= 0:
            return 0
        if c > 255:
            ep.cm_return[q] = c - 255
            return 255
        ep.cm_return[q] = 0
        return c

    def _post_send_frag(self, ep: Endpoint, order: int, frag: Frag, opcode) -> None:
        frag.order = order
        frag.ep = ep
        wr = SendWR(frag, opcode, (Sge(frag.mr.addr, frag.length, frag.mr.lkey),),
                    SendFlags.SIGNALED)  # fmt: skip
        ep.qps[order].post_send(wr)

    def _rdma(self, opcode, peer, local, local_offset, remote_key, remote_offset, length, cb):
        self._raise_if_failed()
        ep = self._endpoint(peer)
        if ep.state != CONNECTED:
            raise RuntimeError("RDMA before the endpoint is connected (the PML sends first)")
        q = len(self.queues) - 1  # Open MPI's rdma_qp: the last queue
        remote_addr = (remote_key >> _RKEY_BITS) + remote_offset
        rkey = remote_key & ((1 << _RKEY_BITS) - 1)
        frag = Frag(RDMA, local.buffer, local.mr, q)
        frag.ep = ep
        frag.on_complete = cb
        wr = SendWR(frag, opcode, (Sge(local.mr.addr + local_offset, length, local.mr.lkey),),
                    SendFlags.SIGNALED, remote_addr=remote_addr, rkey=rkey)  # fmt: skip
        if ep.pending_rdma or ep.sd_wqe[q] <= 0:
            # no free WQE: wait on the put/get pending list (Open MPI's pending_put_frags)
            ep.pending_rdma.append(wr)
            return
        ep.sd_wqe[q] -= 1
        ep.qps[q].post_send(wr)

    # -- receive buffers ------------------------------------------------------------------
    def _post_recv_frag(self, ep: Endpoint, order: int, frag: Frag) -> None:
        frag.ep = ep
        frag.order = order
        qp = ep.qps[order]
        qp.post_recv(RecvWR(frag, (Sge(frag.mr.addr, frag.buf.nbytes, frag.mr.lkey),)))

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

    # -- explicit credit messages ---------------------------------------------------------
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
        frag.length = HDR_LEN + _CTL_LEN
        ep.credit_msgs_sent[q] += 1
        self.credit_msgs_on[order] += 1
        self._trace("credit_msg", ep, qp=q, on_qp=order, credits=credits, cm_seen=cm_seen,
                    rdma_credits=rdma_credits, by_rdma=by_rdma, wr_id=frag.trace_id)  # fmt: skip
        if by_rdma:
            FOOTER.pack_into(frag.buf, frag.length, (frag.length << 8) | 0xFF)
            total = frag.length + FOOTER_LEN
            frag.order = order
            frag.ep = ep
            wr = SendWR(frag, WrOpcode.RDMA_WRITE, (Sge(frag.mr.addr, total, frag.mr.lkey),),
                        SendFlags.SIGNALED, remote_addr=remote.next_slot_addr(total),
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

    # -- completions ----------------------------------------------------------------------
    def _handle_wc(self, wc) -> None:
        frag = wc.wr_id
        if wc.status != WcStatus.SUCCESS:
            if wc.qp_num in self._retired_qpns and wc.status == WcStatus.WR_FLUSH_ERR:
                if isinstance(frag, Frag) and frag.kind != RDMA:
                    self._return_frag(frag)
                return
            self._wc_error(wc, frag)
            return
        if wc.opcode == WcOpcode.RECV:
            self._handle_incoming(frag, wc)
            return
        ep = frag.ep
        kind = frag.kind
        if kind == SEND:
            q = frag.qp
            ep.sd_wqe[q] += 1
            cb = frag.on_complete
            eager = frag.eager
            self._return_frag(frag)
            if self.queues[q].kind == "S" and not eager:
                self.srq_sd_credits[q] += 1
                self._progress_srq_pending(q)
            self._progress_wqe_pending(ep, q)
            if cb is not None:
                cb()
        elif kind == CREDIT:
            self._credit_frag_done(ep, frag)
        elif kind == CTS:
            self._return_frag(frag)
        elif kind == RDMA:
            q = frag.qp
            ep.sd_wqe[q] += 1
            self._progress_wqe_pending(ep, q)
            frag.on_complete()

    def _handle_incoming(self, frag: Frag, wc) -> None:
        """A receive completion: the CTS, or a fragment for ``_incoming``."""
        ep = frag.ep
        if frag.kind == CTS:
            self._return_frag(frag)
            ep.cts_received = True
            self._trace("cts_received", ep)
            if not ep.cts_sent:
                self._send_cts(ep)
            if ep.state != CONNECTED:
                self._connected(ep)
            return
        rqp = frag.order
        if ep is None:  # SRQ buffer: find the peer from the source QP
            ep, rqp = self._srq_endpoint(wc)
        self._incoming(ep, rqp, frag.buf, wc.byte_len, frag)

    def _incoming(self, ep: Endpoint, rqp: int, buf, nbytes: int, frag: Frag | None) -> None:
        """2.6: deliver or account one fragment, then credits and re-posting.

        ``frag`` is the receive buffer it arrived in, or None when it came through the
        eager-RDMA ring (then ``rqp`` is meaningless: the QP is in credits bits 11-14)."""
        tag, cm_seen, credits = HEADER.unpack_from(buf, 0)
        is_credit_msg = False
        rcredits = 0
        if tag == TAG_IB:
            ctl, qpn, body_credits = CREDIT_BODY.unpack_from(buf, HDR_LEN)
            if ctl == CTL_CREDITS:
                is_credit_msg = True
                cqp = qpn
                rcredits = body_credits
            elif ctl == CTL_RDMA:
                _, rkey, addr = CONNECT_BODY.unpack_from(buf, HDR_LEN)
                ep.eager_remote = EagerRdmaRemote(addr, rkey, self.eager_num, self.eager_slot)
                self._trace("eager_rdma_connected", ep, slots=self.eager_num)
        if not is_credit_msg:
            if frag is None:
                cqp = (credits >> 11) & 0xF
                credits &= 0x87FF
            else:
                cqp = rqp
            if credits & RDMA_CREDITS_FLAG:
                rcredits = credits & 0x7FFF
                credits = 0
            if tag != TAG_IB:
                cb = self._callbacks.get(tag)
                if cb is None:
                    raise RuntimeError(f"fragment with unregistered BTL tag {tag} from {ep.peer}")
                cb(ep.peer, memoryview(buf)[HDR_LEN:nbytes])
        if cm_seen:
            ep.cm_sent[cqp] -= cm_seen
        if frag is None:
            ep.eager_local.credits += 1  # the ring slot is free again
        else:
            spec = self.queues[rqp]
            self._return_frag(frag)
            if spec.kind == "P":
                if is_credit_msg:
                    ep.cm_received[cqp] += 1
                    ep.cm_msgs_received[cqp] += 1
                else:
                    ep.rd_posted[rqp] -= 1
                    ep.data_received[rqp] += 1
                self._post_rr(ep, cqp)
            else:
                self.srq_rd_posted[rqp] -= 1
                self._post_srr(rqp)
            if nbytes < self.eager_limit:  # wc->byte_len (header included), as Open MPI
                self._count_for_eager_rdma(ep)
        if rcredits and ep.eager_remote is not None:
            ep.eager_remote.tokens += rcredits
        if credits:
            ep.sd_credits[cqp] += credits
            ep.credits_received[cqp] += credits
            self._trace("credits_in", ep, qp=cqp, credits=credits, explicit=is_credit_msg)
        if credits or rcredits:
            self._progress_no_credits_pending(ep)
        self._send_credits(ep, cqp)

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
            while True:
                data = local.poll()
                if data is None:
                    break
                n += 1
                self._incoming(ep, 0, data, len(data), None)
        return n

    def _srq_endpoint(self, wc):
        found = self._ep_by_qpn.get(wc.qp_num)
        if found is None:
            raise RuntimeError(f"SRQ completion for unknown QP {wc.qp_num}")
        return found

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
                ep.qps[q].post_send(rdma.popleft())

    def _progress_no_credits_pending(self, ep: Endpoint) -> None:
        """2.5: retry each waiting fragment once while a PP credit or an eager-RDMA token
        is available (high priority first); failures go back to the tail."""
        remote = ep.eager_remote
        for q, spec in enumerate(self.queues):
            for p in (0, 1):
                pending = ep.no_credits_pending[q][p]
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

    # -- failures -------------------------------------------------------------------------
    def _wc_error(self, wc, frag) -> None:
        if self._fatal is not None:
            return
        ep = frag.ep if isinstance(frag, Frag) else None
        if ep is None:
            ep, _ = self._ep_by_qpn.get(wc.qp_num, (None, 0))
        self._fail(ep, wc.qp_num, wc.status.name, f"work completion status {wc.status.name}")

    def _on_async(self, event) -> None:
        if event.event_type.name == "SRQ_LIMIT_REACHED":
            q = self._srq_index.get(event.qp_num)
            if q is not None:
                self._srq_limit_reached(q)
            return
        if self._fatal is None and event.event_type.name in ("QP_FATAL", "CQ_ERR"):
            owned = self._ep_by_qpn.get(event.qp_num)
            if owned is None and event.event_type.name == "QP_FATAL":
                # not a live QP of this module: a neighbour process's on the shared NIC,
                # or one this module retired itself; neither is this process's failure
                # (a CQ_ERR is always ours: the CQ is this module's)
                return
            ep = owned[0] if owned is not None else None
            self._fail(ep, event.qp_num, event.event_type.name, event.reason)
        self._wake()

    def _fail(self, ep, qp_num: int, status: str, detail: str) -> None:
        q = self._ep_by_qpn.get(qp_num, (None, -1))[1]
        if ep is not None:
            ep.state = FAILED
        report = failure_report(self, ep, q, status, detail)
        self._trace("fatal", ep, qp=q, status=status)
        self._fatal = TransportError(report, status=status, peer=ep.peer if ep else -1,
                                     qp_index=q, time_ps=self.sim.now)  # fmt: skip

    def _raise_if_failed(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    @property
    def failed(self) -> TransportError | None:
        return self._fatal

    # -- tracing and invariants -----------------------------------------------------------
    def _trace(self, kind: str, ep, **fields) -> None:
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("btl", kind, f"rank{self.rank}->{ep.peer if ep else '?'}", **fields)

    def assert_conservation(self, peer_module) -> None:
        """Per P queue and direction (me -> peer): my sd_credits + my fragments in flight
        + buffers the peer consumed and has not re-posted + credits the peer owes me +
        credits on their way back == rd_num (a leak or a double count breaks it); and my
        explicit credit messages in flight never outnumber the peer's reserved buffers."""
        ep = self.endpoints.get(peer_module.rank)
        pep = peer_module.endpoints.get(self.rank)
        if ep is None or pep is None or ep.state != CONNECTED or pep.state != CONNECTED:
            return
        for q, spec in enumerate(self.queues):
            if spec.kind != "P":
                continue
            in_flight = ep.data_sent[q] - pep.data_received[q]
            returning = pep.credits_sent[q] - ep.credits_received[q]
            total = (ep.sd_credits[q] + in_flight + (spec.rd_num - pep.rd_posted[q])
                     + pep.rd_credits[q] + returning)  # fmt: skip
            # every explicit credit message on its way has a reserved buffer waiting
            cm_in_flight = ep.cm_msgs_sent[q] - pep.cm_msgs_received[q]
            reserve = spec.rd_rsv - pep.cm_received[q]
            if cm_in_flight > reserve:
                raise AssertionError(
                    f"{cm_in_flight} credit messages for QP {q} in flight from rank "
                    f"{self.rank} to {peer_module.rank} but only {reserve} reserved buffers"
                )
            if total != spec.rd_num:
                raise AssertionError(
                    f"credits of QP {q} from rank {self.rank} to {peer_module.rank} not "
                    f"conserved: sd_credits {ep.sd_credits[q]} + in flight {in_flight} + "
                    f"unposted {spec.rd_num - pep.rd_posted[q]} + owed {pep.rd_credits[q]} + "
                    f"returning {returning} = {total} != rd_num {spec.rd_num}"
                )

    def assert_invariants(self) -> None:
        """Per-endpoint credit invariants that must hold between progress calls."""
        for ep in self.endpoints.values():
            if ep.state != CONNECTED:
                continue
            for q, spec in enumerate(self.queues):
                if spec.kind != "P":
                    continue
                problems = []
                if ep.sd_credits[q] < 0:
                    problems.append(f"sd_credits {ep.sd_credits[q]} < 0")
                if not 0 <= ep.rd_posted[q] <= spec.rd_num:
                    problems.append(f"rd_posted {ep.rd_posted[q]} outside 0..{spec.rd_num}")
                if ep.cm_sent[q] < 0 or ep.cm_sent[q] > spec.rd_rsv:
                    problems.append(f"cm_sent {ep.cm_sent[q]} outside 0..{spec.rd_rsv}")
                if ep.sd_wqe[q] < 0:
                    problems.append(f"sd_wqe {ep.sd_wqe[q]} < 0")
                remote = ep.eager_remote
                if remote is not None and not 0 <= remote.tokens <= remote.num - 1:
                    problems.append(
                        f"eager-RDMA tokens {remote.tokens} outside 0..{remote.num - 1}"
                    )
                if problems:
                    raise AssertionError(
                        f"rank {self.rank} peer {ep.peer} qp {q}: " + "; ".join(problems)
                    )
