"""Toy models for the property tests of the searches: a few workers whose steps update
shared registers, with exact footprints, so that a reduced search can be compared with
the enumeration of every order on models small enough to enumerate.

A model is one list of steps per worker. A step ``(var, spawn)`` updates register
``var`` with a non-commutative update (the order of two workers' steps on one register
shows in the final state) and, when ``spawn`` names a register, hands a follow-up update
of it to a fresh helper object: an event created by another, so the searches must also
get causality right (a tuple of registers: a chain of helpers, each created by the one
before, ``Relay``). The runs differ only in where the steps sit in time, which is what
each search explores: all at one instant (ties), staggered (the untimed scheduler must
ignore the instants), or chained by durations (bounds timing).
"""

from __future__ import annotations

from math import factorial

from hypothesis import strategies as st

from pyopenib.check.untimed import explore_untimed
from pyopenib.sim import Simulator
from pyopenib.sim.ties import callback_of, receiver_of


class Worker:
    """One toy object: step ``k`` runs ``steps[k]`` (see the module docstring); its
    helpers are scheduled ``spawn_delay`` after the step."""

    def __init__(self, name, steps, regs, sim, spawn_delay):
        self.name = name
        self.steps = steps
        self.regs = regs
        self.sim = sim
        self.spawn_delay = spawn_delay

    def step(self, k):
        var, spawn = self.steps[k][:2]
        self.write(var)
        if isinstance(spawn, tuple):
            relay = Relay(self.regs, self.sim, self.spawn_delay)
            self.sim.schedule(self.spawn_delay, relay.touch, *spawn)
        elif spawn is not None:
            self.sim.schedule(self.spawn_delay, Helper(self.regs).touch, spawn)

    def write(self, var):
        self.regs[var] = (self.regs[var] * 3 + self.name + 1) % 1009


class TimedWorker(Worker):
    """A worker whose steps run one after the other: a step ``(var, spawn, (lo, nominal,
    hi))`` schedules the next one a duration ``toy.step`` from that interval later, so
    which steps of different workers meet on a register depends on the durations."""

    def step(self, k):
        super().step(k)
        if k + 1 < len(self.steps):
            self.sim.schedule(self.sim.duration("toy.step", *self.steps[k][2]), self.step, k + 1)


class Helper:
    """A worker's follow-up: an object of its own, so a channel (and a tie party) of its
    own, born during the run. Its update commutes with another helper's and with worker
    0's (``5x + 2`` and ``3x + 1`` commute): those orders converge, which the stateful
    search needs to meet states twice, and a search that missed one of them would show
    it in no final state."""

    def __init__(self, regs):
        self.regs = regs

    def touch(self, var):
        self.regs[var] = (self.regs[var] * 5 + 2) % 1009


class Relay(Helper):
    """A helper of a chain: a step's ``spawn`` given as a tuple of registers hands the
    first to a relay, which after its update hands the rest to a fresh relay
    ``spawn_delay`` later. What a step triggers then reaches past its own children."""

    def __init__(self, regs, sim, delay):
        super().__init__(regs)
        self.sim = sim
        self.delay = delay

    def touch(self, var, *rest):
        super().touch(var)
        if rest:
            self.sim.schedule(self.delay, Relay(self.regs, self.sim, self.delay).touch, *rest)


class ToyFootprints:
    """Exact footprints of the toy: the register a step or a helper updates."""

    def static(self, sim, obj, fn, args):
        if fn.__name__ == "step":
            return {("reg", obj.steps[args[0]][0])}
        return {("reg", args[0])}

    def learn(self, sim, events):
        return set()


class TimedToyFootprints(ToyFootprints):
    """The toy's exact footprints, and what ``check/causal.py`` asks of a model: the
    toy's durations only add to the time of the one step they schedule; it has no clocks,
    decisions or ordered channels."""

    ADDITIVE = frozenset({"toy.step"})
    FIRST_ONLY = frozenset()

    @staticmethod
    def channel(fn, args):
        return None

    def clocks(self, fp):
        return {}

    def decision_times(self, fp):
        return ()


class ToyRun:
    """A model as a run of the searches, ``run(oracle) -> (ok, outcome)``, keeping every
    final register state it reaches in ``outcomes``. Every step is scheduled before the
    run, at instant 0, and helpers at the instant of their step: every order is a choice
    among ties."""

    worker = Worker
    spawn_delay = 0

    def __init__(self, model, nregs=3):
        self.model = model
        self.nregs = nregs
        self.outcomes: set[tuple] = set()

    def __call__(self, oracle):
        sim = Simulator(oracle=oracle)
        regs = [0] * self.nregs
        for name, spec in enumerate(self.model):
            self.start(sim, name, spec, regs)
        sim.run()
        self.outcomes.add(tuple(regs))
        return True, repr(regs)

    def start(self, sim, name, steps, regs):
        worker = self.worker(name, steps, regs, sim, self.spawn_delay)
        for k in range(len(steps)):
            sim.schedule(self.instant(name, k), worker.step, k)

    def instant(self, name, k):
        return 0


class StaggeredToyRun(ToyRun):
    """Worker ``name``'s step ``k`` at ``10 k + name`` and helpers 7 later, between later
    steps: the nominal order is one interleaving, and the untimed scheduler must reach
    the others, which run events due later first."""

    spawn_delay = 7

    def instant(self, name, k):
        return 10 * k + name


class StoppingToyRun(StaggeredToyRun):
    """``StaggeredToyRun`` that ends the run, as a scenario does once its ranks are done,
    right after worker 0's last step (``ending="hook"``: its ``after_event`` says so) or
    by that step raising out of the run (``ending="raise"``: a program's job is over),
    whatever is still pending: the final state is the registers then. A search must run
    each pending event before that step too, or lose the states in which it ran."""

    def __init__(self, model, nregs=3, ending="hook"):
        super().__init__(model, nregs)
        self.ending = ending

    def __call__(self, oracle):
        sim = Simulator(oracle=oracle)
        regs = [0] * self.nregs
        for name, spec in enumerate(self.model):
            self.start(sim, name, spec, regs)
        first = self.first
        try:
            sim.run(after_event=lambda: self.ending == "hook" and first.finished)
        except JobOver:
            pass
        self.outcomes.add(tuple(regs))
        return True, repr(regs)

    def start(self, sim, name, steps, regs):
        worker = StoppingWorker(name, steps, regs, sim, self.spawn_delay, self.ending)
        if name == 0:
            self.first = worker
        for k in range(len(steps)):
            sim.schedule(self.instant(name, k), worker.step, k)


class JobOver(Exception):
    """Raised by worker 0's last step of a ``StoppingToyRun(ending="raise")``."""


class StoppingWorker(Worker):
    """A worker that marks its last step (``finished``); worker 0 of a run that ends by
    raising raises there, after its update."""

    def __init__(self, name, steps, regs, sim, spawn_delay, ending):
        super().__init__(name, steps, regs, sim, spawn_delay)
        self.ending = ending
        self.finished = False

    def step(self, k):
        super().step(k)
        self.finished = k + 1 == len(self.steps)
        if self.finished and self.name == 0 and self.ending == "raise":
            raise JobOver


class TimedToyRun(ToyRun):
    """A model of ``(start, steps)`` per worker, its steps chained by durations
    (``TimedWorker``), the first at ``start``."""

    worker = TimedWorker

    def start(self, sim, name, spec, regs):
        start, steps = spec
        sim.schedule(start, self.worker(name, steps, regs, sim, self.spawn_delay).step, 0)


class AlarmWorker(TimedWorker):
    """A timed worker whose step ``(var, spawn, interval, alarm)`` may also arm an alarm
    (``alarm = (delay, reg)``: a ``Timer`` that updates ``reg`` when it fires) or
    withdraw the oldest armed one (``alarm = "cancel"``): which alarms fire depends on
    when the cancelling steps run, so on the durations."""

    def __init__(self, name, steps, regs, sim, spawn_delay, alarms):
        super().__init__(name, steps, regs, sim, spawn_delay)
        self.alarms = alarms
        self.finished = False
        """Its last step ran."""

    def step(self, k):
        alarm = self.steps[k][3]
        if alarm == "cancel":
            if self.alarms:
                self.alarms.pop(0)[1].cancel()
        elif alarm is not None:
            delay, reg = alarm
            ring = Alarm(self.regs, self.alarms, reg)
            self.alarms.append((ring, self.sim.timer(delay, ring.ring)))
        super().step(k)
        self.finished = k + 1 == len(self.steps)


class Alarm:
    """An armed alarm: when it fires it leaves the armed list and updates its register
    (``x * 7 + 3``, which commutes with neither a worker's update nor a helper's)."""

    def __init__(self, regs, alarms, var):
        self.regs = regs
        self.alarms = alarms
        self.var = var

    def ring(self):
        self.alarms[:] = [a for a in self.alarms if a[0] is not self]
        self.regs[self.var] = (self.regs[self.var] * 7 + 3) % 1009


class AlarmToyFootprints(TimedToyFootprints):
    """The alarm toy's exact footprints: a step's register, and the armed list when the
    step arms or cancels; an alarm's register and the armed list."""

    def static(self, sim, obj, fn, args):
        fn = callback_of(fn)
        if fn.__name__ == "ring":
            return {("reg", obj.var), ("alarms",)}
        if fn.__name__ == "step" and obj.steps[args[0]][3] is not None:
            return {("reg", obj.steps[args[0]][0]), ("alarms",)}
        return super().static(sim, obj, fn, args)


class AlarmToyRun(TimedToyRun):
    """``TimedToyRun`` over ``AlarmWorker``s, watched after every event by a hook as a
    checked scenario is: ``"peek"`` asks ``sim.peek()`` whether anything is left (what
    ``apps/scenarios.py`` asks), ``"stop"`` also ends the run once worker 0's last step
    ran (a scenario ends when its ranks are done, whatever is still pending); the final
    state is the registers then."""

    def __init__(self, model, nregs=3, hook="peek"):
        super().__init__(model, nregs)
        self.hook = hook

    def __call__(self, oracle):
        sim = Simulator(oracle=oracle)
        regs = [0] * self.nregs
        alarms: list = []
        workers = []
        for name, (start, steps) in enumerate(self.model):
            workers.append(AlarmWorker(name, steps, regs, sim, self.spawn_delay, alarms))
            sim.schedule(start, workers[-1].step, 0)
        first = workers[0]
        stop = self.hook == "stop"
        sim.run(after_event=lambda: sim.peek() is None or (stop and first.finished))
        self.outcomes.add(tuple(regs))
        return True, repr(regs)


def orders(model) -> int:
    """How many orders of a model's events keep each worker's steps in program order and
    each helper after what created it: the executions of a search that reduces nothing. The
    events form a forest (a step is the root of its worker's later steps and of the
    helpers of all of them), whose orders number n! over the product of the sizes of
    every event's subtree."""
    events, sizes = 0, 1
    for steps in model:
        below = 0
        for _, spawn in reversed(steps):
            chain = len(spawn) if isinstance(spawn, tuple) else int(spawn is not None)
            below += 1 + chain
            sizes *= below * factorial(chain)
        events += below
    return factorial(events) // sizes


def no_timeouts(fn, args) -> bool:
    """The toy's timeouts: none (``explore_untimed(timeouts=...)``)."""
    return False


def search_untimed(model, run=StaggeredToyRun, **kw):
    """The untimed search over ``run(model)`` with the toy's channels (one per object),
    footprints and timeouts: the final states it reached and its result (complete: a toy
    search is never cut)."""
    toy = run(model)
    res = explore_untimed(
        toy,
        stop_at_first=False,
        footprints=ToyFootprints,
        channels=receiver_of,
        timeouts=no_timeouts,
        **kw,
    )
    assert res.complete
    return toy.outcomes, res


def models(max_steps: int, max_total: int, max_orders: int = 1000):
    """Models of 2 or 3 workers on 3 registers, each worker of 1 to ``max_steps`` steps,
    ``max_total`` steps at most in all, and at most ``max_orders`` orders.

    The bound on orders is a bound on the cost of an example, which steps alone are not:
    the search that reduces nothing runs ``orders(model)`` executions, factorial in the
    events (6 steps, each with a helper: 935 550 orders, minutes of CPU, where the median
    model has under a hundred). A thousand orders keep each example under a second; the
    reduction bugs these tests are for show on far smaller models (a race reversed by a
    step that was not an initial one: three workers, six events, 60 orders)."""
    step = st.tuples(st.integers(0, 2), st.one_of(st.none(), st.integers(0, 2)))
    return st.lists(st.lists(step, min_size=1, max_size=max_steps), min_size=2, max_size=3).filter(
        lambda m: sum(map(len, m)) <= max_total and orders(m) <= max_orders
    )
