"""Running one level of an exhaustive search: each execution forked from its parent's run
where this process may fork (``check/forking.py``) and where that costs less than running it
again from the start, re-executed from the start otherwise.

A level lists executions as their deviations from nominal timing, children of one parent
side by side (the breadth-first searches of ``explore.py`` and ``search.py`` build them so).
``run_level`` hands back ``(deviations, result)`` pairs in level order either way, so a search's
counts, verdict and counterexample do not depend on how its executions ran.

Where a child runs is a measured decision. A child forked at its deviating choice point j
skips the prefix of the run up to j, and costs a fork instead: the fork call, the child's
copies of every page it writes, its exit (``ForkCost``). The last two children of a parent
run from the start first, with a clock at every choice point they meet (``ClockedOracle``):
that says what each prefix costs. The children whose prefix costs more than a fork are
forked from one more run of the parent, if what they save pays for that run; the others run
from the start, first (their prefixes are the shorter ones, so the level order is kept).
Without fork (a run not ``forkable``, ``--dask``, no ``os.fork``, threads running) the
children run from the start on the workers, in ordered batches, as before prefix sharing
existed.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import deque
from dataclasses import dataclass
from itertools import groupby
from statistics import median
from time import process_time

from .forking import ForkingOracle, PrefixForks, empty_fork_cost, fork_unavailable, run_forked
from .monitor import Monitor
from .search import SearchOracle, batch_size, run_steered, script_of

__all__ = [
    "FORK_COST",
    "ClockedOracle",
    "ForkCost",
    "Steering",
    "execute",
    "fork_from",
    "forks_here",
    "run_level",
]


@dataclass(frozen=True)
class Steering:
    """How a search steers an execution: ``run(oracle) -> (ok, outcome)``, the
    ``SearchOracle`` arguments after the script, and ``keep(oracle, ok, outcome)``, what
    the search keeps of a finished execution (a module-level function: the workers and
    the forked children both call it)."""

    run: object
    oracle_args: tuple
    keep: object


def execute(task):
    """One execution from the start (a worker's task): ``(steering, script, reference)``,
    ``reference`` the checkpoints of the parent it may rejoin (or None)."""
    steering, script, reference = task
    oracle = SearchOracle(script, *steering.oracle_args, reference=reference)
    ok, outcome = run_steered(steering.run, oracle)
    return steering.keep(oracle, ok, outcome)


class ClockedOracle(SearchOracle):
    """A ``SearchOracle`` that notes the CPU time (``process_time``) at which the run
    reaches each branching choice point it records (``reached[i]``: choice #i)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reached: list[float] = []

    def choose(self, label: str, n: int) -> int:
        if len(self.reached) == len(self.trail) and self._branches(label) and not self.quiet:
            self.reached.append(process_time())
        return super().choose(label, n)


class ForkCost:
    """What a forked child costs this process beyond the part of the run it executes, in
    CPU seconds: its fork call, the pages it copies as it writes to the parent's heap,
    its exit. Measured on the children forked so far (``record``): a child's CPU less
    what its part of the run costs from the start (the clocked run's whole cost less its
    prefix); the median of the last ``SAMPLES`` (one child may meet a garbage collection).
    It is a property of this process (its heap, the machine), so one object serves every
    search the process runs. ``empty_fork() -> float`` measures a fork whose child exits
    at once (``forking.empty_fork_cost``)."""

    SAMPLES = 64

    def __init__(self, empty_fork=empty_fork_cost):
        self._samples: deque[float] = deque(maxlen=self.SAMPLES)
        self._empty_fork = empty_fork
        self._empty: float | None = None

    def estimate(self, execution: float) -> float:
        """The cost of a fork, for executions that cost ``execution`` from the start: the
        median measured; before any child was measured, at least an empty fork (measured
        once) and at least half an execution (past half of the run, a child skips more
        than it runs)."""
        if self._samples:
            return median(self._samples)
        if self._empty is None:
            self._empty = self._empty_fork()
        return max(self._empty, execution / 2)

    def record(self, child: float, suffix: float) -> None:
        """A forked child cost ``child`` CPU seconds where running its part of the run
        costs ``suffix``."""
        self._samples.append(child - suffix)


FORK_COST = ForkCost()
"""This process's measured fork cost."""


def forks_here(steering: Steering, workers) -> bool:
    """Whether this search's executions may be forked from their parents' runs: the run
    says its only effect is its result (``forkable``, e.g. ``ScenarioRun``; a closure
    that records what it saw must run in this process), no Dask, and this process may
    fork (``fork_unavailable``)."""
    return (
        getattr(steering.run, "forkable", False)
        and workers.dask is None
        and fork_unavailable() is None
    )


CLOCKED = 2
"""A parent's last children that run from the start, to their end, never rejoining it
(``check/convergence.py``): where the search forks they are clocked (their cost is a
whole run's, and their prefixes are nearly the parent's run, which prices every
sibling's); elsewhere they run to their end all the same, so that how many executions
rejoined, which the verdict prints, does not depend on whether the search forks."""


def run_level(
    steering: Steering, level: list, workers, stop_at_first: bool, budget: int, references=None
):
    """Yield ordered batches of ``(deviations, result)``, for the first ``budget``
    executions of ``level``; ``references`` maps a parent's deviations to the checkpoints
    its children may rejoin it at (``check/convergence.py``). With ``stop_at_first`` nothing past the first failing result is wanted
    (the search stops there); a ``Monitor`` as ``workers`` counts every result and ends
    the search with ``BudgetReached`` between two of them once its time is up."""
    level = level[: max(budget, 0)]
    references = references or {}
    if not forks_here(steering, workers):
        for parent, group in groupby(level, key=lambda devs: devs[:-1]):
            group = list(group)
            first, last = group[:-CLOCKED], group[-CLOCKED:]
            yield from _reexecuted(steering, first, workers, references.get(parent))
            yield from _reexecuted(steering, last, workers)  # to their end, as when forking
        return
    monitor = workers if isinstance(workers, Monitor) else None
    for parent, group in groupby(level, key=lambda devs: devs[:-1]):
        group = list(group)
        reference = references.get(parent)
        if group == [()]:  # the first execution has no parent to fork from
            yield from _reexecuted(steering, group, workers)
            continue
        # The last children run from the start first, clocked: their prefixes are
        # nearly the parent's whole run as the children see it, so they say what every
        # sibling's prefix costs; their results are handed back last, in level order.
        last, clocks, costs = [], [], []
        for devs in group[-CLOCKED:]:
            if monitor is not None:
                monitor.check_budget()
            result, reached, cost = _clocked(steering, devs)
            if monitor is not None:
                monitor.count([result])
            last.append((devs, result))
            clocks.append(reached)
            costs.append(cost)
        group = group[:-CLOCKED]
        execution = min(costs)
        prefix = _prefix_costs(clocks)
        skipped = [prefix[devs[-1][0]] for devs in group]
        first = fork_from(skipped, FORK_COST.estimate(execution), execution)
        if first:
            yield from _reexecuted(steering, group[:first], workers, reference)
        forked = group[first:]
        if forked:
            if monitor is not None:
                monitor.check_budget()
            results, spent = _forked(
                steering, parent, forked, workers.jobs, stop_at_first, monitor, reference
            )
            for cost, skip in zip(spent, skipped[first:], strict=False):
                FORK_COST.record(cost, execution - skip)
            yield list(zip(forked, results, strict=False))  # fewer results: it stopped early
            if len(results) < len(forked):
                if monitor is not None:
                    monitor.check_budget()  # stopped by the time budget, not by a failure
                return  # stopped at a failure: nothing after it is wanted
        yield last


def fork_from(skipped: list[float], fork: float, execution: float) -> int:
    """Which of a parent's children to fork: from the returned index on (``len``: none).
    ``skipped``: what each child's prefix costs, in level order (ascending, as the choice
    index grows); ``fork``: what a fork costs; ``execution``: a whole run. A child is
    worth forking when its prefix costs more than a fork, and all of them together must
    also pay for the parent's run, one more execution."""
    first = bisect_right(skipped, fork)
    if sum(skipped[first:]) - fork * (len(skipped) - first) <= execution:
        return len(skipped)
    return first


def _prefix_costs(clocks: list[list[float]]) -> list[float]:
    """Per choice index, the CPU seconds from the start of a run to that choice point:
    the least over the clocked runs that reached it (a collection or another process may
    slow any one run)."""
    prefix: list[float] = []
    for reached in clocks:
        for i, t in enumerate(reached):
            if i < len(prefix):
                prefix[i] = min(prefix[i], t)
            else:
                prefix.append(t)
    return prefix


def _clocked(steering: Steering, devs) -> tuple:
    """One execution from the start in this process, clocked: (what the search keeps, the
    CPU time at each choice point from the run's start, the run's CPU seconds)."""
    start = process_time()
    oracle = ClockedOracle(script_of(devs), *steering.oracle_args)
    ok, outcome = steering.run(oracle)
    result = steering.keep(oracle, ok, outcome)
    return result, [t - start for t in oracle.reached], process_time() - start


def _forked(steering, parent, group, jobs, stop_at_first, monitor, reference) -> tuple[list, list]:
    """The results of ``group`` (children of ``parent``) from one run of the parent, and
    what each child cost (``PrefixForks.costs``); ``reference``: the parent's checkpoints,
    which the children may rejoin."""

    def wanted(result) -> bool:
        if monitor is not None:
            monitor.count([result])
        if stop_at_first and not result[0]:
            return False
        return monitor is None or not monitor.over_budget()

    forks = PrefixForks([devs[-1] for devs in group], jobs, wanted)
    oracle = ForkingOracle(forks, script_of(parent), *steering.oracle_args, reference=reference)
    return run_forked(steering.run, oracle, forks, steering.keep), forks.costs


def _reexecuted(steering, level, workers, reference=None):
    batch = batch_size(workers)
    for at in range(0, len(level), batch):
        chunk = level[at : at + batch]
        tasks = [(steering, script_of(devs), reference) for devs in chunk]
        yield list(zip(chunk, workers.map(execute, tasks), strict=True))
