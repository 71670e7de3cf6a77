"""One sizing of the QPs a receive_queues value needs: the BTL creates its QPs with
config's ``qp_depths``, and the up-front device check (``queue_depths``) takes the largest
of them over both credit policies, so a job it accepts never fails ``ibv_create_qp``."""

import pytest

from pyopenib.apps.scenarios import run_scenario
from pyopenib.config import parse_receive_queues
from pyopenib.config.limits import POLICIES, qp_depths, queue_depths


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize(
    "spec", ["P,128,16,12,8,4:P,65536,16,12,8,8", "S,128,64,48,16:P,4096,16,12,8,4"]
)
def test_the_btl_sizes_its_qps_with_configs_depths(spec, policy):
    result = run_scenario(
        "bibw",
        device="connectx",
        credits_qp=policy,
        iterations=4,
        mca_pairs=[("btl_openib_receive_queues", spec)],
    )
    assert result.completed
    queues = parse_receive_queues(spec)
    widest = queue_depths(queues, result.modules[0].credits.credits_qp_index)
    for module in result.modules:
        for ep in module.endpoints.values():
            for q, qp in enumerate(ep.verbs_qps()):
                # both sides know the peer's policy before a QP exists (the modex)
                exact = qp_depths(
                    queues, module.credits.credits_qp_index, q, policy, ep.peer_policy
                )
                assert (max(qp.max_recv_wr, 1), qp.max_send_wr) == (max(exact[0], 1), exact[1])
                assert qp.max_recv_wr <= max(widest[q][0], 1) and qp.max_send_wr <= widest[q][1]


def test_queue_depths_is_the_largest_over_both_policies_of_both_peers():
    queues = parse_receive_queues("P,128,256,192,128:P,65536,256,192,128:S,131072,64")
    for q, (recv, send) in enumerate(queue_depths(queues, 0)):
        pairs = [qp_depths(queues, 0, q, a, b) for a in POLICIES for b in POLICIES]
        assert recv == max(r for r, _ in pairs) and send == max(s for _, s in pairs)
