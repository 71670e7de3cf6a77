"""``pyopenib bench``: OSU-style tables per device and credits policy (see docs/bench.md).

Parses options, builds the grid (``sweep.plan_points``), runs it, prints one table per
test, the wall time apart, and optionally writes ``--json`` and ``--plot`` output.
"""

from __future__ import annotations

import click
from rich.console import Console

from ..errors import PyopenibError, register_topics
from ..report.bench_plots import write_bench_plots
from ..report.bench_tables import osu_table, policy_table, wall_table
from .osu import OSU_UNITS
from .results import write_json
from .sweep import POLICIES, TESTS, figures, plan_points, preflight, run_sweep

__all__ = ["bench", "parse_sizes"]

DEFAULT_DEVICE = "mellanox-hermon"
DEFAULT_MAX_SIZE = 1 << 20
"""OSU's default -m for latency (1 MiB)."""

register_topics(
    {
        "bench-bad-sizes": "--sizes {value!r}: {reason} (expected sizes in bytes, e.g. 1,8,64,4K,1M)",
        "bench-size-choice": "give either --sizes or --max-size, not both",
        "bench-bad-max-size": "--max-size {value}: must be at least 1 byte",
        "bench-bad-iterations": "--iterations {value}: must be at least 1",
    }
)


def _size(token: str) -> int:
    scale = {"K": 1 << 10, "M": 1 << 20}.get(token[-1:].upper(), 1)
    digits = token[:-1] if scale > 1 else token
    if not digits.isdigit():
        raise ValueError(f"{token!r} is not a size")
    return int(digits) * scale


def parse_sizes(value: str) -> list[int]:
    """``1,8,64,4K,1M`` -> sorted unique byte counts (0 is allowed: latency only)."""
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
@click.option("--device", "devices", multiple=True, metavar="ID",
              help=f"Device model (repeatable) [{DEFAULT_DEVICE}].")  # fmt: skip
@click.option("--credits-qp", "policies", multiple=True, type=click.Choice(POLICIES),
              help="btl_openib_credits_qp policy (repeatable) [smallest and own].")  # fmt: skip
@click.option("--test", "tests", multiple=True, type=click.Choice(TESTS),
              help="Test (repeatable) [latency, bw, bibw, msgrate].")  # fmt: skip
@click.option("--sizes", default=None, metavar="LIST", help="Message sizes, e.g. 1,8,64,4K,1M.")
@click.option("--max-size", type=int, default=None, metavar="N",
              help=f"Sizes 0, 1, 2, 4, ... up to N bytes [{DEFAULT_MAX_SIZE}].")  # fmt: skip
@click.option("--iterations", type=int, default=None, metavar="N",
              help="Timed iterations per point [latency 100, bw/bibw/msgrate 20; policy: "
              "each scenario's own].")  # fmt: skip
@click.option("--mca", "mca", multiple=True, type=(str, str), metavar="K V",
              help="MCA variable for every point (repeatable).")  # fmt: skip
@click.option("--plot", "plot_dir", default=None, metavar="DIR", help="Write PNG plots here.")
@click.option("--json", "json_path", default=None, metavar="FILE", help="Write all results.")
@click.option("--dask", default=None, metavar="ADDRESS|local",
              help="Run the points on this Dask scheduler (or a local Dask cluster).")  # fmt: skip
@click.option("--jobs", type=int, default=2, show_default=True,
              help="Worker processes (1 = run inline).")  # fmt: skip
def bench(devices, policies, tests, sizes, max_size, iterations, mca, plot_dir, json_path, dask,
          jobs):  # fmt: skip
    """OSU-style latency / bandwidth / bi-bandwidth / message-rate tables per device and
    credits policy, in simulated time; --test policy adds the policy-cost grid."""
    devices = list(devices) or [DEFAULT_DEVICE]
    policies = list(policies) or ["smallest", "own"]
    tests = list(tests) or ["latency", "bw", "bibw", "msgrate"]
    if sizes is not None and max_size is not None:
        raise PyopenibError("bench-size-choice")
    if max_size is not None and max_size < 1:
        raise PyopenibError("bench-bad-max-size", value=max_size)
    if iterations is not None and iterations < 1:
        raise PyopenibError("bench-bad-iterations", value=iterations)
    size_list = parse_sizes(sizes) if sizes is not None else _default_sizes(
        max_size or DEFAULT_MAX_SIZE)  # fmt: skip
    preflight(devices, policies, mca)
    points = plan_points(tests, devices, policies, size_list, iterations, mca)
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
    if json_path:
        settings = {"devices": devices, "policies": policies, "tests": tests,
                    "sizes": size_list, "iterations": iterations,
                    "mca": [list(kv) for kv in mca]}  # fmt: skip
        write_json(json_path, settings, results)
        click.echo(f"results: {json_path}", err=True)
    if plot_dir:
        for path in write_bench_plots(plot_dir, by_test, OSU_UNITS):
            click.echo(f"plot: {path}", err=True)
