"""Moving data between a user's memory layout and a contiguous stream (Open MPI's convertor).

Everything here works on flat uint8 views of memory and on a datatype's typemap (see
``typemap``): ``gather`` packs ``count`` instances into a stream, ``scatter`` unpacks a
stream into place, ``to_external32``/``from_external32`` convert a packed stream to and
from the big-endian external32 representation (Open MPI 4.1 gives each basic type its
native x86-64 size there). Memory is reached through the buffer protocol; ``BOTTOM``
messages (absolute addresses from ``Get_address``) through ``absolute_memory``.
"""

from __future__ import annotations

import ctypes

import numpy as np

__all__ = [
    "absolute_memory",
    "buffer_format",
    "from_external32",
    "gather",
    "raw_bytes",
    "scatter",
    "span",
    "to_external32",
]

_U8 = np.dtype(np.uint8)
_I64 = np.int64


def raw_bytes(buf, writable: bool = False) -> np.ndarray:
    """The whole buffer as a 1-D uint8 array, without copying it."""
    if type(buf) is np.ndarray:
        if not buf.flags.c_contiguous:
            raise BufferError("ndarray is not C-contiguous")
        if buf.dtype is _U8 and buf.ndim == 1:
            data = buf  # the common case (osu-style byte buffers): nothing to reshape
        else:
            data = buf.reshape(-1).view(_U8)
    elif isinstance(buf, np.ndarray):
        return raw_bytes(np.asarray(buf), writable)
    else:
        try:
            mv = memoryview(buf)
        except TypeError:
            raise TypeError(
                f"a bytes-like object is required, not '{type(buf).__name__}'"
            ) from None
        if not mv.c_contiguous:
            raise BufferError("memoryview is not C-contiguous")
        data = np.frombuffer(mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv, _U8)
    if writable and not data.flags.writeable:
        raise BufferError("Object is not writable.")
    return data


def buffer_format(buf) -> str:
    """The buffer's struct format string (mpi4py infers the datatype from it). A native
    numeric numpy array's type character is the same code, without a memoryview."""
    if isinstance(buf, np.ndarray):
        dt = buf.dtype
        if dt.kind in "biufc" and dt.isnative:
            return dt.char
    return memoryview(buf).format


def absolute_memory(lo: int, hi: int, writable: bool) -> np.ndarray:
    """Bytes ``[lo, hi)`` of the process's address space (``MPI_BOTTOM`` + absolute
    displacements, as C MPI reads them): the caller took the addresses from live buffers."""
    n = max(hi - lo, 0)
    if n == 0:
        return np.empty(0, _U8)
    view = np.ctypeslib.as_array((ctypes.c_ubyte * n).from_address(lo))
    if not writable:
        view.flags.writeable = False
    return view


def span(h, count: int) -> tuple[int, int]:
    """[first, last) byte, relative to the buffer start, that ``count`` instances touch."""
    if count <= 0 or h.size == 0:
        return 0, 0
    reach = (count - 1) * h.extent
    return h.tlb + min(0, reach), h.tub + max(0, reach)


def _index(h, base: int, count: int) -> np.ndarray:
    idx = h.typemap().byte_index()
    if count == 1:
        return idx + base if base else idx
    shifts = base + np.arange(count, dtype=_I64) * h.extent
    return (shifts[:, None] + idx[None, :]).reshape(-1)


def _check(mem: np.ndarray, h, base: int, count: int) -> None:
    lo, hi = span(h, count)
    if base + lo < 0 or base + hi > len(mem):
        raise ValueError(
            f"message: {count} x datatype (lb:{h.lb}, ub:{h.ub}, true lb:{h.tlb}, "
            f"true ub:{h.tub}) at byte {base} does not fit a {len(mem)}-byte buffer"
        )


def gather(mem: np.ndarray, base: int, count: int, h) -> np.ndarray:
    """``count`` instances of the datatype starting at byte ``base`` of ``mem``, packed."""
    if count <= 0 or h.size == 0:
        return np.empty(0, _U8)
    _check(mem, h, base, count)
    if h.dense:
        start = base + h.tlb
        return mem[start : start + count * h.size]
    return mem[_index(h, base, count)]


def scatter(mem: np.ndarray, base: int, count: int, h, packed: np.ndarray) -> None:
    """Unpack the first ``len(packed)`` bytes of a stream of ``count`` instances into place
    (a short message fills the leading part of the typemap, as a receive does)."""
    n = len(packed)
    if n == 0 or count <= 0 or h.size == 0:
        return
    _check(mem, h, base, count)
    if h.dense:
        start = base + h.tlb
        mem[start : start + n] = packed
        return
    idx = _index(h, base, count)
    mem[idx[:n] if n < len(idx) else idx] = packed


def _perm(h, count: int) -> np.ndarray:
    perm = h.typemap().ext32_perm()
    if count == 1:
        return perm
    return ((np.arange(count, dtype=_I64) * h.size)[:, None] + perm[None, :]).reshape(-1)


def to_external32(packed: np.ndarray, count: int, h) -> np.ndarray:
    """A native packed stream of ``count`` instances in external32 byte order."""
    if len(packed) == 0:
        return packed
    return packed[_perm(h, count)]


def from_external32(ext: np.ndarray, count: int, h) -> np.ndarray:
    """The native packed stream of ``count`` instances read from external32 bytes."""
    if len(ext) == 0:
        return ext
    perm = _perm(h, count)
    native = np.empty(len(perm), _U8)
    native[perm] = ext
    return native
