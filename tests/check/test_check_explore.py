"""Exploration: the bounded-exhaustive search visits every execution within its bound
exactly once, finds the seed's race with `smallest` on T3 with no deviation needed, and
proves `own` for a small configuration within one deviation on the race choice points."""

from click.testing import CliRunner

from pyopenib.check import explore_exhaustive, explore_random, scenario_runner
from pyopenib.cli import main
from pyopenib.sim import Simulator

QUEUES = [("btl_openib_receive_queues", "P,128,8,6,4,4:P,65536,8,6,4,4")]


def _toy(oracle, seen):
    sim = Simulator(oracle=oracle)
    a = sim.duration("a", 1, 2, 3)
    b = sim.choose("b", ["x", "y"])
    c = sim.duration("c", 5, 5, 5)  # a fixed duration is no choice point
    d = sim.duration("other", 1, 2, 3)
    seen.append((a, b, c, d))
    return True, ""


def test_bounded_exhaustive_visits_each_execution_once():
    seen = []
    res = explore_exhaustive(lambda o: _toy(o, seen), labels={"a", "b"}, max_deviations=2)
    # a: 3 options, b: 2 options -> 6 executions, all within 2 deviations; "other" fixed
    assert res.complete and res.executions == 6 and len(set(seen)) == 6
    assert {s[3] for s in seen} == {2}
    seen.clear()
    res = explore_exhaustive(lambda o: _toy(o, seen), labels={"a", "b"}, max_deviations=1)
    assert res.executions == 4  # nominal + 2 alternatives of a + 1 of b


def test_budget_cut_is_reported_as_incomplete():
    res = explore_exhaustive(lambda o: _toy(o, []), labels=None, max_deviations=3, max_executions=5)
    assert not res.complete and res.executions == 5


def test_smallest_on_t3_fails_with_nominal_timing_already():
    run = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="smallest", iterations=40, mca_pairs=QUEUES
    )
    res = explore_exhaustive(run, labels={"nic.recv_wqe"}, max_deviations=1)
    assert res.executions == 1 and res.counterexample.deviations == []
    assert "QP_FATAL on QP 1" in res.counterexample.outcome


def test_own_on_t3_survives_every_single_deviation_of_the_shared_queue_timing():
    run = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="own", iterations=24, mca_pairs=QUEUES
    )
    res = explore_exhaustive(run, labels={"nic.recv_wqe"}, max_deviations=1)
    assert res.complete and res.counterexample is None and res.executions > 10


def test_random_exploration_reports_failing_seeds():
    run = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="smallest", iterations=40, mca_pairs=QUEUES
    )
    res = explore_random(run, runs=3, stop_at_first=False)
    assert res.seeds == [0, 1, 2]


def test_check_command_prints_a_counterexample_and_exits_1(tmp_path):
    out = tmp_path / "race.jsonl"
    r = CliRunner().invoke(
        main, ["check", "bibw", "--credits-qp", "smallest", "--runs", "2", "--trace", str(out)]
    )
    assert r.exit_code == 1, r.output
    assert "COUNTEREXAMPLE: seed 0" in r.output and "--replay pyoib1." in r.output
    assert out.stat().st_size > 0


def test_check_command_reports_coverage_when_nothing_fails():
    r = CliRunner().invoke(
        main,
        [
            "check",
            "bibw",
            "--credits-qp",
            "own",
            "--exhaustive",
            "--labels",
            "nic.recv_wqe",
            "--iterations",
            "16",
        ],
    )
    assert r.exit_code == 0, r.output
    assert "PROVED for this configuration" in r.output and "levels 0..1 complete" in r.output


def test_worker_processes_explore_exactly_what_a_sequential_search_does():
    """Batches over two processes: same execution count, coverage and counterexample."""
    from pyopenib.workers import Workers

    ok_run = scenario_runner("bibw", credits_qp="own", iterations=12, mca_pairs=QUEUES)
    bad_run = scenario_runner("bibw", credits_qp="smallest", iterations=40, mca_pairs=QUEUES)
    labels = {"nic.recv_wqe", "nic.send_wqe"}
    with Workers(2) as workers:
        for run in (ok_run, bad_run):
            alone = explore_exhaustive(run, labels, max_deviations=1)
            shared = explore_exhaustive(run, labels, max_deviations=1, workers=workers)
            assert (shared.executions, shared.complete, shared.choice_points) == (
                alone.executions,
                alone.complete,
                alone.choice_points,
            )
            assert (shared.counterexample is None) == (alone.counterexample is None)
            if alone.counterexample is not None:
                assert shared.counterexample.script == alone.counterexample.script
                assert shared.counterexample.outcome == alone.counterexample.outcome
        cut = explore_exhaustive(
            ok_run, labels, max_deviations=1, max_executions=7, workers=workers
        )
        assert not cut.complete and cut.executions == 7
        rand = explore_random(bad_run, runs=5, first_seed=3, workers=workers)
        assert rand.executions == 1 and rand.seeds == [3]


def test_check_with_dask_missing_says_how_to_install_it(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    r = CliRunner().invoke(main, ["check", "bibw", "--runs", "1", "--dask", "local"])
    assert r.exit_code == 1
    assert "pip install 'pyopenib[dask]'" in r.output
