"""The responder's inbound processing (``rx``) is paid by every request, RDMA WRITEs as
much as SENDs: only a SEND's completion (``cqe``) comes on top. So an RDMA WRITE's bytes
become visible to a polling CPU ``rx`` + the bus latency after they arrive, a SEND's
completion exactly ``cqe`` after that, and the receive a SEND consumes is still looked
for when it arrives (the queue is checked as processing starts)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verbs"))

from verbs_testbed import Pair, ns, toy_model  # noqa: E402

from pyopenib.sim import Simulator, Tracer  # noqa: E402
from pyopenib.verbs import SendFlags, SendWR, WrOpcode  # noqa: E402

_RX = ns(700)
_CQE = ns(90)


def _pair(**model):
    tr = Tracer()
    return Pair(model=toy_model(**model), sim=Simulator(tracer=tr)), tr


def _arrivals(tr) -> list[int]:
    return [t for t, _, kind, _actor, _f in tr.events if kind == "recv_msg"]


def _write_seen_after_arrival(**model) -> int:
    p, tr = _pair(**model)
    seen = []
    target = p.mr[1]
    target.hw.on_remote_write = lambda: seen.append(p.sim.now)
    wr = SendWR(7, WrOpcode.RDMA_WRITE, p.sge(0, 0, 8))
    wr.remote_addr, wr.rkey = target.addr + 4096, target.rkey
    p.qp[0].post_send(wr)
    p.sim.run()
    (arrived,) = _arrivals(tr)
    (t_seen,) = seen
    return t_seen - arrived


def test_an_rdma_write_pays_the_inbound_processing_before_it_lands():
    plain = _write_seen_after_arrival(rx=ns(0))
    processed = _write_seen_after_arrival(rx=_RX)
    assert processed - plain == _RX.nominal


def test_the_write_and_send_paths_differ_by_the_completion_alone():
    """Same model, same message: a SEND's receive completion comes exactly ``cqe`` after
    the instant an RDMA WRITE of the same bytes becomes visible."""
    write_visible = _write_seen_after_arrival(rx=_RX, cqe=_CQE)
    p, tr = _pair(rx=_RX, cqe=_CQE)
    p.post_recv(1, 1)
    p.sim.run()
    done = []
    p.cq[1].req_notify(lambda: done.append(p.sim.now))
    p.qp[0].post_send(SendWR(7, WrOpcode.SEND, p.sge(0, 0, 8)))
    p.sim.run()
    (arrived,) = _arrivals(tr)
    assert done[0] - arrived == write_visible + _CQE.nominal


def test_a_send_checks_for_its_receive_on_arrival_not_after_processing():
    """The processing does not widen a receive's time to become usable: a SEND that
    arrives before its receive is usable is refused (RNR NAK) even though the receive
    would be usable before the processing ends."""
    p, tr = _pair(rx=ns(3000), recv_usable=ns(1500))
    p.post_recv(1, 1)
    p.qp[0].post_send(SendWR(7, WrOpcode.SEND, p.sge(0, 0, 8)))
    p.sim.run()
    (arrived,) = [t for t, _, kind, _a, _f in tr.events if kind == "rnr_nak_sent"][:1]
    usable = [t for t, _, kind, _a, _f in tr.events if kind == "recv_usable"]
    assert arrived < usable[0] < arrived + ns(3000).nominal


def _completion_times(opcode, **model) -> list[int]:
    """When each side's CQ gets its completion for one signaled ``opcode`` of 8 bytes."""
    p, _tr = _pair(**model)
    p.post_recv(1, 1)
    p.sim.run()
    done = []
    for side in (0, 1):
        p.cq[side].req_notify(lambda side=side: done.append((side, p.sim.now)))
    wr = SendWR(7, opcode, p.sge(0, 0, 8), SendFlags.SIGNALED)
    wr.remote_addr, wr.rkey = p.mr[1].addr + 4096, p.mr[1].rkey
    p.qp[0].post_send(wr)
    p.sim.run()
    return sorted(done)


def test_moving_time_from_the_completion_to_the_processing_moves_no_completion():
    """The requester's ACK and READ response pay ``rx`` before their completion, as the
    responder's requests do: with ``rx + cqe`` fixed, a SEND's two completions come at
    the same instants however it is split; a READ's only by the request's own processing
    at the responder, which no completion covers."""
    split = {"rx": _RX, "cqe": _CQE}
    whole = {"rx": ns(0), "cqe": ns(_RX.nominal / 1000 + _CQE.nominal / 1000)}
    sends = _completion_times(WrOpcode.SEND, **split)
    assert len(sends) == 2  # the sender's and the receiver's
    assert sends == _completion_times(WrOpcode.SEND, **whole)
    ((_, read_split),) = _completion_times(WrOpcode.RDMA_READ, **split)
    ((_, read_whole),) = _completion_times(WrOpcode.RDMA_READ, **whole)
    assert read_split - read_whole == _RX.nominal
