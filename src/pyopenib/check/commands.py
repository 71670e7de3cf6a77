"""``pyopenib check``: explore orderings of a BTL scenario; print a minimal counterexample
(replayable, drawable) or how many executions were covered."""

from __future__ import annotations

import shlex
import sys

import click

from ..btl.commands import scenario_settings
from ..btl.scenarios import SCENARIOS
from ..options import DEVICE_NAME
from ..outputs import EXIT_INTERRUPTED, TRACE_SUFFIXES, exit_status, output_file, write_reporting
from ..report import write_trace
from ..sim import NominalOracle, RandomOracle, Tracer
from ..sim.ties import TIE_LABEL
from ..workers import Workers
from .explore import SelectiveScriptedOracle, explore_exhaustive, explore_random
from .scenario_runs import RACE_LABELS, scenario_runner
from .search import explore
from .timing import Timing

EXIT_COUNTEREXAMPLE = 1
CHECK_QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"
"""Small per-peer queues: the race needs only a few buffers, and exploration stays fast."""


class _LabelsSeen(NominalOracle):
    """Nominal timing that remembers the labels of the choice points it answered, so
    that ``--labels`` naming none of them is refused instead of exploring one execution
    and calling it every one."""

    def __init__(self):
        self.labels: set[str] = set()

    def choose(self, label: str, n: int) -> int:
        self.labels.add(label)
        return super().choose(label, n)

    def duration(self, label: str, lo: int, nominal: int, hi: int) -> int:
        self.labels.add(label)
        return super().duration(label, lo, nominal, hi)


def _shrink_iterations(passes, iterations: int) -> int:
    """Fewer fragments per rank that still fail (binary search; failure need not be
    monotone in the count, so the result is checked and ``iterations`` kept otherwise)."""
    lo, hi = 1, iterations
    while lo < hi:
        mid = (lo + hi) // 2
        if passes(mid):
            lo = mid + 1
        else:
            hi = mid
    return lo if not passes(lo) else iterations


@click.command()
@click.argument("name", type=click.Choice(SCENARIOS))
@click.option(
    "--device", type=DEVICE_NAME, default="chelsio-t3", show_default=True, help="Device model id."
)
@click.option(
    "--peer-device",
    type=DEVICE_NAME,
    default=None,
    help="Device of the other ranks (mixed cluster).",
)
@click.option("--credits-qp", type=click.Choice(["auto", "smallest", "own"]), default=None)
@click.option("--mca", nargs=2, multiple=True, metavar="K V")
@click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="Fragments per sending rank.",
)
@click.option("--exhaustive", is_flag=True, help="Enumerate executions instead of sampling.")
@click.option(
    "--deviations",
    type=click.IntRange(min=0),
    default=1,
    show_default=True,
    help="Exhaustive: choice points that may leave nominal timing per execution.",
)
@click.option(
    "--labels",
    default=",".join(sorted(RACE_LABELS)),
    show_default=True,
    help="Exhaustive: comma-separated choice-point labels that branch ('all' for every one).",
)
@click.option(
    "--timing",
    type=click.Choice([t.value for t in Timing]),
    default=None,
    help="Exhaustive: the timing space (nominal: same-instant ties only; bounds: durations "
    "over the device intervals, cut where an order changes; untimed: hardware durations "
    "free, only the hardware's ordering rules hold). Ties are choice points in every mode.",
)
@click.option("--max-executions", type=click.IntRange(min=1), default=20_000, show_default=True)
@click.option(
    "--runs",
    type=click.IntRange(min=1),
    default=100,
    show_default=True,
    help="Random: seeds to try.",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=0,
    show_default=True,
    help="Random: first seed.",
)
@click.option(
    "--trace",
    "trace_file",
    default=None,
    help="Write the counterexample's trace (.jsonl, .json, .png, .svg, .pdf).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Worker processes (1 = inline); with --dask local, Dask workers.",
)
@click.option(
    "--dask",
    default=None,
    metavar="ADDRESS|local",
    help="Run the executions on this Dask scheduler (or a local Dask cluster).",
)
def check(
    name,
    device,
    peer_device,
    credits_qp,
    mca,
    iterations,
    exhaustive,
    deviations,
    labels,
    timing,
    max_executions,
    runs,
    seed,
    trace_file,
    jobs,
    dask,
):
    """Explore orderings of a scenario: find a counterexample or report the coverage.

    Unless btl_openib_receive_queues is given, scenarios here use small per-peer queues
    (P,128,8,6,4,4:P,65536,8,6,4,4) so that every ordering can be explored quickly."""
    if timing is not None and not exhaustive:
        raise click.UsageError("--timing names the space of an exhaustive search: add --exhaustive")
    trace_out = output_file("--trace", trace_file, TRACE_SUFFIXES)
    label_set = None if labels == "all" else frozenset(x for x in labels.split(",") if x)
    if label_set is not None and not label_set:
        raise click.BadParameter("give at least one label, or 'all'", param_hint="--labels")
    # every worker runs one execution at a time, each with the scenario's ranks
    ranks = (4 if name == "incast" else 2) * (1 if dask else jobs)
    ctx = scenario_settings(
        mca, credits_qp, (device, peer_device), "pyopenib check", CHECK_QUEUES, ranks
    )
    pairs = ctx.explicit_pairs()
    common = dict(device=device, peer_device=peer_device, mca_pairs=pairs)
    run = scenario_runner(name, iterations=iterations, **common)
    nominal = _LabelsSeen()
    run(nominal)  # a bad device or MCA value: one clear error here, not in a worker
    if exhaustive and label_set is not None and not label_set & nominal.labels:
        raise click.BadParameter(
            f"no choice point of {name} is labelled {', '.join(sorted(label_set))}; "
            f"its labels: {', '.join(sorted(nominal.labels))}",
            param_hint="--labels",
        )
    policy = ctx.get("btl_openib_credits_qp")
    click.echo(f"{name} on {device}, credits_qp {policy}, {iterations} fragments per rank")
    if exhaustive and timing is not None:
        _search(run, Timing(timing), deviations, label_set, max_executions, jobs, dask)
    try:
        with Workers(jobs, dask) as workers:
            if exhaustive:
                res = explore_exhaustive(
                    run, label_set, deviations, max_executions, workers=workers
                )
            else:
                res = explore_random(run, runs, seed, workers=workers)
    except KeyboardInterrupt:
        click.echo("pyopenib: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if exhaustive:
        click.echo(
            f"exhaustive: {res.executions} executions; {res.choice_points} branching choice "
            f"points in the nominal run; at most {deviations} deviation(s) from nominal timing"
        )
        if res.counterexample is None:
            verdict = "every" if res.complete else "NOT every (budget reached)"
            click.echo(f"no failure: {verdict} execution within the bound was explored")
            sys.exit(0 if res.complete else 2)
        ex = res.counterexample
        click.echo(f"COUNTEREXAMPLE: {ex.outcome}")
        if ex.deviations:
            for i, label, option in ex.deviations:
                click.echo(
                    f"  choice #{i} {label}: option {option} (0 = nominal, 1 = low, 2 = high)"
                )
        else:
            click.echo("  (with nominal timing: no deviation needed)")
        failed = None
        if trace_out is not None:
            tracer = Tracer()
            # the runner turns a broken invariant into an outcome; the tracer keeps the events
            scenario_runner(name, iterations=iterations, trace=tracer, **common)(
                SelectiveScriptedOracle(ex.script, label_set)
            )
            failed = _write(trace_out, tracer)
        sys.exit(exit_status(EXIT_COUNTEREXAMPLE, failed))
    if res.counterexample is None:
        click.echo(f"random: {res.executions} seeded runs ({seed}..{seed + runs - 1}), no failure")
        sys.exit(0)
    bad_seed = res.counterexample.script[0]

    def passes_outcome(k):
        return scenario_runner(name, iterations=k, **common)(RandomOracle(bad_seed))

    def passes(k):
        return passes_outcome(k)[0]

    smallest = _shrink_iterations(passes, iterations)
    click.echo(f"COUNTEREXAMPLE: seed {bad_seed}: {res.counterexample.outcome}")
    _, shrunk_outcome = passes_outcome(smallest)
    click.echo(
        f"fewest fragments per rank that still fail (binary search): {smallest}: "
        f"{shrunk_outcome}. Replay:"
    )
    argv = ["pyopenib", "scenario", name, "--device", device]
    if peer_device:
        argv += ["--peer-device", peer_device]
    for k, v in pairs:
        argv += ["--mca", k, v]
    argv += ["--iterations", str(smallest), "--random-timing", "--seed", str(bad_seed)]
    click.echo("  " + shlex.join([*argv, "--trace", "race.png"]))
    failed = None
    if trace_out is not None:
        tracer = Tracer()
        scenario_runner(name, iterations=smallest, trace=tracer, **common)(RandomOracle(bad_seed))
        failed = _write(trace_out, tracer)
    sys.exit(exit_status(EXIT_COUNTEREXAMPLE, failed))


def _search(run, timing, bound, label_set, max_executions, jobs, dask):
    """``--timing``: the search of ``check/search.py`` (ties always branch; the default
    labels become every label, since a timing mode names its own space)."""
    if label_set is not None and label_set != RACE_LABELS:
        label_set = label_set | {TIE_LABEL}
    else:
        label_set = None
    try:
        with Workers(jobs, dask) as workers:
            res = explore(run, timing, bound, label_set, max_executions, workers=workers)
    except KeyboardInterrupt:
        click.echo("pyopenib: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    met = ", ".join(f"{k} {v}" for k, v in sorted(res.labels_met.items()))
    click.echo(
        f"timing {timing.value}, at most {bound} deviation(s): {res.executions} executions, "
        f"{res.classes} equivalence classes; {res.choice_points} branching choice points in "
        f"the nominal run ({met}); {res.pruned} tie alternatives pruned as commuting"
    )
    if res.levels_complete >= 0:
        click.echo(f"levels 0..{res.levels_complete} complete")
    if res.violation is None:
        verdict = "every" if res.complete else "NOT every (budget reached)"
        click.echo(f"no failure: {verdict} execution within the bound was explored")
        sys.exit(0 if res.complete else 2)
    v = res.violation
    click.echo(f"COUNTEREXAMPLE (level {v.level}): {v.outcome}")
    for i, label, option, value in v.deviations:
        what = "order option" if value is None else f"{value / 1000:.3f} ns, option"
        click.echo(f"  choice #{i} {label}: {what} {option}")
    if not v.deviations:
        click.echo(f"  (with {timing.value} timing's first execution: no deviation needed)")
    sys.exit(EXIT_COUNTEREXAMPLE)


def _write(trace_out, tracer):
    failed = write_reporting(trace_out, lambda tmp: write_trace(tracer.events, tmp))
    if failed is None:
        click.echo(f"trace written to {trace_out.path}")
    return failed
