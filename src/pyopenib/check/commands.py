"""``pyopenib check``: explore orderings of a BTL scenario or of a user's mpi4py program;
print what was covered (the verdict says exactly that), or a counterexample a user can
act on: delta-debugged, with its critical transition, its replay token and the commands
that replay it."""

from __future__ import annotations

import os
import shlex
import sys

import click

from ..apps.scenario_commands import MAX_SCENARIO_RANKS, scenario_settings
from ..apps.scenarios import SCENARIOS
from ..errors import PyopenibError, register_topics
from ..options import REPLAY_TOKEN, SECONDS, credits_qp_option, device_options, mca_option
from ..outputs import EXIT_INTERRUPTED, TRACE_SUFFIXES, exit_status, output_file, write_reporting
from ..report import write_trace
from ..sim import NominalOracle, RandomOracle, Tracer
from ..sim.ties import TIE_LABEL
from ..workers import Workers
from .branches import branches_of
from .critical import credit_story, critical_choice
from .explore import ExplorationResult, explore_exhaustive, explore_random
from .minimize import minimize
from .monitor import BudgetReached, Monitor
from .program import ProgramRun
from .replay import (
    RecordingOracle,
    ReplayOracle,
    ReplayToken,
    program_config,
    scenario_config,
    tie_control,
    untimed_script,
    untimed_token,
)
from .scenario_runs import RACE_LABELS, scenario_runner
from .search import SearchOracle, explore
from .timing import Timing
from .untimed import (
    UntimedOracle,
    critical_step,
    describe_path,
    describe_step,
    explore_untimed,
    sample_untimed,
)
from .verdict import (
    EXIT_INPUT,
    Coverage,
    search_verdict_lines,
    untimed_verdict_lines,
    verdict_lines,
)

EXIT_COUNTEREXAMPLE = 1
EXIT_INCOMPLETE = 2
"""No failure, but the search was cut (budget): nothing is proved."""
CHECK_QUEUES = "P,128,8,6,4,4:P,65536,8,6,4,4"
"""Small per-peer queues: the race needs only a few buffers, and exploration stays fast."""

register_topics(
    {
        "check-target": (
            "{target!r} is neither a scenario ({scenarios}) nor an mpi4py program (a .py file)"
        ),
        "check-program-options": "{option} applies to scenarios; a program takes -n and its args",
    }
)


class _Target:
    """What ``check`` explores: its runner, its replay configuration, and how the user
    replays one execution with ``scenario`` or ``run``."""

    def __init__(self, title, run, config, replay_argv, ranks):
        self.title = title
        self.run = run
        self.config = config
        self.replay_argv = replay_argv  # the replaying command; "{token}" for the token
        self.ranks = ranks


def _mca_argv(pairs) -> list[str]:
    return [x for k, v in pairs for x in ("--mca", k, v)]


def _target(target, args, nprocs, device, peer_device, credits_qp, mca, iterations, jobs, dask):
    is_scenario = target in SCENARIOS
    if not is_scenario and not (target.endswith(".py") and os.path.isfile(target)):
        raise PyopenibError(
            "check-target", exit_code=EXIT_INPUT, target=target, scenarios=", ".join(SCENARIOS)
        )
    if is_scenario:
        ranks = nprocs or (4 if target == "incast" else 2)
        if args:
            raise click.BadParameter(f"a scenario takes no arguments: {' '.join(args)}")
    else:
        ranks = nprocs or 2
        if peer_device is not None:
            raise PyopenibError(
                "check-program-options", exit_code=EXIT_INPUT, option="--peer-device"
            )
    # every worker runs one execution at a time, each with the target's ranks
    ctx = scenario_settings(
        mca,
        credits_qp,
        (device, peer_device),
        "pyopenib check",
        CHECK_QUEUES,
        ranks * (1 if dask else jobs),
    )
    pairs = ctx.explicit_pairs()
    devices = [device] + [peer_device or device] * (ranks - 1)
    policy = ctx.get("btl_openib_credits_qp")
    if is_scenario:
        run = scenario_runner(
            target,
            device=device,
            peer_device=peer_device,
            mca_pairs=pairs,
            iterations=iterations,
            nprocs=ranks,
        )
        config = scenario_config(target, devices, pairs, iterations, ranks)
        argv = ["pyopenib", "scenario", target, "--device", device]
        if peer_device:
            argv += ["--peer-device", peer_device]
        argv += [*_mca_argv(pairs), "--iterations", str(iterations), "-n", str(ranks)]
        argv += ["--trace", "race.png", "--replay", "{token}"]
        title = f"{target} on {device}, credits_qp {policy}, {iterations} fragments per rank"
    else:
        path = os.path.abspath(target)
        run = ProgramRun(path, ranks, devices, pairs, args)
        config = program_config(path, ranks, devices, pairs, args)
        argv = ["pyopenib", "run", "-n", str(ranks), "--device", device, *_mca_argv(pairs)]
        argv += ["--trace", "race.png", "--replay", "{token}", target, *args]
        title = f"{target} on {ranks} ranks of {device}, credits_qp {policy}"
    return _Target(title, run, config, argv, ranks)


@click.command(context_settings={"ignore_unknown_options": False})
@click.argument("target", metavar="SCENARIO|PROGRAM.py")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
@click.option(
    "-n",
    "--np",
    "nprocs",
    type=click.IntRange(min=2, max=MAX_SCENARIO_RANKS),
    default=None,
    help="Ranks [programs: 2; scenarios: 2, incast 4].",
)
@device_options("Scenarios: device of the other ranks (mixed cluster).")
@credits_qp_option()
@mca_option()
@click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=40,
    show_default=True,
    help="Scenarios: fragments per sending rank.",
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
    default=None,
    help="Exhaustive: comma-separated choice-point labels that branch ('all' for every one) "
    f"[the race's that the run meets: {', '.join(sorted(RACE_LABELS))}].",
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
    "--time-budget",
    type=SECONDS,
    default=None,
    help="Stop exploring after this many seconds of real time (the verdict says so).",
)
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
    "--replay",
    "replay",
    type=REPLAY_TOKEN,
    default=None,
    metavar="TOKEN",
    help="Run the one execution a counterexample's replay token names.",
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
    target,
    args,
    nprocs,
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
    time_budget,
    runs,
    seed,
    replay,
    trace_file,
    jobs,
    dask,
):
    """Explore orderings of a scenario or of an unmodified mpi4py PROGRAM.py: find a
    counterexample or report exactly what was covered.

    Unless btl_openib_receive_queues is given, check uses small per-peer queues
    (P,128,8,6,4,4:P,65536,8,6,4,4) so that every ordering can be explored quickly."""
    trace_out = output_file("--trace", trace_file, TRACE_SUFFIXES)
    if timing is not None and timing != Timing.UNTIMED.value and not exhaustive:
        raise click.UsageError(
            f"--timing {timing} names the space of an exhaustive search: add --exhaustive "
            "(only untimed also samples: --timing untimed --runs N)"
        )
    label_set = None if labels in (None, "all") else frozenset(x for x in labels.split(",") if x)
    if labels is not None and label_set is not None and not label_set:
        raise click.BadParameter("give at least one label, or 'all'", param_hint="--labels")
    tgt = _target(
        target, args, nprocs, device, peer_device, credits_qp, mca, iterations, jobs, dask
    )
    if replay is not None:
        replay.require(tgt.config)
        click.echo(tgt.title)
        _replay(tgt, replay, trace_out)
        return
    coverage, branches = _nominal(tgt)
    if exhaustive:
        if labels is None and timing is None:  # the race's labels this device has
            label_set = frozenset(x for x in RACE_LABELS if coverage.branching[x])
        coverage.require(label_set, target)
    click.echo(tgt.title)
    if timing == Timing.UNTIMED.value:
        click.echo(
            "timing untimed: the search orders the model's events over the hardware's FIFO "
            "channels; durations are no choice points"
        )
    elif exhaustive:
        click.echo("choice points of the nominal run (label, met, branching):")
        for line in coverage.table(label_set):
            click.echo(line)
    for line in branches.lines():
        click.echo(line)
    if not exhaustive and timing == Timing.UNTIMED.value:
        _untimed_sample(tgt, runs, seed, trace_out)
    if exhaustive and timing == Timing.UNTIMED.value:
        if click.get_current_context().get_parameter_source("deviations").name == "COMMANDLINE":
            raise click.UsageError(
                "--timing untimed searches every order without a bound: --deviations does not apply"
            )
        _untimed_search(tgt, max_executions, time_budget, trace_out)
    if exhaustive and timing is not None:
        _timed_search(
            tgt,
            Timing(timing),
            deviations,
            labels,
            label_set,
            max_executions,
            time_budget,
            jobs,
            dask,
            trace_out,
        )
    total = None
    if exhaustive and deviations <= 1:
        total = 1 + (coverage.level_one(label_set) if deviations else 0)
    search = (
        (lambda w: explore_exhaustive(tgt.run, label_set, deviations, max_executions, workers=w))
        if exhaustive
        else (lambda w: explore_random(tgt.run, runs, seed, workers=w))
    )
    res, stop = _explore(search, jobs, dask, time_budget, total)
    cut_by = None
    if stop is not None:
        cut_by = f"--time-budget {time_budget:g} s reached"
        mode = "exhaustive" if exhaustive else "random"
        branching = coverage.branching_points(label_set)
        res = ExplorationResult(stop.executions, False, branching, None, mode, deviations)
    elif exhaustive and not res.complete and res.counterexample is None:
        cut_by = f"--max-executions {max_executions} reached"
    if res.counterexample is None:
        if exhaustive:
            for line in verdict_lines(res, coverage, label_set, deviations, cut_by):
                click.echo(line)
        else:
            last = seed + res.executions - 1
            cut = f" ({cut_by})" if cut_by else ""
            click.echo(
                f"no failure in {res.executions} seeded random runs ({seed}..{last}){cut}: "
                "a sample of the device intervals, not a proof"
            )
        sys.exit(EXIT_INCOMPLETE if cut_by else 0)
    if exhaustive:
        found = SearchOracle(res.counterexample.script, None, label_set)
        click.echo(
            f"COUNTEREXAMPLE after {res.executions} executions (breadth-first: the fewest "
            f"deviations, {len(res.counterexample.deviations)}): {res.counterexample.outcome}"
        )
    else:
        bad_seed = res.counterexample.script[0]
        found = RandomOracle(bad_seed)
        click.echo(f"COUNTEREXAMPLE: seed {bad_seed}: {res.counterexample.outcome}")
    _counterexample(tgt, found, trace_out)


def _timed_search(
    tgt, timing, bound, labels, label_set, max_executions, time_budget, jobs, dask, trace_out
):
    """``--timing``: the search of ``check/search.py`` (ties always branch; without
    ``--labels`` every label does, since a timing mode names its own space)."""
    search_labels = None if labels is None or label_set is None else label_set | {TIE_LABEL}
    res, stop = _explore(
        lambda w: explore(tgt.run, timing, bound, search_labels, max_executions, workers=w),
        jobs,
        dask,
        time_budget,
        None,
    )
    if stop is not None:
        click.echo(
            f"INCOMPLETE (--time-budget {time_budget:g} s reached): {stop.executions} "
            f"executions of timing {timing.value}, no failure among them. This is not a proof."
        )
        sys.exit(EXIT_INCOMPLETE)
    v = res.violation
    if v is None:
        cut_by = None if res.complete else f"--max-executions {max_executions} reached"
        for line in search_verdict_lines(res, search_labels, cut_by):
            click.echo(line)
        sys.exit(0 if res.complete else EXIT_INCOMPLETE)
    click.echo(
        f"COUNTEREXAMPLE (timing {timing.value}, level {v.level}, after {res.executions} "
        f"executions, {res.classes} equivalence classes): {v.outcome}"
    )
    found = SearchOracle(v.script, timing, search_labels)
    _counterexample(tgt, found, trace_out, timing.value)


def _interruptible(search):
    """``search()``, or exit 130 with one line at Ctrl-C (the searches run in-process)."""
    try:
        return search()
    except KeyboardInterrupt:
        click.echo("pyopenib: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _untimed_search(tgt, max_executions, time_budget, trace_out):
    """``--timing untimed``: the unbounded depth-first search of ``check/untimed.py``
    over the hardware's FIFO channels (sequential: ``--jobs`` does not apply)."""
    res = _interruptible(lambda: explore_untimed(tgt.run, max_executions, time_budget))
    if res.violation is None:
        for line in untimed_verdict_lines(res):
            click.echo(line)
        sys.exit(0 if res.complete else EXIT_INCOMPLETE)
    script, outcome = res.violation
    click.echo(
        f"COUNTEREXAMPLE (timing untimed, depth-first, after {res.executions} executions, "
        f"{res.states} states): {outcome}"
    )
    _untimed_counterexample(tgt, script, trace_out)


def _untimed_sample(tgt, runs, seed, trace_out):
    """``--timing untimed`` without ``--exhaustive``: seeded random walks over the
    scheduler (a sample, never a proof)."""
    res = _interruptible(lambda: sample_untimed(tgt.run, runs, seed))
    if res.failure is None:
        click.echo(
            f"no failure in {res.runs} seeded random untimed walks ({seed}..{seed + runs - 1}): "
            "a sample of the orders the hardware's FIFO channels allow, not a proof"
        )
        sys.exit(0)
    bad_seed, script, outcome = res.failure
    click.echo(f"COUNTEREXAMPLE: untimed walk {bad_seed} (of {res.runs} run): {outcome}")
    _untimed_counterexample(tgt, script, trace_out)


def _untimed_counterexample(tgt, script, trace_out, replayed_token: bool = False):
    """An untimed execution that fails (``script``: its ``UntimedOracle`` path): the
    steps that leave the plain order, the critical step, the credit story, the token;
    exit 1 (0 when a replayed token's execution passes)."""
    tracer = Tracer()
    replayed = UntimedOracle(script, reduce=False)
    out = tgt.run.execute(replayed, trace=tracer)
    if replayed_token:
        click.echo(f"replayed an untimed schedule ({len(script)} steps recorded): {out.text}")
        if out.output:
            click.echo("what the ranks wrote:")
            for line in out.output.splitlines():
                click.echo(f"  {line}")
        if out.ok:
            sys.exit(exit_status(0, _write(trace_out, tracer) if trace_out else None))
    elif out.ok:  # cannot happen for a deterministic model; say so rather than print a lie
        raise RuntimeError("the untimed counterexample passed on replay: not deterministic")
    moved = describe_path(replayed.frames)
    if moved:
        click.echo(f"the failing order leaves the plain order at {len(moved)} step(s); the last:")
        for line in moved[-5:]:
            click.echo(f"  {line}")
    else:
        click.echo("no reordering needed: the plain order already fails")
    path = replayed.script()
    step, tests = critical_step(tgt.run, path)
    click.echo(
        "critical step (the first after which every continuation fails; sampled: the "
        f"plain continuation and 5 seeded random ones, {tests} executions):"
    )
    if step is None:
        click.echo("  none: every sampled order fails from the first step (a rule, not a race)")
    else:
        click.echo(f"  {describe_step(replayed.frames, step)}")
    _story(out, tracer)
    if not replayed_token:
        _print_replay(tgt, untimed_token(tgt.config, path))
    failed = _write(trace_out, tracer) if trace_out is not None else None
    sys.exit(exit_status(EXIT_COUNTEREXAMPLE, failed))


def _nominal(tgt):
    """The nominal run, recorded: its per-label coverage and the protocol branches it
    took. A bad device or MCA value fails here with one clear error, not in a worker."""
    tracer = Tracer()
    nominal = RecordingOracle(NominalOracle(), tracer)
    first = tgt.run.execute(nominal, trace=tracer)
    return Coverage.of(nominal.answers), branches_of(first.modules, tracer.events)


def _explore(search, jobs, dask, time_budget, total):
    """``search(workers)`` on the pool, under the time budget and the progress display:
    (its result, None), or (None, the ``BudgetReached``) when the budget ran out."""
    try:
        with Workers(jobs, dask) as workers, Monitor(workers, time_budget, total) as monitor:
            try:
                return search(monitor), None
            except BudgetReached as stop:
                return None, stop
    except KeyboardInterrupt:
        click.echo("pyopenib: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _counterexample(tgt, found, trace_out, timing: str | None = None):
    """Record the failing execution, reduce it, name its critical transition, print the
    token and the replay commands, write the trace; exit 1. ``timing``: the search's
    mode when ``found`` is a search oracle (its ties are choice points)."""
    recorded = RecordingOracle(found)
    first = tgt.run.execute(recorded)
    small = minimize(tgt.run, recorded.deviations, first.text, timing=timing)
    tracer = Tracer()
    kept = [(a.position, a.kind, a.label, a.value) for a in small.deviations]
    final = RecordingOracle(ReplayOracle(kept, timing=timing), tracer)
    out = tgt.run.execute(final, trace=tracer)
    if out.ok:  # cannot happen for a deterministic model; say so rather than print a lie
        raise RuntimeError(
            "the reduced counterexample passed on replay: the model is not deterministic"
        )
    token = ReplayToken.of(tgt.config, final.answers, timing)
    how = "1-minimal" if small.one_minimal else "reduced (test budget reached)"
    if out.text != first.text:
        click.echo(f"  reduced, it fails as: {out.text}")
    if token.deviations:
        click.echo(
            f"deviations from nominal timing ({how}, delta debugging: {small.tests} "
            f"executions; {len(recorded.deviations)} before):"
        )
        for a in final.deviations:
            click.echo(f"  choice point #{a.position}: {a.describe()}")
    else:
        first_run = "nominal timing" if timing is None else f"first execution of timing {timing}"
        click.echo(f"no deviation needed: the {first_run} already fails")
    _explain(tgt, final.answers, out, tracer, timing)
    _print_replay(tgt, token)
    failed = None
    if trace_out is not None:
        failed = _write(trace_out, tracer)
    sys.exit(exit_status(EXIT_COUNTEREXAMPLE, failed))


def _explain(tgt, answers, out, tracer, timing: str | None) -> None:
    critical = critical_choice(tgt.run, answers, ties=tie_control if timing else None)
    click.echo("critical step (the first after which every continuation fails):")
    for line in critical.describe():
        click.echo(f"  {line}")
    _story(out, tracer)


def _story(out, tracer) -> None:
    """The failure's credit story and, for a hang, where everything waits."""
    for line in credit_story(tracer.events):
        click.echo(f"  {line}")
    if out.stall:
        click.echo("where everything waits (each rank, then the BTL's stall report):")
        for line in out.stall:
            click.echo(f"  {line}")


def _print_replay(tgt, token: ReplayToken) -> None:
    text = token.encode()
    click.echo(f"replay token: {text}")
    click.echo("replay:")
    argv = [text if a == "{token}" else a for a in tgt.replay_argv]
    click.echo("  " + shlex.join(argv))


def _replay(tgt, token: ReplayToken, trace_out) -> None:
    if token.timing == Timing.UNTIMED.value:
        _untimed_counterexample(tgt, untimed_script(token), trace_out, replayed_token=True)
    tracer = Tracer()
    recorded = RecordingOracle(token.oracle(strict=True), tracer)
    out = tgt.run.execute(recorded, trace=tracer)
    click.echo(f"replayed {len(token.deviations)} deviation(s) from nominal timing: {out.text}")
    for a in recorded.deviations:
        click.echo(f"  choice point #{a.position}: {a.describe()}")
    if out.output:
        click.echo("what the ranks wrote:")
        for line in out.output.splitlines():
            click.echo(f"  {line}")
    failed = None
    if not out.ok:
        _explain(tgt, recorded.answers, out, tracer, token.timing)
    if trace_out is not None:
        failed = _write(trace_out, tracer)
    sys.exit(exit_status(0 if out.ok else EXIT_COUNTEREXAMPLE, failed))


def _write(trace_out, tracer):
    failed = write_reporting(trace_out, lambda tmp: write_trace(tracer.events, tmp))
    if failed is None:
        click.echo(f"trace written to {trace_out.path}")
    return failed
