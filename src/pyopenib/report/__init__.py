"""report — what a user reads: trace exporters (JSON lines, Perfetto / Chrome trace-event
JSON, sequence diagrams) and the ``pyopenib report`` command.

Exporters take the tracer's events as they are, tuples ``(time_ps, layer, kind, actor,
((name, value), ...))``, and never reach into the layers that emitted them; what the
events leave implicit (which QP is whose peer, which send was a credit message) is
inferred in ``messages`` and said so in its docstring.
"""

from .bench_plots import plot_osu, write_bench_plots
from .bench_tables import osu_table, policy_table, wall_table
from .export import TRACE_FORMATS, write_trace
from .jsonl import read_jsonl, write_jsonl
from .messages import Message, find_messages, qp_peers
from .perfetto import to_perfetto, write_perfetto
from .sequence import draw_sequence, write_sequence_diagram
from .window import INTERESTING_KINDS, default_window, first_failure

__all__ = [
    "write_trace",
    "TRACE_FORMATS",
    "read_jsonl",
    "write_jsonl",
    "to_perfetto",
    "write_perfetto",
    "draw_sequence",
    "write_sequence_diagram",
    "Message",
    "find_messages",
    "qp_peers",
    "default_window",
    "first_failure",
    "INTERESTING_KINDS",
    "osu_table",
    "policy_table",
    "wall_table",
    "plot_osu",
    "write_bench_plots",
]
