"""Choice points: the only source of nondeterminism in a simulation.

Every decision real hardware leaves open (a duration inside a device's interval, which of
two racing operations a NIC serves first) is asked of an *oracle*. The nominal oracle
always answers the first option (index 0 = the nominal value), the random oracle draws
from a seeded generator, and the scripted oracle replays a recorded list of answers and
records every choice point it saw with the number of alternatives — which is exactly
what an exhaustive explorer needs to enumerate all executions (see ``check/``).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

__all__ = ["Oracle", "NominalOracle", "RandomOracle", "ScriptedOracle", "ChoiceRecord"]


def duration_options(lo: int, nominal: int, hi: int) -> tuple[int, ...]:
    """The discrete alternatives of a duration for enumeration: nominal first, then the ends."""
    if not lo <= nominal <= hi:
        raise ValueError(f"duration interval not ordered: lo={lo} nominal={nominal} hi={hi}")
    opts = [nominal]
    for v in (lo, hi):
        if v not in opts:
            opts.append(v)
    return tuple(opts)


class Oracle:
    """Answers choice points. Subclasses override ``choose``; ``duration`` maps onto it.

    ``ties``: a ``TieControl`` when same-instant events of different objects are choice
    points too (an explorer's oracle); ``None`` keeps the kernel's scheduling order and
    its fast loop.

    ``branching``: see the attribute.

    ``plain``: the oracle only answers choice points and observes nothing else of the
    run (no tie control, no trail, no window over pending events), so the kernel may run
    exact fast paths that change how many heap entries a run takes but not what runs,
    when, or which choice points are asked (``Simulator`` folds sleeps). False for any
    other oracle, an explorer's included, unless it declares otherwise."""

    ties = None
    plain = False
    branching = None
    """The labels whose durations this oracle may answer with another value than the
    nominal one (None: any label). The simulator answers a duration of any other label
    itself, without calling the oracle: an explorer branches on a few labels and a run
    draws thousands of durations of the others."""

    def bind(self, sim) -> None:
        """Called when simulator ``sim`` takes this oracle (before its first event)."""

    def choose(self, label: str, n: int) -> int:
        raise NotImplementedError

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        opts = duration_options(lo, nominal, hi)
        return opts[self.choose(label, len(opts))] if len(opts) > 1 else nominal


class NominalOracle(Oracle):
    """Always the nominal option: the reference timing of every device model."""

    plain = True

    def choose(self, label: str, n: int) -> int:
        return 0

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        return nominal


class RandomOracle(Oracle):
    """Seeded random answers; durations are centred on the nominal value.

    A duration is drawn from the split triangular distribution over ``[lo, hi]`` whose
    mode *and* median are ``nominal``: half the draws fall in ``[lo, nominal]`` with a
    density rising linearly to the nominal value, half in ``[nominal, hi]`` falling
    linearly from it. Device intervals are skewed (a slow tail longer than the fast
    one), so a uniform draw, or a plain triangular one, would put the typical random
    run above the nominal one; this keeps ``nominal`` what a random run typically
    shows, with both ends reachable."""

    plain = True

    def __init__(self, seed: int):
        self.seed = seed
        self._rng = random.Random(seed)

    def choose(self, label: str, n: int) -> int:
        return self._rng.randrange(n)

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        u = self._rng.random()
        if u < 0.5:  # lower half: P(X <= x) = ((x - lo) / (nominal - lo))^2 / 2
            return lo + round((nominal - lo) * math.sqrt(2.0 * u))
        return hi - round((hi - nominal) * math.sqrt(2.0 * (1.0 - u)))


@dataclass(frozen=True, slots=True)
class ChoiceRecord:
    label: str
    options: int
    chosen: int


class ScriptedOracle(Oracle):
    """Replays ``script`` (a list of option indices), then answers 0 (nominal).

    ``trail`` lists every choice point met, in order, with how many alternatives it had
    and what was chosen: the explorer backtracks over it.
    """

    def __init__(self, script=()):
        self.script = list(script)
        self.trail: list[ChoiceRecord] = []

    def choose(self, label: str, n: int) -> int:
        i = len(self.trail)
        pick = self.script[i] if i < len(self.script) else 0
        if pick >= n:
            raise ValueError(
                f"scripted choice #{i} ({label}) asks option {pick} of only {n}: "
                "the replayed model diverged from the recorded one"
            )
        self.trail.append(ChoiceRecord(label, n, pick))
        return pick

    @property
    def choices(self) -> list[int]:
        return [r.chosen for r in self.trail]
