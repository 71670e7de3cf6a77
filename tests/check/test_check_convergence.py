"""Last-level executions that end where they rejoin their parent's run (check/convergence.py).

Rejoining must change what a search costs, never what it reports: the executions, their
classes, the verdict and the counterexample are those of a search whose every execution
runs to its end."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from model_runs import t3_bibw

from pyopenib.btl.rcache import RegistrationCache
from pyopenib.btl.registrations import RegistrationCounts
from pyopenib.check import convergence, executions
from pyopenib.check.channels import channel_of, is_timeout
from pyopenib.check.fingerprint import state_fingerprint
from pyopenib.check.scenario_runs import RACE_LABELS, ScenarioRun
from pyopenib.check.search import explore
from pyopenib.check.timing import Timing
from pyopenib.sim import Simulator
from pyopenib.sim.ties import TIE_LABEL


def _without_rejoin(monkeypatch):
    monkeypatch.setattr(ScenarioRun, "rejoinable", False)


def _same_but_rejoined(a, b) -> bool:
    return dataclasses.replace(a, rejoined=0) == dataclasses.replace(b, rejoined=0)


@pytest.mark.parametrize(
    ("policy", "iterations", "timing", "bound", "forked"),
    [
        ("own", 3, Timing.BOUNDS, 1, True),
        ("own", 6, Timing.NOMINAL, 2, False),
        ("smallest", 8, Timing.BOUNDS, 1, False),
    ],
)
def test_rejoining_changes_no_search_result(monkeypatch, policy, iterations, timing, bound, forked):
    """The same executions, classes, levels, verdict and counterexample with and without
    rejoining, forked or re-executed; with ``smallest`` the nominal run fails, and the
    leaves that rejoin it fail with its outcome."""
    if forked:
        monkeypatch.setattr(executions, "fork_from", lambda skipped, fork, execution: 0)
    else:
        monkeypatch.setattr(executions, "fork_unavailable", lambda: "re-executed in this test")
    run = t3_bibw(iterations, policy=policy)
    labels = RACE_LABELS | {TIE_LABEL}
    rejoining = explore(run, timing, bound, labels, 3000, stop_at_first=False)
    _without_rejoin(monkeypatch)
    to_the_end = explore(run, timing, bound, labels, 3000, stop_at_first=False)
    assert to_the_end.rejoined == 0
    assert rejoining.rejoined > 0  # a parent's last two children never rejoin (CLOCKED)
    assert _same_but_rejoined(rejoining, to_the_end)
    if policy == "smallest":
        assert rejoining.violation is not None and rejoining.violation.level == 0


def _timed(sim, at):
    return state_fingerprint(sim, channel_of, is_timeout, at)[0]


class _Clamped:
    """A model object with a FIFO clamp (declared for the test as the hardware's are)."""

    def __init__(self, last):
        self.last_ready = last


@pytest.fixture
def clamped_class(monkeypatch):
    from pyopenib.check import fingerprint

    name = f"{_Clamped.__module__}.{_Clamped.__qualname__}"
    monkeypatch.setitem(fingerprint.DECLARED, name, {})
    monkeypatch.setitem(fingerprint.CLAMPS, name, {"last_ready"})
    fingerprint._FOUND.clear()
    fingerprint._PLANS.clear()
    fingerprint._CLAMPS_FOUND.clear()
    yield
    fingerprint._FOUND.clear()
    fingerprint._PLANS.clear()
    fingerprint._CLAMPS_FOUND.clear()


def _sim_holding(obj) -> Simulator:
    sim = Simulator()

    def body():
        held = obj  # noqa: F841 - the process's frame is what the fingerprint walks
        sim.sleep(10)

    sim.spawn(body)
    sim.run(until=5)
    return sim


def test_a_clamp_in_the_past_is_one_state_and_a_clamp_ahead_is_not(clamped_class):
    at = 5
    past_a, past_b = _sim_holding(_Clamped(3)), _sim_holding(_Clamped(5))
    ahead_a, ahead_b = _sim_holding(_Clamped(6)), _sim_holding(_Clamped(7))
    assert _timed(past_a, at) == _timed(past_b, at)
    assert _timed(ahead_a, at) != _timed(ahead_b, at)
    assert _timed(past_a, at) != _timed(ahead_a, at)
    # the untimed fingerprint keeps every value
    assert (
        state_fingerprint(past_a, channel_of, is_timeout)[0]
        != (state_fingerprint(past_b, channel_of, is_timeout)[0])
    )


def test_a_timed_fingerprint_has_the_pending_events_times():
    def sim_with(delay):
        sim = Simulator()
        sim.schedule(delay, _nothing)
        return sim

    assert _timed(sim_with(10), 0) != _timed(sim_with(11), 0)
    assert (
        state_fingerprint(sim_with(10), channel_of, is_timeout)[0]
        == (state_fingerprint(sim_with(11), channel_of, is_timeout)[0])
    )


class _Pd:
    def reg_mr(self, buffer, access):
        return _Mr()


class _Mr:
    addr = 0x10000000
    lkey = rkey = 1

    def dereg(self):
        pass


def test_the_registration_cache_is_walked_without_host_addresses():
    """Two caches holding the same registrations of buffers the allocator put at
    different addresses are one state; a registration at another offset is another."""

    def cache_with(owner, start, stop):
        cache = RegistrationCache(_Pd(), 0, RegistrationCounts(), leave_pinned=True)
        cache.register(owner[start:stop])
        return cache

    a, b = np.zeros(4096, np.uint8), np.zeros(4096, np.uint8)
    assert a.ctypes.data != b.ctypes.data
    views = [cache_with(a, 64, 128), cache_with(b, 64, 128), cache_with(b, 0, 64)]
    walked = [_offsets_of(c) for c in views]
    assert walked[0] == walked[1] != walked[2]


def _offsets_of(cache):
    return [(bytes(owner), [(o, n) for _, o, n in regs]) for owner, regs in cache.owner_offsets()]


def test_a_watch_never_compares_before_its_deviation(monkeypatch):
    """A leaf's watch looks only at checkpoints at or after the instant it deviated."""
    step = convergence.CHECKPOINT_PS
    reference = convergence.Reference(checkpoints={0: (b"", b"", 0), step: (b"", b"", 0)})
    compared = []
    monkeypatch.setattr(convergence, "_cheap_key", lambda s: compared.append(s.now) or b"?")

    def watched(now, next_event):
        sim = Simulator()
        sim.schedule(now, _nothing)
        sim.schedule(next_event, _nothing)
        sim.run(until=now)
        convergence.Watch(sim, reference)()

    watched(step // 2, step // 2 + 1)  # the checkpoint before the next event is 0: before
    assert compared == []
    watched(step // 2, step + 1)  # it is ``step``: after the deviation
    assert compared == [step // 2]


def _nothing():
    pass
