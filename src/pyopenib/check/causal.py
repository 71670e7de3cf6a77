"""Whether moving one event in time can reorder dependent events: the causal future of a
duration, followed through the run that drew it.

A duration of ``bounds`` timing moves the event it schedules *and everything that event
causes*: the events it schedules (transitively), the later members of an ordered channel
it belongs to (a QP's doorbells are clamped behind each other, ``last_doorbell``), and the
events whose own schedule reads a clock it wrote (the PCIe bus's free time, a QP's last
CQE time, a switch port's busy time). The device models compute every time from ``now``,
constants and such clocks with ``+`` and ``max``, so a move of ``delta`` moves each event
of that future by an amount between 0 and ``delta``; nothing outside it moves (local-time
reasoning, after Bengtsson, Jonsson, Lilius and Yi, "Partial order reductions for timed
systems", CONCUR 1998: events of independent parts keep their own clocks).

An alternative value of a duration is *worth an execution* only if some moved event can
pass, or tie with, a dependent event (their footprints meet, ``check/footprint.py``) that
is neither its cause nor its effect nor ordered with it by a channel, or if a moved clock
reaches a *decision* that compares clocks with ``now`` (the transmit port's arbiter serving
packets whose payload has crossed). Otherwise every pair of dependent events keeps its
order: the alternative's execution is the run that drew it with some independent events
shifted in time, the same execution class (same per-actor event order; the trace's actors
are part of each footprint here) and the same verdict. ``reorders`` is that test, computed
from the drawing run alone.

The claim is for a *leaf* of the bounded search (its children are not explored): an
execution equivalent to its parent adds no class, but its own deviations would start from
other times, so the search prunes only at its last level (``check/search.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .footprint import ANY

__all__ = ["Move", "RunLog", "reorders"]


@dataclass(slots=True)
class LoggedStep:
    """One executed event of the drawing run, as the analysis needs it."""

    when: int
    seq: int
    fp: frozenset
    """What it touches, with the trace actors it wrote to (``("actor", name)``)."""
    first_child: int
    """Heap sequence numbers it scheduled: ``first_child < seq <= last_child``."""
    last_child: int
    channel: object
    """The ordered channel it belongs to (``Footprints.ordered_channel``) or None."""
    clocks_read: tuple
    """The clock keys its state carries (``Footprints.clocks``), read or written."""
    clocks_before: dict
    """Those clocks' values before it ran."""
    clocks_after: dict
    """Those clocks' values after it ran."""
    decisions: tuple
    """The instants it compares with ``now`` to choose what happens (the transmit
    arbiter's packet readiness and wake-up), before and after it ran."""
    parent: int = -1
    """Index of the step that scheduled it (-1: before the log began)."""


@dataclass(slots=True)
class Move:
    """A duration choice point of the drawing run: the step that drew it, and where the
    heap's sequence stood then (what the step schedules after the draw moves with it)."""

    trail_index: int
    step: int
    """Index of the drawing step in the ``RunLog``."""
    scheduled: int
    """``sim.scheduled`` at the draw: the step's children above it are moved."""
    first_only: bool = False
    """Only the first child after the draw is moved: a duration a host's post draws (a
    doorbell) times the one event the post schedules; the rank's later schedules in the
    same step do not depend on it. A NIC step's later schedules all do."""


@dataclass
class RunLog:
    """Every executed step of one run, in execution order."""

    steps: list[LoggedStep] = field(default_factory=list)
    by_seq: dict[int, int] = field(default_factory=dict)

    def add(self, step: LoggedStep) -> None:
        index = len(self.steps)
        parent = self._scheduler_of(step.seq)
        step.parent = parent
        self.by_seq[step.seq] = index
        self.steps.append(step)

    def _scheduler_of(self, seq: int) -> int:
        """The step whose run scheduled entry ``seq``: the latest step whose child range
        holds it (steps run in order; each one's children are a contiguous range)."""
        steps = self.steps
        lo, hi = 0, len(steps) - 1
        while lo <= hi:  # the first step whose last_child >= seq
            mid = (lo + hi) // 2
            if steps[mid].last_child >= seq:
                hi = mid - 1
            else:
                lo = mid + 1
        if lo < len(steps) and steps[lo].first_child < seq <= steps[lo].last_child:
            return lo
        return -1

    def children(self, index: int):
        s = self.steps[index]
        by_seq = self.by_seq
        for seq in range(s.first_child + 1, s.last_child + 1):
            child = by_seq.get(seq)
            if child is not None:
                yield child


def _conflict(a: frozenset, b: frozenset) -> bool:
    return not a.isdisjoint(b) or ANY in a or ANY in b


def _related(steps: list[LoggedStep], a: int, b: int) -> bool:
    """Whether one of the steps ``a < b`` scheduled the other (transitively): cause and
    effect, whose order no timing changes."""
    floor = steps[a].when
    p = steps[b].parent
    while p >= a:
        if p == a:
            return True
        if steps[p].when < floor:
            return False
        p = steps[p].parent
    return False


def reorders(log: RunLog, move: Move, delta: int) -> bool:
    """Whether moving ``move``'s event by ``delta`` picoseconds (and its causal future
    by between 0 and ``delta``) can change the order of two dependent events, or a clock
    decision (see the module docstring). True when unsure."""
    steps = log.steps
    origin = move.step
    if delta == 0:
        return False
    if origin >= len(steps):
        return True  # the run ended inside the drawing step: nothing is known
    reach = abs(delta)
    ahead = delta if delta > 0 else 0
    moved = set()
    horizon = steps[origin].when
    for k in log.children(origin):
        if steps[k].seq > move.scheduled:
            moved.add(k)
            horizon = max(horizon, steps[k].when + reach)
            if move.first_only:
                break
    drawn = steps[origin]  # the clocks the drawing step wrote may carry the value too
    tainted: dict = {}
    if not move.first_only:
        _taint(tainted, drawn)
    moved_times: list[tuple] = []  # decision instants a moved step left behind
    if drawn.decisions and not move.first_only:
        moved_times.append(drawn.decisions)
    n = len(steps)
    start = origin + 1
    for i in range(start, n):
        s = steps[i]
        if i not in moved and s.when > horizon and not tainted and not moved_times:
            return False  # the future has been absorbed: nothing moves any more
        if i in moved:
            if _window_conflict(steps, i, delta):
                return True
            if _decides_near(s.decisions, s.when, reach):
                return True
            follow = list(log.children(i))
            if s.channel is not None:
                limit = s.when + ahead
                for k in range(i + 1, n):
                    if steps[k].when > limit:
                        break
                    if steps[k].channel == s.channel:
                        follow.append(k)
            for k in follow:
                moved.add(k)
                if steps[k].when + reach > horizon:
                    horizon = steps[k].when + reach
            _taint(tainted, s)
            if s.decisions:
                moved_times.append(s.decisions)
            continue
        if ANY in s.fp and (tainted or moved_times):
            return True
        if s.decisions and any(_decides_near(t, s.when, reach) for t in moved_times):
            return True
        hit = [key for key in s.clocks_read if key in tainted]
        affected = any(tainted[key] + reach >= s.when for key in hit)
        if affected:
            for k in log.children(i):
                moved.add(k)
                if steps[k].when + reach > horizon:
                    horizon = steps[k].when + reach
            _taint(tainted, s)
        else:
            for key in hit:  # an unaffected write is the same in both runs
                del tainted[key]
        for key in [key for key, v in tainted.items() if v + reach < s.when]:
            del tainted[key]  # a clock in the past decides nothing any more
        if moved_times and s.when > max(max(t) for t in moved_times) + reach:
            moved_times.clear()
    return False


def _taint(tainted: dict, s: LoggedStep) -> None:
    """The clocks a moved or affected step may have written with a moved value: those it
    changed, and those still ahead of it, which a clamped write leaves unchanged here but
    may move in the other run. A clock already behind it was not written."""
    before = s.clocks_before
    for key, value in s.clocks_after.items():
        if value != before.get(key) or value >= s.when:
            tainted[key] = value


def _window_conflict(steps: list[LoggedStep], i: int, delta: int) -> bool:
    """Whether moved step ``i`` may pass or tie with a dependent step: one it is not
    causally or channel-ordered with, within ``delta`` of it in the direction it moves
    (ties at its own instant count either way)."""
    s = steps[i]
    t = s.when
    if delta > 0:
        k = i - 1
        while k >= 0 and steps[k].when == t:  # same instant, run before it
            if _dependent(steps, k, i):
                return True
            k -= 1
        limit = t + delta
        for k in range(i + 1, len(steps)):
            if steps[k].when > limit:
                break
            if _dependent(steps, i, k):
                return True
        return False
    limit = t + delta
    k = i - 1
    while k >= 0 and steps[k].when >= limit:
        if _dependent(steps, k, i):
            return True
        k -= 1
    for k in range(i + 1, len(steps)):
        if steps[k].when != t:
            break
        if _dependent(steps, i, k):
            return True
    return False


def _dependent(steps: list[LoggedStep], a: int, b: int) -> bool:
    """Steps ``a < b`` race: their footprints meet and neither order is forced."""
    sa, sb = steps[a], steps[b]
    if not _conflict(sa.fp, sb.fp):
        return False
    if sa.channel is not None and sa.channel == sb.channel:
        return False
    return not _related(steps, a, b)


def _decides_near(times: tuple, now: int, reach: int) -> bool:
    """Whether a decision at ``now`` compares an instant that a move of at most ``reach``
    (of the instant, or of the deciding step) can carry across ``now``."""
    return any(now - reach <= t <= now + reach for t in times)
