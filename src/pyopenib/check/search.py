"""Exhaustive search over a timing mode, with partial-order reduction of same-instant ties.

``explore(run, timing=Timing.UNTIMED, bound=K)`` visits every execution of the mode that
deviates from the nominal one at no more than K choice points, level by level (iterative
deepening: level k holds the executions with exactly k deviations, each visited once), and
says which levels it completed: "levels 0..K complete". A choice point is a duration the
mode frees (``check/timing.py``) or a same-instant tie between objects (``sim/ties.py``).

Reduction (exact under the dependence of ``check/footprint.py``): at a tie, running another
ready object first is worth an execution only if that object's events of the instant, or
what they trigger at that instant, touch state that another event of the same instant
touches. Otherwise every
event of the instant commutes with it: both orders reach the same state, the classic
persistent-set argument (Godefroid 1996; Flanagan & Godefroid, POPL 2005, compute such sets
dynamically from the run itself, as here). The observer learns each step's footprint while
the run executes and marks, per tie, the alternatives that race; only those become
children. ``reduce=False`` keeps every alternative: the property test compares the two.

Each execution's *equivalence class* is the projection of its protocol trace onto each
actor (the same events in the same order on every QP and endpoint, however independent
actors interleave): the search reports how many distinct classes it met.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right
from dataclasses import dataclass, field

from ..sim import Oracle, Tracer
from ..sim.choice import duration_options
from ..sim.ties import TIE_LABEL, TieControl
from .causal import LoggedStep, Move, RunLog, reorders
from .convergence import Recorder, Reference, Rejoined, Watch, rejoins
from .footprint import ANY, Footprints, event_object, host_projection
from .timing import UNTIMED_PREFIXES, Timing, duration_choices

__all__ = ["Choice", "SearchOracle", "SearchResult", "Violation", "explore"]

LOCAL_PREFIXES = ("nic.", "host.")
"""Duration labels whose event belongs to the host that draws them (a doorbell, a WQE, a
completion write, a poll): the events they are timed against are that host's."""


@dataclass
class Choice:
    """One branching choice point of a run."""

    label: str
    options: int
    chosen: int
    alternatives: tuple[int, ...] | None = None
    """The options worth a child execution (None: every option but 0)."""
    values: tuple[int, ...] | None = None
    """For a duration: the value of each option (picoseconds)."""

    def alternatives_or_all(self) -> tuple[int, ...]:
        if self.alternatives is not None:
            return self.alternatives
        return tuple(range(1, self.options))


class _Step:
    __slots__ = (
        "seq",
        "obj",
        "fp",
        "lo",
        "hi",
        "tie",
        "tpos",
        "when",
        "channel",
        "clocks",
        "decisions",
        "draws",
        "child_times",
    )

    def __init__(self, seq, obj, fp, lo, tpos):
        self.seq = seq
        self.obj = obj
        self.fp = fp
        self.lo = lo
        self.hi = lo
        self.tie = None  # (trail index, head seqs) when the step was a branching tie
        self.tpos = tpos
        self.draws = ()  # windows [first, end] of the durations it drew (their cuts)
        self.child_times = ()  # when what it scheduled is due (recorded at tied instants)


_EVERYTHING = frozenset({ANY})


def _cut_may_differ(steps: list[_Step], p: int) -> bool:
    """Whether another order of the instant's steps from ``p`` on can change the cut of a
    duration one of them draws: a duration is cut at the events pending when it is drawn
    (``check/timing.py``), and what another of these steps schedules into its window is
    pending or not depending on which runs first. Commuting steps reach the same state,
    but not the same choice points."""
    for q in range(p, len(steps)):
        for first, end in steps[q].draws:
            for r in range(p, len(steps)):
                if r != q and any(first <= t <= end for t in steps[r].child_times):
                    return True
    return False


def _conflict(a: set, b: set) -> bool:
    return bool(a & b) or ANY in a or ANY in b


class SearchOracle(Oracle):
    """Replays ``script`` at the branching choice points of ``timing`` (labels in
    ``labels``, or all when None), nominal after it; records the choices it met and, per
    tie, the alternatives that race (``reduce``). ``footprints``: the class computing
    what each step touches (``check/footprint.Footprints``; tests give toy models theirs).

    ``timing=None`` is the interval-ends enumeration of ``check/explore.py``: a duration's
    options are its nominal value, then its low and high ends; same-instant events keep
    the kernel's order (no tie choice points, the kernel's fast loop).

    ``leaf``: the run is an execution of the search's last level, whose children are
    never run, so nothing reads what it meets after its last scripted choice (the choice
    points, their options and alternatives, the steps' footprints): from there on the
    oracle answers nominal at once and stops observing (``quiet``). The run itself is
    the same: option 0 is the nominal value of a duration and the scheduling order of a
    tie, whatever the alternatives were. Its trail ends at its last deviation.

    ``record`` (with ``leaf_children``): the run records the checkpoints its children
    rejoin it at (``check/convergence.py``; ``reference()`` hands them over); a leaf given
    its parent's ``reference`` watches its run past its deviation and ends where it
    rejoins the parent's."""

    def __init__(
        self,
        script=(),
        timing: Timing | None = Timing.NOMINAL,
        labels=None,
        reduce: bool = True,
        footprints=Footprints,
        leaf_children: bool = False,
        leaf: bool = False,
        record: bool = False,
        reference: Reference | None = None,
    ):
        self.script = list(script)
        self.timing = timing
        self.labels = labels
        self.branching = labels  # the simulator answers the other labels' durations
        self.reduce = reduce
        self.trail: list[Choice] = []
        durations_branch = timing is not None and timing is not Timing.NOMINAL
        self._log = RunLog() if reduce and leaf_children and durations_branch else None
        """With ``leaf_children`` (this run's children are the search's last level) the
        whole run is logged, so that a duration's values that reorder nothing are pruned
        (``check/causal.py``)."""
        self._moves: list[Move] = []
        self.ties = None if timing is None else TieControl(event_object, observer=self)
        self.sim = None
        self._footprints = footprints()
        self._when = None
        self._steps: list[_Step] = []
        self._tie_index = None
        self._tied = False  # the current instant has had a branching tie
        self.leaf = leaf
        self.quiet = False
        """Past a leaf's last scripted choice: nominal answers, nothing observed."""
        self._quiet_at = len(self.script) if leaf and self.script else -1
        """The trail length at which the run goes ``quiet`` (-1: never)."""
        self._ended = False
        """The run's ``after_event`` ended it (``ended``)."""
        recording = record and leaf_children and timing is not None
        self.recorder = Recorder() if recording else None
        self.parent = reference if leaf else None
        """The parent's checkpoints, which this leaf may rejoin past its deviation."""
        self.watch: Watch | None = None

    # -- the oracle ----------------------------------------------------------------------
    def _branches(self, label: str) -> bool:
        return self.labels is None or label in self.labels

    def choose(self, label: str, n: int) -> int:
        if self.quiet or not self._branches(label):
            return 0
        i = len(self.trail)
        pick = self.script[i] if i < len(self.script) else 0
        if pick >= n:
            raise ValueError(
                f"scripted choice #{i} ({label}) asks option {pick} of {n}: the replayed "
                "run diverged from the recorded one"
            )
        self.trail.append(Choice(label, n, pick))
        if label == TIE_LABEL:
            self._tie_index = i
        if i + 1 == self._quiet_at:
            self.quiet = True
            if self.sim is not None:
                if self.parent is not None:
                    self.watch = Watch(self.sim, self.parent)
                self.sim.settle_nominal(self.watch)
        return pick

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        labels = self.labels  # ``_branches``, inline: most durations a run draws do not branch
        if (labels is not None and label not in labels) or self.quiet:
            return nominal
        if self.timing is None:
            values = duration_options(lo, nominal, hi)
        elif self.sim is None:
            return nominal
        else:
            if self._steps and self.timing is not Timing.NOMINAL:
                self._steps[-1].draws += (self._window(label, lo, hi),)
            values = duration_choices(
                self.timing, self.sim, label, lo, nominal, hi, self._relevant(label)
            )
        if len(values) == 1:
            return nominal
        pick = self.choose(label, len(values))
        self.trail[-1].values = values
        if self._log is not None and label in self._footprints.ADDITIVE and self._steps:
            self._moves.append(
                Move(
                    len(self.trail) - 1,
                    len(self._log.steps),
                    self.sim.scheduled,
                    label in self._footprints.FIRST_ONLY,
                )
            )
        return values[pick]

    def _window(self, label: str, lo: int, hi: int) -> tuple[int, int]:
        """The instants whose pending events cut a duration drawn now (``duration_choices``):
        the interval, or everything ahead for a duration ``untimed`` frees."""
        now = self.sim.now
        if self.timing is Timing.UNTIMED and label.startswith(UNTIMED_PREFIXES):
            return (now, 1 << 126)
        return (now + lo, now + hi)

    def _relevant(self, label: str):
        """Which pending events a duration drawn now can be reordered against usefully:
        a NIC or host duration times an event of the drawing step's own host
        (``LOCAL_PREFIXES``), so only events that conflict with that host count; any
        other (a wire latency times the far end) is cut by every pending event."""
        if not self._steps or not label.startswith(LOCAL_PREFIXES):
            return None
        here = host_projection(self._steps[-1].fp)
        if ANY in here:
            return None
        static = self._footprints.static
        sim = self.sim

        def relevant(entry) -> bool:
            fn, args = entry[2], entry[3]
            return _conflict(host_projection(static(sim, event_object(fn, args), fn, args)), here)

        return relevant

    # -- the tie observer ----------------------------------------------------------------
    def bind(self, sim) -> None:
        self.sim = sim
        if self.ties is not None and sim.tracer is None:
            sim.tracer = Tracer(sim)  # the footprints read the trace; tracing only observes

    def before(self, sim, entry, obj, heads) -> None:
        if self.quiet:
            return
        when = entry[0]
        if when != self._when:
            self._close_instant()
            self._when = when
            self._tied = False
        fp = self._footprints.static(sim, obj, entry[2], entry[3])
        step = _Step(entry[1], obj, fp, sim.scheduled, len(sim.tracer.events))
        if self._log is not None:
            step.when = when
            step.channel = self._footprints.channel(entry[2], entry[3])
            step.clocks = self._footprints.clocks(fp)
            step.decisions = self._footprints.decision_times(fp)
        if heads is not None and self._tie_index is not None:
            step.tie = (self._tie_index, [h[1] for h in heads])
            self._tied = True
        self._tie_index = None
        self._steps.append(step)

    def withdrawn(self, sim, entry) -> None:
        """A timer withdrawn before it fired: in another timing it may fire, so the run's
        log keeps its instant as an event that conflicts with everything."""
        if self._log is not None:
            self._log_unknown(entry)

    def _log_unknown(self, entry) -> None:
        """Log ``entry`` as an instant that conflicts with everything: an event the run
        never executed, so what it touches is unknown."""
        at = self.sim.scheduled
        self._log.add(LoggedStep(entry[0], entry[1], _EVERYTHING, at, at, None, (), {}, {}, ()))

    def ended(self, sim) -> None:
        """The run's ``after_event`` ended it after the step just run (a scenario stops
        once its ranks are done), or the step ended it by raising (a program's job is
        over: the runner's ``_JobOver``): that step commutes with nothing, since an
        event that another order or timing puts after it never runs in that execution."""
        if not self.quiet:
            self._ended = True

    def _left(self) -> list:
        """What the run left on the heap, in heap order: withdrawn timers that never
        reached the top and events that never ran, when its ``after_event`` ended the
        run (a scenario stops once its ranks are done) or ``until`` did. An event that
        never ran is logged with its instant only: what it touches is unknown."""
        sim = self.sim
        return sorted((*sim.pending(), *sim.pending_withdrawn()), key=lambda e: (e[0], e[1]))

    def after(self, sim) -> None:
        if self.quiet:
            return
        if self.recorder is not None and len(self.trail) >= len(self.script):
            self.recorder.after(sim)  # past its own deviations: where its children start
        step = self._steps[-1]
        step.hi = sim.scheduled
        if self._tied and step.hi > step.lo and self.timing is not Timing.NOMINAL:
            lo, hi = step.lo, step.hi
            step.child_times = tuple(e[0] for e in sim.pending() if lo < e[1] <= hi)
        events = sim.tracer.events
        if len(events) > step.tpos:
            step.fp |= self._footprints.learn(sim, events[step.tpos :])
        if self._log is not None:
            self._log_step(step, events)

    def _log_step(self, step: _Step, events) -> None:
        """Keep what ``check/causal.py`` needs of the step that just ran: its footprint
        with the trace actors it wrote to, its children, channel, clocks and decisions."""
        fp = set(step.fp)
        for ev in events[step.tpos :]:
            if ev[1] != "wire":
                fp.add(("actor", ev[3]))
        footprints = self._footprints
        clocks = footprints.clocks(step.fp)
        self._log.add(
            LoggedStep(
                step.when,
                step.seq,
                frozenset(fp),
                step.lo,
                step.hi,
                step.channel,
                tuple(clocks),
                step.clocks,
                clocks,
                step.decisions + footprints.decision_times(step.fp),
            )
        )

    def finish(self) -> None:
        """The run is over: analyse its last instant, and with the run logged, which
        values of each duration can reorder dependent events."""
        if self.quiet:
            return  # a leaf: its alternatives are never read
        if self._ended and self._steps:
            last = self._steps[-1]  # ``ended``: it commutes with nothing
            last.fp = last.fp | _EVERYTHING
            if self._log is not None:
                index = self._log.by_seq.get(last.seq)
                if index is None:  # it raised: ``after`` never logged it
                    self._log_unknown((last.when, last.seq))
                else:
                    logged = self._log.steps[index]
                    logged.fp = logged.fp | _EVERYTHING
        if self._log is not None:
            # what the run left may run (or fire) before its end in another timing
            for entry in self._left():
                self._log_unknown(entry)
        self._close_instant()
        if self._log is None:
            return
        for move in self._moves:
            choice = self.trail[move.trail_index]
            base = choice.values[choice.chosen]
            choice.alternatives = tuple(
                k
                for k in range(1, choice.options)
                if k != choice.chosen and reorders(self._log, move, choice.values[k] - base)
            )

    def _close_instant(self) -> None:
        steps = self._steps
        self._steps = []
        if not any(s.tie for s in steps):
            return
        if not self.reduce:
            return  # every alternative stays (Choice.alternatives None)
        by_seq = {s.seq: k for k, s in enumerate(steps)}
        los = [s.lo for s in steps]
        children: list[list[int]] = [[] for _ in steps]
        for k, s in enumerate(steps):
            j = bisect_right(los, s.seq - 1) - 1  # the step whose scheduling range holds s
            if 0 <= j < k and steps[j].lo < s.seq <= steps[j].hi:
                children[j].append(k)
        for p, s in enumerate(steps):
            if s.tie is None:
                continue
            trail_index, head_seqs = s.tie
            chosen = self.trail[trail_index].chosen
            if _cut_may_differ(steps, p):
                continue  # every alternative stays (Choice.alternatives None)
            alts = []
            for i, seq in enumerate(head_seqs):
                if i == chosen:
                    continue
                k = by_seq.get(seq)
                if k is None:  # never ran at this instant: keep it, we know nothing
                    alts.append(i)
                    continue
                # the alternative object's events of this instant from its head on, and
                # everything they trigger: what running that object first can move
                obj = steps[k].obj
                closure = {q for q in range(k, len(steps)) if steps[q].obj is obj}
                todo = list(closure)
                while todo:
                    for c in children[todo.pop()]:
                        if c not in closure:
                            closure.add(c)
                            todo.append(c)
                fp = set().union(*(steps[c].fp for c in closure))
                if any(
                    _conflict(fp, steps[q].fp) for q in range(p, len(steps)) if q not in closure
                ):
                    alts.append(i)
            self.trail[trail_index].alternatives = tuple(alts)

    def reference(self, ok: bool, outcome: str) -> Reference | None:
        """What this run's children need to rejoin it (None: it did not record)."""
        if self.recorder is None:
            return None
        return self.recorder.finish(self.sim, ok, outcome)

    def rejoined(self) -> tuple[bool, str]:
        """The outcome of a run that ended rejoining its parent: the parent's."""
        return self.parent.ok, self.parent.outcome

    def signature(self) -> str:
        """The run's equivalence class: each actor's events in order, without times. A
        run that rejoined its parent has the parent's events from that instant on."""
        events = self.sim.tracer.events if self.sim is not None else ()
        watch = self.watch
        if watch is not None and watch.rejoined_at is not None:
            events = events[: watch.trace_index] + self.parent.events[watch.trace_index :]
        per_actor: dict[str, list] = {}
        for ev in events:
            if ev[1] != "wire":
                per_actor.setdefault(ev[3], []).append((ev[2], ev[4]))
        h = hashlib.sha256(repr(sorted(per_actor.items())).encode())
        return h.hexdigest()[:16]


@dataclass
class Violation:
    """A failing execution: how to steer a run into it again, and what it broke."""

    script: list[int]
    outcome: str
    deviations: list[tuple[int, str, int, int | None]]
    """(choice index, label, option, value in ps or None for a tie) where it deviates."""
    level: int


@dataclass
class SearchResult:
    timing: Timing
    bound: int
    levels_complete: int
    """The largest k such that every execution with at most k deviations ran (-1: none)."""
    executions: int
    classes: int
    """Distinct equivalence classes (per-actor event orders) among the executions."""
    violation: Violation | None
    complete: bool
    """Every execution within the bound ran (no budget cut, no stop at a violation)."""
    choice_points: int
    """Branching choice points of the nominal run."""
    ties: int
    """Of which same-instant ties."""
    labels_met: dict[str, int] = field(default_factory=dict)
    """Branching choice points of the nominal run, per label."""
    pruned: int = 0
    """Tie alternatives the reduction proved redundant (children not run)."""
    pruned_values: int = 0
    """Duration values of the last level whose moved event and causal future reorder no
    dependent events (``check/causal.py``): children not run."""
    rejoined: int = 0
    """Last-level executions that ended where they rejoined their parent's run
    (``check/convergence.py``): counted in ``executions``, not run to their end."""


def _kept(oracle, ok, outcome):
    """What the search keeps of a finished execution."""
    oracle.finish()
    rejoined = oracle.watch is not None and oracle.watch.rejoined_at is not None
    return (
        ok,
        outcome,
        oracle.trail,
        oracle.signature(),
        oracle.reference(ok, outcome),
        rejoined,
    )


def run_steered(run, oracle) -> tuple[bool, str]:
    """``run(oracle)``; for a leaf that rejoined its parent, the parent's outcome."""
    try:
        return run(oracle)
    except Rejoined:
        return oracle.rejoined()


def script_of(deviations) -> list[int]:
    """The oracle script of an execution given as (choice index, option) deviations."""
    if not deviations:
        return []
    script = [0] * (deviations[-1][0] + 1)
    for pos, alt in deviations:
        script[pos] = alt
    return script


class InlineWorkers:
    """The executor when none is given: the tasks run here, one after the other."""

    jobs = 1
    dask = None

    @staticmethod
    def map(fn, items) -> list:
        return [fn(item) for item in items]


def batch_size(workers) -> int:
    """Executions handed out at once: enough to keep every worker busy, few enough that
    a search that stops at its first failure does little work past it."""
    return 1 if workers.jobs == 1 and workers.dask is None else 4 * workers.jobs


def explore(
    run,
    timing: Timing = Timing.NOMINAL,
    bound: int = 1,
    labels=None,
    max_executions: int = 20_000,
    stop_at_first: bool = True,
    reduce: bool = True,
    workers=None,
    footprints=Footprints,
) -> SearchResult:
    """Search the executions of ``run(oracle) -> (ok, outcome)`` under ``timing`` with at
    most ``bound`` deviations (see the module docstring). With ``workers`` the level's
    executions run in ordered batches; counts and the violation are the sequential ones."""
    from .executions import Steering, run_level  # it builds on this module's oracle

    labels = frozenset(labels) if labels is not None else None
    workers = workers or InlineWorkers()
    level: list[tuple] = [()]
    executions = 0
    classes: set[str] = set()
    pruned = 0
    pruned_values = 0
    rejoined = 0
    nominal_trail: list[Choice] = []
    violation = None
    depth = 0
    levels_complete = -1

    def result(complete):
        met: dict[str, int] = {}
        for c in nominal_trail:
            met[c.label] = met.get(c.label, 0) + 1
        return SearchResult(
            timing,
            bound,
            levels_complete,
            executions,
            len(classes),
            violation,
            complete,
            len(nominal_trail),
            met.get(TIE_LABEL, 0),
            met,
            pruned,
            pruned_values,
            rejoined,
        )

    record = reduce and timing is not None and rejoins(run)
    references: dict[tuple, Reference] = {}
    while level:
        following: list[tuple] = []
        before = executions
        leaves = depth + 1 == bound  # this level's children are the last level
        args = (timing, labels, reduce, footprints, leaves, depth == bound, record)
        steering = Steering(run, args, _kept)
        parents, references = references, {}
        batches = run_level(
            steering, level, workers, stop_at_first, max_executions - before, parents
        )
        for batch in batches:
            for devs, (ok, outcome, trail, sig, reference, rejoined_parent) in batch:
                executions += 1
                rejoined += rejoined_parent
                classes.add(sig)
                if reference is not None:
                    references[devs] = reference
                if executions == 1:
                    nominal_trail = trail
                if not ok and violation is None:
                    violation = Violation(
                        script_of(devs),
                        outcome,
                        [
                            (i, c.label, c.chosen, None if c.values is None else c.values[c.chosen])
                            for i, c in enumerate(trail)
                            if c.chosen
                        ],
                        depth,
                    )
                    if stop_at_first:
                        return result(False)
                if depth >= bound:
                    continue
                start = devs[-1][0] + 1 if devs else 0
                for j in range(start, len(trail)):
                    c = trail[j]
                    alts = c.alternatives_or_all()
                    if c.label == TIE_LABEL:
                        pruned += c.options - 1 - len(alts)
                    elif c.alternatives is not None:
                        pruned_values += c.options - 1 - len(alts)
                    for alt in alts:
                        following.append((*devs, (j, alt)))
        if executions - before < len(level):  # the execution budget ran out
            return result(False)
        levels_complete = depth
        depth += 1
        if depth > bound:
            break
        level = following
    levels_complete = bound  # the levels after the last one run are empty
    return result(True)
