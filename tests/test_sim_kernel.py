"""The kernel's promises: integer time, FIFO at equal times, cancellable timers,
greenlet processes that block, choice points that are the only nondeterminism."""

import pytest

from pyopenib.sim import NominalOracle, RandomOracle, ScriptedOracle, Simulator, Tracer


def test_events_at_equal_times_run_in_scheduling_order():
    sim = Simulator()
    seen = []
    for i in range(5):
        sim.schedule(10, seen.append, i)
    sim.schedule(5, seen.append, "early")
    sim.run()
    assert seen == ["early", 0, 1, 2, 3, 4]
    assert sim.now == 10


def test_cancelled_timer_never_fires():
    sim = Simulator()
    seen = []
    t = sim.timer(10, seen.append, "x")
    sim.schedule(5, t.cancel)
    sim.run()
    assert seen == [] and t.cancelled
    assert sim.now == 5  # a withdrawn timer does not move the clock


def test_cancelled_timer_does_not_move_the_clock_in_any_run_mode():
    for kwargs in ({}, {"max_events": 10}):
        sim = Simulator()
        sim.schedule(7, int)
        sim.timer(500, int).cancel()
        sim.run(**kwargs)
        assert sim.now == 7, kwargs


def test_run_until_stops_before_later_events_and_advances_clock():
    sim = Simulator()
    seen = []
    sim.schedule(100, seen.append, 1)
    sim.schedule(300, seen.append, 2)
    sim.run(until=200)
    assert seen == [1] and sim.now == 200
    sim.run()
    assert seen == [1, 2] and sim.now == 300


def test_max_events_bounds_a_run():
    sim = Simulator()

    def tick():
        sim.schedule(1, tick)

    sim.schedule(0, tick)
    assert sim.run(max_events=50) == 50


def test_negative_delay_is_refused():
    with pytest.raises(ValueError):
        Simulator().schedule(-1, print)


def test_processes_sleep_and_wait_on_events():
    sim = Simulator()
    log = []
    ev = sim.event()

    def producer():
        sim.sleep(1_000)
        ev.succeed("hello")
        return "produced"

    def consumer():
        value = sim.wait(ev)
        log.append((sim.now, value))

    p = sim.spawn(producer)
    sim.spawn(consumer)
    sim.run()
    assert log == [(1_000, "hello")]
    assert p.triggered and p.value == "produced"


def test_process_exception_propagates_out_of_run():
    sim = Simulator()

    def boom():
        sim.sleep(5)
        raise KeyError("rank failed")

    sim.spawn(boom)
    with pytest.raises(KeyError):
        sim.run()


def test_blocked_processes_are_reported():
    sim = Simulator()
    never = sim.event()
    sim.spawn(lambda: sim.wait(never), name="stuck")
    sim.run()
    assert [p.name for p in sim.blocked_processes()] == ["stuck"]


def _toy_model(oracle, tracer=None):
    sim = Simulator(oracle=oracle, tracer=tracer)
    out = []

    def fire(name):
        out.append((sim.now, name))
        if tracer is not None:
            tracer.emit("toy", "fire", name)

    sim.schedule(sim.duration("a", 10, 20, 30), fire, "a")
    sim.schedule(sim.duration("b", 15, 20, 25), fire, "b")
    first = sim.choose("who", ["x", "y"])
    sim.schedule(20, fire, first)
    sim.run()
    return out


def test_nominal_oracle_takes_nominal_durations():
    assert _toy_model(NominalOracle()) == [(20, "a"), (20, "b"), (20, "x")]


def test_same_seed_same_trace_digest():
    digests = set()
    for _ in range(3):
        tr = Tracer()
        _toy_model(RandomOracle(7), tr)
        digests.add(tr.digest())
    assert len(digests) == 1


def test_scripted_oracle_enumerates_every_combination_exactly_once():
    """Depth-first over the recorded trail: 3 * 3 * 2 executions, each seen once."""
    seen = []
    stack = [[]]
    while stack:
        prefix = stack.pop()
        oracle = ScriptedOracle(prefix)
        _toy_model(oracle)
        seen.append(tuple(oracle.choices))
        for i in range(len(oracle.trail) - 1, len(prefix) - 1, -1):
            rec = oracle.trail[i]
            for alt in range(1, rec.options):
                stack.append(oracle.choices[:i] + [alt])
    assert len(seen) == 18
    assert len(set(seen)) == 18


def test_run_until_keeps_fifo_order_of_the_entry_it_puts_back():
    sim = Simulator()
    seen = []
    sim.schedule(300, seen.append, "a")
    sim.schedule(300, seen.append, "b")
    assert sim.run(until=200) == 0 and sim.now == 200
    sim.schedule(100, seen.append, "c")
    assert sim.run() == 3
    assert seen == ["a", "b", "c"] and sim.events_run == 3


def test_cancelled_timer_is_skipped_by_peek():
    sim = Simulator()
    t = sim.timer(10, print)
    sim.schedule(20, print)
    t.cancel()
    assert sim.peek() == 20


def test_peek_skips_withdrawn_timers_anywhere_below_the_top_and_pops_none():
    """Withdrawn timers at the top and deeper in the heap: ``peek`` answers the earliest
    live entry's time and leaves the heap as it was."""
    sim = Simulator()
    timers = [sim.timer(d, int) for d in (1, 2, 3, 4, 5, 6, 7)]
    sim.schedule(6, int)
    for t in timers[:5] + timers[6:]:
        t.cancel()
    heap = list(sim._heap)
    assert sim.peek() == 6  # the live timer at 6 and the schedule at 6: the earlier seq
    assert sim._heap == heap and sim.timers_withdrawn == 0
    timers[5].cancel()
    assert sim.peek() == 6
    for t in timers:
        t.cancel()
    assert Simulator().peek() is None


def test_peek_in_an_after_event_hook_leaves_every_withdrawn_timer_to_the_tie_observer():
    """The observer of a tie loop (an explorer's log) sees each withdrawn timer the run
    passes, although a hook asks ``peek`` after every event: the timers leave the heap
    through the loop, which reports them, never through the query. And it hears that
    the hook ended the run."""

    seen = []

    class Observer:
        def bind(self, sim):
            pass

        def before(self, sim, entry, obj, heads):
            pass

        def after(self, sim):
            pass

        def withdrawn(self, sim, entry):
            seen.append(entry[0])

        def ended(self, sim):
            seen.append(("ended", sim.now))

    class Oracle(NominalOracle):
        def __init__(self):
            from pyopenib.sim.ties import TieControl

            self.ties = TieControl(observer=Observer())

    sim = Simulator(oracle=Oracle())
    for d in (5, 15):
        sim.timer(d, int).cancel()
    for d in (0, 10, 20):
        sim.schedule(d, int)
    assert sim.run(after_event=lambda: sim.peek() is None) == 3
    assert seen == [5, 15, ("ended", 20)] and sim.timers_withdrawn == 2


def test_withdrawn_timers_are_not_counted_as_executed_events():
    for kwargs in ({}, {"until": 1_000}, {"max_events": 10}):
        sim = Simulator()
        sim.schedule(5, int)
        sim.timer(7, int).cancel()
        sim.timer(9, int).cancel()
        sim.schedule(11, int)
        assert sim.run(**kwargs) == 2, kwargs
        assert sim.events_run == 2
        assert sim.timers_withdrawn == 2


def test_max_events_counts_callbacks_not_withdrawn_timers():
    sim = Simulator()
    seen = []
    sim.timer(1, seen.append, "withdrawn").cancel()
    sim.schedule(2, seen.append, "a")
    sim.schedule(3, seen.append, "b")
    assert sim.run(max_events=2) == 2
    assert seen == ["a", "b"]


def test_events_run_counts_the_callbacks_of_a_run_that_raised():
    sim = Simulator()
    sim.schedule(1, int)

    def boom():
        raise RuntimeError("stop")

    sim.schedule(2, boom)
    sim.schedule(3, int)
    try:
        sim.run()
    except RuntimeError:
        pass
    assert sim.events_run == 2


class _TieNominal(NominalOracle):
    """Nominal answers, but with same-instant ties handed to ``TieControl``."""

    def __init__(self):
        from pyopenib.sim.ties import TieControl

        self.ties = TieControl()
        self.asked = 0

    def choose(self, label, n):
        self.asked += 1
        return 0


def _mixed_model(sim, log):
    """Callbacks, timers (one withdrawn), processes, same-instant ties between objects."""

    class Box:
        def __init__(self, name):
            self.name = name

        def hit(self, k):
            log.append((sim.now, self.name, k))

    a, b = Box("a"), Box("b")
    for k in range(5):
        sim.schedule(k % 2 * 10, a.hit, k)
        sim.schedule(k % 3 * 10, b.hit, k)
    sim.timer(10, a.hit, 99).cancel()
    sim.timer(20, b.hit, 98)

    def proc():
        for k in range(3):
            sim.sleep(10)
            log.append((sim.now, "p", k))

    sim.spawn(proc, name="p")


@pytest.mark.parametrize("kwargs", [{}, {"until": 15}, {"max_events": 7}])
def test_tie_control_with_nominal_answers_is_the_plain_loop(kwargs):
    runs = []
    for oracle in (None, _TieNominal()):
        # the plain loop step by step: folded sleeps (on by default) take fewer heap entries
        sim = Simulator(oracle=oracle, fast_paths=False)
        log = []
        _mixed_model(sim, log)
        ran = sim.run(**kwargs)
        runs.append((log, ran, sim.now, sim.events_run, sim.timers_withdrawn))
        if oracle is not None:
            assert oracle.asked == oracle.ties.ties_met > 0
    assert runs[0] == runs[1]


def test_a_tie_answer_reorders_objects_at_one_instant_only():
    class Pick(NominalOracle):
        def __init__(self):
            from pyopenib.sim.ties import TieControl

            self.ties = TieControl()

        def choose(self, label, n):
            assert label == "sim.tie"
            return n - 1

    sim = Simulator(oracle=Pick())
    log = []
    sim.schedule(0, log.append, "first")  # one object: list.append of one list
    sim.schedule(5, log.append, "later")
    sim.schedule(0, lambda: log.append("other"))  # another object, same instant
    sim.run()
    assert log == ["other", "first", "later"]


class _UntimedNominal(NominalOracle):
    """Nominal answers; the untimed scheduler loop, always its earliest enabled event."""

    def __init__(self):
        from pyopenib.sim.untimed import UntimedControl

        self.ties = UntimedControl(lambda sim, entries, channels: 0)


@pytest.mark.parametrize("oracle", [NominalOracle, _TieNominal, _UntimedNominal])
def test_after_event_sees_what_one_run_per_event_sees_and_ends_the_run_on_true(oracle):
    """``run(after_event=f)`` is ``run(max_events=1)`` in a loop with ``f`` after each
    call, in each of the kernel's loops: the same events (no folded sleep skips one),
    the same state seen after each, and a True answer ends the run after that event."""

    def stepped(stop_after):
        sim, log, seen = Simulator(oracle=oracle()), [], []
        _mixed_model(sim, log)
        while sim.run(max_events=1):
            seen.append((sim.now, len(log)))
            if len(seen) == stop_after:
                break
        return seen, log, sim.now, sim.events_run, sim.timers_withdrawn

    def watched(stop_after):
        sim, log, seen = Simulator(oracle=oracle()), [], []
        _mixed_model(sim, log)

        def after_event() -> bool:
            seen.append((sim.now, len(log)))
            return len(seen) == stop_after

        sim.run(after_event=after_event)
        return seen, log, sim.now, sim.events_run, sim.timers_withdrawn

    for stop_after in (5, 1_000):
        assert watched(stop_after) == stepped(stop_after)
    assert len(watched(5)[0]) == 5


@pytest.mark.parametrize("kwargs", [{}, {"max_events": 9}, {"until": 15}])
def test_settle_nominal_hands_the_rest_of_a_tie_run_to_the_plain_loop(kwargs):
    """An oracle whose script is spent settles the run nominal mid-way: the tie loop
    stops at once and the plain loop runs the rest (within the same ``max_events`` and
    ``until``), event for event the plain run."""

    class SettlesAtSecondTie(_TieNominal):
        def choose(self, label, n):
            self.asked += 1
            if self.asked == 2:
                sim.settle_nominal()
            return 0

    runs = []
    for oracle in (None, SettlesAtSecondTie()):
        sim = Simulator(oracle=oracle, fast_paths=False)
        log = []
        _mixed_model(sim, log)
        ran = sim.run(**kwargs)
        runs.append((log, ran, sim.now, sim.events_run, sim.timers_withdrawn))
    assert runs[0] == runs[1]
    assert oracle.asked == 2 and sim.ties is None and sim.nominal
