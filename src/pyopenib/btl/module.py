"""The openib BTL module of one process: its public surface (send, sendi, RDMA, progress),
buffers, posting, completions and the receive path (``incoming``: Open MPI's
``handle_incoming``), and fatal errors.

The protocol's rules live in parts the module holds, each with its own declared state:
``credits`` (``CreditFlow``: admission, pending lists, re-posting, explicit credit
messages), ``eager`` (``EagerRdmaChannels``: the eager-RDMA rings) and ``connections``
(``ConnectionSetup``: QPs, the out-of-band exchange, CTS). The counters those rules move
belong to the per-QP states of each endpoint (``btl/endpoint.py``) and to the module's
shared receive queues (``btl/srq.py``). See the reference for the Open MPI functions
each method reproduces.

The one change: ``credits_policy``. With ``smallest`` (Open MPI), explicit credit messages
of every P queue travel on ``credits_qp`` (the first P queue) and the buffers reserved
for them are posted there; with ``own`` both follow the queue the credits belong to.
The policy is the RECEIVER's (it sends the credits for the RQ it owns); a sender posts
its credit-message reserve where its peer will send, learnt from the peer's published
settings before wire-up.
"""

from __future__ import annotations

import numpy as np
from greenlet import getcurrent

from ..config import qp_inline_sizes
from ..errors import TransportError
from ..sim.host import FREE_HOST, HostModel
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
from .credit_audit import AuditedEndpoint, CreditAudit
from .credits import Admission, CreditFlow
from .eager_channels import EagerRdmaChannels
from .eager_rdma import CONNECT_BODY, FOOTER_LEN, RDMA_CREDITS_FLAG, EagerRdmaRemote
from .endpoint import Endpoint, EndpointState
from .failure_report import failure_report
from .frag import (
    CREDIT,
    CREDIT_BODY,
    CTL_CREDITS,
    CTL_RDMA,
    CTS,
    HDR_LEN,
    HEADER,
    RDMA,
    SEND,
    TAG_IB,
    UNSIGNALED,
    Frag,
    FragBuffers,
)
from .interface import BtlLimits, BtlModule, RendezvousLimits
from .rcache import RegisteredMemory, RegistrationCache
from .registrations import RegistrationCounts
from .srq import SharedRq

__all__ = ["OpenibModule", "QpTraffic"]

_ACCESS_ALL = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
_LOCAL = Access.LOCAL_WRITE
_RKEY_BITS = 24
_CONNECTED = EndpointState.CONNECTED
_CLOSED = EndpointState.CLOSED
_WRITE, _READ = WrOpcode.RDMA_WRITE, WrOpcode.RDMA_READ
_BY_RING = Admission.BY_RING
_WC_SUCCESS = WcStatus.SUCCESS  # enum members as constants (``hw.qp._SUCCESS`` says why)
_WC_FLUSH = WcStatus.WR_FLUSH_ERR
_WC_RECV = WcOpcode.RECV


class QpTraffic:
    """What the module sent on one QP index, over every peer (the statistics tables)."""

    __slots__ = (
        "frags",
        "bytes",
        "eager",
        "completions",
        "unsignaled",
        "rdma_ops",
        "credit_msgs",
    )

    def __init__(self):
        self.frags = 0
        self.bytes = 0
        self.eager = 0
        """Of ``frags``: written through an eager-RDMA ring."""
        self.completions = 0
        """Send-side completions reaped (sends, credit messages, CTS, puts, gets)."""
        self.unsignaled = 0
        """Sends posted without a completion (``sendi``)."""
        self.rdma_ops = 0
        """Puts and gets (the rendezvous bulk)."""
        self.credit_msgs = 0
        """Explicit credit messages posted on this QP, whichever queue they credit."""


class OpenibModule(BtlModule):
    """One process's openib BTL module on one device (implements ``BtlModule``)."""

    INLINE = SendFlags.INLINE
    SIGNALED = SendFlags.SIGNALED
    SIGNALED_INLINE = SendFlags.SIGNALED | SendFlags.INLINE

    def __init__(
        self,
        rank: int,
        context,
        settings,
        oob,
        hostname: str,
        check_invariants=False,
        host: HostModel = FREE_HOST,
        audit: CreditAudit | None = None,
    ):
        self.rank = rank
        self.host = host
        self.context = context
        self.sim = context.sim
        self.settings = settings
        self.oob = oob
        self.hostname = hostname
        self.queues = settings.receive_queues
        self.eager_limit = settings.eager_limit
        self.max_send_size = settings.max_send_size
        self.rndv_eager_limit = settings.rndv_eager_limit
        self._rendezvous = RendezvousLimits(
            settings.leave_pinned_protocol,
            settings.min_rdma_pipeline_size,
            settings.rdma_pipeline_send_length,
            settings.rdma_pipeline_frag_size,
            settings.send_pipeline_depth,
            settings.recv_pipeline_depth,
        )
        self.check_invariants = check_invariants
        self.audit = audit
        """The job's ``CreditAudit`` when conservation is checked after every event: the
        endpoints are then audited ones (``btl/credit_audit.py``)."""
        device = context.query_device()
        self.device = device
        self.iwarp = device.transport == "iwarp"
        self.host_poll = device.host_poll
        self.pd = context.alloc_pd()
        self.cq = context.create_cq(min(settings.cq_size, device.max_cqe))
        self.endpoints: dict[int, Endpoint] = {}
        self._callbacks: dict[int, object] = {}
        self._free: list[list[Frag]] = [[] for _ in self.queues]
        self._first_size = self.queues[0].size  # what fits queue 0 needs no search
        self._buffers = [
            FragBuffers(self.pd, HDR_LEN + max(q.size, CONNECT_BODY.size) + FOOTER_LEN, _LOCAL)
            for q in self.queues
        ]
        self._fatal: TransportError | None = None
        self._frag_count = 0
        self._activity = None
        self._cq_armed = False
        # IBV_SEND_INLINE for every frame up to its QP's inline size (ib_inline_max)
        inline = settings.max_inline_data
        self.qp_inline = qp_inline_sizes(self.queues, device.max_inline if inline < 0 else inline)
        # statistics
        self.registrations = RegistrationCounts()
        self.rcache = RegistrationCache(
            self.pd, _ACCESS_ALL, self.registrations, settings.leave_pinned
        )
        self.traffic = [QpTraffic() for _ in self.queues]
        # the parts
        self.srqs: list[SharedRq | None] = [None] * len(self.queues)
        self._srq_index: dict[int, SharedRq] = {}
        for i, q in enumerate(self.queues):
            if q.kind == "S":
                srq = SharedRq(
                    i, q, self.pd.create_srq(q.rd_num + q.sd_max), settings.enable_srq_resize
                )
                self.srqs[i] = srq
                self._srq_index[srq.srq_num] = srq
        self.credits = CreditFlow(self, settings, self.srqs)
        self.eager = EagerRdmaChannels(self, settings, HDR_LEN)
        self.connections = ConnectionSetup(self, settings, device.lid)
        context.on_async = self._on_async
        tr = self.sim.tracer
        if tr is not None:  # lets trace readers put this rank's endpoints on its host
            tr.emit("btl", "placement", f"rank{rank}", host=hostname)
        oob.publish(rank, settings.credits_policy)
        for srq in self.srqs:
            if srq is not None:
                self.credits.post_srr(srq, at_start=True)

    # -- public BtlModule surface ---------------------------------------------------------
    def register_recv(self, tag: int, callback) -> None:
        if not 0 <= tag < TAG_IB:
            raise ValueError(f"BTL tag {tag} outside 0..{TAG_IB - 1}")
        self._callbacks[tag] = callback

    def limits(self, peer: int) -> BtlLimits:
        """The same for every peer: one module, one device."""
        return BtlLimits(self.eager_limit, self.rndv_eager_limit, self.max_send_size)

    def rendezvous_limits(self, peer: int) -> RendezvousLimits:
        """The same for every peer: the device's resolved settings."""
        return self._rendezvous

    def send(self, peer: int, tag: int, payload, on_complete=None, high_priority=False) -> None:
        self._raise_if_failed()
        n = len(payload)
        frag = self._send_frag(self._order_for(n), tag, payload, n, on_complete, high_priority)
        ep = self.endpoint(peer)
        frag.ep = ep
        self.submit(ep, frag)

    def sendi(self, peer: int, tag: int, payload, high_priority: bool = False) -> bool:
        """Open MPI's ``btl_sendi``: send at once, or refuse (False) without queuing
        anything when the endpoint is not connected or the admission ``send`` would
        make says the fragment must wait; the caller then uses ``send``. Most ``sendi``
        sends ask for no completion (``CreditFlow.send_flags``): their frag is free again
        on return."""
        if self._fatal is not None:
            raise self._fatal
        ep = self.endpoints.get(peer)
        if ep is None or ep.state != _CONNECTED:
            return False
        n = len(payload)
        qs = ep.qps[0 if n <= self._first_size else self._order_for(n)]
        if high_priority and self.eager.sendi(ep, qs, tag, payload, n):
            return True  # through the ring, unsignaled: the common case, in one piece
        verdict = self.credits.admit(ep, qs, high_priority, n, True)
        if verdict < _BY_RING:
            return False
        frag = self._send_frag(qs.index, tag, payload, n, None, high_priority)
        frag.ep = ep
        self.credits.go(ep, qs, frag, verdict, True)
        return True

    def submit(self, ep: Endpoint, frag: Frag) -> None:
        """A new fragment for ``ep``: waits for the connection (opening it on first use),
        or goes through the credit flow's admission behind what already waits."""
        if ep.state != _CONNECTED:
            ep.wait_for_connection(frag)
            if ep.state == _CLOSED:
                self.connections.connect(ep)
            return
        self.credits.start_send(ep, frag, behind=True)

    def _send_frag(self, q: int, tag: int, payload, n: int, on_complete, high: bool) -> Frag:
        """A send frag of queue q with ``payload`` copied in behind the openib header:
        the copy that lets the caller reuse its buffer as soon as the call returns."""
        frag = self.get_frag(q, SEND)
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
        self._rdma(
            _WRITE, peer, local, local_offset, remote_key, remote_offset, length, on_complete
        )

    def get(self, peer, local, local_offset, remote_key, remote_offset, length, on_complete):
        self._rdma(_READ, peer, local, local_offset, remote_key, remote_offset, length, on_complete)

    def progress(self) -> int:
        """Poll the CQ and handle every completion; raises ``TransportError`` if fatal."""
        if self._fatal is not None:
            raise self._fatal
        eager = self.eager
        host = self.host
        handled = eager.poll() if eager.endpoints else 0
        if not handled and not self.cq.entries:
            host.owed += host.poll_empty  # a pass that found nothing (paid when it settles)
            return 0
        if handled:
            host.owed += host.completion * handled  # the eager-RDMA slots found full
        wcs = self.cq.poll(256)
        if wcs:
            if self.sim.in_process():
                # before handling them: ibv_poll_cq (the device's host_poll), the BTL's
                # dispatch of each CQE (the host's completion cost) and what it owes
                hp = self.host_poll
                n = len(wcs)
                spent = self.sim.duration("host.poll", hp[0], hp[1], hp[2]) * n
                spent += host.completion * n + host.owed
                host.owed = 0
                self.sim.sleep(spent)
            for wc in wcs:
                self._handle_wc(wc)
            handled += len(wcs)
        if self.check_invariants:
            self.assert_invariants()
        if self._fatal is not None:
            raise self._fatal
        return handled

    def wait_for_activity(self) -> None:
        if self._fatal is not None:
            raise self._fatal
        self.host.settle()  # the host's work is done before it goes idle
        if self.cq.entries or self.eager.any_pending():
            return
        self._activity = getcurrent()
        if not self._cq_armed:  # one notification request at a time, as ibv_req_notify_cq
            self._cq_armed = True
            self.cq.req_notify(self._cq_event)
        host = self.host
        host.idle()
        self.sim.suspend()
        host.spend(host.poll_phase())  # a busy-polling rank sees it at its next pass

    def oob_receive(self, src: int, kind: str, body) -> None:
        """An out-of-band connection message from ``src`` (``ConnectionSetup``)."""
        self.connections.oob_receive(src, kind, body)

    def _cq_event(self) -> None:
        self._cq_armed = False
        self.wake()

    def wake(self) -> None:
        """Resume the rank if it sleeps in ``wait_for_activity``."""
        waiter, self._activity = self._activity, None
        if waiter is not None:
            self.sim.resume(waiter)

    # -- queue selection, buffers, endpoints ----------------------------------------------
    def _order_for(self, nbytes: int) -> int:
        for i, q in enumerate(self.queues):
            if q.size >= nbytes:
                return i
        raise ValueError(
            f"fragment of {nbytes} bytes exceeds the largest receive queue "
            f"({self.queues[-1].size} bytes)"
        )

    def get_frag(self, q: int, kind: int) -> Frag:
        """A registered buffer of queue q's size class, from its free list or new."""
        free = self._free[q]
        if free:
            frag = free.pop()
            frag.kind = kind
            frag.order = q
            return frag
        # pages of a buffer nobody has written yet stay unallocated (a P queue of
        # 256 x 64 KiB buffers per peer costs address space, not memory)
        self._frag_count += 1
        return Frag(kind, None, self._buffers[q].take(), q, self._frag_count)

    def _return_frag(self, frag: Frag) -> None:
        frag.on_complete = None
        frag.eager = False
        frag.ep = None
        self._free[frag.qp].append(frag)

    def endpoint(self, peer: int) -> Endpoint:
        """The endpoint toward ``peer``, created (CLOSED) on first use."""
        ep = self.endpoints.get(peer)
        if ep is None:
            if peer == self.rank or peer < 0:
                raise ValueError(f"invalid peer {peer}")
            args = (self.rank, peer, self.queues, self.srqs, self.oob.policy_of(peer))
            ep = Endpoint(*args) if self.audit is None else AuditedEndpoint(self.audit, *args)
            self.endpoints[peer] = ep
        return ep

    def srq_of(self, q: int):
        """The verbs SRQ of queue q (None for a P queue): what its QPs attach to."""
        srq = self.srqs[q]
        return srq.srq if srq is not None else None

    def own_qp(self, qp, ep: Endpoint, q: int) -> None:
        """Completions and async events naming verbs QP ``qp`` are ``ep``'s, QP q: its
        ``qp_context`` says so (no table of our own: the context's ``find_qp`` finds the
        QP)."""
        qp.qp_context = ep.qps[q]

    def disown_qp(self, qp) -> None:
        qp.qp_context = None

    def _owner(self, qp_num: int) -> tuple[Endpoint, int] | None:
        """(endpoint, QP index) owning ``qp_num``, or None for a QP not this module's
        (destroyed, disowned, or a neighbour process's on a shared NIC)."""
        qp = self.context.find_qp(qp_num)
        qs = None if qp is None else qp.qp_context
        return None if qs is None else (qs.ep, qs.index)

    # -- posting --------------------------------------------------------------------------
    def post_control(
        self, ep: Endpoint, qs, frag: Frag, length: int, opcode, remote_addr: int = 0, rkey: int = 0
    ) -> None:
        """Post a control message (CTS, credits; SEND or a write into the eager ring) on
        QP state ``qs``: signaled, inline when it fits, carrying the unsignaled sends
        before it (Open MPI's ``post_send``)."""
        order = qs.index
        frag.order = order
        frag.ep = ep
        flags = self.SIGNALED_INLINE if length <= self.qp_inline[order] else self.SIGNALED
        qs.carry_unsignaled(frag)
        qs.qp.post_send(SendWR(frag, opcode, frag.sges(length), flags, 0, remote_addr, rkey))

    def post_frag(
        self,
        ep: Endpoint,
        qs,
        frag: Frag,
        frame: int,
        sendi: bool,
        opcode,
        remote_addr: int = 0,
        rkey: int = 0,
    ) -> None:
        """Post a data fragment of ``frame`` bytes (2.4 step 6). A signaled one carries
        the unsignaled sends before it; an unsignaled one is inline, so its frag is free
        again at once."""
        q = qs.index
        frag.order = q
        flags = self.credits.send_flags(qs, frame, sendi)
        wr_id = frag
        if flags & self.SIGNALED:
            qs.carry_unsignaled(frag)
        else:
            self.traffic[q].unsignaled += 1
            qs.posted_unsignaled(not frag.eager)
            wr_id = UNSIGNALED
        qs.qp.post_send(SendWR(wr_id, opcode, frag.sges(frame), flags, 0, remote_addr, rkey))
        if wr_id is not frag:
            self._return_frag(frag)

    def _rdma(self, opcode, peer, local, local_offset, remote_key, remote_offset, length, cb):
        self._raise_if_failed()
        ep = self.endpoint(peer)
        if ep.state != _CONNECTED:
            raise RuntimeError("RDMA before the endpoint is connected (the PML sends first)")
        qs = ep.qps[self.credits.rdma_qp]
        remote_addr = (remote_key >> _RKEY_BITS) + remote_offset
        rkey = remote_key & ((1 << _RKEY_BITS) - 1)
        frag = Frag(RDMA, local.buffer, local.mr, qs.index)
        frag.ep = ep
        frag.on_complete = cb
        # a small put goes inline, as Open MPI's (a get's data comes from the peer)
        inline = opcode == _WRITE and length <= self.qp_inline[qs.index]
        wr = SendWR(
            frag,
            opcode,
            (Sge(local.mr.addr + local_offset, length, local.mr.lkey),),
            self.SIGNALED_INLINE if inline else self.SIGNALED,
            remote_addr=remote_addr,
            rkey=rkey,
        )
        if ep.pending_rdma or not qs.acquire_wqe():
            # no free WQE: wait on the put/get pending list (Open MPI's pending_put_frags)
            ep.wait_for_rdma_wqe(wr)
            return
        self.post_rdma(ep, qs, wr)

    def post_rdma(self, ep: Endpoint, qs, wr) -> None:
        """Post a put/get whose WQE is taken: signaled, carrying the unsignaled sends
        before it; it restarts ``sendi``'s count to the next completion, as every
        signaled post does."""
        qs.carry_unsignaled(wr.wr_id)
        qs.reset_signal_count()
        self.traffic[qs.index].rdma_ops += 1
        qs.qp.post_send(wr)

    def post_recv_frag(self, ep: Endpoint, order: int, frag: Frag) -> None:
        frag.ep = ep
        frag.order = order
        ep.qps[order].qp.post_recv(RecvWR(frag, frag.sges(frag.capacity)))

    # -- completions ----------------------------------------------------------------------
    def _handle_wc(self, wc) -> None:
        frag = wc.wr_id
        if wc.status != _WC_SUCCESS:
            connections = self.connections
            if connections.is_retired(wc.qp_num) and wc.status == _WC_FLUSH:
                if isinstance(frag, Frag) and frag.kind != RDMA:
                    self._return_frag(frag)
                connections.retired_flushed(wc.qp_num)
                return
            self._wc_error(wc, frag)
            return
        if wc.opcode == _WC_RECV:
            self._handle_incoming(frag, wc)
            return
        ep = frag.ep
        kind = frag.kind
        credits = self.credits
        self.traffic[frag.order].completions += 1
        if kind == SEND:
            qs = ep.qps[frag.qp]
            qs.put_wqe()
            own_srq_credit = not frag.eager
            cb = frag.on_complete
            credits.give_back_unsignaled(qs, frag, own_srq_credit)
            self._return_frag(frag)
            credits.progress_wqe_pending(ep, qs)
            if cb is not None:
                cb()
        elif kind == CREDIT:
            qs = ep.qps[frag.order]
            if credits.give_back_unsignaled(qs, frag, False):
                credits.progress_wqe_pending(ep, qs)
            credits.credit_frag_done(ep, frag)
        elif kind == CTS:
            qs = ep.qps[frag.order]
            if credits.give_back_unsignaled(qs, frag, False):
                credits.progress_wqe_pending(ep, qs)
            self._return_frag(frag)
        elif kind == RDMA:
            qs = ep.qps[frag.qp]
            qs.put_wqe()
            credits.give_back_unsignaled(qs, frag, False)
            credits.progress_wqe_pending(ep, qs)
            frag.on_complete()

    def _handle_incoming(self, frag: Frag, wc) -> None:
        """A receive completion: the CTS, or a fragment for ``incoming``."""
        ep = frag.ep
        if frag.kind == CTS:
            self._return_frag(frag)
            self.connections.cts_received(ep)
            return
        rqp = frag.order
        if ep is None:  # SRQ buffer: find the peer from the source QP
            ep, rqp = self._srq_endpoint(wc)
        self.incoming(ep, rqp, frag.buf, wc.byte_len, frag)

    def incoming(self, ep: Endpoint, rqp: int, buf, nbytes: int, frag: Frag | None) -> None:
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
                eager = self.eager
                ep.eager_remote = EagerRdmaRemote(addr, rkey, eager.num, eager.slot)
                self.trace("eager_rdma_connected", ep, slots=eager.num)
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
        cs = ep.qps[cqp]
        if cm_seen:
            cs.cm_acknowledged(cm_seen)
        if frag is None:
            ep.eager_local.credits += 1  # the ring slot is free again
        else:
            self._return_frag(frag)
            ep.qps[rqp].buffer_consumed(self.credits, ep, cs, is_credit_msg)
            if nbytes < self.eager_limit:  # wc->byte_len (header included), as Open MPI
                self.eager.count(ep)
        if rcredits and ep.eager_remote is not None:
            ep.eager_remote.tokens += rcredits
        if credits:
            cs.credits_arrived(credits)
            self.trace("credits_in", ep, qp=cqp, credits=credits, explicit=is_credit_msg)
        if credits or rcredits:
            self.credits.progress_no_credits_pending(ep)
        self.credits.credits_due(ep, cs)  # send_credits(ep, cqp), one call fewer

    def _srq_endpoint(self, wc):
        found = self._owner(wc.qp_num)
        if found is None:
            raise RuntimeError(f"SRQ completion for unknown QP {wc.qp_num}")
        return found

    # -- failures -------------------------------------------------------------------------
    def _wc_error(self, wc, frag) -> None:
        if self._fatal is not None:
            return
        ep = frag.ep if isinstance(frag, Frag) else None
        if ep is None:
            ep, _ = self._owner(wc.qp_num) or (None, 0)
        self._fail(ep, wc.qp_num, wc.status.name, f"work completion status {wc.status.name}")

    def _on_async(self, event) -> None:
        kind = event.event_type
        if kind == AsyncEventType.SRQ_LIMIT_REACHED:
            srq = self._srq_index.get(event.qp_num)
            if srq is not None:
                self.credits.srq_limit_reached(srq)
            return
        if self._fatal is None and kind in (AsyncEventType.QP_FATAL, AsyncEventType.CQ_ERR):
            owned = self._owner(event.qp_num)
            if owned is None and kind == AsyncEventType.QP_FATAL:
                # not a live QP of this module: a neighbour process's on the shared NIC,
                # or one this module retired itself; neither is this process's failure
                # (a CQ_ERR is always ours: the CQ is this module's)
                return
            ep = owned[0] if owned is not None else None
            self._fail(ep, event.qp_num, kind.name, event.reason)
        self.wake()

    def _fail(self, ep, qp_num: int, status: str, detail: str) -> None:
        q = (self._owner(qp_num) or (None, -1))[1]
        if ep is not None:
            ep.state = EndpointState.FAILED
        report = failure_report(self, ep, q, status, detail)
        self.trace("fatal", ep, qp=q, status=status)
        self._fatal = TransportError(
            report,
            status=status,
            peer=ep.peer if ep else -1,
            qp_index=q,
            time_ps=self.sim.now,
            detail=detail,
        )

    def _raise_if_failed(self) -> None:
        if self._fatal is not None:
            raise self._fatal

    @property
    def failed(self) -> TransportError | None:
        return self._fatal

    # -- what the module can say about itself ---------------------------------------------
    def describe_stall(self) -> list[str]:
        """Where this module's fragments wait in a hang (``CreditFlow.describe_stall``)."""
        return self.credits.describe_stall(self.rank, self.endpoints)

    def assert_invariants(self) -> None:
        """Every credit invariant between progress calls (``InvariantViolation``)."""
        self.credits.check(self.rank, self.endpoints)

    def assert_conservation(self, peer_module: OpenibModule) -> None:
        """Credits from me to ``peer_module`` conserved (``Endpoint.check_conservation``)."""
        ep = self.endpoints.get(peer_module.rank)
        pep = peer_module.endpoints.get(self.rank)
        if ep is not None and pep is not None:
            ep.check_conservation(pep)

    def trace(self, kind: str, ep, **fields) -> None:
        tr = self.sim.tracer
        if tr is not None:
            tr.emit("btl", kind, f"rank{self.rank}->{ep.peer if ep else '?'}", **fields)
