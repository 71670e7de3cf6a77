"""The settings one process's openib BTL actually uses on a device, and where each came
from: an MCA variable (with its source), the device's INI section (file:line), or a
built-in default. Open MPI computes these in ``init_one_device`` and ``setup_qps`` and
cannot show them; ``pyopenib info --device`` does.

Precedence (Open MPI 4.1, ``btl_openib_component.c``):

* receive_queues: explicitly set MCA value > the device's INI value (``[default]``
  fallback) > the built-in default string.
* mtu: ``btl_openib_mtu`` > 0 > INI mtu > 1024 bytes.
* use_eager_rdma: ``btl_openib_use_eager_rdma`` >= 0 > INI > off.
* max_inline_data: explicitly set MCA value (-1 = probe) > INI > 0.
* credits policy (new): ``btl_openib_credits_qp`` own/smallest > (``auto``) INI
  ``credits_on_own_qp`` > smallest (Open MPI's behaviour).
* eager_limit and max_send_size are lowered to the largest receive buffer when they
  are still at their defaults (Open MPI 2016, commit 2ef2763f72).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from ..errors import PyopenibError
from . import topics  # noqa: F401  (registers the messages)
from .device_params import DeviceParams, DeviceParamsTable, IniValue, load_device_params
from .mca import McaContext
from .receive_queues import (
    QueueSpec,
    credits_qp_index,
    default_receive_queues,
    parse_receive_queues,
    qp_inline_sizes,
)

__all__ = ["CreditsPolicy", "EffectiveSettings", "check_peer_compatibility", "effective_settings"]


class CreditsPolicy(StrEnum):
    """Where a receiver sends the explicit credit messages of a per-peer queue
    (``btl_openib_credits_qp``, resolved: ``auto`` is gone by now). The receiver's policy
    decides, because it owns the receive queue at risk."""

    SMALLEST = "smallest"
    """Open MPI's behaviour: every P queue's credit messages travel on ``credits_qp``
    (the first P queue), whose reserve holds the buffers for all of them."""
    OWN = "own"
    """Each P queue's credit messages travel on the queue they credit, so on a device
    with one work queue per QP they wait behind that queue's receive posts."""


BUILT_IN = "built-in default"


@dataclass(frozen=True)
class EffectiveSettings:
    """What the BTL uses on one device; ``origins[field]`` says where each came from."""

    vendor_id: int
    part_id: int
    device_section: str | None
    ignore_device: bool
    receive_queues: tuple[QueueSpec, ...]
    receive_queues_string: str
    receive_queues_kind: str
    """``mca`` (explicitly set), ``ini`` (the device's INI value) or ``default``."""
    default_receive_queues_string: str
    device_ini_receive_queues: str | None
    """The device's own INI receive_queues without ``[default]`` (what a peer checks)."""
    mtu: int
    use_eager_rdma: bool
    max_inline_data: int
    credits_policy: CreditsPolicy
    """Where explicit credit messages of a P queue travel (``own`` or ``smallest``)."""
    credits_qp_index: int
    """The QP Open MPI calls ``credits_qp`` (first P queue, else the last queue): where
    every P queue's credit messages travel under ``smallest``. Not the MCA variable
    ``btl_openib_credits_qp``, which chooses the policy."""
    eager_limit: int
    max_send_size: int
    rndv_eager_limit: int
    ib_rnr_retry: int
    ib_min_rnr_timer: int
    ib_retry_count: int
    ib_timeout: int
    eager_rdma_threshold: int
    eager_rdma_num: int
    max_eager_rdma: int
    cq_size: int
    enable_srq_resize: bool
    leave_pinned: bool
    """The registration cache keeps unused registrations (``mpi_leave_pinned`` resolved
    with ``mpi_leave_pinned_pipeline``, as Open MPI's rcache creation does)."""
    leave_pinned_protocol: bool
    """ob1 chooses its rendezvous protocols as with leave_pinned (``opal_leave_pinned``
    after the rcache resolved auto): every rendezvous registers both buffers and goes
    by RDMA. Off (leave_pinned 0, or the pipeline variant), messages above
    ``min_rdma_pipeline_size`` use the RDMA pipeline and copy in/out."""
    min_rdma_pipeline_size: int
    rdma_pipeline_send_length: int
    rdma_pipeline_frag_size: int
    send_pipeline_depth: int
    recv_pipeline_depth: int
    """ob1's own two (``pml_ob1_*``), resolved with the BTL's because the job's MCA
    context reaches the PML through its BTL."""
    origins: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """Things the user may want to know (no INI section for the device, clamping)."""

    @property
    def device_label(self) -> str:
        name = f" [{self.device_section}]" if self.device_section else ""
        return f"vendor 0x{self.vendor_id:04x} part {self.part_id}{name}"

    def rows(self) -> list[tuple[str, str, str]]:
        """(setting, value, origin) rows for display, in a stable order."""
        shown = (
            ("receive_queues", self.receive_queues_string),
            ("credits_policy", self.credits_policy),
            ("credits_qp_index", str(self.credits_qp_index)),
            ("mtu", str(self.mtu)),
            ("use_eager_rdma", str(int(self.use_eager_rdma))),
            ("max_inline_data", str(self.max_inline_data)),
            ("qp_inline", self.qp_inline_string),
            ("eager_limit", str(self.eager_limit)),
            ("max_send_size", str(self.max_send_size)),
            ("rndv_eager_limit", str(self.rndv_eager_limit)),
            ("ib_rnr_retry", str(self.ib_rnr_retry)),
            ("ib_min_rnr_timer", str(self.ib_min_rnr_timer)),
            ("ib_retry_count", str(self.ib_retry_count)),
            ("ib_timeout", str(self.ib_timeout)),
            ("eager_rdma_threshold", str(self.eager_rdma_threshold)),
            ("eager_rdma_num", str(self.eager_rdma_num)),
            ("max_eager_rdma", str(self.max_eager_rdma)),
            ("cq_size", str(self.cq_size)),
            ("enable_srq_resize", str(int(self.enable_srq_resize))),
            ("leave_pinned", str(int(self.leave_pinned))),
            ("leave_pinned_protocol", str(int(self.leave_pinned_protocol))),
            ("min_rdma_pipeline_size", str(self.min_rdma_pipeline_size)),
            ("rdma_pipeline_send_length", str(self.rdma_pipeline_send_length)),
            ("rdma_pipeline_frag_size", str(self.rdma_pipeline_frag_size)),
            ("send_pipeline_depth", str(self.send_pipeline_depth)),
            ("recv_pipeline_depth", str(self.recv_pipeline_depth)),
            ("ignore_device", str(int(self.ignore_device))),
        )
        probe = "; max is the device's limit (-1 probes it)" if self.max_inline_data < 0 else ""
        origins = {**self.origins, "qp_inline": _QP_INLINE_ORIGIN + probe}
        return [(name, value, origins[name]) for name, value in shown]

    @property
    def qp_inline_string(self) -> str:
        """Each QP's inline size, ``:``-separated like receive_queues (with -1 the
        device's probed limit stands in for max_inline_data: ``max``)."""
        if self.max_inline_data >= 0:
            sizes = qp_inline_sizes(self.receive_queues, self.max_inline_data)
            return ":".join(str(n) for n in sizes)
        last = len(self.receive_queues) - 1
        return ":".join(
            f"min({q.size},max)" if i in (0, last) else f"{q.size} if <= max else 0"
            for i, q in enumerate(self.receive_queues)
        )


_QP_INLINE_ORIGIN = (
    "Open MPI's max_inline_size(): a queue's size when it fits max_inline_data, else "
    "max_inline_data on the first and last QP and 0 between"
)


def _mca_origin(ctx: McaContext, name: str) -> str:
    return f"MCA {name} ({ctx.source(name)})"


def _ini_origin(device: DeviceParams, key: str, value: IniValue) -> str:
    via = " via [default]" if key in device.from_default else ""
    return f"INI {value.where()}{via}"


def effective_settings(
    ctx: McaContext, vendor_id: int, part_id: int, ini: DeviceParamsTable | None = None
) -> EffectiveSettings:
    """Resolve the settings for the local device (vendor_id, part_id). ``ini`` defaults
    to the files named by ``btl_openib_device_param_files`` (read strictly)."""
    if ini is None:
        files = [p for p in str(ctx.get("btl_openib_device_param_files")).split(":") if p]
        ini = load_device_params(files)
    device = ini.lookup(vendor_id, part_id)
    own = ini.lookup(vendor_id, part_id, with_default=False)
    origins: dict[str, str] = {}
    notes: list[str] = []
    if not device.found and ctx.get("btl_openib_warn_no_device_params_found"):
        notes.append(
            f"no device-params INI section for vendor 0x{vendor_id:04x} part {part_id} in "
            f"{':'.join(ini.paths)}; using [default] values"
        )

    # receive_queues
    eager_limit = ctx.get("btl_openib_eager_limit")
    max_send_size = ctx.get("btl_openib_max_send_size")
    default_string = default_receive_queues(eager_limit, max_send_size)
    if not ctx.is_default("btl_openib_receive_queues"):
        rq_string, rq_kind = ctx.get("btl_openib_receive_queues"), "mca"
        rq_source = ctx.source("btl_openib_receive_queues")
        origins["receive_queues"] = _mca_origin(ctx, "btl_openib_receive_queues")
    elif device.receive_queues is not None:
        rq_string, rq_kind = device.receive_queues.value, "ini"
        rq_source = f"{device.receive_queues.path}:{device.receive_queues.line}"
        origins["receive_queues"] = _ini_origin(device, "receive_queues", device.receive_queues)
    else:
        rq_string, rq_kind, rq_source = default_string, "default", "default"
        origins["receive_queues"] = _mca_origin(ctx, "btl_openib_receive_queues")
    queues = parse_receive_queues(rq_string, rq_source)

    # eager_limit / max_send_size against the largest buffer (setup_qps)
    largest = queues[-1].size
    sizes = {}
    for name in ("eager_limit", "max_send_size"):
        full = f"btl_openib_{name}"
        value = ctx.get(full)
        origins[name] = _mca_origin(ctx, full)
        if value > largest and ctx.is_default(full):
            value = largest
            origins[name] += f", lowered to the largest receive buffer ({largest} bytes)"
        sizes[name] = value
    for name, value in sizes.items():
        if value > largest:
            raise PyopenibError(
                "rq-too-small",
                value=rq_string,
                source=rq_source,
                largest=largest,
                variable=f"btl_openib_{name}",
                needed=value,
                needed_source=ctx.source(f"btl_openib_{name}"),
            )
    free_list_max = ctx.get("btl_openib_free_list_max")
    required = max(q.rd_num + q.rd_rsv if q.kind == "P" else q.rd_num for q in queues)
    if 0 < free_list_max < required:
        raise PyopenibError(
            "rq-freelist-too-small",
            free_list_max=free_list_max,
            source=ctx.source("btl_openib_free_list_max"),
            required=required,
            value=rq_string,
        )

    def layered(
        setting,
        mca_name,
        mca_wins,
        mca_value,
        ini_key,
        convert,
        default,
        ini_note="",
        default_note="",
    ):
        """Open MPI's precedence for a device setting: an MCA value that applies, else
        the device's INI value (``[default]`` included), else the built-in default."""
        if mca_wins:
            origins[setting] = _mca_origin(ctx, mca_name)
            return mca_value
        ini = getattr(device, ini_key)
        if ini is not None:
            origins[setting] = _ini_origin(device, ini_key, ini) + ini_note
            return convert(ini.value)
        origins[setting] = BUILT_IN + default_note
        return default

    mtu_code = ctx.get("btl_openib_mtu")
    mtu_set = isinstance(mtu_code, int) and mtu_code > 0
    mtu = layered(
        "mtu", "btl_openib_mtu", mtu_set, 128 << mtu_code if mtu_set else 0, "mtu", int, 1024
    )
    eager_mca = ctx.get("btl_openib_use_eager_rdma")
    use_eager_rdma = layered(
        "use_eager_rdma",
        "btl_openib_use_eager_rdma",
        eager_mca >= 0,
        eager_mca > 0,
        "use_eager_rdma",
        bool,
        False,
    )
    max_inline_data = layered(
        "max_inline_data",
        "btl_openib_max_inline_data",
        not ctx.is_default("btl_openib_max_inline_data"),
        ctx.get("btl_openib_max_inline_data"),
        "max_inline_data",
        int,
        0,
    )
    requested = ctx.get("btl_openib_credits_qp")
    policy = layered(
        "credits_policy",
        "btl_openib_credits_qp",
        requested != "auto",
        requested,
        "credits_on_own_qp",
        lambda own: CreditsPolicy.OWN if own else CreditsPolicy.SMALLEST,
        CreditsPolicy.SMALLEST,
        " (btl_openib_credits_qp = auto)",
        " (auto and no INI credits_on_own_qp)",
    )
    origins["credits_qp_index"] = (
        "receive_queues: its first P queue (the last queue if none), the QP every credit "
        "message travels on under credits_policy smallest"
    )

    ignore = device.ignore_device is not None and bool(device.ignore_device.value)
    origins["ignore_device"] = (
        _ini_origin(device, "ignore_device", device.ignore_device)
        if device.ignore_device is not None
        else BUILT_IN
    )
    plain = {}
    for name in (
        "rndv_eager_limit",
        "ib_rnr_retry",
        "ib_min_rnr_timer",
        "ib_retry_count",
        "ib_timeout",
        "eager_rdma_threshold",
        "eager_rdma_num",
        "max_eager_rdma",
        "cq_size",
        "enable_srq_resize",
    ):
        plain[name] = ctx.get(f"btl_openib_{name}")
        origins[name] = _mca_origin(ctx, f"btl_openib_{name}")

    leave_pinned, leave_pinned_protocol = _leave_pinned(ctx, origins, notes)
    for name in ("min_rdma_pipeline_size", "rdma_pipeline_send_length", "rdma_pipeline_frag_size"):
        plain[name] = ctx.get(f"btl_openib_{name}")
        origins[name] = _mca_origin(ctx, f"btl_openib_{name}")
    for name in ("send_pipeline_depth", "recv_pipeline_depth"):
        plain[name] = ctx.get(f"pml_ob1_{name}")
        origins[name] = _mca_origin(ctx, f"pml_ob1_{name}")
    return EffectiveSettings(
        vendor_id=vendor_id,
        part_id=part_id,
        device_section=device.section,
        ignore_device=ignore,
        receive_queues=queues,
        receive_queues_string=rq_string,
        receive_queues_kind=rq_kind,
        default_receive_queues_string=default_string,
        device_ini_receive_queues=(
            own.receive_queues.value if own.receive_queues is not None else None
        ),
        mtu=mtu,
        use_eager_rdma=use_eager_rdma,
        max_inline_data=max_inline_data,
        credits_policy=CreditsPolicy(policy),
        credits_qp_index=credits_qp_index(queues),
        eager_limit=sizes["eager_limit"],
        max_send_size=sizes["max_send_size"],
        leave_pinned=leave_pinned,
        leave_pinned_protocol=leave_pinned_protocol,
        origins=origins,
        notes=tuple(notes),
        **plain,
    )


def _leave_pinned(ctx: McaContext, origins: dict[str, str], notes: list[str]) -> tuple[bool, bool]:
    """(the registration cache keeps unused registrations, ob1's protocols are the
    leave-pinned ones), as Open MPI 4.1 decides: both true is refused with a warning and
    leave_pinned wins (``opal_params.c``); the first rcache created with leave_pinned at
    auto (-1) turns it on when the memory hooks work, unless leave_pinned_pipeline is
    set (``rcache_base_create.c``); grdma then keeps registrations when either is on
    (``rcache_grdma_component.c``), while ob1 reads ``opal_leave_pinned`` alone
    (``pml_ob1_rdma.c``): the pipeline variant caches registrations but keeps the
    pipelined protocols."""
    value = ctx.get("mpi_leave_pinned")
    pipeline = ctx.get("mpi_leave_pinned_pipeline")
    origin = _mca_origin(ctx, "mpi_leave_pinned")
    if value > 0 and pipeline:
        pipeline = False
        notes.append(
            "cannot set both mpi_leave_pinned and mpi_leave_pinned_pipeline to true; "
            "using mpi_leave_pinned only"
        )
    if value == -1:
        origin += (
            ", auto: on unless leave_pinned_pipeline, as Open MPI 4.1 does when its memory "
            "hooks work (here: the buffers' lifetimes)"
        )
    if pipeline:
        origin = _mca_origin(ctx, "mpi_leave_pinned_pipeline")
    origins["leave_pinned"] = origin
    protocol = value > 0 or (value == -1 and not pipeline)
    origins["leave_pinned_protocol"] = (
        f"{_mca_origin(ctx, 'mpi_leave_pinned')} as ob1 reads it (opal_leave_pinned): "
        "auto is on unless mpi_leave_pinned_pipeline is set, which caches registrations "
        "but keeps the pipelined protocols"
    )
    return value != 0 or pipeline, protocol


def check_peer_compatibility(local: EffectiveSettings, remote: EffectiveSettings) -> None:
    """Raise ``PyopenibError`` naming what differs if the two processes could not connect.

    Open MPI checks this at wire-up (``tune_endpoint``) only when the local value came
    from an INI file or the default, and aborts with *unsupported queues configuration*;
    pyopenib requires the resolved queues to be identical whatever their source, because
    a job whose peers disagree on the queues cannot run correctly. Credit policies,
    MTUs and eager RDMA may differ (each side's receiver decides; MTU and eager RDMA are
    negotiated down).
    """
    if local.receive_queues == remote.receive_queues:
        return
    what = _first_difference(local.receive_queues, remote.receive_queues)
    raise PyopenibError(
        "peer-queues-differ",
        what=what,
        local_device=local.device_label,
        local_value=local.receive_queues_string,
        local_origin=local.origins["receive_queues"],
        remote_device=remote.device_label,
        remote_value=remote.receive_queues_string,
        remote_origin=remote.origins["receive_queues"],
    )


def _first_difference(mine: tuple[QueueSpec, ...], theirs: tuple[QueueSpec, ...]) -> str:
    for index, (a, b) in enumerate(zip(mine, theirs, strict=False)):
        if a != b:
            return f"queue {index} is {a.spec()} locally but {b.spec()} remotely"
    return f"{len(mine)} queues locally but {len(theirs)} remotely"
