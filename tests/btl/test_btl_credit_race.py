"""The seed's race and its fix, end to end on the BTL: Chelsio T3 (shared SQ/RQ work
queue) terminates the connection when the credits of QP 1 travel on QP 0; with the
credits of each QP on that QP the same workload completes. Invariants are checked on
every run (check_invariants=True is the scenarios' default)."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyopenib.apps.scenarios import run_scenario
from pyopenib.errors import InvariantViolation


def test_bibw_on_chelsio_t3_with_smallest_policy_is_terminated_on_the_large_qp():
    r = run_scenario("bibw", device="chelsio-t3", credits_qp="smallest", trace=True)
    assert not r.completed
    assert r.failure.status == "QP_FATAL" and r.failure.qp_index == 1
    assert "no usable receive buffer" in r.failure.report
    # what the hardware said is a field of its own, and the report shows the same words
    assert "no usable receive buffer" in r.failure.detail
    assert f"Detail:            {r.failure.detail}" in r.failure.report
    kinds = [e[2] for e in r.tracer.events]
    # the credits that let the peer send came over QP 0 before the TERMINATE
    credit = max(
        i
        for i, e in enumerate(r.tracer.events[: kinds.index("terminate_sent")])
        if e[2] == "credit_msg" and dict(e[4])["qp"] == 1
    )
    assert dict(r.tracer.events[credit][4])["on_qp"] == 0


@pytest.mark.parametrize("policy", ["own", "auto"])
def test_bibw_on_chelsio_t3_with_own_policy_completes(policy):
    r = run_scenario("bibw", device="chelsio-t3", credits_qp=policy)
    assert r.completed, r.failure and r.failure.report
    assert r.credit_msgs_per_qp[1] > 0  # QP 1's credits really travelled on QP 1
    assert r.delivered == 4000


@pytest.mark.parametrize("policy", ["smallest", "own"])
def test_bibw_on_connectx_completes_with_either_policy(policy):
    r = run_scenario("bibw", device="connectx", credits_qp=policy)
    assert r.completed


def test_same_seed_same_trace():
    a = run_scenario(
        "bibw",
        device="chelsio-t3",
        credits_qp="own",
        trace=True,
        randomize=True,
        seed=5,
        iterations=300,
    )
    b = run_scenario(
        "bibw",
        device="chelsio-t3",
        credits_qp="own",
        trace=True,
        randomize=True,
        seed=5,
        iterations=300,
    )
    assert a.tracer.digest() == b.tracer.digest()


def test_mixed_cluster_each_process_applies_its_own_policy():
    r = run_scenario(
        "bibw",
        device="chelsio-t3",
        credits_qp=None,
        mca_pairs=[("btl_openib_device_type", "all")],
        iterations=600,
    )
    assert r.completed


@pytest.mark.parametrize("name", ["pingpong", "stream", "incast"])
def test_other_scenarios_complete_on_t3_with_own(name):
    r = run_scenario(name, device="chelsio-t3", credits_qp="own", iterations=400)
    assert r.completed, r.failure and r.failure.report


QUEUES = [
    "P,128,256,192,128:P,65536,256,192,128",
    "P,128,32,24,16:P,4096,16,12:P,65536,16,12,8",
    "P,256,64:P,65536,64",
    "P,128,32,24,16,8:P,65536,32,24,16,8",  # rd_rsv 8: re-posted in batches of 2
]


@settings(max_examples=12, deadline=None)
@given(
    name=st.sampled_from(["stream", "bibw", "incast"]),
    device=st.sampled_from(["chelsio-t3", "chelsio-t4", "connectx", "ibm-ehca"]),
    queues=st.sampled_from(QUEUES),
    iterations=st.integers(20, 300),
    seed=st.integers(0, 1000),
)
def test_own_policy_never_breaks_an_invariant(name, device, queues, iterations, seed):
    r = run_scenario(
        name,
        device=device,
        credits_qp="own",
        iterations=iterations,
        seed=seed,
        randomize=True,
        mca_pairs=[("btl_openib_receive_queues", queues)],
    )
    assert r.completed, r.failure and r.failure.report


def test_the_same_generated_workloads_find_the_race_with_smallest_on_t3():
    """hypothesis.find searches the same space for a run that breaks with `smallest`."""
    from hypothesis import Phase, find

    def breaks(w):
        r = run_scenario(
            "bibw",
            device="chelsio-t3",
            credits_qp="smallest",
            iterations=w[0],
            seed=w[1],
            randomize=True,
        )
        return r.failure is not None and r.failure.status == "QP_FATAL"

    example = find(
        st.tuples(st.integers(300, 2000), st.integers(0, 1000)),
        breaks,
        settings=settings(max_examples=30, deadline=None, database=None, phases=[Phase.generate]),
    )
    assert breaks(example)


def test_conservation_check_notices_a_credit_message_without_a_reserved_buffer():
    r = run_scenario("stream", device="chelsio-t3", credits_qp="own", iterations=50)
    a, b = r.modules
    a.endpoints[1].qps[1].cm_msgs_sent += 5  # five credit messages B has no buffer for
    with pytest.raises(InvariantViolation, match="reserved buffers"):
        a.assert_conservation(b)
