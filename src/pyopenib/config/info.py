"""Render MCA variables as ``ompi_info --param btl openib --level N [--parsable]`` does
(``opal_info_support.c``), line for line for the variables both programs have, plus
the effective device settings that Open MPI cannot show.

Differences, all deliberate: the component line carries pyopenib's version, the
component is never shown as excluded (``MCA (-)``), ``disabled`` is ``false``, long
lines are never wrapped, and ``btl_openib_mtu`` is shown even at its default 0 (which
has no enumerator name; ``ompi_info`` silently skips the variable then).
"""

from __future__ import annotations

from .. import __version__
from .effective import EffectiveSettings
from .mca import McaContext
from .variables import LEVEL_NAMES, Variable, render_value

__all__ = ["render_effective", "render_human", "render_parsable"]

_BOOL_VALID = "0: f|false|disabled|no|n, 1: t|true|enabled|yes|y"
_PREFIX_WIDTH = 24  # ompi_info right-aligns the prefix so ": " starts at column 24
_INDENT = " " * (_PREFIX_WIDTH + 2)


def _shown(ctx: McaContext, level: int, include_generic: bool) -> list[Variable]:
    return [
        var
        for var in ctx.variables()
        if var.level <= level and (include_generic or var.component == "openib")
    ]


def _parsable_value(text: str) -> str:
    return f'"{text}"' if ":" in text else text


def render_parsable(ctx: McaContext, level: int = 9, include_generic: bool = False) -> list[str]:
    """``ompi_info --parsable`` lines."""
    lines = [
        'mca:btl:openib:version:"mca:2.1.0"',
        'mca:btl:openib:version:"api:3.1.0"',
        f'mca:btl:openib:version:"component:{__version__}"',
    ]
    for var in _shown(ctx, level, include_generic):
        record = ctx.value(var.full_name)
        prefix = f"mca:{var.framework}:{var.component or 'base'}:param:{var.full_name}:"
        lines.append(prefix + "value:" + _parsable_value(render_value(var, record.value)))
        lines.append(prefix + f"source:{record.source}")
        lines.append(prefix + f"status:{'read-only' if var.read_only else 'writeable'}")
        lines.append(prefix + f"level:{var.level}")
        lines.append(prefix + f"help:{var.help}")
        if var.type == "bool":
            lines.append(prefix + "enumerator:value:0:false")
            lines.append(prefix + "enumerator:value:1:true")
        for number, name in var.enumerator:
            lines.append(prefix + f"enumerator:value:{number}:{name}")
        lines.append(prefix + "deprecated:no")
        lines.append(prefix + f"type:{var.display_type}")
        for synonym in var.all_synonyms:
            lines.append(prefix + f"synonym:name:{synonym}")
        lines.append(prefix + "disabled:false")
    return lines


def _prefixed(prefix: str, text: str) -> str:
    return f"{prefix:>{_PREFIX_WIDTH}}: {text}"


def render_human(ctx: McaContext, level: int = 9, include_generic: bool = False) -> list[str]:
    """``ompi_info`` pretty lines (never wrapped)."""
    lines = [
        _prefixed("MCA btl", f"openib (MCA v2.1.0, API v3.1.0, Component v{__version__})"),
        _prefixed("MCA btl openib", "-" * 51),
    ]
    for var in _shown(ctx, level, include_generic):
        record = ctx.value(var.full_name)
        attributes = [
            f'current value: "{render_value(var, record.value)}"',
            f"data source: {record.source}",
            f"level: {var.level} {LEVEL_NAMES[var.level]}",
            f"type: {var.display_type}",
        ]
        if var.all_synonyms:
            attributes.append("synonyms: " + ", ".join(var.all_synonyms))
        prefix = f"MCA {var.framework} {var.component or 'base'}"
        lines.append(_prefixed(prefix, f'parameter "{var.full_name}" ({", ".join(attributes)})'))
        lines.append(_INDENT + var.help)
        if var.type == "bool":
            lines.append(_INDENT + "Valid values: " + _BOOL_VALID)
        elif var.enumerator:
            valid = ", ".join(f'{number}:"{name}"' for number, name in var.enumerator)
            lines.append(_INDENT + "Valid values: " + valid)
    return lines


def render_effective(settings: EffectiveSettings, parsable: bool = False) -> list[str]:
    """The effective device settings and where each came from."""
    rows = settings.rows()
    if parsable:
        lines = [
            f"pyopenib:device:vendor_id:0x{settings.vendor_id:04x}",
            f"pyopenib:device:part_id:{settings.part_id}",
            f"pyopenib:device:section:{settings.device_section or ''}",
        ]
        for name, value, origin in rows:
            lines.append(f"pyopenib:device:{name}:value:{_parsable_value(value)}")
            lines.append(f"pyopenib:device:{name}:origin:{origin}")
        lines += [f"pyopenib:device:note:{note}" for note in settings.notes]
        return lines
    width = max(len(name) for name, _, _ in rows)
    lines = [f"Effective settings on {settings.device_label}:"]
    for name, value, origin in rows:
        lines.append(f"  {name:<{width}}  {value}")
        lines.append(f"  {'':<{width}}    from {origin}")
    lines += [f"  note: {note}" for note in settings.notes]
    return lines
