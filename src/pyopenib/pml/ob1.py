"""The matching engine and its protocols, after Open MPI's ob1 PML.

Owns: posted and unexpected queues per communicator context, per-(context, peer)
sequence numbers, the eager / rendezvous (RDMA write) / synchronous protocols, and the
self path. Knows nothing of QPs: only what ``BtlModule`` advertises (eager_limit,
rndv_eager_limit, max_send_size, put). Never blocks: the MPI layer drives ``progress``.

Ordering (MPI's non-overtaking rule): the BTL may deliver a large message after a small
one sent later (they travel on different QPs), so every matching header carries a
sequence number and a fragment that arrives early waits in ``_cant_match`` until its
predecessors were matched — ob1's ``frags_cant_match``.

Send-immediate: an eager MATCH fragment first tries the BTL's ``sendi`` (ob1's
``send_inline`` / ``send_request_start_copy``), which sends at once or refuses; only a
refusal takes the regular ``send``, which may queue.

Priority: every PML control message (MATCH, RNDV, ACK, FIN, PUT, PUT_FIN) goes to the
BTL as high priority, as ob1 flags them ``MCA_BTL_DES_FLAGS_PRIORITY``; that is what lets
the openib BTL carry them on an eager-RDMA ring once a peer is frequent enough. The bulk
of a rendezvous travels by RDMA write, or (without leave_pinned) by copy-in/out FRAGs
at normal priority and the RDMA pipeline: ``pipeline.py`` says which message takes which.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping

import numpy as np

from ..btl.interface import RendezvousLimits
from .header import (
    ACK,
    ACK_HDR,
    BTL_TAG_PML,
    FIN,
    FLAG_CONTIG,
    FLAG_NORDMA,
    FLAG_PIN,
    FRAG,
    ID_HDR,
    MATCH,
    MATCH_HDR,
    PUT,
    PUT_FIN,
    RNDV,
    RNDV_HDR,
)
from .osc import Combine, OscModule
from .pipeline import RendezvousPaths, copy_offset, sender_pins
from .request import ANY_SOURCE, ANY_TAG, EAGER_SENT, PmlRequest, RecvRequest, SendRequest

__all__ = ["Pml"]


class _Unexpected:
    """A matching fragment that found no posted receive (payload copied out of the BTL)."""

    __slots__ = ("peer", "source", "tag", "kind", "payload", "total", "send_id", "flags")

    def __init__(self, peer, source, tag, kind, payload, total, send_id, flags=0):
        self.peer = peer
        self.source = source
        self.tag = tag
        self.kind = kind
        self.payload = payload
        self.total = total
        self.send_id = send_id
        self.flags = flags
        """A RNDV's header flags (``FLAG_PIN``: the sender registered its buffer)."""


_MATCH_LEN = MATCH_HDR.size
_RNDV_LEN = RNDV_HDR.size
_pack_match = MATCH_HDR.pack
_unpack_match = MATCH_HDR.unpack_from
_U8 = np.uint8


class Pml:
    """One process's PML over its BTL module. Ranks in headers are communicator ranks;
    ``peer`` arguments are world ranks (the BTL's process index).

    Hot paths (an eager send, an eager fragment that finds its receive posted, a receive
    that finds its fragment waiting) allocate one request at most and format no text;
    they are written out inline rather than through the general rendezvous machinery.
    """

    def __init__(self, btl):
        self.btl = btl
        self.rank = btl.rank
        self._eager_payload = btl.eager_limit - _MATCH_LEN
        self._rts_payload = max(0, min(btl.rndv_eager_limit, btl.eager_limit) - _RNDV_LEN)
        self._frag = btl.max_send_size
        # ob1 reads the limits of the BTL that reaches each peer; a module that routes
        # peers to different BTLs (the BML) declares it (``limits_per_peer``)
        self._btl_limits = btl.limits if btl.limits_per_peer else None
        self._peer_limits: dict[int, tuple[int, int, int]] = {}
        self._next_id = 1
        self._send_seq: dict[int, dict[int, int]] = {}
        """Per context, per peer: the next message's sequence number (ob1's per-
        communicator ``send_sequence``). Two levels, not one (ctx, peer) key: a 1024-rank
        alltoall holds a million of these, and a key tuple is 56 bytes."""
        self._expected_seq: dict[int, dict[int, int]] = {}
        """Per context, per peer: the sequence number the next match must carry."""
        self._cant_match: dict[tuple[int, int], dict[int, bytes]] = {}
        self._posted: dict[int, list[RecvRequest]] = {}
        self._unexpected: dict[int, list[_Unexpected]] = {}
        self._live: dict[int, PmlRequest] = {}
        self._self_queue: deque = deque()
        self._btl_send = btl.send
        self._btl_sendi = btl.sendi
        self._btl_progress = btl.progress
        self._host = btl.host  # the process's CPU: calls, matching and copies cost time
        # the BTL's own method, bound here: a blocked rank calls it once per message, and
        # the PML adds nothing to it (see ``wait_for_activity`` below for what it does)
        self.wait_for_activity = btl.wait_for_activity
        self._progress_hooks: list = []
        self._rendezvous_limits: dict[int, RendezvousLimits | None] = {}
        self._paths = RendezvousPaths(self, self._live)
        btl.register_recv(BTL_TAG_PML, self._on_message)

    def _limits(self, peer: int) -> tuple[int, int, int]:
        """(eager payload, RTS payload, pipeline fragment) for ``peer``'s BTL."""
        limits = self._peer_limits.get(peer)
        if limits is None:
            eager, rndv, frag = self._btl_limits(peer)
            limits = (eager - _MATCH_LEN, max(0, min(rndv, eager) - _RNDV_LEN), frag)
            self._peer_limits[peer] = limits
        return limits

    def frag_size(self, peer: int) -> int:
        """The largest fragment (header included) of a pipelined send to ``peer``."""
        return self._frag if self._btl_limits is None else self._limits(peer)[2]

    def rendezvous_limits(self, peer: int) -> RendezvousLimits | None:
        """How a rendezvous to or from ``peer`` may travel (``BtlModule.rendezvous_limits``)."""
        cache = self._rendezvous_limits
        if peer not in cache:
            cache[peer] = self.btl.rendezvous_limits(peer)
        return cache[peer]

    def eager_payload(self, peer: int) -> int:
        """The largest payload ``isend`` sends eagerly to ``peer`` (its BTL's eager limit
        less the MATCH header): what a buffered send may send without attached space."""
        if self._btl_limits is None:
            return self._eager_payload
        return self._limits(peer)[0]

    # -- requests -----------------------------------------------------------------------
    def _new_id(self) -> int:
        rid = self._next_id
        self._next_id = rid + 1
        return rid

    def _done(self, req: PmlRequest) -> None:
        req.complete = True
        self._live.pop(req.id, None)

    def pending_requests(self) -> list[PmlRequest]:
        """Incomplete requests in creation order (for deadlock reports)."""
        return list(self._live.values())

    # -- sending ------------------------------------------------------------------------
    def isend(
        self, data, peer: int, ctx: int, source: int, tag: int, sync: bool = False, label="send"
    ) -> SendRequest:
        """Start sending ``data`` (bytes-like: uint8 array or bytes, unchanged until
        completion) to world rank ``peer`` as communicator rank ``source`` of context
        ``ctx``. An eager send is complete on return (``EAGER_SENT``)."""
        seqs = self._send_seq.get(ctx)
        if seqs is None:
            seqs = self._send_seq[ctx] = {}
        seq = seqs.get(peer, 0)
        seqs[peer] = seq + 1
        n = len(data)
        to_self = peer == self.rank
        if self._btl_limits is None:
            eager_payload = self._eager_payload
        else:
            eager_payload = self._limits(peer)[0]
        host = self._host
        if not sync and (n <= eager_payload or to_self):
            # the call, the BTL's descriptor and the copy of the payload into it, before
            # the doorbell
            host.spend(host.mpi_call + host.btl_send + host.copy(n))
            msg = b"".join((_pack_match(MATCH, ctx, source, tag, seq), data))
            if to_self:
                self._self_queue.append(msg)
            elif not self._btl_sendi(peer, BTL_TAG_PML, msg, True):
                self._btl_send(peer, BTL_TAG_PML, msg, None, True)
            return EAGER_SENT
        if type(data) is not np.ndarray:
            data = np.frombuffer(data, _U8)
        req = SendRequest(self._new_id(), label, peer, data)
        self._live[req.id] = req
        # Open MPI's btl/self moves any size in one step; the openib path sends an RTS.
        rts_payload = self._rts_payload if self._btl_limits is None else self._limits(peer)[1]
        first = n if to_self else min(n, rts_payload)
        req.pending = n - first
        host.spend(host.mpi_call + host.btl_send + host.copy(first))
        flags = FLAG_CONTIG
        if to_self or sender_pins(self.rendezvous_limits(peer), n):
            flags |= FLAG_PIN
        hdr = RNDV_HDR.pack(RNDV, flags, ctx, source, tag, seq, n, req.id)
        self.send_control(peer, b"".join((hdr, data[:first])))
        return req

    # -- receiving ----------------------------------------------------------------------
    def irecv(
        self, buffer: np.ndarray | None, ctx: int, source: int, tag: int, label="recv"
    ) -> RecvRequest:
        """Post a receive into ``buffer`` (writable contiguous uint8, or None to allocate
        on match). Complete on return when a matching eager fragment was waiting."""
        rid = self._next_id  # _new_id, inlined: every receive takes one
        self._next_id = rid + 1
        req = RecvRequest(rid, label, ctx, source, tag, buffer)
        host = self._host
        host.spend(host.mpi_call + host.match)  # the request and the unexpected-queue search
        queue = self._unexpected.get(ctx)
        if queue:
            for i, frag in enumerate(queue):
                ftag = frag.tag
                if (source == frag.source or source == ANY_SOURCE) and (
                    tag == ftag or (tag == ANY_TAG and ftag >= 0)
                ):
                    del queue[i]
                    if frag.kind == MATCH:
                        host.spend(host.copy(len(frag.payload)))  # out of the unexpected buffer
                        _fill_eager(req, frag.source, ftag, frag.payload)
                    else:
                        self._live[req.id] = req
                        self._deliver(req, frag.peer, frag)
                    return req
        self._live[req.id] = req
        posted = self._posted.get(ctx)
        if posted is None:
            self._posted[ctx] = [req]
        else:
            posted.append(req)
        return req

    def iprobe(self, ctx: int, source: int, tag: int) -> tuple[int, int, int] | None:
        """(source, tag, total bytes) of the first unexpected message that matches."""
        probe = RecvRequest(0, "probe", ctx, source, tag, None)
        for frag in self._unexpected.get(ctx, ()):
            if probe.matches(frag.source, frag.tag):
                return frag.source, frag.tag, frag.total
        return None

    def improbe(self, ctx: int, source: int, tag: int) -> _Unexpected | None:
        """Matched probe (``MPI_Improbe``): take the first unexpected message that matches
        off the queue, so that no other receive can match it; ``imrecv`` receives it.
        Its ``source``, ``tag`` and ``total`` (bytes) are the status to report."""
        queue = self._unexpected.get(ctx)
        if queue:
            for i, frag in enumerate(queue):
                ftag = frag.tag
                if (source == frag.source or source == ANY_SOURCE) and (
                    tag == ftag or (tag == ANY_TAG and ftag >= 0)
                ):
                    del queue[i]
                    return frag
        return None

    def imrecv(
        self, frag: _Unexpected, buffer: np.ndarray | None, ctx: int, label="mrecv"
    ) -> RecvRequest:
        """Receive a message ``improbe`` took (``MPI_Imrecv``): like ``irecv`` finding it
        first in the unexpected queue."""
        req = RecvRequest(self._new_id(), label, ctx, frag.source, frag.tag, buffer)
        if frag.kind == MATCH:
            _fill_eager(req, frag.source, frag.tag, frag.payload)
        else:
            self._live[req.id] = req
            self._deliver(req, frag.peer, frag)
        return req

    def cancel(self, req: PmlRequest) -> bool:
        """Cancel a posted, unmatched receive (sends cannot be cancelled once started)."""
        if isinstance(req, RecvRequest) and not req.complete:
            posted = self._posted.get(req.ctx, [])
            if req in posted:
                posted.remove(req)
                req.cancelled = True
                req.source = ANY_SOURCE  # Open MPI: a cancelled receive's status is empty
                req.tag = ANY_TAG
                self._done(req)
                return True
        return False

    # -- progress -----------------------------------------------------------------------
    def progress(self) -> int:
        """Handle self messages and BTL completions, then run the registered progress
        hooks; returns how many things advanced."""
        q = self._self_queue
        if not q and not self._progress_hooks:
            n = self._btl_progress()
            host = self._host
            if host.owed:  # the matching and copies of what the pass handled
                host.settle()
            return n
        n = 0
        while q:
            self._on_message(self.rank, memoryview(q.popleft()))
            n += 1
        n += self._btl_progress()
        for hook in tuple(self._progress_hooks):
            n += hook()
        self._host.settle()
        return n

    def register_progress(self, hook) -> None:
        """Call ``hook()`` (it returns how much it advanced) on every progress pass, as
        Open MPI's libnbc registers its schedules' progress with ``opal_progress``: a
        nonblocking collective moves on while its rank waits in any MPI call."""
        self._progress_hooks.append(hook)

    def unregister_progress(self, hook) -> None:
        self._progress_hooks.remove(hook)

    def wait_for_activity(self) -> None:
        """Block the process until its BTL has something to progress (a completion, an
        arrival): what a caller does after a ``progress()`` pass found nothing, as
        ``opal_progress`` yields the CPU. The MPI layer waits through the PML, never
        through the BTL underneath it. (Each instance binds the BTL's method over this
        one in ``__init__``, so the wait costs no call of the PML's own.)"""
        self.btl.wait_for_activity()

    def wake(self) -> None:
        """End a ``wait_for_activity`` of the process early: another of its threads
        queued work only a progress pass handles (a message to itself), as Open MPI's
        ``wait_sync`` signals the thread that waits."""
        self.btl.wake()

    def one_sided(self, ops: Mapping[str, Combine]) -> OscModule:
        """This process's one-sided (osc) component over the BTL the PML runs on: Open
        MPI's osc/rdma takes its put/get/atomics from the same BTL modules as ob1. One
        per process, made at its first window (``ops`` are the accumulate operations)."""
        return OscModule(self.btl, ops)

    def _on_message(self, peer: int, view: memoryview) -> None:
        kind = view[0]
        if kind == MATCH or kind == RNDV:
            host = self._host
            # matching, and the payload's copy out of the BTL's buffer (into the posted
            # receive, or the unexpected queue's copy); paid when the pass settles
            host.owed += host.match + host.copy(len(view) - _MATCH_LEN)
            _, ctx, source, tag, seq = _unpack_match(view)
            expected_seq = self._expected_seq.get(ctx)
            if expected_seq is None:
                expected_seq = self._expected_seq[ctx] = {}
            expected = expected_seq.get(peer, 0)
            if seq != expected:
                self._cant_match.setdefault((ctx, peer), {})[seq] = bytes(view)
                return
            self._match(peer, kind, ctx, source, tag, view)
            expected += 1
            if self._cant_match:
                key = (ctx, peer)
                waiting = self._cant_match.get(key)
                while waiting and expected in waiting:
                    early = memoryview(waiting.pop(expected))
                    _, _, esource, etag, _ = _unpack_match(early)
                    self._match(peer, early[0], ctx, esource, etag, early)
                    expected += 1
                if waiting is not None and not waiting:
                    del self._cant_match[key]
            expected_seq[peer] = expected
        elif kind == ACK:
            _, flags, send_id, recv_id, key, offset = ACK_HDR.unpack_from(view)
            req = self._live[send_id]
            if key or offset >= len(req.data):
                self._on_ack(req, recv_id, key, offset)
            else:  # no registration: the rest by copy in/out (and the RDMA pipeline's PUTs)
                req.recv_id = recv_id
                limits = self.rendezvous_limits(peer)
                self._paths.start_copy(req, offset, bool(flags & FLAG_NORDMA), limits)
        elif kind == FIN:
            _, recv_id = ID_HDR.unpack_from(view)
            self._on_fin(self._live[recv_id])
        elif kind == FRAG or kind == PUT or kind == PUT_FIN:
            self._paths.on_message(kind, view)
        else:
            raise ValueError(f"PML received unknown header type {kind} from rank {peer}")

    def _match(self, peer: int, kind: int, ctx: int, source: int, tag: int, view) -> None:
        posted = self._posted.get(ctx)
        if posted:
            for i, req in enumerate(posted):
                ws = req.want_source
                wt = req.want_tag
                if (ws == source or ws == ANY_SOURCE) and (
                    wt == tag or (wt == ANY_TAG and tag >= 0)
                ):
                    del posted[i]
                    if kind == MATCH:
                        _fill_eager(req, source, tag, view[_MATCH_LEN:])
                        del self._live[req.id]
                    else:
                        self._deliver(req, peer, self._rndv_frag(peer, source, tag, view, False))
                    return
        if kind == MATCH:
            payload = bytes(view[_MATCH_LEN:])
            frag = _Unexpected(peer, source, tag, MATCH, payload, len(payload), 0)
        else:
            frag = self._rndv_frag(peer, source, tag, view, True)
        queue = self._unexpected.get(ctx)
        if queue is None:
            self._unexpected[ctx] = [frag]
        else:
            queue.append(frag)

    @staticmethod
    def _rndv_frag(peer, source, tag, view, copy: bool) -> _Unexpected:
        _, flags, _, _, _, _, total, send_id = RNDV_HDR.unpack_from(view)
        payload = view[_RNDV_LEN:]
        return _Unexpected(
            peer, source, tag, RNDV, bytes(payload) if copy else payload, total, send_id, flags
        )

    def _deliver(self, req: RecvRequest, peer: int, frag: _Unexpected) -> None:
        """A receive matched an RTS: copy its first fragment, then ACK (and wait for the
        rest, unless the RTS carried everything): with a key when both buffers are
        registered (RDMA writes, then one FIN), else with the offset where copy in/out
        starts, the RDMA pipeline asking for the bytes before it (``pipeline.py``)."""
        req.source = frag.source
        req.tag = frag.tag
        host = self._host
        host.owed += host.btl_send  # the ACK's descriptor
        total = req.sent = frag.total
        buf = req.buffer
        if buf is None:
            target = np.empty(total, dtype=_U8)
            req.data = target
            req.count = total
        elif total <= len(buf):
            target = buf
            req.count = total
        else:
            req.truncated = True
            req.count = len(buf)
            target = np.empty(total, dtype=_U8)
        payload = frag.payload
        first = len(payload)
        if first:
            target[:first] = np.frombuffer(payload, dtype=_U8)
        if first == total:
            if target is not buf and buf is not None:
                buf[:] = target[: len(buf)]
            self.send_control(peer, ACK_HDR.pack(ACK, 0, frag.send_id, 0, 0, total))
            self._done(req)
            return
        req._target = target
        limits = self.rendezvous_limits(peer)
        # the sender registered, and so does the receiver by the same rule, its buffer
        # whole (``mca_pml_ob1_rdma_btls`` on ``req_bytes_packed``)
        if frag.flags & FLAG_PIN and sender_pins(limits, total if buf is None else len(buf)):
            req._handle = handle = self.btl.register_memory(target)
            ack = ACK_HDR.pack(ACK, 0, frag.send_id, req.id, handle.key, first)
            self.send_control(peer, ack)
            return
        req.pending = total - first
        copy_from = copy_offset(limits, total, first)
        if copy_from < total:  # ob1 sends no ACK when nothing goes by copy in/out
            flags = FLAG_NORDMA if copy_from == first else 0
            ack = ACK_HDR.pack(ACK, flags, frag.send_id, req.id, 0, copy_from)
            self.send_control(peer, ack)
        self._paths.start_pipeline(req, peer, frag.send_id, first, copy_from, limits)

    def complete_send(self, req: SendRequest) -> None:
        """Every byte of a copy-in/out or pipelined send is delivered."""
        self._done(req)

    def complete_recv(self, req: RecvRequest) -> None:
        """Every byte of a copy-in/out or pipelined receive is in place."""
        target = req._target
        req._target = None
        if req.buffer is not None and target is not req.buffer:
            req.buffer[:] = target[: len(req.buffer)]
        self._done(req)

    def send_control(self, peer: int, msg: bytes) -> None:
        """Send a PML control message to ``peer`` (to itself through the self queue)."""
        if peer == self.rank:
            self._self_queue.append(msg)
        else:
            self._btl_send(peer, BTL_TAG_PML, msg, None, True)

    def _on_ack(self, req: SendRequest, recv_id: int, key: int, offset: int) -> None:
        """Receiver is ready: RDMA-write the rest in max_send_size pieces, then FIN."""
        req.recv_id = recv_id
        total = len(req.data)
        if offset >= total:
            self._done(req)
            return
        req._handle = handle = self.btl.register_memory(req.data)
        step = self._frag if self._btl_limits is None else self._limits(req.peer)[2]
        req.puts_left = (total - offset + step - 1) // step
        host = self._host
        host.owed += host.btl_send * req.puts_left  # one descriptor per RDMA write
        for off in range(offset, total, step):
            n = min(step, total - off)
            self.btl.put(req.peer, handle, off, key, off, n, lambda r=req: self._on_put(r))

    def _on_put(self, req: SendRequest) -> None:
        req.puts_left -= 1
        if req.puts_left == 0:
            self._finish_rndv(req)

    def _finish_rndv(self, req: SendRequest) -> None:
        self.btl.deregister_memory(req._handle)  # every RDMA write of it has completed
        req._handle = None
        host = self._host
        host.owed += host.btl_send  # the FIN's descriptor
        self.send_control(req.peer, ID_HDR.pack(FIN, req.recv_id))
        self._done(req)

    def _on_fin(self, req: RecvRequest) -> None:
        self.btl.deregister_memory(req._handle)  # the sender's writes are all in
        req._handle = None
        self.complete_recv(req)


def _fill_eager(req: RecvRequest, source: int, tag: int, payload) -> None:
    """Complete ``req`` with an eager payload (the caller unlinks it from the queues)."""
    req.source = source
    req.tag = tag
    n = req.sent = len(payload)
    buf = req.buffer
    if buf is None:
        req.data = np.frombuffer(bytes(payload), _U8)
        req.count = n
    else:
        room = len(buf)
        if n > room:
            req.truncated = True
            n = room
            payload = payload[:room]
        if n:
            memoryview(buf)[:n] = payload
        req.count = n
    req.complete = True
