"""The credit race under OSU-style bibw on the Chelsio T3's two per-peer queues: where
it is reachable and why (docs/FIDELITY.md, "Race reachability").

The bench's osu_bibw program, unmodified: each rank posts WINDOW receives, then WINDOW
sends, then waits for all of them. The T3's second queue holds 256 buffers (rd_low 192,
rd_win 128). With leave_pinned (the default) one fragment per message travels on it;
without, a message above min_rdma_pipeline_size sends its last MiB there by copy in/out
(17 FRAGs), so OSU's default window of 64 puts over a thousand fragments per window on
a queue of 256.
"""

import io
from pathlib import Path

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import EXIT_TRANSPORT, run_job
from pyopenib.sim import Tracer, make_simulator

PROGRAM = Path(__file__).parents[2] / "src/pyopenib/bench/programs/osu_bibw.py"
T3_QUEUES = "P,128,256,192,128:P,65536,256,192,128"


def _bibw(size, window, policy, iterations=4, warmup=1, leave_pinned="auto"):
    tracer = Tracer()
    mca = [
        ("btl_openib_credits_qp", policy),
        ("btl_openib_receive_queues", T3_QUEUES),
        ("mpi_leave_pinned", leave_pinned),
    ]
    out, err = io.StringIO(), io.StringIO()
    result = run_job(
        str(PROGRAM),
        2,
        openib_btls("chelsio-t3", mca, 1),
        [str(size), str(iterations), str(warmup), str(window)],
        sim=make_simulator(0, tracer=tracer),
        stdout=out,
        stderr=err,
    )
    return result, err.getvalue(), tracer.events  # events: (t_ps, layer, kind, actor, fields)


def test_a_window_beyond_the_queue_depth_races_under_smallest_with_the_seeds_mechanism():
    result, err, events = _bibw(1024, 320, "smallest")
    assert result.exit_code == EXIT_TRANSPORT and "TERMINATE" in err
    facts, credits_on_qp0, reposts = _seeds_mechanism(events)
    # the SEND found no usable buffer while re-posted ones were still queued in the NIC
    assert facts["usable"] == 0 < facts["posted"]
    # the credits of queue 1 left on QP 0 (smallest), overtaking the re-post queued
    # behind the receiver's own sends in the T3's single work queue
    assert credits_on_qp0 and reposts and reposts[-1][0] <= credits_on_qp0[-1][0]


def test_the_same_window_passes_under_own():
    result, err, _ = _bibw(1024, 320, "own")
    assert result.exit_code == 0, err


@pytest.mark.parametrize("size", [1024, 8192])
def test_at_osus_default_window_queue_1s_credits_never_travel_on_qp0(size):
    """Window 64 < rd_win: a window's 64 re-posted credits always leave piggybacked on
    the receiver's next queue-1 fragment, behind the re-post in the same FIFO; no
    credit message carries them, so nothing can overtake (any timing, any host)."""
    result, err, events = _bibw(size, 64, "smallest", iterations=6)
    assert result.exit_code == 0, err
    assert not [
        e
        for e in events
        if e[2] == "credit_msg" and dict(e[4])["qp"] == 1 and dict(e[4])["credits"] > 0
    ]
    assert [e for e in events if e[2] == "credits_in" and not dict(e[4])["explicit"]]


def _seeds_mechanism(events):
    """The TERMINATE's receiver, and the facts of the seed's race before it: queue 1's
    credits left on QP 0 after the receiver re-posted queue 1's buffers."""
    (terminate,) = [e for e in events if e[2] == "terminate_sent"]
    facts = dict(terminate[4])
    rank = int(terminate[3].split("/")[0][-1])
    credits_on_qp0 = [
        e
        for e in events
        if e[2] == "credit_msg"
        and e[3] == f"rank{rank}->{1 - rank}"
        and dict(e[4])["qp"] == 1
        and dict(e[4])["on_qp"] == 0
        and dict(e[4])["credits"] > 0
        and e[0] < terminate[0]
    ]
    reposts = [
        e
        for e in events
        if e[2] == "post_rr"
        and e[3] == f"rank{rank}->{1 - rank}"
        and dict(e[4])["qp"] == 1
        and e[0] < terminate[0]
    ]
    return facts, credits_on_qp0, reposts


def test_at_osus_default_window_copy_in_out_without_leave_pinned_races_under_smallest():
    """Issue 14's "done means": window 64, leave_pinned off, a message just above
    min_rdma_pipeline_size (12288 + 1 MiB): 64 x 17 FRAGs per window on queue 1. The
    receiver owes rd_win credits with none of its own fragments admitted to carry them,
    the credit message leaves on QP 0 and overtakes the re-posts queued behind the
    receiver's RDMA writes and sends on QP 1 (the T3's one work queue per QP): the
    peer's FRAG finds no usable buffer."""
    result, err, events = _bibw(1060865, 64, "smallest", iterations=1, leave_pinned="0")
    assert result.exit_code == EXIT_TRANSPORT and "TERMINATE" in err
    facts, credits_on_qp0, reposts = _seeds_mechanism(events)
    assert facts["usable"] == 0 < facts["posted"]
    assert credits_on_qp0 and reposts and reposts[-1][0] <= credits_on_qp0[-1][0]


def test_the_same_point_passes_under_own_and_with_leave_pinned():
    for policy, leave_pinned in (("own", "0"), ("smallest", "auto")):
        result, err, _ = _bibw(1060865, 64, policy, iterations=1, leave_pinned=leave_pinned)
        assert result.exit_code == 0, (policy, leave_pinned, err)
