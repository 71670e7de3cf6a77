"""The openib BTL module of one process: its public surface (send, RDMA, progress),
buffers, completions and the receive path (``_incoming``: Open MPI's
``handle_incoming``), and fatal errors. The rest of the protocol lives beside it as
mixins, one concept each: ``connect`` (QPs, out-of-band exchange, CTS), ``credits``
(send-path checks, pending lists, re-posting, explicit credit messages), ``eager_channels``
(eager-RDMA rings) and ``invariants``. See the reference for the Open MPI functions each
method reproduces.

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

from ..config import qp_inline_sizes
from ..verbs import (
    Access,
    AsyncEventType,
    RecvWR,
    SendFlags,
    SendWR,
    Sge,
    WcOpcode,
    WcStatus,
    WrOpcode,
)
from .connect import ConnectionSetup
from .credits import CreditFlow
from .eager_channels import EagerRdmaChannels
from .eager_rdma import (
    CONNECT_BODY,
    FOOTER_LEN,
    RDMA_CREDITS_FLAG,
    EagerRdmaRemote,
    slot_size,
)
from .endpoint import CLOSED, CONNECTED, FAILED, Endpoint
from .frag import (
    CREDIT,
    CREDIT_BODY,
    CTL_CREDITS,
    CTL_RDMA,
    CTS,
    HDR_LEN,
    HEADER,
    QP_TX_BATCH_COUNT,
    RDMA,
    SEND,
    TAG_IB,
    UNSIGNALED,
    Frag,
)
from .interface import TransportError
from .invariants import InvariantChecks
from .rcache import RegisteredMemory, RegistrationCache
from .registrations import RegistrationCounts
from .report import failure_report

__all__ = ["OpenibModule", "RegisteredMemory"]

_ACCESS_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ


_RKEY_BITS = 24
_SIGNALED = SendFlags.SIGNALED
_SIGNALED_INLINE = SendFlags.SIGNALED | SendFlags.INLINE


class OpenibModule(ConnectionSetup, CreditFlow, EagerRdmaChannels, InvariantChecks):
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
        self._retired_qpns: dict = {}  # qp_num -> a lost crossing's QP awaiting its flush
        self._frag_count = 0
        self._activity = None
        self._cq_armed = False
        # eager RDMA (reference 4): rings for frequent peers, at most max_eager_rdma
        self.use_eager_rdma = settings.use_eager_rdma
        self.eager_threshold = settings.eager_rdma_threshold
        self.max_eager_rdma = settings.max_eager_rdma
        self.eager_num = settings.eager_rdma_num  # the MCA value plus one, as in Open MPI
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
        tr = self.sim.tracer
        if tr is not None:  # lets trace readers put this rank's endpoints on its host
            tr.emit("btl", "placement", f"rank{rank}", host=hostname)
        self.host_poll = context.model.host_poll
        # IBV_SEND_INLINE for every frame up to its QP's inline size (ib_inline_max)
        inline = settings.max_inline_data
        self.qp_inline = qp_inline_sizes(
            self.queues, context.model.max_inline if inline < 0 else inline
        )
        # statistics
        self.registrations = RegistrationCounts()
        self.rcache = RegistrationCache(self.pd, _ACCESS_ALL, self.registrations,
                                        settings.leave_pinned)  # fmt: skip
        self.frags_sent = [0] * len(self.queues)
        self.bytes_sent = [0] * len(self.queues)
        self.eager_sent = [0] * len(self.queues)  # of frags_sent: through an eager-RDMA ring
        self.send_completions = [0] * len(self.queues)  # send-side CQEs reaped, per QP
        self.unsignaled_sends = [0] * len(self.queues)
        self.rdma_ops = [0] * len(self.queues)  # puts and gets (the rendezvous bulk)
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
        frag = self._send_frag(self._order_for(n), tag, payload, n, on_complete, high_priority)
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

    def sendi(self, peer: int, tag: int, payload, high_priority: bool = False) -> bool:
        """Open MPI's ``btl_sendi``: send at once, or refuse (False) without queuing
        anything when the endpoint is not connected, fragments wait on this queue, or a
        WQE or credit is missing; the caller then uses ``send``. Most ``sendi`` sends ask
        for no completion (``_send_flags``): their frag is free again on return."""
        if self._fatal is not None:
            raise self._fatal
        ep = self.endpoints.get(peer)
        if ep is None or ep.state != CONNECTED:
            return False
        n = len(payload)
        q = self._order_for(n)
        p = 0 if high_priority else 1
        pp = self.queues[q].kind == "P"
        if (ep.no_wqe_pending[q][p] or ep.sd_wqe[q] <= 0
                or (ep.no_credits_pending[q][p] if pp else self.srq_pending[q][p])):  # fmt: skip
            return False
        remote = ep.eager_remote
        rdma = high_priority and remote is not None and remote.tokens > 0 and n <= self.eager_limit
        if not rdma and (ep.sd_credits[q] <= 0 if pp else self.srq_sd_credits[q] <= 0):
            return False
        frag = self._send_frag(q, tag, payload, n, None, high_priority)
        frag.ep = ep
        ep.sd_wqe[q] -= 1
        if rdma:
            remote.tokens -= 1
            self._post_eager(ep, frag, True)
        else:
            if pp:
                ep.sd_credits[q] -= 1
            else:
                self.srq_sd_credits[q] -= 1
            self._post_data(ep, frag, True)
        return True

    def _send_frag(self, q: int, tag: int, payload, n: int, on_complete, high: bool) -> Frag:
        """A send frag of queue q with ``payload`` copied in behind the openib header:
        the copy that lets the caller reuse its buffer as soon as the call returns."""
        frag = self._get_frag(q, SEND)
        frag.tag = tag
        frag.payload_len = n
        frag.length = HDR_LEN + n
        frag.on_complete = on_complete
        frag.high = high
        if n:
            memoryview(frag.buf)[HDR_LEN : HDR_LEN + n] = payload
        return frag

    def register_memory(self, buffer: np.ndarray) -> RegisteredMemory:
        """Through the device's registration cache, as Open MPI's
        ``mca_btl_openib_register_mem`` (a hit, or ``ibv_reg_mr``)."""
        return self.rcache.register(buffer)

    def deregister_memory(self, handle: RegisteredMemory) -> None:
        """Release one use: ``ibv_dereg_mr`` at once, or (``mpi_leave_pinned``) kept
        pinned for the next transfer of the same memory."""
        self.rcache.release(handle)

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
            if self.sim.in_process():
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
        self._activity = getcurrent()
        if not self._cq_armed:  # one notification request at a time, as ibv_req_notify_cq
            self._cq_armed = True
            self.cq.req_notify(self._cq_event)
        self.sim.suspend()

    def _cq_event(self) -> None:
        self._cq_armed = False
        self._wake()

    def _wake(self) -> None:
        waiter, self._activity = self._activity, None
        if waiter is not None:
            self.sim.resume(waiter)

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

    # -- sending (the credit checks are in ``credits``) ------------------------------------

    def _post_send_frag(self, ep: Endpoint, order: int, frag: Frag, opcode) -> None:
        """Post a control message (CTS, credits) on QP ``order``: signaled, inline when it
        fits, carrying the unsignaled sends before it (Open MPI's ``post_send``)."""
        frag.order = order
        frag.ep = ep
        flags = _SIGNALED_INLINE if frag.length <= self.qp_inline[order] else _SIGNALED
        self._carry_unsignaled(ep, order, frag)
        wr = SendWR(frag, opcode, (Sge(frag.mr.addr, frag.length, frag.mr.lkey),), flags)
        ep.qps[order].post_send(wr)

    def _post_frag(self, ep: Endpoint, q: int, frag: Frag, frame: int, sendi: bool, opcode,
                   remote_addr: int = 0, rkey: int = 0) -> None:  # fmt: skip
        """Post a data fragment of ``frame`` bytes on q (2.4 step 6). A signaled one
        carries the unsignaled sends before it; an unsignaled one is inline, so its frag
        is free again at once."""
        frag.order = q
        flags = self._send_flags(ep, q, frame, sendi)
        wr_id = frag
        if flags & _SIGNALED:
            self._carry_unsignaled(ep, q, frag)
        else:
            self.unsignaled_sends[q] += 1
            ep.sd_wqe_inflight[q] += 1
            if not frag.eager and self.queues[q].kind == "S":
                ep.srq_credits_inflight[q] += 1
            wr_id = UNSIGNALED
        sge = (Sge(frag.mr.addr, frame, frag.mr.lkey),)
        ep.qps[q].post_send(SendWR(wr_id, opcode, sge, flags, remote_addr=remote_addr,
                                   rkey=rkey))  # fmt: skip
        if wr_id is not frag:
            self._return_frag(frag)

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
        # a small put goes inline, as Open MPI's (a get's data comes from the peer)
        inline = opcode == WrOpcode.RDMA_WRITE and length <= self.qp_inline[q]
        wr = SendWR(frag, opcode, (Sge(local.mr.addr + local_offset, length, local.mr.lkey),),
                    _SIGNALED_INLINE if inline else _SIGNALED, remote_addr=remote_addr,
                    rkey=rkey)  # fmt: skip
        if ep.pending_rdma or ep.sd_wqe[q] <= 0:
            # no free WQE: wait on the put/get pending list (Open MPI's pending_put_frags)
            ep.pending_rdma.append(wr)
            return
        ep.sd_wqe[q] -= 1
        self._post_rdma(ep, q, wr)

    def _post_rdma(self, ep: Endpoint, q: int, wr) -> None:
        """Post a put/get: signaled, carrying the unsignaled sends before it; it restarts
        ``sendi``'s count to the next completion, as every signaled post does."""
        self._carry_unsignaled(ep, q, wr.wr_id)
        ep.wqe_count[q] = QP_TX_BATCH_COUNT
        self.rdma_ops[q] += 1
        ep.qps[q].post_send(wr)

    # -- receive buffers ------------------------------------------------------------------
    def _post_recv_frag(self, ep: Endpoint, order: int, frag: Frag) -> None:
        frag.ep = ep
        frag.order = order
        qp = ep.qps[order]
        qp.post_recv(RecvWR(frag, (Sge(frag.mr.addr, frag.buf.nbytes, frag.mr.lkey),)))

    # -- completions ----------------------------------------------------------------------
    def _handle_wc(self, wc) -> None:
        frag = wc.wr_id
        if wc.status != WcStatus.SUCCESS:
            if wc.qp_num in self._retired_qpns and wc.status == WcStatus.WR_FLUSH_ERR:
                if isinstance(frag, Frag) and frag.kind != RDMA:
                    self._return_frag(frag)
                self._retired_flushed(wc.qp_num)
                return
            self._wc_error(wc, frag)
            return
        if wc.opcode == WcOpcode.RECV:
            self._handle_incoming(frag, wc)
            return
        ep = frag.ep
        kind = frag.kind
        self.send_completions[frag.order] += 1
        if kind == SEND:
            q = frag.qp
            ep.sd_wqe[q] += 1
            own_srq_credit = not frag.eager
            cb = frag.on_complete
            self._give_back_unsignaled(ep, q, frag, own_srq_credit)
            self._return_frag(frag)
            self._progress_wqe_pending(ep, q)
            if cb is not None:
                cb()
        elif kind == CREDIT:
            if self._give_back_unsignaled(ep, frag.order, frag, False):
                self._progress_wqe_pending(ep, frag.order)
            self._credit_frag_done(ep, frag)
        elif kind == CTS:
            if self._give_back_unsignaled(ep, frag.order, frag, False):
                self._progress_wqe_pending(ep, frag.order)
            self._return_frag(frag)
        elif kind == RDMA:
            q = frag.qp
            ep.sd_wqe[q] += 1
            self._give_back_unsignaled(ep, q, frag, False)
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

    def _srq_endpoint(self, wc):
        found = self._ep_by_qpn.get(wc.qp_num)
        if found is None:
            raise RuntimeError(f"SRQ completion for unknown QP {wc.qp_num}")
        return found

    # -- failures -------------------------------------------------------------------------
    def _wc_error(self, wc, frag) -> None:
        if self._fatal is not None:
            return
        ep = frag.ep if isinstance(frag, Frag) else None
        if ep is None:
            ep, _ = self._ep_by_qpn.get(wc.qp_num, (None, 0))
        self._fail(ep, wc.qp_num, wc.status.name, f"work completion status {wc.status.name}")

    def _on_async(self, event) -> None:
        kind = event.event_type
        if kind is AsyncEventType.SRQ_LIMIT_REACHED:
            q = self._srq_index.get(event.qp_num)
            if q is not None:
                self._srq_limit_reached(q)
            return
        if self._fatal is None and kind in (AsyncEventType.QP_FATAL, AsyncEventType.CQ_ERR):
            owned = self._ep_by_qpn.get(event.qp_num)
            if owned is None and kind is AsyncEventType.QP_FATAL:
                # not a live QP of this module: a neighbour process's on the shared NIC,
                # or one this module retired itself; neither is this process's failure
                # (a CQ_ERR is always ours: the CQ is this module's)
                return
            ep = owned[0] if owned is not None else None
            self._fail(ep, event.qp_num, kind.name, event.reason)
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
