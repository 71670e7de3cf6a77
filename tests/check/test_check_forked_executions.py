"""Prefix sharing by fork (``check/forking.py``): a search whose executions are forked
from their parents' runs returns exactly what re-executing each from the start returns
(counts, verdict, counterexample, classes), with one process or several, and falls back
to re-execution where fork is unsafe."""

import dataclasses
import threading

import pytest

from pyopenib.check import executions, explore_exhaustive, scenario_runner
from pyopenib.check.forking import fork_unavailable
from pyopenib.check.search import SearchOracle, explore
from pyopenib.check.timing import Timing
from pyopenib.sim import Simulator
from pyopenib.sim.ties import TIE_LABEL
from pyopenib.workers import Workers

QUEUES = [("btl_openib_receive_queues", "P,128,8,6,4,4:P,65536,8,6,4,4")]
RACE = {"nic.recv_wqe", "nic.send_wqe", "nic.doorbell", "nic.recv_usable"}


class ToyRun:
    """Six durations; the run fails when ``fail_at`` (index, value) is drawn, and raises
    when ``raise_at`` is: a forkable run whose children decide the verdict."""

    forkable = True

    def __init__(self, fail_at=None, raise_at=None):
        self.fail_at = fail_at
        self.raise_at = raise_at

    def __call__(self, oracle):
        sim = Simulator(oracle=oracle)
        drawn = [sim.duration(f"d{i}", 1, 2, 3) for i in range(6)]
        for i, value in enumerate(drawn):
            if (i, value) == self.raise_at:
                raise ValueError(f"d{i} drew {value}")
        ok = self.fail_at is None or drawn[self.fail_at[0]] != self.fail_at[1]
        return ok, " ".join(map(str, drawn))


def _reexecuted(monkeypatch):
    monkeypatch.setattr(executions, "fork_unavailable", lambda: "forced by the test")


def _fork_all(monkeypatch):
    """Every child forked, however cheap its prefix (``fork_from`` decides on CPU time)."""
    monkeypatch.setattr(executions, "fork_from", lambda skipped, fork, execution: 0)


@pytest.mark.parametrize("deviations", [1, 2])
def test_forked_toy_search_equals_reexecution(monkeypatch, deviations):
    _fork_all(monkeypatch)
    run = ToyRun(fail_at=(4, 3))
    forked = explore_exhaustive(run, None, deviations, stop_at_first=False)
    forked_first = explore_exhaustive(run, None, deviations)
    _reexecuted(monkeypatch)
    assert explore_exhaustive(run, None, deviations, stop_at_first=False) == forked
    assert explore_exhaustive(run, None, deviations) == forked_first
    assert forked_first.counterexample.script == [0, 0, 0, 0, 2]
    assert forked_first.executions < forked.executions  # it stopped at the failure


def test_forked_budget_cut_counts_what_sequential_counts(monkeypatch):
    _fork_all(monkeypatch)
    run = ToyRun()
    forked = explore_exhaustive(run, None, 2, max_executions=17)
    _reexecuted(monkeypatch)
    assert explore_exhaustive(run, None, 2, max_executions=17) == forked
    assert forked.executions == 17 and not forked.complete


def test_several_forked_processes_give_the_sequential_results(monkeypatch):
    _fork_all(monkeypatch)
    run = ToyRun(fail_at=(5, 1))
    alone = explore_exhaustive(run, None, 2, stop_at_first=False)
    with Workers(3) as workers:
        shared = explore_exhaustive(run, None, 2, stop_at_first=False, workers=workers)
        first = explore_exhaustive(run, None, 2, workers=workers)
        assert threading.active_count() == 1  # no pool started: the children were forked
    assert shared == alone
    assert first == explore_exhaustive(run, None, 2)


def test_a_forked_execution_that_raises_raises_in_the_search(monkeypatch):
    _fork_all(monkeypatch)
    with pytest.raises(ValueError, match="d3 drew 3"):
        explore_exhaustive(ToyRun(raise_at=(3, 3)), None, 1)


def test_fork_is_not_used_with_threads_running_nor_for_a_closure():
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert "threads are running" in fork_unavailable()
        seen = []
        run = ToyRun()
        res = explore_exhaustive(lambda o: seen.append(o) or run(o), None, 1)
    finally:
        stop.set()
        thread.join()
    assert fork_unavailable() is None
    assert len(seen) == res.executions == 13  # every execution ran in this process


def test_children_whose_prefix_costs_less_than_a_fork_run_again_from_the_start():
    """A child is forked when the prefix it skips costs more than a fork, and only when
    what the forked children save pays for the parent's run (one more execution)."""
    skipped = [0.001, 0.004, 0.010, 0.020, 0.030]
    assert executions.fork_from(skipped, 0.005, 0.030) == 2  # the first two run again
    assert executions.fork_from(skipped, 0.040, 0.030) == 5  # none pays
    assert executions.fork_from(skipped, 0.005, 0.070) == 5  # 0.045 saved < the parent's run
    assert executions.fork_from([], 0.005, 0.030) == 0


def test_fork_cost_is_measured_on_the_children_forked():
    """Before any child was measured, a fork costs at least an empty one and half an
    execution; then the median of what the children cost beyond their part of the run."""
    cost = executions.ForkCost(empty_fork=lambda: 0.004)
    assert cost.estimate(0.002) == 0.004
    assert cost.estimate(0.030) == 0.015
    for child, suffix in [(0.020, 0.010), (0.025, 0.013), (0.090, 0.010)]:
        cost.record(child, suffix)
    assert cost.estimate(0.030) == pytest.approx(0.012)


def test_a_prefix_costs_what_the_clocked_runs_took_to_reach_it():
    assert executions._prefix_costs([[0.001, 0.003, 0.004], [0.002, 0.002]]) == [
        0.001,
        0.002,
        0.004,
    ]


@pytest.mark.parametrize("fork", [True, False])
def test_a_search_gives_the_same_results_however_many_children_are_forked(monkeypatch, fork):
    """Forked or run again from the start, by the decision or by force: the same results,
    and no fork at all where no child is worth one."""
    run = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="own", iterations=3, mca_pairs=QUEUES
    )
    forked = []
    fork_run = executions.run_forked

    def counting(*args):
        forked.append(1)
        return fork_run(*args)

    monkeypatch.setattr(executions, "run_forked", counting)
    decided = explore_exhaustive(run, RACE, 1)
    monkeypatch.setattr(executions, "fork_from", lambda skipped, c, e: 0 if fork else len(skipped))
    forked.clear()
    assert explore_exhaustive(run, RACE, 1) == decided
    assert bool(forked) == fork


def test_forked_scenario_searches_equal_reexecuted_ones(monkeypatch):
    """The real T3 model: lo/hi K=1 and the bounds search with ties, fork vs re-execution,
    whole results compared (counts, classes, pruning, verdicts)."""
    _fork_all(monkeypatch)
    run = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="own", iterations=3, mca_pairs=QUEUES
    )
    lohi = explore_exhaustive(run, RACE, 1)
    bounds = explore(run, Timing.BOUNDS, 1, RACE | {TIE_LABEL}, 400)
    _reexecuted(monkeypatch)
    assert explore_exhaustive(run, RACE, 1) == lohi
    # every count, the executions that rejoined their parent's run among them
    assert explore(run, Timing.BOUNDS, 1, RACE | {TIE_LABEL}, 400) == bounds
    assert bounds.rejoined > 0
    assert lohi.complete and lohi.executions > 50
    assert bounds.complete and bounds.executions > 10


def _never_quiet(monkeypatch):
    """Every execution observed to its end, as before leaves went quiet."""
    init = SearchOracle.__init__

    def observed_to_the_end(self, *args, **kwargs):
        init(self, *args, **kwargs)
        self.leaf = False
        self._quiet_at = -1

    monkeypatch.setattr(SearchOracle, "__init__", observed_to_the_end)


def _rejoined_as(result, other):
    """``result`` with ``other``'s count of rejoined executions (the one field in which a
    search whose leaves rejoin differs from one that runs them to their end)."""
    if hasattr(result, "rejoined"):
        return dataclasses.replace(result, rejoined=other.rejoined)
    return result


@pytest.mark.parametrize("forked", [True, False])
def test_leaves_that_go_quiet_after_their_script_change_no_search_result(monkeypatch, forked):
    """A last-level execution stops observing after its last deviation (nominal answers,
    no footprints): the searches' whole results are those of executions observed to
    their end, with fork and with re-execution, a violation's included."""
    if forked:
        _fork_all(monkeypatch)
    else:
        _reexecuted(monkeypatch)
    own = scenario_runner(
        "bibw", device="chelsio-t3", credits_qp="own", iterations=3, mca_pairs=QUEUES
    )
    went_quiet = []
    finish = SearchOracle.finish

    def recording(self):
        went_quiet.append(self.quiet)
        finish(self)

    monkeypatch.setattr(SearchOracle, "finish", recording)

    def searches():
        return (
            explore_exhaustive(own, RACE, 1),
            explore(own, Timing.BOUNDS, 1, RACE | {TIE_LABEL}, 400),
            explore(own, Timing.NOMINAL, 2, {TIE_LABEL}, 400),
            explore_exhaustive(ToyRun(fail_at=(4, 3)), None, 2, stop_at_first=False),
        )

    quiet = searches()
    if not forked:  # (a forked child's finish runs in the child)
        assert sum(went_quiet) > 20  # the bounds search's leaves really went quiet
    _never_quiet(monkeypatch)
    observed = searches()
    # quiet leaves rejoin their parent's run (check/convergence.py), observed ones cannot
    assert quiet[1].rejoined > 0 and observed[1].rejoined == 0
    assert observed == tuple(_rejoined_as(r, q) for r, q in zip(quiet, observed, strict=True))
    assert quiet[1].complete and quiet[2].levels_complete == 2
    assert quiet[3].counterexample.deviations == [(4, "d4", 2)]
