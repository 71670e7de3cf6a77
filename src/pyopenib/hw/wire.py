"""The wire: full-duplex links into one switch with an output queue per port.

Topology is a star: every NIC port has a link to the switch. A packet leaves a NIC when
the NIC's transmit arbiter has serialized it (see ``port.TransmitPort``). The switch is
cut-through, as InfiniBand switches and the 10GbE-and-later switches modelled here are:
the packet's head reaches the switch one link latency after it left the NIC, and after
the switch latency it is forwarded — at once if the destination's output port is free,
else when the packets ahead of it in that port's FIFO queue have gone. Forwarding runs at
the output link's rate and cannot end before the tail has arrived, and the destination
NIC has the packet one link latency after its tail left the port. So an idle path costs
one serialization (not one per hop), and two senders into one port share its bandwidth —
contention is real.

Each output queue is one ``busy_until`` integer (picoseconds) and each packet is placed
in it when its tail leaves the sending NIC (one event per packet for the whole path):
output ports grant packets in the order their tails left their NICs, a simplification
of per-head arbitration that differs only when packets of different sizes from
different inputs race for one port within one packet time.

Loss (``Fabric.set_loss``) is off by default. When on, a packet is lost as it leaves its
NIC (a corrupted frame the switch discards); the RC transport in ``nic.py`` recovers it.
Random loss asks the simulator's oracle (choice point ``wire.loss``, a draw in
``[0, LOSS_SCALE)`` whose nominal answer 0 always keeps the packet): the nominal oracle
never drops, the seeded random oracle drops with the given probability, and a scripted
oracle can drop exactly the packets an explorer chooses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .packet import KIND_NAMES, Packet

__all__ = ["Fabric", "LossRule", "LOSS_SCALE"]

LOSS_SCALE = 1_000_000
"""Resolution of the random loss draw: probabilities are whole parts per million."""


@dataclass(slots=True)
class LossRule:
    """Which packets the wire loses. ``every`` > 0: deterministically every Nth matching
    packet; otherwise each matching packet with ``probability`` (decided by the oracle).
    ``match`` narrows the candidates (e.g. only ACKs); ``limit`` > 0 caps the drops."""

    probability: float = 0.0
    every: int = 0
    match: Callable[[Packet], bool] | None = None
    limit: int = 0
    seen: int = 0
    dropped: int = 0

    def __post_init__(self):
        if not 0.0 <= self.probability <= 1.0:
            raise ValueError(f"loss probability {self.probability} is not within [0, 1]")
        if self.every < 0 or self.limit < 0:
            raise ValueError(f"loss every={self.every} limit={self.limit}: must be >= 0")
        if self.every and self.probability:
            raise ValueError("loss: give either a probability or an every-Nth rule, not both")

    @property
    def threshold(self) -> int:
        """Draws at or above this are lost; never 0, so the nominal draw keeps the packet."""
        return max(1, LOSS_SCALE - round(self.probability * LOSS_SCALE))


class _SwitchPort:
    __slots__ = (
        "nic",
        "ps_per_byte",
        "link_latency",
        "busy_until",
        "bytes_out",
        "last_in",
        "last_out",
    )

    def __init__(self, nic, ps_per_byte: float, link_latency):
        self.nic = nic
        self.ps_per_byte = ps_per_byte
        self.link_latency = link_latency
        self.busy_until = 0
        self.bytes_out = 0
        self.last_in = 0  # a link is FIFO: no packet overtakes an earlier one
        self.last_out = 0


class Fabric:
    """One switch and the links of every attached NIC; addresses are LIDs from 1."""

    def __init__(self, sim, switch_latency=None):
        self.sim = sim
        self._ports: dict[int, _SwitchPort] = {}
        self._switch_latency = switch_latency
        self._loss: LossRule | None = None
        self.lossy = False
        """Whether packets can be lost (the NICs arm transport timers only then)."""
        self.packets_forwarded = 0
        self.packets_lost = 0

    def set_loss(self, probability=0.0, every=0, match=None, limit=0) -> LossRule | None:
        """Lose packets from now on (see ``LossRule``); no arguments: a lossless wire."""
        rule = LossRule(probability, every, match, limit)
        self._loss = rule if rule.probability or rule.every else None
        self.lossy = self._loss is not None
        return self._loss

    def attach(self, nic) -> int:
        lid = len(self._ports) + 1
        model = nic.model
        self._ports[lid] = _SwitchPort(nic, model.ps_per_byte, model.link_latency)
        if self._switch_latency is None:
            self._switch_latency = model.switch_latency
        return lid

    def nic(self, lid: int):
        return self._ports[lid].nic

    def nics(self) -> list:
        """The attached NICs, in LID order."""
        return [port.nic for port in self._ports.values()]

    def port_clocks(self, lid: int) -> tuple[int, int, int]:
        """The switch port towards ``lid``: its output's busy time and the FIFO clamps of
        its two links (a model checker follows a moved packet through them)."""
        port = self._ports[lid]
        return (port.busy_until, port.last_in, port.last_out)

    def transmit(self, pkt: Packet, src_lid: int, left: int = -1) -> None:
        """Called by a NIC when ``pkt`` has been fully serialized onto its link: now, or
        at ``left`` (>= now) when its port folded the serialization (``send_ack``)."""
        sim = self.sim
        if self._loss is not None and self._lost(pkt):
            self.packets_lost += 1
            tr = sim.tracer
            if tr is not None:
                tr.emit(
                    "wire",
                    "loss",
                    f"lid{src_lid}",
                    packet=KIND_NAMES[pkt.kind],
                    dst=pkt.dst_lid,
                    qpn=pkt.dst_qpn,
                    msn=pkt.msn,
                    psn=pkt.psn,
                )
            return
        src = self._ports[src_lid]
        now = sim.now
        if left < 0:
            left = now
        nominal = sim.nominal
        lat = src.link_latency
        # cut-through: the head reached the switch one link latency after it left the NIC
        # (``left`` is when the tail left), and may be forwarded after the switch latency
        ser_in = int(pkt.wire_bytes * src.ps_per_byte)
        head = left - ser_in + (lat[1] if nominal else sim.duration("wire.link", *lat))
        if head < src.last_in:
            head = src.last_in  # a link is FIFO: no packet overtakes an earlier one
        src.last_in = head
        sw = self._switch_latency
        eligible = head + (sw[1] if nominal else sim.duration("wire.switch", *sw))
        out = self._ports.get(pkt.dst_lid)
        if out is None:
            return  # no such port: the switch drops it, the sender's transport retries
        start = out.busy_until if out.busy_until > eligible else eligible
        end = start + int(pkt.wire_bytes * out.ps_per_byte)
        if end < eligible + ser_in:
            end = eligible + ser_in  # a faster output link cannot send what has not arrived
        out.busy_until = end
        out.bytes_out += pkt.wire_bytes
        self.packets_forwarded += 1
        lat = out.link_latency
        arrive = end + (lat[1] if nominal else sim.duration("wire.link", *lat))
        if arrive < out.last_out:
            arrive = out.last_out
        out.last_out = arrive
        sim.schedule(arrive - now, out.nic.receive_packet, pkt)

    def _lost(self, pkt: Packet) -> bool:
        rule = self._loss
        if rule.limit and rule.dropped >= rule.limit:
            return False
        if rule.match is not None and not rule.match(pkt):
            return False
        if rule.every:
            rule.seen += 1
            lost = rule.seen % rule.every == 0
        else:
            lost = self.sim.duration("wire.loss", 0, 0, LOSS_SCALE - 1) >= rule.threshold
        if lost:
            rule.dropped += 1
        return lost
