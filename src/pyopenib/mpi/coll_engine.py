"""How a collective runs: a *schedule* (a generator of rounds) over point-to-point.

Every collective algorithm (``collectives``, ``coll_inter``) is a generator: it starts the
sends and receives of one round on a ``Channel`` and yields them; it resumes when all of
them are complete; its return value is the collective's result. One algorithm then serves
the three ways MPI calls a collective:

* blocking (``run``): drive the rank's progress until each round completes;
* nonblocking (``start``): a ``Schedule`` advances as far as it can at once, then on every
  progress pass of the rank's PML (``Pml.register_progress``, as libnbc's schedules are
  progressed by ``opal_progress``), so it moves on while the rank waits in any MPI call;
* persistent (``*_init``): each ``Start`` starts a fresh schedule.

A ``Schedule`` quacks as a PML request (``complete``, ``cancelled``, ``label``), so the
rank's wait loop can block on it; ``CollOperation`` is the request ``Operation`` that
``MPI.Request``'s Wait/Test families complete like any other.

Collective traffic travels on the communicator's collective context id (never matched by
a user's receive) with a tag drawn from the communicator's collective sequence number: all
members call collectives in the same order, so two outstanding collectives on one
communicator never match each other's messages (libnbc's per-communicator tag counter).
"""

from __future__ import annotations

from ..pml import PmlRequest, describe
from .context import current
from .error_classes import Exception as MPIException
from .request import Operation
from .status import empty_fields

__all__ = ["Channel", "CollOperation", "Schedule", "run", "start"]

_EMPTY_STATUS = empty_fields()

_TAG_SPACE = 1 << 30


class Channel:
    """Point-to-point for one collective call: ``ranks`` are the world ranks the call's
    peers are numbered by (the remote group on an intercommunicator), ``rank`` the
    caller's rank in its own group (what its headers carry), ``ctx`` the context id and
    ``tag`` the call's tag. ``call`` labels it for deadlock reports (``pml.describe``)."""

    __slots__ = ("rc", "pml", "ranks", "rank", "size", "ctx", "tag", "call")

    def __init__(self, rc, ranks, rank: int, ctx: int, tag: int, call):
        self.rc = rc
        self.pml = rc.pml
        self.ranks = ranks
        self.rank = rank
        self.size = len(ranks)
        self.ctx = ctx
        self.tag = tag
        self.call = call

    @classmethod
    def of(cls, st, call, nonblocking: bool = False) -> Channel:
        """The channel of the next collective on communicator state ``st``. Nonblocking
        and persistent collectives count apart from blocking ones and take negative tags
        (below ``ANY_TAG``), as Open MPI's libnbc does next to coll/tuned: a rank may
        start ``Iallreduce`` and then ``Barrier`` while its peer calls ``Barrier`` first
        (mpi4py's ``Iagree`` fallback test does), and each still meets its own kind."""
        if nonblocking:
            seq = st.nbc_seq
            st.nbc_seq = seq + 1
            tag = -2 - seq % _TAG_SPACE
        else:
            seq = st.coll_seq
            st.coll_seq = seq + 1
            tag = seq % _TAG_SPACE
        return cls(st.rc, st.ranks, st.rank, st.coll_ctx, tag, (_label, call, st))

    def isend(self, data, dest: int):
        return self.pml.isend(
            data,
            self.ranks[dest],
            self.ctx,
            self.rank,
            self.tag,
            label=(_step_label, self.call, "send to", dest),
        )

    def irecv(self, source: int, buffer=None):
        """A receive from peer ``source``; ``buffer`` None lets the PML allocate it (the
        message is then ``req.data``)."""
        return self.pml.irecv(
            buffer, self.ctx, source, self.tag, (_step_label, self.call, "recv from", source)
        )


def _label(call: str, st) -> str:
    return f"{call}(comm={st.name or 'comm'})"


def _step_label(call, step: str, peer: int) -> str:
    return f"{describe(call)} {step} {peer}"


def run(ch: Channel, schedule):
    """Run ``schedule`` to its end, blocking the rank; returns its result."""
    wait = ch.rc.wait_request
    call = ch.call
    try:
        reqs = next(schedule)
        while True:
            for r in reqs:
                if not r.complete:
                    wait(r, call)
            reqs = schedule.send(None)
    except StopIteration as stop:
        return stop.value


class Schedule(PmlRequest):
    """A nonblocking collective in flight. ``value()`` is its result (or raises the MPI
    error it ended with) once ``complete``."""

    __slots__ = ("_gen", "_round", "_pml", "_error", "_value", "_busy")

    def __init__(self, pml, schedule, label):
        self.id = 0
        self.complete = False
        self.cancelled = False
        self.label = label
        self._gen = schedule
        self._round = ()
        self._pml = pml
        self._error = None
        self._value = None
        self._busy = False
        self._advance()
        if not self.complete:
            pml.register_progress(self._progress)

    def _advance(self) -> bool:
        """Run rounds while the current one is complete; True if anything moved."""
        if self._busy:  # a progress pass from inside one of our own steps
            return False
        self._busy = True
        moved = False
        try:
            while all(r.complete for r in self._round):
                moved = True
                try:
                    self._round = self._gen.send(None)
                except StopIteration as stop:
                    self._value = stop.value
                    self.complete = True
                    break
                except MPIException as exc:  # reported by Wait/Test, as MPI reports it
                    self._error = exc
                    self.complete = True
                    break
        finally:
            self._busy = False
        return moved

    def _progress(self) -> int:
        if not self._advance():
            return 0
        if self.complete:
            self._pml.unregister_progress(self._progress)
        return 1

    def value(self):
        if self._error is not None:
            raise self._error
        return self._value


def start(ch: Channel, schedule) -> CollOperation:
    """Start ``schedule`` as a nonblocking collective: the operation a request holds."""
    return CollOperation(Schedule(ch.pml, schedule, ch.call))


class CollOperation(Operation):
    """A nonblocking collective behind an ``MPI.Request``: complete when its schedule
    is; its status is the empty one (as Open MPI's libnbc requests report); an MPI error
    the schedule ended with is raised by the Wait/Test that completes it."""

    __slots__ = ("sched",)

    def __init__(self, sched: Schedule):
        self.sched = sched

    @property
    def label(self):
        return self.sched.label

    def ready(self) -> bool:
        return self.sched.complete

    def block(self) -> None:
        sched = self.sched
        if not sched.complete:
            current().wait_request(sched, sched.label)

    def take(self):
        return _EMPTY_STATUS, self.sched.value()

    def peek(self) -> tuple:
        return _EMPTY_STATUS
