"""RC semantics of the simulated verbs: in-order delivery, receive consumption, RNR
retry and exhaustion on InfiniBand, TERMINATE and flush on iWARP, queue depths."""

import errno

import numpy as np
import pytest
from verbs_testbed import Pair, ns, toy_model

from pyopenib.sim import Tracer
from pyopenib.verbs import (
    AsyncEventType,
    QpState,
    RecvWR,
    SendFlags,
    SendWR,
    VerbsError,
    WcOpcode,
    WcStatus,
    WrOpcode,
)


def send(p, side, wr_id, offset, length, opcode=WrOpcode.SEND, **kw):
    p.qp[side].post_send(SendWR(wr_id, opcode, p.sge(side, offset, length), **kw))


def drain(cq):
    return cq.poll(10_000)


def test_sends_arrive_in_order_with_intact_payload():
    p = Pair()
    for i in range(8):
        p.post_recv(1, 100 + i, offset=i * 4096)
    p.sim.run()
    src = p.mr[0].buffer
    for i in range(8):
        src[i * 3000 : (i + 1) * 3000] = i + 1
        send(p, 0, i, i * 3000, 3000)
    p.sim.run()
    recvs = [wc for wc in drain(p.cq[1]) if wc.opcode == WcOpcode.RECV]
    assert [wc.wr_id for wc in recvs] == [100 + i for i in range(8)]
    assert all(wc.status == WcStatus.SUCCESS and wc.byte_len == 3000 for wc in recvs)
    dst = p.mr[1].buffer
    for i in range(8):
        assert np.all(dst[i * 4096 : i * 4096 + 3000] == i + 1)
    sends = drain(p.cq[0])
    assert [wc.wr_id for wc in sends] == list(range(8))


def test_rdma_write_and_read_move_bytes():
    p = Pair()
    p.mr[0].buffer[:100] = 7
    mr1 = p.mr[1]
    send(p, 0, 1, 0, 100, WrOpcode.RDMA_WRITE, remote_addr=mr1.addr + 500, rkey=mr1.rkey)
    p.sim.run()
    assert np.all(mr1.buffer[500:600] == 7)
    mr1.buffer[1000:1010] = 9
    send(p, 0, 2, 2000, 10, WrOpcode.RDMA_READ, remote_addr=mr1.addr + 1000, rkey=mr1.rkey)
    p.sim.run()
    assert np.all(p.mr[0].buffer[2000:2010] == 9)
    assert [wc.opcode for wc in drain(p.cq[0])] == [WcOpcode.RDMA_WRITE, WcOpcode.RDMA_READ]


def test_bad_rkey_completes_with_remote_access_error():
    p = Pair()
    send(p, 0, 1, 0, 10, WrOpcode.RDMA_WRITE, remote_addr=0, rkey=0xDEAD)
    p.sim.run()
    (wc,) = drain(p.cq[0])
    assert wc.status == WcStatus.REM_ACCESS_ERR
    assert p.qp[0].state == QpState.ERROR


def test_ib_rnr_nak_is_retried_until_a_receive_is_posted():
    p = Pair(rnr_retry=7, min_rnr_timer=1)  # 10 us timer, retry forever
    send(p, 0, 1, 0, 64)
    p.sim.run(until=35_000_000)  # three RNR periods, no receive posted
    assert p.qp[0].hw.req.rnr_naks_received >= 3
    p.post_recv(1, 50)
    p.sim.run()
    assert drain(p.cq[0])[0].status == WcStatus.SUCCESS
    assert drain(p.cq[1])[0].wr_id == 50


def test_ib_rnr_retry_exhaustion_fails_and_flushes():
    p = Pair(rnr_retry=2, min_rnr_timer=1)
    send(p, 0, 1, 0, 64)
    send(p, 0, 2, 64, 64)
    p.sim.run()
    wcs = drain(p.cq[0])
    assert wcs[0].wr_id == 1 and wcs[0].status == WcStatus.RNR_RETRY_EXC_ERR
    assert wcs[1].wr_id == 2 and wcs[1].status == WcStatus.WR_FLUSH_ERR
    assert p.qp[0].hw.req.rnr_naks_received == 3  # first try + 2 retries
    assert p.qp[0].state == QpState.ERROR


def test_rnr_retry_zero_is_fatal_at_the_first_nak():
    p = Pair(rnr_retry=0)
    send(p, 0, 1, 0, 64)
    p.sim.run()
    assert drain(p.cq[0])[0].status == WcStatus.RNR_RETRY_EXC_ERR


def test_iwarp_send_without_receive_terminates_both_sides():
    p = Pair(model=toy_model(transport="iwarp", link_layer="ethernet", srq=False))
    p.post_recv(0, 70)  # host 0 has a receive posted: it is flushed
    p.post_recv(1, 80)  # one receive at host 1: the second SEND finds none
    p.sim.run()
    send(p, 0, 1, 0, 64)
    send(p, 0, 2, 64, 64)
    p.sim.run()
    assert p.qp[0].state == QpState.ERROR and p.qp[1].state == QpState.ERROR
    s0 = drain(p.cq[0])
    assert (s0[0].wr_id, s0[0].status) == (1, WcStatus.SUCCESS)
    assert {wc.wr_id: wc.status for wc in s0[1:]} == {
        2: WcStatus.WR_FLUSH_ERR,
        70: WcStatus.WR_FLUSH_ERR,
    }
    events = [e.event_type for c in p.ctx for e in c.async_events]
    assert events == [AsyncEventType.QP_FATAL, AsyncEventType.QP_FATAL]
    assert "TERMINATE sent" in p.ctx[1].async_events[0].reason
    assert "TERMINATE received" in p.ctx[0].async_events[0].reason


def test_posting_beyond_queue_depth_is_enomem():
    p = Pair()
    for i in range(256):
        p.post_recv(1, i)
    with pytest.raises(VerbsError) as exc:
        p.post_recv(1, 999)
    assert exc.value.errno == errno.ENOMEM
    for i in range(256):
        send(p, 0, i, 0, 8)
    with pytest.raises(VerbsError) as exc:
        send(p, 0, 999, 0, 8)
    assert exc.value.errno == errno.ENOMEM


def test_unsignaled_sends_free_their_slots_at_the_next_signaled_completion():
    p = Pair()
    for i in range(300):
        p.post_recv(1, i) if i < 256 else None
    for i in range(255):
        send(p, 0, i, 0, 8, send_flags=SendFlags.NONE)
    send(p, 0, 255, 0, 8)  # signaled
    p.sim.run()
    assert [wc.wr_id for wc in drain(p.cq[0])] == [255]
    assert p.qp[0].hw.sq.outstanding == 0


def test_post_send_in_reset_state_is_refused():
    p = Pair()
    qp = p.pd[0].create_qp(p.cq[0], p.cq[0], 4, 4)
    with pytest.raises(VerbsError):
        qp.post_send(SendWR(1, WrOpcode.SEND, p.sge(0, 0, 8)))


def test_cq_overrun_is_reported_as_async_event():
    p = Pair()
    small = p.ctx[1].create_cq(2)
    qp = p.pd[1].create_qp(small, small, 8, 8)
    qp.modify(QpState.INIT)
    for i in range(3):
        qp.post_recv(RecvWR(i, p.sge(1, 0, 8)))
    qp.modify(QpState.ERROR)  # flushes three receives into a CQ of two
    p.sim.run()
    assert len(small) == 2 and small.overruns == 1
    assert p.ctx[1].async_events[-1].event_type == AsyncEventType.CQ_ERR


def test_srq_limit_event_fires_once_when_armed():
    p = Pair()
    srq = p.pd[1].create_srq(64)
    qp_cq = p.ctx[1].create_cq(256)
    del qp_cq
    for i in range(8):
        srq.post_recv(RecvWR(i, p.sge(1, 0, 64)))
    srq.modify(srq_limit=6)
    p.sim.run()
    for _ in range(3):
        assert srq.hw.take() is not None
    limit_events = [
        e for e in p.ctx[1].async_events if e.event_type == AsyncEventType.SRQ_LIMIT_REACHED
    ]
    assert len(limit_events) == 1


def test_trace_is_identical_for_identical_runs():
    digests = set()
    for _ in range(2):
        tr = Tracer()
        from pyopenib.sim import RandomOracle, Simulator

        p = Pair(sim=Simulator(oracle=RandomOracle(3), tracer=tr))
        for i in range(4):
            p.post_recv(1, i)
            send(p, 0, i, 0, 5000)
        p.sim.run()
        digests.add(tr.digest())
    assert len(digests) == 1


def test_message_longer_than_receive_is_a_length_error():
    p = Pair()
    p.post_recv(1, 1, length=100)
    p.sim.run()
    send(p, 0, 1, 0, 200)
    p.sim.run()
    (r,) = [wc for wc in drain(p.cq[1]) if wc.wr_id == 1]
    assert r.status == WcStatus.LOC_LEN_ERR


def test_durations_use_the_model_interval():
    # smoke: a model with intervals still runs under the nominal oracle
    p = Pair(model=toy_model(send_wqe=ns(50, 100, 400)))
    p.post_recv(1, 1)
    send(p, 0, 1, 0, 8)
    p.sim.run()
    assert drain(p.cq[1])[0].status == WcStatus.SUCCESS
