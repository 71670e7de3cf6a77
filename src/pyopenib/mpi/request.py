"""``MPI.Request`` and ``MPI.Prequest`` over PML requests.

A request is *active* while it wraps a PML request; completing it (Wait/Test true) fills
the status, runs the finisher (unpickling for lowercase receives) and makes it inactive,
as MPI sets a completed request to ``MPI_REQUEST_NULL``.
"""

from __future__ import annotations

from ..pml import describe
from .context import current
from .errors import ERROR_CLASSES, Exception
from .status import ANY_SOURCE, ANY_TAG, PROC_NULL, Status

__all__ = ["Prequest", "Request", "completed_request", "finish_recv"]

ERR_TRUNCATE = ERROR_CLASSES["ERR_TRUNCATE"][0]
ERR_IN_STATUS = ERROR_CLASSES["ERR_IN_STATUS"][0]
ERR_REQUEST = ERROR_CLASSES["ERR_REQUEST"][0]


def _recv_status(preq):
    error = ERR_TRUNCATE if preq.truncated else 0
    return (preq.source, preq.tag, error, preq.count, preq.cancelled)


def _send_status(preq):
    return (ANY_SOURCE, ANY_TAG, 0, 0, preq.cancelled)


def finish_recv(preq, status: Status | None) -> None:
    """What Wait does with a completed receive, for the blocking calls that need no
    ``Request`` object: fill the status, raise ``ERR_TRUNCATE`` if the message was cut."""
    if status is not None:
        status._fill(preq.source, preq.tag, ERR_TRUNCATE if preq.truncated else 0, preq.count,
                     preq.cancelled)  # fmt: skip
    if preq.truncated:
        raise Exception(ERR_TRUNCATE)


class Request:
    """``finish(pml_request)`` returns the value lowercase ``wait()`` gives back; ``label``
    names the call for deadlock reports (see ``pml.describe``)."""

    __slots__ = ("_preq", "_kind", "_finish", "_label", "__weakref__")

    def __init__(self, preq=None, kind: str = "send", finish=None, label=""):
        self._preq = preq
        self._kind = kind
        self._finish = finish
        self._label = label

    # -- completion ---------------------------------------------------------------------
    def _ready(self) -> bool:
        p = self._preq
        return p is None or p.complete

    def _take(self, status: Status | None):
        """Consume a completed request: (error class, value); the request becomes null."""
        preq = self._preq
        if preq is None:
            if self._kind == "null-proc":
                if status is not None:
                    status._fill(PROC_NULL, ANY_TAG, 0, 0)
            elif status is not None:
                status._fill(ANY_SOURCE, ANY_TAG, 0, 0)
            return 0, None
        self._preq = None
        fields = _recv_status(preq) if self._kind == "recv" else _send_status(preq)
        if status is not None:
            status._fill(*fields)
        finish = self._finish
        value = finish(preq) if finish is not None and not preq.cancelled else None
        return fields[2], value

    def _wait(self) -> None:
        p = self._preq
        if p is not None and not p.complete:
            current().wait_request(p, self._label)

    def Wait(self, status: Status | None = None) -> bool:
        self._wait()
        err, _ = self._take(status)
        if err:
            raise Exception(err)
        return True

    def wait(self, status: Status | None = None):
        self._wait()
        err, value = self._take(status)
        if err:
            raise Exception(err)
        return value

    def Test(self, status: Status | None = None) -> bool:
        if not self._ready():
            current().poll()
            if not self._ready():
                return False
        err, _ = self._take(status)
        if err:
            raise Exception(err)
        return True

    def test(self, status: Status | None = None):
        if not self._ready():
            current().poll()
            if not self._ready():
                return False, None
        err, value = self._take(status)
        if err:
            raise Exception(err)
        return True, value

    def Get_status(self, status: Status | None = None) -> bool:
        if not self._ready():
            current().poll()
        return self._ready()

    def Cancel(self) -> None:
        if self._preq is not None:
            current().pml.cancel(self._preq)

    def Free(self) -> None:
        self._preq = None

    def __bool__(self) -> bool:
        return self._preq is not None

    # -- many requests ------------------------------------------------------------------
    @staticmethod
    def _all_ready(requests) -> bool:
        return all(r._ready() for r in requests)

    @staticmethod
    def _wait_each(requests) -> None:
        """Block until every request is complete: waiting for each in turn is waiting for
        all (progress completes any of them), without a closure polled after every event."""
        label = None
        for r in requests:
            p = r._preq
            if p is not None and not p.complete:
                if label is None:
                    rc = current()
                    label = (_many, "MPI_Waitall", requests)
                rc.wait_request(p, label)

    @classmethod
    def Waitall(cls, requests, statuses=None) -> bool:
        requests = list(requests)
        cls._wait_each(requests)
        failed = False
        for i, r in enumerate(requests):
            st = statuses[i] if statuses is not None and i < len(statuses) else None
            err, _ = r._take(st)
            failed = failed or bool(err)
        if failed:
            raise Exception(ERR_IN_STATUS)
        return True

    @classmethod
    def waitall(cls, requests, statuses=None) -> list:
        requests = list(requests)
        cls._wait_each(requests)
        values = []
        for i, r in enumerate(requests):
            st = statuses[i] if statuses is not None and i < len(statuses) else None
            err, value = r._take(st)
            if err:
                raise Exception(err)
            values.append(value)
        return values

    @staticmethod
    def _first_ready(requests) -> int | None:
        for i, r in enumerate(requests):
            if r._preq is not None and r._preq.complete:
                return i
        return None

    @classmethod
    def _waitany(cls, requests) -> int | None:
        requests = list(requests)
        if all(r._preq is None for r in requests):
            return None
        if cls._first_ready(requests) is None:
            current().wait_for(
                lambda: cls._first_ready(requests) is not None, (_many, "MPI_Waitany", requests)
            )
        return cls._first_ready(requests)

    @classmethod
    def Waitany(cls, requests, status: Status | None = None) -> int:
        requests = list(requests)
        i = cls._waitany(requests)
        if i is None:
            return -32766  # MPI_UNDEFINED: no active request
        err, _ = requests[i]._take(status)
        if err:
            raise Exception(err)
        return i

    @classmethod
    def waitany(cls, requests, status: Status | None = None):
        requests = list(requests)
        i = cls._waitany(requests)
        if i is None:
            return -32766, None
        err, value = requests[i]._take(status)
        if err:
            raise Exception(err)
        return i, value

    @classmethod
    def Testall(cls, requests, statuses=None) -> bool:
        requests = list(requests)
        if not cls._all_ready(requests):
            current().poll()
            if not cls._all_ready(requests):
                return False
        return cls.Waitall(requests, statuses)

    @classmethod
    def testall(cls, requests, statuses=None):
        requests = list(requests)
        if not cls._all_ready(requests):
            current().poll()
            if not cls._all_ready(requests):
                return False, None
        return True, cls.waitall(requests, statuses)

    @classmethod
    def Testany(cls, requests, status: Status | None = None) -> tuple[int, bool]:
        requests = list(requests)
        if cls._first_ready(requests) is None:
            current().poll()
        if all(r._preq is None for r in requests):
            return -32766, True
        i = cls._first_ready(requests)
        if i is None:
            return -32766, False
        err, _ = requests[i]._take(status)
        if err:
            raise Exception(err)
        return i, True

    def __repr__(self) -> str:
        state = "active" if self._preq is not None else "null"
        return f"<pyopenib.MPI.Request {describe(self._label) or self._kind} {state}>"


class Prequest(Request):
    """A persistent request: ``Start`` begins one more transfer with the same arguments."""

    __slots__ = ("_start",)

    def __init__(self, start, kind: str, finish=None, label=""):
        super().__init__(None, kind, finish, label)
        self._start = start

    def Start(self) -> None:
        if self._preq is not None:
            raise Exception(ERR_REQUEST)
        self._preq = self._start()

    @classmethod
    def Startall(cls, requests) -> None:
        for r in requests:
            r.Start()


def completed_request(kind: str = "null-proc") -> Request:
    """A request that is already complete (PROC_NULL transfers)."""
    return Request(None, kind)


def _many(call: str, requests) -> str:
    labels = [describe(r._label) for r in requests if r._preq is not None and not r._preq.complete]
    return f"{call}({len(requests)} requests: {'; '.join(labels)})"
