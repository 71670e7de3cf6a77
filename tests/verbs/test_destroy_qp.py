"""ibv_destroy_qp: the NIC forgets the QP and the QP takes no more verbs; the openib BTL
destroys the QPs of a connection request that lost a crossing, so none is left behind."""

import errno

import pytest
from verbs_testbed import Pair

from pyopenib.apps.scenarios import run_scenario
from pyopenib.verbs import QpState, RecvWR, SendWR, VerbsError, WrOpcode


def test_a_destroyed_qp_is_forgotten_by_the_nic_and_refuses_every_verb():
    pair = Pair()
    qp = pair.qp[1]
    nic = pair.ctx[1].nic
    assert nic.qp(qp.qp_num) is qp.hw
    qp.modify(QpState.ERROR)
    qp.destroy()
    assert nic.qp(qp.qp_num) is None
    for call in (
        lambda: qp.post_recv(RecvWR(1, pair.sge(1, 0, 64))),
        lambda: qp.post_send(SendWR(2, WrOpcode.SEND, pair.sge(1, 0, 64), 0)),
        lambda: qp.modify(QpState.RESET),
        qp.destroy,
    ):
        with pytest.raises(VerbsError) as info:
            call()
        assert info.value.errno == errno.EINVAL and "destroyed QP" in str(info.value)


@pytest.mark.parametrize("device", ["chelsio-t3", "connectx"])
def test_crossing_connection_requests_leave_only_the_live_qps_on_each_nic(device):
    """bibw: both ranks send first, so both requests cross and rank 0 retires its QPs
    (one of them holding the CTS buffer until its flush is reaped)."""
    result = run_scenario("bibw", device=device, credits_qp="own", iterations=8)
    assert result.completed
    for module in result.modules:
        live = {qp.qp_num for ep in module.endpoints.values() for qp in ep.verbs_qps()}
        assert {qp.qpn for qp in module.context.nic.live_qps()} == live
        assert not module.connections.retired
