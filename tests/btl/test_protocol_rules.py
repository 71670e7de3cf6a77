"""The openib BTL's protocol rules, one test per rule (OPENIB-REFERENCE.md §2 and §3).

Queues are small (``P,128,8,6,4,4:P,4096,8,6,4,4``: rd_num 8, rd_low 6, rd_win 4,
rd_rsv 4) so the arithmetic is visible, and the test steps the ranks itself (see
btl_testbed): a rank that is not progressed has not polled its CQ yet.
"""

from __future__ import annotations

import struct

import pytest
from btl_testbed import TAG, Job, run_ranks

from pyopenib.btl.frag import HDR_LEN, HEADER, TAG_IB

SMALL = b"s" * 16  # fits QP 0 (128-byte buffers)
LARGE = b"L" * 1000  # needs QP 1 (4096-byte buffers)


def numbered(i: int, size: int = 16) -> bytes:
    return i.to_bytes(4, "little") + b"." * (size - 4)


def numbers(payloads) -> list[int]:
    return [int.from_bytes(p[:4], "little") for p in payloads]


CREDIT_MSG = ("qp", "on_qp", "credits", "cm_seen")


def credit_msgs(job: Job, actor: str) -> list[dict]:
    return job.events("credit_msg", actor, CREDIT_MSG)


def connected(**kw) -> Job:
    job = Job(**kw)
    job.connect(0, 1)
    return job


# -- 2.1 / 2.2: state after connection, re-posting at rd_low ------------------------------
def test_connection_leaves_rd_num_credits_and_nothing_owed():
    job = connected()
    for rank, peer in ((0, 1), (1, 0)):
        for q in (0, 1):
            assert job.state(rank, peer, q) == {
                "sd_credits": 8, "rd_posted": 8, "rd_credits": 0, "cm_received": 0,
                "cm_return": 0, "cm_sent": 0, "sd_wqe": 8,
            }  # fmt: skip


def test_receive_buffers_are_reposted_only_when_rd_posted_falls_to_rd_low():
    job = connected()
    job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).rd_posted[0] == 7  # 7 > rd_low 6: nothing re-posted
    assert job.events("post_rr", "rank1->0")[-1]["posted"] == 8  # only the initial post
    job.send(0, 1, SMALL)
    job.settle()
    # 6 <= rd_low: re-post up to rd_num, and owe the peer exactly those 2 buffers
    assert job.events("post_rr", "rank1->0")[-1] == {"qp": 0, "posted": 2, "rd_credits": 2}
    assert job.ep(1, 0).rd_posted[0] == 8
    assert job.ep(1, 0).rd_credits[0] == 2


def test_repost_refills_to_rd_num_from_a_low_rd_low():
    job = connected(queues="P,128,8,2,6,4:P,4096,8,6,4,4")
    for _ in range(5):
        job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).rd_posted[0] == 3
    assert job.ep(1, 0).rd_credits[0] == 0
    job.send(0, 1, SMALL)
    job.settle()
    # rd_posted 2 <= rd_low 2: 6 buffers at once; 6 >= rd_win 6 so they went back at once
    post = job.events("post_rr", "rank1->0")[-1]
    assert post == {"qp": 0, "posted": 6, "rd_credits": 6}
    assert credit_msgs(job, "rank1->0") == [{"qp": 0, "on_qp": 0, "credits": 6, "cm_seen": 0}]


def test_rd_credits_grows_by_exactly_the_buffers_reposted():
    job = connected()
    for _ in range(30):
        job.send(0, 1, SMALL)
        job.settle()
    posts = job.events("post_rr", "rank1->0")[2:]  # after the initial two
    assert posts and all(p["posted"] == 2 for p in posts)  # rd_num - rd_low each time
    sent = sum(m["credits"] for m in job.events("credit_msg", "rank1->0"))
    assert sent + job.ep(1, 0).rd_credits[0] == 2 * len(posts)
    job.check_all()


# -- 2.7: explicit credit messages at rd_win, routed by policy ----------------------------
@pytest.mark.parametrize("policy, on_qp", [("own", 1), ("smallest", 0)])
def test_one_way_traffic_returns_credits_in_explicit_messages_at_rd_win(policy, on_qp):
    job = connected(policy=policy)
    for _ in range(16):
        job.send(0, 1, LARGE)
        job.settle()
    msgs = credit_msgs(job, "rank1->0")
    # 2 buffers per re-post, one message per rd_win = 4 owed credits: 16 frags -> 4 msgs
    assert msgs == [{"qp": 1, "on_qp": on_qp, "credits": 4, "cm_seen": 0}] * 4
    assert job.btls[1].credit_msgs_on[on_qp] == 4
    assert job.btls[1].credit_msgs_on[1 - on_qp] == 0
    assert job.ep(0, 1).sd_credits[1] == 8  # every credit came back
    got = job.events("credits_in", "rank0->1")
    assert got == [{"qp": 1, "credits": 4, "explicit": True}] * 4
    job.check_all()


def test_no_explicit_credit_message_below_rd_win():
    job = connected()
    for _ in range(3):  # one re-post: 2 owed < rd_win 4
        job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).rd_credits[0] == 2
    assert job.events("credit_msg") == []


def test_traffic_in_both_directions_piggybacks_credits_instead_of_explicit_messages():
    job = connected()
    for i in range(40):
        size = 16 if i % 2 else 1000  # both QPs, in both directions
        job.send(0, 1, numbered(i, size))
        job.send(1, 0, numbered(i, size))
        job.settle()
    assert job.events("credit_msg") == []
    for rank, peer in ((0, 1), (1, 0)):
        ins = job.events("credits_in", f"rank{rank}->{peer}")
        assert {e["qp"] for e in ins} == {0, 1}
        assert not any(e["explicit"] for e in ins)
        assert all(job.ep(rank, peer).piggybacked[q] > 0 for q in (0, 1))
        assert numbers(job.payloads(peer)) == list(range(40))
    job.check_all()


def test_credits_are_piggybacked_only_on_the_qp_they_belong_to():
    job = connected()
    for _ in range(16):  # both directions, but on different QPs: nothing to ride on
        job.send(0, 1, SMALL)
        job.send(1, 0, LARGE)
        job.settle()
    assert {(m["qp"], m["on_qp"]) for m in job.events("credit_msg", "rank1->0")} == {(0, 0)}
    assert {(m["qp"], m["on_qp"]) for m in job.events("credit_msg", "rank0->1")} == {(1, 1)}
    assert job.ep(0, 1).piggybacked == [0, 0] and job.ep(1, 0).piggybacked == [0, 0]
    job.check_all()


# -- 2.7 / 2.8: at most rd_rsv - 1 unacknowledged credit messages -------------------------
CAP_QUEUES = "P,128,32,30,2,4:P,4096,8,6,4,4"  # a credit message every 2 frags, rd_rsv 4


def send_pairs_unpolled(job: Job, n: int) -> None:
    """Rank 0 sends 2 fragments at a time and never polls (so it never consumes the
    credit messages nor reports cm_seen); rank 1 handles each pair completely."""
    for _ in range(n):
        job.send(0, 1, SMALL)
        job.send(0, 1, SMALL)
        job.settle(ranks=[1])


def test_unacknowledged_credit_messages_are_capped_at_rd_rsv_minus_one():
    job = connected(queues=CAP_QUEUES)
    send_pairs_unpolled(job, 16)
    assert len(job.events("credit_msg", "rank1->0")) == 3
    assert job.ep(1, 0).cm_sent[0] == 3
    deferred = job.events("credit_msg_deferred", "rank1->0")
    assert deferred and all(d == {"qp": 0, "cm_sent": 3} for d in deferred)
    assert job.ep(1, 0).credit_lock[0] is False  # gave up, to be retried later
    assert job.ep(1, 0).rd_credits[0] == 32 - 3 * 2  # the rest is still owed


def test_cm_seen_acknowledges_credit_messages_and_unblocks_the_deferred_credits():
    job = connected(queues=CAP_QUEUES)
    send_pairs_unpolled(job, 16)
    job.settle()  # rank 0 consumes the 3 credit messages and re-posts their buffers
    assert job.ep(0, 1).cm_return[0] == 3
    assert job.ep(0, 1).cm_received[0] == 0
    job.send(0, 1, SMALL)  # carries cm_seen = 3
    job.settle(ranks=[1])
    msgs = job.events("credit_msg", "rank1->0")
    assert job.ep(0, 1).cm_return[0] == 0
    # the held-back credits left as soon as cm_sent dropped, in one message
    assert len(msgs) == 4 and msgs[3]["credits"] == 32 - 3 * 2
    assert job.ep(1, 0).cm_sent[0] == 1
    job.settle()
    assert job.ep(0, 1).sd_credits[0] == 32 - 33 + 32  # 33 sent, 32 re-posted and returned
    assert job.ep(0, 1).cm_return[0] == 1  # the 4th message, to acknowledge later
    job.check_all()


# -- 2.3: cm_seen is one byte -------------------------------------------------------------
def test_take_cm_seen_reports_at_most_255_and_keeps_the_rest_in_cm_return():
    job = connected(check_invariants=False)
    btl, ep = job.btls[0], job.ep(0, 1)
    ep.cm_return[0] = 300
    assert btl._take_cm_seen(ep, 0) == 255
    assert ep.cm_return[0] == 45
    assert btl._take_cm_seen(ep, 0) == 45
    assert ep.cm_return[0] == 0
    assert btl._take_cm_seen(ep, 0) == 0
    ep.cm_return[0] = 255
    assert btl._take_cm_seen(ep, 0) == 255 and ep.cm_return[0] == 0


def test_header_is_tag_cm_seen_credits_in_four_bytes():
    assert HEADER.size == HDR_LEN == 4
    assert HEADER.pack(TAG_IB, 255, 0x7FFF) == bytes([0x20, 0xFF, 0xFF, 0x7F])
    assert HEADER.unpack(HEADER.pack(TAG, 7, 300)) == (TAG, 7, 300)
    with pytest.raises(struct.error):  # a 256th cm_seen cannot be encoded
        HEADER.pack(TAG, 256, 0)


def test_a_fragment_acknowledges_at_most_255_credit_messages_the_rest_rides_later():
    job = connected(check_invariants=False)  # 300 outstanding is beyond any rd_rsv
    job.ep(0, 1).cm_return[0] = 300
    job.ep(1, 0).cm_sent[0] = 300
    job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).cm_sent[0] == 45
    assert job.ep(0, 1).cm_return[0] == 45
    job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).cm_sent[0] == 0
    assert job.ep(0, 1).cm_return[0] == 0


# -- 2.4 / 2.5: pending lists -------------------------------------------------------------
def pending(lists) -> tuple[list[int], list[int]]:
    """Sequence numbers of the fragments on a (high, low) pair of pending lists."""
    return tuple(
        [int.from_bytes(bytes(f.buf[HDR_LEN : HDR_LEN + 4]), "little") for f in lst]
        for lst in lists
    )


def test_a_fragment_without_a_wqe_waits_and_the_wqe_is_checked_before_the_credit():
    job = connected()
    done = []
    for i in range(8):  # rank 0 does not poll: no WQE comes back
        job.send(0, 1, numbered(i))
    ep = job.ep(0, 1)
    assert ep.sd_wqe[0] == 0 and ep.sd_credits[0] == 0
    job.send(0, 1, numbered(8), on_complete=lambda: done.append(8))
    job.send(0, 1, numbered(9), high=True, on_complete=lambda: done.append(9))
    # both WQE and credit are missing: the WQE check comes first
    assert pending(ep.no_wqe_pending[0]) == ([9], [8])
    assert pending(ep.no_credits_pending[0]) == ([], [])
    job.sim.run()
    job.btls[0].progress()  # completions return the WQEs; still no credits
    assert pending(ep.no_wqe_pending[0]) == ([], [])
    assert pending(ep.no_credits_pending[0]) == ([9], [8])
    assert ep.sd_wqe[0] == 8 and done == []
    job.settle()  # rank 1 re-posts and returns credits: high priority first
    assert numbers(job.payloads(1)) == [0, 1, 2, 3, 4, 5, 6, 7, 9, 8]
    assert done == [9, 8]  # completion callbacks fire when the fragment is finally sent
    job.check_all()


def test_credit_pending_list_drains_high_priority_first_keeping_order_per_priority():
    job = connected()
    for i in range(8):
        job.send(0, 1, numbered(i))
    job.settle(ranks=[0])  # WQEs back, credits not: rank 1 has not polled
    ep = job.ep(0, 1)
    for i in range(8, 14):
        job.send(0, 1, numbered(i), high=i % 2 == 1)
    assert pending(ep.no_credits_pending[0]) == ([9, 11, 13], [8, 10, 12])
    job.settle()
    assert numbers(job.payloads(1)) == [*range(8), 9, 11, 13, 8, 10, 12]
    job.check_all()


def test_a_qp_out_of_credits_does_not_hold_back_another_qp():
    job = connected()
    for i in range(9):
        job.send(0, 1, numbered(i))
    job.settle(ranks=[0])
    job.send(0, 1, LARGE)
    job.settle(ranks=[0])
    ep = job.ep(0, 1)
    assert pending(ep.no_credits_pending[0]) == ([], [8])  # QP 0's 9th waits...
    assert ep.data_sent == [8, 1] and ep.sd_credits[1] == 7  # ...QP 1's went out
    job.settle()
    assert job.payloads(1)[8] == LARGE  # and arrived before QP 0's 9th fragment


def test_a_long_burst_through_the_pending_lists_arrives_once_in_order():
    job = connected()
    for i in range(100):
        job.send(0, 1, numbered(i, 16 if i % 3 else 1000))
    job.settle()
    got = job.payloads(1)
    assert numbers(p for p in got if len(p) == 16) == [i for i in range(100) if i % 3]
    assert numbers(p for p in got if len(p) == 1000) == [i for i in range(100) if not i % 3]
    job.check_all()


# -- the seed's change: a credit for QP X is accepted on any QP ---------------------------
def test_mixed_policies_each_rank_sends_credits_where_its_own_policy_says():
    job = Job(policies=["own", "smallest"])
    job.connect(0, 1)
    for _ in range(16):
        job.send(0, 1, LARGE)
        job.settle()
    for _ in range(16):
        job.send(1, 0, LARGE)
        job.settle()
    # rank 1 (smallest) returns QP 1's credits on QP 0, rank 0 (own) on QP 1 itself
    assert {(m["qp"], m["on_qp"]) for m in job.events("credit_msg", "rank1->0")} == {(1, 0)}
    assert {(m["qp"], m["on_qp"]) for m in job.events("credit_msg", "rank0->1")} == {(1, 1)}
    # and each side credited QP 1, whatever QP the message came on
    assert {e["qp"] for e in job.events("credits_in")} == {1}
    assert job.ep(0, 1).sd_credits[1] == job.ep(1, 0).sd_credits[1] == 8
    job.check_all()


@pytest.mark.parametrize("mine", ["own", "smallest"])
@pytest.mark.parametrize("peers", ["own", "smallest"])
def test_credit_message_reserve_is_posted_where_the_peer_will_send(mine, peers):
    job = Job(policies=[mine, peers])
    job.connect(0, 1)
    rq = [len(qp.hw.rq) for qp in job.ep(0, 1).qps]  # the CTS buffer is consumed
    if peers == "own":
        assert rq == [8 + 4, 8 + 4]
    else:
        assert rq == [8 + 4 + 4, 8]


def test_mixed_policies_survive_windowed_traffic_both_ways_on_every_qp():
    job = Job(device="mellanox-hermon", policies=["own", "smallest"])
    n = 300

    def body(job, btl):
        peer = 1 - btl.rank
        done = []
        sent = 0
        while len(done) < n or len(job.received[btl.rank]) < n:
            while sent < n and sent - len(done) < 12:
                job.send(btl.rank, peer, numbered(sent, 16 if sent % 3 else 1000),
                         on_complete=lambda: done.append(1))  # fmt: skip
                sent += 1
            if btl.progress() == 0:
                btl.wait_for_activity()

    run_ranks(job, body)
    for rank in (0, 1):
        got = job.payloads(rank)
        assert numbers(p for p in got if len(p) == 16) == [i for i in range(n) if i % 3]
        assert numbers(p for p in got if len(p) == 1000) == [i for i in range(n) if not i % 3]
    assert job.btls[0].credit_msgs_on[1] > 0 or job.ep(0, 1).piggybacked[1] > 0
    job.check_all()
