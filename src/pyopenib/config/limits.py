"""Settings checked against the device model before any rank starts.

Open MPI finds most of these only inside the job: ``ibv_create_qp`` fails with EINVAL
when a receive queue asks for more work requests than ``max_qp_wr``, a shared receive
queue above ``max_srq_wr`` fails ``ibv_create_srq``, a filter that matches no device
leaves the openib BTL out (*no devices right type*), a device its INI file marks
``ignore_device`` is skipped. In pyopenib those would end as a traceback inside a rank,
so ``check_device`` refuses them up front, naming the MCA variable, its value, its
source and the limit, as Open MPI's show_help messages do.

``DeviceLimits`` is read from a device model by attribute (config imports no other
layer); the queue depths follow Open MPI's connection managers (reference 2.9), as the
BTL sizes its QPs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PyopenibError, register_topics
from .effective import EffectiveSettings
from .mca import McaContext
from .receive_queues import QueueSpec

__all__ = ["DeviceLimits", "check_device", "check_job_memory", "qp_depths", "queue_depths"]

register_topics(
    {
        "limit-device-type": (
            "btl_openib_device_type = {value} (source: {source}) excludes device {device} "
            "({transport}): Open MPI's openib would find no device of the right type and "
            "leave the job without a transport; set btl_openib_device_type to all or "
            "{transport}"
        ),
        "limit-ignore-device": (
            "device {device} ({label}) is marked ignore_device = 1 in {where}: Open MPI's "
            "openib skips it, so the job would have no transport; choose another device "
            "or another device-params file (btl_openib_device_param_files)"
        ),
        "limit-qp-depth": (
            "btl_openib_receive_queues {value!r} (source: {source}): queue {index} "
            "({entry}) needs up to {needed} {direction} work requests per QP, but device "
            "{device} allows at most {limit} (max_qp_wr; ibv_create_qp would fail with "
            "EINVAL); lower {field}"
        ),
        "limit-srq-depth": (
            "btl_openib_receive_queues {value!r} (source: {source}): shared queue {index} "
            "({entry}) needs {needed} work requests (rd_num + sd_max), but device {device} "
            "allows at most {limit} per shared receive queue (max_srq_wr; ibv_create_srq "
            "would fail with EINVAL); lower rd_num or sd_max"
        ),
        "limit-memory": (
            "-n {nprocs}: the job needs about {need} of memory ({per_rank} per rank, as "
            "measured), but this machine has {available} available; run fewer ranks"
        ),
        "limit-memory-ring": (
            "btl_openib_eager_rdma_num = {value} (source: {source}): one eager RDMA ring "
            "would be {ring} (eager_rdma_num + 1 slots of eager_limit + headers), more than "
            "this machine's memory and swap ({total}); lower btl_openib_eager_rdma_num"
        ),
        "limit-largest-buffer": (
            "btl_openib_receive_queues {value!r} (source: {source}): the largest receive "
            "buffer ({largest} bytes) cannot hold {what} ({needed} bytes); make the last "
            "queue's size at least {needed}"
        ),
    }
)


@dataclass(frozen=True)
class DeviceLimits:
    """What one device model allows (``ibv_query_device``'s attributes)."""

    device: str
    transport: str
    """``infiniband`` or ``iwarp``."""
    srq: bool
    max_qp_wr: int
    max_srq_wr: int

    @classmethod
    def of(cls, model) -> DeviceLimits:
        """The limits of a ``hw`` device model (read by attribute name)."""
        return cls(model.id, model.transport, model.srq, model.max_qp_wr, model.max_srq_wr)


def qp_depths(
    queues: tuple[QueueSpec, ...], credits_qp: int, q: int, policy: str, peer_policy: str
) -> tuple[int, int]:
    """``max_recv_wr`` and ``max_send_wr`` of queue q's QP, as Open MPI's CPCs size them
    (reference 2.9), for this process's credit ``policy`` and its peer's: a P queue
    posts rd_num receives, plus the reserve for the peer's credit messages where the
    peer sends them (rd_rsv on q with ``own``; every P queue's on credits_qp with
    ``smallest``), plus the CTS buffer on credits_qp; it sends up to rd_num fragments
    plus the credit messages it carries (one with ``own``; one per P queue on credits_qp
    with ``smallest``) plus one. An S queue sends up to sd_max plus the same. The BTL
    creates its QPs with these numbers; ``queue_depths`` checks them against the device."""
    spec = queues[q]
    pp = [i for i, s in enumerate(queues) if s.kind == "P"]
    if spec.kind != "P":
        extra_send = len(pp) if policy != "own" and q == credits_qp else 0
        return 0, spec.sd_max + extra_send + 1
    recv = spec.rd_num
    if peer_policy == "own":
        recv += spec.rd_rsv
    elif q == credits_qp:
        recv += sum(queues[i].rd_rsv for i in pp)
    if q == credits_qp:
        recv += 1  # the CTS buffer
    if policy == "own":
        extra_send = 1
    else:
        extra_send = len(pp) if q == credits_qp else 0
    return recv, spec.rd_num + extra_send + 1


POLICIES = ("own", "smallest")


def queue_depths(queues: tuple[QueueSpec, ...], credits_qp: int) -> list[tuple[int, int]]:
    """(receive, send) work requests each queue's QP may need: ``qp_depths`` at its
    largest over both credit policies of this process and of its peer (a QP is created
    before the peer's policy is known)."""
    depths = []
    for q in range(len(queues)):
        pairs = [qp_depths(queues, credits_qp, q, a, b) for a in POLICIES for b in POLICIES]
        depths.append((max(r for r, _ in pairs), max(s for _, s in pairs)))
    return depths


def check_device(
    ctx: McaContext,
    settings: EffectiveSettings,
    limits: DeviceLimits,
    min_largest: int = 0,
    min_largest_what: str = "",
) -> None:
    """Refuse settings that ``limits`` cannot carry. ``min_largest`` is the largest
    header the layer above must send in one fragment (the PML's), named by
    ``min_largest_what``."""
    wanted = ctx.get("btl_openib_device_type")
    wanted_transport = {"infiniband": "ib", "iwarp": "iwarp"}.get(str(wanted))
    if wanted_transport is not None and wanted_transport != limits.transport:
        raise PyopenibError(
            "limit-device-type",
            value=wanted,
            source=ctx.source("btl_openib_device_type"),
            device=limits.device,
            transport=limits.transport,
        )
    if settings.ignore_device:
        raise PyopenibError(
            "limit-ignore-device",
            device=limits.device,
            label=settings.device_label,
            where=settings.origins["ignore_device"],
        )
    facts = {
        "value": settings.receive_queues_string,
        "source": (
            ctx.source("btl_openib_receive_queues")
            if settings.receive_queues_kind == "mca"
            else settings.origins["receive_queues"]
        ),
        "device": limits.device,
    }
    queues = settings.receive_queues
    for index, ((recv, send), q) in enumerate(
        zip(queue_depths(queues, settings.credits_qp_index), queues, strict=True)
    ):
        for needed, direction in ((recv, "receive"), (send, "send")):
            if needed > limits.max_qp_wr:
                field = "rd_num" if q.kind == "P" else "sd_max"
                raise PyopenibError(
                    "limit-qp-depth",
                    **facts,
                    index=index,
                    entry=q.spec(),
                    needed=needed,
                    direction=direction,
                    limit=limits.max_qp_wr,
                    field=field,
                )
        if q.kind == "S" and limits.srq and q.rd_num + q.sd_max > limits.max_srq_wr:
            raise PyopenibError(
                "limit-srq-depth",
                **facts,
                index=index,
                entry=q.spec(),
                needed=q.rd_num + q.sd_max,
                limit=limits.max_srq_wr,
            )
    if queues[-1].size < min_largest:
        raise PyopenibError(
            "limit-largest-buffer",
            **facts,
            largest=queues[-1].size,
            needed=min_largest,
            what=min_largest_what,
        )


def check_job_memory(ctx: McaContext, settings, nprocs: int, rank_bytes: int) -> None:
    """Refuse a job that cannot fit in this machine's memory, instead of dying of it
    minutes later inside a rank: ``nprocs`` ranks of ``rank_bytes`` each (what one rank
    of the command measurably costs; receive buffers are allocated untouched and cost
    only the pages a message writes, which the measure includes) against the memory
    available now, and each eager RDMA ring (one allocation per peer) of ``settings``
    (one ``EffectiveSettings`` per device) against the memory and swap there are at all
    (a larger allocation fails outright; receive buffers are at most 2 GiB each).
    ``run``, ``scenario`` and ``check`` call it before any rank starts."""
    available, total = _memory()
    need = nprocs * rank_bytes
    if available is not None and need > available:
        raise PyopenibError(
            "limit-memory",
            nprocs=nprocs,
            need=_bytes(need),
            per_rank=_bytes(rank_bytes),
            available=_bytes(available),
        )
    if total is None:
        return
    for st in settings:
        ring = st.eager_rdma_num * (st.eager_limit + 64) if st.use_eager_rdma else 0
        if ring > total:
            raise PyopenibError(
                "limit-memory-ring",
                value=ctx.get("btl_openib_eager_rdma_num") - 1,
                source=ctx.source("btl_openib_eager_rdma_num"),
                ring=_bytes(ring),
                total=_bytes(total),
            )


def _memory() -> tuple[int | None, int | None]:
    """(MemAvailable, MemTotal + SwapTotal) from /proc/meminfo (Linux); None where they
    cannot be read."""
    fields = {}
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                name, _, rest = line.partition(":")
                fields[name] = int(rest.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        return None, None
    total = None
    if "MemTotal" in fields:
        total = fields["MemTotal"] + fields.get("SwapTotal", 0)
    return fields.get("MemAvailable"), total


def _bytes(n: int) -> str:
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}"
    return f"{n} bytes"
