"""The tracer: one object through which every layer emits small structured events.

Emitting code is written ``tr = sim.tracer`` / ``if tr is not None: tr.emit(...)`` so a run
without tracing pays one attribute check. An event is a tuple
``(time_ps, layer, kind, actor, fields)`` where ``fields`` is a tuple of ``(name, value)``
pairs with plain values (ints, strings) — exporters in ``report/`` turn them into JSON
lines, Perfetto traces and sequence diagrams. Every kind is declared in ``schema``;
``ValidatingTracer`` checks each event against it as it is emitted (tests, debugging),
so the plain tracer pays nothing for the schema.
"""

from __future__ import annotations

import hashlib

from .schema import validate

__all__ = ["Tracer", "TraceEvent", "ValidatingTracer"]

TraceEvent = tuple  # (time_ps, layer, kind, actor, ((name, value), ...))


class Tracer:
    def __init__(self, sim=None, layers: frozenset[str] | None = None):
        self.sim = sim
        self.events: list[TraceEvent] = []
        self.layers = layers

    def bind(self, sim) -> None:
        self.sim = sim

    def emit(self, layer: str, kind: str, actor: str, **fields) -> None:
        if self.layers is not None and layer not in self.layers:
            return
        self.events.append((self.sim.now, layer, kind, actor, tuple(fields.items())))

    def digest(self) -> str:
        """A hash of the whole trace: equal digests mean byte-identical traces."""
        h = hashlib.sha256()
        for ev in self.events:
            h.update(repr(ev).encode())
        return h.hexdigest()

    def __len__(self) -> int:
        return len(self.events)


class ValidatingTracer(Tracer):
    """A tracer that checks every event against ``schema`` when it is emitted: an emitter
    that drifts from the declaration fails at the line that emitted it."""

    def emit(self, layer: str, kind: str, actor: str, **fields) -> None:
        if self.layers is not None and layer not in self.layers:
            return
        event = (self.sim.now, layer, kind, actor, tuple(fields.items()))
        validate(event)
        self.events.append(event)
