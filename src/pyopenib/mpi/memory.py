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
import operator

import numpy as np

from . import pack
from .buffers import BOTTOM
from .surface import MpiClass

__all__ = ["BUFFER_AUTOMATIC", "BufferAutomaticType", "MEMORY_NAMES", "buffer", "address_of"]

_U8 = np.dtype(np.uint8)


class buffer(np.ndarray, metaclass=MpiClass):  # noqa: N801 - mpi4py's name
    """Buffer (mpi4py 4): a contiguous run of bytes exposing the buffer protocol.

    ``buffer()`` and a released buffer hold no memory (address 0); ``release()`` and
    ``Free_mem`` make a buffer empty and writable, as mpi4py's do. Deleting an item is not
    supported (``NotImplementedError``) and a read-only buffer refuses writes with
    ``TypeError``, as mpi4py's extension type does."""

    def __new__(cls, *args):
        if not args:
            return super().__new__(cls, (0,), _U8)
        (obj,) = args
        return _exported(obj, False)

    @staticmethod
    def allocate(nbytes: int, clear: bool = False) -> buffer:
        """Buffer allocation."""
        nbytes = operator.index(nbytes)
        if nbytes < 0:
            raise ValueError("expecting non-negative size")
        memory = bytearray(nbytes) if clear else bytearray(np.empty(nbytes, _U8))
        return buffer(memory)

    @staticmethod
    def frombuffer(obj, readonly: bool = False) -> buffer:
        """Buffer from buffer-like object."""
        buf = _exported(obj, not readonly)
        if readonly:
            buf.flags.writeable = False
        return buf

    @staticmethod
    def fromaddress(address: int, nbytes: int, readonly: bool = False) -> buffer:
        """Buffer from address and size in bytes."""
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
        if self.base is None and not self.size:
            return 0  # no memory: mpi4py's NULL
        return self.__array_interface__["data"][0]

    @property
    def obj(self):
        """Object exposing buffer."""
        base = self.base
        while isinstance(base, np.ndarray) and base.base is not None:
            base = base.base
        if isinstance(base, memoryview):
            return base.obj
        if isinstance(base, pack.ForeignMemory):
            return base.owner  # the DLPack capsule or the CUDA-array-interface object
        return None if isinstance(base, np.ndarray) else base

    @property
    def readonly(self) -> bool:
        """Buffer is read-only."""
        return not self.flags.writeable

    @property
    def format(self) -> str:
        """Format of each element."""
        return "B"

    _device = 0
    """DLPack device type of the memory (0: reached through the buffer protocol)."""

    def _check_cpu_accessible(self) -> None:
        if self._device not in pack.CPU_DEVICES:
            raise BufferError("buffer is not CPU-accessible")

    def cast(self, format: str, shape=...) -> memoryview:  # noqa: A002 - mpi4py's name
        """Cast to a `memoryview` with new format or shape."""
        self._check_cpu_accessible()
        view = memoryview(self)
        return view.cast(format) if shape is Ellipsis else view.cast(format, shape)

    def tobytes(self, order=None) -> bytes:
        """Return the data in the buffer as a byte string.

        ``order`` is ignored, as mpi4py ignores it: the bytes are one-dimensional."""
        self._check_cpu_accessible()
        return super().tobytes()

    def toreadonly(self) -> buffer:
        """Return a readonly version of the buffer object."""
        buf = self.view(buffer)
        buf.flags.writeable = False
        return buf

    def __bool__(self) -> bool:
        """Tell whether the buffer has bytes, as mpi4py's (it has ``__len__``).

        numpy's elementwise truth would raise for more than one byte."""
        return len(self) > 0

    def release(self) -> None:
        """Release the underlying buffer exposed by the buffer object."""
        self.__setstate__((1, (0,), _U8, False, b""))

    @staticmethod
    def _index(item):
        if isinstance(item, slice):
            if item.step not in (None, 1):
                raise IndexError("slice with step not supported")
            return item
        if isinstance(item, int | np.integer):
            return item
        raise TypeError("index must be integer or slice")

    def __getitem__(self, item):
        self._check_cpu_accessible()
        item = self._index(item)
        if isinstance(item, slice):
            return super().__getitem__(item)
        return int(super().__getitem__(item))

    def __setitem__(self, item, value) -> None:
        self._check_cpu_accessible()
        if self.readonly:
            raise TypeError("buffer is read-only")
        item = self._index(item)
        if not isinstance(value, int | np.integer | np.ndarray):
            value = np.frombuffer(memoryview(value).cast("B"), _U8)
        super().__setitem__(item, value)

    def __delitem__(self, item) -> None:
        raise NotImplementedError("Subscript deletion not supported by mpi4py.MPI.buffer")

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.buffer object at {hex(id(self))}>"

    __str__ = __repr__


buffer.__module__ = "mpi4py.MPI"


def _exported(obj, writable: bool) -> buffer:
    """A buffer over ``obj``'s memory, reached as mpi4py reaches it: the buffer protocol,
    else DLPack, else the CUDA array interface. ``_device`` is the DLPack device type of
    the memory (0: the buffer protocol); one the host cannot touch makes indexing,
    ``cast`` and ``tobytes`` raise ``BufferError``, as mpi4py's ``check_cpu_accessible``."""
    try:
        view = memoryview(obj)
    except TypeError:
        found = pack.foreign(obj, writable)
        if found is None:
            raise
        buf = found.data.view(buffer)
        buf._device = found.device
        return buf
    if writable and view.readonly:
        raise BufferError("Object is not writable.")
    return np.frombuffer(view.cast("B"), _U8).view(buffer)


class BufferAutomaticType(int, metaclass=MpiClass):
    """Type of ``BUFFER_AUTOMATIC``.

    MPI-4.1's automatic buffering for ``Attach_buffer``; its address is 0, as mpi4py
    defines it on MPI 3.1."""

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
    data = pack.raw_bytes(location)  # buffer protocol, DLPack or CUDA array interface
    if len(data) == 0:
        return 0
    return data.__array_interface__["data"][0]


def Get_address(location) -> int:  # noqa: N802 - mpi4py's name
    """Address of a location in memory (``MPI_Get_address``)."""
    return address_of(location)


def Aint_add(base: int, disp: int) -> int:  # noqa: N802
    """Return ``base + disp`` as MPI address arithmetic."""
    return int(base) + int(disp)


def Aint_diff(addr1: int, addr2: int) -> int:  # noqa: N802
    """Return ``addr1 - addr2`` as MPI address arithmetic."""
    return int(addr1) - int(addr2)


def Alloc_mem(size: int, info=None) -> buffer:  # noqa: N802
    """Allocate memory for RMA and buffered sends.

    ``info`` hints are ignored, as Open MPI's basic allocator does."""
    if size < 0:
        raise ValueError("expecting non-negative size")
    return buffer.allocate(size)


def Free_mem(mem) -> None:  # noqa: N802
    """Free memory from ``Alloc_mem``: the buffer becomes empty.

    Python frees the bytes when no other view holds them."""
    if not isinstance(mem, buffer):
        raise TypeError(f"expected a buffer from Alloc_mem, got {type(mem).__name__}")
    mem.release()


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
