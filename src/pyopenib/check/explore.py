"""Exploring orderings: seeded random runs, and bounded-exhaustive enumeration of the
simulator's choice points.

Every nondeterministic decision of a run goes through an oracle (``sim.choose`` /
``sim.duration``). ``explore_random`` tries seeded random oracles. ``explore_exhaustive``
enumerates executions breadth-first with a scripted oracle: option 0 of every choice point
is the nominal one, and an execution is identified by the positions where it deviates.
With ``max_deviations = K`` it visits *every* execution that deviates from nominal timing
at no more than K choice points (delay bounding), each exactly once; when the search
finishes under the budget, that statement is proved for the configuration. Only choice
points whose label is in ``labels`` branch; the others keep their nominal value (so the
claim is "every ordering of these operations", e.g. when a receive becomes usable).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from ..sim import Oracle, RandomOracle
from ..sim.choice import duration_options

__all__ = [
    "Execution",
    "ExplorationResult",
    "SelectiveScriptedOracle",
    "explore_exhaustive",
    "explore_random",
]


class SelectiveScriptedOracle(Oracle):
    """Replays ``script`` at the branching choice points (labels in ``labels``, or all when
    None) and answers nominal elsewhere; records the branching points it met."""

    def __init__(self, script=(), labels: frozenset[str] | None = None):
        self.script = list(script)
        self.labels = labels
        self.trail: list[tuple[str, int, int]] = []  # (label, options, chosen)

    def _branches(self, label: str) -> bool:
        return self.labels is None or label in self.labels

    def choose(self, label: str, n: int) -> int:
        if not self._branches(label):
            return 0
        i = len(self.trail)
        pick = self.script[i] if i < len(self.script) else 0
        if pick >= n:
            raise ValueError(f"scripted choice #{i} ({label}) asks option {pick} of {n}")
        self.trail.append((label, n, pick))
        return pick

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        if not self._branches(label):
            return nominal
        opts = duration_options(lo, nominal, hi)
        if len(opts) == 1:
            return nominal
        return opts[self.choose(label, len(opts))]


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
    return [(i, label, chosen) for i, (label, _n, chosen) in enumerate(trail) if chosen]


def _script(deviations: tuple[tuple[int, int], ...]) -> list[int]:
    """The oracle script of an execution given as (choice index, option) deviations."""
    if not deviations:
        return []
    script = [0] * (deviations[-1][0] + 1)
    for pos, alt in deviations:
        script[pos] = alt
    return script


def _execute(task) -> tuple[bool, str, list]:
    """One scripted execution (a worker's task): (ok, outcome, the branching points met)."""
    run, script, labels = task
    oracle = SelectiveScriptedOracle(script, labels)
    ok, outcome = run(oracle)
    return ok, outcome, oracle.trail


def _execute_seed(task) -> tuple[bool, str]:
    run, seed = task
    return run(RandomOracle(seed))


class _Inline:
    """The executor when none is given: the tasks run here, one after the other."""

    jobs = 1
    dask = None

    @staticmethod
    def map(fn, items) -> list:
        return [fn(item) for item in items]


def _batch_size(workers) -> int:
    """Executions handed out at once: enough to keep every worker busy, few enough that
    a search that stops at its first failure does little work past it."""
    return 1 if workers.jobs == 1 and workers.dask is None else 4 * workers.jobs


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
    workers = workers or _Inline()
    batch = _batch_size(workers)
    frontier: deque[tuple[tuple[int, int], ...]] = deque([()])
    executions = 0
    nominal_points = 0
    first_failure = None
    while frontier:
        if executions >= max_executions:
            return ExplorationResult(
                executions, False, nominal_points, first_failure, "exhaustive", max_deviations
            )
        take = min(batch, len(frontier), max_executions - executions)
        chunk = [frontier.popleft() for _ in range(take)]
        results = workers.map(_execute, [(run, _script(devs), labels) for devs in chunk])
        for devs, (ok, outcome, trail) in zip(chunk, results, strict=True):
            executions += 1
            if executions == 1:
                nominal_points = len(trail)
            if not ok:
                ex = Execution(_script(devs), False, outcome, _deviations(trail))
                if first_failure is None:
                    first_failure = ex
                if stop_at_first:
                    return ExplorationResult(
                        executions,
                        False,
                        nominal_points,
                        first_failure,
                        "exhaustive",
                        max_deviations,
                    )
            if len(devs) >= max_deviations:
                continue
            start = devs[-1][0] + 1 if devs else 0
            for j in range(start, len(trail)):
                for alt in range(1, trail[j][1]):
                    frontier.append((*devs, (j, alt)))
    return ExplorationResult(
        executions, True, nominal_points, first_failure, "exhaustive", max_deviations
    )


def explore_random(
    run, runs: int = 100, first_seed: int = 0, stop_at_first: bool = True, workers=None
) -> ExplorationResult:
    """Seeded random oracles ``first_seed .. first_seed + runs - 1`` (in batches over
    ``workers`` when given; the outcome is the sequential one)."""
    workers = workers or _Inline()
    batch = _batch_size(workers)
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
