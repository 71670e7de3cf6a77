"""The discrete-event kernel: an integer-picosecond clock and one event heap.

Semantics (what the rest of the project may rely on):

* Time is an ``int`` number of picoseconds; ``Simulator.now`` never goes backwards.
* ``schedule(delay, fn, *args)`` runs ``fn(*args)`` at ``now + delay``. Callbacks due at the
  same instant run in the order they were scheduled (FIFO by a sequence number), so a run
  is a pure function of its inputs and of the oracle's answers at the choice points.
  Under an oracle that carries a ``TieControl`` (``oracle.ties``; exploration only) the
  callbacks due at one instant that belong to *different* objects become a choice point
  (``sim.tie``): option 0 is the scheduling order above, so the nominal answer of every
  tie reproduces the plain run exactly. A plain run never takes that path.
* ``run(until=None, max_events=None, after_event=None)`` executes events until the heap
  is empty, the next event lies beyond ``until`` (the clock is then advanced to
  ``until``), ``max_events`` callbacks ran, or ``after_event()``, called after every
  callback that ran, returns True. It returns the number of callbacks executed; a
  withdrawn timer is not one (``events_run`` counts only callbacks that ran, and
  ``timers_withdrawn`` the withdrawn timers a loop popped). ``after_event`` is what a checker needs to test a
  property between every two events without re-entering ``run`` for each (one
  ``run(max_events=1)`` per event cost more than the events themselves).
* Processes are greenlets (``spawn``): rank programs and test drivers written as blocking
  code. Inside one, ``sleep(d)`` and ``wait(event)`` block; hardware uses plain callbacks.
* An exception raised by a callback or a process propagates out of ``run``.
* A cancelled ``timer`` neither runs nor moves the clock: ``now`` after a run is the time
  of the last callback that really ran (or ``until``). It leaves the heap in one place
  only: the loop that runs events pops it when it reaches the top, and an explorer's
  loop tells its observer (``sim/ties.py``: in another timing the timer may fire, so a
  search must see its instant). ``peek`` is a query and removes nothing: a hook that
  asks it after every event would otherwise pop the withdrawn timers first, unseen.
* ``sleep(d)`` of a process whose wake-up would be the very next event (nothing pending
  is due at or before ``now + d``, and ``run``'s ``until`` is not before it) advances the
  clock in place instead of switching to the loop and back: a *folded sleep*. The loop
  would pop that wake-up next and switch straight back, with nothing run in between, so
  every callback runs at the same time in the same order either way; only the count of
  heap entries (``scheduled``, ``events_run``) is smaller, by ``sleeps_folded``. Folding
  is on only while no one watches the events themselves: the oracle is ``plain`` (the
  nominal or the seeded random one, which answer choice points and see nothing else),
  there is no tie control, ``run`` has no ``max_events`` budget and no ``after_event``
  (which must see every event), and ``fast_paths`` is True (a test turns it off to compare the two runs byte for byte).
* ``fold(when)`` asks the same rule for a callback: True (counted in ``events_folded``)
  when an event it would schedule for ``when`` would be the next to run, so it may do
  that event's work at once instead. The caller owes the rest of the proof, which the
  kernel cannot see: that the work does not read the clock except as ``when``, and that
  nothing the caller still does before returning to the loop schedules an event at or
  before ``when`` or touches the state that work reads (``TransmitPort.send_ack``).
"""

from __future__ import annotations

from heapq import heappop, heappush

from greenlet import getcurrent, greenlet

from .choice import NominalOracle, Oracle, RandomOracle
from .events import Event
from .trace import Tracer

__all__ = ["Simulator", "Process", "Timer"]

PS_PER_NS = 1_000
PS_PER_US = 1_000_000
PS_PER_S = 1_000_000_000_000


class Timer:
    """A cancellable callback (``Simulator.timer``): the heap entry calls it, it calls ``fn``.

    Plain ``schedule`` entries are bare tuples, the cheapest thing heapq can hold; only the
    few callbacks that may be withdrawn pay for this object: a rank thread's timed wait
    (``mpi/coop_threading``). The device models withdraw nothing: their RNR and
    transport timers are plain entries that find out at expiry whether they still matter.
    """

    __slots__ = ("when", "fn", "args", "cancelled")

    def __init__(self, when, fn, args):
        self.when = when
        self.fn = fn
        self.args = args
        self.cancelled = False

    def __call__(self):
        if not self.cancelled:
            self.fn(*self.args)

    def cancel(self) -> None:
        self.cancelled = True
        self.fn = self.args = None


class _Resume:
    """Event callback that resumes a waiting process through the heap, at the same instant."""

    __slots__ = ("sim", "switch")

    def __init__(self, sim, switch):
        self.sim = sim
        self.switch = switch

    def __call__(self, value):
        sim = self.sim
        sim._seq = seq = sim._seq + 1
        heappush(sim._heap, (sim.now, seq, self.switch, (value,)))


class Process(Event):
    """A greenlet process; as an ``Event`` it triggers with the function's return value."""

    __slots__ = ("name", "_greenlet", "_fn", "_args")

    def __init__(self, sim: Simulator, name: str, fn, args):
        super().__init__(sim)
        self.name = name
        self._greenlet = greenlet(self._body, parent=sim._loop)
        self._fn = fn
        self._args = args

    @property
    def greenlet(self) -> greenlet:
        """The greenlet the process runs in: what a job runner ends (``throw``) when the
        job is over, and the key of per-process state kept outside the simulator."""
        return self._greenlet

    def _body(self):
        value = self._fn(*self._args)
        self._fn = self._args = None
        self.succeed(value)

    def __repr__(self) -> str:
        return f"<Process {self.name} {'done' if self.triggered else 'alive'}>"


def _watched(after_event, watch):
    """``after_event`` (None: none) with ``watch()`` called after it, unless it ended the run."""
    if after_event is None:

        def both() -> bool:
            watch()
            return False

        return both

    def both() -> bool:
        if after_event():
            return True
        watch()
        return False

    return both


class Simulator:
    """Deterministic discrete-event simulator (see the module docstring for semantics)."""

    def __init__(
        self,
        seed: int = 0,
        oracle: Oracle | None = None,
        tracer: Tracer | None = None,
        fast_paths: bool = True,
    ):
        self.now = 0
        self.seed = seed
        self.tracer = tracer
        if tracer is not None:
            tracer.bind(self)
        self.events_run = 0
        self.timers_withdrawn = 0
        self._heap: list = []
        self._seq = 0
        self._loop = getcurrent()
        self._processes: list[Process] = []
        self.fast_paths = fast_paths
        """Exact fast paths (folded sleeps) allowed; False runs every step as an event."""
        self.sleeps_folded = 0
        self.events_folded = 0
        """Events a callback did at once instead of scheduling (``fold``)."""
        self._fold_until = -1
        """Latest wake-up a sleep may fold to during the current ``run`` (-1: none)."""
        self._watch = None
        """Called after every event once ``settle_nominal(watch)`` handed it over."""
        self.oracle = oracle if oracle is not None else NominalOracle()

    # -- scheduling ---------------------------------------------------------------------
    def schedule(self, delay: int, fn, *args) -> None:
        """Run ``fn(*args)`` ``delay`` picoseconds from now (not cancellable: see ``timer``)."""
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        self._seq = seq = self._seq + 1
        heappush(self._heap, (self.now + delay, seq, fn, args))

    def fold(self, when: int) -> bool:
        """Whether the caller may do now the work of an event it would schedule for
        ``when``: the folded-sleep rule (module docstring), nothing pending at or before
        ``when`` and folding allowed in this run; counted in ``events_folded``."""
        heap = self._heap
        if when <= self._fold_until and (not heap or heap[0][0] > when):
            self.events_folded += 1
            return True
        return False

    def timer(self, delay: int, fn, *args) -> Timer:
        """Like ``schedule`` but returns a ``Timer`` whose ``cancel()`` withdraws the call."""
        timer = Timer(self.now + delay, fn, args)
        self.schedule(delay, timer)
        return timer

    def peek(self) -> int | None:
        """Time of the next callback that will run (withdrawn timers left out), or None
        when nothing will. A query: it pops nothing (module docstring), so an observer
        may ask it between two events without changing what the loop sees (a search's
        checkpoints, ``check/convergence.py``)."""
        heap = self._heap
        if not heap:
            return None
        top = heap[0]
        fn = top[2]
        if fn.__class__ is not Timer or not fn.cancelled:
            return top[0]
        return _first_live(heap)

    def run(self, until: int | None = None, max_events: int | None = None, after_event=None) -> int:
        """Execute events; see the module docstring. Returns the callbacks executed."""
        self._loop = getcurrent()
        heap = self._heap
        # Every push is one pop: the count is the sequence numbers handed out meanwhile plus
        # the shrinkage of the heap, less the withdrawn timers popped unrun, so the loops
        # below count only on the rare withdrawn-timer branch.
        start = self._seq - len(heap)
        withdrawn = self.timers_withdrawn
        if (
            self.fast_paths
            and self.ties is None
            and self._oracle.plain
            and max_events is None
            and after_event is None
            and self._watch is None
        ):
            self._fold_until = until if until is not None else 1 << 126
        try:
            plain = self.ties is None
            if not plain:
                left = self.ties.run(self, heap, until, max_events, after_event)
                if left is not None:  # ``settle_nominal`` released the tie loop
                    plain, max_events = True, None if left < 0 else left
            if plain and self._watch is not None:
                after_event = _watched(after_event, self._watch)
            if plain and after_event is None:
                self._run(heap, until, max_events)
            elif plain:
                self._run_watched(heap, until, max_events, after_event)
        finally:
            self._fold_until = -1
            ran = self._seq - len(heap) - start - (self.timers_withdrawn - withdrawn)
            self.events_run += ran
        return ran

    def _run(self, heap, until, max_events) -> None:
        pop = heappop
        if until is None and max_events is None:
            while heap:
                when, _seq, fn, args = pop(heap)
                if fn.__class__ is Timer and fn.cancelled:
                    self.timers_withdrawn += 1  # neither runs nor moves the clock
                    continue
                self.now = when
                fn(*args)
        elif max_events is None:
            limit = until
            while heap:
                entry = pop(heap)
                when = entry[0]
                if when > limit:
                    heappush(heap, entry)  # same seq: FIFO order is unchanged
                    break
                fn = entry[2]
                if fn.__class__ is Timer and fn.cancelled:
                    self.timers_withdrawn += 1
                    continue
                self.now = when
                fn(*entry[3])
        else:
            limit = until if until is not None else 1 << 126
            left = max_events
            while left and heap and heap[0][0] <= limit:
                when, _seq, fn, args = pop(heap)
                if fn.__class__ is Timer and fn.cancelled:
                    self.timers_withdrawn += 1
                    continue
                left -= 1
                self.now = when
                fn(*args)
        if until is not None and self.now < until and (not heap or heap[0][0] > until):
            self.now = until

    def _run_watched(self, heap, until, max_events, after_event) -> None:
        """``_run`` with ``after_event`` after every callback (its own loop: the plain
        ones stay free of the test)."""
        pop = heappop
        limit = until if until is not None else 1 << 126
        left = -1 if max_events is None else max_events
        while left and heap and heap[0][0] <= limit:
            when, _seq, fn, args = pop(heap)
            if fn.__class__ is Timer and fn.cancelled:
                self.timers_withdrawn += 1
                continue
            left -= 1
            self.now = when
            fn(*args)
            if after_event():
                break
        if until is not None and self.now < until and (not heap or heap[0][0] > until):
            self.now = until

    # -- processes ----------------------------------------------------------------------
    def spawn(self, fn, *args, name: str | None = None) -> Process:
        """Start ``fn(*args)`` as a greenlet process at the current time."""
        proc = Process(self, name or getattr(fn, "__name__", "process"), fn, args)
        self._processes.append(proc)
        self.schedule(0, proc._greenlet.switch)
        return proc

    def sleep(self, delay: int) -> None:
        """Block the calling process for ``delay`` picoseconds."""
        current = getcurrent()
        loop = self._loop
        if current is loop:
            raise RuntimeError("sleep() called outside a process")
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        when = self.now + delay
        heap = self._heap
        if when <= self._fold_until and (not heap or heap[0][0] > when):
            # the wake-up would be the next event: fold it (module docstring)
            self.now = when
            self.sleeps_folded += 1
            return
        self._seq = seq = self._seq + 1
        heappush(heap, (when, seq, current.switch, ()))
        loop.switch()

    def sleep_if_process(self, delay: int) -> bool:
        """``sleep(delay)`` when the caller is a process (True); from the event loop
        itself, which cannot block, nothing happens (False). The host model pays a rank's
        CPU time this way several times per message: one call and one ``getcurrent``
        where ``in_process`` and ``sleep`` were two of each; the same fold rule."""
        current = getcurrent()
        loop = self._loop
        if current is loop:
            return False
        if delay < 0:
            raise ValueError(f"negative delay {delay}")
        when = self.now + delay
        heap = self._heap
        if when <= self._fold_until and (not heap or heap[0][0] > when):
            self.now = when  # folded (module docstring), as in ``sleep``
            self.sleeps_folded += 1
            return True
        self._seq = seq = self._seq + 1
        heappush(heap, (when, seq, current.switch, ()))
        loop.switch()
        return True

    def wait(self, event: Event):
        """Block the calling process until ``event`` triggers; returns its value."""
        if event.triggered:
            return event.value
        current = getcurrent()
        if current is self._loop:
            raise RuntimeError("wait() called outside a process")
        # Resume through the heap, never by switching from inside the triggering code:
        # the process that triggered the event must keep running until it blocks.
        event.callbacks.append(_Resume(self, current.switch))
        return self._loop.switch()

    def in_process(self) -> bool:
        """Whether the caller runs inside a process (which may block: ``sleep``, ``wait``)
        rather than in the event loop itself (a callback, which must not)."""
        return getcurrent() is not self._loop

    def suspend(self):
        """Block the calling process until ``resume`` is called with its greenlet; returns
        the value given there. The cheap form of ``wait`` on an event with one waiter."""
        loop = self._loop
        if getcurrent() is loop:
            raise RuntimeError("suspend() called outside a process")
        return loop.switch()

    def resume(self, process_greenlet, value=None) -> None:
        """Resume a ``suspend``-ed greenlet through the heap at the current instant (the
        same heap entry ``wait`` pushes when its event triggers)."""
        self._seq = seq = self._seq + 1
        heappush(self._heap, (self.now, seq, process_greenlet.switch, (value,)))

    def event(self) -> Event:
        return Event(self)

    def timeout(self, delay: int, value=None) -> Event:
        ev = Event(self)
        self.schedule(delay, ev.succeed, value)
        return ev

    @property
    def processes(self) -> tuple[Process, ...]:
        """Every process spawned so far (alive or done), in spawn order."""
        return tuple(self._processes)

    @property
    def scheduled(self) -> int:
        """How many entries were ever put on the heap: the sequence number of the latest
        one. An explorer reads it around a callback to learn which events it scheduled."""
        return self._seq

    def pending(self):
        """The pending heap entries ``(when, seq, fn, args)`` in no particular order,
        withdrawn timers left out: what an explorer orders a new event against."""
        for entry in self._heap:
            fn = entry[2]
            if fn.__class__ is not Timer or not fn.cancelled:
                yield entry

    def pending_withdrawn(self):
        """The withdrawn timers still on the heap, ``(when, seq, fn, args)`` in no
        particular order: what ``pending`` leaves out, and what a run ended by its
        ``after_event`` before they reached the top never popped. An explorer logs them
        with the rest of what the run left undone: in another timing they may fire."""
        for entry in self._heap:
            fn = entry[2]
            if fn.__class__ is Timer and fn.cancelled:
                yield entry

    def blocked_processes(self) -> list[Process]:
        """Processes that are alive and waiting (used for deadlock reports)."""
        return [p for p in self._processes if not p.triggered and not p._greenlet.dead]

    # -- choice points ------------------------------------------------------------------
    def settle_nominal(self, watch=None) -> None:
        """The oracle will answer every later choice point with its option 0 (a search's
        execution past its script): the simulator answers them itself from here on, as
        under the nominal oracle: durations at their nominal value, and same-instant
        events in scheduling order, which is what option 0 of a tie runs (a tie loop
        under way hands the rest of the run to the plain loop). The same run, without
        the calls. ``watch()``, when given, is called after every event of the plain
        loops from then on (the tie loop's hand-off, the next ``run``): what a search
        still observes of the run (``check/convergence.py``); it may end the run by
        raising."""
        self.nominal = True
        self.duration = _nominal_duration
        self.ties = None
        self._watch = watch

    def choose(self, label: str, options):
        """Pick one of ``options``; the oracle decides (index 0 is the nominal one)."""
        n = len(options)
        if n == 1:
            return options[0]
        return options[self._oracle.choose(label, n)]

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        """A duration inside a device's interval; the oracle decides, nominal by default."""
        if lo == hi:
            return nominal
        return self._oracle.duration(label, lo, nominal, hi)

    @property
    def oracle(self) -> Oracle:
        return self._oracle

    @oracle.setter
    def oracle(self, oracle: Oracle) -> None:
        """Under the nominal oracle ``duration`` is bound to a function that returns the
        nominal value directly, and ``nominal`` is True: the hottest hardware paths read
        an interval's nominal value themselves instead of calling ``duration``. Under an
        oracle that declares its ``branching`` labels, ``duration`` is bound to a
        function that answers the other labels' nominal value itself."""
        self._oracle = oracle
        oracle.bind(self)
        self.ties = ties = oracle.ties
        if ties is not None:
            ties.bind(self)
        self.nominal = type(oracle) is NominalOracle
        if self.nominal:
            self.duration = _nominal_duration
        elif oracle.branching is not None:
            self.duration = _duration_for(oracle.branching, oracle.duration)
        else:
            self.__dict__.pop("duration", None)


def _first_live(heap: list) -> int | None:
    """The time of the earliest entry of ``heap`` that is not a withdrawn timer, without
    changing the heap: a heap's entry precedes its subtree, so that entry is a live one
    all of whose ancestors are withdrawn; only the withdrawn top of the tree is walked."""
    best = None
    todo = [0]
    size = len(heap)
    while todo:
        i = todo.pop()
        entry = heap[i]
        if best is not None and entry[:2] >= best:
            continue  # nothing below it comes earlier
        fn = entry[2]
        if fn.__class__ is Timer and fn.cancelled:
            todo.extend(c for c in (2 * i + 1, 2 * i + 2) if c < size)
        else:
            best = entry[:2]
    return None if best is None else best[0]


def _nominal_duration(label: str, lo: int, nominal: int, hi: int) -> int:
    return nominal


def _duration_for(labels: frozenset, ask):
    """``Simulator.duration`` for an oracle that answers only the durations of ``labels``
    (``ask``, its ``duration``)."""

    def duration(label: str, lo: int, nominal: int, hi: int) -> int:
        if lo == hi or label not in labels:
            return nominal
        return ask(label, lo, nominal, hi)

    return duration


def make_simulator(seed: int = 0, randomize: bool = False, tracer: Tracer | None = None):
    """A simulator with the nominal oracle, or a seeded random one when ``randomize``."""
    oracle = RandomOracle(seed) if randomize else NominalOracle()
    return Simulator(seed=seed, oracle=oracle, tracer=tracer)


# CPython 3.11 specialises (quickens) a function's bytecode only from its 8th call on, and a
# simulation calls run() once: without these calls its hot loop would run generic bytecode
# for the whole simulation. The same for the watched loop of a checker's runs: a search
# forks most of its executions from a parent that ran a handful of runs, and every child
# would run its events through generic bytecode. Harmless on later versions.
for _ in range(8):
    Simulator().run()
    Simulator().run(after_event=bool)
del _
