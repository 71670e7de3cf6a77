"""One MCA variable: its registration record, and how its text values are read and shown.

Open MPI's ``mca_base_var_register`` takes (framework, component, name, type, default,
help, level, enumerator, synonyms, flags); ``Variable`` is that record. Conversion follows
``mca_base_var.c`` where it is well defined (``0x`` hex, leading-``0`` octal, ``k/m/g``
suffixes, Open MPI's bool spellings, enum by name or number) and refuses what C's
``strtoull`` would silently turn into 0: pyopenib names the variable, value and source.

Types are Open MPI's (``bool``, ``int``, ``unsigned_int``, ``size_t``, ``string``) plus
``enum``: an ``int`` variable with an enumerator whose typed value is the enumerator's
name (``"own"``), shown by ``info`` as ``type: int`` with its valid values, like
``ompi_info`` shows Open MPI's enum variables. An ``int`` variable may also carry an
enumerator (``btl_openib_mtu``): then the typed value stays the number.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

__all__ = ["LEVEL_NAMES", "Variable", "ConversionError", "parse_value", "render_value"]

LEVEL_NAMES = {
    1: "user/basic",
    2: "user/detail",
    3: "user/all",
    4: "tuner/basic",
    5: "tuner/detail",
    6: "tuner/all",
    7: "dev/basic",
    8: "dev/detail",
    9: "dev/all",
}

TYPES = ("bool", "int", "unsigned_int", "size_t", "string", "enum")

_RANGES = {
    "int": (-(2**31), 2**31 - 1),
    "enum": (-(2**31), 2**31 - 1),
    "unsigned_int": (0, 2**32 - 1),
    "size_t": (0, 2**64 - 1),
}
_TRUE = ("t", "true", "enabled", "yes", "y")
_FALSE = ("f", "false", "disabled", "no", "n")
_INTEGER = re.compile(r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)([kKmMgG]?)")
_SUFFIX = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}


@dataclass(frozen=True)
class Variable:
    """An MCA variable as registered (``full_name`` is ``framework_component_name``)."""

    framework: str
    component: str
    name: str
    type: str
    default: object
    help: str
    level: int
    enumerator: tuple[tuple[int, str], ...] = ()
    synonyms: tuple[str, ...] = ()
    deprecated_synonyms: tuple[str, ...] = ()
    read_only: bool = True
    """Open MPI's scope "readonly": not changeable at run time through MPI_T. It does not
    stop files, the environment or ``--mca`` from setting the variable."""
    minimum: int | None = None
    maximum: int | None = None
    default_fn: Callable[[Mapping[str, object]], object] | None = field(default=None, compare=False)
    """Computes the default from variables registered earlier (receive_queues' default
    depends on eager_limit and max_send_size as registered)."""
    project: str = "opal"
    increment: int = 0
    """Added to the value after registration, as Open MPI's openib does for
    eager_rdma_num (``eager_rdma_num++``): ompi_info and the BTL see the sum."""
    floor_fn: Callable[[Mapping[str, object]], int] | None = field(default=None, compare=False)
    """The least value Open MPI lets the variable keep, computed from variables
    registered earlier: a smaller one (the default included) is raised to it after
    registration, as ``mca_btl_base_param_verify`` raises min_rdma_pipeline_size to
    eager_limit + rdma_pipeline_send_length; ompi_info and the BTL see the raised value."""
    floor_text: str = ""
    """What ``floor_fn`` computes, in words (the configuration reference shows it)."""

    def __post_init__(self) -> None:
        if self.type not in TYPES:
            raise ValueError(f"{self.full_name}: unknown type {self.type!r}")
        if not 1 <= self.level <= 9:
            raise ValueError(f"{self.full_name}: level {self.level} outside 1..9")
        if self.type == "enum" and not self.enumerator:
            raise ValueError(f"{self.full_name}: an enum needs an enumerator")

    @property
    def full_name(self) -> str:
        return "_".join(part for part in (self.framework, self.component, self.name) if part)

    @property
    def long_name(self) -> str:
        """The name with the project prefix (``opal_btl_openib_mtu``); also accepted."""
        return f"{self.project}_{self.full_name}"

    @property
    def all_synonyms(self) -> tuple[str, ...]:
        return self.synonyms + self.deprecated_synonyms

    @property
    def display_type(self) -> str:
        """The type as ``ompi_info`` prints it (enums are ints there)."""
        return "int" if self.type == "enum" else self.type


class ConversionError(Exception):
    """A text value that does not convert; ``reason`` says why in words."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


def parse_value(var: Variable, text: str, home: str | None = None) -> object:
    """Convert ``text`` to ``var``'s typed value or raise ``ConversionError``.

    ``home`` expands a leading ``~/`` (and each ``:~/``) in string values, as Open MPI
    does for every string variable.
    """
    text = text.strip()
    if var.type == "string":
        return _expand_home(text, home)
    if var.type == "bool":
        return _parse_bool(text)
    if var.enumerator:
        return _parse_enum(var, text)
    value = parse_integer(text)
    low, high = _RANGES[var.type]
    if var.minimum is not None:
        low = max(low, var.minimum)
    if var.maximum is not None:
        high = min(high, var.maximum)
    if not low <= value <= high:
        raise ConversionError(f"must be between {low} and {high}")
    return value


def parse_integer(text: str) -> int:
    """Open MPI's integer syntax: decimal, ``0x`` hex or leading-``0`` octal, optional
    ``k``/``m``/``g`` (binary) suffix. Anything else is an error, never 0."""
    match = _INTEGER.fullmatch(text.strip())
    if match is None:
        raise ConversionError("not an integer (decimal, 0x hex or 0 octal, optional k/m/g)")
    sign, digits, suffix = match.groups()
    value = int(digits, 0) if not re.fullmatch(r"0[0-7]+", digits) else int(digits, 8)
    value *= _SUFFIX[suffix.lower()]
    return -value if sign == "-" else value


def _parse_bool(text: str) -> bool:
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    try:
        return parse_integer(text) != 0
    except ConversionError:
        raise ConversionError(
            "not a boolean (0, 1, f|false|disabled|no|n, t|true|enabled|yes|y)"
        ) from None


AUTO_BOOL = ((0, "false"), (1, "true"), (-1, "auto"))
"""Open MPI's ``mca_base_var_enum_auto_bool`` (``mpi_leave_pinned``): its own reader
takes the bool words too and clamps a number to -1..1."""


def _parse_auto_bool(text: str) -> int:
    if text.lower() == "auto":
        return -1
    if text.lower() in _TRUE or text.lower() in _FALSE:
        return int(text.lower() in _TRUE)
    try:
        return max(-1, min(1, parse_integer(text)))
    except ConversionError:
        raise ConversionError(
            "not a boolean or auto (-1|auto, 0|f|false|disabled|no|n, 1|t|true|enabled|yes|y)"
        ) from None


def _parse_enum(var: Variable, text: str) -> object:
    if var.enumerator == AUTO_BOOL:
        return _parse_auto_bool(text)
    for number, name in var.enumerator:
        if text.lower() == name.lower():
            return _canonical_name(var, number) if var.type == "enum" else number
    try:
        number = parse_integer(text)
    except ConversionError:
        number = None
    for value, _name in var.enumerator:
        if value == number:
            return _canonical_name(var, value) if var.type == "enum" else value
    valid = ", ".join(f'{value}:"{name}"' for value, name in var.enumerator)
    raise ConversionError(f"not one of the valid values {valid}")


def _canonical_name(var: Variable, number: int) -> str:
    return next(name for value, name in var.enumerator if value == number)


def _expand_home(text: str, home: str | None) -> str:
    if home is None:
        return text
    home = home.rstrip("/")
    if text.startswith("~/"):
        text = home + text[1:]
    return text.replace(":~/", f":{home}/")


def render_value(var: Variable, value: object) -> str:
    """The value as ``ompi_info`` prints it after ``current value:``."""
    if var.type == "bool":
        return "true" if value else "false"
    if var.enumerator and var.type != "enum":
        for number, name in var.enumerator:
            if number == value:
                return name
    return str(value)
