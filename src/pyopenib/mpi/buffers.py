"""mpi4py's buffer specifications, parsed as mpi4py 4.1 parses them, into byte streams.

A message is ``buf``, ``[buf, TYPE]``, ``[buf, count, TYPE]``, ``[buf, (count, displ),
TYPE]`` or ``[buf, count, displ, TYPE]``; ``buf`` is anything with the buffer protocol,
``None`` (zero size) or ``BOTTOM`` (the datatype holds absolute addresses); TYPE is a
``Datatype`` or a format code (``"i"``), and without one the buffer's format picks it.
A vector message (v-collectives) is ``[buf, counts, displs, TYPE]`` and the 2/3-item
forms, where counts and displs may each be a sequence, a scalar (every block that count;
displacement ``i * displ``) or missing (counts: the buffer split evenly; displs: blocks
back to back). A w-message (``Alltoallw``) is ``[buf, counts, displs, types]`` with byte
displacements. Counts and displacements are in units of the datatype's extent.

The PML moves bytes only. A message of a non-contiguous datatype is packed into a
contiguous stream when parsed for sending (Open MPI's convertor, whole message at once);
for receiving it gets a contiguous staging area, and ``finish()`` unpacks what arrived
into the user's layout. For contiguous layouts ``data`` is a view of the user's memory
and ``finish()`` does nothing. A malformed spec raises mpi4py's TypeError/ValueError/
KeyError with mpi4py's wording.
"""

from __future__ import annotations

import weakref

import numpy as np

from . import pack
from .datatypes import DATATYPES, Datatype, from_format, lookup_code
from .error_classes import ERROR_CLASSES, Exception
from .surface import MpiClass

__all__ = [
    "BOTTOM",
    "IN_PLACE",
    "NAMES",
    "Message",
    "VectorMessage",
    "as_bytes",
    "message",
    "vector_message",
    "w_message",
]

_ERR_TYPE = ERROR_CLASSES["ERR_TYPE"][0]
_ERR_TRUNCATE = ERROR_CLASSES["ERR_TRUNCATE"][0]
_PROC_NULL = -2


class InPlaceType(metaclass=MpiClass):
    """Type of ``IN_PLACE``.

    As mpi4py's, ``int()`` is MPI_IN_PLACE's address (1 in Open MPI) and it pickles as
    the constant, so ``is IN_PLACE`` holds after a round trip."""

    __slots__ = ()
    __module__ = "mpi4py.MPI"

    def __int__(self) -> int:
        return 1

    def __eq__(self, other) -> bool:
        if isinstance(other, InPlaceType):
            return True
        return NotImplemented if not isinstance(other, int) else other == 1

    def __hash__(self) -> int:
        return 1

    def __repr__(self) -> str:
        return "IN_PLACE"

    def __reduce__(self) -> str:
        return "IN_PLACE"


class BottomType(int, metaclass=MpiClass):
    """Type of ``BOTTOM``: address 0, the base of absolute displacements."""

    def __new__(cls):
        return super().__new__(cls, 0)

    def __repr__(self) -> str:
        return "BOTTOM"

    def __reduce__(self) -> str:
        return "BOTTOM"


IN_PLACE = InPlaceType()
BOTTOM = BottomType()
_BYTE = DATATYPES["BYTE"]
_BYTE_H = _BYTE._h
_NULL_H = DATATYPES["DATATYPE_NULL"]._h
_U8 = np.dtype(np.uint8)
_EMPTY = np.empty(0, np.uint8)
_EMPTY.flags.writeable = False


NAMES = {
    "IN_PLACE": IN_PLACE,
    "BOTTOM": BOTTOM,
    "InPlaceType": InPlaceType,
    "BottomType": BottomType,
}
"""What ``mpi4py.MPI`` exports from this module."""


def as_bytes(buf, writable: bool = False) -> tuple[np.ndarray, str]:
    """The whole buffer as a 1-D uint8 array (no copy) and its format string."""
    return pack.raw_bytes(buf, writable), pack.buffer_format(buf)


def _is_buffer(obj) -> bool:
    t = type(obj)
    if t is np.ndarray or t is bytearray or t is bytes or t is memoryview:
        return True
    if t is list or t is tuple or obj is None or t is str:
        return False
    try:
        memoryview(obj)
    except TypeError:
        return hasattr(obj, "__dlpack__") or hasattr(obj, "__cuda_array_interface__")
    return True


def _as_datatype(obj) -> Datatype:
    if isinstance(obj, Datatype):
        return obj
    return lookup_code(obj)


def _is_datatype(obj) -> bool:
    return isinstance(obj, Datatype | str)


def _pyindex(value) -> int:
    try:
        return value.__index__()
    except AttributeError:
        raise TypeError(
            f"'{type(value).__name__}' object cannot be interpreted as an integer"
        ) from None


def _pair(value):
    """Cython's tuple unpacking of ``(count, displ)``, with its error text."""
    n = len(value)
    if n != 2:
        raise ValueError(
            f"need more than {n} value{'s' if n != 1 else ''} to unpack"
            if n < 2
            else "too many values to unpack (expected 2)"
        )
    return value[0], value[1]


def _bounds_text(h) -> str:
    return f"datatype extent {h.extent} (lb:{h.lb}, ub:{h.ub})"


class _Memory:
    """The memory a message addresses: a uint8 view and the byte where address 0 of the
    message lies (the buffer start, or, for BOTTOM, the lowest absolute address used)."""

    __slots__ = ("mem", "origin")

    def __init__(self, mem: np.ndarray, origin: int):
        self.mem = mem
        self.origin = origin


def _basic(o_buf, o_type, writable: bool):
    """(memory, datatype, buffer length) of a message's buffer, as mpi4py's
    ``message_basic``: BOTTOM and None need an explicit datatype."""
    if o_buf is None or o_buf is BOTTOM:
        dt = _as_datatype(o_type)
        return None, dt, 0
    data = pack.raw_bytes(o_buf, writable)
    dt = _as_datatype(o_type) if o_type is not None else from_format(pack.buffer_format(o_buf))
    return data, dt, len(data)


def _region(data, o_buf, blocks, writable: bool) -> _Memory:
    """The memory holding ``blocks`` [(byte displacement, count, handle)]; for BOTTOM the
    absolute address range they span."""
    if data is not None:
        return _Memory(data, 0)
    lo = hi = 0
    first = True
    for disp, count, h in blocks:
        if count and h.size:
            a, b = pack.span(h, count)
            if first:
                lo, hi, first = disp + a, disp + b, False
            else:
                lo, hi = min(lo, disp + a), max(hi, disp + b)
    if first or o_buf is None:
        return _Memory(_EMPTY, 0)
    return _Memory(pack.absolute_memory(lo, hi, writable), -lo)


class _Staging(np.ndarray):
    """The receive area of a non-contiguous layout: a packed array that writes through.

    Assigning into it (``area[:n] = data``, or into any view of it) unpacks the area into
    the user's layout at once, so code that stores received bytes into ``msg.data`` or
    ``vmsg.block(i)`` by slice assignment gets the datatype's layout without knowing it.
    Writes that bypass ``__setitem__`` (the PML fills eager data through a memoryview) are
    completed by ``Message.finish``. A copy (``area.copy()``) is a plain array.

    The area names its Message by a weak reference: a strong one would make a cycle
    (``msg.data`` is the area), and the user's buffer, which the Message holds, would then
    outlive the call until the garbage collector ran, as no C MPI's buffer does (a DLPack
    producer's deleter ran at an arbitrary later time, and mpi4py's tests count
    references). Whoever writes into the area holds the Message.
    """

    def __array_finalize__(self, obj):
        self._owner = getattr(obj, "_owner", None) if self.base is not None else None

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        owner = self._owner
        msg = owner() if owner is not None else None
        if msg is not None:
            msg.finish()


class Message:
    """One buffer of ``count`` instances of ``datatype`` (per block, for a collective's
    buffer of several blocks).

    ``data``: the contiguous bytes (packed for a send; for a receive the area the PML
    writes into). ``finish(nbytes)`` stores what arrived into the user's layout: a no-op
    unless the datatype is non-contiguous.
    """

    __slots__ = ("data", "count", "datatype", "_mem", "_base", "staged", "_total", "__weakref__")

    def __init__(
        self, data: np.ndarray, count: int, datatype: Datatype, mem=None, base=0, staged=False
    ):
        self.data = data
        self.count = count
        self.datatype = datatype
        self._mem = mem  # set when the layout is non-contiguous: data is a packed copy
        self._base = base
        self.staged = staged
        """Whether ``finish`` has work: a non-contiguous layout received into a packed area."""
        self._total = count

    def typed(self) -> np.ndarray:
        """The packed data as the datatype's numpy dtype (reductions)."""
        return self.data.view(self.datatype.dtype)

    @property
    def nbytes(self) -> int:
        return len(self.data)

    def finish(self, nbytes: int | None = None) -> None:
        """Unpack the first ``nbytes`` received bytes (all by default) into place."""
        if self.staged:
            data = self.data.view(np.ndarray)
            if nbytes is not None:
                data = data[:nbytes]
            pack.scatter(self._mem, self._base, self._total, self.datatype._h, data)

    @property
    def finisher(self):
        """None for a contiguous layout; else ``f(pml_request)`` that unpacks what the
        request received (a nonblocking receive runs it when it completes)."""
        if not self.staged:
            return None
        return lambda preq: self.finish(preq.count)

    def packed(self) -> np.ndarray:
        """The bytes to send now: a persistent send packs its buffer again at each start
        (a contiguous layout is a view, always current)."""
        if self._mem is None:
            return self.data
        self.data = pack.gather(self._mem, self._base, self._total, self.datatype._h)
        return self.data


def _stream(region: _Memory, disp: int, count: int, dt: Datatype, writable: bool) -> Message:
    """The Message of ``count`` instances at byte ``disp`` of ``region``."""
    h = dt._h
    if not h.valid:
        raise Exception(_ERR_TYPE)
    mem, base = region.mem, region.origin + disp
    if h.dense:
        nbytes = count * h.size
        start = base + h.tlb
        if count and (start < 0 or start + nbytes > len(mem)):
            raise ValueError(
                f"message: {count} x {_bounds_text(h)} at byte {disp} does not fit "
                f"a {len(mem) - region.origin}-byte buffer"
            )
        if start == 0 and nbytes == len(mem):
            return Message(mem, count, dt)
        return Message(mem[start : start + nbytes], count, dt)
    packed = pack.gather(mem, base, count, h)
    if not writable:
        return Message(packed, count, dt, mem, base)
    area = packed.view(_Staging)
    msg = Message(area, count, dt, mem, base, True)
    area._owner = weakref.ref(msg)
    return msg


def message(spec, writable: bool = False, peer: int = 0, blocks: int = 1) -> Message:
    """The message of a point-to-point buffer (or a collective's simple buffer, divided
    into ``blocks`` equal parts when the count is inferred). ``peer`` PROC_NULL: an empty
    message, whatever the spec (as mpi4py, which does not look at it)."""
    if type(spec) is list and len(spec) == 2:
        # ``[array, TYPE]`` on a contiguous writable 1-D byte array: every osu-style
        # program's spec, taken without the general parse
        buf, dt = spec
        if (
            type(buf) is np.ndarray
            and buf.dtype is _U8
            and buf.ndim == 1
            and type(dt) is Datatype
            and dt._h is _BYTE_H
            and buf.flags.c_contiguous
            and buf.flags.writeable
            and blocks == 1
        ):
            return Message(buf, len(buf), dt)
    if peer == _PROC_NULL:
        return Message(_EMPTY, 0, _BYTE)
    if type(spec) is np.ndarray and blocks == 1 and spec.flags.c_contiguous:
        # a whole native numeric array: its dtype names a predefined contiguous datatype
        dt = _ARRAY_TYPES.get(spec.dtype)
        if dt is None:
            dt = _array_type(spec.dtype)
        if dt is not False and (spec.flags.writeable or not writable):
            data = spec if spec.dtype is _U8 and spec.ndim == 1 else spec.reshape(-1).view(_U8)
            return Message(data, spec.size, dt)
    o_count = o_displ = o_type = None
    if _is_buffer(spec):
        o_buf = spec
    elif type(spec) is list or type(spec) is tuple:
        n = len(spec)
        if n == 2:
            o_buf, o_count = spec
            if _is_datatype(o_count):
                o_count, o_type = None, o_count
            elif type(o_count) is tuple or type(o_count) is list:
                o_count, o_displ = _pair(o_count)
        elif n == 3:
            o_buf, o_count, o_type = spec
            if type(o_count) is tuple or type(o_count) is list:
                o_count, o_displ = _pair(o_count)
        elif n == 4:
            o_buf, o_count, o_displ, o_type = spec
        else:
            raise ValueError("message: expecting 2 to 4 items")
    else:
        raise TypeError("message: expecting buffer or list/tuple")
    data, dt, length = _basic(o_buf, o_type, writable)
    h = dt._h
    displ = 0
    offset = 0
    if o_displ is not None:
        displ = _pyindex(o_displ)
        if displ < 0:
            raise ValueError(f"message: negative displacement {displ}")
        if displ > 0:
            if h is _NULL_H:
                raise ValueError("message: cannot handle displacement, datatype is null")
            if not h.valid:
                raise Exception(_ERR_TYPE)
            if h.extent <= 0:
                raise ValueError(f"message: cannot handle displacement, {_bounds_text(h)}")
            if displ * h.extent > length:
                raise ValueError(
                    f"message: displacement {displ} out of bounds, "
                    f"number of datatype entries {length // h.extent}"
                )
            offset = displ * h.extent
            length -= offset
    if o_count is not None:
        count = _pyindex(o_count)
        if count < 0:
            raise ValueError(f"message: negative count {count}")
        if count > 0 and o_buf is None:
            raise ValueError(f"message: buffer is None but count is {count}")
    elif length > 0:
        if h is _NULL_H:
            raise ValueError("message: cannot infer count, datatype is null")
        if not h.valid:
            raise Exception(_ERR_TYPE)
        ext = h.extent
        if ext <= 0:
            raise ValueError(f"message: cannot infer count, {_bounds_text(h)}")
        if length % ext:
            raise ValueError(
                f"message: cannot infer count, buffer length {length} is not a multiple "
                f"of {_bounds_text(h)}"
            )
        count = length // ext
        if blocks > 1:
            if count % blocks:
                raise ValueError(
                    f"message: cannot infer count, number of entries {count} is not a "
                    f"multiple of required number of blocks {blocks}"
                )
            count //= blocks
    else:
        count = 0
    if count == 0:
        return Message(_EMPTY if data is None else data[offset:offset], 0, dt)
    # a collective's simple buffer holds ``blocks`` blocks of ``count`` back to back:
    # the message covers them all (``count`` stays the per-block count, as MPI's)
    total = count * blocks
    region = _region(data, o_buf, [(offset, total, h)], writable)
    msg = _stream(region, offset, total, dt, writable)
    msg.count = count
    return msg


_ARRAY_TYPES: dict = {}


def _array_type(dtype: np.dtype):
    """The predefined datatype of a native numeric dtype (False when the general parse
    must decide: byte order, records, strings), remembered per dtype."""
    dt = False
    if dtype.kind in "biufc" and dtype.isnative:
        try:
            found = from_format(pack.buffer_format(np.empty(0, dtype)))
        except KeyError:
            found = None
        if found is not None and found._h.valid and found._h.dense:
            dt = found
    _ARRAY_TYPES[dtype] = dt
    return dt


class VectorMessage:
    """A buffer cut into one block per process: block i is ``counts[i]`` instances of
    ``types[i]`` at byte ``displs[i]`` (v-collectives: one type, displacements scaled by
    its extent; w-collectives: a type per block, displacements in bytes).

    ``block(i)``: block i's contiguous bytes (packed for sending; for receiving a view,
    or a staging area that ``finish()`` unpacks into place).
    """

    __slots__ = ("counts", "displs", "types", "_region", "_writable", "_blocks")

    def __init__(self, region: _Memory, counts, displs, types, writable: bool):
        self._region = region
        self.counts = counts
        self.displs = displs
        self.types = types
        self._writable = writable
        self._blocks: dict[int, Message] = {}

    @property
    def data(self) -> np.ndarray:
        """The whole buffer's bytes (from address 0 of the message)."""
        r = self._region
        return r.mem[r.origin :]

    @property
    def datatype(self) -> Datatype:
        """The type of every block (v-messages; a w-message's first block's)."""
        return self.types[0] if self.types else _BYTE

    def message(self, i: int) -> Message:
        m = self._blocks.get(i)
        if m is None:
            m = _stream(self._region, self.displs[i], self.counts[i], self.types[i], self._writable)
            self._blocks[i] = m
        return m

    def block(self, i: int) -> np.ndarray:
        return self.message(i).data

    def block_nbytes(self, i: int) -> int:
        return self.counts[i] * self.types[i]._h.size

    def store(self, i: int, data) -> None:
        """Write received bytes into block i (raising ERR_TRUNCATE if they do not fit)."""
        area = self.block(i)
        n = len(data)
        if n > len(area):
            raise Exception(_ERR_TRUNCATE)
        if n:  # an empty block may be read-only memory (b"", [None, 0, BYTE])
            area[:n] = data

    def finish(self) -> None:
        """Unpack every staged block into the user's layout."""
        for m in self._blocks.values():
            m.finish()


def _vector_parts(spec):
    """(buf, counts, displs, type) of a vector message, as mpi4py's ``message_vector``."""
    o_counts = o_displs = o_type = None
    if _is_buffer(spec):
        return spec, None, None, None
    if type(spec) is list or type(spec) is tuple:
        n = len(spec)
        if n == 2:
            o_buf, o_counts = spec
            if _is_datatype(o_counts):
                o_counts, o_type = None, o_counts
            elif type(o_counts) is tuple:
                o_counts, o_displs = _pair(o_counts)
        elif n == 3:
            o_buf, o_counts, o_type = spec
            if type(o_counts) is tuple:
                o_counts, o_displs = _pair(o_counts)
        elif n == 4:
            o_buf, o_counts, o_displs, o_type = spec
        else:
            raise ValueError("message: expecting 2 to 4 items")
        return o_buf, o_counts, o_displs, o_type
    raise TypeError("message: expecting buffer or list/tuple")


def _checked(values, n: int) -> list[int]:
    values = [_pyindex(v) for v in values]
    if len(values) != n:
        raise ValueError(f"expecting {n} items, got {len(values)}")
    return values


def _is_integral(obj) -> bool:
    try:
        obj.__index__()
    except (AttributeError, TypeError):
        return False
    return True


def vector_message(spec, nprocs: int, writable: bool = False, peer: int = 0) -> VectorMessage:
    """The vector message of a v-collective buffer with ``nprocs`` blocks."""
    if peer == _PROC_NULL:
        return VectorMessage(
            _Memory(_EMPTY, 0), [0] * nprocs, [0] * nprocs, [_BYTE] * nprocs, writable
        )
    o_buf, o_counts, o_displs, o_type = _vector_parts(spec)
    data, dt, length = _basic(o_buf, o_type, writable)
    h = dt._h
    if o_counts is None:
        csize = 0
        if length > 0:
            if h is _NULL_H:
                raise ValueError("message: cannot infer count, datatype is null")
            if not h.valid:
                raise Exception(_ERR_TYPE)
            if h.extent <= 0:
                raise ValueError(f"message: cannot infer count, {_bounds_text(h)}")
            if length % h.extent:
                raise ValueError(
                    f"message: cannot infer count, buffer length {length} is not a "
                    f"multiple of {_bounds_text(h)}"
                )
            csize = length // h.extent
        counts = [csize // nprocs + (csize % nprocs > i) for i in range(nprocs)]
    elif _is_integral(o_counts):
        counts = [_pyindex(o_counts)] * nprocs
    else:
        counts = _checked(o_counts, nprocs)
    if o_displs is None:
        displs, at = [], 0
        for c in counts:
            displs.append(at)
            at += c
    elif _is_integral(o_displs):
        step = _pyindex(o_displs)
        displs = [step * i for i in range(nprocs)]
    else:
        displs = _checked(o_displs, nprocs)
    if any(counts) and not h.valid:
        raise Exception(_ERR_TYPE)
    ext = h.extent if h.valid else 0
    bdispls = [d * ext for d in displs]
    region = _region(data, o_buf, list(zip(bdispls, counts, [h] * nprocs, strict=True)), writable)
    return VectorMessage(region, counts, bdispls, [dt] * nprocs, writable)


def w_message(spec, nprocs: int, writable: bool = False) -> VectorMessage:
    """The message of a w-collective buffer: ``[buf, counts, displs, types]``, the
    ``[buf, (counts, displs), types]`` form, or ``[buf, types]`` (one of each, at 0)."""
    n = len(spec)
    if n == 2:
        o_buf, o_types = spec
        o_counts = o_displs = None
    elif n == 3:
        o_buf, pair, o_types = spec
        o_counts, o_displs = _pair(pair)
    elif n == 4:
        o_buf, o_counts, o_displs, o_types = spec
    else:
        raise ValueError("message: expecting 2 to 4 items")
    if o_buf is BOTTOM or o_buf is None:
        if o_counts is None:
            raise ValueError("message: BOTTOM requires counts")
        if o_displs is None:
            raise ValueError("message: BOTTOM requires displs")
        data = None
    else:
        data = pack.raw_bytes(o_buf, writable)
    if o_counts is None and o_displs is None:
        counts, displs = [1] * nprocs, [0] * nprocs
    else:
        counts = _checked(o_counts, nprocs)
        displs = _checked(o_displs, nprocs)
    types = list(o_types)
    if len(types) != nprocs:
        raise ValueError(f"expecting {nprocs} items, got {len(types)}")
    for t in types:
        if not isinstance(t, Datatype):
            raise TypeError(f"Cannot convert {type(t).__name__} to mpi4py.MPI.Datatype")
    blocks = list(zip(displs, counts, [t._h for t in types], strict=True))
    region = _region(data, o_buf, blocks, writable)
    return VectorMessage(region, counts, displs, types, writable)
