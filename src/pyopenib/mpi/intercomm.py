"""``MPI.Intercomm``: communicators between two disjoint groups, and how they are built.

``Create_intercomm`` follows MPI's recipe: the two leaders swap their groups over the
peer communicator (point-to-point with the caller's tag, as ``MPI_Intercomm_create``
specifies), each leader broadcasts the remote group in its own group, and both groups
agree on two context ids: one for the intercommunicator, one for the local
intracommunicator its collectives use (``coll_inter``). ``Merge`` makes one
intracommunicator of both groups, the ``high=False`` group first.
"""

from __future__ import annotations

import numpy as np

from . import collectives as coll
from .coll_comms import COMM_TYPES, CommState, _inter_cid, comm_object, new_cid
from .coll_engine import Channel, run
from .coll_inter import local_channel
from .coll_methods import dumps, loads
from .comm import Comm, Intracomm
from .error_classes import ERROR_CLASSES, Exception
from .group import Group

__all__ = ["NAMES", "Intercomm", "create_from_subgroups", "create_intercomm", "split_inter"]

_ERR_RANK = ERROR_CLASSES["ERR_RANK"][0]
_ERR_COMM = ERROR_CLASSES["ERR_COMM"][0]


class Intercomm(Comm):
    """Intercommunicator.

    ``Get_size``/``Get_rank`` are the local group's; peers of point-to-point and
    collectives are numbered in the remote group."""

    __slots__ = ()

    @classmethod
    def _check_kind(cls, comm: Comm) -> None:
        if not comm._st().inter:
            raise TypeError("expecting an intercommunicator")

    def Get_remote_group(self) -> Group:
        """Return the remote group."""
        from .group import group_of

        return group_of(self._st().ranks)

    @property
    def remote_group(self) -> Group:
        return self.Get_remote_group()

    def Get_remote_size(self) -> int:
        """Return the number of processes in the remote group."""
        return self._st().size

    @property
    def remote_size(self) -> int:
        return self.Get_remote_size()

    def Merge(self, high: bool = False) -> Intracomm:
        """Merge the two groups into an intracommunicator (collective over both).

        The group that passed ``high=False`` comes first (both the same: the group whose
        leader has the lower world rank)."""
        st = self._st()
        ch = Channel.of(st, "MPI_Intercomm_merge")
        other_high = run(ch, _swap_with_remote(ch, st, bool(high)))
        mine_first = (not high and other_high) or (
            bool(high) == other_high and st.group[0] < st.ranks[0]
        )
        members = st.group + st.ranks if mine_first else st.ranks + st.group
        ch = Channel.of(st, "MPI_Intercomm_merge")
        cid = run(ch, _inter_cid(ch, st, 1))
        me = st.group[st.rank]
        return Intracomm._of(CommState(cid, members, members.index(me), st.rc))

    @classmethod
    def Create_from_groups(
        cls,
        local_group,
        local_leader,
        remote_group,
        remote_leader,
        stringtag="org.mpi4py",
        info=None,
        errhandler=None,
    ):
        """MPI-4 sessions: not provided (``NotImplementedError`` at the call)."""
        raise NotImplementedError(
            "mpi4py.MPI.Intercomm.Create_from_groups is not implemented by pyopenib's MPI"
        )


def _swap_with_remote(ch, st, value):
    """Schedule: the remote group's leader's ``value`` (a picklable), at every member."""
    loc = local_channel(ch, st)
    other = None
    if st.rank == 0:
        other = yield from coll.exchange(ch, dumps(value), 0)
    return loads((yield from coll.bcast_object(loc, other, 0)))


def _inter_state(cid: int, local_members, remote_members, me: int, rc) -> CommState:
    rank = list(local_members).index(me)
    local = CommState(cid + 1, list(local_members), rank, rc)
    return CommState(cid, list(local_members), rank, rc, remote=list(remote_members), local=local)


def create_intercomm(comm, local_leader: int, peer_comm, remote_leader: int, tag: int):
    st = comm._st()
    if not 0 <= local_leader < len(st.group):
        raise Exception(_ERR_RANK)
    ch = Channel.of(st, "MPI_Intercomm_create")
    remote = None
    if st.rank == local_leader:
        peer = peer_comm._st()
        if not 0 <= remote_leader < peer.size:
            raise Exception(_ERR_RANK)
        bridge = Channel(peer.rc, peer.ranks, peer.rank, peer.ctx, tag, ch.call)
        remote = loads(run(bridge, coll.exchange(bridge, dumps(list(st.group)), remote_leader)))
    remote = loads(
        run(ch, coll.bcast_object(ch, None if remote is None else dumps(remote), local_leader))
    )
    cid = run(ch, new_cid(ch))
    if st.rank == local_leader:
        mine = np.array([cid], np.int64).view(np.uint8)
        got = run(bridge, coll.exchange(bridge, mine, remote_leader))
        cid = max(cid, int(np.asarray(got).view(np.int64)[0]))
    got = run(ch, coll.bcast(ch, np.array([cid], np.int64).view(np.uint8), local_leader, 8))
    cid = int(np.asarray(got).view(np.int64)[0])
    st.rc.next_cid = max(st.rc.next_cid, cid + 2)
    return Intercomm._of(_inter_state(cid, st.group, remote, st.group[st.rank], st.rc))


def _remote_lists(ch, st, mine):
    """Schedule: every member's (picklable) ``mine`` on both sides: (local list, remote
    list), each in group rank order."""
    loc = local_channel(ch, st)
    local = [loads(b) for b in (yield from coll.allgather(loc, dumps(mine)))]
    remote = yield from _swap_with_remote(ch, st, local)
    return local, remote


def split_inter(st, color: int, key: int):
    from .status import UNDEFINED

    ch = Channel.of(st, "MPI_Comm_split")
    local, remote = run(ch, _remote_lists(ch, st, (color, key)))
    ch = Channel.of(st, "MPI_Comm_split")
    cid = run(ch, _inter_cid(ch, st, 2))
    if color == UNDEFINED:
        return Intercomm(None)
    mine = [
        w for _, _, w in sorted((k, i, st.group[i]) for i, (c, k) in enumerate(local) if c == color)
    ]
    theirs = [
        w
        for _, _, w in sorted((k, i, st.ranks[i]) for i, (c, k) in enumerate(remote) if c == color)
    ]
    if not theirs:
        return Intercomm(None)
    return comm_object(Intercomm, _inter_state(cid, mine, theirs, st.group[st.rank], st.rc))


def create_from_subgroups(st, group: Group):
    me = st.group[st.rank]
    members = list(group._obj.members)
    ch = Channel.of(st, "MPI_Comm_create")
    _, remote = run(ch, _remote_lists(ch, st, members if st.rank == 0 else None))
    theirs = remote[0]
    ch = Channel.of(st, "MPI_Comm_create")
    cid = run(ch, _inter_cid(ch, st, 2))
    if me not in group._obj or not theirs:
        return Intercomm(None)
    return Intercomm._of(_inter_state(cid, members, theirs, me, st.rc))


NAMES = {"Intercomm": Intercomm, **COMM_TYPES}
"""What ``mpi4py.MPI`` exports from here (and ``coll_comms``' split types)."""
