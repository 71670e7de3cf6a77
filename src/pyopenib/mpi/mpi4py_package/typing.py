"""``mpi4py.typing``: the names mpi4py's stubs use for what its calls accept.

A program annotates its own MPI helpers with these (``def send(buf: BufSpec) -> None``);
they describe the buffer specifications ``pyopenib.mpi.buffers`` parses: a buffer is
anything with the buffer protocol, DLPack or the CUDA array interface; a message is the
buffer alone or with counts, displacements and datatypes. Type-checkers read them; at run
time they are ordinary ``typing`` objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, SupportsIndex, TypeVar

from ..buffers import BottomType, InPlaceType
from ..datatypes import Datatype

__all__ = [
    "SupportsBuffer",
    "SupportsDLPack",
    "SupportsCAI",
    "Buffer",
    "Bottom",
    "InPlace",
    "Aint",
    "Count",
    "Displ",
    "Offset",
    "TypeSpec",
    "BufSpec",
    "BufSpecB",
    "BufSpecV",
    "BufSpecW",
    "TargetSpec",
]


class SupportsBuffer(Protocol):
    """An object exposing the buffer protocol (PEP 3118)."""

    def __buffer__(self, flags: int, /) -> memoryview:
        """A buffer over the object's memory."""


class SupportsDLPack(Protocol):
    """An object exporting DLPack tensors."""

    def __dlpack__(self, /, *, stream: int | Any | None = None) -> object:
        """The tensor, as a DLPack capsule."""

    def __dlpack_device__(self) -> tuple[int, int]:
        """(DLPack device type, device id) of the memory."""


class SupportsCAI(Protocol):
    """An object exporting the CUDA array interface."""

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The interface's description of the memory."""


Buffer = SupportsBuffer | SupportsDLPack | SupportsCAI
"""A buffer-like object."""

Bottom = BottomType | None
"""The start of the address range (``BOTTOM``, or None)."""

InPlace = InPlaceType | None
"""The in-place buffer argument (``IN_PLACE``, or None)."""

Aint = SupportsIndex
"""An address-sized integer."""

Count = SupportsIndex
"""An integer count."""

Displ = SupportsIndex
"""An integer displacement."""

Offset = SupportsIndex
"""An integer file offset."""

TypeSpec = Datatype | str
"""A datatype, or a struct format code naming one."""

BufSpec = (
    Buffer
    | tuple[Buffer, Count]
    | tuple[Buffer, TypeSpec]
    | tuple[Buffer, Count, TypeSpec]
    | tuple[Bottom, Count, Datatype]
    | list[Any]
)
"""A point-to-point message: ``buf``, ``[buf, count]``, ``[buf, type]``, ``[buf, count,
type]`` or ``[BOTTOM, count, datatype]``."""

BufSpecB = (
    Buffer
    | tuple[Buffer, Count]
    | tuple[Buffer, TypeSpec]
    | tuple[Buffer, Count, TypeSpec]
    | list[Any]
)
"""A collective's block message (the same forms, without ``BOTTOM``)."""

BufSpecV = (
    Buffer
    | tuple[Buffer, Sequence[Count]]
    | tuple[Buffer, tuple[Sequence[Count], Sequence[Displ]]]
    | tuple[Buffer, TypeSpec]
    | tuple[Buffer, Sequence[Count], TypeSpec]
    | tuple[Buffer, tuple[Sequence[Count], Sequence[Displ]], TypeSpec]
    | tuple[Buffer, Sequence[Count], Sequence[Displ], TypeSpec]
    | tuple[Bottom, tuple[Sequence[Count], Sequence[Displ]], Datatype]
    | tuple[Bottom, Sequence[Count], Sequence[Displ], Datatype]
    | list[Any]
)
"""A v-collective's message: a buffer with per-process counts and displacements."""

BufSpecW = (
    tuple[Buffer, Sequence[Datatype]]
    | tuple[Buffer, tuple[Sequence[Count], Sequence[Displ]], Sequence[Datatype]]
    | tuple[Buffer, Sequence[Count], Sequence[Displ], Sequence[Datatype]]
    | tuple[Bottom, tuple[Sequence[Count], Sequence[Displ]], Sequence[Datatype]]
    | tuple[Bottom, Sequence[Count], Sequence[Displ], Sequence[Datatype]]
    | list[Any]
)
"""A w-collective's message: per-process counts, byte displacements and datatypes."""

TargetSpec = (
    Displ
    | tuple[()]
    | tuple[Displ]
    | tuple[Displ, Count]
    | tuple[Displ, Count, TypeSpec]
    | list[Any]
)
"""The target of a one-sided operation: displacement, count and datatype, each optional."""

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")
