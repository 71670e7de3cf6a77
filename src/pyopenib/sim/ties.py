"""Same-instant ties as choice points: the event loop an explorer runs the kernel with.

A plain run executes the callbacks due at one instant in scheduling order (the kernel's
FIFO rule). Real hardware does not promise that order between *different* objects: two
QPs of one NIC, a NIC engine and a host poll, two NICs. ``TieControl`` makes that freedom
explicit. At each step it gathers the callbacks due at the earliest pending instant, keeps
the first one of each object (events of one object keep their program order), and when
more than one object is ready it asks the oracle ``choose("sim.tie", n)``. Option 0 is the
callback a plain run would execute next, so answering 0 everywhere reproduces the plain run
event for event: traces and digests are those of the fast loop.

An oracle opts in by carrying a ``TieControl`` in its ``ties`` attribute; the simulator then
runs this loop instead of its own. The loop is slower (it re-gathers the instant at every
step), which is why a plain run never takes it.

``object_of(fn, args)`` names the object an event belongs to; the default is the receiver
of a bound method (a greenlet for a process resumption, the NIC for a NIC callback, the CQ
for a completion write) and the function itself otherwise. Layers above may pass a finer
one (``check`` names the QP of a NIC callback). ``observer``, when given, sees every step
(``bind(sim)`` once, then ``before(sim, entry, obj, heads)`` and ``after(sim)`` around
each callback; ``heads`` lists the ready heap entries when the step was a tie, else None;
``withdrawn(sim, entry)`` for a withdrawn timer the loop drops unrun; ``ended(sim)`` when
``after_event`` ended the run after the step just run, or the step ended it by raising,
``after`` then never called for it): what an explorer needs to compute
which events raced. The kernel pops withdrawn timers nowhere else (``peek`` is a query),
so the observer sees every one the run passes.
"""

from __future__ import annotations

from heapq import heappop, heappush

from ._kernel import Timer

__all__ = ["TIE_LABEL", "TieControl", "callback_of", "receiver_of"]

TIE_LABEL = "sim.tie"
"""The label of a same-instant tie choice point."""


def callback_of(fn):
    """The function a heap entry calls: the entry's own, or a ``Timer``'s."""
    return fn.fn if fn.__class__ is Timer else fn


def receiver_of(fn, args):
    """The object an event belongs to: the receiver of a bound method (unwrapping a
    ``Timer``), or the function itself."""
    fn = callback_of(fn)
    return getattr(fn, "__self__", fn)


class TieControl:
    """The event loop with same-instant ties as choice points (see the module docstring)."""

    def __init__(self, object_of=receiver_of, observer=None):
        self.object_of = object_of
        self.observer = observer
        self.sim = None
        self.ties_met = 0
        """Tie choice points met (instants where more than one object was ready)."""

    def bind(self, sim) -> None:
        """Called when the simulator takes the oracle carrying this control: the
        observer may want the simulator before the first event (its tracer, its heap)."""
        self.sim = sim
        if self.observer is not None:
            self.observer.bind(sim)

    def run(self, sim, heap, until, max_events, after_event=None) -> int | None:
        """Execute events as ``Simulator.run`` does (same ``until``/``max_events``/
        ``after_event`` rules), asking ``sim.oracle`` at every tie. Returns None, or when
        ``sim.settle_nominal()`` released this control during the run, the events left
        of ``max_events`` (-1: no limit) for the plain loop to run."""
        pop = heappop
        push = heappush
        object_of = self.object_of
        observer = self.observer
        limit = until if until is not None else 1 << 126
        left = -1 if max_events is None else max_events
        while left and heap:
            top = heap[0]
            fn = top[2]
            if fn.__class__ is Timer and fn.cancelled:
                pop(heap)
                sim.timers_withdrawn += 1
                if observer is not None:
                    observer.withdrawn(sim, top)
                continue
            when = top[0]
            if when > limit:
                break
            group = [pop(heap)]
            while heap and heap[0][0] == when:
                group.append(pop(heap))
            heads = []
            objects = []
            for entry in group:  # in seq order: the heap orders (when, seq)
                fn = entry[2]
                if fn.__class__ is Timer and fn.cancelled:
                    continue  # withdrawn when it reaches the top, as in the plain loop
                obj = object_of(fn, entry[3])
                if not any(o is obj for o in objects):
                    objects.append(obj)
                    heads.append(entry)
            pick = 0
            if len(heads) > 1:
                self.ties_met += 1
                pick = sim.oracle.choose(TIE_LABEL, len(heads))
            chosen = heads[pick]
            for entry in group:
                if entry is not chosen:
                    push(heap, entry)  # same (when, seq): the rest keep their order
            left -= 1
            sim.now = when
            if observer is not None:
                observer.before(sim, chosen, objects[pick], heads if len(heads) > 1 else None)
                try:
                    chosen[2](*chosen[3])
                except BaseException:
                    observer.ended(sim)  # the step ended the run by raising out of it
                    raise
                observer.after(sim)
            else:
                chosen[2](*chosen[3])
            if after_event is not None and after_event():
                if observer is not None:
                    observer.ended(sim)
                break
            if sim.ties is not self:
                return left
        if until is not None and sim.now < until and (not heap or heap[0][0] > until):
            sim.now = until
        return None
