"""Credit invariants of the openib BTL, checked between progress calls in every test run
(and in any run with ``check_invariants``): nothing negative, nothing over-posted, every
credit conserved per queue and direction, every credit message with a buffer waiting.

A mixin of ``OpenibModule``: it uses the module's state and never stands alone."""

from __future__ import annotations

from .endpoint import CONNECTED

__all__ = ["InvariantChecks"]


class InvariantChecks:
    """Assertions over endpoint counters (raise ``AssertionError`` with the numbers)."""

    def assert_conservation(self, peer_module) -> None:
        """Per P queue and direction (me -> peer): my sd_credits + my fragments in flight
        + buffers the peer consumed and has not re-posted + credits the peer owes me +
        credits on their way back == rd_num (a leak or a double count breaks it); and my
        explicit credit messages in flight never outnumber the peer's reserved buffers."""
        ep = self.endpoints.get(peer_module.rank)
        pep = peer_module.endpoints.get(self.rank)
        if ep is None or pep is None or ep.state != CONNECTED or pep.state != CONNECTED:
            return
        for q, spec in enumerate(self.queues):
            if spec.kind != "P":
                continue
            in_flight = ep.data_sent[q] - pep.data_received[q]
            returning = pep.credits_sent[q] - ep.credits_received[q]
            total = (ep.sd_credits[q] + in_flight + (spec.rd_num - pep.rd_posted[q])
                     + pep.rd_credits[q] + returning)  # fmt: skip
            # every explicit credit message on its way has a reserved buffer waiting
            cm_in_flight = ep.cm_msgs_sent[q] - pep.cm_msgs_received[q]
            reserve = spec.rd_rsv - pep.cm_received[q]
            if cm_in_flight > reserve:
                raise AssertionError(
                    f"{cm_in_flight} credit messages for QP {q} in flight from rank "
                    f"{self.rank} to {peer_module.rank} but only {reserve} reserved buffers"
                )
            if total != spec.rd_num:
                raise AssertionError(
                    f"credits of QP {q} from rank {self.rank} to {peer_module.rank} not "
                    f"conserved: sd_credits {ep.sd_credits[q]} + in flight {in_flight} + "
                    f"unposted {spec.rd_num - pep.rd_posted[q]} + owed {pep.rd_credits[q]} + "
                    f"returning {returning} = {total} != rd_num {spec.rd_num}"
                )

    def assert_invariants(self) -> None:
        """Per-endpoint credit invariants that must hold between progress calls."""
        for q, spec in enumerate(self.queues):
            if spec.kind == "S":  # module-wide SRQ credits: never more than sd_max exist
                held = sum(ep.srq_credits_inflight[q] for ep in self.endpoints.values())
                if self.srq_sd_credits[q] + held > spec.sd_max:
                    raise AssertionError(
                        f"rank {self.rank} qp {q}: SRQ credits {self.srq_sd_credits[q]} + "
                        f"held by unsignaled sends {held} > sd_max {spec.sd_max}"
                    )
        for ep in self.endpoints.values():
            if ep.state != CONNECTED:
                continue
            for q, spec in enumerate(self.queues):
                if spec.kind != "P":
                    continue
                problems = []
                if ep.sd_credits[q] < 0:
                    problems.append(f"sd_credits {ep.sd_credits[q]} < 0")
                if not 0 <= ep.rd_posted[q] <= spec.rd_num:
                    problems.append(f"rd_posted {ep.rd_posted[q]} outside 0..{spec.rd_num}")
                if ep.cm_sent[q] < 0 or ep.cm_sent[q] > spec.rd_rsv:
                    problems.append(f"cm_sent {ep.cm_sent[q]} outside 0..{spec.rd_rsv}")
                if ep.sd_wqe[q] < 0:
                    problems.append(f"sd_wqe {ep.sd_wqe[q]} < 0")
                if ep.sd_wqe[q] + ep.sd_wqe_inflight[q] > spec.rd_num:
                    problems.append(f"sd_wqe {ep.sd_wqe[q]} + unsignaled "
                                    f"{ep.sd_wqe_inflight[q]} > {spec.rd_num} WQEs")  # fmt: skip
                remote = ep.eager_remote
                if remote is not None and not 0 <= remote.tokens <= remote.num - 1:
                    problems.append(
                        f"eager-RDMA tokens {remote.tokens} outside 0..{remote.num - 1}"
                    )
                if problems:
                    raise AssertionError(
                        f"rank {self.rank} peer {ep.peer} qp {q}: " + "; ".join(problems)
                    )
