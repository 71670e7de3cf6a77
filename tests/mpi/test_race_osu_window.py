"""The credit race under OSU-style bibw on the Chelsio T3's two per-peer queues: where
it is reachable and why (docs/FIDELITY.md, "Race reachability").

The bench's osu_bibw program, unmodified: each rank posts WINDOW receives, then WINDOW
sends, then waits for all of them. The T3's second queue holds 256 buffers (rd_low 192,
rd_win 128); one eager fragment per message travels on it.
"""

import io
from pathlib import Path

import pytest

from pyopenib.apps.run_command import openib_btls
from pyopenib.mpi import EXIT_TRANSPORT, run_job
from pyopenib.sim import Tracer, make_simulator

PROGRAM = Path(__file__).parents[2] / "src/pyopenib/bench/programs/osu_bibw.py"
T3_QUEUES = "P,128,256,192,128:P,65536,256,192,128"


def _bibw(size, window, policy, iterations=4, warmup=1):
    tracer = Tracer()
    mca = [("btl_openib_credits_qp", policy), ("btl_openib_receive_queues", T3_QUEUES)]
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
    (terminate,) = [e for e in events if e[2] == "terminate_sent"]
    facts = dict(terminate[4])
    # the SEND found no usable buffer while re-posted ones were still queued in the NIC
    assert facts["usable"] == 0 < facts["posted"]
    receiver = terminate[3].split("/")[0]  # node000 or node001
    rank = int(receiver[-1])
    # the credits of queue 1 left on QP 0 (smallest), overtaking the re-post queued
    # behind the receiver's own sends in the T3's single work queue
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
    assert credits_on_qp0
    reposts = [
        e
        for e in events
        if e[2] == "post_rr" and e[3] == f"rank{rank}->{1 - rank}" and dict(e[4])["qp"] == 1
    ]
    assert reposts and reposts[-1][0] <= credits_on_qp0[-1][0]


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
