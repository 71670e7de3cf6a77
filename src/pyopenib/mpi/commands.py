"""``pyopenib run``: an unmodified mpi4py program on N simulated ranks (see docs/run.md).

The one place that chooses the transport for a real run: ``openib_btls`` asks the openib
BTL (``pyopenib.btl.build_job_btls``) for one module per rank. Tests inject their own
factory through ``run_job`` instead.
"""

from __future__ import annotations

import sys

import click

from ..errors import PyopenibError, register_topics
from ..report import write_trace
from ..sim import Tracer, make_simulator
from .runner import run_job

__all__ = ["openib_btls", "parse_devices", "run"]

DEFAULT_DEVICE = "mellanox-hermon"
"""ConnectX-2/3, the device most openib users ran on."""

register_topics(
    {
        "run-btl-unavailable": (
            "the openib BTL is not available in this build ({reason}); `pyopenib run` "
            "needs pyopenib.btl.build_job_btls"
        ),
        "run-device-choice": "give either --device ID or --devices MAP, not both",
        "run-bad-devices": (
            "--devices {value!r}: {reason} (expected ID[:COUNT],ID[:COUNT],... covering "
            "all {nprocs} ranks)"
        ),
        "run-bad-np": "-n {value}: the number of processes must be at least 1",
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


def openib_btls(devices, mca_pairs, ppn: int):
    """The ``make_btls`` factory of a real run: the openib BTL on the modelled devices."""
    try:
        from ..btl import build_job_btls
        from ..config.mca import load_mca_from_process
    except ImportError as exc:
        raise PyopenibError("run-btl-unavailable", reason=str(exc)) from None
    mca = load_mca_from_process(cli_pairs=list(mca_pairs))

    def make_btls(sim, nprocs):
        return build_job_btls(sim, nprocs, devices, list(mca_pairs), ppn, mca=mca)

    return make_btls


@click.command(
    "run",
    context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
)
@click.option("-n", "--np", "nprocs", type=int, required=True, help="Number of ranks.")
@click.option("--device", default=None, help=f"Device model for every rank [{DEFAULT_DEVICE}].")
@click.option("--devices", default=None, help="Per-rank devices: ID[:COUNT],ID[:COUNT],...")
@click.option("--ppn", type=int, default=1, show_default=True, help="Processes per node.")
@click.option("--mca", nargs=2, multiple=True, metavar="NAME VALUE", help="MCA parameter.")
@click.option("--seed", type=int, default=None, help="Randomise choice points with this seed.")
@click.option("--trace", "trace_path", default=None,
              help="Write the event trace: .jsonl (JSON lines), .json (Perfetto), "
              ".svg/.png/.pdf (sequence diagram around the first failure).")  # fmt: skip
@click.option("--tag-output", is_flag=True, help="Prefix lines with [1,rank]<stdout>:.")
@click.option("--timeout", type=float, default=None, help="Give up after this many sim seconds.")
@click.option("--cpu-scale", type=float, default=0.0, help="Charge CPU time x F as sim time.")
@click.option("--stats", is_flag=True,
              help="After the job, print per-rank, per-QP openib counters on stderr.")  # fmt: skip
@click.argument("program", type=click.Path(exists=True, dir_okay=False))
@click.argument("args", nargs=-1, type=click.UNPROCESSED)
def run(
    nprocs,
    device,
    devices,
    ppn,
    mca,
    seed,
    trace_path,
    tag_output,
    timeout,
    cpu_scale,
    stats,
    program,
    args,
):
    """Run an unmodified mpi4py PROGRAM on N simulated ranks, like mpirun."""
    if nprocs < 1:
        raise PyopenibError("run-bad-np", value=nprocs)
    if device and devices:
        raise PyopenibError("run-device-choice")
    chosen = parse_devices(devices, nprocs) if devices else (device or DEFAULT_DEVICE)
    make_btls = openib_btls(chosen, mca, ppn)
    btls: list = []
    if stats:
        make_btls = _keeping(make_btls, btls)
    tracer = Tracer() if trace_path else None
    sim = make_simulator(seed or 0, randomize=seed is not None, tracer=tracer)
    result = run_job(
        program,
        nprocs,
        make_btls,
        args,
        sim=sim,
        ppn=ppn,
        tag_output=tag_output,
        timeout=timeout,
        cpu_scale=cpu_scale,
    )
    if tracer is not None:
        write_trace(tracer.events, trace_path)
    if stats and btls:
        _print_stats(btls, result.sim_time_ps)
    sys.exit(result.exit_code)


def _keeping(make_btls, kept: list):
    """``make_btls`` that also keeps the modules it builds (for ``--stats``)."""

    def make(sim, nprocs):
        btls = make_btls(sim, nprocs)
        kept.extend(btls)
        return btls

    return make


def _print_stats(btls, sim_time_ps: int) -> None:
    from rich.console import Console

    from ..btl import job_stats, stats_table

    title = f"openib per rank and QP (job ended at {sim_time_ps / 1e6:,.3f} us simulated)"
    Console(stderr=True, width=160).print(stats_table(job_stats(btls), title))
