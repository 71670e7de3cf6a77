"""What a connection costs in memory (issue 13): state made on first use, buffers carved
from registered chunks. The simulation's answer is the reference digests' to keep; these
tests pin the layout rules that keep a 1024-rank job small and show that the lazily made
state behaves as the eagerly made state did."""

import numpy as np
import pytest

from pyopenib.btl.endpoint import NO_PENDING, PerPeerQp
from pyopenib.btl.frag import CHUNK_BYTES, RECV, Frag, FragBuffers
from pyopenib.config.receive_queues import parse_receive_queues
from pyopenib.hw.device_model import get_device_model
from pyopenib.hw.qp import EMPTY, NEVER_LEAVING, HwQp, QpAttributes
from pyopenib.sim import Simulator
from pyopenib.verbs import (
    Access,
    Context,
    QpState,
    RecvWR,
    SendWR,
    Sge,
    WcOpcode,
    WcStatus,
    WrOpcode,
    open_devices,
)

_PARTS = ("sq", "rq", "wq", "tx", "req", "resp", "actor")


def _context(device: str = "mellanox-hermon") -> Context:
    return open_devices(Simulator(), [get_device_model(device)], ["nic0"])[0]


def _unset(obj, name: str) -> bool:
    """True when slot ``name`` holds nothing yet (reading the class's descriptor
    directly does not go through ``__getattr__``)."""
    try:
        getattr(type(obj), name).__get__(obj)
    except AttributeError:
        return True
    return False


def test_a_new_qp_holds_no_part_state_until_a_part_looks():
    ctx = _context()
    pd = ctx.alloc_pd()
    cq = ctx.create_cq(16)
    qp = pd.create_qp(cq, cq, 8, 8)
    hw: HwQp = qp.hw
    assert all(_unset(hw, name) for name in _PARTS)
    assert hw.req.next_psn == 0 and hw.req.inflight is EMPTY  # made as __init__ made it
    assert hw.actor == f"nic0/qp{hw.qpn}"
    assert not _unset(hw, "req") and _unset(hw, "wq") and _unset(hw, "tx")


def test_a_split_device_shares_one_always_empty_leaving_list():
    split = _context("mellanox-hermon").nic
    shared = _context("chelsio-t3").nic
    assert split.model.work_queue == "split" and shared.model.work_queue == "shared"
    attrs = QpAttributes(None, None, None, 8, 8, 0, None, 2048)
    a = HwQp(split, 1, attrs)
    b = HwQp(split, 2, attrs)
    assert a.wq.leaving is b.wq.leaving is NEVER_LEAVING and not a.wq.leaving
    c = HwQp(shared, 3, attrs)
    c.wq.leaving.append(7)
    assert list(c.wq.leaving) == [7] and c.wq.leaving is not NEVER_LEAVING


def test_frag_buffers_are_views_of_one_registration_per_chunk():
    ctx = _context()
    pd = ctx.alloc_pd()
    size = 65_540
    buffers = FragBuffers(pd, size, Access.LOCAL_WRITE)
    assert buffers.per_chunk == CHUNK_BYTES // size
    taken = [buffers.take() for _ in range(buffers.per_chunk + 1)]
    mpt = ctx.nic.memory.mpt
    assert len(mpt) == 2  # two chunks, one registration each
    first, second = taken[0], taken[1]
    assert first.lkey == second.lkey and second.addr == first.addr + size
    assert taken[-1].lkey != first.lkey  # the next chunk
    # the bytes an SGE names are the buffer's: a write through the NIC lands in the view
    where = taken[1]
    mr = mpt[where.lkey]
    offset = where.addr - mr.addr
    mr.buffer[offset : offset + 3] = np.frombuffer(b"abc", dtype=np.uint8)
    buf = where.view()
    assert bytes(buf[:3]) == b"abc" and buf.nbytes == size
    assert np.shares_memory(buf, mr.buffer) and not np.shares_memory(buf, taken[0].view())


def test_a_chunk_buffer_is_viewed_only_when_first_read_and_then_kept():
    ctx = _context()
    where = FragBuffers(ctx.alloc_pd(), 256, Access.LOCAL_WRITE).take()
    frag = Frag(RECV, None, where, 0)
    assert frag._buf is None  # a posted receive nobody sends to costs no view
    buf = frag.buf
    assert buf is frag.buf and buf.nbytes == 256 and np.shares_memory(buf, where.chunk.array)


def test_pending_lists_are_made_by_the_first_waiting_fragment_and_keep_priority_order():
    spec = parse_receive_queues("P,128,4,2,2")[0]
    qs = PerPeerQp(0, spec)
    assert qs.no_wqe_pending is NO_PENDING and qs.no_credits_pending is NO_PENDING
    assert not any(qs.no_wqe_pending) and qs.waiting_for_wqe() == 0

    class F:
        def __init__(self, name, high):
            self.name, self.high = name, high

    for name, high in (("a", False), ("b", True), ("c", False)):
        qs.wait_for_wqe(F(name, high))
    high, low = qs.no_wqe_pending
    assert [f.name for f in high] == ["b"] and [f.name for f in low] == ["a", "c"]
    assert qs.no_credits_pending is NO_PENDING  # the other list stays unmade


def _connected_pair(device: str, rnr_retry: int = 7):
    """Two contexts of one simulated fabric, one RC QP each, connected; 64 KiB buffers."""
    sim = Simulator()
    model = get_device_model(device)
    ctxs = open_devices(sim, [model, model], ["a", "b"])
    qps, mrs, cqs = [], [], []
    for ctx in ctxs:
        pd = ctx.alloc_pd()
        cq = ctx.create_cq(256)
        qps.append(pd.create_qp(cq, cq, 64, 64))
        mrs.append(pd.reg_mr(np.zeros(1 << 16, dtype=np.uint8), Access.LOCAL_WRITE))
        cqs.append(cq)
    for i, qp in enumerate(qps):
        qp.modify(QpState.INIT)
        qp.modify(QpState.RTR, dest_lid=ctxs[1 - i].nic.lid, dest_qp_num=qps[1 - i].qp_num)
        qp.modify(QpState.RTS, rnr_retry=rnr_retry, min_rnr_timer=1)
    return sim, qps, mrs, cqs


@pytest.mark.parametrize(
    "device, rnr",
    [("mellanox-hermon", True), ("ibm-ehca", True), ("chelsio-t3", False)],
)
def test_a_qp_holds_queues_only_while_something_is_queued(device, rnr):
    """``wq.fifo``, ``tx.packets`` and ``req.inflight`` go back to ``EMPTY`` when they
    drain, on a split, a firmware and a shared work queue (whose FIFO also carries the
    receive entries), through a receiver-not-ready retry (IB: iWARP has none, a SEND
    without a receive terminates) and a multi-packet message; everything arrives in
    order."""
    sim, qps, mrs, cqs = _connected_pair(device)
    sender, receiver = qps[0].hw, qps[1].hw
    src = mrs[0].buffer
    src[:] = np.arange(src.size, dtype=np.uint64).astype(np.uint8)
    lengths = (8, 3 * sender.path_mtu + 5, 64)

    def post_receives():
        for i in range(len(lengths)):
            sge = (Sge(mrs[1].addr + i * 16384, 16384, mrs[1].lkey),)
            qps[1].post_recv(RecvWR(100 + i, sge))

    if not rnr:
        post_receives()
    offset = 0
    for i, length in enumerate(lengths):
        sge = (Sge(mrs[0].addr + offset, length, mrs[0].lkey),)
        qps[0].post_send(SendWR(i, WrOpcode.SEND, sge))
        offset += length
    if rnr:
        sim.run(until=sim.now + 50_000_000)  # the first SEND finds no receive: RNR NAKs
        assert sender.req.rnr_naks_received >= 1 and sender.req.inflight
        post_receives()
    sim.run()
    sent, received = cqs[0].poll(16), cqs[1].poll(16)
    assert [(wc.wr_id, wc.status) for wc in sent] == [(i, WcStatus.SUCCESS) for i in range(3)]
    assert [wc.byte_len for wc in received if wc.opcode == WcOpcode.RECV] == list(lengths)
    offset = 0
    for i, length in enumerate(lengths):
        got = mrs[1].buffer[i * 16384 : i * 16384 + length]
        assert (got == src[offset : offset + length]).all()
        offset += length
    for qp in (sender, receiver):
        assert qp.wq.fifo is EMPTY and qp.tx.packets is EMPTY and qp.req.inflight is EMPTY
