"""sim — the deterministic discrete-event kernel (integer picoseconds, greenlet processes,
choice points). The floor every other layer stands on; it imports none of them."""

from ._kernel import PS_PER_NS, PS_PER_S, PS_PER_US, Process, Simulator, Timer, make_simulator
from .choice import ChoiceRecord, NominalOracle, Oracle, RandomOracle, ScriptedOracle
from .events import Event
from .trace import Tracer

__all__ = [
    "Simulator",
    "Process",
    "Timer",
    "Event",
    "Tracer",
    "Oracle",
    "NominalOracle",
    "RandomOracle",
    "ScriptedOracle",
    "ChoiceRecord",
    "make_simulator",
    "PS_PER_NS",
    "PS_PER_US",
    "PS_PER_S",
]
