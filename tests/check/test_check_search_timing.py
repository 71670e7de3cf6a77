"""Timing modes (what a duration may be), the trace schema, and ``check --timing``."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from pyopenib.apps.scenarios import run_scenario
from pyopenib.check.timing import Timing, duration_choices
from pyopenib.cli import main
from pyopenib.sim import Simulator
from pyopenib.sim.schema import SCHEMA, identities, validate
from pyopenib.sim.trace import ValidatingTracer


def _sim_with_pending(*offsets):
    sim = Simulator()
    for d in offsets:
        sim.schedule(d, lambda: None)
    return sim


def test_nominal_timing_never_moves_a_duration():
    sim = _sim_with_pending(5)
    assert duration_choices(Timing.NOMINAL, sim, "nic.doorbell", 2, 4, 10) == (4,)


def test_bounds_cut_the_interval_at_pending_events_only():
    # nothing pending inside [2, 10]: every value gives the same order as nominal
    assert duration_choices(Timing.BOUNDS, _sim_with_pending(50), "nic.x", 2, 4, 10) == (4,)
    # one event pending at 5: the tie at 5 and the piece after it are the alternatives;
    # lo (before 5, like nominal) is not one, and an interior value is
    assert duration_choices(Timing.BOUNDS, _sim_with_pending(5), "nic.x", 2, 4, 10) == (4, 5, 6)
    # two events: one value per piece and per cut
    got = duration_choices(Timing.BOUNDS, _sim_with_pending(3, 7), "nic.x", 2, 4, 10)
    assert got == (4, 2, 3, 7, 8)


def test_untimed_frees_hardware_durations_but_not_host_ones():
    sim = _sim_with_pending(100)
    assert duration_choices(Timing.UNTIMED, sim, "nic.send_wqe", 3, 4, 5) == (4, 100, 101)
    assert duration_choices(Timing.UNTIMED, sim, "host.poll", 3, 4, 5) == (4,)
    assert duration_choices(Timing.UNTIMED, sim, "wire.loss", 0, 0, 99) == (0,)


@pytest.mark.parametrize("device", ["chelsio-t3", "connectx"])
@pytest.mark.parametrize("scenario", ["bibw", "incast"])
def test_every_emitted_event_follows_the_schema(device, scenario):
    tracer = ValidatingTracer()
    run_scenario(scenario, device=device, credits_qp="smallest", iterations=60, trace=tracer)
    assert tracer.events
    for ev in tracer.events:
        assert identities(ev)[0][0] != "unknown"


def test_the_schema_refuses_drifted_events():
    with pytest.raises(ValueError, match="not declared"):
        validate((0, "hw", "nonsense", "node000/x/qp64", ()))
    with pytest.raises(ValueError, match="fields"):
        validate((0, "hw", "send_left", "node000/x/qp64", (("psn", 1),)))
    with pytest.raises(ValueError, match="actor"):
        validate((0, "hw", "send_left", "rank0->1", (("msn", 1),)))
    assert SCHEMA[("hw", "send_left")].fields == ("msn",)


def test_qp_events_name_their_qp_nic_and_host():
    ev = (0, "hw", "send_left", "node001/chelsio-t3/qp65", (("msn", 3),))
    assert identities(ev) == (
        ("qp", "node001/chelsio-t3/qp65"),
        ("nic", "node001/chelsio-t3"),
        ("host", "node001"),
    )


def test_check_timing_nominal_finds_the_t3_race_at_level_0():
    r = CliRunner().invoke(
        main,
        [
            "check",
            "bibw",
            "--credits-qp",
            "smallest",
            "--exhaustive",
            "--timing",
            "nominal",
            "--jobs",
            "1",
        ],
    )
    assert r.exit_code == 1, r.output
    assert "COUNTEREXAMPLE (timing nominal, level 0," in r.output and "TERMINATE" in r.output


def test_check_timing_bounds_level_0_proves_own_and_counts_ties():
    r = CliRunner().invoke(
        main,
        [
            "check",
            "bibw",
            "--credits-qp",
            "own",
            "--iterations",
            "6",
            "--exhaustive",
            "--timing",
            "bounds",
            "--deviations",
            "0",
            "--jobs",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "levels 0..0 complete" in r.output and "same-instant ties" in r.output


def test_check_timing_without_exhaustive_is_refused():
    """Only untimed also samples (random walks over its scheduler)."""
    for timing in ("nominal", "bounds"):
        r = CliRunner().invoke(main, ["check", "bibw", "--timing", timing])
        assert r.exit_code == 2 and "--exhaustive" in r.output
