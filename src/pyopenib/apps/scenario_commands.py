"""``pyopenib scenario`` and ``pyopenib demo``: BTL-level workloads with a summary, the
failure report when the transport fails (exit 3), and a trace excerpt around the race."""

from __future__ import annotations

import sys

import click
from rich.console import Console
from rich.table import Table

from ..btl import stall_report
from ..config.limits import check_job_memory
from ..errors import InvariantViolation, PyopenibError, register_topics
from ..hw import get_device_model
from ..options import (
    cpu_scale_option,
    credits_qp_option,
    device_options,
    mca_option,
    replay_option,
)
from ..outputs import (
    EXIT_INTERRUPTED,
    TRACE_SUFFIXES,
    OutputDir,
    exit_status,
    output_file,
    write_reporting,
)
from ..report import write_trace
from ..sim import Tracer
from .job_settings import check_job_devices, job_settings
from .scenarios import DEFAULT_QUEUES, SCENARIOS, run_scenario

EXIT_HUNG = 2
EXIT_TRANSPORT_FAILURE = 3
EXIT_PROTOCOL_BUG = 4
SCENARIO_RANK_BYTES = 3 << 20
"""What one scenario rank costs (its BTL module, endpoints, CQ, QPs and the buffer pages
its traffic touches): measured 3.8 MB per rank for ``incast -n 256`` on mellanox-hermon
with two queues of 256 buffers (``/usr/bin/time -f %M``); 3 MiB keeps the estimate low,
so it refuses only what cannot fit."""
MAX_SCENARIO_RANKS = 1024
"""Each scenario rank is a BTL module with its queues: beyond this the run is a memory
test, not a protocol scenario."""

register_topics(
    {
        "scenario-invariant": "a BTL invariant broke (a protocol bug, please report it): {detail}",
    }
)


def traced_run(trace_out, tracer, name, **kwargs):
    """``run_scenario`` that still writes the trace when an invariant or the delivery check
    fails, or the user presses Ctrl-C, then reports it: the trace is what a bug report
    needs."""
    try:
        return run_scenario(name, **kwargs)
    except InvariantViolation as exc:
        _write(trace_out, tracer)
        raise PyopenibError(
            "scenario-invariant", exit_code=EXIT_PROTOCOL_BUG, detail=str(exc)
        ) from exc
    except PyopenibError as exc:
        if exc.topic == "scenario-delivery":
            _write(trace_out, tracer)
        raise
    except KeyboardInterrupt:
        _write(trace_out, tracer)
        click.echo("pyopenib: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)


def _write(trace_out, tracer):
    """Write the trace if one was asked for; a failure is printed and returned."""
    if trace_out is None:
        return None
    return write_reporting(trace_out, lambda tmp: write_trace(tracer.events, tmp))


def scenario_settings(mca, credits_qp, devices, tool: str, queues: str, nprocs: int):
    """The MCA context of a BTL tool (scenario, check): ``OMPI_MCA_*``, parameter files
    and ``--mca`` as ``run`` resolves them, ``--credits-qp`` as a command-line value that
    replaces an ``--mca btl_openib_credits_qp``, and ``queues`` as the tool's own default
    receive_queues (below any the user sets); checked against every device model and,
    for ``nprocs`` ranks, against this machine's memory (as ``run`` is)."""
    pairs = list(mca)
    if credits_qp is not None:
        pairs = [(k, v) for k, v in pairs if k != "btl_openib_credits_qp"]
        pairs.append(("btl_openib_credits_qp", credits_qp))
    ctx = job_settings(pairs, [("btl_openib_receive_queues", queues, tool)])
    models = [get_device_model(d) for d in devices if d is not None]
    settings = check_job_devices(ctx, models)
    check_job_memory(ctx, settings, nprocs, SCENARIO_RANK_BYTES)
    return ctx


def _summary(result, console: Console, title: str) -> None:
    table = Table(title=title)
    for col in ("QP", "fragments", "bytes", "explicit credit msgs sent on it", "piggybacked"):
        table.add_column(col, justify="right")
    for q in sorted(result.frags_per_qp):
        table.add_row(
            str(q),
            str(result.frags_per_qp[q]),
            str(result.bytes_per_qp[q]),
            str(result.credit_msgs_per_qp[q]),
            str(result.piggybacked_per_qp[q]),
        )
    console.print(table)
    outcome = "completed" if result.completed else ("FAILED" if result.failure else "HUNG")
    console.print(
        f"{outcome}: {result.delivered} fragments delivered, RNR NAKs {result.rnr_naks}, "
        f"simulated time {result.sim_time_ps / 1e6:.3f} us"
    )


def race_excerpt(result, before: int = 8) -> list[str]:
    """The last explicit credit message and receive re-post before the failure, and the
    failure itself: the lines a reader needs to see the race."""
    if result.tracer is None:
        return []
    events = result.tracer.events
    fail_idx = next(
        (i for i, e in enumerate(events) if e[2] in ("terminate_sent", "rnr_nak_sent", "fatal")),
        None,
    )
    if fail_idx is None:
        return []
    interesting = (
        "credit_msg",
        "post_rr",
        "recv_usable",
        "terminate_sent",
        "rnr_nak_sent",
        "credits_in",
        "terminate_received",
        "qp_error",
    )
    picked = [e for e in events[: fail_idx + 1] if e[2] in interesting]
    lines = []
    for t, layer, kind, actor, fields in picked[-before:] + [
        e for e in events[fail_idx + 1 : fail_idx + 6] if e[2] in interesting
    ]:
        detail = " ".join(f"{k}={v}" for k, v in fields)
        lines.append(f"{t / 1e6:12.3f} us  {layer:4} {actor:28} {kind:18} {detail}")
    return lines


@click.command()
@click.argument("name", type=click.Choice(SCENARIOS))
@device_options()
@credits_qp_option()
@mca_option()
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=0,
    show_default=True,
    help="Seed of the random oracle.",
)
@click.option("--random-timing", is_flag=True, help="Draw durations from the device intervals.")
@click.option(
    "--trace",
    "trace_file",
    default=None,
    help="Write the trace: .jsonl (JSON lines), .json (Perfetto), .svg/.png/.pdf "
    "(sequence diagram of the race window).",
)
@click.option(
    "-n",
    "nprocs",
    type=click.IntRange(min=2, max=MAX_SCENARIO_RANKS),
    default=None,
    help="Number of processes [pingpong, stream, bibw: 2; incast: 4].",
)
@click.option(
    "--iterations", type=click.IntRange(min=1), default=None, help="Fragments per sending rank."
)
@cpu_scale_option
@replay_option
def scenario(
    name,
    device,
    peer_device,
    credits_qp,
    mca,
    seed,
    random_timing,
    trace_file,
    nprocs,
    iterations,
    cpu_scale,
    token,
):
    """Run a built-in BTL workload between simulated processes and summarise it."""
    trace_out = output_file("--trace", trace_file, TRACE_SUFFIXES)
    if token is not None and random_timing:
        raise click.UsageError("--replay gives the timing; --random-timing would replace it")
    if token is not None and cpu_scale != 1.0:
        raise click.UsageError("--replay: `pyopenib check` runs at --cpu-scale 1; drop --cpu-scale")
    ctx = scenario_settings(
        mca,
        credits_qp,
        (device, peer_device),
        "pyopenib scenario",
        DEFAULT_QUEUES,
        nprocs or (4 if name == "incast" else 2),
    )
    oracle = None
    if token is not None:
        ranks = nprocs or (4 if name == "incast" else 2)
        devices = [device] + [peer_device or device] * (ranks - 1)
        oracle = token.scenario_oracle(name, devices, ctx.explicit_pairs(), iterations, ranks)
    console = Console()
    tracer = Tracer()
    result = traced_run(
        trace_out,
        tracer,
        name,
        device=device,
        peer_device=peer_device,
        mca_pairs=ctx.explicit_pairs(),
        seed=seed,
        randomize=random_timing,
        trace=tracer,
        nprocs=nprocs,
        iterations=iterations,
        oracle=oracle,
        cpu_scale=cpu_scale,
    )
    policy = ctx.get("btl_openib_credits_qp")
    _summary(result, console, f"{name} on {device} (credits_qp {policy})")
    failed = _write(trace_out, tracer)
    status = 0
    if result.failure is not None:
        click.echo(result.failure.report, err=True)
        excerpt = race_excerpt(result)
        if excerpt:
            click.echo("trace around the failure:", err=True)
            for line in excerpt:
                click.echo("  " + line, err=True)
        status = EXIT_TRANSPORT_FAILURE
    elif result.hung:
        click.echo(f"pyopenib: {result.hung}", err=True)
        for line in stall_report(result.modules):
            click.echo(f"  {line}", err=True)
        status = EXIT_HUNG
    sys.exit(exit_status(status, failed))


@click.command()
def demo():
    """The headline story: the credit race on Chelsio T3, then the fix."""
    # OMPI_MCA_*, parameter files and the scenarios' default queues, as scenario resolves
    # them; each step then sets the credits policy it shows
    ctx = scenario_settings(
        (), None, ("chelsio-t3", "connectx"), "pyopenib demo", DEFAULT_QUEUES, 2
    )
    pairs = ctx.explicit_pairs()
    console = Console()
    console.rule("[bold]1. Open MPI's policy: every credit message on QP 0 (smallest)")
    queues = ctx.get("btl_openib_receive_queues")
    console.print(f"bibw on chelsio-t3, receive_queues {queues}", markup=False)
    bad = run_scenario(
        "bibw", device="chelsio-t3", credits_qp="smallest", mca_pairs=pairs, trace=True
    )
    _summary(bad, console, "credits_qp smallest")
    if bad.failure is not None:
        console.print(bad.failure.report, markup=False, highlight=False)
        console.print("[bold]trace around the race[/bold] (time, layer, actor, event):")
        for line in race_excerpt(bad):
            console.print("  " + line, markup=False, highlight=False)
        out = OutputDir.check("demo output", "out")
        for name in ("t3-race.png", "t3-race-perfetto.json"):
            out.file(name, TRACE_SUFFIXES).write(lambda tmp: write_trace(bad.tracer.events, tmp))
        console.print(
            "sequence diagram of the race: out/t3-race.png; whole run for "
            "ui.perfetto.dev: out/t3-race-perfetto.json"
        )
    console.rule("[bold]2. The fix: credits of QP X travel on QP X (own)")
    good = run_scenario("bibw", device="chelsio-t3", credits_qp="own", mca_pairs=pairs)
    _summary(good, console, "credits_qp own")
    console.rule("[bold]3. ConnectX (separate SQ/RQ engines): a timing window, not a rule")
    for policy in ("smallest", "own"):
        r = run_scenario("bibw", device="connectx", credits_qp=policy, mca_pairs=pairs)
        console.print(
            f"connectx, {policy}: {'completed' if r.completed else 'FAILED'} in "
            f"{r.sim_time_ps / 1e6:.1f} us simulated"
        )
    if bad.failure is None or not good.completed:
        sys.exit(1)
