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
    "grdma_stats_lines",
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
            states = [ep.qps[q] for ep in m.endpoints.values()]
            seen = [s.qp.query_counters() for s in states if s.qp is not None]
            t = m.traffic[q]
            rows.append(
                QpStats(
                    rank=m.rank,
                    qp=q,
                    queue=spec.spec(),
                    frags=t.frags,
                    bytes=t.bytes,
                    eager_rdma=t.eager,
                    rdma_ops=t.rdma_ops,
                    credit_msgs=t.credit_msgs,
                    piggybacked=sum(s.piggybacked for s in states),
                    completions=t.completions,
                    unsignaled=t.unsignaled,
                    rnr_naks=sum(c.rnr_naks_received for c in seen),
                    retransmissions=sum(c.retransmissions for c in seen),
                )
            )
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
        table.add_row(
            *(
                f"{getattr(row, field):,}"
                if isinstance(getattr(row, field), int)
                else str(getattr(row, field))
                for _, field in _COLUMNS
            )
        )
    return table


@dataclass(frozen=True)
class RankRegistrations:
    """One rank's memory registrations on its openib device over the job, and what its
    registration cache (Open MPI's grdma) did."""

    rank: int
    registered: int
    """``ibv_reg_mr`` calls: one per cache miss (a rendezvous buffer not registered yet),
    one per eager-RDMA ring."""
    deregistered: int
    held: int
    """Registrations still held at the end: the eager-RDMA rings, buffers in use, and
    (leave_pinned) the cached ones whose memory is still alive; anything else leaked."""
    pinned_bytes: int
    peak_pinned_bytes: int
    hits: int
    """Registrations found in the cache (no ``ibv_reg_mr``)."""
    misses: int
    cached: int
    """Of ``held``: unused registrations kept pinned (leave_pinned's LRU list)."""
    evicted: int
    invalidated: int
    """Deregistered because their memory was freed (the memory hooks)."""


def registration_rows(btls) -> list[RankRegistrations]:
    rows = []
    for btl in btls:
        m = openib_module(btl)
        if m is None:
            continue
        r = m.registrations
        c = m.rcache
        rows.append(
            RankRegistrations(
                m.rank,
                r.registered,
                r.deregistered,
                r.live,
                r.pinned_bytes,
                r.peak_pinned_bytes,
                c.stats.hits,
                c.stats.misses,
                c.unused,
                c.stats.evicted,
                c.stats.invalidated,
            )
        )
    return rows


_REGISTRATION_COLUMNS = (
    ("rank", "rank"),
    ("reg_mr", "registered"),
    ("dereg_mr", "deregistered"),
    ("held at end", "held"),
    ("pinned at end", "pinned_bytes"),
    ("peak pinned", "peak_pinned_bytes"),
    ("cache hits", "hits"),
    ("misses", "misses"),
    ("cached unused", "cached"),
    ("evicted", "evicted"),
    ("freed", "invalidated"),
)


def registrations_table(rows: list[RankRegistrations]) -> Table:
    table = Table(
        title="memory registrations per rank (reg_mr / dereg_mr, pinned bytes, registration cache)"
    )
    for header, _ in _REGISTRATION_COLUMNS:
        table.add_column(header, justify="right")
    for r in rows:
        table.add_row(*(f"{getattr(r, field):,}" for _, field in _REGISTRATION_COLUMNS))
    return table


def grdma_stats_lines(btls) -> list[str]:
    """What ``rcache_grdma_print_stats`` prints when each process closes its device, in
    Open MPI's words (``rcache_grdma_finalize``). found/not found count
    ``rcache_find`` lookups, which ob1 over openib never makes: 0, as in Open MPI."""
    lines = []
    for btl in btls:
        m = openib_module(btl)
        if m is None:
            continue
        c = m.rcache
        lines.append(
            f"[[1,1],{m.rank}] grdma: stats (hit/miss/found/not found/evicted/tree size): "
            f"{c.stats.hits}/{c.stats.misses}/0/0/{c.stats.evicted}/{c.tree_size}"
        )
    return lines
