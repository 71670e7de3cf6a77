"""The stateful untimed search: state fingerprints declared per class, and pruning by
visited states with sleep sets reaching every final state full enumeration reaches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from test_check_untimed import ToyFootprints, ToyRun, _Helper, _model, _Worker

from pyopenib.check import fingerprint
from pyopenib.check.fingerprint import Undeclared, declare, state_fingerprint
from pyopenib.check.untimed import explore_untimed
from pyopenib.sim import Simulator
from pyopenib.sim.ties import receiver_of

declare(_Worker)
declare(_Helper)


def _timeouts(fn, args) -> bool:
    return False


def _explore(model, **kw):
    run = ToyRun(model, 3)
    res = explore_untimed(
        run,
        stop_at_first=False,
        footprints=ToyFootprints,
        channels=receiver_of,
        timeouts=_timeouts,
        **kw,
    )
    assert res.complete
    return run.outcomes, res


@settings(max_examples=60, deadline=None)
@given(_model)
def test_stateful_search_reaches_every_final_state_full_enumeration_reaches(model):
    full, res_full = _explore(model, reduce=False)
    stateful, res = _explore(model, stateful=True)
    assert stateful == full
    assert res.executions <= res_full.executions


class _Setter:
    """Writes a constant: two setters of one register race (dependent) but both orders
    reach one state, which only a stateful search can see."""

    def __init__(self, regs):
        self.regs = regs

    def step(self, sim, var, spawn):
        self.regs[var] = 1


declare(_Setter)


class _SetterRun:
    def __call__(self, oracle):
        sim = Simulator(oracle=oracle)
        regs = [0, 0, 0]
        for name in range(3):
            w = _Setter(regs)
            for k, var in enumerate((0, name)):
                sim.schedule(10 * k + name, w.step, sim, var, None)
        sim.run()
        return True, repr(regs)


def test_converging_orders_are_pruned_as_visited():
    """Three writers of one value race on a register: 3! orders of the race, one state."""
    kw = dict(stop_at_first=False, footprints=ToyFootprints, channels=receiver_of)
    stateless = explore_untimed(_SetterRun(), **kw)
    stateful = explore_untimed(_SetterRun(), stateful=True, timeouts=_timeouts, **kw)
    assert stateless.complete and stateful.complete
    assert stateful.matched > 0
    assert stateful.executions < stateless.executions


class _Undeclared:
    def __init__(self):
        self.count = 0

    def tick(self):
        self.count += 1


def test_an_object_without_a_declaration_is_an_error_not_skipped():
    sim = Simulator()
    sim.schedule(1, _Undeclared().tick)
    with pytest.raises(Undeclared, match="_Undeclared carries state"):
        state_fingerprint(sim, receiver_of, _timeouts)


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
            return state_fingerprint(sim, receiver_of, _timeouts)[0]

        assert digest(1, 0) == digest(1, 5)
        assert digest(1, 0) != digest(2, 0)
    finally:
        del fingerprint.DECLARED[f"{Box.__module__}.{Box.__qualname__}"]
