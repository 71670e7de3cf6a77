"""mpi4py's buffer specifications turned into byte views.

A message is ``buf``, ``[buf, TYPE]``, ``[buf, count, TYPE]``, ``[buf, (count, displ),
TYPE]`` or ``[buf, count, displ, TYPE]`` where ``buf`` is anything with the buffer protocol
(numpy array, bytearray, bytes for sends, array.array, mmap, memoryview); without a TYPE the
buffer's format picks it. Vector messages (the v-collectives) take ``[buf, counts, TYPE]``,
``[buf, (counts, displs), TYPE]`` or omit the counts (equal blocks). Displacements count
elements of the datatype's extent, as in MPI.
"""

from __future__ import annotations

import numpy as np

from .datatypes import DATATYPES, Datatype, from_format

__all__ = ["IN_PLACE", "Message", "VectorMessage", "as_bytes", "message", "vector_message"]


class _InPlace:
    __slots__ = ()

    def __repr__(self) -> str:
        return "IN_PLACE"


IN_PLACE = _InPlace()
_BYTE = DATATYPES["BYTE"]
_U8 = np.dtype(np.uint8)
_EMPTY = np.empty(0, np.uint8)


class Message:
    """``data``: the uint8 bytes the message covers; ``typed()``: the same as TYPE."""

    __slots__ = ("data", "count", "datatype")

    def __init__(self, data: np.ndarray, count: int, datatype: Datatype):
        self.data = data
        self.count = count
        self.datatype = datatype

    def typed(self) -> np.ndarray:
        return self.data.view(self.datatype.dtype)


class VectorMessage:
    """A buffer cut into one block per process: ``block(i)`` is the uint8 view of block i."""

    __slots__ = ("data", "counts", "displs", "datatype")

    def __init__(self, data, counts, displs, datatype):
        self.data = data
        self.counts = counts
        self.displs = displs
        self.datatype = datatype

    def block(self, i: int) -> np.ndarray:
        ext = self.datatype.extent
        start = self.displs[i] * ext
        return self.data[start : start + self.counts[i] * ext]


def as_bytes(buf, writable: bool = False) -> tuple[np.ndarray, str]:
    """The whole buffer as a 1-D uint8 array (no copy) and its format character."""
    return _bytes_of(buf, writable), _format_of(buf)


def _bytes_of(buf, writable: bool) -> np.ndarray:
    """The whole buffer as a 1-D uint8 array, without copying it."""
    if type(buf) is np.ndarray:
        if not buf.flags.c_contiguous:
            raise ValueError("pyopenib's MPI needs contiguous buffers (the array is not)")
        if buf.dtype is _U8 and buf.ndim == 1:
            data = buf  # the common case (osu-style byte buffers): nothing to reshape
        else:
            data = buf.reshape(-1).view(_U8)
    elif isinstance(buf, np.ndarray):
        return _bytes_of(np.asarray(buf), writable)
    else:
        mv = memoryview(buf)
        data = np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, _U8)
    if writable and not data.flags.writeable:
        raise BufferError("receive buffer is read-only")
    return data


def _format_of(buf) -> str:
    """The buffer's struct format character (mpi4py infers the datatype from it)."""
    if isinstance(buf, np.ndarray) and not buf.ndim:
        return buf.dtype.char
    return memoryview(buf).format


def _split(spec):
    """(buf, count-or-None, displ, datatype-or-None) of a message specification."""
    if isinstance(spec, list | tuple):
        if len(spec) == 2:
            buf, second = spec
            if isinstance(second, Datatype):
                return buf, None, 0, second
            if isinstance(second, tuple | list):
                return buf, second[0], second[1], None
            return buf, second, 0, None
        if len(spec) == 3:
            buf, count, dt = spec
            if isinstance(count, tuple | list):
                return buf, count[0], count[1] or 0, dt
            return buf, count, 0, dt
        if len(spec) == 4:
            buf, count, displ, dt = spec
            return buf, count, displ, dt
        raise ValueError(f"message specification of length {len(spec)} is not understood")
    return spec, None, 0, None


def message(spec, writable: bool = False) -> Message:
    if type(spec) is list and len(spec) == 2:
        # ``[array, TYPE]`` on a contiguous writable 1-D byte array: every osu-style
        # program's spec, taken without the general parse
        buf, dt = spec
        if (type(buf) is np.ndarray and buf.dtype is _U8 and buf.ndim == 1
                and type(dt) is Datatype and dt.extent == 1
                and buf.flags.c_contiguous and buf.flags.writeable):  # fmt: skip
            return Message(buf, len(buf), dt)
    if spec is None:
        return Message(_EMPTY, 0, _BYTE)
    buf, count, displ, dt = _split(spec)
    data = _bytes_of(buf, writable)
    if dt is None:
        dt = from_format(_format_of(buf))
    ext = dt.extent
    if count is None:
        if not displ and ext == 1:
            return Message(data, len(data), dt)
        count = (len(data) - displ * ext) // ext
    start = displ * ext
    end = start + count * ext
    if end > len(data) or count < 0:
        raise ValueError(f"message of {count} x {dt.name} does not fit a {len(data)}-byte buffer")
    if start == 0 and end == len(data):
        return Message(data, count, dt)
    return Message(data[start:end], count, dt)


def vector_message(spec, nprocs: int, writable: bool = False) -> VectorMessage:
    if isinstance(spec, list | tuple) and len(spec) in (2, 3):
        buf = spec[0]
        rest = list(spec[1:])
    else:
        buf, rest = spec, []
    dt = rest.pop() if rest and isinstance(rest[-1], Datatype) else None
    layout = rest[0] if rest else None
    data, fmt = as_bytes(buf, writable)
    if dt is None:
        dt = from_format(fmt)
    if layout is None:
        per = len(data) // dt.extent // nprocs
        counts, displs = [per] * nprocs, None
    elif isinstance(layout, tuple) and len(layout) == 2 and not isinstance(layout[0], int):
        counts, displs = layout
    elif isinstance(layout, int):
        counts, displs = [layout] * nprocs, None
    else:
        counts, displs = layout, None
    counts = [int(c) for c in counts]
    if displs is None:
        displs = [sum(counts[:i]) for i in range(nprocs)]
    return VectorMessage(data, counts, [int(d) for d in displs], dt)
