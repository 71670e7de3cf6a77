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
import operator
import warnings
from typing import NamedTuple

import numpy as np

__all__ = [
    "CPU_DEVICES",
    "Foreign",
    "ForeignMemory",
    "absolute_memory",
    "buffer_format",
    "foreign",
    "from_external32",
    "gather",
    "raw_bytes",
    "scatter",
    "span",
    "to_external32",
]

_U8 = np.dtype(np.uint8)
_I64 = np.int64


# -- DLPack (dlpack.h) and CUDA array interface objects on host memory ------------------
class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    pass


class _DLManagedTensorVersioned(ctypes.Structure):
    pass


_DLManagedTensor._fields_ = [
    ("dl_tensor", _DLTensor),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensor))),
]
_DLManagedTensorVersioned._fields_ = [
    ("version", ctypes.c_uint32 * 2),
    ("manager_ctx", ctypes.c_void_p),
    ("deleter", ctypes.CFUNCTYPE(None, ctypes.POINTER(_DLManagedTensorVersioned))),
    ("flags", ctypes.c_uint64),
    ("dl_tensor", _DLTensor),
]
_DL_READ_ONLY = 1
_DL_CPU, _DL_CUDA = 1, 2
CPU_DEVICES = frozenset({0, _DL_CPU, 3, 11, 13})
"""Device types whose memory the host can touch: none (the buffer protocol), kDLCPU,
kDLCUDAHost, kDLROCMHost, kDLCUDAManaged (mpi4py's ``check_cpu_accessible``)."""
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_INT_CODES = {1: "b", 2: "h", 4: "i", 8: "l"}
_FLOAT_CODES = {2: "e", 4: "f", 8: "d", 16: "g"}
_COMPLEX_CODES = {8: "Zf", 16: "Zd", 32: "Zg"}


class Foreign(NamedTuple):
    """A DLPack or CUDA-array-interface object's memory as mpi4py's ``PyMPI_GetBuffer``
    sees it: its bytes, its struct format (``"B"`` when the element type has none), and
    its DLPack device type (the CUDA array interface is kDLCUDA)."""

    data: np.ndarray
    format: str
    device: int


class ForeignMemory:
    """What a foreign view's numpy array points into: the memory, and the object that
    keeps it valid (the DLPack capsule, whose destructor runs the producer's deleter, or
    the CUDA-array-interface object) for as long as the array lives, as mpi4py holds it
    in ``Py_buffer.obj``."""

    def __init__(self, address: int, nbytes: int, readonly: bool, owner):
        self.__array_interface__ = {
            "data": (address, readonly),
            "shape": (nbytes,),
            "typestr": "|u1",
            "version": 3,
        }
        self.owner = owner


def _view(address: int, nbytes: int, readonly: bool, owner) -> np.ndarray:
    if nbytes == 0:
        view = np.empty(0, np.uint8)
        if readonly:
            view.flags.writeable = False
        return view
    return np.asarray(ForeignMemory(address, nbytes, readonly, owner))


def _dl_contiguous(shape, strides, fortran: bool) -> bool:
    """dlpack.h strides count elements; None means C order (mpi4py's ``dlpack_is_contig``)."""
    if strides is None:
        return not fortran or len(shape) <= 1
    order = range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)
    size = 1
    for i in order:
        if shape[i] > 1 and strides[i] != size:
            return False
        size *= shape[i]
    return True


def _dl_format(code: int, bits: int, lanes: int) -> str:
    """The struct format of a DLPack element type, as mpi4py's ``dlpack_get_format``
    (``"B"``: no format for it, the buffer is plain bytes)."""
    if lanes != 1:
        if code == 2 and lanes == 2 and bits in (32, 64, 128):
            return _COMPLEX_CODES[bits // 4]  # a complex number as two float lanes
        return "B"
    nbytes = bits // 8 if bits % 8 == 0 else 0
    fmt = None
    if code == 6 and bits == 8:
        fmt = "?"
    elif code == 0:
        fmt = _INT_CODES.get(nbytes)
    elif code == 1:
        fmt = _INT_CODES.get(nbytes, "").upper() or None
    elif code == 2:
        fmt = _FLOAT_CODES.get(nbytes)
    elif code == 5:
        fmt = "Ze" if nbytes == 4 else _COMPLEX_CODES.get(nbytes)
    return fmt or "B"


def _from_dlpack(obj, writable: bool) -> Foreign | None:
    """A DLPack tensor's memory, checked as mpi4py 4.1's ``Py_GetDLPackBuffer`` checks it
    (same exceptions and messages). The simulated job has no device memory: a tensor that
    says it lives on a GPU is read at its address, as a CUDA-aware MPI with unified
    addressing would (the test suite's fake GPU tensors are host memory)."""
    try:
        dlpack, dlpack_device = obj.__dlpack__, obj.__dlpack_device__
    except AttributeError:
        return None
    device_type, device_id = dlpack_device()
    device_type, _ = operator.index(device_type), operator.index(device_id)
    cpu = device_type == _DL_CPU
    try:  # DLPack 1.0
        if cpu:
            capsule = dlpack(max_version=(1, 0), copy=False)
        else:
            capsule = dlpack(stream=-1, max_version=(1, 0), copy=False)
        versioned = True
    except TypeError:  # a producer of DLPack before 1.0
        capsule = dlpack() if cpu else dlpack(stream=-1)
        versioned = False
    name = b"dltensor_versioned" if versioned else b"dltensor"
    if not _capsule_valid(capsule, name):
        raise BufferError("dlpack: invalid capsule object")
    ptr = _capsule_get(capsule, name)
    if versioned:
        managed = _DLManagedTensorVersioned.from_address(ptr)
        if managed.version[0] < 1:
            raise BufferError("dlpack: unexpected version")
        readonly = bool(managed.flags & _DL_READ_ONLY)
    else:
        managed = _DLManagedTensor.from_address(ptr)
        readonly = False
    t = managed.dl_tensor
    ndim = t.ndim
    if ndim < 0:
        raise BufferError("dlpack: number of dimensions is negative")
    if ndim > 0 and not t.shape:
        raise BufferError("dlpack: shape is NULL")
    shape = [t.shape[i] for i in range(ndim)]
    if any(n < 0 for n in shape):
        raise BufferError("dlpack: shape item is negative")
    strides = [t.strides[i] for i in range(ndim)] if t.strides else None
    if strides is not None and any(st < 0 for st in strides):
        raise BufferError("dlpack: strides item is negative")
    if not _dl_contiguous(shape, strides, False) and not _dl_contiguous(shape, strides, True):
        raise BufferError("dlpack: buffer is not contiguous")
    if readonly and writable:
        raise BufferError("dlpack: buffer is not writable")
    bits, lanes = t.dtype.bits, t.dtype.lanes
    nbytes = int(np.prod(shape, dtype=np.int64)) * ((bits * lanes + 7) // 8)
    data = _view((t.data or 0) + t.byte_offset, nbytes, readonly, capsule)
    return Foreign(data, _dl_format(t.dtype.code, bits, lanes), device_type)


def _cai_contiguous(shape, strides, itemsize: int, fortran: bool) -> bool:
    """C or Fortran contiguity of byte strides (mpi4py's ``cuda_is_contig``)."""
    order = range(len(shape)) if fortran else range(len(shape) - 1, -1, -1)
    size = itemsize
    for i in order:
        if shape[i] > 1 and strides[i] != size:
            return False
        size *= shape[i]
    return True


def _cai_format(kind: str, itemsize: int) -> str:
    """mpi4py's ``cuda_get_format``: the struct format of a typestr's kind and size."""
    if kind == "b" and itemsize == 1:
        return "?"
    if kind in "iu" and itemsize in _INT_CODES:
        code = _INT_CODES[itemsize]
        return code if kind == "i" else code.upper()
    if kind == "f" and itemsize in _FLOAT_CODES:
        return _FLOAT_CODES[itemsize]
    if kind == "c":
        return "Ze" if itemsize == 4 else _COMPLEX_CODES.get(itemsize, "B")
    return "B"


def _from_cai(obj, writable: bool) -> Foreign | None:
    """A ``__cuda_array_interface__`` object's memory (host memory, as the test suite's
    fake GPU arrays use), with mpi4py's checks and messages (``Py_GetCAIBuffer``)."""
    try:
        cai = obj.__cuda_array_interface__
    except AttributeError:
        return None
    address, readonly = cai["data"]
    typestr, shape = cai["typestr"], tuple(cai["shape"])
    strides, descr, mask = cai.get("strides"), cai.get("descr"), cai.get("mask")
    what = "__cuda_array_interface__"
    size = 1
    for n in shape:
        size *= n
    if address is None and size == 0:
        address = 0
    itemsize = int(typestr[2:])
    if typestr[0] not in "<|":
        order = "non-native" if typestr[0] == ">" else "unrecognized"
        raise BufferError(f"{what}: typestr {typestr!r} with {order} byte order")
    if mask is not None:
        raise BufferError(f"{what}: cannot handle masked arrays")
    if size < 0:
        raise BufferError(f"{what}: buffer with negative size (shape:{shape}, size:{size})")
    if (
        strides is not None
        and not _cai_contiguous(shape, strides, itemsize, False)
        and not _cai_contiguous(shape, strides, itemsize, True)
    ):
        raise BufferError(
            f"{what}: buffer is not contiguous "
            f"(shape:{shape}, strides:{strides}, itemsize:{itemsize})"
        )
    if readonly and writable:
        raise BufferError(f"{what}: buffer is not writable")
    if descr is not None and (len(descr) != 1 or tuple(descr[0]) != ("", typestr)):
        warnings.warn(f"{what}: ignoring 'descr' key", RuntimeWarning, stacklevel=4)
    data = _view(address, size * itemsize, bool(readonly), obj)
    return Foreign(data, _cai_format(typestr[1], itemsize), _DL_CUDA)


def foreign(buf, writable: bool = False) -> Foreign | None:
    """The memory of an object without the buffer protocol that exports DLPack or the
    CUDA array interface (None for any other object), in mpi4py's order of trying."""
    found = _from_dlpack(buf, writable)
    if found is None:
        found = _from_cai(buf, writable)
    return found


def raw_bytes(buf, writable: bool = False) -> np.ndarray:
    """The whole buffer as a 1-D uint8 array, without copying it."""
    if type(buf) is np.ndarray:
        if buf.dtype is _U8 and buf.ndim == 1 and buf.flags.c_contiguous:
            data = buf  # the common case (osu-style byte buffers): nothing to reshape
        elif buf.flags.c_contiguous:
            data = buf.reshape(-1).view(_U8)
        elif buf.flags.f_contiguous:  # mpi4py takes any contiguous buffer, in memory order
            data = buf.T.reshape(-1).view(_U8)
        else:
            raise BufferError("ndarray is not contiguous")
    elif isinstance(buf, np.ndarray):
        return raw_bytes(np.asarray(buf), writable)
    else:
        try:
            mv = memoryview(buf)
        except TypeError:
            found = foreign(buf, writable)
            if found is None:
                raise TypeError(
                    f"a bytes-like object is required, not '{type(buf).__name__}'"
                ) from None
            return found.data
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
    try:
        return memoryview(buf).format
    except TypeError:
        found = foreign(buf)
        if found is None:
            raise
        return found.format


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
