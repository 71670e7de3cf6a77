"""Messages on the wire, recovered from a trace: which ``send_emit`` on one QP became
which ``recv_msg`` (or ``terminate_sent`` / ``rnr_nak_sent``) on its peer QP, and which
of them were the BTL's control messages (explicit credits, CTS).

The events do not name a QP's peer, so the pairing is inferred, in two steps:

1. Connected QPs. Every QP numbers its messages (msn, from 0); the responder reports the
   msn it received. For every two QPs on different hosts we count the arrivals on one
   that match a send of the other (same msn, op and size, sent no later); QPs pair up
   one to one, best score first. An RC QP talks to exactly one peer QP, so the pairing is
   symmetric.
2. Each arrival is then the latest send with its msn on the peer QP that precedes it (a
   retransmission after an RNR NAK re-arrives; the NAK and the final arrival are both
   kept, each with its own arrow).

A control message is linked to the BTL event that posted it (``credit_msg`` names the QP
index it travels on and whether it goes by eager RDMA, ``cts_sent`` uses the first
queue): the first later ``send_emit`` of control size (header + credit body, at most a
footer more) and matching opcode on the QP holding that index; if the BTL event carries
a ``wr_id`` (the frag's trace id), only the send with that wr_id. QP indices are the connection's
live QPs (those that carried traffic) in QP-number order, the order the BTL creates them.
A QP pair that never carried a message cannot be paired; its events still show, without
arrows.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from dataclasses import dataclass

from .tracks import host_of_rank, rank_hosts, track_of

__all__ = ["Message", "find_messages", "qp_peers", "ARRIVAL_KINDS"]

ARRIVAL_KINDS = ("recv_msg", "terminate_sent", "rnr_nak_sent")
CONTROL_MAX_BYTES = 4 + 4 + 8
"""A credit message or CTS on the wire: the openib header (``mca_btl_openib_header_t``,
4 bytes) and the credit body (type, qpn, rdma credits: 4 bytes), no payload, plus at most
a small footer when it is written into an eager-RDMA ring. Stated here from the wire
format, not imported from ``btl.frag``: the exporters read a trace and never the layers
that wrote it (tests/test_layering.py pins this value to the BTL's own structs)."""


@dataclass(frozen=True, slots=True)
class Message:
    """``send``: index of the ``send_emit`` event; ``arrival``: index of the event at the
    peer QP; ``control``: index of the BTL event that posted it, or None for data;
    ``label``: how a reader names it ("credits qp=1 on qp0", "CTS", "SEND 516B msn 384")."""

    send: int
    arrival: int
    control: int | None
    label: str


def _fields(event) -> dict:
    return dict(event[4])


def _sends_by_actor(events):
    sends = defaultdict(lambda: defaultdict(list))  # actor -> msn -> [index]
    for i, e in enumerate(events):
        if e[2] == "send_emit":
            f = _fields(e)
            if "msn" in f:
                sends[e[3]][f["msn"]].append(i)
    return sends


def _arrivals_by_actor(events):
    arrivals = defaultdict(list)
    for i, e in enumerate(events):
        if e[2] in ARRIVAL_KINDS and "msn" in _fields(e):
            arrivals[e[3]].append(i)
    return arrivals


def _matches(events, send_idx: int, arrival_idx: int) -> bool:
    s, a = _fields(events[send_idx]), _fields(events[arrival_idx])
    if events[arrival_idx][2] != "recv_msg":
        return True  # a TERMINATE / RNR NAK names only the msn
    return s.get("op") == a.get("op") and s.get("bytes") == a.get("bytes")


def qp_peers(events) -> dict[str, str]:
    """Actor of each QP that carried traffic -> actor of its connected peer QP."""
    sends = _sends_by_actor(events)
    arrivals = _arrivals_by_actor(events)
    actors = sorted(set(sends) | set(arrivals))
    hosts = rank_hosts(events)

    def score(src: str, dst: str) -> int:
        by_msn = sends.get(src, {})
        n = 0
        for j in arrivals.get(dst, ()):
            cands = by_msn.get(_fields(events[j])["msn"], ())
            if any(i < j and _matches(events, i, j) for i in cands):
                n += 1
        return n

    candidates = []
    for x, a in enumerate(actors):
        for b in actors[x + 1 :]:
            if track_of(a, hosts).host == track_of(b, hosts).host:
                continue
            s = score(a, b) + score(b, a)
            if s:
                candidates.append((-s, a, b))
    peers: dict[str, str] = {}
    for _, a, b in sorted(candidates):
        if a not in peers and b not in peers:
            peers[a], peers[b] = b, a
    return peers


def find_messages(events) -> list[Message]:
    """Every arrival paired with its send, in the order of the sends; control messages
    labelled by the BTL event that posted them."""
    peers = qp_peers(events)
    sends = _sends_by_actor(events)
    pairs = []
    for dst, idxs in sorted(_arrivals_by_actor(events).items()):
        src = peers.get(dst)
        if src is None:
            continue
        for j in idxs:
            cands = [i for i in sends[src].get(_fields(events[j])["msn"], ()) if i < j]
            if cands:
                pairs.append((cands[-1], j))
    pairs.sort()
    control = _control_posts(events, peers)
    out = []
    for i, j in pairs:
        c = control.get(i)
        out.append(Message(i, j, c, _label(events, i, c)))
    return out


def _label(events, send_idx: int, control_idx: int | None) -> str:
    f = _fields(events[send_idx])
    if control_idx is None:
        return f"{f.get('op', '?')} {f.get('bytes', '?')}B msn {f.get('msn', '?')}"
    c = events[control_idx]
    if c[2] == "cts_sent":
        return "CTS"
    cf = _fields(c)
    return f"credits qp={cf.get('qp', '?')} on qp{cf.get('on_qp', '?')}"


def _qp_by_index(peers, hosts) -> dict[tuple[str, str], list[str]]:
    """(host, peer host) -> the connection's live QP actors in QP-number order."""
    by_conn = defaultdict(list)
    for actor, peer in peers.items():
        t, p = track_of(actor, hosts), track_of(peer, hosts)
        if t.qpn is not None:
            by_conn[(t.host, p.host)].append((t.qpn, actor))
    return {k: [a for _, a in sorted(v)] for k, v in by_conn.items()}


def _control_posts(events, peers) -> dict[int, int]:
    """send_emit index -> index of the ``credit_msg`` / ``cts_sent`` event that posted it."""
    hosts = rank_hosts(events)
    qps = _qp_by_index(peers, hosts)
    small = defaultdict(list)  # actor -> indices of control-sized send_emits
    for i, e in enumerate(events):
        if (
            e[2] == "send_emit"
            and _fields(e).get("bytes", CONTROL_MAX_BYTES + 1) <= CONTROL_MAX_BYTES
        ):
            small[e[3]].append(i)
    taken: dict[int, int] = {}
    for i, e in enumerate(events):
        if e[2] not in ("credit_msg", "cts_sent"):
            continue
        t = track_of(e[3], hosts)
        peer_rank = e[3].rsplit(">", 1)[-1]
        if t.rank is None or not peer_rank.isdigit():
            continue
        f = _fields(e)
        op = "RDMA_WRITE" if f.get("by_rdma") else "SEND"
        if "qpn" in f:  # the event names the QP it was posted on: exact
            candidates = [
                a
                for a in small
                if track_of(a, hosts).host == t.host and track_of(a, hosts).qpn == f["qpn"]
            ]
        else:  # older traces: the connection's QP at the message's index
            conn = qps.get((t.host, host_of_rank(int(peer_rank), hosts)), [])
            index = f.get("on_qp", 0)
            candidates = [conn[index]] if index < len(conn) else conn
        for actor in candidates:
            j = _first_free(events, small.get(actor, []), i, op, f.get("wr_id"), taken)
            if j is not None:
                taken[j] = i
                break
    return taken


def _first_free(events, idxs, after, op, wr_id, taken) -> int | None:
    for k in range(bisect_right(idxs, after), len(idxs)):
        j = idxs[k]
        f = _fields(events[j])
        if j in taken or f.get("op") != op:
            continue
        if wr_id is None or f.get("wr_id") == wr_id:
            return j
    return None
