"""Communicator construction: Dup, Split, Split_type, Create, Create_group, Compare, Free,
names and info, context ids.

Context ids are agreed as a real MPI must: every new communicator's id is unused by all
its members, so traffic on it can never match a message of another communicator. Each
rank allocates ids upwards (``RankContext.next_cid``); a constructor takes the maximum of
the members' next free ids with an allreduce over the parent (Open MPI's ``comm_cid.c``
agreement, without its reuse of freed ids). Each id gives two PML contexts: ``2*cid`` for
point-to-point, ``2*cid+1`` for the communicator's collectives.

``Split_type`` groups by the simulated node a rank runs on (``pyopenib run --ppn``: rank
r is on node r // ppn) for ``COMM_TYPE_SHARED`` and the Open MPI types at or above a
socket; each rank has its own core, so the types below that give one-rank communicators;
``OMPI_COMM_TYPE_CU`` and ``CLUSTER`` span the whole job. MPI-4's ``HW_GUIDED`` and
``HW_UNGUIDED`` are MPI_ERR_ARG, as in Open MPI 4.1 (an MPI-3.1 library).
"""

from __future__ import annotations

import sys
import weakref

import numpy as np

from . import collectives as coll
from .attributes import comm_attributes, copy_attributes, delete_attributes
from .coll_engine import Channel, run
from .coll_inter import local_channel
from .context import current as current_context
from .errhandler import inherit
from .error_classes import ERROR_CLASSES, Exception
from .group import CONGRUENT, IDENT, UNEQUAL, Group, GroupHandle, compare_members
from .request import DoneOperation
from .request import wrap as request_of
from .status import UNDEFINED, empty_fields

__all__ = [
    "COMM_TYPES",
    "CommState",
    "new_cid",
    "comm_object",
]

_ERR_COMM = ERROR_CLASSES["ERR_COMM"][0]
_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]
_ERR_GROUP = ERROR_CLASSES["ERR_GROUP"][0]

COMM_TYPE_SHARED = 0
COMM_TYPES = {
    "COMM_TYPE_SHARED": COMM_TYPE_SHARED,
    "OMPI_COMM_TYPE_HWTHREAD": 1,
    "OMPI_COMM_TYPE_CORE": 2,
    "OMPI_COMM_TYPE_L1CACHE": 3,
    "OMPI_COMM_TYPE_L2CACHE": 4,
    "OMPI_COMM_TYPE_L3CACHE": 5,
    "OMPI_COMM_TYPE_SOCKET": 6,
    "OMPI_COMM_TYPE_NUMA": 7,
    "OMPI_COMM_TYPE_BOARD": 8,
    "OMPI_COMM_TYPE_HOST": 9,
    "OMPI_COMM_TYPE_CU": 10,
    "OMPI_COMM_TYPE_CLUSTER": 11,
    "COMM_TYPE_HW_UNGUIDED": 12,
    "COMM_TYPE_HW_GUIDED": 13,
    "COMM_TYPE_RESOURCE_GUIDED": UNDEFINED,
}
"""Open MPI 4.1's split types (``mpi.h``) and mpi4py's values for the MPI-4 ones."""
_PER_PROCESS = frozenset({1, 2, 3, 4})
_PER_NODE = frozenset({0, 5, 6, 7, 8, 9})
_PER_JOB = frozenset({10, 11})

_GROUP_TAG_BASE = 1 << 30
"""Tags of ``Create_group`` (a collective over a group, not over the parent): above the
collective sequence tags, so they never meet another collective's traffic."""


class CommState:
    """One rank's view of a communicator. ``group`` is the local group (world ranks);
    ``ranks`` the ranks that point-to-point and collective peers are numbered by (the
    local group, or on an intercommunicator the remote group); ``size`` is ``len(ranks)``
    (what p2p checks destinations against); ``rank`` this process's rank in ``group``.
    ``local`` is an intercommunicator's local intracommunicator (its collectives' local
    phases), ``topo`` a topology (``topology``), ``coll_seq`` the sequence number of the
    next blocking collective on it (its tag), ``nbc_seq`` that of the next nonblocking or
    persistent one (they have their own tags, as libnbc's in Open MPI)."""

    __slots__ = (
        "cid",
        "ranks",
        "rank",
        "size",
        "group",
        "name",
        "ctx",
        "coll_ctx",
        "freed",
        "rc",
        "inter",
        "local",
        "topo",
        "info",
        "coll_seq",
        "nbc_seq",
        "ghandle",
        "fint",
        "__weakref__",
    )

    def __init__(self, cid: int, ranks, rank: int, rc, name: str = "", remote=None, local=None):
        self.rc = rc  # the owning rank's RankContext (its PML), found without a lookup
        self.cid = cid
        self.group = list(ranks)
        self.ranks = self.group if remote is None else list(remote)
        self.rank = rank
        self.size = len(self.ranks)
        self.name = name
        self.ctx = 2 * cid
        self.coll_ctx = 2 * cid + 1
        self.freed = False
        self.inter = remote is not None
        self.local = local
        self.topo = None
        self.info = None
        self.coll_seq = 0
        self.nbc_seq = 0
        self.ghandle = None
        self.fint = 0  # its integer handle (``toint``), given on first request

    def group_handle(self) -> GroupHandle:
        if self.ghandle is None:
            self.ghandle = GroupHandle(self.group)
        return self.ghandle


def _max_combine(a, b):
    return np.maximum(a.view(np.int64), b.view(np.int64)).view(np.uint8)


def new_cid(ch: Channel):
    """Schedule: agree with every rank of ``ch`` on a context id all of them have free."""
    rc = ch.rc
    mine = np.array([rc.next_cid], np.int64).view(np.uint8)
    agreed = yield from coll.allreduce(ch, mine, _max_combine, True, 8, 8)
    cid = int(agreed.view(np.int64)[0])
    rc.next_cid = max(rc.next_cid, cid + 1)
    return cid


def comm_object(cls_or_kind, state):
    """The Python communicator object of ``state``: ``Intracomm``/``Intercomm``/a
    topology class (imported here: the classes live in modules that import this one)."""
    from .comm import Intracomm
    from .intercomm import Intercomm

    if state is None:
        return (Intercomm if cls_or_kind == "inter" else Intracomm)(None)
    if isinstance(cls_or_kind, type):
        return cls_or_kind._of(state)
    if state.inter:
        return Intercomm._of(state)
    if state.topo is not None:
        return state.topo.comm_class()._of(state)
    return Intracomm._of(state)


def _node_of(rc) -> str:
    return rc.hostname


# -- integer handles and pickling ---------------------------------------------------
def toint(self) -> int:
    """Translate the object to an integer handle.

    Open MPI's Fortran handle numbers: COMM_WORLD 0, COMM_SELF 1, COMM_NULL 2, and
    3, 4, ... for the rank's communicators in the order their handle is asked for."""
    s = self._s
    if s is None or isinstance(s, str):
        return _PREDEFINED_FINTS[s]
    if not s.fint:
        table = _handle_table(s.rc)
        s.fint = len(table) + 3
        table.append(weakref.ref(s))
    return s.fint


def py2f(self) -> int:
    return self.toint()


def handle(self) -> int:
    return self.toint()


def fromint(cls, arg: int):
    """The communicator of handle ``arg``, as the class its kind calls for."""
    from .comm import Intracomm

    arg = int(arg)
    for name, fint in _PREDEFINED_FINTS.items():
        if fint == arg:
            return Intracomm._of(name) if name is not None else cls(None)
    table = _handle_table(current_context())
    state = table[arg - 3]() if 3 <= arg < len(table) + 3 else None
    if state is None or state.freed:
        raise Exception(_ERR_COMM)
    return comm_object(None, state)


f2py = fromint
fromhandle = fromint


def reduce_for_pickle(self):
    """Pickle a predefined communicator by name.

    Predefined communicators pickle by name (and unpickle as the constant); any
    other cannot be serialized, as in mpi4py."""
    s = self._s
    if s is None or isinstance(s, str):
        name = _PREDEFINED_NAMES[s]
        const = getattr(sys.modules["mpi4py.MPI"], name)
        if self is const:
            return (_predefined_comm, (name,))
        return (type(self), (const,))
    raise ValueError(f"cannot serialize 'mpi4py.MPI.{type(self).__name__}' instance")


# -- group and comparison -----------------------------------------------------------
def Get_group(self) -> Group:
    """Access the group associated with the communicator."""
    return Group._of(self._st().group_handle())


def group(self) -> Group:
    return self.Get_group()


def Compare(self, comm) -> int:
    """Compare two communicators."""
    a, b = self._st(), comm._st()
    if a is b:
        return IDENT
    if a.inter != b.inter:
        return UNEQUAL
    result = compare_members(a.group, b.group)
    if a.inter and result != UNEQUAL:
        remote = compare_members(a.ranks, b.ranks)
        result = max(result, remote)
    return CONGRUENT if result == IDENT else result


def Is_inter(self) -> bool:
    """Indicate whether the communicator is an intercommunicator."""
    return self._st().inter


def Is_intra(self) -> bool:
    """Indicate whether the communicator is an intracommunicator."""
    return not self._st().inter


def Get_topology(self) -> int:
    """Return the type of topology (if any) attached to the communicator."""
    topo = self._st().topo
    return UNDEFINED if topo is None else topo.kind


def topology(self) -> int:
    return self.Get_topology()


def is_inter(self) -> bool:
    return self.Is_inter()


def is_intra(self) -> bool:
    return self.Is_intra()


def is_topo(self) -> bool:
    return self._st().topo is not None


# -- names and info -----------------------------------------------------------------
def Set_info(self, info) -> None:
    """Set new values for the hints of the communicator."""
    self._st().info = info


def Get_info(self):
    """Return the current hints of the communicator.

    A new Info with the hints set (``Set_info``/``Dup_with_info``); without any,
    Open MPI 4.1's two defaults, as ``MPI_Comm_get_info`` returns them."""
    from .info import Info

    st = self._st()
    info = Info.Create()
    if st.info is None:
        info.Set("mpi_assert_no_any_source", "false")
        info.Set("mpi_assert_allow_overtaking", "false")
    else:
        for key in st.info.keys():
            info.Set(key, st.info.Get(key))
    return info


def info(self):
    return self.Get_info()


def set_info(self, info) -> None:
    self.Set_info(info)


# -- duplication --------------------------------------------------------------------
def _dup_state(self, st, cid: int):
    """Copy a communicator state under a new context id.

    A copy of ``st`` under a new context id (intercommunicators: their local
    intracommunicator is duplicated too, under the same id's neighbour)."""
    local = None
    if st.inter:
        local = CommState(cid + 1, st.local.group, st.local.rank, st.rc)
    remote = st.ranks if st.inter else None
    new = CommState(cid, st.group, st.rank, st.rc, remote=remote, local=local)
    new.topo = st.topo
    return new


def _agree_cid(self, st, call: str, ids: int = 1) -> int:
    ch = Channel.of(st, call)
    if st.inter:
        return run(ch, _inter_cid(ch, st, ids))
    cid = run(ch, new_cid(ch))
    if ids > 1:
        st.rc.next_cid = max(st.rc.next_cid, cid + ids)
    return cid


def Dup(self, info=None):
    """Duplicate the communicator."""
    st = self._st()
    cid = self._agree_cid(st, "MPI_Comm_dup", 2 if st.inter else 1)
    new = self._dup_state(st, cid)
    new.info = info if info is not None else st.info
    copy_attributes(self, comm_attributes(st), comm_attributes(new))
    inherit(st, new)
    return type(self)._of(new)


def Clone(self):
    """Clone the communicator (``Dup``, keeping the object's class)."""
    return self.Dup()


def Dup_with_info(self, info):
    """Duplicate the communicator with hints."""
    return self.Dup(info)


def Idup(self, info=None):
    """Nonblocking duplication of the communicator.

    The context id is agreed at the call (a blocking allreduce over the parent):
    the returned request is complete. A program that posts MPI_Comm_idup and then
    waits for a peer that has not yet called it would block here; real Open MPI
    agrees in the background."""
    return self.Dup(info), request_of(DoneOperation(empty_fields()))


def Idup_with_info(self, info):
    """Nonblocking duplication of the communicator with hints."""
    return self.Idup(info)


# -- subsets ------------------------------------------------------------------------
def Create(self, group: Group):
    """Create a communicator from a group.

    The members of ``group`` (a subset of this communicator's group) get a new
    communicator; the others get COMM_NULL. Collective over this communicator."""
    st = self._st()
    if group._obj is None:
        raise Exception(_ERR_GROUP)
    if st.inter:
        from .intercomm import create_from_subgroups

        return create_from_subgroups(st, group)
    members = group._obj.members
    if any(w not in st.group for w in members):
        raise Exception(_ERR_GROUP)
    cid = self._agree_cid(st, "MPI_Comm_create")
    me = st.group[st.rank]
    if me not in group._obj:
        return comm_object("intra", None)
    return comm_object("intra", CommState(cid, list(members), group._obj.rank_of(me), st.rc))


def Split(self, color: int = 0, key: int = 0):
    """Split the communicator by color and key."""
    st = self._st()
    if color < 0 and color != UNDEFINED:  # before any traffic, as Open MPI checks
        raise Exception(_ERR_ARG)
    if st.inter:
        from .intercomm import split_inter

        return split_inter(st, color, key)
    ch = Channel.of(st, "MPI_Comm_split")
    infos = run(ch, coll.allgather(ch, np.array([color, key], np.int64).view(np.uint8)))
    pairs = [tuple(int(x) for x in b.view(np.int64)) for b in infos]
    cid = run(ch, new_cid(ch))
    if color == UNDEFINED:
        return comm_object("intra", None)
    members = sorted((k, r) for r, (c, k) in enumerate(pairs) if c == color)
    ranks = [st.group[r] for _, r in members]
    return comm_object(
        "intra", CommState(cid, ranks, [r for _, r in members].index(st.rank), st.rc)
    )


def Split_type(self, split_type: int, key: int = 0, info=None):
    """Split the communicator by a split type (processes sharing a node, say)."""
    st = self._st()
    if split_type == UNDEFINED:
        color = UNDEFINED
    elif split_type in _PER_NODE:
        nodes = sorted({_node_of(c) for c in _job_contexts(st.rc)})
        color = nodes.index(_node_of(st.rc))
    elif split_type in _PER_PROCESS:
        color = st.rank
    elif split_type in _PER_JOB:
        color = 0
    else:
        raise Exception(_ERR_ARG)
    return self.Split(color, key)


# -- destruction --------------------------------------------------------------------
def Free(self) -> None:
    """Free the communicator."""
    s = self._s
    if s is None or isinstance(s, str):
        raise Exception(_ERR_COMM)
    delete_attributes(self, comm_attributes(s))
    s.freed = True
    self._s = None


def free(self) -> None:
    """Call ``Free`` if not null or predefined."""
    s = self._s
    if s is None:
        return
    if isinstance(s, str):  # COMM_WORLD/COMM_SELF: mpi4py never frees the constant,
        if getattr(sys.modules["mpi4py.MPI"], _PREDEFINED_NAMES[s]) is not self:
            self._s = None  # and another object for it forgets it
        return
    self.Free()


def Disconnect(self) -> None:
    """Waits for the communicator's pending traffic (a barrier), then frees it."""
    self.Barrier()
    self.Free()


_PREDEFINED_FINTS = {"world": 0, "self_comm": 1, None: 2}
_PREDEFINED_NAMES = {"world": "COMM_WORLD", "self_comm": "COMM_SELF", None: "COMM_NULL"}
_HANDLE_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _handle_table(rc) -> list:
    """One rank's communicators by integer handle (weak: a freed one is gone)."""
    table = _HANDLE_TABLES.get(rc)
    if table is None:
        table = _HANDLE_TABLES[rc] = []
    return table


def _predefined_comm(name: str):
    """Unpickle a predefined communicator: the job's ``mpi4py.MPI`` constant itself."""
    return getattr(sys.modules["mpi4py.MPI"], name)


def _job_contexts(rc):
    """Every rank's context in the job (to place ranks on nodes by hostname)."""
    return rc.job.contexts


def _inter_cid(ch: Channel, st, ids: int):
    """Agree on ``ids`` consecutive context ids over both groups of an intercommunicator:
    each group agrees locally, the leaders swap, everyone takes the maximum."""
    loc = local_channel(ch, st)
    cid = yield from new_cid(loc)
    mine = np.array([cid], np.int64).view(np.uint8)
    other = None
    if st.rank == 0:
        other = yield from coll.exchange(ch, mine, 0)
    other = yield from coll.bcast(loc, other, 0, 8)
    cid = max(cid, int(np.asarray(other).view(np.int64)[0]))
    st.rc.next_cid = max(st.rc.next_cid, cid + ids)
    return cid


def Create_group(self, group: Group, tag: int = 0):
    """Create a communicator from a group, collectively over the group only.

    Collective over the members of ``group`` only (MPI-3): the id is agreed among
    them, on the parent's collective context with a tag of its own."""
    st = self._st()
    if group._obj is None:
        raise Exception(_ERR_GROUP)
    members = list(group._obj.members)
    me = st.group[st.rank]
    if me not in group._obj or any(w not in st.group for w in members):
        raise Exception(_ERR_GROUP)
    rank = group._obj.rank_of(me)
    label = "MPI_Comm_create_group"
    ch = Channel(st.rc, members, rank, st.coll_ctx, _GROUP_TAG_BASE + tag, label)
    cid = run(ch, new_cid(ch))
    return comm_object("intra", CommState(cid, members, group._obj.rank_of(me), st.rc))


# -- topologies (``topology``) and intercommunicators (``intercomm``) --------------
def Create_cart(self, dims, periods=None, reorder: bool = False):
    """Create a communicator with a Cartesian topology."""
    from .topology import create_cart

    return create_cart(self, dims, periods, reorder)


def Create_graph(self, index, edges, reorder: bool = False):
    """Create a communicator with a graph topology."""
    from .topology import create_graph

    return create_graph(self, index, edges, reorder)


def Create_dist_graph_adjacent(
    self,
    sources,
    destinations,
    sourceweights=None,
    destweights=None,
    info=None,
    reorder: bool = False,
):
    """Create a distributed graph topology from each process's neighbours."""
    from .topology import create_dist_graph_adjacent

    return create_dist_graph_adjacent(
        self, sources, destinations, sourceweights, destweights, info, reorder
    )


def Create_dist_graph(
    self, sources, degrees, destinations, weights=None, info=None, reorder: bool = False
):
    """Create a communicator with a distributed graph topology."""
    from .topology import create_dist_graph

    return create_dist_graph(self, sources, degrees, destinations, weights, info, reorder)


def Cart_map(self, dims, periods=None) -> int:
    """Return the rank this process would have in a Cartesian topology."""
    from .topology import cart_map

    return cart_map(self, dims, periods)


def Graph_map(self, index, edges) -> int:
    """Return the rank this process would have in a graph topology."""
    from .topology import graph_map

    return graph_map(self, index, edges)


def Create_intercomm(self, local_leader: int, peer_comm, remote_leader: int, tag: int = 0):
    """Create an intercommunicator from two intracommunicators' leaders."""
    from .intercomm import create_intercomm

    return create_intercomm(self, local_leader, peer_comm, remote_leader, tag)


def Create_from_group(cls, group, stringtag: str = "org.mpi4py", info=None, errhandler=None):
    """MPI-4 sessions: not provided (``NotImplementedError`` at the call)."""
    raise NotImplementedError(
        "mpi4py.MPI.Intracomm.Create_from_group is not implemented by pyopenib's MPI"
    )
