"""Untimed execution: the kernel as a scheduler of enabled transitions, without a clock.

In untimed mode the hardware's durations are abstract: any order of events that the
hardware's ordering rules allow may happen. Rather than drawing durations and cutting
them against pending events (which can never enumerate *every* order), this loop drops
time as the thing that orders events. Each pending event belongs to a *channel* (the
object it is about: a QP for a NIC callback about one QP, the NIC for a packet arriving
on its link, a rank's greenlet for its next step) and the events of one channel run in
the order the model issued them (``seq``). That order *is* the hardware's FIFO rule (the
device models keep the same order in their timestamps whatever the durations): a QP's
doorbells reach the NIC in ring order (``last_doorbell``), T3's single SQ/RQ work queue
and a split device's separate engines are FIFOs, a link and a switch port deliver in
order (per RC QP in order), a NIC's DMA writes into host memory (payloads, completions)
are PCIe posted writes, in order. Causality needs no rule: an event exists only once
the event that causes it ran (a packet arrives after it left, a completion after its
work request).

So the *enabled* transitions of a state are the head of each channel. Every step a
``picker(sim, enabled) -> index`` chooses one (``enabled`` is sorted by ``(when, seq)``,
so index 0 is the earliest by the model's clock: answering 0 everywhere is the plain
run wherever the plain run keeps the channels' issue order). Each event runs at the
instant the model scheduled it for (``sim.now`` is the event's own time, so it may step
back when the picker runs an earlier event after a later one): what an event does
depends on the state the events applied before it left, never on *when* they were
applied, so two independent events reach the same state, timestamps included, in either
order. That exact commutation is what lets a search prune orders (``check/untimed.py``).
Timeouts (an RNR back-off, a withdrawable ``Timer``) are far longer than any hardware or
host step: they fire only when nothing else is pending, the earliest first
(``is_timeout``; the usual "timeouts only at quiescence" abstraction).

A plain run never takes this loop; an oracle opts in by carrying an ``UntimedControl`` in
its ``ties`` attribute, exactly like ``TieControl`` (``sim/ties.py``).
"""

from __future__ import annotations

from heapq import heapify

from ._kernel import Timer
from .ties import receiver_of

__all__ = ["UntimedControl", "enabled_heads"]


def enabled_heads(heap, channel_of, is_timeout):
    """The enabled transitions of a state: per channel its first pending entry in issue
    (``seq``) order, timeouts left out unless nothing else is pending (then the
    earliest timeout alone). Returns ``(entries, channels)`` sorted by ``(when, seq)``;
    withdrawn timers must be gone from ``heap``."""
    heads: dict = {}
    timeout = None
    for entry in heap:
        fn, args = entry[2], entry[3]
        if is_timeout(fn, args):
            if timeout is None or entry[:2] < timeout[:2]:
                timeout = entry
            continue
        channel = channel_of(fn, args)
        held = heads.get(channel)
        if held is None or entry[1] < held[1]:
            heads[channel] = entry
    if not heads:
        if timeout is None:
            return [], []
        return [timeout], [channel_of(timeout[2], timeout[3])]
    pairs = sorted(heads.items(), key=lambda p: p[1][:2])
    return [p[1] for p in pairs], [p[0] for p in pairs]


def _is_timer(fn, args) -> bool:
    return fn.__class__ is Timer


class UntimedControl:
    """The scheduler loop (see the module docstring). ``picker(sim, entries, channels)``
    returns the index of the enabled entry to run (called at every step, also with one
    entry: a search may have that one asleep); ``channel_of(fn, args)`` names an event's
    channel, ``is_timeout(fn, args)`` says whether it waits for quiescence; ``observer``
    (optional) gets ``before(sim, entry, channel)`` and ``after(sim)`` around a step, and
    ``ended(sim)`` when ``after_event`` ended the run after the step just run or the step
    ended it by raising (``after`` then never called for it): a search must know which
    step left the pending events unrun."""

    def __init__(self, picker, channel_of=receiver_of, is_timeout=_is_timer, observer=None):
        self.picker = picker
        self.channel_of = channel_of
        self.is_timeout = is_timeout
        self.observer = observer
        self.sim = None
        self.steps = 0
        """Events run under this control."""

    def bind(self, sim) -> None:
        self.sim = sim
        if self.observer is not None:
            self.observer.bind(sim)

    def run(self, sim, heap, until, max_events, after_event=None) -> None:
        """Execute steps as ``Simulator.run`` does (``until``: no event due after it runs;
        ``max_events``: at most that many; ``after_event``: after each, True ends the
        run), the picker choosing each. An event runs at
        the instant it was scheduled for, whatever ran before it: the clock is the
        event's own, so two independent events give the same state in either order."""
        channel_of = self.channel_of
        is_timeout = self.is_timeout
        observer = self.observer
        picker = self.picker
        limit = until if until is not None else 1 << 126
        left = -1 if max_events is None else max_events
        while left:
            live = [e for e in heap if not (e[2].__class__ is Timer and e[2].cancelled)]
            if len(live) != len(heap):
                sim.timers_withdrawn += len(heap) - len(live)
                heap[:] = live
                heapify(heap)
            entries, channels = enabled_heads(heap, channel_of, is_timeout)
            if not entries:
                break
            pick = picker(sim, entries, channels)
            chosen = entries[pick]
            if chosen[0] > limit:
                break
            heap.remove(chosen)
            heapify(heap)
            left -= 1
            self.steps += 1
            sim.now = chosen[0]
            if observer is not None:
                observer.before(sim, chosen, channels[pick])
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
        if until is not None and not heap:
            sim.now = max(sim.now, until)
