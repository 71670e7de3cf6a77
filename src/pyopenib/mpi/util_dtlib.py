"""``mpi4py.util.dtlib``: conversions between numpy dtypes and MPI datatypes.

``from_numpy_dtype`` builds the MPI datatype whose typemap is a numpy dtype's memory
layout (a struct resized to the itemsize for records, contiguous/subarray for sub-array
fields, a ``Dup`` of the predefined type for scalars); ``to_numpy_dtype`` walks a
datatype's decoding back to a numpy dtype where the layout has one. Both follow mpi4py
4.1's results (and its error texts), built on this package's ``Datatype``.
"""

from __future__ import annotations

import numpy as np

from .datatypes import COMBINERS, DATATYPES, ORDER_FORTRAN, Datatype, _typealign, _typecode

__all__ = ["from_numpy_dtype", "to_numpy_dtype"]

_np_dtype = np.dtype
"""The numpy dtype constructor; None stands for "numpy is not installed", when
``to_numpy_dtype`` answers with the specification it would pass to it (as mpi4py)."""

_PAIR_VALUES = ("SHORT", "INT", "LONG", "FLOAT", "DOUBLE", "LONG_DOUBLE")


def from_numpy_dtype(dtype) -> Datatype:
    """The MPI datatype of a numpy dtype's memory layout."""
    if _np_dtype is None:
        raise RuntimeError("NumPy is not available")
    dtype = _np_dtype(dtype)
    if dtype.hasobject:
        raise ValueError("NumPy datatype with object entries")
    if not dtype.isnative:
        raise ValueError("NumPy datatype with non-native byteorder")
    if dtype.fields:
        names = dtype.names or ()
        members = [dtype.fields[name] for name in names]
        struct = Datatype.Create_struct(
            [1] * len(members),
            [offset for _, offset, *_ in members],
            [from_numpy_dtype(field) for field, *_ in members],
        )
        return struct.Create_resized(0, dtype.itemsize)
    if dtype.subdtype:
        base, shape = dtype.subdtype
        element = from_numpy_dtype(base)
        if len(shape) == 1:
            return element.Create_contiguous(shape[0])
        return element.Create_subarray(shape, shape, [0] * len(shape))
    return Datatype.fromcode(dtype.char).Dup()


def _aligned(datatype: Datatype, offset: int = 0) -> bool:
    """Whether every basic element of ``datatype`` placed at ``offset`` is aligned."""
    if datatype.is_predefined:
        if offset == 0:
            return True
        return offset % (_typealign(datatype) or 0) == 0
    base, name, params = datatype.decode()
    if name == "RESIZED":
        return _aligned(base, offset + params["extent"])
    if name == "STRUCT":
        return all(
            _aligned(t, offset + d)
            for t, d in zip(params["datatypes"], params["displacements"], strict=True)
        )
    if name == "HVECTOR":
        return _aligned(base, offset + (params["stride"] if params["count"] > 1 else 0))
    if name in ("HINDEXED", "HINDEXED_BLOCK"):
        return all(_aligned(base, offset + d) for d in params["displacements"])
    return _aligned(base, offset)


def _dtype(spec, **options):
    if _np_dtype is None:
        return (spec, options) if options else spec
    return _np_dtype(spec, **options)


def _field(datatype: Datatype, count: int):
    dtype = to_numpy_dtype(datatype)
    return dtype if count == 1 else (dtype, count)


def _record(formats, offsets, itemsize, aligned: bool):
    spec = {
        "names": [f"f{i}" for i in range(len(formats))],
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
    combiner = datatype.combiner
    if combiner == COMBINERS["NAMED"]:
        code = _typecode(datatype)
        if code is not None:
            return _dtype(code)
        for value in _PAIR_VALUES:  # the MINLOC/MAXLOC pair types: {value, int}
            if datatype == DATATYPES["INT_INT" if value == "INT" else f"{value}_INT"]:
                return _dtype(f"{_typecode(DATATYPES[value])},i", align=True)
    if combiner in (COMBINERS["F90_INTEGER"], COMBINERS["F90_REAL"], COMBINERS["F90_COMPLEX"]):
        return _dtype(_typecode(datatype))
    base, name, params = datatype.decode()
    if name == "DUP":
        return to_numpy_dtype(base)
    if name == "CONTIGUOUS":
        return _dtype((to_numpy_dtype(base), (params["count"],)))
    if name == "SUBARRAY":
        sizes = params["sizes"]
        if params["subsizes"] != sizes or any(params["starts"]):
            raise ValueError("cannot convert subarray MPI datatype to NumPy")
        if params["order"] == ORDER_FORTRAN:
            sizes = sizes[::-1]
        return _dtype((to_numpy_dtype(base), tuple(sizes)))
    aligned = True
    if name == "RESIZED" and base.combiner == COMBINERS["STRUCT"]:
        aligned = _aligned(base, params["extent"])
        _, name, params = base.decode()
    if name == "STRUCT":
        types, offsets = params["datatypes"], params["displacements"]
        formats = [_field(t, n) for t, n in zip(types, params["blocklengths"], strict=True)]
        aligned = aligned and all(_aligned(t, d) for t, d in zip(types, offsets, strict=True))
        return _record(formats, offsets, datatype.extent, aligned)
    if name in ("VECTOR", "HVECTOR"):
        count, stride = params["count"], params["stride"]
        if name == "VECTOR":
            stride *= base.extent
            aligned = _aligned(base)
        else:
            stride = stride if count > 1 else 0
            aligned = _aligned(base, stride)
        element = to_numpy_dtype(base)
        formats = [(element, (params["blocklength"],))] * count
        return _record(formats, [stride * i for i in range(count)], datatype.extent, aligned)
    if name in ("INDEXED", "HINDEXED", "INDEXED_BLOCK", "HINDEXED_BLOCK"):
        displs = params["displacements"]
        if name.endswith("BLOCK"):
            lengths = [params["blocklength"]] * len(displs)
        else:
            lengths = params["blocklengths"]
        in_bytes = name.startswith("H")
        unit = 1 if in_bytes else base.extent
        aligned = _aligned(base) and (not in_bytes or all(_aligned(base, d) for d in displs))
        element = to_numpy_dtype(base)
        formats = [(element, (n,)) for n in lengths]
        return _record(formats, [d * unit for d in displs], None, aligned)
    raise ValueError("cannot convert MPI datatype to NumPy")
