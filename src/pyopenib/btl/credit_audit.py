"""Credit conservation between a job's modules after every event, at the cost of the
events that moved credit state only.

Conservation is a property of two modules at once (a sender's ``sd_credits`` and
fragments sent, its peer's buffers posted, credits owed and returned:
``PerPeerQp.check_conservation``), so no module can check it alone; ``check`` runs it
after every event of a run (``Simulator.run(after_event=...)``). Checking every pair
after every event costed a third of an execution under ``check``, although most events
(a packet on the wire, a DMA, an engine step) touch no BTL state at all.

So the objects the check reads say when they change: with a ``CreditAudit`` given to the
job (``build_job_btls(audit_credits=True)``), every endpoint is an ``AuditedEndpoint``
and every P queue state an ``AuditedPerPeerQp``, and a write to what the check reads
marks the audit ``changed``: any write to an endpoint (its state, a new endpoint: its
construction writes), and to a P queue state a write to one of the fields
``PerPeerQp.check_conservation`` reads (``PerPeerQp.CONSERVED``; the WQE counters,
pending lists and credit-message bookkeeping are most of a run's writes and none of
them moves a conserved count). ``CreditAudit.check`` then runs ``OpenibModule.assert_conservation`` over
every ordered pair, exactly as before, after an event that marked it, and does nothing
after one that did not: what the check reads is then what it read after the previous
event, when it passed. A violation is reported at the same event, by the same pair, with
the same message. S queues have nothing to conserve per peer (``SharedRqQp``).

Plain runs never build these classes: their writes stay plain slot stores.
"""

from __future__ import annotations

from .endpoint import Endpoint, PerPeerQp, SharedRqQp

__all__ = ["AuditedEndpoint", "AuditedPerPeerQp", "CreditAudit"]

_set = object.__setattr__
_CONSERVED = PerPeerQp.CONSERVED


class CreditAudit:
    """Whether the credit state of a job's ``modules`` changed since the last check that
    passed (``changed``), and that check."""

    __slots__ = ("changed", "modules")

    def __init__(self):
        self.changed = True
        """A watched object was written since the last passed check (True before any)."""
        self.modules: list = []
        """The job's openib modules, in rank order (the pairs' order of the check)."""

    def check(self) -> None:
        """Every ordered pair's conservation (``InvariantViolation``), when anything it
        reads may have changed; ``changed`` stays set if a pair fails."""
        if not self.changed:
            return
        modules = self.modules
        for a in modules:
            for b in modules:
                if a is not b:
                    a.assert_conservation(b)
        self.changed = False


class AuditedEndpoint(Endpoint):
    """An ``Endpoint`` whose writes (its ``state`` among them) mark ``audit`` changed,
    with audited P queue states."""

    __slots__ = ("audit",)

    def __init__(self, audit: CreditAudit, *args):
        _set(self, "audit", audit)
        super().__init__(*args)

    def _qp_state(self, index: int, spec, srq):
        if spec.kind == "P":
            return AuditedPerPeerQp(index, spec, self.audit)
        return SharedRqQp(index, spec, srq)

    def __setattr__(self, name: str, value) -> None:
        _set(self, name, value)
        self.audit.changed = True


class AuditedPerPeerQp(PerPeerQp):
    """A ``PerPeerQp`` whose writes to the fields the conservation check reads mark
    ``audit`` changed."""

    __slots__ = ("audit",)

    def __init__(self, index: int, spec, audit: CreditAudit):
        _set(self, "audit", audit)
        super().__init__(index, spec)

    def __setattr__(self, name: str, value) -> None:
        _set(self, name, value)
        if name in _CONSERVED:
            self.audit.changed = True
