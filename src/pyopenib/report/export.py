"""``write_trace``: one call that writes a trace in the format its file name asks for."""

from __future__ import annotations

from pathlib import Path

from ..errors import PyopenibError, register_topics
from .jsonl import write_jsonl
from .perfetto import write_perfetto
from .sequence import write_sequence_diagram

__all__ = ["write_trace", "TRACE_FORMATS"]

TRACE_FORMATS = {
    ".jsonl": "JSON lines (one event per line; `pyopenib report trace` reads it back)",
    ".json": "Perfetto / Chrome trace-event JSON (open in ui.perfetto.dev)",
    ".svg": "sequence diagram of the window around the first failure",
    ".png": "sequence diagram of the window around the first failure",
    ".pdf": "sequence diagram of the window around the first failure",
}

register_topics(
    {
        "report-trace-format": "cannot tell the trace format of {path!r} from its extension; "
        "use one of: {valid}",
    }
)


def write_trace(events, path, window: tuple[int, int] | None = None) -> None:
    """Write ``events`` to ``path``: ``.jsonl`` JSON lines, ``.json`` Perfetto trace,
    ``.svg`` / ``.png`` / ``.pdf`` sequence diagram (``window`` in ps, default: the
    stretch before the first failure). Any other extension is a ``PyopenibError``."""
    suffix = Path(path).suffix.lower()
    if suffix == ".jsonl":
        write_jsonl(events, path)
    elif suffix == ".json":
        write_perfetto(events, path)
    elif suffix in (".svg", ".png", ".pdf"):
        write_sequence_diagram(events, path, window)
    else:
        raise PyopenibError("report-trace-format", path=str(path), valid=", ".join(TRACE_FORMATS))
