"""Ending a last-level execution where it rejoins its parent's run.

A bounded timed search's last level (``check/search.py``) holds the executions that
deviate from their parent at one more choice point; past it they answer option 0 at
every choice point, which is what the parent answered there too. So once such an
execution's state at an instant equals its parent's state at that instant — the same
program positions, model state, and pending events at the same times
(``state_fingerprint(sim, ..., at)``) — the rest of it *is* the rest of the parent's run:
the same events in the same order, to the same outcome. It ends there, *rejoined*: its
outcome is the parent's, and its class (``SearchOracle.signature``) is computed from its
own trace up to that instant followed by the parent's from it. Nothing about the rest is
assumed; it is the parent's rest because it starts from the same state under the same
answers. Most deviations are absorbed within microseconds of simulated time (a doorbell
a little later, a tie the other way round), so most of the last level stops early.

The parent records a checkpoint at each multiple of ``CHECKPOINT_PS`` its run crosses,
after the last event before it (``Recorder``): a cheap key (the pending events'
times and callbacks and the trace's length) and the timed fingerprint. A leaf looks at
the same instants once past its deviation (``Watch``): the cheap key first, the
fingerprint only where the keys agree, and at most ``MAX_COMPARISONS`` fingerprints, so
a leaf that keeps its difference costs a few comparisons and runs to its end. The limits
bound what the search spends looking, never what it concludes.

What the comparison relies on is the fingerprint's declarations (``check/fingerprint.py``):
everything that can change the future is walked; a run's trace ids are walked too here,
since the rest of the trace is taken from the parent. It is used only for runs that say
their whole state is reachable from the simulator (``rejoinable``: a scenario, not a
user's program, whose module globals the fingerprint does not walk).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ..sim import PS_PER_US
from .channels import channel_of, is_timeout
from .fingerprint import state_fingerprint

__all__ = [
    "CHECKPOINT_PS",
    "MAX_COMPARISONS",
    "Recorder",
    "Reference",
    "Rejoined",
    "Watch",
    "rejoins",
]

CHECKPOINT_PS = 8 * PS_PER_US
"""Simulated time between two checkpoints of a parent's run. A fingerprint costs about as
much as 0.5 us of the simulation: every 8 us the recording adds a few per cent to one
run, and a leaf rejoins at most 8 us after it could have."""

MAX_COMPARISONS = 3
"""Fingerprints a leaf compares at most (where the cheap keys agree) before it gives up
looking and runs to its end."""


def rejoins(run) -> bool:
    """Whether the executions of ``run`` may end where they rejoin their parent: the run
    says its whole state is reachable from the simulator (``rejoinable``)."""
    return getattr(run, "rejoinable", False)


def _cheap_key(sim) -> bytes:
    pending = sorted((e[0], e[1], getattr(e[2], "__qualname__", "")) for e in sim.pending())
    order = [(when, name) for when, _, name in pending]
    tracer = sim.tracer
    key = (order, len(tracer.events) if tracer is not None else 0)
    return hashlib.blake2b(repr(key).encode(), digest_size=16).digest()


def _digest(sim, at: int) -> bytes:
    return state_fingerprint(sim, channel_of, is_timeout, at)[0]


def _checkpoint_before(when: int) -> int:
    """The last checkpoint instant before ``when``."""
    return (when - 1) // CHECKPOINT_PS * CHECKPOINT_PS


@dataclass
class Reference:
    """What a parent execution hands its children: its checkpoints (instant -> cheap key,
    fingerprint, trace length), its trace and its outcome."""

    checkpoints: dict[int, tuple[bytes, bytes, int]] = field(default_factory=dict)
    events: list = field(default_factory=list)
    ok: bool = True
    outcome: str = ""


class Recorder:
    """Records a ``Reference`` during the parent's run: ``after(sim)`` after every event,
    from the search oracle's observer (as ``Watch`` looks at a leaf's run)."""

    def __init__(self):
        self.reference = Reference()
        self._next = CHECKPOINT_PS
        """The next checkpoint instant not yet recorded."""

    def after(self, sim) -> None:
        when = sim.peek()
        if when is None or when <= self._next:
            return
        at = _checkpoint_before(when)
        tracer = sim.tracer
        self.reference.checkpoints[at] = (_cheap_key(sim), _digest(sim, at), len(tracer.events))
        self._next = at + CHECKPOINT_PS

    def finish(self, sim, ok: bool, outcome: str) -> Reference:
        ref = self.reference
        ref.events = list(sim.tracer.events) if sim is not None else []
        ref.ok, ref.outcome = ok, outcome
        return ref


class Rejoined(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised out of a leaf's run where it rejoined its parent (``Watch``). A
    ``BaseException`` so that no ``except Exception`` of the model swallows it."""


class Watch:
    """A leaf's watch over its run after its deviation (``sim.settle_nominal(watch)``):
    after every event it looks at the checkpoint the run is crossing, and raises
    ``Rejoined`` where the state is the parent's (``trace_index`` then says where the
    parent's trace takes over)."""

    def __init__(self, sim, reference: Reference):
        self.sim = sim
        self.reference = reference
        self.first = sim.now
        """Checkpoints before the deviation's instant are not this run's to compare."""
        self._next = sim.now
        self.comparisons = 0
        self.rejoined_at: int | None = None
        self.trace_index = 0

    def __call__(self) -> None:
        when = self.sim.peek()
        if when is None or when <= self._next or self.comparisons >= MAX_COMPARISONS:
            return
        at = _checkpoint_before(when)
        self._next = at + CHECKPOINT_PS
        if at < self.first:
            return
        recorded = self.reference.checkpoints.get(at)
        if recorded is None or _cheap_key(self.sim) != recorded[0]:
            return
        self.comparisons += 1
        if _digest(self.sim, at) == recorded[1]:
            self.rejoined_at = at
            self.trace_index = recorded[2]
            raise Rejoined
