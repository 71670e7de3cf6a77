"""What each rank's openib module did, per queue pair: the counters behind ``pyopenib run
--stats``. An MPI engineer sees where the fragments went, how many explicit credit
messages each QP carried, how many credits rode on data, and how many send completions
the NIC had to write (``sendi`` asks for one per 64 sends) — per rank, per QP index,
summed over the rank's peers.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.table import Table

from ..btl import openib_module

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


def job_stats(btls) -> list[QpStats]:
    """One row per rank and QP index, in rank order (ranks with no openib peer: none)."""
    rows = []
    for btl in btls:
        m = openib_module(btl)
        if m is None:
            continue
        for q, spec in enumerate(m.queues):
            eps = list(m.endpoints.values())
            hw = [ep.qps[q].hw for ep in eps if ep.qps[q] is not None]
            rows.append(QpStats(
                rank=m.rank, qp=q, queue=spec.spec(), frags=m.frags_sent[q],
                bytes=m.bytes_sent[q], eager_rdma=m.eager_sent[q], rdma_ops=m.rdma_ops[q],
                credit_msgs=m.credit_msgs_on[q],
                piggybacked=sum(ep.piggybacked[q] for ep in eps),
                completions=m.send_completions[q], unsignaled=m.unsignaled_sends[q],
                rnr_naks=sum(h.req.rnr_naks_received for h in hw),
                retransmissions=sum(h.req.retransmissions for h in hw),
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
        m = openib_module(btl)
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
