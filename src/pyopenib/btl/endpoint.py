"""An endpoint: this process's connection to one peer, and the per-QP state it owns.

As in Open MPI (``mca_btl_openib_endpoint_t``), ``ep.qps[q]`` is the state of QP ``q``
toward this peer, one object per QP kind with the counters its rules move and the
operations that move them, in pairs with their undo (Open MPI's ``qp_get_wqe`` /
``qp_put_wqe``, ``credit_acquire`` / ``credit_release``):

* ``PerPeerQp`` (``mca_btl_openib_endpoint_pp_qp_t``): a P queue, receive buffers posted
  for this peer alone, so send credits are per peer (``sd_credits``), re-posted buffers
  are owed back (``rd_credits``) and explicit credit messages land in reserved buffers
  (``cm_*``);
* ``SharedRqQp`` (``mca_btl_openib_endpoint_srq_qp_t``): an S queue, whose receive
  buffers and send credits belong to the module's ``SharedRq`` (``btl/srq.py``) for every
  peer at once; the QP itself only counts the SRQ credits its unsignaled sends hold.

Both own their send work-queue entries (``sd_wqe``), the unsignaled sends that will come
back with the next completion, and the fragments waiting for a WQE or a credit, each
list a (high priority, low priority) pair as Open MPI's ``*_pending_frags[2]``.
"""

from __future__ import annotations

from collections import deque
from enum import StrEnum

from ..config import credits_qp_index
from ..errors import InvariantViolation
from .frag import QP_TX_BATCH_COUNT

__all__ = ["Endpoint", "EndpointState", "PerPeerQp", "SharedRqQp"]


class EndpointState(StrEnum):
    """Open MPI's ``MCA_BTL_IB_*`` endpoint states, as far as this BTL moves through them."""

    CLOSED = "CLOSED"
    """No QPs yet: the first send creates them (lazy connection)."""
    CONNECTING = "CONNECTING"
    """QPs created, the out-of-band exchange or the CTS handshake under way."""
    CONNECTED = "CONNECTED"
    """Both sides' QPs at RTS and receive buffers posted: fragments may go."""
    FAILED = "FAILED"
    """A fatal completion or async event: nothing more goes through this endpoint."""


_CONNECTED = EndpointState.CONNECTED
"""As a constant: an enum member read from its class costs a class-attribute lookup, and
the invariant checks compare a state with it after every progress and every audited event
(``hw.qp._SUCCESS`` says why)."""

NO_PENDING: tuple = ((), ())
"""A pending pair nothing has waited on yet. Empty tuples read like empty deques (falsy,
``len`` 0, nothing to iterate), so the drains need no special case; the first fragment
that must wait gets its endpoint real deques (``_queue_on``). A deque costs 760 bytes
even empty, and ten per endpoint were most of what a connection weighed (issue 13)."""


def _queue_on(pair: tuple, frag) -> tuple:
    """Append ``frag`` to the (high, low priority) ``pair`` by its priority; the pair to
    keep (a new one when ``pair`` was ``NO_PENDING``)."""
    if pair is NO_PENDING:
        pair = (deque(), deque())
    pair[0 if frag.high else 1].append(frag)
    return pair


class _EndpointQp:
    """What every QP kind owns toward one peer: the verbs QP and its send side."""

    __slots__ = (
        "ep",
        "index",
        "qp",
        "sd_wqe",
        "sd_wqe_inflight",
        "wqe_count",
        "no_wqe_pending",
        "credit_lock",
        "credit_frag",
        "credit_msgs_sent",
        "carrier",
    )

    def __init__(self, index: int, sd_wqe: int):
        self.ep = None  # the Endpoint this QP state belongs to (set by it)
        self.index = index
        self.qp = None  # the verbs QueuePair, once connection setup creates it
        self.sd_wqe = sd_wqe
        """Free send work-queue entries on the QP."""
        self.sd_wqe_inflight = 0
        """Unsignaled sends (``sendi``) posted since the last signaled one: their WQEs come
        back with the next send completion on this QP."""
        self.wqe_count = QP_TX_BATCH_COUNT
        """Unsignaled sends left before ``sendi`` signals again."""
        self.no_wqe_pending = NO_PENDING
        """Fragments waiting for a WQE (high, low priority), created on first use."""
        self.credit_lock = False
        """A credit message for this QP is being built or is in flight (Open MPI's
        ``BTL_OPENIB_CREDITS_SEND_TRYLOCK``)."""
        self.credit_frag = None
        self.credit_msgs_sent = 0
        self.carrier = self
        """The QP state whose credit message carries this QP's credits (``credit_carrier``)."""

    # -- send work-queue entries (qp_get_wqe / qp_put_wqe) ----------------------------------
    def wait_for_wqe(self, frag) -> None:
        """Queue ``frag`` until a send WQE comes back (by its priority)."""
        self.no_wqe_pending = _queue_on(self.no_wqe_pending, frag)

    def acquire_wqe(self) -> bool:
        """Take a send WQE; False (nothing taken) when the send queue is full."""
        if self.sd_wqe <= 0:
            return False
        self.sd_wqe -= 1
        return True

    def put_wqe(self, n: int = 1) -> None:
        self.sd_wqe += n

    def carry_unsignaled(self, frag) -> None:
        """A signaled WR carries the WQEs (and SRQ credits) of the unsignaled sends posted
        before it: its completion gives them back (Open MPI's ``qp_inflight_wqe_to_frag``)."""
        frag.unsignaled = self.sd_wqe_inflight
        self.sd_wqe_inflight = 0

    def posted_unsignaled(self, takes_srq_credit: bool) -> None:
        self.sd_wqe_inflight += 1

    def reset_signal_count(self) -> None:
        """Every signaled post restarts ``sendi``'s count (``qp_reset_signal_count``)."""
        self.wqe_count = QP_TX_BATCH_COUNT

    def waiting_for_wqe(self) -> int:
        return len(self.no_wqe_pending[0]) + len(self.no_wqe_pending[1])

    def waiting_for_credit(self) -> int:
        return len(self.no_credits_pending[0]) + len(self.no_credits_pending[1])

    def wqe_stall_lines(self, me: str, peer: int) -> list[str]:
        wqe = self.waiting_for_wqe()
        if not wqe:
            return []
        return [
            f"{me} -> rank {peer} qp {self.index}: {wqe} fragment(s) wait for a send WQE "
            f"(sd_wqe {self.sd_wqe})"
        ]


class PerPeerQp(_EndpointQp):
    """A per-peer (P) queue toward one peer: Open MPI's ``pp_qp`` counters and rules."""

    __slots__ = (
        "spec",
        "no_credits_pending",
        "sd_credits",
        "rd_posted",
        "rd_credits",
        "cm_received",
        "cm_return",
        "cm_sent",
        "piggybacked",
        "data_sent",
        "data_received",
        "credits_sent",
        "credits_received",
        "cm_msgs_sent",
        "cm_msgs_received",
    )

    per_peer = True

    CONSERVED = frozenset(
        {
            "index",
            "spec",
            "sd_credits",
            "rd_posted",
            "rd_credits",
            "cm_received",
            "data_sent",
            "data_received",
            "credits_sent",
            "credits_received",
            "cm_msgs_sent",
            "cm_msgs_received",
        }
    )
    """The fields ``check_conservation`` reads, on either side of a pair: what an audit
    must watch (``btl/credit_audit.py``); a write to any other field cannot break it."""

    def __init__(self, index: int, spec):
        super().__init__(index, spec.rd_num)
        self.spec = spec
        self.no_credits_pending = NO_PENDING
        """Fragments waiting for a send credit (high, low priority), created on first use."""
        self.sd_credits = spec.rd_num
        """Sends I may still issue (buffers the peer posted for me)."""
        self.rd_posted = 0
        """Receive buffers posted for this peer."""
        self.rd_credits = -spec.rd_num
        """Credits I owe the peer (buffers re-posted since last returned); it starts at
        -rd_num so the first post, which the peer's sd_credits already counts, owes none."""
        self.cm_received = spec.rd_rsv
        """Credit messages for this QP consumed from my reserved buffers (starts at rd_rsv:
        the first post of the reserve)."""
        self.cm_return = -spec.rd_rsv
        """Re-posted credit-message buffers to report back (as ``cm_seen``)."""
        self.cm_sent = 0
        """My credit messages for this QP the peer has not acknowledged yet."""
        # statistics the scenarios report, and the counters of the conservation check
        self.piggybacked = 0
        self.data_sent = 0
        self.data_received = 0
        self.credits_sent = 0
        self.credits_received = 0
        self.cm_msgs_sent = 0  # explicit credit messages through receive buffers
        self.cm_msgs_received = 0

    # -- send credits (credit_acquire / credit_release) -------------------------------------
    def wait_for_credit(self, frag) -> None:
        """Queue ``frag`` until the peer returns a credit (by its priority)."""
        self.no_credits_pending = _queue_on(self.no_credits_pending, frag)

    def has_credit(self) -> bool:
        return self.sd_credits > 0

    def acquire_credit(self) -> None:
        """Take the credit ``has_credit`` found (admission checks first, then takes)."""
        self.sd_credits -= 1

    def credits_arrived(self, n: int) -> None:
        """The peer re-posted ``n`` buffers for me (piggybacked or in a credit message)."""
        self.sd_credits += n
        self.credits_received += n

    def signal_for_credits(self) -> bool:
        """Per-peer credits come back from the peer, never with a send completion: they
        never force ``sendi`` to ask for one."""
        return False

    def return_srq_credits(self, n: int) -> bool:
        return False

    def data_posted(self, eager_credits: int) -> int:
        """A data fragment leaves: the credits its header carries (2.4 step 5). Flagged
        eager-RDMA credits (``eager_credits``) take the header when any are owed; else
        the per-peer credits owed to the peer, piggybacked."""
        self.data_sent += 1
        if eager_credits:
            return eager_credits
        credits = self.rd_credits
        self.rd_credits = 0
        if credits:
            self.piggybacked += credits
            self.credits_sent += credits
        return credits

    def take_credits_owed(self) -> int:
        """The credits owed to the peer, for an explicit credit message."""
        credits = self.rd_credits
        self.rd_credits = 0
        self.credits_sent += credits
        return credits

    def take_cm_seen(self) -> int:
        """Re-posted credit-message buffers to acknowledge, at most 255 (a header byte)."""
        c = self.cm_return
        if c <= 0:
            return 0
        if c > 255:
            self.cm_return = c - 255
            return 255
        self.cm_return = 0
        return c

    def cm_acknowledged(self, n: int) -> None:
        self.cm_sent -= n

    def reserve_credit_message(self, ack_only: bool) -> bool:
        """Count a credit message that will use one of the peer's reserved buffers; False
        (nothing counted) when none is left. Open MPI keeps one spare (at most
        rd_rsv - 1 outstanding); our acknowledgement-only message may use it, so two
        peers that both wait for cm_seen can still acknowledge each other
        (docs/compatibility.md)."""
        cap = self.spec.rd_rsv if ack_only else self.spec.rd_rsv - 1
        if self.cm_sent >= cap:
            return False
        self.cm_sent += 1
        self.cm_msgs_sent += 1
        return True

    def credit_message_due(self) -> bool:
        """2.7: enough credits owed to send them alone (``rd_credits >= rd_win``)."""
        return self.rd_credits >= self.spec.rd_win

    def peer_reserve_exhausted(self) -> bool:
        """Our rule, not Open MPI's: the peer has used every reserved buffer we posted for
        its credit messages on this QP (it can send no more until cm_seen comes back), and
        our own fragments for it wait for credits, so none will carry cm_seen. Without an
        explicit acknowledgement a peer that spent its credit messages on eager-RDMA
        credits alone can never send the per-peer credits it owes us: both wait forever
        (found by the hypothesis workloads; docs/compatibility.md)."""
        used = self.cm_return + self.cm_received
        if self.cm_return <= 0 or used < max(1, self.spec.rd_rsv - 1):
            return False
        pending = self.no_credits_pending
        return bool(pending[0] or pending[1])

    # -- receive side -----------------------------------------------------------------------
    def buffer_consumed(self, flow, ep, credited: PerPeerQp, is_credit_msg: bool) -> None:
        """One of my receive buffers on this QP took a fragment: a data buffer, or one of
        the reserve for credit messages about QP ``credited``; re-post what is due."""
        if is_credit_msg:
            credited.cm_received += 1
            credited.cm_msgs_received += 1
        else:
            self.rd_posted -= 1
            self.data_received += 1
        flow.post_rr(ep, credited)

    def buffers_to_repost(self) -> int:
        """Data buffers to post now: up to rd_num once rd_posted falls to rd_low (2.2)."""
        if self.rd_posted > self.spec.rd_low:
            return 0
        return self.spec.rd_num - self.rd_posted

    def reposted(self, n: int) -> None:
        self.rd_posted += n
        self.rd_credits += n

    def reserve_to_repost(self) -> int:
        """Credit-message buffers to post again: in batches of a quarter of rd_rsv."""
        m = self.cm_received
        return m if m >= (self.spec.rd_rsv >> 2) else 0

    def reserve_reposted(self, m: int) -> None:
        self.cm_return += m
        self.cm_received -= m

    # -- invariants -------------------------------------------------------------------------
    def check(self, rank: int, peer: int, remote) -> None:
        """The per-QP invariants between progress calls: nothing negative, nothing
        over-posted, no more WQEs than the send queue holds, eager tokens in range."""
        spec = self.spec
        problems = []
        if self.sd_credits < 0:
            problems.append(("sd_credits", f"sd_credits {self.sd_credits} < 0"))
        if not 0 <= self.rd_posted <= spec.rd_num:
            problems.append(("rd_posted", f"rd_posted {self.rd_posted} outside 0..{spec.rd_num}"))
        if self.cm_sent < 0 or self.cm_sent > spec.rd_rsv:
            problems.append(("cm_sent", f"cm_sent {self.cm_sent} outside 0..{spec.rd_rsv}"))
        if self.sd_wqe < 0:
            problems.append(("sd_wqe", f"sd_wqe {self.sd_wqe} < 0"))
        if self.sd_wqe + self.sd_wqe_inflight > spec.rd_num:
            problems.append(
                (
                    "sd_wqe",
                    f"sd_wqe {self.sd_wqe} + unsignaled {self.sd_wqe_inflight} > "
                    f"{spec.rd_num} WQEs",
                )
            )
        if remote is not None and not 0 <= remote.tokens <= remote.num - 1:
            problems.append(
                ("eager_tokens", f"eager-RDMA tokens {remote.tokens} outside 0..{remote.num - 1}")
            )
        if problems:
            raise InvariantViolation(
                problems[0][0], rank, peer, self.index, "; ".join(p for _, p in problems)
            )

    def check_conservation(self, mine: PerPeerQp, rank: int, peer: int) -> None:
        """Called on the receiver's QP with the sender's (``mine``), me -> peer: the
        sender's sd_credits + its fragments in flight + buffers consumed and not re-posted
        + credits owed + credits on their way back == rd_num (a leak or a double count
        breaks it); and the sender's credit messages in flight never outnumber the
        reserved buffers waiting for them."""
        spec = self.spec
        in_flight = mine.data_sent - self.data_received
        returning = self.credits_sent - mine.credits_received
        unposted = spec.rd_num - self.rd_posted
        total = mine.sd_credits + in_flight + unposted + self.rd_credits + returning
        cm_in_flight = mine.cm_msgs_sent - self.cm_msgs_received
        reserve = spec.rd_rsv - self.cm_received
        if cm_in_flight > reserve:
            raise InvariantViolation(
                "credit_message_reserve",
                rank,
                peer,
                self.index,
                f"{cm_in_flight} credit messages in flight to rank {peer} but only "
                f"{reserve} reserved buffers",
            )
        if total != spec.rd_num:
            raise InvariantViolation(
                "conservation",
                rank,
                peer,
                self.index,
                f"credits to rank {peer} not conserved: sd_credits {mine.sd_credits} + "
                f"in flight {in_flight} + unposted {unposted} + owed {self.rd_credits} + "
                f"returning {returning} = {total} != rd_num {spec.rd_num}",
            )

    def rnr_retry(self, settings) -> int:
        """Per-peer QPs use rnr_retry 0: software flow control promises an RNR never
        happens, so one is a bug to expose (Open MPI, commit 0202981e1d)."""
        return 0

    def credit_carrier(self, qps: list, credits_qp: int) -> PerPeerQp:
        """The QP state whose credit message carries this QP's credits: its own."""
        return self

    def stall_lines(self, me: str, peer: int, receives_posted: bool) -> list[str]:
        """This QP's share of a hang: what waits, and credits owed that nothing carries,
        with the rule that holds them back."""
        lines = self.wqe_stall_lines(me, peer)
        q = self.index
        waiting = self.waiting_for_credit()
        if waiting:
            lines.append(
                f"{me} -> rank {peer} qp {q}: {waiting} fragment(s) wait for a credit "
                f"(sd_credits {self.sd_credits})"
            )
        owed = self.rd_credits
        if owed <= 0 or not receives_posted:
            return lines
        spec = self.spec
        if owed < spec.rd_win:
            why = f"< rd_win {spec.rd_win}: no credit message is due"
        elif self.credit_lock:
            why = f">= rd_win {spec.rd_win}: a credit message is in flight"
        else:
            why = f">= rd_win {spec.rd_win}, but no credit message can go"
        lines.append(
            f"{me} owes rank {peer} {owed} credits on qp {q} {why}; "
            f"cm cap rd_rsv-1 = {spec.rd_rsv - 1}, cm_sent {self.cm_sent}"
        )
        return lines

    def state_line(self) -> str:
        return (
            f"sd_credits {self.sd_credits}, rd_posted {self.rd_posted}, "
            f"rd_credits {self.rd_credits}, cm_sent {self.cm_sent}"
        )

    def posted_line(self) -> str:
        return f"rd_posted {self.rd_posted}"


class SharedRqQp(_EndpointQp):
    """A shared-receive-queue (S) queue toward one peer: the send credits and receive
    buffers are the module's ``SharedRq``'s; this QP holds only the SRQ credits its
    unsignaled sends took until the next completion gives them back."""

    __slots__ = ("srq", "srq_credits_inflight")

    per_peer = False
    piggybacked = 0
    """Never: SRQ credits come back with completions, not in the peer's headers."""

    def __init__(self, index: int, spec, srq):
        super().__init__(index, spec.sd_max)
        self.srq = srq
        self.srq_credits_inflight = 0

    @property
    def spec(self):
        """The queue's spec: the SRQ's (not kept per peer: a 1024-rank job has three
        million of these)."""
        return self.srq.spec

    @property
    def no_credits_pending(self) -> list:
        """The SRQ's list, one for every peer (``srq_qp.pending_frags``)."""
        return self.srq.pending

    def wait_for_credit(self, frag) -> None:
        """Queue ``frag`` on the SRQ's list, shared by every peer, until a credit frees."""
        self.no_credits_pending[0 if frag.high else 1].append(frag)

    def has_credit(self) -> bool:
        return self.srq.sd_credits > 0

    def acquire_credit(self) -> None:
        self.srq.acquire_credit()

    def signal_for_credits(self) -> bool:
        """``qp_need_signal``: with no SRQ credit left the send must signal, or the
        credits the unsignaled sends hold would never come back."""
        return self.srq.sd_credits <= 0

    def carry_unsignaled(self, frag) -> None:
        frag.unsignaled = self.sd_wqe_inflight
        frag.unsignaled_srq = self.srq_credits_inflight
        self.sd_wqe_inflight = self.srq_credits_inflight = 0

    def posted_unsignaled(self, takes_srq_credit: bool) -> None:
        self.sd_wqe_inflight += 1
        if takes_srq_credit:
            self.srq_credits_inflight += 1

    def return_srq_credits(self, n: int) -> bool:
        """A send completion gives back the SRQ credits it carried; True: the SRQ's
        pending list may move now."""
        self.srq.release_credit(n)
        return True

    def data_posted(self, eager_credits: int) -> int:
        """Only eager-RDMA credits ride on an S queue's header: SRQ credits are the
        module's, returned by completions, never by the peer."""
        return eager_credits

    def take_cm_seen(self) -> int:
        return 0

    def take_credits_owed(self) -> int:
        return 0

    def credit_message_due(self) -> bool:
        return False

    def peer_reserve_exhausted(self) -> bool:
        return False

    def reserve_credit_message(self, ack_only: bool) -> bool:
        """A credit message about an S queue carries eager-RDMA credits only; it uses
        no reserved buffer of a per-peer queue."""
        return True

    def rnr_retry(self, settings) -> int:
        """An SRQ can run dry for a moment: the hardware retries (btl_openib_ib_rnr_retry)."""
        return settings.ib_rnr_retry

    def credit_carrier(self, qps: list, credits_qp: int):
        """An S queue's credits come back with completions; what a credit message for it
        can carry (eager-RDMA credits) travels as credits_qp's."""
        return qps[credits_qp]

    def stall_lines(self, me: str, peer: int, receives_posted: bool) -> list[str]:
        lines = self.wqe_stall_lines(me, peer)
        waiting = self.waiting_for_credit()
        if waiting:
            lines.append(
                f"{me} qp {self.index}: {waiting} fragment(s) wait for an SRQ send "
                f"credit (sd_credits {self.srq.sd_credits})"
            )
        return lines

    def check_conservation(self, mine, rank: int, peer: int) -> None:
        """Nothing per peer to conserve: the SRQ's credits are module-wide
        (``SharedRq.check``)."""

    def buffer_consumed(self, flow, ep, credited, is_credit_msg: bool) -> None:
        """A buffer of the module's SRQ took a fragment from this peer: re-post the SRQ
        when it is due."""
        self.srq.buffer_consumed()
        flow.post_srr(self.srq)

    def check(self, rank: int, peer: int, remote) -> None:
        """The SRQ's own rules are checked once per module (``SharedRq.check``)."""

    def state_line(self) -> str:
        return f"SRQ sd_credits {self.srq.sd_credits}, rd_posted {self.srq.rd_posted}"

    def posted_line(self) -> str:
        return f"SRQ rd_posted {self.srq.rd_posted}"


class Endpoint:
    """This process's connection to ``peer``: its state, the per-QP states ``qps``, the
    eager-RDMA rings, and what waits for the connection."""

    __slots__ = (
        "peer",
        "rank",
        "state",
        "qps",
        "remote_lid",
        "peer_policy",
        "receives_posted",
        "eager_local",
        "eager_remote",
        "eager_recv_count",
        "eager_frags_sent",
        "cts_sent",
        "cts_received",
        "pending_lazy",
        "pending_rdma",
    )

    def __init__(self, rank: int, peer: int, queues, srqs, peer_policy):
        self.rank = rank
        self.peer = peer
        self.state = EndpointState.CLOSED
        self.qps = [self._qp_state(i, q, srqs[i]) for i, q in enumerate(queues)]
        credits_qp = credits_qp_index(queues)
        for s in self.qps:
            s.ep = self
            s.carrier = s.credit_carrier(self.qps, credits_qp)
        self.remote_lid = 0
        self.peer_policy = peer_policy
        """The peer's credits policy, from its published settings (the modex): where its
        credit messages for each QP will arrive."""
        self.receives_posted = False  # set once post_rr has posted this endpoint's buffers
        self.eager_local = None  # EagerRdmaLocal: my ring the peer writes into
        self.eager_remote = None  # EagerRdmaRemote: the peer's ring I write into
        self.eager_recv_count = 0
        self.eager_frags_sent = 0
        self.cts_sent = False
        self.cts_received = False
        self.pending_lazy: list | tuple = ()
        """Fragments waiting for the connection, in order (a list from the first one on:
        every endpoint of a job that starts by sending has one while it connects, and it
        is only appended to and then taken whole, so a list of a few fragments, not a
        760-byte deque)."""
        self.pending_rdma: deque | tuple = ()
        """RDMA put/get work requests waiting for a WQE (a deque from the first one on)."""

    def _qp_state(self, index: int, spec, srq):
        """The state of QP ``index`` toward the peer, by its receive queue's kind (a
        method: ``AuditedEndpoint`` makes audited ones)."""
        return PerPeerQp(index, spec) if spec.kind == "P" else SharedRqQp(index, spec, srq)

    def wait_for_connection(self, frag) -> None:
        """Queue ``frag`` until the connection is up."""
        if not self.pending_lazy:
            self.pending_lazy = []
        self.pending_lazy.append(frag)

    def take_pending_lazy(self):
        """The fragments that waited for the connection, in order; none wait after."""
        lazy, self.pending_lazy = self.pending_lazy, ()
        return lazy

    def wait_for_rdma_wqe(self, wr) -> None:
        """Queue a put/get work request until a send WQE comes back."""
        if not self.pending_rdma:
            self.pending_rdma = deque()
        self.pending_rdma.append(wr)

    def verbs_qps(self) -> list:
        """The verbs QueuePairs of this endpoint, in QP order (None before they exist)."""
        return [s.qp for s in self.qps]

    def check(self) -> None:
        """The per-QP invariants of a connected endpoint (``InvariantViolation``)."""
        if self.state != _CONNECTED:
            return
        for s in self.qps:
            s.check(self.rank, self.peer, self.eager_remote)

    def check_conservation(self, peer_ep: Endpoint) -> None:
        """Credits conserved on every P queue from me to the peer (``peer_ep`` its
        endpoint toward me); nothing to check until both sides are connected."""
        if self.state != _CONNECTED or peer_ep.state != _CONNECTED:
            return
        for mine, theirs in zip(self.qps, peer_ep.qps, strict=True):
            theirs.check_conservation(mine, self.rank, self.peer)

    def __repr__(self) -> str:
        return f"<Endpoint {self.rank}->{self.peer} {self.state}>"
