"""One-shot events: a value plus callbacks, triggered at most once.

Hardware and protocol code use callbacks (no greenlet per packet); processes block on an
event with ``Simulator.wait``. Callbacks run synchronously inside ``succeed`` at the
current simulated time, in registration order, which keeps runs deterministic.
"""

from __future__ import annotations

__all__ = ["Event"]

_PENDING = object()


class Event:
    __slots__ = ("sim", "callbacks", "_value")

    def __init__(self, sim):
        self.sim = sim
        self.callbacks: list = []
        self._value = _PENDING

    @property
    def triggered(self) -> bool:
        return self._value is not _PENDING

    @property
    def value(self):
        if self._value is _PENDING:
            raise RuntimeError("event has not triggered yet")
        return self._value

    def succeed(self, value=None) -> None:
        if self._value is not _PENDING:
            raise RuntimeError("event triggered twice")
        self._value = value
        callbacks, self.callbacks = self.callbacks, []
        for cb in callbacks:
            cb(value)
