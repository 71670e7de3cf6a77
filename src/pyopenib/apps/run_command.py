"""``pyopenib run``: an unmodified mpi4py program on N simulated ranks (see docs/run.md).

The one place that chooses the transport for a real run: ``openib_btls`` asks the openib
BTL (``pyopenib.btl.build_job_btls``) for one module per rank. Tests inject their own
factory through ``run_job`` instead.
"""

from __future__ import annotations

import signal
import sys
import traceback
from contextlib import contextmanager

import click

from ..btl import build_job_btls, stall_report
from ..config.limits import check_job_memory
from ..config.mca import load_mca_from_process
from ..errors import TOPICS, PyopenibError, register_topics
from ..hw import get_device_model
from ..mpi.package import program_command
from ..mpi.runner import EXIT_TIMEOUT, run_job
from ..options import DEVICE_NAME, SECONDS, cpu_scale_option, mca_option, replay_option
from ..outputs import EXIT_INTERRUPTED, TRACE_SUFFIXES, exit_status, output_file, write_reporting
from ..pml.header import FRAG_HDR, LARGEST_CONTROL_HEADER
from ..report import write_trace
from ..sim import Tracer, make_simulator
from .job_settings import check_job_devices, job_settings

__all__ = ["openib_btls", "parse_devices", "run"]

DEFAULT_DEVICE = "mellanox-hermon"
"""ConnectX-2/3, the device most openib users ran on."""

RANK_BYTES = 3 << 20
"""What one rank costs (its greenlet, MPI state, PML, BTL module, CQ, QPs and the pages
of its buffers a barrier touches): measured 3.6 MB per rank at -n 1000 and 4.6 MB at
-n 4000 on mellanox-hermon (``/usr/bin/time -f %M pyopenib run -n N barrier.py``).
3 MiB keeps the estimate low: it refuses only what cannot fit."""

register_topics(
    {
        "run-device-choice": "give either --device ID or --devices MAP, not both",
        "run-wall-timeout": (
            "--wall-timeout {limit:g}: the job of {ranks} ranks ran out of real time and was "
            "stopped (simulated time did not reach --timeout; a rank may be computing in a loop)"
        ),
        "run-bad-devices": (
            "--devices {value!r}: {reason} (expected ID[:COUNT],ID[:COUNT],... covering "
            "all {nprocs} ranks)"
        ),
        "run-max-send-size-below-frag-header": (
            "btl_openib_max_send_size = {value} (source: {source}) leaves no room for data "
            "in a copy-in/out fragment behind the PML's {header}-byte FRAG header; set it "
            "above {header}"
        ),
    }
)


def parse_devices(spec: str, nprocs: int) -> list[str]:
    """``--devices MAP``: ``ID[:COUNT]`` groups, rank order; a lone ID covers the rest."""
    out: list[str] = []
    groups = [g.strip() for g in spec.split(",") if g.strip()]
    if not groups:
        raise PyopenibError("run-bad-devices", value=spec, reason="empty map", nprocs=nprocs)
    for i, group in enumerate(groups):
        name, _, count = group.partition(":")
        if count:
            if not count.isdigit() or int(count) < 1:
                raise PyopenibError(
                    "run-bad-devices", value=spec, reason=f"bad count {count!r}", nprocs=nprocs
                )
            out.extend([name] * int(count))
        elif i == len(groups) - 1:
            out.extend([name] * max(0, nprocs - len(out)))
        else:
            out.append(name)
    if len(out) != nprocs:
        raise PyopenibError(
            "run-bad-devices", value=spec, reason=f"it names {len(out)} ranks", nprocs=nprocs
        )
    return out


def openib_btls(devices, mca_pairs, ppn: int, *, mca=None, cpu_scale: float = 1.0):
    """The ``make_btls`` factory of a real run: the openib BTL on the modelled devices,
    each rank on its device's host type with its costs times ``cpu_scale``. ``mca`` is
    the resolved context (``job_settings``); without it this process's environment,
    parameter files and ``mca_pairs`` are resolved here."""
    if mca is None:
        mca = load_mca_from_process(cli_pairs=list(mca_pairs))

    def make_btls(sim, nprocs):
        return build_job_btls(sim, nprocs, devices, mca, ppn, cpu_scale=cpu_scale)

    return make_btls


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option(
    "-n", "--np", "nprocs", type=click.IntRange(min=1), required=True, help="Number of ranks."
)
@click.option(
    "--device",
    type=DEVICE_NAME,
    default=None,
    help=f"Device model for every rank [{DEFAULT_DEVICE}].",
)
@click.option("--devices", default=None, help="Per-rank devices: ID[:COUNT],ID[:COUNT],...")
@click.option(
    "--ppn", type=click.IntRange(min=1), default=1, show_default=True, help="Processes per node."
)
@mca_option()
@click.option(
    "--seed",
    type=click.IntRange(min=0, max=2**63 - 1),
    default=None,
    help="Randomise choice points with this seed.",
)
@replay_option
@click.option(
    "--trace",
    "trace_path",
    default=None,
    help="Write the event trace: .jsonl (JSON lines), .json (Perfetto), "
    ".svg/.png/.pdf (sequence diagram around the first failure).",
)
@click.option("--tag-output", is_flag=True, help="Prefix lines with [1,rank]<stdout>:.")
@click.option(
    "--timeout", type=SECONDS, default=None, help="Give up after this many simulated seconds."
)
@click.option(
    "--wall-timeout",
    type=SECONDS,
    default=None,
    help="Give up after this many seconds of real (wall-clock) time.",
)
@cpu_scale_option
@click.option(
    "--stats", is_flag=True, help="After the job, print per-rank, per-QP openib counters on stderr."
)
@click.argument("program")
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(
    nprocs,
    device,
    devices,
    ppn,
    mca,
    seed,
    token,
    trace_path,
    tag_output,
    timeout,
    wall_timeout,
    cpu_scale,
    stats,
    program,
    args,
):
    """Run an unmodified mpi4py PROGRAM on N simulated ranks, like mpirun.

    PROGRAM is a Python file, or an interpreter and what it runs, as on an mpirun line
    (python prog.py, python -m mpi4py prog.py)."""
    program, args = program_command(program, args)
    click.Path(exists=True, dir_okay=False).convert(program, None, click.get_current_context())
    if device and devices:
        raise PyopenibError("run-device-choice")
    trace_out = output_file("--trace", trace_path, TRACE_SUFFIXES)
    chosen = parse_devices(devices, nprocs) if devices else (device or DEFAULT_DEVICE)
    names = [chosen] if isinstance(chosen, str) else chosen
    models = [get_device_model(name) for name in dict.fromkeys(names)]
    ctx = job_settings(mca)
    settings = check_job_devices(ctx, models, LARGEST_CONTROL_HEADER, "the PML's largest header")
    for resolved in settings:
        if resolved.max_send_size <= FRAG_HDR.size:
            raise PyopenibError(
                "run-max-send-size-below-frag-header",
                value=resolved.max_send_size,
                source=ctx.source("btl_openib_max_send_size"),
                header=FRAG_HDR.size,
            )
    check_job_memory(ctx, settings, nprocs, RANK_BYTES)
    make_btls = openib_btls(chosen, mca, ppn, mca=ctx, cpu_scale=cpu_scale)
    btls: list = []
    make_btls = _keeping(make_btls, btls)  # --stats and a deadlock's BTL report read them
    tracer = Tracer() if trace_out else None
    sim = make_simulator(seed or 0, randomize=seed is not None, tracer=tracer)
    if token is not None:
        if seed is not None:
            raise click.UsageError("--replay gives the timing; --seed would replace it")
        if ppn != 1:
            raise click.UsageError("--replay: `pyopenib check` runs one rank per node; drop --ppn")
        per_rank = [chosen] * nprocs if isinstance(chosen, str) else chosen
        if cpu_scale != 1.0:
            raise click.UsageError(
                "--replay: `pyopenib check` runs on the device's host at --cpu-scale 1; "
                "drop --cpu-scale"
            )
        sim.oracle = token.program_oracle(program, nprocs, per_rank, ctx.explicit_pairs(), args)
    try:
        with _wall_clock_limit(wall_timeout):
            result = run_job(
                program,
                nprocs,
                make_btls,
                args,
                sim=sim,
                ppn=ppn,
                tag_output=tag_output,
                timeout=timeout,
                add_btls=_adding(btls),
            )
    except SyntaxError as exc:
        # Python's own report (file, line, caret), without the launcher's frames
        click.echo("".join(traceback.format_exception_only(exc)).rstrip(), err=True)
        sys.exit(1)
    except _WallClockLimit:
        if trace_out is not None:
            write_reporting(trace_out, lambda tmp: write_trace(tracer.events, tmp))
        click.echo(
            f"pyopenib: {TOPICS['run-wall-timeout'].format(limit=wall_timeout, ranks=nprocs)}",
            err=True,
        )
        sys.exit(EXIT_TIMEOUT)
    except KeyboardInterrupt:
        if trace_out is not None:
            write_reporting(trace_out, lambda tmp: write_trace(tracer.events, tmp))
        click.echo("pyopenib: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if result.reason == "deadlock":
        for line in stall_report(btls):
            click.echo(f"  {line}", err=True)
    failed = None
    if trace_out is not None:
        failed = write_reporting(trace_out, lambda tmp: write_trace(tracer.events, tmp))
    grdma_stats = ctx.get("rcache_grdma_print_stats")
    if (stats or grdma_stats) and btls:
        _print_stats(btls, result.sim_time_ps, stats, grdma_stats)
    sys.exit(exit_status(result.exit_code, failed))


class _WallClockLimit(KeyboardInterrupt):
    """``--wall-timeout`` expired. Raised by SIGALRM in whatever code runs (a rank's
    compute loop included, which simulated time cannot stop); a KeyboardInterrupt so that
    it ends the whole job the way Ctrl-C does."""


@contextmanager
def _wall_clock_limit(seconds: float | None):
    if seconds is None:
        yield
        return

    def expired(signum, frame):
        raise _WallClockLimit

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _keeping(make_btls, kept: list):
    """``make_btls`` that also keeps the modules it builds (for ``--stats``)."""

    def make(sim, nprocs):
        btls = make_btls(sim, nprocs)
        kept.extend(btls)
        return btls

    return make


def _adding(kept: list):
    """``run_job``'s ``add_btls`` for the openib job (``JobBtls``): the modules of the
    processes a spawn adds, kept with the others (``--stats`` shows them too)."""

    def add(btls, count: int) -> list:
        added = btls.add_processes(count)
        kept.extend(added)
        return added

    return add


def _print_stats(btls, sim_time_ps: int, tables: bool, grdma_lines: bool) -> None:
    """``--stats``'s tables and (``rcache_grdma_print_stats``) Open MPI's grdma lines."""
    from rich.console import Console

    from .stats import (
        grdma_stats_lines,
        job_stats,
        registration_rows,
        registrations_table,
        stats_table,
    )

    if grdma_lines:
        for line in grdma_stats_lines(btls):
            click.echo(line, err=True)
    if not tables:
        return
    title = f"openib per rank and QP (job ended at {sim_time_ps / 1e6:,.3f} us simulated)"
    console = Console(stderr=True, width=160)
    console.print(stats_table(job_stats(btls), title))
    console.print(registrations_table(registration_rows(btls)))
