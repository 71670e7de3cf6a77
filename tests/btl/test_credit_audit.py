"""The per-event conservation check through ``CreditAudit`` (``btl/credit_audit.py``):
it skips the events that wrote no credit state, and still reports a broken conservation
at the same event, by the same pair, with the same message as checking every pair after
every event; plain runs never build its audited objects."""

import pytest

from pyopenib.apps.scenarios import run_scenario
from pyopenib.btl import build_job_btls, cluster
from pyopenib.btl.credit_audit import AuditedEndpoint, AuditedPerPeerQp, CreditAudit
from pyopenib.btl.endpoint import Endpoint, PerPeerQp
from pyopenib.config import load_mca
from pyopenib.errors import InvariantViolation
from pyopenib.sim import Simulator, Tracer

QUEUES = [("btl_openib_receive_queues", "P,128,8,6,4,4:P,65536,8,6,4,4")]


class EveryPairEveryEvent(CreditAudit):
    """The check as it was before the audit: every pair after every event."""

    __slots__ = ()
    changed = property(lambda self: True, lambda self, value: None)


def _on_call(k: int, method, corrupt):
    """``method`` that does ``corrupt(method, self, *args)`` instead on its ``k``-th call."""
    calls = [0]

    def patched(self, *args):
        calls[0] += 1
        if calls[0] == k:
            return corrupt(method, self, *args)
        return method(self, *args)

    return patched


def _invent_a_credit(method, self, n):  # the peer returned n, sd_credits counts n + 1
    method(self, n)
    self.sd_credits += 1


def _leak_a_buffer(method, self, n):  # n buffers posted, n - 1 owed back: a credit lost
    method(self, n)
    self.rd_credits -= 1


def _born_short(method, self, index, spec):  # a send credit missing from the start: the
    method(self, index, spec)  # check fails once both ends are connected
    self.sd_credits -= 1


LEAKS = {
    "credit invented on arrival": ("credits_arrived", 10, _invent_a_credit),
    "buffer re-posted without its credit": ("reposted", 20, _leak_a_buffer),
    "credit missing before the connection is up": ("__init__", 1, _born_short),
}
ORIGINAL = {name: getattr(PerPeerQp, name) for name, _, _ in LEAKS.values()}


def _violation(monkeypatch, scenario: str, leak: str, audit_class) -> tuple:
    name, k, corrupt = LEAKS[leak]
    monkeypatch.setattr(PerPeerQp, name, _on_call(k, ORIGINAL[name], corrupt))
    monkeypatch.setattr(cluster, "CreditAudit", audit_class)
    tracer = Tracer(layers=frozenset())  # records nothing; keeps the simulator
    with pytest.raises(InvariantViolation) as caught:
        run_scenario(
            scenario,
            device="chelsio-t3",
            credits_qp="own",
            iterations=40,
            mca_pairs=QUEUES,
            conservation_every=1,
            trace=tracer,
        )
    return str(caught.value), tracer.sim.now, tracer.sim.events_run


@pytest.mark.parametrize("leak", sorted(LEAKS))
@pytest.mark.parametrize("scenario", ["bibw", "incast"])
def test_a_broken_conservation_is_reported_at_the_event_and_with_the_message_of_before(
    monkeypatch, scenario, leak
):
    audited = _violation(monkeypatch, scenario, leak, CreditAudit)
    every = _violation(monkeypatch, scenario, leak, EveryPairEveryEvent)
    assert audited == every
    assert "not conserved" in audited[0]


def test_the_audit_checks_only_after_events_that_wrote_credit_state(monkeypatch):
    checked = []
    check = CreditAudit.check

    def counting(self):
        checked.append(self.changed)
        check(self)

    monkeypatch.setattr(CreditAudit, "check", counting)
    r = run_scenario(
        "bibw",
        device="chelsio-t3",
        credits_qp="own",
        iterations=40,
        mca_pairs=QUEUES,
        conservation_every=1,
    )
    assert r.completed
    assert checked and all(checked)  # called only when something changed
    assert len(checked) < r.modules[0].sim.events_run / 4


def test_plain_jobs_build_plain_endpoints_and_audited_jobs_audited_ones():
    def endpoint(audit_credits):
        sim = Simulator()
        btls = build_job_btls(sim, 2, "chelsio-t3", load_mca(), audit_credits=audit_credits)
        return btls.credit_audit, btls[0].endpoint(1)

    audit, ep = endpoint(False)
    assert audit is None and type(ep) is Endpoint and type(ep.qps[0]) is PerPeerQp
    audit, ep = endpoint(True)
    assert type(ep) is AuditedEndpoint and type(ep.qps[0]) is AuditedPerPeerQp
    audit.changed = False
    ep.qps[1].sd_credits -= 1
    assert audit.changed
    audit.changed = False
    ep.state = ep.state
    assert audit.changed


def test_the_audit_watches_every_field_the_conservation_check_reads():
    """A P queue state marks the audit only for the fields of ``PerPeerQp.CONSERVED``:
    the check reads no other field of either side."""
    fields = {name for cls in PerPeerQp.__mro__ for name in getattr(cls, "__slots__", ())}
    read = set(PerPeerQp.check_conservation.__code__.co_names) & fields
    assert read == PerPeerQp.CONSERVED
    audit = CreditAudit()
    qp = AuditedPerPeerQp(
        0, build_job_btls(Simulator(), 2, "chelsio-t3", load_mca())[0].queues[0], audit
    )
    audit.changed = False
    qp.sd_wqe -= 1  # a WQE counter: no conserved count moved
    assert not audit.changed
    qp.rd_posted += 1
    assert audit.changed
