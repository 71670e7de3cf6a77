"""receive_queues that can deadlock the credit protocol (issue 10, item 7): refused up
front with the rule they break; with the check switched off they really stop a one-way
stream, and the hang is explained in protocol terms; queues the check accepts complete."""

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyopenib.apps.scenarios import run_scenario
from pyopenib.btl import stall_report
from pyopenib.config import load_mca, parse_receive_queues
from pyopenib.config import receive_queues as rq
from pyopenib.errors import PyopenibError


def _refusal(spec: str) -> PyopenibError:
    ctx = load_mca(cli_pairs=[("btl_openib_receive_queues", spec)])
    with pytest.raises(PyopenibError) as info:
        parse_receive_queues(ctx.get("btl_openib_receive_queues"), "command line")
    return info.value


def test_the_two_specs_of_issue_10_are_refused_naming_rule_values_and_source():
    reserve = _refusal("P,128,8,6,4,1:P,65536,8,6,4,1")
    assert reserve.topic == "rq-credit-reserve"
    for words in ("rd_rsv - 1 = 0", "rd_rsv 1", "command line", "Open MPI 4.1 accepts"):
        assert words in str(reserve)
    window = _refusal("P,128,8,2,8,4:P,65536,8,2,8,4")
    assert window.topic == "rq-credit-window"
    for words in ("owed exactly 6", "rd_win 8", "rd_num 8 - rd_low 2", "at most 6"):
        assert words in str(window)


def test_a_window_above_rd_num_is_refused_and_the_default_reserve_always_passes():
    assert _refusal("P,128,8,6,16").topic == "rq-credit-window"  # only 8 are ever owed
    assert _refusal("P,128,64,48,32,1").topic == "rq-credit-reserve"
    (queue,) = parse_receive_queues("P,128,8,6,8")  # rd_rsv = (8 * 2) // 8 = 2
    assert queue.rd_rsv == 2


def _two_queues(n, low, win, rsv):
    return f"P,128,{n},{low},{win},{rsv}:P,65536,{n},{low},{win},{rsv}"


def _run(name, spec, policy, iterations):
    return run_scenario(
        name,
        device="chelsio-t3",
        credits_qp=policy,
        iterations=iterations,
        mca_pairs=[("btl_openib_receive_queues", spec), ("btl_openib_use_eager_rdma", "0")],
    )


@pytest.mark.parametrize("policy", ["smallest", "own"])
def test_with_the_check_off_a_refused_spec_hangs_and_the_report_names_the_rule(monkeypatch, policy):
    monkeypatch.setattr(rq, "_check_credit_progress", lambda *args, **kwargs: None)
    result = _run("stream", _two_queues(8, 2, 8, 4), policy, 40)
    assert result.hung and not result.completed
    report = "\n".join(stall_report(result.modules))
    assert "rank 0 -> rank 1 qp 0: " in report and "wait for a credit (sd_credits 0)" in report
    assert "rank 1 owes rank 0 6 credits on qp 0 < rd_win 8" in report
    result = _run("stream", _two_queues(8, 6, 4, 1), policy, 40)
    assert result.hung
    report = "\n".join(stall_report(result.modules))
    assert "cm cap rd_rsv-1 = 0, cm_sent 0" in report
    assert ">= rd_win 4, but no credit message can go" in report


_SPECS = st.integers(1, 8).flatmap(
    lambda n: st.tuples(st.just(n), st.integers(0, n - 1), st.integers(1, n + 2), st.integers(0, 5))
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SPECS, st.sampled_from(["smallest", "own"]))
def test_the_check_is_exact_for_small_per_peer_queues(fields, policy):
    """Accepted: a one-way stream and bibw complete (own: bibw has no race to lose).
    Refused: with the check off, the one-way stream stops."""
    spec = _two_queues(*fields)
    try:
        parse_receive_queues(spec)
    except PyopenibError as error:
        assert error.topic in ("rq-credit-window", "rq-credit-reserve", "rq-bad-window")
        if error.topic == "rq-bad-window":
            return
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(rq, "_check_credit_progress", lambda *args, **kwargs: None)
            assert _run("stream", spec, policy, 3 * fields[0] + 4).hung
        return
    assert _run("stream", spec, policy, 3 * fields[0] + 4).completed
    if policy == "own":
        assert _run("bibw", spec, policy, 24).completed
