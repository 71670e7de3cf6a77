"""Every order the hardware allows: a depth-first search over the untimed scheduler.

``--timing untimed`` runs the model as a scheduler (``sim/untimed.py``): the enabled
transitions of a state are the heads of the hardware's FIFO channels
(``check/channels.py``) plus each rank's next step, and each step runs one of them. This
module searches that scheduler *without a bound*: when it completes, every order of the
model's events that the channels allow was covered, whatever the durations.

Reduction: sleep sets (Godefroid 1996) over the dependence of ``check/footprint.py``. After
the subtree of transition ``t`` of a state is explored, ``t`` sleeps in the subtrees of
its later siblings and stays asleep along a path until a step dependent on it runs: an
order that only moves ``t`` past independent steps is one already explored. Two
independent steps reach the same state in either order (the untimed loop runs every event
at its own instant, so timestamps commute too), so a sleep-set search visits every
Mazurkiewicz class of complete executions exactly once — the count it reports as
*classes* — and a path whose every enabled transition is asleep stops there (*pruned*:
its continuations are covered elsewhere).

Backtracking re-executes: each execution replays the path to the deepest state with an
unexplored awake transition (the choices and each state's explored siblings), then
continues with the first awake transition everywhere. Executions are deterministic, so a
replayed prefix visits exactly the states it visited before.

What a complete search proves: for this configuration, no order of the model's events
that keeps every channel's FIFO order breaks the protocol. What it does not free: the
decisions a model takes inside one event by comparing its own timestamps (the transmit
port's arbiter serving the packets whose payload is fetched, the PCIe bus's free time)
follow the nominal timestamps of the events, and timeouts fire only at quiescence.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass

from greenlet import greenlet

from ..sim import Oracle, Tracer
from ..sim.untimed import UntimedControl
from .channels import channel_name, channel_of, is_timeout
from .cq_access import CqAccess
from .critical import first_deciding_prefix
from .fingerprint import state_fingerprint
from .footprint import ANY, Footprints, event_object

__all__ = [
    "SleepBlocked",
    "UntimedOracle",
    "UntimedResult",
    "critical_step",
    "describe_path",
    "describe_step",
    "explore_untimed",
    "sample_untimed",
]


class SleepBlocked(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Raised out of a run whose every enabled transition is asleep: each continuation
    is covered by an explored execution. A ``BaseException`` so that no ``except
    Exception`` of the model swallows it."""


class Visited(SleepBlocked):
    """Raised out of a run that reached a state explored before with a sleep set no larger
    than this one's: every continuation is covered by that exploration."""


class CycleFound(RuntimeError):
    """The path came back to a state on it: the untimed state graph has a cycle, and the
    stateful search (whose sleep-set rule assumes an acyclic graph) refuses to go on."""


class StateCache:
    """The visited states of a stateful search: fingerprint -> the sleep set (event
    tokens, ``check/fingerprint.py``) whose complement was explored from it.

    Godefroid, Holzmann and Pirottin's rule ("State-space caching revisited", 1995):
    a state explored with sleep set Z1 has explored every enabled event outside Z1. Met
    again with sleep set Z2, the events of Z1 \\ Z2 remain: if there are none the state is
    pruned, else exactly those are explored (the others join the sleep set as explored
    siblings do) and the entry becomes Z1 ∩ Z2. Sound for every reachable state and
    terminal state on an acyclic graph, which the search checks (``CycleFound``)."""

    def __init__(self, channel_of, is_timeout):
        self.channel_of = channel_of
        self.is_timeout = is_timeout
        self.sleeps: dict[bytes, frozenset] = {}
        self.matched = 0
        """Arrivals at a state already in the cache (pruned or narrowed)."""
        self.fingerprint_s = 0.0
        """CPU seconds spent fingerprinting."""

    def fingerprint(self, sim):
        start = time.process_time()
        out = state_fingerprint(sim, self.channel_of, self.is_timeout)
        self.fingerprint_s += time.process_time() - start
        return out


def _conflict(a, b) -> bool:
    return bool(a & b) or ANY in a or ANY in b


class _Frame:
    """One state of the current path: its enabled transitions (heap sequence numbers,
    sorted as the scheduler offers them), their footprints, the sleep set it was reached
    with, the transition taken and the siblings already explored."""

    __slots__ = (
        "seqs",
        "fps",
        "sleep",
        "chosen",
        "done",
        "names",
        "backtrack",
        "made",
        "learnt",
        "asleep",
    )

    def __init__(self, seqs, fps, sleep, chosen, done, names, learnt=None):
        self.seqs = seqs
        self.fps = fps
        self.sleep = sleep
        self.chosen = chosen
        self.done = done
        self.names = names
        self.learnt: dict = learnt if learnt is not None else {}
        """Explored siblings' footprints learnt when they ran (a rank step's CQs,
        ``check/cq_access.py``), by heap sequence number: what they sleep with."""
        self.asleep: dict = {}
        """The sleep set the step taken here passes on, before the step's own footprint
        (known once it ran) wakes what it conflicts with."""
        self.backtrack = {chosen} if chosen >= 0 else set()
        """The transitions (indices) this state must explore: the one taken, and those the
        race analysis adds (a source set)."""
        self.made = (0, 0)
        """The heap sequence numbers the step taken here scheduled: ``(lo, hi]``."""

    def next_awake(self) -> int | None:
        """The next transition of the backtrack set neither asleep nor explored, or None."""
        for i in sorted(self.backtrack):
            if i != self.chosen and i not in self.done and self.seqs[i] not in self.sleep:
                return i
        return None

    def covers(self, seqs) -> bool:
        """Whether a race's reversal is already scheduled here: one of its initial
        events is in the backtrack set, explored, or asleep."""
        for seq in seqs:
            if seq in self.sleep:
                return True
            i = _index(self.seqs, seq)
            if i is not None and (i in self.backtrack or i in self.done):
                return True
        return False


def _index(seqs, seq):
    try:
        return seqs.index(seq)
    except ValueError:
        return None


def add_races(frames) -> None:
    """Source-set DPOR (Abdulla et al., POPL 2014) over one path: for every race — two
    dependent steps i < j not ordered by anything else (causality, channel order, or a
    chain of dependent steps) — make sure state i explores one *initial* of the events
    that can run first to reverse it (the steps after i that do not follow from i, up to
    j, that nothing among them precedes). ``frames[k]`` is the state before step k."""
    n = sum(1 for f in frames if f.chosen >= 0)
    pred = [0] * n  # bitsets of happens-before predecessors
    races: list[tuple[int, int]] = []
    last: dict = {}  # footprint element -> last step touching it
    last_channel: dict = {}
    last_any = -1
    made: list[tuple[int, int]] = []
    for k in range(n):
        f = frames[k]
        seq = f.seqs[f.chosen]
        fp = f.fps[f.chosen]
        channel = f.names[f.chosen]
        direct = set()
        creator = _creator(made, seq)
        if creator >= 0:
            direct.add(creator)
        c = last_channel.get(channel)
        if c is not None:
            direct.add(c)
        if ANY in fp:
            dep = set(range(k))
        else:
            dep = {last[x] for x in fp if x in last}
            if last_any >= 0:
                dep.add(last_any)
        hb = 0
        for d in direct | dep:
            hb |= pred[d] | (1 << d)
        for i in dep - direct:
            if not any((pred[d] >> i) & 1 for d in direct | dep if d != i):
                races.append((i, k))
        pred[k] = hb
        made.append(f.made)
        last_channel[channel] = k
        if ANY in fp:
            last_any = k
        for x in fp:
            last[x] = k
    for i, j in races:
        _reverse(frames, pred, i, j)


def _creator(made, seq) -> int:
    """The step that scheduled heap entry ``seq`` (-1: scheduled before the first step)."""
    for k in range(len(made) - 1, -1, -1):
        lo, hi = made[k]
        if lo < seq <= hi:
            return k
        if hi <= seq and lo < hi:
            return -1
    return -1


def _reverse(frames, pred, i, j) -> None:
    """Schedule at state i the reversal of the race (i, j)."""
    v = [k for k in range(i + 1, j) if not (pred[k] >> i) & 1] + [j]
    mask = 0
    for k in v:
        mask |= 1 << k
    initials = [frames[k].seqs[frames[k].chosen] for k in v if not pred[k] & mask]
    frame = frames[i]
    if frame.covers(initials):
        return
    for seq in initials:
        idx = _index(frame.seqs, seq)
        if idx is not None:
            frame.backtrack.add(idx)
            return
    frame.backtrack.update(range(len(frame.seqs)))  # none enabled there: all of them


class UntimedOracle(Oracle):
    """Steers one untimed run: at state k of ``prefix`` it takes ``prefix[k] = (chosen,
    explored siblings[, backtrack set])``, past it the first awake transition; durations
    stay nominal (the timestamps only order each channel) and other choice points answer
    0. ``frames`` records every state met."""

    def __init__(
        self,
        prefix=(),
        footprints=Footprints,
        reduce: bool = True,
        channels=None,
        rng=None,
        cache: StateCache | None = None,
    ):
        self.prefix = list(prefix)
        self.cache = cache
        """A stateful search's visited states: past the prefix each new state is looked
        up (``StateCache``); None searches statelessly."""
        self._path: set = set()
        """Fingerprints of the states of this path past the prefix (cycle check)."""
        self.reduce = reduce
        self.rng = rng
        """Past the prefix: a ``random.Random`` picks among the enabled events (a
        sampled continuation), None takes the first awake one."""
        self.frames: list[_Frame] = []
        self.ties = UntimedControl(self._pick, channels or channel_of, is_timeout, observer=self)
        self._footprints = footprints()
        self._sleep: dict[int, set] = {}
        self._learnt: set[int] = set()
        """The sleepers of ``_sleep`` whose footprint was learnt when they ran (rank
        steps): kept as it is, where the others are recomputed in each state."""
        self._access = CqAccess()
        self._host_step = False
        self._tpos = 0
        self._made = 0

    def choose(self, label: str, n: int) -> int:
        return 0

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        return nominal

    # -- the observer: what each step scheduled; where ranks run (from the trace) -------
    def bind(self, sim) -> None:
        if sim.tracer is None:
            sim.tracer = Tracer(sim)

    def before(self, sim, entry, channel) -> None:
        self._tpos = len(sim.tracer.events)
        self._made = sim.scheduled
        self._host_step = channel.__class__ is greenlet
        if self._host_step:
            self._access.watch(self._footprints.known_nics())
            self._access.begin()

    def after(self, sim) -> None:
        frame = self.frames[-1]
        frame.made = (self._made, sim.scheduled)
        events = sim.tracer.events
        if len(events) > self._tpos:
            self._footprints.learn(sim, events[self._tpos :])
        taken = frame.fps[frame.chosen]
        if self._host_step:
            touched = self._access.end()
            if ANY not in taken:  # the host's CQs as one piece -> the ones it touched
                taken = {e for e in taken if e[0] != "cqs"} | {("cq", n) for n in touched}
                frame.fps[frame.chosen] = taken
        if self.reduce:
            learnt = self._learnt
            self._sleep = {s: z for s, z in frame.asleep.items() if not _conflict(z, taken)}
            self._learnt = {s for s in learnt if s in self._sleep}

    def ended(self, sim) -> None:
        """The step just run ended the run (the run's ``after_event`` said so: a scenario
        stops once its ranks are done; or it raised: a program's job is over) with
        events still pending, which no order of this path runs. That step commutes with
        nothing: in another order a pending event runs before it. So its footprint is
        everything (the races it forms with earlier steps are reversed, and as an
        explored sibling it sleeps only until the next step), and its state explores
        every enabled event (each one run before the end)."""
        frame = self.frames[-1]
        frame.fps[frame.chosen] = {ANY}
        frame.backtrack.update(range(len(frame.seqs)))

    # -- the scheduler's choice ---------------------------------------------------------
    def _pick(self, sim, entries, channels) -> int:
        k = len(self.frames)
        static = self._footprints.static
        fps = [static(sim, event_object(e[2], e[3]), e[2], e[3]) for e in entries]
        seqs = [e[1] for e in entries]
        where = {s: i for i, s in enumerate(seqs)}
        learnt_sleep = self._learnt
        sleep = {
            s: (z if s in learnt_sleep else fps[where[s]])
            for s, z in self._sleep.items()
            if s in where
        }
        backtrack = None
        learnt = {}
        if k < len(self.prefix):
            chosen, done, *kept = self.prefix[k]
            done = list(done)
            backtrack = kept[0] if kept else None
            learnt = dict(kept[1]) if len(kept) > 1 else {}
        else:
            if self.rng is not None:
                chosen = self.rng.randrange(len(seqs))
            else:
                chosen = next((i for i, s in enumerate(seqs) if s not in sleep), None)
            done = []
            if self.cache is not None and self.rng is None:
                chosen, done, backtrack = self._cached(sim, seqs, sleep)
            if chosen is None:
                self.frames.append(_Frame(seqs, fps, sleep, -1, done, channels))
                raise SleepBlocked
        frame = _Frame(seqs, fps, sleep, chosen, done, channels, learnt)
        if backtrack is not None:
            frame.backtrack = backtrack
        elif not self.reduce:
            frame.backtrack = set(range(len(seqs)))
        self.frames.append(frame)
        if self.reduce:
            asleep = dict(sleep)  # ``after`` keeps ``_learnt`` to what stays asleep
            for d in done:
                seq = seqs[d]
                if seq in learnt:
                    asleep[seq] = learnt[seq]
                    self._learnt.add(seq)
                else:
                    asleep[seq] = fps[d]
            frame.asleep = asleep  # narrowed by the step's footprint in ``after``
        return chosen

    def _cached(self, sim, seqs, sleep):
        """A new state of a stateful search: ``(chosen, explored, backtrack)`` by the
        cache's rule (``StateCache``); raises ``Visited`` when nothing is left here."""
        cache = self.cache
        digest, tokens = cache.fingerprint(sim)
        if digest in self._path:
            raise CycleFound("the untimed state graph has a cycle: a path met one state twice")
        self._path.add(digest)
        asleep = frozenset(tokens[s] for s in sleep)
        everything = set(range(len(seqs)))
        stored = cache.sleeps.get(digest)
        if stored is None:
            cache.sleeps[digest] = asleep
            awake = [i for i, s in enumerate(seqs) if s not in sleep]
            return (awake[0] if awake else None), [], everything
        cache.matched += 1
        cache.sleeps[digest] = stored & asleep
        left = [i for i, s in enumerate(seqs) if tokens[s] in stored and s not in sleep]
        if not left:
            raise Visited
        explored = [i for i, s in enumerate(seqs) if tokens[s] not in stored and s not in sleep]
        return left[0], explored, set(left)

    def script(self) -> list[tuple]:
        """The path of this run as a prefix another oracle replays exactly."""
        return [(f.chosen, ()) for f in self.frames if f.chosen >= 0]


@dataclass
class UntimedResult:
    executions: int
    """Complete executions run: one per equivalence class explored."""
    pruned: int
    """Executions stopped where every enabled transition was asleep."""
    states: int
    """States visited (nodes of the search tree; a replayed prefix counts once)."""
    steps: int
    """Events executed, replayed prefixes included: the search's real cost."""
    complete: bool
    violation: tuple[list, str] | None
    """(the failing path as an ``UntimedOracle`` prefix, its outcome)."""
    max_depth: int
    cpu_s: float
    cut_by: str | None = None
    matched: int = 0
    """Stateful search: arrivals at a state met before (each pruned or narrowed to the
    events its first visit left asleep); 0 for a stateless search."""
    distinct: int = 0
    """Stateful search: distinct states (fingerprints) met; 0 for a stateless search."""
    fingerprint_s: float = 0.0
    """Stateful search: CPU seconds spent fingerprinting states."""


def explore_untimed(
    run,
    max_executions: int = 1_000_000,
    time_budget: float | None = None,
    stop_at_first: bool = True,
    reduce: bool = True,
    footprints=Footprints,
    progress=None,
    channels=None,
    stateful: bool = False,
    timeouts=None,
) -> UntimedResult:
    """Search every untimed order of ``run(oracle) -> (ok, outcome)`` depth-first (see
    the module docstring). ``progress(result)``, when given, is called after each run;
    ``footprints`` and ``channels`` default to the hardware model's (tests pass a toy's);
    ``reduce=False`` explores every enabled transition of every state. ``stateful``
    keeps the visited states (``StateCache``) and prunes by them with sleep sets, in
    place of the source sets of DPOR (whose races a pruned subtree would hide)."""
    start_cpu = time.process_time()
    start_wall = time.monotonic()
    prefix: list[tuple] = []
    executions = pruned = states = steps = max_depth = 0
    violation = None
    cache = StateCache(channels or channel_of, timeouts or is_timeout) if stateful else None

    def result(complete, cut_by=None):
        stateful_counts = (
            {}
            if cache is None
            else dict(
                matched=cache.matched,
                distinct=len(cache.sleeps),
                fingerprint_s=cache.fingerprint_s,
            )
        )
        return UntimedResult(
            executions,
            pruned,
            states,
            steps,
            complete,
            violation,
            max_depth,
            time.process_time() - start_cpu,
            cut_by,
            **stateful_counts,
        )

    while True:
        oracle = UntimedOracle(prefix, footprints, reduce or stateful, channels, cache=cache)
        try:
            ok, outcome = run(oracle)
            executions += 1
        except SleepBlocked:
            ok, outcome = True, None
            pruned += 1
        frames = oracle.frames
        if reduce and cache is None:
            add_races(frames)
        states += len(frames) - len(prefix)
        steps += oracle.ties.steps
        max_depth = max(max_depth, len(frames))
        if not ok:
            violation = (oracle.script(), outcome)
            if stop_at_first:
                return result(False)
        if progress is not None:
            progress(result(False))
        while frames:
            frame = frames[-1]
            nxt = frame.next_awake() if frame.chosen >= 0 else None
            if nxt is not None:
                frame.done.append(frame.chosen)
                taken = frame.fps[frame.chosen]
                if frame.names[frame.chosen].__class__ is greenlet or ANY in taken:
                    frame.learnt[frame.seqs[frame.chosen]] = taken  # it sleeps as it ran
                frame.chosen = nxt
                break
            frames.pop()
        if not frames:
            return result(violation is None or not stop_at_first)
        prefix = [(f.chosen, tuple(f.done), f.backtrack, f.learnt) for f in frames]
        if executions + pruned >= max_executions:
            return result(False, f"--max-executions {max_executions} reached")
        if time_budget is not None and time.monotonic() - start_wall > time_budget:
            return result(False, f"--time-budget {time_budget:g} s reached")


@dataclass
class UntimedSample:
    runs: int
    """Walks run."""
    failure: tuple[int, list, str] | None
    """(its seed, its path as an ``UntimedOracle`` script, its outcome)."""


def sample_untimed(run, runs: int, first_seed: int = 0) -> UntimedSample:
    """Seeded random walks over the untimed scheduler: at every step one enabled event,
    uniformly (``random.Random(seed)``); stops at the first failing walk. A sample of
    the orders the hardware allows, reaching any depth at once, where the depth-first
    search spends its budget near the end of the first path."""
    for k in range(runs):
        oracle = UntimedOracle(reduce=False, rng=random.Random(first_seed + k))
        ok, outcome = run(oracle)
        if not ok:
            return UntimedSample(k + 1, (first_seed + k, oracle.script(), outcome))
    return UntimedSample(runs, None)


def critical_step(run, script, samples: int = 6, seed: int = 0):
    """The first step of a failing path after which every sampled continuation fails
    (the plain one, then ``samples - 1`` seeded random ones), by binary search over the
    prefix length; returns ``(step or None when the first already decides, tests run)``.
    "Every" is this sample."""
    tests = 0

    def all_fail(p: int) -> bool:
        nonlocal tests
        for k in range(samples):
            rng = None if k == 0 else random.Random(seed + k)
            oracle = UntimedOracle(script[:p], reduce=False, rng=rng)
            tests += 1
            ok, _ = run(oracle)
            if ok:
                return False
        return True

    p = first_deciding_prefix(all_fail, len(script))
    return (None if p is None else p - 1), tests


def describe_step(frames, k: int) -> str:
    """Step k of a path in the channels' names: what ran, and what a plain run would
    have run there instead."""
    f = frames[k]
    ran = channel_name(f.names[f.chosen])
    if f.chosen == 0:
        return f"step {k}: {ran} (the plain order)"
    return f"step {k}: {ran} ran before {channel_name(f.names[0])}"


def describe_path(frames) -> list[str]:
    """The steps of a path that leave the plain order (the earliest event first)."""
    return [describe_step(frames, k) for k, f in enumerate(frames) if f.chosen > 0]
