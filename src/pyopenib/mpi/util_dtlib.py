"""``mpi4py.util.dtlib``: conversions between numpy dtypes and MPI datatypes.

``from_numpy_dtype`` builds the MPI datatype whose typemap is a numpy dtype's memory
layout (a struct resized to the itemsize for records, contiguous/subarray for sub-array
fields, a ``Dup`` of the predefined type for scalars); ``to_numpy_dtype`` walks a
datatype's decoding back to a numpy dtype where the layout has one. Both follow mpi4py
4.1's results (and its error texts), built on this package's ``Datatype``.
"""

from __future__ import annotations

import weakref

import numpy as np

from .datatypes import (
    COMBINERS,
    DATATYPES,
    ORDER_FORTRAN,
    Datatype,
    align_of,
    code_of,
    decoding,
)

__all__ = ["from_numpy_dtype", "to_numpy_dtype"]

_np_dtype = np.dtype
"""The numpy dtype constructor; None stands for "numpy is not installed", when
``to_numpy_dtype`` answers with the specification it would pass to it (as mpi4py)."""

_PAIR_VALUES = {
    DATATYPES["INT_INT" if value == "INT" else f"{value}_INT"]._h: DATATYPES[value]._h
    for value in ("SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "LONG_DOUBLE")
}
"""The MINLOC/MAXLOC pair types, each to its value type (the index is an int)."""
_F90 = frozenset(COMBINERS[c] for c in ("F90_INTEGER", "F90_REAL", "F90_COMPLEX"))
_NAMED = COMBINERS["NAMED"]
_STRUCT = COMBINERS["STRUCT"]
_DUP = COMBINERS["DUP"]


def from_numpy_dtype(dtype) -> Datatype:
    """The MPI datatype of a numpy dtype's memory layout."""
    if _np_dtype is None:
        raise RuntimeError("NumPy is not available")
    dtype = _np_dtype(dtype)
    if dtype.hasobject:
        raise ValueError("NumPy datatype with object entries")
    if not dtype.isnative:
        raise ValueError("NumPy datatype with non-native byteorder")
    return _from_numpy(dtype)


def _from_numpy(dtype) -> Datatype:
    """``from_numpy_dtype`` of a checked dtype. A record's checks cover its fields (numpy
    answers ``hasobject`` and ``isnative`` for the whole record), not the element type of
    a sub-array, which is checked again."""
    fields = dtype.fields
    if fields:
        members = [fields[name] for name in dtype.names]
        struct = Datatype.Create_struct(
            [1] * len(members),
            [member[1] for member in members],
            [_from_numpy(member[0]) for member in members],
        )
        return struct.Create_resized(0, dtype.itemsize)
    subdtype = dtype.subdtype
    if subdtype:
        base, shape = subdtype
        element = from_numpy_dtype(base)
        if len(shape) == 1:
            return element.Create_contiguous(shape[0])
        return element.Create_subarray(shape, shape, [0] * len(shape))
    return Datatype.fromcode(dtype.char).Dup()


def _aligned(h, offset: int = 0) -> bool:
    """Whether every basic element of the datatype of handle ``h`` placed at ``offset``
    is aligned (mpi4py's ``_is_aligned``)."""
    return all((offset + r) % a == 0 for r, a in _residues(h))


_RESIDUES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _residues(h) -> frozenset[tuple[int, int]]:
    """The (displacement modulo alignment, alignment) pairs of the basic elements of
    ``h``'s datatype that mpi4py's alignment test looks at.

    ``to_numpy_dtype`` asks the test of every member of a record at every level of its
    nesting; a handle's construction never changes, so its pairs are found once and kept
    while it lives (a dozen pairs at most: alignments are 1 to 16). The walk reads the
    handles' decoding (``decoding``), never ``decode()``, which would make a new handle
    per level."""
    while h.combiner == _DUP:
        h = h.types[0]
    if h.predefined:  # predefined handles live as long as the process
        found = _BASIC_RESIDUES.get(h)
        if found is None:
            found = _BASIC_RESIDUES[h] = frozenset({(0, align_of(h) or 1)})
        return found
    found = _RESIDUES.get(h)
    if found is None:
        found = _RESIDUES[h] = frozenset(_walk(h))
    return found


_BASIC_RESIDUES: dict = {}


def _shifted(h, displacement: int) -> set[tuple[int, int]]:
    return {((r + displacement) % a, a) for r, a in _residues(h)}


def _walk(h) -> set[tuple[int, int]]:
    """mpi4py's ``_is_aligned`` recursion through a derived handle: a struct's members
    at their displacements, a resized type's base at its extent, an hvector's base at its
    stride (when it has more than one block), an hindexed type's at its first
    displacement, the base of any other where it is."""
    base, name, params = decoding(h)
    if name == "RESIZED":
        return _shifted(base, params["extent"])
    if name == "STRUCT":
        found = set()
        for t, d in zip(params["datatypes"], params["displacements"], strict=True):
            found |= _shifted(t, d)
        return found
    if name == "HVECTOR":
        return _shifted(base, params["stride"] if params["count"] > 1 else 0)
    if name in ("HINDEXED", "HINDEXED_BLOCK"):
        # mpi4py pairs its one base type with the displacements (``zip``): only the
        # first block is looked at
        return _shifted(base, params["displacements"][0]) if params["displacements"] else set()
    return set(_residues(base))


def _dtype(spec, **options):
    if _np_dtype is None:
        return (spec, options) if options else spec
    return _np_dtype(spec, **options)


def _field(h, count: int):
    dtype = _to_numpy(h)
    return dtype if count == 1 else (dtype, count)


_NAMES: list[str] = []


def _names(n: int) -> list[str]:
    """numpy's default field names ``f0``... ``f{n-1}`` (a new list each time: the spec
    is the caller's when numpy is absent)."""
    while len(_NAMES) < n:
        _NAMES.append(f"f{len(_NAMES)}")
    return _NAMES[:n]


def _record(formats, offsets, itemsize, aligned: bool):
    spec = {
        "names": _names(len(formats)),
        "formats": formats,
        "offsets": offsets,
        "aligned": aligned,
    }
    if itemsize is not None:
        spec["itemsize"] = itemsize
    return _dtype(spec)


def to_numpy_dtype(datatype: Datatype):
    """The numpy dtype with the memory layout of ``datatype``."""
    if datatype == DATATYPES["DATATYPE_NULL"]:
        raise ValueError("cannot convert null MPI datatype to NumPy")
    return _to_numpy(datatype._valid())


def _to_numpy(h):
    """``to_numpy_dtype`` of a valid handle."""
    while h.combiner == _DUP:  # a Dup converts as its base type
        h = h.types[0]
    combiner = h.combiner
    if combiner == _NAMED:
        code = h.code
        if code is not None:
            return _dtype(code)
        value = _PAIR_VALUES.get(h)
        if value is not None:  # the MINLOC/MAXLOC pair types: {value, int}
            return _dtype(f"{code_of(value)},i", align=True)
    if combiner in _F90:
        return _dtype(code_of(h))
    base, name, params = decoding(h)
    if name == "CONTIGUOUS":
        return _dtype((_to_numpy(base), (params["count"],)))
    if name == "SUBARRAY":
        sizes = params["sizes"]
        if params["subsizes"] != sizes or any(params["starts"]):
            raise ValueError("cannot convert subarray MPI datatype to NumPy")
        if params["order"] == ORDER_FORTRAN:
            sizes = sizes[::-1]
        return _dtype((_to_numpy(base), tuple(sizes)))
    aligned = True
    if name == "RESIZED" and base.combiner == _STRUCT:
        aligned = _aligned(base, params["extent"])
        _, name, params = decoding(base)
    if name == "STRUCT":
        types, offsets = params["datatypes"], params["displacements"]
        formats = [_field(t, n) for t, n in zip(types, params["blocklengths"], strict=True)]
        aligned = aligned and all(_aligned(t, d) for t, d in zip(types, offsets, strict=True))
        return _record(formats, offsets, h.extent, aligned)
    if name in ("VECTOR", "HVECTOR"):
        count, stride = params["count"], params["stride"]
        if name == "VECTOR":
            stride *= base.extent
            aligned = _aligned(base)
        else:
            stride = stride if count > 1 else 0
            aligned = _aligned(base, stride)
        element = _to_numpy(base)
        formats = [(element, (params["blocklength"],))] * count
        return _record(formats, [stride * i for i in range(count)], h.extent, aligned)
    if name in ("INDEXED", "HINDEXED", "INDEXED_BLOCK", "HINDEXED_BLOCK"):
        displs = params["displacements"]
        if name.endswith("BLOCK"):
            lengths = [params["blocklength"]] * len(displs)
        else:
            lengths = params["blocklengths"]
        in_bytes = name.startswith("H")
        unit = 1 if in_bytes else base.extent
        aligned = _aligned(base) and (not in_bytes or all(_aligned(base, d) for d in displs))
        element = _to_numpy(base)
        formats = [(element, (n,)) for n in lengths]
        return _record(formats, [d * unit for d in displs], None, aligned)
    raise ValueError("cannot convert MPI datatype to NumPy")
