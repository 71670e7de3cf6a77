"""The tie reduction (``SearchOracle._close_instant``) on hand-built toy models, one per
rule of it that the random models of ``test_check_search_reduction.py`` reach too rarely
to pin (or, for learnt footprints, cannot reach: their footprints are all static): each
model's reduced search must reach every final state the unreduced one reaches, and loses
one when that rule is dropped. The cut rule has its model there (``_CUT_DIFFERS``)."""

from __future__ import annotations

from toy_models import ToyFootprints, ToyRun, Worker, orders

from pyopenib.check.search import explore
from pyopenib.check.timing import Timing


def _final_states(run_class, model, nregs, timing, bound, footprints):
    """The final states of the unreduced and the reduced search over ``model``."""
    found = []
    for reduce in (False, True):
        run = run_class(model, nregs)
        res = explore(
            run,
            timing,
            bound,
            None,
            50_000,
            stop_at_first=False,
            reduce=reduce,
            footprints=footprints,
        )
        assert res.complete
        found.append(run.outcomes)
    return found


def test_an_alternative_racing_only_with_what_runs_after_its_head_is_kept():
    """A, B and C ready at one instant, run A, B, C1, C2: B (register 1) races with C1,
    which runs after B's head, and with nothing before it. The final state where B
    precedes C1 and C2 precedes A (register 0) starts with B: only running B first at
    the instant's first tie reaches it, so that alternative must be compared with every
    step of the instant, not only those between the tie and B's head."""
    model = [[(0, None)], [(1, None)], [(1, None), (0, None)]]
    full, reduced = _final_states(ToyRun, model, 2, Timing.NOMINAL, 8, ToyFootprints)
    assert len(full) == 4  # both orders on each register
    assert reduced == full


def test_an_alternative_whose_chain_of_triggered_events_races_is_kept():
    """B's step (register 2) triggers a relay that triggers another, on register 0,
    which A (worker 1) writes too; nothing else B's events touch races. Running B first
    is what lets the chain overtake A: the alternative's closure must follow what its
    events trigger transitively, not only their direct children."""
    model = [[(1, None)], [(0, None)], [(2, (2, 0))]]
    assert orders(model) == 20
    full, reduced = _final_states(ToyRun, model, 3, Timing.NOMINAL, 10, ToyFootprints)
    assert len(full) == 2
    assert reduced == full


class _TracedWorker(Worker):
    """A worker whose write of a register says so in the trace: its footprint is known
    once it ran, as ``Footprints.learn`` reads a model's trace."""

    def write(self, var):
        super().write(var)
        self.sim.tracer.emit("toy", "write", f"worker{self.name}", reg=var)


class _TracedRun(ToyRun):
    worker = _TracedWorker


class _LearntFootprints(ToyFootprints):
    """A worker's step touches nothing known before it runs; what it writes is learnt
    from the trace it emits."""

    def static(self, sim, obj, fn, args):
        if obj.__class__ is _TracedWorker:
            return set()
        return super().static(sim, obj, fn, args)

    def learn(self, sim, events):
        return {("reg", dict(ev[4])["reg"]) for ev in events if ev[2] == "write"}


def test_a_footprint_learnt_from_the_trace_keeps_the_race():
    """Two workers tie on register 0, which only their trace tells: the footprint a
    step learns when it runs joins its static one."""
    model = [[(0, None)], [(0, None)]]
    full, reduced = _final_states(_TracedRun, model, 1, Timing.NOMINAL, 3, _LearntFootprints)
    assert len(full) == 2
    assert reduced == full
