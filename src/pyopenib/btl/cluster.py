"""A job's BTL modules: ``ppn`` processes per host, one NIC per host on one fabric, each
process with the settings its host's device resolves (so mixed clusters apply each
process's own policy), and the out-of-band channel the connection setup uses (Open
MPI's runtime / RDMA CM exchange).

Placement follows Open MPI's default by-core mapping, which fills a node before the
next: ranks ``h*ppn .. h*ppn+ppn-1`` run on host ``h``, and every one of them opens its
own verbs context on the host's NIC. With one process per node each rank gets its
``OpenibModule``; with several, a ``Bml`` that sends to on-node peers through the
shared-memory BTL (``sm``) and to the others through openib.
"""

from __future__ import annotations

from ..config import CreditsPolicy, McaContext, check_peer_compatibility, effective_settings
from ..config.hosts import host_for_device
from ..errors import PyopenibError, register_topics
from ..sim.host import HostModel
from ..verbs import attach_device, find_device, open_devices
from .bml import Bml, openib_module
from .credit_audit import CreditAudit
from .module import OpenibModule
from .sm import SmModule, SmNode

__all__ = ["JobBtls", "OobChannel", "build_job_btls", "stall_report", "OOB_LATENCY_PS"]

OOB_LATENCY_PS = 20_000_000
"""One out-of-band message (TCP through the runtime): 20 us. A guess; it only shifts
when the first message of a connection leaves."""

register_topics(
    {
        "btl-iwarp-first-queue": (
            "receive_queues {queues!r} on {device}: the first queue must be a per-peer (P) "
            "queue on iWARP (the RDMA CM connection manager sends the CTS on it)"
        ),
        "btl-no-srq": (
            "receive_queues {queues!r} has shared (S) queues but device {device} has no SRQ "
            "support; use per-peer (P) queues"
        ),
        "btl-ppn": (
            "--ppn {ppn}: {nprocs} processes do not fill whole nodes of {ppn} (-n must be a "
            "positive multiple of --ppn)"
        ),
        "btl-ppn-devices": (
            "ranks {a} ({da}) and {b} ({db}) share node{host:03d} but name different "
            "devices; a node has one NIC, so its ranks must name the same device"
        ),
        "btl-inline-too-big": (
            "max_inline_data {value} (from {source}): device {device} can send at most "
            "{limit} bytes inline (ibv_create_qp would fail with EINVAL); set "
            "btl_openib_max_inline_data to -1 to take the device's limit"
        ),
        "btl-spawn-ppn": (
            "--ppn {ppn}: pyopenib adds spawned processes only to a job of one process "
            "per node (each on a node of its own); run with --ppn 1 to spawn"
        ),
        "btl-mixed-transport": (
            "ranks {a} ({da}, {ta}) and {b} ({db}, {tb}) have conflicting transport types; "
            "openib cannot connect InfiniBand and iWARP ports"
        ),
    }
)


class OobChannel:
    """The job's out-of-band channel: what every process publishes before wire-up (Open
    MPI's modex: here each module's credits policy), and connection-setup messages
    between modules, delivered after ``OOB_LATENCY_PS``."""

    def __init__(self, sim, latency_ps: int = OOB_LATENCY_PS):
        self.sim = sim
        self.latency = latency_ps
        self.modules: list[OpenibModule] = []
        self._policies: dict[int, CreditsPolicy] = {}

    def publish(self, rank: int, policy: CreditsPolicy) -> None:
        """Rank ``rank``'s settings, published once when its module starts (the modex)."""
        self._policies[rank] = policy

    def policy_of(self, rank: int) -> CreditsPolicy:
        """The credits policy rank ``rank`` published: where its credit messages travel.
        Every module publishes before any process sends, so a peer's is always known."""
        return self._policies[rank]

    def send(self, src: int, dst: int, kind: str, body) -> None:
        self.sim.schedule(self.latency, self.modules[dst].oob_receive, src, kind, body)

    def module(self, rank: int):
        return self.modules[rank] if 0 <= rank < len(self.modules) else None


def build_job_btls(
    sim,
    nprocs: int,
    devices,
    mca: McaContext,
    ppn: int = 1,
    *,
    check_invariants: bool = False,
    cpu_scale: float = 1.0,
    audit_credits: bool = False,
):
    """One BTL module per rank. ``devices``: one device id for all, or a list per rank
    (the ranks of one node must name the same device: it is the node's NIC); ``mca`` the
    job's resolved MCA variables (``config.load_mca`` / ``load_mca_from_process``).
    Each rank runs on its device's default host type (``config.hosts``), its software
    costs multiplied by ``cpu_scale`` (``--cpu-scale``; 0: a free host).

    Settings resolve per device exactly as Open MPI does for the local process (MCA >
    INI > default); nodes are checked for compatible receive_queues before anything
    runs (the wire-up abort Open MPI users know, reported up front).

    ``audit_credits``: the job's ``credit_audit`` is a ``CreditAudit`` over its openib
    modules, for a caller that checks conservation after every event.
    """
    if ppn < 1 or nprocs % ppn:
        raise PyopenibError("btl-ppn", ppn=ppn, nprocs=nprocs)
    names = [devices] * nprocs if isinstance(devices, str) else list(devices)
    for r, name in enumerate(names):
        first = r - r % ppn
        if name != names[first]:
            raise PyopenibError(
                "btl-ppn-devices", a=first, da=names[first], b=r, db=name, host=r // ppn
            )
    models = [find_device(n) for n in names[::ppn]]  # one per node
    ctx = mca
    settings = []
    cache = {}
    for m in models:
        key = (m.vendor_id[0], m.vendor_part_ids[0])
        if key not in cache:
            cache[key] = effective_settings(ctx, *key)
        settings.append(cache[key])
    for i, (m, s) in enumerate(zip(models, settings, strict=True)):
        if m.transport == "iwarp" and s.receive_queues[0].kind != "P":
            raise PyopenibError(
                "btl-iwarp-first-queue", queues=s.receive_queues_string, device=m.id
            )
        if not m.srq and any(q.kind == "S" for q in s.receive_queues):
            raise PyopenibError("btl-no-srq", queues=s.receive_queues_string, device=m.id)
        if s.max_inline_data > m.max_inline:
            raise PyopenibError(
                "btl-inline-too-big",
                value=s.max_inline_data,
                source=s.origins.get("max_inline_data", "?"),
                device=m.id,
                limit=m.max_inline,
            )
        if i and m.transport != models[0].transport:
            raise PyopenibError(
                "btl-mixed-transport",
                a=0,
                da=models[0].id,
                ta=models[0].transport,
                b=i * ppn,
                db=m.id,
                tb=m.transport,
            )
        if i:
            check_peer_compatibility(settings[0], s)
    hosts = [f"node{h:03d}" for h in range(len(models))]
    contexts = open_devices(
        sim, models, [f"{h}/{m.id}" for h, m in zip(hosts, models, strict=True)], per_device=ppn
    )
    oob = OobChannel(sim)
    host_types = [host_for_device(m.id) for m in models]
    audit = CreditAudit() if audit_credits else None
    modules = [
        OpenibModule(
            rank,
            contexts[rank],
            settings[rank // ppn],
            oob,
            hosts[rank // ppn],
            check_invariants,
            HostModel(sim, host_types[rank // ppn], cpu_scale),
            audit,
        )
        for rank in range(nprocs)
    ]
    oob.modules = modules
    if audit is not None:
        audit.modules = modules  # oob's list: the processes a job adds join it
    job = (models[0], settings[0], oob, ppn, check_invariants, cpu_scale, audit)
    if ppn == 1:
        return JobBtls(modules, *job)
    nodes = [SmNode(h) for h in hosts]
    btls = [
        Bml(
            rank,
            modules[rank],
            SmModule(rank, sim, nodes[rank // ppn]),
            range(rank - rank % ppn, rank - rank % ppn + ppn),
            nprocs,
        )
        for rank in range(nprocs)
    ]
    return JobBtls(btls, *job)


class JobBtls(list):
    """The job's BTL modules by process index, and the runtime's means to add processes
    to the running job (``MPI_Comm_spawn``): ``add_processes(n)`` starts each new process
    on a node of its own, with node 0's device and settings, its NIC on the job's fabric
    and its openib module on the out-of-band channel, wired up exactly like the first
    ones (peers connect to it on their first send). The new modules join the list."""

    def __init__(
        self,
        modules,
        device,
        settings,
        oob: OobChannel,
        ppn: int,
        check_invariants,
        cpu_scale,
        credit_audit: CreditAudit | None = None,
    ):
        super().__init__(modules)
        self.check_invariants = check_invariants
        self.credit_audit = credit_audit
        """The ``CreditAudit`` of ``build_job_btls(audit_credits=True)``, else None."""
        self.cpu_scale = cpu_scale
        self.device = device  # node 0's device model, every new node's
        self.settings = settings
        self.oob = oob
        self.ppn = ppn

    def add_processes(self, count: int) -> list:
        if self.ppn != 1:
            raise PyopenibError("btl-spawn-ppn", ppn=self.ppn)
        added = []
        for rank in range(len(self), len(self) + count):
            host = f"node{rank:03d}"
            (context,) = attach_device(self[0].context, self.device, f"{host}/{self.device.id}")
            module = OpenibModule(
                rank,
                context,
                self.settings,
                self.oob,
                host,
                self.check_invariants,
                HostModel(self[0].sim, host_for_device(self.device.id), self.cpu_scale),
                self.credit_audit,
            )
            self.oob.modules.append(module)
            added.append(module)
        self.extend(added)
        return added


def stall_report(btls) -> list[str]:
    """Each rank's ``describe_stall``, in rank order, for a job that stopped with every
    rank blocked: where the BTL's fragments wait and why no credit moves (ranks that
    reach their peers only through shared memory have nothing to say)."""
    lines = []
    for btl in btls:
        module = openib_module(btl)
        if module is not None:
            lines.extend(module.describe_stall())
    return lines
