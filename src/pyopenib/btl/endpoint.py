"""An endpoint: this process's connection to one peer, with per-QP credit state.

Field names are Open MPI's (``mca_btl_openib_endpoint_qp_t`` / ``..._pp_qp_t``):

* ``sd_credits[q]``  sends I may still issue on q (buffers the peer posted for me)
* ``rd_posted[q]``   receive buffers posted on q for this peer
* ``rd_credits[q]``  credits I owe the peer (buffers re-posted since last returned)
* ``cm_received[q]`` credit messages for q consumed from my reserved buffers
* ``cm_return[q]``   re-posted credit-message buffers to report back (as ``cm_seen``)
* ``cm_sent[q]``     my credit messages for q the peer has not acknowledged yet
* ``sd_wqe[q]``      free send work-queue entries on q
* ``sd_wqe_inflight[q]`` unsignaled sends (``sendi``) posted since the last signaled one:
  their WQEs come back with the next send completion on q
* ``wqe_count[q]``   unsignaled sends left before ``sendi`` signals again (QP_TX_BATCH_COUNT)
* ``credit_lock[q]`` a credit message for q is being built or is in flight
"""

from __future__ import annotations

from collections import deque

from .frag import QP_TX_BATCH_COUNT

__all__ = ["Endpoint", "CLOSED", "CONNECTING", "CONNECTED", "FAILED"]

CLOSED, CONNECTING, CONNECTED, FAILED = "CLOSED", "CONNECTING", "CONNECTED", "FAILED"


class Endpoint:
    def __init__(self, module, peer: int, queues):
        n = len(queues)
        self.module = module
        self.peer = peer
        self.state = CLOSED
        self.qps: list = [None] * n
        self.remote_qpns: list[int] = [0] * n
        self.remote_lid = 0
        self.peer_policy = "smallest"
        self.receives_posted = False  # set once post_rr has posted this endpoint's buffers
        self.eager_local = None  # EagerRdmaLocal: my ring the peer writes into
        self.eager_remote = None  # EagerRdmaRemote: the peer's ring I write into
        self.eager_recv_count = 0
        self.cts_sent = False
        self.cts_received = False
        self.sd_credits = [q.rd_num if q.kind == "P" else 0 for q in queues]
        self.rd_posted = [0] * n
        self.rd_credits = [-q.rd_num if q.kind == "P" else 0 for q in queues]
        self.cm_received = [q.rd_rsv for q in queues]
        self.cm_return = [-q.rd_rsv for q in queues]
        self.cm_sent = [0] * n
        self.sd_wqe = [q.rd_num if q.kind == "P" else q.sd_max for q in queues]
        self.sd_wqe_inflight = [0] * n
        self.srq_credits_inflight = [0] * n  # SRQ credits the unsignaled sends took
        self.wqe_count = [QP_TX_BATCH_COUNT] * n
        self.credit_lock = [False] * n
        self.credit_frag: list = [None] * n
        self.pending_lazy: deque = deque()
        self.pending_rdma: deque = deque()  # RDMA put/get work requests waiting for a WQE
        self.no_wqe_pending = [(deque(), deque()) for _ in range(n)]
        self.no_credits_pending = [(deque(), deque()) for _ in range(n)]
        # statistics the scenarios report, and the counters of the conservation check
        self.credit_msgs_sent = [0] * n
        self.piggybacked = [0] * n
        self.eager_frags_sent = 0
        self.data_sent = [0] * n
        self.data_received = [0] * n
        self.credits_sent = [0] * n
        self.credits_received = [0] * n
        self.cm_msgs_sent = [0] * n  # explicit credit messages through receive buffers
        self.cm_msgs_received = [0] * n

    def __repr__(self) -> str:
        return f"<Endpoint {self.module.rank}->{self.peer} {self.state}>"
