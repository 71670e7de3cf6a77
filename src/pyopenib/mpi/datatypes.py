"""Predefined MPI datatypes (sizes as Open MPI 4.1 on x86-64) and their numpy dtypes,
plus mpi4py's inference of a datatype from a buffer's format character."""

from __future__ import annotations

import numpy as np

__all__ = ["DATATYPES", "Datatype", "from_format"]


class Datatype:
    """A predefined datatype: ``size`` bytes of data in ``extent`` bytes of memory."""

    __slots__ = ("name", "size", "extent", "dtype")

    def __init__(self, name: str, dtype):
        self.name = name
        self.dtype = np.dtype(dtype)
        self.extent = self.dtype.itemsize
        self.size = (
            sum(f[0].itemsize for f in self.dtype.fields.values())
            if self.dtype.fields
            else self.extent
        )

    def Get_size(self) -> int:
        return self.size

    def Get_extent(self) -> tuple[int, int]:
        return 0, self.extent

    def Get_name(self) -> str:
        return self.name

    @property
    def lb(self) -> int:
        return 0

    @property
    def ub(self) -> int:
        return self.extent

    def __repr__(self) -> str:
        return f"<pyopenib.MPI.Datatype {self.name}>"


def _pair(value: str) -> np.dtype:
    return np.dtype([("v", value), ("i", "<i4")], align=True)


_DEFS = [
    ("BYTE", "MPI_BYTE", "u1"),
    ("PACKED", "MPI_PACKED", "u1"),
    ("CHAR", "MPI_CHAR", "S1"),
    ("WCHAR", "MPI_WCHAR", "<u4"),
    ("SIGNED_CHAR", "MPI_SIGNED_CHAR", "i1"),
    ("UNSIGNED_CHAR", "MPI_UNSIGNED_CHAR", "u1"),
    ("SHORT", "MPI_SHORT", "<i2"),
    ("UNSIGNED_SHORT", "MPI_UNSIGNED_SHORT", "<u2"),
    ("INT", "MPI_INT", "<i4"),
    ("UNSIGNED", "MPI_UNSIGNED", "<u4"),
    ("LONG", "MPI_LONG", "<i8"),
    ("UNSIGNED_LONG", "MPI_UNSIGNED_LONG", "<u8"),
    ("LONG_LONG", "MPI_LONG_LONG_INT", "<i8"),
    ("UNSIGNED_LONG_LONG", "MPI_UNSIGNED_LONG_LONG", "<u8"),
    ("FLOAT", "MPI_FLOAT", "<f4"),
    ("DOUBLE", "MPI_DOUBLE", "<f8"),
    ("LONG_DOUBLE", "MPI_LONG_DOUBLE", np.longdouble),
    ("C_BOOL", "MPI_C_BOOL", "?"),
    ("CXX_BOOL", "MPI_CXX_BOOL", "?"),
    ("INT8_T", "MPI_INT8_T", "i1"),
    ("INT16_T", "MPI_INT16_T", "<i2"),
    ("INT32_T", "MPI_INT32_T", "<i4"),
    ("INT64_T", "MPI_INT64_T", "<i8"),
    ("UINT8_T", "MPI_UINT8_T", "u1"),
    ("UINT16_T", "MPI_UINT16_T", "<u2"),
    ("UINT32_T", "MPI_UINT32_T", "<u4"),
    ("UINT64_T", "MPI_UINT64_T", "<u8"),
    ("AINT", "MPI_AINT", "<i8"),
    ("OFFSET", "MPI_OFFSET", "<i8"),
    ("COUNT", "MPI_COUNT", "<i8"),
    ("C_FLOAT_COMPLEX", "MPI_C_COMPLEX", "<c8"),
    ("C_DOUBLE_COMPLEX", "MPI_C_DOUBLE_COMPLEX", "<c16"),
    ("COMPLEX", "MPI_COMPLEX", "<c8"),
    ("DOUBLE_COMPLEX", "MPI_DOUBLE_COMPLEX", "<c16"),
    ("FLOAT_INT", "MPI_FLOAT_INT", _pair("<f4")),
    ("DOUBLE_INT", "MPI_DOUBLE_INT", _pair("<f8")),
    ("LONG_INT", "MPI_LONG_INT", _pair("<i8")),
    ("TWOINT", "MPI_2INT", _pair("<i4")),
    ("SHORT_INT", "MPI_SHORT_INT", _pair("<i2")),
]

DATATYPES: dict[str, Datatype] = {}
for _attr, _name, _dtype in _DEFS:
    DATATYPES[_attr] = Datatype(_name, _dtype)
DATATYPES["BOOL"] = DATATYPES["C_BOOL"]
DATATYPES["INT_INT"] = DATATYPES["TWOINT"]
DATATYPES["C_COMPLEX"] = DATATYPES["C_FLOAT_COMPLEX"]
DATATYPES["SIGNED_SHORT"] = DATATYPES["SHORT"]
DATATYPES["SIGNED_INT"] = DATATYPES["INT"]
DATATYPES["SIGNED_LONG"] = DATATYPES["LONG"]
DATATYPES["SIGNED_LONG_LONG"] = DATATYPES["LONG_LONG"]
DATATYPES["UNSIGNED_INT"] = DATATYPES["UNSIGNED"]

_FORMATS = {
    "?": "C_BOOL",
    "c": "CHAR",
    "b": "SIGNED_CHAR",
    "B": "UNSIGNED_CHAR",
    "h": "SHORT",
    "H": "UNSIGNED_SHORT",
    "i": "INT",
    "I": "UNSIGNED",
    "l": "LONG",
    "L": "UNSIGNED_LONG",
    "q": "LONG_LONG",
    "Q": "UNSIGNED_LONG_LONG",
    "f": "FLOAT",
    "d": "DOUBLE",
    "g": "LONG_DOUBLE",
    "Zf": "C_FLOAT_COMPLEX",
    "Zd": "C_DOUBLE_COMPLEX",
}


def from_format(fmt: str) -> Datatype:
    """mpi4py's typemap: the buffer protocol's format character picks the datatype."""
    key = fmt.lstrip("@=<>!")
    if key.endswith("s") and key[:-1].isdigit():
        key = "c"
    name = _FORMATS.get(key)
    if name is None:
        raise KeyError(f"format '{fmt}' does not map to a predefined MPI datatype")
    return DATATYPES[name]
