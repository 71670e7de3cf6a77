"""What each rank's openib module did, per queue pair: the counters behind ``pyopenib run
--stats``. An MPI engineer sees where the fragments went, how many explicit credit
messages each QP carried, how many credits rode on data, and how many send completions
the NIC had to write (``sendi`` asks for one per 64 sends) — per rank, per QP index,
summed over the rank's peers.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table

from .module import OpenibModule

__all__ = [
    "QpStats",
    "RankRegistrations",
    "job_stats",
    "registration_rows",
    "registrations_table",
    "stats_table",
]


@dataclass(frozen=True)
class QpStats:
    rank: int
    qp: int
    queue: str
    """The receive_queues entry of this QP (``P,128,256,192,128``)."""
    frags: int
    bytes: int
    eager_rdma: int
    """Fragments written through an eager-RDMA ring (included in ``frags``)."""
    rdma_ops: int
    """RDMA writes and reads posted on this QP (the bulk of rendezvous messages)."""
    credit_msgs: int
    """Explicit credit messages posted on this QP (whichever queue they credit)."""
    piggybacked: int
    """Credits of this QP returned in the header of a data fragment."""
    completions: int
    """Send-side completions reaped on this QP (sends, credit messages, CTS, puts, gets)."""
    unsignaled: int
    """Sends posted without a completion (``sendi``)."""
    rnr_naks: int
    """RNR NAKs this rank's QPs received (InfiniBand; always 0 on per-peer queues unless
    the credit protocol failed)."""
    retransmissions: int


def _openib(btl):
    """The openib module of a rank: the module itself, or the BML's (None: sm only)."""
    if isinstance(btl, OpenibModule):
        return btl
    return btl.openib if getattr(btl, "uses_openib", False) else None


def job_stats(btls) -> list[QpStats]:
    """One row per rank and QP index, in rank order (ranks with no openib peer: none)."""
    rows = []
    for btl in btls:
        m = _openib(btl)
        if m is None:
            continue
        for q, spec in enumerate(m.queues):
            states = [ep.qps[q] for ep in m.endpoints.values()]
            seen = [s.qp.query_counters() for s in states if s.qp is not None]
            t = m.traffic[q]
            rows.append(QpStats(
                rank=m.rank, qp=q, queue=spec.spec(), frags=t.frags, bytes=t.bytes,
                eager_rdma=t.eager, rdma_ops=t.rdma_ops, credit_msgs=t.credit_msgs,
                piggybacked=sum(s.piggybacked for s in states),
                completions=t.completions, unsignaled=t.unsignaled,
                rnr_naks=sum(c.rnr_naks_received for c in seen),
                retransmissions=sum(c.retransmissions for c in seen),
            ))  # fmt: skip
    return rows


_COLUMNS = (
    ("rank", "rank"),
    ("QP", "qp"),
    ("receive queue", "queue"),
    ("fragments", "frags"),
    ("bytes", "bytes"),
    ("eager RDMA", "eager_rdma"),
    ("puts/gets", "rdma_ops"),
    ("credit msgs", "credit_msgs"),
    ("piggybacked", "piggybacked"),
    ("send CQEs", "completions"),
    ("unsignaled", "unsignaled"),
    ("RNR NAKs", "rnr_naks"),
    ("retransmits", "retransmissions"),
)


def stats_table(rows: list[QpStats], title: str) -> Table:
    table = Table(title=title)
    for header, _ in _COLUMNS:
        table.add_column(header, justify="left" if header == "receive queue" else "right")
    for row in rows:
        table.add_row(*(f"{getattr(row, field):,}" if isinstance(getattr(row, field), int)
                        else str(getattr(row, field)) for _, field in _COLUMNS))  # fmt: skip
    return table


@dataclass(frozen=True)
class RankRegistrations:
    """One rank's memory registrations on its openib device over the job."""

    rank: int
    registered: int
    """``ibv_reg_mr`` calls: one per rendezvous buffer on each side, one per eager-RDMA ring."""
    deregistered: int
    held: int
    """Registrations still held at the end (the eager-RDMA rings; anything else leaked)."""
    pinned_bytes: int
    peak_pinned_bytes: int


def registration_rows(btls) -> list[RankRegistrations]:
    rows = []
    for btl in btls:
        m = _openib(btl)
        if m is None:
            continue
        r = m.registrations
        rows.append(
            RankRegistrations(
                m.rank, r.registered, r.deregistered, r.live, r.pinned_bytes, r.peak_pinned_bytes
            )
        )
    return rows


def registrations_table(rows: list[RankRegistrations]) -> Table:
    table = Table(title="memory registrations per rank (reg_mr / dereg_mr, pinned bytes)")
    headers = ("rank", "reg_mr", "dereg_mr", "held at end", "pinned at end", "peak pinned")
    for header in headers:
        table.add_column(header, justify="right")
    for r in rows:
        table.add_row(
            *(
                f"{v:,}"
                for v in (
                    r.rank,
                    r.registered,
                    r.deregistered,
                    r.held,
                    r.pinned_bytes,
                    r.peak_pinned_bytes,
                )
            )
        )
    return table
