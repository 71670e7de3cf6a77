from collections.abc import Sequence
from typing import Any, Protocol, SupportsIndex, TypeVar

from mpi4py.MPI import BottomType, Datatype, InPlaceType

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
    def __buffer__(self, flags: int, /) -> memoryview: ...

class SupportsDLPack(Protocol):
    def __dlpack__(self, /, *, stream: int | Any | None = None) -> object: ...
    def __dlpack_device__(self) -> tuple[int, int]: ...

class SupportsCAI(Protocol):
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]: ...

Buffer = SupportsBuffer | SupportsDLPack | SupportsCAI

Bottom = BottomType | None

InPlace = InPlaceType | None

Aint = SupportsIndex

Count = SupportsIndex

Displ = SupportsIndex

Offset = SupportsIndex

TypeSpec = Datatype | str

BufSpec = (
    Buffer
    | tuple[Buffer, Count]
    | tuple[Buffer, TypeSpec]
    | tuple[Buffer, Count, TypeSpec]
    | tuple[Bottom, Count, Datatype]
    | list[Any]
)

BufSpecB = (
    Buffer
    | tuple[Buffer, Count]
    | tuple[Buffer, TypeSpec]
    | tuple[Buffer, Count, TypeSpec]
    | list[Any]
)

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

BufSpecW = (
    tuple[Buffer, Sequence[Datatype]]
    | tuple[Buffer, tuple[Sequence[Count], Sequence[Displ]], Sequence[Datatype]]
    | tuple[Buffer, Sequence[Count], Sequence[Displ], Sequence[Datatype]]
    | tuple[Bottom, tuple[Sequence[Count], Sequence[Displ]], Sequence[Datatype]]
    | tuple[Bottom, Sequence[Count], Sequence[Displ], Sequence[Datatype]]
    | list[Any]
)

TargetSpec = (
    Displ
    | tuple[()]
    | tuple[Displ]
    | tuple[Displ, Count]
    | tuple[Displ, Count, TypeSpec]
    | list[Any]
)

S = TypeVar("S")
T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")
