"""Exact fast paths (issue 13): a run with them is the run without them, byte for byte.

The kernel folds a process's ``sleep`` whose wake-up would be the very next event
(``sim/_kernel.py``). These tests pin the rule itself (when it folds, when it must not)
and its exactness: the same callbacks at the same times in the same order, the same
trace, the same answer, with the fast paths on and off, on fixed MPI jobs and on random
small workloads."""

from __future__ import annotations

import io
import sys
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import run_job
from pyopenib.sim import NominalOracle, RandomOracle, ScriptedOracle, Simulator, Tracer

ROOT = Path(__file__).resolve().parent.parent


# -- the kernel's rule -------------------------------------------------------------------


def _sleeper(sim, log, delays):
    for d in delays:
        sim.sleep(d)
        log.append(sim.now)


def test_a_sleep_with_nothing_pending_before_its_wake_up_is_folded():
    sim = Simulator()
    log = []
    sim.spawn(_sleeper, sim, log, [5, 7])
    sim.run()
    assert log == [5, 12] and sim.now == 12
    assert sim.sleeps_folded == 2
    assert sim.events_run == 1  # only the spawn's first switch was a heap entry


def test_a_sleep_past_a_pending_event_or_tied_with_one_is_not_folded():
    for at in (3, 5):  # before the wake-up, and at the same instant (FIFO: it runs first)
        sim = Simulator()
        log = []
        sim.schedule(at, log.append, "event")
        sim.spawn(_sleeper, sim, log, [5])
        sim.run()
        assert log == ["event", 5], at
        assert sim.sleeps_folded == 0, at


def test_no_fold_beyond_until_nor_under_an_event_budget():
    sim = Simulator()
    log = []
    sim.spawn(_sleeper, sim, log, [5, 10])
    sim.run(until=8)  # the second wake-up (15) lies beyond until: it stays an event
    assert log == [5] and sim.now == 8 and sim.sleeps_folded == 1
    sim.run()
    assert log == [5, 15]
    budget = Simulator()
    budget.spawn(_sleeper, budget, [], [5, 10])
    budget.run(max_events=100)  # an event budget counts wake-ups: nothing folds
    assert budget.sleeps_folded == 0 and budget.events_run == 3


def test_only_plain_oracles_let_the_kernel_fold():
    assert NominalOracle.plain and RandomOracle.plain
    assert not ScriptedOracle.plain  # an explorer's trail sees every choice point
    for oracle, folds in (
        (NominalOracle(), True),
        (RandomOracle(1), True),
        (ScriptedOracle(), False),
    ):
        sim = Simulator(oracle=oracle)
        sim.spawn(_sleeper, sim, [], [5])
        sim.run()
        assert (sim.sleeps_folded == 1) is folds, oracle
    off = Simulator(fast_paths=False)
    off.spawn(_sleeper, off, [], [5])
    off.run()
    assert off.sleeps_folded == 0


# -- exactness on random workloads of the kernel -----------------------------------------

_OP = st.one_of(
    st.tuples(st.just("sleep"), st.integers(0, 20)),
    st.tuples(st.just("pay"), st.integers(0, 20)),  # the host model's sleep_if_process
    st.tuples(st.just("event"), st.integers(0, 20)),  # a callback that logs when it runs
    st.tuples(st.just("wake"), st.integers(0, 3)),  # resume a suspended process
    st.tuples(st.just("suspend"), st.just(0)),
)


def _workload(fast: bool, programs) -> tuple[list, int]:
    sim = Simulator(fast_paths=fast)
    log: list = []
    procs: list = []

    def body(i, ops):
        for n, (op, arg) in enumerate(ops):
            log.append((sim.now, i, n, op))
            if op == "sleep":
                sim.sleep(arg)
            elif op == "pay":
                assert sim.sleep_if_process(arg)
            elif op == "event":
                sim.schedule(arg, log.append, (i, n, "ran"))
            elif op == "wake":
                target = procs[arg % len(procs)]
                if target in suspended:
                    suspended.remove(target)
                    sim.resume(target.greenlet, (i, n))
            elif len(suspended) < len(procs) - 1:  # someone stays awake to wake it
                suspended.append(procs[i])
                log.append(("woken by", sim.suspend()))

    suspended: list = []
    for i, ops in enumerate(programs):
        procs.append(sim.spawn(body, i, ops))
    sim.run(until=10_000)
    return log, sim.sleeps_folded


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(_OP, max_size=12), min_size=1, max_size=4))
def test_folded_sleeps_change_nothing_a_workload_can_see(programs):
    on, _ = _workload(True, programs)
    off, folded_off = _workload(False, programs)
    assert on == off
    assert folded_off == 0


# -- exactness on MPI jobs (the ping-pong the speed benchmark runs, and OSU's latency) ----


def _job(program: Path, argv: list[str], fast: bool, device: str = "mellanox-hermon"):
    tracer = Tracer()
    sim = Simulator(tracer=tracer, fast_paths=fast)
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        str(program), 2, openib_btls(device, [], 1), argv, sim=sim, stdout=out, stderr=err
    )
    return result.exit_code, result.sim_time_ps, out.getvalue(), tracer.events, sim


def test_the_ping_pong_traces_the_same_with_and_without_fast_paths():
    program = ROOT / "benchmarks" / "smpi" / "pingpong.py"
    *fast, sim_fast = _job(program, ["50"], True)
    *slow, sim_slow = _job(program, ["50"], False)
    assert fast == slow
    assert fast[0] == 0 and "messages 100" in fast[2]
    assert sim_fast.sleeps_folded > 100  # the host model's charges became folds
    assert sim_slow.sleeps_folded == 0
    assert sim_fast.events_folded >= 100  # every message's ACK left without its event
    assert sim_slow.events_folded == 0
    folded = sim_fast.sleeps_folded + sim_fast.events_folded
    assert sim_fast.scheduled + folded == sim_slow.scheduled


def test_osu_latency_on_iwarp_traces_the_same_with_and_without_fast_paths():
    program = ROOT / "examples" / "osu_latency.py"
    *fast, _ = _job(program, ["-m", "4096", "-i", "20", "-x", "2"], True, "chelsio-t3")
    *slow, _ = _job(program, ["-m", "4096", "-i", "20", "-x", "2"], False, "chelsio-t3")
    assert fast == slow and fast[0] == 0


# -- the host model's one-call charge (``Simulator.sleep_if_process``) -------------------


def test_sleep_if_process_sleeps_a_process_and_refuses_the_loop():
    sim = Simulator()
    log = []

    def callback():
        log.append(("loop", sim.sleep_if_process(7), sim.now))  # nothing happens

    def body():
        log.append(("process", sim.sleep_if_process(5), sim.now))  # nothing pending: folds
        sim.schedule(1, log.append, "event")
        log.append(("process", sim.sleep_if_process(5), sim.now))  # past an event: a wake-up

    sim.schedule(20, callback)
    sim.spawn(body)
    sim.run()
    assert log == [("process", True, 5), "event", ("process", True, 10), ("loop", False, 20)]
    assert sim.sleeps_folded == 1


def test_a_host_charge_from_the_loop_stays_owed_and_a_sleeping_rank_keeps_new_charges():
    from pyopenib.sim.host import HostModel

    sim = Simulator()
    host = HostModel(sim, None, 0.0)  # no costs of its own: only its debt is tested
    host.spend(4)  # the event loop cannot sleep: the debt waits for the rank
    assert host.owed == 4 and sim.now == 0
    seen = []

    def rank():
        host.settle()  # sleeps 4; another thread of the rank charges meanwhile
        seen.append((sim.now, host.owed))
        host.spend(0)
        seen.append((sim.now, host.owed))

    sim.spawn(rank)
    sim.schedule(2, host.charge, 3)
    sim.run()
    assert seen == [(4, 3), (7, 0)]


# -- the folded ACK serialization (``TransmitPort.send_ack``) -----------------------------

sys.path.insert(0, str(ROOT / "tests" / "verbs"))

from verbs_testbed import Pair, toy_model  # noqa: E402

from pyopenib.verbs import SendFlags, SendWR, WrOpcode  # noqa: E402

_VERB = st.tuples(
    st.integers(0, 1),  # the side that posts
    st.sampled_from(("send", "write", "read")),
    st.integers(0, 6000),  # bytes: zero, one packet, several
    st.integers(0, 3).map(lambda k: k * 250),  # post time (ps): coarse, so instants tie
)


def _verbs_run(fast: bool, verbs, seed: int | None):
    tracer = Tracer()
    oracle = RandomOracle(seed) if seed is not None else NominalOracle()
    p = Pair(model=toy_model(), sim=Simulator(tracer=tracer, oracle=oracle, fast_paths=fast))
    for side in (0, 1):
        for i in range(len(verbs)):
            p.post_recv(side, 1000 + i, offset=8192 * i, length=8192)
    p.sim.run()
    for i, (side, kind, n, at) in enumerate(verbs):
        opcode = {"send": WrOpcode.SEND, "write": WrOpcode.RDMA_WRITE}.get(kind, WrOpcode.RDMA_READ)
        mr = p.mr[1 - side]
        wr = SendWR(i, opcode, p.sge(side, 8192 * i, n), SendFlags.SIGNALED, 0, mr.addr, mr.rkey)
        p.sim.schedule(at, p.qp[side].post_send, wr)
    p.sim.run()
    completions = [[(wc.wr_id, wc.status, wc.byte_len) for wc in cq.poll(4096)] for cq in p.cq]
    return tracer.events, completions, p.sim.now, p.sim.events_folded


@settings(max_examples=40, deadline=None)
@given(st.lists(_VERB, min_size=1, max_size=6), st.none() | st.integers(0, 1000))
def test_folded_acks_change_nothing_a_verbs_workload_can_see(verbs, seed):
    *on, _ = _verbs_run(True, verbs, seed)
    *off, folded_off = _verbs_run(False, verbs, seed)
    assert on == off
    assert folded_off == 0


def test_the_kernel_allows_a_callback_fold_only_before_everything_pending():
    sim = Simulator()
    answers = []
    sim.schedule(10, lambda: answers.append((sim.fold(19), sim.fold(20), sim.fold(21))))
    sim.schedule(20, answers.append, "at 20")
    sim.run()
    assert answers == [(True, False, False), "at 20"]  # a tie at 20 runs first: no fold
    assert sim.events_folded == 1
    assert not sim.fold(0)  # outside ``run`` nothing folds
    for sim in (Simulator(fast_paths=False), Simulator(oracle=ScriptedOracle())):
        sim.schedule(1, lambda s=sim: answers.append(s.fold(5)))
        sim.run()
        assert answers[-1] is False
    budget = Simulator()
    budget.schedule(1, lambda: answers.append(budget.fold(5)))
    budget.run(max_events=10)
    assert answers[-1] is False


def _ack_on_a_pair(tied_event: bool):
    from pyopenib.hw.packet import ACK, Packet

    p = Pair(model=toy_model())
    p.sim.run()
    nic, peer = p.ctx[0].nic, p.ctx[1].nic
    qp = p.qp[0].hw
    ack = Packet(ACK, nic.lid, peer.lid, qp.qpn, qp.dest_qpn, 0, 64)
    seen = []
    p.sim.schedule(5, lambda: (nic.port.send_ack(ack), seen.append(nic.port.busy)))
    if tied_event:
        p.sim.schedule(5, seen.append, "tied")
    p.sim.run()
    return seen, p.sim.events_folded


def test_an_ack_folds_only_when_its_departure_would_be_the_next_event():
    assert _ack_on_a_pair(False) == ([False], 1)  # left at once: the port stays idle
    assert _ack_on_a_pair(True) == ([True, "tied"], 0)  # serialized as an event
