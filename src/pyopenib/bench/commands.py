"""``pyopenib bench``: OSU-style tables per device and credits policy (see docs/bench.md).

Parses options, builds the grid (``sweep.plan_points``), runs it, prints one table per
test, the wall time apart, and optionally writes ``--json`` and ``--plot`` output.
"""

from __future__ import annotations

import sys

import click
from rich.console import Console

from ..apps.job_settings import check_job_devices, job_settings
from ..errors import PyopenibError, register_topics
from ..hw import get_device_model
from ..options import DEVICE_NAME
from ..outputs import output_dir, output_file, write_reporting
from ..report.bench_plots import plot_osu
from ..report.bench_tables import osu_table, policy_table, wall_table
from .osu import OSU_UNITS
from .results import write_json
from .sweep import POLICIES, TESTS, figures, plan_points, preflight, run_sweep

__all__ = ["bench", "parse_sizes"]

DEFAULT_DEVICE = "mellanox-hermon"
DEFAULT_MAX_SIZE = 1 << 20
"""OSU's default -m for latency (1 MiB)."""
MAX_SIZE = 1 << 30
"""The largest message size accepted: each rank of a point allocates buffers of the
size, and a simulated transfer above 1 GiB says nothing a smaller one does not."""

register_topics(
    {
        "bench-bad-sizes": "--sizes {value!r}: {reason} (expected sizes in bytes, e.g. 1,8,64,4K,1M)",
        "bench-size-choice": "give either --sizes or --max-size, not both",
        "bench-no-points": (
            "nothing to measure: the bandwidth and message-rate tests start at 1 byte, and "
            "the sizes are {sizes}"
        ),
    }
)


def _size(token: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(token[-1:].upper(), 1)
    digits = token[:-1] if scale > 1 else token
    if not digits.isdigit():
        raise ValueError(f"{token!r} is not a size")
    size = int(digits) * scale
    if size > MAX_SIZE:
        raise ValueError(f"{token!r} is above the largest size, 1G ({MAX_SIZE} bytes)")
    return size


def parse_sizes(value: str) -> list[int]:
    """``1,8,64,4K,1M,1G`` -> sorted unique byte counts (0 is allowed: latency only)."""
    tokens = [t.strip() for t in value.split(",") if t.strip()]
    if not tokens:
        raise PyopenibError("bench-bad-sizes", value=value, reason="no sizes")
    try:
        return sorted({_size(t) for t in tokens})
    except ValueError as exc:
        raise PyopenibError("bench-bad-sizes", value=value, reason=str(exc)) from None


def _default_sizes(max_size: int) -> list[int]:
    """OSU's: 0, then powers of two up to ``max_size``."""
    return [0] + [1 << k for k in range(max_size.bit_length()) if 1 << k <= max_size]


@click.command("bench")
@click.option(
    "--device",
    "devices",
    multiple=True,
    metavar="ID",
    type=DEVICE_NAME,
    help=f"Device model (repeatable) [{DEFAULT_DEVICE}].",
)
@click.option(
    "--credits-qp",
    "policies",
    multiple=True,
    type=click.Choice(POLICIES),
    help="btl_openib_credits_qp policy (repeatable) [btl_openib_credits_qp if "
    "set, else smallest and own].",
)
@click.option(
    "--test",
    "tests",
    multiple=True,
    type=click.Choice(TESTS),
    help="Test (repeatable) [latency, bw, bibw, msgrate].",
)
@click.option("--sizes", default=None, metavar="LIST", help="Message sizes, e.g. 1,8,64,4K,1M.")
@click.option(
    "--max-size",
    type=click.IntRange(min=1, max=MAX_SIZE),
    default=None,
    metavar="N",
    help=f"Sizes 0, 1, 2, 4, ... up to N bytes [{DEFAULT_MAX_SIZE}].",
)
@click.option(
    "--iterations",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="Timed iterations per point [latency 100, bw/bibw/msgrate 20; policy: "
    "each scenario's own].",
)
@click.option(
    "--mca",
    "mca",
    multiple=True,
    type=(str, str),
    metavar="K V",
    help="MCA variable for every point (repeatable).",
)
@click.option("--plot", "plot_dir", default=None, metavar="DIR", help="Write PNG plots here.")
@click.option(
    "--json", "json_path", default=None, metavar="FILE", help="Write all results (.json)."
)
@click.option(
    "--dask",
    default=None,
    metavar="ADDRESS|local",
    help="Run the points on this Dask scheduler (or a local Dask cluster).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=2,
    show_default=True,
    help="Worker processes (1 = run inline).",
)
def bench(
    devices, policies, tests, sizes, max_size, iterations, mca, plot_dir, json_path, dask, jobs
):
    """OSU-style latency / bandwidth / bi-bandwidth / message-rate tables per device and
    credits policy, in simulated time; --test policy adds the policy-cost grid."""
    devices = list(devices) or [DEFAULT_DEVICE]
    tests = list(tests) or ["latency", "bw", "bibw", "msgrate"]
    if sizes is not None and max_size is not None:
        raise PyopenibError("bench-size-choice")
    size_list = (
        parse_sizes(sizes) if sizes is not None else _default_sizes(max_size or DEFAULT_MAX_SIZE)
    )
    json_out = output_file("--json", json_path, {".json": "json"})
    plot_out = output_dir("--plot", plot_dir)
    ctx = job_settings(mca)
    check_job_devices(ctx, [get_device_model(d) for d in devices])
    if not policies and not ctx.is_default("btl_openib_credits_qp"):
        policies = [ctx.get("btl_openib_credits_qp")]
    policies = list(policies) or ["smallest", "own"]
    # every point sets its own policy; the rest travels to the workers as --mca pairs
    pairs = [(k, v) for k, v in ctx.explicit_pairs() if k != "btl_openib_credits_qp"]
    preflight(devices, policies, pairs)
    points = plan_points(tests, devices, policies, size_list, iterations, pairs)
    if not points:
        raise PyopenibError("bench-no-points", sizes=", ".join(map(str, size_list)))
    where = f"Dask ({dask})" if dask else ("inline" if jobs == 1 else f"{jobs} processes")
    click.echo(f"pyopenib bench: {len(points)} points on {where}", err=True)
    results = run_sweep(points, jobs=jobs, dask=dask)

    console = Console()
    by_test = {test: figures(test, results) for test in tests}
    for test, figs in by_test.items():
        if test == "policy":
            console.print(policy_table(figs))
        else:
            console.print(osu_table(test, figs, OSU_UNITS[test]))
    console.print(wall_table(results))
    failed = None
    if json_out is not None:
        settings = {
            "devices": devices,
            "policies": policies,
            "tests": tests,
            "sizes": size_list,
            "iterations": iterations,
            "mca": [list(kv) for kv in pairs],
        }
        failed = write_reporting(json_out, lambda tmp: write_json(tmp, settings, results))
        if failed is None:
            click.echo(f"results: {json_out.path}", err=True)
    if plot_out is not None:
        for test, figs in by_test.items():
            if test == "policy" or not figs:
                continue
            try:
                out = plot_out.file(f"{test}.png", {".png": "png"})
            except PyopenibError as exc:
                click.echo(f"pyopenib: {exc}", err=True)
                failed = failed or exc
                break
            error = write_reporting(
                out, lambda tmp, t=test, f=figs: plot_osu(t, f, OSU_UNITS[t], tmp)
            )
            if error is None:
                click.echo(f"plot: {out.path}", err=True)
            failed = failed or error
    if failed is not None:
        sys.exit(failed.exit_code)
