"""``MPI.Datatype``: predefined datatypes as Open MPI 4.1 on x86-64 defines them, derived
datatypes with a real typemap, their decoding, and packing.

A ``Datatype`` object refers to a ``_Handle``, the MPI object itself (what an
``MPI_Datatype`` points to): ``Datatype(dt)`` makes a second reference to the same handle,
``==`` compares handles, and ``Free`` clears the reference it is called on, as in mpi4py.

Bounds follow Open MPI's datatype engine (``opal_datatype_add``), checked against it:
a block placed at displacement ``d`` spans ``[d + lb, d + ub)`` of its type; bounds set by
``Create_resized`` (and by subarray/darray, which Open MPI builds with resized) are sticky
markers that win over the data's own bounds; without an upper marker the extent is padded
to the largest alignment of the basic types inside, as a C struct would be.
"""

from __future__ import annotations

import copyreg
import weakref

import numpy as np

from . import attributes
from . import pack as _pack
from .attributes import copy_attributes, delete_attributes
from .error_classes import ERROR_CLASSES, Exception
from .surface import MpiClass
from .typemap import KINDS, Typemap, concat, copies_at

__all__ = [
    "DATATYPES",
    "DATATYPE_CONSTANTS",
    "DATATYPE_FUNCTIONS",
    "Datatype",
    "NAMES",
    "align_of",
    "code_of",
    "decoding",
    "from_format",
    "lookup_code",
]

_ERR_TYPE = ERROR_CLASSES["ERR_TYPE"][0]
_ERR_ARG = ERROR_CLASSES["ERR_ARG"][0]
_ERR_COUNT = ERROR_CLASSES["ERR_COUNT"][0]
_I64 = np.int64
_INT_MAX = 2**31 - 1
UNDEFINED = -32766

ORDER_C, ORDER_FORTRAN = 0, 1
TYPECLASS_INTEGER, TYPECLASS_REAL, TYPECLASS_COMPLEX, TYPECLASS_LOGICAL = 1, 2, 3, 4
DISTRIBUTE_BLOCK, DISTRIBUTE_CYCLIC, DISTRIBUTE_NONE, DISTRIBUTE_DFLT_DARG = 0, 1, 2, -1

# Open MPI 4.1's combiner numbers (mpi.h); VALUE_INDEX is MPI-4.1 and absent there (0).
COMBINERS = {
    "NAMED": 0,
    "DUP": 1,
    "CONTIGUOUS": 2,
    "VECTOR": 3,
    "HVECTOR": 5,
    "INDEXED": 6,
    "HINDEXED": 8,
    "INDEXED_BLOCK": 9,
    "STRUCT": 11,
    "SUBARRAY": 12,
    "DARRAY": 13,
    "F90_REAL": 14,
    "F90_COMPLEX": 15,
    "F90_INTEGER": 16,
    "RESIZED": 17,
    "HINDEXED_BLOCK": 18,
}
_COMBINER_NAMES = {code: name for name, code in COMBINERS.items()}
_NAMED = COMBINERS["NAMED"]
_DUP = COMBINERS["DUP"]

DATATYPE_CONSTANTS: dict[str, int] = {
    "ORDER_C": ORDER_C,
    "ORDER_FORTRAN": ORDER_FORTRAN,
    "ORDER_F": ORDER_FORTRAN,
    "TYPECLASS_INTEGER": TYPECLASS_INTEGER,
    "TYPECLASS_REAL": TYPECLASS_REAL,
    "TYPECLASS_COMPLEX": TYPECLASS_COMPLEX,
    "TYPECLASS_LOGICAL": TYPECLASS_LOGICAL,
    "DISTRIBUTE_BLOCK": DISTRIBUTE_BLOCK,
    "DISTRIBUTE_CYCLIC": DISTRIBUTE_CYCLIC,
    "DISTRIBUTE_NONE": DISTRIBUTE_NONE,
    "DISTRIBUTE_DFLT_DARG": DISTRIBUTE_DFLT_DARG,
    **{f"COMBINER_{name}": code for name, code in COMBINERS.items()},
    "COMBINER_VALUE_INDEX": 0,
}


def _err(code: int) -> Exception:
    return Exception(code)


def _index(value, what: str = "integer") -> int:
    """``value`` as an int, or mpi4py's TypeError for a non-integer."""
    try:
        return value.__index__()
    except AttributeError:
        raise TypeError(
            f"'{type(value).__name__}' object cannot be interpreted as an {what}"
        ) from None


def _ints(seq) -> list[int]:
    """``seq`` as a list of ints (plain ints pass as they are: the common case, checked
    without a call)."""
    return [v if type(v) is int else _index(v) for v in seq]


def _check_len(seq, n: int) -> list[int]:
    values = _ints(seq)
    if len(values) != n:
        raise ValueError(f"expecting {n} items, got {len(values)}")
    return values


class _Handle:
    """The MPI datatype object: bounds, decoding arguments, and (lazily) its typemap.

    ``lb``/``ub`` are the bounds that give the extent, ``tlb``/``tub`` the true bounds of
    the data, ``user_lb``/``user_ub`` whether they come from sticky markers. ``ints``,
    ``addrs``, ``counts``, ``types`` are ``MPI_Type_get_contents``'s four arrays.
    """

    __slots__ = (
        "fid",
        "name",
        "valid",
        "size",
        "lb",
        "ub",
        "tlb",
        "tub",
        "align",
        "user_lb",
        "user_ub",
        "combiner",
        "ints",
        "addrs",
        "counts",
        "types",
        "committed",
        "dtype",
        "char",
        "tstr",
        "code",
        "attrs",
        "_build",
        "_typemap",
        "_dense",
        "__weakref__",
    )

    _next_fid = 100

    def __init__(self, name: str = ""):
        self.fid = _Handle._next_fid
        _Handle._next_fid += 1
        self.name = name
        self.valid = True
        self.size = 0
        self.lb = self.ub = self.tlb = self.tub = 0
        self.align = 1
        self.user_lb = self.user_ub = False
        self.combiner = _NAMED
        self.ints: list[int] = []
        self.addrs: list[int] = []
        self.counts: list[int] = []
        self.types: list[_Handle] = []
        self.committed = False
        self.dtype = None
        self.char = self.tstr = self.code = None
        self.attrs = None
        self._build = None
        self._typemap = None
        self._dense = None

    @property
    def extent(self) -> int:
        return self.ub - self.lb

    def copy(self, name: str) -> _Handle:
        """A new handle with this one's layout and decoding but its own name, attributes
        and commit state: what ``MPI_Type_get_contents`` returns for a derived type and
        ``MPI_Type_dup`` starts from. Slot by slot, not by a ``setattr`` loop: ``decode``
        of a nested type makes one per level, and mpi4py's dtlib decodes a lot."""
        dup = _Handle.__new__(_Handle)
        dup.fid = _Handle._next_fid
        _Handle._next_fid += 1
        dup.name = name
        dup.valid = True
        dup.size = self.size
        dup.lb = self.lb
        dup.ub = self.ub
        dup.tlb = self.tlb
        dup.tub = self.tub
        dup.align = self.align
        dup.user_lb = self.user_lb
        dup.user_ub = self.user_ub
        dup.combiner = self.combiner
        dup.ints = self.ints
        dup.addrs = self.addrs
        dup.counts = self.counts
        dup.types = self.types
        dup.committed = False
        dup.dtype = self.dtype
        dup.char = dup.tstr = dup.code = None
        dup.attrs = None
        dup._build = self.typemap
        dup._typemap = self._typemap
        dup._dense = self._dense
        return dup

    def typemap(self) -> Typemap:
        tm = self._typemap
        if tm is None:
            tm = self._typemap = self._build()
        return tm

    @property
    def dense(self) -> bool:
        """True when ``count`` instances are one contiguous run in typemap order, so
        packing is a slice (the path every predefined contiguous type takes)."""
        d = self._dense
        if d is None:
            d = self.size == self.extent == self.tub - self.tlb
            if d and self.combiner != _NAMED:
                idx = self.typemap().byte_index()
                d = bool(np.array_equal(idx, np.arange(self.tlb, self.tub, dtype=_I64)))
            self._dense = d
        return d

    @property
    def predefined(self) -> bool:
        return self.combiner in (_NAMED, 14, 15, 16)


# -- bounds of a composition ---------------------------------------------------------------
class _Part:
    """``n`` copies of ``child`` at byte shifts between ``lo`` and ``hi``: enough for the
    bounds; ``shifts()`` lists them, only when a typemap is built (a contiguous type of
    2**31 bytes is measured, never walked)."""

    __slots__ = ("child", "n", "lo", "hi", "_make")

    def __init__(self, child: _Handle, n: int, lo: int, hi: int, make):
        self.child = child
        self.n = n
        self.lo = lo
        self.hi = hi
        self._make = make

    def shifts(self) -> np.ndarray:
        return self._make()


_FEW_BLOCKS = 32
"""Up to this many blocks, bounds are summed in plain Python: numpy's fixed cost per call
(a few microseconds) outweighs its speed until the arrays are this long, and most derived
types (a struct of a record's fields, a vector of a few rows) have a handful of blocks."""


def _blocks(child: _Handle, displs, lengths, extent: int) -> _Part:
    """Blocks of ``lengths[i]`` copies, ``extent`` apart, from byte ``displs[i]``.

    ``displs`` and ``lengths`` are lists of ints (or arrays, for many blocks); they are
    kept for ``shifts()`` and must not be changed afterwards."""
    if len(lengths) <= _FEW_BLOCKS:
        return _few_blocks(child, displs, lengths, extent)
    displs = np.asarray(displs, _I64).reshape(-1)
    lengths = np.asarray(lengths, _I64).reshape(-1)
    n = int(lengths.sum())
    if n == 0:
        return _Part(child, 0, 0, 0, None)
    keep = lengths > 0
    d, reach = displs[keep], (lengths[keep] - 1) * extent
    lo = int((d + np.minimum(reach, 0)).min())
    hi = int((d + np.maximum(reach, 0)).max())
    return _Part(child, n, lo, hi, lambda: _block_shifts(displs, lengths, extent))


def _block(child: _Handle, displ: int, length: int) -> _Part:
    """One block of ``length`` copies of ``child`` from byte ``displ`` (a contiguous
    type, a struct's member)."""
    if length <= 0:
        return _Part(child, 0, 0, 0, None)
    extent = child.extent
    reach = (length - 1) * extent
    lo, hi = (displ + reach, displ) if reach < 0 else (displ, displ + reach)
    return _Part(child, length, lo, hi, lambda: displ + np.arange(length, dtype=_I64) * extent)


def _few_blocks(child: _Handle, displs, lengths, extent: int) -> _Part:
    """``_blocks`` for a few blocks, the same bounds with Python ints."""
    n = 0
    lo = hi = None
    for d, length in zip(displs, lengths, strict=True):
        if length <= 0:
            continue
        n += length
        reach = (length - 1) * extent
        first, last = (d + reach, d) if reach < 0 else (d, d + reach)
        if lo is None:
            lo, hi = first, last
        else:
            lo, hi = min(lo, first), max(hi, last)
    if n == 0:
        return _Part(child, 0, 0, 0, None)
    return _Part(
        child,
        n,
        int(lo),
        int(hi),
        lambda: _block_shifts(np.asarray(displs, _I64), np.asarray(lengths, _I64), extent),
    )


def _grid(child: _Handle, sizes, indices, extent: int) -> _Part:
    """The row-major product of per-dimension index lists, ``extent`` per element."""
    n = int(np.prod([len(i) for i in indices]))
    if n == 0:
        return _Part(child, 0, 0, 0, None)
    lo = hi = 0
    for size, idx in zip(sizes, indices, strict=True):
        lo, hi = lo * size + int(idx.min()), hi * size + int(idx.max())
    return _Part(child, n, lo * extent, hi * extent, lambda: _grid_shifts(sizes, indices, extent))


def _compose(h: _Handle, parts: list[_Part]) -> None:
    """Set ``h``'s size and bounds from copies of child types at byte shifts.

    The lowest lower bound and highest upper bound win, a sticky marker's over the
    data's; the true bounds come from children with data. Kept as running extremes (not
    lists to take the minimum of): this runs for every derived type made."""
    size = 0
    align = 1
    lb = ub = user_lb = user_ub = tlb = tub = None
    for part in parts:
        child = part.child
        if not part.n or child.size == 0 and not (child.user_lb or child.user_ub):
            continue
        size += part.n * child.size
        if child.align > align:
            align = child.align
        low, high = part.lo + child.lb, part.hi + child.ub
        if child.user_lb:
            user_lb = low if user_lb is None or low < user_lb else user_lb
        else:
            lb = low if lb is None or low < lb else lb
        if child.user_ub:
            user_ub = high if user_ub is None or high > user_ub else user_ub
        else:
            ub = high if ub is None or high > ub else ub
        if child.size:
            low, high = part.lo + child.tlb, part.hi + child.tub
            tlb = low if tlb is None or low < tlb else tlb
            tub = high if tub is None or high > tub else tub
    h.size = size
    h.align = align
    h.user_lb = user_lb is not None
    h.user_ub = user_ub is not None
    if user_lb is not None or lb is not None:
        h.lb = user_lb if user_lb is not None else lb
        h.ub = user_ub if user_ub is not None else ub
    if tlb is not None:
        h.tlb, h.tub = tlb, tub
    if not h.user_ub and (h.ub - h.lb) % align:
        h.ub += align - (h.ub - h.lb) % align


def _block_shifts(displs: np.ndarray, lengths: np.ndarray, extent: int) -> np.ndarray:
    """Byte shifts of every child copy of blocks ``lengths[i]`` long at byte ``displs[i]``."""
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, _I64)
    first = np.cumsum(lengths) - lengths
    within = np.arange(total, dtype=_I64) - np.repeat(first, lengths)
    return np.repeat(displs, lengths) + within * extent


def _derived(cls, combiner: str, parts, ints=None, addrs=None, types=None):
    """A new derived datatype of class ``cls`` made of ``parts``; ``ints``, ``addrs`` and
    ``types`` are its decoding, lists the new handle keeps (callers pass fresh ones)."""
    h = _Handle("")
    h.combiner = COMBINERS[combiner]
    if ints is not None:
        h.ints = ints
    if addrs is not None:
        h.addrs = addrs
    if types is not None:
        h.types = types
    _compose(h, parts)
    # a reduction applies to a derived type whose data are all one basic type: its packed
    # stream is then an array of that type
    used = [p for p in parts if p.n and p.child.size]
    dtypes = {p.child.dtype for p in used}
    h.dtype = dtypes.pop() if len(dtypes) == 1 else None
    h._build = lambda: concat([copies_at(p.child.typemap(), p.shifts()) for p in used])
    return _new(cls, h)


def _new(cls, h: _Handle) -> Datatype:
    obj = object.__new__(cls)
    obj._h = h
    return obj


def _subarray(child: _Handle, sizes, subsizes, starts, order) -> _Part:
    """A subarray's elements, in the array's memory order."""
    if order == ORDER_FORTRAN:
        sizes, subsizes, starts = sizes[::-1], subsizes[::-1], starts[::-1]
    indices = [np.arange(s, s + n, dtype=_I64) for s, n in zip(starts, subsizes, strict=True)]
    return _grid(child, sizes, indices, child.extent)


def _grid_shifts(sizes, indices, extent) -> np.ndarray:
    """Byte shifts of the row-major product of per-dimension index lists."""
    flat = np.zeros(1, _I64)
    for size, idx in zip(sizes, indices, strict=True):
        flat = (flat[:, None] * size + idx[None, :]).reshape(-1)
    return flat * extent


def _darray_indices(gsize, distrib, darg, psize, coord) -> np.ndarray:
    """Global indices one process owns along one dimension (MPI-3.1 section 4.1.4)."""
    if distrib == DISTRIBUTE_NONE:
        return np.arange(gsize, dtype=_I64)
    if distrib == DISTRIBUTE_BLOCK:
        block = -(-gsize // psize) if darg == DISTRIBUTE_DFLT_DARG else darg
        if block * psize < gsize:
            raise _err(_ERR_ARG)
        lo = min(coord * block, gsize)
        return np.arange(lo, min(lo + block, gsize), dtype=_I64)
    if distrib == DISTRIBUTE_CYCLIC:
        block = 1 if darg == DISTRIBUTE_DFLT_DARG else darg
        if block <= 0:
            raise _err(_ERR_ARG)
        starts = np.arange(coord * block, gsize, psize * block, dtype=_I64)
        idx = (starts[:, None] + np.arange(block, dtype=_I64)[None, :]).reshape(-1)
        return idx[idx < gsize]
    raise _err(_ERR_ARG)


class Datatype(metaclass=MpiClass):
    """Datatype object (mpi4py 4.1's ``MPI.Datatype``)."""

    __slots__ = ("_h", "__weakref__")
    __module__ = "mpi4py.MPI"  # pickles name ``mpi4py.MPI.INT``, found in a job's MPI module

    # -- attributes (attributes) ------------------------------------------------------------
    _attr_kind = "Datatype"
    _attributes = attributes.datatype_object_attributes
    Create_keyval = classmethod(attributes.Create_keyval)
    Free_keyval = classmethod(attributes.Free_keyval)
    Get_attr = attributes.Get_attr
    Set_attr = attributes.Set_attr
    Delete_attr = attributes.Delete_attr

    def __new__(cls, datatype: Datatype | None = None):
        obj = object.__new__(cls)
        if datatype is None:
            obj._h = _NULL
        elif isinstance(datatype, Datatype):
            obj._h = datatype._h
        else:
            raise TypeError(f"expected Datatype, got {type(datatype).__name__}")
        return obj

    def __init__(self, datatype: Datatype | None = None):
        pass

    # -- identity ---------------------------------------------------------------------------
    def _valid(self) -> _Handle:
        h = self._h
        if not h.valid:
            raise _err(_ERR_TYPE)
        return h

    def __eq__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._h is other._h

    def __ne__(self, other):
        if not isinstance(other, Datatype):
            return NotImplemented
        return self._h is not other._h

    __hash__ = None  # mpi4py's handles are unhashable

    def __bool__(self) -> bool:
        return self._h is not _NULL

    def __repr__(self) -> str:
        return f"<mpi4py.MPI.Datatype object {self._h.name or hex(self._h.fid)}>"

    def __reduce__(self):
        h = self._h
        if h.combiner == _NAMED:
            canonical = _CANONICAL.get(h.fid)
            if canonical is not None and canonical[0] is self:
                return canonical[1]
            return (copyreg.__newobj__, (type(self), canonical[0] if canonical else _NULL_TYPE))
        base, combiner, params = self.decode()
        return (_datatype_create, (base, combiner, params, True))

    @property
    def handle(self) -> int:
        """MPI handle."""
        h = self._h
        if h is _NULL:
            return 0
        _BY_FID[h.fid] = h
        return h.fid

    @classmethod
    def fromhandle(cls, handle: int) -> Datatype:
        """Create object from MPI handle."""
        return _from_fid(handle)

    def toint(self) -> int:
        """Translate object to integer handle."""
        return self.handle

    @classmethod
    def fromint(cls, arg: int, /) -> Datatype:
        """Translate integer handle to object."""
        return _from_fid(arg)

    def py2f(self) -> int:
        return self.handle

    @classmethod
    def f2py(cls, arg: int) -> Datatype:
        return _from_fid(arg)

    def free(self) -> None:
        """Call ``Free`` if not null or predefined."""
        h = self._h
        if h is _NULL or _CANONICAL.get(h.fid, (None,))[0] is self:
            return  # null, or a module constant: mpi4py never frees those
        if h.predefined:
            self._h = _NULL  # another object for a predefined type forgets it
            return
        self.Free()

    # -- accessors --------------------------------------------------------------------------
    def Get_size(self) -> int:
        """Return the number of bytes of data the datatype describes."""
        return self._valid().size

    @property
    def size(self) -> int:
        return self._valid().size

    def Get_extent(self) -> tuple[int, int]:
        """Return the lower bound and extent of the datatype."""
        h = self._valid()
        return h.lb, h.extent

    @property
    def extent(self) -> int:
        return self._valid().extent

    @property
    def lb(self) -> int:
        return self._valid().lb

    @property
    def ub(self) -> int:
        return self._valid().ub

    def Get_true_extent(self) -> tuple[int, int]:
        """Return the true lower bound and extent of the data."""
        h = self._valid()
        return h.tlb, h.tub - h.tlb

    @property
    def true_extent(self) -> int:
        h = self._valid()
        return h.tub - h.tlb

    @property
    def true_lb(self) -> int:
        return self._valid().tlb

    @property
    def true_ub(self) -> int:
        return self._valid().tub

    Get_size_c = Get_size
    Get_extent_c = Get_extent
    Get_true_extent_c = Get_true_extent

    @property
    def dtype(self):
        """The numpy dtype reductions combine with (predefined types; else None)."""
        return self._h.dtype

    # -- constructors -----------------------------------------------------------------------
    def Dup(self) -> Datatype:
        """Duplicate the datatype (attributes copied by their copy functions)."""
        old = self._h
        if not old.valid:
            raise _err(_ERR_TYPE)
        h = old.copy(f"Dup {old.name}")
        h.combiner = _DUP
        h.ints, h.addrs, h.counts = [], [], []
        h.types = [old]
        dup = _new(type(self), h)
        if old.attrs is not None:
            copy_attributes(self, old.attrs, dup._attributes())
        return dup

    Create_dup = Dup

    def Create_contiguous(self, count: int) -> Datatype:
        """Create a datatype of ``count`` copies of this one, end to end."""
        old = self._valid()
        count = _index(count)
        if count < 0:
            raise _err(_ERR_COUNT)
        if count > _INT_MAX:
            return self._large_contiguous(old, count)
        part = _block(old, 0, count)
        return _derived(type(self), "CONTIGUOUS", [part], ints=[count], types=[old])

    def _large_contiguous(self, old: _Handle, count: int) -> Datatype:
        """Build a contiguous type of a count beyond an int, as mpi4py on MPI 3.1.

        mpi4py builds a struct of a vector of INT_MAX-blocks and a contiguous remainder
        (its large-count emulation)."""
        q, r = divmod(count, _INT_MAX)
        base = _new(type(self), old)
        qtype = base.Create_vector(q, _INT_MAX, _INT_MAX)
        rtype = base.Create_contiguous(r)
        return type(self).Create_struct([1, 1], [0, q * _INT_MAX * old.extent], [qtype, rtype])

    def _vector(self, count, blocklength, stride_bytes, combiner, ints, addrs):
        old = self._valid()
        if count < 0 or blocklength < 0:
            raise _err(_ERR_COUNT)
        if count <= _FEW_BLOCKS:
            starts = [i * stride_bytes for i in range(count)]
            lengths = [blocklength] * count
        else:
            starts = np.arange(count, dtype=_I64) * stride_bytes
            lengths = np.full(count, blocklength, _I64)
        part = _blocks(old, starts, lengths, old.extent)
        return _derived(type(self), combiner, [part], ints=ints, addrs=addrs, types=[old])

    def Create_vector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """Create a vector datatype: blocks spaced by a stride in elements."""
        count, blocklength, stride = _index(count), _index(blocklength), _index(stride)
        ext = self._valid().extent
        return self._vector(
            count, blocklength, stride * ext, "VECTOR", [count, blocklength, stride], []
        )

    def Create_hvector(self, count: int, blocklength: int, stride: int) -> Datatype:
        """Create a vector datatype: blocks spaced by a stride in bytes."""
        count, blocklength, stride = _index(count), _index(blocklength), _index(stride)
        return self._vector(count, blocklength, stride, "HVECTOR", [count, blocklength], [stride])

    def _indexed(self, lengths, displs, unit, combiner, ints, addrs):
        old = self._valid()
        if any(length < 0 for length in lengths):
            raise _err(_ERR_COUNT)
        if len(lengths) <= _FEW_BLOCKS:
            starts = [d * unit for d in displs]
        else:
            starts = np.array(displs, _I64) * unit
            lengths = np.array(lengths, _I64)
        part = _blocks(old, starts, lengths, old.extent)
        return _derived(type(self), combiner, [part], ints=ints, addrs=addrs, types=[old])

    def Create_indexed(self, blocklengths, displacements) -> Datatype:
        """Create an indexed datatype: blocks at displacements in elements."""
        lengths = _ints(blocklengths)
        displs = _check_len(displacements, len(lengths))
        ext = self._valid().extent
        return self._indexed(lengths, displs, ext, "INDEXED", [len(lengths), *lengths, *displs], [])

    def Create_hindexed(self, blocklengths, displacements) -> Datatype:
        """Create an indexed datatype: blocks at displacements in bytes."""
        lengths = _ints(blocklengths)
        displs = _check_len(displacements, len(lengths))
        return self._indexed(lengths, displs, 1, "HINDEXED", [len(lengths), *lengths], displs)

    def Create_indexed_block(self, blocklength: int, displacements) -> Datatype:
        """Create an indexed datatype of equal blocks (displacements in elements)."""
        blocklength = _index(blocklength)
        displs = _ints(displacements)
        ext = self._valid().extent
        return self._indexed(
            [blocklength] * len(displs),
            displs,
            ext,
            "INDEXED_BLOCK",
            [len(displs), blocklength, *displs],
            [],
        )

    def Create_hindexed_block(self, blocklength: int, displacements) -> Datatype:
        """Create an indexed datatype of equal blocks (displacements in bytes)."""
        blocklength = _index(blocklength)
        displs = _ints(displacements)
        return self._indexed(
            [blocklength] * len(displs),
            displs,
            1,
            "HINDEXED_BLOCK",
            [len(displs), blocklength],
            displs,
        )

    @classmethod
    def Create_struct(cls, blocklengths, displacements, datatypes) -> Datatype:
        """Create a general composite (struct) datatype."""
        lengths = _ints(blocklengths)
        n = len(lengths)
        displs = _check_len(displacements, n)
        types = list(datatypes)
        if len(types) != n:
            raise ValueError(f"expecting {n} items, got {len(types)}")
        handles = []
        for t in types:
            if not isinstance(t, Datatype):
                raise TypeError(f"Cannot convert {type(t).__name__} to mpi4py.MPI.Datatype")
            h = t._h
            if not h.valid:
                raise _err(_ERR_TYPE)
            handles.append(h)
        if any(b < 0 for b in lengths):
            raise _err(_ERR_COUNT)
        parts = [_block(h, d, b) for b, d, h in zip(lengths, displs, handles, strict=True)]
        return _derived(cls, "STRUCT", parts, ints=[n, *lengths], addrs=displs, types=handles)

    def Create_subarray(self, sizes, subsizes, starts, order: int = ORDER_C) -> Datatype:
        """Create a datatype for a subarray of a multidimensional array."""
        old = self._valid()
        sizes = _ints(sizes)
        nd = len(sizes)
        subsizes = _check_len(subsizes, nd)
        starts = _check_len(starts, nd)
        order = _index(order)
        if nd <= 0 or order not in (ORDER_C, ORDER_FORTRAN):
            raise _err(_ERR_ARG)
        for size, sub, start in zip(sizes, subsizes, starts, strict=True):
            if size <= 0 or sub <= 0 or start < 0 or start + sub > size:
                raise _err(_ERR_ARG)
        part = _subarray(old, sizes, subsizes, starts, order)
        total = int(np.prod(sizes)) * old.extent
        return self._marked(old, part, total, "SUBARRAY", [nd, *sizes, *subsizes, *starts, order])

    def Create_darray(
        self, size, rank, gsizes, distribs, dargs, psizes, order: int = ORDER_C
    ) -> Datatype:
        """Create a datatype for a block of a distributed array."""
        old = self._valid()
        size, rank = _index(size), _index(rank)
        gsizes = _ints(gsizes)
        nd = len(gsizes)
        distribs = _check_len(distribs, nd)
        dargs = _check_len(dargs, nd)
        psizes = _check_len(psizes, nd)
        order = _index(order)
        if not 0 <= rank < size or int(np.prod(psizes)) != size or order not in (0, 1):
            raise _err(_ERR_ARG)
        coords, r = [], rank
        for p in reversed(psizes):  # the process grid is row-major whatever ``order`` is
            coords.append(r % p)
            r //= p
        coords.reverse()
        idx = [
            _darray_indices(g, d, a, p, c)
            for g, d, a, p, c in zip(gsizes, distribs, dargs, psizes, coords, strict=True)
        ]
        dims = list(zip(gsizes, idx, strict=True))
        if order == ORDER_FORTRAN:
            dims.reverse()
        part = _grid(old, [g for g, _ in dims], [i for _, i in dims], old.extent)
        total = int(np.prod(gsizes)) * old.extent
        return self._marked(
            old,
            part,
            total,
            "DARRAY",
            [size, rank, nd, *gsizes, *distribs, *dargs, *psizes, order],
        )

    def _marked(self, old, part, total, combiner, ints) -> Datatype:
        """A type whose bounds are ``[0, total)`` markers (subarray, darray)."""
        dt = _derived(type(self), combiner, [part], ints=ints, types=[old])
        h = dt._h
        h.lb, h.ub, h.user_lb, h.user_ub = 0, total, True, True
        return dt

    def Create_resized(self, lb: int, extent: int) -> Datatype:
        """Create a datatype with a new lower bound and extent."""
        old = self._valid()
        lb, extent = _index(lb), _index(extent)
        h = _Handle("")
        h.size, h.tlb, h.tub, h.align, h.dtype = old.size, old.tlb, old.tub, old.align, old.dtype
        h.lb, h.ub, h.user_lb, h.user_ub = lb, lb + extent, True, True
        h.combiner = COMBINERS["RESIZED"]
        h.addrs = [lb, extent]
        h.types = [old]
        h._build = old.typemap
        return _new(type(self), h)

    Resized = Create_resized

    @classmethod
    def Get_value_index(cls, value: Datatype, index: Datatype) -> Datatype:
        """Return the predefined pair datatype for a value and an index type."""
        value._valid()
        index._valid()
        if index._h is DATATYPES["INT"]._h:
            for attr in ("SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "LONG_DOUBLE"):
                if value._h is DATATYPES[attr]._h:
                    return _new(cls, DATATYPES["INT_INT" if attr == "INT" else f"{attr}_INT"]._h)
        return _new(cls, _NULL)

    # -- Fortran parametrized types ----------------------------------------------------------
    @classmethod
    def Create_f90_integer(cls, r: int) -> Datatype:
        """Return the Fortran 90 integer datatype of ``r`` decimal digits."""
        r = _index(r)
        for limit, attr in ((2, "SIGNED_CHAR"), (4, "SHORT"), (9, "INT"), (18, "LONG")):
            if r <= limit:
                return _new(cls, _f90("F90_INTEGER", (r,), DATATYPES[attr]._h, "i"))
        raise _err(_ERR_ARG)

    @classmethod
    def Create_f90_real(cls, p: int, r: int) -> Datatype:
        """Return the Fortran 90 real datatype of precision ``p`` and range ``r``."""
        return _new(cls, _f90_float("F90_REAL", _index(p), _index(r), "f"))

    @classmethod
    def Create_f90_complex(cls, p: int, r: int) -> Datatype:
        """Return the Fortran 90 complex datatype of precision ``p`` and range ``r``."""
        return _new(cls, _f90_float("F90_COMPLEX", _index(p), _index(r), "c"))

    @classmethod
    def Match_size(cls, typeclass: int, size: int) -> Datatype:
        """Return the predefined datatype of a type class and a size in bytes."""
        found = _MATCH_SIZE.get((_index(typeclass), _index(size)))
        if found is None:
            raise _err(_ERR_ARG)
        return _new(cls, DATATYPES[found]._h)

    # -- use --------------------------------------------------------------------------------
    def Commit(self) -> Datatype:
        """Commit the datatype, so communication may use it."""
        self._valid().committed = True
        return self

    def Free(self) -> None:
        """Free the datatype (this object becomes ``DATATYPE_NULL``)."""
        h = self._valid()
        if h.predefined:
            raise _err(_ERR_TYPE)
        delete_attributes(self, h.attrs)
        self._h = _NULL

    # -- decoding ---------------------------------------------------------------------------
    def Get_envelope(self) -> tuple[int, int, int, int, int]:
        """Return the counts of the arguments that built the datatype, and its combiner."""
        h = self._valid()
        return len(h.ints), len(h.addrs), len(h.counts), len(h.types), h.combiner

    @property
    def envelope(self) -> tuple[int, int, int, int, int]:
        return self.Get_envelope()

    Get_envelope_c = Get_envelope

    def Get_contents(self) -> tuple[list[int], list[int], list[int], list[Datatype]]:
        """Return the arguments that built the datatype."""
        h = self._valid()
        if h.combiner == _NAMED:
            raise _err(_ERR_ARG)
        return list(h.ints), list(h.addrs), list(h.counts), [_contents_ref(t) for t in h.types]

    @property
    def contents(self):
        return self.Get_contents()

    Get_contents_c = Get_contents

    @property
    def combiner(self) -> int:
        return self.Get_envelope()[-1]

    @property
    def is_named(self) -> bool:
        return self.Get_envelope()[-1] == _NAMED

    @property
    def is_predefined(self) -> bool:
        h = self._h
        if h is _NULL:
            return True
        return self._valid().predefined

    def decode(self) -> tuple[Datatype, str, dict]:
        """Return the base datatype, the combiner and the arguments that built it."""
        h = self._valid()
        if h.combiner == _NAMED:
            return self, "NAMED", {}
        _, name, params = decoding(h)
        types = [_contents_ref(t) for t in h.types]
        if name == "STRUCT":
            params["datatypes"] = types
        return (types[0] if len(types) == 1 else _NULL_TYPE), name, params

    # -- packing ----------------------------------------------------------------------------
    def Pack(self, inbuf, outbuf, position: int, comm) -> int:
        """Pack ``inbuf`` into ``outbuf`` at ``position``; return the new position."""
        h = self._valid()
        src = _pack.raw_bytes(inbuf)
        count = len(src) // h.extent if h.extent > 0 else 0
        return _put(outbuf, _index(position), _pack.gather(src, 0, count, h))

    def Unpack(self, inbuf, position: int, outbuf, comm) -> int:
        """Unpack ``inbuf`` from ``position`` into ``outbuf``; return the new position."""
        h = self._valid()
        dst = _pack.raw_bytes(outbuf, writable=True)
        count = len(dst) // h.extent if h.extent > 0 else 0
        position = _index(position)
        stream = _take(inbuf, position, count * h.size)
        _pack.scatter(dst, 0, count, h, stream)
        return position + len(stream)

    def Pack_size(self, count: int, comm) -> int:
        """Return an upper bound of the bytes ``Pack`` needs for ``count`` items."""
        return _index(count) * self._valid().size

    Pack_size_c = Pack_size

    def Pack_external(self, datarep: str, inbuf, outbuf, position: int) -> int:
        """Pack into ``outbuf`` in a portable data representation (``external32``)."""
        h = self._valid()
        _check_datarep(datarep)
        src = _pack.raw_bytes(inbuf)
        count = len(src) // h.extent if h.extent > 0 else 0
        packed = _pack.to_external32(_pack.gather(src, 0, count, h), count, h)
        return _put(outbuf, _index(position), packed)

    def Unpack_external(self, datarep: str, inbuf, position: int, outbuf) -> int:
        """Unpack from a portable data representation (``external32``)."""
        h = self._valid()
        _check_datarep(datarep)
        dst = _pack.raw_bytes(outbuf, writable=True)
        count = len(dst) // h.extent if h.extent > 0 else 0
        position = _index(position)
        stream = _take(inbuf, position, count * h.size)
        _pack.scatter(dst, 0, count, h, _pack.from_external32(stream, count, h))
        return position + len(stream)

    def Pack_external_size(self, datarep: str, count: int) -> int:
        """Return the bytes ``Pack_external`` needs for ``count`` items."""
        _check_datarep(datarep)
        return _index(count) * self._valid().size

    # -- counting received data (Status.Get_count / Get_elements) ---------------------------
    def _count_of(self, nbytes: int) -> int:
        """Whole instances in ``nbytes`` of packed data, or UNDEFINED for a partial one."""
        size = self._valid().size
        if size == 0:
            return 0
        return nbytes // size if nbytes % size == 0 else UNDEFINED

    def _elements_of(self, nbytes: int) -> int:
        """Count the basic elements in ``nbytes`` of packed data.

        UNDEFINED when the data ends inside an element. Open MPI counts a predefined type
        as one element (a pair type too) but the value and the index of a pair inside a
        derived type as two."""
        h = self._valid()
        if h.size == 0:
            return 0
        if h.combiner == _NAMED:
            return self._count_of(nbytes)
        full, rest = divmod(nbytes, h.size)
        ends = h.typemap().element_ends()
        n = full * len(ends)
        if rest == 0:
            return n
        i = int(np.searchsorted(ends, rest))
        return n + i + 1 if ends[i] == rest else UNDEFINED

    # -- naming -----------------------------------------------------------------------------
    def Get_name(self) -> str:
        """Return the print name of the datatype."""
        h = self._h
        if h is _NULL:
            return "MPI_DATATYPE_NULL"
        if h.name is None:
            raise _err(_ERR_TYPE)
        return h.name

    def Set_name(self, name: str) -> None:
        """Set the print name of the datatype."""
        self._valid().name = str(name)

    @property
    def name(self) -> str:
        return self.Get_name()

    @name.setter
    def name(self, value: str) -> None:
        self.Set_name(value)

    # -- Python/NumPy interoperability ------------------------------------------------------
    def tocode(self) -> str:
        """Return the type code (``'i'``, ``'d'``...) of a predefined datatype."""
        code = _codes(self._h)[2]
        if code is None:
            raise ValueError("cannot map to character code or type string")
        return code

    @classmethod
    def fromcode(cls, code: str) -> Datatype:
        """Return the predefined datatype of a type code (``'i'``, ``'d'``...)."""
        try:
            return TYPEDICT[code]
        except (KeyError, TypeError):
            raise ValueError(f"cannot map code {code!r} to MPI datatype") from None

    @property
    def typestr(self) -> str:
        h = self._h
        if h is _NULL:
            return ""
        tstr = _codes(h)[1]
        return tstr if tstr is not None else f"V{h.extent}"

    @property
    def typechar(self) -> str:
        h = self._h
        if h is _NULL:
            return ""
        char = _codes(h)[0]
        return char if char is not None else "V"


def _codes(h: _Handle) -> tuple[str | None, str | None, str | None]:
    """(typechar, typestr, code) of a handle; a Dup has its base type's."""
    while h.combiner == _DUP:
        h = h.types[0]
    return h.char, h.tstr, h.code


def _contents_ref(h: _Handle) -> Datatype:
    """A new reference for ``Get_contents``: predefined handles as they are, derived ones
    as a fresh handle with the same layout and decoding (Open MPI returns a duplicate)."""
    if h.predefined:
        return _new(Datatype, h)
    return _new(Datatype, h.copy(f"Dup {h.name}"))


def decoding(h: _Handle) -> tuple[_Handle | None, str, dict]:
    """The base handle (None for a struct of several types, or a Fortran type), the
    combiner's name and the arguments of a derived handle; a struct's ``datatypes`` are
    its member handles.

    ``decode`` hands these out as new references; code inside the package that only
    reads a datatype's construction (``util_dtlib``'s walks) uses them as they are, and
    makes no handles."""
    name = _COMBINER_NAMES[h.combiner]
    i, a = h.ints, h.addrs
    if name == "NAMED":
        return h, name, {}
    if name == "DUP":
        params = {}
    elif name == "CONTIGUOUS":
        params = {"count": i[0]}
    elif name == "VECTOR":
        params = {"count": i[0], "blocklength": i[1], "stride": i[2]}
    elif name == "HVECTOR":
        params = {"count": i[0], "blocklength": i[1], "stride": a[0]}
    elif name == "INDEXED":
        n = i[0]
        params = {"blocklengths": i[1 : n + 1], "displacements": i[n + 1 : 2 * n + 1]}
    elif name == "HINDEXED":
        params = {"blocklengths": i[1 : i[0] + 1], "displacements": list(a)}
    elif name == "INDEXED_BLOCK":
        params = {"blocklength": i[1], "displacements": i[2 : i[0] + 2]}
    elif name == "HINDEXED_BLOCK":
        params = {"blocklength": i[1], "displacements": list(a)}
    elif name == "STRUCT":
        params = {
            "blocklengths": i[1 : i[0] + 1],
            "displacements": list(a),
            "datatypes": list(h.types),
        }
    elif name == "SUBARRAY":
        n = i[0]
        params = {
            "sizes": i[1 : n + 1],
            "subsizes": i[n + 1 : 2 * n + 1],
            "starts": i[2 * n + 1 : 3 * n + 1],
            "order": i[3 * n + 1],
        }
    elif name == "DARRAY":
        n = i[2]
        params = {
            "size": i[0],
            "rank": i[1],
            "gsizes": i[3 : n + 3],
            "distribs": i[n + 3 : 2 * n + 3],
            "dargs": i[2 * n + 3 : 3 * n + 3],
            "psizes": i[3 * n + 3 : 4 * n + 3],
            "order": i[4 * n + 3],
        }
    elif name == "RESIZED":
        params = {"lb": a[0], "extent": a[1]}
    elif name == "F90_INTEGER":
        params = {"r": i[0]}
    else:  # F90_REAL, F90_COMPLEX
        params = {"p": i[0], "r": i[1]}
    types = h.types
    return (types[0] if len(types) == 1 else None), name, params


def _datatype_create(datatype: Datatype, combiner: str, params: dict, free: bool = False):
    """Create a datatype from base datatype, combiner name and parameters.

    This is mpi4py's pickling path: ``decode()``, then this."""
    combiner = combiner.lower()
    factory = getattr(datatype, f"Create_{combiner}")
    newtype = factory(**params).Commit()
    if free:
        for t in params.get("datatypes", [datatype]):
            t.free()
    return newtype


def _datatype_decode(datatype: Datatype, mark: bool = False):
    return datatype.decode()


def code_of(h: _Handle) -> str | None:
    """The type code of a handle (``'i'``...), a Dup's its base type's; None if it has
    none."""
    return _codes(h)[2]


def align_of(h: _Handle) -> int | None:
    """The alignment of a predefined handle's basic type (a Dup's its base type's); None
    for a derived type, as mpi4py's ``_typealign``."""
    while h.combiner == _DUP:
        h = h.types[0]
    if h is _NULL or not h.predefined or h.char is None and h.dtype is None:
        return None
    return h.align


def _typecode(datatype: Datatype) -> str | None:
    return code_of(datatype._h)


def _typealign(datatype: Datatype) -> int | None:
    return align_of(datatype._h)


def _check_datarep(datarep) -> None:
    if not isinstance(datarep, str):
        raise TypeError(f"expected str, got {type(datarep).__name__}")
    if datarep != "external32":
        raise _err(_ERR_ARG)


def _put(outbuf, position: int, data: np.ndarray) -> int:
    out = _pack.raw_bytes(outbuf, writable=True)
    end = position + len(data)
    if position < 0 or end > len(out):
        raise _err(ERROR_CLASSES["ERR_TRUNCATE"][0])
    out[position:end] = data
    return end


def _take(inbuf, position: int, nbytes: int) -> np.ndarray:
    src = _pack.raw_bytes(inbuf)
    if position < 0 or position + nbytes > len(src):
        raise _err(ERROR_CLASSES["ERR_TRUNCATE"][0])
    return src[position : position + nbytes]


# -- Fortran parametrized types ------------------------------------------------------------
_F90_CACHE: dict = {}


def _f90(combiner: str, ints: tuple, base: _Handle, kind: str) -> _Handle:
    """One handle per (combiner, arguments): MPI says these are predefined, never freed.
    Named as Open MPI names them (``COMBINER MPI_INT``); the codes follow the size."""
    key = (combiner, ints)
    h = _F90_CACHE.get(key)
    if h is None:
        h = _Handle(f"COMBINER {base.name}")
        for attr in ("size", "lb", "ub", "tlb", "tub", "align", "dtype"):
            setattr(h, attr, getattr(base, attr))
        h.combiner = COMBINERS[combiner]
        h.ints = list(ints)
        h.char = base.char
        h.tstr = h.code = f"{kind}{h.size}"
        h._build = base.typemap
        _F90_CACHE[key] = h
    return h


def _f90_float(combiner: str, p: int, r: int, kind: str) -> _Handle:
    for pmax, rmax, real, cplx in (
        (6, 37, "FLOAT", "COMPLEX"),
        (15, 307, "DOUBLE", "DOUBLE_COMPLEX"),
        (18, 4931, "LONG_DOUBLE", "C_LONG_DOUBLE_COMPLEX"),
    ):
        if p <= pmax and r <= rmax:
            base = DATATYPES[cplx if kind == "c" else real]._h
            h = _f90(combiner, (p, r), base, kind)
            if kind == "c" and cplx == "C_LONG_DOUBLE_COMPLEX":
                h.name = "COMBINER MPI_LONG_DOUBLE_COMPLEX"
            return h
    raise _err(_ERR_ARG)


# -- predefined datatypes ------------------------------------------------------------------
# (attribute, MPI name, numpy dtype, typechar, typestr, code, aliases), in mpi4py's order
# of definition; sizes, extents and codes as Open MPI 4.1.4 + mpi4py 4.1.2 on x86-64 give.
_LD = np.dtype(np.longdouble).str
_CLD = np.dtype(np.clongdouble).str
_PREDEFINED = [
    ("PACKED", "MPI_PACKED", "u1", "B", "u1", "B", ()),
    ("BYTE", "MPI_BYTE", "u1", "B", "u1", "B", ()),
    ("AINT", "MPI_AINT", "<i8", "p", "i8", "p", ()),
    ("OFFSET", "MPI_OFFSET", "<i8", "p", "i8", "p", ()),
    ("COUNT", "MPI_COUNT", "<i8", "p", "i8", "p", ()),
    ("CHAR", "MPI_CHAR", "S1", "c", "S1", "c", ()),
    ("WCHAR", "MPI_WCHAR", "<u4", "U", "U1", "U", ()),
    ("SIGNED_CHAR", "MPI_SIGNED_CHAR", "i1", "b", "i1", "b", ()),
    ("SHORT", "MPI_SHORT", "<i2", "h", "i2", "h", ("SIGNED_SHORT",)),
    ("INT", "MPI_INT", "<i4", "i", "i4", "i", ("SIGNED_INT",)),
    ("LONG", "MPI_LONG", "<i8", "l", "i8", "l", ("SIGNED_LONG",)),
    ("LONG_LONG", "MPI_LONG_LONG_INT", "<i8", "q", "i8", "q", ("SIGNED_LONG_LONG",)),
    ("UNSIGNED_CHAR", "MPI_UNSIGNED_CHAR", "u1", "B", "u1", "B", ()),
    ("UNSIGNED_SHORT", "MPI_UNSIGNED_SHORT", "<u2", "H", "u2", "H", ()),
    ("UNSIGNED", "MPI_UNSIGNED", "<u4", "I", "u4", "I", ("UNSIGNED_INT",)),
    ("UNSIGNED_LONG", "MPI_UNSIGNED_LONG", "<u8", "L", "u8", "L", ()),
    ("UNSIGNED_LONG_LONG", "MPI_UNSIGNED_LONG_LONG", "<u8", "Q", "u8", "Q", ()),
    ("FLOAT", "MPI_FLOAT", "<f4", "f", "f4", "f", ("FLOAT32_T",)),
    ("DOUBLE", "MPI_DOUBLE", "<f8", "d", "f8", "d", ("FLOAT64_T",)),
    ("LONG_DOUBLE", "MPI_LONG_DOUBLE", _LD, "g", "f16", "g", ()),
    ("C_BOOL", "MPI_C_BOOL", "?", "?", "b1", "b1", ("BOOL",)),
    ("INT8_T", "MPI_INT8_T", "i1", "b", "i1", "i1", ("SINT8_T",)),
    ("INT16_T", "MPI_INT16_T", "<i2", "h", "i2", "i2", ("SINT16_T",)),
    ("INT32_T", "MPI_INT32_T", "<i4", "i", "i4", "i4", ("SINT32_T",)),
    ("INT64_T", "MPI_INT64_T", "<i8", "l", "i8", "i8", ("SINT64_T",)),
    ("UINT8_T", "MPI_UINT8_T", "u1", "B", "u1", "u1", ()),
    ("UINT16_T", "MPI_UINT16_T", "<u2", "H", "u2", "u2", ()),
    ("UINT32_T", "MPI_UINT32_T", "<u4", "I", "u4", "u4", ()),
    ("UINT64_T", "MPI_UINT64_T", "<u8", "L", "u8", "u8", ()),
    ("C_COMPLEX", "MPI_C_COMPLEX", "<c8", "F", "c8", "F", ("C_FLOAT_COMPLEX",)),
    ("C_DOUBLE_COMPLEX", "MPI_C_DOUBLE_COMPLEX", "<c16", "D", "c16", "D", ()),
    ("C_LONG_DOUBLE_COMPLEX", "MPI_C_LONG_DOUBLE_COMPLEX", _CLD, "G", "c32", "G", ()),
    ("CXX_BOOL", "MPI_CXX_BOOL", "?", "?", "b1", "?", ()),
    ("CXX_FLOAT_COMPLEX", "MPI_CXX_FLOAT_COMPLEX", "<c8", "F", "c8", "F", ()),
    ("CXX_DOUBLE_COMPLEX", "MPI_CXX_DOUBLE_COMPLEX", "<c16", "D", "c16", "D", ()),
    ("CXX_LONG_DOUBLE_COMPLEX", "MPI_CXX_LONG_DOUBLE_COMPLEX", _CLD, "G", "c32", "G", ()),
    ("CHARACTER", "MPI_CHARACTER", "S1", "c", "S1", "c", ()),
    ("LOGICAL", "MPI_LOGICAL", "<i4", "i", "i4", "i", ("F_BOOL",)),
    ("INTEGER", "MPI_INTEGER", "<i4", "i", "i4", "i", ("F_INT",)),
    ("REAL", "MPI_REAL", "<f4", "f", "f4", "f", ("F_FLOAT",)),
    ("DOUBLE_PRECISION", "MPI_DOUBLE_PRECISION", "<f8", "d", "f8", "d", ("F_DOUBLE",)),
    ("COMPLEX", "MPI_COMPLEX", "<c8", "F", "c8", "F", ("F_COMPLEX", "F_FLOAT_COMPLEX")),
    ("DOUBLE_COMPLEX", "MPI_DOUBLE_COMPLEX", "<c16", "D", "c16", "D", ("F_DOUBLE_COMPLEX",)),
    ("LOGICAL1", "MPI_LOGICAL1", "?", "?", "b1", "b1", ()),
    ("LOGICAL2", "MPI_LOGICAL2", "<i2", "h", "i2", "i2", ()),
    ("LOGICAL4", "MPI_LOGICAL4", "<i4", "i", "i4", "i4", ()),
    ("LOGICAL8", "MPI_LOGICAL8", "<i8", "l", "i8", "i8", ()),
    ("INTEGER1", "MPI_INTEGER1", "i1", "b", "i1", "i1", ()),
    ("INTEGER2", "MPI_INTEGER2", "<i2", "h", "i2", "i2", ()),
    ("INTEGER4", "MPI_INTEGER4", "<i4", "i", "i4", "i4", ()),
    ("INTEGER8", "MPI_INTEGER8", "<i8", "l", "i8", "i8", ()),
    ("REAL4", "MPI_REAL4", "<f4", "f", "f4", "f4", ()),
    ("REAL8", "MPI_REAL8", "<f8", "d", "f8", "f8", ()),
    ("REAL16", "MPI_REAL16", _LD, "g", "f16", "f16", ()),
    ("COMPLEX8", "MPI_COMPLEX8", "<c8", "F", "c8", "c8", ()),
    ("COMPLEX16", "MPI_COMPLEX16", "<c16", "D", "c16", "c16", ()),
    ("COMPLEX32", "MPI_COMPLEX32", _CLD, "G", "c32", "c32", ()),
]
# Pair types for MINLOC/MAXLOC: (attribute, MPI name, value dtype, size, extent, true
# extent, alignment). Open MPI counts the long double as 16 bytes and, for SHORT_INT, the
# true extent covers the padding after the short (values from Open MPI 4.1.4).
_PAIRS = [
    ("SHORT_INT", "MPI_SHORT_INT", "<i2", 6, 8, 8, 4),
    ("INT_INT", "MPI_2INT", "<i4", 8, 8, 8, 4),
    ("LONG_INT", "MPI_LONG_INT", "<i8", 12, 16, 12, 8),
    ("FLOAT_INT", "MPI_FLOAT_INT", "<f4", 8, 8, 8, 4),
    ("DOUBLE_INT", "MPI_DOUBLE_INT", "<f8", 12, 16, 12, 8),
    ("LONG_DOUBLE_INT", "MPI_LONG_DOUBLE_INT", _LD, 20, 32, 20, 16),
]
# Names mpi4py defines that Open MPI 4.1 has not: the null handle (mpi4py's own choice).
_ABSENT = ("BFLOAT16_T", "COMPLEX4", "INTEGER16", "LOGICAL16", "REAL2")

_NULL = _Handle("MPI_DATATYPE_NULL")
_NULL.valid = False
_NULL.fid = 0
_NULL_TYPE = _new(Datatype, _NULL)

DATATYPES: dict[str, Datatype] = {"DATATYPE_NULL": _NULL_TYPE}
"""Every predefined datatype of ``mpi4py.MPI`` by attribute name (aliases included)."""
_CANONICAL: dict[int, tuple[Datatype, str]] = {0: (_NULL_TYPE, "DATATYPE_NULL")}
_BY_FID: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
"""Datatype objects by integer handle: the predefined ones, and each other one once a
program has asked for its handle (``fromhandle`` maps it back while the type lives)."""


def _predefined(mpi_name: str, dtype, char, tstr, code) -> _Handle:
    dt = np.dtype(dtype)
    h = _Handle(mpi_name)
    h.fid = len(_CANONICAL)
    n = dt.itemsize
    h.size = h.ub = h.tub = n
    h.dtype = dt
    h.char, h.tstr, h.code = char, tstr, code
    if dt.kind == "c":
        h.align = min(n // 2, 16)
        units = (n // 2, n // 2)
    else:
        h.align = min(n, 16)
        units = (n,)
    if dt.kind == "f" and n == 16 or dt.kind == "c" and n == 32:
        h.align = 16
    kind = KINDS.add(((0, n),), units)
    h._build = lambda: Typemap.basic(kind)
    h._dense = True
    h.committed = True
    return h


def _register(attr: str, h: _Handle, aliases=()) -> None:
    obj = _new(Datatype, h)
    DATATYPES[attr] = obj
    _CANONICAL[h.fid] = (obj, attr)
    _BY_FID[h.fid] = h
    for alias in aliases:
        DATATYPES[alias] = obj  # mpi4py's aliases are the same object (FLOAT32_T is FLOAT)


for _attr, _name, _dtype, _char, _tstr, _code, _aliases in _PREDEFINED:
    _register(_attr, _predefined(_name, _dtype, _char, _tstr, _code), _aliases)

for _attr, _name, _vdtype, _size, _extent, _textent, _align in _PAIRS:
    _vd = np.dtype(_vdtype)
    _vsize = _size - 4
    _ph = _Handle(_name)
    _ph.fid = len(_CANONICAL)
    _ph.size, _ph.ub, _ph.tub, _ph.align = _size, _extent, _textent, _align
    # ``dtype`` describes the packed stream (value then index, no padding): what the PML
    # carries and what MINLOC/MAXLOC combine; memory holds the C struct's aligned layout.
    _ph.dtype = np.dtype([("v", _vd), ("i", "<i4")])
    _ioff = np.dtype([("v", _vd), ("i", "<i4")], align=True).fields["i"][1]
    # Two typemap entries, value then index: packing skips the hole between them, and a
    # pair inside a derived type counts as two elements (Open MPI's element count).
    _vkind = KINDS.add(((0, _vsize),), (_vsize,))
    _ikind = KINDS.add(((0, 4),), (4,))
    _pair_map = Typemap(np.array([0, _ioff], _I64), np.array([_vkind, _ikind], np.int32))
    _ph._build = lambda m=_pair_map: m
    _ph._dense = _size == _extent
    _ph.committed = True
    _register(_attr, _ph, ("TWOINT",) if _attr == "INT_INT" else ())

# FLOAT16_T: mpi4py's placeholder handle where the library lacks the type; Open MPI 4.1
# answers every query on it with MPI_ERR_TYPE, yet it is not the null handle.
_F16 = _Handle(None)
_F16.fid = len(_CANONICAL)
_F16.valid = False
_F16.char, _F16.tstr, _F16.code = "e", "f2", "e"
_register("FLOAT16_T", _F16)
for _attr in _ABSENT:
    DATATYPES[_attr] = _new(Datatype, _NULL)


def _from_fid(fid: int) -> Datatype:
    fid = _index(fid)
    if fid == 0:
        return _new(Datatype, _NULL)
    h = _BY_FID.get(fid)
    if h is None:
        raise _err(_ERR_TYPE)
    return _new(Datatype, h)


_MATCH_SIZE = {
    (TYPECLASS_INTEGER, 1): "INTEGER1",
    (TYPECLASS_INTEGER, 2): "INTEGER2",
    (TYPECLASS_INTEGER, 4): "INTEGER",
    (TYPECLASS_INTEGER, 8): "INTEGER8",
    (TYPECLASS_REAL, 4): "REAL",
    (TYPECLASS_REAL, 8): "REAL8",
    (TYPECLASS_REAL, 16): "REAL16",
    (TYPECLASS_COMPLEX, 8): "COMPLEX",
    (TYPECLASS_COMPLEX, 16): "COMPLEX16",
    (TYPECLASS_COMPLEX, 32): "COMPLEX32",
    (TYPECLASS_LOGICAL, 1): "LOGICAL1",
    (TYPECLASS_LOGICAL, 2): "LOGICAL2",
    (TYPECLASS_LOGICAL, 4): "LOGICAL4",
    (TYPECLASS_LOGICAL, 8): "LOGICAL8",
}
"""``MPI_Type_match_size`` as Open MPI 4.1 answers it (its first match per size)."""


# -- character codes -> datatypes (mpi4py's typemap; later entries win) -------------------
def _code_pairs(text: str) -> list[tuple[str, str]]:
    """``"code ATTR code ATTR ..."`` as (code, attribute) pairs."""
    words = text.split()
    return list(zip(words[::2], words[1::2], strict=True))


def _typedict(entries) -> dict[str, Datatype]:
    table: dict[str, Datatype] = {}
    for code, attr in entries:
        dt = DATATYPES[attr]
        if dt._h is not _NULL:
            table[code] = dt
    return table


_C_CODES = _code_pairs(
    "? C_BOOL b SIGNED_CHAR h SHORT i INT l LONG q LONG_LONG B UNSIGNED_CHAR H "
    "UNSIGNED_SHORT I UNSIGNED L UNSIGNED_LONG Q UNSIGNED_LONG_LONG f FLOAT d DOUBLE g "
    "LONG_DOUBLE F C_FLOAT_COMPLEX D C_DOUBLE_COMPLEX G C_LONG_DOUBLE_COMPLEX b1 C_BOOL "
    "i1 INT8_T i2 INT16_T i4 INT32_T i8 INT64_T u1 UINT8_T u2 UINT16_T u4 UINT32_T u8 "
    "UINT64_T f2 FLOAT16_T f4 FLOAT c8 C_FLOAT_COMPLEX f8 DOUBLE c16 C_DOUBLE_COMPLEX f16 "
    "LONG_DOUBLE c32 C_LONG_DOUBLE_COMPLEX "
)
_F_CODES = _code_pairs(
    "l LOGICAL i INTEGER r REAL s REAL d DOUBLE_PRECISION c COMPLEX z DOUBLE_COMPLEX l1 "
    "LOGICAL1 l2 LOGICAL2 l4 LOGICAL4 l8 LOGICAL8 l16 LOGICAL16 i1 INTEGER1 i2 INTEGER2 "
    "i4 INTEGER4 i8 INTEGER8 i16 INTEGER16 r2 REAL2 r4 REAL4 r8 REAL8 r16 REAL16 c4 "
    "COMPLEX4 c8 COMPLEX8 c16 COMPLEX16 c32 COMPLEX32 "
)
_ALL_CODES = _code_pairs(
    "? CXX_BOOL ? C_BOOL b SIGNED_CHAR h SHORT i INT l LONG q LONG_LONG B UNSIGNED_CHAR H "
    "UNSIGNED_SHORT I UNSIGNED L UNSIGNED_LONG Q UNSIGNED_LONG_LONG e REAL2 e FLOAT16_T f "
    "FLOAT d DOUBLE g LONG_DOUBLE Ze COMPLEX4 Zf COMPLEX8 Zd COMPLEX16 E COMPLEX4 F "
    "COMPLEX8 D COMPLEX16 Zf CXX_FLOAT_COMPLEX Zd CXX_DOUBLE_COMPLEX Zg "
    "CXX_LONG_DOUBLE_COMPLEX F CXX_FLOAT_COMPLEX D CXX_DOUBLE_COMPLEX G "
    "CXX_LONG_DOUBLE_COMPLEX Zf C_FLOAT_COMPLEX Zd C_DOUBLE_COMPLEX Zg "
    "C_LONG_DOUBLE_COMPLEX F C_FLOAT_COMPLEX D C_DOUBLE_COMPLEX G C_LONG_DOUBLE_COMPLEX "
    "i1 INTEGER1 i2 INTEGER2 i4 INTEGER4 i8 INTEGER8 i16 INTEGER16 f2 REAL2 f4 REAL4 f8 "
    "REAL8 f16 REAL16 c4 COMPLEX4 c8 COMPLEX8 c16 COMPLEX16 c32 COMPLEX32 b1 CXX_BOOL b1 "
    "C_BOOL i1 SIGNED_CHAR u1 UNSIGNED_CHAR i2 SHORT u2 UNSIGNED_SHORT i4 INT u4 UNSIGNED "
    "i8 LONG_LONG u8 UNSIGNED_LONG_LONG i8 LONG u8 UNSIGNED_LONG i1 INT8_T i2 INT16_T i4 "
    "INT32_T i8 INT64_T u1 UINT8_T u2 UINT16_T u4 UINT32_T u8 UINT64_T f2 FLOAT16_T f4 "
    "FLOAT c8 CXX_FLOAT_COMPLEX c8 C_FLOAT_COMPLEX f8 DOUBLE c16 CXX_DOUBLE_COMPLEX c16 "
    "C_DOUBLE_COMPLEX f16 LONG_DOUBLE c32 CXX_LONG_DOUBLE_COMPLEX c32 "
    "C_LONG_DOUBLE_COMPLEX n LONG_LONG N UNSIGNED_LONG_LONG n LONG N UNSIGNED_LONG n "
    "COUNT p LONG_LONG P UNSIGNED_LONG_LONG p LONG P UNSIGNED_LONG p AINT c CHAR a CHAR S "
    "CHAR S1 CHAR s CHAR 1s CHAR U WCHAR U1 WCHAR u UNSIGNED_SHORT 1u UNSIGNED_SHORT u "
    "UINT16_T 1u UINT16_T w UNSIGNED 1w UNSIGNED w UINT32_T 1w UINT32_T w WCHAR 1w WCHAR "
    "M INT64_T M8 INT64_T m INT64_T m8 INT64_T "
)
TYPEDICT = _typedict(_ALL_CODES)
"""mpi4py's ``_typedict``: buffer format codes and numpy type strings to datatypes."""


def lookup_code(key: str) -> Datatype:
    """The datatype of a buffer format code, or mpi4py's KeyError."""
    try:
        return TYPEDICT[key]
    except KeyError:
        raise KeyError(f"cannot map {key!r} to MPI datatype") from None


def from_format(fmt: str) -> Datatype:
    """mpi4py's inference of a buffer's datatype from its struct format string."""
    if fmt == "B":
        return DATATYPES["BYTE"]
    if fmt[:1] in "@=<>!" and fmt:
        if fmt[0] == ">" or fmt[0] == "!":
            raise BufferError(f"format string {fmt!r} with non-native byte order")
        fmt = fmt[1:]
    return lookup_code(fmt)


DATATYPE_FUNCTIONS = {
    "_typedict": TYPEDICT,
    "_typedict_c": _typedict(_C_CODES),
    "_typedict_f": _typedict(_F_CODES),
    "_typecode": _typecode,
    "_typealign": _typealign,
    "_datatype_create": _datatype_create,
    "_datatype_decode": _datatype_decode,
}
"""Module-level helpers mpi4py exports next to the datatypes (``mpi4py.util.dtlib`` and
pickling use them)."""

NAMES: dict = {**DATATYPES, **DATATYPE_CONSTANTS, **DATATYPE_FUNCTIONS, "Datatype": Datatype}
"""What ``mpi4py.MPI`` exports from this module."""
