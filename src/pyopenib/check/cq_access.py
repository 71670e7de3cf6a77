"""Which completion queues a rank's step really read or wrote: the untimed search's
dynamic footprint of host software.

A rank's step is host code (the BTL's progress, the PML, the program); statically all
that is known of it is its host, so ``check/footprint.py`` makes it depend on every CQ
write of that host. But most steps never look at a CQ (they post receives, pack a
fragment, return credits): a CQE written before or after such a step gives the same
state. The untimed search learns what each step touched instead: while a rank's step
runs, the entries and notification list of every CQ on the known NICs record that they
were accessed, and the step's footprint names those CQs (``("cq", name)``) in place of the
coarse ``("cqs", host)`` that every CQ write carries.

Why recording from the QP's creation on is enough: a CQ receives a completion only
through a QP attached to it, and a QP is created by a host step (the rank's, or an
out-of-band connection message), which depends on every earlier step of that host (they
share ``("host", H)``). A step that touched the CQ before the QP existed is therefore
ordered before every completion of that CQ by the dependence itself.

Plain runs never build these objects: the recorder is installed by the untimed oracle,
and only in the run it steers.
"""

from __future__ import annotations

from collections import deque

__all__ = ["CqAccess", "RecordedEntries", "RecordedNotify"]


class RecordedEntries(deque):
    """A CQ's entries that note every access made while a host step runs."""

    __slots__ = ("access", "cq_name")

    def __init__(self, items, access: CqAccess, cq_name: str):
        super().__init__(items)
        self.access = access
        self.cq_name = cq_name

    def _touch(self) -> None:
        touched = self.access.touched
        if touched is not None:
            touched.add(self.cq_name)

    def __bool__(self) -> bool:
        self._touch()
        return deque.__len__(self) > 0

    def __len__(self) -> int:
        self._touch()
        return deque.__len__(self)

    def __iter__(self):
        self._touch()
        return deque.__iter__(self)

    def __getitem__(self, i):
        self._touch()
        return deque.__getitem__(self, i)

    def popleft(self):
        self._touch()
        return deque.popleft(self)

    def pop(self):
        self._touch()
        return deque.pop(self)

    def append(self, x) -> None:
        self._touch()
        deque.append(self, x)

    def appendleft(self, x) -> None:
        self._touch()
        deque.appendleft(self, x)

    def clear(self) -> None:
        self._touch()
        deque.clear(self)


class RecordedNotify(list):
    """A CQ's notification requests (``req_notify``), noting each access by a host step."""

    __slots__ = ("access", "cq_name")

    def __init__(self, items, access: CqAccess, cq_name: str):
        super().__init__(items)
        self.access = access
        self.cq_name = cq_name

    def append(self, x) -> None:
        touched = self.access.touched
        if touched is not None:
            touched.add(self.cq_name)
        list.append(self, x)


class CqAccess:
    """The recorder: ``watch(nics)`` before a host step (it instruments the CQs of their
    QPs not yet instrumented), ``begin()``, the step, then ``end()`` -> the names of the
    CQs the step touched."""

    def __init__(self):
        self.touched: set[str] | None = None
        """The CQs touched by the running host step; None while no host step runs."""
        self._seen: set[tuple[str, int]] = set()
        """The QPs looked at, as (NIC name, QPN): a NIC never reuses a QPN."""

    def watch(self, nics) -> None:
        seen = self._seen
        for nic in nics:
            for qp in nic.live_qps():
                key = (nic.name, qp.qpn)
                if key in seen:
                    continue
                seen.add(key)
                for cq in (qp.send_cq, qp.recv_cq):
                    if cq is not None and cq.entries.__class__ is not RecordedEntries:
                        name = cq.name
                        cq.entries = RecordedEntries(cq.entries, self, name)
                        cq._notify = RecordedNotify(cq._notify, self, name)

    def begin(self) -> None:
        self.touched = set()

    def end(self) -> set[str]:
        touched, self.touched = self.touched, None
        return touched or set()
