"""Collective algorithms over point-to-point, on byte arrays (callers encode and decode).

The textbook choices Open MPI's ``coll/tuned`` and MPICH make for small jobs: dissemination
barrier, binomial-tree bcast and reduce, recursive-doubling allreduce (with the usual fold
of the ranks above the largest power of two), linear gather/scatter, ring allgather and
pairwise-exchange alltoall. Collective traffic uses the communicator's second context id,
so it never matches a user's receive.
"""

from __future__ import annotations

import numpy as np

from ..pml import describe

__all__ = [
    "Channel",
    "allgather",
    "allreduce",
    "alltoall",
    "barrier",
    "bcast",
    "gather",
    "reduce",
    "scatter",
]

EMPTY = np.empty(0, dtype=np.uint8)


class Channel:
    """Point-to-point for one collective call: communicator ranks, the collective context.
    ``call`` labels the collective for deadlock reports (see ``pml.describe``)."""

    __slots__ = ("ctx", "pml", "state", "rank", "size", "tag", "call")

    def __init__(self, ctx, state, tag: int, call):
        self.ctx = ctx
        self.pml = ctx.pml
        self.state = state
        self.rank = state.rank
        self.size = state.size
        self.tag = tag
        self.call = call

    def isend(self, data: np.ndarray, dest: int):
        st = self.state
        return self.pml.isend(
            data,
            st.ranks[dest],
            st.coll_ctx,
            st.rank,
            self.tag,
            label=(_step_label, self.call, "send to", dest),
        )

    def irecv(self, source: int):
        return self.pml.irecv(
            None,
            self.state.coll_ctx,
            source,
            self.tag,
            (_step_label, self.call, "recv from", source),
        )

    def recv(self, source: int) -> np.ndarray:
        req = self.irecv(source)
        self.wait([req])
        return req.data

    def wait(self, reqs) -> None:
        if len(reqs) == 1:
            self.ctx.wait_request(reqs[0], self.call)
        elif not all(r.complete for r in reqs):
            self.ctx.wait_for(lambda: all(r.complete for r in reqs), self.call)


def _step_label(call, step: str, peer: int) -> str:
    return f"{describe(call)} {step} {peer}"


def barrier(ch: Channel) -> None:
    n, r = ch.size, ch.rank
    k = 1
    while k < n:
        s = ch.isend(EMPTY, (r + k) % n)
        ch.recv((r - k) % n)
        ch.wait([s])
        k <<= 1


def bcast(ch: Channel, data, root: int) -> np.ndarray:
    n = ch.size
    v = (ch.rank - root) % n
    mask = 1
    while mask < n:
        if v & mask:
            data = ch.recv((v - mask + root) % n)
            break
        mask <<= 1
    mask >>= 1
    sends = []
    while mask > 0:
        if v + mask < n:
            sends.append(ch.isend(data, (v + mask + root) % n))
        mask >>= 1
    ch.wait(sends)
    return data


def reduce(ch: Channel, data: np.ndarray, combine, root: int):
    """Binomial tree towards ``root``; ``combine(lower, higher)`` keeps rank order."""
    n = ch.size
    v = (ch.rank - root) % n
    mask = 1
    while mask < n:
        if v & mask:
            ch.wait([ch.isend(data, (v - mask + root) % n)])
            return None
        if v + mask < n:
            data = combine(data, ch.recv((v + mask + root) % n))
        mask <<= 1
    return data


def _exchange(ch: Channel, data, peer: int) -> np.ndarray:
    s = ch.isend(data, peer)
    other = ch.recv(peer)
    ch.wait([s])
    return other


def allreduce(ch: Channel, data: np.ndarray, combine) -> np.ndarray:
    n, r = ch.size, ch.rank
    pof2 = 1 << (n.bit_length() - 1)
    rem = n - pof2
    if r < 2 * rem:
        if r % 2 == 0:
            ch.wait([ch.isend(data, r + 1)])
            newrank = -1
        else:
            data = combine(ch.recv(r - 1), data)
            newrank = r // 2
    else:
        newrank = r - rem
    if newrank != -1:
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            other = _exchange(ch, data, dst)
            data = combine(other, data) if dst < r else combine(data, other)
            mask <<= 1
    if r < 2 * rem:
        if r % 2:
            ch.wait([ch.isend(data, r - 1)])
        else:
            data = ch.recv(r + 1)
    return data


def gather(ch: Channel, data: np.ndarray, root: int):
    if ch.rank != root:
        ch.wait([ch.isend(data, root)])
        return None
    reqs = [None if i == root else ch.irecv(i) for i in range(ch.size)]
    ch.wait([q for q in reqs if q is not None])
    return [data if q is None else q.data for q in reqs]


def scatter(ch: Channel, blocks, root: int) -> np.ndarray:
    if ch.rank != root:
        return ch.recv(root)
    sends = [ch.isend(b, i) for i, b in enumerate(blocks) if i != root]
    ch.wait(sends)
    return blocks[root]


def allgather(ch: Channel, data: np.ndarray) -> list:
    n, r = ch.size, ch.rank
    blocks = [None] * n
    blocks[r] = data
    right, left = (r + 1) % n, (r - 1) % n
    for i in range(n - 1):
        s = ch.isend(blocks[(r - i) % n], right)
        blocks[(r - i - 1) % n] = ch.recv(left)
        ch.wait([s])
    return blocks


def alltoall(ch: Channel, blocks) -> list:
    n, r = ch.size, ch.rank
    out = [None] * n
    out[r] = blocks[r]
    for k in range(1, n):
        dst, src = (r + k) % n, (r - k) % n
        s = ch.isend(blocks[dst], dst)
        out[src] = ch.recv(src)
        ch.wait([s])
    return out
