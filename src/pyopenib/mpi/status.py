"""``MPI.Status``: source, tag, error, byte count and cancelled flag of a completion.

A status stores its count in bytes, as Open MPI's ``_ucount``; ``Get_count`` and
``Get_elements`` ask the datatype how many instances / basic elements those bytes are
(``UNDEFINED`` for a partial one), as ``MPI_Get_count``/``MPI_Get_elements`` do.
"""

from __future__ import annotations

import copyreg
from array import array

from .datatypes import DATATYPES
from .surface import MpiClass

__all__ = ["ANY_SOURCE", "ANY_TAG", "PROC_NULL", "Status", "UNDEFINED", "empty_fields"]

ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2
UNDEFINED = -32766
_BYTE = DATATYPES["BYTE"]
_LOW = 1 << 31


def empty_fields() -> tuple[int, int, int, int, bool]:
    """The fields of MPI's empty status (an inactive or null request's completion)."""
    return (ANY_SOURCE, ANY_TAG, 0, 0, False)


def _as_int(value, what: str) -> int:
    """An int argument as Cython's ``int`` parameter takes it (floats truncate)."""
    if isinstance(value, int):
        return value
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TypeError(f"{what} must be an integer, not {type(value).__name__}") from None


class Status(metaclass=MpiClass):
    """A completion's envelope; ``MPI.Status(other)`` copies ``other``.

    The fields live in one ``int`` array laid out as Open MPI's ``ompi_status_public_t``
    (source, tag, error, cancelled, then the ``size_t`` byte count as two ints), so
    ``tomemory`` is a view a program can write through, as under mpi4py."""

    __slots__ = ("_mem", "__weakref__")

    def __new__(cls, status: Status | None = None):
        if status is not None and not isinstance(status, Status):
            raise TypeError(
                f"Argument 'status' has incorrect type (expected Status, got "
                f"{type(status).__name__})"
            )
        new = object.__new__(cls)
        if status is None:
            new._mem = array("i", (ANY_SOURCE, ANY_TAG, 0, 0, 0, 0))
        else:
            new._mem = array("i", status._mem)
        return new

    def _fill(self, source, tag, error, count, cancelled=False) -> None:
        """Set every field at once (completion paths; ``count`` in bytes)."""
        mem = self._mem
        mem[0] = source
        mem[1] = tag
        mem[2] = error
        mem[3] = 1 if cancelled else 0
        if count < _LOW:
            mem[4] = count
            mem[5] = 0
        else:
            self._count = count

    def _fields(self) -> tuple[int, int, int, int, bool]:
        return (self._source, self._tag, self._error, self._count, self._cancelled)

    @property
    def _source(self) -> int:
        return self._mem[0]

    @property
    def _tag(self) -> int:
        return self._mem[1]

    @property
    def _error(self) -> int:
        return self._mem[2]

    @property
    def _cancelled(self) -> bool:
        return bool(self._mem[3])

    @property
    def _count(self) -> int:
        return (self._mem[4] & 0xFFFFFFFF) | (self._mem[5] << 32)

    @_count.setter
    def _count(self, count: int) -> None:
        low = count & 0xFFFFFFFF
        self._mem[4] = low - (1 << 32) if low >= _LOW else low
        self._mem[5] = count >> 32

    def tomemory(self) -> memoryview:
        """The status's memory, as ints (mpi4py's ``Status.tomemory``)."""
        return memoryview(self._mem)

    # -- getters and setters --------------------------------------------------------------
    def Get_source(self) -> int:
        """Return the message source."""
        return self._source

    def Set_source(self, source: int) -> None:
        """Set the message source."""
        self._mem[0] = _as_int(source, "source")

    def Get_tag(self) -> int:
        """Return the message tag."""
        return self._tag

    def Set_tag(self, tag: int) -> None:
        """Set the message tag."""
        self._mem[1] = _as_int(tag, "tag")

    def Get_error(self) -> int:
        """Return the error code."""
        return self._error

    def Set_error(self, error: int) -> None:
        """Set the error code."""
        self._mem[2] = _as_int(error, "error")

    def Get_count(self, datatype=_BYTE) -> int:
        """Return the number of whole ``datatype`` items received."""
        return datatype._count_of(self._count)

    def Get_elements(self, datatype=_BYTE) -> int:
        """Return the number of basic elements of ``datatype`` received."""
        return datatype._elements_of(self._count)  # basic elements, per the typemap

    def Set_elements(self, datatype, count: int) -> None:
        """Set the number of basic elements of ``datatype`` received.

        It sets whole instances' worth of bytes, as Open MPI's ``MPI_Status_set_elements``
        does for a predefined type."""
        count = _as_int(count, "count")
        size = datatype.Get_size()
        per_instance = datatype._elements_of(size) if size else 0
        if per_instance <= 1:
            self._count = count * size
        else:
            self._count = count * size // per_instance

    def Is_cancelled(self) -> bool:
        """Test whether the communication was cancelled."""
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        """Set the cancelled state."""
        self._mem[3] = 1 if flag else 0

    source = property(Get_source, Set_source, doc="Message source.")
    tag = property(Get_tag, Set_tag, doc="Message tag.")
    error = property(Get_error, Set_error, doc="Message error.")
    cancelled = property(Is_cancelled, Set_cancelled, doc="Cancelled state.")

    @property
    def count(self) -> int:
        """Byte count."""
        return self.Get_count(_BYTE)

    @count.setter
    def count(self, value: int) -> None:
        self.Set_elements(_BYTE, value)

    # -- comparison, pickling, copies -----------------------------------------------------
    def __eq__(self, other) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._fields() == other._fields()

    def __ne__(self, other) -> bool:
        if not isinstance(other, Status):
            return NotImplemented
        return self._fields() != other._fields()

    __hash__ = None

    def __reduce__(self):
        return (copyreg.__newobj__, (type(self),), self.__getstate__())

    def __getstate__(self) -> dict:
        return {
            "source": self._source,
            "tag": self._tag,
            "error": self._error,
            "count": self._count,
            "cancelled": self._cancelled,
        }

    def __setstate__(self, state: dict) -> None:
        self._fill(
            state["source"],
            state["tag"],
            state["error"],
            state.get("count", 0),
            state.get("cancelled", False),
        )

    def __copy__(self) -> Status:
        return type(self)(self)

    def py2f(self) -> list[int]:
        """The Fortran status: the six ints of ``ompi_status_public_t``."""
        return list(self._mem)

    @classmethod
    def f2py(cls, arg) -> Status:
        status = cls()
        status._mem = array("i", [int(x) for x in list(arg)[:6]])
        return status

    def __repr__(self) -> str:
        return (
            f"<pyopenib.MPI.Status source={self._source} tag={self._tag} "
            f"error={self._error} count={self._count}>"
        )
