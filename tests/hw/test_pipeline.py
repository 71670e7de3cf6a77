"""The NIC is cut-through, not store-and-forward: a multi-packet message's first packet
leaves before its payload has been read from host memory to the end, its receiver
writes the first packet to host memory before the last one is on the wire, and an RDMA
WRITE's bytes become visible to the target's CPU only once its DMA write has landed."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "verbs"))

from verbs_testbed import Pair, toy_model  # noqa: E402

from pyopenib.hw.packet import DATA  # noqa: E402
from pyopenib.hw.pcie import PcieBus  # noqa: E402
from pyopenib.sim import Simulator, Tracer  # noqa: E402
from pyopenib.verbs import SendWR, WrOpcode  # noqa: E402


class _RecordingBus(PcieBus):
    """The NIC's PCIe bus, logging each ``stream`` and ``dma`` call: (time, args, result)."""

    __slots__ = ("log",)

    def __init__(self, sim, model):
        super().__init__(sim, model)
        self.log = []

    def stream(self, nbytes, to_nic, at):
        base = super().stream(nbytes, to_nic, at)
        self.log.append((self.sim.now, ("stream", nbytes, to_nic), base))
        return base


def _recording_bus(nic) -> list:
    bus = _RecordingBus(nic.sim, nic.model)
    for part in (nic, nic.engine, nic.requester, nic.responder):
        part.pcie = bus
    return bus.log


def _record_transmit(fabric, sim, log):
    original = fabric.transmit

    def transmit(pkt, src_lid, left=-1):
        log.append((sim.now if left < 0 else left, pkt))
        return original(pkt, src_lid, left)

    fabric.transmit = transmit


def _two_packet_send(**model):
    tr = Tracer()
    p = Pair(model=toy_model(**model), sim=Simulator(tracer=tr))
    p.post_recv(1, 1, length=8192)
    p.sim.run()
    sender, receiver = p.ctx[0].nic, p.ctx[1].nic
    reads, writes, wire = _recording_bus(sender), _recording_bus(receiver), []
    _record_transmit(sender.fabric, p.sim, wire)
    size = 2 * toy_model().mtu_max  # exactly two packets
    wr = SendWR(7, WrOpcode.SEND, p.sge(0, 0, size))
    p.mr[0].buffer[:size] = 0xAB
    p.qp[0].post_send(wr)
    p.sim.run()
    return p, tr, reads, writes, wire, size


def test_first_packet_leaves_before_the_payload_read_ends():
    # PCIe slower than the link: the whole read takes longer than one packet's wire time
    p, _tr, reads, _writes, wire, size = _two_packet_send(pcie_gbps=4.0)
    ((_t, args, base),) = reads
    assert args == ("stream", size, True)
    read_done = base + int(size * p.ctx[0].nic.pcie.ps_per_byte)
    data = [t for t, pkt in wire if pkt.kind == DATA]
    assert len(data) == 2
    assert data[0] < read_done  # store-and-forward would read all of it first
    assert data[1] >= read_done  # the second packet waits for its bytes


def test_receive_dma_starts_before_the_last_packet_is_on_the_wire():
    _p, tr, _reads, writes, _wire, _size = _two_packet_send()
    last_left = [t for t, _, kind, _actor, _f in tr.events if kind == "send_left"]
    assert len(last_left) == 1
    data_writes = [t for t, (_op, nbytes, to_nic), _ in writes if not to_nic and nbytes]
    assert len(data_writes) == 2  # one DMA write per packet, not one per message
    assert data_writes[0] < last_left[0]


def test_rdma_write_is_visible_only_after_its_dma_write_lands():
    tr = Tracer()
    p = Pair(model=toy_model(), sim=Simulator(tracer=tr))
    seen = []
    target = p.mr[1]
    target.hw.on_remote_write = lambda: seen.append((p.sim.now, int(target.buffer[65536])))
    p.mr[0].buffer[:64] = 0xAB
    wr = SendWR(7, WrOpcode.RDMA_WRITE, p.sge(0, 0, 64))
    wr.remote_addr, wr.rkey = target.addr + 65536, target.rkey
    p.qp[0].post_send(wr)
    p.sim.run()
    arrivals = [t for t, _, kind, _actor, _f in tr.events if kind == "recv_msg"]
    assert len(arrivals) == 1
    ((t_seen, byte),) = seen
    assert byte == 0xAB
    pcie = p.ctx[1].nic.pcie
    assert t_seen >= arrivals[0] + pcie.latency.nominal  # not on arrival: after the write
