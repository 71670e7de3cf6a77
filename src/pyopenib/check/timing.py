"""Timing modes: which durations a search may give a choice point (``--timing``).

* ``NOMINAL``: every duration at its nominal value; the only freedom is the order of
  same-instant events of different objects (``sim.tie``).
* ``BOUNDS``: a duration anywhere in its device interval ``[lo, hi]``. The protocol sees
  only the *order* of events, so the search needs one value per distinct order, not one
  per picosecond: the interval is cut at the instants of the events pending when the
  duration is drawn, and each piece (and each cut instant, where the tie decides) gets one
  representative value. A piece that gives the same order as the nominal value is not an
  alternative at all. Interior values are tried exactly where they change an order.
* ``UNTIMED``: hardware durations (``nic.*``, ``wire.*``) are free — any positive length;
  the pieces run from one picosecond to past the last pending event. What still orders
  events is what the hardware guarantees, and the device models enforce it whatever the
  durations: doorbells of a QP in ring order (``last_doorbell``), one FIFO per work queue
  (T3's shared SQ/RQ; a split device's separate engines), a link and a switch port in
  FIFO order, completions in order per QP and side, a completion after its work request,
  causality. Host durations (``host.*``, ``sm.*``) keep their interval: program order and
  CPU cost are the host's, not the hardware's.

The cut is against events *pending* when the duration is drawn; an event scheduled later
may fall between two values of one piece. That is the precise sense of "every order" here.
Only pending events that may depend on the duration's event cut (``relevant``): the
explorer passes its dependence relation (``check/footprint.py``), so a doorbell's pieces
are cut by its own host's events, not by the far NIC's.
"""

from __future__ import annotations

from bisect import bisect_left
from enum import Enum

__all__ = ["Timing", "UNTIMED_PREFIXES", "duration_choices"]

UNTIMED_PREFIXES = ("nic.", "wire.")
"""Labels of the hardware durations ``UNTIMED`` frees."""

_NOT_DURATIONS = frozenset({"wire.loss"})
"""Labels drawn through ``duration`` that are not durations (a loss draw)."""


class Timing(Enum):
    NOMINAL = "nominal"
    BOUNDS = "bounds"
    UNTIMED = "untimed"


def duration_choices(
    timing: Timing, sim, label: str, lo: int, nominal: int, hi: int, relevant=None
):
    """The values worth trying for one duration, nominal first (see the module doc).
    ``relevant(entry)``: the pending events whose order against this duration's event can
    matter (the dependent ones); None: all of them."""
    if timing is Timing.NOMINAL or label in _NOT_DURATIONS:
        return (nominal,)
    now = sim.now
    if timing is Timing.UNTIMED and label.startswith(UNTIMED_PREFIXES):
        lo = min(lo, 1)
        last = max((entry[0] for entry in sim.pending()), default=None)
        if last is not None:
            hi = max(hi, last - now + 1)
    if lo == hi:
        return (nominal,)
    first, end = now + lo, now + hi
    window = [e for e in sim.pending() if first <= e[0] <= end]
    if relevant is not None and window:
        window = [e for e in window if relevant(e)]
    if not window:
        return (nominal,)
    cuts = sorted({e[0] for e in window})

    def piece(value: int) -> tuple[int, bool]:
        at = now + value
        i = bisect_left(cuts, at)
        return (i, i < len(cuts) and cuts[i] == at)

    candidates = [lo]
    for t in cuts:
        candidates += (t - now, t - now + 1)
    candidates.append(hi)
    seen = {piece(nominal)}
    out = [nominal]
    for value in candidates:
        if lo <= value <= hi:
            p = piece(value)
            if p not in seen:
                seen.add(p)
                out.append(value)
    return tuple(out)
