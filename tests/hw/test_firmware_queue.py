"""IBM eHCA's firmware works through a QP's doorbells in order: a receive posted behind
sends becomes usable once those sends have been processed (cut into packets), which is
after them but before they have left the wire on a long message — the credit race's
hole exists, smaller than the T3's (which waits for the sends to leave)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verbs"))

from verbs_testbed import Pair, toy_model  # noqa: E402

from pyopenib.hw import get_device_model  # noqa: E402
from pyopenib.sim import Simulator, Tracer  # noqa: E402
from pyopenib.verbs import RecvWR, SendWR, WrOpcode  # noqa: E402


def _sends_then_a_receive(work_queue: str, sends: int = 3, size: int = 16384):
    tr = Tracer()
    p = Pair(model=toy_model(work_queue=work_queue), sim=Simulator(tracer=tr))
    for i in range(sends):
        p.post_recv(1, 100 + i, offset=i * size, length=size)
    p.sim.run()
    tr.events.clear()
    for i in range(sends):
        p.qp[0].post_send(SendWR(i, WrOpcode.SEND, p.sge(0, 0, size)))
    p.qp[0].post_recv(RecvWR(99, p.sge(0, 65536, 64)))
    p.sim.run()

    def times(kind):
        return [t for t, _, k, actor, _f in tr.events if k == kind and "toy:0" in actor]

    (usable,) = times("recv_usable")
    return usable, times("send_emit"), times("send_left")


def test_a_receive_behind_sends_is_usable_once_they_are_processed_not_once_they_left():
    usable, emitted, left = _sends_then_a_receive("firmware")
    assert usable >= emitted[-1]  # behind the sends: the credit race's hole
    assert usable < left[-1]  # but not behind the wire: a smaller hole than the T3's


def test_the_hole_is_smaller_than_on_a_shared_work_queue():
    firmware, _, _ = _sends_then_a_receive("firmware")
    shared, _, left = _sends_then_a_receive("shared")
    split, _, _ = _sends_then_a_receive("split")
    assert shared >= left[-1]
    assert split < firmware < shared


def test_the_ehcas_are_the_firmware_devices():
    for name in ("ibm-ehca", "ibm-ehca2"):
        assert get_device_model(name).work_queue == "firmware"
