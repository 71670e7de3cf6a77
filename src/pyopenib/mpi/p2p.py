"""Point-to-point methods of ``MPI.Comm``: every send mode, receives, probes, persistent
and partitioned requests, for buffers and for pickled objects.

Modes, as Open MPI 4.1's ob1 carries them: standard (``Send``) and ready (``Rsend``: ob1
sends it as a standard send) go eagerly up to the eager limit, by rendezvous above it;
synchronous (``Ssend``) always takes the rendezvous, so it completes only once the
receiver matched it (the ACK); buffered (``Bsend``) sends an eager-sized message at once
and copies a larger one into the attached buffer (``bsend``).

Arguments are checked as Open MPI's ``MPI_Send``/``MPI_Recv`` do, tag first: a negative
tag (``ANY_TAG`` on a send) is ``MPI_ERR_TAG``, a peer outside the group (``ANY_SOURCE``
on a send) is ``MPI_ERR_RANK``; a value outside a C ``int`` is mpi4py's ``OverflowError``
and a float is truncated, as mpi4py's ``int`` parameters take it.

Objects travel as ``MPI.pickle`` streams. ``recv`` probes first (mpi4py's
``recv_mprobe``) so any size arrives; ``irecv`` posts mpi4py's 32 KiB buffer
(``irecv_bufsz``) unless given a size or a buffer, and a larger message is
``MPI_ERR_TRUNCATE`` at ``wait``, as under mpi4py.
"""

from __future__ import annotations

import warnings
from threading import get_ident as _get_ident

import numpy as np

from . import bsend as buffered
from . import comm_locks
from .buffers import message
from .context import current
from .error_classes import ERROR_CLASSES, Exception
from .message import MESSAGE_NO_PROC, MESSAGE_NULL, Message, matched, no_proc
from .partitioned import partitioned_recv, partitioned_send
from .pickling import PICKLE, Pickle
from .request import (
    INLINE_SEND,
    NULL_PROC_RECV,
    REQUEST_NULL,
    DoneOperation,
    Grequest,
    Operation,
    PmlOperation,
    Prequest,
    Request,
    finish_recv,
    persistent,
    wrap,
)
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, Status

__all__ = ["IRECV_BUFSZ", "NAMES", "c_int"]

ERR_RANK = ERROR_CLASSES["ERR_RANK"][0]
ERR_TAG = ERROR_CLASSES["ERR_TAG"][0]
IRECV_BUFSZ = 32768
"""mpi4py's ``irecv`` buffer when none is given (``mpi4py.rc.irecv_bufsz``)."""
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_U8 = np.uint8


def c_int(value) -> int:
    """``value`` as a Cython ``int`` parameter takes it: an integer (or anything with
    ``__index__``, or a float, truncated) inside the C ``int`` range."""
    if type(value) is not int:
        if isinstance(value, float):
            value = int(value)
        else:
            try:
                value = value.__index__()
            except AttributeError:
                raise TypeError(
                    f"'{type(value).__name__}' object cannot be interpreted as an integer"
                ) from None
    if not _INT_MIN <= value <= _INT_MAX:
        raise OverflowError("value too large to convert to int")
    return value


def _dest(st, dest, tag) -> int:
    """Checked (dest, tag) of a send: Open MPI tests the tag, then the rank."""
    if type(tag) is not int or not 0 <= tag <= _INT_MAX:
        tag = c_int(tag)
        if tag < 0:
            raise Exception(ERR_TAG)
    if type(dest) is not int:
        dest = c_int(dest)
    if not 0 <= dest < st.size and dest != PROC_NULL:
        raise Exception(ERR_RANK)
    return dest, tag


def _source(st, source, tag):
    """Checked (source, tag) of a receive or probe (wildcards allowed)."""
    if type(tag) is not int or not 0 <= tag <= _INT_MAX:
        tag = c_int(tag)
        if tag < 0 and tag != ANY_TAG:
            raise Exception(ERR_TAG)
    if type(source) is not int:
        source = c_int(source)
    if not 0 <= source < st.size and source != PROC_NULL and source != ANY_SOURCE:
        raise Exception(ERR_RANK)
    return source, tag


def _loads_buffer(preq, fields):
    """What lowercase ``wait`` gives for an object receive: the unpickled stream (None for
    an empty one, as mpi4py)."""
    n = fields[3]
    if n <= 0:
        return None
    data = preq.data if preq.buffer is None else preq.buffer
    return PICKLE.loads(memoryview(data)[:n])


def _pickled(obj) -> np.ndarray:
    return np.frombuffer(PICKLE.dumps(obj), _U8)


# -- the two primitives ------------------------------------------------------------
# The hot path of every program: one buffer-spec parse, one PML call, a label tuple
# that only a deadlock report renders, and no Request object for blocking calls.
def _send_op(st, data, dest, tag, sync, label):
    """Start a send on the PML.

    (rank context, PML request, envelope) of a started send; None for PROC_NULL."""
    dest, tag = _dest(st, dest, tag)
    if dest == PROC_NULL:
        return None
    rc = st.rc
    preq = rc.pml.isend(data, st.ranks[dest], st.ctx, st.rank, tag, sync, label)
    return rc, preq, (st.rank, tag)


def _recv_op(st, data, source, tag, label):
    """Post a receive on the PML.

    (rank context, PML request) of a posted receive; None for PROC_NULL."""
    source, tag = _source(st, source, tag)
    if source == PROC_NULL:
        return None
    rc = st.rc
    return rc, rc.pml.irecv(data, st.ctx, source, tag, label)


# -- buffers: blocking -------------------------------------------------------------
def _send_buf(self, buf, dest, tag, sync, call) -> None:
    msg = message(buf, peer=dest)
    st = self._st()
    label = (_p2p_label, call, msg, "dest", dest, tag, st)
    posted = self._send_op(st, msg.data, dest, tag, sync, label)
    if posted is not None:
        rc, preq, _ = posted
        if not preq.complete:
            rc.wait_request(preq, label)


def Send(self, buf, dest: int, tag: int = 0) -> None:
    """Blocking send in standard mode."""
    # ``_send_buf`` -> ``_send_op`` written out for the call every program makes most:
    # an ``int`` tag and rank in range skip ``_dest`` (which would return them as they
    # are), and an eager send is complete on return from the PML
    msg = message(buf, peer=dest)
    st = self._st()
    label = (_p2p_label, "MPI_Send", msg, "dest", dest, tag, st)
    if (
        type(tag) is not int
        or not 0 <= tag <= _INT_MAX
        or type(dest) is not int
        or not 0 <= dest < st.size
    ):
        dest, tag = _dest(st, dest, tag)
        if dest == PROC_NULL:
            return
    rc = st.rc
    if _get_ident() != rc._main_ident:  # ``rc.pml``'s thread check
        raise rc.thread_support.forbidden()
    preq = rc._pml.isend(msg.data, st.ranks[dest], st.ctx, st.rank, tag, False, label)
    if not preq.complete:
        rc.wait_request(preq, label)


def Ssend(self, buf, dest: int, tag: int = 0) -> None:
    """Blocking send in synchronous mode: returns once the receive has matched."""
    self._send_buf(buf, dest, tag, True, "MPI_Ssend")


def Rsend(self, buf, dest: int, tag: int = 0) -> None:
    """Blocking send in ready mode (the receive must already be posted)."""
    self._send_buf(buf, dest, tag, False, "MPI_Rsend")


def Bsend(self, buf, dest: int, tag: int = 0) -> None:
    """Blocking send in buffered mode, through the attached buffer."""
    self._bsend(message(buf, peer=dest).data, dest, tag, "MPI_Bsend")


def Recv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> None:
    """Blocking receive."""
    # ``_recv_op`` written out, as in ``Send``: a plain source and tag skip ``_source``
    msg = message(buf, writable=True, peer=source)
    st = self._st()
    label = (_p2p_label, "MPI_Recv", msg, "source", source, tag, st)
    if (
        type(tag) is not int
        or not 0 <= tag <= _INT_MAX
        or type(source) is not int
        or not 0 <= source < st.size
    ):
        source, tag = _source(st, source, tag)
        if source == PROC_NULL:
            if status is not None:
                status._fill(*NULL_PROC_RECV)
            return
    rc = st.rc
    if _get_ident() != rc._main_ident:  # ``rc.pml``'s thread check
        raise rc.thread_support.forbidden()
    preq = rc._pml.irecv(msg.data, st.ctx, source, tag, label)
    if not preq.complete:
        rc.wait_request(preq, label)
    if msg.staged:
        msg.finish(preq.count)  # a non-contiguous datatype: unpack into the user's layout
    if status is not None or preq.truncated:
        finish_recv(preq, status)


# -- buffers: nonblocking ----------------------------------------------------------
def _isend_buf(self, buf, dest, tag, sync, call) -> Request:
    msg = message(buf, peer=dest)
    st = self._st()
    label = (_p2p_label, call, msg, "dest", dest, tag, st)
    return self._isend_data(st, msg.data, dest, tag, sync, label)


def _isend_data(self, st, data, dest, tag, sync, label) -> Request:
    posted = self._send_op(st, data, dest, tag, sync, label)
    if posted is None:
        return wrap(DoneOperation(INLINE_SEND))
    return wrap(PmlOperation(posted[1], False, None, label, posted[2]))


def Isend(self, buf, dest: int, tag: int = 0) -> Request:
    """Nonblocking send in standard mode."""
    # ``_isend_buf`` -> ``_isend_data`` -> ``_send_op`` written out, as in ``Send``
    msg = message(buf, peer=dest)
    st = self._st()
    label = (_p2p_label, "MPI_Isend", msg, "dest", dest, tag, st)
    if (
        type(tag) is not int
        or not 0 <= tag <= _INT_MAX
        or type(dest) is not int
        or not 0 <= dest < st.size
    ):
        return self._isend_data(st, msg.data, dest, tag, False, label)
    rc = st.rc
    if _get_ident() != rc._main_ident:  # ``rc.pml``'s thread check
        raise rc.thread_support.forbidden()
    preq = rc._pml.isend(msg.data, st.ranks[dest], st.ctx, st.rank, tag, False, label)
    return wrap(PmlOperation(preq, False, None, label, (st.rank, tag)))


def Issend(self, buf, dest: int, tag: int = 0) -> Request:
    """Nonblocking send in synchronous mode."""
    return self._isend_buf(buf, dest, tag, True, "MPI_Issend")


def Irsend(self, buf, dest: int, tag: int = 0) -> Request:
    """Nonblocking send in ready mode."""
    return self._isend_buf(buf, dest, tag, False, "MPI_Irsend")


def Ibsend(self, buf, dest: int, tag: int = 0) -> Request:
    """Nonblocking send in buffered mode."""
    return wrap(self._ibsend_op(message(buf, peer=dest).data, dest, tag, "MPI_Ibsend"))


def _irecv_buf(self, msg, source, tag, call):
    st = self._st()
    label = (_p2p_label, call, msg, "source", source, tag, st)
    posted = self._recv_op(st, msg.data, source, tag, label)
    if posted is None:
        return DoneOperation(NULL_PROC_RECV)
    finisher = msg.finisher
    finish = None if finisher is None else (lambda preq, fields: finisher(preq))
    return PmlOperation(posted[1], True, finish, label)


def Irecv(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
    """Nonblocking receive."""
    msg = message(buf, writable=True, peer=source)
    st = self._st()
    if (
        msg.staged
        or type(tag) is not int
        or not 0 <= tag <= _INT_MAX
        or type(source) is not int
        or not 0 <= source < st.size
    ):
        return wrap(self._irecv_buf(msg, source, tag, "MPI_Irecv"))
    # ``_irecv_buf`` -> ``_recv_op`` written out for a plain source, tag and layout
    label = (_p2p_label, "MPI_Irecv", msg, "source", source, tag, st)
    rc = st.rc
    if _get_ident() != rc._main_ident:  # ``rc.pml``'s thread check
        raise rc.thread_support.forbidden()
    return wrap(
        PmlOperation(rc._pml.irecv(msg.data, st.ctx, source, tag, label), True, None, label)
    )


# -- buffered sends ----------------------------------------------------------------
def _ibsend_op(self, data, dest, tag, call):
    """Start a buffered send.

    A buffered send: complete at once, its data on its way (eager) or held in the
    attached buffer until the rendezvous underneath completes."""
    st = self._st()
    dest, tag = _dest(st, dest, tag)
    if dest == PROC_NULL:
        return DoneOperation(INLINE_SEND)
    rc = st.rc
    n = len(data)
    label = (_obj_label, call, "dest", dest, tag, n)
    if n <= rc.pml.eager_payload(st.ranks[dest]):
        rc.pml.isend(data, st.ranks[dest], st.ctx, st.rank, tag, False, label)
        return DoneOperation(INLINE_SEND)
    pool = buffered.pool(rc)
    pool.reserve(n)
    copy = np.array(np.frombuffer(data, _U8) if not isinstance(data, np.ndarray) else data)
    preq = rc.pml.isend(copy.view(_U8), st.ranks[dest], st.ctx, st.rank, tag, False, label)
    pool.hold(preq, n)
    return DoneOperation((st.rank, tag, 0, n, False))


def _bsend(self, data, dest, tag, call) -> None:
    self._ibsend_op(data, dest, tag, call)


# -- send-receive --------------------------------------------------------------------
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
    """Send one message and receive another, both at once."""
    r, s = self._sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag, "MPI_Sendrecv")
    s.Wait()
    r.Wait(status)


def _sendrecv(self, sendbuf, dest, sendtag, recvbuf, source, recvtag, call):
    """Post the receive and start the send of a send-receive.

    Both specs parsed before anything is posted (as mpi4py): a malformed send
    spec must not leave a receive behind."""
    rmsg = message(recvbuf, writable=True, peer=source)
    smsg = message(sendbuf, peer=dest)
    r = wrap(self._irecv_buf(rmsg, source, recvtag, call))
    st = self._st()
    label = (_p2p_label, call, smsg, "dest", dest, sendtag, st)
    return r, self._isend_data(st, smsg.data, dest, sendtag, False, label)


def Isendrecv(
    self,
    sendbuf,
    dest: int,
    sendtag: int = 0,
    recvbuf=None,
    source: int = ANY_SOURCE,
    recvtag: int = ANY_TAG,
) -> Request:
    """Nonblocking send and receive, both at once."""
    r, s = self._sendrecv(sendbuf, dest, sendtag, recvbuf, source, recvtag, "MPI_Isendrecv")
    return wrap(_Pair(s._op, r._op))


def Sendrecv_replace(
    self,
    buf,
    dest: int,
    sendtag: int = 0,
    source: int = ANY_SOURCE,
    recvtag: int = ANY_TAG,
    status=None,
) -> None:
    """Send a buffer and receive into the same buffer."""
    self.Isendrecv_replace(buf, dest, sendtag, source, recvtag).Wait(status)


def Isendrecv_replace(
    self, buf, dest: int, sendtag: int = 0, source: int = ANY_SOURCE, recvtag: int = ANY_TAG
) -> Request:
    # Open MPI packs the send side into a temporary buffer, then receives in place
    """Nonblocking send and receive into the same buffer."""
    msg = message(buf, writable=True, peer=source)
    outgoing = np.array(msg.packed(), dtype=_U8)
    st = self._st()
    label = (_p2p_label, "MPI_Sendrecv_replace", msg, "dest", dest, sendtag, st)
    s = self._isend_data(st, outgoing, dest, sendtag, False, label)
    r = self._irecv_buf(msg, source, recvtag, "MPI_Sendrecv_replace")
    return wrap(_Pair(s._op, r))


# -- persistent requests -------------------------------------------------------------
def _send_init(self, buf, dest, tag, mode, call) -> Prequest:
    msg = message(buf, peer=dest)
    st = self._st()
    _dest(st, dest, tag)
    label = (_p2p_label, call, msg, "dest", dest, tag, st)
    if mode == "buffered":
        return persistent(lambda: self._ibsend_op(msg.packed(), dest, tag, call), label)
    sync = mode == "synchronous"

    def start():
        posted = self._send_op(st, msg.packed(), dest, tag, sync, label)
        if posted is None:
            return DoneOperation(INLINE_SEND)
        return PmlOperation(posted[1], False, None, label, posted[2])

    return persistent(start, label)


def Send_init(self, buf, dest: int, tag: int = 0) -> Prequest:
    """Create a persistent request for a standard-mode send."""
    return self._send_init(buf, dest, tag, "standard", "MPI_Send_init")


def Ssend_init(self, buf, dest: int, tag: int = 0) -> Prequest:
    """Create a persistent request for a synchronous-mode send."""
    return self._send_init(buf, dest, tag, "synchronous", "MPI_Ssend_init")


def Rsend_init(self, buf, dest: int, tag: int = 0) -> Prequest:
    """Create a persistent request for a ready-mode send."""
    return self._send_init(buf, dest, tag, "ready", "MPI_Rsend_init")


def Bsend_init(self, buf, dest: int, tag: int = 0) -> Prequest:
    """Create a persistent request for a buffered-mode send."""
    return self._send_init(buf, dest, tag, "buffered", "MPI_Bsend_init")


def Recv_init(self, buf, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Prequest:
    """Create a persistent request for a receive."""
    msg = message(buf, writable=True, peer=source)
    st = self._st()
    _source(st, source, tag)
    label = (_p2p_label, "MPI_Recv_init", msg, "source", source, tag, st)
    return persistent(lambda: self._irecv_buf(msg, source, tag, "MPI_Recv_init"), label)


# -- partitioned ---------------------------------------------------------------------
def Psend_init(self, buf, partitions: int, dest: int, tag: int = 0, info=None) -> Prequest:
    """Create a partitioned send request."""
    st = self._st()
    dest, tag = _dest(st, dest, tag)
    return Prequest._of(
        partitioned_send(self, st, message(buf, peer=dest), c_int(partitions), dest, tag)
    )


def Precv_init(
    self, buf, partitions: int, source: int = ANY_SOURCE, tag: int = ANY_TAG, info=None
) -> Prequest:
    """Create a partitioned receive request."""
    st = self._st()
    source, tag = _source(st, source, tag)
    return Prequest._of(
        partitioned_recv(
            self, st, message(buf, writable=True, peer=source), c_int(partitions), source, tag
        )
    )


# -- probes --------------------------------------------------------------------------
def _probe_now(self, source, tag, status) -> bool:
    st = self._st()
    source, tag = _source(st, source, tag)
    if source == PROC_NULL:
        if status is not None:
            status._fill(*NULL_PROC_RECV)
        return True
    found = st.rc.pml.iprobe(st.ctx, source, tag)
    if found is None:
        return False
    if status is not None:
        status._fill(found[0], found[1], 0, found[2], False)
    return True


def Iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
    """Nonblocking test for a matching message."""
    if self._probe_now(source, tag, status):
        return True
    current().poll()
    return self._probe_now(source, tag, status)


def Probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
    """Blocking test for a matching message."""
    if not self._probe_now(source, tag, status):
        label = (_probe_label, "MPI_Probe", source, tag, self._st())
        current().wait_matched(lambda: self._probe_now(source, tag, status) or None, label)
    return True


def _improbe_now(self, source, tag, status):
    """The Message of a matched probe, or None when nothing matches yet."""
    st = self._st()
    source, tag = _source(st, source, tag)
    if source == PROC_NULL:
        if status is not None:
            status._fill(*NULL_PROC_RECV)
        return no_proc()
    frag = st.rc.pml.improbe(st.ctx, source, tag)
    if frag is None:
        return None
    if status is not None:
        status._fill(frag.source, frag.tag, 0, frag.total, False)
    return matched(frag, st)


def Improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None):
    """Nonblocking test that matches a message, for a later ``Message.Recv``."""
    found = self._improbe_now(source, tag, status)
    if found is None:
        current().poll()
        found = self._improbe_now(source, tag, status)
    return found


def Mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> Message:
    """Blocking test that matches a message, for a later ``Message.Recv``."""
    found = self._improbe_now(source, tag, status)
    if found is None:
        label = (_probe_label, "MPI_Mprobe", source, tag, self._st())
        found = current().wait_matched(lambda: self._improbe_now(source, tag, status), label)
    return found


# -- objects -------------------------------------------------------------------------
def _send_obj(self, obj, dest, tag, sync, call) -> None:
    data = PICKLE.dumps(obj)
    label = (_obj_label, call, "dest", dest, tag, len(data))
    posted = self._send_op(self._st(), data, dest, tag, sync, label)
    if posted is not None:
        rc, preq, _ = posted
        if not preq.complete:
            rc.wait_request(preq, label)


def _isend_obj(self, obj, dest, tag, sync, call) -> Request:
    data = PICKLE.dumps(obj)
    label = (_obj_label, call, "dest", dest, tag, len(data))
    return self._isend_data(self._st(), data, dest, tag, sync, label)


def send(self, obj, dest: int, tag: int = 0) -> None:
    """Send an object in standard mode (pickled)."""
    self._send_obj(obj, dest, tag, False, "send")


def ssend(self, obj, dest: int, tag: int = 0) -> None:
    """Send an object in synchronous mode (pickled)."""
    self._send_obj(obj, dest, tag, True, "ssend")


def bsend(self, obj, dest: int, tag: int = 0) -> None:
    """Send an object in buffered mode (pickled)."""
    self._bsend(_pickled(obj), dest, tag, "bsend")


def isend(self, obj, dest: int, tag: int = 0) -> Request:
    """Nonblocking send of an object in standard mode (pickled)."""
    return self._isend_obj(obj, dest, tag, False, "isend")


def issend(self, obj, dest: int, tag: int = 0) -> Request:
    """Nonblocking send of an object in synchronous mode (pickled)."""
    return self._isend_obj(obj, dest, tag, True, "issend")


def ibsend(self, obj, dest: int, tag: int = 0) -> Request:
    """Nonblocking send of an object in buffered mode (pickled)."""
    return wrap(self._ibsend_op(_pickled(obj), dest, tag, "ibsend"))


def recv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None):
    """Receive an object (unpickled)."""
    if buf is not None:
        warnings.warn("the 'buf' argument is deprecated", UserWarning, stacklevel=2)
        area = bytearray(c_int(buf)) if _is_count(buf) else buf
        return self._irecv_obj(area, source, tag, "recv").wait(status)
    return self.mprobe(source, tag, status).recv(status)


def _irecv_obj(self, buf, source, tag, call) -> Request:
    if buf is None:
        area = np.empty(IRECV_BUFSZ, _U8)
    elif _is_count(buf):
        area = np.empty(c_int(buf), _U8)
    else:
        area = message(buf, writable=True).data
    label = (_obj_label, call, "source", source, tag, None)
    posted = self._recv_op(self._st(), area, source, tag, label)
    if posted is None:
        return wrap(DoneOperation(NULL_PROC_RECV))
    return wrap(PmlOperation(posted[1], True, _loads_buffer, label))


def irecv(self, buf=None, source: int = ANY_SOURCE, tag: int = ANY_TAG) -> Request:
    """Nonblocking receive of an object."""
    return self._irecv_obj(buf, source, tag, "irecv")


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
    """Send an object and receive another, both at once."""
    s = self._isend_obj(sendobj, dest, sendtag, False, "sendrecv")
    obj = self.recv(recvbuf, source, recvtag, status)
    s.Wait()
    return obj


def probe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
    """Blocking test for a matching message (True once there is one)."""
    return self.Probe(source, tag, status)


def iprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> bool:
    """Nonblocking test for a matching message."""
    return self.Iprobe(source, tag, status)


def mprobe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None) -> Message:
    """Blocking test that matches a message, for a later ``Message.recv``."""
    return self.Mprobe(source, tag, status)


def improbe(self, source: int = ANY_SOURCE, tag: int = ANY_TAG, status=None):
    """Nonblocking test that matches a message, for a later ``Message.recv``."""
    return self.Improbe(source, tag, status)


def _is_count(buf) -> bool:
    return isinstance(buf, int) or (hasattr(buf, "__index__") and not hasattr(buf, "__len__"))


class _Pair(Operation):
    """``Isendrecv``: one request over a send and a receive; its status is the receive's."""

    __slots__ = ("send", "recv")

    def __init__(self, send, recv):
        self.send = send
        self.recv = recv

    def ready(self) -> bool:
        return self.send.ready() and self.recv.ready()

    def block(self) -> None:
        self.send.block()
        self.recv.block()

    def peek(self) -> tuple:
        return self.recv.peek()

    def take(self):
        self.send.take()
        return self.recv.take()

    def cancel(self) -> None:
        self.recv.cancel()

    def describe(self) -> str:
        return f"{self.send.describe()}; {self.recv.describe()}"


# Deadlock-report labels, rendered only when a report is printed (see pml.describe).
def _comm_name(st) -> str:
    return st.name or "comm"


def _p2p_label(call, msg, peer_kw, peer, tag, st) -> str:
    return (
        f"{call}(count={msg.count}, datatype={msg.datatype.name}, {peer_kw}={peer}, "
        f"tag={tag}, comm={_comm_name(st)})"
    )


def _obj_label(call, peer_kw, peer, tag, nbytes) -> str:
    pickled = "" if nbytes is None else f", {nbytes} pickled bytes"
    return f"{call}({peer_kw}={peer}, tag={tag}{pickled})"


def _probe_label(call, source, tag, st) -> str:
    return f"{call}(source={source}, tag={tag}, comm={_comm_name(st)})"


NAMES = {
    "Request": Request,
    "Prequest": Prequest,
    "Grequest": Grequest,
    "REQUEST_NULL": REQUEST_NULL,
    "Status": Status,
    "Message": Message,
    "MESSAGE_NULL": MESSAGE_NULL,
    "MESSAGE_NO_PROC": MESSAGE_NO_PROC,
    "Attach_buffer": buffered.Attach_buffer,
    "Detach_buffer": buffered.Detach_buffer,
    "Pickle": Pickle,
    "pickle": PICKLE,
    **comm_locks.NAMES,
}
"""The point-to-point names of the ``MPI`` module."""
