"""Bringing up a cluster's devices: one NIC per host on one switched fabric, opened as a
verbs ``Context`` by each process of the host (what ``ibv_get_device_list`` +
``ibv_open_device`` give every process)."""

from __future__ import annotations

from ..hw import DeviceModel, Fabric, Nic, get_device_model
from ._objects import Context

__all__ = ["attach_device", "find_device", "open_devices"]


def find_device(name: str) -> DeviceModel:
    """The device called ``name`` (its id or an alias, case-insensitive, e.g. ``connectx``
    or ``T3``): what ``ibv_get_device_list`` and a name match give a process choosing the
    device to open. Job assembly reads its identity and limits before any NIC exists, to
    resolve settings and reject a bad combination up front; an unknown name is the
    catalogue's error, listing the valid ones."""
    return get_device_model(name)


def open_devices(
    sim, models: list[DeviceModel], names: list[str] | None = None, per_device: int = 1
) -> list[Context]:
    """Attach one NIC per model (one per host) to a new fabric and open each
    ``per_device`` times: contexts ``h * per_device .. h * per_device + per_device - 1``
    share host ``h``'s NIC. ``names`` label the NICs (default ``<device id>:<host index>``)."""
    fabric = Fabric(sim)
    if names is None:
        names = [f"{m.id}:{i}" for i, m in enumerate(models)]
    nics = [Nic(sim, m, fabric, name) for m, name in zip(models, names, strict=True)]
    return [Context(nic) for nic in nics for _ in range(per_device)]


def attach_device(neighbour: Context, model: DeviceModel, name: str, per_device: int = 1):
    """Attach one more NIC, for a host that joins a running cluster (the nodes of a
    spawned job), to the fabric of the opened device ``neighbour``, and open it
    ``per_device`` times."""
    nic = Nic(neighbour.sim, model, neighbour.nic.fabric, name)
    return [Context(nic) for _ in range(per_device)]
