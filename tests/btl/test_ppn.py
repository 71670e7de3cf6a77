"""Several processes per node (``--ppn K``): ranks fill a node before the next, share its
NIC through their own verbs contexts, and reach on-node peers through the shared-memory
BTL (Open MPI's vader) and the others through openib, behind one BML per rank."""

import io
import re
from pathlib import Path

import numpy as np
import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.btl import build_job_btls
from pyopenib.btl.bml import Bml
from pyopenib.btl.sm import SM_EAGER_LIMIT, SmModule, SmNode
from pyopenib.config import load_mca
from pyopenib.errors import PyopenibError
from pyopenib.hw import get_device_model
from pyopenib.mpi import EXIT_TRANSPORT, run_job
from pyopenib.sim import Simulator, make_simulator
from pyopenib.verbs import (
    Access,
    AsyncEvent,
    AsyncEventType,
    QpState,
    RecvWR,
    SendWR,
    Sge,
    WcStatus,
    WrOpcode,
    open_devices,
)

PROGRAMS = Path(__file__).parents[1] / "mpi" / "programs"

ON_AND_OFF_NODE = """
import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank = comm.rank
# rank 0 talks to 1 (same node) and 2 (other node), eager and rendezvous sizes
for peer in (1, 2):
    for n in (8, 3000, 100_000):
        data = (np.arange(n) * (peer + 7)).astype(np.uint8)
        if rank == 0:
            comm.Send(data, dest=peer, tag=n)
            back = np.empty(n, dtype=np.uint8)
            comm.Recv(back, source=peer, tag=n)
            assert np.array_equal(back, data + 1), (peer, n)
        elif rank == peer:
            got = np.empty(n, dtype=np.uint8)
            comm.Recv(got, source=0, tag=n)
            assert np.array_equal(got, data), (peer, n)
            comm.Send(got + 1, dest=0, tag=n)
total = comm.allreduce(rank + 1)
big = np.full(50_000, rank, dtype=np.int64)
out = np.empty_like(big)
comm.Allreduce(big, out)
print(rank, MPI.Get_processor_name(), total, int(out[0]), int(out[-1]))
"""

PINGPONG = """
import sys
import numpy as np
from mpi4py import MPI

peer, size, iters = (int(a) for a in sys.argv[1:4])
comm = MPI.COMM_WORLD
msg = [np.zeros(size, dtype=np.uint8), size, MPI.BYTE]
for i in range(iters + 2):
    if i == 2:
        t0 = MPI.Wtime()
    if comm.rank == 0:
        comm.Send(msg, dest=peer, tag=1)
        comm.Recv(msg, source=peer, tag=1)
    elif comm.rank == peer:
        comm.Recv(msg, source=0, tag=1)
        comm.Send(msg, dest=0, tag=1)
if comm.rank == 0:
    print(repr((MPI.Wtime() - t0) / iters / 2))
"""


def _program(tmp_path, text: str) -> str:
    path = tmp_path / "prog.py"
    path.write_text(text)
    return str(path)


def _run(program, nprocs, ppn, device, mca=(), args=()):
    """run_job over the openib factory; also returns the job's BTL modules."""
    factory = openib_btls(device, list(mca), ppn)
    built = []

    def make_btls(sim, n):
        built.extend(factory(sim, n))
        return built

    out, err = io.StringIO(), io.StringIO()
    result = run_job(program, nprocs, make_btls, args, ppn=ppn, stdout=out, stderr=err)
    return result, out.getvalue(), err.getvalue(), built


def test_ranks_fill_a_node_first_and_each_opens_its_own_context_on_the_node_nic():
    btls = build_job_btls(Simulator(), 4, "mellanox-hermon", load_mca(), 2)
    assert all(isinstance(b, Bml) for b in btls)
    nics = [b.openib.context.nic for b in btls]
    assert nics[0] is nics[1] and nics[2] is nics[3] and nics[0] is not nics[2]
    assert btls[0].openib.context is not btls[1].openib.context
    assert [b.openib.hostname for b in btls] == ["node000", "node000", "node001", "node001"]
    assert btls[0].route[1] is btls[0].sm and btls[0].route[2] is btls[0].openib
    # the PML reads one eager limit: the smallest of the BTLs in use (sm's 4 KiB)
    assert btls[0].eager_limit == min(SM_EAGER_LIMIT, btls[0].openib.eager_limit)


def test_one_process_per_node_keeps_the_plain_openib_modules():
    btls = build_job_btls(Simulator(), 2, "mellanox-hermon", load_mca(), 1)
    assert [type(b).__name__ for b in btls] == ["OpenibModule", "OpenibModule"]


@pytest.mark.parametrize("device", ["mellanox-hermon", "chelsio-t3"])
def test_point_to_point_and_allreduce_on_and_off_node(tmp_path, device):
    result, out, err, btls = _run(_program(tmp_path, ON_AND_OFF_NODE), 4, 2, device)
    assert result.exit_code == 0, err
    lines = sorted(out.splitlines())
    assert lines == [f"{r} node00{r // 2} 10 6 6" for r in range(4)]
    # on-node traffic took shared memory: openib never connected rank 0 to rank 1
    assert 1 not in btls[0].openib.endpoints and 2 in btls[0].openib.endpoints
    assert btls[0].sm.messages_sent > 0 and btls[0].sm.bytes_copied >= 100_000


def test_on_node_latency_and_bandwidth_beat_off_node(tmp_path):
    prog = _program(tmp_path, PINGPONG)

    def half_round_trip(peer, size):
        result, out, err, _ = _run(prog, 4, 2, "mellanox-hermon", args=[str(peer), str(size), "5"])
        assert result.exit_code == 0, err
        return float(out)

    # the host's software path is the same on and off node; the transport is not
    assert half_round_trip(1, 8) < 0.8 * half_round_trip(2, 8)
    assert half_round_trip(1, 1 << 20) < half_round_trip(2, 1 << 20) / 2


@pytest.mark.parametrize("nprocs,ppn", [(3, 2), (4, 0), (4, 3)])
def test_ppn_that_does_not_fill_whole_nodes_is_a_clear_error(tmp_path, nprocs, ppn):
    with pytest.raises(PyopenibError) as info:
        _run(_program(tmp_path, "pass\n"), nprocs, ppn, "mellanox-hermon")
    assert info.value.topic == "btl-ppn"
    assert f"--ppn {ppn}" in str(info.value) and f"{nprocs} processes" in str(info.value)


def test_ranks_of_one_node_must_name_one_device():
    with pytest.raises(PyopenibError) as info:
        build_job_btls(Simulator(), 4, ["mellanox-hermon"] * 3 + ["chelsio-t3"], load_mca(), 2)
    assert info.value.topic == "btl-ppn-devices"
    assert "node001" in str(info.value)


def test_t3_credit_race_still_terminates_between_nodes_with_credits_on_smallest_qp(tmp_path):
    mca = [
        ("btl_openib_receive_queues", "P,128,256,192,128:P,65536,256,192,128"),
        ("btl_openib_credits_qp", "smallest"),
    ]
    # bidir_credit_race.py pairs rank r with r + n/2: with --ppn 2 every pair crosses nodes
    program = str(PROGRAMS / "bidir_credit_race.py")
    result, _, err, btls = _run(program, 4, 2, "chelsio-t3", mca)
    assert (result.exit_code, result.reason) == (EXIT_TRANSPORT, "transport"), err
    assert "iWARP TERMINATE" in err and "Credits policy:    smallest" in err
    local = int(re.search(r"Local rank: +(\d+)", err).group(1))
    peer = int(re.search(r"Peer rank: +(\d+)", err).group(1))
    assert local // 2 != peer // 2  # the terminated connection crosses nodes
    assert btls[local].openib.failed is not None
    assert all(p // 2 != b.rank // 2 for b in btls for p in b.openib.endpoints)


def test_sm_mailbox_delivers_in_send_order_whatever_the_durations():
    sim = make_simulator(7, randomize=True)
    node = SmNode("node000")
    a, b = SmModule(0, sim, node), SmModule(1, sim, node)
    got = []
    b.register_recv(1, lambda src, view: got.append((src, bytes(view))))
    sizes = [(i * 977) % 5000 for i in range(60)]
    for i, n in enumerate(sizes):
        a.send(1, 1, bytes([i]) * n)
    sim.run()
    b.progress()
    assert [len(p) for _, p in got] == sizes and {s for s, _ in got} == {0}


def test_sm_put_and_get_copy_between_registered_buffers_after_the_modelled_delay():
    sim = Simulator()
    node = SmNode("node000")
    a, b = SmModule(0, sim, node), SmModule(1, sim, node)
    src = a.register_memory(np.arange(64, dtype=np.uint8))
    dst = b.register_memory(np.zeros(64, dtype=np.uint8))
    done = []
    a.put(1, src, 8, dst.key, 0, 16, lambda: done.append(sim.now))
    assert not dst.buffer.any()  # nothing lands before the copy has happened
    sim.run()
    a.progress()
    assert dst.buffer[:16].tolist() == list(range(8, 24)) and done[0] > 0
    back = a.register_memory(np.zeros(4, dtype=np.uint8))
    a.get(1, back, 0, dst.key, 4, 4, lambda: None)
    sim.run()
    assert back.buffer.tolist() == [12, 13, 14, 15]


def _connected(device: str, same_nic: bool):
    """Two contexts, one QP each, connected: on ONE NIC (two processes of one host) or
    on two NICs of the fabric."""
    sim = Simulator()
    model = get_device_model(device)
    if same_nic:
        ctx = open_devices(sim, [model], per_device=2)
    else:
        ctx = open_devices(sim, [model, model])
    access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
    pds = [c.alloc_pd() for c in ctx]
    cqs = [c.create_cq(64) for c in ctx]
    qps = [pd.create_qp(cq, cq, 16, 16) for pd, cq in zip(pds, cqs, strict=True)]
    mrs = [pd.reg_mr(np.zeros(4096, dtype=np.uint8), access) for pd in pds]
    for i, qp in enumerate(qps):
        qp.modify(QpState.INIT)
        qp.modify(QpState.RTR, dest_lid=ctx[1 - i].nic.lid, dest_qp_num=qps[1 - i].qp_num)
        qp.modify(QpState.RTS)
    return sim, ctx, cqs, qps, mrs


def _one_send(same_nic: bool):
    """Time from posting a 64-byte SEND to its receive completion."""
    sim, ctx, cqs, qps, mrs = _connected("mellanox-hermon", same_nic)
    qps[1].post_recv(RecvWR(1, (Sge(mrs[1].addr, 64, mrs[1].lkey),)))
    mrs[0].buffer[:64] = 5
    sim.run()
    start = sim.now
    arrived = []
    cqs[1].req_notify(lambda: arrived.append(sim.now))
    qps[0].post_send(SendWR(2, WrOpcode.SEND, (Sge(mrs[0].addr, 64, mrs[0].lkey),)))
    sim.run()
    (wc,) = cqs[1].poll(4)
    assert wc.status == WcStatus.SUCCESS and (mrs[1].buffer[:64] == 5).all()
    return arrived[0] - start, ctx[0].nic.fabric.packets_forwarded, ctx[0].model


def test_hca_loops_back_a_packet_to_its_own_lid_without_the_links_and_switch():
    loop_ps, loop_forwarded, m = _one_send(same_nic=True)
    wire_ps, wire_forwarded, _ = _one_send(same_nic=False)
    assert loop_forwarded == 0 and wire_forwarded > 0
    assert wire_ps - loop_ps == 2 * m.link_latency[1] + m.switch_latency[1]


def test_async_events_reach_only_the_context_owning_the_qp():
    sim, ctx, cqs, qps, mrs = _connected("chelsio-t3", same_nic=True)
    qps[0].post_send(SendWR(1, WrOpcode.SEND, (Sge(mrs[0].addr, 64, mrs[0].lkey),)))
    sim.run()  # no receive posted at context 1: iWARP TERMINATE, both QPs fatal
    assert [(e.event_type, e.qp_num) for e in ctx[0].async_events] == [
        (AsyncEventType.QP_FATAL, qps[0].qp_num)
    ]
    assert [(e.event_type, e.qp_num) for e in ctx[1].async_events] == [
        (AsyncEventType.QP_FATAL, qps[1].qp_num)
    ]


def test_openib_module_ignores_a_fatal_event_for_a_qp_it_does_not_own():
    btls = build_job_btls(Simulator(), 4, "chelsio-t3", load_mca(), 2)
    btls[0].openib._on_async(AsyncEvent(AsyncEventType.QP_FATAL, 0, 0x7FFF, "not mine"))
    assert btls[0].openib.failed is None


def test_a_context_finds_its_own_qps_by_number_never_a_neighbours_on_the_shared_nic():
    """What the BTL's completion and async-event handlers rely on: a QP number on a NIC
    two processes share names one process's QP; the other's context does not find it."""
    _, ctx, _, qps, _ = _connected("mellanox-hermon", same_nic=True)
    assert ctx[0].nic is ctx[1].nic and qps[0].qp_num != qps[1].qp_num
    assert ctx[0].find_qp(qps[0].qp_num) is qps[0]
    assert ctx[1].find_qp(qps[1].qp_num) is qps[1]
    assert ctx[0].find_qp(qps[1].qp_num) is None and ctx[1].find_qp(qps[0].qp_num) is None
    qps[0].modify(QpState.ERROR)
    qps[0].destroy()
    assert ctx[0].find_qp(qps[0].qp_num) is None
    assert ctx[0].find_qp(0) is None and ctx[0].find_qp(qps[1].qp_num + 100) is None
