"""``mpi4py.util.pkl5``: pickle protocol 5 communication for large objects.

An object travels as an *info* message (the byte lengths of the pickle stream and of each
out-of-band buffer, as int64), then the stream, then each buffer, every one a message of
its own on the same (destination, tag); a payload longer than ``_bigmpi.blocksize`` bytes
goes as one item of a contiguous datatype, so no count exceeds a C ``int``. Receives probe
the info message first, so any size arrives; a matched probe takes every part of one
object at once (``Message`` is the tuple of their ``MPI.Message``), and a nonblocking send
is the tuple of its parts' requests (``Request``). Collectives run point-to-point on a
private duplicate of the communicator, as mpi4py's ``_commctx_intra``/``_commctx_inter``.
"""

from __future__ import annotations

import struct
import weakref

from .comm import Comm as _Comm
from .comm import Intracomm as _Intracomm
from .comm_locks import comm_lock
from .datatypes import DATATYPES, Datatype
from .error_classes import ERROR_CLASSES, Exception
from .intercomm import Intercomm as _Intercomm
from .memory import buffer
from .message import MESSAGE_NO_PROC, MESSAGE_NULL
from .message import Message as _Message
from .pickling import Pickle
from .request import REQUEST_NULL
from .request import Request as _Request
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, Status

__all__ = ["Comm", "Intercomm", "Intracomm", "Message", "Pickle", "Request", "pickle"]

pickle = Pickle()
"""The serializer pkl5 uses (tests swap it)."""

_INFO = "q"
_INFO_SIZE = struct.calcsize(_INFO)
_BYTE = DATATYPES["BYTE"]
_ERR_ROOT = ERROR_CLASSES["ERR_ROOT"][0]
ROOT = -4


class _BigMPI:
    """Large counts: a payload above ``blocksize`` bytes is one item of a contiguous type
    (cached per size while one transfer runs)."""

    blocksize = (1 << 31) - 1  # MPI 3.1 (Open MPI 4.1): counts are C ints

    def __init__(self):
        self.cache = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for dtype in self.cache.values():
            dtype.Free()
        self.cache.clear()

    def __call__(self, buf):
        view = memoryview(buf)
        count = view.nbytes
        if count <= self.blocksize:
            return (view, count, _BYTE)
        dtype = self.cache.get(count)
        if dtype is None:
            dtype = self.cache[count] = _BYTE.Create_contiguous(count).Commit()
        return (view, 1, dtype)


_bigmpi = _BigMPI()


def _info_type():
    return Datatype.fromcode(_INFO)


def _pack_info(lengths) -> bytes:
    return struct.pack(f"{len(lengths)}{_INFO}", *lengths)


def _unpack_info(raw) -> tuple[int, ...]:
    return struct.unpack(f"{len(raw) // _INFO_SIZE}{_INFO}", raw)


def _alloc(nbytes: int):
    return buffer.allocate(nbytes)


def _dumps(obj):
    return pickle.dumps_oob(obj)


def _loads(data, bufs):
    return pickle.loads_oob(data, bufs)


# -- sending ----------------------------------------------------------------------------
def _send_parts(comm, send, data, bufs, dest, tag) -> None:
    info = [len(data), *(len(memoryview(b).cast("B")) for b in bufs)]
    send(comm, (_pack_info(info), _info_type()), dest, tag)
    with _bigmpi as big:
        send(comm, big(data), dest, tag)
        for b in bufs:
            send(comm, big(b), dest, tag)


def _send(comm, send, obj, dest, tag) -> None:
    if dest == PROC_NULL:
        send(comm, (None, 0, _BYTE), dest, tag)
        return
    data, bufs = _dumps(obj)
    with comm_lock(comm, "send"):
        _send_parts(comm, send, data, bufs, dest, tag)


def _isend(comm, isend, obj, dest, tag) -> Request:
    reqs = []
    _send(comm, lambda c, b, d, t: reqs.append(isend(c, b, d, t)), obj, dest, tag)
    return Request(reqs)


# -- receiving --------------------------------------------------------------------------
def _recv_parts(comm, recv, buf, source, tag, status=None):
    status = Status() if status is None else status
    _Comm.Probe(comm, source, tag, status)
    source, tag = status.Get_source(), status.Get_tag()
    itype = _info_type()
    raw = bytearray(status.Get_elements(itype) * _INFO_SIZE)
    _Comm.Recv(comm, (raw, itype), source, tag, status)
    info = _unpack_info(raw)
    if buf is not None:
        view = memoryview(buf).cast("B")
        buf = view[: info[0]] if len(view) >= info[0] else None
    data = _alloc(info[0]) if buf is None else buf
    bufs = [_alloc(n) for n in info[1:]]
    with _bigmpi as big:
        recv(comm, big(data), source, tag)
        for b in bufs:
            recv(comm, big(b), source, tag)
    status.Set_elements(_BYTE, sum(info))
    return data, bufs


def _recv(comm, recv, buf, source, tag, status):
    if source == PROC_NULL:
        recv(comm, (None, 0, _BYTE), source, tag, status)
        return None
    with comm_lock(comm, "recv"):
        data, bufs = _recv_parts(comm, recv, buf, source, tag, status)
    return _loads(data, bufs)


def _mprobe(comm, mprobe, source, tag, status):
    if source == PROC_NULL:
        return Message([_Comm.Mprobe(comm, source, tag, status)])
    status = Status() if status is None else status
    with comm_lock(comm, "recv"):
        first = mprobe(comm, source, tag, status)
        if first is None:
            return None
        parts = [first]
        source, tag = status.Get_source(), status.Get_tag()
        total = 0
        for _ in range(status.Get_elements(_info_type())):
            parts.append(_Comm.Mprobe(comm, source, tag, status))
            total += status.Get_elements(_BYTE)
        status.Set_elements(_BYTE, total)
        return Message(parts)


def _mrecv_parts(message, mrecv, status=None):
    itype = _info_type()
    if message[0] == MESSAGE_NO_PROC:
        _Message.Recv(message[0], (bytearray(0), itype), status)
        mrecv(MESSAGE_NO_PROC, (None, 0, _BYTE))  # a request to wait for, as mpi4py's
        data, bufs = _dumps(None)
        return bytearray(data), bufs
    parts = iter(message)
    raw = bytearray((len(message) - 1) * _INFO_SIZE)
    _Message.Recv(next(parts), (raw, itype), status)
    info = _unpack_info(raw)
    data = _alloc(info[0])
    bufs = [_alloc(n) for n in info[1:]]
    with _bigmpi as big:
        mrecv(next(parts), big(data))
        for b in bufs:
            mrecv(next(parts), big(b))
    if status is not None:
        status.Set_elements(_BYTE, sum(info))
    return data, bufs


def _mrecv(message, status):
    data, bufs = _mrecv_parts(message, lambda m, b: _Message.Recv(m, b), status)
    return _loads(data, bufs)


def _imrecv(message) -> Request:
    reqs = []
    parts = _mrecv_parts(message, lambda m, b: reqs.append(_Message.Irecv(m, b)))
    request = Request(reqs)
    request._data_bufs = parts  # what the receives fill, unpickled at completion
    return request


def _load_completed(request):
    parts = getattr(request, "_data_bufs", None)
    if parts is None:
        return None
    del request._data_bufs
    return _loads(*parts)


def _completion(request, complete, status):
    flag = complete(list(request), None if status is None else [status] * len(request))
    return (flag, _load_completed(request)) if flag else (flag, None)


def _completion_all(requests, complete, statuses):
    if isinstance(statuses, list):
        statuses.extend(Status() for _ in range(len(statuses), len(requests)))
    flat = [r for req in requests for r in req]
    flat_statuses = None
    if statuses is not None:
        flat_statuses = [st for req, st in zip(requests, statuses, strict=False) for _ in req]
    flag = complete(flat, flat_statuses)
    return (flag, [_load_completed(req) for req in requests]) if flag else (flag, None)


class Request(tuple):
    """A pkl5 nonblocking operation: the tuple of its parts' ``MPI.Request``."""

    def __new__(cls, request=None):
        if request is None:
            request = (REQUEST_NULL,)
        if isinstance(request, _Request):
            request = (request,)
        return super().__new__(cls, request)

    def __eq__(self, other):
        if isinstance(other, Request):
            return tuple(self) == tuple(other)
        if isinstance(other, _Request):
            return all(req == other for req in self)
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Request):
            return tuple(self) != tuple(other)
        if isinstance(other, _Request):
            return any(req != other for req in self)
        return NotImplemented

    def __bool__(self):
        return any(self)

    def Free(self) -> None:
        for req in self:
            req.Free()

    def free(self) -> None:
        for req in self:
            req.free()

    def cancel(self) -> None:
        for req in self:
            req.Cancel()

    def get_status(self, status=None) -> bool:
        statuses = [status] + [None] * (len(self) - 1)
        return all([_Request.Get_status(r, s) for r, s in zip(self, statuses, strict=False)])

    def test(self, status=None):
        return _completion(self, _Request.Testall, status)

    def wait(self, status=None):
        return _completion(self, _Request.Waitall, status)[1]

    @classmethod
    def get_status_all(cls, requests, statuses=None) -> bool:
        if statuses is None:
            return all([req.get_status() for req in requests])
        statuses.extend(Status() for _ in range(len(statuses), len(requests)))
        return all([req.get_status(st) for req, st in zip(requests, statuses, strict=False)])

    @classmethod
    def testall(cls, requests, statuses=None):
        return _completion_all(requests, _Request.Testall, statuses)

    @classmethod
    def waitall(cls, requests, statuses=None):
        return _completion_all(requests, _Request.Waitall, statuses)[1]


class Message(tuple):
    """A pkl5 matched message: the tuple of its parts' ``MPI.Message``."""

    def __new__(cls, message=None):
        if message is None:
            message = (MESSAGE_NULL,)
        if isinstance(message, _Message):
            message = (message,)
        return super().__new__(cls, message)

    def __eq__(self, other):
        if isinstance(other, Message):
            return tuple(self) == tuple(other)
        if isinstance(other, _Message):
            return all(msg == other for msg in self)
        return NotImplemented

    def __ne__(self, other):
        if isinstance(other, Message):
            return tuple(self) != tuple(other)
        if isinstance(other, _Message):
            return any(msg != other for msg in self)
        return NotImplemented

    def __bool__(self):
        return any(self)

    def free(self) -> None:
        for msg in self:
            msg.free()

    def recv(self, status=None):
        return _mrecv(self, status)

    def irecv(self) -> Request:
        return _imrecv(self)

    @classmethod
    def probe(cls, comm, source=-1, tag=-1, status=None):
        return _mprobe(comm, _Comm.Mprobe, source, tag, status)

    @classmethod
    def iprobe(cls, comm, source=-1, tag=-1, status=None):
        return _mprobe(comm, _Comm.Improbe, source, tag, status)


# -- collectives ------------------------------------------------------------------------
_CTX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _commctx(comm):
    """(private duplicate, tag[, local intracommunicator]) for pkl5's collectives: one
    duplicate per communicator, made collectively on its first collective, and a tag that
    advances with every collective (mpi4py's ``_commctx_intra``/``_commctx_inter``)."""
    st = comm._st()
    ctx = _CTX.get(st)
    if ctx is None:
        dup = _Comm.Dup(comm)
        local = _Intracomm._of(dup._st().local) if st.inter else None
        ctx = _CTX[st] = [dup, 0, local]
    ctx[1] += 1
    return ctx[0], ctx[1], ctx[2]


def _p2p_backend():
    reqs = []
    return (
        reqs,
        lambda comm, buf, dest, tag: reqs.append(_Comm.Isend(comm, buf, dest, tag)),
        lambda comm, buf, source, tag: _Comm.Recv(comm, buf, source, tag),
    )


def _bcast_parts(comm, data, bufs, root):
    """The stream and buffers from ``root``: sizes first, then each part, by Bcast."""
    itype = _info_type()
    if comm.Get_rank() == root:
        info = [len(data), *(len(memoryview(b).cast("B")) for b in bufs)]
        _Comm.Bcast(comm, (_pack_info([len(info)]), itype), root)
        _Comm.Bcast(comm, (_pack_info(info), itype), root)
    else:
        count = bytearray(_INFO_SIZE)
        _Comm.Bcast(comm, (count, itype), root)
        raw = bytearray(_unpack_info(count)[0] * _INFO_SIZE)
        _Comm.Bcast(comm, (raw, itype), root)
        info = _unpack_info(raw)
        data = _alloc(info[0])
        bufs = [_alloc(n) for n in info[1:]]
    with _bigmpi as big:
        _Comm.Bcast(comm, big(data), root)
        for b in bufs:
            _Comm.Bcast(comm, big(b), root)
    return data, bufs


def _check_root(comm, root, size):
    if comm.Is_inter():
        if root == PROC_NULL or root == ROOT or 0 <= root < size:
            return
    elif 0 <= root < size:
        return
    comm.Call_errhandler(_ERR_ROOT)
    raise Exception(_ERR_ROOT)


def _bcast(comm, obj, root):
    if not comm.Is_inter():
        _check_root(comm, root, comm.Get_size())
        data, bufs = _dumps(obj if comm.Get_rank() == root else None)
        with comm_lock(comm, "bcast"):
            data, bufs = _bcast_parts(comm, data, bufs, root)
        return _loads(data, bufs)
    _check_root(comm, root, comm.Get_remote_size())
    dup, tag, local = _commctx(comm)
    if root == PROC_NULL:
        return None
    if root == ROOT:
        data, bufs = _dumps(obj)
        _send_parts(dup, _Comm.Send, data, bufs, 0, tag)
        return None
    if local.Get_rank() == 0:
        data, bufs = _recv_parts(dup, _Comm.Recv, None, root, tag)
    else:
        data, bufs = _dumps(None)
    with comm_lock(local, "bcast"):
        data, bufs = _bcast_parts(local, data, bufs, 0)
    return _loads(data, bufs)


def _peers(comm):
    dup, tag, _ = _commctx(comm)
    size = comm.Get_remote_size() if comm.Is_inter() else comm.Get_size()
    return dup, tag, size


def _gather(comm, obj, root):
    size = comm.Get_remote_size() if comm.Is_inter() else comm.Get_size()
    _check_root(comm, root, size)
    reqs, send, recv = _p2p_backend()
    dup, tag, size = _peers(comm)
    if comm.Is_inter():
        sending, receiving = 0 <= root < size, root == ROOT
    else:
        sending, receiving = True, root == comm.Get_rank()
    if sending:
        _send_parts(dup, send, *_dumps(obj), root, tag)
    objs = None
    if receiving:
        objs = [_loads(*_recv_parts(dup, recv, None, src, tag)) for src in range(size)]
    _Request.Waitall(reqs)
    return objs


def _as_items(objs, size):
    objs = [None] * size if objs is None else list(objs)
    if len(objs) != size:
        raise ValueError(f"expecting {size} items, got {len(objs)}")
    return objs


def _scatter(comm, objs, root):
    size = comm.Get_remote_size() if comm.Is_inter() else comm.Get_size()
    _check_root(comm, root, size)
    reqs, send, recv = _p2p_backend()
    dup, tag, size = _peers(comm)
    if comm.Is_inter():
        sending, receiving = root == ROOT, 0 <= root < size
    else:
        sending, receiving = root == comm.Get_rank(), True
    if sending:
        for dest, item in enumerate(_as_items(objs, size)):
            _send_parts(dup, send, *_dumps(item), dest, tag)
    obj = _loads(*_recv_parts(dup, recv, None, root, tag)) if receiving else None
    _Request.Waitall(reqs)
    return obj


def _allgather(comm, obj):
    reqs, send, recv = _p2p_backend()
    dup, tag, size = _peers(comm)
    data, bufs = _dumps(obj)
    for dest in range(size):
        _send_parts(dup, send, data, bufs, dest, tag)
    objs = [_loads(*_recv_parts(dup, recv, None, src, tag)) for src in range(size)]
    _Request.Waitall(reqs)
    return objs


def _alltoall(comm, objs):
    reqs, send, recv = _p2p_backend()
    size = comm.Get_remote_size() if comm.Is_inter() else comm.Get_size()
    items = _as_items(objs, size)
    dup, tag, size = _peers(comm)
    for dest, item in enumerate(items):
        _send_parts(dup, send, *_dumps(item), dest, tag)
    objs = [_loads(*_recv_parts(dup, recv, None, src, tag)) for src in range(size)]
    _Request.Waitall(reqs)
    return objs


class Comm(_Comm):
    """A communicator whose lowercase calls speak pkl5."""

    __slots__ = ()

    def send(self, obj, dest, tag=0):
        _send(self, _Comm.Send, obj, dest, tag)

    def bsend(self, obj, dest, tag=0):
        _send(self, _Comm.Bsend, obj, dest, tag)

    def ssend(self, obj, dest, tag=0):
        _Request.Waitall(list(_isend(self, _Comm.Issend, obj, dest, tag)))

    def isend(self, obj, dest, tag=0):
        return _isend(self, _Comm.Isend, obj, dest, tag)

    def ibsend(self, obj, dest, tag=0):
        return _isend(self, _Comm.Ibsend, obj, dest, tag)

    def issend(self, obj, dest, tag=0):
        return _isend(self, _Comm.Issend, obj, dest, tag)

    def recv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        return _recv(self, _Comm.Recv, buf, source, tag, status)

    def irecv(self, buf=None, source=ANY_SOURCE, tag=ANY_TAG):
        raise RuntimeError("unsupported")

    def sendrecv(
        self,
        sendobj,
        dest,
        sendtag=0,
        recvbuf=None,
        source=ANY_SOURCE,
        recvtag=ANY_TAG,
        status=None,
    ):
        sreq = _isend(self, _Comm.Isend, sendobj, dest, sendtag)
        obj = _recv(self, _Comm.Recv, recvbuf, source, recvtag, status)
        _Request.Waitall(list(sreq))
        return obj

    def mprobe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        return _mprobe(self, _Comm.Mprobe, source, tag, status)

    def improbe(self, source=ANY_SOURCE, tag=ANY_TAG, status=None):
        return _mprobe(self, _Comm.Improbe, source, tag, status)

    def bcast(self, obj, root=0):
        return _bcast(self, obj, root)

    def gather(self, sendobj, root=0):
        return _gather(self, sendobj, root)

    def scatter(self, sendobj, root=0):
        return _scatter(self, sendobj, root)

    def allgather(self, sendobj):
        return _allgather(self, sendobj)

    def alltoall(self, sendobj):
        return _alltoall(self, sendobj)


class Intracomm(Comm, _Intracomm):
    """An intracommunicator whose lowercase calls speak pkl5."""

    __slots__ = ()


class Intercomm(Comm, _Intercomm):
    """An intercommunicator whose lowercase calls speak pkl5."""

    __slots__ = ()
