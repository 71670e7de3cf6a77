"""A small testbed for protocol-rule tests of the openib BTL: a job of OpenibModules on
one fabric, driven step by step from the test itself.

The test body is the simulator's main loop, so ``send`` and ``progress`` can be called
directly (progress then costs no host time) and each rank progresses only when the
test says so: "rank 1 has not polled yet" is a state a test can hold on purpose, which
is how the arithmetic of rd_low, rd_win, cm_sent and the pending lists becomes visible.
"""

from __future__ import annotations

from dataclasses import replace

from pyopenib.btl import OobChannel, OpenibModule, build_job_btls
from pyopenib.config import effective_settings, load_mca
from pyopenib.hw import get_device_model
from pyopenib.sim import Simulator, Tracer
from pyopenib.verbs import open_devices

TAG = 1
SMALL_QUEUES = "P,128,8,6,4,4:P,4096,8,6,4,4"
"""Two P queues of 8 buffers: re-post 2 at rd_low 6, explicit credits at rd_win 4,
4 buffers reserved for credit messages (at most 3 unacknowledged)."""

EP_FIELDS = (
    "sd_credits",
    "rd_posted",
    "rd_credits",
    "cm_received",
    "cm_return",
    "cm_sent",
    "sd_wqe",
)


class Job:
    """``nprocs`` ranks on ``device``; ``policies`` (one per rank) builds the modules
    with per-rank credit policies, otherwise ``policy`` goes through MCA as users set it."""

    def __init__(
        self,
        device="chelsio-t3",
        queues=SMALL_QUEUES,
        policy="own",
        nprocs=2,
        policies=None,
        mca=(),
        check_invariants=True,
    ):
        self.tracer = Tracer()
        self.sim = Simulator(tracer=self.tracer)
        # eager RDMA off unless asked for: these tests pin the per-peer credit rules
        given = {name for name, _ in mca}
        pairs = [
            (k, v)
            for k, v in (("btl_openib_receive_queues", queues), ("btl_openib_use_eager_rdma", "0"))
            if k not in given
        ]
        pairs += list(mca)
        if policies is None:
            pairs.append(("btl_openib_credits_qp", policy))
            self.btls = build_job_btls(
                self.sim,
                nprocs,
                device,
                load_mca(cli_pairs=pairs),
                check_invariants=check_invariants,
            )
        else:
            self.btls = _modules_with_policies(self.sim, device, pairs, policies, check_invariants)
        self.received: dict[int, list[tuple[int, bytes]]] = {b.rank: [] for b in self.btls}
        for b in self.btls:
            b.register_recv(TAG, self._recorder(b.rank))

    def _recorder(self, rank):
        def on_recv(peer, data):
            self.received[rank].append((peer, bytes(data)))

        return on_recv

    # -- driving --------------------------------------------------------------------------
    def connect(self, a: int, b: int) -> None:
        """Open the connection a -> b the way the first send does, without sending data,
        so the credit state starts at its post-connection values."""
        btl = self.btls[a]
        btl.connections.connect(btl.endpoint(b))
        self.settle()
        assert self.ep(a, b).state == "CONNECTED" and self.ep(b, a).state == "CONNECTED"

    def send(self, src: int, dst: int, payload: bytes, high=False, on_complete=None) -> None:
        self.btls[src].send(dst, TAG, payload, on_complete, high_priority=high)

    def settle(self, ranks=None) -> None:
        """Run the fabric and progress ``ranks`` (default all) until nothing moves."""
        ranks = range(len(self.btls)) if ranks is None else ranks
        while True:
            self.sim.run()
            if sum(self.btls[r].progress() for r in ranks) == 0 and self.sim.peek() is None:
                return

    # -- inspecting -----------------------------------------------------------------------
    def ep(self, rank: int, peer: int):
        return self.btls[rank].endpoints[peer]

    def state(self, rank: int, peer: int, q: int) -> dict:
        ep = self.ep(rank, peer)
        return {name: getattr(ep.qps[q], name) for name in EP_FIELDS}

    def events(self, kind: str, actor: str | None = None, keys=None) -> list[dict]:
        """Fields of the btl trace events of ``kind`` (optionally of one 'rankA->B'),
        restricted to ``keys`` when given (events may gain fields over time)."""
        found = [
            dict(e[4])
            for e in self.tracer.events
            if e[1] == "btl" and e[2] == kind and (actor is None or e[3] == actor)
        ]
        if keys is None:
            return found
        return [{k: f[k] for k in keys} for f in found]

    def payloads(self, rank: int) -> list[bytes]:
        return [data for _, data in self.received[rank]]

    def check_all(self) -> None:
        for a in self.btls:
            a.assert_invariants()
            for b in self.btls:
                if a is not b:
                    a.assert_conservation(b)


def run_ranks(job: Job, body, max_events: int = 2_000_000) -> None:
    """Run ``body(job, btl)`` as one greenlet process per rank, the way a PML drives its
    BTL (send, progress, wait_for_activity); fails if a rank is left blocked."""
    for btl in job.btls:
        job.sim.spawn(body, job, btl, name=f"rank{btl.rank}")
    job.sim.run(max_events=max_events)
    assert job.sim.peek() is None, "still running after max_events"
    assert not job.sim.blocked_processes(), f"blocked: {job.sim.blocked_processes()}"


def _modules_with_policies(sim, device, pairs, policies, check_invariants):
    """build_job_btls with a different credits policy per rank (as a mixed cluster of
    devices whose INI sections disagree would resolve)."""
    model = get_device_model(device)
    base = effective_settings(
        load_mca(cli_pairs=pairs), model.vendor_id[0], model.vendor_part_ids[0]
    )
    n = len(policies)
    contexts = open_devices(sim, [model] * n, [f"node{i:03d}/{model.id}" for i in range(n)])
    oob = OobChannel(sim)
    oob.modules = [
        OpenibModule(
            r,
            contexts[r],
            replace(base, credits_policy=policies[r]),
            oob,
            f"node{r:03d}",
            check_invariants,
        )
        for r in range(n)
    ]
    return oob.modules
