"""One-sided communication, after Open MPI's osc/rdma component (the PML floor).

What goes where, as osc/rdma does it over a BTL:

- ``Put`` is one RDMA WRITE and ``Get`` one RDMA READ on the BTL's ``put``/``get`` (the
  openib BTL posts them on its last QP, Open MPI's ``rdma_qp``; a peer on the same node
  goes through the sm BTL's single copy). The origin's bytes travel through a registered
  bounce buffer from a small pool (osc/rdma's buffered put for small transfers; here for
  all sizes, so a user buffer is never registered per operation). Window memory is
  registered once at creation (or ``Attach``) and released at ``Free`` (or ``Detach``).
- The simulated devices have no network atomics, so accumulate, get-accumulate,
  fetch-and-op and compare-and-swap take osc/rdma's fallback for a BTL without
  ``btl_atomic_*``: an active message on ``BTL_TAG_OSC`` that the TARGET applies inside
  its own progress (Open MPI 4.1's ``btl/base`` active-message RDMA emulation). As there,
  a target that never enters MPI never applies them: MPI promises no asynchronous
  progress.
- Passive-target locks are active messages too (osc/rdma takes them with a BTL atomic on
  the target's lock word; without atomics the target's queue of lock requests is the
  lock): LOCK is granted first come, first served, shared locks together.
- PSCW's POST and COMPLETE are active messages counted per peer, so a POST may arrive
  before the matching ``Start``.

Ordering: the BTL delivers messages of different sizes on different QPs, so they may
overtake each other; accumulates from one origin to one target must not (MPI's default
``accumulate_ordering``), so each carries a per-(window, origin) sequence number and the
target applies them in that order — the PML's ``frags_cant_match`` idea again. Nor are
they ordered with the PML's own traffic (which may ride an eager-RDMA ring), so every
message that changes the target's state is acknowledged (ACK, REPLY, LOCK_ACK,
UNLOCK_ACK, COMPLETE_ACK) and the call that ends an epoch waits for the
acknowledgements: nothing for a window is still in flight when a barrier lets its peers
free it, and a target's ``Test`` after a barrier that follows the origin's ``Complete``
sees the epoch over.

Nothing here blocks: every operation returns an ``OscRequest`` (or a count the caller
reads) and the MPI layer drives progress until it is complete. Window ranks are indices
into ``OscWindow.peers`` (world ranks, which the BTL addresses).
"""

from __future__ import annotations

import ast
import struct
from collections import deque
from collections.abc import Callable, Mapping

import numpy as np

from .request import PmlRequest

__all__ = ["BTL_TAG_OSC", "OscError", "OscModule", "OscRequest", "OscWindow", "Region"]

BTL_TAG_OSC = 2
"""The BTL active-message tag of one-sided traffic (Open MPI: ``MCA_BTL_TAG_OSC_RDMA``)."""

# message types (first byte)
_CONNECT, _ACC, _GACC, _CAS, _ACK, _REPLY, _LOCK, _LOCK_ACK, _UNLOCK = range(1, 10)
_POST, _COMPLETE, _REGION, _REGION_REPLY, _UNLOCK_ACK, _COMPLETE_ACK = range(10, 16)

_TYPE = struct.Struct("<B")
# type, window id, sequence, origin request id, position of the chunk in the origin's
# packed stream, bytes, number of target runs, signature length; then the runs (offset,
# length as u64 pairs), the signature and the data
_ACC_HDR = struct.Struct("<BxxxIIQQQIH")
_RUN = np.dtype([("offset", "<u8"), ("length", "<u8")])
# type, status (0 or an ``OscError`` reason code), request id
_ID_HDR = struct.Struct("<BBxxxxxxQ")
# ... + the chunk's position in the origin's packed stream
_REPLY_HDR = struct.Struct("<BBxxxxxxQQ")
_REASONS = ("", "range", "attach")
# type, exclusive, window id, request id (LOCK, UNLOCK; COMPLETE with exclusive 0)
_LOCK_HDR = struct.Struct("<BBxxIQ")
# type, window id
_WIN_HDR = struct.Struct("<BxxxI")
# type, window id, request id, address, length
_REGION_HDR = struct.Struct("<BxxxIQQQ")
# type, request id, registration key (-1: no region), region address
_REGION_REPLY_HDR = struct.Struct("<BxxxQqQ")

_U8 = np.uint8
_MIN_BOUNCE = 64

Combine = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""``combine(target_values, origin_values)`` -> the new target values (an MPI op)."""


class OscError(Exception):
    """An RMA call that the target cannot serve (``reason``: ``range``, ``attach``)."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason = reason


class OscRequest(PmlRequest):
    """One RMA operation (or lock) in flight: complete when every part has completed at
    the target (RDMA completion, accumulate ACK, reply copied out, lock granted)."""

    __slots__ = ("parts", "target", "window", "result", "error")

    def __init__(self, req_id: int, label, window: OscWindow | None, target: int):
        self.id = req_id
        self.complete = False
        self.cancelled = False
        self.label = label
        self.parts = 0
        self.target = target
        self.window = window
        self.result = None
        self.error: OscError | None = None


DONE = OscRequest(0, "rma", None, -1)
DONE.complete = True
"""What an operation that moves no bytes returns (zero count, ``PROC_NULL``)."""


class Region:
    """Memory a target exposes: the window's own, or one attached to a dynamic window.
    ``address`` is the process address MPI programs use as ``target_disp`` on dynamic
    windows; ``key`` the BTL registration a peer RDMAs with."""

    __slots__ = ("address", "memory", "handle", "key")

    def __init__(self, address: int, memory: np.ndarray, handle):
        self.address = address
        self.memory = memory
        self.handle = handle
        self.key = handle.key if handle is not None else -1


class _TargetLock:
    """The target side of passive-target locks: holders and a FIFO of waiting requests."""

    __slots__ = ("exclusive", "shared", "waiting")

    def __init__(self):
        self.exclusive = -1
        self.shared = 0
        self.waiting: deque[tuple[int, bool, int]] = deque()

    def _fits(self, exclusive: bool) -> bool:
        if self.exclusive >= 0:
            return False
        return not (exclusive and self.shared)

    def request(self, origin: int, exclusive: bool, req_id: int) -> bool:
        """Take the lock for ``origin`` now (True) or queue the request."""
        if not self.waiting and self._fits(exclusive):
            self._take(origin, exclusive)
            return True
        self.waiting.append((origin, exclusive, req_id))
        return False

    def _take(self, origin: int, exclusive: bool) -> None:
        if exclusive:
            self.exclusive = origin
        else:
            self.shared += 1

    def release(self, exclusive: bool) -> list[tuple[int, int]]:
        """Release one hold; the (origin, request id) pairs granted in consequence."""
        if exclusive:
            self.exclusive = -1
        else:
            self.shared -= 1
        granted = []
        while self.waiting and self._fits(self.waiting[0][1]):
            origin, exclusive, req_id = self.waiting.popleft()
            self._take(origin, exclusive)
            granted.append((origin, req_id))
        return granted


Runs = list[tuple[int, int]]
"""Where an operation's bytes lie at the target: (offset, length) pieces in order, whose
lengths add up to the origin's packed stream (one piece for a contiguous target datatype;
osc/rdma also cuts a non-contiguous target into contiguous RDMA transfers)."""


class OscWindow:
    """One process's part of a window: its exposed memory, what it knows of each peer's,
    and the counters that its synchronisation calls wait on."""

    def __init__(
        self,
        osc: OscModule,
        win_id: int,
        peers: list[int],
        rank: int,
        region: Region | None,
        dynamic: bool,
    ):
        self.osc = osc
        self.win_id = win_id
        self.peers = peers
        self.rank = rank
        self.region = region
        self.dynamic = dynamic
        self.attached: list[Region] = []
        self.remote: list[tuple[int, int, int]] = []
        """Per window rank: (registration key, size in bytes, disp_unit)."""
        self.outstanding = [0] * len(peers)
        """Operations to each target not yet complete there."""
        self.lock = _TargetLock()
        self.posts = [0] * len(peers)
        """POST messages received from each peer and not yet consumed by ``Start``."""
        self.completes = [0] * len(peers)
        """COMPLETE messages received from each peer and not yet consumed by ``Wait``."""
        self._send_seq = [0] * len(peers)
        self._next_seq = [0] * len(peers)
        self._early: list[dict[int, bytes]] = [{} for _ in peers]
        self._index = {p: i for i, p in enumerate(peers)}

    # -- the target's memory ------------------------------------------------------------
    def memory_at(self, offset: int, nbytes: int) -> np.ndarray:
        """The bytes ``[offset, offset + nbytes)`` of this process's exposed memory
        (on a dynamic window ``offset`` is an address inside an attached region)."""
        if self.dynamic:
            region = self.find_region(offset, nbytes)
            if region is None:
                raise OscError("attach", f"no attached region holds [{offset}, +{nbytes})")
            start = offset - region.address
            return region.memory[start : start + nbytes]
        memory = self.region.memory if self.region is not None else np.empty(0, _U8)
        if offset < 0 or offset + nbytes > len(memory):
            raise OscError("range", f"[{offset}, +{nbytes}) outside a {len(memory)}-byte window")
        return memory[offset : offset + nbytes]

    def gather(self, runs: Runs) -> np.ndarray:
        """The bytes of ``runs`` as one packed stream (a copy)."""
        if len(runs) == 1:
            return self.memory_at(*runs[0]).copy()
        return np.concatenate([self.memory_at(o, n) for o, n in runs])

    def scatter(self, runs: Runs, data) -> None:
        pos = 0
        for o, n in runs:
            self.memory_at(o, n)[:] = np.frombuffer(data, _U8, n, pos)
            pos += n

    def find_region(self, address: int, nbytes: int) -> Region | None:
        for r in self.attached:
            if r.address <= address and address + nbytes <= r.address + len(r.memory):
                return r
        return None

    # -- origin side --------------------------------------------------------------------
    def put(self, target: int, data: np.ndarray, runs: Runs, label="MPI_Put") -> OscRequest:
        """RDMA WRITE the packed ``data`` (uint8) into ``runs`` of ``target``'s memory."""
        return self.osc.rdma(self, target, True, data, runs, label)

    def get(self, target: int, out: np.ndarray, runs: Runs, label="MPI_Get") -> OscRequest:
        """RDMA READ ``runs`` of ``target``'s memory into ``out`` (uint8, packed)."""
        return self.osc.rdma(self, target, False, out, runs, label)

    def accumulate(
        self,
        target: int,
        data: np.ndarray | None,
        runs: Runs,
        dtype: np.dtype,
        op: str,
        result: np.ndarray | None = None,
        label="MPI_Accumulate",
    ) -> OscRequest:
        """Apply ``op`` elementwise (packed elements of ``dtype``) at ``runs`` of the
        target; with ``result`` (uint8, packed old values) as get-accumulate, which with
        the NO_OP op and no ``data`` is an atomic read."""
        return self.osc.accumulate(self, target, data, runs, dtype, op, result, label)

    def compare_and_swap(
        self,
        target: int,
        origin: np.ndarray,
        compare: np.ndarray,
        result: np.ndarray,
        offset: int,
        label="MPI_Compare_and_swap",
    ) -> OscRequest:
        return self.osc.compare_and_swap(self, target, origin, compare, result, offset, label)

    def next_seq(self, target: int) -> int:
        seq = self._send_seq[target]
        self._send_seq[target] = seq + 1
        return seq

    def in_order(self, origin: int, seq: int, msg: bytes) -> list[bytes]:
        """The accumulate messages from ``origin`` that can be applied now, in order."""
        if seq != self._next_seq[origin]:
            self._early[origin][seq] = msg
            return []
        ready = [msg]
        early = self._early[origin]
        seq += 1
        while seq in early:
            ready.append(early.pop(seq))
            seq += 1
        self._next_seq[origin] = seq
        return ready

    def index_of(self, world_rank: int) -> int:
        return self._index[world_rank]

    def check_range(self, target: int, runs: Runs) -> None:
        """Open MPI's origin-side check of a static window's bounds (MPI_ERR_RMA_RANGE)."""
        if self.dynamic:
            return
        size = self.remote[target][1]
        for o, n in runs:
            if o < 0 or o + n > size:
                raise OscError("range", f"[{o}, +{n}) outside rank {target}'s {size} bytes")


def _split(runs: Runs, lo: int, hi: int) -> Runs:
    """The pieces of ``runs`` that hold bytes ``[lo, hi)`` of the packed stream."""
    out, pos = [], 0
    for o, n in runs:
        a, b = max(lo, pos), min(hi, pos + n)
        if a < b:
            out.append((o + a - pos, b - a))
        pos += n
        if pos >= hi:
            break
    return out


class OscModule:
    """One process's osc component over its BTL module (one per rank, made at the
    rank's first window, before the collective that tells peers the window exists)."""

    def __init__(self, btl, ops: Mapping[str, Combine]):
        self.btl = btl
        self.rank = btl.rank
        self.ops = ops
        self.windows: dict[int, OscWindow] = {}
        self._reached: set[int] = {btl.rank}
        self._connecting: dict[int, OscRequest] = {}
        self._requests: dict[int, OscRequest] = {}
        self._next_id = 1
        self._pool: dict[int, list] = {}
        self._sigs: dict[bytes, tuple[np.dtype, str]] = {}
        # the largest active message, osc header included
        self._am_limit = btl.eager_limit
        btl.register_recv(BTL_TAG_OSC, self._on_message)

    # -- windows ------------------------------------------------------------------------
    def register(self, memory: np.ndarray) -> Region:
        """Expose ``memory`` (uint8, this process's) for RDMA at its own address."""
        handle = self.btl.register_memory(memory) if len(memory) else None
        return Region(memory.ctypes.data, memory, handle)

    def add_window(
        self, win_id: int, peers: list[int], rank: int, region: Region | None, dynamic: bool = False
    ) -> OscWindow:
        win = OscWindow(self, win_id, peers, rank, region, dynamic)
        self.windows[win_id] = win
        return win

    def release(self, region: Region) -> None:
        """Stop exposing ``region`` (its registration is released, ``ibv_dereg_mr``)."""
        if region.handle is not None:
            self.btl.deregister_memory(region.handle)
            region.handle = None

    def remove_window(self, win: OscWindow) -> None:
        """Forget a freed window and release the registrations it exposed."""
        self.windows.pop(win.win_id, None)
        for region in [win.region, *win.attached]:
            if region is not None:
                self.release(region)
        win.attached = []

    def connect(self, peers: list[int]) -> list[OscRequest]:
        """Make sure the BTL has a connected endpoint to each peer before RDMA (the
        openib BTL connects on its first send): one small CONNECT message per peer never
        reached before; the requests complete when those sends do."""
        reqs = []
        for p in peers:
            if p in self._reached:
                continue
            req = self._connecting.get(p)
            if req is None:
                req = self._new_request("MPI_Win_create (connecting)", None, p)
                req.parts = 1
                self._connecting[p] = req
                self.btl.send(p, BTL_TAG_OSC, _TYPE.pack(_CONNECT), lambda p=p: self._connected(p))
            reqs.append(req)
        return reqs

    def _connected(self, peer: int) -> None:
        self._reached.add(peer)
        self._part_done(self._connecting.pop(peer))

    # -- requests and bounce buffers ----------------------------------------------------
    def _new_request(self, label, win: OscWindow | None, target: int) -> OscRequest:
        req = OscRequest(self._next_id, label, win, target)
        self._next_id += 1
        return req

    def _start(self, req: OscRequest, parts: int) -> None:
        req.parts = parts
        self._requests[req.id] = req
        if req.window is not None:
            req.window.outstanding[req.target] += 1

    def _part_done(self, req: OscRequest) -> None:
        req.parts -= 1
        if req.parts == 0:
            req.complete = True
            self._requests.pop(req.id, None)
            win = req.window
            if win is not None:
                win.outstanding[req.target] -= 1

    def _bounce(self, nbytes: int):
        size = max(_MIN_BOUNCE, 1 << (nbytes - 1).bit_length())
        free = self._pool.get(size)
        if free:
            return free.pop()
        return self.btl.register_memory(np.zeros(size, _U8))

    def _release(self, handle) -> None:
        self._pool.setdefault(len(handle.buffer), []).append(handle)

    # -- RDMA ---------------------------------------------------------------------------
    def rdma(
        self, win: OscWindow, target: int, write: bool, data: np.ndarray, runs: Runs, label
    ) -> OscRequest:
        if not len(data):
            return DONE
        if target == win.rank:
            if write:
                win.scatter(runs, data)
            else:
                data[:] = win.gather(runs)
            return DONE
        win.check_range(target, runs)
        req = self._new_request(label, win, target)
        self._start(req, len(runs))
        if not win.dynamic:
            self._post_rdma(req, win, target, write, data, win.remote[target][0], runs)
            return req
        # osc/rdma reads the target's region table before it can address the bytes
        lo = min(o for o, _ in runs)
        hi = max(o + n for o, n in runs)
        query = self._new_request(label, None, target)
        self._requests[query.id] = query

        def found(key, base):
            if key < 0:
                req.error = OscError("attach", f"no region of rank {target} holds [{lo}, {hi})")
                req.parts = 1
                self._part_done(req)
            else:
                local = [(o - base, n) for o, n in runs]
                self._post_rdma(req, win, target, write, data, key, local)

        query.result = found
        msg = _REGION_HDR.pack(_REGION, win.win_id, query.id, lo, hi - lo)
        self.btl.send(win.peers[target], BTL_TAG_OSC, msg)
        return req

    def _post_rdma(self, req, win, target, write, data, key, runs) -> None:
        """One RDMA WRITE/READ per run, all through one bounce buffer."""
        n = len(data)
        bounce = self._bounce(n)
        if write:
            bounce.buffer[:n] = data
        left = [len(runs)]

        def done(pos, length):
            if not write:
                data[pos : pos + length] = bounce.buffer[pos : pos + length]
            left[0] -= 1
            if not left[0]:
                self._release(bounce)
            self._part_done(req)

        transfer = self.btl.put if write else self.btl.get
        peer = win.peers[target]
        pos = 0
        for offset, length in runs:
            transfer(peer, bounce, pos, key, offset, length, lambda p=pos, m=length: done(p, m))
            pos += length

    # -- accumulate family (active messages) --------------------------------------------
    def _signature(self, dtype: np.dtype, op: str) -> bytes:
        text = dtype.str if dtype.fields is None else repr(dtype.descr)
        return f"{op}|{text}".encode()

    def _decode_signature(self, sig: bytes) -> tuple[np.dtype, str]:
        known = self._sigs.get(sig)
        if known is None:
            op, _, text = sig.decode().partition("|")
            dtype = np.dtype(ast.literal_eval(text) if text.startswith("[") else text)
            known = self._sigs[sig] = (dtype, op)
        return known

    def accumulate(self, win, target, data, runs, dtype, op, result, label) -> OscRequest:
        item = dtype.itemsize
        total = len(result) if result is not None else len(data)
        count = total // item
        if not count:
            return DONE
        if target == win.rank:
            old = win.gather(runs)
            if result is not None:
                result[:] = old
            win.scatter(runs, self._apply(old, data, dtype, op))
            return DONE
        win.check_range(target, runs)
        sig = self._signature(dtype, op)
        room = self._am_limit - _ACC_HDR.size - len(sig)
        # each chunk: whole elements, and room for its runs (a run per element at worst)
        per = max(1, room // (item + _RUN.itemsize if len(runs) > 1 else item))
        chunks = range(0, count, per)
        req = self._new_request(label, win, target)
        self._start(req, len(chunks))
        kind = _ACC if result is None else _GACC
        req.result = result
        for first in chunks:
            lo, hi = first * item, min(count, first + per) * item
            pieces = np.array(_split(runs, lo, hi), _RUN)
            body = data[lo:hi] if data is not None else b""
            hdr = _ACC_HDR.pack(
                kind, win.win_id, win.next_seq(target), req.id, lo, hi - lo, len(pieces), len(sig)
            )
            msg = b"".join((hdr, pieces.tobytes(), sig, body))
            self.btl.send(win.peers[target], BTL_TAG_OSC, msg)
        return req

    def compare_and_swap(self, win, target, origin, compare, result, offset, label):
        n = len(result)
        runs = [(offset, n)]
        if target == win.rank:
            old = win.memory_at(offset, n)
            result[:] = old
            if bytes(old) == bytes(compare[:n]):
                old[:] = origin[:n]
            return DONE
        win.check_range(target, runs)
        sig = self._signature(np.dtype(np.uint8), "CAS")
        req = self._new_request(label, win, target)
        self._start(req, 1)
        req.result = result
        hdr = _ACC_HDR.pack(_CAS, win.win_id, win.next_seq(target), req.id, 0, n, 1, len(sig))
        pieces = np.array(runs, _RUN).tobytes()
        body = b"".join((hdr, pieces, sig, bytes(origin[:n]), bytes(compare[:n])))
        self.btl.send(win.peers[target], BTL_TAG_OSC, body)
        return req

    def _apply(self, old: np.ndarray, data, dtype: np.dtype, op: str):
        """The new packed target bytes: ``op(old, data)`` element by element."""
        if op == "NO_OP":
            return old
        if op == "REPLACE":
            return data
        new = self.ops[op](old.view(dtype), np.frombuffer(data, dtype))
        return np.ascontiguousarray(new, dtype).view(_U8)

    # -- locks and PSCW -----------------------------------------------------------------
    def lock(self, win: OscWindow, target: int, exclusive: bool) -> OscRequest:
        req = self._new_request("MPI_Win_lock", None, target)
        req.parts = 1
        self._requests[req.id] = req
        if target == win.rank:
            if win.lock.request(win.rank, exclusive, req.id):
                self._part_done(req)
            return req
        msg = _LOCK_HDR.pack(_LOCK, exclusive, win.win_id, req.id)
        self.btl.send(win.peers[target], BTL_TAG_OSC, msg)
        return req

    def unlock(self, win: OscWindow, target: int, exclusive: bool) -> OscRequest:
        """Release a lock (after the caller flushed its operations to ``target``); the
        request completes when the target has released it. Waiting for that keeps an
        UNLOCK from arriving after the window is freed: the PML's barrier in ``Free`` may
        travel on an eager-RDMA ring and overtake it."""
        req = self._new_request("MPI_Win_unlock", None, target)
        req.parts = 1
        self._requests[req.id] = req
        if target == win.rank:
            self._grant(win, win.lock.release(exclusive))
            self._part_done(req)
            return req
        msg = _LOCK_HDR.pack(_UNLOCK, exclusive, win.win_id, req.id)
        self.btl.send(win.peers[target], BTL_TAG_OSC, msg)
        return req

    def _grant(self, win: OscWindow, granted: list[tuple[int, int]]) -> None:
        for origin, req_id in granted:
            if origin == win.rank:
                self._part_done(self._requests[req_id])
            else:
                ack = _ID_HDR.pack(_LOCK_ACK, 0, req_id)
                self.btl.send(win.peers[origin], BTL_TAG_OSC, ack)

    def post(self, win: OscWindow, origins: list[int]) -> None:
        """Expose the window to ``origins`` (window ranks): one POST each (an origin waits
        for it before its first operation, so it needs no acknowledgement)."""
        msg = _WIN_HDR.pack(_POST, win.win_id)
        for p in origins:
            if p == win.rank:
                win.posts[p] += 1
            else:
                self.btl.send(win.peers[p], BTL_TAG_OSC, msg)

    def complete(self, win: OscWindow, targets: list[int]) -> list[OscRequest]:
        """End an access epoch at ``targets`` (after their operations completed); each
        request completes when its target counted the COMPLETE, as osc/rdma's
        ``MPI_Win_complete`` returns once its remote increment is done."""
        reqs = []
        for t in targets:
            req = self._new_request("MPI_Win_complete", None, t)
            req.parts = 1
            self._requests[req.id] = req
            if t == win.rank:
                win.completes[t] += 1
                self._part_done(req)
            else:
                msg = _LOCK_HDR.pack(_COMPLETE, 0, win.win_id, req.id)
                self.btl.send(win.peers[t], BTL_TAG_OSC, msg)
            reqs.append(req)
        return reqs

    # -- the target and the replies -----------------------------------------------------
    def _on_message(self, peer: int, payload: memoryview) -> None:
        kind = payload[0]
        if kind == _CONNECT:
            return
        if kind in (_ACC, _GACC, _CAS):
            seq = _ACC_HDR.unpack_from(payload)[2]
            win = self.windows[_ACC_HDR.unpack_from(payload)[1]]
            for msg in win.in_order(win.index_of(peer), seq, bytes(payload)):
                self._serve_accumulate(peer, win, msg)
        elif kind in (_ACK, _LOCK_ACK, _UNLOCK_ACK, _COMPLETE_ACK):
            _, status, req_id = _ID_HDR.unpack_from(payload)
            req = self._requests[req_id]
            self._failed(req, status)
            self._part_done(req)
        elif kind == _REPLY:
            self._on_reply(payload)
        elif kind == _LOCK:
            _, exclusive, win_id, req_id = _LOCK_HDR.unpack_from(payload)
            win = self.windows[win_id]
            if win.lock.request(win.index_of(peer), bool(exclusive), req_id):
                self.btl.send(peer, BTL_TAG_OSC, _ID_HDR.pack(_LOCK_ACK, 0, req_id))
        elif kind == _UNLOCK:
            _, exclusive, win_id, req_id = _LOCK_HDR.unpack_from(payload)
            win = self.windows[win_id]
            self._grant(win, win.lock.release(bool(exclusive)))
            self.btl.send(peer, BTL_TAG_OSC, _ID_HDR.pack(_UNLOCK_ACK, 0, req_id))
        elif kind == _POST:
            win = self.windows[_WIN_HDR.unpack_from(payload)[1]]
            win.posts[win.index_of(peer)] += 1
        elif kind == _COMPLETE:
            _, _, win_id, req_id = _LOCK_HDR.unpack_from(payload)
            win = self.windows[win_id]
            win.completes[win.index_of(peer)] += 1
            self.btl.send(peer, BTL_TAG_OSC, _ID_HDR.pack(_COMPLETE_ACK, 0, req_id))
        elif kind == _REGION:
            _, win_id, req_id, address, length = _REGION_HDR.unpack_from(payload)
            region = self.windows[win_id].find_region(address, length)
            key, base = (-1, 0) if region is None else (region.key, region.address)
            reply = _REGION_REPLY_HDR.pack(_REGION_REPLY, req_id, key, base)
            self.btl.send(peer, BTL_TAG_OSC, reply)
        elif kind == _REGION_REPLY:
            _, req_id, key, base = _REGION_REPLY_HDR.unpack_from(payload)
            self._requests.pop(req_id).result(key, base)
        else:
            raise ValueError(f"osc: unknown message type {kind} from rank {peer}")

    def _serve_accumulate(self, peer: int, win: OscWindow, msg: bytes) -> None:
        kind, _, _, req_id, pos, nbytes, nruns, siglen = _ACC_HDR.unpack_from(msg)
        at = _ACC_HDR.size
        runs = [(int(o), int(n)) for o, n in np.frombuffer(msg, _RUN, nruns, at)]
        at += nruns * _RUN.itemsize
        dtype, op = self._decode_signature(msg[at : at + siglen])
        body = memoryview(msg)[at + siglen :]
        try:
            old = win.gather(runs)
        except OscError as exc:
            # the origin's call fails, not the target (MPI_ERR_RMA_RANGE there)
            status = _REASONS.index(exc.reason)
            if kind == _ACC:
                reply = _ID_HDR.pack(_ACK, status, req_id)
            else:
                reply = _REPLY_HDR.pack(_REPLY, status, req_id, pos)
            self.btl.send(peer, BTL_TAG_OSC, reply)
            return
        if kind == _CAS:
            if bytes(old) == bytes(body[nbytes : 2 * nbytes]):
                win.scatter(runs, body[:nbytes])
        else:
            win.scatter(runs, self._apply(old, body, dtype, op))
        if kind == _ACC:
            self.btl.send(peer, BTL_TAG_OSC, _ID_HDR.pack(_ACK, 0, req_id))
        else:
            hdr = _REPLY_HDR.pack(_REPLY, 0, req_id, pos)
            self.btl.send(peer, BTL_TAG_OSC, b"".join((hdr, old)))

    def _failed(self, req: OscRequest, status: int) -> None:
        if status and req.error is None:
            req.error = OscError(_REASONS[status], "the target refused the address")

    def _on_reply(self, payload: memoryview) -> None:
        """A get-accumulate / compare-and-swap chunk's old values: they go to the result
        stream at the chunk's position (replies of different sizes may overtake)."""
        _, status, req_id, pos = _REPLY_HDR.unpack_from(payload)
        req = self._requests[req_id]
        self._failed(req, status)
        data = np.frombuffer(payload[_REPLY_HDR.size :], _U8)
        req.result[pos : pos + len(data)] = data
        self._part_done(req)
