"""``MPI.Status``: source, tag, error, byte count and cancelled flag of a completion.

A status stores its count in bytes, as Open MPI's ``_ucount``; ``Get_count`` and
``Get_elements`` ask the datatype how many instances / basic elements those bytes are
(``UNDEFINED`` for a partial one), as ``MPI_Get_count``/``MPI_Get_elements`` do.
"""

from __future__ import annotations

from .datatypes import DATATYPES

__all__ = ["ANY_SOURCE", "ANY_TAG", "PROC_NULL", "Status", "UNDEFINED", "empty_fields"]

ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2
UNDEFINED = -32766
_BYTE = DATATYPES["BYTE"]


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


class Status:
    """A completion's envelope; ``MPI.Status(other)`` copies ``other``."""

    __slots__ = ("_source", "_tag", "_error", "_count", "_cancelled")

    def __init__(self, status: Status | None = None):
        if status is None:
            self._source = ANY_SOURCE
            self._tag = ANY_TAG
            self._error = 0
            self._count = 0
            self._cancelled = False
        elif isinstance(status, Status):
            self._source = status._source
            self._tag = status._tag
            self._error = status._error
            self._count = status._count
            self._cancelled = status._cancelled
        else:
            raise TypeError(
                f"Argument 'status' has incorrect type (expected Status, got "
                f"{type(status).__name__})"
            )

    def _fill(self, source, tag, error, count, cancelled=False) -> None:
        """Set every field at once (completion paths; ``count`` in bytes)."""
        self._source = source
        self._tag = tag
        self._error = error
        self._count = count
        self._cancelled = cancelled

    def _fields(self) -> tuple[int, int, int, int, bool]:
        return (self._source, self._tag, self._error, self._count, self._cancelled)

    # -- getters and setters --------------------------------------------------------------
    def Get_source(self) -> int:
        return self._source

    def Set_source(self, source: int) -> None:
        self._source = _as_int(source, "source")

    def Get_tag(self) -> int:
        return self._tag

    def Set_tag(self, tag: int) -> None:
        self._tag = _as_int(tag, "tag")

    def Get_error(self) -> int:
        return self._error

    def Set_error(self, error: int) -> None:
        self._error = _as_int(error, "error")

    def Get_count(self, datatype=_BYTE) -> int:
        return datatype._count_of(self._count)

    def Get_elements(self, datatype=_BYTE) -> int:
        return datatype._elements_of(self._count)  # basic elements, per the typemap

    def Set_elements(self, datatype, count: int) -> None:
        """Set the count to ``count`` basic elements of ``datatype`` (whole instances'
        worth of bytes, as Open MPI's ``MPI_Status_set_elements`` for a predefined type)."""
        count = _as_int(count, "count")
        size = datatype.Get_size()
        per_instance = datatype._elements_of(size) if size else 0
        if per_instance <= 1:
            self._count = count * size
        else:
            self._count = count * size // per_instance

    def Is_cancelled(self) -> bool:
        return self._cancelled

    def Set_cancelled(self, flag: bool) -> None:
        self._cancelled = bool(flag)

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
        return (_new_status, (), self.__getstate__())

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
        return Status(self)

    def py2f(self) -> list[int]:
        """The Fortran status, in Open MPI's ``ompi_status_public_t`` order: source, tag,
        error, cancelled, then the byte count as two ints (low, high)."""
        return [
            self._source,
            self._tag,
            self._error,
            int(self._cancelled),
            self._count & 0xFFFFFFFF,
            self._count >> 32,
        ]

    @classmethod
    def f2py(cls, arg) -> Status:
        status = cls()
        source, tag, error, cancelled, low, high = (int(x) for x in list(arg)[:6])
        status._fill(source, tag, error, (low & 0xFFFFFFFF) | (high << 32), bool(cancelled))
        return status

    def __repr__(self) -> str:
        return (
            f"<pyopenib.MPI.Status source={self._source} tag={self._tag} "
            f"error={self._error} count={self._count}>"
        )


def _new_status() -> Status:
    return Status()
