"""The PML's promises over a BTL: matching, non-overtaking across size classes,
eager/rendezvous/synchronous protocols and truncation."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyopenib.pml import ANY_SOURCE, ANY_TAG, Pml
from pyopenib.sim import Simulator

from .loopback_btl import make_loopback_btls


def _job(nprocs, *bodies):
    sim = Simulator()
    pmls = [Pml(b) for b in make_loopback_btls(sim, nprocs)]
    procs = [sim.spawn(body, pmls[r]) for r, body in enumerate(bodies)]
    sim.run()
    assert all(p.triggered for p in procs), "a rank is still blocked"
    return sim, [p.value for p in procs]


def _wait(pml, req):
    while not req.complete:
        if pml.progress() == 0:
            pml.wait_for_activity()
    return req


def _payload(n, seed=0):
    return (np.arange(n, dtype=np.int64) * 7 + seed).astype(np.uint8)


def test_messages_of_different_sizes_are_matched_in_send_order():
    sizes = [100_000, 10, 5000, 1, 300, 70_000, 0, 20]

    def sender(pml):
        reqs = [pml.isend(_payload(n, i), 1, 0, 0, 7) for i, n in enumerate(sizes)]
        for r in reqs:
            _wait(pml, r)

    def receiver(pml):
        got = []
        for _ in sizes:
            got.append(_wait(pml, pml.irecv(None, 0, 0, 7)).data)
        return got

    _, (_, got) = _job(2, sender, receiver)
    for i, n in enumerate(sizes):
        assert np.array_equal(got[i], _payload(n, i))


def test_rendezvous_fills_the_posted_buffer_by_rdma():
    n = 100_000
    buf = np.zeros(n, dtype=np.uint8)

    def sender(pml):
        _wait(pml, pml.isend(_payload(n), 1, 0, 0, 3))

    def receiver(pml):
        req = _wait(pml, pml.irecv(buf, 0, ANY_SOURCE, ANY_TAG))
        return req.source, req.tag, req.count, req.truncated

    _, (_, status) = _job(2, sender, receiver)
    assert status == (0, 3, n, False)
    assert np.array_equal(buf, _payload(n))


def test_truncation_keeps_what_fits_and_reports_it():
    for n in (100, 50_000):
        buf = np.zeros(10, dtype=np.uint8)

        def sender(pml, n=n):
            _wait(pml, pml.isend(_payload(n), 1, 0, 0, 0))

        def receiver(pml, buf=buf):
            req = _wait(pml, pml.irecv(buf, 0, 0, 0))
            return req.count, req.truncated

        _, (_, status) = _job(2, sender, receiver)
        assert status == (10, True)
        assert np.array_equal(buf, _payload(n)[:10])


def test_synchronous_send_completes_only_after_the_match():
    def sender(pml):
        req = pml.isend(_payload(8), 1, 0, 0, 0, sync=True)
        _wait(pml, req)
        return pml.btl.sim.now

    def receiver(pml):
        pml.btl.sim.sleep(10**9)
        _wait(pml, pml.irecv(None, 0, 0, 0))

    _, (done_at, _) = _job(2, sender, receiver)
    assert done_at > 10**9


def test_unexpected_messages_are_probed_and_matched_by_tag():
    def sender(pml):
        for tag in (5, 6):
            pml.isend(_payload(4, tag), 1, 0, 0, tag)
        pml.btl.sim.sleep(10**8)

    def receiver(pml):
        pml.btl.sim.sleep(10**8)
        pml.progress()
        probed = pml.iprobe(0, ANY_SOURCE, 6)
        six = _wait(pml, pml.irecv(None, 0, 0, 6))
        five = _wait(pml, pml.irecv(None, 0, 0, ANY_TAG))
        return probed, six.tag, five.tag

    _, (_, got) = _job(2, sender, receiver)
    assert got == ((0, 6, 4), 6, 5)


def test_self_send_of_any_size_is_received():
    def me(pml):
        s = pml.isend(_payload(200_000), 0, 0, 0, 1, sync=True)
        r = _wait(pml, pml.irecv(None, 0, 0, 1))
        _wait(pml, s)
        return np.array_equal(r.data, _payload(200_000))

    _, (ok,) = _job(1, me)
    assert ok


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(0, 40_000), min_size=1, max_size=12))
def test_any_size_sequence_arrives_intact_and_in_order(sizes):
    def sender(pml):
        reqs = [pml.isend(_payload(n, i), 1, 0, 0, i % 3) for i, n in enumerate(sizes)]
        for r in reqs:
            _wait(pml, r)

    def receiver(pml):
        return [_wait(pml, pml.irecv(None, 0, 0, ANY_TAG)) for _ in sizes]

    _, (_, got) = _job(2, sender, receiver)
    for i, n in enumerate(sizes):
        assert got[i].tag == i % 3 and np.array_equal(got[i].data, _payload(n, i))
