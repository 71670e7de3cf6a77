"""JSON lines: one trace event per line, ``{"t_ps", "layer", "kind", "actor", fields...}``.

The flat layout is the one ``pyopenib scenario --trace`` has always written, so a line is
easy to grep and to load with any JSON tool. ``read_jsonl`` gives back the tracer's tuples
exactly (field order included) for the plain values events carry: ints, strings, bools.
"""

from __future__ import annotations

import json

from ..errors import PyopenibError, register_topics
from ..sim.schema import COLUMNS

__all__ = ["write_jsonl", "read_jsonl", "RESERVED_KEYS"]

RESERVED_KEYS = COLUMNS
"""The columns of a line (``sim.schema.COLUMNS``); fields come after them."""

register_topics(
    {
        "report-trace-unreadable": "cannot read trace file {path}: {reason}",
        "report-trace-line": "{path}:{line}: not a trace event ({reason}): {text}",
    }
)


def write_jsonl(events, path) -> None:
    """Write ``events`` (the tracer's tuples) to ``path``, one JSON object per line."""
    with open(path, "w", encoding="utf-8") as fh:
        for t, layer, kind, actor, fields in events:
            record = {"t_ps": t, "layer": layer, "kind": kind, "actor": actor}
            for name, value in fields:
                if name in record:
                    # a field named like a column would be lost on reading: an emitter bug
                    raise ValueError(f"trace field {name!r} of {kind!r} shadows a column")
                record[name] = value
            fh.write(json.dumps(record) + "\n")


def read_jsonl(path) -> list[tuple]:
    """Read a JSON-lines trace back into ``(time_ps, layer, kind, actor, fields)`` tuples.

    Raises ``PyopenibError`` naming the file and line of the first bad record."""
    try:
        fh = open(path, encoding="utf-8")
    except OSError as exc:
        raise PyopenibError("report-trace-unreadable", path=path, reason=exc.strerror) from None
    events = []
    with fh:
        try:
            for lineno, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise PyopenibError(
                        "report-trace-line",
                        path=path,
                        line=lineno,
                        reason=exc.msg,
                        text=_clip(line),
                    ) from None
                events.append(_event(record, path, lineno, line))
        except UnicodeDecodeError:
            raise PyopenibError(
                "report-trace-unreadable",
                path=path,
                reason="not UTF-8 text (is it a JSON-lines trace?)",
            ) from None
    return events


def _event(record, path, lineno, line) -> tuple:
    if not isinstance(record, dict):
        raise PyopenibError(
            "report-trace-line",
            path=path,
            line=lineno,
            reason="not a JSON object",
            text=_clip(line),
        )
    missing = [k for k in RESERVED_KEYS if k not in record]
    if missing:
        raise PyopenibError(
            "report-trace-line",
            path=path,
            line=lineno,
            reason="missing " + ", ".join(missing),
            text=_clip(line),
        )
    t = record["t_ps"]
    if type(t) is not int or t < 0:
        raise PyopenibError(
            "report-trace-line",
            path=path,
            line=lineno,
            reason=f"t_ps must be a non-negative integer, got {t!r}",
            text=_clip(line),
        )
    fields = tuple((k, v) for k, v in record.items() if k not in RESERVED_KEYS)
    return (t, record["layer"], record["kind"], record["actor"], fields)


def _clip(line: str, width: int = 80) -> str:
    line = line.rstrip("\n")
    return line if len(line) <= width else line[: width - 3] + "..."
