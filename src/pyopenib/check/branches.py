"""Which rarely taken branches of the credit protocol a run exercised.

A proof over orderings says nothing about code the workload never reaches: a
configuration in which no credit message is ever deferred proves nothing about deferral.
The counts come from what the BTL exposes: its per-QP statistics (``job_stats``:
unsignaled ``sendi`` posts, explicit credit messages, piggybacked credits) and its trace
(``credit_msg_deferred``; a credit message that carries no credit is an acknowledgement
of cm_seen alone; a cm_seen of 255 is the header field's cap). Data headers are not
traced, so a cm_seen cap reached in one of them is not seen here: the line says so.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..apps.stats import job_stats

__all__ = ["Branches", "branches_of"]

CM_SEEN_CAP = 255
"""The header's cm_seen field is 8 bits: more acknowledgements wait for the next one."""


@dataclass
class Branches:
    counts: dict[str, int]

    def lines(self) -> list[str]:
        never = [name for name, n in self.counts.items() if n == 0]
        out = [
            "protocol branches in the nominal run: "
            + ", ".join(f"{name} {n}" for name, n in self.counts.items())
        ]
        if never:
            out.append(
                "  never exercised (the verdict says nothing about them): " + ", ".join(never)
            )
        return out


def _field(event, name):
    for k, v in event[4]:
        if k == name:
            return v
    return None


def branches_of(modules, events) -> Branches:
    """The counts for one run: its BTL modules (after the run) and its trace events."""
    rows = job_stats(modules)
    credit_msgs = [e for e in events if e[1] == "btl" and e[2] == "credit_msg"]
    counts = {
        "credit msgs": sum(r.credit_msgs for r in rows),
        "piggybacked credits": sum(r.piggybacked for r in rows),
        "deferred credit msgs (cm_sent cap)": sum(
            1 for e in events if e[1] == "btl" and e[2] == "credit_msg_deferred"
        ),
        "ack-only credit msgs": sum(
            1 for e in credit_msgs if not _field(e, "credits") and not _field(e, "rdma_credits")
        ),
        "cm_seen at 255 (credit msgs; data headers untraced)": sum(
            1 for e in credit_msgs if _field(e, "cm_seen") == CM_SEEN_CAP
        ),
        "unsignaled sendi": sum(r.unsignaled for r in rows),
    }
    return Branches(counts)
