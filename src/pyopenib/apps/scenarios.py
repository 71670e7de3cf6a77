"""Built-in BTL-level workloads: see the credit race happen before the MPI layer exists.

Each rank is a greenlet that drives its BTL module the way a PML would (send, progress,
wait for activity). Payloads carry (source, stream, sequence) and a fill byte so that
delivery is checked: every fragment exactly once, in order per QP, intact.

* ``pingpong``: rank 0 and 1 bounce one small message.
* ``stream``:   rank 0 sends windows of mixed-size fragments to rank 1.
* ``bibw``:     both ranks keep windows of mixed-size fragments in flight at once, on
                several QPs — the pattern of the seed's race.
* ``incast``:   ranks 1..N-1 stream to rank 0 through one switch port.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from dataclasses import dataclass, field

from ..btl import TransportError, build_job_btls
from ..config import load_mca
from ..errors import PyopenibError, register_topics
from ..sim import NominalOracle, RandomOracle, Simulator, Tracer

__all__ = ["SCENARIOS", "ScenarioResult", "run_scenario"]

DEFAULT_QUEUES = "P,128,256,192,128:P,65536,256,192,128"
"""IBM eHCA's entry in Open MPI's INI file: two per-peer queues on one connection, the
smallest configuration in which the cross-QP credit race exists."""

_TAG = 1
_TIME_LIMIT_PS = 60 * 10**12
"""A scenario still running after a simulated minute is stopped there."""
_STAMP = struct.Struct("<HHI")  # source rank, size class, sequence number

register_topics(
    {
        "scenario-unknown": "unknown scenario {name!r}; choose one of: {valid}",
        "scenario-delivery": "delivery check failed: {detail}",
    }
)


@dataclass
class ScenarioResult:
    scenario: str
    completed: bool
    failure: TransportError | None
    hung: str | None
    sim_time_ps: int
    frags_per_qp: dict = field(default_factory=dict)
    bytes_per_qp: dict = field(default_factory=dict)
    credit_msgs_per_qp: dict = field(default_factory=dict)
    piggybacked_per_qp: dict = field(default_factory=dict)
    rnr_naks: int = 0
    delivered: int = 0
    tracer: Tracer | None = None
    modules: list = field(default_factory=list)


class _Checker:
    """Delivery invariant: every fragment of each (src, dst, size class) stream arrives
    exactly once with intact payload. Order is checked up to one documented exception:
    a fragment written through the eager-RDMA ring is polled before completions of
    earlier fragments sent on the QP, so it may be delivered ahead of them (Open MPI's
    ob1 reorders by its own sequence numbers; our PML does too)."""

    def __init__(self):
        self.next_seq = defaultdict(int)
        self.early = defaultdict(set)
        self.delivered = 0

    def stamp(self, buf: bytearray, src: int, cls: int, seq: int) -> None:
        _STAMP.pack_into(buf, 0, src, cls, seq)
        fill = (src * 31 + seq) & 0xFF
        buf[_STAMP.size :] = bytes([fill]) * (len(buf) - _STAMP.size)

    def check(self, dst: int, peer: int, data: memoryview) -> None:
        src, cls, seq = _STAMP.unpack_from(data, 0)
        key = (src, dst, cls)
        early = self.early[key]
        if src != peer or seq < self.next_seq[key] or seq in early:
            raise PyopenibError(
                "scenario-delivery",
                detail=(
                    f"rank {dst} got seq {seq} of class {cls} from {src} (via peer {peer}) "
                    f"twice or from the wrong peer (next expected {self.next_seq[key]})"
                ),
            )
        fill = (src * 31 + seq) & 0xFF
        body = bytes(data[_STAMP.size :])
        if body.count(fill) != len(body):
            raise PyopenibError("scenario-delivery", detail=f"payload corrupted: {key} seq {seq}")
        if seq == self.next_seq[key]:
            nxt = seq + 1
            while nxt in early:
                early.discard(nxt)
                nxt += 1
            self.next_seq[key] = nxt
        else:
            early.add(seq)
        self.delivered += 1

    def holes(self) -> list[str]:
        """Streams with fragments missing before one that arrived."""
        return [f"{key}: missing {self.next_seq[key]}" for key, e in self.early.items() if e]


def _sizes(queues) -> list[int]:
    """One payload size per receive queue: fills each queue's buffers (mixed sizes)."""
    return [max(_STAMP.size, q.size) for q in queues]


def _attach(btl, checker) -> dict:
    """Register the scenario's receive callback; returns the rank's counters."""
    state = {"done": 0, "recv": 0}

    def on_recv(peer, data):
        checker.check(btl.rank, peer, data)
        state["recv"] += 1

    btl.register_recv(_TAG, on_recv)
    return state


def _drive(btl, state, plan, expect_recv, window, checker):
    """A PML-like driver: send ``plan`` ((peer, size, class), ...) keeping at most
    ``window`` sends uncompleted; progress until all completed and all expected arrived."""
    seqs = defaultdict(int)

    def done():
        state["done"] += 1

    issued = 0
    total = len(plan)
    while state["done"] < total or state["recv"] < expect_recv:
        while issued < total and issued - state["done"] < window:
            peer, size, cls = plan[issued]
            buf = bytearray(size)
            checker.stamp(buf, btl.rank, cls, seqs[(peer, cls)])
            seqs[(peer, cls)] += 1
            # as ob1: eager-sized fragments are high priority and try the send-immediate
            # path first (complete at once when it takes them); pipelined ones are not
            eager = size <= btl.eager_limit
            if eager and btl.sendi(peer, _TAG, buf, True):
                done()
            else:
                btl.send(peer, _TAG, buf, done, eager)
            issued += 1
        if btl.progress() == 0:
            btl.wait_for_activity()


def _plans(name: str, nprocs: int, queues, iterations: int, eager_limit: int):
    sizes = _sizes(queues)
    ncls = len(sizes)
    plans = {r: [] for r in range(nprocs)}
    if name == "pingpong":
        return plans  # handled separately
    if name == "stream":
        plans[0] = [(1, sizes[i % ncls], i % ncls) for i in range(iterations)]
    elif name == "bibw":
        # Rank 0 sends medium fragments (the large queue's buffers, partly filled; above
        # the eager limit, so they take receive buffers, not an eager-RDMA ring) mixed
        # with small ones; rank 1 answers with bursts of full-size fragments between runs
        # of small ones. Both directions, every QP in use: rank 1's large sends keep its
        # large QP's send queue deep while rank 0's medium fragments consume its
        # receive buffers quickly — the pattern in which the seed saw the race.
        medium = min(sizes[-1], max(eager_limit + 1, sizes[-2] + 1 if ncls > 1 else 0))
        plans[0] = [
            (1, sizes[0], 0) if i % 4 == 0 else (1, medium, ncls - 1) for i in range(iterations)
        ]
        plans[1] = [
            (0, sizes[-1], ncls - 1) if i % 64 < 8 else (0, sizes[0], 0) for i in range(iterations)
        ]
    elif name == "incast":
        for r in range(1, nprocs):
            plans[r] = [(0, sizes[i % ncls], i % ncls) for i in range(iterations)]
    return plans


SCENARIOS = ("pingpong", "stream", "bibw", "incast")


def run_scenario(
    name: str,
    device: str = "chelsio-t3",
    peer_device: str | None = None,
    credits_qp: str | None = None,
    mca_pairs=(),
    seed: int = 0,
    randomize: bool = False,
    trace: bool | Tracer = False,
    nprocs: int | None = None,
    iterations: int | None = None,
    window: int = 1024,
    check_invariants: bool = True,
    conservation_every: int = 20_000,
    oracle=None,
    cpu_scale: float = 1.0,
) -> ScenarioResult:
    if name not in SCENARIOS:
        raise PyopenibError("scenario-unknown", name=name, valid=", ".join(SCENARIOS))
    nprocs = nprocs or (4 if name == "incast" else 2)
    pairs = list(mca_pairs)
    names = {k for k, _ in pairs}
    if "btl_openib_receive_queues" not in names:
        pairs.append(("btl_openib_receive_queues", DEFAULT_QUEUES))
    if credits_qp is not None:
        pairs = [(k, v) for k, v in pairs if k != "btl_openib_credits_qp"]
        pairs.append(("btl_openib_credits_qp", credits_qp))
    # a Tracer passed in stays the caller's: it keeps the events even if the run raises
    tracer = trace if isinstance(trace, Tracer) else (Tracer() if trace else None)
    if oracle is None:
        oracle = RandomOracle(seed) if randomize else NominalOracle()
    # check_invariants: each module checks its own at every progress(); conservation across
    # modules (it needs both ends) every ``conservation_every`` events (check: every one,
    # through the job's CreditAudit, which skips the events that moved no credit state)
    every_event = check_invariants and conservation_every == 1
    sim = Simulator(seed=seed, oracle=oracle, tracer=tracer)
    devices = [device] + [peer_device or device] * (nprocs - 1)
    mca = load_mca(cli_pairs=pairs)
    btls = build_job_btls(
        sim,
        nprocs,
        devices,
        mca,
        check_invariants=check_invariants,
        cpu_scale=cpu_scale,
        audit_credits=every_event,
    )
    queues = btls[0].queues
    checker = _Checker()
    if iterations is None:
        iterations = {"pingpong": 100, "stream": 2000, "bibw": 2000, "incast": 500}[name]
    failures: list[TransportError] = []

    if name == "pingpong":
        size = _sizes(queues)[0]

        def pp_rank(btl):
            state = _attach(btl, checker)
            peer = 1 - btl.rank
            seq = 0
            for i in range(iterations):
                if (i % 2) == btl.rank:
                    buf = bytearray(size)
                    checker.stamp(buf, btl.rank, 0, seq)
                    seq += 1
                    if not btl.sendi(peer, _TAG, buf, True):
                        btl.send(peer, _TAG, buf, None, True)
                else:
                    target = state["recv"] + 1
                    while state["recv"] < target:
                        if btl.progress() == 0:
                            btl.wait_for_activity()
            while btl.progress():
                pass

        bodies = {r: (pp_rank, btls[r]) for r in range(2)}
    else:
        plans = _plans(name, nprocs, queues, iterations, btls[0].eager_limit)
        expect = defaultdict(int)
        for plan in plans.values():
            for peer, _, _ in plan:
                expect[peer] += 1

        def rank_body(btl):
            state = _attach(btl, checker)
            _drive(btl, state, plans[btl.rank], expect[btl.rank], window, checker)

        bodies = {r: (rank_body, btls[r]) for r in range(nprocs)}

    finished: list[int] = []

    def guarded(fn, btl):
        try:
            fn(btl)
            finished.append(sim.now)
        except TransportError as exc:
            failures.append(exc)

    for r, (fn, btl) in bodies.items():
        sim.spawn(guarded, fn, btl, name=f"rank{r}")
    if every_event:
        audit = btls.credit_audit
        ranks = len(bodies)

        def after_event() -> bool:
            # (an empty heap needs no test here: the loop ends there by itself)
            if failures:
                return True
            if audit.changed:  # most events move no credit state: no call for them
                audit.check()
            return len(finished) == ranks or sim.now > _TIME_LIMIT_PS

        sim.run(after_event=after_event)
    else:
        while True:
            sim.run(max_events=conservation_every if check_invariants else 2_000_000)
            if check_invariants and not failures:
                for a in btls:
                    for b in btls:
                        if a is not b:
                            a.assert_conservation(b)
            if failures or sim.peek() is None or len(finished) == len(bodies):
                break
            if sim.now > _TIME_LIMIT_PS:
                break
    # a rank blocked in wait_for_activity after its peer failed: report the first failure
    first = min(failures, key=lambda e: e.time_ps) if failures else None
    if first is None:
        for b in btls:
            if b.failed is not None:
                first = b.failed
                break
    blocked = sim.blocked_processes()
    hung = None
    if first is None and blocked and len(finished) < len(bodies):
        hung = "ranks blocked with nothing left to happen: " + ", ".join(p.name for p in blocked)
    if first is None and hung is None and checker.holes():
        raise PyopenibError("scenario-delivery", detail="; ".join(checker.holes()))
    if first is not None:
        end = first.time_ps
    else:
        end = max(finished) if finished else sim.now
    result = ScenarioResult(
        name, first is None and hung is None, first, hung, end, tracer=tracer, modules=btls
    )
    for q in range(len(queues)):
        result.frags_per_qp[q] = sum(b.traffic[q].frags for b in btls)
        result.bytes_per_qp[q] = sum(b.traffic[q].bytes for b in btls)
        result.credit_msgs_per_qp[q] = sum(b.traffic[q].credit_msgs for b in btls)
        result.piggybacked_per_qp[q] = sum(
            ep.qps[q].piggybacked for b in btls for ep in b.endpoints.values()
        )
    result.rnr_naks = sum(
        qs.qp.query_counters().rnr_naks_received
        for b in btls
        for ep in b.endpoints.values()
        for qs in ep.qps
        if qs.qp is not None
    )
    result.delivered = checker.delivered
    return result
