"""Where a trace event happened: the host and the track (QP, device, BTL endpoint) named
by its actor string.

Actors are written by the layers that emit: the NIC writes ``node001/chelsio-t3/qp65``
(host / device / QP number) or ``node001/chelsio-t3`` for device-wide events; the BTL
writes ``rank1->0`` (the endpoint of rank 1 towards rank 0). A BTL actor does not name its
host: each BTL module emits a ``placement`` event (``rank1``, host=``node000``) when it is
created, and ``rank_hosts`` collects them; without one, rank r is on ``node{r:03d}`` (one
process per host). Anything else gets a track of its own on host ``other``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Track", "rank_hosts", "track_of", "track_order"]

_HW = re.compile(r"^(?P<host>[^/]+)/(?P<device>[^/]+)(?:/qp(?P<qpn>\d+))?$")
_BTL = re.compile(r"^rank(?P<rank>\d+)(?:->(?P<peer>\d+|\?))?$")  # "rank1" alone: placement


@dataclass(frozen=True, slots=True)
class Track:
    """One lifeline: ``host`` ("node001"), ``name`` shown on the track ("chelsio-t3/qp65",
    "btl rank1->0"), ``qpn`` for a QP, ``rank`` for a BTL endpoint."""

    host: str
    name: str
    qpn: int | None = None
    rank: int | None = None

    @property
    def is_btl(self) -> bool:
        return self.rank is not None


def rank_hosts(events) -> dict[int, str]:
    """Rank -> host, from the BTL modules' ``placement`` events."""
    hosts = {}
    for e in events:
        if e[2] == "placement" and e[3].startswith("rank"):
            hosts[int(e[3][4:])] = dict(e[4])["host"]
    return hosts


def host_of_rank(rank: int, hosts: dict[int, str] | None = None) -> str:
    if hosts and rank in hosts:
        return hosts[rank]
    return f"node{rank:03d}"


def track_of(actor: str, hosts: dict[int, str] | None = None) -> Track:
    m = _BTL.match(actor)
    if m:
        rank = int(m["rank"])
        return Track(host_of_rank(rank, hosts), f"btl {actor}", rank=rank)
    m = _HW.match(actor)
    if m:
        qpn = m["qpn"]
        if qpn is None:
            return Track(m["host"], m["device"])
        return Track(m["host"], f"{m['device']}/qp{qpn}", qpn=int(qpn))
    return Track("other", actor)


def track_order(track: Track) -> tuple:
    """Sort key within a host: BTL endpoints first, then the device, then QPs by number."""
    if track.is_btl:
        return (0, track.name, 0)
    if track.qpn is None:
        return (1, track.name, 0)
    return (2, track.name.rsplit("/", 1)[0], track.qpn)
