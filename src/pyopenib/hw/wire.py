"""The wire: full-duplex links into one switch with an output queue per port.

Topology is a star: every NIC port has a link to the switch. A packet leaves a NIC when
the NIC's transmit arbiter has serialized it (see ``nic.Port``), reaches the switch after
the link latency, waits in the output queue of the destination's port (store and
forward: serialization at the *output* link's rate, FIFO), and reaches the destination
NIC after the link latency again. Two senders into one port therefore share its
bandwidth — contention is real.

Each output queue is one ``busy_until`` integer (picoseconds); the queue needs no
per-packet objects beyond the packet itself.
"""

from __future__ import annotations

from .packet import Packet

__all__ = ["Fabric"]


class _SwitchPort:
    __slots__ = ("nic", "ps_per_byte", "link_latency", "busy_until", "bytes_out", "last_in",
                 "last_out")  # fmt: skip

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
        self.packets_forwarded = 0

    def attach(self, nic) -> int:
        lid = len(self._ports) + 1
        model = nic.model
        self._ports[lid] = _SwitchPort(nic, model.ps_per_byte, model.link_latency)
        if self._switch_latency is None:
            self._switch_latency = model.switch_latency
        return lid

    def nic(self, lid: int):
        return self._ports[lid].nic

    def transmit(self, pkt: Packet, src_lid: int) -> None:
        """Called by a NIC when ``pkt`` has been fully serialized onto its link."""
        sim = self.sim
        src = self._ports[src_lid]
        lat = src.link_latency
        delay = sim.duration("wire.link", lat[0], lat[1], lat[2])
        sw = self._switch_latency
        delay += sim.duration("wire.switch", sw[0], sw[1], sw[2])
        when = sim.now + delay
        if when < src.last_in:
            when = src.last_in
        src.last_in = when
        sim.schedule(when - sim.now, self._at_switch_output, pkt)

    def _at_switch_output(self, pkt: Packet) -> None:
        sim = self.sim
        out = self._ports.get(pkt.dst_lid)
        if out is None:
            return  # no such port: the switch drops it, the sender's transport retries
        now = sim.now
        start = out.busy_until if out.busy_until > now else now
        end = start + int(pkt.wire_bytes * out.ps_per_byte)
        out.busy_until = end
        out.bytes_out += pkt.wire_bytes
        self.packets_forwarded += 1
        lat = out.link_latency
        arrive = end + sim.duration("wire.link", lat[0], lat[1], lat[2])
        if arrive < out.last_out:
            arrive = out.last_out
        out.last_out = arrive
        sim.schedule(arrive - now, out.nic.receive_packet, pkt)
