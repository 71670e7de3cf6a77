"""Device-params INI files (Open MPI's ``mca-btl-openib-device-params.ini`` format).

A section names a device family: ``vendor_id`` and ``vendor_part_id`` lists (hex, octal
or decimal) and tuning values. Every file of the list is read in order (Open MPI's code
skips the last file of a list: a quirk we do not copy) and a later section for the same
(vendor, part) overrides earlier values key by key, keeping each value's file, line and
section. A lookup falls back to the ``[default]`` section (vendor 0, part 0) for the
tuning keys mtu, use_eager_rdma, receive_queues, max_inline_data and credits_on_own_qp;
``ignore_device`` and ``rdmacm_reject_causes_connect_error`` describe one device and are
not inherited.

Problems are collected as ``IniDiagnostic`` objects (never printed here). An unknown key
is a warning, as in Open MPI, and so is a section name repeated in one file; everything Open MPI would silently misread (junk numbers,
text outside a section, a missing ``=``) is an error, reported with file and line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import PyopenibError
from . import topics  # noqa: F401  (registers the messages)
from .keyval import Assignment, Problem, Section, lex
from .receive_queues import parse_receive_queues

__all__ = [
    "DeviceParams",
    "DeviceParamsTable",
    "IniDiagnostic",
    "IniValue",
    "load_device_params",
    "parse_ini_text",
]

MTU_BYTES = (256, 512, 1024, 2048, 4096)
TUNING_KEYS = ("mtu", "use_eager_rdma", "receive_queues", "max_inline_data", "credits_on_own_qp")
"""Keys a device inherits from ``[default]`` when its own sections do not set them."""
VALUE_KEYS = TUNING_KEYS + ("rdmacm_reject_causes_connect_error", "ignore_device")
_INTEGER = re.compile(r"[+-]?(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)")


@dataclass(frozen=True, slots=True)
class IniValue:
    """A value and the place it was read from."""

    value: object
    path: str
    line: int
    section: str

    def where(self) -> str:
        return f"{self.path}:{self.line} [{self.section}]"


@dataclass(frozen=True, slots=True)
class IniDiagnostic:
    """One problem in an INI file. ``severity`` is ``error`` or ``warning``."""

    severity: str
    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.severity}: {self.message}"


@dataclass(frozen=True)
class DeviceParams:
    """The INI values for one (vendor_id, vendor_part_id); ``None`` = not set.

    ``section`` is the first section that named the device (``None``: no section did,
    Open MPI's *no device params found*); ``from_default`` lists keys filled from
    ``[default]``.
    """

    vendor_id: int
    part_id: int
    section: str | None = None
    mtu: IniValue | None = None
    use_eager_rdma: IniValue | None = None
    receive_queues: IniValue | None = None
    max_inline_data: IniValue | None = None
    credits_on_own_qp: IniValue | None = None
    rdmacm_reject_causes_connect_error: IniValue | None = None
    ignore_device: IniValue | None = None
    from_default: tuple[str, ...] = ()

    @property
    def found(self) -> bool:
        return self.section is not None

    def items(self) -> list[tuple[str, IniValue]]:
        """The keys that are set, in INI key order."""
        return [(k, getattr(self, k)) for k in VALUE_KEYS if getattr(self, k) is not None]


@dataclass
class DeviceParamsTable:
    """Everything read from a list of INI files."""

    paths: tuple[str, ...]
    entries: dict[tuple[int, int], DeviceParams] = field(default_factory=dict)
    diagnostics: list[IniDiagnostic] = field(default_factory=list)
    sections: list[tuple[str, str, int]] = field(default_factory=list)
    """(section name, file, line) of every section kept, in file order."""

    @property
    def errors(self) -> list[IniDiagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]

    def lookup(self, vendor_id: int, part_id: int, *, with_default: bool = True) -> DeviceParams:
        """The device's values; with ``with_default``, unset tuning keys come from
        ``[default]`` (Open MPI does this for the local device, not for a peer)."""
        own = self.entries.get((vendor_id, part_id), DeviceParams(vendor_id, part_id))
        if not with_default or (vendor_id, part_id) == (0, 0):
            return own
        fallback = self.entries.get((0, 0))
        if fallback is None:
            return own
        inherited = {
            key: getattr(fallback, key)
            for key in TUNING_KEYS
            if getattr(own, key) is None and getattr(fallback, key) is not None
        }
        return replace(own, **inherited, from_default=tuple(inherited))

    def raise_on_errors(self) -> None:
        """Refuse the files if any error was found (naming the first, file:line)."""
        errors = self.errors
        if errors:
            raise PyopenibError("ini-errors", count=len(errors), first=str(errors[0]))


def load_device_params(paths: Iterable[str | Path], *, strict: bool = True) -> DeviceParamsTable:
    """Read every INI file in order. With ``strict`` any error raises ``PyopenibError``
    (naming file and line); otherwise errors are left in ``diagnostics`` for a report.

    A strict table is parsed once per distinct file contents and then shared: every job
    of a ``check`` search (thousands per process) resolves its settings from the same
    files, and parsing them was a quarter of a small job's cost. Callers only read it."""
    paths = tuple(str(p) for p in paths)
    texts: list[str | OSError] = []
    for path in paths:
        try:
            texts.append(Path(path).read_text(encoding="utf-8", errors="replace"))
        except OSError as exc:
            texts.append(exc)
    key = (paths, tuple(t if isinstance(t, str) else None for t in texts))
    if strict and None not in key[1]:
        table = _STRICT_TABLES.get(key)
        if table is None:
            table = _parse_files(paths, texts, strict)
            if len(_STRICT_TABLES) >= 8:
                _STRICT_TABLES.clear()
            _STRICT_TABLES[key] = table
        return table
    return _parse_files(paths, texts, strict)


_STRICT_TABLES: dict[tuple, DeviceParamsTable] = {}
"""Strictly loaded tables by (paths, file contents): a few configurations per process."""


def _parse_files(paths: tuple[str, ...], texts, strict: bool) -> DeviceParamsTable:
    table = DeviceParamsTable(paths)
    for path, text in zip(paths, texts, strict=True):
        if isinstance(text, OSError):
            if strict:
                raise PyopenibError(
                    "ini-file-missing", path=path, reason=text.strerror or type(text).__name__
                ) from None
            table.diagnostics.append(
                IniDiagnostic("error", path, 0, f"cannot read file ({text.strerror})")
            )
            continue
        parse_ini_text(text, path, table)
    if strict:
        table.raise_on_errors()
    return table


@dataclass
class _Draft:
    name: str
    path: str
    line: int
    vendor_ids: list[int] | None = None
    part_ids: list[int] | None = None
    values: dict[str, IniValue] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


def parse_ini_text(text: str, path: str, table: DeviceParamsTable) -> None:
    """Add one file's sections to ``table`` (later sections override key by key)."""
    draft: _Draft | None = None
    note = table.diagnostics.append
    seen: dict[str, int] = {}
    for item in lex(text, sections=True):
        if isinstance(item, Problem):
            note(IniDiagnostic("error", path, item.line, item.reason))
        elif isinstance(item, Section):
            _save(draft, table)
            if item.name in seen:
                # Open MPI merges it silently; within one file it is almost always an
                # edit that forgot the first copy.
                note(
                    IniDiagnostic(
                        "warning",
                        path,
                        item.line,
                        f"section [{item.name}] appears again (first at line "
                        f"{seen[item.name]}); its keys override the earlier ones",
                    )
                )
            seen.setdefault(item.name, item.line)
            draft = _Draft(item.name, path, item.line)
        elif draft is None:
            note(IniDiagnostic("error", path, item.line, f"{item.key!r} is not in a section"))
        else:
            _assign(draft, item, path, note)
    _save(draft, table)


def _assign(draft: _Draft, item: Assignment, path: str, note) -> None:
    key = item.key.lower()
    if key in draft.lines:
        note(
            IniDiagnostic(
                "warning",
                path,
                item.line,
                f"[{draft.name}] sets {key} again (line {draft.lines[key]}); the last value wins",
            )
        )
    draft.lines[key] = item.line
    try:
        if key in ("vendor_id", "vendor_part_id"):
            ids = [_integer(part) for part in item.value.split(",")]
            if any(not 0 <= i < 2**32 for i in ids):
                raise ValueError("ids must be between 0 and 0xffffffff")
            if key == "vendor_id":
                draft.vendor_ids = ids
            else:
                draft.part_ids = ids
            return
        if key not in VALUE_KEYS:
            note(
                IniDiagnostic(
                    "warning", path, item.line, f"[{draft.name}] unknown key {key!r} ignored"
                )
            )
            return
        value = _convert(key, item.value, f"{path}:{item.line}")
    except ValueError as exc:
        note(
            IniDiagnostic("error", path, item.line, f"[{draft.name}] {key} = {item.value!r}: {exc}")
        )
        return
    except PyopenibError as exc:
        note(IniDiagnostic("error", path, item.line, f"[{draft.name}] {exc}"))
        return
    draft.values[key] = IniValue(value, path, item.line, draft.name)


def _integer(text: str) -> int:
    text = text.strip()
    if not _INTEGER.fullmatch(text):
        raise ValueError(f"{text!r} is not a number (decimal, 0x hex or 0 octal)")
    if re.fullmatch(r"[+-]?0[0-7]+", text):
        return int(text, 8)
    return int(text, 0)


def _convert(key: str, text: str, where: str) -> object:
    if key == "receive_queues":
        if not text:
            raise ValueError("empty value")
        parse_receive_queues(text, where)
        return text
    number = _integer(text)
    if key == "mtu":
        if number not in MTU_BYTES:
            raise ValueError("mtu must be 256, 512, 1024, 2048 or 4096 (bytes)")
        return number
    if key == "max_inline_data":
        if not -1 <= number < 2**31:
            raise ValueError("must be -1 (probe the device) or a byte count >= 0")
        return number
    if key == "credits_on_own_qp":
        if number not in (0, 1):
            raise ValueError("must be 0 (credits on the smallest P queue) or 1 (own queue)")
        return bool(number)
    return number != 0  # use_eager_rdma, ignore_device, rdmacm flag: 0 / non-zero


def _save(draft: _Draft | None, table: DeviceParamsTable) -> None:
    """Open MPI keeps a section only with a name and both id lists; it then stands for
    every (vendor, part) pair."""
    if draft is None:
        return
    if not draft.vendor_ids or not draft.part_ids:
        missing = "vendor_id" if not draft.vendor_ids else "vendor_part_id"
        table.diagnostics.append(
            IniDiagnostic(
                "warning",
                draft.path,
                draft.line,
                f"[{draft.name}] has no {missing}; the section is ignored",
            )
        )
        return
    table.sections.append((draft.name, draft.path, draft.line))
    for vendor in draft.vendor_ids:
        for part in draft.part_ids:
            entry = table.entries.get((vendor, part))
            if entry is None:
                entry = DeviceParams(vendor, part, section=draft.name)
            table.entries[(vendor, part)] = replace(entry, **draft.values)
