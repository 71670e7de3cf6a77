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
from pyopenib.errors import InvariantViolation

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
                "sd_credits": 8,
                "rd_posted": 8,
                "rd_credits": 0,
                "cm_received": 0,
                "cm_return": 0,
                "cm_sent": 0,
                "sd_wqe": 8,
            }


def test_receive_buffers_are_reposted_only_when_rd_posted_falls_to_rd_low():
    job = connected()
    job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).qps[0].rd_posted == 7  # 7 > rd_low 6: nothing re-posted
    assert job.events("post_rr", "rank1->0")[-1]["posted"] == 8  # only the initial post
    job.send(0, 1, SMALL)
    job.settle()
    # 6 <= rd_low: re-post up to rd_num, and owe the peer exactly those 2 buffers
    assert job.events("post_rr", "rank1->0")[-1] == {"qp": 0, "posted": 2, "rd_credits": 2}
    assert job.ep(1, 0).qps[0].rd_posted == 8
    assert job.ep(1, 0).qps[0].rd_credits == 2


def test_repost_refills_to_rd_num_from_a_low_rd_low():
    job = connected(queues="P,128,8,2,6,4:P,4096,8,6,4,4")
    for _ in range(5):
        job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).qps[0].rd_posted == 3
    assert job.ep(1, 0).qps[0].rd_credits == 0
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
    assert sent + job.ep(1, 0).qps[0].rd_credits == 2 * len(posts)
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
    assert job.btls[1].traffic[on_qp].credit_msgs == 4
    assert job.btls[1].traffic[1 - on_qp].credit_msgs == 0
    assert job.ep(0, 1).qps[1].sd_credits == 8  # every credit came back
    got = job.events("credits_in", "rank0->1")
    assert got == [{"qp": 1, "credits": 4, "explicit": True}] * 4
    job.check_all()


def test_no_explicit_credit_message_below_rd_win():
    job = connected()
    for _ in range(3):  # one re-post: 2 owed < rd_win 4
        job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).qps[0].rd_credits == 2
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
        assert all(job.ep(rank, peer).qps[q].piggybacked > 0 for q in (0, 1))
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
    assert [s.piggybacked for s in job.ep(0, 1).qps] == [0, 0]
    assert [s.piggybacked for s in job.ep(1, 0).qps] == [0, 0]
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
    assert job.ep(1, 0).qps[0].cm_sent == 3
    deferred = job.events("credit_msg_deferred", "rank1->0")
    assert deferred and all(d == {"qp": 0, "cm_sent": 3} for d in deferred)
    assert job.ep(1, 0).qps[0].credit_lock is False  # gave up, to be retried later
    assert job.ep(1, 0).qps[0].rd_credits == 32 - 3 * 2  # the rest is still owed


def test_cm_seen_acknowledges_credit_messages_and_unblocks_the_deferred_credits():
    job = connected(queues=CAP_QUEUES)
    send_pairs_unpolled(job, 16)
    job.settle()  # rank 0 consumes the 3 credit messages and re-posts their buffers
    assert job.ep(0, 1).qps[0].cm_return == 3
    assert job.ep(0, 1).qps[0].cm_received == 0
    job.send(0, 1, SMALL)  # carries cm_seen = 3
    job.settle(ranks=[1])
    msgs = job.events("credit_msg", "rank1->0")
    assert job.ep(0, 1).qps[0].cm_return == 0
    # the held-back credits left as soon as cm_sent dropped, in one message
    assert len(msgs) == 4 and msgs[3]["credits"] == 32 - 3 * 2
    assert job.ep(1, 0).qps[0].cm_sent == 1
    job.settle()
    assert job.ep(0, 1).qps[0].sd_credits == 32 - 33 + 32  # 33 sent, 32 re-posted and returned
    assert job.ep(0, 1).qps[0].cm_return == 1  # the 4th message, to acknowledge later
    job.check_all()


# -- 2.3: cm_seen is one byte -------------------------------------------------------------
def test_take_cm_seen_reports_at_most_255_and_keeps_the_rest_in_cm_return():
    job = connected(check_invariants=False)
    ep = job.ep(0, 1)
    ep.qps[0].cm_return = 300
    assert ep.qps[0].take_cm_seen() == 255
    assert ep.qps[0].cm_return == 45
    assert ep.qps[0].take_cm_seen() == 45
    assert ep.qps[0].cm_return == 0
    assert ep.qps[0].take_cm_seen() == 0
    ep.qps[0].cm_return = 255
    assert ep.qps[0].take_cm_seen() == 255 and ep.qps[0].cm_return == 0


def test_header_is_tag_cm_seen_credits_in_four_bytes():
    assert HEADER.size == HDR_LEN == 4
    assert HEADER.pack(TAG_IB, 255, 0x7FFF) == bytes([0x20, 0xFF, 0xFF, 0x7F])
    assert HEADER.unpack(HEADER.pack(TAG, 7, 300)) == (TAG, 7, 300)
    with pytest.raises(struct.error):  # a 256th cm_seen cannot be encoded
        HEADER.pack(TAG, 256, 0)


def test_a_fragment_acknowledges_at_most_255_credit_messages_the_rest_rides_later():
    job = connected(check_invariants=False)  # 300 outstanding is beyond any rd_rsv
    job.ep(0, 1).qps[0].cm_return = 300
    job.ep(1, 0).qps[0].cm_sent = 300
    job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).qps[0].cm_sent == 45
    assert job.ep(0, 1).qps[0].cm_return == 45
    job.send(0, 1, SMALL)
    job.settle()
    assert job.ep(1, 0).qps[0].cm_sent == 0
    assert job.ep(0, 1).qps[0].cm_return == 0


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
    assert ep.qps[0].sd_wqe == 0 and ep.qps[0].sd_credits == 0
    job.send(0, 1, numbered(8), on_complete=lambda: done.append(8))
    job.send(0, 1, numbered(9), high=True, on_complete=lambda: done.append(9))
    # both WQE and credit are missing: the WQE check comes first
    assert pending(ep.qps[0].no_wqe_pending) == ([9], [8])
    assert pending(ep.qps[0].no_credits_pending) == ([], [])
    job.sim.run()
    job.btls[0].progress()  # completions return the WQEs; still no credits
    assert pending(ep.qps[0].no_wqe_pending) == ([], [])
    assert pending(ep.qps[0].no_credits_pending) == ([9], [8])
    assert ep.qps[0].sd_wqe == 8 and done == []
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
    assert pending(ep.qps[0].no_credits_pending) == ([9, 11, 13], [8, 10, 12])
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
    assert pending(ep.qps[0].no_credits_pending) == ([], [8])  # QP 0's 9th waits...
    assert [s.data_sent for s in ep.qps] == [8, 1] and ep.qps[
        1
    ].sd_credits == 7  # ...QP 1's went out
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
    assert job.ep(0, 1).qps[1].sd_credits == job.ep(1, 0).qps[1].sd_credits == 8
    job.check_all()


@pytest.mark.parametrize("mine", ["own", "smallest"])
@pytest.mark.parametrize("peers", ["own", "smallest"])
def test_credit_message_reserve_is_posted_where_the_peer_will_send(mine, peers):
    job = Job(policies=[mine, peers])
    job.connect(0, 1)
    rq = [len(qp.hw.rq) for qp in job.ep(0, 1).verbs_qps()]  # the CTS buffer is consumed
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
                job.send(
                    btl.rank,
                    peer,
                    numbered(sent, 16 if sent % 3 else 1000),
                    on_complete=lambda: done.append(1),
                )
                sent += 1
            if btl.progress() == 0:
                btl.wait_for_activity()

    run_ranks(job, body)
    for rank in (0, 1):
        got = job.payloads(rank)
        assert numbers(p for p in got if len(p) == 16) == [i for i in range(n) if i % 3]
        assert numbers(p for p in got if len(p) == 1000) == [i for i in range(n) if not i % 3]
    assert job.btls[0].traffic[1].credit_msgs > 0 or job.ep(0, 1).qps[1].piggybacked > 0
    job.check_all()


# -- 3: SRQ queues ------------------------------------------------------------------------
SRQ_QUEUES = "P,128,8,6,4,4:S,4096,16,8,4"  # sd_max 4 sends in flight, re-post at 8 of 16
NO_RESIZE = [("btl_openib_enable_srq_resize", "0")]


def srq_job(nprocs=2, queues=SRQ_QUEUES, mca=NO_RESIZE, **kw) -> Job:
    job = Job(device="mellanox-hermon", queues=queues, nprocs=nprocs, mca=mca, **kw)
    for peer in range(1, nprocs):
        job.connect(0, peer)
    return job


def test_srq_send_credits_are_module_wide_and_shared_by_all_peers():
    job = srq_job(nprocs=3)
    a = job.btls[0]
    for peer in (1, 1, 2, 2):  # nobody polls: sd_max = 4 sends in flight in total
        job.send(0, peer, LARGE)
    assert a.srqs[1].sd_credits == 0
    assert job.ep(0, 2).qps[1].sd_wqe == 2  # the peer's own WQEs are not the limit
    job.send(0, 2, numbered(4, 1000))
    assert pending(a.srqs[1].pending) == ([], [4])
    assert job.ep(0, 2).qps[1].sd_wqe == 2  # WQE given back when the credit was missing
    assert not hasattr(job.ep(0, 2).qps[1], "sd_credits")  # no per-peer credits on an S queue
    job.settle()
    assert a.srqs[1].sd_credits == 4  # every send completion returned its credit
    assert len(job.payloads(2)) == 3 and numbers(job.payloads(2))[-1] == 4
    assert job.events("credit_msg") == []  # SRQ traffic returns no credits


def test_srq_pending_lists_drain_high_priority_first():
    job = srq_job(nprocs=3)
    job.send(0, 1, LARGE)
    job.send(0, 1, LARGE)
    for i in range(5):  # peer 2 still has WQEs; the module-wide credits run out
        job.send(0, 2, numbered(i, 1000), high=i == 4)
    assert pending(job.btls[0].srqs[1].pending) == ([4], [2, 3])
    job.settle()
    assert numbers(job.payloads(2)) == [0, 1, 4, 2, 3]


def test_srq_sends_to_one_peer_are_limited_by_its_sd_max_wqes_first():
    job = srq_job()
    for i in range(6):
        job.send(0, 1, numbered(i, 1000))
    assert pending(job.ep(0, 1).qps[1].no_wqe_pending) == ([], [4, 5])
    job.settle()
    assert numbers(job.payloads(1)) == list(range(6))


def test_srq_is_reposted_up_to_rd_num_only_when_rd_posted_falls_to_rd_low():
    job = srq_job()
    b = job.btls[1]
    assert b.srqs[1].rd_posted == len(b.srqs[1].srq) == 16
    for _ in range(7):
        job.send(0, 1, LARGE)
        job.settle()
    assert b.srqs[1].rd_posted == len(b.srqs[1].srq) == 9  # 9 > rd_low 8
    job.send(0, 1, LARGE)
    job.settle()
    assert b.srqs[1].rd_posted == len(b.srqs[1].srq) == 16


def test_srq_limit_event_doubles_the_posted_buffers_until_rd_num():
    if not hasattr(
        job_settings := Job(device="mellanox-hermon", queues=SRQ_QUEUES).btls[0].settings,
        "enable_srq_resize",
    ):
        pytest.skip("OpenibModule has no SRQ resizing yet")
    assert job_settings.enable_srq_resize  # Open MPI's default
    # rd_num 32, rd_low 24, rd_init 4, srq_limit 2: start with 4 buffers, low mark 3
    job = srq_job(queues="P,128,8,6,4,4:S,4096,32,24,4,4,2", mca=())
    b = job.btls[1]
    assert len(b.srqs[1].srq) == 4
    for _ in range(3):  # rank 1 does not poll: the hardware drains the SRQ to 1 < 2
        job.send(0, 1, LARGE)
    job.settle(ranks=[0])
    assert job.events("srq_resize", keys=("qp", "rd_curr_num")) == [{"qp": 1, "rd_curr_num": 8}]
    assert len(b.srqs[1].srq) == 1 + 4  # topped up to the new rd_curr_num at once
    # keep rank 1 from polling: each time the hardware drains the SRQ below the limit
    # the event doubles rd_curr_num and the SRQ is topped up at once (3 + 4 + 8 + 16)
    for _ in range(4 + 8 + 16):
        job.send(0, 1, LARGE)
    job.settle(ranks=[0])
    sizes = [e["rd_curr_num"] for e in job.events("srq_resize")]
    assert sizes == [8, 16, 32]  # doubling, clamped at rd_num, then no more events
    assert b.srqs[1].rd_curr_num == 32 and b.srqs[1].rd_low_local == 24
    job.settle()
    assert len(job.payloads(1)) == 31
    assert 24 < b.srqs[1].rd_posted == len(b.srqs[1].srq) <= 32  # now the rd_low rule applies


# -- 2.9: QP attributes and sizes ---------------------------------------------------------
@pytest.mark.parametrize("rnr_retry", ["7", "5"])
def test_pp_qps_never_retry_rnr_and_srq_qps_use_btl_openib_ib_rnr_retry(rnr_retry):
    job = srq_job(mca=[*NO_RESIZE, ("btl_openib_ib_rnr_retry", rnr_retry)])
    for rank, peer in ((0, 1), (1, 0)):
        p_qp, s_qp = job.ep(rank, peer).verbs_qps()
        assert p_qp.hw.rnr_retry == 0
        assert s_qp.hw.rnr_retry == int(rnr_retry)


def test_pp_qps_on_iwarp_also_never_retry_rnr():
    job = connected()
    assert [qp.hw.rnr_retry for qp in job.ep(0, 1).verbs_qps()] == [0, 0]


RD_NUM, RSV, N_PP, CTS = 8, 4, 2, 1


@pytest.mark.parametrize(
    "policy, responder_recv, responder_send",
    [
        # smallest: QP 0 holds every queue's credit-message reserve (+ the CTS buffer) and
        # sends every queue's credit messages; QP 1 only its data
        ("smallest", [RD_NUM + N_PP * RSV + CTS, RD_NUM], [RD_NUM + N_PP, RD_NUM]),
        # own: each QP holds its own reserve and sends its own credit messages (at most
        # one in flight per queue)
        ("own", [RD_NUM + RSV + CTS, RD_NUM + RSV], [RD_NUM + 1, RD_NUM + 1]),
    ],
)
def test_qp_sizes_follow_reference_2_9_for_each_policy(policy, responder_recv, responder_send):
    job = connected(policy=policy)
    responder = job.ep(1, 0).verbs_qps()
    assert [qp.max_recv_wr for qp in responder] == responder_recv
    # the CTS is posted outside the WQE accounting on credits_qp: one more send slot
    assert responder[0].max_send_wr == responder_send[0] + CTS
    # on the other QPs pyopenib keeps one spare slot beyond Open MPI's formula
    assert responder_send[1] <= responder[1].max_send_wr <= responder_send[1] + 1
    # the initiator knows the peer's policy before it creates a QP (the modex): the
    # same sizes, not room for either policy
    initiator = job.ep(0, 1).verbs_qps()
    assert [qp.max_recv_wr for qp in initiator] == responder_recv
    assert [qp.max_send_wr for qp in initiator] == [qp.max_send_wr for qp in responder]


def test_posted_receives_never_exceed_the_qp_sizes_under_load():
    for policies in (["own", "smallest"], ["smallest", "own"]):
        job = Job(policies=policies)
        job.connect(0, 1)
        for i in range(60):
            job.send(0, 1, numbered(i, 16 if i % 2 else 1000))
            if i % 3 == 0:
                job.send(1, 0, SMALL)
            if i % 5 == 0:
                job.settle()
            for rank, peer in ((0, 1), (1, 0)):
                for q, qp in enumerate(job.ep(rank, peer).verbs_qps()):
                    assert len(qp.hw.rq) <= qp.max_recv_wr
                    assert job.ep(rank, peer).qps[q].rd_posted <= RD_NUM
        job.settle()
        job.check_all()


# -- the invariant checks can fail --------------------------------------------------------
@pytest.mark.parametrize(
    "field, q, value, message",
    [
        ("sd_credits", 0, -1, "sd_credits -1 < 0"),
        ("rd_posted", 1, 9, "rd_posted 9 outside 0..8"),
        ("rd_posted", 0, -1, "rd_posted -1 outside 0..8"),
        ("cm_sent", 0, 5, "cm_sent 5 outside 0..4"),
        ("cm_sent", 1, -1, "cm_sent -1 outside 0..4"),
        ("sd_wqe", 1, -1, "sd_wqe -1 < 0"),
    ],
)
def test_assert_invariants_rejects_a_corrupted_endpoint(field, q, value, message):
    job = connected()
    job.btls[0].assert_invariants()
    setattr(job.ep(0, 1).qps[q], field, value)
    with pytest.raises(InvariantViolation, match=f"rank 0 peer 1 qp {q}: .*{message}") as e:
        job.btls[0].assert_invariants()
    # the facts are fields: a checker reads them, never the message
    assert (e.value.rule, e.value.rank, e.value.peer, e.value.qp) == (field, 0, 1, q)


def test_a_broken_srq_credit_count_names_the_module_not_a_peer():
    job = srq_job(mca=NO_RESIZE)
    job.btls[0].srqs[1].sd_credits += 1  # one credit more than sd_max exists
    with pytest.raises(InvariantViolation, match="rank 0 qp 1: SRQ credits") as e:
        job.btls[0].assert_invariants()
    assert (e.value.rule, e.value.peer, e.value.qp) == ("srq_credits", -1, 1)


def test_a_python_assertion_elsewhere_is_not_reported_as_an_invariant():
    """Invariant failures are their own type: an ``AssertionError`` is a bug to show."""
    assert not issubclass(InvariantViolation, AssertionError)


def test_every_progress_call_checks_the_invariants_when_asked_to():
    job = connected()
    job.ep(1, 0).qps[0].sd_credits = -1
    job.send(0, 1, SMALL)
    job.sim.run()
    with pytest.raises(InvariantViolation, match="rank 1 peer 0 qp 0: sd_credits -1 < 0"):
        job.btls[1].progress()


@pytest.mark.parametrize(
    "corrupt",
    [
        lambda ep01, ep10: setattr(ep01.qps[0], "sd_credits", ep01.qps[0].sd_credits - 1),  # lost
        lambda ep01, ep10: setattr(
            ep10.qps[1], "rd_credits", ep10.qps[1].rd_credits + 1
        ),  # invented
        lambda ep01, ep10: setattr(ep10.qps[0], "rd_posted", ep10.qps[0].rd_posted - 1),  # leaked
        lambda ep01, ep10: setattr(
            ep01.qps[1], "credits_received", ep01.qps[1].credits_received + 4
        ),
    ],
)
def test_assert_conservation_rejects_a_leaked_or_invented_credit(corrupt):
    job = connected()
    for _ in range(5):
        job.send(0, 1, SMALL)
        job.send(0, 1, LARGE)
    job.settle()
    job.check_all()
    corrupt(job.ep(0, 1), job.ep(1, 0))
    with pytest.raises(InvariantViolation, match="not conserved"):
        job.btls[0].assert_conservation(job.btls[1])


# -- put/get take a send WQE like everything else on the QP -------------------------------
def test_put_without_a_free_wqe_waits_for_one_instead_of_overflowing_the_send_queue():
    import numpy as np

    job = connected()
    a, b = job.btls
    src = a.register_memory(np.full(4096, 7, dtype=np.uint8))
    dst = b.register_memory(np.zeros(4096, dtype=np.uint8))
    for _ in range(8):  # every WQE of QP 1 in use
        job.send(0, 1, LARGE)
    done = []
    for i in range(4):
        a.put(1, src, 64 * i, dst.key, 64 * i, 64, lambda i=i: done.append(i))
    job.settle()
    assert done == [0, 1, 2, 3]
    assert (dst.buffer[:256] == 7).all()
    job.check_all()
