"""The collective methods of ``MPI.Comm`` and ``MPI.Intracomm``, as mpi4py spells them.

Each collective has one *builder* (``_bcast``, ``_gather``...): it checks the arguments
and parses the buffers at the call (so a bad root or buffer raises there, as in mpi4py),
and returns the schedule that moves the data (``collectives`` on an intracommunicator,
``coll_inter`` on an intercommunicator) and stores the result into the receive buffer.
The blocking (``Bcast``), nonblocking (``Ibcast``) and persistent (``Bcast_init``) forms
all run that one schedule (see ``coll_engine``). Buffers are parsed by ``buffers`` (the
message and vector-message specifications mpi4py accepts); reductions by ``ops``.

``IN_PLACE`` is accepted where MPI allows it on an intracommunicator: the send buffer of
Gather(v) and Reduce at the root, the receive buffer of Scatter(v) at the root, and the
send buffer of Allgather(v), Alltoall(v/w), Allreduce, Reduce_scatter(_block), Scan and
Exscan.
"""

from __future__ import annotations

import numpy as np

from . import coll_inter as inter
from . import collectives as coll
from .buffers import IN_PLACE, message, vector_message, w_message
from .coll_engine import Channel, run, start
from .comm_locks import comm_lock
from .error_classes import ERROR_CLASSES, Exception
from .ops import OPS, Op, check_op, reduce_arrays
from .pickling import PICKLE
from .request import Prequest, Request, persistent, wrap
from .status import PROC_NULL

__all__ = ["ROOT", "dumps", "loads"]

ROOT = -4
"""``MPI.ROOT``: the root's own rank argument in an intercommunicator collective."""

_ERR_ROOT = ERROR_CLASSES["ERR_ROOT"][0]
_ERR_TRUNCATE = ERROR_CLASSES["ERR_TRUNCATE"][0]
_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]
_ERR_COMM = ERROR_CLASSES["ERR_COMM"][0]
_SUM = OPS["SUM"]
_U8 = np.uint8


def dumps(obj) -> np.ndarray:
    """An object as the bytes mpi4py sends for it (``MPI.pickle``, which a program may
    replace)."""
    return np.frombuffer(PICKLE.dumps(obj), dtype=_U8)


def loads(data):
    return PICKLE.loads(data)


def _store(msg, data) -> None:
    """Received bytes into a receive message, unpacked into the user's layout; more than
    it holds is MPI_ERR_TRUNCATE."""
    if data is None:
        return
    view = msg.data
    n = len(data)
    if n > len(view):
        raise Exception(_ERR_TRUNCATE)
    if n:
        view[:n] = data
    msg.finish(n)


class _Blocks:
    """A collective's simple buffer cut into ``n`` equal blocks (mpi4py's
    ``message_simple`` with ``blocks``): the interface of ``VectorMessage``."""

    __slots__ = ("msg", "nbytes")

    def __init__(self, msg, n: int):
        self.msg = msg
        self.nbytes = len(msg.data) // n if n else 0

    @property
    def datatype(self):
        return self.msg.datatype

    def block(self, i: int):
        b = self.nbytes
        return self.msg.data[i * b : (i + 1) * b]

    def store(self, i: int, data) -> None:
        area = self.block(i)
        if len(data) > len(area):
            raise Exception(_ERR_TRUNCATE)
        if len(data):  # an empty block may be read-only memory (b"", [None, 0, BYTE])
            area[: len(data)] = data

    def finish(self) -> None:
        self.msg.finish()


def _blocks(spec, n: int, writable: bool, vector: bool):
    """The per-process blocks of a collective buffer: equal (``Gather``...) or as a
    vector spec gives them (``Gatherv``...)."""
    if vector:
        return vector_message(spec, n, writable=writable)
    return _Blocks(message(spec, writable=writable, blocks=n), n)


def _store_blocks(bufs, got, skip: int = -1) -> None:
    """Received blocks into a blocks buffer (except ``skip``), then unpack."""
    for i, b in enumerate(got):
        if i != skip and b is not None:
            bufs.store(i, b)
    bufs.finish()


def _check_same_type(smsg, rmsg) -> None:
    """A reduction's send and receive buffers must hold the same datatype (mpi4py's
    ``chk_cro_args``: it compares the MPI handles, before any count)."""
    if smsg.datatype is not rmsg.datatype and smsg.datatype != rmsg.datatype:
        raise ValueError("mismatch in send and receive MPI datatypes")


def _in_place(buf) -> bool:
    """mpi4py takes ``None`` as ``IN_PLACE`` where IN_PLACE is allowed."""
    return buf is None or buf is IN_PLACE


def _combiner(op: Op, datatype):
    def combine(a, b):
        return reduce_arrays(op, datatype, a, b)

    return combine


def _object_combiner(op):
    def combine(a, b):
        return dumps(op(loads(a), loads(b)))

    return combine


def _send_message(buf):
    return message(buf)


def _recv_message(buf):
    return message(buf, writable=True)


# -- the three forms of every collective --------------------------------------------
def _blocking(self, builder, call, *args):
    st = self._st()
    schedule = builder(st, *args)
    ch = Channel.of(st, call)
    return run(ch, schedule(st, ch))


def _nonblocking(self, builder, call, *args) -> Request:
    st = self._st()
    schedule = builder(st, *args)
    ch = Channel.of(st, call, nonblocking=True)
    return wrap(start(ch, schedule(st, ch)))


def _persistent(self, builder, call, *args) -> Prequest:
    st = self._st()
    builder(st, *args)  # argument errors at the init call

    def begin():
        schedule = builder(st, *args)
        ch = Channel.of(st, call, nonblocking=True)
        return start(ch, schedule(st, ch))

    return persistent(begin, (_persistent_label, call, st))


# -- checks -------------------------------------------------------------------------
def _check_root(st, root: int) -> None:
    if st.inter:
        if root != ROOT and root != PROC_NULL and not 0 <= root < st.size:
            raise Exception(_ERR_ROOT)
    elif not 0 <= root < len(st.group):
        raise Exception(_ERR_ROOT)


# -- barrier ------------------------------------------------------------------------
def _barrier(st):
    def schedule(st, ch):
        if st.inter:
            return (yield from inter.barrier(ch, st))
        return (yield from coll.barrier(ch))

    return schedule


def Barrier(self) -> None:
    """Barrier synchronization."""
    self._blocking(self._barrier, "MPI_Barrier")


def Ibarrier(self) -> Request:
    """Nonblocking barrier synchronization."""
    return self._nonblocking(self._barrier, "MPI_Ibarrier")


def Barrier_init(self, info=None) -> Prequest:
    """Create a persistent request for a barrier."""
    return self._persistent(self._barrier, "MPI_Barrier_init")


def barrier(self) -> None:
    """Barrier synchronization."""
    self.Barrier()


# -- bcast --------------------------------------------------------------------------
def _bcast(self, st, buf, root: int):
    self._check_root(st, root)
    if st.inter:
        sending = root == ROOT
        idle = root == PROC_NULL
        msg = None if idle else message(buf, writable=not sending)

        def schedule(st, ch):
            if idle:
                return
            data = yield from inter.bcast(ch, st, msg.data if sending else None, root)
            if not sending:
                _store(msg, data)

        return schedule
    is_root = st.rank == root
    msg = message(buf, writable=not is_root)
    nbytes = len(msg.data)

    def schedule(st, ch):
        data = yield from coll.bcast(ch, msg.data if is_root else None, root, nbytes)
        if not is_root and data is not msg.data:
            _store(msg, data)

    return schedule


def Bcast(self, buf, root: int = 0) -> None:
    """Broadcast data from one process to all the others."""
    self._blocking(self._bcast, "MPI_Bcast", buf, root)


def Ibcast(self, buf, root: int = 0) -> Request:
    """Nonblocking broadcast."""
    return self._nonblocking(self._bcast, "MPI_Ibcast", buf, root)


def Bcast_init(self, buf, root: int = 0, info=None) -> Prequest:
    """Create a persistent request for a broadcast."""
    return self._persistent(self._bcast, "MPI_Bcast_init", buf, root)


def bcast(self, obj, root: int = 0):
    """Broadcast an object from one process to all the others."""
    st = self._st()
    self._check_root(st, root)
    with comm_lock(self, "bcast"):
        ch = Channel.of(st, "bcast")
        if st.inter:
            if root == PROC_NULL:
                return None
            if root == ROOT:
                run(ch, inter.bcast(ch, st, dumps(obj), ROOT))
                return None
            return loads(run(ch, inter.bcast(ch, st, None, root)))
        data = run(ch, coll.bcast_object(ch, dumps(obj) if st.rank == root else None, root))
        return loads(data)


# -- gather -------------------------------------------------------------------------
def _gather(self, st, sendbuf, recvbuf, root: int, vector: bool):
    self._check_root(st, root)
    if st.inter:
        receiving = root == ROOT
        idle = root == PROC_NULL
        rv = _blocks(recvbuf, st.size, True, vector) if receiving else None
        mine = None if receiving or idle else _send_message(sendbuf).data

        def schedule(st, ch):
            if idle:
                return
            blocks = yield from inter.gather(ch, st, mine, root)
            if receiving:
                _store_blocks(rv, blocks)

        return schedule
    n = len(st.group)
    is_root = st.rank == root
    rv = _blocks(recvbuf, n, True, vector) if is_root else None
    in_place = is_root and _in_place(sendbuf)
    mine = rv.block(root).copy() if in_place else _send_message(sendbuf).data

    def schedule(st, ch):
        blocks = yield from coll.gather(ch, mine, root)
        if is_root:
            _store_blocks(rv, blocks, root if in_place else -1)

    return schedule


def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
    """Gather data to one process from all the others."""
    self._blocking(self._gather, "MPI_Gather", sendbuf, recvbuf, root, False)


def Gatherv(self, sendbuf, recvbuf, root: int = 0) -> None:
    """Gather vector: blocks of varying sizes to one process."""
    self._blocking(self._gather, "MPI_Gatherv", sendbuf, recvbuf, root, True)


def Igather(self, sendbuf, recvbuf, root: int = 0) -> Request:
    """Nonblocking gather."""
    return self._nonblocking(self._gather, "MPI_Igather", sendbuf, recvbuf, root, False)


def Igatherv(self, sendbuf, recvbuf, root: int = 0) -> Request:
    """Nonblocking gather vector."""
    return self._nonblocking(self._gather, "MPI_Igatherv", sendbuf, recvbuf, root, True)


def Gather_init(self, sendbuf, recvbuf, root: int = 0, info=None) -> Prequest:
    """Create a persistent request for a gather."""
    return self._persistent(self._gather, "MPI_Gather_init", sendbuf, recvbuf, root, False)


def Gatherv_init(self, sendbuf, recvbuf, root: int = 0, info=None) -> Prequest:
    """Create a persistent request for a gather vector."""
    return self._persistent(self._gather, "MPI_Gatherv_init", sendbuf, recvbuf, root, True)


def gather(self, sendobj, root: int = 0):
    """Gather objects to one process from all the others."""
    st = self._st()
    self._check_root(st, root)
    with comm_lock(self, "gather"):
        ch = Channel.of(st, "gather")
        if st.inter:
            if root == PROC_NULL:
                return None
            blocks = run(ch, inter.gather(ch, st, None if root == ROOT else dumps(sendobj), root))
            return None if root != ROOT else [loads(b) for b in blocks]
        blocks = run(ch, coll.gather(ch, dumps(sendobj), root))
        return None if blocks is None else [loads(b) for b in blocks]


# -- scatter ------------------------------------------------------------------------
def _scatter(self, st, sendbuf, recvbuf, root: int, vector: bool):
    self._check_root(st, root)
    if st.inter:
        sending = root == ROOT
        idle = root == PROC_NULL
        blocks = None
        if sending:
            sv = _blocks(sendbuf, st.size, False, vector)
            blocks = [sv.block(i) for i in range(st.size)]
        rmsg = None if sending or idle else _recv_message(recvbuf)

        def schedule(st, ch):
            if idle:
                return
            mine = yield from inter.scatter(ch, st, blocks, root)
            if rmsg is not None:
                _store(rmsg, mine)

        return schedule
    n = len(st.group)
    is_root = st.rank == root
    blocks = None
    if is_root:
        sv = _blocks(sendbuf, n, False, vector)
        blocks = [sv.block(i) for i in range(n)]
    rmsg = None if is_root and _in_place(recvbuf) else _recv_message(recvbuf)

    def schedule(st, ch):
        mine = yield from coll.scatter(ch, blocks, root)
        if rmsg is not None:
            _store(rmsg, mine)

    return schedule


def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
    """Scatter data from one process to all the others."""
    self._blocking(self._scatter, "MPI_Scatter", sendbuf, recvbuf, root, False)


def Scatterv(self, sendbuf, recvbuf, root: int = 0) -> None:
    """Scatter vector: blocks of varying sizes from one process."""
    self._blocking(self._scatter, "MPI_Scatterv", sendbuf, recvbuf, root, True)


def Iscatter(self, sendbuf, recvbuf, root: int = 0) -> Request:
    """Nonblocking scatter."""
    return self._nonblocking(self._scatter, "MPI_Iscatter", sendbuf, recvbuf, root, False)


def Iscatterv(self, sendbuf, recvbuf, root: int = 0) -> Request:
    """Nonblocking scatter vector."""
    return self._nonblocking(self._scatter, "MPI_Iscatterv", sendbuf, recvbuf, root, True)


def Scatter_init(self, sendbuf, recvbuf, root: int = 0, info=None) -> Prequest:
    """Create a persistent request for a scatter."""
    return self._persistent(self._scatter, "MPI_Scatter_init", sendbuf, recvbuf, root, False)


def Scatterv_init(self, sendbuf, recvbuf, root: int = 0, info=None) -> Prequest:
    """Create a persistent request for a scatter vector."""
    return self._persistent(self._scatter, "MPI_Scatterv_init", sendbuf, recvbuf, root, True)


def scatter(self, sendobj, root: int = 0):
    """Scatter objects from one process to all the others."""
    st = self._st()
    self._check_root(st, root)
    with comm_lock(self, "scatter"):
        ch = Channel.of(st, "scatter")
        blocks = None
        sending = (root == ROOT) if st.inter else (st.rank == root)
        if sending:
            sendobj = [None] * st.size if sendobj is None else list(sendobj)  # as mpi4py
            if len(sendobj) != st.size:
                raise ValueError(f"expecting {st.size} items, got {len(sendobj)}")
            blocks = [dumps(o) for o in sendobj]
        if st.inter:
            if root == PROC_NULL:
                return None
            mine = run(ch, inter.scatter(ch, st, blocks, root))
            return None if root == ROOT else loads(mine)
        return loads(run(ch, coll.scatter(ch, blocks, root)))


# -- allgather ----------------------------------------------------------------------
def _allgather(self, st, sendbuf, recvbuf, vector: bool):
    n = st.size
    rv = _blocks(recvbuf, n, True, vector)
    in_place = _in_place(sendbuf) and not st.inter
    mine = rv.block(st.rank).copy() if in_place else _send_message(sendbuf).data
    sizes = [len(rv.block(i)) for i in range(n)]

    def schedule(st, ch):
        if st.inter:
            blocks = yield from inter.allgather(ch, st, mine)
        else:
            blocks = yield from coll.allgather(ch, mine, sizes, vector)
        _store_blocks(rv, blocks, st.rank if in_place else -1)

    return schedule


def Allgather(self, sendbuf, recvbuf) -> None:
    """Gather to all: every process receives every block."""
    self._blocking(self._allgather, "MPI_Allgather", sendbuf, recvbuf, False)


def Allgatherv(self, sendbuf, recvbuf) -> None:
    """Gather to all, blocks of varying sizes."""
    self._blocking(self._allgather, "MPI_Allgatherv", sendbuf, recvbuf, True)


def Iallgather(self, sendbuf, recvbuf) -> Request:
    """Nonblocking gather to all."""
    return self._nonblocking(self._allgather, "MPI_Iallgather", sendbuf, recvbuf, False)


def Iallgatherv(self, sendbuf, recvbuf) -> Request:
    """Nonblocking gather to all, blocks of varying sizes."""
    return self._nonblocking(self._allgather, "MPI_Iallgatherv", sendbuf, recvbuf, True)


def Allgather_init(self, sendbuf, recvbuf, info=None) -> Prequest:
    """Create a persistent request for a gather to all."""
    return self._persistent(self._allgather, "MPI_Allgather_init", sendbuf, recvbuf, False)


def Allgatherv_init(self, sendbuf, recvbuf, info=None) -> Prequest:
    """Create a persistent request for a gather to all of varying sizes."""
    return self._persistent(self._allgather, "MPI_Allgatherv_init", sendbuf, recvbuf, True)


def allgather(self, sendobj) -> list:
    """Gather objects to all processes."""
    st = self._st()
    with comm_lock(self, "allgather"):
        ch = Channel.of(st, "allgather")
        if st.inter:
            return [loads(b) for b in run(ch, inter.allgather(ch, st, dumps(sendobj)))]
        return [loads(b) for b in run(ch, coll.allgather(ch, dumps(sendobj)))]


# -- alltoall -----------------------------------------------------------------------
def _alltoall(self, st, sendbuf, recvbuf, vector: bool):
    n = st.size
    rv = _blocks(recvbuf, n, True, vector)
    if _in_place(sendbuf) and not st.inter:
        blocks = [rv.block(i).copy() for i in range(n)]
    else:
        sv = _blocks(sendbuf, n, False, vector)
        blocks = [sv.block(i) for i in range(n)]
    block_nbytes = len(blocks[0]) if blocks else 0
    return self._exchange_schedule(blocks, rv, block_nbytes, vector)


def _exchange_schedule(blocks, targets, block_nbytes: int, vector: bool):
    def schedule(st, ch):
        if st.inter:
            got = yield from inter.alltoall(ch, st, blocks)
        elif vector:
            got = yield from coll.alltoallv(ch, blocks)
        else:
            got = yield from coll.alltoall(ch, blocks, block_nbytes)
        _store_blocks(targets, got)

    return schedule


def Alltoall(self, sendbuf, recvbuf) -> None:
    """All to all: every process sends a block to every other."""
    self._blocking(self._alltoall, "MPI_Alltoall", sendbuf, recvbuf, False)


def Alltoallv(self, sendbuf, recvbuf) -> None:
    """All to all, blocks of varying sizes."""
    self._blocking(self._alltoall, "MPI_Alltoallv", sendbuf, recvbuf, True)


def Ialltoall(self, sendbuf, recvbuf) -> Request:
    """Nonblocking all to all."""
    return self._nonblocking(self._alltoall, "MPI_Ialltoall", sendbuf, recvbuf, False)


def Ialltoallv(self, sendbuf, recvbuf) -> Request:
    """Nonblocking all to all, blocks of varying sizes."""
    return self._nonblocking(self._alltoall, "MPI_Ialltoallv", sendbuf, recvbuf, True)


def Alltoall_init(self, sendbuf, recvbuf, info=None) -> Prequest:
    """Create a persistent request for an all to all."""
    return self._persistent(self._alltoall, "MPI_Alltoall_init", sendbuf, recvbuf, False)


def Alltoallv_init(self, sendbuf, recvbuf, info=None) -> Prequest:
    """Create a persistent request for an all to all of varying sizes."""
    return self._persistent(self._alltoall, "MPI_Alltoallv_init", sendbuf, recvbuf, True)


def _alltoallw(self, st, sendbuf, recvbuf):
    n = st.size
    targets = w_message(recvbuf, n, writable=True)
    if _in_place(sendbuf) and not st.inter:
        blocks = [targets.block(i).copy() for i in range(n)]
    else:
        sv = w_message(sendbuf, n)
        blocks = [sv.block(i) for i in range(n)]
    return self._exchange_schedule(blocks, targets, 0, True)


def Alltoallw(self, sendbuf, recvbuf) -> None:
    """All to all, blocks of varying sizes, displacements and datatypes."""
    self._blocking(self._alltoallw, "MPI_Alltoallw", sendbuf, recvbuf)


def Ialltoallw(self, sendbuf, recvbuf) -> Request:
    """Nonblocking all to all, with a datatype per block."""
    return self._nonblocking(self._alltoallw, "MPI_Ialltoallw", sendbuf, recvbuf)


def Alltoallw_init(self, sendbuf, recvbuf, info=None) -> Prequest:
    """Create a persistent request for an all to all with a datatype per block."""
    return self._persistent(self._alltoallw, "MPI_Alltoallw_init", sendbuf, recvbuf)


def alltoall(self, sendobj) -> list:
    """Send an object to every process and receive one from each."""
    st = self._st()
    sendobj = [None] * st.size if sendobj is None else list(sendobj)  # as mpi4py
    if len(sendobj) != st.size:
        raise ValueError(f"expecting {st.size} items, got {len(sendobj)}")
    with comm_lock(self, "alltoall"):
        ch = Channel.of(st, "alltoall")
        blocks = [dumps(o) for o in sendobj]
        if st.inter:
            return [loads(b) for b in run(ch, inter.alltoall(ch, st, blocks))]
        return [loads(b) for b in run(ch, coll.alltoallv(ch, blocks))]


# -- reductions ---------------------------------------------------------------------
def _reduction_args(sendbuf, recvbuf, op, in_place_ok: bool):
    """Parse a reduction's buffers.

    (send bytes, receive message, datatype) with mpi4py's count/type checks."""
    rmsg = _recv_message(recvbuf)
    if in_place_ok and _in_place(sendbuf):
        data = rmsg.data.copy()
        dt = rmsg.datatype
    else:
        smsg = _send_message(sendbuf)
        _check_same_type(smsg, rmsg)
        if smsg.count != rmsg.count:
            raise ValueError(f"mismatch in send count {smsg.count} and receive count {rmsg.count}")
        data, dt = smsg.data, smsg.datatype
    check_op(op, dt)
    return data, rmsg, dt


def _reduce(self, st, sendbuf, recvbuf, op, root: int):
    self._check_root(st, root)
    if st.inter:
        receiving = root == ROOT
        idle = root == PROC_NULL
        if receiving:
            rmsg = _recv_message(recvbuf)
            check_op(op, rmsg.datatype)
            data, dt = None, rmsg.datatype
        elif not idle:
            smsg = _send_message(sendbuf)
            check_op(op, smsg.datatype)
            rmsg, data, dt = None, smsg.data, smsg.datatype

        def schedule(st, ch):
            if idle:
                return
            combine = _combiner(op, dt)
            result = yield from inter.reduce(ch, st, data, combine, op.is_commutative, root)
            if receiving:
                _store(rmsg, result)

        return schedule
    is_root = st.rank == root
    if is_root:
        data, rmsg, dt = self._reduction_args(sendbuf, recvbuf, op, True)
    else:
        smsg = _send_message(sendbuf)
        data, rmsg, dt = smsg.data, None, smsg.datatype
        check_op(op, dt)
    nbytes = len(data)
    commute = op.Is_commutative()

    def schedule(st, ch):
        result = yield from coll.reduce(ch, data, _combiner(op, dt), root, commute, nbytes)
        if is_root:
            _store(rmsg, result)

    return schedule


def Reduce(self, sendbuf, recvbuf, op=_SUM, root: int = 0) -> None:
    """Reduce data to one process."""
    self._blocking(self._reduce, "MPI_Reduce", sendbuf, recvbuf, op, root)


def Ireduce(self, sendbuf, recvbuf, op=_SUM, root: int = 0) -> Request:
    """Nonblocking reduce."""
    return self._nonblocking(self._reduce, "MPI_Ireduce", sendbuf, recvbuf, op, root)


def Reduce_init(self, sendbuf, recvbuf, op=_SUM, root: int = 0, info=None) -> Prequest:
    """Create a persistent request for a reduce."""
    return self._persistent(self._reduce, "MPI_Reduce_init", sendbuf, recvbuf, op, root)


def reduce(self, sendobj, op=_SUM, root: int = 0):
    """Reduce objects to one process."""
    st = self._st()
    self._check_root(st, root)
    ch = Channel.of(st, "reduce")
    combine = _object_combiner(op)
    if st.inter:
        if root == PROC_NULL:
            return None
        data = None if root == ROOT else dumps(sendobj)
        result = run(ch, inter.reduce_object(ch, st, data, combine, root))
        return loads(result) if root == ROOT else None
    result = run(ch, coll.reduce_object(ch, dumps(sendobj), combine, root))
    return loads(result) if st.rank == root else None


def _allreduce(self, st, sendbuf, recvbuf, op):
    data, rmsg, dt = self._reduction_args(sendbuf, recvbuf, op, not st.inter)
    nbytes = len(data)
    commute = op.Is_commutative()

    def schedule(st, ch):
        combine = _combiner(op, dt)
        if st.inter:
            result = yield from inter.allreduce(ch, st, data, combine, commute)
        else:
            result = yield from coll.allreduce(ch, data, combine, commute, nbytes, dt.extent)
        _store(rmsg, result)

    return schedule


def Allreduce(self, sendbuf, recvbuf, op=_SUM) -> None:
    """Reduce data and give the result to every process."""
    self._blocking(self._allreduce, "MPI_Allreduce", sendbuf, recvbuf, op)


def Iallreduce(self, sendbuf, recvbuf, op=_SUM) -> Request:
    """Nonblocking reduce to all."""
    return self._nonblocking(self._allreduce, "MPI_Iallreduce", sendbuf, recvbuf, op)


def Allreduce_init(self, sendbuf, recvbuf, op=_SUM, info=None) -> Prequest:
    """Create a persistent request for a reduce to all."""
    return self._persistent(self._allreduce, "MPI_Allreduce_init", sendbuf, recvbuf, op)


def allreduce(self, sendobj, op=_SUM):
    """Reduce objects and give the result to every process."""
    st = self._st()
    ch = Channel.of(st, "allreduce")
    combine = _object_combiner(op)
    if st.inter:
        return loads(run(ch, inter.allreduce_object(ch, st, dumps(sendobj), combine)))
    result = run(ch, coll.reduce_object(ch, dumps(sendobj), combine, 0))
    return loads(run(ch, coll.bcast_object(ch, result, 0)))


def _reduce_scatter(self, st, sendbuf, recvbuf, recvcounts, op, block: bool):
    n = len(st.group)
    in_place = _in_place(sendbuf) and not st.inter
    if block:
        if in_place:
            target = message(recvbuf, writable=True, blocks=n)
            data, dt = target.data.copy(), target.datatype
        else:
            rmsg = _recv_message(recvbuf)
            smsg = _send_message(sendbuf)
            _check_same_type(smsg, rmsg)
            if smsg.count != rmsg.count * n:
                raise ValueError(
                    f"mismatch in send count {smsg.count} and receive count {rmsg.count * n}"
                )
            data, dt, target = smsg.data, smsg.datatype, rmsg
        counts = None
        sizes = [len(data) // n] * n
    else:
        rmsg = _recv_message(recvbuf)
        if in_place:
            data, dt = rmsg.data.copy(), rmsg.datatype
        else:
            smsg = _send_message(sendbuf)
            data, dt = smsg.data, smsg.datatype
        counts = None if recvcounts is None else [int(c) for c in recvcounts]
        if counts is None and in_place:
            raise ValueError("Reduce_scatter in place needs the receive counts")
        if counts is not None:
            if len(counts) != n:
                raise ValueError(f"expecting {n} items, got {len(counts)}")
            total = sum(counts)
            if in_place and rmsg.count != total:
                raise ValueError(f"mismatch in receive count {rmsg.count} and sum(counts) {total}")
            if not in_place:
                _check_same_type(smsg, rmsg)
                if smsg.count != total:
                    raise ValueError(f"mismatch in send count {smsg.count} and sum(counts) {total}")
                if rmsg.count != counts[st.rank]:
                    raise ValueError(
                        f"mismatch in receive count {rmsg.count} and "
                        f"counts[{st.rank}] {counts[st.rank]}"
                    )
        target = rmsg
        sizes = None if counts is None else [c * dt.extent for c in counts]
        if not in_place:
            my_count = rmsg.count
    check_op(op, dt)
    commute = op.Is_commutative()
    ext = dt.extent

    def schedule(st, ch):
        nonlocal sizes
        if sizes is None:  # mpi4py gathers the receive counts first
            got = yield from coll.allgather(ch, np.array([my_count], np.int64).view(_U8))
            sizes = [int(b.view(np.int64)[0]) * ext for b in got]
        combine = _combiner(op, dt)
        if st.inter:
            mine = yield from inter.reduce_scatter(ch, st, data, combine, commute, sizes)
        else:
            mine = yield from coll.reduce_scatter(ch, data, combine, commute, sizes)
        _store(target, mine)

    return schedule


def Reduce_scatter_block(self, sendbuf, recvbuf, op=_SUM) -> None:
    """Reduce, then scatter the result in equal blocks."""
    self._blocking(
        self._reduce_scatter, "MPI_Reduce_scatter_block", sendbuf, recvbuf, None, op, True
    )


def Ireduce_scatter_block(self, sendbuf, recvbuf, op=_SUM) -> Request:
    """Nonblocking reduce, then scatter in equal blocks."""
    return self._nonblocking(
        self._reduce_scatter, "MPI_Ireduce_scatter_block", sendbuf, recvbuf, None, op, True
    )


def Reduce_scatter_block_init(self, sendbuf, recvbuf, op=_SUM, info=None) -> Prequest:
    """Create a persistent request for a reduce-scatter in equal blocks."""
    return self._persistent(
        self._reduce_scatter, "MPI_Reduce_scatter_block_init", sendbuf, recvbuf, None, op, True
    )


def Reduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=_SUM) -> None:
    """Reduce, then scatter the result in blocks of varying sizes."""
    self._blocking(
        self._reduce_scatter, "MPI_Reduce_scatter", sendbuf, recvbuf, recvcounts, op, False
    )


def Ireduce_scatter(self, sendbuf, recvbuf, recvcounts=None, op=_SUM) -> Request:
    """Nonblocking reduce, then scatter in blocks of varying sizes."""
    return self._nonblocking(
        self._reduce_scatter, "MPI_Ireduce_scatter", sendbuf, recvbuf, recvcounts, op, False
    )


def Reduce_scatter_init(self, sendbuf, recvbuf, recvcounts=None, op=_SUM, info=None) -> Prequest:
    """Create a persistent request for a reduce-scatter."""
    return self._persistent(
        self._reduce_scatter, "MPI_Reduce_scatter_init", sendbuf, recvbuf, recvcounts, op, False
    )


def _scan(self, st, sendbuf, recvbuf, op, exclusive: bool):
    if st.inter:
        raise Exception(_ERR_COMM)
    data, rmsg, dt = _reduction_args(sendbuf, recvbuf, op, True)

    def schedule(st, ch):
        algorithm = coll.exscan if exclusive else coll.scan
        result = yield from algorithm(ch, data, _combiner(op, dt))
        _store(rmsg, result)

    return schedule


def Scan(self, sendbuf, recvbuf, op=_SUM) -> None:
    """Inclusive scan (prefix reduction)."""
    self._blocking(self._scan, "MPI_Scan", sendbuf, recvbuf, op, False)


def Exscan(self, sendbuf, recvbuf, op=_SUM) -> None:
    """Exclusive scan (prefix reduction of the lower ranks)."""
    self._blocking(self._scan, "MPI_Exscan", sendbuf, recvbuf, op, True)


def Iscan(self, sendbuf, recvbuf, op=_SUM) -> Request:
    """Nonblocking inclusive scan."""
    return self._nonblocking(self._scan, "MPI_Iscan", sendbuf, recvbuf, op, False)


def Iexscan(self, sendbuf, recvbuf, op=_SUM) -> Request:
    """Nonblocking exclusive scan."""
    return self._nonblocking(self._scan, "MPI_Iexscan", sendbuf, recvbuf, op, True)


def Scan_init(self, sendbuf, recvbuf, op=_SUM, info=None) -> Prequest:
    """Create a persistent request for an inclusive scan."""
    return self._persistent(self._scan, "MPI_Scan_init", sendbuf, recvbuf, op, False)


def Exscan_init(self, sendbuf, recvbuf, op=_SUM, info=None) -> Prequest:
    """Create a persistent request for an exclusive scan."""
    return self._persistent(self._scan, "MPI_Exscan_init", sendbuf, recvbuf, op, True)


def scan(self, sendobj, op=_SUM):
    """Inclusive scan of objects."""
    st = self._st()
    ch = Channel.of(st, "scan")
    return loads(run(ch, coll.scan(ch, dumps(sendobj), _object_combiner(op))))


def exscan(self, sendobj, op=_SUM):
    """Exclusive scan of objects."""
    st = self._st()
    ch = Channel.of(st, "exscan")
    result = run(ch, coll.exscan(ch, dumps(sendobj), _object_combiner(op)))
    return None if result is None else loads(result)


def _persistent_label(call: str, st) -> str:
    return f"{call}(comm={st.name or 'comm'}, persistent)"
