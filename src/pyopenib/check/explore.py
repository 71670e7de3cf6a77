"""Exploring orderings: seeded random runs, and bounded-exhaustive enumeration of the
simulator's choice points.

Every nondeterministic decision of a run goes through an oracle (``sim.choose`` /
``sim.duration``). ``explore_random`` tries seeded random oracles. ``explore_exhaustive``
enumerates executions breadth-first with the search's oracle in its interval-ends mode
(``SearchOracle(script, None, labels)``): option 0 of every choice point
is the nominal one, and an execution is identified by the positions where it deviates.
With ``max_deviations = K`` it visits *every* execution that deviates from nominal timing
at no more than K choice points (delay bounding), each exactly once; when the search
finishes under the budget, that statement is proved for the configuration. Only choice
points whose label is in ``labels`` branch; the others keep their nominal value (so the
claim is "every ordering of these operations", e.g. when a receive becomes usable).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..sim import RandomOracle
from .executions import Steering, run_level
from .footprint import Footprints
from .search import InlineWorkers, batch_size, script_of

__all__ = [
    "Execution",
    "ExplorationResult",
    "explore_exhaustive",
    "explore_random",
]


@dataclass
class Execution:
    """One explored run: how it was steered and what happened."""

    script: list[int]
    ok: bool
    outcome: str
    deviations: list[tuple[int, str, int]] = field(default_factory=list)
    """(choice index, label, option) where the run left nominal timing."""


@dataclass
class ExplorationResult:
    executions: int
    complete: bool
    """True when every execution within the bound was run (not cut by the budget)."""
    choice_points: int
    """Branching choice points of the nominal run."""
    counterexample: Execution | None
    mode: str
    bound: int = 0
    seeds: list[int] = field(default_factory=list)


def _deviations(trail) -> list[tuple[int, str, int]]:
    return [(i, c.label, c.chosen) for i, c in enumerate(trail) if c.chosen]


def _kept(oracle, ok: bool, outcome: str) -> tuple[bool, str, int, list, list | None]:
    """What the enumeration keeps of an execution: (ok, outcome, how many branching points
    it met, its deviations, the branching points themselves). A leaf's children are never
    run, so of its trail only the deviations are read (a counterexample names them): the
    points are not kept, nor sent back from a forked child (unpickling a trail of several
    hundred ``Choice`` records cost more than a millisecond an execution)."""
    trail = oracle.trail
    return ok, outcome, len(trail), _deviations(trail), None if oracle.leaf else trail


def _execute_seed(task) -> tuple[bool, str]:
    run, seed = task
    return run(RandomOracle(seed))


def explore_exhaustive(
    run,
    labels=None,
    max_deviations: int = 1,
    max_executions: int = 10_000,
    stop_at_first: bool = True,
    workers=None,
) -> ExplorationResult:
    """Breadth-first by number of deviations. ``run(oracle) -> (ok, outcome)``.

    An execution is the tuple of (choice index, option) where it leaves nominal timing;
    its children deviate once more at a later choice point, so no execution is visited
    twice, and the first failure found has the fewest deviations (a minimal
    counterexample in that sense). With ``workers`` (a ``pyopenib.workers.Workers``; then
    ``run`` must be picklable) the frontier is run in batches, in order: the result, the
    counterexample and the execution count are the ones a sequential search gives.
    """
    labels = frozenset(labels) if labels is not None else None
    workers = workers or InlineWorkers()
    level: list[tuple[tuple[int, int], ...]] = [()]
    depth = 0
    executions = 0
    nominal_points = 0
    first_failure = None

    def result(complete: bool) -> ExplorationResult:
        return ExplorationResult(
            executions, complete, nominal_points, first_failure, "exhaustive", max_deviations
        )

    while level:
        following = []
        before = executions
        # the last level's executions are leaves: their oracle goes quiet past the script
        leaf = depth == max_deviations
        steering = Steering(run, (None, labels, True, Footprints, False, leaf), _kept)
        for batch in run_level(steering, level, workers, stop_at_first, max_executions - before):
            for devs, (ok, outcome, met, deviations, trail) in batch:
                executions += 1
                if executions == 1:
                    nominal_points = met
                if not ok:
                    if first_failure is None:
                        first_failure = Execution(script_of(devs), False, outcome, deviations)
                    if stop_at_first:
                        return result(False)
                if len(devs) >= max_deviations:
                    continue
                start = devs[-1][0] + 1 if devs else 0
                for j in range(start, len(trail)):
                    for alt in range(1, trail[j].options):
                        following.append((*devs, (j, alt)))
        if executions - before < len(level):  # the execution budget ran out
            return result(False)
        level = following
        depth += 1
    return result(True)


def explore_random(
    run, runs: int = 100, first_seed: int = 0, stop_at_first: bool = True, workers=None
) -> ExplorationResult:
    """Seeded random oracles ``first_seed .. first_seed + runs - 1`` (in batches over
    ``workers`` when given; the outcome is the sequential one)."""
    workers = workers or InlineWorkers()
    batch = batch_size(workers)
    failure = None
    seeds = []
    done = 0
    next_seed = first_seed
    end = first_seed + runs
    while next_seed < end:
        chunk = list(range(next_seed, min(end, next_seed + batch)))
        next_seed = chunk[-1] + 1
        for seed, (ok, outcome) in zip(
            chunk, workers.map(_execute_seed, [(run, s) for s in chunk]), strict=True
        ):
            done += 1
            if not ok:
                seeds.append(seed)
                if failure is None:
                    failure = Execution([seed], False, outcome)
                if stop_at_first:
                    return ExplorationResult(done, done == runs, 0, failure, "random", seeds=seeds)
    return ExplorationResult(done, done == runs, 0, failure, "random", seeds=seeds)
