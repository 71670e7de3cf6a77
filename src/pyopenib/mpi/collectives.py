"""Intracommunicator collective algorithms, as schedules (see ``coll_engine``) on bytes.

Each algorithm is a generator over a ``Channel`` that yields the PML requests of a round
and returns the result; data are uint8 arrays (the callers turn buffers into bytes and
back), blocks received without a buffer are the PML's (``req.data``), and ``combine(a, b)``
is ``a op b`` with ``a`` from the lower ranks (MPI's operand order).

Which algorithm runs follows Open MPI's ``coll/tuned`` fixed decision functions, so the
fabric sees Open MPI's traffic pattern. Barrier, Allreduce, Alltoall and Alltoallv take
Open MPI 4.1.4's rules (``coll_tuned_decision_fixed.c`` at v4.1.4: tables by
communicator size and bytes, transcribed below with each function); the others take the
older fixed rules Open MPI shipped from 1.3 to 4.0 (measured on UTK's Grig cluster),
which 4.1 replaced with tables that pick algorithms not built here:

* bcast: under 2048 bytes, binomial tree; when ``size < 1.6134e-6 * bytes + 2.1102``, a
  pipeline (chain) of 128 KiB segments; otherwise binomial. (4.1.4 picks among linear,
  chain, pipeline, binary, split-binary, binomial and k-nomial trees by size.)
* reduce: non-commutative operations, or ``size < 20`` and under 512 bytes, or
  ``size < 10`` and up to 1024 bytes, linear at the root; otherwise binomial (*not
  reproduced*: the segmented binary, in-order binary and pipeline trees);
* allgather: two processes, an exchange; under 50000 bytes in all, recursive doubling for
  a power of two and Bruck otherwise (Bruck for allgatherv); above, ring (*not
  reproduced*: neighbour exchange);
* gather, scatter (and v): linear (*not reproduced*: binomial trees);
* reduce_scatter(_block): reduce to rank 0, then scatter(v) ("nonoverlapping"; *not
  reproduced*: recursive halving, ring, butterfly);
* scan, exscan: linear chain (Open MPI's coll/basic, which 4.1 uses for them).

Nonblocking collectives (Open MPI's coll/libnbc) run the same schedules; libnbc's own
algorithm choices are not reproduced.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "exchange",
    "split_blocks",
    "allgather",
    "allreduce",
    "alltoall",
    "alltoallv",
    "barrier",
    "bcast",
    "bcast_object",
    "exscan",
    "gather",
    "reduce",
    "reduce_object",
    "reduce_scatter",
    "scan",
    "scatter",
]

EMPTY = np.empty(0, dtype=np.uint8)
_U8 = np.uint8

BCAST_SMALL = 2048
BCAST_PIPELINE_A, BCAST_PIPELINE_B = 1.6134e-6, 2.1102
BCAST_SEGMENT = 128 * 1024
ALLGATHER_SMALL = 50000


def exchange(ch, data, peer: int):
    s = ch.isend(data, peer)
    q = ch.irecv(peer)
    yield [s, q]
    return q.data


def _concat(blocks) -> np.ndarray:
    return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]


def split_blocks(data, sizes) -> list:
    out, at = [], 0
    for n in sizes:
        out.append(data[at : at + n])
        at += n
    return out


# -- barrier ----------------------------------------------------------------------------
def barrier(ch):
    """Open MPI 4.1.4's fixed rule: fewer than 4 processes or 8 to 63, recursive doubling;
    4 to 7, linear; 64 and more, Bruck (*not reproduced*: the tree it takes from 256 on)."""
    n = ch.size
    if n == 1:
        return
    if 4 <= n < 8:
        yield from _barrier_linear(ch)
    elif n < 64:
        yield from _barrier_recursive_doubling(ch)
    else:
        yield from _barrier_bruck(ch)


def _barrier_linear(ch):
    """Everyone tells rank 0, which answers everyone."""
    n, r = ch.size, ch.rank
    if r:
        yield [ch.isend(EMPTY, 0)]
        yield [ch.irecv(0)]
        return
    yield [ch.irecv(i) for i in range(1, n)]
    yield [ch.isend(EMPTY, i) for i in range(1, n)]


def _barrier_recursive_doubling(ch):
    """Exchanges with rank ^ 1, ^ 2, ... among the largest power of two; the ranks above
    it first check in with rank - pof2 and are released by it at the end."""
    n, r = ch.size, ch.rank
    pof2 = 1 << (n.bit_length() - 1)
    if r >= pof2:
        yield [ch.isend(EMPTY, r - pof2)]
        yield [ch.irecv(r - pof2)]
        return
    if r < n - pof2:
        yield [ch.irecv(r + pof2)]
    mask = 1
    while mask < pof2:
        yield from exchange(ch, EMPTY, r ^ mask)
        mask <<= 1
    if r < n - pof2:
        yield [ch.isend(EMPTY, r + pof2)]


def _barrier_bruck(ch):
    n, r = ch.size, ch.rank
    k = 1
    while k < n:
        s = ch.isend(EMPTY, (r + k) % n)
        q = ch.irecv((r - k) % n)
        yield [s, q]
        k <<= 1


# -- bcast ------------------------------------------------------------------------------
def bcast(ch, data, root: int, nbytes: int):
    """``data`` at the root (None elsewhere); every rank returns the root's bytes."""
    n = ch.size
    if n == 1:
        return data
    if nbytes >= BCAST_SMALL and n < BCAST_PIPELINE_A * nbytes + BCAST_PIPELINE_B:
        return (yield from _bcast_pipeline(ch, data, root, nbytes, BCAST_SEGMENT))
    return (yield from _bcast_binomial(ch, data, root))


def bcast_object(ch, data, root: int):
    """Binomial bcast of bytes whose length only the root knows (pickled objects)."""
    if ch.size == 1:
        return data
    return (yield from _bcast_binomial(ch, data, root))


def _bcast_linear(ch, data, root: int):
    """The root sends to every other rank."""
    if ch.rank != root:
        q = ch.irecv(root)
        yield [q]
        return q.data
    yield [ch.isend(data, i) for i in range(ch.size) if i != root]
    return data


def _bcast_binomial(ch, data, root: int):
    n = ch.size
    v = (ch.rank - root) % n
    mask = 1
    while mask < n:
        if v & mask:
            q = ch.irecv((v - mask + root) % n)
            yield [q]
            data = q.data
            break
        mask <<= 1
    mask >>= 1
    sends = []
    while mask > 0:
        if v + mask < n:
            sends.append(ch.isend(data, (v + mask + root) % n))
        mask >>= 1
    yield sends
    return data


def _bcast_pipeline(ch, data, root: int, nbytes: int, segment: int):
    n = ch.size
    v = (ch.rank - root) % n
    nxt = (v + 1 + root) % n
    segs = [(a, min(a + segment, nbytes)) for a in range(0, nbytes, segment)]
    if v == 0:
        yield [ch.isend(data[a:b], nxt) for a, b in segs]
        return data
    out = np.empty(nbytes, _U8)
    prev = (v - 1 + root) % n
    recvs = [ch.irecv(prev, out[a:b]) for a, b in segs]
    sends = []
    for q, (a, b) in zip(recvs, segs, strict=True):
        yield [q]
        if v < n - 1:
            sends.append(ch.isend(out[a:b], nxt))
    yield sends
    return out


# -- reduce -----------------------------------------------------------------------------
def reduce(ch, data, combine, root: int, commute: bool, nbytes: int):
    """The reduction of every rank's ``data`` at the root (None elsewhere)."""
    n = ch.size
    if n == 1:
        return data
    if not commute or (n < 20 and nbytes < 512) or (n < 10 and nbytes <= 1024):
        return (yield from _reduce_linear(ch, data, combine, root))
    return (yield from _reduce_binomial(ch, data, combine, root))


def _reduce_linear(ch, data, combine, root: int):
    """Open MPI's basic linear reduce: the root combines from rank n-1 down to rank 0."""
    n, r = ch.size, ch.rank
    if r != root:
        yield [ch.isend(data, root)]
        return None
    reqs = {i: ch.irecv(i) for i in range(n) if i != root}
    yield list(reqs.values())
    acc = data if root == n - 1 else reqs[n - 1].data
    for i in range(n - 2, -1, -1):
        acc = combine(data if i == root else reqs[i].data, acc)
    return acc


def _reduce_binomial(ch, data, combine, root: int):
    """Binomial tree towards the root (a commutative operation: vrank order suffices)."""
    n = ch.size
    v = (ch.rank - root) % n
    mask = 1
    while mask < n:
        if v & mask:
            yield [ch.isend(data, (v - mask + root) % n)]
            return None
        if v + mask < n:
            q = ch.irecv((v + mask + root) % n)
            yield [q]
            data = combine(data, q.data)
        mask <<= 1
    return data


def reduce_object(ch, data, combine, root: int):
    """Reduction in rank order for any operation (mpi4py's lowercase ``reduce``): a
    binomial tree towards rank 0, whose result goes on to the root."""
    n, r = ch.size, ch.rank
    if n == 1:
        return data
    mask = 1
    while mask < n:
        if r & mask:
            yield [ch.isend(data, r - mask)]
            data = None
            break
        if r + mask < n:
            q = ch.irecv(r + mask)
            yield [q]
            data = combine(data, q.data)
        mask <<= 1
    if root == 0:
        return data
    if r == 0:
        yield [ch.isend(data, root)]
        return None
    if r == root:
        q = ch.irecv(0)
        yield [q]
        return q.data
    return None


# -- allreduce --------------------------------------------------------------------------
def _pick(table, n: int, nbytes: int) -> int:
    """An algorithm number from a decision table: rows (communicator size limit, steps)
    where steps are (byte limit, algorithm) and the last step's limit is None."""
    for size_limit, steps in table:
        if size_limit is None or n < size_limit:
            for byte_limit, alg in steps:
                if byte_limit is None or nbytes < byte_limit:
                    return alg
    raise AssertionError("a decision table ends with a catch-all row")


K = 1024
# Open MPI 4.1.4 coll_tuned_decision_fixed.c, ompi_coll_tuned_allreduce_intra_dec_fixed:
# 1 basic linear, 2 nonoverlapping, 3 recursive doubling, 4 ring, 5 segmented ring,
# 6 Rabenseifner
ALLREDUCE_COMMUTATIVE = [
    (4, [(8, 4), (4 * K, 3), (8 * K, 4), (16 * K, 3), (64 * K, 4), (256 * K, 5), (None, 6)]),
    (8, [(16, 4), (8 * K, 3), (None, 6)]),
    (16, [(8 * K, 3), (None, 6)]),
    (32, [(64, 5), (4 * K, 3), (None, 6)]),
    (64, [(128, 5), (None, 6)]),
    (128, [(256 * K, 3), (None, 6)]),
    (256, [(128 * K, 2), (256 * K, 3), (None, 6)]),
    (512, [(4 * K, 2), (None, 6)]),
    (2048, [(2 * K, 2), (16 * K, 3), (None, 6)]),
    (4096, [(2 * K, 2), (4 * K, 5), (16 * K, 3), (None, 6)]),
    (None, [(2 * K, 2), (16 * K, 5), (32 * K, 3), (None, 6)]),
]
ALLREDUCE_NONCOMMUTATIVE = [
    (4, [(128 * K, 3), (None, 1)]),
    (8, [(None, 3)]),
    (16, [(1024 * K, 3), (None, 2)]),
    (128, [(None, 3)]),
    (256, [(128 * K, 2), (512 * K, 3), (None, 2)]),
    (512, [(4 * K, 2), (512 * K, 3), (None, 2)]),
    (None, [(2 * K, 2), (None, 3)]),
]


def allreduce(ch, data, combine, commute: bool, nbytes: int, itemsize: int):
    """Open MPI 4.1.4's fixed rule (the tables above). *Not reproduced*: the segmented
    ring runs as the ring, and Rabenseifner's algorithm (recursive halving, then
    doubling) as the ring too, which moves the same bytes per rank over other peers."""
    n = ch.size
    if n == 1:
        return data
    count = nbytes // itemsize if itemsize else 0
    table = ALLREDUCE_COMMUTATIVE if commute else ALLREDUCE_NONCOMMUTATIVE
    alg = _pick(table, n, nbytes)
    if alg >= 4 and count < n:
        alg = 3  # Open MPI's ring falls back to recursive doubling below one element each
    if alg == 3:
        return (yield from recursive_doubling(ch, data, combine))
    if alg >= 4:
        return (yield from _allreduce_ring(ch, data, combine, count, itemsize))
    if alg == 1:
        result = yield from _reduce_linear(ch, data, combine, 0)
        return (yield from _bcast_linear(ch, result, 0))
    result = yield from reduce(ch, data, combine, 0, commute, nbytes)
    return (yield from bcast(ch, result, 0, nbytes))


def recursive_doubling(ch, data, combine):
    """Recursive doubling, the ranks above the largest power of two folded onto their
    neighbours first (and served last); operand order is rank order."""
    n, r = ch.size, ch.rank
    pof2 = 1 << (n.bit_length() - 1)
    rem = n - pof2
    if r < 2 * rem:
        if r % 2 == 0:
            yield [ch.isend(data, r + 1)]
            newrank = -1
        else:
            q = ch.irecv(r - 1)
            yield [q]
            data = combine(q.data, data)
            newrank = r // 2
    else:
        newrank = r - rem
    if newrank != -1:
        mask = 1
        while mask < pof2:
            newdst = newrank ^ mask
            dst = newdst * 2 + 1 if newdst < rem else newdst + rem
            other = yield from exchange(ch, data, dst)
            data = combine(other, data) if dst < r else combine(data, other)
            mask <<= 1
    if r < 2 * rem:
        if r % 2:
            yield [ch.isend(data, r - 1)]
        else:
            q = ch.irecv(r + 1)
            yield [q]
            data = q.data
    return data


def _block_bounds(count: int, n: int, itemsize: int) -> list[tuple[int, int]]:
    """Byte ranges of the n blocks of ``count`` elements (the first ``count % n`` blocks
    one element longer, as Open MPI's COLL_BASE_COMPUTE_BLOCKCOUNT)."""
    base, extra = divmod(count, n)
    bounds, at = [], 0
    for i in range(n):
        c = base + (1 if i < extra else 0)
        bounds.append((at * itemsize, (at + c) * itemsize))
        at += c
    return bounds


def _allreduce_ring(ch, data, combine, count: int, itemsize: int):
    """Ring reduce-scatter then ring allgather: rank r ends the first phase owning the
    complete block (r + 1) % n."""
    n, r = ch.size, ch.rank
    right, left = (r + 1) % n, (r - 1) % n
    bounds = _block_bounds(count, n, itemsize)
    blocks = [data[a:b] for a, b in bounds]
    for k in range(n - 1):
        s = ch.isend(blocks[(r - k) % n], right)
        q = ch.irecv(left)
        yield [s, q]
        b = (r - k - 1) % n
        blocks[b] = combine(q.data, blocks[b])
    for k in range(n - 1):
        s = ch.isend(blocks[(r + 1 - k) % n], right)
        q = ch.irecv(left)
        yield [s, q]
        blocks[(r - k) % n] = q.data
    return _concat(blocks)


# -- gather / scatter -------------------------------------------------------------------
def gather(ch, data, root: int):
    """Linear: the root receives each rank's block; returns the list at the root."""
    if ch.rank != root:
        yield [ch.isend(data, root)]
        return None
    reqs = [None if i == root else ch.irecv(i) for i in range(ch.size)]
    yield [q for q in reqs if q is not None]
    return [data if q is None else q.data for q in reqs]


def scatter(ch, blocks, root: int):
    """Linear: the root sends block i to rank i; returns this rank's block."""
    if ch.rank != root:
        q = ch.irecv(root)
        yield [q]
        return q.data
    yield [ch.isend(b, i) for i, b in enumerate(blocks) if i != root]
    return blocks[root]


# -- allgather --------------------------------------------------------------------------
def allgather(ch, data, sizes=None, vector: bool = False):
    """Every rank's block, in rank order. ``sizes`` (bytes per rank, known everywhere)
    allows the algorithms that move several blocks per message; without it, ring."""
    n, r = ch.size, ch.rank
    if n == 1:
        return [data]
    if n == 2:
        other = yield from exchange(ch, data, 1 - r)
        return [data, other] if r == 0 else [other, data]
    if sizes is not None and sum(sizes) < ALLGATHER_SMALL:
        if n & (n - 1) == 0 and not vector:
            return (yield from _allgather_recursive_doubling(ch, data, sizes))
        return (yield from _allgather_bruck(ch, data, sizes))
    return (yield from _allgather_ring(ch, data))


def _allgather_ring(ch, data):
    n, r = ch.size, ch.rank
    blocks = [None] * n
    blocks[r] = data
    right, left = (r + 1) % n, (r - 1) % n
    for i in range(n - 1):
        s = ch.isend(blocks[(r - i) % n], right)
        q = ch.irecv(left)
        yield [s, q]
        blocks[(r - i - 1) % n] = q.data
    return blocks


def _allgather_recursive_doubling(ch, data, sizes):
    n, r = ch.size, ch.rank
    blocks = [None] * n
    blocks[r] = data
    mask = 1
    while mask < n:
        peer = r ^ mask
        lo, plo = (r // mask) * mask, (peer // mask) * mask
        other = yield from exchange(ch, _concat(blocks[lo : lo + mask]), peer)
        blocks[plo : plo + mask] = split_blocks(other, sizes[plo : plo + mask])
        mask <<= 1
    return blocks


def _allgather_bruck(ch, data, sizes):
    """Bruck: at each step send the blocks held (relative order from this rank) to
    rank - have, receive as many from rank + have."""
    n, r = ch.size, ch.rank
    blocks = [None] * n
    blocks[r] = data
    have = 1
    while have < n:
        count = min(have, n - have)
        out = _concat([blocks[(r + j) % n] for j in range(count)])
        s = ch.isend(out, (r - have) % n)
        src = (r + have) % n
        q = ch.irecv(src)
        yield [s, q]
        got = split_blocks(q.data, [sizes[(src + j) % n] for j in range(count)])
        for j, b in enumerate(got):
            blocks[(src + j) % n] = b
        have += count
    return blocks


# -- alltoall ---------------------------------------------------------------------------
# ompi_coll_tuned_alltoall_intra_dec_fixed (4.1.4): 1 linear, 2 pairwise, 3 modified
# Bruck, 4 linear with a bounded number of requests, 5 two processes
ALLTOALL = [
    (
        3,
        [
            (2, 2),
            (4, 5),
            (16, 2),
            (64, 5),
            (256, 2),
            (4 * K, 5),
            (32 * K, 2),
            (256 * K, 4),
            (1024 * K, 5),
            (None, 2),
        ],
    ),
    (8, [(8 * K, 4), (16 * K, 1), (64 * K, 4), (512 * K, 1), (1024 * K, 2), (None, 1)]),
    (16, [(256 * K, 4), (None, 1)]),
    (32, [(4, 4), (512, 3), (8 * K, 4), (32 * K, 1), (256 * K, 4), (512 * K, 1), (None, 4)]),
    (64, [(512, 3), (512 * K, 1), (None, 4)]),
    (128, [(1 * K, 3), (2 * K, 1), (4 * K, 4), (256 * K, 1), (None, 2)]),
    (256, [(1 * K, 3), (2 * K, 4), (256 * K, 1), (None, 2)]),
    (512, [(1 * K, 3), (8 * K, 4), (32 * K, 1), (None, 2)]),
    (1024, [(512, 3), (8 * K, 4), (16 * K, 1), (128 * K, 4), (256 * K, 1), (None, 2)]),
    (2048, [(512, 3), (1 * K, 4), (2 * K, 1), (16 * K, 4), (256 * K, 1), (None, 4)]),
    (4096, [(1 * K, 3), (4 * K, 4), (8 * K, 1), (128 * K, 4), (None, 1)]),
    (None, [(2 * K, 3), (8 * K, 4), (16 * K, 1), (32 * K, 4), (64 * K, 1), (None, 4)]),
]


def alltoall(ch, blocks, block_nbytes: int):
    """Open MPI 4.1.4's fixed rule (the table above; ``block_nbytes`` is one block). Two
    processes exchange once whichever it picks; *not reproduced*: the modified Bruck
    algorithm (small blocks from 32 processes on) runs linear."""
    n = ch.size
    if n == 1:
        return list(blocks)
    if _pick(ALLTOALL, n, block_nbytes) == 2 or n == 2:
        return (yield from _alltoall_pairwise(ch, blocks))
    return (yield from alltoallv(ch, blocks, pairwise=False))


def _alltoall_pairwise(ch, blocks):
    n, r = ch.size, ch.rank
    out = [None] * n
    out[r] = blocks[r]
    for k in range(1, n):
        dst, src = (r + k) % n, (r - k) % n
        s = ch.isend(blocks[dst], dst)
        q = ch.irecv(src)
        yield [s, q]
        out[src] = q.data
    return out


def alltoallv(ch, blocks, pairwise: bool | None = None):
    """Linear (every receive and send posted at once, Open MPI's basic linear) or
    pairwise; for Alltoallv Open MPI 4.1.4 takes pairwise below 4 processes and from 64
    to 127 and from 256 to 1023, linear otherwise."""
    n, r = ch.size, ch.rank
    if pairwise is None:
        pairwise = n < 4 or 64 <= n < 128 or 256 <= n < 1024
    if pairwise:
        return (yield from _alltoall_pairwise(ch, blocks))
    recvs = {i: ch.irecv(i) for i in ((r + k) % n for k in range(1, n))}
    sends = [ch.isend(blocks[i], i) for i in ((r - k) % n for k in range(1, n))]
    yield list(recvs.values()) + sends
    return [blocks[i] if i == r else recvs[i].data for i in range(n)]


# -- reduce_scatter ---------------------------------------------------------------------
def reduce_scatter(ch, data, combine, commute: bool, sizes):
    """Reduce to rank 0, then scatter ``sizes[i]`` bytes to rank i."""
    total = sum(sizes)
    result = yield from reduce(ch, data, combine, 0, commute, total)
    blocks = split_blocks(result, sizes) if ch.rank == 0 else None
    return (yield from scatter(ch, blocks, 0))


# -- scan / exscan ----------------------------------------------------------------------
def scan(ch, data, combine):
    """Inclusive prefix: rank r receives the prefix of 0..r-1, adds its own, passes on."""
    n, r = ch.size, ch.rank
    if r > 0:
        q = ch.irecv(r - 1)
        yield [q]
        data = combine(q.data, data)
    if r < n - 1:
        yield [ch.isend(data, r + 1)]
    return data


def exscan(ch, data, combine):
    """Exclusive prefix (None at rank 0, whose result MPI leaves undefined)."""
    n, r = ch.size, ch.rank
    prefix = None
    if r > 0:
        q = ch.irecv(r - 1)
        yield [q]
        prefix = q.data
    if r < n - 1:
        yield [ch.isend(data if prefix is None else combine(prefix, data), r + 1)]
    return prefix
