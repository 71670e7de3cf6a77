"""Intercommunicator collectives, as Open MPI's ``coll/inter`` builds them.

An intercommunicator joins a local and a remote group; its collectives move data from
one group to the other. As ``coll/inter`` does, each is a local phase on the local group's
own intracommunicator (``st.local``, created with the intercommunicator), one exchange
between the two groups' rank-0 *leaders* over the intercommunicator, and a local phase
again: allreduce is local reduce, leader exchange, local bcast; bcast is root to the
remote leader, then a local bcast; gather is a local gather to the leader, then leader to
root. Alltoall is direct (each process with each remote process). The root argument is
``ROOT`` at the root, ``PROC_NULL`` at the other members of its group (who do nothing),
and the root's rank in the remote group on the receiving side.

One difference kept on purpose: where ``coll/inter`` sends a gathered buffer as one
message between leaders, we send its blocks as consecutive messages (same bytes and
peers; more headers).
"""

from __future__ import annotations

from . import collectives as coll
from .coll_engine import Channel

__all__ = [
    "allgather",
    "allreduce",
    "allreduce_object",
    "alltoall",
    "barrier",
    "bcast",
    "gather",
    "reduce",
    "reduce_object",
    "reduce_scatter",
    "scatter",
]

ROOT = -4


def local_channel(ch: Channel, st) -> Channel:
    """The local phase's channel: the local intracommunicator, this call's tag."""
    loc = st.local
    return Channel(loc.rc, loc.ranks, loc.rank, loc.coll_ctx, ch.tag, ch.call)


def barrier(ch: Channel, st):
    loc = local_channel(ch, st)
    yield from coll.barrier(loc)
    if st.rank == 0:
        yield from coll.exchange(ch, coll.EMPTY, 0)
    yield from coll.barrier(loc)


def bcast(ch: Channel, st, data, root: int):
    if root == ROOT:
        yield [ch.isend(data, 0)]
        return data
    loc = local_channel(ch, st)
    if st.rank == 0:
        q = ch.irecv(root)
        yield [q]
        data = q.data
    return (yield from coll.bcast_object(loc, data, 0))


def gather(ch: Channel, st, data, root: int):
    if root == ROOT:
        reqs = [ch.irecv(0) for _ in range(st.size)]
        yield reqs
        return [q.data for q in reqs]
    loc = local_channel(ch, st)
    blocks = yield from coll.gather(loc, data, 0)
    if st.rank == 0:
        yield [ch.isend(b, root) for b in blocks]
    return None


def scatter(ch: Channel, st, blocks, root: int):
    if root == ROOT:
        yield [ch.isend(b, 0) for b in blocks]
        return None
    loc = local_channel(ch, st)
    mine = None
    if st.rank == 0:
        reqs = [ch.irecv(root) for _ in range(len(st.group))]
        yield reqs
        mine = [q.data for q in reqs]
    return (yield from coll.scatter(loc, mine, 0))


def _remote_blocks(ch: Channel, st, mine):
    """Leaders swap their groups' block lists; every member gets the remote list."""
    loc = local_channel(ch, st)
    blocks = yield from coll.gather(loc, mine, 0)
    remote = None
    if st.rank == 0:
        sends = [ch.isend(b, 0) for b in blocks]
        recvs = [ch.irecv(0) for _ in range(st.size)]
        yield sends + recvs
        remote = [q.data for q in recvs]
    out = []
    for i in range(st.size):
        out.append((yield from coll.bcast_object(loc, remote[i] if remote else None, 0)))
    return out


def allgather(ch: Channel, st, data):
    return (yield from _remote_blocks(ch, st, data))


def alltoall(ch: Channel, st, blocks):
    recvs = [ch.irecv(i) for i in range(st.size)]
    sends = [ch.isend(b, i) for i, b in enumerate(blocks)]
    yield recvs + sends
    return [q.data for q in recvs]


def _swap_reduced(ch: Channel, st, reduced):
    loc = local_channel(ch, st)
    remote = None
    if st.rank == 0:
        remote = yield from coll.exchange(ch, reduced, 0)
    return (yield from coll.bcast_object(loc, remote, 0))


def allreduce(ch: Channel, st, data, combine, commute: bool):
    loc = local_channel(ch, st)
    reduced = yield from coll.reduce(loc, data, combine, 0, commute, len(data))
    return (yield from _swap_reduced(ch, st, reduced))


def allreduce_object(ch: Channel, st, data, combine):
    loc = local_channel(ch, st)
    reduced = yield from coll.reduce_object(loc, data, combine, 0)
    return (yield from _swap_reduced(ch, st, reduced))


def reduce(ch: Channel, st, data, combine, commute: bool, root: int):
    if root == ROOT:
        q = ch.irecv(0)
        yield [q]
        return q.data
    loc = local_channel(ch, st)
    reduced = yield from coll.reduce(loc, data, combine, 0, commute, len(data))
    if st.rank == 0:
        yield [ch.isend(reduced, root)]
    return None


def reduce_object(ch: Channel, st, data, combine, root: int):
    if root == ROOT:
        q = ch.irecv(0)
        yield [q]
        return q.data
    loc = local_channel(ch, st)
    reduced = yield from coll.reduce_object(loc, data, combine, 0)
    if st.rank == 0:
        yield [ch.isend(reduced, root)]
    return None


def reduce_scatter(ch: Channel, st, data, combine, commute: bool, sizes):
    """The remote group's reduction, scattered over the local group by ``sizes``."""
    loc = local_channel(ch, st)
    reduced = yield from coll.reduce(loc, data, combine, 0, commute, len(data))
    blocks = None
    if st.rank == 0:
        remote = yield from coll.exchange(ch, reduced, 0)
        blocks = coll.split_blocks(remote, sizes)
    return (yield from coll.scatter(loc, blocks, 0))
