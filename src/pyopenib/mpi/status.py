"""``MPI.Status``: source, tag, error and byte count of a completed receive."""

from __future__ import annotations

from .datatypes import DATATYPES

__all__ = ["ANY_SOURCE", "ANY_TAG", "PROC_NULL", "Status", "UNDEFINED"]

ANY_SOURCE = -1
ANY_TAG = -1
PROC_NULL = -2
UNDEFINED = -32766
_BYTE = DATATYPES["BYTE"]


class Status:
    __slots__ = ("source", "tag", "error", "count", "cancelled")

    def __init__(self, status: Status | None = None):
        self.source = ANY_SOURCE
        self.tag = ANY_TAG
        self.error = 0
        self.count = 0
        self.cancelled = False
        if status is not None:
            self._fill(status.source, status.tag, status.error, status.count, status.cancelled)

    def _fill(self, source, tag, error, count, cancelled=False) -> None:
        self.source = source
        self.tag = tag
        self.error = error
        self.count = count
        self.cancelled = cancelled

    def Get_source(self) -> int:
        return self.source

    def Set_source(self, source: int) -> None:
        self.source = source

    def Get_tag(self) -> int:
        return self.tag

    def Set_tag(self, tag: int) -> None:
        self.tag = tag

    def Get_error(self) -> int:
        return self.error

    def Set_error(self, error: int) -> None:
        self.error = error

    def Get_count(self, datatype=_BYTE) -> int:
        return datatype._count_of(self.count)

    def Get_elements(self, datatype=_BYTE) -> int:
        return datatype._elements_of(self.count)  # basic elements, per the typemap

    def Is_cancelled(self) -> bool:
        return self.cancelled

    def __repr__(self) -> str:
        return f"<Status source={self.source} tag={self.tag} error={self.error} count={self.count}>"
