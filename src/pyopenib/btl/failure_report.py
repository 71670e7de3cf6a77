"""What a user reads when the transport fails: Open MPI's kind of message (local host,
device, peer, QP, work-completion status) plus what Open MPI cannot tell — the simulated
time and what the peer's side of the connection was doing at that moment."""

from __future__ import annotations

__all__ = ["failure_report"]

_EXPLAIN = {
    "RNR_RETRY_EXC_ERR": (
        "The receiver-not-ready retry count on a per-peer connection was exceeded. Open MPI\n"
        "uses rnr_retry = 0 on per-peer QPs because its software credits promise an RNR can\n"
        "never happen, so this means a SEND reached a receive queue before the receive\n"
        "buffer it was promised was usable."
    ),
    "QP_FATAL": (
        "The RDMA connection was terminated (iWARP TERMINATE): a SEND arrived when no\n"
        "receive buffer was usable. iWARP has no RNR retry; the connection is lost."
    ),
    "RETRY_EXC_ERR": (
        "The transport retry count was exceeded (btl_openib_ib_retry_count, timeout\n"
        "4.096 us * 2^btl_openib_ib_timeout): the peer did not acknowledge in time."
    ),
}


def _ps(t: int) -> str:
    return f"{t / 1e6:.3f} us"


def failure_report(module, ep, qp_index: int, status: str, detail: str) -> str:
    """The text of a transport failure on ``ep``'s QP ``qp_index`` (-1: not known)."""
    device = module.device
    peer = ep.peer if ep is not None else -1
    known = 0 <= qp_index < len(module.queues)
    credits = module.credits
    lines = [
        "--------------------------------------------------------------------------",
        _EXPLAIN.get(status, "The OpenFabrics stack reported a fatal error on a connection."),
        "",
        f"  Local host:        {module.hostname}",
        f"  Local device:      {module.context.name} ({device.model_name}, {device.transport})",
        f"  Local rank:        {module.rank}",
        f"  Peer rank:         {peer}",
        f"  QP index:          {qp_index} (receive_queues entry "
        f"{module.queues[qp_index].spec() if known else '?'})",
        f"  Status:            {status}",
        f"  Simulated time:    {_ps(module.sim.now)}",
        f"  Credits policy:    {credits.policy} (credits_qp {credits.credits_qp_index})",
        f"  Detail:            {detail}",
    ]
    if ep is not None and known:
        lines.append(f"  Local QP {qp_index} state:  {ep.qps[qp_index].state_line()}")
    peer_module = module.oob.module(peer) if peer >= 0 else None
    if peer_module is not None and known:
        pep = peer_module.endpoints.get(module.rank)
        if pep is not None and pep.qps[qp_index].qp is not None:
            theirs = pep.qps[qp_index]
            seen = theirs.qp.query_counters()
            lines.append(
                f"  Peer was doing:    rank {peer} had {theirs.credit_msgs_sent} credit "
                f"messages sent for QP {qp_index}, {theirs.posted_line()}; its NIC held "
                f"{seen.recv_posted} receives on that QP ({seen.recv_usable} usable) and "
                f"{seen.sends_queued} sends still queued"
            )
    lines.append("--------------------------------------------------------------------------")
    return "\n".join(lines)
