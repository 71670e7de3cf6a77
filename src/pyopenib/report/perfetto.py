"""Chrome / Perfetto trace-event JSON: open the file in https://ui.perfetto.dev or
chrome://tracing.

Layout: one process per host (``node000``, ``node001``), one thread per lifeline on it
(the BTL endpoint ``rank0->1``, the device, each QP). Every trace event is an instant
(``"ph": "i"``, thread scope) carrying its fields as ``args``, except the ends of a
message: the ``send_emit``, its arrival at the peer QP and the BTL event that posted a
control message are 1 ns complete slices (``"ph": "X"``), because flow arrows bind to
slices, not to instants. Each message is a flow (``"s"`` at the send, ``"f"`` with
``"bp": "e"`` at the arrival); a control message gets a second flow from the BTL's post
to its ``send_emit``. The first failure (TERMINATE, RNR NAK, fatal) is also a global
instant, a line across every track.

Timestamps are microseconds as the format requires (``ts = time_ps / 1e6``); events
keep their trace order within a track.
"""

from __future__ import annotations

import json

from .messages import find_messages
from .tracks import rank_hosts, track_of, track_order
from .window import first_failure

__all__ = ["to_perfetto", "write_perfetto"]
_SLICE_US = 0.001  # 1 ns: long enough to hold a flow end, far below any modelled latency


def _us(t_ps: int) -> float:
    return t_ps / 1e6


def to_perfetto(events) -> dict:
    """The trace as a trace-event JSON object (``{"traceEvents": [...], ...}``)."""
    hosts = rank_hosts(events)
    tracks = {e[3]: track_of(e[3], hosts) for e in events}
    hosts = sorted({t.host for t in tracks.values()})
    pid = {h: n + 1 for n, h in enumerate(hosts)}
    tid = {}
    meta = []
    for h in hosts:
        meta.append(_meta("process_name", pid[h], 0, name=h))
        meta.append(_meta("process_sort_index", pid[h], 0, sort_index=pid[h]))
        lifelines = sorted({t for t in tracks.values() if t.host == h}, key=track_order)
        for n, t in enumerate(lifelines, 1):
            tid[t] = n
            meta.append(_meta("thread_name", pid[h], n, name=t.name))
            meta.append(_meta("thread_sort_index", pid[h], n, sort_index=n))

    messages = find_messages(events)
    slices = set()
    for m in messages:
        slices.update((m.send, m.arrival))
        if m.control is not None:
            slices.add(m.control)

    def where(i):
        t = tracks[events[i][3]]
        return pid[t.host], tid[t]

    durations = _slice_durations(events, slices)
    out = []
    for i, (t, layer, kind, actor, fields) in enumerate(events):
        p, th = where(i)
        ev = {
            "name": kind,
            "cat": layer,
            "ts": _us(t),
            "pid": p,
            "tid": th,
            "args": {"actor": actor, **dict(fields)},
        }
        if i in slices:
            ev.update(ph="X", dur=durations[i])
        else:
            ev.update(ph="i", s="t")
        out.append(ev)

    flow_id = 0
    for m in messages:
        flow_id += 1
        out.extend(_flow(flow_id, m.label, events, m.send, m.arrival, where))
        if m.control is not None:
            flow_id += 1
            out.extend(_flow(flow_id, "post " + m.label, events, m.control, m.send, where))

    fail_idx = first_failure(events)
    if fail_idx is not None:
        fail = events[fail_idx]
        out.append(
            {
                "name": f"first failure: {fail[2]} on {fail[3]}",
                "cat": "failure",
                "ph": "i",
                "s": "g",
                "ts": _us(fail[0]),
                "pid": 0,
                "tid": 0,
                "args": dict(fail[4]),
            }
        )
    out.sort(key=lambda ev: ev["ts"])  # stable: trace order within equal times
    return {
        "traceEvents": meta + out,
        "displayTimeUnit": "ns",
        "otherData": {"source": "pyopenib", "time_unit": "us = simulated microseconds"},
    }


def _slice_durations(events, slices) -> dict[int, float]:
    """1 ns each, shortened so that two slices of one track never partly overlap (the
    viewers drop slices that are not properly nested)."""
    durations = {}
    seen: dict[str, tuple[int, int | None]] = {}  # actor -> (latest start, the one after it)
    for i in sorted(slices, reverse=True):
        t, actor = events[i][0], events[i][3]
        start, after = seen.get(actor, (None, None))
        bound = after if start == t else start  # next strictly later slice on this track
        durations[i] = _SLICE_US if bound is None else min(_SLICE_US, _us(bound - t))
        seen[actor] = (t, bound)
    return durations


def _meta(what, pid, tid, **args) -> dict:
    return {"name": what, "ph": "M", "pid": pid, "tid": tid, "args": args}


def _flow(flow_id, label, events, start, end, where) -> list[dict]:
    sp, st = where(start)
    ep, et = where(end)
    common = {"name": label, "cat": "message", "id": flow_id}
    return [
        {**common, "ph": "s", "ts": _us(events[start][0]), "pid": sp, "tid": st},
        {**common, "ph": "f", "bp": "e", "ts": _us(events[end][0]), "pid": ep, "tid": et},
    ]


def write_perfetto(events, path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(to_perfetto(events), fh, separators=(",", ":"))
