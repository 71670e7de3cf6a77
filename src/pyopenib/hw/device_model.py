"""Device models: the timing and capabilities of one RDMA NIC, loaded from TOML data.

A device model is data, not a subclass per vendor (ARCHITECTURE.md): this module owns the
schema of ``data/devices.toml``, its validation, and lookup by id, alias or PCI ids. It knows
nothing about links, packets or queues — the NIC and wire models read the numbers from here.

Every duration is an ``Interval`` (lo, nominal, hi) in integer picoseconds; the file writes
them in nanoseconds. The simulator draws each duration through ``sim.duration(label, *iv)``,
so the nominal oracle reproduces the reference timing and the checker can explore the ends.
The sources of every value are in ``docs/devices.md``.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import NamedTuple

from ..errors import PyopenibError, register_topics

__all__ = [
    "Interval",
    "DeviceModel",
    "load_device_models",
    "get_device_model",
    "find_device_by_ids",
    "TRANSPORTS",
    "LINK_LAYERS",
    "WORK_QUEUES",
    "VERBS_MTUS",
]

TRANSPORTS = ("ib", "iwarp")
LINK_LAYERS = ("ib", "ethernet")
# "shared": SQ and RQ work requests of a QP sit in ONE FIFO the NIC processes in order
# (Chelsio T3); "split": independent send and receive engines.
WORK_QUEUES = ("shared", "split")
# The values of enum ibv_mtu; iWARP devices report one too (Open MPI's INI sets it).
VERBS_MTUS = (256, 512, 1024, 2048, 4096)

register_topics(
    {
        "device-model-file": "cannot read device-model file {file}: {reason}",
        "device-model-syntax": "{file}: invalid TOML: {reason}",
        "device-model-not-table": "{where}: device {device!r} must be a table, got {value!r}",
        "device-model-bad-id": "{where}: device id {device!r} is not a slug "
        "(lower-case letters, digits, '-', '_', '.')",
        "device-model-unknown-field": "{where}: device {device!r}: unknown field {field!r} "
        "(fields: {valid})",
        "device-model-missing-field": "{where}: device {device!r}: missing field {field!r}",
        "device-model-bad-type": "{where}: device {device!r}: field {field!r} must be "
        "{expected}, got {value!r}",
        "device-model-bad-value": "{where}: device {device!r}: field {field!r} = {value!r}: "
        "{reason}",
        "device-model-duplicate-name": "{where}: device {device!r}: {kind} {name!r} already "
        "names device {other!r}",
        "device-model-empty": "{file}: no device models defined",
        "device-model-unknown": "unknown device {name!r}; valid device ids: {valid}",
    }
)


class Interval(NamedTuple):
    """A duration the oracle may pick inside: ``lo <= nominal <= hi`` picoseconds."""

    lo: int
    nominal: int
    hi: int


@dataclass(frozen=True, slots=True)
class DeviceModel:
    """One RDMA device as the simulated NIC sees it (one table of ``devices.toml``).

    ``name``, ``vendor_id`` and ``vendor_part_ids`` are those of the device's section in
    Open MPI's ``mca-btl-openib-device-params.ini``, so the BTL finds its INI values.
    ``transport`` is what ``ibv_device.transport_type`` says (RoCE is ``ib`` over an
    ``ethernet`` link layer). ``link_gbps`` and ``pcie_gbps`` are data rates after line
    encoding. Durations are documented in docs/devices.md; the one-way latency of a small
    SEND is host_post + pcie_latency + send_wqe + serialization + 2 * link_latency +
    switch_latency + pcie_latency + cqe + host_poll.
    """

    id: str
    name: str
    aliases: tuple[str, ...]
    vendor_id: tuple[int, ...]
    vendor_part_ids: tuple[int, ...]
    transport: str
    link_layer: str
    link_gbps: float
    mtu_max: int
    work_queue: str
    max_inline: int
    srq: bool
    max_qp_wr: int
    max_srq_wr: int
    max_cq_entries: int
    pcie_gbps: float
    link_latency: Interval
    switch_latency: Interval
    pcie_latency: Interval
    send_wqe: Interval
    recv_wqe: Interval
    recv_usable: Interval
    cqe: Interval
    host_post: Interval
    host_poll: Interval

    @property
    def ps_per_byte(self) -> float:
        """Serialization time of one byte on the link, in picoseconds."""
        return 8000.0 / self.link_gbps

    @property
    def pcie_ps_per_byte(self) -> float:
        """DMA time of one byte between host memory and the NIC, in picoseconds."""
        return 8000.0 / self.pcie_gbps


# --- schema -------------------------------------------------------------------------------

_INTERVAL_FIELDS = (
    "link_latency",
    "switch_latency",
    "pcie_latency",
    "send_wqe",
    "recv_wqe",
    "recv_usable",
    "cqe",
    "host_post",
    "host_poll",
)
# file field -> kind; kinds are checked by _convert below.
_SCHEMA: dict[str, str] = {
    "name": "str",
    "aliases": "slugs",
    "vendor_id": "ids",
    "vendor_part_ids": "ids",
    "transport": "str",
    "link_layer": "str",
    "link_gbps": "rate",
    "mtu_max": "int",
    "work_queue": "str",
    "max_inline": "int",
    "srq": "bool",
    "max_qp_wr": "int",
    "max_srq_wr": "int",
    "max_cq_entries": "int",
    "pcie_gbps": "rate",
    **{f"{f}_ns": "interval" for f in _INTERVAL_FIELDS},
}
_CHOICES = {"transport": TRANSPORTS, "link_layer": LINK_LAYERS, "work_queue": WORK_QUEUES}
_SLUG = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
_MAX_ID = 0xFFFFFFFF


class _Where:
    """Line numbers of device tables and their fields, found by a cheap scan of the text.

    tomllib does not report positions of values; a line scan for ``[id]`` headers and
    ``key =`` lines is enough for the flat tables of devices.toml.
    """

    _HEADER = re.compile(r"\s*\[\s*\"?([^\]\"]+?)\"?\s*\]")
    _KEY = re.compile(r"\s*([A-Za-z0-9_-]+)\s*=")

    def __init__(self, file: str, text: str):
        self.file = file
        self.lines: dict[tuple[str, str | None], int] = {}
        section = None
        for number, line in enumerate(text.splitlines(), start=1):
            if m := self._HEADER.match(line):
                section = m.group(1)
                self.lines.setdefault((section, None), number)
            elif section is not None and (m := self._KEY.match(line)):
                self.lines.setdefault((section, m.group(1)), number)

    def __call__(self, device: str, field: str | None = None) -> str:
        line = self.lines.get((device, field)) or self.lines.get((device, None))
        return f"{self.file}:{line}" if line else self.file


def _fail(where: _Where, device: str, field: str, topic: str, **facts):
    raise PyopenibError(topic, where=where(device, field), device=device, field=field, **facts)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _convert(where: _Where, device: str, field: str, kind: str, value):
    """Check one field's type and range; return its DeviceModel value."""

    def bad_type(expected: str):
        _fail(where, device, field, "device-model-bad-type", expected=expected, value=value)

    def bad_value(reason: str):
        _fail(where, device, field, "device-model-bad-value", value=value, reason=reason)

    if kind == "str":
        if not isinstance(value, str) or not value.strip():
            bad_type("a non-empty string")
        if field in _CHOICES and value not in _CHOICES[field]:
            bad_value(f"must be one of {', '.join(_CHOICES[field])}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            bad_type("true or false")
        return value
    if kind == "int":
        if not _is_int(value):
            bad_type("an integer")
        if value < 0:
            bad_value("must not be negative")
        if field == "mtu_max" and value not in VERBS_MTUS:
            bad_value(f"must be a verbs MTU ({', '.join(map(str, VERBS_MTUS))})")
        if field in ("max_qp_wr", "max_cq_entries") and value == 0:
            bad_value("must be positive")
        return value
    if kind == "rate":
        if not _is_number(value):
            bad_type("a number (Gb/s)")
        if not value > 0:
            bad_value("must be positive")
        return float(value)
    if kind == "ids":
        if not isinstance(value, list) or not value or not all(_is_int(v) for v in value):
            bad_type("a non-empty list of integers")
        if any(not 0 <= v <= _MAX_ID for v in value):
            bad_value("ids must be between 0 and 0xffffffff")
        return tuple(value)
    if kind == "slugs":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            bad_type("a list of strings")
        for alias in value:
            if not _SLUG.match(alias):
                bad_value(f"alias {alias!r} is not a slug (lower-case letters, digits, -_.)")
        return tuple(value)
    # interval
    if not isinstance(value, list) or len(value) != 3 or not all(_is_number(v) for v in value):
        bad_type("[lo, nominal, hi] (three numbers of nanoseconds)")
    lo, nominal, hi = value
    if lo < 0:
        bad_value("durations must not be negative")
    if not lo <= nominal <= hi:
        bad_value("must satisfy lo <= nominal <= hi")
    return Interval(*(round(v * 1000) for v in value))


def _build(where: _Where, device: str, table) -> DeviceModel:
    if not isinstance(table, dict):
        raise PyopenibError(
            "device-model-not-table", where=where(device), device=device, value=table
        )
    if not _SLUG.match(device):
        raise PyopenibError("device-model-bad-id", where=where(device), device=device)
    for field in table:
        if field not in _SCHEMA:
            valid = ", ".join(_SCHEMA)
            _fail(where, device, field, "device-model-unknown-field", valid=valid)
    values: dict[str, object] = {"id": device}
    for field, kind in _SCHEMA.items():
        if field not in table:
            raise PyopenibError(
                "device-model-missing-field", where=where(device), device=device, field=field
            )
        name = field.removesuffix("_ns") if kind == "interval" else field
        values[name] = _convert(where, device, field, kind, table[field])
    model = DeviceModel(**values)
    _check_consistency(where, model)
    return model


def _check_consistency(where: _Where, m: DeviceModel) -> None:
    """Cross-field rules: what a verbs device can report at all."""
    if m.transport == "iwarp" and m.link_layer != "ethernet":
        _fail(
            where,
            m.id,
            "link_layer",
            "device-model-bad-value",
            value=m.link_layer,
            reason="iWARP runs over TCP, so its link layer is ethernet",
        )
    if m.srq != (m.max_srq_wr > 0):
        reason = "must be > 0 when srq = true" if m.srq else "must be 0 when srq = false"
        _fail(
            where, m.id, "max_srq_wr", "device-model-bad-value", value=m.max_srq_wr, reason=reason
        )


def _check_names(where: _Where, models: dict[str, DeviceModel]) -> None:
    """Every id and alias names exactly one device, case-insensitively."""
    owner: dict[str, str] = {}
    for model in models.values():
        for kind, name in [("id", model.id)] + [("alias", a) for a in model.aliases]:
            key = name.casefold()
            if key in owner:
                raise PyopenibError(
                    "device-model-duplicate-name",
                    where=where(model.id, "aliases" if kind == "alias" else None),
                    device=model.id,
                    kind=kind,
                    name=name,
                    other=owner[key],
                )
            owner[key] = model.id


def load_device_models(path: str | Path | None = None) -> dict[str, DeviceModel]:
    """Load and validate a device-model file; keys are device ids, in file order.

    With no ``path``, the packaged ``pyopenib/data/devices.toml``. Any problem raises
    ``PyopenibError`` naming the file, line, device and field.
    """
    if path is None:
        return dict(_packaged_models())
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PyopenibError("device-model-file", file=str(path), reason=exc) from None
    return _parse(str(path), text)


def _parse(file: str, text: str) -> dict[str, DeviceModel]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PyopenibError("device-model-syntax", file=file, reason=exc) from None
    if not data:
        raise PyopenibError("device-model-empty", file=file)
    where = _Where(file, text)
    models = {device: _build(where, device, table) for device, table in data.items()}
    _check_names(where, models)
    return models


@lru_cache(maxsize=1)
def _packaged_models() -> dict[str, DeviceModel]:
    source = resources.files("pyopenib") / "data" / "devices.toml"
    return _parse(str(source), source.read_text(encoding="utf-8"))


def get_device_model(
    name_or_alias: str, models: dict[str, DeviceModel] | None = None
) -> DeviceModel:
    """The device with this id or alias (case-insensitive), e.g. ``connectx`` or ``T3``."""
    models = load_device_models() if models is None else models
    key = name_or_alias.strip().casefold()
    for model in models.values():
        if key == model.id.casefold() or key in (a.casefold() for a in model.aliases):
            return model
    raise PyopenibError("device-model-unknown", name=name_or_alias, valid=", ".join(models))


def find_device_by_ids(
    vendor_id: int, part_id: int, models: dict[str, DeviceModel] | None = None
) -> DeviceModel | None:
    """The first device (in file order) with this PCI vendor id and part id, else None.

    First wins as in Open MPI's INI lookup, where a (vendor, part) pair listed by two
    sections keeps the first section's name (part 16: QLogic InfiniPath 2 and 3).
    """
    models = load_device_models() if models is None else models
    for model in models.values():
        if vendor_id in model.vendor_id and part_id in model.vendor_part_ids:
            return model
    return None
