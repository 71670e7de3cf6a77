"""A toy device model for verbs/hw tests: round numbers, so timings can be reasoned about."""

import numpy as np

from pyopenib.hw import DeviceModel, Interval
from pyopenib.sim import Simulator
from pyopenib.verbs import Access, QpState, RecvWR, Sge, open_devices


def ns(lo, nominal=None, hi=None):
    nominal = lo if nominal is None else nominal
    hi = nominal if hi is None else hi
    return Interval(int(lo * 1000), int(nominal * 1000), int(hi * 1000))


def toy_model(**overrides) -> DeviceModel:
    fields = dict(
        id="toy",
        name="Toy NIC",
        aliases=(),
        vendor_id=(0x1234,),
        vendor_part_ids=(1,),
        transport="ib",
        link_layer="ib",
        link_gbps=8.0,  # 1 ns per byte
        mtu_max=2048,
        work_queue="split",
        max_inline=64,
        srq=True,
        max_qp_wr=16384,
        max_srq_wr=16384,
        max_cq_entries=65536,
        pcie_gbps=16.0,
        link_latency=ns(100),
        switch_latency=ns(200),
        pcie_latency=ns(300),
        send_wqe=ns(100),
        recv_wqe=ns(100),
        recv_usable=ns(200),
        rx=ns(0),  # no inbound processing: arrival to placement is the bus alone
        cqe=ns(50),
        host_post=ns(50),
        host_poll=ns(50),
    )
    fields.update(overrides)
    return DeviceModel(**fields)


class Pair:
    """Two hosts with one connected RC QP each, and registered 1 MiB buffers."""

    def __init__(self, model=None, peer_model=None, sim=None, rnr_retry=7, min_rnr_timer=1):
        self.sim = sim or Simulator()
        model = model or toy_model()
        self.ctx = open_devices(self.sim, [model, peer_model or model])
        self.pd = [c.alloc_pd() for c in self.ctx]
        self.cq = [c.create_cq(4096) for c in self.ctx]
        self.qp = [
            pd.create_qp(cq, cq, 256, 256, 64) for pd, cq in zip(self.pd, self.cq, strict=True)
        ]
        access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
        self.mr = [pd.reg_mr(np.zeros(1 << 20, dtype=np.uint8), access) for pd in self.pd]
        for i, qp in enumerate(self.qp):
            peer = self.qp[1 - i]
            qp.modify(QpState.INIT)
            qp.modify(
                QpState.RTR,
                dest_lid=self.ctx[1 - i].nic.lid,
                dest_qp_num=peer.qp_num,
                min_rnr_timer=min_rnr_timer,
            )
            qp.modify(QpState.RTS, rnr_retry=rnr_retry)

    def sge(self, side, offset, length):
        mr = self.mr[side]
        return (Sge(mr.addr + offset, length, mr.lkey),)

    def post_recv(self, side, wr_id, offset=0, length=4096):
        self.qp[side].post_recv(RecvWR(wr_id, self.sge(side, offset, length)))
