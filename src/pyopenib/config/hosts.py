"""Host types: what the MPI / ob1 / openib software path costs a CPU (``data/hosts.toml``).

A pure reader of the host file: each ``[hosts.NAME]`` table becomes a ``HostType`` with
its costs in integer picoseconds, ``[device_hosts]`` says which host each device model
runs on by default (``default`` for the ones not listed). The simulation side, which
charges these costs on a rank's clock, is ``sim.host.HostModel``; this module knows
nothing of simulation. A bad file is an error naming the file, the host and the field,
before any job starts.
"""

from __future__ import annotations

import math
import tomllib
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from ..errors import PyopenibError, register_topics

__all__ = ["HostType", "HostCatalogue", "load_hosts", "host_for_device", "COST_FIELDS"]

register_topics(
    {
        "host-file": "cannot read host file {file}: {reason}",
        "host-syntax": "{file}: invalid TOML: {reason}",
        "host-field": "{file}: host {host!r}: {field} = {value!r}: {reason}",
        "host-unknown-field": "{file}: host {host!r}: unknown field {field!r} (known: {known})",
        "host-missing": (
            "{file}: [device_hosts] {device} = {host!r}: no [hosts.{host}] table (hosts: {known})"
        ),
        "host-no-default": "{file}: [device_hosts] has no `default` host",
    }
)

COST_FIELDS = (
    "mpi_call_ns",
    "match_ns",
    "btl_send_ns",
    "completion_ns",
    "poll_empty_ns",
    "post_recv_ns",
    "copy_setup_ns",
)
"""The per-event costs of a host, nanoseconds in the file (see ``HostType``)."""

_PS_PER_NS = 1000


@dataclass(frozen=True, slots=True)
class HostType:
    """One host's software costs, picoseconds (bandwidth in bytes per second).

    ``mpi_call``: an MPI point-to-point call's own work (request, sequence number,
    match header); ``match``: ob1 matching of one fragment or one new receive;
    ``btl_send``: the openib descriptor work of one fragment (the doorbell is the
    device's ``host_post``); ``completion``: handling one CQE or eager-RDMA slot found
    (``ibv_poll_cq`` itself is the device's ``host_poll``); ``poll_empty``: a progress
    pass that finds nothing; ``post_recv``: one receive WR when the BTL re-posts;
    ``copy_setup`` + bytes / ``copy_bytes_per_s``: one memcpy in or out."""

    name: str
    description: str
    mpi_call: int
    match: int
    btl_send: int
    completion: int
    poll_empty: int
    post_recv: int
    copy_setup: int
    copy_bytes_per_s: float


@dataclass(frozen=True, slots=True)
class HostCatalogue:
    """The host types of one file and the default host of each device model."""

    file: str
    hosts: dict[str, HostType]
    device_hosts: dict[str, str]

    def for_device(self, device_id: str) -> HostType:
        """The host a device model runs on unless told otherwise."""
        name = self.device_hosts.get(device_id, self.device_hosts["default"])
        return self.hosts[name]


def _cost(file: str, host: str, field: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise PyopenibError(
            "host-field", file=file, host=host, field=field, value=value, reason="not a number"
        )
    if not math.isfinite(value) or value < 0:
        raise PyopenibError(
            "host-field",
            file=file,
            host=host,
            field=field,
            value=value,
            reason="must be a finite number >= 0",
        )
    return round(value * _PS_PER_NS)


def _host(file: str, name: str, table) -> HostType:
    if not isinstance(table, dict):
        raise PyopenibError(
            "host-field", file=file, host=name, field="(table)", value=table, reason="not a table"
        )
    known = {*COST_FIELDS, "copy_gbps", "description"}
    for field in table:
        if field not in known:
            raise PyopenibError(
                "host-unknown-field",
                file=file,
                host=name,
                field=field,
                known=", ".join(sorted(known)),
            )
    costs = {}
    for field in (*COST_FIELDS, "copy_gbps"):
        if field not in table:
            raise PyopenibError(
                "host-field", file=file, host=name, field=field, value=None, reason="missing"
            )
    for field in COST_FIELDS:
        costs[field.removesuffix("_ns")] = _cost(file, name, field, table[field])
    gbps = table["copy_gbps"]
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float)) or not gbps > 0:
        raise PyopenibError(
            "host-field",
            file=file,
            host=name,
            field="copy_gbps",
            value=gbps,
            reason="must be a number > 0",
        )
    if not math.isfinite(gbps):
        raise PyopenibError(
            "host-field", file=file, host=name, field="copy_gbps", value=gbps, reason="not finite"
        )
    return HostType(name, str(table.get("description", "")), **costs, copy_bytes_per_s=gbps * 1e9)


def _parse(file: str, text: str) -> HostCatalogue:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PyopenibError("host-syntax", file=file, reason=exc) from None
    hosts = {name: _host(file, name, table) for name, table in data.get("hosts", {}).items()}
    device_hosts = dict(data.get("device_hosts", {}))
    if "default" not in device_hosts:
        raise PyopenibError("host-no-default", file=file)
    for device, host in device_hosts.items():
        if host not in hosts:
            raise PyopenibError(
                "host-missing", file=file, device=device, host=host, known=", ".join(hosts)
            )
    return HostCatalogue(file, hosts, device_hosts)


def load_hosts(path: str | Path | None = None) -> HostCatalogue:
    """The host file at ``path``, or the packaged ``pyopenib/data/hosts.toml``."""
    if path is None:
        return _packaged()
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PyopenibError("host-file", file=str(path), reason=exc) from None
    return _parse(str(path), text)


@lru_cache(maxsize=1)
def _packaged() -> HostCatalogue:
    source = resources.files("pyopenib") / "data" / "hosts.toml"
    return _parse(str(source), source.read_text(encoding="utf-8"))


def host_for_device(device_id: str) -> HostType:
    """The packaged default host of a device model (``[device_hosts]``)."""
    return _packaged().for_device(device_id)
