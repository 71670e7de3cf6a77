"""A job's BTL modules: one process per host (NIC) on one fabric, each with the settings
its own device resolves (so mixed clusters apply each process's own policy), and the
out-of-band channel the connection setup uses (Open MPI's runtime / RDMA CM exchange).
"""

from __future__ import annotations

from ..config import check_peer_compatibility, effective_settings, load_mca
from ..errors import PyopenibError, register_topics
from ..hw import get_device_model
from ..verbs import open_devices
from .module import OpenibModule

__all__ = ["OobChannel", "build_job_btls", "OOB_LATENCY_PS"]

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
        "btl-mixed-transport": (
            "ranks {a} ({da}, {ta}) and {b} ({db}, {tb}) have conflicting transport types; "
            "openib cannot connect InfiniBand and iWARP ports"
        ),
    }
)


class OobChannel:
    """Delivers connection-setup messages between modules after ``OOB_LATENCY_PS``."""

    def __init__(self, sim, latency_ps: int = OOB_LATENCY_PS):
        self.sim = sim
        self.latency = latency_ps
        self.modules: list[OpenibModule] = []

    def send(self, src: int, dst: int, kind: str, body) -> None:
        self.sim.schedule(self.latency, self.modules[dst].oob_receive, src, kind, body)

    def module(self, rank: int):
        return self.modules[rank] if 0 <= rank < len(self.modules) else None


def build_job_btls(sim, nprocs: int, devices, mca_pairs=(), ppn: int = 1, *, mca=None,
                   check_invariants: bool = False):  # fmt: skip
    """One OpenibModule per rank. ``devices``: one device id for all, or a list per rank.

    Settings resolve per device exactly as Open MPI does for the local process (MCA >
    INI > default); peers are checked for compatible receive_queues before anything
    runs (the wire-up abort Open MPI users know, reported up front).
    """
    if ppn != 1:
        raise PyopenibError("btl-ppn", ppn=ppn)
    names = [devices] * nprocs if isinstance(devices, str) else list(devices)
    models = [get_device_model(n) for n in names]
    ctx = mca if mca is not None else load_mca(cli_pairs=list(mca_pairs))
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
        if i and m.transport != models[0].transport:
            raise PyopenibError("btl-mixed-transport", a=0, da=models[0].id,
                                ta=models[0].transport, b=i, db=m.id, tb=m.transport)  # fmt: skip
        if i:
            check_peer_compatibility(settings[0], s)
    contexts = open_devices(sim, models, [f"node{i:03d}/{m.id}" for i, m in enumerate(models)])
    oob = OobChannel(sim)
    modules = [
        OpenibModule(rank, contexts[rank], settings[rank], oob, f"node{rank:03d}", check_invariants)
        for rank in range(nprocs)
    ]
    oob.modules = modules
    return modules


register_topics({"btl-ppn": "--ppn {ppn}: only one process per node is modelled so far"})
