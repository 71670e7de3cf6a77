"""``pyopenib report``: turn what a run left behind into something to read.

``pyopenib report trace FILE.jsonl --format perfetto|svg|png|pdf -o OUT`` converts a
JSON-lines trace (``pyopenib scenario ... --trace x.jsonl``) into a Perfetto trace or a
sequence diagram.
"""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import PyopenibError, register_topics
from ..options import FiniteFloat
from ..outputs import OutputFile
from ..report.jsonl import read_jsonl
from ..report.perfetto import write_perfetto
from ..report.sequence import write_sequence_diagram
from ..report.window import in_window

register_topics(
    {
        "report-format-unknown": "cannot tell the output format from {path!r}; "
        "give --format perfetto, svg, png or pdf",
    }
)

_BY_SUFFIX = {".json": "perfetto", ".svg": "svg", ".png": "png", ".pdf": "pdf"}


@click.group()
def report():
    """Exporters for traces (Perfetto, sequence diagrams)."""


@report.command("trace")
@click.argument("trace_file", type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["perfetto", "svg", "png", "pdf"]),
    default=None,
    help="Output format (default: from the -o extension).",
)
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Output file.")
@click.option(
    "--window-us",
    nargs=2,
    type=FiniteFloat(0.0),
    default=None,
    metavar="START END",
    help="Only this window of simulated time (us): the stretch drawn, or the events "
    "exported to Perfetto; default: the whole trace for Perfetto, the events "
    "before the first failure for a diagram.",
)
@click.option(
    "--last",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Default window: how many interesting events before the failure.",
)
def trace(trace_file, fmt, output, window_us, last):
    """Convert a JSON-lines trace into a Perfetto trace or a sequence diagram."""
    fmt = fmt or _BY_SUFFIX.get(Path(output).suffix.lower())
    if fmt is None:
        raise PyopenibError("report-format-unknown", path=output)
    if window_us is not None and window_us[0] >= window_us[1]:
        raise click.BadParameter(
            f"START {window_us[0]:g} must be before END {window_us[1]:g}", param_hint="--window-us"
        )
    out = OutputFile.check("-o", output, {Path(output).suffix.lower(): fmt})
    events = read_jsonl(trace_file)
    if not events:
        raise PyopenibError("report-trace-empty", path=trace_file)
    window = None
    if window_us is not None:
        window = (round(window_us[0] * 1e6), round(window_us[1] * 1e6))
    if fmt == "perfetto":
        if window is not None:
            events = [events[i] for i in in_window(events, window)]
        out.write(lambda tmp: write_perfetto(events, tmp))
        click.echo(f"wrote {output}: {len(events)} events; open it in https://ui.perfetto.dev")
    else:
        out.write(lambda tmp: write_sequence_diagram(events, tmp, window, last, fmt=fmt))
        click.echo(f"wrote {output}")
