"""A shared receive queue of the openib module (an S entry of ``receive_queues``): one
SRQ's receive buffers for every peer, the module-wide send credits that protect it, and
its resizing (Open MPI's ``openib_btl->qps[q].u.srq_qp``, reference 3).

Send credits: ``sd_max`` sends may be outstanding on the queue at once, whoever they go
to; a send completion gives its credit back (there is no per-peer credit on an SRQ).
Receive buffers: re-posted up to ``rd_curr_num`` once at most ``rd_low_local`` remain.
With ``btl_openib_enable_srq_resize`` the SRQ starts with ``rd_init`` buffers and doubles
on every SRQ-limit event until ``rd_num``, as Open MPI does.
"""

from __future__ import annotations

from collections import deque

from ..errors import InvariantViolation

__all__ = ["SharedRq"]


class SharedRq:
    """The module-wide state of S queue ``index`` and the verbs SRQ it posts into."""

    __slots__ = (
        "index",
        "spec",
        "srq",
        "srq_num",
        "sd_credits",
        "rd_posted",
        "rd_curr_num",
        "rd_low_local",
        "limit_armed_next",
        "pending",
    )

    def __init__(self, index: int, spec, srq, resize: bool):
        self.index = index
        self.spec = spec
        self.srq = srq
        self.srq_num = srq.srq_num
        self.sd_credits = spec.sd_max
        """Sends this module may still have outstanding on the queue, to any peer."""
        self.rd_posted = 0
        """Receive buffers posted on the SRQ."""
        self.rd_curr_num = max(spec.rd_init, 1) if resize else spec.rd_num
        self.rd_low_local = (spec.rd_init - spec.rd_init // 4) if resize else spec.rd_low
        self.limit_armed_next = resize and spec.srq_limit > 0
        """Arm the SRQ limit after the next post (a resize is pending)."""
        self.pending: tuple[deque, deque] = (deque(), deque())
        """Fragments of every peer waiting for an SRQ send credit (high, low priority)."""

    def acquire_credit(self) -> None:
        """Take the credit admission found free (``sd_credits > 0``)."""
        self.sd_credits -= 1

    def release_credit(self, n: int = 1) -> None:
        self.sd_credits += n

    def repost_due(self) -> bool:
        """At most rd_low_local buffers left: fill up to rd_curr_num now."""
        return self.rd_posted <= self.rd_low_local

    def reposted(self, n: int) -> None:
        """``n`` buffers were posted; arm the SRQ limit if a resize is pending."""
        self.rd_posted += n
        if self.limit_armed_next:
            self.limit_armed_next = False
            self.srq.modify(srq_limit=self.spec.srq_limit)

    def buffer_consumed(self) -> None:
        self.rd_posted -= 1

    def limit_reached(self) -> None:
        """SRQ_LIMIT_REACHED: double the buffers to keep posted, up to rd_num."""
        spec = self.spec
        self.rd_curr_num *= 2
        if self.rd_curr_num >= spec.rd_num:
            self.rd_curr_num = spec.rd_num
            self.rd_low_local = spec.rd_low
        else:
            self.rd_low_local *= 2
            self.limit_armed_next = True

    def check(self, rank: int, held: int) -> None:
        """Never more than sd_max SRQ credits exist: the free ones plus those the
        endpoints' unsignaled sends hold (``held``)."""
        if self.sd_credits + held > self.spec.sd_max:
            raise InvariantViolation(
                "srq_credits",
                rank,
                -1,
                self.index,
                f"SRQ credits {self.sd_credits} + held by unsignaled sends {held} > "
                f"sd_max {self.spec.sd_max}",
            )
