"""Check benchmark: the search's throughput and the headline checks of issue 10.

Each case is one ``check.search.explore`` (or, for comparison, the lo/hi enumeration of
``check.explore.explore_exhaustive``; for ``untimed``, the unbounded scheduler search of
``check.untimed.explore_untimed`` or its seeded random walks) over ``bibw`` with check's
small queues
(``P,128,8,6,4,4:P,65536,8,6,4,4``), inline (one process), with an execution budget so
that ``make bench`` stays bounded: a case cut by its budget says so ("cut") instead of a
verdict. Reported: executions, how many of them ran to their end (the others rejoined
their parent's run, ``check/convergence.py``), equivalence classes (distinct per-actor
event orders), the levels completed, the verdict, the CPU seconds of the process and of
the children it forked (a search forks its executions from their parents' runs where an execution costs
enough for that to pay, ``check/executions.py``; on a loaded machine CPU is the steadier
figure; wall seconds beside it) and executions per CPU second, the rate issue 13 asks to
double.
"""

from __future__ import annotations

import resource
import sys
import time
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from pyopenib.check.explore import explore_exhaustive
from pyopenib.check.scenario_runs import RACE_LABELS, scenario_runner
from pyopenib.check.search import explore
from pyopenib.check.timing import Timing
from pyopenib.check.untimed import explore_untimed, sample_untimed
from pyopenib.sim.ties import TIE_LABEL

QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"


@dataclass(frozen=True)
class Case:
    name: str
    device: str
    policy: str
    timing: Timing | None  # None: the lo/hi enumeration (explore_exhaustive)
    bound: int
    iterations: int = 40
    race_labels: bool = True
    budget: int = 400
    walks: bool = False
    """Untimed only: seeded random walks (``budget`` of them) instead of the search."""
    reduce: bool = True
    """Timed searches: False runs every alternative (no tie or duration-value pruning)."""
    stateful: bool = False
    """Untimed only: the stateful search (visited states with sleep sets) instead of
    source-set DPOR."""
    rejoin: bool = True
    """Timed searches: last-level executions end where they rejoin their parent's run
    (``check/convergence.py``); False runs every one to its end."""


CASES = (
    Case("T3 smallest nominal", "chelsio-t3", "smallest", Timing.NOMINAL, 1),
    Case("T3 own nominal (ties)", "chelsio-t3", "own", Timing.NOMINAL, 1),
    Case("T3 own lo/hi (before)", "chelsio-t3", "own", None, 1, budget=2000),
    Case("T3 own bounds", "chelsio-t3", "own", Timing.BOUNDS, 1, budget=2000),
    Case(
        "T3 own bounds, leaves to their end",
        "chelsio-t3",
        "own",
        Timing.BOUNDS,
        1,
        budget=2000,
        rejoin=False,
    ),
    Case(
        "T3 own bounds, no reduction",
        "chelsio-t3",
        "own",
        Timing.BOUNDS,
        1,
        budget=2000,
        reduce=False,
    ),
    Case("T3 smallest bounds", "chelsio-t3", "smallest", Timing.BOUNDS, 1),
    Case("T3 smallest untimed", "chelsio-t3", "smallest", Timing.UNTIMED, 0, budget=2000),
    Case("T3 own untimed, 1 fragment", "chelsio-t3", "own", Timing.UNTIMED, 0, 1, budget=1000),
    Case(
        "T3 own untimed stateful, 1 fragment",
        "chelsio-t3",
        "own",
        Timing.UNTIMED,
        0,
        1,
        budget=1000,
        stateful=True,
    ),
    Case("T3 own untimed", "chelsio-t3", "own", Timing.UNTIMED, 0, budget=300),
    Case(
        "ConnectX smallest untimed walks",
        "connectx",
        "smallest",
        Timing.UNTIMED,
        0,
        8,
        budget=30,
        walks=True,
    ),
    Case(
        "ConnectX own untimed walks", "connectx", "own", Timing.UNTIMED, 0, 8, budget=30, walks=True
    ),
    Case("ConnectX smallest bounds", "connectx", "smallest", Timing.BOUNDS, 1, 8, budget=2000),
    Case("ConnectX own bounds", "connectx", "own", Timing.BOUNDS, 1, 8, budget=2000),
)


def cpu_seconds() -> float:
    """User + system CPU of this process and its reaped children (the forked executions)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure(case: Case) -> dict:
    run = scenario_runner(
        "bibw",
        device=case.device,
        credits_qp=case.policy,
        iterations=case.iterations,
        mca_pairs=[("btl_openib_receive_queues", QUEUES)],
    )
    run.rejoinable = case.rejoin
    start, cpu = time.perf_counter(), cpu_seconds()

    def row(executions, classes, levels, verdict, to_the_end=None) -> dict:
        return dict(
            executions=executions,
            to_the_end=executions if to_the_end is None else to_the_end,
            classes=classes,
            levels=levels,
            verdict=verdict,
            seconds=time.perf_counter() - start,
            cpu=cpu_seconds() - cpu,
        )

    if case.timing is None:
        res = explore_exhaustive(run, RACE_LABELS, case.bound, case.budget)
        found = res.counterexample is not None
        return row(
            res.executions, "-", "-", "violated" if found else ("proved" if res.complete else "cut")
        )
    if case.timing is Timing.UNTIMED and case.walks:
        sample = sample_untimed(run, case.budget)
        verdict = f"violated (walk {sample.failure[0]})" if sample.failure else "no failure"
        return row(sample.runs, "-", "-", verdict)
    if case.timing is Timing.UNTIMED:  # the scheduler's search: unbounded, no levels
        res = explore_untimed(run, case.budget, stateful=case.stateful)
        seen = f"{res.states} states"
        if case.stateful:
            seen += f", {res.distinct} distinct, {res.matched} matched"
        if res.violation is not None:
            verdict = "violated"
        else:
            verdict = "proved (every order)" if res.complete else f"cut ({seen})"
        return row(res.executions + res.pruned, res.executions, "-", verdict)
    labels = RACE_LABELS | {TIE_LABEL} if case.race_labels else None
    res = explore(run, case.timing, case.bound, labels, case.budget, reduce=case.reduce)
    if res.violation is not None:
        verdict = f"violated (level {res.violation.level})"
    else:
        verdict = "proved" if res.complete else "cut"
    levels = f"0..{res.levels_complete}" if res.levels_complete >= 0 else "none"
    return row(res.executions, res.classes, levels, verdict, res.executions - res.rejoined)


def main(names: list[str]) -> None:
    """Every case, or the cases named (``python benchmarks/check.py "T3 own bounds"``: an
    A/B of one search runs it alone, a fresh process per run)."""
    unknown = set(names) - {c.name for c in CASES}
    if unknown:
        raise SystemExit(f"no such case: {', '.join(sorted(unknown))}")
    table = Table(title="check: bibw searches (inline, one process; K = deviations bound)")
    for col in (
        "case",
        "fragments",
        "K",
        "executions",
        "run to the end",
        "classes",
        "levels",
        "verdict",
        "CPU s",
        "wall s",
        "exec/CPU s",
    ):
        table.add_column(col, justify="left" if col in ("case", "verdict") else "right")
    for case in [c for c in CASES if not names or c.name in names]:
        m = measure(case)
        table.add_row(
            case.name,
            str(case.iterations),
            str(case.bound),
            str(m["executions"]),
            str(m["to_the_end"]),
            str(m["classes"]),
            m["levels"],
            m["verdict"],
            f"{m['cpu']:.1f}",
            f"{m['seconds']:.1f}",
            f"{m['executions'] / m['cpu']:.1f}",
        )
    Console(width=140).print(table)


if __name__ == "__main__":
    main(sys.argv[1:])
