"""Replay tokens reproduce an execution exactly and refuse another configuration; delta
debugging keeps only the deviations a failure needs; the critical step is the one after
which every sampled continuation fails."""

import pytest

from pyopenib.check.critical import PrefixOracle, credit_story, critical_choice
from pyopenib.check.minimize import minimize
from pyopenib.check.replay import (
    RecordingOracle,
    ReplayOracle,
    ReplayToken,
    scenario_config,
)
from pyopenib.check.scenario_runs import scenario_runner
from pyopenib.errors import PyopenibError
from pyopenib.sim import NominalOracle, RandomOracle, Simulator, Tracer

QUEUES = [("btl_openib_receive_queues", "P,128,8,6,4,4:P,65536,8,6,4,4")]


def _toy(oracle):
    """Twenty durations; the run fails when #3 and #11 both end above 8 (any others)."""
    sim = Simulator(oracle=oracle)
    values = [sim.duration(f"x{i % 2}", 1, 5, 10) for i in range(20)]
    sim.choose("pick", ["a", "b"])
    bad = values[3] > 8 and values[11] > 8
    return (not bad), f"values {values[3]}, {values[11]}"


def _failing_random_answers():
    for seed in range(200):
        rec = RecordingOracle(RandomOracle(seed))
        ok, outcome = _toy(rec)
        if not ok:
            return rec, outcome
    raise AssertionError("no failing seed")


def test_a_token_round_trips_and_replays_the_same_answers():
    rec, _ = _failing_random_answers()
    token = ReplayToken.of({"workload": "toy"}, rec.answers)
    back = ReplayToken.decode(token.encode())
    assert back == token
    again = RecordingOracle(back.oracle())
    _toy(again)
    assert [a.value for a in again.answers] == [a.value for a in rec.answers]


def test_a_damaged_or_foreign_token_is_refused_with_the_reason():
    token = ReplayToken.of({"workload": "toy"}, []).encode()
    with pytest.raises(PyopenibError) as bad:
        ReplayToken.decode(token[:-6] + "AAAAAA")
    assert bad.value.topic == "replay-bad-token" and bad.value.exit_code == 2
    with pytest.raises(PyopenibError) as foreign:
        ReplayToken.decode("hello")
    assert "pyoib1." in str(foreign.value)


def test_a_token_of_another_configuration_names_what_differs():
    mine = scenario_config("bibw", ["chelsio-t3"] * 2, [("btl_openib_credits_qp", "own")], 40, 2)
    token = ReplayToken(
        scenario_config("bibw", ["chelsio-t3"] * 2, [("btl_openib_credits_qp", "smallest")], 40, 2),
        (),
    )
    with pytest.raises(PyopenibError) as exc:
        token.require(mine)
    assert exc.value.topic == "replay-config-mismatch"
    assert "btl_openib_credits_qp: token 'smallest', this command 'own'" in str(exc.value)
    token.require(token.config)  # its own configuration is accepted


def test_a_replay_that_meets_another_label_stops_instead_of_running_another_execution():
    oracle = ReplayOracle([(0, "duration", "somewhere.else", 7)])
    with pytest.raises(PyopenibError) as exc:
        _toy(oracle)
    assert exc.value.topic == "replay-diverged" and "#0" in str(exc.value)


def test_delta_debugging_keeps_exactly_the_deviations_the_failure_needs():
    rec, outcome = _failing_random_answers()
    assert len(rec.deviations) > 5
    small = minimize(_toy, rec.deviations, outcome)
    assert [a.position for a in small.deviations] == [3, 11] and small.one_minimal
    ok, _ = _toy(ReplayOracle([(a.position, a.kind, a.label, a.value) for a in small.deviations]))
    assert not ok


def test_the_critical_step_is_the_last_deviation_a_failure_needs():
    rec, outcome = _failing_random_answers()
    small = minimize(_toy, rec.deviations, outcome)
    final = RecordingOracle(
        ReplayOracle([(a.position, a.kind, a.label, a.value) for a in small.deviations])
    )
    _toy(final)
    critical = critical_choice(_toy, final.answers, samples=4)
    assert critical.answer is not None and critical.answer.position == 11
    # fixed up to #10 (before it), a continuation still passes; from #11 on none does
    assert _toy(PrefixOracle(final.answers, 11, NominalOracle()))[0]
    assert "choice point #11" in critical.describe()[0]


def test_smallest_on_t3_is_decided_by_no_choice_point_and_told_in_credit_terms():
    run = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="smallest", iterations=12, mca_pairs=QUEUES
    )
    tracer = Tracer()
    out = run.execute(RecordingOracle(NominalOracle(), tracer), trace=tracer)
    assert not out.ok
    story = credit_story(tracer.events)
    assert story and "terminate_sent" in story[0]
    assert "credit_msg qp=1" in story[1] and "sent on qp 0" in story[1]
    rec = RecordingOracle(NominalOracle())
    run(rec)
    assert critical_choice(run, rec.answers, samples=2).answer is None
