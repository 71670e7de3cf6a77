"""Map a device-model name (``--device chelsio-t3``) to its PCI (vendor_id, part_id).

The device models live in ``pyopenib/data/devices.toml`` (owned by ``hw``); config must
not import ``hw``, so this reads only the identity keys of each model table:
``vendor_id`` and ``vendor_part_ids`` (ints or lists of ints), ``name`` and ``aliases``. The first
vendor id and first part id stand for the model.
"""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

from ..errors import PyopenibError
from . import topics  # noqa: F401  (registers the messages)

__all__ = ["DEVICES_TOML", "device_ids"]

DEVICES_TOML = str(resources.files("pyopenib") / "data" / "devices.toml")


def device_ids(device: str, path: str | Path | None = None) -> tuple[int, int, str]:
    """(vendor_id, part_id, model key) of ``device``: a model's table key, its ``name``
    or one of its ``aliases``, in any case."""
    path = str(path or DEVICES_TOML)
    try:
        with open(path, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise PyopenibError(
            "ini-devices-file-missing", device=device, path=path, reason=reason
        ) from None
    models = dict(_models(data))
    wanted = device.lower()
    for name, table in models.items():
        names = [name, str(table.get("name", name)), *_as_list(table.get("aliases", []))]
        if wanted in (n.lower() for n in names):
            ids = [_pci_id(path, name, key, table[key]) for key in ("vendor_id", "vendor_part_ids")]
            return ids[0], ids[1], name
    raise PyopenibError(
        "ini-unknown-device", device=device, path=path, known=", ".join(sorted(models)) or "none"
    )


def _models(data: dict):
    """Every table that has both identity keys, by its table name."""
    for key, value in data.items():
        if not isinstance(value, dict):
            continue
        if "vendor_id" in value and "vendor_part_ids" in value:
            yield key, value
        else:
            yield from _models(value)


def _as_list(value) -> list:
    return list(value) if isinstance(value, list) else [value]


def _pci_id(path: str, model: str, key: str, value) -> int:
    """The first id of ``key``: a PCI id is an integer from 0 to 0xffffffff."""
    items = _as_list(value)
    first = items[0] if items else None
    if isinstance(first, bool) or not isinstance(first, int) or not 0 <= first < 2**32:
        raise PyopenibError("ini-devices-file-bad-id", path=path, model=model, key=key, value=value)
    return first
