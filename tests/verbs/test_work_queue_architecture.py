"""The work-queue architecture is observable: on a ``shared`` device (Chelsio T3) a
receive posted after sends on the same QP becomes usable only once those sends have left;
on a ``split`` device it becomes usable on its own schedule. Plus: contention at a
switch port halves per-flow bandwidth; bandwidth never exceeds the link rate."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from verbs_testbed import Pair, toy_model

from pyopenib.sim import Simulator, Tracer
from pyopenib.verbs import Access, QpState, RecvWR, SendWR, Sge, WrOpcode, open_devices

ops = st.lists(
    st.one_of(st.just(("recv", 0)), st.tuples(st.just("send"), st.integers(1, 20_000))),
    min_size=1,
    max_size=12,
)


def run_ops(model, sequence):
    tr = Tracer()
    p = Pair(model=model, sim=Simulator(tracer=tr))
    for i in range(32):
        p.post_recv(1, 10_000 + i, offset=i * 20480, length=20480)
    p.sim.run()
    tr.events.clear()
    recv_ids, send_ids = [], []
    for i, (op, size) in enumerate(sequence):
        if op == "recv":
            p.qp[0].post_recv(RecvWR(i, p.sge(0, 0, 64)))
            recv_ids.append(i)
        else:
            p.qp[0].post_send(SendWR(i, WrOpcode.SEND, p.sge(0, 0, size)))
            send_ids.append(i)
    p.sim.run()
    usable = {
        dict(f)["wr_id"]: t
        for t, _, kind, actor, f in tr.events
        if kind == "recv_usable" and actor.endswith("qp64") and "toy:0" in actor
    }
    left = [t for t, _, kind, actor, f in tr.events if kind == "send_left" and "toy:0" in actor]
    return usable, left, [op for op, _ in sequence]


@settings(max_examples=60, deadline=None)
@given(ops)
def test_shared_queue_orders_receive_posts_behind_earlier_sends(sequence):
    usable, left, kinds = run_ops(toy_model(work_queue="shared"), sequence)
    sends_before = 0
    for i, kind in enumerate(kinds):
        if kind == "send":
            sends_before += 1
        else:
            assert i in usable
            if sends_before:
                assert usable[i] >= left[sends_before - 1]


def test_split_queue_lets_a_receive_become_usable_before_earlier_sends_leave():
    usable, left, _ = run_ops(toy_model(work_queue="split"), [("send", 20_000), ("recv", 0)])
    assert usable[1] < left[0]


def test_shared_queue_same_sequence_waits():
    usable, left, _ = run_ops(toy_model(work_queue="shared"), [("send", 20_000), ("recv", 0)])
    assert usable[1] >= left[0]


def _stream_time(nsenders, nbytes=2_000_000, chunk=16384):
    sim = Simulator()
    model = toy_model()
    ctx = open_devices(sim, [model] * (nsenders + 1))
    pds = [c.alloc_pd() for c in ctx]
    cqs = [c.create_cq(65536) for c in ctx]
    mrs = [pd.reg_mr(np.zeros(1 << 16, dtype=np.uint8), Access.LOCAL_WRITE) for pd in pds]
    done = {}
    for s in range(nsenders):
        rqp = pds[-1].create_qp(cqs[-1], cqs[-1], 4096, 4096)
        sqp = pds[s].create_qp(cqs[s], cqs[s], 4096, 4096)
        for a, b, cb in ((rqp, sqp, ctx[s]), (sqp, rqp, ctx[-1])):
            a.modify(QpState.INIT)
            a.modify(QpState.RTR, dest_lid=cb.nic.lid, dest_qp_num=b.qp_num)
            a.modify(QpState.RTS)
        n = nbytes // chunk
        for i in range(n):
            rqp.post_recv(RecvWR(i, (Sge(mrs[-1].addr, chunk, mrs[-1].lkey),)))
        sim.run()
        for i in range(n):
            sqp.post_send(SendWR(i, WrOpcode.SEND, (Sge(mrs[s].addr, chunk, mrs[s].lkey),)))
        done[s] = cqs[s]
    sim.run()
    return sim.now


def test_two_senders_into_one_port_share_its_bandwidth():
    one = _stream_time(1)
    two = _stream_time(2)
    assert 1.8 < two / one < 2.2


def test_bandwidth_never_exceeds_link_rate():
    nbytes = 2_000_000
    t_ps = _stream_time(1, nbytes)
    gbps = nbytes * 8 / (t_ps / 1000)  # bits per ns
    assert gbps <= toy_model().link_gbps


def test_shared_queue_fetches_the_next_send_while_the_current_one_transmits():
    # toy NIC: 20 000 bytes take ~20.3 us on the wire and ~10.4 us to fetch over PCIe;
    # back-to-back sends must leave one wire time apart, not one wire time + one fetch
    _, left, _ = run_ops(toy_model(work_queue="shared"), [("send", 20_000)] * 6)
    gaps = [b - a for a, b in zip(left, left[1:], strict=False)]
    wire_ps = (20_000 + 10 * 26) * 1000
    assert all(gap <= wire_ps * 1.02 for gap in gaps), gaps


def test_switch_is_cut_through_so_a_path_costs_one_serialization():
    # toy NIC: link 100 ns each way, switch 200 ns, 1 ns per byte. The tail that left the
    # sender at t reaches the receiver at t + 400 ns whatever the size (store-and-forward
    # would add the ~2 us of a second serialization of this 2000-byte packet)
    tr = Tracer()
    p = Pair(sim=Simulator(tracer=tr))
    p.post_recv(1, 1)
    p.sim.run()
    p.qp[0].post_send(SendWR(1, WrOpcode.SEND, p.sge(0, 0, 2000)))
    p.sim.run()
    (left,) = [t for t, _, kind, actor, _ in tr.events if kind == "send_left"]
    (got,) = [t for t, _, kind, actor, _ in tr.events if kind == "recv_msg"]
    assert got - left == 400_000
