"""Eager RDMA (reference 4): a ring opened for a frequent peer after
eager_rdma_threshold small fragments, high-priority small fragments written into it with
tokens, freed slots returned as eager-RDMA credits (bit 15) or explicit credit messages."""

import pytest

from pyopenib.apps.scenarios import run_scenario


def _eager_stats(result):
    sent = sum(ep.eager_frags_sent for b in result.modules for ep in b.endpoints.values())
    rings = sum(len(b.eager.endpoints) for b in result.modules)
    return sent, rings


@pytest.mark.parametrize("device", ["chelsio-t3", "mellanox-hermon"])
def test_frequent_peer_gets_a_ring_and_small_fragments_use_it(device):
    r = run_scenario("pingpong", device=device, credits_qp="own", iterations=200, trace=True)
    assert r.completed
    sent, rings = _eager_stats(r)
    assert rings == 2  # each side opened one for the other
    assert sent > 150  # after the threshold, ping-pong fragments go through the rings
    kinds = [e[2] for e in r.tracer.events]
    assert kinds.count("eager_rdma_offer") == 2 and kinds.count("eager_rdma_connected") == 2


def test_ring_opens_only_after_the_threshold():
    pairs = [("btl_openib_eager_rdma_threshold", "1000")]
    r = run_scenario(
        "pingpong", device="chelsio-t3", credits_qp="own", iterations=200, mca_pairs=pairs
    )
    assert _eager_stats(r) == (0, 0)


def test_use_eager_rdma_off_keeps_everything_on_the_qps():
    r = run_scenario(
        "pingpong",
        device="chelsio-t3",
        credits_qp="own",
        iterations=200,
        mca_pairs=[("btl_openib_use_eager_rdma", "0")],
    )
    assert r.completed and _eager_stats(r) == (0, 0)


def test_max_eager_rdma_bounds_rings_per_module():
    r = run_scenario(
        "incast",
        device="mellanox-hermon",
        credits_qp="own",
        nprocs=4,
        iterations=200,
        mca_pairs=[("btl_openib_max_eager_rdma", "1")],
    )
    assert r.completed
    assert all(len(b.eager.endpoints) <= 1 for b in r.modules)


def test_tokens_come_back_piggybacked_so_a_long_exchange_keeps_using_the_ring():
    # 2000 exchanges through a 16-slot ring: only possible if freed slots come back
    r = run_scenario("pingpong", device="mellanox-hermon", credits_qp="own", iterations=2000)
    assert r.completed
    sent, _ = _eager_stats(r)
    assert sent > 1900


def test_one_way_stream_returns_ring_slots_by_explicit_credit_messages():
    queues = "P,128,256,192,128:P,65536,256,192,128"
    r = run_scenario(
        "stream",
        device="mellanox-hermon",
        credits_qp="own",
        iterations=2000,
        mca_pairs=[("btl_openib_receive_queues", queues)],
        trace=True,
    )
    assert r.completed
    returned = [dict(e[4])["rdma_credits"] for e in r.tracer.events if e[2] == "credit_msg"]
    assert any(returned)
    assert _eager_stats(r)[0] > 16  # more than one ring's worth went through it
