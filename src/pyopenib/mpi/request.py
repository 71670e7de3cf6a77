"""``MPI.Request``, ``Prequest`` and ``Grequest``: handles on operations in progress.

An MPI request handle names an *operation*; a ``Request`` object holds one handle and
``MPI.Request(other)`` copies it, so two objects may name one operation (they compare
equal), as in mpi4py. Completing a nonpersistent operation (``Wait``, a true ``Test``, the
Wait/Test families) sets the handle of the object that completed it to ``REQUEST_NULL``; a
persistent operation becomes *inactive* and stays allocated until ``Free``.

``Operation`` is the one interface every kind implements: a PML send or receive, an
already-complete transfer (``PROC_NULL``, buffered sends), a persistent request, a
generalized request, a partitioned transfer. Another layer's nonblocking operation (a
nonblocking collective, say) subclasses it too and gets every Wait/Test call for free.

Statuses follow Open MPI 4.1: a receive reports its envelope; a send that left through
ob1's send-inline path completes as ``ompi_request_empty`` (source ``PROC_NULL``, tag
``ANY_TAG``); any other send reports the sender's rank, the tag and the byte count; a
null or inactive request reports the empty status.
"""

from __future__ import annotations

import builtins
import sys
import traceback
import weakref

from ..pml import describe
from ..pml.request import EAGER_SENT
from .context import current
from .error_classes import ERROR_CLASSES, Exception
from .status import ANY_TAG, PROC_NULL, UNDEFINED, Status, empty_fields
from .surface import MpiClass

__all__ = [
    "REQUEST_NULL",
    "DoneOperation",
    "Grequest",
    "Operation",
    "PmlOperation",
    "Prequest",
    "Request",
    "completed_request",
    "finish_recv",
    "persistent",
    "wrap",
]

ERR_TRUNCATE = ERROR_CLASSES["ERR_TRUNCATE"][0]
ERR_IN_STATUS = ERROR_CLASSES["ERR_IN_STATUS"][0]
ERR_REQUEST = ERROR_CLASSES["ERR_REQUEST"][0]
ERR_OTHER = ERROR_CLASSES["ERR_OTHER"][0]
_EMPTY = empty_fields()
NULL_PROC_RECV = (PROC_NULL, ANY_TAG, 0, 0, False)
"""A receive from ``PROC_NULL`` completes with source ``PROC_NULL``, tag ``ANY_TAG``."""
INLINE_SEND = (PROC_NULL, ANY_TAG, 0, 0, False)
"""Open MPI's ``ompi_request_empty``: what a send completed at once reports."""


class Operation:
    """What a request handle points to. ``ready`` must not block; ``take`` consumes a
    completion and returns ``(status fields, value)`` where the fields are ``(source, tag,
    error, byte count, cancelled)`` and the value is what lowercase ``wait`` returns."""

    __slots__ = ("fint", "__weakref__")
    persistent = False
    partitioned = False
    label = ""

    def ready(self) -> bool:
        raise NotImplementedError

    def block(self) -> None:
        """Drive progress until ``ready``."""
        if not self.ready():
            current().wait_for(self.ready, self.label)

    def take(self):
        raise NotImplementedError

    def peek(self) -> tuple:
        """The status fields of a completed operation, leaving it complete."""
        raise NotImplementedError

    def cancel(self) -> None:
        """Open MPI's ob1 cancels nothing but unmatched receives: the default."""

    def release(self) -> None:
        """The handle is being freed (``Request.Free``)."""

    def describe(self) -> str:
        return describe(self.label)


class DoneOperation(Operation):
    """An operation complete when created: a ``PROC_NULL`` transfer, a buffered send."""

    __slots__ = ("fields", "value")

    def __init__(self, fields=_EMPTY, value=None):
        self.fields = fields
        self.value = value

    def ready(self) -> bool:
        return True

    def take(self):
        return self.fields, self.value

    def peek(self) -> tuple:
        return self.fields


class PmlOperation(Operation):
    """A PML send or receive. ``finish(pml request, status fields)`` turns a completed
    receive into what lowercase ``wait`` returns (None: the value is None); ``envelope``
    is the sender's (communicator rank, tag) for a send's status."""

    __slots__ = ("preq", "is_recv", "finish", "label", "envelope")

    def __init__(self, preq, is_recv: bool, finish=None, label="", envelope=None):
        self.preq = preq
        self.is_recv = is_recv
        self.finish = finish
        self.label = label
        self.envelope = envelope

    def ready(self) -> bool:
        return self.preq.complete

    def block(self) -> None:
        preq = self.preq
        if not preq.complete:
            current().wait_request(preq, self.label)

    def peek(self) -> tuple:
        preq = self.preq
        if self.is_recv:
            if preq.truncated:  # Open MPI reports the length that was sent
                return (preq.source, preq.tag, ERR_TRUNCATE, preq.sent, preq.cancelled)
            return (preq.source, preq.tag, 0, preq.count, preq.cancelled)
        if preq is EAGER_SENT or self.envelope is None:
            return INLINE_SEND
        return (self.envelope[0], self.envelope[1], 0, len(preq.data), preq.cancelled)

    def take(self):
        fields = self.peek()
        finish = self.finish
        if finish is None or fields[4] or fields[2]:
            return fields, None
        return fields, finish(self.preq, fields)

    def cancel(self) -> None:
        if self.is_recv:
            current().pml.cancel(self.preq)


class _PersistentOperation(Operation):
    """A persistent request: ``start()`` returns the operation of one more transfer with
    the same arguments; between a completion and the next ``Start`` it is inactive."""

    __slots__ = ("start", "active", "label")
    persistent = True

    def __init__(self, start, label=""):
        self.start = start
        self.active = None
        self.label = label

    def begin(self) -> None:
        # Open MPI refuses to restart a transfer still in progress; one that completed in
        # the PML (an eager send) may start again before it was waited for
        if self.active is not None and not self.active.ready():
            raise Exception(ERR_REQUEST)
        self.active = self.start()

    def inactive(self) -> bool:
        return self.active is None

    def ready(self) -> bool:
        active = self.active
        return active is None or active.ready()

    def block(self) -> None:
        if self.active is not None:
            self.active.block()

    def take(self):
        active = self.active
        if active is None:
            return _EMPTY, None
        self.active = None
        return active.take()

    def peek(self) -> tuple:
        return _EMPTY if self.active is None else self.active.peek()

    def cancel(self) -> None:
        if self.active is not None:
            self.active.cancel()


class _GeneralizedOperation(Operation):
    """``MPI_Grequest_start``: the program completes it; its status comes from
    ``query_fn`` and ``free_fn`` runs when the completion is consumed (MPI 3.1 sec. 12.2)."""

    __slots__ = ("query_fn", "free_fn", "cancel_fn", "args", "kwargs", "done", "value")
    label = "MPI_Grequest (waiting for Grequest.Complete)"

    def __init__(self, query_fn, free_fn, cancel_fn, args, kwargs):
        self.query_fn = query_fn
        self.free_fn = free_fn
        self.cancel_fn = cancel_fn
        self.args = tuple(args) if args is not None else ()
        self.kwargs = dict(kwargs) if kwargs is not None else {}
        self.done = False
        self.value = None

    def ready(self) -> bool:
        return self.done

    def peek(self) -> tuple:
        status = Status()
        if self.query_fn is not None:
            _user_call(self.query_fn, status, *self.args, **self.kwargs)
            if self.cancel_fn is None:
                status.Set_cancelled(False)
        return status._fields()

    def take(self):
        try:
            fields = self.peek()
        finally:
            self.release()
        return fields, self.value

    def release(self) -> None:
        free_fn, self.free_fn = self.free_fn, None
        if free_fn is not None:
            _user_call(free_fn, *self.args, **self.kwargs)

    def cancel(self) -> None:
        if self.cancel_fn is not None:
            _user_call(self.cancel_fn, self.done, *self.args, **self.kwargs)


def _user_call(fn, *args, **kwargs):
    """A generalized request's callback: an exception becomes the MPI error mpi4py reports
    (the traceback on stderr; the error class of an ``MPI.Exception``, else ERR_OTHER)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        raise Exception(exc.Get_error_class()) from exc
    except builtins.Exception as exc:
        traceback.print_exc(file=sys.stderr)
        raise Exception(ERR_OTHER) from exc


# -- integer handles --------------------------------------------------------------------
_BY_FINT: weakref.WeakValueDictionary[int, Operation] = weakref.WeakValueDictionary()
_FINT_NEXT = [1]


def _fint(op: Operation | None) -> int:
    """An operation's Fortran (and integer) handle, as ``MPI_Request_c2f``: 0 for
    ``REQUEST_NULL``, then 1, 2, ... in the order handles are first asked for."""
    if op is None:
        return 0
    try:
        return op.fint
    except AttributeError:
        fint = op.fint = _FINT_NEXT[0]
        _FINT_NEXT[0] = fint + 1
        _BY_FINT[fint] = op
        return fint


def _from_fint(cls, fint: int):
    op = None if fint == 0 else _BY_FINT.get(fint)
    if op is None and fint != 0:
        raise Exception(ERR_REQUEST)
    cls._check_kind(op)
    return cls._of(op)


def wrap(op: Operation | None) -> Request:
    """A ``Request`` object holding a new handle on ``op``."""
    req = Request.__new__(Request)
    req._op = op
    return req


def completed_request(fields=NULL_PROC_RECV) -> Request:
    """A request complete from the start (a ``PROC_NULL`` transfer)."""
    return wrap(DoneOperation(fields))


def finish_recv(preq, status: Status | None) -> None:
    """What Wait does with a completed receive, for the blocking calls that need no
    ``Request`` object: fill the status, raise ``ERR_TRUNCATE`` if the message was cut."""
    if status is not None:
        count = preq.sent if preq.truncated else preq.count
        status._fill(preq.source, preq.tag, status._error, count, preq.cancelled)
    if preq.truncated:
        raise Exception(ERR_TRUNCATE)


def _fill(status, fields) -> None:
    if status is not None:
        status._fill(*fields)


def _fill_single(status, fields) -> None:
    """A single completion's status (Wait, Test, Waitany, Testany): Open MPI leaves its
    ``MPI_ERROR`` alone ("Do *NOT* set status->MPI_ERROR here!", MPI-1.1 sec. 3.2.5);
    the error is the call's return code."""
    if status is not None:
        status._fill(fields[0], fields[1], status._error, fields[3], fields[4])


def _ops(requests) -> list:
    ops = []
    for r in requests:
        if not isinstance(r, Request):
            raise TypeError(f"Cannot convert {type(r).__name__} to mpi4py.MPI.Request")
        ops.append(r._op)
    return ops


def _place_statuses(statuses, count: int):
    """mpi4py's rule for a ``statuses`` argument: a list grows to ``count`` fresh
    ``Status`` objects; a tuple is filled as far as it reaches."""
    if statuses is None:
        return None
    if isinstance(statuses, list) and len(statuses) < count:
        statuses.extend(Status() for _ in range(len(statuses), count))
    return statuses


def _active(op) -> bool:
    """Not null and not an inactive persistent request (what Waitany/Waitsome skip)."""
    return op is not None and not (op.persistent and op.inactive())


class Request(metaclass=MpiClass):
    """A request handle (``MPI.Request``); ``MPI.Request(other)`` names the same one."""

    __slots__ = ("_op", "__weakref__")

    def __new__(cls, request: Request | None = None):
        """Make another object for ``request``'s request (``None``: the null one).

        Construction is here, not in ``__init__``, as in mpi4py: a program's subclass may
        define ``__new__`` and call ``super().__new__(cls, request)``."""
        if request is not None and not isinstance(request, Request):
            raise TypeError(
                f"Argument 'request' has incorrect type (expected {cls.__name__}, "
                f"got {type(request).__name__})"
            )
        new = object.__new__(cls)
        new._op = None
        if request is not None:
            cls._check_kind(request._op)
            new._op = request._op
        return new

    @classmethod
    def _check_kind(cls, op) -> None:
        """A Prequest (Grequest) names only persistent (generalized) operations."""

    @classmethod
    def _of(cls, op):
        req = cls.__new__(cls)
        req._op = op
        return req

    # -- identity -------------------------------------------------------------------------
    def __eq__(self, other) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self._op is other._op

    def __ne__(self, other) -> bool:
        if not isinstance(other, Request):
            return NotImplemented
        return self._op is not other._op

    __hash__ = None

    def __bool__(self) -> bool:
        return self._op is not None

    def __reduce__(self):
        if self._op is not None:
            raise ValueError(f"cannot serialize {type(self).__name__} instance")
        if self is REQUEST_NULL:
            return "REQUEST_NULL"
        return (type(self), ())

    @property
    def handle(self) -> int:
        return _fint(self._op)

    @classmethod
    def fromhandle(cls, handle: int):
        """Create object from MPI handle."""
        return _from_fint(cls, handle)

    def toint(self) -> int:
        """Translate object to integer handle."""
        return _fint(self._op)

    @classmethod
    def fromint(cls, arg: int):
        """Translate integer handle to object."""
        return _from_fint(cls, arg)

    def py2f(self) -> int:
        return _fint(self._op)

    @classmethod
    def f2py(cls, arg: int):
        return _from_fint(cls, arg)

    # -- one request ----------------------------------------------------------------------
    def _complete(self, status):
        """Wait for and consume this request's completion; its value (lowercase)."""
        op = self._op
        if op is None:
            _fill(status, _EMPTY)
            return None
        op.block()
        fields, value = op.take()
        if not op.persistent:
            self._op = None
        _fill_single(status, fields)
        if fields[2]:
            raise Exception(fields[2])
        return value

    def _ready_now(self) -> bool:
        op = self._op
        if op is None or op.ready():
            return True
        current().poll()
        return op.ready()

    def Wait(self, status: Status | None = None) -> bool:
        """Wait for the request to complete."""
        self._complete(status)
        return True

    def wait(self, status: Status | None = None):
        """Wait for the request to complete and return its object."""
        return self._complete(status)

    def Test(self, status: Status | None = None) -> bool:
        """Test whether the request has completed."""
        if not self._ready_now():
            return False
        self._complete(status)
        return True

    def test(self, status: Status | None = None):
        """Test for completion: ``(flag, object)``."""
        if not self._ready_now():
            return False, None
        return True, self._complete(status)

    def Get_status(self, status: Status | None = None) -> bool:
        """Test for completion without freeing the request."""
        op = self._op
        if op is None:
            _fill(status, _EMPTY)
            return True
        if not self._ready_now():
            return False
        _fill(status, op.peek())
        return True

    get_status = Get_status

    def Cancel(self) -> None:
        """Cancel the operation; ``MPI_ERR_REQUEST`` on a null request, as Open MPI."""
        if self._op is None:
            raise Exception(ERR_REQUEST)
        self._op.cancel()

    cancel = Cancel

    def Free(self) -> None:
        """Free the request (this object becomes ``REQUEST_NULL``)."""
        op = self._op
        if op is None or self is REQUEST_NULL:
            raise Exception(ERR_REQUEST)
        op.release()
        self._op = None

    def free(self) -> None:
        """Call ``Free`` if not null."""
        if self._op is not None:
            self.Free()

    # -- many requests --------------------------------------------------------------------
    @staticmethod
    def _block_all(ops) -> None:
        """Wait for every operation, each in turn.

        Waiting for each in turn is waiting for all (progress completes any of them),
        without a closure polled after every event."""
        for op in ops:
            if op is not None and not op.ready():
                op.block()

    @staticmethod
    def _consume(requests, ops, i):
        """Take the completion of ``requests[i]``: (fields, value)."""
        op = ops[i]
        if op is None:
            return _EMPTY, None
        fields, value = op.take()
        if not op.persistent:
            requests[i]._op = None
        return fields, value

    @classmethod
    def _complete_all(cls, requests, ops, statuses):
        statuses = _place_statuses(statuses, len(ops))
        values = []
        failed = False
        for i in range(len(ops)):
            fields, value = cls._consume(requests, ops, i)
            if statuses is not None and i < len(statuses):
                statuses[i]._fill(*fields)
            failed = failed or bool(fields[2])
            values.append(value)
        if failed:
            raise Exception(ERR_IN_STATUS)
        return values

    @classmethod
    def Waitall(cls, requests, statuses=None) -> bool:
        """Wait for all the requests to complete."""
        requests = list(requests)
        ops = _ops(requests)
        cls._block_all(ops)
        cls._complete_all(requests, ops, statuses)
        return True

    @classmethod
    def waitall(cls, requests, statuses=None) -> list:
        """Wait for all the requests; return their objects."""
        requests = list(requests)
        ops = _ops(requests)
        cls._block_all(ops)
        return cls._complete_all(requests, ops, statuses)

    @staticmethod
    def _all_ready(ops) -> bool:
        for op in ops:
            if op is not None and not op.ready():
                return False
        return True

    @classmethod
    def _testall(cls, requests, statuses):
        requests = list(requests)
        ops = _ops(requests)
        if not cls._all_ready(ops):
            current().poll()
            if not cls._all_ready(ops):
                # mpi4py hands MPI an array of empty statuses and copies it back
                for st in _place_statuses(statuses, len(ops)) or ():
                    st._fill(*_EMPTY)
                return False, None
        return True, cls._complete_all(requests, ops, statuses)

    @classmethod
    def Testall(cls, requests, statuses=None) -> bool:
        """Test whether all the requests have completed."""
        return cls._testall(requests, statuses)[0]

    @classmethod
    def testall(cls, requests, statuses=None):
        """Test for completion of all: ``(flag, objects)``."""
        return cls._testall(requests, statuses)

    @staticmethod
    def _ready_indices(ops) -> list[int]:
        return [i for i, op in enumerate(ops) if _active(op) and op.ready()]

    @classmethod
    def _any(cls, requests, status, blocking: bool):
        """Return (index, flag, value) of Waitany/Testany.

        ``UNDEFINED`` and the empty status when no request is active."""
        requests = list(requests)
        ops = _ops(requests)
        if not any(_active(op) for op in ops):
            _fill(status, _EMPTY)
            return UNDEFINED, True, None
        done = cls._ready_indices(ops)
        if not done:
            if blocking:
                label = (_many, "MPI_Waitany", ops)
                current().wait_for(lambda: bool(cls._ready_indices(ops)), label)
            else:
                current().poll()
            done = cls._ready_indices(ops)
            if not done:
                return UNDEFINED, False, None
        i = done[0]
        fields, value = cls._consume(requests, ops, i)
        _fill_single(status, fields)
        if fields[2]:
            raise Exception(fields[2])
        return i, True, value

    @classmethod
    def Waitany(cls, requests, status: Status | None = None) -> int:
        """Wait for any one request to complete; return its index."""
        return cls._any(requests, status, True)[0]

    @classmethod
    def waitany(cls, requests, status: Status | None = None):
        """Wait for any one request; return its index and object."""
        i, _, value = cls._any(requests, status, True)
        return i, value

    @classmethod
    def Testany(cls, requests, status: Status | None = None) -> tuple[int, bool]:
        """Test for completion of any one request: ``(index, flag)``."""
        i, flag, _ = cls._any(requests, status, False)
        return i, flag

    @classmethod
    def testany(cls, requests, status: Status | None = None):
        """Test for completion of any one request: ``(index, flag, object)``."""
        return cls._any(requests, status, False)

    @classmethod
    def _some(cls, requests, statuses, blocking: bool):
        """Return (indices, values) of Waitsome/Testsome.

        (None, None) when no request is active; the k-th status describes the k-th
        completed request."""
        requests = list(requests)
        ops = _ops(requests)
        if not any(_active(op) for op in ops):
            return None, None
        done = cls._ready_indices(ops)
        if not done:
            if blocking:
                label = (_many, "MPI_Waitsome", ops)
                current().wait_for(lambda: bool(cls._ready_indices(ops)), label)
            else:
                current().poll()
            done = cls._ready_indices(ops)
        statuses = _place_statuses(statuses, len(done))
        values = []
        failed = False
        for k, i in enumerate(done):
            fields, value = cls._consume(requests, ops, i)
            if statuses is not None and k < len(statuses):
                statuses[k]._fill(*fields)
            failed = failed or bool(fields[2])
            values.append(value)
        if failed:
            raise Exception(ERR_IN_STATUS)
        return done, values

    @classmethod
    def Waitsome(cls, requests, statuses=None) -> list[int] | None:
        """Wait for some requests to complete; return their indices."""
        return cls._some(requests, statuses, True)[0]

    @classmethod
    def waitsome(cls, requests, statuses=None):
        """Wait for some requests; return their indices and objects."""
        return cls._some(requests, statuses, True)

    @classmethod
    def Testsome(cls, requests, statuses=None) -> list[int] | None:
        """Test for completion of some requests; return their indices."""
        return cls._some(requests, statuses, False)[0]

    @classmethod
    def testsome(cls, requests, statuses=None):
        """Test for completion of some requests: ``(indices, objects)``."""
        return cls._some(requests, statuses, False)

    # MPI-4.1's nondestructive queries over many requests
    @classmethod
    def Get_status_any(cls, requests, status: Status | None = None) -> tuple[int, bool]:
        """Test for completion of any one request without freeing it."""
        ops = _ops(list(requests))
        if not any(_active(op) for op in ops):
            _fill(status, _EMPTY)
            return UNDEFINED, True
        done = cls._ready_indices(ops)
        if not done:
            current().poll()
            done = cls._ready_indices(ops)
            if not done:
                return UNDEFINED, False
        _fill(status, ops[done[0]].peek())
        return done[0], True

    get_status_any = Get_status_any

    @classmethod
    def Get_status_all(cls, requests, statuses=None) -> bool:
        """Test for completion of all the requests without freeing them."""
        ops = _ops(list(requests))
        if not cls._all_ready(ops):
            current().poll()
            if not cls._all_ready(ops):
                return False
        statuses = _place_statuses(statuses, len(ops))
        if statuses is not None:
            for st, op in zip(statuses, ops, strict=False):
                st._fill(*(_EMPTY if op is None else op.peek()))
        return True

    get_status_all = Get_status_all

    @classmethod
    def Get_status_some(cls, requests, statuses=None) -> list[int] | None:
        """Test for completion of some requests without freeing them."""
        ops = _ops(list(requests))
        if not any(_active(op) for op in ops):
            return None
        done = cls._ready_indices(ops)
        if not done:
            current().poll()
            done = cls._ready_indices(ops)
        statuses = _place_statuses(statuses, len(done))
        if statuses is not None:
            for st, i in zip(statuses, done, strict=False):
                st._fill(*ops[i].peek())
        return done

    get_status_some = Get_status_some

    def __repr__(self) -> str:
        op = self._op
        state = "null" if op is None else op.describe() or type(op).__name__
        return f"<pyopenib.MPI.{type(self).__name__} {state}>"


class Prequest(Request):
    """Persistent request handler.

    ``Start`` begins one more transfer with the same arguments; a partitioned one also
    takes ``Pready``/``Parrived``."""

    __slots__ = ()

    @classmethod
    def _check_kind(cls, op) -> None:
        if op is not None and not op.persistent:
            raise TypeError("Cannot convert mpi4py.MPI.Request to mpi4py.MPI.Prequest")

    def Start(self) -> None:
        """Start a communication with the persistent request."""
        op = self._op
        if op is None or not op.persistent:
            raise Exception(ERR_REQUEST)
        op.begin()

    @classmethod
    def Startall(cls, requests) -> None:
        """Start a communication with each of the persistent requests."""
        for r in list(requests):
            if not isinstance(r, Request):
                raise TypeError(f"Cannot convert {type(r).__name__} to mpi4py.MPI.Prequest")
            Prequest.Start(r)

    def _partitioned(self):
        op = self._op
        if op is None or not op.partitioned:
            raise Exception(ERR_REQUEST)
        return op

    def Pready(self, partition: int) -> None:
        """Mark a partition ready to be sent."""
        self._partitioned().pready([int(partition)])

    def Pready_range(self, partition_low: int, partition_high: int) -> None:
        """Mark a range of partitions ready to be sent."""
        self._partitioned().pready(range(int(partition_low), int(partition_high) + 1))

    def Pready_list(self, partitions) -> None:
        """Mark a list of partitions ready to be sent."""
        self._partitioned().pready([int(p) for p in partitions])

    def Parrived(self, partition: int) -> bool:
        """Test whether a partition has arrived."""
        return self._partitioned().parrived(int(partition))


def persistent(start, label="") -> Prequest:
    """A ``Prequest`` whose every ``Start`` calls ``start()`` for the transfer's operation."""
    return Prequest._of(_PersistentOperation(start, label))


class Grequest(Request):
    """A generalized request: the program completes it with ``Complete``."""

    __slots__ = ()

    @classmethod
    def _check_kind(cls, op) -> None:
        if op is not None and not isinstance(op, _GeneralizedOperation):
            raise TypeError("Cannot convert mpi4py.MPI.Request to mpi4py.MPI.Grequest")

    @classmethod
    def Start(cls, query_fn=None, free_fn=None, cancel_fn=None, args=None, kwargs=None):
        """Create and return a generalized request."""
        return cls._of(_GeneralizedOperation(query_fn, free_fn, cancel_fn, args, kwargs))

    def Complete(self) -> None:
        """Notify that the generalized request has completed."""
        op = self._op
        if op is None:
            raise Exception(ERR_REQUEST)
        op.done = True

    def complete(self, obj=None) -> None:
        """Complete the generalized request with a Python object."""
        op = self._op
        if op is not None:
            op.value = obj
        self.Complete()


REQUEST_NULL = Request()
"""The predefined null request (it pickles by name, so it unpickles to itself)."""


def _many(call: str, ops) -> str:
    labels = [op.describe() for op in ops if op is not None and not op.ready()]
    return f"{call}({len(ops)} requests: {'; '.join(labels)})"
