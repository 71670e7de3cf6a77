"""The stateful untimed search: state fingerprints declared per class, and pruning by
visited states with sleep sets reaching every final state full enumeration reaches."""

from __future__ import annotations

import sys

import pytest
from greenlet import getcurrent, greenlet
from hypothesis import given, settings
from model_runs import CHECK_QUEUES, t3_bibw
from toy_models import (
    Helper,
    StaggeredToyRun,
    ToyFootprints,
    Worker,
    models,
    no_timeouts,
    search_untimed,
)

from pyopenib.check import fingerprint
from pyopenib.check.fingerprint import Undeclared, declare, state_fingerprint
from pyopenib.check.untimed import StateCache, UntimedOracle, Visited, explore_untimed
from pyopenib.sim import Simulator
from pyopenib.sim.ties import receiver_of

declare(Worker)
declare(Helper)


@settings(max_examples=60, deadline=None)
@given(models(max_steps=3, max_total=6))
def test_stateful_search_reaches_every_final_state_full_enumeration_reaches(model):
    full, res_full = search_untimed(model, reduce=False)
    stateful, res = search_untimed(model, stateful=True)
    assert stateful == full
    assert res.executions <= res_full.executions


class _Setter(Worker):
    """Writes a constant: two setters of one register race (dependent) but both orders
    reach one state, which only a stateful search can see."""

    def write(self, var):
        self.regs[var] = 1


class _SetterRun(StaggeredToyRun):
    worker = _Setter


def test_converging_orders_are_pruned_as_visited():
    """Three writers of one value race on a register: 3! orders of the race, one state."""
    model = [[(0, None), (name, None)] for name in range(3)]
    _, stateless = search_untimed(model, _SetterRun)
    _, stateful = search_untimed(model, _SetterRun, stateful=True)
    assert stateful.matched > 0
    assert stateful.executions < stateless.executions


class _LoggedWorker(Worker):
    """A worker that notes its steps in a log the state leaves out (``declare``)."""

    def __init__(self, name, steps, regs, sim, spawn_delay, log):
        super().__init__(name, steps, regs, sim, spawn_delay)
        self.log = log

    def step(self, k):
        self.log.append("a")
        super().step(k)


class _LoggedHelper(Helper):
    """A helper that notes its update in a log the state leaves out."""

    def __init__(self, regs, log):
        super().__init__(regs)
        self.log = log

    def touch(self, var):
        self.log.append("c")
        super().touch(var)


declare(_LoggedWorker, {"log": "the test's record of the order, not the model's"})
declare(_LoggedHelper, {"log": "the test's record of the order, not the model's"})


def test_a_revisit_with_an_event_awake_runs_its_class_to_the_end_as_the_stateless_search_does():
    """Worker 0's step a (register 0, at 1) hands register 1 to a helper b (at 2); a
    helper c updates register 0 at 5, an update that commutes with a's though both
    touch register 0 (dependent). The first execution runs a, b, c; its sibling a, c
    reaches the state "a and c ran" with b asleep (b ran first there, and commutes with
    c). c, a reaches that state again with b awake: Godefroid, Holzmann and Pirottin's
    rule runs b there, and the class "c before a" is run to its end, as the stateless
    search runs it. (Pruning that visit loses no final state: b leads to the first
    execution's state. Under an exact dependence on an acyclic state graph it never
    does, since a state's first visit is complete when it is met again and a sleeping
    event's successor is reached from the sibling that put it to sleep: what the rule
    keeps is the classes, up to converging states.)"""
    orders_run: dict[bool, set] = {False: set(), True: set()}

    def search(stateful):
        def run(oracle):
            sim = Simulator(oracle=oracle)
            regs, log = [0, 0], []
            sim.schedule(1, _LoggedWorker(0, [(0, 1)], regs, sim, 1, log).step, 0)
            sim.schedule(5, _LoggedHelper(regs, log).touch, 0)
            sim.run()
            orders_run[stateful].add("".join(log))
            return True, repr(regs)

        return explore_untimed(
            run,
            stop_at_first=False,
            footprints=ToyFootprints,
            channels=receiver_of,
            timeouts=no_timeouts,
            stateful=stateful,
        )

    stateless, stateful = search(False), search(True)
    assert stateful.complete and stateful.matched == 1
    assert orders_run[True] == orders_run[False] == {"ac", "ca"}
    assert stateful.executions == stateless.executions == 2


class _Undeclared:
    def __init__(self):
        self.count = 0

    def tick(self):
        self.count += 1


def test_an_object_without_a_declaration_is_an_error_not_skipped():
    sim = Simulator()
    sim.schedule(1, _Undeclared().tick)
    with pytest.raises(Undeclared, match="_Undeclared carries state"):
        state_fingerprint(sim, receiver_of, no_timeouts)


def test_declared_exclusions_leave_the_fingerprint_unchanged_and_the_rest_changes_it():
    class Box:
        def __init__(self):
            self.value = 0
            self.hits = 0

        def tick(self):
            pass

    declare(Box, {"hits": "a statistic"})
    try:

        def digest(value, hits):
            sim = Simulator()
            box = Box()
            box.value, box.hits = value, hits
            sim.schedule(1, box.tick)
            return state_fingerprint(sim, receiver_of, no_timeouts)[0]

        assert digest(1, 0) == digest(1, 5)
        assert digest(1, 0) != digest(2, 0)
    finally:
        del fingerprint.DECLARED[f"{Box.__module__}.{Box.__qualname__}"]


def test_on_t3_both_orders_of_two_independent_events_give_one_fingerprint():
    """The fingerprint has no path noise: on the real model (bibw, 1 fragment), two
    independent heads run in either order reach one fingerprint, and two dependent
    ones of one register (a QP's engine and its doorbell) need not."""
    from pyopenib.check.channels import channel_of, is_timeout
    from pyopenib.check.footprint import event_object
    from pyopenib.check.untimed import UntimedOracle, _conflict, _Frame

    run = t3_bibw(1)

    class Steer(UntimedOracle):
        """Plain order, except the two given heads (issue numbers) at step ``at``."""

        def __init__(self, at, order=()):
            super().__init__(reduce=False)
            self.at, self.order = at, list(order)
            self.pairs = self.digest = None
            self.step = 0

        def _pick(self, sim, entries, channels):
            pick = self._steer(sim, entries)
            seqs = [e[1] for e in entries]
            self.frames.append(_Frame(seqs, [set()] * len(seqs), {}, pick, [], channels))
            return pick

        def _steer(self, sim, entries):
            k, self.step = self.step, self.step + 1
            seqs = [e[1] for e in entries]
            if k == self.at and not self.order:
                fps = [
                    self._footprints.static(sim, event_object(e[2], e[3]), e[2], e[3])
                    for e in entries
                ]
                n = len(seqs)
                self.pairs = [
                    (seqs[i], seqs[j])
                    for i in range(n)
                    for j in range(i + 1, n)
                    if not _conflict(fps[i], fps[j])
                ]
            if self.order and self.at <= k < self.at + 2:
                return seqs.index(self.order[k - self.at])
            if self.order and k == self.at + 2:
                self.digest = state_fingerprint(sim, channel_of, is_timeout)[0]
            return 0

    checked = 0
    for at in (20, 60, 100):
        probe = Steer(at)
        run(probe)
        for a, b in probe.pairs[:2]:
            one, other = Steer(at, (a, b)), Steer(at, (b, a))
            run(one)
            run(other)
            assert one.digest is not None and one.digest == other.digest
            checked += 1
    assert checked >= 4


def test_every_object_of_a_long_bibw_run_is_declared():
    """Past the eager-RDMA threshold a rank's state holds eager-RDMA channels, the
    registration cache and weak references: each is declared (or walked), so a state of
    a 40-fragment run fingerprints without ``Undeclared``, the same at one instant of two
    runs."""
    from pyopenib.check.channels import channel_of, is_timeout
    from pyopenib.check.search import SearchOracle

    class FingerprintAt(SearchOracle):
        def __init__(self, at):
            super().__init__()
            self.at = at
            self.digests = []

        def before(self, sim, entry, obj, heads):
            if self.at and entry[0] > self.at[0]:
                self.at.pop(0)
                self.digests.append(state_fingerprint(sim, channel_of, is_timeout)[0])
            super().before(sim, entry, obj, heads)

    run = t3_bibw(40, CHECK_QUEUES)
    runs = []
    for _ in range(2):
        oracle = FingerprintAt([100_000_000, 400_000_000, 700_000_000])
        assert run(oracle)[0]
        runs.append(oracle.digests)
    assert len(runs[0]) == 3 and len(set(runs[0])) == 3


_SWITCH_BACK = compile("main.switch()", "<program>", "exec")


def _rank(main):
    exec(_SWITCH_BACK, {"main": main})  # suspended inside a C call, as a program's rank is


def _suspended_rank() -> greenlet:
    g = greenlet(_rank)
    g.switch(getcurrent())
    return g


def _position_of_rank(g):
    frame = g.gr_frame
    while frame.f_code is not _rank.__code__:
        frame = frame.f_back
    return frame.f_lasti, fingerprint._resume_point(frame.f_code, frame.f_lasti)


def test_a_frame_suspended_in_a_c_call_has_one_position_cold_or_warm():
    """CPython 3.11 reports a frame suspended inside a call of a C function at the call's
    PRECALL once its code is specialised (warm), at its CALL before (cold): the first
    execution of a search and its children would never match. The fingerprint writes one
    position for both."""
    cold = _position_of_rank(_suspended_rank())
    for _ in range(50):  # warm _rank up: its PRECALL specialises for ``exec``
        _suspended_rank().switch()
    warm = _position_of_rank(_suspended_rank())
    if sys.version_info[:2] == (3, 11):
        assert cold[0] != warm[0]  # what the fingerprint must not see
    assert cold[1] == warm[1]


class _FixedState:
    """A ``StateCache`` whose every state is one state: events are tokens by issue number."""

    def __init__(self):
        self.cache = StateCache(receiver_of, no_timeouts)
        self.cache.fingerprint = lambda sim: (b"one state", {1: "a", 2: "b", 3: "c"})

    def arrive(self, sleep: set[int]):
        oracle = UntimedOracle(cache=self.cache)
        return oracle._cached(None, [1, 2, 3], {s: set() for s in sleep})


def test_a_state_met_again_explores_what_its_first_visit_left_asleep():
    """Godefroid, Holzmann and Pirottin's rule as the cache applies it (the whole search's
    view of it is the test of a revisit above): a state first explored with ``a``
    asleep, met again with nothing asleep, still owes ``a`` and only ``a``; met a third
    time with ``a`` asleep again, nothing."""
    state = _FixedState()
    chosen, explored, backtrack = state.arrive({1})
    assert (chosen, explored) == (1, [])  # first visit: the first awake event, b
    chosen, explored, backtrack = state.arrive(set())
    assert (chosen, explored, backtrack) == (0, [1, 2], {0})  # a, with b and c done
    assert state.cache.sleeps[b"one state"] == frozenset()
    assert state.cache.matched == 1
    with pytest.raises(Visited):
        state.arrive({1})
    with pytest.raises(Visited):
        state.arrive(set())
