"""``MPI.Comm`` / ``MPI.Intracomm``: point-to-point, communicator management, collectives.

A communicator object holds its ``CommState`` — except the predefined ``COMM_WORLD`` and
``COMM_SELF``, which hold a name and look the current rank's state up on every call: the
one ``mpi4py.MPI`` module serves every rank of the job (see ``context``).
"""

from __future__ import annotations

import pickle

import numpy as np

from . import collectives as coll
from .buffers import IN_PLACE, message, vector_message
from .context import JobAborted, current
from .errors import ERROR_CLASSES, Exception
from .ops import OPS
from .request import Prequest, Request, completed_request, finish_recv
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, UNDEFINED

__all__ = ["Comm", "CommState", "Intracomm", "TAG_UB"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}
_ERR_RANK = _ERR["ERR_RANK"]
_ERR_TAG = _ERR["ERR_TAG"]
_PICKLE = pickle.HIGHEST_PROTOCOL
_SUM = OPS["SUM"]
_MAX = OPS["MAX"]
TAG_UB = 0
"""Attribute key of ``Get_attr`` for the largest tag (Open MPI: 2**31 - 1)."""

# Collective tags (their own context id keeps them apart from user tags).
_T_BARRIER, _T_BCAST, _T_REDUCE, _T_ALLREDUCE = 1, 2, 3, 4
_T_GATHER, _T_SCATTER, _T_ALLGATHER, _T_ALLTOALL = 5, 6, 7, 8


class CommState:
    """One rank's view of a communicator: context id, members (world ranks), its rank."""

    __slots__ = ("cid", "ranks", "rank", "size", "name", "ctx", "coll_ctx", "freed", "rc")

    def __init__(self, cid: int, ranks: list[int], rank: int, rc, name: str = ""):
        self.rc = rc  # the owning rank's RankContext (its PML), found without a lookup
        self.cid = cid
        self.ranks = ranks
        self.rank = rank
        self.size = len(ranks)
        self.name = name
        self.ctx = 2 * cid
        self.coll_ctx = 2 * cid + 1
        self.freed = False


def _dumps(obj) -> np.ndarray:
    return np.frombuffer(pickle.dumps(obj, _PICKLE), dtype=np.uint8)


def _loads(data: np.ndarray):
    return pickle.loads(data)


def _recv_value(preq):
    return _loads(preq.data)


def _copy_into(block: np.ndarray, data: np.ndarray) -> None:
    if len(data) > len(block):
        raise Exception(_ERR["ERR_TRUNCATE"])
    block[: len(data)] = data


class Comm:
    __slots__ = ("_s", "__weakref__")

    def __init__(self, state: CommState | str | None = None):
        self._s = state

    def _st(self) -> CommState:
        s = self._s
        if s.__class__ is CommState:
            return s
        if s is None:
            raise Exception(_ERR["ERR_COMM"])
        return getattr(current(), s)

    # -- identity -----------------------------------------------------------------------
    def Get_rank(self) -> int:
        return self._st().rank

    def Get_size(self) -> int:
        return self._st().size

    @property
    def rank(self) -> int:
        return self._st().rank

    @property
    def size(self) -> int:
        return self._st().size

    def Get_name(self) -> str:
        return self._st().name

    def Set_name(self, name: str) -> None:
        self._st().name = name

    @property
    def name(self) -> str:
        return self._st().name

    def Is_inter(self) -> bool:
        return False

    def Is_intra(self) -> bool:
        return True

    def Get_attr(self, keyval: int):
        if keyval == TAG_UB:
            return 2**31 - 1
        raise NotImplementedError(f"Comm.Get_attr({keyval}) is not implemented by pyopenib")

    def __eq__(self, other) -> bool:
        if not isinstance(other, Comm):
            return NotImplemented
        a = None if self._s is None else self._st()
        b = None if other._s is None else other._st()
        return a is b

    def __hash__(self) -> int:
        return id(self._s)

    def __bool__(self) -> bool:
        return self._s is not None

    def __repr__(self) -> str:
        return f"<pyopenib.MPI.{type(self).__name__} {self._s if isinstance(self._s, str) else ''}>"

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        raise _not_implemented(f"Comm.{name}")

    # -- argument checks ----------------------------------------------------------------
    @staticmethod
    def _check_source(st: CommState, source: int) -> None:
        if source not in (PROC_NULL, ANY_SOURCE) and not 0 <= source < st.size:
            raise Exception(_ERR_RANK)

    # -- point-to-point: buffers --------------------------------------------------------
    # The hot path of every program: one buffer-spec parse, one PML call, a label tuple
    # that only a deadlock report renders, and no Request object for blocking calls.
    @staticmethod
    def _post_send(st, data, dest, tag, sync, label):
        """(rank context, PML request) of a started send; None for PROC_NULL."""
        if not 0 <= dest < st.size and dest != PROC_NULL:
            raise Exception(_ERR_RANK)
        if tag < 0:
            raise Exception(_ERR_TAG)
        if dest == PROC_NULL:
            return None
        rc = st.rc
        return rc, rc.pml.isend(data, st.ranks[dest], st.ctx, st.rank, tag, sync, label)

    @staticmethod
    def _post_recv(st, data, source, tag, label):
        """(rank context, PML request) of a posted receive; None for PROC_NULL."""
        if not 0 <= source < st.size and source != PROC_NULL and source != ANY_SOURCE:
            raise Exception(_ERR_RANK)
        if tag < 0 and tag != ANY_TAG:
            raise Exception(_ERR_TAG)
        if source == PROC_NULL:
            return None
        rc = st.rc
        return rc, rc.pml.irecv(data, st.ctx, source, tag, label)

    def _start_send(self, data, dest, tag, sync, label):
        posted = self._post_send(self._st(), data, dest, tag, sync, label)
        return None if posted is None else posted[1]

    def _start_recv(self, data, source, tag, label):
        posted = self._post_recv(self._st(), data, source, tag, label)
        return None if posted is None else posted[1]

    def _send_buf(self, buf, dest, tag, sync, call) -> None:
        msg = message(buf)
        st = self._st()
        label = (_p2p_label, call, msg, "dest", dest, tag, st)
        posted = self._post_send(st, msg.data, dest, tag, sync, label)
        if posted is not None:
            rc, preq = posted
            if not preq.complete:
                rc.wait_request(preq, label)

    def _recv_buf(self, buf, source, tag, status, call) -> None:
        msg = message(buf, writable=True)
        st = self._st()
        label = (_p2p_label, call, msg, "source", source, tag, st)
        posted = self._post_recv(st, msg.data, source, tag, label)
        if posted is None:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0, 0)
            return
        rc, preq = posted
        if not preq.complete:
            rc.wait_request(preq, label)
        finish_recv(preq, status)

    def _isend_buf(self, buf, dest, tag, sync, call) -> Request:
        msg = message(buf)
        st = self._st()
        label = (_p2p_label, call, msg, "dest", dest, tag, st)
        posted = self._post_send(st, msg.data, dest, tag, sync, label)
        preq = None if posted is None else posted[1]
        return Request(preq, "send", None, label) if preq else completed_request()

    def _irecv_buf(self, buf, source, tag, call) -> Request:
        msg = message(buf, writable=True)
        st = self._st()
        label = (_p2p_label, call, msg, "source", source, tag, st)
        posted = self._post_recv(st, msg.data, source, tag, label)
        preq = None if posted is None else posted[1]
        return Request(preq, "recv", None, label) if preq else completed_request()

    def Isend(self, buf, dest: int, tag: int = 0) -> Request:
        return self._isend_buf(buf, dest, tag, False, "MPI_Isend")

    def Issend(self, buf, dest: int, tag: int = 0) -> Request:
        return self._isend_buf(buf, dest, tag, True, "MPI_Issend")

    def Irecv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return self._irecv_buf(buf, source, tag, "MPI_Irecv")

    def Send(self, buf, dest: int, tag: int = 0) -> None:
        self._send_buf(buf, dest, tag, False, "MPI_Send")

    def Ssend(self, buf, dest: int, tag: int = 0) -> None:
        self._send_buf(buf, dest, tag, True, "MPI_Ssend")

    def Recv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> None:
        self._recv_buf(buf, source, tag, status, "MPI_Recv")

    def Sendrecv(
        self,
        sendbuf,
        dest: int,
        sendtag: int = 0,
        recvbuf=None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status=None,
    ) -> None:
        r = self._irecv_buf(recvbuf, source, recvtag, "MPI_Sendrecv")
        s = self._isend_buf(sendbuf, dest, sendtag, False, "MPI_Sendrecv")
        s.Wait()
        r.Wait(status)

    def Send_init(self, buf, dest: int, tag: int = 0) -> Prequest:
        msg = message(buf)
        label = (_p2p_label, "MPI_Send_init", msg, "dest", dest, tag, self._st())
        return Prequest(
            lambda: self._start_send(msg.data, dest, tag, False, label), "send", None, label
        )

    def Recv_init(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
        msg = message(buf, writable=True)
        label = (_p2p_label, "MPI_Recv_init", msg, "source", source, tag, self._st())
        return Prequest(lambda: self._start_recv(msg.data, source, tag, label), "recv", None, label)

    def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
        if self._probe_now(source, tag, status):
            return True
        current().poll()
        return self._probe_now(source, tag, status)

    def _probe_now(self, source, tag, status) -> bool:
        st = self._st()
        self._check_source(st, source)
        if source == PROC_NULL:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0, 0)
            return True
        found = current().pml.iprobe(st.ctx, source, tag)
        if found is None:
            return False
        if status is not None:
            status._fill(found[0], found[1], 0, found[2])
        return True

    def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
        if not self._probe_now(source, tag, status):
            call = f"MPI_Probe(source={source}, tag={tag}, comm={self._st().name or 'comm'})"
            current().wait_for(lambda: self._probe_now(source, tag, status), call)
        return True

    # -- point-to-point: pickled objects ------------------------------------------------
    def _isend_obj(self, obj, dest, tag, sync, call) -> Request:
        data = pickle.dumps(obj, _PICKLE)
        label = (_obj_label, call, "dest", dest, tag, len(data))
        preq = self._start_send(data, dest, tag, sync, label)
        return Request(preq, "send", None, label) if preq else completed_request()

    def _irecv_obj(self, source, tag, call) -> Request:
        label = (_obj_label, call, "source", source, tag, None)
        preq = self._start_recv(None, source, tag, label)
        return Request(preq, "recv", _recv_value, label) if preq else completed_request()

    def _send_obj(self, obj, dest, tag, sync, call) -> None:
        data = pickle.dumps(obj, _PICKLE)
        label = (_obj_label, call, "dest", dest, tag, len(data))
        posted = self._post_send(self._st(), data, dest, tag, sync, label)
        if posted is not None:
            rc, preq = posted
            if not preq.complete:
                rc.wait_request(preq, label)

    def send(self, obj, dest: int, tag: int = 0) -> None:
        self._send_obj(obj, dest, tag, False, "send")

    def ssend(self, obj, dest: int, tag: int = 0) -> None:
        self._send_obj(obj, dest, tag, True, "ssend")

    def isend(self, obj, dest: int, tag: int = 0) -> Request:
        return self._isend_obj(obj, dest, tag, False, "isend")

    def issend(self, obj, dest: int, tag: int = 0) -> Request:
        return self._isend_obj(obj, dest, tag, True, "issend")

    def recv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None):
        label = (_obj_label, "recv", "source", source, tag, None)
        posted = self._post_recv(self._st(), None, source, tag, label)
        if posted is None:
            if status is not None:
                status._fill(PROC_NULL, ANY_TAG, 0, 0)
            return None
        rc, preq = posted
        if not preq.complete:
            rc.wait_request(preq, label)
        finish_recv(preq, status)
        return pickle.loads(preq.data)

    def irecv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
        return self._irecv_obj(source, tag, "irecv")

    def sendrecv(
        self,
        sendobj,
        dest: int,
        sendtag: int = 0,
        recvbuf=None,
        source: int = ANY_SOURCE,
        recvtag: int = ANY_TAG,
        status=None,
    ):
        r = self._irecv_obj(source, recvtag, "sendrecv")
        self._isend_obj(sendobj, dest, sendtag, False, "sendrecv").wait()
        return r.wait(status)

    def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
        return self.Probe(source, tag, status)

    def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
        return self.Iprobe(source, tag, status)

    # -- management ---------------------------------------------------------------------
    def _new_cid(self) -> int:
        """Agree on a context id unused by every member (Open MPI's max-allreduce)."""
        ctx = current()
        cid = self.allreduce(ctx.next_cid, op=_MAX)
        ctx.next_cid = cid + 1
        return cid

    def Dup(self) -> Intracomm:
        st = self._st()
        cid = self._new_cid()
        return Intracomm(CommState(cid, list(st.ranks), st.rank, st.rc))

    Clone = Dup

    def Split(self, color: int = 0, key: int = 0) -> Intracomm:
        st = self._st()
        infos = self.allgather((color, key))
        cid = self._new_cid()
        if color == UNDEFINED:
            return Intracomm(None)
        members = sorted((k, r) for r, (c, k) in enumerate(infos) if c == color)
        ranks = [st.ranks[r] for _, r in members]
        return Intracomm(CommState(cid, ranks, [r for _, r in members].index(st.rank), st.rc))

    def Free(self) -> None:
        if not isinstance(self._s, CommState):
            raise Exception(_ERR["ERR_COMM"])
        self._s.freed = True
        self._s = None

    def Abort(self, errorcode: int = 0):
        st = self._st()
        raise JobAborted(current().rank, errorcode, st.name or "communicator")

    # -- collectives --------------------------------------------------------------------
    def _channel(self, tag: int, call: str) -> coll.Channel:
        st = self._st()
        return coll.Channel(st.rc, st, tag, (_coll_label, call, st))

    def Barrier(self) -> None:
        coll.barrier(self._channel(_T_BARRIER, "MPI_Barrier"))

    def barrier(self) -> None:
        self.Barrier()

    def Bcast(self, buf, root: int = 0) -> None:
        ch = self._channel(_T_BCAST, "MPI_Bcast")
        is_root = ch.rank == root
        msg = message(buf, writable=not is_root)
        data = coll.bcast(ch, msg.data if is_root else None, root)
        if not is_root:
            _copy_into(msg.data, data)

    def bcast(self, obj, root: int = 0):
        ch = self._channel(_T_BCAST, "bcast")
        data = coll.bcast(ch, _dumps(obj) if ch.rank == root else None, root)
        return obj if ch.rank == root else _loads(data)

    @staticmethod
    def _combiner(op, dtype):
        def combine(a, b):
            return np.ascontiguousarray(op.apply(a.view(dtype), b.view(dtype))).view(np.uint8)

        return combine

    def Reduce(self, sendbuf, recvbuf, op=_SUM, root: int = 0) -> None:
        ch = self._channel(_T_REDUCE, "MPI_Reduce")
        smsg = message(recvbuf if sendbuf is IN_PLACE else sendbuf)
        result = coll.reduce(ch, smsg.data, self._combiner(op, smsg.datatype.dtype), root)
        if ch.rank == root:
            _copy_into(message(recvbuf, writable=True).data, result)

    def reduce(self, sendobj, op=_SUM, root: int = 0):
        ch = self._channel(_T_REDUCE, "reduce")
        result = coll.reduce(ch, _dumps(sendobj), _object_combiner(op), root)
        return _loads(result) if ch.rank == root else None

    def Allreduce(self, sendbuf, recvbuf, op=_SUM) -> None:
        ch = self._channel(_T_ALLREDUCE, "MPI_Allreduce")
        smsg = message(recvbuf if sendbuf is IN_PLACE else sendbuf)
        result = coll.allreduce(ch, smsg.data, self._combiner(op, smsg.datatype.dtype))
        _copy_into(message(recvbuf, writable=True).data, result)

    def allreduce(self, sendobj, op=_SUM):
        ch = self._channel(_T_ALLREDUCE, "allreduce")
        return _loads(coll.allreduce(ch, _dumps(sendobj), _object_combiner(op)))

    def Gather(self, sendbuf, recvbuf, root: int = 0) -> None:
        ch = self._channel(_T_GATHER, "MPI_Gather")
        rv = vector_message(recvbuf, ch.size, writable=True) if ch.rank == root else None
        mine = rv.block(root).copy() if sendbuf is IN_PLACE else message(sendbuf).data
        blocks = coll.gather(ch, mine, root)
        if rv is not None:
            for i, b in enumerate(blocks):
                _copy_into(rv.block(i), b)

    Gatherv = Gather

    def gather(self, sendobj, root: int = 0):
        ch = self._channel(_T_GATHER, "gather")
        blocks = coll.gather(ch, _dumps(sendobj), root)
        return None if blocks is None else [_loads(b) for b in blocks]

    def Scatter(self, sendbuf, recvbuf, root: int = 0) -> None:
        ch = self._channel(_T_SCATTER, "MPI_Scatter")
        blocks = None
        if ch.rank == root:
            sv = vector_message(sendbuf, ch.size)
            blocks = [sv.block(i) for i in range(ch.size)]
        mine = coll.scatter(ch, blocks, root)
        if recvbuf is not IN_PLACE:
            _copy_into(message(recvbuf, writable=True).data, mine)

    Scatterv = Scatter

    def scatter(self, sendobj, root: int = 0):
        ch = self._channel(_T_SCATTER, "scatter")
        blocks = None
        if ch.rank == root:
            if sendobj is None or len(sendobj) != ch.size:
                raise ValueError(f"scatter needs a sequence of {ch.size} objects at the root")
            blocks = [_dumps(o) for o in sendobj]
        return _loads(coll.scatter(ch, blocks, root))

    def Allgather(self, sendbuf, recvbuf) -> None:
        ch = self._channel(_T_ALLGATHER, "MPI_Allgather")
        rv = vector_message(recvbuf, ch.size, writable=True)
        mine = rv.block(ch.rank).copy() if sendbuf is IN_PLACE else message(sendbuf).data
        for i, b in enumerate(coll.allgather(ch, mine)):
            _copy_into(rv.block(i), b)

    Allgatherv = Allgather

    def allgather(self, sendobj) -> list:
        ch = self._channel(_T_ALLGATHER, "allgather")
        return [_loads(b) for b in coll.allgather(ch, _dumps(sendobj))]

    def Alltoall(self, sendbuf, recvbuf) -> None:
        ch = self._channel(_T_ALLTOALL, "MPI_Alltoall")
        rv = vector_message(recvbuf, ch.size, writable=True)
        if sendbuf is IN_PLACE:
            blocks = [rv.block(i).copy() for i in range(ch.size)]
        else:
            sv = vector_message(sendbuf, ch.size)
            blocks = [sv.block(i) for i in range(ch.size)]
        for i, b in enumerate(coll.alltoall(ch, blocks)):
            _copy_into(rv.block(i), b)

    Alltoallv = Alltoall

    def alltoall(self, sendobj) -> list:
        ch = self._channel(_T_ALLTOALL, "alltoall")
        if len(sendobj) != ch.size:
            raise ValueError(f"alltoall needs a sequence of {ch.size} objects")
        return [_loads(b) for b in coll.alltoall(ch, [_dumps(o) for o in sendobj])]


class Intracomm(Comm):
    __slots__ = ()


# Deadlock-report labels, rendered only when a report is printed (see pml.describe).
def _p2p_label(call, msg, peer_kw, peer, tag, st) -> str:
    return (
        f"{call}(count={msg.count}, datatype={msg.datatype.name}, {peer_kw}={peer}, "
        f"tag={tag}, comm={st.name or 'comm'})"
    )


def _obj_label(call, peer_kw, peer, tag, nbytes) -> str:
    pickled = "" if nbytes is None else f", {nbytes} pickled bytes"
    return f"{call}({peer_kw}={peer}, tag={tag}{pickled})"


def _coll_label(call, st) -> str:
    return f"{call}(comm={st.name or 'comm'})"


def _object_combiner(op):
    def combine(a, b):
        return _dumps(op.apply_obj(_loads(a), _loads(b)))

    return combine


class _NotInSubset(NotImplementedError, AttributeError):
    """Outside pyopenib's mpi4py subset (an AttributeError too, so ``hasattr`` works)."""


def _not_implemented(what: str) -> _NotInSubset:
    return _NotInSubset(f"mpi4py.MPI.{what} is not implemented by pyopenib's MPI")
