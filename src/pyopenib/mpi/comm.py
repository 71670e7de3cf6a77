"""``MPI.Comm`` / ``MPI.Intracomm``: point-to-point, communicator management, collectives.

A communicator object holds its ``CommState`` — except the predefined ``COMM_WORLD`` and
``COMM_SELF``, which hold a name and look the current rank's state up on every call: the
one ``mpi4py.MPI`` module serves every rank of the job (see ``context``).

Each class's whole method surface is declared in its body here, so a reader finds every
name ``Comm`` answers in one place. The implementations are functions of the modules that
own each concern — ``p2p`` (point-to-point), ``coll_methods`` (collectives),
``coll_comms`` (handles, groups, construction), ``dynproc`` (dynamic processes), ``ulfm``
(fault tolerance) — bound by assignment (``Send = p2p.Send``): the class attribute is the
function itself, so a call costs what a method written in the body costs, and a
program's subclass overrides any of them as it would mpi4py's.
"""

from __future__ import annotations

import sys

from . import attributes, coll_comms, coll_methods, dynproc, errhandler, p2p, ulfm
from .coll_comms import CommState
from .context import JobAborted, current
from .error_classes import ERROR_CLASSES, Exception
from .surface import MpiClass

__all__ = ["Comm", "CommState", "Intracomm"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}


@errhandler.routes_errors
class Comm(metaclass=MpiClass):
    """Communication context.

    ``Comm(comm)`` is another object for the same communicator; the point-to-point
    methods come from ``p2p``, the collectives and constructors from ``coll_methods`` and
    ``coll_comms``."""

    __slots__ = ("_s", "__weakref__")

    def __new__(cls, comm: Comm | None = None):
        """Make another object for ``comm``'s communicator (``None``: the null one).

        As in mpi4py the work is done here, not in ``__init__``, so a program's subclass
        can define ``__new__`` (dup the argument first, say) and call ``super().__new__``."""
        if comm is not None and not isinstance(comm, Comm):
            raise TypeError(f"expected Comm or None, got {type(comm).__name__}")
        new = object.__new__(cls)
        new._s = None if comm is None else comm._s
        if new._s is not None:
            cls._check_kind(new)
        return new

    @classmethod
    def _of(cls, state: CommState | str | None):
        """Make a ``cls`` object for ``state`` (a name for COMM_WORLD/COMM_SELF).

        It is made as mpi4py makes ``Dup``'s result: ``cls.__new__(cls)`` (a subclass's
        ``__new__`` runs), then the handle is set."""
        new = cls.__new__(cls)
        new._s = state
        return new

    @classmethod
    def _check_kind(cls, comm: Comm) -> None:
        """Raise ``TypeError`` unless ``comm`` (not null) is of this class's kind."""

    def _st(self) -> CommState:
        s = self._s
        if s.__class__ is CommState:
            return s
        if s is None:
            raise Exception(_ERR["ERR_COMM"])
        state = getattr(current(), s)
        if state is None:  # COMM_WORLD or COMM_SELF before MPI_Init
            from .startup import called_before_init

            called_before_init(sys._getframe(1))
        return state

    # -- identity -----------------------------------------------------------------------
    def Get_rank(self) -> int:
        """Return the rank of this process in the communicator."""
        return self._st().rank

    def Get_size(self) -> int:
        """Return the number of processes in the communicator."""
        return len(self._st().group)

    @property
    def rank(self) -> int:
        return self._st().rank

    @property
    def size(self) -> int:
        return len(self._st().group)

    def Get_name(self) -> str:
        """Return the print name of the communicator."""
        if self._s is None:
            return "MPI_COMM_NULL"
        return self._st().name

    def Set_name(self, name: str) -> None:
        """Set the print name of the communicator."""
        self._st().name = name

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    def __eq__(self, other) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        a = None if self._s is None else self._st()
        b = None if other._s is None else other._st()
        return a is b

    __hash__ = None  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._s is not None

    def __repr__(self) -> str:
        return f"<pyopenib.MPI.{type(self).__name__} {self._s if isinstance(self._s, str) else ''}>"

    def Abort(self, errorcode: int = 0):
        """Terminate the MPI job, with ``errorcode`` as its exit status."""
        st = self._st()
        raise JobAborted(current().rank, errorcode, st.name or "communicator")

    # -- attributes (attributes) -------------------------------------------------------------
    _attr_kind = "Comm"
    _attributes = attributes.comm_object_attributes
    Create_keyval = classmethod(attributes.Create_keyval)
    Free_keyval = classmethod(attributes.Free_keyval)
    Get_attr = attributes.comm_get_attr
    Set_attr = attributes.Set_attr
    Delete_attr = attributes.Delete_attr

    # -- error handlers (errhandler) ---------------------------------------------------------
    _errh_kind = "Comm"
    _errh_noun = "communicator"
    _errh_state = _st
    Create_errhandler = classmethod(errhandler.Create_errhandler)
    Get_errhandler = errhandler.Get_errhandler
    Set_errhandler = errhandler.Set_errhandler
    Call_errhandler = errhandler.Call_errhandler

    def __init_subclass__(cls, **kwargs):
        """Route a subclass's errors too once routing is on (``errhandler.routes_errors``)."""
        super().__init_subclass__(**kwargs)
        errhandler.route_subclass(cls)

    # -- point-to-point (p2p): every send mode, receives, probes, persistent requests --------
    _send_op = staticmethod(p2p._send_op)
    _recv_op = staticmethod(p2p._recv_op)
    _send_buf = p2p._send_buf
    Send = p2p.Send
    Ssend = p2p.Ssend
    Rsend = p2p.Rsend
    Bsend = p2p.Bsend
    Recv = p2p.Recv
    _isend_buf = p2p._isend_buf
    _isend_data = p2p._isend_data
    Isend = p2p.Isend
    Issend = p2p.Issend
    Irsend = p2p.Irsend
    Ibsend = p2p.Ibsend
    _irecv_buf = p2p._irecv_buf
    Irecv = p2p.Irecv
    _ibsend_op = p2p._ibsend_op
    _bsend = p2p._bsend
    Sendrecv = p2p.Sendrecv
    _sendrecv = p2p._sendrecv
    Isendrecv = p2p.Isendrecv
    Sendrecv_replace = p2p.Sendrecv_replace
    Isendrecv_replace = p2p.Isendrecv_replace
    _send_init = p2p._send_init
    Send_init = p2p.Send_init
    Ssend_init = p2p.Ssend_init
    Rsend_init = p2p.Rsend_init
    Bsend_init = p2p.Bsend_init
    Recv_init = p2p.Recv_init
    Psend_init = p2p.Psend_init
    Precv_init = p2p.Precv_init
    _probe_now = p2p._probe_now
    Iprobe = p2p.Iprobe
    Probe = p2p.Probe
    _improbe_now = p2p._improbe_now
    Improbe = p2p.Improbe
    Mprobe = p2p.Mprobe
    _send_obj = p2p._send_obj
    _isend_obj = p2p._isend_obj
    send = p2p.send
    ssend = p2p.ssend
    bsend = p2p.bsend
    isend = p2p.isend
    issend = p2p.issend
    ibsend = p2p.ibsend
    recv = p2p.recv
    _irecv_obj = p2p._irecv_obj
    irecv = p2p.irecv
    sendrecv = p2p.sendrecv
    probe = p2p.probe
    iprobe = p2p.iprobe
    mprobe = p2p.mprobe
    improbe = p2p.improbe

    # -- handles, groups, info, construction (coll_comms) ------------------------------------
    toint = coll_comms.toint
    py2f = coll_comms.py2f
    handle = property(coll_comms.handle)
    fromint = classmethod(coll_comms.fromint)
    f2py = fromint
    fromhandle = fromint
    __reduce__ = coll_comms.reduce_for_pickle
    Get_group = coll_comms.Get_group
    group = property(coll_comms.group)
    Compare = coll_comms.Compare
    Is_inter = coll_comms.Is_inter
    Is_intra = coll_comms.Is_intra
    Get_topology = coll_comms.Get_topology
    topology = property(coll_comms.topology)
    is_inter = property(coll_comms.is_inter)
    is_intra = property(coll_comms.is_intra)
    is_topo = property(coll_comms.is_topo)
    Set_info = coll_comms.Set_info
    Get_info = coll_comms.Get_info
    info = property(coll_comms.info, coll_comms.set_info)
    _dup_state = coll_comms._dup_state
    _agree_cid = coll_comms._agree_cid
    Dup = coll_comms.Dup
    Clone = coll_comms.Clone
    Dup_with_info = coll_comms.Dup_with_info
    Idup = coll_comms.Idup
    Idup_with_info = coll_comms.Idup_with_info
    Create = coll_comms.Create
    Split = coll_comms.Split
    Split_type = coll_comms.Split_type
    Free = coll_comms.Free
    free = coll_comms.free
    Disconnect = coll_comms.Disconnect

    # -- collectives (coll_methods): blocking, nonblocking and persistent forms --------------
    _blocking = coll_methods._blocking
    _nonblocking = coll_methods._nonblocking
    _persistent = coll_methods._persistent
    _check_root = staticmethod(coll_methods._check_root)
    _barrier = staticmethod(coll_methods._barrier)
    Barrier = coll_methods.Barrier
    Ibarrier = coll_methods.Ibarrier
    Barrier_init = coll_methods.Barrier_init
    barrier = coll_methods.barrier
    _bcast = coll_methods._bcast
    Bcast = coll_methods.Bcast
    Ibcast = coll_methods.Ibcast
    Bcast_init = coll_methods.Bcast_init
    bcast = coll_methods.bcast
    _gather = coll_methods._gather
    Gather = coll_methods.Gather
    Gatherv = coll_methods.Gatherv
    Igather = coll_methods.Igather
    Igatherv = coll_methods.Igatherv
    Gather_init = coll_methods.Gather_init
    Gatherv_init = coll_methods.Gatherv_init
    gather = coll_methods.gather
    _scatter = coll_methods._scatter
    Scatter = coll_methods.Scatter
    Scatterv = coll_methods.Scatterv
    Iscatter = coll_methods.Iscatter
    Iscatterv = coll_methods.Iscatterv
    Scatter_init = coll_methods.Scatter_init
    Scatterv_init = coll_methods.Scatterv_init
    scatter = coll_methods.scatter
    _allgather = coll_methods._allgather
    Allgather = coll_methods.Allgather
    Allgatherv = coll_methods.Allgatherv
    Iallgather = coll_methods.Iallgather
    Iallgatherv = coll_methods.Iallgatherv
    Allgather_init = coll_methods.Allgather_init
    Allgatherv_init = coll_methods.Allgatherv_init
    allgather = coll_methods.allgather
    _alltoall = coll_methods._alltoall
    _exchange_schedule = staticmethod(coll_methods._exchange_schedule)
    Alltoall = coll_methods.Alltoall
    Alltoallv = coll_methods.Alltoallv
    Ialltoall = coll_methods.Ialltoall
    Ialltoallv = coll_methods.Ialltoallv
    Alltoall_init = coll_methods.Alltoall_init
    Alltoallv_init = coll_methods.Alltoallv_init
    _alltoallw = coll_methods._alltoallw
    Alltoallw = coll_methods.Alltoallw
    Ialltoallw = coll_methods.Ialltoallw
    Alltoallw_init = coll_methods.Alltoallw_init
    alltoall = coll_methods.alltoall
    _reduction_args = staticmethod(coll_methods._reduction_args)
    _reduce = coll_methods._reduce
    Reduce = coll_methods.Reduce
    Ireduce = coll_methods.Ireduce
    Reduce_init = coll_methods.Reduce_init
    reduce = coll_methods.reduce
    _allreduce = coll_methods._allreduce
    Allreduce = coll_methods.Allreduce
    Iallreduce = coll_methods.Iallreduce
    Allreduce_init = coll_methods.Allreduce_init
    allreduce = coll_methods.allreduce
    _reduce_scatter = coll_methods._reduce_scatter
    Reduce_scatter_block = coll_methods.Reduce_scatter_block
    Ireduce_scatter_block = coll_methods.Ireduce_scatter_block
    Reduce_scatter_block_init = coll_methods.Reduce_scatter_block_init
    Reduce_scatter = coll_methods.Reduce_scatter
    Ireduce_scatter = coll_methods.Ireduce_scatter
    Reduce_scatter_init = coll_methods.Reduce_scatter_init

    # -- dynamic processes (dynproc) ---------------------------------------------------------
    Get_parent = classmethod(dynproc.Get_parent)
    Join = classmethod(dynproc.Join)

    # -- fault tolerance (ulfm: mpi4py's fallbacks without ULFM) -----------------------------
    Revoke = ulfm.Revoke
    Is_revoked = ulfm.Is_revoked
    Get_failed = ulfm.Get_failed
    Ack_failed = ulfm.Ack_failed
    Agree = ulfm.Agree
    Iagree = ulfm.Iagree
    Shrink = ulfm.Shrink
    Ishrink = ulfm.Ishrink


class Intracomm(Comm):
    """Intracommunicator.

    A communicator within one group: prefix reductions, topologies and
    intercommunicators are built from it."""

    __slots__ = ()

    @classmethod
    def _check_kind(cls, comm: Comm) -> None:
        if comm._st().inter:
            raise TypeError("expecting an intracommunicator")

    # -- prefix reductions (coll_methods) ----------------------------------------------------
    _scan = coll_methods._scan
    Scan = coll_methods.Scan
    Exscan = coll_methods.Exscan
    Iscan = coll_methods.Iscan
    Iexscan = coll_methods.Iexscan
    Scan_init = coll_methods.Scan_init
    Exscan_init = coll_methods.Exscan_init
    scan = coll_methods.scan
    exscan = coll_methods.exscan

    # -- constructors over one group: groups, topologies, intercommunicators (coll_comms) ----
    Create_group = coll_comms.Create_group
    Create_cart = coll_comms.Create_cart
    Create_graph = coll_comms.Create_graph
    Create_dist_graph_adjacent = coll_comms.Create_dist_graph_adjacent
    Create_dist_graph = coll_comms.Create_dist_graph
    Cart_map = coll_comms.Cart_map
    Graph_map = coll_comms.Graph_map
    Create_intercomm = coll_comms.Create_intercomm
    Create_from_group = classmethod(coll_comms.Create_from_group)

    # -- dynamic processes (dynproc) ---------------------------------------------------------
    Accept = dynproc.Accept
    Connect = dynproc.Connect
    Spawn = dynproc.Spawn
    Spawn_multiple = dynproc.Spawn_multiple
