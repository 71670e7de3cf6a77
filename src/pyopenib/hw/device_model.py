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
from dataclasses import dataclass, replace
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
    "PCIE_LANE_GBPS",
    "with_slot",
]

TRANSPORTS = ("ib", "iwarp")
LINK_LAYERS = ("ib", "ethernet")
# "shared": SQ and RQ work requests of a QP sit in ONE FIFO the NIC processes in order,
# a receive after the sends ahead have left the wire (Chelsio T3); "firmware": the HCA's
# firmware processes a QP's doorbells in order, a receive after the sends ahead have been
# processed (IBM eHCA); "split": independent send and receive engines.
WORK_QUEUES = ("shared", "firmware", "split")
# The values of enum ibv_mtu; iWARP devices report one too (Open MPI's INI sets it).
VERBS_MTUS = (256, 512, 1024, 2048, 4096)
PCIE_LANE_GBPS = {1: 2.0, 2: 4.0, 3: 8.0 * 128 / 130, 4: 16.0 * 128 / 130, 5: 32.0 * 128 / 130}
"""Data rate of one PCIe lane per generation after line encoding (8b/10b up to gen2,
128b/130b from gen3), before TLP and DLLP overhead, in Gb/s."""
PCIE_LANES = (1, 2, 4, 8, 16, 32)
_SLOT = re.compile(r"(?:gen(?P<gen>[1-5]))?\s*x(?P<lanes>\d+)\Z")

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
        "device-model-bad-slot": "device {device!r}: host slot {slot!r}: {reason}",
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
    ``ethernet`` link layer). ``link_gbps`` is a data rate after line encoding;
    ``pcie_gbps`` the DMA rate the card reaches over its host bus (after encoding and
    TLP overhead) in its own ``pcie_gen`` x ``pcie_lanes`` slot. Durations are
    documented in docs/devices.md; the one-way latency of a small SEND is host_post +
    pcie_latency + send_wqe + serialization + 2 * link_latency + switch_latency + rx +
    pcie_latency + cqe + host_poll, and an RDMA WRITE is visible to a CPU polling the
    memory after the same path less cqe + host_poll: ``rx`` is the responder's
    processing that both pay, ``cqe`` only the completion a SEND adds.
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
    rx: Interval
    cqe: Interval
    host_post: Interval
    host_poll: Interval
    pcie_gen: int = 0
    """The card's PCIe generation (0: not a PCIe device, ``pcie_gbps`` is its bus)."""
    pcie_lanes: int = 0
    """The card's PCIe link width (0 with ``pcie_gen`` 0)."""
    slot: str = ""
    """The host slot the card sits in when not its own (``gen3x8``); ``pcie_gbps`` is
    then the rate of the link as trained (see ``with_slot``)."""
    variant_of: str = ""
    """The device this one is a variant of (same adapter and PCI ids, e.g. its RoCE
    personality); ``find_device_by_ids`` returns the primary, as Open MPI's INI does."""

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
    "rx",
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
# optional file fields -> kind; an absent one keeps DeviceModel's default
_OPTIONAL: dict[str, str] = {
    "pcie_gen": "int",
    "pcie_lanes": "int",
    "slot": "str",
    "variant_of": "str",
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
        if field == "pcie_gen" and value not in (0, *PCIE_LANE_GBPS):
            bad_value("must be a PCIe generation 1-5 (0: not a PCIe device)")
        if field == "pcie_lanes" and value not in (0, *PCIE_LANES):
            bad_value(f"must be a PCIe link width ({', '.join(map(str, PCIE_LANES))})")
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
        if field not in _SCHEMA and field not in _OPTIONAL:
            valid = ", ".join([*_SCHEMA, *_OPTIONAL])
            _fail(where, device, field, "device-model-unknown-field", valid=valid)
    values: dict[str, object] = {"id": device}
    for field, kind in _SCHEMA.items():
        if field not in table:
            raise PyopenibError(
                "device-model-missing-field", where=where(device), device=device, field=field
            )
        name = field.removesuffix("_ns") if kind == "interval" else field
        values[name] = _convert(where, device, field, kind, table[field])
    for field, kind in _OPTIONAL.items():
        if field in table:
            values[field] = _convert(where, device, field, kind, table[field])
    slot = values.pop("slot", "")
    model = DeviceModel(**values)
    _check_consistency(where, model)
    if slot:
        try:
            model = with_slot(model, slot)
        except PyopenibError as exc:
            reason = exc.facts["reason"]
            _fail(where, device, "slot", "device-model-bad-value", value=slot, reason=reason)
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
    if (m.pcie_gen == 0) != (m.pcie_lanes == 0):
        _fail(
            where,
            m.id,
            "pcie_lanes" if m.pcie_gen else "pcie_gen",
            "device-model-bad-value",
            value=m.pcie_lanes if m.pcie_gen else m.pcie_gen,
            reason="pcie_gen and pcie_lanes are given together (both 0: not a PCIe device)",
        )
    if m.pcie_gen and m.pcie_gbps > _raw_gbps(m.pcie_gen, m.pcie_lanes):
        raw = _raw_gbps(m.pcie_gen, m.pcie_lanes)
        _fail(
            where,
            m.id,
            "pcie_gbps",
            "device-model-bad-value",
            value=m.pcie_gbps,
            reason=f"above the {raw:g} Gb/s a PCIe gen{m.pcie_gen} x{m.pcie_lanes} link carries",
        )
    if m.srq != (m.max_srq_wr > 0):
        reason = "must be > 0 when srq = true" if m.srq else "must be 0 when srq = false"
        _fail(
            where, m.id, "max_srq_wr", "device-model-bad-value", value=m.max_srq_wr, reason=reason
        )


def _raw_gbps(gen: int, lanes: int) -> float:
    return PCIE_LANE_GBPS[gen] * lanes


def with_slot(model: DeviceModel, slot: str) -> DeviceModel:
    """``model`` in a host slot other than its own: ``gen3x8``, ``gen2 x16`` or ``x8`` (the
    card's own generation). The link trains at the lower generation and the narrower
    width of card and slot, as PCIe links do, and the DMA rate scales with the trained
    link's raw rate: a gen3 x16 ConnectX-5 in a gen3 x8 slot has half its bus bandwidth,
    a gen3 x8 card in an x16 slot no more than its own. The bus latency is unchanged."""
    text = slot.strip().lower().replace(" ", "")
    m = _SLOT.match(text)
    if not model.pcie_gen:
        raise PyopenibError(
            "device-model-bad-slot",
            device=model.id,
            slot=slot,
            reason="the device is not a PCIe card (its host bus is fixed)",
        )
    if m is None or int(m.group("lanes")) not in PCIE_LANES:
        raise PyopenibError(
            "device-model-bad-slot",
            device=model.id,
            slot=slot,
            reason=f"expected gen<1-5>x<lanes> or x<lanes>, lanes one of "
            f"{', '.join(map(str, PCIE_LANES))} (e.g. gen3x8)",
        )
    gen = min(int(m.group("gen") or model.pcie_gen), model.pcie_gen)
    lanes = min(int(m.group("lanes")), model.pcie_lanes)
    scale = _raw_gbps(gen, lanes) / _raw_gbps(model.pcie_gen, model.pcie_lanes)
    trained = f"gen{gen}x{lanes}"
    return replace(
        model,
        id=f"{model.id}@{trained}",
        pcie_gbps=model.pcie_gbps * scale,
        pcie_gen=gen,
        pcie_lanes=lanes,
        slot=trained,
    )


def _check_variants(where: _Where, models: dict[str, DeviceModel]) -> None:
    """A variant names a primary device of the file, and is the same adapter: the same
    INI section name and PCI ids (a RoCE personality, not another card)."""
    for m in models.values():
        if not m.variant_of:
            continue
        primary = models.get(m.variant_of)
        if primary is None or primary.variant_of:
            reason = "must name a device of this file that is not itself a variant"
        elif (primary.name, primary.vendor_id, primary.vendor_part_ids) != (
            m.name,
            m.vendor_id,
            m.vendor_part_ids,
        ):
            reason = f"must have the name, vendor_id and vendor_part_ids of {primary.id!r}"
        else:
            continue
        _fail(
            where, m.id, "variant_of", "device-model-bad-value", value=m.variant_of, reason=reason
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
    _check_variants(where, models)
    return models


@lru_cache(maxsize=1)
def _packaged_models() -> dict[str, DeviceModel]:
    source = resources.files("pyopenib") / "data" / "devices.toml"
    return _parse(str(source), source.read_text(encoding="utf-8"))


def get_device_model(
    name_or_alias: str, models: dict[str, DeviceModel] | None = None
) -> DeviceModel:
    """The device with this id or alias (case-insensitive), e.g. ``connectx`` or ``T3``;
    ``NAME@SLOT`` puts it in another host slot (``connectx5@gen3x8``, see ``with_slot``)."""
    models = load_device_models() if models is None else models
    name, _, slot = name_or_alias.partition("@")
    key = name.strip().casefold()
    for model in models.values():
        if key == model.id.casefold() or key in (a.casefold() for a in model.aliases):
            return with_slot(model, slot) if slot.strip() else model
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
        if model.variant_of:
            continue  # the same card as its primary: the ids name the primary
        if vendor_id in model.vendor_id and part_id in model.vendor_part_ids:
            return model
    return None
