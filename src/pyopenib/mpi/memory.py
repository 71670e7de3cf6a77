"""Memory the MPI layer hands out or points into: ``MPI.buffer`` (alias ``memory``),
``Alloc_mem``/``Free_mem``, ``Get_address``, ``Aint_add``/``Aint_diff``, ``BUFFER_AUTOMATIC``.

``MPI.buffer`` is mpi4py 4's byte-buffer object. Programs pass it to calls, index it, and
wrap it with ``numpy.frombuffer`` (what ``Alloc_mem`` and ``Win.Allocate`` memory is for),
so it must export the buffer protocol; Python 3.11 lets only built-in types do that, so it
is a one-dimensional ``uint8`` numpy array with mpi4py's attributes (``address``, ``obj``,
``readonly``, ``format``, ``toreadonly``...). Indexing gives an ``int``, slicing a
``buffer``, as mpi4py's does. Addresses are real process addresses (``Get_address`` of an
``array.array`` equals its ``buffer_info()``), which derived datatypes over ``BOTTOM`` use.
"""

from __future__ import annotations

import ctypes

import numpy as np

from .buffers import BOTTOM
from .surface import MpiClass

__all__ = ["BUFFER_AUTOMATIC", "BufferAutomaticType", "MEMORY_NAMES", "buffer", "address_of"]

_U8 = np.dtype(np.uint8)


class buffer(np.ndarray, metaclass=MpiClass):  # noqa: N801 - mpi4py's name
    """Buffer (mpi4py 4): a contiguous run of bytes exposing the buffer protocol."""

    def __new__(cls, *args):
        if not args:
            return np.empty(0, _U8).view(cls)
        (obj,) = args
        return np.frombuffer(memoryview(obj).cast("B"), _U8).view(cls)

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> buffer:
        """A new buffer of ``nbytes`` bytes (zeroed if ``clear``)."""
        if nbytes < 0:
            raise ValueError("expecting non-negative size")
        return (np.zeros if clear else np.empty)(int(nbytes), _U8).view(buffer)

    @staticmethod
    def frombuffer(obj, readonly: bool = False) -> buffer:
        """A buffer over the memory of a buffer-like object."""
        view = memoryview(obj)
        if not readonly and view.readonly:
            raise BufferError("Object is not writable.")
        buf = buffer(view)
        if readonly:
            buf.flags.writeable = False
        return buf

    @staticmethod
    def fromaddress(address: int, nbytes: int, readonly: bool = False) -> buffer:
        """A buffer over ``nbytes`` bytes at a process address."""
        if nbytes < 0:
            raise ValueError("expecting non-negative buffer length")
        if nbytes > 0 and not address:
            raise ValueError("expecting non-NULL address")
        if nbytes == 0:
            return buffer()
        raw = (ctypes.c_ubyte * int(nbytes)).from_address(int(address))
        buf = np.frombuffer(raw, _U8).view(buffer)
        if readonly:
            buf.flags.writeable = False
        return buf

    @property
    def address(self) -> int:
        """Buffer address."""
        return self.__array_interface__["data"][0]

    @property
    def obj(self):
        """Object exposing the memory (None for memory of the buffer's own)."""
        base = self.base
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        if isinstance(base, memoryview):
            return base.obj
        return None if isinstance(base, np.ndarray) else base

    @property
    def readonly(self) -> bool:
        return not self.flags.writeable

    @property
    def format(self) -> str:
        return "B"

    def cast(self, format: str, shape=...) -> memoryview:  # noqa: A002 - mpi4py's name
        """A memoryview of the bytes with a new format (and shape)."""
        view = memoryview(self)
        return view.cast(format) if shape is Ellipsis else view.cast(format, shape)

    def toreadonly(self) -> buffer:
        """A read-only buffer over the same memory."""
        buf = self.view(buffer)
        buf.flags.writeable = False
        return buf

    def __getitem__(self, item):
        if isinstance(item, slice):
            if item.step not in (None, 1):
                raise IndexError("slice with step not supported")
            return super().__getitem__(item)
        if isinstance(item, int | np.integer):
            return int(super().__getitem__(item))
        raise TypeError("index must be integer or slice")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.buffer object at {hex(id(self))}>"

    __str__ = __repr__


buffer.__module__ = "mpi4py.MPI"


class BufferAutomaticType(int, metaclass=MpiClass):
    """Type of ``BUFFER_AUTOMATIC`` (MPI-4.1's automatic buffering for ``Attach_buffer``;
    its address is 0, as mpi4py defines it on MPI 3.1)."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls, 0)
        return cls._instance

    def __repr__(self) -> str:
        return "BUFFER_AUTOMATIC"

    __str__ = __repr__

    def __reduce__(self):
        return "BUFFER_AUTOMATIC"


BufferAutomaticType.__module__ = "mpi4py.MPI"
BUFFER_AUTOMATIC = BufferAutomaticType()


def address_of(location) -> int:
    """The process address where ``location``'s memory starts (0 for None or BOTTOM)."""
    if location is None or location is BOTTOM:
        return 0
    if isinstance(location, np.ndarray):
        return location.__array_interface__["data"][0]
    view = memoryview(location)
    if view.nbytes == 0:
        return 0
    return np.frombuffer(view.cast("B"), _U8).__array_interface__["data"][0]


def Get_address(location) -> int:  # noqa: N802 - mpi4py's name
    """Address of a location in memory (``MPI_Get_address``)."""
    return address_of(location)


def Aint_add(base: int, disp: int) -> int:  # noqa: N802
    """``base + disp`` as MPI address arithmetic."""
    return int(base) + int(disp)


def Aint_diff(addr1: int, addr2: int) -> int:  # noqa: N802
    """``addr1 - addr2`` as MPI address arithmetic."""
    return int(addr1) - int(addr2)


def Alloc_mem(size: int, info=None) -> buffer:  # noqa: N802
    """Memory for RMA and buffered sends (``MPI_Alloc_mem``; ``info`` hints are ignored,
    as Open MPI's basic allocator does)."""
    if size < 0:
        raise ValueError("expecting non-negative size")
    return buffer.allocate(size)


def Free_mem(mem) -> None:  # noqa: N802
    """Give back memory from ``Alloc_mem`` (Python frees it when the last view goes)."""
    if not isinstance(mem, buffer):
        raise TypeError(f"expected a buffer from Alloc_mem, got {type(mem).__name__}")


MEMORY_NAMES = {
    "buffer": buffer,
    "memory": buffer,
    "BufferAutomaticType": BufferAutomaticType,
    "BUFFER_AUTOMATIC": BUFFER_AUTOMATIC,
    "Get_address": Get_address,
    "Aint_add": Aint_add,
    "Aint_diff": Aint_diff,
    "Alloc_mem": Alloc_mem,
    "Free_mem": Free_mem,
}
"""The names ``mpi4py.MPI`` exports from this module."""
