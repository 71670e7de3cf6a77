"""perftest on simulated hardware: ``ib_send_lat``, ``ib_send_bw``, ``ib_write_lat``,
``ib_write_bw`` and ``ib_read_lat`` between two hosts with one RC QP each.

Owns the measurement loops and the statistics perftest reports; printing lives in
``perftest_command``. Every time is simulated (``sim.now``, picoseconds). The loops are
rank processes that post, then block on a CQ notification (``req_notify`` + ``sim.wait``)
and poll, paying the device's ``host_poll`` per completion returned, so the figures
decompose into the device-model durations of docs/devices.md. It must never reach below
the verbs API (no ``hw`` internals).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import PyopenibError, register_topics
from ..sim import PS_PER_US, make_simulator
from ..verbs import (
    Access,
    CompletionQueue,
    QpState,
    RecvWR,
    SendFlags,
    SendWR,
    Sge,
    WcStatus,
    WrOpcode,
    open_devices,
)

__all__ = [
    "TESTS",
    "ALL_SIZES",
    "LatencyResult",
    "BandwidthResult",
    "PerftestSetup",
    "run_perftest",
]

TESTS = ("send_lat", "send_bw", "write_lat", "write_bw", "read_lat")
ALL_SIZES = tuple(1 << k for k in range(1, 24))  # perftest -a: 2 .. 8 MiB (MAX_SIZE)
DEF_SIZE_LAT = 2
DEF_SIZE_BW = 65536
DEF_ITERS = 1000
DEF_TX_BW = 128
DEF_RX_SEND = 512
DEF_CQ_MOD = 100  # perftest_parameters.h
MIN_CQ_MOD, MAX_CQ_MOD = 1, 1024
MSG_SIZE_CQ_MOD_LIMIT = 8192  # above it perftest turns moderation off unless -a or -Q
DISABLED_CQ_MOD_VALUE = 1
_MB = 0x100000  # perftest's MB/sec is MiB/s
_POLL_BATCH = 16
_LAT_SIGNAL_EVERY = 64  # unsignaled sends in latency loops; drain the send CQ now and then

register_topics(
    {
        "perftest-unknown-test": "unknown perftest test {test!r}; valid tests: {valid}",
        "perftest-bad-size": "--size {size} is out of range (1 .. {max})",
        "perftest-bad-iters": "--iters {iters} is out of range (5 .. 100000000)",
        "perftest-bad-cq-mod": "--cq-mod {cq_mod} is out of range (1 .. 1024)",
        "perftest-completion-error": "{test} on {device}: work completion wr_id {wr_id} "
        "failed with {status} at t={time_us:.3f} us",
        "perftest-stalled": "{test} on {device}: the test stalled at t={time_us:.3f} us "
        "({done} of {iters} iterations done)",
    }
)


@dataclass(frozen=True, slots=True)
class LatencyResult:
    """One row of a latency test, in microseconds (perftest's print_report_lat)."""

    size: int
    iterations: int
    t_min: float
    t_max: float
    t_typical: float
    t_avg: float
    t_stdev: float
    p99: float
    p999: float


@dataclass(frozen=True, slots=True)
class BandwidthResult:
    """One row of a bandwidth test: MB/sec (2**20 bytes) and Mpps (print_report_bw)."""

    size: int
    iterations: int
    bw_peak: float
    bw_avg: float
    msg_rate: float


@dataclass(frozen=True, slots=True)
class PerftestSetup:
    """What perftest's header prints about the connection."""

    test: str
    device: str
    transport: str
    link_layer: str
    mtu: int
    tx_depth: int
    rx_depth: int
    max_inline: int
    cq_moderation: int
    local: tuple[int, int, int]  # LID, QPN, PSN
    remote: tuple[int, int, int]

    @property
    def is_latency(self) -> bool:
        return self.test.endswith("_lat")


def _psn(seed: int, qpn: int) -> int:
    """perftest draws a random PSN; ours is a deterministic function of seed and QPN."""
    return (qpn * 0x9E3779B1 + seed * 0x85EBCA6B) & 0xFFFFFF


def cq_moderation(test: str, size: int, tx_depth: int, cq_mod=None, run_all=False) -> int:
    """The CQ moderation perftest's ``force_dependecies`` settles on: ``DEF_CQ_MOD`` (100)
    unless ``-Q/--cq-mod`` asks for another value; without ``-Q`` and ``-a`` it is
    ``DISABLED_CQ_MOD_VALUE`` (1) for messages above ``MSG_SIZE_CQ_MOD_LIMIT`` (8 KiB);
    never above ``tx_depth``. Latency tests signal on their own schedule (1 here)."""
    if test.endswith("_lat"):
        return 1
    mod = DEF_CQ_MOD if cq_mod is None else cq_mod
    if cq_mod is None and not run_all and size > MSG_SIZE_CQ_MOD_LIMIT:
        mod = DISABLED_CQ_MOD_VALUE
    return min(mod, tx_depth)


def run_perftest(
    test: str,
    model,
    sizes=None,
    iters: int = DEF_ITERS,
    seed: int = 0,
    random_timing: bool = False,
    tx_depth: int | None = None,
    cq_mod: int | None = None,
    run_all: bool = False,
):
    """Run ``test`` for each size on two hosts with ``model`` through one switch.

    ``cq_mod`` is perftest's ``-Q/--cq-mod`` (None: its default, see ``cq_moderation``);
    ``run_all`` is ``-a``, which keeps moderation on for every size. Returns
    ``(PerftestSetup, [result per size])``. Each size runs on a fresh simulator (same
    seed) so rows are independent and reproducible.
    """
    if test not in TESTS:
        raise PyopenibError("perftest-unknown-test", test=test, valid=", ".join(TESTS))
    latency = test.endswith("_lat")
    if sizes is None:
        sizes = (DEF_SIZE_LAT if latency else DEF_SIZE_BW,)
    for size in sizes:
        if not 1 <= size <= ALL_SIZES[-1]:
            raise PyopenibError("perftest-bad-size", size=size, max=ALL_SIZES[-1])
    if not 5 <= iters <= 100_000_000:
        raise PyopenibError("perftest-bad-iters", iters=iters)
    if cq_mod is not None and not MIN_CQ_MOD <= cq_mod <= MAX_CQ_MOD:
        raise PyopenibError("perftest-bad-cq-mod", cq_mod=cq_mod)
    # force_dependecies: the TX depth never exceeds the iterations
    tx = min(tx_depth or (1 if latency else DEF_TX_BW), iters, model.max_qp_wr)
    rows, setup = [], None
    for size in sizes:
        mod = cq_moderation(test, size, tx, cq_mod, run_all)
        run = _Run(test, model, size, iters, seed, random_timing, tx, mod)
        rows.append(run.measure())
        setup = setup or run.setup()
    return setup, rows


class _Run:
    """One size of one test: two connected hosts and their rank processes."""

    def __init__(self, test, model, size, iters, seed, random_timing, tx_depth, cq_mod=1):
        self.test = test
        self.model = model
        self.size = size
        self.iters = iters
        self.seed = seed
        self.latency = test.endswith("_lat")
        self.tx_depth = min(tx_depth, model.max_qp_wr)
        self.cq_mod = min(cq_mod, self.tx_depth)
        self.rx_depth = min(DEF_RX_SEND if test.startswith("send") else 1, model.max_qp_wr - 1)
        self.max_inline = model.max_inline if self.latency else 0
        self.sim = sim = make_simulator(seed, randomize=random_timing)
        self.ctx = open_devices(sim, [model, model])
        self.pd = [c.alloc_pd() for c in self.ctx]
        cqe = max(self.tx_depth, _LAT_SIGNAL_EVERY) + self.rx_depth + 1
        self.send_cq = [c.create_cq(min(cqe, model.max_cq_entries)) for c in self.ctx]
        self.recv_cq = [c.create_cq(min(cqe, model.max_cq_entries)) for c in self.ctx]
        sq_depth = min(max(self.tx_depth, 2 * _LAT_SIGNAL_EVERY), model.max_qp_wr)
        self.qp = [
            pd.create_qp(scq, rcq, sq_depth, self.rx_depth, self.max_inline)
            for pd, scq, rcq in zip(self.pd, self.send_cq, self.recv_cq, strict=True)
        ]
        access = Access.LOCAL_WRITE | Access.REMOTE_WRITE | Access.REMOTE_READ
        # a send region, then the region the peer's SENDs and WRITEs land in
        self.mr = [pd.reg_mr(np.zeros(2 * size, dtype=np.uint8), access) for pd in self.pd]
        for i, qp in enumerate(self.qp):
            peer = self.qp[1 - i]
            qp.modify(QpState.INIT)
            qp.modify(
                QpState.RTR,
                dest_lid=self.ctx[1 - i].nic.lid,
                dest_qp_num=peer.qp_num,
                path_mtu=model.mtu_max,
            )
            qp.modify(QpState.RTS)

    def setup(self) -> PerftestSetup:
        ends = [
            (c.nic.lid, qp.qp_num, _psn(self.seed, qp.qp_num))
            for c, qp in zip(self.ctx, self.qp, strict=True)
        ]
        m = self.model
        return PerftestSetup(
            self.test,
            m.id,
            m.transport,
            m.link_layer,
            m.mtu_max,
            self.tx_depth,
            self.rx_depth,
            self.max_inline,
            self.cq_mod,
            ends[0],
            ends[1],
        )

    # -- verbs helpers ----------------------------------------------------------------
    def _sge(self, side: int, region: int = 0) -> tuple[Sge, ...]:
        mr = self.mr[side]
        return (Sge(mr.addr + region * self.size, self.size, mr.lkey),)

    def _send_wr(self, side, wr_id, opcode, signaled) -> SendWR:
        flags = SendFlags.SIGNALED if signaled else SendFlags.NONE
        if self.size <= self.max_inline and opcode != WrOpcode.RDMA_READ:
            flags |= SendFlags.INLINE
        peer = self.mr[1 - side]
        region = 1 if opcode == WrOpcode.RDMA_READ else 0  # a READ lands in our recv region
        return SendWR(
            wr_id,
            opcode,
            self._sge(side, region),
            flags,
            remote_addr=peer.addr + (1 - region) * self.size,
            rkey=peer.rkey,
        )

    def _post_recv(self, side: int, wr_id: int) -> None:
        self.qp[side].post_recv(RecvWR(wr_id, self._sge(side, 1)))

    def _poll_cost(self) -> int:
        m = self.model.host_poll
        return self.sim.duration("host.poll", m.lo, m.nominal, m.hi)

    def _completions(self, cq: CompletionQueue, block: bool = True) -> list:
        """Wait for the CQ's event (``ibv_req_notify_cq`` + ``ibv_get_cq_event``), poll,
        and pay ``host_poll`` for each completion returned."""
        sim = self.sim
        if block and not len(cq):
            event = sim.event()
            cq.req_notify(event.succeed)
            sim.wait(event)
        wcs = cq.poll(_POLL_BATCH)
        for wc in wcs:
            if wc.status != WcStatus.SUCCESS:
                raise PyopenibError(
                    "perftest-completion-error",
                    exit_code=3,
                    test=self.test,
                    device=self.model.id,
                    wr_id=wc.wr_id,
                    status=wc.status.name,
                    time_us=sim.now / PS_PER_US,
                )
            sim.sleep(self._poll_cost())
        return wcs

    def _handshake(self) -> None:
        """perftest exchanges QP numbers over TCP before the test; by the end of that the
        pre-posted receives are usable. Waiting the worst case stands in for it."""
        m = self.model
        wait = m.host_post.hi + m.pcie_latency.hi + m.recv_usable.hi
        wait += self.rx_depth * (m.recv_wqe.hi + m.host_post.hi)
        self.sim.sleep(wait)

    # -- measurement -------------------------------------------------------------------
    def measure(self):
        sim = self.sim
        client, server = _ROLES[self.test]
        procs = [sim.spawn(client, self, name="client")]
        if server is not None:
            procs.append(sim.spawn(server, self, name="server"))
        sim.run()
        if not all(p.triggered for p in procs):
            raise PyopenibError(
                "perftest-stalled",
                exit_code=3,
                test=self.test,
                device=self.model.id,
                time_us=sim.now / PS_PER_US,
                done=0,
                iters=self.iters,
            )
        stamps = procs[0].value
        if self.latency:
            factor = 1 if self.test == "read_lat" else 2
            return _latency(self.size, self.iters, stamps, factor)
        return _bandwidth(self.size, self.iters, *stamps, cq_mod=self.cq_mod)


# -- rank programs (greenlet processes) -------------------------------------------------


def _send_lat_side(run: _Run, side: int) -> list[int]:
    """Ping-pong of SENDs; side 0 starts and time-stamps every iteration."""
    sim, qp = run.sim, run.qp[side]
    for k in range(run.rx_depth):
        run._post_recv(side, k)
    run._handshake()
    stamps = []
    for i in range(run.iters):
        signaled = i % _LAT_SIGNAL_EVERY == _LAT_SIGNAL_EVERY - 1
        if side == 0:
            stamps.append(sim.now)
        else:
            run._completions(run.recv_cq[side])
        # Replenish after the send: on a shared work queue (T3) a receive posted first
        # would delay the send by recv_wqe; rx_depth receives stay ahead anyway.
        qp.post_send(run._send_wr(side, i, WrOpcode.SEND, signaled))
        if i > 0 or side == 1:
            run._post_recv(side, i)
        if side == 0:
            run._completions(run.recv_cq[side])
        if len(run.send_cq[side]):
            run._completions(run.send_cq[side], block=False)
    stamps.append(sim.now)
    return stamps


def _write_lat_side(run: _Run, side: int) -> list[int]:
    """Ping-pong of RDMA WRITEs; each side polls the last byte of its own buffer."""
    sim, qp = run.sim, run.qp[side]
    buf = run.mr[side].buffer
    last = 2 * run.size - 1  # last byte of the region the peer writes into
    out = run.size - 1  # last byte of what we write
    run._handshake()
    stamps = []

    def await_byte(value):
        while buf[last] != value:
            sim.sleep(run._poll_cost())

    for i in range(run.iters):
        value = i % 255 + 1
        signaled = i % _LAT_SIGNAL_EVERY == _LAT_SIGNAL_EVERY - 1
        if side == 0:
            stamps.append(sim.now)
        else:
            await_byte(value)
        buf[out] = value
        qp.post_send(run._send_wr(side, i, WrOpcode.RDMA_WRITE, signaled))
        if side == 0:
            await_byte(value)
        if len(run.send_cq[side]):
            run._completions(run.send_cq[side], block=False)
    stamps.append(sim.now)
    return stamps


def _read_lat(run: _Run) -> list[int]:
    """One signaled RDMA READ at a time; the full round trip is the latency."""
    sim, qp = run.sim, run.qp[0]
    run._handshake()
    stamps = []
    for i in range(run.iters):
        stamps.append(sim.now)
        qp.post_send(run._send_wr(0, i, WrOpcode.RDMA_READ, True))
        run._completions(run.send_cq[0])
    stamps.append(sim.now)
    return stamps


def _bw_sender(run: _Run, opcode: WrOpcode):
    """perftest's ``run_iter_bw`` with one QP and no post list: keep ``tx_depth`` WRs
    outstanding, signal WR ``k`` only when ``k % cq_mod == cq_mod - 1`` or it is the last,
    and count every send CQE as ``cq_mod`` completions (the last one as what remains,
    ``fill_count``). ``tposted[k]`` is stamped before each post, ``tcompleted[c - 1]``
    when a CQE brings the count to ``c``; the other ``tcompleted`` entries stay unset."""
    sim, qp = run.sim, run.qp[0]
    run._handshake()
    n, mod = run.iters, run.cq_mod
    posted_at, completed_at = [0] * n, [0] * n
    posted = completed = 0
    while completed < n:
        while posted < n and posted - completed < run.tx_depth:
            posted_at[posted] = sim.now
            signaled = posted % mod == mod - 1 or posted == n - 1
            qp.post_send(run._send_wr(0, posted, opcode, signaled))
            posted += 1
        for _wc in run._completions(run.send_cq[0]):
            completed += min(mod, n - completed)
            completed_at[completed - 1] = sim.now
    return posted_at, completed_at


def _send_bw_receiver(run: _Run) -> None:
    for k in range(run.rx_depth):
        run._post_recv(1, k)
    received = 0
    while received < run.iters:
        for wc in run._completions(run.recv_cq[1]):
            received += 1
            run._post_recv(1, wc.wr_id)


_ROLES = {
    "send_lat": (lambda r: _send_lat_side(r, 0), lambda r: _send_lat_side(r, 1)),
    "write_lat": (lambda r: _write_lat_side(r, 0), lambda r: _write_lat_side(r, 1)),
    "read_lat": (_read_lat, None),
    "send_bw": (lambda r: _bw_sender(r, WrOpcode.SEND), _send_bw_receiver),
    "write_bw": (lambda r: _bw_sender(r, WrOpcode.RDMA_WRITE), None),
}


# -- statistics as perftest computes them ---------------------------------------------


def _latency(size: int, iters: int, stamps: list[int], rtt_factor: int) -> LatencyResult:
    """``print_report_lat``: sorted per-iteration deltas; typical is the median."""
    delta = np.sort(np.diff(np.asarray(stamps, dtype=np.float64))) / (rtt_factor * PS_PER_US)
    n = len(delta)
    typical = (delta[n // 2 - 1] + delta[n // 2]) / 2 if n % 2 == 0 else delta[n // 2]

    def percentile(p: float) -> float:
        return float(delta[min(n - 1, max(0, math.ceil(n * p) - 1))])

    return LatencyResult(
        size,
        iters,
        float(delta[0]),
        float(delta[-1]),
        float(typical),
        float(delta.mean()),
        float(delta.std()),
        percentile(0.99),
        percentile(0.999),
    )


def _bandwidth(size, iters, posted_at, completed_at, cq_mod: int = 1) -> BandwidthResult:
    """``print_report_bw``: average over the whole run, (tcompleted[n-1] - tposted[0]);
    peak over the best window, min over i <= j of (tcompleted[j] - tposted[i]) /
    (j - i + 1), where j runs only over the stamped entries: j = k * cq_mod - 1 and,
    when cq_mod does not divide n, the last one."""
    tp = np.asarray(posted_at, dtype=np.float64)
    tc = np.asarray(completed_at, dtype=np.float64)
    js = np.arange(cq_mod - 1, iters, cq_mod)
    if iters % cq_mod:
        js = np.append(js, iters - 1)
    tcj, counts = tc[js], js.astype(np.float64) + 1
    first = np.searchsorted(js, np.arange(iters))  # first stamped j >= i
    best = min(
        float(np.min((tcj[first[i] :] - tp[i]) / (counts[first[i] :] - i))) for i in range(iters)
    )
    elapsed_s = float(tc[-1] - tp[0]) / 1e12
    bw_avg = size * iters / elapsed_s / _MB
    bw_peak = size / (best / 1e12) / _MB
    return BandwidthResult(size, iters, bw_peak, bw_avg, iters / elapsed_s / 1e6)
