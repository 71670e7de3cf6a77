"""report — what a user reads: trace exporters (JSON lines, Perfetto / Chrome trace-event
JSON, sequence diagrams) and the ``pyopenib report`` command.

Exporters take the tracer's events as they are, tuples ``(time_ps, layer, kind, actor,
((name, value), ...))``, and never reach into the layers that emitted them; what the
events leave implicit (which QP is whose peer, which send was a credit message) is
inferred in ``messages`` and said so in its docstring.
"""

from importlib import import_module

_HOME = {
    "plot_osu": "bench_plots",
    "write_bench_plots": "bench_plots",
    "osu_table": "bench_tables",
    "policy_table": "bench_tables",
    "wall_table": "bench_tables",
    "TRACE_FORMATS": "export",
    "write_trace": "export",
    "read_jsonl": "jsonl",
    "write_jsonl": "jsonl",
    "Message": "messages",
    "find_messages": "messages",
    "qp_peers": "messages",
    "to_perfetto": "perfetto",
    "write_perfetto": "perfetto",
    "draw_sequence": "sequence",
    "write_sequence_diagram": "sequence",
    "INTERESTING_KINDS": "window",
    "default_window": "window",
    "first_failure": "window",
}
"""Each public name and the module that defines it, imported on first use (PEP 562):
``pyopenib run --trace`` needs the exporters, not the bench tables (rich) and plots."""


def __getattr__(name: str):
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


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
