"""``MPI.Message``: a message taken by a matched probe (``Mprobe``/``Improbe``).

The probe takes the message off ob1's unexpected queue (``Pml.improbe``), so no other
receive or probe can match it; only ``Message.Recv``/``Irecv`` (and the lowercase forms)
receive it, and that turns the handle into ``MESSAGE_NULL``. A probe of ``PROC_NULL``
answers ``MESSAGE_NO_PROC``, whose receive completes at once with the ``PROC_NULL``
status; the predefined ``MESSAGE_NO_PROC`` object itself never changes.
"""

from __future__ import annotations

from .buffers import message
from .context import current
from .error_classes import ERROR_CLASSES, Exception
from .handles import HandleObject, MpiObject
from .pickling import PICKLE
from .request import NULL_PROC_RECV, DoneOperation, PmlOperation, Request, finish_recv, wrap
from .status import ANY_SOURCE, PROC_NULL

__all__ = ["MESSAGE_NO_PROC", "MESSAGE_NULL", "Message", "matched", "no_proc"]

ERR_REQUEST = ERROR_CLASSES["ERR_REQUEST"][0]


class _Matched(MpiObject):
    """A matched message: the PML's unexpected fragment and the communicator it came on."""

    __slots__ = ("frag", "st")

    def __init__(self, frag, st):
        super().__init__()
        self.frag = frag
        self.st = st


_NO_PROC = MpiObject()
"""What ``MESSAGE_NO_PROC`` names: the answer of a probe of ``PROC_NULL``."""


def _mrecv_label(call, frag) -> str:
    return f"{call}(source={frag.source}, tag={frag.tag}, {frag.total} bytes)"


def _loads(preq, fields):
    n = fields[3]
    return None if n <= 0 else PICKLE.loads(memoryview(preq.data)[:n])


class Message(HandleObject):
    """Matched message."""

    __slots__ = ()
    __module__ = "mpi4py.MPI"
    _constants: dict = {}
    _null_name = "MESSAGE_NULL"
    _first_fint = 2

    def _release(self) -> None:
        """Nothing: a matched message is released by receiving it (mpi4py's ``free``)."""

    # -- probes ---------------------------------------------------------------------------
    @classmethod
    def Probe(cls, comm, source=-1, tag=-1, status=None) -> Message:
        """Block until a message matches; return it as a matched message."""
        return comm.Mprobe(source, tag, status)

    @classmethod
    def Iprobe(cls, comm, source=-1, tag=-1, status=None) -> Message | None:
        """Return a matched message if one matches now, else ``None``."""
        return comm.Improbe(source, tag, status)

    probe = Probe
    iprobe = Iprobe

    # -- receives -------------------------------------------------------------------------
    def _peer(self) -> int:
        """PROC_NULL for ``MESSAGE_NO_PROC`` (its receive buffer is not looked at)."""
        return PROC_NULL if self._obj is _NO_PROC else ANY_SOURCE

    def _consume(self):
        m = self._obj
        if m is None:
            raise Exception(ERR_REQUEST)
        if self is not MESSAGE_NO_PROC:
            self._obj = None
        return m

    def _start(self, area, call):
        """The PML request receiving the matched message into ``area`` (None: allocate)."""
        m = self._consume()
        if m is _NO_PROC:
            return None
        label = (_mrecv_label, call, m.frag)
        st = m.st
        return st.rc.pml.imrecv(m.frag, area, st.ctx, label), label

    def Recv(self, buf, status=None) -> None:
        """Receive the matched message into ``buf``."""
        msg = message(buf, writable=True, peer=self._peer())
        started = self._start(msg.data, "MPI_Mrecv")
        if started is None:
            if status is not None:
                status._fill(*NULL_PROC_RECV)
            return
        preq, label = started
        if not preq.complete:
            current().wait_request(preq, label)
        msg.finish(preq.count)
        finish_recv(preq, status)

    def Irecv(self, buf) -> Request:
        """Start a receive of the matched message into ``buf``."""
        msg = message(buf, writable=True, peer=self._peer())
        started = self._start(msg.data, "MPI_Imrecv")
        if started is None:
            return wrap(DoneOperation(NULL_PROC_RECV))
        finisher = msg.finisher
        finish = None if finisher is None else (lambda preq, fields: finisher(preq))
        return wrap(PmlOperation(started[0], True, finish, started[1]))

    def recv(self, status=None):
        """Receive the matched message as a Python object."""
        started = self._start(None, "mrecv")
        if started is None:
            if status is not None:
                status._fill(*NULL_PROC_RECV)
            return None
        preq, label = started
        return wrap(PmlOperation(preq, True, _loads, label)).wait(status)

    def irecv(self) -> Request:
        """Start a receive of the matched message as a Python object."""
        started = self._start(None, "imrecv")
        if started is None:
            return wrap(DoneOperation(NULL_PROC_RECV))
        return wrap(PmlOperation(started[0], True, _loads, started[1]))

    def __repr__(self) -> str:
        m = self._obj
        if m is None:
            return "<pyopenib.MPI.Message MESSAGE_NULL>"
        if m is _NO_PROC:
            return "<pyopenib.MPI.Message MESSAGE_NO_PROC>"
        return f"<pyopenib.MPI.Message {_mrecv_label('matched', m.frag)}>"


def matched(frag, st) -> Message:
    return Message._wrap(_Matched(frag, st))


def no_proc() -> Message:
    return Message(MESSAGE_NO_PROC)


MESSAGE_NULL = Message._predefine("MESSAGE_NULL", None)
MESSAGE_NO_PROC = Message._predefine("MESSAGE_NO_PROC", _NO_PROC, fint=1)
