"""Bringing up a cluster's devices: one NIC per host on one switched fabric, each opened
as a verbs ``Context`` (what ``ibv_get_device_list`` + ``ibv_open_device`` give a host)."""

from __future__ import annotations

from ..hw import DeviceModel, Fabric, Nic
from ._objects import Context

__all__ = ["open_devices"]


def open_devices(sim, models: list[DeviceModel], names: list[str] | None = None) -> list[Context]:
    """Attach one NIC per model to a new fabric and open each; ``names`` label them
    (default ``<device id>:<host index>``)."""
    fabric = Fabric(sim)
    if names is None:
        names = [f"{m.id}:{i}" for i, m in enumerate(models)]
    return [Context(Nic(sim, m, fabric, name)) for m, name in zip(models, names, strict=True)]
