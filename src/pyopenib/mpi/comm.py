"""``MPI.Comm`` / ``MPI.Intracomm``: point-to-point, communicator management, collectives.

A communicator object holds its ``CommState`` — except the predefined ``COMM_WORLD`` and
``COMM_SELF``, which hold a name and look the current rank's state up on every call: the
one ``mpi4py.MPI`` module serves every rank of the job (see ``context``).
"""

from __future__ import annotations

import pickle

from .buffers import message
from .coll_comms import CommConstructors, CommState, IntraConstructors
from .coll_methods import Collectives, IntraCollectives
from .context import JobAborted, current
from .errors import ERROR_CLASSES, Exception
from .request import Prequest, Request, completed_request, finish_recv
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL

__all__ = ["Comm", "CommState", "Intracomm", "TAG_UB"]

_ERR = {name: code for name, (code, _) in ERROR_CLASSES.items()}
_ERR_RANK = _ERR["ERR_RANK"]
_ERR_TAG = _ERR["ERR_TAG"]
_PICKLE = pickle.HIGHEST_PROTOCOL
TAG_UB = 0
"""Attribute key of ``Get_attr`` for the largest tag (Open MPI: 2**31 - 1)."""


def _recv_value(preq):
    return pickle.loads(preq.data)


class Comm(CommConstructors, Collectives):
    """``MPI.Comm``. ``Comm(comm)`` is another object for the same communicator; the
    collectives and constructors come from ``coll_methods`` and ``coll_comms``."""

    __slots__ = ("_s", "__weakref__")

    def __init__(self, state: Comm | CommState | str | None = None):
        self._s = state._s if isinstance(state, Comm) else state

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
        return len(self._st().group)

    @property
    def rank(self) -> int:
        return self._st().rank

    @property
    def size(self) -> int:
        return len(self._st().group)

    def Get_name(self) -> str:
        return self._st().name

    def Set_name(self, name: str) -> None:
        self._st().name = name

    @property
    def name(self) -> str:
        return self._st().name

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

    def Abort(self, errorcode: int = 0):
        st = self._st()
        raise JobAborted(current().rank, errorcode, st.name or "communicator")


class Intracomm(IntraCollectives, IntraConstructors, Comm):
    """``MPI.Intracomm``: a communicator within one group (prefix reductions,
    topologies and intercommunicators are built from it)."""

    __slots__ = ()

    def __init__(self, comm=None):
        super().__init__(comm)
        s = self._s
        if isinstance(s, CommState) and s.inter:
            raise TypeError("expecting an intracommunicator")


# Deadlock-report labels, rendered only when a report is printed (see pml.describe).
def _p2p_label(call, msg, peer_kw, peer, tag, st) -> str:
    return (
        f"{call}(count={msg.count}, datatype={msg.datatype.name}, {peer_kw}={peer}, "
        f"tag={tag}, comm={st.name or 'comm'})"
    )


def _obj_label(call, peer_kw, peer, tag, nbytes) -> str:
    pickled = "" if nbytes is None else f", {nbytes} pickled bytes"
    return f"{call}({peer_kw}={peer}, tag={tag}{pickled})"


class _NotInSubset(NotImplementedError, AttributeError):
    """Outside pyopenib's mpi4py subset (an AttributeError too, so ``hasattr`` works)."""


def _not_implemented(what: str) -> _NotInSubset:
    return _NotInSubset(f"mpi4py.MPI.{what} is not implemented by pyopenib's MPI")
