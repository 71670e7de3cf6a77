"""A sequence diagram of a stretch of trace (matplotlib, no display needed).

Lifelines run down the page: on the left host its BTL endpoint then its QPs, on the right
host the same mirrored, each QP facing its peer so that the arrows of a QP pair nest
instead of crossing. Time runs downwards one row per event — a race is about order, and
equal-time events need rows of their own to be readable — and every row is labelled with
its simulated time. Arrows are messages (``send_emit`` to the arrival at the peer QP):
credit messages in orange labelled "credits qp=1 on qp0", CTS in purple, data in blue,
a message that met a TERMINATE or RNR NAK in red. A dotted line joins a BTL's
``credit_msg`` to the ``send_emit`` of that message on its QP (how long it queued).
"""

from __future__ import annotations

from ..errors import PyopenibError, register_topics
from .figures import save_figure
from .messages import find_messages, qp_peers
from .tracks import Track, rank_hosts, track_of, track_order
from .window import default_window, first_failure, in_window

__all__ = ["draw_sequence", "write_sequence_diagram", "MAX_ROWS"]

MAX_ROWS = 600
"""Beyond this many events a diagram stops being readable (and gets slow to draw)."""
DEFAULT_ROWS = 40
"""The default window keeps at most this many events before the failure."""

_HIDDEN = ("send_left",)  # one per packet: noise next to send_emit and the arrival
_DATA, _CREDIT, _CTS, _FAIL, _OK = "#4477aa", "#ee7733", "#aa3377", "#cc3311", "#228833"
_MARKERS = {  # kind -> (marker, colour, size)
    "recv_usable": ("o", _OK, 4),
    "post_rr": ("s", _OK, 6),
    "credit_msg": ("D", _CREDIT, 6),
    "credit_msg_deferred": ("D", "#999999", 6),
    "credits_in": ("o", _CREDIT, 6),
    "terminate_sent": ("X", _FAIL, 11),
    "rnr_nak_sent": ("v", _FAIL, 9),
    "terminate_received": ("X", _FAIL, 8),
    "rnr_nak_received": ("v", _FAIL, 7),
    "qp_error": ("x", _FAIL, 7),
    "fatal": ("X", _FAIL, 9),
    "async": ("x", _FAIL, 7),
    "wc_error": ("x", _FAIL, 7),
}

register_topics(
    {
        "report-window-too-large": "{rows} events between {t0} us and {t1} us: too many for a "
        "readable sequence diagram (at most {limit}); choose a narrower --window-us, or "
        "open the Perfetto export for the whole trace",
    }
)


def _text(kind: str, f: dict) -> str | None:
    """The words beside a marker; None where the legend says it all."""
    if kind == "recv_usable":
        return None
    if kind == "post_rr":
        return f"post_rr qp={f.get('qp')} +{f.get('posted')}"
    if kind == "credit_msg":
        how = " by RDMA" if f.get("by_rdma") else ""
        return f"credit_msg qp={f.get('qp')} on qp{f.get('on_qp')} ({f.get('credits')}){how}"
    if kind == "credits_in":
        return f"credits_in qp={f.get('qp')} +{f.get('credits')}"
    if kind == "terminate_sent":
        return (
            f"TERMINATE sent: msn {f.get('msn')}, {f.get('posted')} posted, "
            f"{f.get('usable')} usable"
        )
    if kind == "rnr_nak_sent":
        return f"RNR NAK sent: msn {f.get('msn')}, {f.get('usable')} usable"
    if kind == "fatal":
        return f"fatal: qp={f.get('qp')} {f.get('status')}"
    if kind == "async":
        return f"async {f.get('event')} qp{f.get('qp')}"
    if kind == "send_emit":  # only those that never arrive get here
        return f"{f.get('op')} {f.get('bytes')}B msn {f.get('msn')} emitted: no arrival in trace"
    detail = " ".join(f"{k}={v}" for k, v in f.items() if k not in ("reason", "wr_id"))
    return f"{kind} {detail}".strip()


def _group_bursts(events, idxs: list[int]) -> list[list[int]]:
    """A run of ``recv_usable`` events shares one row per QP: a re-post of 256 buffers
    becomes usable one by one (often interleaved across QPs), and hundreds of rows of dots
    would push the race off the page."""
    groups: list[list[int]] = []
    run: dict[str, list[int]] = {}  # actor -> its group in the current run
    for i in idxs:
        e = events[i]
        if e[2] != "recv_usable":
            run = {}
            groups.append([i])
        elif e[3] in run:
            run[e[3]].append(i)
        else:
            run[e[3]] = [i]
            groups.append(run[e[3]])
    return groups


def _lanes(tracks: list[Track], peers: dict[Track, Track]) -> list[Track]:
    """Left-to-right lifelines: the first host as is, the second mirrored so that each
    QP faces its peer; further hosts follow in order."""
    hosts = sorted({t.host for t in tracks})
    by_host = {h: sorted((t for t in tracks if t.host == h), key=track_order) for h in hosts}
    lanes = list(by_host[hosts[0]])
    for h in hosts[1:]:
        own = by_host[h]
        if h == hosts[1]:
            pos = {t: n for n, t in enumerate(lanes)}
            qps = [t for t in own if not t.is_btl]
            others = [t for t in own if t.is_btl]
            qps.sort(key=lambda t: -pos.get(peers.get(t), -1))
            own = qps + others
        lanes.extend(own)
    return lanes


def draw_sequence(events, window: tuple[int, int] | None = None, last: int = 8):
    """A matplotlib ``Figure`` of ``events`` in ``window`` (ps), default window as
    ``default_window(events, last)``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    if window is None:
        window = default_window(events, last, budget=DEFAULT_ROWS, skip=_HIDDEN)
    inside = set(in_window(events, window))
    messages = [m for m in find_messages(events) if m.send in inside or m.arrival in inside]
    shown = {i for i in inside if events[i][2] not in _HIDDEN}
    for m in messages:
        shown.update((m.send, m.arrival))
        if m.control is not None:
            shown.add(m.control)
    t0, t1 = window
    groups = _group_bursts(events, sorted(shown))
    if len(groups) > MAX_ROWS:
        raise PyopenibError(
            "report-window-too-large",
            rows=len(groups),
            t0=f"{t0 / 1e6:.3f}",
            t1=f"{t1 / 1e6:.3f}",
            limit=MAX_ROWS,
        )
    rows = [g[0] for g in groups]
    row_of = {i: n for n, g in enumerate(groups) for i in g}
    burst = {g[0]: g for g in groups if len(g) > 1}
    hosts = rank_hosts(events)
    track = {i: track_of(events[i][3], hosts) for i in shown}
    trk_peers = {track_of(a, hosts): track_of(b, hosts) for a, b in qp_peers(events).items()}
    lanes = _lanes(sorted(set(track.values()), key=lambda t: (t.host, track_order(t))), trk_peers)
    x_of = {t: n for n, t in enumerate(lanes)}
    mid = (len(lanes) - 1) / 2

    width = max(7.0, 2.2 * len(lanes) + 2.0)
    height = 2.2 + 0.32 * len(rows)
    fig = Figure(figsize=(width, height))
    FigureCanvasAgg(fig)
    ax = fig.add_axes((1.3 / width, 1.1 / height, 1 - 1.6 / width, 1 - 2.1 / height))
    ax.set_xlim(-0.7, len(lanes) - 0.3)
    ax.set_ylim(len(rows) - 0.4, -0.8)
    for spine in ("top", "right", "bottom"):
        ax.spines[spine].set_visible(False)
    ax.set_xticks([])

    # host bands and lifelines
    hosts = []
    for t in lanes:
        if not hosts or hosts[-1][0] != t.host:
            hosts.append([t.host, x_of[t], x_of[t]])
        hosts[-1][2] = x_of[t]
    for n, (host, a, b) in enumerate(hosts):
        ax.axvspan(a - 0.45, b + 0.45, color="#f2f2f2" if n % 2 == 0 else "#e8eef6", zorder=0)
        ax.text((a + b) / 2, -0.75, host, ha="center", va="bottom", fontsize=10, weight="bold")
    for t in lanes:
        x = x_of[t]
        ax.axvline(x, color="#888888", lw=0.8, zorder=1)
        ax.text(x, -0.45, t.name.replace("btl ", "BTL "), ha="center", va="bottom", fontsize=8)

    # time axis: one row per event
    labels, prev = [], None
    for i in rows:
        t = events[i][0]
        labels.append(f"{t / 1e6:,.3f} us" if t != prev else "\u2033")
        prev = t
    ax.set_yticks(range(len(rows)), labels, fontsize=7)
    ax.tick_params(axis="y", length=0)

    fail = first_failure(events)
    if fail is not None and fail in row_of:
        ax.axhline(row_of[fail], color=_FAIL, lw=0.6, ls=(0, (4, 4)), zorder=1)

    in_message = {m.send for m in messages} | {m.arrival for m in messages}
    for m in messages:
        a, b = (x_of[track[m.send]], row_of[m.send]), (x_of[track[m.arrival]], row_of[m.arrival])
        failed = events[m.arrival][2] != "recv_msg"
        colour = (
            _FAIL
            if failed
            else _DATA
            if m.control is None
            else (_CTS if m.label == "CTS" else _CREDIT)
        )
        lw = 1.0 if colour == _DATA else 2.0
        ax.annotate(
            "",
            xy=b,
            xytext=a,
            zorder=3,
            annotation_clip=False,
            arrowprops={"arrowstyle": "-|>", "color": colour, "lw": lw, "shrinkA": 2, "shrinkB": 2},
        )
        ax.plot(*a, marker="o", ms=3, color=colour, zorder=4)
        # labels sit nearer the sender so that crossing arrows keep theirs apart
        ax.text(
            a[0] + 0.35 * (b[0] - a[0]),
            a[1] + 0.35 * (b[1] - a[1]),
            m.label,
            ha="center",
            va="center",
            fontsize=7 if colour == _DATA else 8,
            color=colour,
            weight="normal" if colour == _DATA else "bold",
            zorder=5,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
        )
        if m.control is not None:
            c = (x_of[track[m.control]], row_of[m.control])
            ax.plot([c[0], a[0]], [c[1], a[1]], ls=":", lw=1.2, color=colour, zorder=2)

    for i in rows:
        t, _layer, kind, _actor, fields = events[i]
        if i in in_message and kind in ("send_emit", "recv_msg"):
            continue
        x, y = x_of[track[i]], row_of[i]
        marker, colour, size = _MARKERS.get(kind, ("o", "#666666", 4))
        ax.plot(x, y, marker=marker, ms=size, color=colour, zorder=6, ls="none")
        text = _text(kind, dict(fields))
        if i in burst:
            text = f"\u00d7{len(burst[i])} {kind} (to {events[burst[i][-1]][0] / 1e6:,.3f} us)"
        if text:
            right = x <= mid
            ax.text(
                x + (0.08 if right else -0.08),
                y,
                text,
                ha="left" if right else "right",
                va="center",
                fontsize=7.5,
                color=colour if colour != "#666666" else "black",
                zorder=7,
                bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.7},
            )

    title = f"pyopenib trace, {t0 / 1e6:,.3f} us to {t1 / 1e6:,.3f} us"
    if fail is not None:
        e = events[fail]
        title += f"   first failure: {e[2]} on {e[3]} at {e[0] / 1e6:,.3f} us"
    fig.suptitle(title, fontsize=10, y=1 - 0.15 / height, va="top")
    legend = [
        Line2D([], [], color=_DATA, lw=1, label="data message"),
        Line2D([], [], color=_CREDIT, lw=2, label="credit message"),
        Line2D([], [], color=_CTS, lw=2, label="CTS"),
        Line2D([], [], color=_FAIL, lw=2, label="met TERMINATE / RNR NAK"),
        Line2D([], [], color=_OK, marker="o", ms=4, ls="none", label="receive usable by NIC"),
        Line2D([], [], color=_OK, marker="s", ms=6, ls="none", label="BTL posts receives"),
        Line2D([], [], color=_CREDIT, ls=":", lw=1.2, label="BTL post \u2192 NIC emits"),
    ]
    fig.legend(
        handles=legend,
        loc="lower center",
        ncol=4,
        fontsize=7.5,
        frameon=False,
        bbox_to_anchor=(0.5, 0.05 / height),
    )
    return fig


def write_sequence_diagram(
    events, path, window: tuple[int, int] | None = None, last: int = 8, fmt: str | None = None
) -> None:
    """Draw and save as ``fmt`` (png, svg, pdf), by default as the file name's extension."""
    fig = draw_sequence(events, window, last)
    save_figure(fig, path, fmt, dpi=130)
