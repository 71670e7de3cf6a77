"""The matching engine and its protocols, after Open MPI's ob1 PML.

Owns: posted and unexpected queues per communicator context, per-(context, peer)
sequence numbers, the eager / rendezvous (RDMA write) / synchronous protocols, and the
self path. Knows nothing of QPs: only what ``BtlModule`` advertises (eager_limit,
rndv_eager_limit, max_send_size, put). Never blocks: the MPI layer drives ``progress``.

Ordering (MPI's non-overtaking rule): the BTL may deliver a large message after a small
one sent later (they travel on different QPs), so every matching header carries a
sequence number and a fragment that arrives early waits in ``_cant_match`` until its
predecessors were matched — ob1's ``frags_cant_match``.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from .header import ACK, ACK_HDR, BTL_TAG_PML, FIN, ID_HDR, MATCH, MATCH_HDR, RNDV, RNDV_HDR
from .request import PmlRequest, RecvRequest, SendRequest

__all__ = ["Pml"]


class _Unexpected:
    """A matching fragment that found no posted receive (payload copied out of the BTL)."""

    __slots__ = ("peer", "source", "tag", "kind", "payload", "total", "send_id")

    def __init__(self, peer, source, tag, kind, payload, total, send_id):
        self.peer = peer
        self.source = source
        self.tag = tag
        self.kind = kind
        self.payload = payload
        self.total = total
        self.send_id = send_id


class Pml:
    """One process's PML over its BTL module. Ranks in headers are communicator ranks;
    ``peer`` arguments are world ranks (the BTL's process index)."""

    def __init__(self, btl):
        self.btl = btl
        self.rank = btl.rank
        self._eager_payload = btl.eager_limit - MATCH_HDR.size
        self._rts_payload = max(0, min(btl.rndv_eager_limit, btl.eager_limit) - RNDV_HDR.size)
        self._frag = btl.max_send_size
        self._next_id = 1
        self._send_seq: dict[tuple[int, int], int] = {}
        self._expected_seq: dict[tuple[int, int], int] = {}
        self._cant_match: dict[tuple[int, int], dict[int, bytes]] = {}
        self._posted: dict[int, list[RecvRequest]] = {}
        self._unexpected: dict[int, list[_Unexpected]] = {}
        self._live: dict[int, PmlRequest] = {}
        self._self_queue: deque = deque()
        btl.register_recv(BTL_TAG_PML, self._on_message)

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
        self,
        data: np.ndarray,
        peer: int,
        ctx: int,
        source: int,
        tag: int,
        sync: bool = False,
        label: str = "send",
    ) -> SendRequest:
        """Start sending ``data`` (uint8, unchanged until completion) to world rank ``peer``
        as communicator rank ``source`` of context ``ctx``."""
        req = SendRequest(self._new_id(), label, peer, data)
        key = (ctx, peer)
        seq = self._send_seq.get(key, 0)
        self._send_seq[key] = seq + 1
        n = len(data)
        to_self = peer == self.rank
        if not sync and (to_self or n <= self._eager_payload):
            hdr = MATCH_HDR.pack(MATCH, ctx, source, tag, seq)
            self._send_control(peer, hdr + data.tobytes())
            req.complete = True
            return req
        self._live[req.id] = req
        # Open MPI's btl/self moves any size in one step; the openib path sends an RTS.
        first = n if to_self else min(n, self._rts_payload)
        hdr = RNDV_HDR.pack(RNDV, ctx, source, tag, seq, n, req.id)
        self._send_control(peer, hdr + data[:first].tobytes())
        return req

    # -- receiving ----------------------------------------------------------------------
    def irecv(
        self, buffer: np.ndarray | None, ctx: int, source: int, tag: int, label: str = "recv"
    ) -> RecvRequest:
        """Post a receive into ``buffer`` (writable uint8, or None to allocate on match)."""
        req = RecvRequest(self._new_id(), label, ctx, source, tag, buffer)
        self._live[req.id] = req
        queue = self._unexpected.get(ctx)
        if queue:
            for i, frag in enumerate(queue):
                if req.matches(frag.source, frag.tag):
                    del queue[i]
                    self._deliver(req, frag.peer, frag)
                    return req
        self._posted.setdefault(ctx, []).append(req)
        return req

    def iprobe(self, ctx: int, source: int, tag: int) -> tuple[int, int, int] | None:
        """(source, tag, total bytes) of the first unexpected message that matches."""
        probe = RecvRequest(0, "probe", ctx, source, tag, None)
        for frag in self._unexpected.get(ctx, ()):
            if probe.matches(frag.source, frag.tag):
                return frag.source, frag.tag, frag.total
        return None

    def cancel(self, req: PmlRequest) -> bool:
        """Cancel a posted, unmatched receive (sends cannot be cancelled once started)."""
        if isinstance(req, RecvRequest) and not req.complete:
            posted = self._posted.get(req.ctx, [])
            if req in posted:
                posted.remove(req)
                req.cancelled = True
                self._done(req)
                return True
        return False

    # -- progress -----------------------------------------------------------------------
    def progress(self) -> int:
        """Handle self messages and BTL completions; returns how many were handled."""
        n = 0
        q = self._self_queue
        while q:
            self._on_message(self.rank, memoryview(q.popleft()))
            n += 1
        return n + self.btl.progress()

    def _on_message(self, peer: int, view: memoryview) -> None:
        kind = view[0]
        if kind == MATCH or kind == RNDV:
            _, ctx, _, _, seq = MATCH_HDR.unpack_from(view)
            key = (ctx, peer)
            expected = self._expected_seq.get(key, 0)
            if seq != expected:
                self._cant_match.setdefault(key, {})[seq] = bytes(view)
                return
            self._match(peer, kind, view)
            expected += 1
            waiting = self._cant_match.get(key)
            while waiting and expected in waiting:
                self._match(peer, waiting[expected][0], memoryview(waiting.pop(expected)))
                expected += 1
            self._expected_seq[key] = expected
        elif kind == ACK:
            _, send_id, recv_id, key, offset = ACK_HDR.unpack_from(view)
            self._on_ack(self._live[send_id], recv_id, key, offset)
        elif kind == FIN:
            _, recv_id = ID_HDR.unpack_from(view)
            self._on_fin(self._live[recv_id])
        else:
            raise ValueError(f"PML received unknown header type {kind} from rank {peer}")

    def _match(self, peer: int, kind: int, view: memoryview) -> None:
        if kind == MATCH:
            _, ctx, source, tag, _ = MATCH_HDR.unpack_from(view)
            payload = view[MATCH_HDR.size :]
            total, send_id = len(payload), 0
        else:
            _, ctx, source, tag, _, total, send_id = RNDV_HDR.unpack_from(view)
            payload = view[RNDV_HDR.size :]
        posted = self._posted.get(ctx)
        if posted:
            for i, req in enumerate(posted):
                if req.matches(source, tag):
                    del posted[i]
                    frag = _Unexpected(peer, source, tag, kind, payload, total, send_id)
                    self._deliver(req, peer, frag)
                    return
        frag = _Unexpected(peer, source, tag, kind, bytes(payload), total, send_id)
        self._unexpected.setdefault(ctx, []).append(frag)

    def _deliver(self, req: RecvRequest, peer: int, frag: _Unexpected) -> None:
        """A receive matched a fragment: copy eager data, or start the rendezvous."""
        req.source = frag.source
        req.tag = frag.tag
        total = frag.total
        buf = req.buffer
        if buf is None:
            target = np.empty(total, dtype=np.uint8)
            req.data = target
            req.count = total
        elif total <= len(buf):
            target = buf
            req.count = total
        else:
            req.truncated = True
            req.count = len(buf)
            target = np.empty(total, dtype=np.uint8)
        payload = frag.payload
        first = len(payload)
        if first:
            target[:first] = np.frombuffer(payload, dtype=np.uint8)
        if first == total:
            if target is not buf and buf is not None:
                buf[:] = target[: len(buf)]
            if frag.kind == RNDV:
                self._send_control(peer, ACK_HDR.pack(ACK, frag.send_id, 0, 0, total))
            self._done(req)
            return
        req._target = target
        handle = self.btl.register_memory(target)
        self._send_control(peer, ACK_HDR.pack(ACK, frag.send_id, req.id, handle.key, first))

    def _send_control(self, peer: int, msg: bytes) -> None:
        if peer == self.rank:
            self._self_queue.append(msg)
        else:
            self.btl.send(peer, BTL_TAG_PML, msg)

    def _on_ack(self, req: SendRequest, recv_id: int, key: int, offset: int) -> None:
        """Receiver is ready: RDMA-write the rest in max_send_size pieces, then FIN."""
        req.recv_id = recv_id
        total = len(req.data)
        if offset >= total:
            self._done(req)
            return
        handle = self.btl.register_memory(req.data)
        step = self._frag
        req.puts_left = (total - offset + step - 1) // step
        for off in range(offset, total, step):
            n = min(step, total - off)
            self.btl.put(req.peer, handle, off, key, off, n, lambda r=req: self._on_put(r))

    def _on_put(self, req: SendRequest) -> None:
        req.puts_left -= 1
        if req.puts_left == 0:
            self._finish_rndv(req)

    def _finish_rndv(self, req: SendRequest) -> None:
        self._send_control(req.peer, ID_HDR.pack(FIN, req.recv_id))
        self._done(req)

    def _on_fin(self, req: RecvRequest) -> None:
        target = req._target
        req._target = None
        if req.buffer is not None and target is not req.buffer:
            req.buffer[:] = target[: len(req.buffer)]
        self._done(req)
