"""Running one level of an exhaustive search: each execution forked from its parent's run
where this process may fork (``check/forking.py``), re-executed from the start otherwise.

A level lists executions as their deviations from nominal timing, children of one parent
side by side (the breadth-first searches of ``explore.py`` and ``search.py`` build them so).
``run_level`` hands back ``(deviations, result)`` pairs in level order either way, so a search's
counts, verdict and counterexample do not depend on how its executions ran: with fork, the
last two children of a parent run from the start and, if their cost says forking pays
(``fork_pays``), the parent execution runs once more and forks every other child at its
deviating choice point; without (a run not ``forkable``, ``--dask``, no ``os.fork``,
threads running, or executions too cheap for forking to pay) the children run from the
start on the workers, in ordered batches, as before prefix sharing existed.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import groupby

from .forking import ForkingOracle, PrefixForks, fork_unavailable, run_forked
from .monitor import Monitor
from .search import SearchOracle, batch_size, run_steered, script_of

__all__ = ["FORK_PAYS_S", "Steering", "execute", "fork_pays", "forks_here", "run_level"]


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


FORK_PAYS_S = 0.025
"""CPU seconds the last children of a parent must cost for forking their siblings to
pay. A forked child costs ~10-12 ms more than the part of the run it executes (its
parent's page tables, and ~1,500 copy-on-write faults as it touches a CPython heap) and
skips on average half of the prefix the last children run: at 40 fragments a lo/hi
execution costs ~17 ms and running the siblings again from the start is cheaper; a
bounds child observed up to its last choice point ~30 ms, and forking is
(docs/PERFORMANCE.md)."""


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


def fork_pays(costs: list) -> bool:
    """Whether forking the siblings of executions that cost ``costs`` CPU seconds (None:
    the run does not say) costs less than running them again: the cheapest cost more than
    ``FORK_PAYS_S`` (the cheapest: a garbage collection may land in any one run). Either
    way the results are the same; only their cost differs."""
    known = [c for c in costs if c is not None]
    return not known or min(known) > FORK_PAYS_S


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
            yield from _reexecuted(steering, list(group), workers, references.get(parent))
        return
    monitor = workers if isinstance(workers, Monitor) else None
    for parent, group in groupby(level, key=lambda devs: devs[:-1]):
        group = list(group)
        reference = references.get(parent)
        if group == [()]:  # the first execution has no parent to fork from
            yield from _reexecuted(steering, group, workers)
            continue
        # The last two children run from the start first: their prefix is nearly the
        # parent's whole run as the children see it, so what they cost
        # (``execution_cpu``, when the run reports it) says whether forking their
        # siblings pays; their results are handed back last, in level order.
        last, costs = [], []
        for devs in group[-2:]:
            last += _reexecuted(steering, [devs], workers, reference)
            costs.append(getattr(steering.run, "execution_cpu", None))
        group = group[:-2]
        if group and not fork_pays(costs):
            yield from _reexecuted(steering, group, workers, reference)
        elif group:
            if monitor is not None:
                monitor.check_budget()
            results = _forked(
                steering, parent, group, workers.jobs, stop_at_first, monitor, reference
            )
            yield list(zip(group, results, strict=False))  # fewer results: it stopped early
            if len(results) < len(group):
                if monitor is not None:
                    monitor.check_budget()  # stopped by the time budget, not by a failure
                return  # stopped at a failure: nothing after it is wanted
        yield from last


def _forked(steering, parent, group, jobs, stop_at_first, monitor, reference) -> list:
    """The results of ``group`` (children of ``parent``) from one run of the parent;
    ``reference``: the parent's checkpoints, which the children may rejoin."""

    def wanted(result) -> bool:
        if monitor is not None:
            monitor.count([result])
        if stop_at_first and not result[0]:
            return False
        return monitor is None or not monitor.over_budget()

    forks = PrefixForks([devs[-1] for devs in group], jobs, wanted)
    oracle = ForkingOracle(forks, script_of(parent), *steering.oracle_args, reference=reference)
    return run_forked(steering.run, oracle, forks, steering.keep)


def _reexecuted(steering, level, workers, reference=None):
    batch = batch_size(workers)
    for at in range(0, len(level), batch):
        chunk = level[at : at + batch]
        tasks = [(steering, script_of(devs), reference) for devs in chunk]
        yield list(zip(chunk, workers.map(execute, tasks), strict=True))
